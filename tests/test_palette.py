"""One outcome palette: every view draws ``open``, ``error`` and ``aborted`` with ``views.palette``'s colours."""

from __future__ import annotations

import re

import polars as pl
import pytest

from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.synth.generate import generate
from subagent_catalog.views import palette

SHOWN = ("open", "error", "aborted")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("palette") / "corpus"
    generate(root, sessions=60, seed=3, compression="none", jobs=1)
    read = read_corpus(root, jobs=1, cache=False)
    assert set(SHOWN) <= set(read.sessions["outcome"].to_list())  # the corpus has all three to draw
    return read


def _fills(text: str) -> set[str]:
    return {colour.upper() for colour in re.findall(r"#[0-9A-Fa-f]{6}", text)}


def test_the_palette_is_okabe_ito_and_tells_the_outcomes_apart() -> None:
    colours = [palette.OUTCOME_COLOURS[name] for name in SHOWN]
    assert len(set(colours)) == 3 and set(colours) <= set(palette.OKABE_ITO.values())
    assert palette.outcome_colour("no-such-outcome") == palette.GREY


def test_the_report_draws_outcomes_with_the_palette(corpus: Corpus) -> None:
    from subagent_catalog.views.report import render_report

    page = render_report(corpus)
    for name in SHOWN:
        fill = palette.OUTCOME_COLOURS[name]
        assert f".badge.o-{name}{{background:{fill};" in page  # the badges
        # the legend's key and the Runs bars
        assert f'<span class="badge key-{name}"><span class="dot" style="background:{fill}">' in page
    # the stacked outcome bars of the Runs tables use palette colours only
    stacks = re.findall(r'<div class="stack"[^>]*>(.*?)</div>', page)
    assert stacks and _fills("".join(stacks)) <= {c.upper() for c in palette.OUTCOME_COLOURS.values()} | {palette.GREY}


def test_timelines_in_the_report_and_show_pages_use_the_palette() -> None:
    from subagent_catalog.views.timeline_view import timeline_html

    rows = [
        {"session_id": f"s{i}", "label": name, "depth": 1, "outcome": name, "start_ms": i * 10, "end_ms": i * 10 + 50}
        for i, name in enumerate(SHOWN)
    ]
    rows.insert(
        0, {"session_id": "root", "label": None, "depth": 0, "outcome": "completed", "start_ms": 0, "end_ms": 90}
    )
    html = timeline_html(pl.DataFrame(rows))
    for name in SHOWN:
        assert f"background:{palette.OUTCOME_COLOURS[name]}" in html


def test_the_browser_draws_outcomes_with_the_palette(corpus: Corpus) -> None:
    from subagent_catalog.views.widgets.browser import CatalogBrowser
    from subagent_catalog.views.widgets.run_facts import timeline_payload

    css = CatalogBrowser._css
    for name in SHOWN:
        fill = palette.OUTCOME_COLOURS[name]
        rules = re.findall(rf"\.sc-browser \.sc-o-{name}\s*\{{([^}}]*)\}}", css)
        assert rules and all(f"background:{fill}" in r.replace(" ", "") for r in rules if "background" in r)
    # the children timeline's colours
    sessions = corpus.sessions.with_row_index("key")
    parents = sessions.filter(pl.col("parent_session").is_not_null())["parent_session"].unique().to_list()
    keys = dict(zip(sessions["list_order"].to_list(), sessions["key"].to_list(), strict=True))
    seen: dict[str, str] = {}
    for parent in parents:
        seen.update(timeline_payload(corpus, parent, keys)["colours"])
    shown = [name for name in SHOWN if name in seen]
    assert shown and all(seen[name] == palette.OUTCOME_COLOURS[name] for name in shown)


def test_the_dashboard_draws_outcomes_with_the_palette(corpus: Corpus) -> None:
    from subagent_catalog.views.widgets.dashboard import DiagnosticsDashboard

    board = DiagnosticsDashboard(corpus)
    board.selected_dimension = "outcome"
    for name in SHOWN:
        track = board._bar(None, name, 1, 2, 2).children[1]
        assert f"background:{palette.OUTCOME_COLOURS[name]}" in track.value
