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

from array import array
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from subagent_catalog.analysis.runs import INT64_MAX, checked_total
from subagent_catalog.catalog.source import source_reads
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.costs import session_costs
from subagent_catalog.frames.outcome import OUTCOMES
from subagent_catalog.frames.source import Source
from subagent_catalog.prices import Prices, PriceTable, price_table

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
    "active_ms",
    *_SUMS,
    "usage_steps",
    "usage_samples",
]

_TOKENS = _SUMS[:5]
"""The token counts: the sums that can pass 64 bits (a count is at most 2^63 - 1 a session, a tree holds many)."""

_CHUNK = 1 << 16
"""Values converted between a Series and an array at a time (a Python list of this many at most)."""


def _filled(series: pl.Series, out: Any) -> Any:
    """``out`` (an ``array`` or a ``bytearray``) extended by a Series without nulls, a chunk at a time."""
    for start in range(0, series.len(), _CHUNK):
        out.extend(series.slice(start, _CHUNK).to_list())
    return out


def _ints(series: pl.Series) -> array[int]:
    """An integer Series without nulls as an ``array('q')``: 8 bytes a value, not a Python int each."""
    return _filled(series, array("q"))  # type: ignore[no-any-return]


def _ints_bytes(series: pl.Series) -> bytearray:
    """A Series of 0 and 1 (no null) as one byte a value."""
    return _filled(series, bytearray())  # type: ignore[no-any-return]


def _present(name: str, value: str, flag: str) -> pl.Expr:
    """Column ``name``'s part ``value`` where its part ``flag`` is 1, else null."""
    return pl.when(pl.col(f"{name}:{flag}") == 1).then(pl.col(f"{name}:{value}"))


def _bools(flags: bytearray) -> pl.Series:
    """One byte a value as a boolean Series."""
    return pl.Series(flags, dtype=pl.UInt8).cast(pl.Boolean)


