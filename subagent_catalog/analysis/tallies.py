"""The counts views show, made here once: a view formats a tally and counts nothing itself.

``tally`` is the one "rows by value, the most first" every bar, pill and filter list uses; the
problem tables order the corpus's problems the way the report and ``check`` list them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

from subagent_catalog.analysis.summary import SEVERITY_ORDER


def tally(frame: pl.DataFrame, *keys: str) -> pl.DataFrame:
    """Rows of ``frame`` counted by ``keys`` (column ``count``): the most first, ties by the keys, nulls last.

    Examples:
        >>> tally(pl.DataFrame({"outcome": ["error", "ok", "error", None]}), "outcome").rows()
        [('error', 2), ('ok', 1), (None, 1)]
    """
    counted = frame.group_by(*keys).len("count").with_columns(pl.col("count").cast(pl.Int64))
    return counted.sort(["count", *keys], descending=[True] + [False] * len(keys), nulls_last=True)


def _severity() -> pl.Expr:
    return pl.col("severity").replace_strict(SEVERITY_ORDER, range(3), default=9, return_dtype=pl.Int64)


def _worst_first(*then: pl.Expr | str) -> list[pl.Expr | str]:
    return [_severity(), pl.col("fails_listing").not_(), *then]


def problem_tables(problems: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``problems`` counted by (severity, kind, scope, fails_listing), and every problem, both the worst first.

    The worst is an error before a warning before an info, one that fails the listing first; the
    counts then go the most first, the problems in their own order.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> counts, ordered = problem_tables(read_corpus("data/sample", cache=False).problems)
        >>> counts.columns, counts["count"].sum() == ordered.height
        (['severity', 'kind', 'scope', 'fails_listing', 'count'], True)
    """
    keys = ("severity", "kind", "scope", "fails_listing")
    counts = problems.group_by(keys).len("count").with_columns(pl.col("count").cast(pl.Int64))
    counts = counts.sort(_worst_first(pl.col("count").neg(), "kind", "scope"), nulls_last=True)
    return counts, problems.with_row_index("order").sort(_worst_first("order")).drop("order")


def worst_problem_lines(problems: pl.DataFrame) -> pl.DataFrame:
    """For each file with a located problem, its most severe one: ``path``, ``line``, ``kind``.

    Ties go to the earliest line, then the kind's name.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> worst_problem_lines(read_corpus("data/sample", cache=False).problems).columns
        ['path', 'line', 'kind']
    """
    located = problems.filter(pl.col("line").is_not_null() & pl.col("path").is_not_null())
    ranked = located.sort(_severity(), "line", "kind", maintain_order=True)
    return ranked.unique("path", keep="first", maintain_order=True).select("path", "line", "kind")


def split_tally(
    frame: pl.DataFrame,
    dimension: str,
    *,
    split: str | None = None,
    order: Sequence[object] | Literal["count", "value"] = "count",
) -> pl.DataFrame:
    """Rows counted by ``dimension`` within each value of ``split``: ``split``, ``dimension``, ``count``, ``total``.

    ``total`` is the rows of the row's split. Every split lists its values in one order: ``order``'s
    (values it does not name after), ``"value"`` sorted, or ``"count"`` the most rows overall first.

    Examples:
        >>> rows = pl.DataFrame({"model": ["a", "b", "b", "b"], "outcome": ["ok", "ok", "error", "ok"]})
        >>> split_tally(rows, "model", split="outcome").rows()
        [('error', 'b', 1, 1), ('ok', 'b', 2, 3), ('ok', 'a', 1, 3)]
    """
    keys = [split, dimension] if split else [dimension]
    counts = frame.group_by(keys).len("count").with_columns(pl.col("count").cast(pl.Int64))
    if split is None:
        counts = counts.with_columns(pl.lit(None, pl.String).alias("split"))
    else:
        counts = counts.rename({split: "split"})
    if order == "count":
        order = tally(frame, dimension)[dimension].to_list()
    elif order == "value":
        order = sorted(set(counts[dimension].to_list()))
    rank = pl.col(dimension).replace_strict(
        {value: index for index, value in enumerate(order)}, default=len(order), return_dtype=pl.Int64
    )
    counts = counts.with_columns(pl.col("count").sum().over("split").alias("total"))
    return counts.select("split", dimension, "count", "total").sort(["split", rank, dimension], nulls_last=True)
