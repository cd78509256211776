"""The report's page data: the diagnostics table and where each tree node lives on disk.

``diagnostic_rows`` gives one compact dict per diagnostic row of the
catalog (what the page's "Diagnostics" table shows and filters), and
``node_places`` the project and file of every tree node (what the tree's
project filter and its search by path use). Both are inlined in the page's
JSON blob; every string is bounded here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import polars as pl

from subagent_catalog.analysis.forest import Forest
from subagent_catalog.analysis.tallies import worst_problem_lines
from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.corpus import Corpus

ID_BOUND = 300
DETAIL_BOUND = 300
PATH_BOUND = 400
BATCH = 1 << 16
"""Sessions filtered at a time (a filter of every session would copy its path column whole)."""


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


def diagnostic_rows(
    corpus: Corpus, rows: pl.DataFrame, forest: Forest, names: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """One dict per diagnostic row of ``rows`` (catalog rows), sorted by reason, cause, path.

    Keys: ``i`` id, ``p`` parent, ``r`` reason, ``u`` cause, ``x`` cause
    detail, ``f`` path under the root, ``j`` project directory, ``o`` tree
    node (``None`` when the tree does not hold it), and, when the file has a
    located problem, ``l`` its line and ``k`` its kind (the most severe one); ``n`` and ``m`` the names
    (``names``: label, else title or first prompt) of the session and its parent, when they have one.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog import catalog, read_corpus
        >>> from subagent_catalog.analysis.forest import forest_of_rows
        >>> corpus = read_corpus(tempfile.mkdtemp(), cache=False)
        >>> rows = catalog(corpus)
        >>> diagnostic_rows(corpus, rows, forest_of_rows(corpus, rows))
        []
    """
    lines = {path: (line, kind) for path, line, kind in worst_problem_lines(corpus.problems).iter_rows()}
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
        for key, sid in (("n", row["id"]), ("m", row["parent"])):
            if (name := (names or {}).get(sid)) is not None:
                entry[key] = clip(name, DETAIL_BOUND)
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
    sessions = corpus.sessions.select("session_id", "path", "project_dir", "listed")
    batches = (sessions.slice(start, BATCH).filter(pl.col("listed")) for start in range(0, sessions.height, BATCH))
    for session_id, path, project_dir, _listed in (row for batch in batches for row in batch.iter_rows()):
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


class NodeIndex(Mapping[str, int]):
    """Tree nodes by session id, held as three integer columns, not a dict of every id.

    A report of 500,000 sessions looks up a few thousand ids (its run tables
    and timelines); a dict of every id would hold a Python string and an entry
    per session (about 90 MB), grouping or sorting the ids as strings as much
    again while it is made. The index holds each listed id's 64-bit hash
    (sorted), its node and its ``sessions`` row: a lookup hashes the id the
    same way and checks each row of that hash against the id itself.
    """

    def __init__(self, ids: pl.Series, keys: pl.Series, nodes: pl.Series, rows: pl.Series) -> None:
        self._ids, self._keys, self._nodes, self._rows = ids, keys, nodes, rows

    def __getitem__(self, key: str) -> int:
        if isinstance(key, str):
            wanted = pl.Series([key], dtype=pl.String).hash()
            start = int(self._keys.search_sorted(wanted, side="left")[0])
            end = int(self._keys.search_sorted(wanted, side="right")[0])
            for at in range(start, end):
                if self._ids[int(self._rows[at])] == key:
                    return int(self._nodes[at])
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (str(self._ids[int(row)]) for row in self._rows)

    def __len__(self) -> int:
        return self._rows.len()


def node_index(corpus: Corpus) -> NodeIndex:
    """The tree node of each listed session (``Forest.index`` of ``forest_of_rows``), without the tree.

    Nodes are numbered in list order, the last log of an id winning, as the
    forest numbers them; the report makes its run tables from this before the
    tree is built, so the two are never in memory at once.

    Examples:
        >>> from subagent_catalog import catalog, read_corpus
        >>> from subagent_catalog.analysis.forest import forest_of_rows
        >>> corpus = read_corpus("data/sample", cache=False)
        >>> index = node_index(corpus)
        >>> index == forest_of_rows(corpus, catalog(corpus)).index, index.get("rs-01"), index.get("nobody")
        (True, 17, None)
    """
    sessions = corpus.sessions
    rows = sessions.select(
        pl.col("session_id").hash().alias("key"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("row"),
        "list_order",
        "listed",
        pl.col("session_id").is_not_null().alias("named"),
    ).filter(pl.col("listed"))
    numbered = rows.sort("list_order").with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("node"))
    # The last log of an id is its node. Rows sharing a hash (an id listed twice; two ids of one hash, never
    # seen) keep the last of each id, told apart by the ids themselves.
    numbered = numbered.filter(pl.col("named")).sort("key", "node", descending=[False, True]).drop("named")
    ids = sessions["session_id"]
    shared = numbered["key"].is_duplicated()
    if shared.any():
        part = numbered.filter(shared)
        keep = pl.struct(pl.col("key"), ids.gather(part["row"]).alias("_id")).is_first_distinct()
        kept = pl.concat([numbered.filter(~shared), part.filter(keep)])
        numbered = kept.sort("key", "node", descending=[False, True])
    return NodeIndex(ids, numbered["key"], numbered["node"], numbered["row"])
