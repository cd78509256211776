"""One log's events read a chunk at a time (issue 42 item 11): the same events frame as the whole read.

``Corpus.log_events`` builds the frame of a log the fast path reads from
``read.event_rows.EventRowStream`` (one line parsed at a time, a chunk of rows
at a time), so a star run's root log of 100,000 events never exists as Python
objects. The reference is the read every log had before: ``read_log_file``
with its events, its rows made into a frame (``facts_events``). Each case
compares the two over logs of every kind (healthy, damaged, streams without
their message, a line the stream gives up on after some chunks), with chunks
of a few rows so that chunk edges fall everywhere.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson
import polars as pl
import pytest

from subagent_catalog.frames import corpus as frames_corpus
from subagent_catalog.frames.corpus import facts_events
from subagent_catalog.read import event_rows, fastpath
from subagent_catalog.read.logread import read_log_file
from subagent_catalog.read.paths import Compression
from subagent_catalog.synth.generate import generate
from subagent_catalog.synth.writer import EventLog, header, write_session
from tests.fuzz.mutations import CONFORMANCE, FAST, LOG_NAMES, logs, make_case

TRACE_CASES = CONFORMANCE.parent / "trace-cases"


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_rows, "CHUNK_ROWS", 3)


def _compression(path: Path) -> Compression:
    return "zstd" if path.name.endswith(".zstd") else "none"


def _reference(path: Path) -> pl.DataFrame:
    facts = read_log_file(str(path), _compression(path), want_events=True, exact_path=True)
    return facts_events(facts)


def _same(path: Path) -> bool:
    """Assert the streamed frame (when the stream answers) is the reference; whether it answered."""
    streamed = frames_corpus._streamed_events(str(path), _compression(path))
    if streamed is None:
        return False
    reference = _reference(path)
    assert streamed.schema == reference.schema, path
    assert streamed.equals(reference, null_equal=True), path
    return True


def _logs_under(root: Path) -> list[Path]:
    found = []
    for directory, _, names in os.walk(root):
        for name in sorted(names):
            path = Path(directory, name)
            if name in LOG_NAMES and path.is_file() and not path.is_symlink():
                found.append(path.resolve())  # canonical, as the walk gives it (no link followed)
    return sorted(found)


@pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="no shared conformance corpora")
def test_conformance_logs_stream_the_same_events() -> None:
    paths = _logs_under(CONFORMANCE) + _logs_under(TRACE_CASES)
    assert len(paths) > 1000
    # one of each distinct log (its name and bytes): the trace cases repeat most of edge-s1's 474 logs
    distinct = list({(path.name, hashlib.blake2b(path.read_bytes()).digest()): path for path in paths}.values())
    assert len(distinct) > 500
    streamed = sum(_same(path) for path in distinct)
    assert streamed > 0.8 * len(distinct)  # the healthy logs stream; the others take the whole read


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_synthetic_corpora_stream_the_same_events(tmp_path: Path, compression: Compression) -> None:
    generate(tmp_path / "c", sessions=60, seed=5, compression=compression, damaged_fraction=0.25, jobs=1)
    paths = _logs_under(tmp_path / "c")
    streamed = sum(_same(path) for path in paths)
    assert 0.5 * len(paths) < streamed < len(paths)  # damaged logs take the whole read


@pytest.mark.parametrize("seed", range(0, 40, 8))
def test_fuzz_mutations_stream_the_same_events_or_none(seed: int) -> None:
    case = make_case(seed, FAST)
    try:
        for path in logs(case):
            if path.is_file() and not path.is_symlink():
                _same(path)
    finally:
        case.cleanup()


def _chunk(log: EventLog, text: str, step: int = 1) -> None:
    log.add(
        "assistant/chunk", {"turn": log.turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": text}}
    )


def test_streams_without_their_message_get_their_text_on_their_last_chunk(tmp_path: Path) -> None:
    """A killed stream's text is known only at its turn's end or the log's, chunks after its last chunk."""
    log = EventLog("s")
    log.turn_start()
    log.user("go")
    log.add("step/start", {"turn": 1, "step": 1})
    for piece in ("Build ", "leak ", "replica"):
        _chunk(log, piece)
    log.add("llm/retry", {"turn": 1, "step": 1, "attempt": 1})  # the attempt's stream never got its message
    for piece in ("one ", "two"):
        _chunk(log, piece)
    log.add("assistant/message", {"turn": 1, "step": 1, "message": {"role": "assistant", "content": "one two"}})
    log.add("step/start", {"turn": 1, "step": 2})
    for piece in ("cut ", "off"):
        _chunk(log, piece, step=2)
    log.turn_end("aborted")
    log.turn_start()
    log.add("step/start", {"turn": 2, "step": 1})
    _chunk(log, "the end")  # open at the end of the log
    path = Path(write_session(tmp_path, header("s", created_at=1), log.events, "none", pack=False))
    streamed = frames_corpus._streamed_events(str(path), "none")
    assert streamed is not None and streamed.equals(_reference(path), null_equal=True)
    texts = streamed.filter(pl.col("type") == "assistant/chunk", pl.col("text").is_not_null())["text"].to_list()
    assert texts == ["Build leak replica", "cut off", "the end"]


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_a_packed_log_streams_the_same_events(tmp_path: Path, compression: Compression) -> None:
    log = EventLog("p")
    log.turn_start()
    log.user("hello")
    log.assistant("a streamed answer", chunks=7)
    log.tool_round("c1", "done")
    log.turn_end()
    path = Path(write_session(tmp_path, header("p", created_at=1), log.events, compression))
    if compression == "none":
        assert b'"text-chunks"' in path.read_bytes()  # chunk runs are stored as packed rows
    assert _same(path)


def test_a_line_the_stream_cannot_read_after_some_chunks_gives_the_whole_read(tmp_path: Path) -> None:
    log = EventLog("g")
    log.turn_start()
    for index in range(5):
        log.user(f"message {index}")
    path = Path(write_session(tmp_path, header("g", created_at=1), log.events, "none", pack=False))
    lines = path.read_bytes().splitlines(keepends=True)
    event = orjson.loads(lines[-1])
    lines[-1] = orjson.dumps({**event, "seq": event["seq"] + 1}) + b"\n"  # a seq gap on the last line
    path.write_bytes(b"".join(lines))
    stream = event_rows.event_stream(path.read_bytes(), "none")
    assert stream is not None
    with pytest.raises(event_rows.FullReadNeeded, match="where 5 was next"):
        list(stream)
    assert frames_corpus._streamed_events(str(path), "none") is None
    corpus_frame = _corpus_events(tmp_path)
    assert corpus_frame.equals(_reference(path), null_equal=True)


def _corpus_events(root: Path) -> pl.DataFrame:
    from subagent_catalog.corpus import read_corpus

    return read_corpus(root, cache=False, jobs=1).log_events(0)


def test_the_switch_to_the_full_read_turns_the_stream_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = EventLog("x")
    log.turn_start()
    log.user("hi")
    path = Path(write_session(tmp_path, header("x", created_at=1), log.events, "none"))
    assert _same(path)
    monkeypatch.setattr(fastpath, "ENABLED", False)
    assert frames_corpus._streamed_events(str(path), "none") is None
    assert _corpus_events(tmp_path).equals(_reference(path), null_equal=True)
