"""Runs of two corpora paired by task (their title or first human prompt), and the paired tests over them.

Only roots are paired (a subagent is part of its root's run): each root of A and of B gets a key, its
last ``session/title`` (``match="title"``; roots without one are left unpaired) or its first human
prompt (``match="prompt"``), whitespace folded. Equal keys pair in list order: the first root of A
with a key pairs with the first of B with it, the second with the second; the rest stay unpaired and
the counts say so. A pair's figures are its trees' (the root and every session below it).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import polars as pl

from subagent_catalog.analysis.compare_sides import RUN_METRICS, Side
from subagent_catalog.analysis.compare_stats import ALPHA, holm, paired_tests
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.frames.source import Source

Match = Literal["none", "title", "prompt"]
"""How ``compare`` pairs runs of the two sides: not at all, by title, or by first human prompt."""

TASK_SCHEMA: dict[str, Any] = {
    "metric": pl.String,
    "pairs": pl.Int64,
    "b_higher": pl.Int64,
    "a_higher": pl.Int64,
    "median_diff": pl.Float64,
    "test": pl.String,
    "p_value": pl.Float64,
    "p_adjusted": pl.Float64,
    "significant": pl.Boolean,
    "better": pl.String,
}
"""``Comparison.tasks``: per metric (``failed``: the root's outcome; the others per tree), the pairs, how many
are higher on each side, the median difference B - A, the test and its p-values (``failed``: the sign test on
the pairs whose outcome flipped, i.e. McNemar's exact test; a metric: Wilcoxon's signed-rank test)."""


def _keys(source: Source, orders: list[int], match: Literal["title", "prompt"]) -> pl.DataFrame:
    """``list_order`` and ``key`` (the read's ``title`` or ``prompt`` column) of the roots asked for that have one."""
    column = "title" if match == "title" else "prompt"
    rows = source.table("sessions", ["list_order", column]).filter(pl.col("list_order").is_in(orders))
    return source.collect(rows.drop_nulls(column).select("list_order", pl.col(column).alias("key")))


def _side_rows(source: Source, side: Side, match: Literal["title", "prompt"]) -> pl.DataFrame:
    roots = side.runs.filter(pl.col("depth") == 0).select("list_order", "session_id", "outcome")
    keys = _keys(source, roots["list_order"].to_list(), match)
    known = {"cost_usd_known": pl.when(pl.col("cost_unknown") == 0).then("cost_usd_known")}  # a bound is no value
    trees = side.trees.select(
        pl.col("root_list_order").alias("list_order"),
        *(known.get(column, pl.col(column)).alias(name) for name, column in RUN_METRICS.items()),
    )
    return (
        roots.join(keys, on="list_order", how="inner")
        .join(trees, on="list_order", how="left")
        .sort("list_order")
        .with_columns(pl.col("list_order").rank("ordinal").over("key").alias("_nth"))
    )


def match_tasks(a: Source, b: Source, side_a: Side, side_b: Side, *, match: Match) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(tasks, pairs)`` of two sides: the paired tests (``TASK_SCHEMA``) and the pairs, changed outcomes first.

    ``pairs``: ``key``, ``a_session``, ``b_session``, ``a_list_order``, ``b_list_order``, ``a_outcome``,
    ``b_outcome``, ``change`` (``broke``: A's root did not fail and B's did; ``fixed``: the reverse;
    ``changed``: another change of outcome; ``same``), and ``a_<metric>``/``b_<metric>``: the trees' figures
    (``RUN_METRICS``; ``cost`` null when a session of the tree has an unknown cost: such pairs are left out
    of the paired cost test).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.prices import price_table
        >>> from subagent_catalog.analysis.compare_sides import read_side
        >>> corpus = read_corpus("data/sample")
        >>> side = read_side(corpus, price_table())
        >>> tasks, pairs = match_tasks(corpus, corpus, side, side, match="prompt")
        >>> pairs.height > 0, pairs["change"].unique().to_list()
        (True, ['same'])
    """
    if match == "none":
        raise ValueError("match_tasks needs match='title' or match='prompt'")
    rows_a, rows_b = _side_rows(a, side_a, match), _side_rows(b, side_b, match)
    metrics = list(RUN_METRICS)
    paired = rows_a.join(rows_b, on=["key", "_nth"], how="inner", suffix="_b").sort("list_order")
    failed_a = pl.col("outcome").is_in(FAILED_OUTCOMES)
    failed_b = pl.col("outcome_b").is_in(FAILED_OUTCOMES)
    change = (
        pl.when(~failed_a & failed_b)
        .then(pl.lit("broke"))
        .when(failed_a & ~failed_b)
        .then(pl.lit("fixed"))
        .when(pl.col("outcome") != pl.col("outcome_b"))
        .then(pl.lit("changed"))
        .otherwise(pl.lit("same"))
    )
    pairs = paired.select(
        "key",
        pl.col("session_id").alias("a_session"),
        pl.col("session_id_b").alias("b_session"),
        pl.col("list_order").alias("a_list_order"),
        pl.col("list_order_b").alias("b_list_order"),
        pl.col("outcome").alias("a_outcome"),
        pl.col("outcome_b").alias("b_outcome"),
        change.alias("change"),
        *(pl.col(m).alias(f"a_{m}") for m in metrics),
        *(pl.col(f"{m}_b").alias(f"b_{m}") for m in metrics),
    )
    rank = pl.col("change").replace_strict({"broke": 0, "fixed": 1, "changed": 2, "same": 3}, default=4)
    pairs = pairs.sort(rank, "a_list_order")
    flips = pairs.filter(pl.col("change").is_in(["broke", "fixed"]))
    broke = int((flips["change"] == "broke").sum())
    fixed = flips.height - broke
    sign = paired_tests(np.array([1.0] * broke + [-1.0] * fixed + [0.0] * (pairs.height - flips.height)))
    failed = {"metric": "failed", "pairs": pairs.height, "b_higher": broke, "a_higher": fixed, "median_diff": None}
    rows: list[dict[str, Any]] = [{**failed, "test": "sign (McNemar exact)", "p_value": sign["sign_p"], "_lower": True}]
    for name in RUN_METRICS:
        both = pairs.select(f"a_{name}", f"b_{name}").drop_nulls()
        diffs = (both[f"b_{name}"].cast(pl.Float64) - both[f"a_{name}"].cast(pl.Float64)).to_numpy()
        out = paired_tests(diffs)  # pairs, b_higher, a_higher, median_diff and the p-values
        p = out["wilcoxon_p"] if out["wilcoxon_p"] is not None else (1.0 if diffs.size else None)
        lower = name in ("cost", "tokens", "active_time", "failed_tool_results")
        rows.append({**out, "metric": name, "test": "wilcoxon", "p_value": p, "_lower": lower})
    for row, adjusted in zip(rows, holm([row["p_value"] for row in rows]), strict=True):
        row["p_adjusted"] = adjusted
        row["significant"] = adjusted is not None and adjusted < ALPHA
        lower = row.pop("_lower")
        row["better"] = None
        if row["significant"] and lower and row["b_higher"] != row["a_higher"]:
            row["better"] = "a" if row["b_higher"] > row["a_higher"] else "b"
    return pl.DataFrame(rows, schema=TASK_SCHEMA, orient="row"), pairs
