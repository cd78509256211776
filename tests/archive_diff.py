"""Differential check: every catalog call over an archive equals the same call over the corpus it came from.

``archive_differences(root, tmp)`` exports ``root`` (``export_archive(..., jobs=1)``),
then compares, for both semantics, with and without a ``live`` overlay:
``catalog`` and ``catalog_descendants``; for every parent (each listed id,
every ``parentSession`` value a header names, strings or not, plus unknown
and non-string parents) ``list_children``, ``list_descendants`` and
``list_agents_text`` (both scopes); ``deviations``, ``known_session_ids`` and
``require_session``. The corpus side is the in-memory catalog (``read_corpus``);
for ``catalog`` and ``catalog_descendants`` it is the node-by-node reference
(``catalog.reference``), which ``catalog(corpus)`` must equal too (it computes
from the frames' columns, as over an archive). The archive side is the
out-of-core catalog (``open_archive``); results must be equal frames
(``.equals``) or equal errors (type, code, message).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import polars as pl

from subagent_catalog import (
    catalog,
    catalog_descendants,
    deviations,
    list_agents_text,
    list_children,
    list_descendants,
    read_corpus,
    require_session,
)
from subagent_catalog.catalog.model import build_model
from subagent_catalog.catalog.parents import known_session_ids
from subagent_catalog.catalog.reference import reference_catalog, reference_catalog_descendants
from subagent_catalog.catalog.source import CorpusTables
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.paths import MISSING
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive

ODD_PARENTS: list[Any] = ["nobody", "", 5, 5.0, True, None, {"a": 1}, ["x"], "x\ud800"]


class FrameSource(CorpusTables):
    """``CorpusTables`` with its rows shuffled (so only ``order_by`` gives their order).

    Lets a test give the out-of-core catalog values no real log produces.
    """

    def scan(self, table: Any) -> pl.LazyFrame:
        return super().scan(table).collect().sample(fraction=1.0, shuffle=True, seed=1).lazy()


def outcome(func: Any, *args: Any, **options: Any) -> tuple[Any, ...]:
    try:
        return ("ok", func(*args, **options))
    except SubagentCatalogError as error:
        return ("error", type(error).__name__, getattr(error, "code", None), str(error), getattr(error, "path", None))


def same(left: tuple[Any, ...], right: tuple[Any, ...]) -> bool:
    if left[0] != right[0] or left[0] == "error":
        return left == right
    a, b = left[1], right[1]
    return a.equals(b) if isinstance(a, pl.DataFrame) and isinstance(b, pl.DataFrame) else a == b


def parents_of(corpus: Any) -> tuple[list[Any], list[str]]:
    """Every parent a caller could ask about, and the listed ids (empty when the listing fails)."""
    try:
        nodes = build_model(corpus).nodes
    except SubagentCatalogError:
        return list(ODD_PARENTS), []
    values: list[Any] = [node.id for node in nodes]
    named = [node.header["parentSession"] for node in nodes if node.header.get("parentSession", MISSING) is not MISSING]
    # A copy: the in-memory model keys objects by identity, so the header's own object would match itself.
    values += [copy.deepcopy(value) for value in named]
    return values + ODD_PARENTS, [node.id for node in nodes]


def archive_differences(root: Path | str, tmp: Path, *, compression: Any = "auto", parents_cap: int = 12) -> list[str]:
    """Each call whose archive result differs from the corpus result, described (empty: all equal).

    One-parent calls run for every parent, or for an even sample of
    ``parents_cap`` of them (plus the odd ones) in larger corpora; ``catalog``
    covers every parent in one call either way.
    """
    export_archive(root, tmp / "archive", jobs=1, compression=compression)
    return source_differences(
        read_corpus(root, compression=compression, cache=False), open_archive(tmp / "archive"), parents_cap=parents_cap
    )


def source_differences(corpus: Corpus, archive: Any, *, parents_cap: int = 12) -> list[str]:
    """Each call whose result over the table source ``archive`` differs from its result over ``corpus``."""
    parents, ids = parents_of(corpus)
    live = {ident: ("running" if index % 2 else "idle") for index, ident in enumerate(ids[::3])}
    problems: list[str] = []

    def compare(name: str, func: Any, *args: Any, reference: Any = None, **options: Any) -> None:
        left = outcome(reference or func, corpus, *args, **options)
        sides = [("archive", archive)] + ([("corpus", corpus)] if reference is not None else [])
        for side, source in sides:
            right = outcome(func, source, *args, **options)
            if not same(left, right):
                problems.append(
                    f"{name} {args!r} {options!r}:\n  reference: {str(left)[:600]}\n  {side}: {str(right)[:600]}"
                )

    for semantics in ("projection", "trace"):
        for overlay in (None, live):
            compare("catalog", catalog, semantics=semantics, live=overlay, reference=reference_catalog)
            compare(
                "catalog_descendants",
                catalog_descendants,
                semantics=semantics,
                live=overlay,
                reference=reference_catalog_descendants,
            )
        chosen = parents if len(parents) <= parents_cap else [*parents[:: len(parents) // parents_cap], *ODD_PARENTS]
        for parent in chosen:
            for func in (list_children, list_descendants):
                compare(func.__name__, func, parent, semantics=semantics)
                compare(func.__name__, func, parent, semantics=semantics, live=live)
            for scope in ("children", "descendants"):
                compare("list_agents_text", list_agents_text, parent, scope=scope, semantics=semantics, live=live)
    compare("deviations", deviations)
    compare("deviations", deviations, live=live)
    compare("known_session_ids", known_session_ids)
    for ident in [*ids[:20], "nobody", "x\ud800"]:
        compare("require_session", require_session, ident)
    return problems
