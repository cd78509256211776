"""The OTLP tier of the fuzz suite, a seeded sample (the long run: ``make fuzz-otlp``).

Every collector behaviour runs once, then a seeded random sample; each batch runs ``otel
--endpoint`` in-process in a child interpreter against a collector on 127.0.0.1, and must deliver
every span or fail in one line, within its deadline, writing nothing and under the memory bound
(see ``tests/fuzz/otlp.py``). Every Phoenix behaviour runs once with ``--verify`` and once with
``--register-prices``, then a seeded sample of Phoenix cases: exit 0 from an honest Phoenix, else one
line naming it, within the deadlines.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from tests.fuzz.interop_common import Sandbox
from tests.fuzz.otlp import RSS_BOUND_MB, Outcome, check, make_case, run_cases
from tests.fuzz.otlp_server import BEHAVIOURS, PHOENIX_BEHAVIOURS


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield Sandbox.make(tmp_path_factory.mktemp("fuzz-otlp") / "box")


def _assert_clean(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        assert outcome.violations == [], (outcome.seed, outcome.behaviour, outcome.url, outcome.violations)
        assert outcome.hwm_mb is not None and outcome.hwm_mb < RSS_BOUND_MB


def test_every_collector_behaviour_keeps_the_invariants(box: Sandbox) -> None:
    seeds = [7_000_000 + i for i in range(len(BEHAVIOURS))]
    _assert_clean(run_cases(seeds, box, behaviours=list(BEHAVIOURS), timeout=0.5, batch=len(seeds)))


def test_seeded_otlp_cases_keep_the_invariants(box: Sandbox) -> None:
    _assert_clean(run_cases([3_000_000 + i for i in range(12)], box, timeout=0.5, batch=12))


def test_every_phoenix_behaviour_keeps_the_invariants_for_verify_and_register_prices(box: Sandbox) -> None:
    behaviours = [*PHOENIX_BEHAVIOURS, *PHOENIX_BEHAVIOURS]
    modes = ["verify"] * len(PHOENIX_BEHAVIOURS) + ["register"] * len(PHOENIX_BEHAVIOURS)
    seeds = [8_000_000 + i for i in range(len(behaviours))]
    outcomes = run_cases(seeds, box, behaviours=behaviours, timeout=0.5, batch=len(seeds), phoenix=modes)
    _assert_clean(outcomes)
    assert {0, 1} <= {o.code for o in outcomes}  # honest Phoenixes delivered, lying ones failed (2: a bad --header)


def test_seeded_phoenix_cases_keep_the_invariants(box: Sandbox) -> None:
    seeds = [4_000_000 + i for i in range(8)]
    drawn = [random.Random(seed).choice(PHOENIX_BEHAVIOURS) for seed in seeds]  # the mode, URL, headers... drawn too
    _assert_clean(run_cases(seeds, box, behaviours=drawn, timeout=0.5, batch=len(seeds)))


def test_the_otlp_tier_sees_a_false_success_and_a_slow_case() -> None:
    """The invariant checks can fail: exit 0 from a dripping collector, or a case past its deadline, is caught."""
    case = make_case(1, "drip-status", 0.5)
    run = {
        "code": 0,
        "stdout": "",
        "stderr": "",
        "stderr_lines": 0,
        "error_lines": 0,
        "last_is_error": False,
        "traceback": False,
        "internal": False,
        "longest_line": 0,
        "seconds": 60.0,
    }
    said = check(case, {"run": run, "changed": [], "hwm_kb": 1, "received_spans": 0, "url": case.url}, 132)
    assert "exit 0 from a collector that does not accept" in said and any(v.startswith("took 60.0 s") for v in said)
    lying = make_case(2, "graphql-1e400", 0.5, "verify")
    result = {"run": run, "changed": [], "hwm_kb": 1, "received_spans": 132, "url": "http://127.0.0.1:5/"}
    assert "exit 0 from a Phoenix that 1e400s" in check(lying, result, 132)
    unnamed = {**run, "code": 1, "seconds": 1.0, "stderr": "Error: it failed\n", "error_lines": 1, "stderr_lines": 1}
    unnamed["last_is_error"] = True
    assert check(lying, {**result, "run": unnamed}, 132) == [
        "the error does not name the endpoint: ['Error: it failed']"
    ]
