"""A tree of runs over time: each session's span, and how many ran at once (the data every timeline view draws).

``tree_timeline`` gives one row per session of the tree below a session (itself included), with
its own events' first and last times, its outcome and its place in the tree; ``concurrency`` turns
such rows into a step curve of how many were running. The tree is ``run_trees``' (``parentSession``
links resolved once, cycles cut; ``scope`` as there). A session's span is its own events' (a fork's
inherited seed is its parent's time), so a child that never logged an event of its own has no span
(``start_ms`` null): it is a row, never dropped, and the views say so.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from subagent_catalog.analysis.trees import Scope, run_trees
from subagent_catalog.catalog.source import source_reads
from subagent_catalog.errors import UnknownSessionError
from subagent_catalog.frames.nearest import unknown_id_hint
from subagent_catalog.frames.source import Source

TIMELINE_SCHEMA: dict[str, pl.DataType] = {
    "list_order": pl.Int64(),
    "session_id": pl.String(),
    "parent_list_order": pl.Int64(),
    "depth": pl.Int64(),
    "origin": pl.String(),
    "label": pl.String(),
    "outcome": pl.String(),
    "outcome_detail": pl.String(),
    "start_ms": pl.Int64(),
    "end_ms": pl.Int64(),
    "duration_ms": pl.Int64(),
    "subtree_sessions": pl.Int64(),
}
"""``tree_timeline``'s columns: ``depth`` counts from the chosen session (0) over the counted sessions,
``parent_list_order`` is the nearest counted ancestor, ``label`` the descriptor identity's label,
``start_ms``/``end_ms`` the own events' first and last times, ``subtree_sessions`` ``run_trees``'."""

_SESSION_COLUMNS = [
    "list_order",
    "origin",
    "identity_label",
    "outcome",
    "outcome_detail",
    "run_first_ms",
    "run_last_ms",
]


@source_reads
def tree_timeline(
    source: Source,
    session_id: str,
    *,
    scope: Scope = "lineage",
    max_depth: int | None = None,
    trees: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The sessions of the tree below ``session_id`` (itself included) with their time spans.

    Args:
        source: a read corpus or an opened archive.
        session_id: the tree's top (any session; its first log when several carry the id).
        scope: ``lineage`` (every session below, forks included) or ``subagents``
            (what upstream's descendants listing shows), as for ``run_trees``.
        max_depth: keep sessions at most this many levels below the top (``1``: its children).
        trees: ``run_trees(source, scope=scope)`` when already computed (drawing several trees
            walks the corpus once).

    Returns:
        ``TIMELINE_SCHEMA`` rows ordered by ``start_ms`` (sessions without a span last), then list
        order.

    Raises:
        UnknownSessionError: no log has the id (the hint names the nearest ids).

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> rows = tree_timeline(read_corpus("tests/data/run-facts"), "parent-1")
        >>> rows.select("session_id", "depth", "outcome").rows()
        [('parent-1', 0, 'completed'), ('child-1', 1, 'open')]
    """
    trees = (trees if trees is not None else run_trees(source, scope=scope)).select(
        "list_order", "session_id", "parent_list_order", "root_list_order", "depth", "subtree_sessions"
    )
    matches = trees.filter(pl.col("session_id") == session_id)
    if matches.height == 0:
        near, hint = unknown_id_hint(session_id, trees["session_id"].to_list(), otherwise="check the id and the root")
        raise UnknownSessionError(session_id, near, message=f"no session log has id {session_id!r}", hint=hint)
    top = matches["list_order"][0]
    # Everything below it is in its root's tree: only that tree's links are walked (not a dict of every session).
    trees = trees.filter(pl.col("root_list_order") == matches["root_list_order"][0])
    parents = dict(zip(trees["list_order"].to_list(), trees["parent_list_order"].to_list(), strict=True))
    children: dict[int, list[int]] = {}
    for node, up in parents.items():
        if up is not None:
            children.setdefault(up, []).append(node)
    shown = _shown(source) if scope == "subagents" else None
    # (depth, nearest counted ancestor) of each counted session, walked once (run_trees cut any cycle)
    kept: dict[int, tuple[int, int | None]] = {top: (0, None)}
    stack: list[tuple[int, int]] = [(top, top)]  # (node, its nearest counted ancestor or itself)
    while stack:
        node, anchor = stack.pop()
        for child in children.get(node, []):
            if shown is None or child in shown:
                depth = kept[anchor][0] + 1
                if max_depth is not None and depth > max_depth:
                    continue
                kept[child] = (depth, anchor)
                stack.append((child, child))
            else:  # an ordinary fork between two subagents: walked through, not shown
                stack.append((child, anchor))
    orders = list(kept)
    own = source.table("sessions", _SESSION_COLUMNS).filter(pl.col("list_order").is_in(orders)).collect()
    placed = pl.DataFrame(
        {
            "list_order": orders,
            "depth": [kept[order][0] for order in orders],
            "parent_list_order": [kept[order][1] for order in orders],
        },
        schema={"list_order": pl.Int64, "depth": pl.Int64, "parent_list_order": pl.Int64},
    )
    rows = (
        trees.select("list_order", "session_id", "subtree_sessions")
        .join(placed, on="list_order")
        .join(own, on="list_order", how="left")
        .with_columns(
            pl.col("identity_label").alias("label"),
            pl.col("run_first_ms").alias("start_ms"),
            pl.col("run_last_ms").alias("end_ms"),
            (pl.col("run_last_ms") - pl.col("run_first_ms")).alias("duration_ms"),
        )
    )
    return rows.sort(["start_ms", "list_order"], nulls_last=True).select(
        [pl.col(name).cast(dtype) for name, dtype in TIMELINE_SCHEMA.items()]
    )


