"""The conformance output: one JSON line per parent, as upstream printed it.

Parents are every listed session id plus every ``parentSession`` value a
listed header names (as the JSON value it is). A failing listing prints only
``{"corpus_error": ...}``; a failing call prints ``{"error": {...}}`` in
place of each value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from subagent_catalog.catalog.listing import children_rows, descendant_rows, render_list_agents
from subagent_catalog.catalog.model import Row, Scope, Semantics, build_model
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.jsvalue import json_text as stringify
from subagent_catalog.read.paths import MISSING


def json_text(value: Any) -> str:
    """``JSON.stringify``: UTF-8 text, lone surrogates escaped as ``\\udXXX``.

    Examples:
        >>> json_text({"a": [1, "x"]})
        '{"a":[1,"x"]}'
    """
    return stringify(value)


def all_parents(corpus: Corpus) -> list[Any]:
    """Every listed id, then every distinct ``parentSession`` value named by a header.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> all_parents(read_corpus(tempfile.mkdtemp()))
        []
    """
    nodes = build_model(corpus).nodes
    parents: list[Any] = []
    seen: set[str] = set()
    for value in [node.id for node in nodes] + [node.header.get("parentSession", MISSING) for node in nodes]:
        if value is not MISSING and (key := json_text(value)) not in seen:
            seen.add(key)
            parents.append(value)
    return parents


_LISTINGS: tuple[tuple[Scope, Callable[..., list[Row]]], ...] = (
    ("children", children_rows),
    ("descendants", descendant_rows),
)


def conformance_lines(
    corpus: Corpus, parents: list[Any] | None, *, semantics: Semantics = "projection"
) -> Iterator[str]:
    """Yield the conformance output lines for a corpus.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> list(conformance_lines(read_corpus(tempfile.mkdtemp()), None))
        []
    """
    try:
        chosen = all_parents(corpus) if parents is None else parents
    except CatalogError as error:
        yield json_text({"corpus_error": error.message})
        return
    for parent in chosen:
        line: dict[str, Any] = {"parent": parent}
        for scope, listing in _LISTINGS:  # a failing call prints its error in place of both values
            try:
                rows = listing(corpus, parent, semantics=semantics)
                line[scope] = [row.upstream() for row in rows]
                line[f"list_agents_{scope}"] = render_list_agents(rows, scope=scope)
            except CatalogError as error:
                line[scope] = line[f"list_agents_{scope}"] = {"error": {"code": error.code, "message": error.message}}
        yield json_text(line)