def _tree_data(source: Source, table: PriceTable) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The columns the roll-up reads (``_COLUMNS`` but the samples), in list order, and each session's cost.

    The costs are ``cost_usd`` and its known part ``cost_usd_known`` (``session_costs``). Frames
    already in list order (a read corpus, an archive's frames) give their own columns, not a copy:
    only the cost is computed. An archive's table is scanned, joined to its costs and sorted.
    """
    columns = [name for name in _COLUMNS if name != "usage_samples"]
    costs = ["cost_usd", "cost_usd_known"]
    if isinstance(source, Corpus) and source.sessions["list_order"].is_sorted():
        sessions = source.sessions
        priced = session_costs(sessions.lazy(), table, known=True).collect()
        return sessions.select(columns), priced.sort("list_order").select(costs)
    frame = source.table("sessions", _COLUMNS)
    joined = frame.join(session_costs(frame, table, known=True), on="list_order", how="left")
    data = joined.select(*columns, *costs).sort("list_order").collect()
    return data.drop(costs), data.select(costs)


def _parent_links(data: pl.DataFrame) -> array[int]:
    """Each row's parent row: the first row (in list order) whose ``session_id`` its ``parent_session`` names, or -1.

    Resolved by a Polars join on the ids' 64-bit hashes, not a dict of every
    id (no Python string per session) nor a join on the strings (a hash table
    of every id); each link found is then checked against the id itself, and
    a hash shared by two ids (never seen) falls back to the join on the ids.
    """
    rows = pl.int_range(pl.len(), dtype=pl.Int64).alias("_row")
    ids = data.select(pl.col("session_id").hash().alias("_key"), rows).filter(data["session_id"].is_not_null())
    first = ids.group_by("_key").agg(pl.col("_row").min())
    keys = data.select(pl.col("parent_session").hash().alias("_key")).with_columns(
        pl.when(data["parent_session"].is_not_null()).then(pl.col("_key"))
    )
    found = keys.join(first, on="_key", how="left", maintain_order="left")["_row"]
    named = data["session_id"].gather(found)
    if not ((named == data["parent_session"]) | found.is_null()).all():
        first = (
            data.select("session_id", rows)
            .filter(pl.col("session_id").is_not_null())
            .group_by("session_id")
            .agg(pl.col("_row").min())
            .rename({"session_id": "parent_session"})
        )
        parents = data.select("parent_session")
        found = parents.join(first, on="parent_session", how="left", maintain_order="left")["_row"]
    return _ints(found.fill_null(-1))


@dataclass
class _Tree:
    """The resolved forest: parent links (-1: none), which nodes count, children before their parents."""

    parent: array[int]
    counted: bytearray
    order: array[int]
    done: dict[str, pl.Series] = field(default_factory=dict)
    """Rolled-up columns by name."""
    _pending: dict[str, pl.Series] = field(default_factory=dict)
    _exprs: list[pl.Expr] = field(default_factory=list)

    def _add(self, name: str, parts: tuple[array[Any], bytearray, array[Any], bytearray], result: pl.Expr) -> None:
        """Queue a column's parts and its expression; run the queue once it holds about 32 MB.

        A small corpus makes every column in one query (a query costs more than its rows there);
        a large one a few columns at a time (their parts are not all held at once).
        """
        kind = pl.Float64 if parts[0].typecode == "d" else pl.Int64  # typed: an empty array has no type to infer
        for tag, part, dtype in zip("vpbs", parts, (kind, pl.UInt8, kind, pl.UInt8), strict=True):
            self._pending[f"{name}:{tag}"] = pl.Series(part, dtype=dtype)
        self._exprs.append(result.alias(name))
        if sum(series.estimated_size() for series in self._pending.values()) > 32 << 20:
            self.flush()

    def flush(self) -> dict[str, pl.Series]:
        """Make every queued column (``done``)."""
        if self._exprs:
            made = pl.DataFrame(self._pending).select(self._exprs)
            self.done.update({series.name: series for series in made.get_columns()})
        self._pending, self._exprs = {}, []
        return self.done

    def sums(self, name: str, values: array[Any], present: bytearray | None = None) -> None:
        """Each node's value plus its counted descendants' (null when neither it nor one of them has a value).

        Integer values (never negative) whose total passes 64 bits are checked: a node whose sum does not
        fit is null, never wrapped, and which nodes that is comes out as the column ``overflow:<name>``
        (``run_trees`` folds them into ``subtree_tokens_overflow``).
        """
        present = present if present is not None else bytearray(b"\x01") * len(values)
        parent, counted = self.parent, self.counted
        below = array(values.typecode, bytes(values.itemsize * len(values)))
        seen, over = bytearray(len(values)), bytearray(len(values))
        for node in self.order:
            up = parent[node]
            if up == -1:
                continue
            if over[node]:
                over[up] = seen[up] = 1
                continue
            if counted[node] and present[node]:
                mine = values[node] + below[node]
            elif seen[node]:
                mine = below[node]
            else:
                continue
            try:
                below[up] += mine
            except OverflowError:  # the sum does not fit 64 bits: this node and every one above it
                over[up] = 1
            seen[up] = 1
        own, under = _present(name, "v", "p"), _present(name, "b", "s")
        either = (pl.col(f"{name}:p") == 1) | (pl.col(f"{name}:s") == 1)
        if not (values.typecode == "q" and sum(values) > INT64_MAX):
            self._add(name, (values, present, below, seen), pl.when(either).then(own.fill_null(0) + under.fill_null(0)))
            return
        wide = own.fill_null(0).cast(pl.Int128) + under.fill_null(0).cast(pl.Int128)
        made = pl.when(either & (pl.col(f"{name}:o") == 0)).then(wide.cast(pl.Int64, strict=False))
        self._pending[f"{name}:o"] = pl.Series(over, dtype=pl.UInt8)
        self._exprs.append((either & made.is_null()).alias(f"overflow:{name}"))  # before ``_add`` may run the queue
        self._add(name, (values, present, below, seen), made)

    def extremes(self, name: str, values: array[int], present: bytearray, *, largest: bool) -> None:
        """Each node's value and its counted descendants', the largest or the smallest (null: none has one)."""
        parent, counted, pick = self.parent, self.counted, max if largest else min
        below = array("q", bytes(8 * len(values)))
        seen = bytearray(len(values))
        for node in self.order:
            up = parent[node]
            if up == -1:
                continue
            if counted[node] and present[node]:
                mine = pick(values[node], below[node]) if seen[node] else values[node]
            elif seen[node]:
                mine = below[node]
            else:
                continue
            below[up] = pick(below[up], mine) if seen[up] else mine
            seen[up] = 1
        both = (_present(name, "v", "p"), _present(name, "b", "s"))
        self._add(
            name, (values, present, below, seen), pl.max_horizontal(*both) if largest else pl.min_horizontal(*both)
        )

    def heights(self) -> pl.Series:
        """Per node: the most edges down to a counted session below it (0 when none)."""
        parent, counted = self.parent, self.counted
        height = array("q", [-1]) * len(parent)  # -1: no counted session below
        for node in self.order:
            up = parent[node]
            if up != -1:
                reach = max(0 if counted[node] else -1, height[node])
                if reach != -1 and reach + 1 > height[up]:
                    height[up] = reach + 1
        return pl.Series(height, dtype=pl.Int64).clip(lower_bound=0)


@source_reads
def run_trees(source: Source, *, scope: Scope = "lineage", prices: Prices | PriceTable | None = None) -> pl.DataFrame:
    """One row per session with its tree position and its subtree's totals (``subtree_`` columns).

    Columns: ``list_order``, ``session_id``, ``parent_list_order`` (the resolved parent log),
    ``root_list_order``, ``root_session_id``, ``depth``, ``in_cycle``, ``children`` (counted direct
    children), ``peak_children_running`` (the most counted direct children whose own events' spans
    overlap), then over the session and the counted sessions below it: ``subtree_sessions``,
    ``subtree_subagents``, ``subtree_forks`` (ordinary sessions below), ``subtree_max_depth``,
    ``subtree_first_ms``, ``subtree_last_ms``, ``subtree_wall_ms``, ``subtree_active_ms`` (the sessions'
    ``active_ms`` summed: sessions that ran at once add up, so it can pass the wall time), the token sums,
    ``subtree_tokens_overflow`` (a token sum passed 2^63 - 1 and is ``null``, never wrapped),
    ``subtree_usage_unknown`` (sessions whose usage could not be read: their tokens are unknown),
    ``subtree_cost_usd`` (``null`` when any counted session has no cost: an unpriced model, an
    unreadable log), its known part ``subtree_cost_usd_known`` (what the priced samples cost: equal
    when nothing is unknown, a lower bound otherwise), ``subtree_cost_unknown`` (sessions whose cost
    is unknown), ``subtree_tool_calls``, ``subtree_tool_results_failed`` and one ``subtree_<outcome>``
    count per outcome. A token sum is ``null`` when no counted session reported that count.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> trees = run_trees(read_corpus("tests/data/run-facts"))
        >>> trees.select("session_id", "depth", "subtree_sessions", "subtree_input_tokens", "subtree_open").rows()
        [('child-1', 1, 1, 1310, 1), ('parent-1', 0, 2, 1310, 1)]
    """
    table = price_table(prices)
    data, costs = _tree_data(source, table)
    size = data.height
    parent = _parent_links(data)
    # Cut the links that close a cycle (``in_cycle``: the nodes on one).
    state, in_cycle = bytearray(size), bytearray(size)  # state: 0 unseen, 1 on the current walk, 2 done
    for start in range(size):
        path = []
        node = start
        while node != -1 and state[node] == 0:
            state[node] = 1
            path.append(node)
            node = parent[node]
        if node != -1 and state[node] == 1:  # the walk came back to itself: a cycle from ``node`` on
            for member in path[path.index(node) :]:
                in_cycle[member] = 1
                parent[member] = -1
        for member in path:
            state[member] = 2
    # Each node's depth (edges from its root) and root index, in the forest left.
    depth, root = array("q", [-1]) * size, array("q", range(size))
    for start in range(size):
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
    # Every input column the roll-up reads, made in one query (a small corpus pays per query, not per row).
    filled = ("run_first_ms", "run_last_ms", "active_ms", *_SUMS)
    subagent = (pl.col("origin") == "subagent").fill_null(False)
    prepared = data.select(
        *(pl.col(name).fill_null(0).alias(f"{name}:v") for name in filled),
        *(pl.col(name).is_not_null().cast(pl.UInt8).alias(f"{name}:p") for name in filled),
        *((pl.col("outcome") == kind).fill_null(False).cast(pl.Int64).alias(f"outcome:{kind}") for kind in OUTCOMES),
        subagent.cast(pl.Int64).alias("subagent"),
        (1 - subagent.cast(pl.Int64)).alias("fork"),
        (subagent & pl.col("listed").fill_null(False)).cast(pl.UInt8).alias("shown"),
    )
    counted = _ints_bytes(prepared["shown"]) if scope == "subagents" else bytearray(b"\x01") * size
    # Children before their parents (deepest first, list order among equals), as the sums were always made.
    ranked = pl.DataFrame(
        {"depth": pl.Series(depth, dtype=pl.Int64), "node": pl.int_range(size, dtype=pl.Int64, eager=True)}
    )
    order = _ints(ranked.sort(["depth", "node"], descending=[True, False])["node"])
    del ranked
    tree = _Tree(parent, counted, order)

    def own(name: str) -> tuple[array[int], bytearray]:
        return _ints(prepared[f"{name}:v"]), _ints_bytes(prepared[f"{name}:p"])

    # Every value 8 bytes in an array, never a Python object per session; the columns made in few queries.
    tree.sums("subtree_sessions", array("q", [1]) * size)
    tree.sums("subtree_subagents", _ints(prepared["subagent"]))
    tree.sums("subtree_forks", _ints(prepared["fork"]))
    tree.extremes("subtree_first_ms", *own("run_first_ms"), largest=False)
    tree.extremes("subtree_last_ms", *own("run_last_ms"), largest=True)
    tree.sums("subtree_active_ms", *own("active_ms"))
    for name in _SUMS:
        tree.sums(f"subtree_{name}", *own(name))  # a token sum past 64 bits is null (``sums``)
    tree.sums("subtree_usage_unknown", _ints(data["usage_steps"].is_null().cast(pl.Int64)))
    tree.sums("subtree_cost_unknown", _ints(costs["cost_usd"].is_null().cast(pl.Int64)))
    tree.sums("subtree_cost_usd_known", _filled(costs["cost_usd_known"].fill_null(0.0), array("d")))
    for kind in OUTCOMES:
        tree.sums(f"subtree_{kind.replace('-', '_')}", _ints(prepared[f"outcome:{kind}"]))
    columns = dict(tree.flush())
    columns["subtree_subagents"] = columns["subtree_subagents"] - prepared["subagent"]
    columns["subtree_forks"] = (
        pl.zeros(size, pl.Int64, eager=True) if scope == "subagents" else columns["subtree_forks"] - prepared["fork"]
    )
    columns["subtree_max_depth"] = tree.heights()
    unknown, known = columns["subtree_cost_unknown"], columns["subtree_cost_usd_known"]
    columns["subtree_cost_usd"] = pl.select(pl.when(unknown == 0).then(known)).to_series()
    flags = [columns.pop(name) for name in [name for name in columns if name.startswith("overflow:")]]
    columns["subtree_tokens_overflow"] = (
        pl.select(pl.any_horizontal(flags)).to_series() if flags else pl.repeat(False, size, eager=True)
    )
    del unknown, known
    links = pl.DataFrame({"up": pl.Series(parent, dtype=pl.Int64), "counted": _bools(counted)})
    ups = pl.select(pl.when(links["up"] != -1).then(links["up"])).to_series()
    roots = pl.Series(root, dtype=pl.Int64)
    out = pl.DataFrame(
        {
            "list_order": data["list_order"],
            "session_id": data["session_id"],
            "parent_list_order": data["list_order"].gather(ups),
            "root_list_order": data["list_order"].gather(roots),
            "root_session_id": data["session_id"].gather(roots),
            "depth": pl.Series(depth, dtype=pl.Int64),
            "in_cycle": _bools(in_cycle),
            "children": _per_node(size, links.filter(pl.col("counted") & (pl.col("up") != -1)).group_by("up").len()),
            "peak_children_running": _peaks(links, data["run_first_ms"], data["run_last_ms"]),
            **columns,
        },
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
        "subtree_active_ms",
        *(f"subtree_{name}" for name in _TOKENS),
        "subtree_tokens_overflow",
        "subtree_usage_unknown",
        "subtree_cost_usd",
        "subtree_cost_usd_known",
        "subtree_cost_unknown",
        *(f"subtree_{name}" for name in _SUMS[5:]),
        *(f"subtree_{kind.replace('-', '_')}" for kind in OUTCOMES),
    )


def subtree_tokens() -> pl.Expr:
    """A ``run_trees`` row's billed tokens (``tokens``): its subtree's input, cache read, cache write and output.

    Added as ``checked_total`` adds (exact; null past 2^63 - 1, never wrapped), and null when one of the
    sums already passed it (``subtree_tokens_overflow``): the one figure the run tables and ``compare`` show.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> trees = run_trees(read_corpus("tests/data/run-facts"))
        >>> trees.select("session_id", subtree_tokens()).rows()
        [('child-1', 1419), ('parent-1', 1419)]
    """
    names = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    total = checked_total(*(f"subtree_{name}" for name in names))
    return pl.when(~pl.col("subtree_tokens_overflow")).then(total).cast(pl.Int64).alias("tokens")


def _per_node(size: int, counts: pl.DataFrame) -> pl.Series:
    """A count per node (0 where ``counts``, of columns node and count, has none)."""
    nodes = pl.DataFrame({"up": pl.int_range(size, dtype=pl.Int64, eager=True)})
    joined = nodes.join(counts.rename({counts.columns[1]: "n"}), on="up", how="left", maintain_order="left")
    return joined["n"].fill_null(0).cast(pl.Int64)


def _peaks(links: pl.DataFrame, first: pl.Series, last: pl.Series) -> pl.Series:
    """Per node: the most of its counted direct children running at once (their own events' time spans).

    At equal times a start comes before an end: touching spans overlap.
    """
    spans = links.with_columns(first=first, last=last).filter(
        pl.col("counted") & (pl.col("up") != -1) & pl.col("first").is_not_null() & pl.col("last").is_not_null()
    )
    edges = pl.concat(
        [
            spans.select("up", pl.col("first").alias("time"), pl.lit(0, pl.Int8).alias("kind")),
            spans.select("up", pl.col("last").alias("time"), pl.lit(1, pl.Int8).alias("kind")),
        ]
    ).sort("up", "time", "kind")
    step = pl.when(pl.col("kind") == 0).then(1).otherwise(-1).cast(pl.Int64)
    peaks = edges.select("up", step.cum_sum().over("up").alias("running")).group_by("up").agg(pl.col("running").max())
    return _per_node(links.height, peaks)
