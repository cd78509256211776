"""The catalog over every parent at once.

``catalog`` (children rows) and ``catalog_descendants`` (pre-order
descendants) give one frame for a whole corpus, with a row of kind ``error``
for a parent whose listing throws. Both compute from columns
(``catalog.archive_tables``): over an archive's scans out of core, and over
an in-memory corpus's frames the same way (``source.CorpusTables``), holding
keys as columns instead of one parsed header per session.
``catalog.reference`` computes the same frames node by node; the tests
require the two to agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import polars as pl

from subagent_catalog.catalog.archive_tables import source_catalog, source_catalog_descendants
from subagent_catalog.catalog.model import CorpusSource, Semantics, as_corpus
from subagent_catalog.catalog.schemas import CATALOG_EXTRA, ROW_SCHEMA
from subagent_catalog.catalog.source import CorpusTables, is_table_source, source_reads
from subagent_catalog.frames.corpus import Corpus


@source_reads
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

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> catalog(read_corpus(tempfile.mkdtemp())).columns[:2]
        ['parent', 'parent_json']
    """
    if is_table_source(corpus):  # out of core: keys as columns, rows resolved in batches
        return source_catalog(corpus, semantics, live)
    store = derived_store(corpus) if live is None else None
    schema = {**CATALOG_EXTRA, **ROW_SCHEMA}
    if store is not None:
        as_corpus(corpus).require_listing()
        kept = store.get(f"catalog:{semantics}", schema, as_corpus(corpus))
        if kept is not None:
            return kept
    frame = source_catalog(CorpusTables(as_corpus(corpus)), semantics, live)
    if store is not None:
        store.put(f"catalog:{semantics}", frame, as_corpus(corpus))
    return frame


class DerivedStore(Protocol):
    """Where a corpus keeps frames derived from it (``store.frames_cache``): ``get`` one back, ``put`` one."""

    def get(self, name: str, schema: Mapping[str, Any], corpus: Corpus) -> pl.DataFrame | None:
        """The frame kept under ``name`` for these very frames, else ``None``."""

    def put(self, name: str, frame: pl.DataFrame, corpus: Corpus) -> None:
        """Keep ``frame`` under ``name`` for these very frames."""


def derived_store(corpus: CorpusSource) -> DerivedStore | None:
    """The frames cache a corpus came from or went to (``store.frames_cache``), if any.

    Derived frames (a catalog, the runs' names) are kept there, valid for the very frames it holds.

    Examples:
        >>> from subagent_catalog import read_corpus
        >>> derived_store(read_corpus("data/sample", cache=False)) is None
        True
    """
    store = getattr(as_corpus(corpus), "_derived", None)
    return store if hasattr(store, "get") and hasattr(store, "put") else None


@source_reads
def catalog_descendants(
    corpus: CorpusSource, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """Every parent's descendant listing (pre-order), each candidate resolved once.

    Column ``root`` names the listing's root; the rows equal
    ``list_descendants(corpus, root)`` for each root, so a session appears once
    per ancestor: a chain of n sessions has n (n - 1) / 2 rows. At most
    ``MAX_DESCENDANT_ROWS`` (10,000,000) rows are returned.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.
        ResultTooLargeError: the result would pass ``MAX_DESCENDANT_ROWS``
            (the walk stops there; ``list_descendants`` per root is linear).

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> catalog_descendants(read_corpus(tempfile.mkdtemp())).height
        0
    """
    tables = corpus if is_table_source(corpus) else CorpusTables(as_corpus(corpus))  # out of core, or a corpus's frames
    return source_catalog_descendants(tables, semantics, live)
