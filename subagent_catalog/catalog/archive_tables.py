"""The catalog over every parent of a ``TableSource``, out of core.

``catalog`` and ``catalog_descendants`` over an archive never build a node
per session. The keys that decide the listing (each listed session's exact
id and ``parentSession``, ``origin``, ``createdAt``) are read as columns;
parents, ``hasChildren`` and sibling order are Polars joins and sorts over
them (``ListingKeys``); only the ``origin: "subagent"`` sessions that give
rows are resolved, in bounded batches streamed from the sessions table
(``resolve_batches``), with the same resolvers as a corpus; the child's
session columns are joined to the rows as columns.

The keys are exact (``archive_keys``), so the rows equal the in-memory
catalog's, collation ties included.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from typing import Any

import polars as pl

from subagent_catalog.catalog.archive_keys import ListingKeys, listing_keys
from subagent_catalog.catalog.archive_nodes import (
    RESOLVE_COLUMNS,
    chain_orders,
    descriptor_lists,
    key_lookup,
    load_nodes,
    nodes_of_frame,
)
from subagent_catalog.catalog.model import Model, Node, Semantics, model_of
from subagent_catalog.catalog.resolve import RESOLVERS, check_live, error_row, trace_parent_check
from subagent_catalog.catalog.schemas import CATALOG_EXTRA, ROW_SCHEMA, SESSION_EXTRA
from subagent_catalog.catalog.source import TableSource
from subagent_catalog.errors import CatalogError, ResultTooLargeError
from subagent_catalog.read.jsvalue import clean_row, frame_text, js_string, json_text

SIBLING_ORDER = ["prank", "created", "tie", "order"]
"""Upstream's order of catalog rows: parent, then ``createdAt``, then ``localeCompare`` among ties, then list order."""

BATCH_ROWS = 1024
"""Sessions resolved per batch (each batch's nodes are dropped before the next is read).

A node holds its row as Python values (about 2 KB): 1,024 bound the batch to a few MB
(with 8,192 the catalog's peak grew by 7 MB more from 5,000 to 20,000 sessions); the catalog of
20,000 in-memory sessions took as long (0.25 s CPU)."""

BODY_SCHEMA: dict[str, Any] = {name: dtype for name, dtype in ROW_SCHEMA.items() if name not in SESSION_EXTRA}
"""The listing columns a resolver gives; ``SESSION_EXTRA`` is joined afterwards."""


def _batches(query: pl.LazyFrame) -> Iterator[pl.DataFrame]:
    """The query's rows in bounded batches (Polars' streaming batches when it has them)."""
    stream = getattr(query, "collect_batches", None)
    if stream is not None:
        yield from stream(chunk_size=BATCH_ROWS, maintain_order=False)
    else:  # older Polars: one frame, sliced
        yield from query.collect().iter_slices(BATCH_ROWS)


def resolve_batches(source: TableSource, wanted: pl.DataFrame, *, trace: bool) -> Iterator[tuple[list[Node], Model]]:
    """The nodes of the sessions in ``wanted`` (columns ``order``, ``has_children``), a batch at a time.

    Each batch comes with the ``Model`` its resolvers read (``subagent_parents``
    of exactly these nodes); nodes carry ``RESOLVE_COLUMNS`` only.

    Examples:
        >>> resolve_batches.__name__
        'resolve_batches'
    """
    descriptors = descriptor_lists(source, last_only=not trace).collect()
    children = wanted.rename({"order": "list_order"})
    query = (
        source.scan("sessions")
        .filter(pl.col("list_order").is_in(children["list_order"].implode()))
        .select(RESOLVE_COLUMNS)
    )
    for frame in _batches(query):
        # Joined per batch: the streamed sessions columns never wait in a join's hash table.
        batch = frame.join(children, on="list_order", how="left").join(descriptors, on="path", how="left")
        nodes = list(nodes_of_frame(batch))
        parents = {node.id for node in nodes if node.row["has_children"]}
        yield nodes, model_of([], subagent_parents=parents)


def _resolved_rows(
    source: TableSource, wanted: pl.DataFrame, semantics: Semantics, live: Mapping[str, str]
) -> pl.DataFrame:
    resolve = RESOLVERS[semantics]
    schema = {**BODY_SCHEMA, "order": pl.Int64}
    frames = [pl.DataFrame(schema=schema)]
    for nodes, model in resolve_batches(source, wanted, trace=semantics == "trace"):
        rows = []
        for node in nodes:
            row = resolve(node, model, live)
            if row is not None:
                rows.append(clean_row({**row.frame_row(), "order": node.order}))
        if rows:
            frames.append(pl.DataFrame(rows, schema=schema))
    return pl.concat(frames)


