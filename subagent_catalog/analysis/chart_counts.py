"""The counts behind the report's charts: listing rows and descriptors by category and colour.

Each chart is a tally of (category, colour) pairs (``folded_tally``): the most frequent
categories kept, the rest folded into ``(other)``. Labels are the view's business, so the caller
passes the function that names a category (a chart clips long names); counting by the label
keeps two names a chart cannot tell apart in one bar.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import polars as pl

from subagent_catalog.frames.units import CALENDAR_MAX_MS, CALENDAR_MIN_MS

TOP_CATEGORIES = 15
"""The categories a chart keeps before folding the rest into ``(other)``."""

Every = Literal["1h", "1d", "1w"]


def folded_tally(
    frame: pl.DataFrame, category: str, colour: str, *, limit: int = TOP_CATEGORIES, label: Callable[[str], str] = str
) -> pl.DataFrame:
    """``frame`` counted by (``label(category)``, ``colour``), beyond ``limit`` categories folded into ``(other)``.

    A null category is ``(none)``. Columns ``category``, ``colour``, ``count`` and ``total`` (the
    category's rows): the largest category first, ties by name, then by colour.

    Examples:
        >>> rows = pl.DataFrame({"model": ["a", "a", "b", None], "outcome": ["ok", "error", "ok", "ok"]})
        >>> folded_tally(rows, "model", "outcome", limit=2).rows()
        [('a', 'error', 1, 2), ('a', 'ok', 1, 2), ('(none)', 'ok', 1, 1), ('(other)', 'ok', 1, 1)]
    """
    values = frame[category].cast(pl.String)
    names = {value: label(value) for value in values.unique().drop_nulls().to_list()}
    named = pl.DataFrame(
        {"category": values.replace_strict(names, return_dtype=pl.String).fill_null("(none)"), "colour": frame[colour]}
    )
    kept = named.group_by("category").len().sort(["len", "category"], descending=[True, False]).head(limit)
    named = named.with_columns(
        pl.when(pl.col("category").is_in(kept["category"].implode())).then("category").otherwise(pl.lit("(other)"))
    )
    counted = named.group_by("category", "colour").len("count").with_columns(pl.col("count").cast(pl.Int64))
    counted = counted.with_columns(pl.col("count").sum().over("category").alias("total"))
    return counted.sort(["total", "category", "colour"], descending=[True, False, False], nulls_last=True)


def _outcome() -> pl.Expr:
    """A listing row's outcome: ``child``, or its diagnostic's reason."""
    return pl.when(pl.col("kind") == "child").then(pl.lit("child")).otherwise(pl.col("reason").cast(pl.String))


@dataclass
class ListingCounts:
    """The listing charts' tallies (``folded_tally`` columns; ``time`` has ``bin`` epoch ms for ``category``)."""

    reason_cause: pl.DataFrame
    provider: pl.DataFrame
    depth: pl.DataFrame
    """By delegation depth as text (``?`` unknown), in depth order, ``?`` last."""
    time: pl.DataFrame
    every: Every
    """The time bin: an hour up to two days of span, a day up to 120, else a week."""
    undated: int
    """Rows with a createdAt outside years 1 to 9999: left off the time axis."""


def listing_counts(rows: pl.DataFrame, sessions: pl.DataFrame, *, label: Callable[[str], str] = str) -> ListingCounts:
    """The charts' tallies of catalog ``rows`` (children and diagnostics) and the corpus's ``sessions``.

    Examples:
        >>> from subagent_catalog import catalog, read_corpus
        >>> corpus = read_corpus("data/sample", cache=False)
        >>> counts = listing_counts(catalog(corpus), corpus.sessions)
        >>> counts.provider.columns, counts.every in ("1h", "1d", "1w")
        (['category', 'colour', 'count', 'total'], True)
    """
    listed = rows.filter(pl.col("kind").is_in(["child", "diagnostic"])).with_columns(_outcome().alias("outcome"))
    diagnostics = listed.filter(pl.col("kind") == "diagnostic")
    # each row's delegationDepth by its session id (``?``: unknown), the last session of an id winning
    depths = sessions.select("session_id", "delegation_depth").filter(
        pl.col("session_id").is_in(listed["id"].unique().implode())
    )
    depths = depths.unique("session_id", keep="last", maintain_order=True)
    joined = listed.join(depths, left_on="id", right_on="session_id", how="left", nulls_equal=True)
    depth = folded_tally(
        joined.with_columns(pl.col("delegation_depth").cast(pl.String).fill_null("?")),
        "delegation_depth",
        "outcome",
        limit=joined.height + 1,
    )
    depth = depth.sort(pl.col("category") == "?", pl.col("category").cast(pl.Int64, strict=False), "colour")
    created = listed.select(pl.col("created_at_ms").alias("ms"), "outcome").filter(pl.col("ms").is_not_null())
    dated = created.filter(pl.col("ms").is_between(CALENDAR_MIN_MS, CALENDAR_MAX_MS))
    millis = dated.select(pl.col("ms").max().alias("last"), pl.col("ms").min().alias("first")).row(0)
    days = ((millis[0] or 0) - (millis[1] or 0)) / 86_400_000
    every: Every = "1h" if days <= 2 else "1d" if days <= 120 else "1w"
    time = (
        dated.select(pl.from_epoch("ms", time_unit="ms").dt.truncate(every).dt.epoch("ms").alias("bin"), "outcome")
        .group_by("bin", "outcome")
        .len("count")
        .sort("bin", "outcome")
    )
    return ListingCounts(
        reason_cause=folded_tally(diagnostics, "cause", "outcome", limit=25, label=label),
        provider=folded_tally(listed, "provider", "outcome", label=label),
        depth=depth,
        time=time,
        every=every,
        undated=created.height - dated.height,
    )
