"""Where the two semantics disagree.

``deviations`` lists every child whose projection row differs from its
trace row, and why.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import polars as pl

from subagent_catalog.catalog.archive_keys import listing_keys
from subagent_catalog.catalog.archive_tables import resolve_batches
from subagent_catalog.catalog.model import CorpusSource, Model, Node, Row, build_model, model_of
from subagent_catalog.catalog.resolve import check_live, resolve_projection, resolve_trace, seed_length
from subagent_catalog.catalog.schemas import DEVIATION_SCHEMA
from subagent_catalog.catalog.source import is_table_source, source_reads
from subagent_catalog.read.jsvalue import clean_row, js_string


def _describe(row: Row | None) -> str:
    if row is None:
        return "omitted"
    if row.kind == "diagnostic":
        return f"diagnostic:{row.reason}"
    return f"child:{row.mode}" + (f":{row.label}" if row.label is not None else "")


def _deviation(node: Node, projection: Row | None, trace: Row | None) -> tuple[str, str]:
    own = [d for d in node.descriptors if d[0] >= seed_length(node.header)]
    if trace is None and projection is not None and projection.kind == "child":
        return (
            "seed-descriptor-identity",
            "only a fork-seed (ancestor) descriptor: today's last-wins fold serves it as the child's identity; "
            "the trace path required an own-suffix descriptor and omitted the child",
        )
    if trace is None:
        return (
            "settled-debris-visible",
            "no own-suffix descriptor: the trace path omitted the child silently; today it is a corrupt diagnostic",
        )
    if trace.reason == "unsupported":
        return (
            "unsupported-no-longer-produced",
            "an own descriptor of another version: trace says unsupported, today corrupt",
        )
    if len(own) > 1:
        return (
            "multiple-own-descriptors",
            "several own-suffix descriptors: the trace path judged corrupt; today the last one wins",
        )
    if trace.reason == "corrupt" and projection is not None and projection.reason == "unavailable":
        return (
            "source-read-failure",
            "the cold read rejects the stored log after reading it: trace said corrupt, today unavailable",
        )
    return ("other", "the two semantics disagree for a reason not among upstream's documented deviations")


def _subagents(corpus: CorpusSource, live: Mapping[str, str] | None) -> Iterator[tuple[Node, Model, Mapping[str, str]]]:
    """Each listed ``origin: "subagent"`` session naming a parent, with the model its resolvers read."""
    if is_table_source(corpus):  # out of core: streamed in batches
        keys = listing_keys(corpus)
        live_map = check_live(model_of([]), live)
        wanted = keys.frame.filter(pl.col("subagent") & pl.col("named")).select("order", "has_children")
        for nodes, model in resolve_batches(corpus, wanted, trace=True):
            yield from ((node, model, live_map) for node in nodes)
        return
    model = build_model(corpus)
    live_map = check_live(model, live)
    yield from ((node, model, live_map) for node in model.nodes)


@source_reads
def deviations(corpus: CorpusSource, *, live: Mapping[str, str] | None = None) -> pl.DataFrame:
    """Every child on which the projection and trace semantics disagree, and why.

    ``deviation`` names which of upstream's documented deviations applies
    (``seed-descriptor-identity``, ``settled-debris-visible``,
    ``multiple-own-descriptors``, ``source-read-failure``,
    ``unsupported-no-longer-produced``) or ``other``.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> deviations(read_corpus(tempfile.mkdtemp())).height
        0
    """
    rows: list[dict[str, Any]] = []
    for node, model, live_map in _subagents(corpus, live):
        if not node.origin_subagent or "parentSession" not in node.header:
            continue
        projection = resolve_projection(node, model, live_map)
        trace = resolve_trace(node, model, live_map)
        if _describe(projection) == _describe(trace):
            continue
        name, why = _deviation(node, projection, trace)
        rows.append(
            {
                "parent": js_string(node.header["parentSession"]),
                "id": node.id,
                "projection": _describe(projection),
                "trace": _describe(trace),
                "deviation": name,
                "explanation": why,
                "path": node.row["path"],
                "_order": node.order,
            }
        )
    rows.sort(key=lambda row: row.pop("_order"))
    return pl.DataFrame([clean_row(r) for r in rows], schema=DEVIATION_SCHEMA)
