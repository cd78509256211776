"""Transcripts (issue 15 item 3): a golden log with hand-derived rows, invariants, lookups, renderers, ``show``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subagent_catalog.analysis.readable_prefix import readable_events
from subagent_catalog.analysis.transcript import (
    STRUCTURAL_TYPES,
    TRANSCRIPT_KINDS,
    TRANSCRIPT_SCHEMA,
    transcript,
    transcript_rows,
)
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.errors import CorpusRootError, SessionLookupError, UnknownSessionError
from subagent_catalog.frames.schemas import EVENT_SCHEMA
from subagent_catalog.store.archive import ArchiveError, open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.synth.writer import EventLog, header, write_session
from subagent_catalog.views.transcript_markdown import transcript_markdown
from subagent_catalog.views.transcript_view import page_file, transcript_fragment, transcript_page

GOLDEN = Path(__file__).parent / "data" / "transcript"
SAMPLE = Path(__file__).parent.parent / "data" / "sample"

# Derived by reading tests/data/transcript/--work-app--/child-t/session.jsonl by hand: seq 0-2 are the
# parent's seed (seedLength 3); step 1 of turn 2 streams a reasoning, a text and a tool-call block (packed
# rows expanded) before its message, which also requests call-2 (never started); step 2's first attempt
# fails and is retried; turn 3 is aborted mid-stream; the log is torn in turn 4's stream.
# (seq, seqs, kind, name, call_id, text, is_error, partial, in_seed)
GOLDEN_ROWS: list[tuple[Any, ...]] = [
    (0, [0], "turn-start", None, None, "turn 1", None, False, True),
    (1, [1], "user", None, None, "delegate it", None, False, True),
    (2, [2], "turn-end", "completed", None, "completed", False, False, True),
    (3, [3], "descriptor", "one-shot", None, "Fix <b>tests</b>", None, False, False),
    (4, [4], "turn-start", None, None, "turn 2", None, False, False),
    (5, [5], "user", None, None, 'run "make test"\nthen fix\n\n[image]', None, False, False),
    (7, [7], "event", "request/header", None, "deepseek-official/deepseek-v4-flash (initial)", None, False, False),
    (25, [8, 9, 10, 11, 12], "reasoning", None, None, "Tests fail first.", None, False, False),
    (25, [13, 14, 15, 16, 17], "assistant", None, None, "Running them.", None, False, False),
    (25, [18, 19, 20, 21, 22, 26], "tool-call", "shell", "call-1", '{"cmd":"make test"}', None, False, False),
    (25, [23, 24, 25], "tool-call", "grep", "call-2", "{}", None, False, False),
    (27, [27], "tool-result", "shell", "call-1", "FAIL\n1 failed", True, False, False),
    (29, [29], "event", "x-future/telemetry", None, '{"n":1}', None, False, False),
    (31, [31, 32], "assistant", None, None, "I will ", True, True, False),
    (33, [33], "retry", None, None, "overloaded", True, False, False),
    (35, [34, 35], "assistant", None, None, "Fixed it.", None, False, False),
    (37, [37], "turn-end", "error", None, "error: provider overloaded", True, False, False),
    (38, [38], "turn-start", None, None, "turn 3", None, False, False),
    (40, [40, 41], "assistant", None, None, "Half a thought", None, True, False),
    (42, [42], "turn-end", "aborted", None, "aborted (user)", False, False, False),
    (43, [43], "turn-start", None, None, "turn 4", None, False, False),
    (45, [45], "assistant", None, None, "cut ", None, True, False),
    (None, [], "read-problem", None, None, "torn-tail: final record without newline: 38 bytes dropped (byte 6054)",
     False, False, False),
]  # fmt: skip
COLUMNS = ["seq", "seqs", "kind", "name", "call_id", "text", "is_error", "partial", "in_seed"]


@pytest.fixture(scope="module")
def golden() -> pl.DataFrame:
    return transcript(read_corpus(GOLDEN, cache=False), "child-t")


def _detail(rows: pl.DataFrame, seq: int, kind: str) -> dict[str, Any]:
    value = rows.filter((pl.col("seq") == seq) & (pl.col("kind") == kind))["detail"].item()
    return json.loads(value) if value else {}


def test_golden_rows(golden: pl.DataFrame) -> None:
    assert golden.schema == pl.Schema(TRANSCRIPT_SCHEMA)
    assert golden.select(COLUMNS).rows() == GOLDEN_ROWS
    assert set(golden["session_id"]) == {"child-t"}


def test_golden_times_turns_and_steps(golden: pl.DataFrame) -> None:
    step1 = golden.filter(pl.col("seq") == 25)
    assert step1["time_ms"].to_list() == [1000210, 1000215, 1000220, 1000227]  # first chunk, else the message
    assert step1["last_time_ms"].to_list() == [1000227, 1000227, 1000230, 1000227]  # call-1 started at 1000230
    assert step1.select("turn", "step").unique().rows() == [(2, 1)]
    user = golden.filter(pl.col("seq") == 5)
    assert user.select("turn", "step").row(0) == (2, None)  # inside turn 2, before its first step
    assert golden["time"].dt.epoch("ms").to_list() == golden["time_ms"].to_list()


def test_golden_details(golden: pl.DataFrame) -> None:
    grep = golden.filter(pl.col("call_id") == "call-2")["detail"].item()
    assert json.loads(grep) == {
        "finish": {"kind": "tool-calls"},
        "model": "deepseek-official/deepseek-v4-flash",
        "usage": {"inputTokens": 100, "outputTokens": 20},
    }
    result = _detail(golden, 27, "tool-result")
    assert result == {"duration_ms": 50, "error": {"name": "ToolError", "code": "EXIT_NONZERO"}}
    first_call = golden.filter(pl.col("call_id") == "call-1", pl.col("kind") == "tool-call")["detail"].item()
    assert json.loads(first_call) == {"started_ms": 1000230}
    assert _detail(golden, 31, "assistant")["partial"] == "a retried attempt"
    assert _detail(golden, 40, "assistant")["partial"] == "the turn ended before the message"
    assert _detail(golden, 45, "assistant")["partial"] == "the log ends before the message"
    assert _detail(golden, 37, "turn-end")["reason"]["error"]["code"] == "RATE_LIMITED"


def _seqs_partition(rows: pl.DataFrame, events: pl.DataFrame) -> None:
    want = sorted(events.filter(~pl.col("type").is_in(list(STRUCTURAL_TYPES)))["seq"].to_list())
    got = sorted(seq for seqs in rows["seqs"].to_list() for seq in seqs)
    assert got == want
    assert set(rows["kind"]) <= set(TRANSCRIPT_KINDS)


def _shown_events(corpus: Any, session: dict[str, Any]) -> pl.DataFrame:
    """The events a transcript shows: the log's, or for a log upstream cannot read, its lines before the damage."""
    events = corpus.log_events(session["list_order"])
    return readable_events(session) if events.height == 0 and session["verdict"] == "failed" else events


