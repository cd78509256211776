"""The archive tier of the fuzz suite, a fast sample (the long run: ``make fuzz-archives``).

Every mutation is applied once on its own, then a seeded sample of one to three
mutations at a time; each batch of cases runs in a child interpreter that calls every
archive reader and the commands that read an archive (every one on each single
mutation, ``SAMPLE_COMMANDS`` of them drawn per seeded case; the long run runs every
one on every case) and must give typed errors or correct results, one CLI error line
and no "internal error", no panic, no file opened outside the root, and a peak RSS
under the bound (see ``tests/fuzz/archives.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fuzz.archives import MUTATIONS, RSS_BOUND_MB, Bases, check, make_bases, make_case, run_cases

SAMPLE = 8  # `make fuzz-archives` runs more
SAMPLE_COMMANDS = 12
"""Commands drawn per seeded case (besides ``search`` and ``export``)."""


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bases]:
    yield make_bases(tmp_path_factory.mktemp("fuzz-archives"))


def _assert_clean(outcomes: list) -> None:  # type: ignore[type-arg]
    for outcome in outcomes:
        assert outcome.violations == [], (outcome.seed, outcome.mutations, outcome.violations)
        assert outcome.hwm_mb is not None and outcome.hwm_mb < RSS_BOUND_MB


def test_each_archive_mutation_on_its_own_keeps_the_invariants(bases: Bases) -> None:
    for index, name in enumerate(sorted(MUTATIONS)):
        _assert_clean(run_cases([9_000_000 + index], bases, mutations=[name], batch=1))


@pytest.mark.parametrize("chunk", range(2))
def test_seeded_archive_cases_keep_the_invariants(bases: Bases, chunk: int) -> None:
    seeds = [8_000_000 + i for i in range(chunk, SAMPLE, 2)]
    _assert_clean(run_cases(seeds, bases, batch=6, commands=SAMPLE_COMMANDS))


def test_the_archive_tier_sees_a_raw_error_and_an_unrefused_file(bases: Bases, tmp_path: Path) -> None:
    """The checks can fail: a raw Polars error, a Rust panic, an internal error and a damaged file read as healthy
    are caught."""
    case = make_case(1, bases, mutations=["truncate"])
    result = {
        "open": ["ok"],
        **{f"check {table}": ["ok"] for table in ("sessions", "descriptors", "problems", "events", "facts")},
        "catalog": ["raw", "ComputeError", "parquet: File out of specification"],
        "cli search": {"code": 1, "stderr": "thread '<unnamed>' panicked at x.rs\nError: boom\n"},
        "cli runs -t trees": {"code": 1, "stderr": "Error: internal error: ComputeError: x (hint: a bug)\n"},
        "_hwm_kb": 2_000_000,
        "_opened_outside": ["/x/outside/p/s/session.jsonl"],
    }
    violations = check(case, result)
    assert "catalog: raw ComputeError" in violations
    assert "cli search: traceback or panic on stderr" in violations
    assert "cli runs -t trees: internal error" in violations
    assert any("was not refused" in v for v in violations)
    assert any("peak RSS" in v for v in violations) and any("opened outside" in v for v in violations)
