"""The price-table tier of the fuzz suite, a fast sample (the long run: ``make fuzz-prices N=...``).

Every hazard and every path that is not a regular file once, then a seeded sample, all in one
worker interpreter: each case must load into exactly the expected table or raise ``PricesError``
(one line, naming the file, with a hint), give finite costs, answer in time and stay under the
memory bound; a few of them also through the CLI in a child (see ``tests/fuzz/prices.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.prices import (
    CLI_RSS_BOUND_MB,
    HAZARDS,
    LIB_RSS_BOUND_MB,
    SPECIAL_PATHS,
    Case,
    check_case,
    make_case,
    make_corpus,
    run_cases,
)

SAMPLE = 80


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("fuzz-prices") / "corpus"
    make_corpus(root)
    yield root


def _assert_clean(outcomes: list[dict[str, Any]], count: int) -> None:
    assert len(outcomes) == count
    for outcome in outcomes:
        assert outcome["violations"] == [], outcome
        assert outcome["peak_mb"] is not None and outcome["peak_mb"] < LIB_RSS_BOUND_MB
        if "cli_code" in outcome:
            assert outcome["cli_peak_mb"] is not None and outcome["cli_peak_mb"] < CLI_RSS_BOUND_MB


def test_every_hazard_and_a_seeded_sample_keep_the_invariants(corpus: Path) -> None:
    specs: list[int | str] = [f"{6_000_000 + i}:{hazard}" for i, hazard in enumerate(HAZARDS)]
    specs += [f"{6_100_000 + i}:not-a-file:{special}" for i, special in enumerate(SPECIAL_PATHS)]
    specs += [5_000_000 + i for i in range(SAMPLE)]
    _assert_clean(run_cases(specs, corpus=corpus, batch=len(specs)), len(specs))


def test_the_cli_keeps_the_invariants_on_hostile_tables(corpus: Path) -> None:
    """A FIFO, /dev/zero, a directory, a damaged table and a sound one through ``runs --prices``."""
    specs: list[int | str] = [
        "6200000:not-a-file:fifo",
        "6200001:not-a-file:dev-zero",
        "6200002:not-a-file:directory",
        "6200003:damage",
        "6200004:none",
    ]
    outcomes = run_cases(specs, corpus=corpus, cli_every=1)
    _assert_clean(outcomes, len(specs))
    assert [o["cli_code"] for o in outcomes][:3] == [1, 1, 2]


def test_the_tier_sees_an_untyped_error_a_wrong_table_and_a_hang(tmp_path: Path, corpus: Path) -> None:
    """The checks can fail: a raw exception, a table that differs from the file, a loader that never answers."""
    from subagent_catalog.prices import price_table

    case = make_case(1, tmp_path, hazard="none")
    try:

        def boom(prices: Any) -> Any:
            raise ValueError("year 10000 is out of range")

        assert any("untyped error ValueError" in v for v in check_case(case, table_fn=boom)["violations"])
        wrong = check_case(case, table_fn=lambda _: price_table({"extra": {"input": 1, "output": 1}}))
        assert any(v.startswith(("entries differ", "loaded a table the rules refuse")) for v in wrong["violations"])
    finally:
        case.cleanup()
    mapping = Case(2, "mapping", "mapping", value={"m": {"input": 1, "output": 1}})
    assert check_case(mapping, table_fn=lambda _: price_table())["violations"]  # the entry went missing
    (hung,) = run_cases(["7"], corpus=None, case_timeout=1, stall_on_seed=7)
    assert hung["outcome"] == "timeout" and hung["violations"] == ["no answer within 1 s"]
