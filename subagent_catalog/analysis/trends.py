"""Trends: runs, failures, cost, tokens and active time per UTC day, and per day and model.

A run is binned by the UTC day it was created (``createdAt``, else its first own event: the day
``RunSummary.by_day`` uses); a time outside years 1 to 9999 is in the ``out of range`` bin and a run
with no time in the ``no time`` bin, so no run is dropped. Per bin: the runs, the failed ones, the
known cost with the number of runs of unknown cost (the known cost is then a lower bound; ``cost_usd``
is null), the tokens billed (with the runs whose usage is unknown), and the active time's p50 and p95
over the runs whose active time is known (with the number whose is not).

Per day and model, a run counts under each model that served one of its own steps (a run that used
two models is in both rows, so the rows of a day can add up to more runs than the day has); its cost
and tokens there are what that model's steps cost and used. A run no model served (no usage, or
usage that could not be read) is in the model row ``null``, with its own cost and tokens.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from subagent_catalog.analysis.runs import checked_sum, checked_total
from subagent_catalog.frames.costs import ordered_sum
from subagent_catalog.frames.units import NO_TIME, calendar_day

__all__ = ["TREND_SCHEMA", "TrendBy", "percentile", "trend_rows"]

TrendBy = Literal["day", "model"]
"""What ``trends`` bins by: the UTC day, or the UTC day and the model."""

TREND_SCHEMA: dict[str, pl.DataType] = {
    "day": pl.Date(),
    "bin": pl.String(),
    "provider": pl.String(),
    "model": pl.String(),
    "runs": pl.Int64(),
    "failed": pl.Int64(),
    "cost_usd": pl.Float64(),
    "cost_usd_known": pl.Float64(),
    "cost_unknown": pl.Int64(),
    "tokens": pl.Int64(),
    "tokens_unknown": pl.Int64(),
    "active_p50_ms": pl.Int64(),
    "active_p95_ms": pl.Int64(),
    "active_unknown": pl.Int64(),
}
"""The columns of ``trends``: ``day`` (the UTC date; null for the ``out of range`` and ``no time`` bins),
``bin`` (the day as ``YYYY-MM-DD``, or the bin's label), ``provider`` and ``model`` (``by="model"`` only;
null for the runs no model served), ``runs``, ``failed`` (of them, an outcome in ``FAILED_OUTCOMES``),
``cost_usd`` (null when any run's cost there is unknown), ``cost_usd_known`` (the priced part: a lower
bound when ``cost_unknown`` is above 0), ``cost_unknown`` (runs whose cost there is unknown), ``tokens``
(input + cache read + cache write + output; null when no run reported any, or past 2^63 - 1),
``tokens_unknown`` (runs with no token count: no step reported usage, or the usage could not be read;
the sum leaves them out), ``active_p50_ms`` and
``active_p95_ms`` (nearest-rank percentiles of the runs' active time: a time some run took; null when no
run's is known) and ``active_unknown`` (runs whose active time is unknown)."""

_TOKENS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")

_USAGE_SCHEMA = {
    "list_order": pl.Int64,
    "provider": pl.String,
    "model": pl.String,
    "cost_usd": pl.Float64,
    "cost_usd_known": pl.Float64,
    **dict.fromkeys(_TOKENS, pl.Int64),
}


def percentile(column: str, q: float) -> pl.Expr:
    """The nearest-rank ``q`` percentile of a column's non-null values (the ``ceil(q * n)``-th smallest).

    A value the column holds (no interpolation between two runs' times); null when it has none.

    Examples:
        >>> frame = pl.DataFrame({"ms": [40, 10, None, 30, 20]})
        >>> frame.select(percentile("ms", 0.5).alias("p50"), percentile("ms", 0.95).alias("p95")).row(0)
        (20, 40)
        >>> pl.DataFrame({"ms": [None]}, schema={"ms": pl.Int64}).select(percentile("ms", 0.5)).item() is None
        True
    """
    values = pl.col(column).drop_nulls().sort()
    rank = (values.len().cast(pl.Float64) * q).ceil().cast(pl.Int64) - 1
    return values.get(rank.clip(0), null_on_oob=True)


def _aggregates(cost_known: str, cost: str, tokens: str) -> list[pl.Expr]:
    return [
        pl.len().cast(pl.Int64).alias("runs"),
        pl.col("failed").sum().cast(pl.Int64).alias("failed"),
        pl.when(pl.col(cost).is_null().any()).then(None).otherwise(ordered_sum(cost, "list_order")).alias("cost_usd"),
        ordered_sum(cost_known, "list_order", fill=0.0).alias("cost_usd_known"),
        pl.col(cost).is_null().sum().cast(pl.Int64).alias("cost_unknown"),
        pl.when(pl.col(tokens).is_not_null().any()).then(checked_sum(tokens)).alias("tokens"),
        pl.col(tokens).is_null().sum().cast(pl.Int64).alias("tokens_unknown"),
        percentile("active_ms", 0.5).alias("active_p50_ms"),
        percentile("active_ms", 0.95).alias("active_p95_ms"),
        pl.col("active_ms").is_null().sum().cast(pl.Int64).alias("active_unknown"),
    ]


def _ordered(frame: pl.DataFrame, by: TrendBy) -> pl.DataFrame:
    frame = frame.with_columns(pl.col("bin").str.to_date(strict=False).alias("day"))  # null for the labelled bins
    keys: list[str | pl.Expr] = ["day", pl.col("bin") == NO_TIME]
    descending = [False, False]
    if by == "model":
        keys += [pl.col("model").is_null(), "cost_usd_known", "tokens", "provider", "model"]
        descending += [False, True, True, False, False]
    frame = frame.sort(keys, descending=descending, nulls_last=True)
    for name in ("provider", "model"):
        if name not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.String).alias(name))
    return frame.select(list(TREND_SCHEMA)).cast(TREND_SCHEMA)  # type: ignore[arg-type]


