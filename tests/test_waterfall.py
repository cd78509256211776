"""Issue 43 item 5: the waterfall inside each run (data, SVG, ``show`` pages) and the detail pane's steps.

Expected times come from the events the test wrote (``EventLog.events``), never from the transcript
the waterfall reads; the browser tests are in ``tests/test_waterfall_browser.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subagent_catalog.analysis.transcript import TRANSCRIPT_SCHEMA, transcript
from subagent_catalog.analysis.waterfall import WATERFALL_SCHEMA, waterfall
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.synth.writer import EventLog, header, write_session
from subagent_catalog.views import palette
from subagent_catalog.views.transcript_parts import anchor
from subagent_catalog.views.transcript_view import transcript_page
from subagent_catalog.views.waterfall_view import AGGREGATE_AT, COLUMNS, waterfall_html
from subagent_catalog.views.widgets.pane_steps import PANE_HEAD, PANE_TAIL, pane_steps_html, shown_steps
from tests.waterfall_runs import long_run

GOLDEN = Path(__file__).parent / "data" / "transcript"


def _times(log: EventLog, kind: str) -> list[int]:
    return [event["time"] for event in log.events if event["type"] == kind]


def _write(root: Path, log: EventLog) -> Corpus:
    write_session(root, header(log.session_id, created_at=1), log.events, "none")
    return read_corpus(root, cache=False)


@pytest.fixture(scope="module")
def run75(tmp_path_factory: pytest.TempPathFactory) -> tuple[Corpus, EventLog]:
    root = tmp_path_factory.mktemp("run75")
    log = long_run(root, "run75", 75)
    return read_corpus(root, cache=False), log


# ---------------------------------------------------------------------------------------------- the data


def test_a_model_step_splits_at_its_first_token(tmp_path: Path) -> None:
    log = EventLog("s")
    log.turn_start()
    log.user("go")
    log.assistant("hello world", chunks=3)
    log.turn_end()
    bars = waterfall(transcript(_write(tmp_path, log), "s"))
    (step_start,), (first_chunk, *_), (message,) = (
        _times(log, k) for k in ("step/start", "assistant/chunk", "assistant/message")
    )
    model = bars.filter(pl.col("kind") == "model").row(0, named=True)
    assert (model["start_ms"], model["end_ms"], model["ttft_ms"]) == (step_start, message, first_chunk - step_start)
    turn = bars.filter(pl.col("kind") == "turn").row(0, named=True)
    assert (turn["start_ms"], turn["end_ms"], turn["outcome"]) == (
        _times(log, "turn/start")[0],
        _times(log, "turn/end")[0],
        "completed",
    )


def test_parallel_tool_calls_get_lanes_and_their_own_times(tmp_path: Path) -> None:
    log = long_run(tmp_path, "p", 2, calls=3, fail_every=0)
    bars = waterfall(transcript(read_corpus(tmp_path, cache=False), "p"))
    tools = bars.filter(pl.col("kind") == "tool")
    starts = {e["data"]["callId"]: e["time"] for e in log.events if e["type"] == "tool/call"}
    ends = {e["data"]["message"]["source"]["callId"]: e["time"] for e in log.events if e["type"] == "tool/result"}
    assert sorted(tools.select("start_ms", "end_ms").rows()) == sorted((starts[c], ends[c]) for c in starts)
    for turn in (1, 2):  # three calls at once: three lanes, again from lane 0 in the next turn
        assert sorted(tools.filter(pl.col("turn") == turn)["lane"].to_list()) == [0, 1, 2]


def test_failed_calls_and_an_error_turn_are_marked(tmp_path: Path) -> None:
    long_run(tmp_path, "f", 1, calls=2, fail_every=2)  # call 0 fails, call 1 does not; the turn ends in an error
    bars = waterfall(transcript(read_corpus(tmp_path, cache=False), "f"))
    tools = bars.filter(pl.col("kind") == "tool").sort("start_ms", "lane")
    assert tools["failed"].to_list() == [True, False]
    assert "failed" in tools["label"][0] and "failed" not in tools["label"][1]
    turn = bars.filter(pl.col("kind") == "turn").row(0, named=True)
    assert (turn["outcome"], turn["failed"]) == ("error", True)
    assert palette.OUTCOME_COLOURS["error"] in waterfall_html(bars)


def test_a_call_never_answered_has_no_end_and_is_a_hollow_mark(tmp_path: Path) -> None:
    log = EventLog("u")
    log.turn_start()
    log.add("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "shell"})
    log.turn_end()
    bars = waterfall(transcript(_write(tmp_path, log), "u"))
    call = bars.filter(pl.col("kind") == "tool").row(0, named=True)
    assert (call["start_ms"], call["end_ms"]) == (_times(log, "tool/call")[0], None)
    assert "no result" in call["label"]
    html = waterfall_html(bars)
    assert "1 hollow mark: a start whose end the log does not give" in html
    assert 'fill="#ffffff" stroke=' in html  # the mark is hollow: no length drawn


def test_an_open_turn_has_no_end(tmp_path: Path) -> None:
    log = EventLog("o")
    log.turn_start()
    log.user("still running")
    turn = waterfall(transcript(_write(tmp_path, log), "o")).row(0, named=True)
    assert (turn["kind"], turn["outcome"], turn["end_ms"]) == ("turn", "open", None)
    assert "never ended" in turn["label"]


def test_steps_without_times_are_kept_and_never_drawn_as_zero() -> None:
    rows = pl.DataFrame(
        [
            {"seq": 0, "seqs": [0], "kind": "turn-start", "turn": 1, "in_seed": False, "partial": False},
            {"seq": 1, "seqs": [1], "kind": "tool-call", "turn": 1, "call_id": "c", "name": "grep",
             "in_seed": False, "partial": False},
            {"seq": 2, "seqs": [2], "kind": "tool-result", "turn": 1, "call_id": "c", "is_error": True,
             "in_seed": False, "partial": False},
        ],
        schema=TRANSCRIPT_SCHEMA,
    )  # fmt: skip
    bars = waterfall(rows)
    assert bars.schema == pl.Schema(WATERFALL_SCHEMA)
    assert bars.select("kind", "start_ms", "end_ms").rows() == [("turn", None, None), ("tool", None, None)]
    html = waterfall_html(bars)
    assert "no step has a time" in html and "2 bars not drawn" in html and "<rect" not in html


def test_an_empty_transcript_has_no_waterfall() -> None:
    bars = waterfall(pl.DataFrame(schema=TRANSCRIPT_SCHEMA))
    assert bars.height == 0 and bars.schema == pl.Schema(WATERFALL_SCHEMA) and waterfall_html(bars) == ""


def test_retried_attempts_partial_streams_and_the_seed() -> None:
    rows = transcript(read_corpus(GOLDEN, cache=False), "child-t")
    bars = waterfall(rows)
    seed = set(rows.filter(pl.col("in_seed"))["seq"].to_list())
    assert seed and not seed & set(bars["seq"].to_list())  # the parent's history is the parent's
    partial = bars.filter(pl.col("partial"))
    reasons = {json.loads(d).get("partial") for d in rows.filter(pl.col("partial"))["detail"].drop_nulls()} - {None}
    assert partial.height == len(reasons) == 3  # a retried attempt, a turn that ended first, a torn tail
    assert partial["ttft_ms"].null_count() == partial.height  # no first token claimed for a stream without message
    retry = bars.filter(pl.col("kind") == "retry").row(0, named=True)
    assert (
        retry["failed"] and retry["start_ms"] == retry["end_ms"] == rows.filter(pl.col("kind") == "retry")["time_ms"][0]
    )
    never_started = bars.filter((pl.col("kind") == "tool") & pl.col("start_ms").is_null())
    assert never_started["label"].to_list() == ["tool grep · requested, never started"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 60)), min_size=1, max_size=25))
def test_lanes_never_overlap_and_are_as_few_as_the_most_calls_at_once(calls: list[tuple[int, int]]) -> None:
    rows: list[dict[str, Any]] = []
    for n, (start, length) in enumerate(calls):
        detail = json.dumps({"started_ms": start})
        rows.append(
            {
                "seq": 2 * n,
                "seqs": [2 * n],
                "kind": "tool-call",
                "call_id": f"c{n}",
                "name": "t",
                "time_ms": start,
                "detail": detail,
                "in_seed": False,
                "partial": False,
            }
        )
        rows.append({"seq": 2 * n + 1, "seqs": [2 * n + 1], "kind": "tool-result", "call_id": f"c{n}",
                     "time_ms": start + length, "is_error": False, "in_seed": False, "partial": False})  # fmt: skip
    bars = waterfall(pl.DataFrame(rows, schema=TRANSCRIPT_SCHEMA)).to_dicts()
    spans = [(b["start_ms"], max(b["end_ms"], b["start_ms"] + 1), b["lane"]) for b in bars]  # an instant holds 1 ms
    for i, (s1, e1, l1) in enumerate(spans):
        for s2, e2, l2 in spans[i + 1 :]:
            assert l1 != l2 or e1 <= s2 or e2 <= s1
    most = max(sum(1 for s, e, _ in spans if s <= t < e) for t in range(0, 262))
    assert len({lane for _, _, lane in spans}) == most


# ------------------------------------------------------------------------------------------- the drawing


def test_a_5000_step_run_is_a_bounded_drawing(tmp_path: Path) -> None:
    long_run(tmp_path, "big", 1_250, calls=2)  # 2,500 model steps and 2,500 tool calls
    bars = waterfall(transcript(read_corpus(tmp_path, cache=False), "big"))
    steps = bars.filter(pl.col("kind") != "turn").height
    assert steps == 5_000
    html = waterfall_html(bars)
    nodes = html.count("<") - html.count("</")
    bound = 4 * 2 * COLUMNS * 3 + 200  # 4 tracks, busy and failed runs, <a> + <title> + <rect> each; axis, legend
    assert nodes <= bound < 3 * steps  # drawn one by one, it would be three nodes a step
    assert f"drawn in {COLUMNS} columns" in html
    small = waterfall_html(bars.head(AGGREGATE_AT // 2))
    assert "click a bar to see its step" in small and "columns" not in small


@pytest.mark.parametrize("calls", [3, AGGREGATE_AT + 1])
def test_a_result_logged_before_its_call_draws_no_negative_bar(calls: int) -> None:
    rows = [
        {"kind": "tool", "seq": n, "start_ms": 1_000 + 10 * n, "end_ms": 1_005 + 10 * n, "lane": 0, "failed": False,
         "partial": False, "label": f"call {n}"}
        for n in range(calls)
    ]  # fmt: skip
    back = calls // 2
    rows[back] = dict(rows[back], end_ms=rows[back]["start_ms"] - 500, failed=True)  # the clock went back
    html = waterfall_html(pl.DataFrame(rows, schema=WATERFALL_SCHEMA))
    widths = [float(w) for w in re.findall(r'width="(-?[\d.]+)"', html)]
    assert widths and min(widths) > 0
    assert f'href="#seq-{back}"' in html  # the failed call is still drawn and linked


def test_the_show_page_draws_the_waterfall_and_each_bar_links_to_a_step(run75: tuple[Corpus, EventLog]) -> None:
    corpus, _ = run75
    page = transcript_page(corpus, "run75")
    figure = page[page.index('<figure class="sc-wf"') : page.index("</figure>", page.index('<figure class="sc-wf"'))]
    links = re.findall(r'<a href="#([^"]+)" class="sc-wf-bar">', figure)
    ids = set(re.findall(r' id="([^"]+)"', page))
    bars = waterfall(transcript(corpus, "run75"))
    assert len(links) == bars.height and set(links) <= ids
    assert page.index('class="sc-wf"') < page.index('id="seq-0"')  # the waterfall comes before the steps


# ------------------------------------------------------------------------------------------ the detail pane


def test_the_pane_shows_the_first_and_last_steps_and_every_failure_between(run75: tuple[Corpus, EventLog]) -> None:
    corpus, _ = run75
    steps = transcript(corpus, "run75")
    assert steps.height > PANE_HEAD + PANE_TAIL
    html = pane_steps_html(steps, limit=600, budget=1_000_000)
    rows = steps.to_dicts()
    errors = [anchor(r) for r in rows if r["is_error"]]
    for row in rows[:PANE_HEAD] + rows[-PANE_TAIL:]:
        assert f'id="{anchor(row)}"' in html
    assert all(f'id="{ident}"' in html for ident in errors)
    hidden = steps.height - len(shown_steps(steps))
    middle_errors = sum(1 for r in rows[PANE_HEAD:-PANE_TAIL] if r["is_error"])
    assert hidden == steps.height - PANE_HEAD - PANE_TAIL - middle_errors > 0
    gaps = [int(n.replace(",", "")) for n in re.findall(r"… ([\d,]+) steps? not shown here", html)]
    assert sum(gaps) == hidden


def test_the_jump_control_lists_every_failure_to_the_last(run75: tuple[Corpus, EventLog]) -> None:
    corpus, log = run75
    steps = transcript(corpus, "run75")
    html = pane_steps_html(steps, limit=600, budget=1_000_000)
    errors = [anchor(r) for r in steps.to_dicts() if r["is_error"]]
    assert re.search(r'data-sc-errors="([^"]*)"', html).group(1).split() == errors  # type: ignore[union-attr]
    last_end = steps.filter(pl.col("kind") == "turn-end")[-1].row(0, named=True)
    assert errors[-1] == anchor(last_end) and last_end["time_ms"] == log.events[-1]["time"]
    assert f'<a href="#{errors[-1]}">last</a>' in html and f'<a href="#{errors[0]}">first</a>' in html
    assert 'data-sc-jump="next"' in html and 'data-sc-jump="prev"' in html


def test_pane_bars_link_only_to_steps_on_the_pane(tmp_path: Path) -> None:
    long_run(tmp_path, "mid", 120, fail_every=0, last_error=False)  # no failure: the middle is hidden
    steps = transcript(read_corpus(tmp_path, cache=False), "mid")
    html = pane_steps_html(steps, limit=600, budget=1_000_000)
    figure = html[: html.index("</figure>")]
    links = re.findall(r'<a href="#([^"]+)" class="sc-wf-bar">', figure)
    ids = set(re.findall(r' id="([^"]+)"', html))
    assert links and set(links) <= ids
    unlinked = figure.count("<g><title>")  # the hidden steps' bars are drawn, not linked
    assert unlinked > 0 and f"{unlinked:,} bars without a link: the step is not shown here" in figure
    assert "no failed step" in html


def test_the_browser_pane_has_the_waterfall_and_the_last_error(run75: tuple[Corpus, EventLog]) -> None:
    from subagent_catalog.views.widgets.browser import CatalogBrowser

    corpus, _ = run75
    browser = CatalogBrowser(corpus)
    browser.selected = browser.find("run75")
    last = [anchor(r) for r in transcript(corpus, "run75").to_dicts() if r["is_error"]][-1]
    assert 'class="sc-wf"' in browser.detail and "jump to error" in browser.detail
    assert f'id="{last}"' in browser.detail and f'<a href="#{last}">last</a>' in browser.detail


# ------------------------------------------------------------------ issue 57, point 10: a readable axis


def _span_bars(span_ms: int) -> pl.DataFrame:
    rows = [
        {"kind": "turn", "seq": 1, "start_ms": 0, "end_ms": span_ms, "outcome": "completed", "failed": False,
         "partial": False, "label": "turn 1 · completed"},
        {"kind": "tool", "seq": 2, "start_ms": 10, "end_ms": span_ms // 2, "lane": 0, "failed": False,
         "partial": False, "label": "tool shell"},
    ]  # fmt: skip
    return pl.DataFrame(rows, schema=WATERFALL_SCHEMA)


def _labels(html: str) -> list[tuple[float, str, str, int]]:
    """The axis labels: (x, anchor, text, font size)."""
    found = re.findall(
        r'<text x="([\d.]+)" y="\d+" font-size="(\d+)" fill="#57606a" text-anchor="(\w+)">([^<]*)</text>', html
    )
    return [(float(x), anchor, text, int(size)) for x, size, anchor, text in found]


@pytest.mark.parametrize(
    ("span_ms", "expected"),
    [
        (2_000_000, ["+0 ms", "+10 min", "+20 min", "+30 min"]),  # today: +8 min 20 s, …, +33 min 20 s
        (60_000, ["+0 ms", "+20 s", "+40 s", "+1 min"]),
        (5_400_000, ["+0 ms", "+20 min", "+40 min", "+1 h", "+1 h 20 min"]),
        (900, ["+0 ms", "+200 ms", "+400 ms", "+600 ms", "+800 ms"]),
    ],
)
def test_the_axis_ticks_fall_at_round_steps_of_time(span_ms: int, expected: list[str]) -> None:
    assert [label[2] for label in _labels(waterfall_html(_span_bars(span_ms)))] == expected


@pytest.mark.parametrize("span_ms", [60_000, 3_600_000, 1_000, 20_000])
def test_no_axis_label_is_clipped_at_the_drawings_edge(span_ms: int) -> None:
    """Today a tick at the span's end is centred on the edge: ``+1 min`` shows as ``+1 mi``."""
    html = waterfall_html(_span_bars(span_ms))
    view = re.search(r'<svg viewBox="0 0 (\d+) \d+"', html)
    assert view is not None
    labels, right_edge = _labels(html), int(view.group(1))
    assert labels[-1][0] > right_edge - 40  # a tick at (or near) the right edge
    for x, side, text, size in labels:
        width = len(text) * size * 0.62  # a generous width of a system-ui digit string
        left, right = {"middle": (x - width / 2, x + width / 2), "end": (x - width, x), "start": (x, x + width)}[side]
        assert left >= 0 and right <= right_edge, (text, side, x)


