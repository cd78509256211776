"""The catalog over every parent at once.

``catalog`` (children rows) and ``catalog_descendants`` (pre-order
descendants) give one frame for a whole corpus, with a row of kind ``error``
for a parent whose listing throws.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import polars as pl

from subagent_catalog.catalog.archive_tables import source_catalog, source_catalog_descendants
from subagent_catalog.catalog.model import (
    CorpusSource,
    Model,
    Node,
    Row,
    Semantics,
    as_corpus,
    build_model,
    map_key,
)
from subagent_catalog.catalog.resolve import RESOLVERS, check_live, error_row, trace_parent_check
from subagent_catalog.catalog.schemas import CATALOG_EXTRA, ROW_SCHEMA
from subagent_catalog.catalog.source import is_table_source
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.jsvalue import (
    clean_row,
    frame_text,
    js_string,
    json_text,
)
from subagent_catalog.read.paths import MISSING


def _json(value: Any) -> str:
    return json_text(value)


def _all_parent_keys(model: Model) -> list[Any]:
    parents: list[Any] = []
    seen: set[Any] = set()
    for node in model.nodes:
        if map_key(node.id) not in seen:
            seen.add(map_key(node.id))
            parents.append(node.id)
    for node in model.nodes:
        value = node.header.get("parentSession", MISSING)
        if value is not MISSING and map_key(value) not in seen and not isinstance(value, (dict, list)):
            seen.add(map_key(value))
            parents.append(value)
    return parents


def _resolved(model: Model, semantics: Semantics, live: Mapping[str, str]) -> dict[str, Row | None]:
    resolve = RESOLVERS[semantics]
    return {node.id: resolve(node, model, live) for node in model.nodes if node.origin_subagent}


def catalog(
    corpus: CorpusSource, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """Every parent's children in one pass: the rows of ``list_children`` for each parent.

    Parents are every listed session plus every (primitive) ``parentSession``
    value a header names, in that order. Each candidate is resolved once.
    Under ``trace`` a parent whose call fails (not listed, lineage cycle)
    gives one ``kind="error"`` row naming the code in ``reason``.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> catalog(read_corpus(tempfile.mkdtemp())).columns[:2]
        ['parent', 'parent_json']
    """
    if is_table_source(corpus):  # out of core: keys as columns, rows resolved in batches
        return source_catalog(corpus, semantics, live)
    store = _derived_store(corpus) if live is None else None
    schema = {**CATALOG_EXTRA, **ROW_SCHEMA}
    if store is not None:
        as_corpus(corpus).require_listing()
        kept = store.get(f"catalog:{semantics}", schema, as_corpus(corpus))
        if kept is not None:
            return kept
    frame = _catalog(corpus, semantics, live)
    if store is not None:
        store.put(f"catalog:{semantics}", frame, as_corpus(corpus))
    return frame


class _DerivedStore(Protocol):
    def get(self, name: str, schema: Mapping[str, Any], corpus: Corpus) -> pl.DataFrame | None: ...

    def put(self, name: str, frame: pl.DataFrame, corpus: Corpus) -> None: ...


def _derived_store(corpus: CorpusSource) -> _DerivedStore | None:
    """The frames cache a corpus came from or went to (``store.frames_cache``), if any."""
    store = getattr(as_corpus(corpus), "_derived", None)
    return store if hasattr(store, "get") and hasattr(store, "put") else None


def _catalog(corpus: CorpusSource, semantics: Semantics, live: Mapping[str, str] | None) -> pl.DataFrame:
    model = build_model(corpus)
    live_map = check_live(model, live)
    resolved = _resolved(model, semantics, live_map)
    out: list[dict[str, Any]] = []
    for parent in _all_parent_keys(model):
        head = {"parent": js_string(parent), "parent_json": _json(parent)}
        if semantics == "trace":
            try:
                trace_parent_check(model, parent)
            except CatalogError as error:
                out.append({**head, **error_row(error, semantics)})
                continue
        for node in model.children.get(map_key(parent), []):
            row = resolved.get(node.id) if node.origin_subagent else None
            if row is not None:
                out.append({**head, **row.frame_row()})
    schema = {**CATALOG_EXTRA, **ROW_SCHEMA}
    return pl.DataFrame([clean_row(r) for r in out], schema=schema) if out else pl.DataFrame(schema=schema)


def catalog_descendants(
    corpus: CorpusSource, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """Every parent's descendant listing (pre-order), each candidate resolved once.

    Column ``root`` names the listing's root; the rows equal
    ``list_descendants(corpus, root)`` for each root.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> catalog_descendants(read_corpus(tempfile.mkdtemp())).height
        0
    """
    if is_table_source(corpus):  # out of core: keys as columns, the walk over integer arrays
        return source_catalog_descendants(corpus, semantics, live)
    model = build_model(corpus)
    live_map = check_live(model, live)
    resolved = _resolved(model, semantics, live_map)
    # A session sits below every one of its ancestors, so one row's values repeat once per
    # ancestor: n^2 copies of a 100 MiB label in a long chain. Each distinct row is built once
    # and the output gathers it by index; a Polars gather shares string buffers, not bytes.
    rows: list[dict[str, Any]] = []
    row_of: dict[str, int] = {}
    parents = _Interned()
    roots: list[dict[str, Any]] = []
    picks: list[int] = []
    root_of: list[int] = []
    parent_of: list[int] = []
    depths: list[int | None] = []
    for root in _all_parent_keys(model):
        roots.append({"root": js_string(root), "root_json": _json(root)})
        if semantics == "trace":
            try:
                trace_parent_check(model, root)
            except CatalogError as error:
                rows.append(error_row(error, semantics))
                picks.append(len(rows) - 1)
                root_of.append(len(roots) - 1)
                parent_of.append(parents.index(None))
                depths.append(None)
                continue
        for node, parent, depth in _walk(model, root):
            cached = resolved.get(node.id)
            if cached is None:
                continue
            if node.id not in row_of:
                row_of[node.id] = len(rows)
                rows.append(cached.frame_row())
            picks.append(row_of[node.id])
            root_of.append(len(roots) - 1)
            parent_of.append(parents.index(js_string(parent)))
            depths.append(depth)
    schema = {"root": pl.String, "root_json": pl.String, **ROW_SCHEMA}
    if not picks:
        return pl.DataFrame(schema=schema)
    heads = pl.DataFrame([clean_row(r) for r in roots], schema={"root": pl.String, "root_json": pl.String})
    body = pl.DataFrame([clean_row(r) for r in rows], schema=ROW_SCHEMA)[picks].with_columns(
        parents.series("parentId")[parent_of], pl.Series("depth", depths, dtype=pl.Int64)
    )
    return pl.concat([heads[root_of], body], how="horizontal").select(list(schema))


class _Interned:
    """Distinct texts, each stored once, addressed by index (``None`` included)."""

    def __init__(self) -> None:
        self.values: list[str | None] = []
        self.slots: dict[str | None, int] = {}

    def index(self, value: str | None) -> int:
        if value not in self.slots:
            self.slots[value] = len(self.values)
            self.values.append(value)
        return self.slots[value]

    def series(self, name: str) -> pl.Series:
        return pl.Series(name, [None if v is None else frame_text(v) for v in self.values], dtype=pl.String)


def _walk(model: Model, root: Any) -> list[tuple[Node, Any, int]]:
    """Upstream's pre-order walk below ``root``: (node, direct parent, depth), every node once."""
    order: list[tuple[Node, Any, int]] = []
    visited: set[Any] = {map_key(root)}
    stack: list[tuple[Node, Any, int]] = [(n, root, 1) for n in reversed(model.children.get(map_key(root), []))]
    while stack:
        node, parent, depth = stack.pop()
        if map_key(node.id) in visited:
            continue
        visited.add(map_key(node.id))
        order.append((node, parent, depth))
        for child in reversed(model.children.get(map_key(node.id), [])):
            stack.append((child, node.id, depth + 1))
    return order
