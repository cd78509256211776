"""Whole trees of runs: every session with the totals of its subtree (``run_trees``).

The tree is the sessions' ``parentSession`` links. ``scope="lineage"`` counts every session
below (ordinary forks included); ``scope="subagents"`` counts what upstream's descendants
listing shows: the listed ``origin: "subagent"`` sessions below, found through any session (an
ordinary fork between two subagents is walked through, not counted). A session always counts
itself. Each session's own figures are its own events' (a fork's inherited seed is counted once,
in its parent), so no token, call or cost is counted twice.

The links are resolved once, in linear time: a parent id names the first log (in list order)
carrying it; a link that closes a cycle (a session naming itself, two naming each other) is cut
and the sessions on the cycle are flagged ``in_cycle`` (they head their own trees).
"""

from __future__ import annotations

from typing import Any, Literal

import polars as pl

from subagent_catalog.analysis.runs import session_table
from subagent_catalog.frames.costs import session_costs
from subagent_catalog.frames.outcome import OUTCOMES
from subagent_catalog.prices import Prices, PriceTable, price_table
from subagent_catalog.store.source import Source

Scope = Literal["lineage", "subagents"]

_SUMS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "tool_calls",
    "tool_results_failed",
)
_COLUMNS = [
    "list_order",
    "session_id",
    "parent_session",
    "origin",
    "listed",
    "outcome",
    "run_first_ms",
    "run_last_ms",
    *_SUMS,
    "usage_samples",
]


