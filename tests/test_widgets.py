"""The notebook widgets, driven without a browser or kernel: set traits, click buttons, check state."""

from __future__ import annotations

import subprocess
import sys
from array import array
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import traitlets

from subagent_catalog.catalog import catalog, list_agents_text, list_children
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.synth.writer import EventLog, descriptor, header, simple_child_events, write_file, write_session
from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard

T0 = 1_780_000_000_000
XSS = "<img src=x onerror=alert(1)>"


def _child(root: Path, sid: str, parent: str, created: int, payload: Any, *, cwd: str, depth: int = 1) -> None:
    events = simple_child_events(sid, payload) if payload is not None else []
    head = header(sid, created_at=created, cwd=cwd, parent=parent, subagent=True, delegation_depth=depth)
    write_session(root, head, events, "none")


def build_small(root: Path) -> None:
    """Two runs in two projects: healthy children, diagnostics, an ordinary fork, a skipped file."""
    alpha, beta = "/work/alpha", "/work/beta"
    log = EventLog("R1")
    log.turn_start()
    log.user("start")
    log.assistant("hello", chunks=4)
    log.turn_end()
    write_session(root, header("R1", created_at=T0, cwd=alpha), log.events, "none")
    _child(root, "c-review", "R1", T0 + 1, descriptor("continuable", label="Review PR"), cwd=alpha)
    _child(root, "c-oneshot", "R1", T0 + 2, descriptor("one-shot", label="Summarize", provider="fork"), cwd=alpha)
    _child(root, "d-nodesc", "R1", T0 + 3, None, cwd=alpha)
    _child(root, "d-v3", "R1", T0 + 4, {"version": 3, "mode": "one-shot", "provider": "spawn"}, cwd=alpha)
    _child(root, "c-xss", "R1", T0 + 5, descriptor("continuable", label=XSS), cwd=alpha)
    write_session(root, header("f-fork", created_at=T0 + 6, cwd=alpha, parent="R1"), [], "none")
    _child(root, "g-under-review", "c-review", T0 + 7, descriptor("one-shot", label="Grep logs"), cwd=alpha, depth=2)
    _child(root, "g-under-fork", "f-fork", T0 + 8, descriptor("continuable", label="Deep task"), cwd=alpha, depth=1)
    write_session(root, header("R2", created_at=T0 + 100, cwd=beta), [], "none")
    _child(root, "c-beta", "R2", T0 + 101, descriptor("continuable", label="Beta review", provider="fork"), cwd=beta)
    write_file(root / "--work-beta--" / "broken" / "session.jsonl", b"not a header\n")


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("small")
    build_small(root)
    return read_corpus(root, compression="none")


BIG_ROOTS = 2000  # x 10 sessions each = 20,000


def build_big(root: Path) -> int:
    """20,000 small sessions: each run has 3 subagents, each of those a subagent and an ordinary fork."""
    written = 0
    for r in range(BIG_ROOTS):
        cwd = f"/home/dev/project-{r % 7}"
        rid = f"root-{r:05d}"
        base = T0 + r * 1000
        write_session(root, header(rid, created_at=base, cwd=cwd), [], "none")
        for c in range(3):
            cid = f"{rid}-c{c}"
            payload = descriptor("one-shot" if c == 1 else "continuable", label=f"task {r}.{c}")
            if (r + c) % 37 == 0:
                payload = {"version": 3, "mode": "continuable", "label": "old", "provider": "spawn"}
            head = header(cid, created_at=base + c + 1, cwd=cwd, parent=rid, subagent=True, delegation_depth=1)
            write_session(root, head, simple_child_events(cid, payload), "none")
            sub = header(f"{cid}-g0", created_at=base + 10, cwd=cwd, parent=cid, subagent=True, delegation_depth=2)
            write_session(root, sub, simple_child_events(f"{cid}-g0", descriptor("one-shot")), "none")
            fork = header(f"{cid}-g1", created_at=base + 11, cwd=cwd, parent=cid, delegation_depth=1)
            write_session(root, fork, [], "none")
            written += 3
        written += 1
    return written


