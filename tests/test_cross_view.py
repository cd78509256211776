"""One vocabulary (issue 57): every view states the same failed runs, error groups, cost, names and colours.

Each view's own output is parsed (summary text, JSON and Markdown, the report's HTML, compare's
JSON against itself, the browser's error-group filter, the names shown beside ids, and the colours
of the report, a ``show`` page, compare's page and the browser) and must agree with the others. The
corpora: the sample and a generated 400-session corpus; ``make test-cross-view`` adds a generated 5,000-session one
(``SUBAGENT_CATALOG_CROSS_VIEW_5K=1``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from subagent_catalog.analysis.run_names import session_name, short_id
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.units import human_cost
from subagent_catalog.synth.generate import generate
from subagent_catalog.views import palette
from subagent_catalog.views.widgets.browser import CatalogBrowser
from subagent_catalog.views.widgets.error_filter import error_group_choices

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"
CORPORA = ["sample", "synth-400"] + (["synth-5000"] if os.environ.get("SUBAGENT_CATALOG_CROSS_VIEW_5K") else [])


def _cli(*args: object) -> str:
    ran = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert ran.exit_code == 0, ran.stderr
    return ran.stdout


@pytest.fixture(scope="module", params=CORPORA)
def views(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every view's output over one corpus (a private copy: the views may keep caches beside it)."""
    work = tmp_path_factory.mktemp(request.param)
    root = work / "corpus"
    if request.param == "sample":
        shutil.copytree(SAMPLE, root)
    else:
        generate(root, sessions=int(request.param.split("-")[1]), seed=5, jobs=1)
    report = work / "report.html"
    _cli("report", root, "-o", report, "-q")
    compare = json.loads(_cli("compare", root, root, "--format", "json"))
    show_html = work / "page.html"
    corpus = read_corpus(root)
    first_failed = corpus.sessions.filter(corpus.sessions["outcome"] == "error")["session_id"].drop_nulls()[0]
    _cli("show", root, first_failed, "-o", show_html, "-q")
    compare_html = work / "compare.html"
    _cli("compare", root, root, "--html", compare_html, "-q")
    return {
        "summary_json": json.loads(_cli("summary", root, "--format", "json"))["runs"],
        "summary_text": _cli("summary", root),
        "summary_md": _cli("summary", root, "--format", "md"),
        "report": report.read_text(encoding="utf-8"),
        "compare": compare,
        "show": show_html.read_text(encoding="utf-8"),
        "compare_html": compare_html.read_text(encoding="utf-8"),
        "corpus": corpus,
    }


def _text(html: str) -> str:
    html = re.sub(r"<wbr\s*/?>|&shy;", "", html)  # a break opportunity is no character
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _section(html: str, name: str) -> str:
    start = html.index(f'<section id="{name}"')
    return html[start : html.index("</section>", start)]


def _same_message(shown: str, message: str) -> bool:
    """A view may clip a group's message: what it shows is the message or its start with an ellipsis."""
    return shown == message or (shown.endswith("…") and message.startswith(shown[:-1]))


def test_every_view_states_the_same_failed_run_count(views: dict[str, Any]) -> None:
    failed = views["summary_json"]["failed"]
    assert failed == sum(n for outcome, n in views["summary_json"]["outcomes"].items() if outcome in FAILED_OUTCOMES)
    assert re.search(rf"^failed\s+{failed:,} runs?$", views["summary_text"], re.M)
    assert f"### Failed runs ({failed:,})" in views["summary_md"]
    assert f"of {failed:,} failed run" in _text(_section(views["report"], "errors"))
    assert f"{failed:,} failed run" in _text(_section(views["report"], "runs"))
    compared = {row["outcome"]: row["a"] for row in views["compare"]["outcomes"]}
    assert sum(n for outcome, n in compared.items() if outcome in FAILED_OUTCOMES) == failed
    assert sum(row["a"] for row in views["compare"]["errors"]) == failed