def test_every_event_is_in_exactly_one_row_of_the_sample() -> None:
    corpus = read_corpus(SAMPLE, cache=False)
    checked = 0
    for session in corpus.sessions.filter(pl.col("session_id").is_not_null()).iter_rows(named=True):
        if corpus.sessions.filter(pl.col("session_id") == session["session_id"]).height > 1:
            continue
        rows = transcript(corpus, session["session_id"])
        _seqs_partition(rows.filter(pl.col("kind") != "read-problem"), _shown_events(corpus, session))
        checked += 1
    assert checked >= 20


def test_every_event_is_in_exactly_one_row_of_a_generated_corpus(tmp_path: Path) -> None:
    from subagent_catalog.synth.generate import generate

    generate(tmp_path / "c", sessions=30, seed=5, compression="zstd", damaged_fraction=0.2, jobs=1)
    corpus = read_corpus(tmp_path / "c", cache=False)
    kinds: set[str] = set()
    for session in corpus.sessions.filter(pl.col("verdict") != "skipped").iter_rows(named=True):
        rows = transcript(corpus, session["session_id"], path=session["path"])
        _seqs_partition(rows.filter(pl.col("kind") != "read-problem"), _shown_events(corpus, session))
        assert (rows["kind"] == "read-problem").sum() == (0 if session["verdict"] == "ok" else 1)
        kinds |= set(rows["kind"])
    assert {"user", "assistant", "tool-call", "tool-result", "turn-start", "turn-end"} <= kinds


_EVENT_TYPES = st.sampled_from(
    ["assistant/chunk", "assistant/message", "tool/call", "tool/result", "turn/start", "turn/end", "step/start",
     "step/end", "user/message", "llm/retry", "subagent/descriptor", "x-other"]
)  # fmt: skip
_CHUNKS = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["text-delta", "reasoning-delta", "tool-call-delta", "block-start", "block-end",
                                 "usage", "finish", "weird"]),
        "index": st.integers(0, 3),
        "text": st.text(max_size=3),
    }
)  # fmt: skip


