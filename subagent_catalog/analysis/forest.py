"""Session trees of a corpus, with subtree totals.

``build_forest`` groups the catalog rows into roots and children with
totals per subtree; ``default_parents`` picks the parents a report shows.
"""

from __future__ import annotations

import heapq
import json
import math
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from subagent_catalog.analysis.text import LABEL_BOUND, clip
from subagent_catalog.catalog.collation import sort_siblings
from subagent_catalog.catalog.model import Semantics
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.units import clock
from subagent_catalog.read.jsvalue import is_number, js_number, parse_json

_NO_PARENT = object()
"""A header without a ``parentSession`` key (a root), told from one whose value is ``null``."""

_BATCH = 1 << 16
"""Listed sessions read and joined to their listing rows at a time."""

DEFAULT_PARENT_CAP = 20
"""How many parents' ``list_agents`` text the report shows by default."""


@dataclass
class Forest:
    """The listed sessions as a forest (every session, ordinary forks included).

    Attributes:
        nodes: one dict per node (short keys, see the template's script):
            ``i`` id, ``k`` kind (``s`` ordinary session, ``c`` subagent
            child, ``d`` diagnostic, ``o`` subagent the listing omits, ``g``
            group), ``m`` mode, ``l`` label, ``r`` reason, ``u`` cause,
            ``x`` cause detail, ``v`` read verdict when not ``ok``, ``t``
            created time, ``w`` cwd (root sessions), ``p`` parent node, ``n`` child nodes, ``z``
            sessions below, ``a`` subagent rows below, ``e`` diagnostics below.
        roots: the top-level nodes (root sessions, then groups).
        index: node index by session id.
    """

    nodes: list[dict[str, Any]] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    @property
    def root_sessions(self) -> int:
        """The top-level nodes that are sessions (groups aside)."""
        return sum(1 for i in self.roots if self.nodes[i]["k"] != "g")

    def top_trees(self, limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The ``limit`` largest trees and the ``limit`` most damaged, made without a dict per root.

        Largest by sessions, then subagent rows below; most damaged by diagnostics below, then
        subagent rows; ties keep the roots' order. Each entry: ``node``, ``id``, ``group``,
        ``sessions``, ``agents``, ``damaged``, ``label``.

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> largest, damaged = build_forest(read_corpus("data/sample")).top_trees(1)
            >>> largest[0]["id"], largest[0]["sessions"]
            ('run-webapp-1', 16)
        """
        nodes = self.nodes

        def size(index: int) -> int:
            return int(nodes[index].get("z", 0)) + int(nodes[index]["k"] != "g")

        def entry(index: int) -> dict[str, Any]:
            node = nodes[index]
            kind = {"sessions": size(index), "agents": node.get("a", 0), "damaged": node.get("e", 0)}
            return {"node": index, "id": node["i"], "group": node["k"] == "g", **kind, "label": node.get("l")}

        # ``nsmallest`` is ``sorted(...)[:n]``: ties keep the roots' order.
        largest = heapq.nsmallest(limit, self.roots, key=lambda i: (-size(i), -nodes[i].get("a", 0)))
        hurt = (i for i in self.roots if nodes[i].get("e", 0))
        damaged = heapq.nsmallest(limit, hurt, key=lambda i: (-nodes[i]["e"], -nodes[i].get("a", 0)))
        return [entry(i) for i in largest], [entry(i) for i in damaged]


def build_forest(corpus: Corpus, *, semantics: Semantics = "projection") -> Forest:
    """Arrange the listed sessions into trees by ``parentSession``.

    Siblings are ordered as upstream orders them (``createdAt``, then
    ``localeCompare`` of the id). Sessions whose parent is not listed are
    grouped under a ``parent not listed`` node; sessions on a lineage cycle
    (reachable from no root) under a ``lineage cycle`` node. Subagents carry
    their listing row (child or diagnostic) for ``semantics``.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> build_forest(read_corpus(tempfile.mkdtemp())).nodes
        []
    """
    return forest_of_rows(corpus, catalog(corpus, semantics=semantics))


def forest_of_rows(corpus: Corpus, frame: pl.DataFrame) -> Forest:
    """The forest of a corpus from catalog rows already computed (``catalog(corpus)``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog import catalog, read_corpus
        >>> corpus = read_corpus(tempfile.mkdtemp(), cache=False)
        >>> forest_of_rows(corpus, catalog(corpus)).roots
        []
    """
    # Per listed session, the few fields of its listing row the node shows (the last row of an id wins),
    # joined in Polars rather than held as a dict of tuples by id.
    fields = ("kind", "mode", "label", "reason", "cause", "cause_detail")
    rows = (
        frame.filter(pl.col("kind") != "error")
        .select(pl.col("id").alias("session_id"), *(pl.col(name).alias(f"row_{name}") for name in fields))
        .unique("session_id", keep="last", maintain_order=True)
    )
    sessions = corpus.sessions.select("session_id", "header_json", "verdict", "list_order", "listed")
    if not sessions["list_order"].is_sorted():
        sessions = sessions.sort("list_order")
    sessions = sessions.drop("list_order")
    forest = Forest()
    # Every node's id first: one string per listed session, the node's id and the index's key at once, so a
    # parent is resolved to its node as its child is read (the last log of an id is its node).
    ids: list[str] = []
    for start in range(0, sessions.height, _BATCH):
        ids.extend(sessions.slice(start, _BATCH).filter(pl.col("listed"))["session_id"].to_list())
    forest.index = {sid: node for node, sid in enumerate(ids)}
    # Per node only what ordering and nesting read of its header: createdAt's sort key, the id, the parent node.
    created_keys = array("d")
    header_ids: list[str] = []
    parent_at = array("q")  # the parent's node; -1: no parent node (see ``unresolved``); -2: no parentSession key
    unresolved: dict[int, Any] = {}  # a parentSession naming no listed session (or not a string)
    shared: dict[Any, Any] = {}  # one str object per distinct value (modes, reasons, minutes, labels...)

    def one(value: Any) -> Any:
        return shared.setdefault(value, value)

    for start in range(0, sessions.height, _BATCH):  # the listing fields joined a batch at a time: no copy of all
        batch = sessions.slice(start, _BATCH).filter(pl.col("listed")).drop("session_id", "listed")
        joined = batch.with_columns(
            pl.Series("session_id", ids[len(forest.nodes) : len(forest.nodes) + batch.height], dtype=pl.String)
        )
        joined = joined.join(rows, on="session_id", how="left", nulls_equal=True, maintain_order="left")
        columns = ("header_json", "verdict", *(f"row_{name}" for name in fields))
        for header_json, verdict, kind, mode, label, reason, cause, detail in joined.select(columns).iter_rows():
            sid = ids[len(forest.nodes)]
            header = parse_json(header_json)
            created = js_number(header["createdAt"]) if is_number(header.get("createdAt")) else float("inf")
            created_keys.append(created)
            header_id = str(header.get("id", ""))
            header_ids.append(sid if header_id == sid else header_id)
            parent = header.get("parentSession", _NO_PARENT)
            at = forest.index.get(parent, -1) if isinstance(parent, str) else -1
            parent_at.append(-2 if parent is _NO_PARENT else at)
            if at == -1 and parent is not _NO_PARENT:
                unresolved[len(forest.nodes)] = parent
            node: dict[str, Any] = {"i": clip(sid, LABEL_BOUND), "k": "s", "n": []}
            if verdict != "ok":
                node["v"] = one(verdict)
            if math.isfinite(created):
                node["t"] = one(clock(math.floor(created), seconds=False).removesuffix(" UTC"))
            if "parentSession" not in header and isinstance(header.get("cwd"), str):
                node["w"] = one(clip(header["cwd"], 160))
            if header.get("origin") == "subagent":
                if kind is None:  # no listing row (a row's kind is never null)
                    node["k"] = "o"
                elif kind == "child":
                    node.update(k="c", m=one(mode))
                    if label is not None:
                        node["l"] = one(clip(label, LABEL_BOUND))
                else:
                    node.update(k="d", r=one(reason), u=one(cause))
                    if detail:
                        node["x"] = one(clip(detail, 300))
            forest.nodes.append(node)
        del batch, joined
    del sessions, rows, ids
    shared.clear()

    def order(members: list[int]) -> None:
        sibling_order(members, created_keys, header_ids)

    groups: dict[str, list[int]] = {}
    for i, at in enumerate(parent_at):
        if at == -2:
            forest.roots.append(i)
        elif at == i:
            continue  # its own parent: reachable from no root, shown under the lineage-cycle group
        elif at != -1:
            forest.nodes[at]["n"].append(i)
        else:
            parent = unresolved[i]
            key = parent if isinstance(parent, str) else json.dumps(parent)
            groups.setdefault(key, []).append(i)
    for node in forest.nodes:
        order(node["n"])
    order(forest.roots)
    for key, members in groups.items():
        order(members)
        forest.roots.append(_group(forest, f"parent not listed: {clip(key, 200)}", members))
    seen = _mark(forest, forest.roots)
    stray = [i for i in range(len(parent_at)) if i not in seen]
    if stray:
        cycle: list[int] = []
        for i in stray:
            if i in seen:
                continue
            cycle.append(i)
            seen |= _mark(forest, [i])
        for i in cycle:
            parent_of = forest.nodes[i].get("p")
            if parent_of is not None:
                forest.nodes[parent_of]["n"].remove(i)
        forest.roots.append(_group(forest, "lineage cycle (reachable from no root)", cycle))
    _totals(forest)
    return forest


def sibling_order(members: list[int], created_keys: Sequence[float], ids: Sequence[str]) -> None:
    """Sort node indices in place in upstream's sibling order: ``createdAt``, then ``localeCompare`` of the id.

    The order of the key ``(created_keys[i], collation_key(ids[i]), i)``, made
    without a key per node: the ids' collation keys (a tuple of weights per
    character) are made only for siblings created at the same instant.

    Examples:
        >>> members = [0, 1, 2, 3]
        >>> sibling_order(members, [2.0, 1.0, 1.0, 1.0], ["a", "b", "a", "B"])
        >>> members
        [2, 1, 3, 0]
    """
    members.sort()  # in index order first: the stable sorts then break every remaining tie by index
    sort_siblings(members, created_keys.__getitem__, ids.__getitem__)


def _group(forest: Forest, title: str, members: list[int]) -> int:
    forest.nodes.append({"i": title, "k": "g", "n": list(members)})
    return len(forest.nodes) - 1


def _mark(forest: Forest, starts: Iterable[int]) -> set[int]:
    """Set parent links from ``starts`` downwards (each node once; breaks cycles)."""
    seen: set[int] = set()
    stack: list[tuple[int, int | None]] = [(start, None) for start in starts]
    while stack:
        index, parent = stack.pop()
        if index in seen:
            continue
        seen.add(index)
        node = forest.nodes[index]
        if parent is not None:
            node["p"] = parent
        kids = [kid for kid in node["n"] if kid not in seen]
        node["n"] = kids
        stack.extend((kid, index) for kid in kids)
    return seen


def _totals(forest: Forest) -> None:
    """Fill ``z`` (sessions below), ``a`` (subagent rows below) and ``e`` (diagnostics below)."""
    order: list[int] = []
    stack = list(forest.roots)
    while stack:
        index = stack.pop()
        order.append(index)
        stack.extend(forest.nodes[index]["n"])
    for index in reversed(order):
        node = forest.nodes[index]
        size = agents = damaged = 0
        for kid in node["n"]:
            child = forest.nodes[kid]
            size += child.get("z", 0) + (child["k"] != "g")
            agents += child.get("a", 0) + (child["k"] in ("c", "d"))
            damaged += child.get("e", 0) + (child["k"] == "d")
        if size:
            node["z"] = size
        if agents:
            node["a"] = agents
        if damaged:
            node["e"] = damaged


def default_parents(
    corpus: Corpus, *, limit: int = DEFAULT_PARENT_CAP, semantics: Semantics = "projection"
) -> list[str]:
    """The parents the report lists by default: root sessions, those with subagents below first.

    Roots are listed sessions whose header names no parent. At most
    ``limit`` are returned; an empty list when the listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> default_parents(read_corpus(tempfile.mkdtemp()))
        []
    """
    if corpus.listing_error is not None:
        return []
    forest = build_forest(corpus, semantics=semantics)
    return parents_of_forest(forest, limit)


def parents_of_forest(forest: Forest, limit: int) -> list[str]:
    """The parents a report lists by default: roots with subagents first, at most ``limit``.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog import read_corpus
        >>> parents_of_forest(build_forest(read_corpus(tempfile.mkdtemp(), cache=False)), 5)
        []
    """
    roots = [i for i in forest.roots if forest.nodes[i]["k"] != "g"]
    with_agents = [i for i in roots if forest.nodes[i].get("a")]
    chosen = with_agents[:limit]
    chosen += [i for i in roots if not forest.nodes[i].get("a")][: limit - len(chosen)]
    wanted = set(chosen)
    ids = {index: sid for sid, index in forest.index.items() if index in wanted}  # not every node's id
    return [ids[i] for i in chosen]
