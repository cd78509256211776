"""A whole run as linked transcript pages: one page per session of a tree, every link resolving.

``write_tree_pages`` writes ``transcript_page`` for a session and every session below it
(``tree_timeline``'s tree: ``parentSession`` links, forks included) into one directory, each page named
``page_file(id)`` (the id itself when it is plain lower-case; no two ids share a name). Every page but
the top's links back to the top and up to its parent; a page links its parent and children only when
their pages are in the same directory (else "(no page)"). Each page with children draws the timeline of
its own subtree, cut from the top's (the tree is walked once, in depth-first order, so a subtree is a
slice), with at most ``TREE_MAX_DRAWN`` bars, only ``TREE_DEPTH_DRAWN`` levels down past ``MAX_BARS``
sessions, and a curve of at most ``CURVE_POINTS`` slices: a page's size does not grow with the tree's
depth or width. A page lists its first ``MAX_CHILD_LINKS`` children in a sortable table
(``views.children_table``) and links a further page (``children_file``) for each next
``MAX_CHILD_LINKS``. ``index.html`` is the top's page again (the site's start page).

The directory is an output site (``views.output_site``): ``DIR/manifest.json`` names what this
command wrote; a non-empty directory without it is refused, and no file it did not write is ever
replaced or removed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from subagent_catalog.analysis.findings import findings
from subagent_catalog.analysis.text import clip
from subagent_catalog.analysis.timeline import tree_timeline
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import escape
from subagent_catalog.views.children_table import CHILDREN_CSS, SORT_JS, SORT_JS_HASH, children_rows, children_table
from subagent_catalog.views.names import NAME_CSS, name_html, names_by_id
from subagent_catalog.views.output_site import check_site, claim_site
from subagent_catalog.views.page_names import CHILDREN_NAME, INDEX_FILE, PAGE_NAME, children_file, page_file
from subagent_catalog.views.palette import OUTCOME_BADGE_CSS
from subagent_catalog.views.site_links import NO_PAGE_CSS
from subagent_catalog.views.transcript_view import MAX_CHILD_LINKS, transcript_page

SITE_NAMES = re.compile(f"{PAGE_NAME.pattern}|{CHILDREN_NAME.pattern}")
"""The names of the files a tree's directory holds (besides its ``manifest.json``)."""

PAGE_MARKER = b'<meta name="generator" content="subagent-catalog">'
"""What the head of every page holds (a page an interrupted run wrote is recognised by it)."""


@dataclass
class TreePages:
    """What ``write_tree_pages`` wrote: the top's page, every page, and the sessions it could not name."""

    top: Path
    pages: list[Path]
    skipped: list[str]
    """Sessions of the tree without a page: no session id, or a second log with an id already written."""
    removed: list[str] = field(default_factory=list)
    """Pages of the previous run into the directory that this one did not write again (removed)."""
    index: Path | None = None
    """``DIR/index.html``: the top's page again, the site's start page (not among ``pages``)."""


def preorder(rows: pl.DataFrame) -> tuple[pl.DataFrame, dict[int, tuple[int, int]]]:
    """``tree_timeline`` rows in depth-first order, and each session's (position, subtree size) in it.

    A session's subtree is then the slice at its position (children in the rows' order).

    Examples:
        >>> rows = pl.DataFrame({"list_order": [0, 3, 1, 2], "parent_list_order": [None, 0, 0, 1]})
        >>> ordered, places = preorder(rows)
        >>> ordered["list_order"].to_list(), places[1]
        ([0, 3, 1, 2], (2, 2))
    """
    orders = rows["list_order"].to_list()
    index = {order: at for at, order in enumerate(orders)}
    children: dict[int, list[int]] = {}
    tops = []
    for order, parent in zip(orders, rows["parent_list_order"].to_list(), strict=True):
        if parent is None or parent not in index:
            tops.append(order)
        else:
            children.setdefault(parent, []).append(order)
    sequence: list[int] = []
    stack = list(reversed(tops))
    while stack:
        node = stack.pop()
        sequence.append(node)
        stack.extend(reversed(children.get(node, [])))
    sizes: dict[int, int] = {}
    for node in reversed(sequence):
        sizes[node] = 1 + sum(sizes[child] for child in children.get(node, []))
    ordered = rows.select(pl.all().gather([index[node] for node in sequence]))
    return ordered, {node: (at, sizes[node]) for at, node in enumerate(sequence)}