@st.composite
def _events(draw: st.DrawFn) -> pl.DataFrame:
    rows = []
    for seq in range(draw(st.integers(0, 40))):
        kind = draw(_EVENT_TYPES)
        turn = draw(st.sampled_from([None, 1, 2]))
        step = draw(st.sampled_from([None, 1, 2]))
        data: Any = {"turn": turn, "step": step}
        if kind == "assistant/chunk":
            data["chunk"] = draw(_CHUNKS)
        elif kind == "assistant/message":
            blocks = draw(st.lists(st.sampled_from(["text", "reasoning", "tool-call", "image"]), max_size=3))
            content = [{"type": b, "text": "t", "id": f"c{draw(st.integers(0, 2))}", "name": "n"} for b in blocks]
            data["message"] = {"content": draw(st.sampled_from([content, "legacy", None]))}
        elif kind in ("tool/call", "tool/result"):
            data["callId"] = f"c{draw(st.integers(0, 2))}"
        raw = draw(st.sampled_from([json.dumps(data), "not json", None]))
        rows.append(("s", seq, draw(st.integers(-5, 5)), kind, turn, step, None, False, raw, None, None))
    return pl.DataFrame(rows, schema=EVENT_SCHEMA, orient="row")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_events(), st.sampled_from([None, 0, 5]))
def test_property_rows_partition_the_events_in_log_order(events: pl.DataFrame, seed: int | None) -> None:
    rows = transcript_rows(events, seed_length=seed)
    _seqs_partition(rows, events)
    assert rows.schema == pl.Schema(TRANSCRIPT_SCHEMA)
    if seed is not None:
        assert rows["in_seed"].to_list() == [s is not None and s < seed for s in rows["seq"].to_list()]


def test_unknown_id_names_the_nearest_ids() -> None:
    corpus = read_corpus(GOLDEN, cache=False)
    with pytest.raises(SessionLookupError, match="no session log has id 'child'") as caught:
        transcript(corpus, "child")
    assert caught.value.hint == "did you mean child-t?"
    with pytest.raises(SessionLookupError) as caught:
        transcript(corpus, "zzzzzz")
    assert caught.value.hint is not None and "--compression" in caught.value.hint


def test_a_duplicate_id_needs_a_path(tmp_path: Path) -> None:
    first = write_session(tmp_path, header("twin", created_at=1, cwd="/a"), [], "none")
    log = EventLog("twin")
    log.turn_start()
    log.user("second")
    second = write_session(tmp_path, header("twin", created_at=2, cwd="/b"), log.events, "none")
    corpus = read_corpus(tmp_path, cache=False)
    with pytest.raises(SessionLookupError, match="2 logs have session id 'twin'") as caught:
        transcript(corpus, "twin")
    assert caught.value.hint == "pass path= to say which"
    assert transcript(corpus, "twin", path=str(first)).height == 0
    assert transcript(corpus, "twin", path=str(second))["text"].to_list() == ["turn 1", "second"]


def test_legacy_tool_result_shape(tmp_path: Path) -> None:
    log = EventLog("legacy")
    log.turn_start()
    log.add("tool/result", {"callId": "c9", "content": "old style", "isError": True})
    write_session(tmp_path, header("legacy", created_at=1), log.events, "none")
    rows = transcript(read_corpus(tmp_path, cache=False), "legacy")
    assert rows.filter(pl.col("kind") == "tool-result").select("call_id", "text", "is_error").row(0) == (
        "c9",
        "old style",
        True,
    )


def test_a_vanished_log_is_an_error_not_an_empty_transcript(tmp_path: Path) -> None:
    path = write_session(tmp_path, header("gone", created_at=1), [], "none")
    corpus = read_corpus(tmp_path, cache=False)
    Path(path).unlink()
    with pytest.raises(CorpusRootError, match="cannot read the log again"):
        transcript(corpus, "gone")


