"""Reliability round 5, items 8-11: bounded numeric options and keywords; the fast sample of fuzz tier (a).

Every numeric option of every command is typed by its kind's range (``bounds``, ``cli.options.bounded``):
``inf``, ``nan``, a negative number, ``2**63`` and ``1e400`` are a usage error (exit status 2, one
``Error:`` line, no traceback) before any corpus is read, and nothing is written. The options are
enumerated from the click command tree, so a new numeric option is covered, and must be bounded. The
library keywords behind them refuse the same values with one typed ``ValueError`` before any work.
``tests/fuzz/options.py`` is the long tier (numbers and paths; ``make fuzz-options``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import polars as pl
import pytest
from click.testing import CliRunner, Result

from subagent_catalog.analysis.compare import compare
from subagent_catalog.analysis.findings import findings
from subagent_catalog.analysis.run_summary import run_summary
from subagent_catalog.analysis.search import search_events
from subagent_catalog.analysis.transcript import transcript
from subagent_catalog.bounds import SIZE_MAX, Bound
from subagent_catalog.cli import main
from subagent_catalog.corpus import open_source, read_corpus
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.interop.otel import OtlpStats, otlp_parts, send_otlp
from subagent_catalog.interop.phoenix_check import phoenix_client, verify_phoenix
from subagent_catalog.interop.sql import sql
from subagent_catalog.store.archive import Archive
from subagent_catalog.store.export import export_archive
from tests.fuzz import options as fuzz
from tests.fuzz.outputs import tree_state

UNREACHABLE = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("options") / "corpus"
    fuzz.make_corpus(root)
    return root


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty working directory (so a stray output would show), the facts cache outside it."""
    directory = tmp_path / "work"
    directory.mkdir()
    monkeypatch.chdir(directory)
    monkeypatch.setenv("SUBAGENT_CATALOG_CACHE", str(tmp_path / "cache"))
    yield directory


def _no_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every corpus read fails the test (``open_source`` reads through ``read_corpus``)."""

    def refuse(*args: object, **kwargs: object) -> None:
        pytest.fail("a corpus was read before the option was refused")

    monkeypatch.setattr("subagent_catalog.corpus.read_corpus", refuse)


def _run(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, prog_name="subagent-catalog")


def _usage_error(result: Result, option: str) -> None:
    assert result.exit_code == 2, result.output
    assert fuzz.exit_violations(result.exit_code, result.stdout, result.stderr) == [], result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and f"'{option}'" in errors[0], result.stderr


# --------------------------------------------------------------------------- the four repros, by the command line


@pytest.mark.parametrize("value", ["inf", "1e400", "nan"])
def test_otel_timeout_inf_or_nan_is_a_usage_error(
    value: str, corpus: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 8: a timer thread's OverflowError traceback and 'internal error' before; now one usage line."""
    _no_read(monkeypatch)
    _usage_error(_run(["otel", str(corpus), "--endpoint", UNREACHABLE, "--timeout", value]), "--timeout")
    _usage_error(_run(["otel", str(corpus), "-o", "spans.jsonl", "--timeout", value]), "--timeout")
    assert list(work.iterdir()) == []