def _shown(source: Source) -> set[int]:
    """The sessions upstream's descendants listing shows: listed ``origin: "subagent"`` logs."""
    flags = source.table("sessions", ["list_order", "origin", "listed"]).collect()
    return {order for order, origin, listed in flags.iter_rows() if origin == "subagent" and listed is True}


def concurrency(timeline: pl.DataFrame, *, among: Literal["below", "children"] = "below") -> pl.DataFrame:
    """How many sessions of a timeline were running at each moment: a step curve.

    Args:
        timeline: ``tree_timeline`` rows.
        among: ``below`` counts every session under the top, ``children`` only its direct children.

    Returns:
        ``time_ms`` and ``running`` (the count from that time until the next row), one row per
        distinct start or end, in time order. At one time every start and end there is applied
        together, so a span ending when another starts hands over (``run_trees``'
        ``peak_children_running`` counts such touching spans as overlapping, so it may be one
        more). Sessions without a span do not count.

    Examples:
        >>> rows = pl.DataFrame({"depth": [0, 1, 1, 2], "start_ms": [0, 10, 15, 12], "end_ms": [50, 20, 30, 13]})
        >>> concurrency(rows).rows()
        [(10, 1), (12, 2), (13, 1), (15, 2), (20, 1), (30, 0)]
        >>> concurrency(rows, among="children")["running"].max()
        2
    """
    spans = timeline.filter(
        (pl.col("depth") == 1 if among == "children" else pl.col("depth") >= 1)
        & pl.col("start_ms").is_not_null()
        & pl.col("end_ms").is_not_null()
    )
    edges = pl.concat(
        [
            spans.select(pl.col("start_ms").alias("time_ms"), pl.lit(1).alias("change")),
            spans.select(pl.col("end_ms").alias("time_ms"), pl.lit(-1).alias("change")),
        ]
    )
    # at one time, starts before ends (touching spans overlap): the running count after all of that
    # time's starts is what the curve holds from that time on, less the ends that also fall there
    by_time = (
        edges.group_by("time_ms")
        .agg(pl.col("change").sum().alias("change"))
        .sort("time_ms")
        .with_columns(pl.col("change").cum_sum().cast(pl.Int64).alias("running"))
    )
    return by_time.select(pl.col("time_ms").cast(pl.Int64), "running")


def curve_slices(curve: pl.DataFrame, *, start: int, span: int, slices: int) -> pl.DataFrame:
    """A ``concurrency`` curve cut into ``slices`` equal slices of ``span`` ms from ``start``.

    Each slice keeps the most sessions running anywhere in it (``top``) and the count it ends
    with (``after``): a long curve drawn at a few points loses no peak.

    Examples:
        >>> curve = pl.DataFrame({"time_ms": [0, 1, 2, 9], "running": [1, 3, 2, 0]})
        >>> curve_slices(curve, start=0, span=10, slices=2).rows()
        [(0, 3, 2), (1, 0, 0)]
    """
    index = ((pl.col("time_ms") - start) * slices // span).clip(0, slices - 1).alias("slice")
    return (
        curve.with_columns(index)
        .group_by("slice", maintain_order=True)
        .agg(pl.col("running").max().alias("top"), pl.col("running").last().alias("after"))
        .sort("slice")
    )