def _failing_parents(source: TableSource, keys: ListingKeys) -> pl.DataFrame:
    """Under ``trace``: each parent whose call fails (not listed, lineage cycle) and its error row."""
    rows: list[dict[str, Any]] = []
    ranks: list[int] = []
    extra = keys.parents.filter(~pl.col("is_node"))
    for kind, text, first, rank in extra.select("kind", "text", "first", "rank").iter_rows():
        try:
            trace_parent_check(model_of([]), keys.parent_value(kind, text, False, first))
        except CatalogError as error:
            rows.append(error_row(error, "trace"))
            ranks.append(rank)
    cycle = _cycle_orders(keys)
    # Every chain from a session in or into a cycle stays among those sessions: their keys answer
    # the walk (the first listed session of each id, as a lookup by id gives), their nodes load at once.
    members = keys.frame.filter(pl.col("order").is_in(cycle))
    named = keys.frame.join(members.select("n_kind", "n_text").unique(), on=["n_kind", "n_text"], how="semi")
    lookup = key_lookup(named.sort("order"))
    chains: dict[int, list[int]] = {}
    idents: dict[int, Any] = {}
    for order, kind, text in members.select("order", "n_kind", "n_text").iter_rows():
        idents[order] = keys.parent_value(kind, text, True, order)
        chains[order] = chain_orders(keys, lookup, idents[order], set())
    needed = sorted({member for orders in chains.values() for member in orders})
    nodes = {node.order: node for node in load_nodes(source, pl.col("list_order").is_in(needed))} if needed else {}
    for order in cycle:
        ident = idents[order]
        model = model_of([])
        for member in (nodes[o] for o in chains[order]):
            model.by_id.setdefault(member.id, member)
        try:
            trace_parent_check(model, ident)
        except CatalogError as error:
            rows.append(error_row(error, "trace"))
            ranks.append(order)
    frame = pl.DataFrame([clean_row(row) for row in rows], schema=BODY_SCHEMA)
    return frame.with_columns(pl.Series("prank", ranks, dtype=pl.Int64)).select("prank", *BODY_SCHEMA)


def _cycle_orders(keys: ListingKeys) -> list[int]:
    """List orders of the listed sessions whose chain of string ``parentSession`` values runs into a cycle."""
    frame = keys.frame.select("order", "n_kind", "n_id", "p_kind", "p_id").with_row_index("pos")
    target = frame.select(pl.col("n_kind").alias("p_kind"), pl.col("n_id").alias("p_id"), pl.col("pos").alias("next"))
    target = target.unique(["p_kind", "p_id"], keep="first")
    linked = frame.join(target, on=["p_kind", "p_id"], how="left", maintain_order="left")
    after = linked["next"].fill_null(-1).cast(pl.Int64).to_list()
    state = bytearray(len(after))  # 0 unseen, 1 on the current path, 2 settled
    cyclic = bytearray(len(after))
    for start in range(len(after)):
        path: list[int] = []
        at = start
        while at != -1 and state[at] == 0:
            state[at] = 1
            path.append(at)
            at = after[at]
        if at != -1 and (state[at] == 1 or cyclic[at]):  # the path closed a cycle: it and all that leads into it fail
            for member in path:
                cyclic[member] = 1
        for member in path:
            state[member] = 2
    orders = frame["order"].to_list()
    return [orders[pos] for pos in range(len(after)) if cyclic[pos]]


def _parent_texts(keys: ListingKeys, ranks: pl.Series, prefix: str) -> pl.DataFrame:
    """``{prefix}`` (``String(value)``) and ``{prefix}_json`` of the parents of the given ranks."""
    chosen = keys.parents.join(pl.DataFrame({"rank": ranks.unique()}), on="rank", how="semi")
    texts: list[str | None] = []
    jsons: list[str | None] = []
    for kind, text, is_node, first in chosen.select("kind", "text", "is_node", "first").iter_rows():
        value = keys.parent_value(kind, text, is_node, first)
        texts.append(frame_text(js_string(value)))
        jsons.append(frame_text(json_text(value)))
    return pl.DataFrame(
        {"prank": chosen["rank"], prefix: texts, f"{prefix}_json": jsons},
        schema={"prank": pl.Int64, prefix: pl.String, f"{prefix}_json": pl.String},
    )


