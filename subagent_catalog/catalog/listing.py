"""The subagent catalog: upstream's listing, row for row, over corpus frames.

``list_children``, ``list_descendants`` and ``list_agents_text`` give the
rows and text upstream's ``listChildren``, ``listDescendants`` and
``list_agents`` give for the same corpus, in the same order. Every row also
carries audit columns upstream folds away (the cause behind a diagnostic,
the read verdict, the descriptor seq...), which never change the upstream
values. The functions are pure: frames in, frames out.

Two semantics are available: ``projection`` (upstream today) and ``trace``
(the superseded read path, see SPEC section 4).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from subagent_catalog.catalog.archive_nodes import children_model, descendants_model
from subagent_catalog.catalog.model import CorpusSource, Model, Node, Row, Scope, Semantics, build_model, map_key, walk
from subagent_catalog.catalog.resolve import RESOLVERS, check_live, trace_parent_check
from subagent_catalog.catalog.schemas import ROW_SCHEMA
from subagent_catalog.catalog.source import is_table_source, source_reads
from subagent_catalog.read.jsvalue import clean_row, js_string


def _listing(
    corpus: CorpusSource, key: Any, semantics: Semantics, live: Mapping[str, str] | None, part: Callable[..., Model]
) -> tuple[Model, Callable[[Node], Row | None]]:
    """The checked model a listing of ``key`` reads (out of core: only ``part``'s nodes), and its resolver."""
    model = part(corpus, key, trace=semantics == "trace") if is_table_source(corpus) else build_model(corpus)
    live_map = check_live(model, live)
    if semantics == "trace":
        trace_parent_check(model, key)
    resolve = RESOLVERS[semantics]
    return model, lambda node: resolve(node, model, live_map)


@source_reads
def children_rows(
    corpus: CorpusSource, parent: Any, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> list[Row]:
    """Upstream ``listChildren`` rows (``parent`` may be any JSON value).

    Raises:
        CatalogError: when the call fails as a whole.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> children_rows(read_corpus(tempfile.mkdtemp()), "P")
        []
    """
    model, resolve = _listing(corpus, parent, semantics, live, children_model)
    resolved = (resolve(node) for node in model.children.get(map_key(parent), []) if node.origin_subagent)
    return [row for row in resolved if row is not None]


@source_reads
def descendant_rows(
    corpus: CorpusSource, root: Any, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> list[Row]:
    """Upstream ``listDescendants`` rows, in pre-order.

    Raises:
        CatalogError: when the call fails as a whole.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> descendant_rows(read_corpus(tempfile.mkdtemp()), "P")
        []
    """
    model, resolve = _listing(corpus, root, semantics, live, descendants_model)
    rows: list[Row] = []
    for node, parent, depth in walk(model, root):
        if node.origin_subagent:
            row = resolve(node)
            if row is not None:
                row.parent, row.depth = parent, depth
                rows.append(row)
    return rows


def _frame(rows: list[Row]) -> pl.DataFrame:
    return pl.DataFrame([clean_row(row.frame_row()) for row in rows], schema=ROW_SCHEMA)


@source_reads
def list_children(
    corpus: CorpusSource, parent_id: Any, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """One parent's subagent children, exactly as upstream lists them.

    Upstream's fields are ``kind``, ``id``, ``mode``, ``label``,
    ``activity``, ``hasChildren`` and ``reason``; the other columns are
    audit facts (see README).

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing
            fails as a whole; under ``trace``, also for an unknown parent
            or a lineage cycle.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> list_children(read_corpus(tempfile.mkdtemp()), "P").height
        0
    """
    return _frame(children_rows(corpus, parent_id, semantics=semantics, live=live))


@source_reads
def list_descendants(
    corpus: CorpusSource, root_id: Any, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """Every subagent below a root in upstream's pre-order, with ``parentId`` and ``depth``.

    Raises:
        CatalogError: as ``list_children``.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> list_descendants(read_corpus(tempfile.mkdtemp()), "P").height
        0
    """
    return _frame(descendant_rows(corpus, root_id, semantics=semantics, live=live))


def render_list_agents(rows: list[Row], *, scope: Scope, statuses: Mapping[str, str] | None = None) -> str:
    """Upstream's model-facing ``list_agents`` text for listing rows.

    Examples:
        >>> render_list_agents([], scope="children")
        '(no subagents)'
        >>> render_list_agents([Row("child", "c", mode="continuable", label="x")], scope="children")
        'c [ready] — x'
    """
    statuses = statuses or {}
    lines = []
    for row in rows:
        at = f" parent={js_string(row.parent)} depth={row.depth}" if scope == "descendants" else ""
        if row.kind == "diagnostic":
            lines.append(f"{row.id} [diagnostic: {row.reason}]{at}")
        elif row.mode == "continuable":
            status = statuses.get(row.id, "ready")
            lines.append(f"{row.id} [{status}]{at} \u2014 {row.label}")
    return "\n".join(lines) if lines else "(no subagents)"


@source_reads
def list_agents_text(
    corpus: CorpusSource,
    parent_id: Any,
    *,
    scope: Scope = "children",
    semantics: Semantics = "projection",
    live: Mapping[str, str] | None = None,
    statuses: Mapping[str, str] | None = None,
) -> str:
    """The ``list_agents`` tool's text for a parent, byte for byte.

    ``statuses`` maps ids to the live Agent registry's ``running``/``idle``
    (default: the ``live`` overlay); every other child is ``ready``.

    Raises:
        CatalogError: as ``list_children``.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> list_agents_text(read_corpus(tempfile.mkdtemp()), "P")
        '(no subagents)'
    """
    if scope == "children":
        rows = children_rows(corpus, parent_id, semantics=semantics, live=live)
    else:
        rows = descendant_rows(corpus, parent_id, semantics=semantics, live=live)
    return render_list_agents(rows, scope=scope, statuses=statuses if statuses is not None else live)
