"""The long tier of ``compare``: does Newcomb's interval hold the true difference as often as it says?

Each repetition ``i`` writes two corpora of ``runs`` one-turn runs (``synth.runs.write_runs``, seeds
derived from ``--seed`` and ``i``) whose turns end in error with the known probabilities ``rate_a``
and ``rate_b``, reads them, compares them, and checks that:

* the ``error`` row counts exactly the errors the writer drew on each side (nothing lost or added);
* its interval of the difference ``[diff_low, diff_high]`` does or does not hold the true difference
  ``rate_b - rate_a`` (the coverage).

At a 95 % level, 100 repetitions give about 95 hits; fewer than ``MIN_HITS`` (93) fails the tier
(``make test-compare-coverage``; ``python -m tests.fuzz.compare_coverage --repetitions 100``).
``tests/test_compare_coverage.py`` runs a few small repetitions in ``make test``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from subagent_catalog.analysis.compare import compare
from subagent_catalog.corpus import read_corpus
from subagent_catalog.synth.runs import write_runs

MIN_HITS = 93
"""Repetitions of 100 whose interval must hold the true difference."""


@dataclass(frozen=True)
class Repetition:
    """One pair of corpora compared: the errors drawn, the interval found, whether it holds the truth."""

    index: int
    errors_a: int
    errors_b: int
    counted_a: int
    counted_b: int
    diff_low: float
    diff_high: float
    covered: bool


def repetition(index: int, *, runs: int, rate_a: float, rate_b: float, seed: int, work: Path) -> Repetition:
    """Write, read and compare one pair (seeds ``2 * (seed * 100_000 + index)`` and the next)."""
    base = 2 * (seed * 100_000 + index)
    a = write_runs(work / f"a{index}", runs=runs, seed=base, error_rate=rate_a, tools=1)
    b = write_runs(work / f"b{index}", runs=runs, seed=base + 1, error_rate=rate_b, tools=1)
    result = compare(read_corpus(a.root, cache=False, jobs=1), read_corpus(b.root, cache=False, jobs=1), resamples=100)
    rows = {row["outcome"]: row for row in result.outcomes.iter_rows(named=True)}
    error = rows.get("error", {"a": 0, "b": 0, "diff_low": None, "diff_high": None})
    low, high = error["diff_low"], error["diff_high"]
    if low is None or high is None:  # no error on either side: the interval is that of 0 - 0
        low, high = _zero_interval(runs)
    truth = rate_b - rate_a
    return Repetition(index, a.errors, b.errors, error["a"], error["b"], low, high, low <= truth <= high)


def _zero_interval(runs: int) -> tuple[float, float]:
    from subagent_catalog.analysis.compare_stats import newcomb_interval

    _, low, high = newcomb_interval(0, runs, 0, runs)
    return float(low or 0.0), float(high or 0.0)


def coverage(repetitions: int, *, runs: int, rate_a: float, rate_b: float, seed: int) -> list[Repetition]:
    """Run the repetitions in a temporary directory (removed after)."""
    with tempfile.TemporaryDirectory(prefix="compare-coverage-") as work:
        return [
            repetition(i, runs=runs, rate_a=rate_a, rate_b=rate_b, seed=seed, work=Path(work))
            for i in range(repetitions)
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.compare_coverage")
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rate-a", type=float, default=0.10)
    parser.add_argument("--rate-b", type=float, default=0.20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="tests/artifacts/compare-coverage.json")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    done = coverage(args.repetitions, runs=args.runs, rate_a=args.rate_a, rate_b=args.rate_b, seed=args.seed)
    hits = sum(r.covered for r in done)
    exact = all((r.counted_a, r.counted_b) == (r.errors_a, r.errors_b) for r in done)
    needed = -(-MIN_HITS * args.repetitions // 100)
    summary = {
        "repetitions": args.repetitions,
        "runs": args.runs,
        "rate_a": args.rate_a,
        "rate_b": args.rate_b,
        "seed": args.seed,
        "hits": hits,
        "needed": needed,
        "counts_exact": exact,
        "seconds": round(time.perf_counter() - started, 1),
        "misses": [asdict(r) for r in done if not r.covered],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "misses"}))
    return 0 if hits >= needed and exact else 1


if __name__ == "__main__":
    sys.exit(main())
