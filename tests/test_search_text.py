"""The decoded ``text`` column and the search over it: chunk-only text, blocks joined, every source alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from subagent_catalog import read_corpus, search_events, search_sessions
from subagent_catalog.analysis.search import SESSION_HITS_SCHEMA
from subagent_catalog.analysis.transcript import transcript
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from tests.helpers import header, one_encoding, raw_log, write_raw

GOLDEN = Path(__file__).parent / "data" / "search"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "cases"
RICH = SHARED / "real-writer-rich-none" / "corpus"


def _cases() -> list[Path]:
    cases = one_encoding(sorted(p for p in SHARED.iterdir() if (p / "corpus").is_dir())) if SHARED.is_dir() else []
    return [case / "corpus" for case in cases]


def _sources(root: Path, tmp_path: Path | None = None) -> list[Any]:
    sources: list[Any] = [read_corpus(root, cache=False), read_corpus(root, cache=False, events=True)]
    if tmp_path is not None:
        export_archive(root, tmp_path / "archive", events=True)
        sources.append(open_archive(tmp_path / "archive"))
    return sources


# --- the text column --------------------------------------------------------------------------


def test_the_killed_runs_last_chunk_holds_its_stream_assembled() -> None:
    events = read_corpus(GOLDEN, cache=False, events=True).events.filter(pl.col("session_id") == "killed-run")
    with_text = events.filter(pl.col("type") == "assistant/chunk", pl.col("text").is_not_null())
    # written by hand in the golden log: a reasoning block that ended, a text block cut mid-word
    assert with_text.select("seq", "text", "text_fields").rows() == [
        (13, 'Check the cache first.\x1fBuild leak replica then "sto', "reasoning text")
    ]


def test_two_text_blocks_of_one_message_are_one_part() -> None:
    events = read_corpus(GOLDEN, cache=False, events=True).events.filter(pl.col("session_id") == "two-blocks")
    row = events.filter(pl.col("seq") == 1).select("text", "text_fields").row(0)
    assert row == ("Its closing message: Build leak replica done.", "text")


def test_events_without_text_have_null_text_and_fields() -> None:
    events = read_corpus(GOLDEN, cache=False, events=True).events
    empty = events.filter(pl.col("type").is_in(["turn/start", "step/start", "step/end"]))
    assert empty.height > 0
    assert empty["text"].null_count() == empty.height == empty["text_fields"].null_count()


def test_a_finished_streams_chunks_have_no_text() -> None:
    if not RICH.is_dir():
        pytest.skip("../shared/conformance is not present")
    events = read_corpus(RICH, cache=False, events=True).events
    chunks = events.filter(pl.col("type") == "assistant/chunk")
    # one text per stream without a message at most: far fewer than the chunks
    assert 0 < chunks["text"].drop_nulls().len() < chunks.height / 50


# --- chunk-only text is found -----------------------------------------------------------------


def test_chunk_only_text_of_a_killed_run_is_found(tmp_path: Path) -> None:
    for source in _sources(GOLDEN, tmp_path):
        found = search_events(source, "Build leak replica")
        assert found.select("session_id", "seq", "type", "field").rows() == [
            ("killed-run", 13, "assistant/chunk", "text"),
            ("two-blocks", 1, "user/message", "text"),
        ]
        assert found["snippet"][0] == 'Build leak replica then "sto'


def test_a_phrase_across_two_blocks_is_found_with_its_offsets() -> None:
    corpus = read_corpus(GOLDEN, cache=False, events=True)
    found = search_events(corpus, "leak replica", types=["user/message"])
    start, end = found.select("start", "end").row(0)
    text = corpus.events.filter(pl.col("session_id") == "two-blocks", pl.col("seq") == 1)["text"][0]
    assert text[start:end] == "leak replica"


@pytest.mark.skipif(not RICH.is_dir(), reason="../shared/conformance is not present")
def test_every_partial_stream_of_an_upstream_written_corpus_is_found() -> None:
    """Each text the transcript assembles from chunks alone (its partial rows) is found by the search."""
    corpus = read_corpus(RICH, cache=False)
    partial: list[tuple[str, str]] = []
    for session_id in corpus.sessions["session_id"].to_list():
        rows = transcript(corpus, session_id).filter(pl.col("partial"), pl.col("text").str.len_chars() >= 8)
        partial += [(session_id, text) for text in rows["text"].to_list() if "\x1f" not in text]
    assert len(partial) >= 10
    for session_id, text in partial:
        found = search_events(corpus, text, types=["assistant/chunk"])
        assert session_id in found["session_id"].to_list(), (session_id, text)


# --- every source gives the same rows ---------------------------------------------------------

PATTERNS: list[tuple[str, dict[str, Any]]] = [
    ("replica", {}),
    ("REPLICA", {"ignore_case": True}),
    ("Done", {}),
    ("error", {}),
    (r"re\w+y", {"regex": True}),
    ("^Done", {"regex": True}),
    ('"', {}),
    ("é", {"ignore_case": True}),
]


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/conformance is not present")
@pytest.mark.parametrize("root", _cases(), ids=lambda p: p.parent.name)
def test_the_raw_scan_and_the_loaded_events_agree_on_every_conformance_corpus(root: Path) -> None:
    try:
        raw, loaded = _sources(root)
    except Exception:  # a corpus whose listing fails has nothing to search
        return
    for pattern, options in PATTERNS:
        assert search_events(raw, pattern, **options).equals(search_events(loaded, pattern, **options)), pattern


@pytest.mark.skipif(not RICH.is_dir(), reason="../shared/conformance is not present")
def test_an_archive_gives_the_same_rows(tmp_path: Path) -> None:
    raw, loaded, archive = _sources(RICH, tmp_path)
    for pattern, options in PATTERNS:
        expected = search_events(loaded, pattern, **options)
        assert search_events(archive, pattern, **options).equals(expected), pattern
        assert search_events(raw, pattern, limit=5, **options).equals(expected.head(5)), pattern
        assert search_events(archive, pattern, limit=5, **options).equals(expected.head(5)), pattern


def _block_texts(kind: str, data: Any) -> list[tuple[str, str]]:
    """The reference, written apart from the reader: each text block of the searched fields on its own."""
    out: list[tuple[str, str]] = []

    def blocks(content: Any) -> None:
        if isinstance(content, str):
            out.append(("text", content))
            return
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") in ("text", "reasoning") and isinstance(block.get("text"), str):
                out.append((block["type"], block["text"]))
            elif block.get("type") == "tool-call":
                out.extend((key, block[key]) for key in ("name", "arguments") if isinstance(block.get(key), str))
            elif block.get("type") == "tool-result":
                inner = block.get("content")
                parts = (
                    [inner] if isinstance(inner, str) else [p.get("text") for p in inner or [] if isinstance(p, dict)]
                )
                out.extend(("result", part) for part in parts if isinstance(part, str))

    if not isinstance(data, dict):
        return out
    message = data.get("message") if isinstance(data.get("message"), dict) else {}
    if kind == "user/message":
        blocks(data.get("content"))
    elif kind == "assistant/message":
        blocks(message.get("content"))
    elif kind == "tool/call":
        out += [(key, data[key]) for key in ("name", "arguments") if isinstance(data.get(key), str)]
    elif kind == "tool/result":
        blocks(message.get("content"))
    elif kind == "subagent/descriptor":
        out += [(key, data[key]) for key in ("label", "persona") if isinstance(data.get(key), str)]
    return out


@pytest.mark.skipif(not RICH.is_dir(), reason="../shared/conformance is not present")
@pytest.mark.parametrize("pattern", ["replica", "Done", "lookup", "é", '"query"'])
def test_every_block_hit_of_the_reference_is_found(pattern: str) -> None:
    """Each (event, field) whose own block holds a literal is a hit, as before the text column."""
    corpus = read_corpus(RICH, cache=False, events=True)
    types = ["user/message", "assistant/message", "tool/call", "tool/result", "subagent/descriptor"]
    expected = set()
    for session_id, seq, kind, data in (
        corpus.events.filter(pl.col("type").is_in(types)).select("session_id", "seq", "type", "data").iter_rows()
    ):
        for field, text in _block_texts(kind, json.loads(data)):
            if pattern in text:
                expected.add((session_id, seq, field))
    found = search_events(corpus, pattern, types=types)
    assert expected and expected <= set(found.select("session_id", "seq", "field").rows())


# --- by session -------------------------------------------------------------------------------


def test_search_sessions_counts_the_hits_of_each_session(tmp_path: Path) -> None:
    corpus = read_corpus(GOLDEN, cache=False)
    by_session = search_sessions(corpus, "e")
    hits = search_events(corpus, "e")
    assert dict(zip(by_session.columns, by_session.dtypes, strict=True)) == SESSION_HITS_SCHEMA
    assert by_session["hits"].sum() == hits.height
    assert by_session["matches"].sum() == hits["matches"].sum()
    assert by_session["list_order"].to_list() == sorted(set(hits["list_order"].to_list()))
    joined = by_session.join(corpus.sessions.select("list_order", "verdict"), on="list_order")
    assert joined.height == by_session.height  # joinable to the sessions (and their run facts)


# --- the byte search of raw logs: escapes another writer may use --------------------------------


def _escaped_log(root: Path, text_json: bytes, compression: Any = "zstd") -> None:
    head = header("esc", created_at=1)
    body = (
        b'{"type":"user/message","seq":0,"time":1,"data":{"content":[{"type":"text","text":"'
        + text_json
        + b'"}],"role":"user","source":{"kind":"user"},"id":"u"},"surfaceOp":"append"}\n'
    )
    write_raw(root, head, raw_log(head, [body], compression), compression)


@pytest.mark.parametrize(
    ("escaped", "pattern", "ignore_case"),
    [
        (b"caf\\u00e9 au lait", "café au", False),  # a non-ASCII character written as \u escape
        (b"path a\\/b\\/c", "a/b/c", False),  # a slash written as \/
        (b"\\u0041BC", "abc", True),  # an escaped ASCII letter, case-insensitive
        (b"\xe2\x84\xaaelvin", "kelvin", True),  # the Kelvin sign folds to k in the engine
    ],
)
def test_the_byte_search_decodes_lines_written_with_other_escapes(
    tmp_path: Path, escaped: bytes, pattern: str, ignore_case: bool
) -> None:
    _escaped_log(tmp_path, escaped)
    raw = read_corpus(tmp_path, cache=False)
    assert raw.sessions["verdict"].to_list() == ["ok"]  # the healthy path: only lines whose bytes can match
    found = search_events(raw, pattern, ignore_case=ignore_case)
    assert found.select("seq", "field").rows() == [(0, "text")], escaped
    assert found.equals(
        search_events(read_corpus(tmp_path, cache=False, events=True), pattern, ignore_case=ignore_case)
    )