def session_columns(source: TableSource, orders: pl.Series) -> pl.DataFrame:
    """The ``SESSION_EXTRA`` columns of the sessions with these list orders (column ``order``).

    Examples:
        >>> session_columns.__name__
        'session_columns'
    """
    wanted = pl.DataFrame({"order": orders.drop_nulls().unique()}, schema={"order": pl.Int64})
    return (
        source.scan("sessions")
        .select(pl.col("list_order").alias("order"), *(pl.col(n).cast(t) for n, t in SESSION_EXTRA.items()))
        .filter(pl.col("order").is_in(wanted["order"].implode()))
        .collect(engine="streaming")
    )


def _prepared(
    source: TableSource, live: Mapping[str, str] | None
) -> tuple[ListingKeys, Mapping[str, str], pl.DataFrame]:
    """The keys (the listing error first, as over a corpus), the checked overlay, the subagents that give rows."""
    keys = listing_keys(source)
    live_map = check_live(model_of([]), live)
    return keys, live_map, keys.frame.filter(pl.col("subagent") & pl.col("prank").is_not_null())


def source_catalog(source: TableSource, semantics: Semantics, live: Mapping[str, str] | None) -> pl.DataFrame:
    """``catalog()`` over a table source (see the module docstring).

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> source_catalog.__name__
        'source_catalog'
    """
    keys, live_map, candidates = _prepared(source, live)
    failing = _failing_parents(source, keys) if semantics == "trace" else pl.DataFrame(schema={"prank": pl.Int64})
    candidates = candidates.join(failing.select("prank"), on="prank", how="anti").select(
        "order", "has_children", "prank", "created", "tie"
    )
    parents = _parent_texts(keys, pl.concat([candidates["prank"], failing["prank"]]), "parent")
    del keys  # every listed session's keys: not needed while the rows are resolved
    body = _resolved_rows(source, candidates.select("order", "has_children"), semantics, live_map)
    body = body.join(candidates.drop("has_children"), on="order", how="inner")
    rows = pl.concat([body, failing], how="diagonal_relaxed").sort(SIBLING_ORDER, nulls_last=False)
    del body
    rows = rows.join(parents, on="prank", how="left", maintain_order="left")
    rows = rows.join(session_columns(source, rows["order"]), on="order", how="left", maintain_order="left")
    schema = {**CATALOG_EXTRA, **ROW_SCHEMA}
    return rows.select(list(schema)).cast(pl.Schema(schema))


def _children_index(keys: ListingKeys) -> tuple[array[int], array[int], array[int]]:
    """Per node (by list position): its own parent index; per parent index: its children, in sibling order (CSR)."""
    frame = keys.frame.with_row_index("pos")
    parents = keys.parents.with_row_index("pidx")
    index = parents.select("pidx", "rank")
    named = parents.select(pl.col("kind").alias("n_kind"), pl.col("id").alias("n_id"), "pidx")
    own = frame.join(named, on=["n_kind", "n_id"], how="left", maintain_order="left")["pidx"]
    linked = (
        frame.filter(pl.col("prank").is_not_null())
        .join(index.rename({"rank": "prank", "pidx": "ppidx"}), on="prank", how="inner")
        .sort(["ppidx", *SIBLING_ORDER[1:]])
    )
    counts = linked.group_by("ppidx").len()
    slots = pl.DataFrame({"ppidx": pl.int_range(index.height, eager=True, dtype=pl.UInt32)})
    sizes = slots.join(counts, on="ppidx", how="left", maintain_order="left")["len"].fill_null(0)
    starts = array("q", [0])
    starts.extend(sizes.cum_sum().cast(pl.Int64))
    return (
        array("q", own.cast(pl.Int64).fill_null(-1)),
        array("q", linked["pos"].cast(pl.Int64)),
        starts,
    )


MAX_DESCENDANT_ROWS = 10_000_000
"""The most rows ``catalog_descendants`` returns: one per (root, descendant) pair, so a chain of n sessions,
each the parent of the next, has n (n - 1) / 2 of them (a chain of 20,000: 200 million). Past it the walk
stops at once with ``ResultTooLargeError`` (list_descendants per root, or catalog's children rows, are
linear in the corpus)."""


