"""One parent's part of the catalog, loaded out of core from a ``TableSource``.

``children_model``, ``descendants_model`` and ``parent_model`` load only the
sessions a one-parent call needs (that parent's children, the subtree level
by level, the ancestor chain the trace semantics checks) into a ``Model``
indexed exactly as ``build_model`` indexes a whole corpus, so the listing
code that follows is the same code. Rows are found with column predicates
(``parent_session``, ``session_id``), a superset whenever a column's text is
not exact; every loaded node is then matched on its parsed header.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Iterator
from typing import Any

import polars as pl

from subagent_catalog.catalog.archive_keys import ListingKeys, listing_keys
from subagent_catalog.catalog.model import Model, Node, map_key, model_of, node_from_row
from subagent_catalog.catalog.schemas import SESSION_EXTRA
from subagent_catalog.catalog.source import (
    KEY_ESCAPED,
    KEY_TEXT,
    TableSource,
    exact_text,
    key_value,
    require_listing,
    value_key,
)
from subagent_catalog.read.jsvalue import frame_text, parse_json
from subagent_catalog.read.paths import MISSING

RESOLVE_COLUMNS = [
    "list_order",
    "header_json",
    "verdict",
    "path",
    "read_header_json",
    "lookup_error",
    "read_cause",
    "read_message",
    "unit_failure",
    "unit_failure_live",
    "identity_mode",
    "identity_label",
    "identity_seq",
    "identity_cause",
    "identity_detail",
]
"""The ``sessions`` columns a node needs to resolve (``resolve.resolve_projection`` / ``resolve_trace``)."""

QUERIED_LEVELS = 8
"""Subtree levels (and ancestors) found with one query each; deeper ones come from ``listing_keys`` at once."""

NAMES_PARENT = pl.col("header_json").str.contains('"parentSession"', literal=True)
"""A superset of the rows whose header has a ``parentSession`` key (a string value's quotes are escaped)."""


def descriptor_lists(source: TableSource, paths: list[str] | None = None, *, last_only: bool = False) -> pl.LazyFrame:
    """Per log path: the last descriptor's ``provider`` and every ``(seq, status, reason)`` in frame order.

    Grouped by ``path`` exactly as ``build_model`` groups the descriptors frame.
    ``last_only``: only ``provider`` (all the projection semantics reads), from the ``is_last`` rows.

    Examples:
        >>> descriptor_lists.__name__
        'descriptor_lists'
    """
    order = source.order_by("descriptors")
    frame = source.scan("descriptors")
    if paths is not None:
        frame = frame.filter(pl.col("path").is_in(paths))
    if last_only:
        last = frame.filter(pl.col("is_last")).select("path", "provider", *order)
        return last.group_by("path").agg(pl.col("provider").sort_by(order).last())
    frame = frame.select("path", "seq", "status", "reason", "provider", "is_last", *order)
    return frame.group_by("path").agg(
        pl.col("provider").sort_by(order).filter(pl.col("is_last").sort_by(order)).last().alias("provider"),
        pl.struct("seq", "status", "reason").sort_by(order).alias("descriptors"),
    )


def nodes_of_frame(frame: pl.DataFrame) -> Iterator[Node]:
    """The nodes of ``RESOLVE_COLUMNS`` rows joined with ``descriptor_lists`` (columns ``provider``, ``descriptors``).

    Examples:
        >>> list(nodes_of_frame(pl.DataFrame()))
        []
    """
    for row in frame.iter_rows(named=True):
        listed = row.pop("descriptors", None) or []
        descriptors = [(d["seq"], d["status"], d["reason"]) for d in listed]
        yield node_from_row(row, row.pop("provider", None), descriptors)


def load_nodes(source: TableSource, where: pl.Expr) -> list[Node]:
    """The listed sessions matching ``where``, as nodes in list order (with their ``SESSION_EXTRA`` columns).

    Examples:
        >>> load_nodes.__name__
        'load_nodes'
    """
    sessions = (
        source.scan("sessions")
        .filter(pl.col("listed") & where)
        .select(*RESOLVE_COLUMNS, *(pl.col(name).cast(dtype) for name, dtype in SESSION_EXTRA.items()))
        .collect()
        .sort("list_order")
    )
    if sessions.height == 0:
        return []
    descriptors = descriptor_lists(source, sessions["path"].unique().to_list()).collect()
    joined = sessions.join(descriptors, on="path", how="left", maintain_order="left")
    return list(nodes_of_frame(joined))


def children_of(source: TableSource, parents: Iterable[Any]) -> list[Node]:
    """Every listed session whose ``parentSession`` equals one of ``parents`` (``map_key`` equality), in list order.

    Examples:
        >>> children_of.__name__
        'children_of'
    """
    values = list(parents)
    wanted = {key for key in map(value_key, values) if key is not None}
    texts = sorted({text for text in (frame_text(v) for v in values if isinstance(v, str)) if text is not None})
    clauses = []
    if texts:
        clauses.append(pl.col("parent_session").is_in(texts))
    if any(kind > KEY_ESCAPED for kind, _ in wanted):  # numbers, booleans, null: only the header holds them
        clauses.append(pl.col("parent_session").is_null() & NAMES_PARENT)
    if not clauses:
        return []
    found = load_nodes(source, functools.reduce(operator.or_, clauses))
    return [node for node in found if value_key(node.header.get("parentSession", MISSING)) in wanted]  # MISSING: None


def subagent_parents_among(source: TableSource, ids: Iterable[str]) -> set[str]:
    """The ``ids`` that some listed ``origin: "subagent"`` session names as its (string) ``parentSession``.

    Examples:
        >>> subagent_parents_among.__name__
        'subagent_parents_among'
    """
    wanted = set(ids)
    texts = sorted({text for text in (frame_text(i) for i in wanted) if text is not None})
    if not texts:
        return set()
    rows = (
        source.scan("sessions")
        .filter(pl.col("listed") & (pl.col("origin") == "subagent") & pl.col("parent_session").is_in(texts))
        .select("parent_session", "header_json")
        .collect()
    )
    found: set[str] = set()
    for text, header_json in rows.iter_rows():
        value = text if exact_text(text) else parse_json(header_json).get("parentSession")
        if isinstance(value, str) and value in wanted:
            found.add(value)
    return found


def node_by_id(source: TableSource, session_id: str) -> Node | None:
    """The listed session whose header id is exactly ``session_id``, if any.

    Examples:
        >>> node_by_id.__name__
        'node_by_id'
    """
    text = frame_text(session_id)
    found = load_nodes(source, pl.col("session_id") == text) if text is not None else []
    return next((node for node in found if node.id == session_id), None)


def chain(source: TableSource, parent: Any) -> list[Node]:
    """``parent``'s node and its listed ancestors, up to a non-string or unlisted ``parentSession`` or a repeat.

    All that ``trace_parent_check`` reads (``by_id`` for these ids).

    Examples:
        >>> chain.__name__
        'chain'
    """
    nodes: list[Node] = []
    seen: set[str] = set()
    current = parent
    while isinstance(current, str) and current not in seen:
        if len(nodes) == QUERIED_LEVELS:  # a long chain: walk the rest over the keys, then load it at once
            keys = listing_keys(source)
            orders = chain_orders(keys, key_lookup(keys.frame), current, seen)
            by_order = {node.order: node for node in load_nodes(source, pl.col("list_order").is_in(orders))}
            return nodes + [by_order[order] for order in orders]
        seen.add(current)
        node = node_by_id(source, current)
        if node is None:
            break
        nodes.append(node)
        current = node.header.get("parentSession", MISSING)
    return nodes


KeyLookup = dict[tuple[int, str], tuple[int, int | None, str | None]]
"""An id's exact key -> (list order, the parent key's kind and text) of the first listed session with it."""


def key_lookup(frame: pl.DataFrame) -> KeyLookup:
    """The first row of each id key among ``frame``'s rows (``ListingKeys.frame`` columns), in frame order.

    Examples:
        >>> rows = pl.DataFrame({"order": [0, 1], "n_kind": [0, 0], "n_text": ["a", "a"],
        ...                      "p_kind": [None, 0], "p_text": [None, "b"]})
        >>> key_lookup(rows)
        {(0, 'a'): (0, None, None)}
    """
    lookup: KeyLookup = {}
    columns = frame.select("order", "n_kind", "n_text", "p_kind", "p_text")
    for order, n_kind, n_text, p_kind, p_text in columns.iter_rows():
        lookup.setdefault((n_kind, n_text), (order, p_kind, p_text))
    return lookup


def chain_orders(keys: ListingKeys, lookup: KeyLookup, current: Any, seen: set[str]) -> list[int]:
    """The list orders of ``current``'s chain (itself, then its ``parentSession`` values), as ``chain`` walks it.

    It stops at a value that is not a string, an id no listed session has,
    a parent that is not a string, or an id already in ``seen`` (which it fills).

    Examples:
        >>> chain_orders.__name__
        'chain_orders'
    """
    orders: list[int] = []
    while isinstance(current, str) and current not in seen:
        seen.add(current)
        key = value_key(current)
        found = lookup.get(key) if key else None
        if found is None:
            break
        order, kind, text = found
        orders.append(order)
        if kind is None or kind > KEY_ESCAPED or text is None:
            break
        current = key_value(kind, text) if kind == KEY_TEXT else keys.values[order][1]
    return orders


def _with_chain(model: Model, nodes: list[Node]) -> Model:
    for node in nodes:
        model.by_id.setdefault(node.id, node)
    return model


def children_model(source: TableSource, parent: Any, *, trace: bool) -> Model:
    """The part of the catalog ``children_rows(parent)`` reads: the children, their ``hasChildren``, the chain.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> children_model.__name__
        'children_model'
    """
    require_listing(source)
    kids = children_of(source, [parent])
    subagents = [node.id for node in kids if node.origin_subagent]
    model = model_of(kids, subagent_parents=subagent_parents_among(source, subagents))
    return _with_chain(model, chain(source, parent)) if trace else model


def subtree_orders(keys: ListingKeys, frontier: list[tuple[int, str] | None], expanded: list[Any]) -> list[int]:
    """List orders of every listed session below the ``frontier`` keys, never below an ``expanded`` one again.

    Examples:
        >>> subtree_orders.__name__
        'subtree_orders'
    """
    frame = keys.frame.select("order", "n_kind", "n_text", "p_kind", "p_text")
    level = pl.DataFrame(
        [key for key in frontier if key is not None], schema={"p_kind": pl.UInt8, "p_text": pl.String}, orient="row"
    )
    done = [key for key in map(value_key, expanded) if key is not None]
    seen = pl.concat(
        [
            level.rename({"p_kind": "n_kind", "p_text": "n_text"}),
            pl.DataFrame(done, schema={"n_kind": pl.UInt8, "n_text": pl.String}, orient="row"),
        ]
    )
    orders: list[int] = []
    while level.height:
        found = frame.join(level, on=["p_kind", "p_text"], how="semi")
        orders += found["order"].to_list()
        fresh = found.select("n_kind", "n_text").unique().join(seen, on=["n_kind", "n_text"], how="anti")
        seen = pl.concat([seen, fresh])
        level = fresh.rename({"n_kind": "p_kind", "n_text": "p_text"})
    return orders


def descendants_model(source: TableSource, root: Any, *, trace: bool) -> Model:
    """The part of the catalog ``descendant_rows(root)`` reads: the subtree, loaded one level per query.

    Every node reached has its children loaded, so ``hasChildren`` of every
    node the walk resolves is exact.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> descendants_model.__name__
        'descendants_model'
    """
    require_listing(source)
    nodes: list[Node] = []
    visited = {map_key(root)}
    frontier = [root]
    for _ in range(QUERIED_LEVELS):
        level = children_of(source, frontier)
        nodes.extend(level)
        frontier = []
        for node in level:
            if map_key(node.id) not in visited:
                visited.add(map_key(node.id))
                frontier.append(node.id)
        if not frontier:
            break
    else:  # a deep tree (a long chain): find the rest of the subtree over the keys, then load it at once
        ahead = [value_key(ident) for ident in frontier]
        orders = subtree_orders(listing_keys(source), ahead, [root, *(node.id for node in nodes)])
        nodes.extend(load_nodes(source, pl.col("list_order").is_in(orders)))
    nodes.sort(key=lambda node: node.order)
    model = model_of(nodes)
    return _with_chain(model, chain(source, root)) if trace else model
