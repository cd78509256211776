"""The batch report: one self-contained, offline HTML file for a corpus.

``render_report`` returns the page and ``write_report`` writes it.
The page inlines its CSS and JavaScript and draws its charts as inline SVG
(drawn in Python from the counts by ``views.svg_charts``: no chart library), so it
fetches nothing when viewed. It holds a corpus summary, the problems, the
session forest as a lazily expanded tree (the tree is a JSON blob the inline
script expands on click, a page of children at a time), distribution charts,
the largest and most damaged trees, and the ``list_agents`` text of chosen
parents. When upstream's listing fails as a whole the page still renders the
summary and the problems under a banner naming the failure.

Everything that comes from the corpus (ids, labels, cwds, messages) is
escaped: Jinja autoescaping for markup, ``script_json`` for the JSON blob.
Long values are clipped for display, with a bounded full text in a tooltip.
``summary_text`` gives the ``summary`` command's terminal text.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import polars as pl

from subagent_catalog.analysis.findings import FACTS_ONLY, findings
from subagent_catalog.analysis.forest import DEFAULT_PARENT_CAP, forest_of_rows, parents_of_forest
from subagent_catalog.analysis.run_summary import run_summary
from subagent_catalog.analysis.summary import human_bytes, minute, summary_of_rows
from subagent_catalog.analysis.tallies import problem_tables
from subagent_catalog.analysis.text import LABEL_BOUND, clip
from subagent_catalog.analysis.window import Window
from subagent_catalog.catalog.listing import list_agents_text
from subagent_catalog.catalog.model import Semantics
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.source import Source
from subagent_catalog.frames.units import exact_count
from subagent_catalog.outputs import check_output, open_output
from subagent_catalog.read.jsvalue import js_text
from subagent_catalog.views import palette
from subagent_catalog.views.columns import UNREAD_BY_REPORT
from subagent_catalog.views.memory import between_stages
from subagent_catalog.views.names import NAME_CSS, name_html, names_by_id
from subagent_catalog.views.report_charts import report_charts
from subagent_catalog.views.report_data import diagnostic_rows, node_index, node_places, relative_path
from subagent_catalog.views.report_findings import findings_section
from subagent_catalog.views.report_runs import runs_section
from subagent_catalog.views.site_links import SiteLinks
from subagent_catalog.views.table_columns import FIT_CSS, TABLES, columns, fit_caption
from subagent_catalog.views.timeline_view import TIMELINE_CSS

__all__ = ["default_title", "render_report", "report_stream", "script_json", "script_json_chunks", "write_report"]


LISTING_LINE_BOUND = 2000
LISTING_LINES_BOUND = 500
PROBLEM_ROWS = 300
TOP_TREES = 10


@functools.cache
def _bytecode_cache() -> Any:
    """Compiled templates between processes: Jinja's per-user directory under the temporary directory."""
    import jinja2

    return jinja2.FileSystemBytecodeCache()


_SCRIPT_ESCAPES = str.maketrans({c: f"\\u{ord(c):04x}" for c in "&<>\u2028\u2029"})


def _script_safe(text: str) -> str:
    """JSON text with ``<``, ``>``, ``&``, the line separators and lone surrogates escaped (char by char)."""
    return js_text(text).translate(_SCRIPT_ESCAPES)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def script_json(value: Any) -> str:
    """JSON text that is safe inside an HTML ``<script>`` element.

    ``<``, ``>`` and ``&`` (and the JavaScript line separators) are written
    as ``\\uXXXX`` escapes, so no value can close the element or open a
    comment; ``JSON.parse`` reads the same value back.

    Examples:
        >>> script_json({"label": "</script><b>&"})
        '{"label":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e\\\\u0026"}'
    """
    return _script_safe(_dumps(value))


JSON_CHUNK_ITEMS = 2000
"""Items of a long list ``script_json_chunks`` serializes at a time."""


def _json_pieces(value: Any, items: int) -> Iterator[str]:
    if isinstance(value, dict) and value and all(isinstance(key, str) for key in value):
        for n, (key, item) in enumerate(value.items()):
            yield ("{" if n == 0 else ",") + _dumps(key) + ":"
            yield from _json_pieces(item, items)
        yield "}"
    elif isinstance(value, list) and len(value) > items:
        for start in range(0, len(value), items):
            yield ("[" if start == 0 else ",") + _dumps(value[start : start + items])[1:-1]
        yield "]"
    else:
        yield _dumps(value)


