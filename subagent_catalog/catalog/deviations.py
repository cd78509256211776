"""Where the two semantics disagree.

``deviations`` lists every child whose projection row differs from its
trace row, and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from subagent_catalog.catalog.model import CorpusSource, Node, Row, build_model
from subagent_catalog.catalog.resolve import check_live, resolve_projection, resolve_trace, seed_length
from subagent_catalog.catalog.schemas import DEVIATION_SCHEMA
from subagent_catalog.read.jsvalue import (
    clean_row,
    js_string,
)


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


def deviations(corpus: CorpusSource, *, live: Mapping[str, str] | None = None) -> pl.DataFrame:
    """Every child on which the projection and trace semantics disagree, and why.

    ``deviation`` names which of upstream's documented deviations applies
    (``seed-descriptor-identity``, ``settled-debris-visible``,
    ``multiple-own-descriptors``, ``source-read-failure``,
    ``unsupported-no-longer-produced``) or ``other``.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> deviations(read_corpus(tempfile.mkdtemp())).height
        0
    """
    model = build_model(corpus)
    live_map = check_live(model, live)
    rows: list[dict[str, Any]] = []
    for node in model.nodes:
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
            }
        )
    return (
        pl.DataFrame([clean_row(r) for r in rows], schema=DEVIATION_SCHEMA)
        if rows
        else pl.DataFrame(schema=DEVIATION_SCHEMA)
    )