def children_page(
    corpus: Corpus,
    session_id: str,
    children: list[str],
    part: int,
    *,
    link: dict[str, str],
    home: tuple[str, str] | None = None,
) -> str:
    """The ``part``-th page (from 2) of a session's children: a sortable table of ``MAX_CHILD_LINKS``, and the ways on.

    The first way is the site's start page (``home``: its ``href`` and name); a child without a page is
    marked "(no page)".

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> kids = [f"c{i}" for i in range(2_500)]
        >>> page = children_page(read_corpus("data/sample"), "hub", kids, 2, link={"c1000": "c1000.html"})
        >>> '<a href="c1000.html">' in page, "children 1,001–2,000 of 2,500" in page
        (True, True)
    """
    first = (part - 1) * MAX_CHILD_LINKS
    chunk = children[first : first + MAX_CHILD_LINKS]
    names = names_by_id(corpus, chunk)
    table = children_table(children_rows(corpus, chunk), names=names, href=link.get, first=first + 1, marked=True)
    back = link.get(session_id)
    ways = [f'<a href="{escape(home[0])}">← {escape(home[1])}</a>'] if home else []
    ways += [f'<a href="{escape(back)}">the session</a>'] if back else []
    if part > 2:
        ways.append(f'<a href="{children_file(session_id, part - 1)}">previous {MAX_CHILD_LINKS:,} children</a>')
    if first + MAX_CHILD_LINKS < len(children):
        ways.append(f'<a href="{children_file(session_id, part + 1)}">next {MAX_CHILD_LINKS:,} children</a>')
    title = f"children {first + 1:,}–{first + len(chunk):,} of {len(children):,}"
    label, name = names_by_id(corpus, [session_id]).get(session_id, (None, None))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"{PAGE_MARKER.decode()}\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{SORT_JS_HASH}'\">\n"
        f'<meta name="referrer" content="no-referrer">\n<title>{escape(title)} of {escape(clip(session_id, 200))}'
        f"</title>\n<style>{NAME_CSS}{CHILDREN_CSS}{OUTCOME_BADGE_CSS}{NO_PAGE_CSS}a{{color:#0969da}}</style>\n"
        "</head>\n"
        '<body style="font-family:system-ui,sans-serif;font-size:13px;max-width:1000px;margin:0 auto;padding:12px">\n'
        f"<h1 style='font-size:18px;overflow-wrap:anywhere'>{escape(title)} of "
        f"{name_html(session_id, label=label, name=name, href=back)}</h1>\n<nav>{' · '.join(ways)}</nav>\n"
        f"<p>Click a header to sort (this page's rows).</p>\n{table}\n<script>{SORT_JS}</script>\n</body>\n</html>\n"
    )


def many_children(corpus: Corpus, ids: set[str]) -> dict[str, list[str]]:
    """The children ids (``session_links``' rule) of the sessions among ``ids`` with more than a page's worth.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> many_children(read_corpus("data/sample"), {"auth-refactor"})  # three children: one page
        {}
    """
    many = (
        corpus.sessions.filter(pl.col("parent_session").is_in(list(ids)) & pl.col("session_id").is_not_null())
        .sort("list_order")
        .group_by("parent_session", maintain_order=True)
        .agg("session_id")
        .filter(pl.col("session_id").list.len() > MAX_CHILD_LINKS)
    )
    return dict(many.iter_rows())


def write_tree_pages(
    corpus: Corpus,
    session_id: str,
    directory: str | os.PathLike[str],
    *,
    path: str | None = None,
    protected: Sequence[str] = (),
) -> TreePages:
    """Write the transcript page of ``session_id`` and of every session below it into ``directory``.

    Args:
        corpus: a read corpus.
        session_id: the top of the tree (a root for a whole run).
        directory: where the pages go: a new or empty directory, or one an earlier run wrote
            (``DIR/manifest.json``); created when missing, never inside the corpus.
        path: which log, when several files carry the top's id.
        protected: more directories nothing may be written into (an archive's; the corpus root
            always is).

    Raises:
        SessionLookupError: no log has the id.
        OutputError: the directory is inside the corpus, is not empty and holds no manifest of
            ours, holds a file of a page's name that this command did not write, is being written
            by another run, or a page cannot be written.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> pages = write_tree_pages(read_corpus("data/sample"), "auth-refactor", tempfile.mkdtemp())
        >>> sorted(p.name for p in pages.pages)
        ['auth-refactor.html', 'check-sql.html', 'scan-tests.html', 'write-migration.html']
        >>> pages.index.name
        'index.html'
    """
    from subagent_catalog.analysis.find_session import find_session

    target = os.fspath(directory)
    protected = [corpus.root, *protected]
    check_site(target, protected=protected, names=SITE_NAMES)  # refused before the tree is walked
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
    link = {sid: page_file(sid) for sid in named}
    many = many_children(corpus, set(named))
    parts = {sid: range(2, 1 + -(-len(kids) // MAX_CHILD_LINKS)) for sid, kids in many.items()}
    planned = [
        INDEX_FILE,
        *link.values(),
        *(children_file(sid, part) for sid, more in parts.items() for part in more),
    ]
    ordered, places = preorder(rows)
    top_id = top["session_id"]
    depths = dict(rows.select("list_order", "depth").iter_rows())
    found = findings(corpus, sessions=list(named))  # each page lists its session's
    written: list[Path] = []
    with claim_site(target, protected=protected, names=SITE_NAMES, marker=PAGE_MARKER) as site:
        site.plan(planned)
        for sid, order in named.items():
            at, size = places[order]
            below = ordered.slice(at, size).with_columns(pl.col("depth") - depths[order])
            log = paths.get(order) if order != top["list_order"] else top["path"]
            more = children_file(sid, 2) if sid in parts else None
            home = (link[top_id], "the top of this tree") if sid != top_id and top_id in link else None
            page = transcript_page(
                corpus, sid, path=log, link=link.get, tree=below, more_children=more, found=found, home=home
            )
            written.append(Path(site.write(link[sid], page)))
            if sid == top["session_id"] and INDEX_FILE not in site.written:  # the start page: the top's again
                site.write(INDEX_FILE, page)  # not counted among the pages (``TreePages.index``)
            for part in parts.get(sid, ()):
                more_page = children_page(corpus, sid, many[sid], part, link=link, home=home)
                written.append(Path(site.write(children_file(sid, part), more_page)))
        removed = site.commit()
    return TreePages(
        top=Path(target) / page_file(top["session_id"] or ""),
        pages=written,
        skipped=skipped,
        removed=removed,
        index=Path(target) / INDEX_FILE if INDEX_FILE in site.written else None,
    )
