"""The widgets answer run questions (issue 28): names, outcome badges, run filters and sorts, the run facts
and children timeline in the detail pane, the dashboard's scopes and table. Driven without a browser: create
the widget, set traits, call handlers, check state."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from subagent_catalog.analysis.run_names import NAME_CLIP, clip_name, run_names
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.analysis.timeline import concurrency, tree_timeline
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.units import human_duration
from subagent_catalog.read.run_facts import TEXT_CLIP, fold_run
from subagent_catalog.synth.writer import EventLog, descriptor, header, write_session
from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard
from subagent_catalog.views.widgets.run_facts import FAILED_CHOICE, facts_text

T0 = 1_780_000_000_000
XSS = "<img src=x onerror=alert(1)>"
UUID = "0f8e5c7a-1111-2222-3333-444455556666"


def _child(root: Path, sid: str, parent: str, start: int, end: int | None, *, ending: str = "completed") -> None:
    """A subagent of ``parent`` with one turn from ``start`` to ``end`` (``None``: never ends, the run is open)."""
    log = EventLog(sid, time=start)
    log.turn_start()
    log.user(f"do {sid}")
    log.descriptor(descriptor("one-shot", label=f"task {sid}"))
    if end is not None:
        log.time = end - 1
        log.turn_end(ending)
        if ending == "error":
            log.events[-1]["data"]["reason"] = {"kind": "error", "error": {"message": "overloaded", "code": "E529"}}
    head = header(sid, created_at=start, parent=parent, subagent=True)
    write_session(root, head, log.events, "none")


def build_runs(root: Path) -> None:
    """A titled root with four children (two overlap), a root named by its prompt, one named by nothing."""
    log = EventLog(UUID, time=T0)
    log.turn_start()
    log.user("  first\n\nprompt  ")
    log.add("session/title", {"title": "Old title", "messageSeqs": [1], "source": {"kind": "fallback"}})
    log.add("session/title", {"title": "Fix the flaky test", "messageSeqs": [], "source": {"kind": "user"}})
    log.time = T0 + 10_000
    log.turn_end()
    write_session(root, header(UUID, created_at=T0), log.events, "none")
    _child(root, "c-ok", UUID, T0 + 100, T0 + 1_000)
    _child(root, "c-err", UUID, T0 + 500, T0 + 3_000, ending="error")
    _child(root, "c-open", UUID, T0 + 4_000, None)
    write_session(root, header("c-empty", created_at=T0 + 5_000, parent=UUID, subagent=True), [], "none")
    log = EventLog("prompted", time=T0 + 20_000)
    log.add(
        "user/message",
        {"content": [{"type": "text", "text": "snapshot"}], "source": {"kind": "plugin"}, "role": "user"},
    )
    log.user(XSS)
    write_session(root, header("prompted", created_at=T0 + 20_000), log.events, "none")
    log = EventLog("noticed", time=T0 + 30_000)
    log.add("user/message", {"content": [{"type": "text", "text": "notice"}], "source": {"kind": "subagent"}})
    write_session(root, header("noticed", created_at=T0 + 30_000), log.events, "none")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("runs")
    build_runs(root)
    return read_corpus(root, compression="none", cache=False)


@pytest.fixture(scope="module")
def sample() -> Corpus:
    return read_corpus("data/sample")


def _orders(corpus: Corpus, *ids: str) -> list[int]:
    frame = corpus.sessions.select("session_id", "list_order")
    return [frame.filter(pl.col("session_id") == sid)["list_order"][0] for sid in ids]


# ------------------------------------------------------------------ run names


def test_the_last_title_names_a_run(runs: Corpus) -> None:
    names = run_names(runs, list_orders=_orders(runs, UUID))
    assert names.rows() == [(_orders(runs, UUID)[0], "Fix the flaky test", "title")]


def test_the_first_human_prompt_names_an_untitled_run(runs: Corpus) -> None:
    # the plugin's snapshot before it is no name; the prompt is returned as text (views escape it)
    names = run_names(runs, list_orders=_orders(runs, "prompted", "noticed"))
    assert names["name"].to_list() == [XSS, None]
    assert names["name_source"].to_list() == ["first-message", None]


def test_run_names_keep_the_order_asked_and_name_unknown_orders_null(runs: Corpus) -> None:
    orders = _orders(runs, "noticed", UUID)
    names = run_names(runs, list_orders=[*orders, 10_000])
    assert names["list_order"].to_list() == [*orders, 10_000]
    assert names["name"].to_list() == [None, "Fix the flaky test", None]
    assert run_names(runs).height == runs.sessions.height


def test_a_forks_name_is_its_own_first_prompt_not_its_seeds() -> None:
    events = [
        {"type": "user/message", "seq": 0, "data": {"content": [{"type": "text", "text": "parent's"}]}},
        {"type": "user/message", "seq": 5, "data": {"content": "the fork's own", "role": "user"}},
    ]
    assert fold_run(events, 3).prompt == "the fork's own"
    assert fold_run(events).name == "parent's"


def test_an_empty_title_falls_back_to_the_prompt() -> None:
    events = [
        {"type": "user/message", "seq": 0, "data": {"content": [{"type": "text", "text": "hi"}]}},
        {"type": "session/title", "seq": 1, "data": {"title": "  "}},
    ]
    assert (fold_run(events).title, fold_run(events).name) == (None, "hi")


@given(st.text(max_size=300), st.integers(min_value=1, max_value=120))
def test_clipped_names_are_one_short_line(text: str, clip: int) -> None:
    name = clip_name(text, clip)
    folded = " ".join(text.split())
    if not folded:
        assert name is None
        return
    assert name is not None and len(name) <= clip and "\n" not in name and "  " not in name
    assert name == folded or (name.endswith("…") and folded.startswith(name[:-1]))


def test_a_long_title_is_clipped() -> None:
    run = fold_run([{"type": "session/title", "seq": 0, "data": {"title": "x" * 500}}])
    assert run.name is not None and len(run.name) == NAME_CLIP and run.name.endswith("…")
    assert run.title is not None and len(run.title) == TEXT_CLIP  # what compare --match pairs by


# ------------------------------------------------------------------ browser rows


def _peak(rows: list[list[Any]]) -> int:
    """The most spans running at once, counted at every start (a span ending as another starts hands over)."""
    spans = [(start, end) for _key, start, end, *_rest in rows]
    return max(sum(1 for s, e in spans if s <= t < e or s == t == e) for t, _ in spans)


def _sent(browser: CatalogBrowser) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    browser.send = messages.append  # type: ignore[method-assign]
    return messages


def test_labels_carry_outcome_and_facts_and_the_name_follows(runs: Corpus) -> None:
    browser = CatalogBrowser(runs)
    messages = _sent(browser)
    root, err = browser.find(UUID), browser.find("c-err")
    assert root is not None and err is not None
    browser._on_message(browser, {"type": "labels", "keys": [root, err]}, [])
    # first the labels (no log read), then the run's name once its log was read
    assert [len(m["rows"]) for m in messages] == [2, 1]
    first = {row[0]: row for row in messages[0]["rows"]}
    assert first[root][1].startswith(UUID) and first[err][4] == "error"
    assert first[err][5] == facts_text(browser._tree.nodes.row(err, named=True))
    assert "2.5 s" in first[err][5]  # 500 ms to 3,000 ms
    named = messages[1]["rows"][0]
    assert named[0] == root and named[1].startswith("Fix the flaky test  (0f8e5c7a…)  [session")
    assert UUID in named[2]  # the whole id in the tooltip
    assert browser.label(root)["text"] == named[1]


def test_subagents_are_not_renamed(runs: Corpus) -> None:
    browser = CatalogBrowser(runs)
    assert browser.name_runs([browser.find("c-ok")]) == []  # type: ignore[list-item]
    assert "task c-ok" in browser.label(browser.find("c-ok"))["text"]  # type: ignore[arg-type]


def test_filter_failed_runs_and_sort_by_cost(sample: Corpus) -> None:
    browser = CatalogBrowser(sample)
    browser.outcome = FAILED_CHOICE
    sessions = sample.sessions.with_row_index("key")
    failed = sessions.filter(pl.col("outcome").is_in(list(FAILED_OUTCOMES)))
    assert browser.showing == "results" and sorted(browser.results) == sorted(failed["key"].to_list())
    browser.sort_by = "cost"
    costs = [sessions["cost_usd"][key] for key in browser.results]
    known = [c for c in costs if c is not None]
    assert known == sorted(known, reverse=True) and costs[: len(known)] == known  # largest first, unknown last
    assert "sorted by cost ↓" in browser.results_label
    browser.sort_descending = False
    known_up = [sessions["cost_usd"][k] for k in browser.results if sessions["cost_usd"][k] is not None]
    assert known_up == sorted(known)
    browser.outcome = "error"
    assert [sessions["outcome"][k] for k in browser.results] == ["error"] * failed.filter(
        pl.col("outcome") == "error"
    ).height
    browser.clear_filters()
    assert (browser.showing, browser.sort_by, browser.results) == ("tree", "created", [])


def test_a_sort_alone_lists_every_session(sample: Corpus) -> None:
    browser = CatalogBrowser(sample)
    browser.sort_by = "duration"  # active time: idle time is not slowness
    active = sample.sessions["active_ms"]
    assert len(browser.results) == sample.sessions.height
    ordered = [active[k] for k in browser.results if active[k] is not None]
    assert ordered == sorted(ordered, reverse=True)
    walls = sample.sessions["run_wall_ms"]
    assert [walls[k] for k in browser.results if walls[k] is not None] != sorted(walls.drop_nulls(), reverse=True)
    assert browser.results_label.startswith(f"<b>{sample.sessions.height}</b> sessions (sorted by duration")


def test_tool_failures_filter(sample: Corpus) -> None:
    browser = CatalogBrowser(sample)
    browser.tool_failures = "some"
    failed = sample.sessions.with_row_index("key").filter(pl.col("tool_results_failed") > 0)
    assert sorted(browser.results) == sorted(failed["key"].to_list()) and failed.height >= 1
    browser.tool_failures = "none"
    assert len(browser.results) == sample.sessions.height - failed.height
    browser.sort_by = "failed_tools"
    assert browser.filtering


def test_the_outcome_filter_offers_failed_first(sample: Corpus) -> None:
    browser = CatalogBrowser(sample)
    choices = dict(browser.choices)
    assert choices["outcome"][0] == FAILED_CHOICE
    assert set(choices["outcome"][1:]) == set(sample.sessions["outcome"].drop_nulls().to_list())
    assert choices["tool_failures"] == ["some", "none"]


# ------------------------------------------------------------------ detail pane


def test_the_detail_pane_leads_with_the_run_facts_and_the_timeline(runs: Corpus) -> None:
    browser = CatalogBrowser(runs)
    browser.selected = browser.find(UUID)
    pane = browser.detail
    assert pane.index('class="sc-run"') < pane.index(">role<") and "Fix the flaky test" in pane
    assert pane.index("sc-run") < pane.index("sc-timeline-slot") < pane.index(">role<")
    assert "10 s" in pane  # the root's own events span 10 s
    browser.selected = browser.find("c-err")
    assert "overloaded (E529)" in browser.detail and "sc-timeline-slot" not in browser.detail
    assert browser.timeline == {}
    browser.selected = browser.find("prompted")
    assert XSS not in browser.detail and "&lt;img src=x" in browser.detail


def test_the_children_timeline_has_one_bar_per_child_with_own_events(runs: Corpus) -> None:
    browser = CatalogBrowser(runs)
    browser.selected = browser.find(UUID)
    data = browser.timeline
    assert [row[5] for row in data["rows"]] == ["c-ok", "c-err", "c-open"]  # by start; c-empty has no events
    assert data["no_span"] == 1
    for key, start, end, outcome, _label, sid in data["rows"]:
        assert browser._tree.ids[key] == sid and sid in runs.sessions["session_id"].to_list()
        row = runs.sessions.row(key, named=True)
        assert (start + data["t0"], end + data["t0"], outcome) == (
            row["run_first_ms"],
            row["run_last_ms"],
            row["outcome"],
        )
    assert data["t0"] == T0 + 1 and data["outcomes"] == ["completed", "error", "open"]
    # c-ok and c-err overlap: two run at once (brute force: the spans running at each start)
    assert data["peak"] == _peak(data["rows"]) == 2
    expected = concurrency(tree_timeline(runs, UUID, max_depth=1), among="children")
    assert data["curve"] == [[t - data["t0"], n] for t, n in expected.rows()]


def test_a_timeline_click_reveals_the_child(runs: Corpus) -> None:
    browser = CatalogBrowser(runs)
    browser.selected = browser.find(UUID)
    child = browser.timeline["rows"][1][0]
    browser._on_message(browser, {"type": "reveal", "key": child}, [])  # what a click on its bar sends
    assert browser.selected == child and browser.showing == "tree"
    assert f"{browser.find(UUID)}/{child}" in browser.visible
    assert browser.scroll_to[0] == browser.visible.index(f"{browser.find(UUID)}/{child}")


def test_a_1000_child_timeline_sends_one_row_per_child_and_no_markup(tmp_path: Path) -> None:
    root = tmp_path / "hub"
    write_session(root, header("hub", created_at=T0), [], "none")
    for c in range(1000):
        _child(root, f"k-{c:04d}", "hub", T0 + c * 10, T0 + c * 10 + 500)
    browser = CatalogBrowser(read_corpus(root, compression="none", cache=False))
    browser.selected = browser.find("hub")
    data = browser.timeline
    assert len(data["rows"]) == 1000 and data["peak"] == _peak(data["rows"]) == 50  # 500 ms each, 10 ms apart
    assert "<" not in json.dumps(data)  # data, not markup: the front end draws it on a canvas
    assert browser.detail.count("sc-timeline-slot") == 1 and browser.detail.count("k-0999") <= 1


# ------------------------------------------------------------------ dashboard


def test_dashboard_scopes_count_all_subagents_or_roots(sample: Corpus) -> None:
    board = DiagnosticsDashboard(sample)
    total = sum(n for _s, _v, n in board.bars)
    assert total == sample.sessions.height and "all 26 sessions" in board.header.value
    board.scope = "roots"
    roots = sample.sessions.filter(pl.col("parent_session").is_null())
    assert sum(n for _s, _v, n in board.bars) == roots.height
    board.selected_dimension = "outcome"
    assert {v: n for _s, v, n in board.bars} == dict(roots.group_by("outcome").len().rows())
    board.scope_buttons.value = "subagents"
    assert board.scope == "subagents" and board.selected_dimension == "outcome"
    assert sum(n for _s, _v, n in board.bars) == 21  # catalog(sample): 15 children, 6 diagnostics


def test_every_split_group_has_the_same_bar_order(sample: Corpus) -> None:
    board = DiagnosticsDashboard(sample)
    board.selected_dimension = "outcome"
    board.split_by = "project"
    overall = sample.sessions.group_by("outcome").len().sort(["len", "outcome"], descending=[True, False])
    rank = {value: i for i, value in enumerate(overall["outcome"].to_list())}
    groups: dict[str | None, list[str]] = {}
    for split, value, _n in board.bars:
        groups.setdefault(split, []).append(value)
    assert len(groups) >= 2
    for values in groups.values():
        assert values == sorted(values, key=rank.__getitem__)


def test_a_bar_click_lists_label_outcome_error_and_code(sample: Corpus) -> None:
    board = DiagnosticsDashboard(sample)
    board.selected_dimension = "outcome"
    board.bar("error").click()
    row = sample.sessions.filter(pl.col("outcome") == "error").row(0, named=True)
    table = board.table.value
    assert board.affected_ids == [row["session_id"]]
    for text in (
        row["identity_label"],
        row["last_error_message"],
        row["last_error_code"].replace("_", "_<wbr>"),  # a code may break after each _ (frames.display.breakable)
        human_duration(row["active_ms"]),
    ):
        assert f">{text}<" in table, text
    assert f'title="{row["session_id"]}"' in table and 'class="nm-id' in table  # the whole id beside the name
    headings = re.findall(r"<th[^>]*>([^<]*)</th>", table)
    assert headings[2:6] == ["error", "code", "active", "cost"], headings
    assert f'title="{human_duration(row["run_wall_ms"])} first to last event"' in table


def test_the_detail_pane_of_a_root_shows_no_identity_cause_and_a_bare_subagent_keeps_it() -> None:
    sample = read_corpus("data/sample", cache=False)
    browser = CatalogBrowser(sample)
    browser.selected = browser.find("run-webapp-1")
    root = browser.detail
    assert ">identity cause</th>" not in root  # its children (no-descriptor among them) are listed, not a cause
    assert "a root session: not a subagent, so no descriptor is expected" in root
    browser.selected = browser.find("no-descriptor")
    child = browser.detail
    cause = sample.sessions.filter(pl.col("session_id") == "no-descriptor")["identity_cause"].item()
    assert cause is not None and ">identity cause</th><td" in child and cause in child
