"""The SQL tier of the fuzz suite, a seeded sample (the long run: ``make fuzz-sql``).

Every family of queries runs a few times, then a seeded random sample; each batch runs the CLI
in-process in a child interpreter with HOME, TMPDIR and the working directory in a sandbox, and
must give a typed one-line error or the right answer, read nothing outside the corpus, write
nothing anywhere, end in time and stay under the memory bounds (see ``tests/fuzz/sql.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fuzz.interop_common import Sandbox
from tests.fuzz.sql import FAMILIES, QUERY_RSS_BOUND_MB, RSS_BOUND_MB, Outcome, run_cases


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield Sandbox.make(tmp_path_factory.mktemp("fuzz-sql") / "box")


def _assert_clean(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        assert outcome.violations == [], (outcome.seed, outcome.family, outcome.query, outcome.violations)
        assert outcome.hwm_mb is not None and outcome.hwm_mb < RSS_BOUND_MB
        assert outcome.query_hwm_mb is not None and outcome.query_hwm_mb < QUERY_RSS_BOUND_MB


def test_every_family_of_queries_keeps_the_invariants(box: Sandbox) -> None:
    families = [family for family in FAMILIES for _ in range(2)]
    _assert_clean(run_cases([6_000_000 + i for i in range(len(families))], box, families=families, batch=32))


def test_seeded_sql_cases_keep_the_invariants(box: Sandbox) -> None:
    _assert_clean(run_cases([5_000_000 + i for i in range(16)], box, batch=32))


def test_the_sql_tier_sees_a_write_a_leak_and_a_wrong_answer(box: Sandbox, tmp_path: Path) -> None:
    """The invariant checks can fail: a changed HOME, the secret on stdout and a wrong count are caught."""
    from tests.fuzz.interop_common import SECRET
    from tests.fuzz.sql import check, make_case

    case = make_case(1, box, "truth")
    run = {
        "code": 0,
        "stdout": f"n\n-1\n{SECRET}\n",
        "stderr": "",
        "stderr_lines": 0,
        "error_lines": 0,
        "last_is_error": False,
        "traceback": False,
        "internal": False,
        "longest_line": 0,
        "seconds": 0.1,
    }
    said = check(case, {"run": run, "changed": ["home changed"], "hwm_kb": 1, "query_hwm_kb": 1}, {case.truth: 3})
    assert "home changed" in said and "the secret outside the corpus was read" in said
    assert any(v.startswith("wrong answer") for v in said)
