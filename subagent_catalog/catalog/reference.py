"""The catalog node by node over the in-memory model: the reference for the columnar catalog.

``reference_catalog`` and ``reference_catalog_descendants`` build one
``Node`` per listed session (``catalog.model``), resolve each candidate with
upstream's own steps and walk the parents in upstream's order, as
``list_children`` does for one parent. ``catalog`` and ``catalog_descendants``
compute the same frames from columns (``catalog.archive_tables``) in a
fraction of the memory; the differential tests (``tests/archive_diff.py``)
require the two to be equal on every corpus they read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from subagent_catalog.catalog.model import CorpusSource, Model, Row, Semantics, build_model, map_key, walk
from subagent_catalog.catalog.resolve import RESOLVERS, check_live, error_row, trace_parent_check
from subagent_catalog.catalog.schemas import CATALOG_EXTRA, ROW_SCHEMA
from subagent_catalog.errors import CatalogError
from subagent_catalog.read.jsvalue import clean_row, frame_text, js_string, json_text
from subagent_catalog.read.paths import MISSING


def _all_parent_keys(model: Model) -> list[Any]:
    """Every session id, then every other scalar ``parentSession`` value, each key once, in first-seen order."""
    parents: dict[Any, Any] = {}
    ids = [node.id for node in model.nodes]
    for value in ids + [node.header.get("parentSession", MISSING) for node in model.nodes]:
        if value is not MISSING and not isinstance(value, (dict, list)):
            parents.setdefault(map_key(value), value)
    return list(parents.values())


def _resolved(
    corpus: CorpusSource, semantics: Semantics, live: Mapping[str, str] | None
) -> tuple[Model, dict[str, Row | None]]:
    """The in-memory model and every subagent's resolved row (``None``: not listed)."""
    model = build_model(corpus)
    live_map = check_live(model, live)
    resolve = RESOLVERS[semantics]
    return model, {node.id: resolve(node, model, live_map) for node in model.nodes if node.origin_subagent}


def reference_catalog(
    corpus: CorpusSource, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """``catalog``'s frame, computed over the in-memory model (one ``Node`` per session).

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> from subagent_catalog.catalog.tables import catalog
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/sample", cache=False)
        >>> reference_catalog(corpus).equals(catalog(corpus))
        True
    """
    model, resolved = _resolved(corpus, semantics, live)
    out: list[dict[str, Any]] = []
    for parent in _all_parent_keys(model):
        head = {"parent": js_string(parent), "parent_json": json_text(parent)}
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
    return pl.DataFrame([clean_row(r) for r in out], schema={**CATALOG_EXTRA, **ROW_SCHEMA})


def reference_catalog_descendants(
    corpus: CorpusSource, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """``catalog_descendants``'s frame, computed over the in-memory model.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> from subagent_catalog.catalog.tables import catalog_descendants
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/sample", cache=False)
        >>> reference_catalog_descendants(corpus).equals(catalog_descendants(corpus))
        True
    """
    model, resolved = _resolved(corpus, semantics, live)
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
        roots.append({"root": js_string(root), "root_json": json_text(root)})
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
        for node, parent, depth in walk(model, root):
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