def script_json_chunks(value: Any, *, items: int = JSON_CHUNK_ITEMS) -> Iterator[str]:
    """``script_json(value)`` in pieces: long lists ``items`` at a time, never one whole text.

    The pieces joined are exactly ``script_json(value)`` (the escapes are
    made character by character, and no piece splits a string); the report
    writes the tree of a large corpus (hundreds of thousands of nodes) this
    way. Dicts with string keys and lists longer than ``items`` are split;
    any other value is one piece.

    Examples:
        >>> value = {"nodes": [1, 2, 3], "roots": [0], "label": "</script>"}
        >>> list(script_json_chunks(value, items=2))[:6]
        ['{"nodes":', '[1,2', ',3', ']', ',"roots":', '[0]']
        >>> "".join(script_json_chunks(value, items=2)) == script_json(value)
        True
    """
    for piece in _json_pieces(value, max(1, items)):
        yield _script_safe(piece)


def default_title(root: str) -> str:
    """The page title when none is given: from the corpus root's directory name.

    Examples:
        >>> default_title("/archive/2026-11/")
        'subagent-catalog report: 2026-11'
        >>> default_title("/")
        'subagent-catalog report: /'
    """
    return f"subagent-catalog report: {os.path.basename(os.path.normpath(root)) or root}"


# --------------------------------------------------------------------------- page


