"""The report as a linked site: ``DIR/index.html`` (the report) and a transcript page per session it names.

``write_report_site`` renders the report with a ``views.site_links.SiteLinks``: every session a row
names (the failed, slowest and costliest runs, their parents, the slowest and costliest trees, the
timelines, the largest and most damaged trees) links to its page, for at most ``MAX_SITE_PAGES``
sessions in the order the report names them (with their ancestors' pages); a name without a page says
why, and the report says how many have none. Each page is ``transcript_page`` (a link back to the
report and up to its parent, its children in a sortable table, "(no page)" beside those without);
a session with more than ``MAX_CHILD_LINKS`` children gets further pages of them. ``report -o FILE``
(one self-contained file) is unchanged.

The directory is an output site (``views.output_site``, as ``show --tree`` writes): ``DIR/manifest.json``
names what this command wrote; a non-empty directory without it is refused, and no file it did not
write is ever replaced or removed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from subagent_catalog.analysis.findings import findings
from subagent_catalog.analysis.window import Window
from subagent_catalog.catalog.model import Semantics
from subagent_catalog.frames.source import Source
from subagent_catalog.views.output_site import check_site, claim_site
from subagent_catalog.views.page_names import INDEX_FILE, children_file
from subagent_catalog.views.report import report_stream
from subagent_catalog.views.site_links import MAX_SITE_PAGES, SiteLinks
from subagent_catalog.views.transcript_tree import SITE_NAMES, children_page, many_children
from subagent_catalog.views.transcript_view import MAX_CHILD_LINKS, transcript_page

HOME = (INDEX_FILE, "the report")
"""Where every page of a report site links back to."""

SITE_MARKER = b'<meta name="generator" content="subagent-catalog'
"""What the head of the report and of every page holds (a file an interrupted run wrote is recognised by it)."""


@dataclass
class ReportSite:
    """What ``write_report_site`` wrote: the report, the session pages, and the sessions named without one."""

    index: Path
    pages: list[Path]
    refused: int
    """Sessions the report names that have a log but no page (past ``MAX_SITE_PAGES``)."""
    removed: list[str] = field(default_factory=list)
    """Files of the previous run into the directory that this one did not write again (removed)."""


def write_report_site(
    source: Source,
    directory: str | os.PathLike[str],
    *,
    parents: Sequence[str] | None = None,
    semantics: Semantics = "projection",
    title: str | None = None,
    window: Window | None = None,
    protected: Sequence[str] = (),
    max_pages: int = MAX_SITE_PAGES,
) -> ReportSite:
    """Write the report as ``directory/index.html`` and a linked transcript page per session it names.

    Args:
        source: a read corpus or an opened archive.
        directory: a new or empty directory, or one an earlier run wrote (``DIR/manifest.json``).
        parents: the sessions whose ``list_agents`` text the report shows (``report_stream``).
        semantics: the listing semantics.
        title: the report's title.
        window: show only the sessions created in this window (``report_stream``).
        protected: more directories nothing may be written into (the corpus root always is).
        max_pages: session pages at most (the sessions the report names first).

    Raises:
        OutputError: the directory is refused (inside the corpus, non-empty without a manifest of
            ours, a file of a page's name this command did not write, another run holds it).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> site = write_report_site(read_corpus("data/sample"), tempfile.mkdtemp())
        >>> site.index.name, "auth-refactor.html" in {page.name for page in site.pages}, site.refused
        ('index.html', True, 0)
    """
    corpus = source.to_corpus()
    target = os.fspath(directory)
    guarded = [corpus.root, *protected]
    check_site(target, protected=guarded, names=SITE_NAMES)  # refused before the report is made
    first = corpus.sessions.sort("list_order").filter(pl.col("session_id").is_not_null())
    first = first.unique("session_id", keep="first", maintain_order=True)
    paths = dict(first.select("session_id", "path").iter_rows())
    links = SiteLinks.of(paths, cap=max_pages, parents=dict(first.select("session_id", "parent_session").iter_rows()))
    report = "".join(
        report_stream(source, parents=parents, semantics=semantics, title=title, window=window, link=links)
    )
    corpus = source.to_corpus()  # again: the report may have let an archive's frames go
    # each page lists its session's findings (an archive without its events cannot show pages anyway)
    found = findings(corpus, sessions=list(links.granted)) if corpus.events_available() else None
    many = many_children(corpus, set(links.granted))
    parts = {sid: range(2, 1 + -(-len(kids) // MAX_CHILD_LINKS)) for sid, kids in many.items()}
    planned = [
        INDEX_FILE,
        *links.granted.values(),
        *(children_file(sid, part) for sid, more in parts.items() for part in more),
    ]
    written: list[Path] = []
    with claim_site(target, protected=guarded, names=SITE_NAMES, marker=SITE_MARKER) as site:
        site.plan(planned)
        index = Path(site.write(INDEX_FILE, report))
        del report
        for sid, name in links.granted.items():
            more = children_file(sid, 2) if sid in parts else None
            page = transcript_page(
                source, sid, path=paths[sid], link=links.page, more_children=more, found=found, home=HOME
            )
            written.append(Path(site.write(name, page)))
            for part in parts.get(sid, ()):
                more_page = children_page(corpus, sid, many[sid], part, link=links.granted, home=HOME)
                written.append(Path(site.write(children_file(sid, part), more_page)))
        removed = site.commit()
    return ReportSite(index=index, pages=written, refused=links.refused, removed=removed)
