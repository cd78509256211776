"""The compare coverage tier, a fast sample (the long run: ``make test-compare-coverage``, 100 repetitions)."""

from __future__ import annotations

from tests.fuzz.compare_coverage import coverage


def test_each_repetition_counts_the_drawn_errors_exactly() -> None:
    done = coverage(2, runs=40, rate_a=0.1, rate_b=0.4, seed=7)
    for rep in done:
        assert (rep.counted_a, rep.counted_b) == (rep.errors_a, rep.errors_b)
        assert rep.diff_low <= (rep.errors_b - rep.errors_a) / 40 <= rep.diff_high
        assert rep.covered == (rep.diff_low <= 0.3 <= rep.diff_high)