def source_catalog_descendants(
    source: TableSource, semantics: Semantics, live: Mapping[str, str] | None
) -> pl.DataFrame:
    """``catalog_descendants()`` over a table source: the pre-order walk runs over integer arrays.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.
        ResultTooLargeError: the result would pass ``MAX_DESCENDANT_ROWS`` rows.

    Examples:
        >>> source_catalog_descendants.__name__
        'source_catalog_descendants'
    """
    keys, live_map, candidates = _prepared(source, live)
    failing = _failing_parents(source, keys) if semantics == "trace" else pl.DataFrame(schema={"prank": pl.Int64})
    own, kids, starts = _children_index(keys)
    positions = keys.frame.select("order").with_row_index("pos")
    keys.frame = keys.frame.clear()  # every session's keys: not needed past here (the parents are)
    body = _resolved_rows(source, candidates.select("order", "has_children"), semantics, live_map)
    body = body.join(session_columns(source, body["order"]), on="order", how="left", maintain_order="left")
    rows = body.select("order").with_row_index("row")
    row_at = array("q", positions.join(rows, on="order", how="left", maintain_order="left")["row"].fill_null(-1))
    error_at = dict(zip(failing["prank"].to_list(), range(body.height, body.height + failing.height), strict=True))
    ranks = array("q", keys.parents["rank"])
    picks, root_of, parent_of, depths = array("q"), array("q"), array("q"), array("q")
    for root in range(len(ranks)):
        if ranks[root] in error_at:
            picks.append(error_at[ranks[root]])
            root_of.append(root)
            parent_of.append(-1)
            depths.append(-1)
            continue
        visited = {root}
        stack = [(kids[at], root, 1) for at in range(starts[root + 1] - 1, starts[root] - 1, -1)]
        while stack:
            pos, parent, depth = stack.pop()
            key = own[pos]
            if key in visited:
                continue
            visited.add(key)
            row = row_at[pos]
            if row >= 0:
                picks.append(row)
                root_of.append(root)
                parent_of.append(parent)
                depths.append(depth)
                if len(picks) > MAX_DESCENDANT_ROWS:
                    raise ResultTooLargeError(
                        f"catalog_descendants would return more than {MAX_DESCENDANT_ROWS:,} rows (one per root "
                        "and descendant: the trees are too deep, e.g. long parent chains)",
                        hint="call list_descendants(corpus, root) for the roots you need, "
                        "or use catalog(corpus) (one row per parent and child)",
                    )
            stack.extend((kids[at], key, depth + 1) for at in range(starts[key + 1] - 1, starts[key] - 1, -1))
    return _descendants_frame(keys, body, failing, (picks, root_of, parent_of, depths))


def _descendants_frame(
    keys: ListingKeys, body: pl.DataFrame, failing: pl.DataFrame, walk: tuple[array[int], ...]
) -> pl.DataFrame:
    schema = {"root": pl.String, "root_json": pl.String, **ROW_SCHEMA}
    picks, root_of, parent_of, depths = (pl.Series(values, dtype=pl.Int64) for values in walk)
    if picks.len() == 0:
        return pl.DataFrame(schema=schema)
    rows = pl.concat([body.drop("order"), failing.drop("prank")], how="diagonal_relaxed")[picks]
    used = pl.concat([root_of, parent_of.filter(parent_of >= 0)]).unique()
    rank_of = keys.parents["rank"]
    texts = _parent_texts(keys, rank_of.gather(used), "root").with_columns(
        pl.col("prank").replace_strict(rank_of, pl.int_range(rank_of.len(), eager=True), return_dtype=pl.Int64)
    )
    place = pl.DataFrame({"root_pidx": root_of, "parent_pidx": parent_of, "depth": depths})
    place = place.join(texts, left_on="root_pidx", right_on="prank", how="left", maintain_order="left")
    place = place.join(
        texts.select("prank", pl.col("root").alias("parentId")),
        left_on="parent_pidx",
        right_on="prank",
        how="left",
        maintain_order="left",
    )
    out = rows.drop("parentId", "depth").with_columns(
        place["root"],
        place["root_json"],
        place["parentId"],
        place.select(pl.when(pl.col("depth") >= 0).then(pl.col("depth")).alias("depth"))["depth"],
    )
    return out.select(list(schema)).cast(pl.Schema(schema))
