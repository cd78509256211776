"""The batch report: one self-contained, offline HTML file for a corpus.

``render_report`` returns the page and ``write_report`` writes it.
The page inlines its CSS and JavaScript and draws its charts as static SVG
(Altair specs rendered by vl-convert, embedded as ``data:`` images), so it
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
import hashlib
import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from subagent_catalog.analysis.forest import DEFAULT_PARENT_CAP, Forest, forest_of_rows, parents_of_forest
from subagent_catalog.analysis.run_summary import run_summary
from subagent_catalog.analysis.summary import SEVERITY_ORDER, human_bytes, minute, summary_of_rows
from subagent_catalog.analysis.text import clip
from subagent_catalog.analysis.window import Window
from subagent_catalog.catalog.listing import list_agents_text
from subagent_catalog.catalog.model import Semantics
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.outputs import check_output, write_output
from subagent_catalog.read.jsvalue import js_text
from subagent_catalog.store.source import Source, listing_source, source_frames
from subagent_catalog.views.columns import UNREAD_BY_REPORT
from subagent_catalog.views.report_charts import report_charts
from subagent_catalog.views.report_data import diagnostic_rows, node_places, relative_path
from subagent_catalog.views.report_runs import runs_section
from subagent_catalog.views.timeline_view import TIMELINE_CSS

__all__ = ["default_title", "render_report", "script_json", "write_report"]


LISTING_LINE_BOUND = 2000
LISTING_LINES_BOUND = 500
PROBLEM_ROWS = 300
TOP_TREES = 10


def script_json(value: Any) -> str:
    """JSON text that is safe inside an HTML ``<script>`` element.

    ``<``, ``>`` and ``&`` (and the JavaScript line separators) are written
    as ``\\uXXXX`` escapes, so no value can close the element or open a
    comment; ``JSON.parse`` reads the same value back.

    Examples:
        >>> script_json({"label": "</script><b>&"})
        '{"label":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e\\\\u0026"}'
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = js_text(text)
    for char, escape in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text


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


def _top_trees(forest: Forest) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    entries = []
    for index in forest.roots:
        node = forest.nodes[index]
        entries.append(
            {
                "node": index,
                "id": node["i"],
                "group": node["k"] == "g",
                "sessions": node.get("z", 0) + (node["k"] != "g"),
                "agents": node.get("a", 0),
                "damaged": node.get("e", 0),
            }
        )
    largest = sorted(entries, key=lambda e: (-e["sessions"], -e["agents"]))[:TOP_TREES]
    damaged = sorted((e for e in entries if e["damaged"]), key=lambda e: (-e["damaged"], -e["agents"]))[:TOP_TREES]
    return largest, damaged


def _bounded_listing(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    hidden = max(0, len(lines) - LISTING_LINES_BOUND)
    shown = [clip(line, LISTING_LINE_BOUND) for line in lines[:LISTING_LINES_BOUND]]
    return "\n".join(shown), hidden


def _listings(corpus: Source, parents: list[str], semantics: Semantics) -> list[dict[str, Any]]:
    out = []
    for parent in parents:
        entry: dict[str, Any] = {"parent": parent}
        for scope in ("children", "descendants"):
            try:
                text, hidden = _bounded_listing(list_agents_text(corpus, parent, scope=scope, semantics=semantics))
                entry[scope] = {"text": text, "hidden": hidden, "lines": text.count("\n") + 1 + hidden}
            except CatalogError as error:
                entry[scope] = {"error": str(error)}
        out.append(entry)
    return out


def _problem_tables(corpus: Corpus) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    problems = corpus.problems
    rank = {name: i for i, name in enumerate(SEVERITY_ORDER)}
    summary = problems.group_by("severity", "kind", "scope", "fails_listing").len().rename({"len": "count"}).to_dicts()
    summary.sort(key=lambda r: (rank.get(r["severity"], 9), not r["fails_listing"], -r["count"], r["kind"]))
    detail = problems.with_row_index("order").to_dicts()
    detail.sort(key=lambda r: (rank.get(r["severity"], 9), not r["fails_listing"], r["order"]))
    for row in detail[:PROBLEM_ROWS]:
        row["relpath"] = relative_path(row["path"], corpus.root)
    return summary, detail[:PROBLEM_ROWS]


def _assets() -> tuple[str, str]:
    from importlib.resources import files

    base = files("subagent_catalog.views").joinpath("templates")
    return base.joinpath("report.css").read_text("utf-8"), base.joinpath("report.js").read_text("utf-8")


def render_report(
    corpus: Source,
    *,
    parents: Sequence[str] | None = None,
    semantics: Semantics = "projection",
    title: str | None = None,
    window: Window | None = None,
) -> str:
    """The report page for a corpus, as one self-contained HTML string.

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
    import jinja2
    from markupsafe import Markup

    from subagent_catalog.version import __version__

    listing, window = listing_source(corpus), window or Window()  # an archive's listing is read out of core
    rows: pl.DataFrame | None = None
    if listing.listing_error is None:
        rows = window.frame(catalog(listing, semantics=semantics))
    corpus = window.corpus(source_frames(corpus, without=UNREAD_BY_REPORT))  # a corpus, or an archive's frames
    forest = forest_of_rows(corpus, rows) if rows is not None else None
    facts = summary_of_rows(corpus, semantics, rows)
    roots_total = len([i for i in forest.roots if forest.nodes[i]["k"] != "g"]) if forest else 0
    chosen = list(parents) if parents is not None else (parents_of_forest(forest, DEFAULT_PARENT_CAP) if forest else [])
    listings = _listings(listing, chosen, semantics) if rows is not None else []
    largest, damaged = _top_trees(forest) if forest else ([], [])
    problem_summary, problem_rows = _problem_tables(corpus)
    css, js = _assets()
    script_hash = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("subagent_catalog.views", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["clip"] = clip
    env.filters["human_bytes"] = human_bytes
    env.filters["minute"] = minute
    diagnostics = diagnostic_rows(corpus, rows, forest) if rows is not None and forest else []
    forest_data: dict[str, Any] = {"nodes": [], "roots": []}
    if forest:
        forest_data = {
            "nodes": forest.nodes,
            "roots": forest.roots,
            "places": node_places(corpus, forest),
            "diagnostics": diagnostics,
        }
    runs = runs_section(corpus, run_summary(corpus), forest)
    runs["timelines"] = [Markup(html) for html in runs["timelines"]]
    template = env.get_template("report.html.j2")
    return template.render(
        title=title or default_title(corpus.root),
        facts=facts,
        version=__version__,
        generated=datetime.now(tz=UTC).strftime("%Y-%m-%d %H:%M UTC"),
        semantics=semantics,
        window=window.describe() if window.bounded else None,
        css=Markup(css + TIMELINE_CSS),
        runs=runs,
        js=Markup(js),
        script_hash=script_hash,
        forest_json=Markup(script_json(forest_data)),
        node_count=len(forest.nodes) if forest else 0,
        diagnostic_total=len(diagnostics),
        roots_total=roots_total,
        charts=report_charts(corpus, rows),
        largest=largest,
        damaged=damaged,
        listings=listings,
        parents_default=parents is None,
        parent_cap=DEFAULT_PARENT_CAP,
        problem_summary=problem_summary,
        problem_rows=problem_rows,
        problem_total=corpus.problems.height,
        corpus_problems=corpus.problems.filter(pl.col("scope") == "corpus").head(20).to_dicts(),
    )


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
    page = render_report(corpus, parents=parents, semantics=semantics, title=title)
    write_output(target, page, protected=[corpus.root], errors="replace")
    return target