def _parent_links(data: pl.DataFrame) -> list[int]:
    """Each row's parent row: the first row (in list order) whose ``session_id`` its ``parent_session`` names, or -1.

    Resolved by a Polars join, not a dict of every id: no Python string per session.
    """
    first = (
        data.select("session_id", pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"))
        .filter(pl.col("session_id").is_not_null())
        .group_by("session_id")
        .agg(pl.col("_row").min())
        .rename({"session_id": "parent_session"})
    )
    joined = data.select("parent_session").join(first, on="parent_session", how="left", maintain_order="left")
    return joined["_row"].fill_null(-1).to_list()


def _resolve(parent: list[int]) -> tuple[list[int], list[bool]]:
    """Each node's parent index (-1: none) with cycle-closing links cut, and whether the node is on a cycle."""
    state = [0] * len(parent)  # 0 unseen, 1 on the current walk, 2 done
    in_cycle = [False] * len(parent)
    for start in range(len(parent)):
        path = []
        node = start
        while node != -1 and state[node] == 0:
            state[node] = 1
            path.append(node)
            node = parent[node]
        if node != -1 and state[node] == 1:  # the walk came back to itself: a cycle from ``node`` on
            for member in path[path.index(node) :]:
                in_cycle[member] = True
                parent[member] = -1
        for member in path:
            state[member] = 2
    return parent, in_cycle


def _depths(parent: list[int]) -> tuple[list[int], list[int]]:
    """Each node's depth (edges from its root) and root index, in a forest."""
    depth = [-1] * len(parent)
    root = list(range(len(parent)))
    for start in range(len(parent)):
        path = []
        node = start
        while node != -1 and depth[node] == -1:
            path.append(node)
            node = parent[node]
        base, top = (-1, -1) if node == -1 else (depth[node], root[node])
        for member in reversed(path):
            base += 1
            depth[member] = base
            top = member if top == -1 else top
            root[member] = top
    return depth, root


def _peaks(parent: list[int], counted: list[bool], first: list[Any], last: list[Any]) -> list[int]:
    """Per node: the most of its counted direct children running at once (their own events' time spans)."""
    spans: dict[int, list[tuple[int, int]]] = {}
    for node, up in enumerate(parent):
        if up != -1 and counted[node] and first[node] is not None and last[node] is not None:
            spans.setdefault(up, []).append((first[node], last[node]))
    peaks = [0] * len(parent)
    for node, intervals in spans.items():
        edges = sorted([(start, 0) for start, _ in intervals] + [(end, 1) for _, end in intervals])
        running = best = 0
        for _, kind in edges:  # at equal times a start comes first: touching spans overlap
            running += 1 if kind == 0 else -1
            best = max(best, running)
        peaks[node] = best
    return peaks


def run_trees(source: Source, *, scope: Scope = "lineage", prices: Prices | PriceTable | None = None) -> pl.DataFrame:
    """One row per session with its tree position and its subtree's totals (``subtree_`` columns).

    Columns: ``list_order``, ``session_id``, ``parent_list_order`` (the resolved parent log),
    ``root_list_order``, ``root_session_id``, ``depth``, ``in_cycle``, ``children`` (counted direct
    children), ``peak_children_running`` (the most counted direct children whose own events' spans
    overlap), then over the session and the counted sessions below it: ``subtree_sessions``,
    ``subtree_subagents``, ``subtree_forks`` (ordinary sessions below), ``subtree_max_depth``,
    ``subtree_first_ms``, ``subtree_last_ms``, ``subtree_wall_ms``, the token sums, ``subtree_cost_usd``
    (``null`` when any counted session has no cost: an unpriced model, an unreadable log),
    ``subtree_tool_calls``, ``subtree_tool_results_failed`` and one ``subtree_<outcome>`` count per
    outcome. A token sum is ``null`` when no counted session reported that count.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> trees = run_trees(read_corpus("tests/data/run-facts"))
        >>> trees.select("session_id", "depth", "subtree_sessions", "subtree_input_tokens", "subtree_open").rows()
        [('child-1', 1, 1, 1310, 1), ('parent-1', 0, 2, 1310, 1)]
    """
    table = price_table(prices)
    frame = session_table(source, _COLUMNS)
    frame = frame.join(session_costs(frame, table), on="list_order", how="left").drop("usage_samples")
    data = frame.sort("list_order").collect()
    parent, in_cycle = _resolve(_parent_links(data))
    depth, root = _depths(parent)
    subagent = [origin == "subagent" for origin in data["origin"].to_list()]
    listed = [value is True for value in data["listed"].to_list()]
    if scope == "lineage":
        counted = [True] * len(parent)
    else:
        counted = [own and seen for own, seen in zip(subagent, listed, strict=True)]
    order = sorted(range(len(parent)), key=depth.__getitem__, reverse=True)  # children before their parents
    columns: dict[str, pl.Series] = {}  # each column a Series as soon as it is rolled up: one Python list at a time

    def roll(values: list[Any], combine: Any, empty: Any) -> list[Any]:
        below = [empty] * len(values)
        for node in order:
            up = parent[node]
            if up != -1:
                mine = combine(values[node], below[node]) if counted[node] else below[node]
                below[up] = combine(below[up], mine)
        return [combine(value, extra) for value, extra in zip(values, below, strict=True)]

    def add(a: Any, b: Any) -> Any:
        return b if a is None else a if b is None else a + b

    ones = [1] * len(parent)
    columns["subtree_sessions"] = _series(roll(ones, add, 0))
    columns["subtree_subagents"] = _series(
        [
            total - (1 if own else 0)
            for total, own in zip(roll([int(s) for s in subagent], add, 0), subagent, strict=True)
        ]
    )
    forks = roll([int(not s) for s in subagent], add, 0)
    columns["subtree_forks"] = _series([total - (0 if own else 1) for total, own in zip(forks, subagent, strict=True)])
    del forks
    if scope == "subagents":
        columns["subtree_forks"] = _series([0] * len(parent))
    columns["subtree_max_depth"] = _series(_heights(parent, counted, order))
    first, last = data["run_first_ms"].to_list(), data["run_last_ms"].to_list()
    columns["subtree_first_ms"] = _series(
        roll(first, lambda a, b: b if a is None else a if b is None else min(a, b), None)
    )
    columns["subtree_last_ms"] = _series(
        roll(last, lambda a, b: b if a is None else a if b is None else max(a, b), None)
    )
    for name in _SUMS:
        columns[f"subtree_{name}"] = _series(roll(data[name].to_list(), add, None))
    missing = roll([int(cost is None) for cost in data["cost_usd"].to_list()], add, 0)
    costs = roll([cost or 0.0 for cost in data["cost_usd"].to_list()], add, 0.0)
    columns["subtree_cost_usd"] = _series(
        [None if gap else cost for cost, gap in zip(costs, missing, strict=True)], pl.Float64
    )
    del missing, costs
    outcomes = data["outcome"].to_list()
    for kind in OUTCOMES:
        columns[f"subtree_{kind.replace('-', '_')}"] = _series(roll([int(o == kind) for o in outcomes], add, 0))
    del outcomes
    children = [0] * len(parent)
    for node, up in enumerate(parent):
        if up != -1 and counted[node]:
            children[up] += 1
    roots = pl.Series(root, dtype=pl.Int64)
    ups = pl.Series([up if up != -1 else None for up in parent], dtype=pl.Int64)
    out = pl.DataFrame(
        {
            "list_order": data["list_order"],
            "session_id": data["session_id"],
            "parent_list_order": data["list_order"].gather(ups),
            "root_list_order": data["list_order"].gather(roots),
            "root_session_id": data["session_id"].gather(roots),
            "depth": depth,
            "in_cycle": in_cycle,
            "children": children,
            "peak_children_running": _peaks(parent, counted, first, last),
            **columns,
        },
        schema_overrides={"parent_list_order": pl.Int64, "subtree_cost_usd": pl.Float64},
        strict=False,
    )
    return out.with_columns((pl.col("subtree_last_ms") - pl.col("subtree_first_ms")).alias("subtree_wall_ms")).select(
        "list_order",
        "session_id",
        "parent_list_order",
        "root_list_order",
        "root_session_id",
        "depth",
        "in_cycle",
        "children",
        "peak_children_running",
        "subtree_sessions",
        "subtree_subagents",
        "subtree_forks",
        "subtree_max_depth",
        "subtree_first_ms",
        "subtree_last_ms",
        "subtree_wall_ms",
        *(f"subtree_{name}" for name in _SUMS[:5]),
        "subtree_cost_usd",
        *(f"subtree_{name}" for name in _SUMS[5:]),
        *(f"subtree_{kind.replace('-', '_')}" for kind in OUTCOMES),
    )


def _series(values: list[Any], dtype: Any = None) -> pl.Series:
    """A rolled-up column as a Series (typed as ``pl.DataFrame`` with ``strict=False`` types a list)."""
    return pl.Series(values, dtype=dtype, strict=False)


def _heights(parent: list[int], counted: list[bool], order: list[int]) -> list[int]:
    """Per node: the most edges down to a counted session below it (0 when none)."""
    height = [-1] * len(parent)  # -1: no counted session below
    for node in order:
        up = parent[node]
        if up != -1:
            reach = max(0 if counted[node] else -1, height[node])
            if reach != -1:
                height[up] = max(height[up], reach + 1)
    return [max(0, value) for value in height]
