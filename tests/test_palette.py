"""One outcome palette: every view draws ``open``, ``error`` and ``aborted`` with ``views.palette``'s colours."""

from __future__ import annotations

import re
from pathlib import Path

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


# ------------------------------------------------------------------ issue 57, point 6: one palette in every view

OUTCOME_FILLS = {colour.upper() for colour in palette.OUTCOME_COLOURS.values()}


def _badge_colours(page: str) -> dict[str, str]:
    """Each outcome a page's style sheet colours ``.badge.o-<outcome>`` with (upper-case fill)."""
    return {name: fill.upper() for name, fill in re.findall(r"\.badge\.o-([\w-]+)\{background:(#[0-9A-Fa-f]{6})", page)}


def test_show_pages_draw_each_outcome_in_its_own_colour(corpus: Corpus) -> None:
    """Today every failure of a ``show`` page is the same red (``.bad``): facts, turns and children tables."""
    from subagent_catalog.views.transcript_view import transcript_page

    sessions = corpus.sessions.filter(pl.col("session_id").is_not_null())
    drawn: dict[str, str] = {}
    for outcome in (*SHOWN, "completed", "max-tokens"):
        hits = sessions.filter(pl.col("outcome") == outcome)
        if hits.height == 0:
            continue
        page = transcript_page(corpus, hits["session_id"][0])
        colours = _badge_colours(page)
        facts = page[page.index('<table class="facts">') : page.index("</table>", page.index('<table class="facts">'))]
        assert f'<span class="badge o-{outcome}">{outcome}</span>' in facts  # the outcome fact: its badge
        assert colours[outcome] == palette.OUTCOME_COLOURS[outcome].upper()
        drawn[outcome] = colours[outcome]
        for ended in re.findall(r'<td class="[^"]*" data-h="ended"><span class="badge o-([\w-]+)">', page):
            assert colours[ended] == palette.outcome_colour(ended).upper()  # the turns table's ends
        assert 'class="bad">' + outcome not in page
    assert set(SHOWN) <= set(drawn) and len(set(drawn.values())) == len(drawn)  # one colour per outcome
    parent = sessions.filter(pl.col("session_id").is_in(sessions["parent_session"].drop_nulls().to_list()))
    page = transcript_page(corpus, parent["session_id"][0])
    table = page[page.index('id="children-table"') : page.index("</table>", page.index('id="children-table"'))]
    kids = re.findall(r'<td><span class="badge o-([\w-]+)">', table)
    assert kids and all(_badge_colours(page)[name] == palette.outcome_colour(name).upper() for name in kids)


def test_trend_series_take_no_outcome_colour(corpus: Corpus) -> None:
    """Today Trends draw p50, p95 and tokens (and runs, cost, the models) in outcome colours."""
    from subagent_catalog.analysis.run_summary import run_summary
    from subagent_catalog.views.report_trends import trends_section

    charts = [chart for chart in trends_section(run_summary(corpus))["charts"] if chart["svg"]]
    assert {chart["key"] for chart in charts} >= {"runs", "tokens", "active", "cost"}
    for chart in charts:
        drawn = re.findall(r'<(?:polyline|circle)[^>]* stroke="(#[0-9A-Fa-f]{6})"', str(chart["svg"]))
        strokes = {c.upper() for c in drawn}
        strokes -= {"#57606A"}  # the legend's hollow key (a lower bound), in the text's grey
        assert strokes and not strokes & OUTCOME_FILLS, (chart["key"], strokes)
        assert strokes <= {c.upper() for c in palette.SERIES_COLOURS.values()}


def test_the_waterfall_draws_turns_in_their_outcome_colour_and_steps_in_none(tmp_path: Path) -> None:
    """Today a failed turn is drawn at 60 % (an error turn reads as "aborted" orange) and steps in outcome colours."""
    from subagent_catalog.analysis.transcript import transcript
    from subagent_catalog.analysis.waterfall import waterfall
    from subagent_catalog.synth.writer import EventLog, header, write_session
    from subagent_catalog.views.waterfall_view import waterfall_html

    log = EventLog("w")
    for kind in ("completed", "aborted", "error"):
        log.turn_start()
        log.user(f"a turn that ends {kind}")
        log.assistant("thinking", chunks=2)
        log.tool_round(f"c-{kind}", "ok")
        log.add("turn/end", {"turn": log.turn, "reason": {"kind": kind}})
    write_session(tmp_path, header("w", created_at=1), log.events, "none")
    html = waterfall_html(waterfall(transcript(read_corpus(tmp_path, cache=False), "w")))
    bars = re.findall(r'<a href="[^"]*" class="sc-wf-bar"><title>([^<]*)</title>(.*?)</a>', html)
    turns = {title.split(" · ")[1]: inner for title, inner in bars if title.startswith("turn ")}
    assert set(turns) == {"completed", "aborted", "error"}
    for outcome, inner in turns.items():
        assert f'fill="{palette.OUTCOME_COLOURS[outcome]}"' in inner and "opacity" not in inner, (outcome, inner)
    steps = "".join(inner for title, inner in bars if not title.startswith("turn "))
    assert steps and not _fills(steps) & OUTCOME_FILLS  # model and tool bars: series colours, no outcome's
