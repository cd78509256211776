"""A whole run as linked transcript pages: one page per session of a tree, every link resolving.

``write_tree_pages`` writes ``transcript_page`` for a session and every session below it
(``tree_timeline``'s tree: ``parentSession`` links, forks included) into one directory, each
page named ``page_file(id)`` (the id itself when it is plain). A page links its parent and
children only when their pages are in the same directory (the top's parent is named, not
linked), and each page with children draws the timeline of its own subtree, cut from the top's,
so the tree is walked once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from subagent_catalog.analysis.timeline import tree_timeline
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.outputs import OutputError, check_output, inside, write_output
from subagent_catalog.views.transcript_view import page_file, transcript_page


@dataclass
class TreePages:
    """What ``write_tree_pages`` wrote: the top's page, every page, and the sessions it could not name."""

    top: Path
    pages: list[Path]
    skipped: list[str]
    """Sessions of the tree without a page: no session id, or a second log with an id already written."""


def subtree(rows: pl.DataFrame, list_order: int) -> pl.DataFrame:
    """The ``tree_timeline`` rows below one of its sessions (itself included), depths counted from it.

    Examples:
        >>> rows = pl.DataFrame({"list_order": [0, 1, 2, 3], "parent_list_order": [None, 0, 1, 0],
        ...     "depth": [0, 1, 2, 1]})
        >>> subtree(rows, 1).select("list_order", "depth").rows()
        [(1, 0), (2, 1)]
    """
    children: dict[int, list[int]] = {}
    for order, parent in rows.select("list_order", "parent_list_order").iter_rows():
        if parent is not None:
            children.setdefault(parent, []).append(order)
    kept, stack = {list_order}, [list_order]
    while stack:
        for child in children.get(stack.pop(), []):
            kept.add(child)
            stack.append(child)
    base = rows.filter(pl.col("list_order") == list_order)["depth"]
    offset = int(base[0]) if base.len() else 0
    return rows.filter(pl.col("list_order").is_in(list(kept))).with_columns(pl.col("depth") - offset)


def write_tree_pages(
    corpus: Corpus, session_id: str, directory: str | os.PathLike[str], *, path: str | None = None
) -> TreePages:
    """Write the transcript page of ``session_id`` and of every session below it into ``directory``.

    Args:
        corpus: a read corpus.
        session_id: the top of the tree (a root for a whole run).
        directory: where the pages go (created when missing; never inside the corpus).
        path: which log, when several files carry the top's id.

    Raises:
        SessionLookupError: no log has the id.
        OutputError: the directory is inside the corpus, or a page cannot be written.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> pages = write_tree_pages(read_corpus("data/sample"), "auth-refactor", tempfile.mkdtemp())
        >>> sorted(p.name for p in pages.pages)
        ['auth-refactor.html', 'check-sql.html', 'scan-tests.html', 'write-migration.html']
    """
    from subagent_catalog.analysis.find_session import find_session

    target = Path(directory)
    if inside(os.fspath(target), corpus.root):
        raise OutputError(
            f"refusing to write pages into {os.fspath(target)!r}: it is inside the corpus {corpus.root!r}",
            hint="choose a directory outside the corpus root",
        )
    top = find_session(corpus, session_id, path=path)
    rows = tree_timeline(corpus, session_id)
    paths = dict(corpus.sessions.select("list_order", "path").iter_rows())
    named: dict[str, int] = {}
    skipped: list[str] = []
    for order, sid in rows.select("list_order", "session_id").iter_rows():
        if sid is None or sid in named:
            skipped.append(sid or f"(no id) {paths.get(order)}")
        else:
            named[sid] = order
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot create {os.fspath(target)!r}: {error.strerror}", hint="check the path") from None

    def link(other: str) -> str | None:
        return page_file(other) if other in named else None

    written: list[Path] = []
    for sid, order in named.items():
        page_path = target / page_file(sid)
        check_output(page_path, protected=[corpus.root])
        below: Any = subtree(rows, order)
        log = paths.get(order) if order != top["list_order"] else top["path"]
        page = transcript_page(corpus, sid, path=log, link=link, tree=below)
        write_output(page_path, page, protected=[corpus.root], errors="replace")
        written.append(page_path)
    return TreePages(top=target / page_file(top["session_id"] or ""), pages=written, skipped=skipped)
