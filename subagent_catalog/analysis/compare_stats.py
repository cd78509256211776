"""The statistics of ``compare``: intervals and tests from ``scipy.stats``, with their edge cases said.

Every function is pure (numbers in, numbers out) and deterministic (the bootstrap is seeded):

* ``wilson_interval``: a proportion's score interval (``scipy.stats.binomtest(...).proportion_ci(method="wilson")``).
* ``newcomb_interval``: a difference of two independent proportions, Newcomb's hybrid score interval
  (Newcomb 1998, method 10), built from the two Wilson intervals.
* ``proportion_test``: Fisher's exact test (``scipy.stats.fisher_exact``) on the 2×2 table, or Pearson's χ²
  without continuity correction (``scipy.stats.chi2_contingency``) when the table holds more than
  ``EXACT_LIMIT`` runs and every expected count is at least 5.
* ``rank_test``: Mann-Whitney U (``scipy.stats.mannwhitneyu``, two-sided) and ``P(B > A) + ½ P(tie)``.
* ``relative_changes``: the relative change of the median and of the mean, B over A, each with a percentile
  bootstrap interval (``scipy.stats.bootstrap``, the two samples resampled independently, seeded).
* ``paired_tests``: the sign test (``scipy.stats.binomtest`` on the pairs that differ) and Wilcoxon's
  signed-rank test (``scipy.stats.wilcoxon``) of paired differences.
* ``holm``: Holm's step-down adjustment of a family of p-values (scipy has Benjamini-Hochberg,
  ``false_discovery_control``, but not Holm; this is the five-line textbook procedure).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

EXACT_LIMIT = 10_000
"""Runs a 2×2 table may hold for Fisher's exact test; above it, χ² when every expected count is at least 5."""

ALPHA = 0.05
"""The level a Holm-adjusted p-value is called significant at."""