def test_a_forks_waterfall_counts_from_its_first_own_event(tmp_path: Path) -> None:
    """Today ``+0 ms`` is a fork's first turn although its page counts offsets from its first own event."""
    from subagent_catalog.views.waterfall_view import LEFT, PLOT

    parent = EventLog("p")
    parent.turn_start()
    parent.user("seed")
    parent.turn_end()
    write_session(tmp_path, header("p", created_at=1), parent.events, "none")
    fork = EventLog("f", time=parent.time)
    fork.events = [dict(event) for event in parent.events]  # the seed: the parent's history
    seed = len(fork.events)
    fork.add("session/end-seed", {}, dt=1_000)  # its first own event
    fork.add("turn/start", {"turn": 2}, dt=40_000)
    fork.turn = 2
    fork.user("own work")
    fork.add("turn/end", {"turn": 2, "reason": {"kind": "completed"}}, dt=40_000)
    write_session(tmp_path, header("f", created_at=2, parent="p", seed_length=seed), fork.events, "none")
    corpus = read_corpus(tmp_path, cache=False)
    page = transcript_page(corpus, "f")
    assert "offsets from the session's first own event" in page
    turns = re.search(r'data-h="starts">([^<]*)</td>', page)
    assert turns is not None and turns.group(1) == "+40 s"  # the turns table counts from the first own event
    own = [e["time"] for e in fork.events[seed:]]
    turn = re.search(r'<title>turn 2 · completed[^<]*</title><rect x="([\d.]+)"', page)
    assert turn is not None
    expected = LEFT + (own[1] - own[0]) / (own[-1] - own[0]) * PLOT  # +40 s of 80 s: the middle of the plot
    assert abs(float(turn.group(1)) - expected) < 1.0