@pytest.fixture(scope="session")
def big(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("big")
    assert build_big(root) == 20_000
    return read_corpus(root, compression="none")


@pytest.fixture()
def failing(tmp_path: Path) -> Corpus:
    """The same id in two project directories: upstream's whole listing fails."""
    write_session(tmp_path, header("R", created_at=T0, cwd="/a"), [], "none")
    write_session(tmp_path, header("R", created_at=T0, cwd="/b"), [], "none")
    _child(tmp_path, "kid", "R", T0 + 1, descriptor("continuable", label="kid <b>"), cwd="/a")
    return read_corpus(tmp_path, compression="none")


def position_of(browser: CatalogBrowser, session_id: str) -> str:
    matches = [p for p in browser.visible if browser.row(p)["key"] == browser.find(session_id)]
    assert matches, f"{session_id} is not visible"
    return matches[0]


def visible_ids(browser: CatalogBrowser, corpus: Corpus) -> list[str | None]:
    ids = corpus.sessions["session_id"].to_list()
    return [ids[int(p.split("/")[-1])] for p in browser.visible]


class Front:
    """A stand-in for the browser side: sends custom messages, keeps what the widget sends back."""

    def __init__(self, browser: CatalogBrowser) -> None:
        self.browser = browser
        self.sent: list[dict[str, Any]] = []
        browser.send = lambda content, buffers=None: self.sent.append(content)

    def ask(self, content: dict[str, Any]) -> list[dict[str, Any]]:
        self.sent.clear()
        self.browser._on_message(self.browser, content, [])
        return list(self.sent)


def ints(buffer: bytes, code: str = "i") -> list[int]:
    return array(code, buffer).tolist()


# ------------------------------------------------------------------ browser: lazy tree


def test_open_draws_every_root_and_labels_none(big: Corpus) -> None:
    browser = CatalogBrowser(big)
    assert browser.built_nodes == 0  # labels are made when the front end scrolls to them
    assert len(browser.visible) == BIG_ROOTS
    assert all("/" not in p for p in browser.visible)
    assert len(browser.tree_keys) == 4 * BIG_ROOTS
    assert ints(browser.tree_keys) == [int(p) for p in browser.visible]
    assert set(ints(browser.tree_depths)) == {0}
    assert set(ints(browser.tree_flags, "B")) == {1}  # every run has children, none is open
    assert not browser.catalog_loaded
    assert visible_ids(browser, big)[:2] == ["root-00000", "root-00001"]
    assert visible_ids(browser, big)[-1] == f"root-{BIG_ROOTS - 1:05d}"  # the last root is in the list
    assert big._events is None


def test_labels_are_sent_on_request(big: Corpus) -> None:
    browser = CatalogBrowser(big)
    front = Front(browser)
    last = ints(browser.tree_keys)[-40:]
    (reply,) = front.ask({"type": "labels", "keys": last, "results": False})
    assert reply["type"] == "labels" and not reply["results"]
    assert [row[0] for row in reply["rows"]] == last
    assert reply["rows"][-1][1] == f"root-{BIG_ROOTS - 1:05d}  [session · 3 below]"
    assert browser.built_nodes == 40
    front.ask({"type": "labels", "keys": last, "results": False})
    assert browser.built_nodes == 40  # labels are made once


def test_expanding_adds_exactly_the_children(big: Corpus) -> None:
    browser = CatalogBrowser(big)
    root = position_of(browser, "root-00003")
    browser.expand(root)
    assert len(browser.visible) == BIG_ROOTS + 3
    index = browser.visible.index(root)
    assert ints(browser.tree_flags, "B")[index] == 3  # has children, expanded
    children = browser.visible[index + 1 : index + 4]
    assert ints(browser.tree_depths)[index + 1 : index + 4] == [1, 1, 1]
    assert [visible_ids(browser, big)[browser.visible.index(p)] for p in children] == list_children(big, "root-00003")[
        "id"
    ].to_list()
    child = children[0]
    Front(browser).ask({"type": "toggle", "index": browser.visible.index(child)})  # the ▸ toggle
    assert child in browser.expanded
    below = browser.visible[browser.visible.index(child) + 1 : browser.visible.index(child) + 3]
    assert [visible_ids(browser, big)[browser.visible.index(p)] for p in below] == [
        "root-00003-c0-g0",
        "root-00003-c0-g1",
    ]
    assert "fork" in browser.row(below[1])["text"]
    browser.collapse(root)
    assert len(browser.visible) == BIG_ROOTS
    assert big._events is None


def test_expanding_a_late_root_and_revealing_the_last(big: Corpus) -> None:
    browser = CatalogBrowser(big)
    last = f"root-{BIG_ROOTS - 1:05d}"
    browser.expand(position_of(browser, last))  # no page limit: any root can be expanded
    assert visible_ids(browser, big)[-3:] == [f"{last}-c0", f"{last}-c1", f"{last}-c2"]
    position = browser.reveal(f"{last}-c2-g1")
    assert position == "/".join(str(browser.find(s)) for s in (last, f"{last}-c2", f"{last}-c2-g1"))
    assert browser.visible[-1] == position
    assert browser.scroll_to[0] == len(browser.visible) - 1
    assert browser.selected == browser.find(f"{last}-c2-g1")


def test_small_tree_marks_kinds(small: Corpus) -> None:
    browser = CatalogBrowser(small)
    ids = visible_ids(browser, small)
    assert ids[:2] == ["R1", "R2"]
    assert len(browser.visible) == 3  # two roots and the skipped file
    assert "not listed" in browser.row(browser.visible[2])["text"]
    browser.expand(browser.visible[0])
    shown = dict(zip(visible_ids(browser, small), browser.visible, strict=True))
    assert list(shown)[1:8] == ["c-review", "c-oneshot", "d-nodesc", "d-v3", "c-xss", "f-fork", "R2"]
    rows = {sid: browser.row(shown[sid]) for sid in ("c-review", "d-nodesc", "d-v3", "f-fork")}
    assert rows["c-review"]["text"].startswith("Review PR  (c-review)  [continuable")  # the label leads
    assert rows["d-nodesc"]["style"] == "warning"
    assert "diagnostic: corrupt · no-descriptor" in rows["d-nodesc"]["text"]
    assert "diagnostic: corrupt · unknown-descriptor-version" in rows["d-v3"]["text"]
    assert "fork" in rows["f-fork"]["text"] and rows["f-fork"]["style"] == ""
    assert not rows["d-nodesc"]["expandable"]
    browser.expand(shown["f-fork"])  # a subagent below an ordinary fork is reachable
    assert "g-under-fork" in visible_ids(browser, small)


def test_children_are_in_upstreams_sibling_order(tmp_path: Path) -> None:
    # createdAt first; between siblings created in the same millisecond, the id in localeCompare order
    write_session(tmp_path, header("P", created_at=T0, cwd="/p"), [], "none")
    ids = {"b-late": T0 + 9, "b": T0 + 5, "A": T0 + 5, "a": T0 + 5, "Z": T0 + 5, "é": T0 + 5, "early": T0 + 1}
    for sid, created in ids.items():
        _child(tmp_path, sid, "P", created, descriptor("one-shot", label=sid), cwd="/p")
    corpus = read_corpus(tmp_path, compression="none")
    browser = CatalogBrowser(corpus)
    shown = [corpus.sessions["session_id"][k] for k in browser.children_of(browser.find("P"))]
    assert shown == list_children(corpus, "P")["id"].to_list()  # the catalog's order (upstream's collation)
    assert shown[0] == "early" and shown[-1] == "b-late" and shown[1:6] != sorted(shown[1:6])  # not code points


def test_cycle_members_are_reachable(tmp_path: Path) -> None:
    _child(tmp_path, "A", "B", T0, descriptor("one-shot"), cwd="/c")
    _child(tmp_path, "B", "A", T0 + 1, descriptor("one-shot"), cwd="/c")
    corpus = read_corpus(tmp_path, compression="none")
    browser = CatalogBrowser(corpus)
    assert visible_ids(browser, corpus) == ["A"]
    assert "parent cycle" in browser.row(browser.visible[0])["text"]
    browser.expand(browser.visible[0])
    assert visible_ids(browser, corpus) == ["A", "B"]
    assert not browser.row(browser.visible[1])["expandable"]  # no way back round the cycle
    assert browser.reveal("B") == browser.visible[1]


# --------------------------------------------------------------- browser: search and filters


def test_search_narrows_reveals_and_clears(small: Corpus) -> None:
    browser = CatalogBrowser(small)
    browser.search = "review"
    assert browser.filtering and browser.showing == "results"
    assert {small.sessions["session_id"][k] for k in browser.results} == {"c-review", "g-under-review", "c-beta"}
    assert ints(browser.result_keys) == browser.results
    front = Front(browser)
    (reply,) = front.ask({"type": "labels", "keys": [browser.find("c-review")], "results": True})
    assert reply["rows"][0][1].endswith("← R1")  # results show their parent
    review = browser.results.index(browser.find("c-review"))
    assert ints(browser.result_flags, "B")[review] == 1  # it has a child: the result can be expanded
    front.ask({"type": "reveal", "key": browser.find("c-review"), "expand": True})
    assert browser.showing == "tree" and browser.filtering  # the search stays set
    assert "g-under-review" in visible_ids(browser, small)
    assert browser.selected == browser.find("c-review")
    assert visible_ids(browser, small)[browser.scroll_to[0]] == "c-review"
    browser.search = "BETA"  # case-insensitive, labels too
    assert {small.sessions["session_id"][k] for k in browser.results} == {"c-beta"}
    browser.clear_filters()
    assert not browser.filtering and browser.results == [] and browser.showing == "tree"


def test_reveal_sends_the_scroll_before_the_detail(small: Corpus) -> None:
    # the front end scrolls to the row while Python makes the (slower) detail pane
    browser = CatalogBrowser(small)
    sent: list[str] = []  # the trait updates in the order they go to the front end
    send_state = browser.send_state

    def record(key: Any = None) -> None:
        sent.extend([key] if isinstance(key, str) else list(key or []))
        send_state(key=key)

    browser.send_state = record  # type: ignore[method-assign]
    browser.reveal("g-under-review")
    assert sent.index("tree_keys") < sent.index("scroll_to") < sent.index("selected") < sent.index("detail")
    assert browser.detail_key == browser.selected == browser.find("g-under-review")
    browser.selected = None
    assert browser.detail_key is None and browser.detail == ""


def test_tree_height_is_a_trait_with_a_floor(small: Corpus) -> None:
    browser = CatalogBrowser(small)
    assert browser.tree_height is None  # fitted to the rows and the room in view by the front end
    browser.tree_height = 640
    assert browser.tree_height == 640
    with pytest.raises(traitlets.TraitError):
        browser.tree_height = 40


def results(browser: CatalogBrowser, corpus: Corpus) -> set[str]:
    return {corpus.sessions["session_id"][k] for k in browser.results}


def test_filters_apply(small: Corpus) -> None:
    browser = CatalogBrowser(small)
    browser.kind = "diagnostic"
    assert results(browser, small) == {"d-nodesc", "d-v3"}
    browser.cause = "no-descriptor"
    assert results(browser, small) == {"d-nodesc"}
    browser.clear_filters()
    browser.kind = "fork"
    assert results(browser, small) == {"f-fork"}
    browser.clear_filters()
    browser.mode = "one-shot"
    assert results(browser, small) == {"c-oneshot", "g-under-review"}  # identity mode: d-v3 has none
    browser.depth = 2
    assert results(browser, small) == {"g-under-review"}
    browser.clear_filters()
    browser.provider = "fork"
    assert results(browser, small) == {"c-oneshot", "c-beta"}
    browser.project = "--work-beta--"
    assert results(browser, small) == {"c-beta"}
    browser.clear_filters()
    browser.reason = "corrupt"
    browser.activity = "inactive"
    assert results(browser, small) == set()
    browser.reason = None
    assert "c-review" in results(browser, small)
    browser.kind = "unlisted"
    browser.activity = None
    assert len(browser.results) == 1
    assert dict(browser.choices)["kind"] == ["session", "fork", "subagent", "diagnostic", "unlisted"]


def test_all_results_are_listed(big: Corpus) -> None:
    browser = CatalogBrowser(big)
    browser.search = "-c1-g1"
    assert len(browser.results) == BIG_ROOTS
    assert len(browser.result_keys) == 4 * BIG_ROOTS  # no paging: the front end scrolls them
    assert "2,000</b> matching sessions" in browser.results_label


# ------------------------------------------------------------------- browser: selection


def test_selecting_shows_list_agents_and_events(small: Corpus) -> None:
    browser = CatalogBrowser(small)
    browser.selected = browser.row(browser.visible[0])["key"]  # what a click sends
    info = browser.selected_info
    assert info["session_id"] == "R1" and info["role"] == "session"
    assert info["list_agents_children"] == list_agents_text(small, "R1")
    assert info["list_agents_descendants"] == list_agents_text(small, "R1", scope="descendants")
    assert "c-review [ready] — Review PR" in info["list_agents_children"]
    assert "d-nodesc [diagnostic: corrupt]" in browser.detail
    assert "parent=f-fork depth=2" in browser.detail
    assert info["event_count"] == small.sessions.filter(pl.col("session_id") == "R1")["event_count"][0]
    assert "assistant/chunk" in browser.detail  # packed chunks appear expanded
    assert "2026-" in browser.detail and str(T0) not in browser.detail
    # times are UTC datetimes to the millisecond, never epoch milliseconds
    created = datetime.fromtimestamp(T0 / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.000 UTC")
    assert f">{created}</td>" in browser.detail
    row = small.sessions.filter(pl.col("session_id") == "R1").row(0, named=True)
    span = (row["last_event_at"] - row["first_event_at"]).total_seconds()
    assert f"({span:,.3f}\u00a0s)</td>" in browser.detail
    assert small._events is None  # only the selected file was read


def test_selecting_a_diagnostic_shows_its_cause(small: Corpus) -> None:
    browser = CatalogBrowser(small)
    browser.select_id("d-v3")
    info = browser.selected_info
    rows = catalog(small).filter(pl.col("id") == "d-v3")
    assert (info["role"], info["reason"], info["cause"]) == ("diagnostic", "corrupt", rows["cause"][0])
    assert info["cause_detail"] == rows["cause_detail"][0]
    assert info["descriptor_count"] == 1
    assert "unknown-version" in browser.detail
    browser.selected = None
    assert browser.selected_info == {}
    with pytest.raises(traitlets.TraitError):
        browser.selected = small.sessions.height


def test_detail_is_escaped(small: Corpus) -> None:
    browser = CatalogBrowser(small)
    browser.select_id("R1")
    assert XSS not in browser.detail
    assert "&lt;img src=x onerror=alert(1)&gt;" in browser.detail
    browser.select_id("c-xss")
    assert browser.selected_info["label"] == XSS
    assert XSS not in browser.detail
    (reply,) = Front(browser).ask({"type": "labels", "keys": [browser.find("c-xss")]})
    assert XSS in reply["rows"][0][1]  # labels go to the front end as text (it sets textContent)


# ---------------------------------------------------------------- browser: failing listing


def test_failing_listing_is_shown_and_browsable(failing: Corpus) -> None:
    assert failing.listing_error is not None
    browser = CatalogBrowser(failing)
    assert "Upstream listing fails" in browser.banner
    assert "duplicate" in browser.banner
    ids = visible_ids(browser, failing)
    assert ids.count("R") == 2
    # the duplicate upstream refuses (not listed, list_error set) is the red row that breaks the listing
    rows = [browser.row(p) for p in browser.visible if visible_ids(browser, failing)[browser.visible.index(p)] == "R"]
    errors = failing.sessions["list_error"].to_list()
    breaking = [row for row in rows if errors[row["key"]] is not None]
    assert len(breaking) == 1 and breaking[0]["style"] == "danger" and "fails the listing" in breaking[0]["text"]
    browser.expand(browser.visible[0])
    assert "kid" in visible_ids(browser, failing)
    browser.select_id("kid")
    assert browser.selected_info["list_agents_children"].startswith("(list_agents fails")
    assert "kid &lt;b&gt;" in browser.detail  # the unresolved label is still shown, escaped
    assert "duplicate-id" in browser.problems_html
    browser.problem_kind = "duplicate-id"
    assert browser.problems_html.count("<tr") == 2  # header + one problem


def test_front_end_is_shipped_in_the_package() -> None:
    assert "export default" in CatalogBrowser._esm and "http" not in CatalogBrowser._esm
    assert ".sc-browser" in CatalogBrowser._css and "@container" in CatalogBrowser._css


# -------------------------------------------------------------------------- dashboard


def test_dashboard_click_filters_the_table(small: Corpus) -> None:
    board = DiagnosticsDashboard(small)
    bars = {value: count for _split, value, count in board.bars}
    # every session file by default: the two runs, the fork and the file no header could be read from too
    assert bars == {
        "child": 6,
        "corrupt · no-descriptor": 1,
        "corrupt · unknown-descriptor-version": 1,
        "root": 2,
        "fork": 1,
        "unlisted · first line is not JSON": 1,
    }
    assert sum(bars.values()) == small.sessions.height
    board.scope = "subagents"
    bars = {value: count for _split, value, count in board.bars}
    assert bars == {"child": 6, "corrupt · no-descriptor": 1, "corrupt · unknown-descriptor-version": 1}
    assert board.affected_ids == []
    board.bar("corrupt · no-descriptor").click()
    assert board.selected_value == "corrupt · no-descriptor"
    assert board.affected_ids == ["d-nodesc"]
    assert "d-nodesc" in board.table.value and "c-review" not in board.table.value
    board.bar("corrupt · no-descriptor").click()  # again: clears
    assert board.selected_value is None and board.affected_ids == []


def test_dashboard_dimensions_and_split(small: Corpus) -> None:
    board = DiagnosticsDashboard(small)
    board.selected_dimension = "version"
    assert board.dimension_buttons.value == "version"
    # all sessions: the two runs, the fork and the unreadable file have no descriptor either
    assert {value: count for _s, value, count in board.bars} == {"2": 6, "3": 1, "(none)": 5}
    board.scope = "subagents"
    assert board.scope_buttons.value == "subagents" and board.selected_dimension == "version"
    assert {value: count for _s, value, count in board.bars} == {"2": 6, "3": 1, "(none)": 1}
    board.pick("3")
    assert board.affected_ids == ["d-v3"]
    board.dimension_buttons.value = "provider"
    assert board.selected_dimension == "provider" and board.selected_value is None
    board.split_by = "project"
    bars = {(split, value): count for split, value, count in board.bars}
    assert bars[("--work-beta--", "fork")] == 1
    assert bars[("--work-alpha--", "fork")] == 1
    board.bar("fork", split="--work-beta--").click()
    assert board.affected_ids == ["c-beta"]
    board.diagnostics_only = True
    assert {value for _s, value, _n in board.bars} == {"spawn", "(none)"}
    with pytest.raises(traitlets.TraitError):
        board.selected_dimension = "nonsense"
    assert board.selected_dimension == "provider"


def test_dashboard_escapes_and_counts_by_mode(small: Corpus) -> None:
    board = DiagnosticsDashboard(small)
    board.selected_dimension = "mode"
    board.pick("continuable")
    assert set(board.affected_ids) == {"c-review", "c-xss", "g-under-fork", "c-beta"}
    assert XSS not in board.table.value


def test_dashboard_on_failing_listing(failing: Corpus) -> None:
    board = DiagnosticsDashboard(failing)
    assert board.error is not None
    assert "Upstream listing fails" in board.header.value
    assert set(board.data["kind"].to_list()) == {"file"}
    # healthy files are blue, not drawn as diagnostics
    assert board.bar("ok · —").button_style == ""
    board.selected_dimension = "verdict"
    board.pick("ok")
    assert sorted(board.affected_ids) == ["R", "R", "kid"]


def test_big_dashboard_matches_catalog(big: Corpus) -> None:
    board = DiagnosticsDashboard(big)
    assert sum(count for _s, _v, count in board.bars) == big.sessions.height
    board.scope = "subagents"
    assert (
        sum(count for _s, _v, count in board.bars)
        == catalog(big).filter(pl.col("kind").is_in(["child", "diagnostic"])).height
    )
    diagnostics = catalog(big).filter(pl.col("kind") == "diagnostic")
    board.pick("corrupt · unknown-descriptor-version")
    assert sorted(board.affected_ids) == sorted(diagnostics["id"].to_list())


# ------------------------------------------------------------------------------ imports


def test_library_import_loads_no_widget_code() -> None:
    code = (
        "import sys, tempfile, subagent_catalog\n"
        "c = subagent_catalog.read_corpus(tempfile.mkdtemp())\n"
        "c._repr_html_()\n"
        "print(sorted(m for m in ('ipywidgets', 'traitlets', 'subagent_catalog.views.widgets') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