def test_archive_transcript_equals_the_corpus_one(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(GOLDEN, root)
    export_archive(root, tmp_path / "with", events=True, jobs=1)
    export_archive(root, tmp_path / "without", jobs=1)
    expected = transcript(read_corpus(root, cache=False), "child-t")
    archived = open_archive(tmp_path / "with").to_corpus()
    assert transcript(archived, "child-t").equals(expected)
    assert transcript(open_archive(tmp_path / "without").to_corpus(), "child-t").equals(expected)  # read from root
    shutil.rmtree(root)
    assert transcript(open_archive(tmp_path / "with").to_corpus(), "child-t").equals(expected)
    with pytest.raises(ArchiveError, match="holds no events"):
        transcript(open_archive(tmp_path / "without").to_corpus(), "child-t")


def test_html_escapes_everything_from_the_log(tmp_path: Path) -> None:
    log = EventLog("x<y")
    log.turn_start()
    log.user('<script>alert(1)</script> & "quotes"')
    log.tool_round("<c>", "<img src=x onerror=alert(2)>")
    write_session(tmp_path, header("x<y", created_at=1), log.events, "none")
    corpus = read_corpus(tmp_path, cache=False)
    page = transcript_page(corpus, "x<y")
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;" in page
    assert "Content-Security-Policy" in page and "http" not in page.split("<body>")[1]


def test_page_links_parent_and_children(golden: pl.DataFrame) -> None:
    corpus = read_corpus(GOLDEN, cache=False)
    child = transcript_page(corpus, "child-t")  # alone: no page of the parent next to it, so no link
    # each session is named (views.names.name_html) with its whole id beside the name
    assert 'title="parent-t">parent-t</code>' in child and "href=" not in child.replace('href="#', "")
    assert '<a href="parent-t.html">' in transcript_page(corpus, "child-t", link=page_file)
    parent = transcript_page(corpus, "parent-t", link=lambda target: f"#/{target}")
    assert '<a href="#/child-t">' in parent and 'title="child-t">child-t</code>' in parent
    assert "3 steps inherited from the parent" in child
    assert "requested, never started" in child  # call-2
    assert "failed (EXIT_NONZERO)" in child


def test_fragment_caps_rows_and_folds_long_texts() -> None:
    rows = pl.DataFrame(
        [
            {"seq": i, "seqs": [i], "time_ms": i, "kind": "tool-result", "text": "line\n" * 100, "partial": False,
             "in_seed": False, "is_error": False, "name": "shell"}
            for i in range(10)
        ],
        schema=TRANSCRIPT_SCHEMA,
    )  # fmt: skip
    html = transcript_fragment(rows, max_rows=3)
    assert html.count("← result of shell") == 3
    assert "7 more steps not shown" in html
    assert html.count("more characters</summary>") == 3  # 24 lines shown, the rest folded


def test_markdown_fences_texts_holding_backticks(tmp_path: Path) -> None:
    log = EventLog("md")
    log.turn_start()
    log.user("look: ```\n# not a heading\n````")
    write_session(tmp_path, header("md", created_at=1), log.events, "none")
    text = transcript_markdown(read_corpus(tmp_path, cache=False), "md")
    assert "`````text\nlook: ```\n# not a heading\n````\n`````" in text


def test_markdown_of_the_golden_log() -> None:
    text = transcript_markdown(read_corpus(GOLDEN, cache=False), "child-t")
    assert "- parent: `delegate it` (`parent-t`)" in text  # named (views.names), its id beside the name
    assert "*3 steps inherited from the parent (the fork's seed) are not shown.*" in text
    assert "**← result of** `shell` · 50 ms · **failed** `EXIT_NONZERO`" in text
    assert "partial: a retried attempt" in text
    assert text.count("delegate it") == 1  # the parent's name only: the seed row it comes from is not shown


def test_show_command(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["show", str(GOLDEN), "child-t", "-q"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# `Fix <b>tests</b>` (`child-t`)")  # its label, then its id
    out = tmp_path / "child-t.html"
    result = runner.invoke(main, ["show", str(GOLDEN), "child-t", "-o", str(out), "-q"], catch_exceptions=False)
    assert result.exit_code == 0 and out.read_text().startswith("<!DOCTYPE html>")
    md = tmp_path / "run.md"
    assert runner.invoke(main, ["show", str(GOLDEN), "child-t", "-o", str(md), "-q"]).exit_code == 0
    assert md.read_text().startswith("# `Fix <b>tests</b>` (`child-t`)")
    result = runner.invoke(main, ["show", str(GOLDEN), "child-x", "-q"])
    assert result.exit_code == 1
    assert "Error: no session log has id 'child-x' (hint: did you mean child-t?)" in result.output
    prefix = runner.invoke(main, ["show", str(GOLDEN), "chil", "-q"])  # a unique prefix names its session
    assert prefix.exit_code == 0 and prefix.output.startswith("# `Fix <b>tests</b>` (`child-t`)")
    inside = GOLDEN / "x.html"
    result = runner.invoke(main, ["show", str(GOLDEN), "child-t", "-o", str(inside), "-q"])
    assert result.exit_code != 0 and not inside.exists()


def test_browser_detail_pane_shows_the_transcript() -> None:
    from subagent_catalog.views.widgets import CatalogBrowser

    corpus = read_corpus(GOLDEN, cache=False)
    browser = CatalogBrowser(corpus)
    browser.select_id("child-t")
    steps = browser.selected_info["transcript"]
    assert steps.equals(transcript(corpus, "child-t"))
    pane = browser.detail
    assert f"transcript ({len(GOLDEN_ROWS)} steps" in pane
    assert "← result of shell" in pane and "Fix &lt;b&gt;tests&lt;/b&gt;" in pane
    assert "torn-tail: final record without newline" in pane


def test_browser_detail_pane_survives_a_vanished_log(tmp_path: Path) -> None:
    from subagent_catalog.views.widgets import CatalogBrowser

    path = write_session(tmp_path, header("gone", created_at=1), [], "none")
    corpus = read_corpus(tmp_path, cache=False)
    Path(path).unlink()
    browser = CatalogBrowser(corpus)
    browser.select_id("gone")
    assert browser.selected_info["transcript"] is None
    assert "events unavailable" in browser.detail and "cannot read the log again" in browser.detail


def test_an_id_only_named_as_a_parent_has_no_log(tmp_path: Path) -> None:
    write_session(tmp_path, header("kid", created_at=1, parent="lost", subagent=True), [], "none")
    corpus = read_corpus(tmp_path, cache=False)
    with pytest.raises(SessionLookupError, match="session 'lost' has no log in the corpus") as caught:
        transcript(corpus, "lost")
    assert not isinstance(caught.value, UnknownSessionError)
    with pytest.raises(UnknownSessionError) as unknown:
        transcript(corpus, "kod")
    assert unknown.value.nearest == ["kid"]


def test_lone_surrogates_become_replacement_characters(tmp_path: Path) -> None:
    head = b'{"type":"session","version":0,"id":"s\\ud83d","createdAt":1,"delegationDepth":0}\n'
    lines = [
        b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
        b'{"type":"user/message","seq":1,"time":2,"data":{"content":[{"type":"text","text":"a\\udc00b"}]}}',
        b'{"type":"turn/end","seq":2,"time":3,"data":{"turn":1,"reason":{"kind":"error","error":{"message":"x\\ud800"}}}}',
    ]
    path = tmp_path / "--p--" / "s" / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(head + b"\n".join(lines) + b"\n")
    corpus = read_corpus(tmp_path, cache=False)
    rows = transcript(corpus, "s\ufffd")
    assert rows["text"].to_list()[:3] == ["turn 1", "a\ufffdb", "error: x\ufffd"]  # then a read-problem row
    assert json.loads(rows["detail"][2])["reason"]["error"]["message"] == "x\ufffd"
    assert "x\ufffd" in transcript_page(corpus, "s\ufffd") and "x\ufffd" in transcript_markdown(corpus, "s\ufffd")


def test_browser_detail_pane_names_parent_and_children() -> None:
    from subagent_catalog.views.widgets import CatalogBrowser

    corpus = read_corpus(GOLDEN, cache=False)
    browser = CatalogBrowser(corpus)
    browser.select_id("parent-t")
    assert browser.selected_info["children"] == ["child-t"]
    assert "1: child-t" in browser.detail
    browser.select_id("child-t")
    assert browser.selected_info["children"] == [] and "parent-t" in browser.detail


# --------------------------------------------------------------------------- page names (issue 42 item 7)

_DEVICES = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def _stem(name: str) -> str:
    return name[: -len(".html")]


_BASE_IDS = st.one_of(
    st.text(max_size=24),
    st.text(st.characters(exclude_categories=()), max_size=12),  # lone surrogates too
    st.text(alphabet="aAbB09._-~ /\\:é\u0301", max_size=14),
    st.from_regex(r"[a-z0-9][a-z0-9._-]{0,99}", fullmatch=True),
    st.text(alphabet="aB.", min_size=96, max_size=104),  # around the 100-character plain limit
    st.text(min_size=200, max_size=600),
    st.sampled_from(["con", "CON", "Nul", "nul.tar", "com1", "LPT9.x", "aux.", "index", "manifest", ".", "..", ""]),
)


def _variants(value: str) -> st.SearchStrategy[str]:
    import unicodedata

    forms = [unicodedata.normalize(form, value) for form in ("NFC", "NFD", "NFKC", "NFKD")]
    spoofs = [_stem(page_file(value)), page_file(value), _stem(page_file(value)).upper()]
    return st.sampled_from([value, value.upper(), value.lower(), value.swapcase(), *forms, *spoofs])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_BASE_IDS.flatmap(_variants), max_size=24, unique=True))
def test_page_names_are_injective_over_adversarial_ids_on_any_file_system(ids: list[str]) -> None:
    """Two ids never share a page: not when one is spelled like the other's page name, nor on a
    case-insensitive or normalising file system, and no name is a device, hidden, too long or a path."""
    import unicodedata

    from subagent_catalog.views.output_site import SITE_MANIFEST
    from subagent_catalog.views.page_names import CHILDREN_NAME, PAGE_NAME, children_file

    names = [page_file(value) for value in ids]
    for form in ("NFC", "NFD", "NFKC"):
        folded = {unicodedata.normalize(form, name).casefold() for name in names}
        assert len(folded) == len(ids), (ids, names)
    for name in names:
        assert PAGE_NAME.fullmatch(name) and not CHILDREN_NAME.fullmatch(name)
        assert name.isascii() and name == name.lower() and len(name.encode()) <= 255
        assert not name.startswith(".") and "/" not in name and "\\" not in name
        assert name.split(".")[0] not in _DEVICES and name != SITE_MANIFEST
    more = {children_file(value, part) for value in ids for part in (2, 3)}
    assert not more & set(names) and all(CHILDREN_NAME.fullmatch(name) for name in more)
    assert len(more) == 2 * len(ids)


def test_an_id_spelled_like_another_ids_page_name_gets_a_page_of_its_own(tmp_path: Path) -> None:
    """Issue 42 item 7: ``build step``'s page was ``build_step-af47ceea32.html``, the plain name of the id
    ``build_step-af47ceea32``: the run's link opened the spoofing log's transcript."""
    from subagent_catalog.views.transcript_tree import write_tree_pages

    assert page_file("build step") != page_file("build_step-af47ceea32")
    root = tmp_path / "corpus"
    write_session(root, header("run", created_at=1), [], "none")
    for index, (sid, text) in enumerate([("build step", "the real step"), ("build_step-af47ceea32", "SPOOF")]):
        log = EventLog(sid)
        log.turn_start()
        log.user(text)
        log.turn_end()
        write_session(root, header(sid, created_at=2 + index, parent="run", subagent=True), log.events, "none")
    pages = write_tree_pages(read_corpus(root, cache=False), "run", tmp_path / "pages")
    assert len(pages.pages) == 3 and len({page.name for page in pages.pages}) == 3
    run_page = pages.top.read_text(encoding="utf-8")
    target = tmp_path / "pages" / page_file("build step")
    # the link is the child's name (its first prompt), its whole id beside it
    link = re.search(rf'<a href="{re.escape(target.name)}">(.*?)</a> <code class="nm-id" title="([^"]*)"', run_page)
    assert link is not None and "the real step" in link[1] and link[2] == "build step"
    opened = target.read_text(encoding="utf-8")
    assert "the real step" in opened and "SPOOF" not in opened


def test_ids_differing_only_in_case_get_names_differing_on_a_case_insensitive_file_system() -> None:
    pairs = [("P", "p"), ("Run-1", "run-1"), ("ABC", "abc"), ("é", "É")]
    for upper, lower in pairs:
        assert page_file(upper).casefold() != page_file(lower).casefold(), (upper, lower)


def test_windows_device_names_and_hidden_names_are_never_page_names() -> None:
    for sid in ["con", "NUL", "nul.tar", "com1", "lpt9.log", ".", "..", ".hidden", "_x"]:
        name = page_file(sid)
        assert name.startswith("_") and name.split(".")[0].lower() not in _DEVICES, (sid, name)
    assert page_file("manifest") == "manifest.html"
    assert page_file("index").startswith("_index_")  # index.html is the site's start page, never a session's
