"""What each session cost: its own usage samples priced (``prices``), summed per session.

A session's ``cost_usd`` is the sum of its own samples' costs (a fork's seed is its parent's and is
not counted again); ``null`` when any of them is unpriced (an unknown model is never $0) or when the
log's events could not be scanned; ``0.0`` for a readable session that reported no usage.

Its known part (``cost_usd_known``, asked for with ``known=True``) sums the samples that have a price:
equal to ``cost_usd`` when that is known, a lower bound of it otherwise (``0.0`` when nothing is
priced, and for a log whose events could not be scanned: nothing of it is known).
"""

from __future__ import annotations

import polars as pl

from subagent_catalog.frames.schemas import COST_SCHEMA
from subagent_catalog.prices import SAMPLE_COLUMNS, Prices, PriceTable, price_table, sample_costs

__all__ = ["COST_SCHEMA", "known_costs", "ordered_sum", "own_samples", "session_costs", "with_costs"]


def own_samples(sessions: pl.LazyFrame, *, part: str = "own") -> pl.LazyFrame:
    """One row per usage sample of ``sessions`` (``list_order``, ``session_id``, then the sample's fields).

    ``part`` is ``own`` (the sessions' own steps), ``seed`` (a fork's inherited ones) or ``all``.

    Examples:
        >>> sessions = pl.LazyFrame({"list_order": [0], "session_id": ["a"], "usage_samples": [None]},
        ...     schema_overrides={"usage_samples": pl.List(pl.Struct({"in_seed": pl.Boolean}))})
        >>> own_samples(sessions).collect().height
        0
    """
    frame = (
        sessions.select("list_order", "session_id", "usage_samples")
        .explode("usage_samples")
        .filter(pl.col("usage_samples").is_not_null())
        .unnest("usage_samples")
    )
    if part == "own":
        return frame.filter(~pl.col("in_seed"))
    if part == "seed":
        return frame.filter(pl.col("in_seed"))
    return frame


def session_costs(sessions: pl.LazyFrame, table: PriceTable, *, known: bool = False) -> pl.LazyFrame:
    """``list_order`` and ``cost_usd`` of every session, with ``cost_usd_known`` when ``known`` (module docstring).

    Examples:
        >>> from subagent_catalog.prices import price_table
        >>> sample = {"seq": 3, "in_seed": False, "provider": "p", "model": "m", "time_ms": 0, "input_tokens": 10**6,
        ...     "output_tokens": 0, "cache_read_tokens": None, "cache_write_tokens": None, "reasoning_tokens": None}
        >>> unknown = {**sample, "model": "x"}
        >>> sessions = pl.LazyFrame({"list_order": [0, 1, 2, 3, 4], "session_id": ["a", "b", "c", "d", "e"],
        ...     "usage_samples": [[sample], [], None, [sample, unknown], [{**sample, "in_seed": True}]]})
        >>> session_costs(sessions, price_table({"p/m": {"input": 3, "output": 1}})).collect().rows()
        [(0, 3.0), (1, 0.0), (2, None), (3, None), (4, 0.0)]
        >>> session_costs(sessions, price_table({"p/m": {"input": 3, "output": 1}}), known=True).collect().rows()[2:4]
        [(2, None, 0.0), (3, None, 3.0)]
    """
    priced = sample_costs(own_samples(sessions).select("list_order", "seq", *SAMPLE_COLUMNS), table)
    per_session = priced.group_by("list_order").agg(
        pl.when(pl.col("cost_usd").is_null().any()).then(None).otherwise(ordered_sum("cost_usd", "seq")).alias("_cost"),
        *([ordered_sum("cost_usd", "seq", fill=0.0).alias("_known")] if known else []),
        pl.len().alias("_samples"),
    )
    known_part = pl.when(pl.col("_samples").is_null()).then(0.0).otherwise(pl.col("_known")).cast(pl.Float64)
    return (
        sessions.select("list_order", "usage_samples")
        .join(per_session, on="list_order", how="left")
        .select(
            "list_order",
            pl.when(pl.col("usage_samples").is_null())
            .then(None)
            .when(pl.col("_samples").is_null())
            .then(0.0)  # no own sample: nothing billed (a fork's seed is its parent's)
            .otherwise(pl.col("_cost"))
            .cast(pl.Float64)
            .alias("cost_usd"),
            *([known_part.alias("cost_usd_known")] if known else []),
        )
        .sort("list_order")
    )


def known_costs(sessions: pl.DataFrame, *, prices: Prices | PriceTable | None = None) -> pl.Series:
    """Each session's known cost (``cost_usd_known``), in the frame's row order.

    It is ``cost_usd`` where that is known; else what the session's priced samples cost (``prices``):
    a lower bound of its cost, 0 when none has a price or its usage could not be read. A session
    with no model usage costs a known 0. Only the sessions of unknown cost are priced again.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> sessions = read_corpus("data/sample").sessions
        >>> unknown = sessions.filter(pl.col("cost_usd").is_null())
        >>> list(zip(unknown["session_id"], known_costs(unknown)))
        [('garbage-line', 0.0), (None, 0.0), ('résumé-écrit', 0.0), ('scratch', 0.0)]
    """
    cost = sessions["cost_usd"]
    if cost.null_count() == 0:
        return cost.alias("cost_usd_known")
    unknown = sessions.filter(cost.is_null()).select("list_order", "session_id", "usage_samples")
    parts = session_costs(unknown.lazy(), price_table(prices), known=True).collect()
    found = sessions.select("list_order").join(parts, on="list_order", how="left", maintain_order="left")
    return pl.select(pl.coalesce(cost, found["cost_usd_known"], 0.0)).to_series().alias("cost_usd_known")


def ordered_sum(column: str, *order: str, fill: float | None = None) -> pl.Expr:
    """The sum of ``column`` added left to right in ``order``: the same float whatever the frame's chunks.

    (Polars' ``sum`` in a group-by adds a group's floats in an order that depends on the column's
    chunks and on how its threads split the rows: two runs over equal data can differ in the last bit.)

    Examples:
        >>> pl.DataFrame({"c": [0.1, 0.2, 0.3], "o": [2, 1, 0]}).select(ordered_sum("c", "o")).item()
        0.6

    ``fill`` stands for a null value (without it a null stays out of the sum, as in ``sum``).
    """
    values = pl.col(column) if fill is None else pl.col(column).fill_null(fill)
    return values.sort_by(*order).cum_sum().last()


def with_costs(sessions: pl.DataFrame, table: PriceTable) -> pl.DataFrame:
    """``sessions`` with its ``cost_usd`` column (computed anew by ``table``), rows in their order.

    Examples:
        >>> from subagent_catalog.prices import price_table
        >>> from subagent_catalog.frames.schemas import USAGE_SAMPLE_TYPE
        >>> sessions = pl.DataFrame({"list_order": [0, 1], "session_id": ["a", "b"], "usage_samples": [[], None]},
        ...     schema_overrides={"usage_samples": pl.List(USAGE_SAMPLE_TYPE)})
        >>> with_costs(sessions, price_table())["cost_usd"].to_list()
        [0.0, None]
    """
    if sessions.height == 0:
        return sessions.drop("cost_usd", strict=False).with_columns(pl.lit(None, pl.Float64).alias("cost_usd"))
    costs = session_costs(sessions.lazy(), table).collect()
    return sessions.drop("cost_usd", strict=False).with_columns(
        costs.sort("list_order")["cost_usd"].alias("cost_usd")
        if sessions["list_order"].is_sorted()
        else sessions.select("list_order").join(costs, on="list_order", how="left", maintain_order="left")["cost_usd"]
    )
