"""search_events: literal and regex search over decoded event text, over raw corpora and archives."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subagent_catalog import SubagentCatalogError, read_corpus, search_events
from subagent_catalog.analysis.search import (
    DEFAULT_TYPES,
    FIELD_ORDER,
    SEARCH_SCHEMA,
    SearchError,
    event_texts,
)
from subagent_catalog.analysis.search_match import compile_pattern
from subagent_catalog.errors import CorpusRootError
from subagent_catalog.read.event_text import PART_SEPARATOR
from subagent_catalog.read.jsvalue import frame_text, json_text
from subagent_catalog.read.search_scan import _FOLD_EXTRA, _healthy, needle_for
from subagent_catalog.store import archive_search
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.store.layout import ArchiveError
from subagent_catalog.store.location import Location, footer_column_min, parquet_column_min

from .helpers import EventLog, header, raw_log, write_raw, write_session

search_module = importlib.import_module("subagent_catalog.analysis.search")

MODEL = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}


def assistant(log: EventLog, content: Any, *, step: int = 1) -> None:
    """An assistant/message with the given content (a list of blocks, or a legacy string)."""
    log.add(
        "assistant/message",
        {
            "turn": log.turn,
            "step": step,
            "message": {"id": f"m{len(log.events)}", "role": "assistant", "content": content, "source": MODEL},
        },
        surfaceOp="append",
    )


def tool_result(log: EventLog, text: str, *, error: dict[str, str] | None = None) -> None:
    data: dict[str, Any] = {
        "turn": log.turn,
        "step": 1,
        "message": {
            "id": f"r{len(log.events)}",
            "role": "user",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "call-1",
                    "content": [{"type": "text", "text": text}],
                    "isError": error is not None,
                }
            ],
            "source": {"kind": "tool", "callId": "call-1"},
        },
    }
    if error is not None:
        data["error"] = error
    log.add("tool/result", data, surfaceOp="append")


def build(root: Path) -> None:
    """Three sessions in two projects with every text-bearing shape."""
    a = EventLog("a")
    a.turn_start()
    a.user('please fix the "retry" loop\nin loader.py')  # seq 1
    assistant(
        a,
        [
            {"type": "reasoning", "text": "the retry loop never sleeps"},
            {"type": "text", "text": "I will fix the retry loop."},
            {"type": "tool-call", "id": "call-1", "name": "read_file", "arguments": '{"path": "retry.py"}'},
        ],
    )  # seq 2
    a.add(
        "tool/call",
        {"turn": 1, "step": 1, "callId": "call-1", "name": "read_file", "arguments": '{"path": "retry.py"}'},
    )  # seq 3
    tool_result(a, "def retry():\n    while True:\n        pass\n")  # seq 4
    a.add("assistant/chunk", {"turn": 1, "step": 2, "chunk": {"type": "text-delta", "index": 0, "text": "ret"}})
    a.add("assistant/chunk", {"turn": 1, "step": 2, "chunk": {"type": "text-delta", "index": 0, "text": "ry done"}})
    assistant(a, [{"type": "text", "text": "retry done"}], step=2)  # seq 7
    a.turn_end()
    write_session(root, header("a", created_at=1, cwd="/work/alpha"), a.events, "none")

    b = EventLog("b")
    b.turn_start()
    b.descriptor({"version": 2, "mode": "continuable", "provider": "spawn", "label": "Retry auditor"})  # seq 1
    b.user("Ünïcödé — naïve café ✓ 😀 İstanbul")  # seq 2
    tool_result(b, "permission denied", error={"name": "ToolError", "code": "EACCES"})  # seq 3
    b.add(
        "turn/end",
        {"turn": 1, "reason": {"kind": "error", "error": {"message": "provider overloaded", "code": "RATE_LIMITED"}}},
    )  # seq 4
    b.add("request/context", {"provider": "deepseek-retry-proxy", "contextWindow": 1000})  # seq 5
    write_session(root, header("b", created_at=2, cwd="/work/beta"), b.events, "none")

    c = EventLog("c")
    c.turn_start()
    c.user("retry " * 5 + 'and a quote " and a backslash \\ and a tab\t.')
    c.turn_end()
    write_session(root, header("c", created_at=3, cwd="/work/alpha"), c.events, "none")

    d = EventLog("d")  # a legacy log: assistant content as a plain string (the reader flags it)
    d.turn_start()
    assistant(d, "a legacy string body")
    write_session(root, header("d", created_at=4, cwd="/work/beta"), d.events, "none")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    build(tmp_path / "corpus")
    return tmp_path / "corpus"


def rows(frame: pl.DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    return frame.select(columns or ("session_id", "seq", "field")).rows()


# --- what matches -------------------------------------------------------------------------------


def test_result_has_the_declared_schema(root: Path) -> None:
    found = search_events(read_corpus(root), "retry")
    assert dict(found.schema) == SEARCH_SCHEMA
    assert found.height > 0
    assert dict(search_events(read_corpus(root), "no such text anywhere").schema) == SEARCH_SCHEMA


def test_literal_finds_every_text_bearing_field_in_order(root: Path) -> None:
    found = search_events(read_corpus(root), "retry")
    assert rows(found) == [
        ("a", 1, "text"),
        ("a", 2, "text"),
        ("a", 2, "reasoning"),
        ("a", 2, "arguments"),
        ("a", 3, "arguments"),
        ("a", 4, "result"),
        ("a", 7, "text"),
        ("c", 1, "text"),
    ]
    assert found.filter(pl.col("session_id") == "c")["matches"].to_list() == [5]
    assert set(found["project_dir"]) == {"--work-alpha--"}


def test_fields_follow_field_order_within_an_event(root: Path) -> None:
    found = search_events(read_corpus(root), "retry").filter(pl.col("seq") == 2, pl.col("session_id") == "a")
    ranks = [FIELD_ORDER.index(f) for f in found["field"]]
    assert ranks == sorted(ranks)


def test_regex(root: Path) -> None:
    found = search_events(read_corpus(root), r"denied|overload\w+", regex=True)
    assert rows(found, "session_id", "seq", "field", "snippet") == [
        ("b", 3, "result", "permission denied"),
        ("b", 4, "error", "provider overloaded"),
    ]


def test_ignore_case_literal_and_regex(root: Path) -> None:
    assert rows(search_events(read_corpus(root), "RETRY AUDITOR")) == []
    assert rows(search_events(read_corpus(root), "RETRY AUDITOR", ignore_case=True)) == [("b", 1, "label")]
    assert rows(search_events(read_corpus(root), "r[a-z]+ auditor", regex=True, ignore_case=True)) == [
        ("b", 1, "label")
    ]


def test_ignore_case_follows_the_regex_engines_simple_case_folding(root: Path) -> None:
    # the engine folds by Unicode simple case folding: "i" is not U+0130 (İ has only a Turkic or full
    # folding), which Python's re.IGNORECASE matched; "İstanbul" itself is found, in any case
    assert rows(search_events(read_corpus(root), "istanbul", ignore_case=True)) == []
    assert rows(search_events(read_corpus(root), "İSTANBUL", ignore_case=True)) == [("b", 2, "text")]


def test_types_filter_and_chunks_of_a_finished_stream_have_no_text(root: Path) -> None:
    corpus = read_corpus(root)
    assert "assistant/chunk" in DEFAULT_TYPES  # only a stream that never got its message has chunk text
    assert rows(search_events(corpus, "ry done")) == [("a", 7, "text")]
    assert rows(search_events(corpus, "ry done", types=["assistant/chunk"])) == []
    assert rows(search_events(corpus, "retry", types=["tool/call", "tool/result"])) == [
        ("a", 3, "arguments"),
        ("a", 4, "result"),
    ]


def test_other_types_search_every_string_value(root: Path) -> None:
    found = search_events(read_corpus(root), "retry-proxy", types=["request/context"])
    assert rows(found) == [("b", 5, "data")]


def test_quote_in_pattern_matches_the_text_quote(root: Path) -> None:
    found = search_events(read_corpus(root), '"retry"')
    assert rows(found, "session_id", "seq", "snippet") == [("a", 1, 'please fix the "retry" loop\nin loader.py')]
    assert rows(search_events(read_corpus(root), 'quote " and a backslash \\ and a tab\t')) == [("c", 1, "text")]


def test_newline_in_pattern(root: Path) -> None:
    assert rows(search_events(read_corpus(root), "loop\nin")) == [("a", 1, "text")]
    assert rows(search_events(read_corpus(root), "while True:\n", regex=False)) == [("a", 4, "result")]


def test_unicode_text(root: Path) -> None:
    found = search_events(read_corpus(root), "café ✓ 😀")
    assert rows(found, "session_id", "seq", "snippet") == [("b", 2, "Ünïcödé — naïve café ✓ 😀 İstanbul")]


def test_json_keys_never_match(root: Path) -> None:
    corpus = read_corpus(root)
    for key in ("type", "content", "toolCallId", '"text"', "source", "role"):
        assert search_events(corpus, key, types=list(DEFAULT_TYPES)).height == 0, key


def test_non_text_values_of_known_types_are_not_searched(root: Path) -> None:
    corpus = read_corpus(root)
    assert search_events(corpus, "deepseek-chat").height == 0  # the message source
    assert search_events(corpus, "call-1").height == 0  # call ids
    assert search_events(corpus, "continuable").height == 0  # descriptor mode


def test_tool_result_error_and_turn_error(root: Path) -> None:
    corpus = read_corpus(root)
    assert rows(search_events(corpus, "EACCES")) == [("b", 3, "error")]
    assert rows(search_events(corpus, "RATE_LIMITED")) == [("b", 4, "error")]


def test_legacy_string_content(root: Path) -> None:
    assert rows(search_events(read_corpus(root), "legacy string")) == [("d", 1, "text")]


def test_snippet_cut_marks_and_context(root: Path) -> None:
    found = search_events(read_corpus(root), "loader", context=5)
    assert found["snippet"].to_list() == ["…p\nin loader.py"]
    found = search_events(read_corpus(root), "fix", context=3, types=["user/message"])
    assert found["snippet"].to_list() == ["…se fix th…"]
    assert search_events(read_corpus(root), "fix", context=0, types=["user/message"])["snippet"].to_list() == ["…fix…"]


def test_matches_counts_every_block_of_the_field(tmp_path: Path) -> None:
    log = EventLog("m")
    log.turn_start()
    assistant(log, [{"type": "text", "text": "ab ab"}, {"type": "text", "text": "xx ab"}])
    write_session(tmp_path, header("m", created_at=1), log.events, "none")
    found = search_events(read_corpus(tmp_path), "ab")
    assert rows(found, "field", "matches", "snippet") == [("text", 3, "ab abxx ab")]  # adjacent blocks: one text


def test_a_phrase_across_two_blocks_of_one_message_is_found(tmp_path: Path) -> None:
    log = EventLog("m")
    log.turn_start()
    assistant(log, [{"type": "text", "text": "Build leak "}, {"type": "text", "text": "replica now"}])
    write_session(tmp_path, header("m", created_at=1), log.events, "none")
    for corpus in (read_corpus(tmp_path, cache=False), read_corpus(tmp_path, cache=False, events=True)):
        found = search_events(corpus, "leak replica")
        assert rows(found, "seq", "field", "block", "start", "end") == [(1, "text", 0, 6, 18)]
        text = corpus.events.filter(pl.col("seq") == 1)["text"][0]
        assert text[6:18] == "leak replica"


def test_limit_gives_the_first_rows(root: Path) -> None:
    corpus = read_corpus(root)
    everything = search_events(corpus, "retry")
    for limit in (1, 3, 7, 8, 100):
        assert search_events(corpus, "retry", limit=limit).equals(everything.head(limit)), limit
    assert search_events(corpus, "retry", limit=0).height == 0


def test_limit_stops_reading_logs(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    from subagent_catalog.read import search_scan

    read: list[str] = []
    original = search_scan.scan_log

    def counting(args: Any) -> Any:
        read.append(args[0])
        return original(args)

    monkeypatch.setattr(search_scan, "scan_log", counting)
    assert search_events(read_corpus(root), "retry", limit=2).height == 2
    assert len(read) == 1


def test_loaded_events_give_the_same_rows(root: Path) -> None:
    streamed = search_events(read_corpus(root), "retry")
    assert search_events(read_corpus(root, events=True), "retry").equals(streamed)


def test_duplicate_session_ids_keep_their_own_project(tmp_path: Path) -> None:
    for cwd in ("/p/one", "/p/two"):
        log = EventLog("dup")
        log.turn_start()
        log.user(f"hello from {cwd}")
        write_session(tmp_path, header("dup", created_at=1, cwd=cwd), log.events, "none")
    for corpus in (read_corpus(tmp_path), read_corpus(tmp_path, events=True)):
        found = search_events(corpus, "hello")
        assert rows(found, "project_dir", "snippet") == [
            ("--p-one--", "hello from /p/one"),
            ("--p-two--", "hello from /p/two"),
        ]


def test_lone_surrogates_and_control_characters(tmp_path: Path) -> None:
    head = header("s", created_at=1)
    event = (
        b'{"type":"user/message","seq":0,"time":5,"data":{"content":[{"type":"text","text":'
        b'"odd \\ud800 text \\u0001 here"}],"source":{"kind":"user"},"role":"user","id":"u1"}}\n'
    )
    write_raw(tmp_path, head, raw_log(head, [event], "none"), "none")
    corpus = read_corpus(tmp_path)
    assert rows(search_events(corpus, "odd \ud800 text"), "seq", "snippet") == [(0, "odd \ufffd text \x01 here")]
    assert rows(search_events(corpus, "text \x01"), "seq") == [(0,)]


def test_zstd_corpus(tmp_path: Path) -> None:
    log = EventLog("z")
    log.turn_start()
    log.user("compressed needle")
    write_session(tmp_path, header("z", created_at=1), log.events, "zstd")
    assert rows(search_events(read_corpus(tmp_path), "needle")) == [("z", 1, "text")]


# --- archives -----------------------------------------------------------------------------------


SEARCHES: list[dict[str, Any]] = [
    {"pattern": "retry"},
    {"pattern": "retry", "limit": 3},
    {"pattern": "RETRY", "ignore_case": True},
    {"pattern": r"over\w+|denied", "regex": True},
    {"pattern": "ry", "types": ["assistant/chunk", "user/message"]},
    {"pattern": '"retry"', "context": 2},
]


def test_archive_and_corpus_give_identical_rows(root: Path, tmp_path: Path) -> None:
    export_archive(root, tmp_path / "archive", events=True, jobs=1)
    archive = open_archive(tmp_path / "archive")
    corpus = read_corpus(root)
    for options in SEARCHES:
        expected = search_events(corpus, **options)
        assert expected.height > 0, options
        assert search_events(archive, **options).equals(expected), options


def test_archive_limit_over_many_files(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    for index in range(12):
        log = EventLog(f"s{index:02d}")
        log.turn_start()
        log.user(f"needle {index}")
        write_session(root, header(f"s{index:02d}", created_at=index, cwd=f"/p/{index % 3}"), log.events, "none")
    export_archive(root, tmp_path / "archive", events=True, jobs=1)
    archive = open_archive(tmp_path / "archive")
    everything = search_events(read_corpus(root), "needle")
    assert everything.height == 12
    for limit in (1, 5, 12):
        assert search_events(archive, "needle", limit=limit).equals(everything.head(limit))


def test_archive_scan_in_groups_of_files_gives_the_same_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "corpus"
    for index in range(12):
        log = EventLog(f"s{index:02d}")
        log.turn_start()
        log.user(f"needle {index}, Ünïcödé needle")
        log.user("a plain needle")
        write_session(root, header(f"s{index:02d}", created_at=index, cwd=f"/p/{index % 3}"), log.events, "none")
    export_archive(root, tmp_path / "archive", events=True, jobs=1)
    archive = open_archive(tmp_path / "archive")
    assert len(archive.manifest["tables"]["events"]["files"]) == 3
    expected = search_events(read_corpus(root), "needle")
    assert expected.height == 24  # two messages a log, one row each
    for files in (1, 2, 3):
        for size in (1, 200, 10_000):  # candidates matched a group at a time, several groups at once, or all at once
            monkeypatch.setattr(archive_search, "ARCHIVE_SCAN_FILES", files)
            monkeypatch.setattr(search_module, "MATCH_BATCH_BYTES", size)
            assert search_events(archive, "needle").equals(expected), (files, size)


def test_archive_limit_takes_first_orders_from_footer_statistics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "corpus"
    for index in range(6):
        log = EventLog(f"s{index}")
        log.turn_start()
        log.user(f"needle {index}")
        write_session(root, header(f"s{index}", created_at=index, cwd=f"/p/{index % 3}"), log.events, "none")
    export_archive(root, tmp_path / "archive", events=True, jobs=1)
    archive = open_archive(tmp_path / "archive")
    expected = search_events(read_corpus(root), "needle")
    read: list[Any] = []
    real = archive_search.iter_parquet

    def recording(*args: Any, **kwargs: Any) -> Any:
        read.append(kwargs.get("columns"))
        return real(*args, **kwargs)

    import pyarrow.parquet as pq

    footers: list[Any] = []
    real_metadata = pq.read_metadata

    def counting(*args: Any, **kwargs: Any) -> Any:
        footers.append(args[0])
        return real_metadata(*args, **kwargs)

    monkeypatch.setattr(archive_search, "iter_parquet", recording)
    monkeypatch.setattr(pq, "read_metadata", counting)
    assert search_events(archive, "needle", limit=2).equals(expected.head(2))
    assert ["list_order"] not in read  # no file's list_order column was read: its footer told
    events_files = archive.manifest["tables"]["events"]["files"]
    assert len(events_files) == 3 and len(footers) == 3  # each footer read once, by the archive's check
    assert search_events(archive, "needle", limit=2).equals(expected.head(2))
    assert len(footers) == 3  # and never again by this archive
    archive._first_orders["events"] = dict.fromkeys(events_files)  # no statistics: read the column
    assert search_events(archive, "needle", limit=2).equals(expected.head(2))
    assert ["list_order"] in read


def test_parquet_column_min_says_none_when_statistics_do_not_tell(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    here = Location(str(tmp_path))
    pq.write_table(pa.table({"a": [4, 2, 7]}), here.full("plain.parquet"), write_statistics=False)
    pq.write_table(pa.table({"a": pa.array([], pa.int64())}), here.full("empty.parquet"))
    pq.write_table(pa.table({"a": pa.array([5, None, None], pa.int64())}), here.full("nulls.parquet"), row_group_size=1)
    pq.write_table(pa.table({"a": [9, 8, 1, 6]}), here.full("groups.parquet"), row_group_size=2)
    assert parquet_column_min(here, "plain.parquet", "a") is None
    assert parquet_column_min(here, "empty.parquet", "a") is None
    assert parquet_column_min(here, "nulls.parquet", "a") is None  # a row group of nulls only has no minimum
    assert parquet_column_min(here, "groups.parquet", "a") == 1
    assert parquet_column_min(here, "groups.parquet", "b") is None
    assert footer_column_min(pq.read_metadata(here.full("groups.parquet")), "a") == 1


def test_offsets_of_ascii_and_non_ascii_texts_agree_with_python(tmp_path: Path) -> None:
    texts = ["plain needle here", "Ünïcödé 😀 needle", "needle first", "😀😀 x needle needle", "éé\nneedle"]
    log = EventLog("u")
    log.turn_start()
    for text in texts:
        log.user(text)
    assistant(log, [{"type": "text", "text": "😀 needle"}, {"type": "reasoning", "text": "needle é"}])
    write_session(tmp_path / "corpus", header("u", created_at=1), log.events, "none")
    export_archive(tmp_path / "corpus", tmp_path / "archive", events=True, jobs=1)
    for source in (read_corpus(tmp_path / "corpus"), open_archive(tmp_path / "archive")):
        found = search_events(source, "needle", context=3)
        users = found.filter(pl.col("type") == "user/message")
        assert users.select("start", "end").rows() == [(t.index("needle"), t.index("needle") + 6) for t in texts]
        assert users["snippet"].to_list() == [
            ("…" if t.index("needle") > 3 else "")
            + t[max(0, t.index("needle") - 3) : t.index("needle") + 9]
            + ("…" if t.index("needle") + 9 < len(t) else "")
            for t in texts
        ]
        message = found.filter(pl.col("type") == "assistant/message")
        text = "😀 needle" + PART_SEPARATOR + "needle é"
        assert message.select("field", "start").rows() == [
            ("text", text.index("needle")),
            ("reasoning", text.rindex("needle")),
        ]


def test_archive_corpus_searches_the_archive_events(root: Path, tmp_path: Path) -> None:
    expected = search_events(read_corpus(root), "retry")
    copy = tmp_path / "moved"
    shutil.copytree(root, copy)
    export_archive(copy, tmp_path / "archive", events=True, jobs=1)
    shutil.rmtree(copy)
    assert search_events(open_archive(tmp_path / "archive").to_corpus(), "retry").equals(expected)


def test_archive_without_events_reads_its_root_or_is_refused_with_a_hint(root: Path, tmp_path: Path) -> None:
    export_archive(root, tmp_path / "archive", jobs=1)
    over_root = search_events(read_corpus(root), "retry")  # while its recorded root is here, the logs are read
    assert search_events(open_archive(tmp_path / "archive"), "retry").equals(over_root) and over_root.height
    shutil.rmtree(root)
    with pytest.raises(ArchiveError, match="holds no events") as caught:
        search_events(open_archive(tmp_path / "archive"), "retry")
    assert caught.value.hint is not None and "events=True" in caught.value.hint


def test_a_vanished_root_is_refused(root: Path, tmp_path: Path) -> None:
    corpus = read_corpus(root)
    shutil.rmtree(root)
    with pytest.raises(CorpusRootError, match="not a directory"):
        search_events(corpus, "retry")


# --- errors -------------------------------------------------------------------------------------


def test_invalid_regex_names_the_pattern(root: Path) -> None:
    with pytest.raises(SearchError, match=re.escape("invalid regular expression 'retry(': ")) as caught:
        search_events(read_corpus(root), "retry(", regex=True)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, SubagentCatalogError)
    assert "regex=False" in str(caught.value)


def test_invalid_regex_is_fine_as_a_literal(root: Path) -> None:
    assert rows(search_events(read_corpus(root), "retry(")) == [("a", 4, "result")]  # def retry():


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pattern": ""}, "non-empty string"),
        ({"pattern": "x", "types": "tool/result"}, "list of event type names"),
        ({"pattern": "x", "types": []}, "types is empty"),
        ({"pattern": "x", "limit": -1}, "limit must be"),
        ({"pattern": "x", "limit": True}, "limit must be"),
        ({"pattern": "x", "context": -3}, "context must be"),
    ],
)
def test_bad_options_are_refused_with_a_hint(root: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(SearchError, match=message) as caught:
        search_events(read_corpus(root), **options)
    assert caught.value.hint


def test_other_sources_are_refused() -> None:
    with pytest.raises(SearchError, match="cannot search a str"):
        search_events("some/root", "x")  # type: ignore[arg-type]


# --- the prefilter ------------------------------------------------------------------------------


def test_the_extra_case_table_holds_every_character_the_search_engine_matches() -> None:
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    characters = pl.Series(list(every), dtype=pl.String)
    for letter in "abcdefghijklmnopqrstuvwxyz":
        table = {letter, letter.upper(), *_FOLD_EXTRA.get(letter, ())}
        engine = set(characters.filter(characters.str.contains("(?i)" + letter)).to_list())
        assert {letter, letter.upper()} <= engine <= table, letter  # the byte needle keeps every engine match
    for char in map(chr, range(128)):
        if not char.isalpha():
            assert set(re.findall(re.escape(char), every, re.IGNORECASE)) == {char}, repr(char)


def test_the_byte_needle_decodes_every_line_where_escaping_is_not_verbatim() -> None:
    none: frozenset[str] = frozenset()
    assert needle_for("x", regex=True, ignore_case=False, types=none).mode == "all"
    assert needle_for("a\ud800", regex=False, ignore_case=False, types=none).mode == "all"
    assert needle_for("é", regex=False, ignore_case=True, types=none).mode == "all"
    assert needle_for("é", regex=False, ignore_case=False, types=none).mode == "literal"
    assert needle_for("a", regex=False, ignore_case=True, types=none).mode == "fold"


TRICKY = list('"\\/\n\r\t\b\f\x00\x01\x1f\x7f ÉéİıKkſSs\u2028\u2029\ufeff\ud800\udbff\udc00\udfff\ud83d\ude00😀 {}[]:,')
CHARS = st.one_of(st.characters(), st.sampled_from(TRICKY), st.sampled_from(list("abcikqsxyzAIKS")))


def _data(kind: str, text: str) -> Any:
    if kind == "user/message":
        return {"content": [{"type": "text", "text": text}], "role": "user", "source": {"kind": "user"}}
    if kind == "tool/call":
        return {"name": "x", "arguments": text, "callId": "c"}
    if kind == "subagent/descriptor":
        return {"version": 2, "label": text}
    return {"message": {"content": [{"type": "tool-result", "content": [{"type": "text", "text": text}]}]}}


def _engine_finds(pattern: str, texts: list[str], ignore_case: bool) -> bool:
    """The reference: the pattern in one of the decoded texts, by the search engine itself."""
    series = pl.Series(texts, dtype=pl.String)
    if ignore_case:
        return bool(series.str.contains("(?i)" + pl.escape_regex(pattern)).any())
    return bool(series.str.contains(pattern, literal=True).any())


@settings(max_examples=400)
@given(
    text=st.text(CHARS, max_size=30),
    picked=st.tuples(st.integers(0, 30), st.integers(1, 8)),
    other=st.text(CHARS, min_size=1, max_size=4),
    use_substring=st.booleans(),
    ignore_case=st.booleans(),
    kind=st.sampled_from(["user/message", "tool/call", "subagent/descriptor", "tool/result"]),
)
def test_the_byte_needle_never_drops_a_true_match(
    text: str, picked: tuple[int, int], other: str, use_substring: bool, ignore_case: bool, kind: str
) -> None:
    line = json_text({"type": kind, "seq": 0, "time": 1, "data": _data(kind, text)}).encode("utf-8", "surrogatepass")
    texts = [frame_text(t) or "" for _, t in event_texts(kind, _data(kind, text))]
    source = texts[-1] if texts else ""
    start, size = picked
    pattern = source[start : start + size] if use_substring and source[start : start + size] else other
    if ignore_case and use_substring:
        pattern = pattern.swapcase()
    if "\x1f" in pattern or not (frame_text(pattern) or ""):
        return
    needle = needle_for(pattern, regex=False, ignore_case=ignore_case, types=frozenset({kind}))
    found = _healthy(line + b"\n", needle)
    if found is None:  # a line orjson refuses (a lone surrogate): the log goes to the reader, which keeps it
        assert b"\\ud" in line.lower(), line
        return
    if _engine_finds(frame_text(pattern) or "", texts, ignore_case):
        assert found, (pattern, line)


def test_a_healthy_log_with_a_lone_surrogate_is_searched_by_the_reader(tmp_path: Path) -> None:
    """orjson refuses ``\\ud800``; the search used to fail with its JSONDecodeError instead of reading the log."""
    line = json_text({"type": "tool/call", "seq": 0, "time": 1, "data": _data("tool/call", "bad \ud800 needle")})
    assert (
        _healthy(
            line.encode("utf-8", "surrogatepass") + b"\n",
            needle_for("needle", regex=False, ignore_case=False, types=frozenset({"tool/call"})),
        )
        is None
    )
    root = tmp_path / "c"
    folder = root / "--p--" / "s1"
    folder.mkdir(parents=True)
    head = json_text({"type": "session", "version": 0, "id": "s1", "createdAt": 1, "delegationDepth": 0})
    (folder / "session.jsonl").write_bytes((head + "\n" + line + "\n").encode("utf-8", "surrogatepass"))
    corpus = read_corpus(root, compression="none", cache=False)
    assert corpus.sessions["verdict"].to_list() == ["ok"]
    hits = search_events(corpus, "needle")
    assert hits["session_id"].to_list() == ["s1"]


KEYS = ["type", "seq", "time", "data", "content", "text", "role", "source", "kind", "id", "callId", "toolCallId"]


@settings(max_examples=80, deadline=None)
@given(
    words=st.lists(st.text(st.sampled_from(list("abc xyz")), min_size=1, max_size=8), min_size=1, max_size=3),
    pattern=st.one_of(
        st.sampled_from([*KEYS, "msg-1", "call-7", "user", "tool-result"]), st.text("abc xy", min_size=1, max_size=3)
    ),
    ignore_case=st.booleans(),
)
def test_keys_and_ids_are_never_matched(
    tmp_path_factory: Any, words: list[str], pattern: str, ignore_case: bool
) -> None:
    """Hits exist exactly when the decoded reference text holds the pattern (never in keys, ids or roles)."""
    root = tmp_path_factory.mktemp("keys")
    log = EventLog("s1")
    log.turn_start()
    log.add(
        "user/message",
        {
            "id": "msg-1",
            "role": "user",
            "source": {"kind": "user"},
            "content": [{"type": "text", "text": w} for w in words],
        },
        surfaceOp="append",
    )
    log.add("tool/call", {"turn": 1, "step": 1, "callId": "call-7", "name": words[0], "arguments": words[-1]})
    tool_result(log, words[-1])
    log.turn_end()
    write_session(root, header("s1", created_at=1), log.events, "none")
    reference = ["".join(words), words[0], words[-1], words[-1]]
    expected = _engine_finds(pattern, reference, ignore_case)
    for corpus in (read_corpus(root, cache=False), read_corpus(root, cache=False, events=True)):
        found = search_events(corpus, pattern, ignore_case=ignore_case)
        assert (found.height > 0) == expected, (pattern, words)


@settings(max_examples=60)
@given(text=st.text(CHARS, min_size=1, max_size=20), ignore_case=st.booleans())
def test_search_finds_any_substring_through_the_reader(tmp_path_factory: Any, text: str, ignore_case: bool) -> None:
    root = tmp_path_factory.mktemp("prop")
    head = header("p", created_at=1)
    event = {"type": "user/message", "seq": 0, "time": 1, "data": _data("user/message", text)}
    write_raw(root, head, raw_log(head, [json_text(event).encode() + b"\n"], "none"), "none")
    corpus = read_corpus(root, events=True)
    stored = corpus.events["data"].to_list()
    if not stored:
        return
    texts = [t for _, t in event_texts("user/message", json.loads(stored[0]))]
    if not texts or not texts[0]:
        return
    pattern = texts[0][len(texts[0]) // 3 :][:5] or texts[0]
    if "\x1f" in pattern:
        return  # the part separator is never text (a U+001F in a text is stored as U+FFFD)
    found = search_events(corpus, pattern, ignore_case=ignore_case)
    assert found.height == 1, (pattern, stored[0])
    assert search_events(read_corpus(root), pattern, ignore_case=ignore_case).equals(found)


FOLDING = "kK\u212asS\u017f\u00df\u1e9e\u0130i\u0131I\u03a3\u03c3\u03c2\u00e9\u00c9a\U0001f600 "


@settings(max_examples=300, deadline=None)
@given(pattern=st.text(FOLDING, min_size=1, max_size=4), text=st.text(FOLDING, max_size=24))
def test_a_case_insensitive_literal_match_spans_the_patterns_characters(pattern: str, text: str) -> None:
    """``Pattern.chars``: the engine's simple case folding maps one character to one, so no match is measured."""
    compiled = compile_pattern(pattern, regex=False, ignore_case=True)
    assert compiled.chars == len(pattern)
    found = pl.Series([text]).str.extract(compiled.source, 0)[0]
    if found is not None:
        assert len(found) == compiled.chars
