"""Gates over a comparison: ``error_rate>+2pp``, ``cost_median>+10%``... each true or false of B against A.

A condition is ``NAME[.low|.high] OP NUMBER[UNIT]``:

* ``NAME`` is ``<outcome>_rate`` (``error_rate``, ``completed_rate``, ``max_tokens_rate``...: an outcome's
  share of the runs, hyphens as underscores), ``failed_rate`` (every failed outcome together),
  ``tool_failure_rate`` (failed tool results over all calls), or ``[tree_]<metric>_<stat>`` with a metric
  of ``RUN_METRICS`` (``cost``, ``tokens``, ``active_time``, ``steps``, ``tool_calls``,
  ``failed_tool_results``) and ``median``, ``mean`` or ``p90`` (``tree_``: per tree, else per run);
* ``.low`` / ``.high`` take a bound of the figure's interval instead of its point estimate (a rate's
  Newcomb interval; a metric's bootstrap interval of its relative change: median and mean only);
* ``OP`` is ``>``, ``>=``, ``<`` or ``<=``; ``NUMBER`` may carry a sign;
* ``UNIT`` is ``pp`` (percentage points: a rate's difference B - A), ``%`` (a metric's relative change,
  B over A) or nothing (the difference B - A itself: a share for a rate, the metric's unit for a metric —
  USD, tokens, ms, counts). A threshold the figure can never reach is refused: a rate's difference is
  -1 to 1 as a share (``error_rate>2`` would be 200 %), -100pp to +100pp; a relative change is -100% or more.

A condition *holds* when B's figure against A's satisfies it; a figure that cannot be computed (no run
on a side, a median of 0 on A) is ``unknown``, and a gate treats an unknown condition as failing. So is
a figure that is not whole: a cost gate while a side has a run (a tree) of unknown cost, a metric gate
while a side has runs but no value of it ("not comparable: B's cost is unknown for 30 of 30 runs").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import polars as pl

from subagent_catalog.analysis.compare_sides import RUN_METRICS
from subagent_catalog.analysis.compare_stats import newcomb_interval, relative_change
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.outcome import OUTCOMES

if TYPE_CHECKING:
    from subagent_catalog.analysis.compare import Comparison

STATS = ("median", "mean", "p90")
RATES = (*(f"{name.replace('-', '_')}_rate" for name in OUTCOMES), "failed_rate", "tool_failure_rate")
"""Every rate a condition can name."""
METRICS = tuple(f"{level}{metric}_{stat}" for level in ("", "tree_") for metric in RUN_METRICS for stat in STATS)
"""Every metric statistic a condition can name."""

_GRAMMAR = re.compile(
    r"^\s*(?P<name>[a-z0-9_]+)(?:\.(?P<bound>low|high))?\s*(?P<op>>=|<=|>|<)\s*"
    r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?P<unit>pp|%)?\s*$"
)

Op = Literal[">", ">=", "<", "<="]

_POSSIBLE: dict[str, tuple[float, float, str]] = {
    "": (-1.0, 1.0, "a rate's difference B - A as a share lies between -1 and 1"),
    "pp": (-100.0, 100.0, "a rate's difference B - A lies between -100pp and +100pp"),
    "%": (-100.0, float("inf"), "a relative change is -100% or more"),
}
"""The values a figure can take, by the condition's unit (a rate without one is a share); a threshold outside
them is refused, since the condition could never decide (``error_rate>2`` is 200 %)."""


class CompareGateError(SubagentCatalogError, ValueError):
    """A ``--fail-on`` condition that does not follow the grammar, or names no figure."""


@dataclass(frozen=True)
class Condition:
    """One parsed condition (``parse_condition``)."""

    text: str
    name: str
    bound: Literal["low", "high"] | None
    op: Op
    threshold: float
    unit: Literal["pp", "%", ""]


@dataclass(frozen=True)
class GateResult:
    """A condition evaluated: the figure (in the condition's unit) and whether it holds (``None``: unknown)."""

    condition: Condition
    value: float | None
    holds: bool | None
    detail: str


def parse_condition(text: str) -> Condition:
    """A condition from its text (module docstring: the grammar).

    Raises:
        CompareGateError: the text does not follow the grammar, names no figure, mixes a unit or a bound
            with a figure that has none, or has a threshold outside the figure's possible values.

    Examples:
        >>> parse_condition("error_rate>+2pp")
        Condition(text='error_rate>+2pp', name='error_rate', bound=None, op='>', threshold=2.0, unit='pp')
        >>> parse_condition("cost_median > 10%").unit
        '%'
        >>> parse_condition("cost_median>2pp")
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.compare_gate.CompareGateError: 'cost_median>2pp': pp is for rates ...
        >>> parse_condition("error_rate>2")
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.compare_gate.CompareGateError: 'error_rate>2' can never decide: a rate's ...
    """
    found = _GRAMMAR.match(text)
    if found is None:
        raise CompareGateError(
            f"{text!r} is not a condition", hint="write NAME[.low|.high] OP NUMBER[pp|%], e.g. 'error_rate>+2pp'"
        )
    name, bound, unit = found["name"], found["bound"], found["unit"] or ""
    if name not in RATES and name not in METRICS:
        raise CompareGateError(
            f"{text!r}: no figure is named {name!r}",
            hint=f"rates: {', '.join(RATES)}; metrics: [tree_]<{'|'.join(RUN_METRICS)}>_<median|mean|p90>",
        )
    rate = name in RATES
    if unit == "pp" and not rate:
        raise CompareGateError(f"{text!r}: pp is for rates", hint="a metric's change is in % (or absolute, no unit)")
    if unit == "%" and rate:
        raise CompareGateError(f"{text!r}: % is for metrics", hint="a rate's difference is in pp (percentage points)")
    if bound and not rate and (unit != "%" or name.endswith("_p90")):
        raise CompareGateError(
            f"{text!r}: only a relative change of a median or a mean has an interval",
            hint="use .low/.high with NAME_median or NAME_mean and %",
        )
    op: Op = found["op"]  # type: ignore[assignment]
    threshold = float(found["number"])
    possible = _POSSIBLE[unit] if rate or unit else None
    if possible is not None and not possible[0] <= threshold <= possible[1]:
        raise CompareGateError(
            f"{text!r} can never decide: {possible[2]}",
            hint="-100% is a figure of 0 on B: no change is smaller"
            if unit == "%"
            else "a rate's difference in percentage points is NUMBERpp, e.g. 'error_rate>+2pp'",
        )
    return Condition(text.strip(), name, bound, op, threshold, unit)  # type: ignore[arg-type]


def evaluate(comparison: Comparison, condition: Condition) -> GateResult:
    """Whether a condition holds of a comparison, and the figure it read.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.compare import compare
        >>> corpus = read_corpus("tests/data/run-facts")
        >>> result = evaluate(compare(corpus, corpus), parse_condition("error_rate>+2pp"))
        >>> result.value, result.holds
        (0.0, False)
    """
    value: float | None
    if condition.name in RATES:
        if condition.name == "tool_failure_rate":  # the rate's B - A, as shares
            tools = comparison.tools
            counts = [int(tools[column].sum() or 0) for column in ("a_failed", "a_calls", "b_failed", "b_calls")]
        else:
            name = condition.name
            wanted = list(FAILED_OUTCOMES) if name == "failed_rate" else [name[: -len("_rate")].replace("_", "-")]
            rows = comparison.outcomes.filter(pl.col("outcome").is_in(wanted))
            runs_a, runs_b = comparison.runs
            counts = [int(rows["a"].sum() or 0), runs_a, int(rows["b"].sum() or 0), runs_b]
        diff, low, high = newcomb_interval(*counts, confidence=comparison.confidence)
        value = {"low": low, "high": high, None: diff}[condition.bound]
        scale = 100.0 if condition.unit == "pp" else 1.0
        value = None if value is None else value * scale
    else:
        level = "tree" if condition.name.startswith("tree_") else "run"
        bare = condition.name.removeprefix("tree_")
        stat = bare.rsplit("_", 1)[1]
        metric = bare[: -len(stat) - 1]
        rows = comparison.metrics.filter((pl.col("level") == level) & (pl.col("metric") == metric))
        row = rows.row(0, named=True) if rows.height else {}
        why = row.get("not_comparable")  # compare's own verdict: the row is not tested either
        if why is not None:
            return GateResult(condition, None, None, f"{condition.text}: not comparable: {why}")
        if condition.unit == "%":
            if stat == "p90":  # no interval: the change of the two figures
                raw = relative_change(row.get("a_p90"), row.get("b_p90"))
            else:
                raw = row.get(f"{stat}_change_{condition.bound}" if condition.bound else f"{stat}_change")
            value = None if raw is None else raw * 100
        else:
            a, b = row.get(f"a_{stat}"), row.get(f"b_{stat}")
            value = None if a is None or b is None else b - a
    if value is None:
        return GateResult(condition, None, None, f"{condition.text}: unknown (the figure cannot be computed)")
    value = round(value, 9)  # 12/40 is 30.000000000000004 pp in floating point: a gate at +30pp must not hold
    threshold, op = condition.threshold, condition.op
    holds = {">": value > threshold, ">=": value >= threshold, "<": value < threshold, "<=": value <= threshold}[op]
    shown = f"{value:+.4g}{condition.unit}"
    return GateResult(condition, value, holds, f"{condition.text}: {shown} ({'holds' if holds else 'does not hold'})")