def report_stream(
    corpus: Source,
    *,
    parents: Sequence[str] | None = None,
    semantics: Semantics = "projection",
    title: str | None = None,
    window: Window | None = None,
    link: SiteLinks | None = None,
) -> Iterator[str]:
    """The report page for a corpus as pieces of text (about a MiB each), rendered as they are read.

    Everything the page shows is computed before this returns (an error is
    raised here, before anything is written); the page is then rendered
    while the pieces are consumed, its tree JSON a few thousand nodes at a
    time, so the whole page (69 MiB for 500,000 sessions) never exists as
    one string. The pieces joined are ``render_report``'s page.

    Args:
        corpus: a read corpus or an opened archive (``store.source.Source``).
        parents: the sessions whose ``list_agents`` text to show (default:
            up to ``DEFAULT_PARENT_CAP`` root sessions, those with
            subagents first).
        semantics: the listing semantics for the tree, charts and listings.
        title: the page title (default: from the root's name).
        window: show only the sessions created in this window, their
            problems and listing rows (the listing is computed over the whole
            corpus; the chosen parents' list_agents texts are upstream's
            whole text).
        link: a linked report (``report --site``, ``views.report_site``):
            each session a row names links to its page (granted here, at
            most ``link.cap``), or says why it has none.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> pieces = list(report_stream(read_corpus(tempfile.mkdtemp())))
        >>> pieces[0].startswith("<!doctype html>"), pieces[-1].rstrip().endswith("</html>")
        (True, True)
    """
    import jinja2
    from markupsafe import Markup

    from subagent_catalog.version import __version__

    source, listing, window = corpus, corpus, window or Window()  # an archive's listing: out of core
    size = source.session_count()
    rows: pl.DataFrame | None = None
    if listing.listing_error is None:
        rows = window.frame(catalog(listing, semantics=semantics)).select(REPORT_ROW_COLUMNS)
    between_stages(size)
    corpus = window.corpus(corpus.frames(without=UNREAD_BY_REPORT))  # a corpus, or an archive's frames
    between_stages(size)  # what reading them decoded
    if corpus.events_available():
        found = findings_section(corpus, findings(corpus), link=link)
    else:  # an archive without events whose root is gone: only the detectors that read no log
        found = findings_section(corpus, findings(corpus, detectors=FACTS_ONLY), link=link)
        found["note"] = (
            "Only " + ", ".join(FACTS_ONLY) + " ran: the archive holds no events table and its corpus root is "
            "not here, so the detectors that read logs could not (re-export with --events)."
        )
    # The stages that need the most memory run one after the other, each dropping what it made
    # before the next: the run summary (every session's tree) and the charts before the session
    # forest (a dict per node) is built; the run tables take their tree nodes from ``node_index``.
    nodes = node_index(corpus) if rows is not None else None  # before the run summary: not on top of it
    runs = runs_section(corpus, run_summary(corpus), nodes, link=link)
    del nodes
    runs["timelines"] = [Markup(html) for html in runs["timelines"]]
    errors = runs.pop("error_index")  # what the tree's search matches by error code and message
    between_stages(size)
    charts = report_charts(corpus, rows)
    facts = summary_of_rows(corpus, semantics, rows)
    names = _shown_names(corpus, rows) if rows is not None else {}
    # From here on only the tree, its diagnostics and the problems are read: the other columns are let go.
    corpus = Corpus(  # the frames the tree, its diagnostics and the problem tables read
        root=corpus.root,
        compression=corpus.compression,
        sessions=corpus.sessions.select(TREE_SESSION_COLUMNS),
        descriptors=corpus.descriptors.clear(),
        problems=corpus.problems,
        listing_error=corpus.listing_error,
        listing_error_path=corpus.listing_error_path,
    )
    rows = None if rows is None else rows.select(TREE_ROW_COLUMNS)
    source.release_frames()
    between_stages(size)
    forest = forest_of_rows(corpus, rows) if rows is not None else None
    for sid, name in names.items():  # each root and fork node gets its run's name, as subagents their label
        node = forest.nodes[at] if forest is not None and (at := forest.index.get(sid)) is not None else None
        if node is not None and node["k"] == "s" and "l" not in node:
            node["l"] = clip(name, LABEL_BOUND)
    between_stages(size)  # what parsing every header left in the C heap
    diagnostics = diagnostic_rows(corpus, rows, forest, names) if rows is not None and forest else []
    del names
    listed = rows is not None
    del rows  # every use of the listing rows is behind
    between_stages(size)
    places = node_places(corpus, forest) if forest else None
    chosen = list(parents) if parents is not None else (parents_of_forest(forest, DEFAULT_PARENT_CAP) if forest else [])
    listings: list[dict[str, Any]] = []
    for parent in chosen if listed else []:
        entry: dict[str, Any] = {"parent": parent}
        for scope in ("children", "descendants"):
            try:
                lines = list_agents_text(listing, parent, scope=scope, semantics=semantics).split("\n")
                text = "\n".join(clip(line, LISTING_LINE_BOUND) for line in lines[:LISTING_LINES_BOUND])
                entry[scope] = {"text": text, "hidden": max(0, len(lines) - LISTING_LINES_BOUND), "lines": len(lines)}
            except CatalogError as error:
                entry[scope] = {"error": str(error)}
        listings.append(entry)
    roots_total = forest.root_sessions if forest else 0
    largest, damaged = forest.top_trees(TOP_TREES) if forest else ([], [])
    for entry in (*largest, *damaged):
        entry["href"] = link.href(entry["id"]) if link is not None and not entry["group"] else None
        entry["name_html"] = Markup(name_html(entry["id"], label=entry["label"], href=entry["href"]))
    problem_summary, problem_detail = problem_tables(corpus.problems)
    problem_rows = problem_detail.head(PROBLEM_ROWS).to_dicts()
    for row in problem_rows:
        row["relpath"] = relative_path(row["path"], corpus.root)
    templates = files("subagent_catalog.views").joinpath("templates")
    css, js = (templates.joinpath(name).read_text("utf-8") for name in ("report.css", "report.js"))
    script_hash = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("subagent_catalog.views", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # the compiled template is kept between runs (Jinja's own per-user cache in the temporary
        # directory, checked for ownership): compiling the report's template costs more than rendering it
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(
        clip=clip, human_bytes=human_bytes, minute=minute, fit_caption=fit_caption, exact_count=exact_count
    )
    forest_data: dict[str, Any] = {"nodes": [], "roots": []}
    if forest:
        forest_data = {
            "nodes": forest.nodes,
            "roots": forest.roots,
            "places": places,
            "diagnostics": diagnostics,
            "errors": errors,
        }
    template = env.get_template("report.html.j2")
    site_note = None  # what a linked report says of its pages: how many, and how many sessions it names have none
    if link is not None:
        site_note = f"A name links to the session's page ({len(link.granted):,} pages"
        if link.refused:
            site_note += f"; {link.refused:,} more sessions named here have none: the site holds at most {link.cap:,}"
        site_note += "). A name marked (no page) says why on hover."
    context = dict(
        title=title or default_title(corpus.root),
        facts=facts,
        version=__version__,
        generated=datetime.now(tz=UTC).strftime("%Y-%m-%d %H:%M UTC"),
        semantics=semantics,
        window=window.describe() if window.bounded else None,
        css=Markup(css + TIMELINE_CSS + palette.outcome_css(".badge.o-{outcome}") + FIT_CSS + NAME_CSS),
        table_cols={name: columns(name) for name in TABLES},
        runs=runs,
        findings=found,
        js=Markup(js),
        script_hash=script_hash,
        forest_json=(Markup(piece) for piece in script_json_chunks(forest_data)),
        node_count=len(forest.nodes) if forest else 0,
        diagnostic_total=len(diagnostics),
        roots_total=roots_total,
        charts=charts,
        largest=largest,
        damaged=damaged,
        listings=listings,
        parents_default=parents is None,
        site_note=site_note,
        parent_cap=DEFAULT_PARENT_CAP,
        problem_summary=problem_summary.to_dicts(),
        problem_rows=problem_rows,
        problem_total=corpus.problems.height,
        corpus_problems=corpus.problems.filter(pl.col("scope") == "corpus").head(20).to_dicts(),
    )
    del forest, places, diagnostics, errors, forest_data  # the tree lives on in the JSON generator only
    return _buffered(template.generate(**context))


TREE_SESSION_COLUMNS = ("list_order", "session_id", "header_json", "verdict", "listed", "path", "project_dir")
"""The ``sessions`` columns the report reads once its runs, charts and counts are made (tree, places)."""

TREE_ROW_COLUMNS = ("kind", "id", "parent", "mode", "label", "reason", "cause", "cause_detail", "path", "project_dir")
"""The catalog row columns the tree and the diagnostics table read."""

REPORT_ROW_COLUMNS = (*TREE_ROW_COLUMNS, "provider", "created_at_ms")
"""The catalog row columns the report reads (the charts read the two more)."""


def _shown_names(corpus: Corpus, rows: pl.DataFrame) -> dict[str, str]:
    """Names (label, else title or first prompt) of the tree's roots and forks and of the diagnostic rows' sessions."""
    roots = corpus.sessions.filter(pl.col("listed") & pl.col("origin").ne_missing("subagent"))["session_id"]
    diagnostic = rows.filter(pl.col("kind") == "diagnostic")
    named = names_by_id(corpus, [*roots, *diagnostic["id"], *diagnostic["parent"]])
    return {sid: name for sid, (label, title) in named.items() if (name := label or title) is not None}


def _buffered(pieces: Iterable[str], size: int = 1 << 20) -> Iterator[str]:
    """Join the template's many small pieces into pieces of about ``size`` characters."""
    held: list[str] = []
    length = 0
    for piece in pieces:
        held.append(piece)
        length += len(piece)
        if length >= size:
            yield "".join(held)
            held, length = [], 0
    if held:
        yield "".join(held)


def render_report(
    corpus: Source,
    *,
    parents: Sequence[str] | None = None,
    semantics: Semantics = "projection",
    title: str | None = None,
    window: Window | None = None,
) -> str:
    """The report page for a corpus, as one self-contained HTML string (``report_stream``'s pieces joined).

    Args:
        corpus: a read corpus or an opened archive (``store.source.Source``).
        parents: the sessions whose ``list_agents`` text to show (default:
            up to ``DEFAULT_PARENT_CAP`` root sessions, those with
            subagents first).
        semantics: the listing semantics for the tree, charts and listings.
        title: the page title (default: from the root's name).
        window: show only the sessions created in this window, their
            problems and listing rows (the listing is computed over the whole
            corpus; the chosen parents' list_agents texts are upstream's
            whole text).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> page = render_report(read_corpus(tempfile.mkdtemp()))
        >>> page.startswith("<!doctype html>"), "<script src" in page
        (True, False)
    """
    return "".join(report_stream(corpus, parents=parents, semantics=semantics, title=title, window=window))


def write_report(
    corpus: Corpus,
    path: str | os.PathLike[str],
    *,
    parents: Sequence[str] | None = None,
    semantics: Semantics = "projection",
    title: str | None = None,
) -> Path:
    """Render the report and write it to ``path`` (UTF-8), atomically.

    The file goes through ``subagent_catalog.outputs.write_output`` with the
    corpus root protected: a path inside the corpus (through links and bind
    mounts too), a symbolic link or a hard-linked file is refused before the
    page is rendered, and the target is replaced only by a complete page.

    Raises:
        OutputError: ``path`` is refused (inside the corpus root, a link, a
            directory) or cannot be written.

    Examples:
        >>> import tempfile, os
        >>> from subagent_catalog.corpus import read_corpus
        >>> out = write_report(read_corpus(tempfile.mkdtemp()), os.path.join(tempfile.mkdtemp(), "r.html"))
        >>> out.read_text(encoding="utf-8").count("<html")
        1
    """
    target = Path(path)
    check_output(target, protected=[corpus.root])
    pieces = report_stream(corpus, parents=parents, semantics=semantics, title=title)
    with open_output(target, protected=[corpus.root], errors="replace") as handle:
        for piece in pieces:
            handle.write(piece)
    return target