def test_every_view_states_the_same_error_groups_with_the_same_counts(views: dict[str, Any]) -> None:
    groups = [(g["code"], g["message"], g["runs"]) for g in views["summary_json"]["error_groups"]]
    assert sum(runs for _, _, runs in groups) == views["summary_json"]["failed"]
    compared = sorted((e["code"] or "", e["message"] or "", e["a"]) for e in views["compare"]["errors"] if e["a"])
    assert compared == sorted((code or "", message or "", runs) for code, message, runs in groups)
    table = _section(views["report"], "errors")
    rows = re.findall(r"<tr><td class=\"p1 c-code\".*?</tr>", table, re.S)
    shown = []
    for row in rows:
        cells = [_text(cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        shown.append((None if cells[0] == "–" else cells[0], cells[1], int(cells[2].replace(",", ""))))
    assert len(shown) == len(groups)
    for (code, message, runs), (shown_code, shown_message, shown_runs) in zip(groups, shown, strict=True):
        assert (shown_code, shown_runs) == (code, runs) and _same_message(shown_message, message)
    choices = error_group_choices(views["corpus"].sessions)
    labels = [f"{code} · {message}" if code else message for code, message, _ in groups]
    assert sorted(choices) == sorted(labels)


def test_every_view_states_the_same_cost_lower_bound_and_unknown_count(views: dict[str, Any]) -> None:
    totals = views["summary_json"]["totals"]
    known, unknown = totals["cost_usd_known"], totals["cost_unknown"]
    if unknown:
        assert (
            f"cost ≥ {human_cost(known)} ({unknown:,} session{'s' if unknown != 1 else ''} of unknown cost"
            in (views["summary_md"])
        )
    runs = _text(_section(views["report"], "runs"))
    if unknown:
        assert f"≥ {human_cost(known)} cost (a lower bound)" in runs
        assert f"{unknown:,} session{'s' if unknown != 1 else ''} of unknown cost" in runs
    else:
        assert f"{human_cost(known)} cost" in runs
    cost = next(m for m in views["compare"]["metrics"] if m["level"] == "run" and m["metric"] == "cost")
    assert (cost["a_unknown"], cost["a_lower_bound"]) == (unknown, unknown > 0)


def _badge_colours(html: str) -> dict[str, str]:
    found = dict(re.findall(r"\.badge\.o-([a-z-]+)\{background:(#[0-9A-Fa-f]{6})", html))
    assert found, "the page colours no outcome"
    return found


def test_every_page_colours_each_outcome_alike(views: dict[str, Any]) -> None:
    expected = {name: colour for name, colour in palette.OUTCOME_COLOURS.items()}
    for page in ("report", "show", "compare_html"):
        assert _badge_colours(views[page]) == expected, page
    browser_css = CatalogBrowser(views["corpus"])._css
    assert dict(re.findall(r"\.sc-o-([a-z-]+)\{background:(#[0-9A-Fa-f]{6})", browser_css)) == expected
    for page in ("report", "show", "compare_html"):
        used = set(re.findall(r'class="badge o-([a-z-]+)"', views[page]))
        assert used <= set(expected), page


def _expected_names(corpus: Any) -> dict[str, str]:
    """Each session's one name: its descriptor label, else its title or first human prompt."""
    sessions = corpus.sessions.select("session_id", "identity_label", "name").drop_nulls("session_id")
    names = {sid: session_name(label, name, limit=10_000) for sid, label, name in sessions.iter_rows()}
    return {sid: name for sid, name in names.items() if name is not None and name != sid}


def _html_names(html: str) -> tuple[dict[str, set[str]], set[str]]:
    """The names a page shows by id (``name_html``: the whole name in the title), and the ids it shows bare."""
    named: dict[str, set[str]] = {}
    pairs = re.findall(
        r'<bdi class="nm-t[^"]*" title="([^"]*)">.*?</bdi>\s*<code class="nm-id[^"]*" title="([^"]*)"', html
    )
    for name, sid in pairs:
        named.setdefault(unescape(sid), set()).add(unescape(name))
    bare = {unescape(sid) for sid in re.findall(r'<code class="nm-id nm-only[^"]*" title="([^"]*)"', html)}
    return named, bare


def test_every_view_names_a_session_by_the_same_name(views: dict[str, Any]) -> None:
    expected = _expected_names(views["corpus"])
    for page in ("report", "show", "compare_html"):
        named, bare = _html_names(views[page])
        assert named, page
        for sid, shown in named.items():
            assert all(_same_message(name, expected[sid]) for name in shown), (page, sid, shown)
        assert not bare & set(expected), (page, sorted(bare & set(expected))[:3])
    lines = views["summary_text"].splitlines()
    checked = 0
    for row in views["summary_json"]["failures"]:  # the text lists the first few failed runs
        if row["session_id"] in expected:
            for line in (line for line in lines if f"({short_id(row['session_id'])})" in line):
                assert expected[row["session_id"]][:40] in line
                checked += 1
    assert checked