def test_otel_max_text_past_int64_is_a_usage_error(corpus: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 9: the OTLP encoder's traceback, exit 0 and dsh.max_text missing before; now nothing is written."""
    _no_read(monkeypatch)
    _usage_error(_run(["otel", str(corpus), "-o", "spans.jsonl", "--max-text", "9223372036854775808"]), "--max-text")
    assert list(work.iterdir()) == []


def test_the_largest_max_text_reaches_every_resource(corpus: Path, work: Path) -> None:
    """Item 9, the legal side: ``SIZE_MAX`` characters is an int64, written as ``dsh.max_text`` on every scope."""
    result = _run(["otel", str(corpus), "-q", "--jobs", "1", "-o", "spans.jsonl", "--max-text", str(SIZE_MAX)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (work / "spans.jsonl").read_text().splitlines()]
    scopes = [scope for line in lines for spans in line["resourceSpans"] for scope in spans["scopeSpans"]]
    said = [{a["key"]: a["value"] for a in scope["scope"]["attributes"]}.get("dsh.max_text") for scope in scopes]
    assert scopes and said == [{"intValue": str(SIZE_MAX)}] * len(scopes)


@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "-1"])
def test_findings_stalled_after_inf_is_a_usage_error(
    value: str, corpus: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 10: 'internal error: OverflowError' before; now one usage line, no read."""
    _no_read(monkeypatch)
    _usage_error(_run(["findings", str(corpus), "--stalled-after", value]), "--stalled-after")


def test_compare_negative_seed_is_refused_before_either_side_is_read(
    corpus: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 11: 'internal error: ValueError' after both sides were read before; now a usage error, nothing read."""
    _no_read(monkeypatch)
    for value in ("-1", "4294967296", "9223372036854775808"):
        _usage_error(_run(["compare", str(corpus), str(corpus), "--seed", value]), "--seed")
    assert list(work.iterdir()) == []


# --------------------------------------------------------------------------- every numeric option (fuzz tier (a))

NUMERIC = [(command, param) for command, param in fuzz.numeric_parameters()]


def _parsed(bound: Bound, text: str) -> object:
    try:
        return int(text) if bound.integer else float(text)
    except ValueError:
        return None


def test_every_numeric_option_is_bounded() -> None:
    """Each numeric option's type holds a ``Bound`` (``cli.options.bounded``): no bare ``type=int``/``float``."""
    assert len(NUMERIC) >= 30
    unbounded = [f"{command} {fuzz.flag(param)}" for command, param in NUMERIC if not _bound_of(param)]
    assert unbounded == []


def _bound_of(param: click.Parameter) -> Bound | None:
    bound = getattr(param.type, "bound", None)
    return bound if isinstance(bound, Bound) else None


@pytest.mark.parametrize("value", fuzz.FAST_NUMBERS)
@pytest.mark.parametrize(("command", "param"), NUMERIC, ids=[f"{c}{fuzz.flag(p)}" for c, p in NUMERIC])
def test_hostile_numbers_are_usage_errors_for_every_numeric_option(
    command: str, param: click.Parameter, value: str, corpus: Path, work: Path
) -> None:
    bound = _bound_of(param)
    assert bound is not None, f"{command} {fuzz.flag(param)} is not bounded"
    before = tree_state(corpus)
    result = _run(fuzz.with_value(fuzz.base_argv(command, str(corpus), str(work)), command, param, value))
    if bound.admits(_parsed(bound, value)):  # legal for this option: it runs, and does not crash
        assert fuzz.exit_violations(result.exit_code, result.stdout, result.stderr) == [], result.output
    else:
        _usage_error(result, fuzz.flag(param))
        assert list(work.iterdir()) == []
    assert tree_state(corpus) == before


def test_a_seeded_sample_of_the_long_tier(corpus: Path) -> None:
    """A few cases of ``python -m tests.fuzz.options`` (numbers and hostile paths, in child interpreters)."""
    results = [fuzz.run_case(seed, corpus) for seed in range(7_000_000, 7_000_004)]
    assert [(result.seed, result.violations) for result in results if result.violations] == []


# --------------------------------------------------------------------------- the library keywords behind them

NOT_READ: Any = Archive("/nonexistent/archive", {"root": "/nonexistent/root", "compression": "none"})
"""A source no call may touch (any read of it fails: no files, no tables): a keyword out of range is refused first."""


def _scanner(steps: pl.DataFrame, session: dict[str, Any]) -> list[dict[str, Any]]:
    return []


def _library_calls(tmp: Path) -> list[tuple[str, Callable[[Any], object]]]:
    return [
        ("stalled_after_ms", lambda v: findings(NOT_READ, stalled_after_ms=v)),
        ("tool_loop_calls", lambda v: findings(NOT_READ, tool_loop_calls=v)),
        ("scanner_timeout_s", lambda v: findings(NOT_READ, scanners=[_scanner], scanner_timeout_s=v)),
        ("seed", lambda v: compare(NOT_READ, NOT_READ, seed=v)),
        ("resamples", lambda v: compare(NOT_READ, NOT_READ, resamples=v)),
        ("max_text", lambda v: otlp_parts(NOT_READ, max_text=v)),
        ("timeout", lambda v: send_otlp([], UNREACHABLE, timeout=v)),
        ("retry_for", lambda v: send_otlp([], UNREACHABLE, retry_for=v)),
        ("max_request_bytes", lambda v: send_otlp([], UNREACHABLE, max_request_bytes=v)),
        ("timeout", lambda v: phoenix_client(UNREACHABLE, timeout=v)),
        ("deadline", lambda v: verify_phoenix(None, OtlpStats(), project="p", deadline=v)),
        ("timeout", lambda v: sql(NOT_READ, "select 1", timeout=v)),
        ("threads", lambda v: sql(NOT_READ, "select 1", threads=v)),
        ("memory_limit_mb", lambda v: sql(NOT_READ, "select 1", memory_limit_mb=v)),
        ("jobs", lambda v: read_corpus(tmp / "missing", jobs=v)),
        ("jobs", lambda v: open_source(tmp / "missing", jobs=v)),
        ("batch_size", lambda v: export_archive(tmp / "missing", tmp / "out", batch_size=v)),
        ("limit", lambda v: search_events(NOT_READ, "x", limit=v)),
        ("top", lambda v: run_summary(NOT_READ, top=v)),
        ("clip", lambda v: transcript(NOT_READ, "x", clip=v)),
    ]


@pytest.mark.parametrize("value", [math.inf, math.nan, -1, 2**63, -math.inf], ids=["inf", "nan", "-1", "2^63", "-inf"])
def test_library_keywords_refuse_hostile_numbers_before_any_work(value: object, tmp_path: Path) -> None:
    for name, call in _library_calls(tmp_path):
        with pytest.raises(SubagentCatalogError) as caught:
            call(value)
        assert isinstance(caught.value, ValueError), name
        assert str(caught.value).startswith(f"{name} must be "), str(caught.value)
    assert list(tmp_path.iterdir()) == []