def wilson_interval(k: int, n: int, *, confidence: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval of ``k`` successes in ``n`` trials (``None`` when ``n`` is 0).

    Examples:
        >>> low, high = wilson_interval(3, 10)
        >>> round(low, 4), round(high, 4)
        (0.1078, 0.6032)
        >>> wilson_interval(0, 0) is None
        True
    """
    if n <= 0:
        return None
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def newcomb_interval(
    k_a: int, n_a: int, k_b: int, n_b: int, *, confidence: float = 0.95
) -> tuple[float | None, float | None, float | None]:
    """``(diff, low, high)`` of ``k_b / n_b - k_a / n_a``: Newcomb's hybrid score interval (from Wilson intervals).

    ``(None, None, None)`` when either side has no trial.

    Examples:
        Newcomb's (1998) own example, 56/70 against 48/80 (his interval: 0.0524 to 0.3339):

        >>> diff, low, high = newcomb_interval(48, 80, 56, 70)
        >>> round(diff, 4), round(low, 4), round(high, 4)
        (0.2, 0.0524, 0.3339)
        >>> newcomb_interval(0, 0, 1, 2)
        (None, None, None)
    """
    wa, wb = wilson_interval(k_a, n_a, confidence=confidence), wilson_interval(k_b, n_b, confidence=confidence)
    if wa is None or wb is None:
        return None, None, None
    pa, pb = k_a / n_a, k_b / n_b
    diff = pb - pa
    low = diff - math.sqrt((pb - wb[0]) ** 2 + (wa[1] - pa) ** 2)
    high = diff + math.sqrt((wb[1] - pb) ** 2 + (pa - wa[0]) ** 2)
    return diff, max(low, -1.0), min(high, 1.0)


def proportion_test(k_a: int, n_a: int, k_b: int, n_b: int) -> tuple[float | None, str | None]:
    """``(p, test)``: whether ``k_a / n_a`` and ``k_b / n_b`` differ, two-sided (``(None, None)``: a side is empty).

    Fisher's exact test, or Pearson's χ² (no continuity correction) when the table holds more than
    ``EXACT_LIMIT`` runs and every expected count is at least 5.

    Examples:
        >>> p, test = proportion_test(5, 50, 15, 50)
        >>> round(p, 4), test
        (0.0228, 'fisher')
        >>> proportion_test(3, 10, 3, 10)
        (1.0, 'fisher')
    """
    if n_a <= 0 or n_b <= 0:
        return None, None
    table = np.array([[k_a, n_a - k_a], [k_b, n_b - k_b]], dtype=np.int64)
    total = n_a + n_b
    if total > EXACT_LIMIT:
        expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / total
        if (expected >= 5).all():
            result = stats.chi2_contingency(table, correction=False)
            return float(result.pvalue), "chi2"
    return float(stats.fisher_exact(table).pvalue), "fisher"


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values of one family (``None`` stays ``None`` and is not counted).

    Examples:
        >>> holm([0.01, None, 0.04, 0.03])
        [0.03, None, 0.06, 0.06]
    """
    known = sorted((p, i) for i, p in enumerate(pvalues) if p is not None and not math.isnan(p))
    out: list[float | None] = [None] * len(pvalues)
    size, running = len(known), 0.0
    for rank, (p, index) in enumerate(known):
        running = max(running, min(1.0, (size - rank) * p))
        out[index] = running
    return out


def describe(values: np.ndarray[Any, Any]) -> dict[str, float | None]:
    """``median``, ``p90`` and ``mean`` of the values, then ``p10``, ``p25``, ``p75`` (``None`` when there is none).

    Percentiles interpolate linearly (``numpy.percentile``'s default).

    Examples:
        >>> describe(np.array([1.0, 2.0, 3.0, 10.0]))
        {'median': 2.5, 'p90': 7.9..., 'mean': 4.0, 'p10': 1.3, 'p25': 1.75, 'p75': 4.75}
    """
    if values.size == 0:
        return dict.fromkeys(("median", "p90", "mean", "p10", "p25", "p75"))
    p10, p25, p75, p90 = (float(v) for v in np.percentile(values, [10, 25, 75, 90]))
    return {
        "median": float(np.median(values)),
        "p90": p90,
        "mean": float(np.mean(values)),
        "p10": p10,
        "p25": p25,
        "p75": p75,
    }


def _change(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``b / a - 1`` elementwise: 0 where both are equal (0 and 0 included), ``inf`` where only ``a`` is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(a == b, 0.0, np.where(a == 0, np.inf, b / np.where(a == 0, 1.0, a) - 1.0))
    return np.asarray(ratio, dtype=np.float64)


def relative_change(a: float | None, b: float | None) -> float | None:
    """``b / a - 1``: 0 when equal, ``None`` when unknown or when only ``a`` is 0 (no finite change).

    Examples:
        >>> relative_change(2.0, 3.0), relative_change(0.0, 0.0), relative_change(0.0, 1.0)
        (0.5, 0.0, None)
    """
    if a is None or b is None:
        return None
    value = float(_change(np.array([a]), np.array([b]))[0])
    return value if math.isfinite(value) else None


def relative_changes(
    a: np.ndarray[Any, Any],
    b: np.ndarray[Any, Any],
    *,
    seed: int = 0,
    resamples: int = 2000,
    confidence: float = 0.95,
) -> dict[str, float | None]:
    """The relative change of the median and the mean (B over A), each with a percentile bootstrap interval.

    Keys ``median_change``, ``median_change_low``, ``median_change_high``, ``mean_change``,
    ``mean_change_low``, ``mean_change_high``. A point estimate is ``None`` where A's statistic is 0 and
    B's is not; an interval is ``None`` when a side has fewer than 2 values or a bound is not finite
    (some resample of A has a statistic of 0). The two samples are resampled independently
    (``scipy.stats.bootstrap``, ``method="percentile"``), seeded: the same input gives the same interval.

    Examples:
        >>> rng = np.random.default_rng(1)
        >>> a, b = rng.normal(10, 1, 200), rng.normal(12, 1, 200)
        >>> out = relative_changes(a, b, resamples=500)
        >>> out["mean_change_low"] < 0.2 < out["mean_change_high"]
        True
        >>> relative_changes(a, b, resamples=500) == out
        True
    """
    da, db = describe(a), describe(b)
    out: dict[str, float | None] = {
        "median_change": relative_change(da["median"], db["median"]),
        "mean_change": relative_change(da["mean"], db["mean"]),
    }
    for name in ("median", "mean"):
        out[f"{name}_change_low"] = out[f"{name}_change_high"] = None
    if a.size < 2 or b.size < 2:
        return out

    def statistic(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], axis: int = -1) -> np.ndarray[Any, Any]:
        return np.stack(
            [_change(np.median(x, axis=axis), np.median(y, axis=axis)), _change(x.mean(axis=axis), y.mean(axis=axis))]
        )

    batch = max(1, 4_000_000 // max(a.size + b.size, 1))  # about 32 MB of resampled values at a time
    with np.errstate(invalid="ignore"):
        result = stats.bootstrap(
            (a.astype(np.float64), b.astype(np.float64)),
            statistic,
            n_resamples=resamples,
            confidence_level=confidence,
            method="percentile",
            rng=np.random.default_rng(seed),
            batch=min(batch, resamples),
        )
    lows, highs = np.atleast_1d(result.confidence_interval.low), np.atleast_1d(result.confidence_interval.high)
    for index, name in enumerate(("median", "mean")):
        low, high = float(lows[index]), float(highs[index])
        if math.isfinite(low) and math.isfinite(high):
            out[f"{name}_change_low"], out[f"{name}_change_high"] = low, high
    return out


def rank_test(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> tuple[float | None, float | None]:
    """``(p, b_greater)``: Mann-Whitney U, two-sided, and ``P(B > A) + ½ P(B = A)`` (``None``: a side is empty).

    Examples:
        >>> p, b_greater = rank_test(np.array([1.0, 2, 3, 4]), np.array([5.0, 6, 7, 8]))
        >>> round(p, 4), b_greater
        (0.0286, 1.0)
        >>> rank_test(np.array([1.0, 1.0]), np.array([1.0, 1.0]))
        (1.0, 0.5)
    """
    if a.size == 0 or b.size == 0:
        return None, None
    result = stats.mannwhitneyu(b, a, alternative="two-sided")
    p = float(result.pvalue)
    return (p if math.isfinite(p) else None), float(result.statistic) / (a.size * b.size)


def paired_tests(diffs: np.ndarray[Any, Any]) -> dict[str, float | int | None]:
    """Tests of paired differences (B - A): the sign test and Wilcoxon's signed-rank test, two-sided.

    Keys ``pairs``, ``b_higher``, ``a_higher`` (pairs where B's value is above A's, and below), ``median_diff``,
    ``sign_p`` (``binomtest`` of ``b_higher`` among the pairs that differ; 1.0 when none differs) and
    ``wilcoxon_p`` (zero differences dropped, ``None`` when none differs).

    Examples:
        >>> out = paired_tests(np.array([1.0, 2.0, 3.0, 0.0, 4.0, 5.0, 6.0, 7.0]))
        >>> out["b_higher"], out["a_higher"], round(out["sign_p"], 4), round(out["wilcoxon_p"], 4)
        (7, 0, 0.0156, 0.0156)
    """
    higher, lower = int((diffs > 0).sum()), int((diffs < 0).sum())
    out: dict[str, float | int | None] = {
        "pairs": int(diffs.size),
        "b_higher": higher,
        "a_higher": lower,
        "median_diff": float(np.median(diffs)) if diffs.size else None,
        "sign_p": float(stats.binomtest(higher, higher + lower).pvalue)
        if higher + lower
        else (1.0 if diffs.size else None),
        "wilcoxon_p": None,
    }
    if higher + lower:
        p = float(stats.wilcoxon(diffs[diffs != 0]).pvalue)
        out["wilcoxon_p"] = p if math.isfinite(p) else None
    return out
