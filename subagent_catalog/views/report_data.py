"""The report's page data: the diagnostics table and where each tree node lives on disk.

``diagnostic_rows`` gives one compact dict per diagnostic row of the
catalog (what the page's "Diagnostics" table shows and filters), and
``node_places`` the project and file of every tree node (what the tree's
project filter and its search by path use). Both are inlined in the page's
JSON blob; every string is bounded here.
"""

from __future__ import annotations

import os
from typing import Any

import polars as pl

from subagent_catalog.analysis.forest import Forest
from subagent_catalog.analysis.summary import SEVERITY_ORDER
from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.corpus import Corpus

ID_BOUND = 300
DETAIL_BOUND = 300
PATH_BOUND = 400


def relative_path(path: str | None, root: str) -> str:
    """``path`` relative to the corpus ``root`` (the path itself when it is elsewhere or on another drive).

    Examples:
        >>> relative_path("/c/--p--/s/session.jsonl", "/c")
        '--p--/s/session.jsonl'
        >>> relative_path(None, "/c")
        ''
    """
    if not path:
        return ""
    try:
        relative = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _problem_lines(corpus: Corpus) -> dict[str, tuple[int, str]]:
    """For each file with a located problem: (line, problem kind) of its most severe one."""
    rank = {name: i for i, name in enumerate(SEVERITY_ORDER)}
    found: dict[str, tuple[int, int, str]] = {}
    located = corpus.problems.filter(pl.col("line").is_not_null() & pl.col("path").is_not_null())
    for row in located.select("path", "line", "severity", "kind").iter_rows(named=True):
        key = (rank.get(row["severity"], 9), row["line"], row["kind"])
        if row["path"] not in found or key < found[row["path"]]:
            found[row["path"]] = key
    return {path: (line, kind) for path, (_, line, kind) in found.items()}


def diagnostic_rows(corpus: Corpus, rows: pl.DataFrame, forest: Forest) -> list[dict[str, Any]]:
    """One dict per diagnostic row of ``rows`` (catalog rows), sorted by reason, cause, path.

    Keys: ``i`` id, ``p`` parent, ``r`` reason, ``u`` cause, ``x`` cause
    detail, ``f`` path under the root, ``j`` project directory, ``o`` tree
    node (``None`` when the tree does not hold it), and, when the file has a
    located problem, ``l`` its line and ``k`` its kind (the most severe one).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog import catalog, read_corpus
        >>> from subagent_catalog.analysis.forest import forest_of_rows
        >>> corpus = read_corpus(tempfile.mkdtemp(), cache=False)
        >>> rows = catalog(corpus)
        >>> diagnostic_rows(corpus, rows, forest_of_rows(corpus, rows))
        []
    """
    lines = _problem_lines(corpus)
    out: list[dict[str, Any]] = []
    columns = ("id", "parent", "reason", "cause", "cause_detail", "path", "project_dir")
    for row in rows.filter(pl.col("kind") == "diagnostic").select(*columns).iter_rows(named=True):
        entry: dict[str, Any] = {
            "i": clip(row["id"], ID_BOUND),
            "p": clip(row["parent"], ID_BOUND),
            "r": row["reason"] or "",
            "u": row["cause"] or "",
            "x": clip(row["cause_detail"], DETAIL_BOUND),
            "f": clip(relative_path(row["path"], corpus.root), PATH_BOUND),
            "j": clip(row["project_dir"], PATH_BOUND),
            "o": forest.index.get(row["id"]),
        }
        if row["path"] in lines:
            entry["l"], entry["k"] = lines[row["path"]]
        out.append(entry)
    out.sort(key=lambda e: (e["r"], e["u"], e["f"], e["i"]))
    return out


def node_places(corpus: Corpus, forest: Forest) -> dict[str, Any]:
    """Where each forest node's log is, compactly: ``{"projects", "names", "j", "f"}``.

    ``projects`` and ``names`` are the distinct project directories and log
    file names; for node ``n``, ``j[n]`` indexes ``projects`` (``-1`` for a
    group node) and ``f[n]`` is an index into ``names`` when the log is
    ``<project>/<id>/<name>``, else the path under the root as a string.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog import read_corpus
        >>> from subagent_catalog.analysis.forest import build_forest
        >>> corpus = read_corpus(tempfile.mkdtemp(), cache=False)
        >>> node_places(corpus, build_forest(corpus))
        {'projects': [], 'names': [], 'j': [], 'f': []}
    """
    projects: dict[str, int] = {}
    names: dict[str, int] = {}
    j: list[int] = [-1] * len(forest.nodes)
    f: list[int | str] = [-1] * len(forest.nodes)
    listed = corpus.sessions.select("session_id", "path", "project_dir", "listed").filter(pl.col("listed"))
    for session_id, path, project_dir, _listed in listed.iter_rows():
        node = forest.index.get(session_id)
        if node is None:
            continue
        project = project_dir or ""
        j[node] = projects.setdefault(project, len(projects))
        relative = relative_path(path, corpus.root)
        head, _, name = relative.rpartition("/")
        if head == f"{project}/{session_id}":
            f[node] = names.setdefault(name, len(names))
        else:
            f[node] = clip(relative, PATH_BOUND)
    return {"projects": list(projects), "names": list(names), "j": j, "f": f}


def node_index(corpus: Corpus) -> dict[str, int]:
    """The tree node of each listed session (``Forest.index`` of ``forest_of_rows``), without the tree.

    Nodes are numbered in list order, the last log of an id winning, as the
    forest numbers them; the report makes its run tables from this before the
    tree is built, so the two are never in memory at once.

    Examples:
        >>> from subagent_catalog import catalog, read_corpus
        >>> from subagent_catalog.analysis.forest import forest_of_rows
        >>> corpus = read_corpus("data/sample", cache=False)
        >>> node_index(corpus) == forest_of_rows(corpus, catalog(corpus)).index
        True
    """
    listed = corpus.sessions.select("session_id", "list_order", "listed").filter(pl.col("listed"))
    ids = listed.sort("list_order")["session_id"].to_list()
    return {session_id: node for node, session_id in enumerate(ids)}