def trend_rows(runs: pl.DataFrame, usage: pl.DataFrame | None, *, by: TrendBy = "day") -> pl.DataFrame:
    """``TREND_SCHEMA`` rows from run rows and, for ``by="model"``, their usage per model.

    Args:
        runs: one row per run: ``list_order``, ``created_ms`` (the time that names its day), ``failed``
            (bool), ``active_ms``, ``tokens``, ``cost_usd`` and ``cost_usd_known``.
        usage: ``usage_by_model(by="session")`` rows of those runs (``by="model"`` only).
        by: ``day``, or ``model`` (a row per day and model).

    Returns:
        One row per bin, in day order (the ``out of range`` bin, then ``no time``, last); per day, with
        ``by="model"``, the model that cost most first and the runs no model served last.

    Examples:
        >>> runs = pl.DataFrame({"list_order": [0, 1, 2], "created_ms": [0, 1000, None],
        ...     "failed": [False, True, False], "active_ms": [100, None, 50], "tokens": [10, 20, None],
        ...     "cost_usd": [0.5, None, 0.0], "cost_usd_known": [0.5, 0.25, 0.0]})
        >>> trend_rows(runs, None).select("bin", "runs", "failed", "cost_usd", "cost_usd_known", "cost_unknown").rows()
        [('1970-01-01', 2, 1, None, 0.75, 1), ('no time', 1, 0, 0.0, 0.0, 0)]
    """
    if runs.is_empty():
        return pl.DataFrame(schema=TREND_SCHEMA)
    binned = runs.with_columns(calendar_day(pl.col("created_ms")).fill_null(pl.lit(NO_TIME)).alias("bin"))
    if by == "day":
        grouped = binned.group_by("bin").agg(*_aggregates("cost_usd_known", "cost_usd", "tokens"))
        return _ordered(grouped, by)
    per_model = (usage if usage is not None else pl.DataFrame(schema=_USAGE_SCHEMA)).select(
        pl.col("list_order").cast(pl.Int64),
        "provider",
        "model",
        pl.col("cost_usd").alias("m_cost"),
        pl.col("cost_usd_known").alias("m_cost_known"),
        checked_total(*_TOKENS).alias("m_tokens"),
    )
    keyed = binned.with_columns(pl.col("list_order").cast(pl.Int64))
    served = keyed.join(per_model, on="list_order", how="inner")
    unserved = keyed.join(per_model.select("list_order").unique(), on="list_order", how="anti")
    parts = []
    if served.height:
        parts.append(
            served.group_by("bin", "provider", "model").agg(*_aggregates("m_cost_known", "m_cost", "m_tokens"))
        )
    if unserved.height:
        alone = unserved.group_by("bin").agg(*_aggregates("cost_usd_known", "cost_usd", "tokens"))
        parts.append(
            alone.with_columns(pl.lit(None, pl.String).alias("provider"), pl.lit(None, pl.String).alias("model"))
        )
    grouped = pl.concat([part.select(parts[0].columns) for part in parts], how="vertical_relaxed")
    return _ordered(grouped, by)


def top_models(by_model: pl.DataFrame, limit: int) -> pl.DataFrame:
    """The ``limit`` models that cost most over ``trends_by_model`` rows: ``provider``, ``model``, known cost, tokens.

    Ties go to the most tokens, then the names.

    Examples:
        >>> rows = pl.DataFrame({"provider": ["p", "p", "q"], "model": ["a", "a", "b"],
        ...     "cost_usd_known": [1.0, 2.0, 2.5], "tokens": [1, 2, 3]})
        >>> top_models(rows, 1).rows()
        [('p', 'a', 3.0, 3)]
    """
    totals = by_model.group_by("provider", "model").agg(pl.col("cost_usd_known").sum(), pl.col("tokens").sum())
    order = ["cost_usd_known", "tokens", "provider", "model"]
    return totals.sort(order, descending=[True, True, False, False], nulls_last=True).head(limit)
