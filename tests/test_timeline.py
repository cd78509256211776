"""tree_timeline and concurrency: a tree's sessions over time, checked against brute-force counts."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subagent_catalog.analysis.timeline import TIMELINE_SCHEMA, concurrency, tree_timeline
from subagent_catalog.analysis.trees import run_trees
from subagent_catalog.corpus import read_corpus
from subagent_catalog.errors import UnknownSessionError
from subagent_catalog.synth.writer import EventLog, descriptor, header, write_session

T0 = 1_700_000_000_000


def _session(
    root: Path,
    sid: str,
    *,
    parent: str | None = None,
    subagent: bool = False,
    start: int = 0,
    length: int = 10,
    events: bool = True,
    label: str | None = None,
) -> None:
    log = EventLog(sid, time=T0 + start - 1)
    if events:
        if subagent:
            log.descriptor(descriptor("one-shot", label=label or sid))
        log.turn_start()
        log.user("go")
        log.add("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, dt=max(length - 2, 1))
    write_session(root, header(sid, created_at=T0, parent=parent, subagent=subagent), log.events, "none")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    _session(tmp_path, "top", start=0, length=100)
    _session(tmp_path, "a", parent="top", subagent=True, start=10, length=30)
    _session(tmp_path, "b", parent="top", subagent=True, start=20, length=40)
    _session(tmp_path, "fork", parent="a", start=15, length=5)  # an ordinary fork below a subagent
    _session(tmp_path, "a1", parent="fork", subagent=True, start=16, length=3)
    _session(tmp_path, "silent", parent="top", subagent=True, events=False)
    _session(tmp_path, "other", start=0, length=5)
    return tmp_path


def test_the_timeline_holds_the_tree_below_a_session_in_start_order(tree: Path) -> None:
    rows = tree_timeline(read_corpus(tree, cache=False), "top")
    assert dict(rows.schema) == TIMELINE_SCHEMA
    assert rows["session_id"].to_list() == ["top", "a", "fork", "a1", "b", "silent"]
    depth = dict(zip(rows["session_id"], rows["depth"], strict=True))
    assert depth == {"top": 0, "a": 1, "fork": 2, "a1": 3, "b": 1, "silent": 1}
    by_id = {row["session_id"]: row for row in rows.iter_rows(named=True)}
    assert by_id["a"]["start_ms"] == T0 + 10 and by_id["a"]["label"] == "a"
    assert by_id["a"]["duration_ms"] == by_id["a"]["end_ms"] - by_id["a"]["start_ms"]


def test_a_session_without_own_events_is_a_row_without_a_span(tree: Path) -> None:
    rows = tree_timeline(read_corpus(tree, cache=False), "top")
    silent = rows.filter(pl.col("session_id") == "silent").row(0, named=True)
    assert silent["start_ms"] is None and silent["end_ms"] is None and rows["session_id"][-1] == "silent"


def test_the_subagents_scope_walks_through_forks_without_showing_them(tree: Path) -> None:
    rows = tree_timeline(read_corpus(tree, cache=False), "top", scope="subagents")
    assert rows["session_id"].to_list() == ["top", "a", "a1", "b", "silent"]
    a1 = rows.filter(pl.col("session_id") == "a1").row(0, named=True)
    a = rows.filter(pl.col("session_id") == "a").row(0, named=True)
    assert a1["depth"] == 2 and a1["parent_list_order"] == a["list_order"]


def test_max_depth_keeps_the_top_levels(tree: Path) -> None:
    rows = tree_timeline(read_corpus(tree, cache=False), "top", max_depth=1)
    assert sorted(rows["session_id"].to_list()) == ["a", "b", "silent", "top"]


def test_the_row_count_is_run_trees_subtree_size(tree: Path) -> None:
    corpus = read_corpus(tree, cache=False)
    trees = run_trees(corpus)
    for sid in ("top", "a", "fork", "other"):
        size = trees.filter(pl.col("session_id") == sid)["subtree_sessions"][0]
        assert tree_timeline(corpus, sid).height == size


def test_an_unknown_id_names_the_nearest(tree: Path) -> None:
    with pytest.raises(UnknownSessionError, match="did you mean top"):
        tree_timeline(read_corpus(tree, cache=False), "tpo")


def test_children_concurrency_peaks_at_run_trees_peak_when_no_spans_touch(tree: Path) -> None:
    corpus = read_corpus(tree, cache=False)
    curve = concurrency(tree_timeline(corpus, "top"), among="children")
    peak = run_trees(corpus).filter(pl.col("session_id") == "top")["peak_children_running"][0]
    assert curve["running"].max() == peak == 2 and curve["running"][-1] == 0


def test_an_empty_timeline_has_an_empty_curve() -> None:
    rows = pl.DataFrame({"depth": [0], "start_ms": [1], "end_ms": [2]})
    assert concurrency(rows).height == 0 and concurrency(rows).columns == ["time_ms", "running"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 20)), max_size=30))
def test_the_curve_counts_the_spans_open_after_each_change(spans: list[tuple[int, int]]) -> None:
    rows = pl.DataFrame(
        {"depth": [1] * len(spans), "start_ms": [s for s, _ in spans], "end_ms": [s + d for s, d in spans]},
        schema={"depth": pl.Int64, "start_ms": pl.Int64, "end_ms": pl.Int64},
    )
    curve = concurrency(rows)
    times = sorted({s for s, _ in spans} | {s + d for s, d in spans})
    assert curve["time_ms"].to_list() == times
    for time, running in curve.iter_rows():
        # a span counts from its start up to (not including) its end; a zero-length span never runs
        assert running == sum(1 for s, d in spans if s <= time < s + d)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100_000), st.integers(0, 5_000)), min_size=1, max_size=3_000))
def test_the_drawn_curve_is_bounded_in_points_and_keeps_the_exact_peak(spans: list[tuple[int, int]]) -> None:
    """Issue 42 item 10: the curve held a point per start and end, so its size grew with the tree; it is
    drawn in at most ``CURVE_POINTS`` slices, each at the most sessions running in it."""
    import re

    from subagent_catalog.views.timeline_view import CURVE_POINTS, timeline_html

    rows = pl.DataFrame(
        {
            "session_id": ["top", *(f"c{i}" for i in range(len(spans)))],
            "label": [None] * (len(spans) + 1),
            "depth": [0] + [1] * len(spans),
            "outcome": ["completed"] * (len(spans) + 1),
            "start_ms": [0, *(s for s, _ in spans)],
            "end_ms": [110_000, *(s + d for s, d in spans)],
        }
    )
    page = timeline_html(rows, max_drawn=50)
    path = re.search(r'<path d="([^"]+)" fill="#ddf4ff"', page)
    assert path is not None
    steps = re.findall(r"V([0-9.]+)", path.group(1))
    assert len(steps) <= 2 * CURVE_POINTS + 1
    peak = int(concurrency(rows)["running"].max())  # type: ignore[arg-type]
    assert f"peak {peak:,} running" in page
    assert min(float(y) for y in steps) == pytest.approx(40 - 38 * peak / max(peak, 1), abs=0.06)


def test_a_deep_tree_draws_its_nearest_levels_and_says_how_many_it_leaves_out() -> None:
    from subagent_catalog.views.timeline_view import timeline_html

    size = 500
    rows = pl.DataFrame(
        {
            "session_id": [f"s{i}" for i in range(size)],
            "label": [None] * size,
            "depth": list(range(size)),
            "outcome": ["completed"] * size,
            "start_ms": [10 * i for i in range(size)],
            "end_ms": [20 * size - 10 * i for i in range(size)],
        }
    )
    page = timeline_html(rows, depth_drawn=2, max_drawn=1_000)
    assert page.count('class="tl-bar"') == 3 and "s3<" not in page
    assert "497 of the 500 sessions with a span are not drawn (more than 2 levels below the top)" in page
    assert f"peak {size - 1:,} running" in page  # the curve counts every session below the top
    capped = timeline_html(rows, max_drawn=100)
    assert "100 sessions packed in" in capped and "past the first 100 by depth" in capped


def test_the_timeline_axis_falls_at_round_steps_and_ends_inside_the_chart() -> None:
    """Issue 57, point 10: today the axis reads the span's half and whole (``+16 min 40 s``, ``+33 min 20 s``)."""
    import re

    from subagent_catalog.views.timeline_view import timeline_html

    spans = {"start_ms": [0, 10], "end_ms": [2_000_000, 60]}
    rows = pl.DataFrame({"session_id": ["top", "a"], "depth": [0, 1], "outcome": ["completed", "error"], **spans})
    rows = rows.with_columns(label=pl.Series([None, "a"], dtype=pl.String))
    axis = re.search(r'<div class="tl-axis">(.*?)</div>', timeline_html(rows))
    assert axis is not None
    ticks = re.findall(r'<span( class=tl-end)? style="left:([\d.]+)%">\+([^<]*)</span>', axis.group(1))
    assert [(text, float(left)) for _, left, text in ticks] == [("20 min", 60.0)]
    rows = rows.with_columns(end_ms=pl.Series([60_000, 60]))
    axis = re.search(r'<div class="tl-axis">(.*?)</div>', timeline_html(rows))
    assert axis is not None and '<span class=tl-end style="left:100.00%">+1 min</span>' in axis.group(1)
