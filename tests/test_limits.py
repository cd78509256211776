"""Size limits: huge files, decompression bombs and over-long lines become rows, not out-of-memory.

Upstream (Node) cannot read a file over 2 GiB (``readFile``) nor decode a line
longer than V8's longest string; zstd plaintext is bounded by this reader. The
2 GiB file and the declared-size bomb are real; the string limit (512 MiB) and
the unknown-size bomb use a lowered limit so the tests stay small.
"""

from __future__ import annotations

import resource
from pathlib import Path

import orjson
import polars as pl
import pytest
import zstandard

from subagent_catalog.catalog.listing import list_children
from subagent_catalog.corpus import read_corpus
from subagent_catalog.read import limits, scanner
from subagent_catalog.read.limits import MAX_READ_BYTES, exceeds_js_string, utf16_length
from subagent_catalog.read.zstdframes import compress_frame
from subagent_catalog.synth.writer import EventLog, descriptor, encode_log, header, log_path, write_file


def _family(root: Path, compression: str) -> Path:
    """Parent P and child c (a valid descriptor); returns the child's log path."""
    parent = header("P", created_at=1)
    write_file(log_path(root, parent, compression), encode_log(parent, [], compression))  # type: ignore[arg-type]
    child = header("c", created_at=2, parent="P", subagent=True)
    log = EventLog("c")
    log.turn_start()
    log.descriptor(descriptor("continuable", label="child"))
    log.turn_end()
    path = log_path(root, child, compression)  # type: ignore[arg-type]
    write_file(path, encode_log(child, log.events, compression))  # type: ignore[arg-type]
    return Path(path)


def _row(root: Path, compression: str, session_id: str = "c") -> dict[str, object]:
    corpus = read_corpus(root, compression=compression, jobs=1)  # type: ignore[arg-type]
    assert corpus.listing_error is None
    return corpus.sessions.filter(pl.col("session_id") == session_id).row(0, named=True)


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_log_over_2_gib_is_listed_but_not_read(tmp_path: Path, compression: str) -> None:
    log = _family(tmp_path, compression)
    with open(log, "r+b") as handle:  # sparse: costs no disk
        handle.truncate(MAX_READ_BYTES + 1)
    before = _peak_rss_bytes()
    row = _row(tmp_path, compression)
    assert row["listed"] is True  # list() reads the header only
    assert (row["verdict"], row["read_cause"]) == ("failed", "file-too-large")
    assert row["bytes"] == MAX_READ_BYTES + 1
    assert _peak_rss_bytes() - before < 512 * 1024 * 1024  # the 2 GiB were never read
    corpus = read_corpus(tmp_path, compression=compression, jobs=1)  # type: ignore[arg-type]
    assert list_children(corpus, "P")["reason"].to_list() == ["unavailable"]
    kinds = corpus.problems.filter(pl.col("path") == str(log))["kind"].to_list()
    assert "file-too-large" in kinds


def _bomb(size: int, *, declared: bool) -> bytes:
    """One checksummed frame of ``size`` bytes of newlines' worth of zeros (tiny compressed)."""
    compressor = zstandard.ZstdCompressor(level=1, write_checksum=True, write_content_size=declared)
    stream = compressor.compressobj(size=size if declared else -1)
    piece = bytes(64 << 20)
    out = [stream.compress(piece[: min(len(piece), size - done)]) for done in range(0, size, len(piece))]
    return b"".join([*out, stream.flush()])


def _child_with_frames(root: Path, *frames: bytes) -> Path:
    log = _family(root, "zstd")
    head = compress_frame(encode_log(header("c", created_at=2, parent="P", subagent=True), [], "none"))
    log.write_bytes(head + b"".join(frames))
    return log


def test_a_zstd_bomb_that_declares_its_size_is_refused_before_decoding(tmp_path: Path) -> None:
    bomb = _bomb(3 << 30, declared=True)  # 3 GiB of plaintext in ~100 KB
    assert len(bomb) < 1 << 20 and zstandard.frame_content_size(bomb) == 3 << 30
    _child_with_frames(tmp_path, bomb)
    before = _peak_rss_bytes()
    row = _row(tmp_path, "zstd")
    assert _peak_rss_bytes() - before < 512 * 1024 * 1024
    assert row["listed"] is True
    assert (row["verdict"], row["read_cause"]) == ("failed", "plaintext-too-large")
    assert "declares 3221225472 bytes" in str(row["read_message"])


@pytest.mark.parametrize("where", ["complete-frame", "torn-frame"])
def test_a_zstd_bomb_without_a_declared_size_stops_at_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.setattr(scanner, "MAX_PLAINTEXT_BYTES", 1 << 20)
    bomb = _bomb(8 << 20, declared=False)
    assert zstandard.frame_content_size(bomb) == -1
    _child_with_frames(tmp_path, bomb if where == "complete-frame" else bomb[:-4])
    row = _row(tmp_path, "zstd")
    assert (row["verdict"], row["read_cause"]) == ("failed", "plaintext-too-large")


def test_plaintext_under_the_budget_still_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "MAX_PLAINTEXT_BYTES", 1 << 20)
    _family(tmp_path, "zstd")
    assert _row(tmp_path, "zstd")["verdict"] == "ok"


def _lower_string_limit(monkeypatch: pytest.MonkeyPatch, units: int) -> None:
    for module in (limits, scanner):
        monkeypatch.setattr(module, "MAX_JS_STRING", units)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_an_event_line_longer_than_a_js_string_is_unparsable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str
) -> None:
    _lower_string_limit(monkeypatch, 4096)
    parent = header("P", created_at=1)
    write_file(log_path(tmp_path, parent, compression), encode_log(parent, [], compression))  # type: ignore[arg-type]
    child = header("c", created_at=2, parent="P", subagent=True)
    log = EventLog("c")
    log.turn_start()
    log.descriptor(descriptor("continuable", label="L" * 5000))  # a valid record, too long to decode
    events = log.events
    write_file(log_path(tmp_path, child, compression), encode_log(child, events, compression))  # type: ignore[arg-type]
    corpus = read_corpus(tmp_path, compression=compression, jobs=1)  # type: ignore[arg-type]
    row = corpus.sessions.filter(pl.col("session_id") == "c").row(0, named=True)
    if compression == "none":  # an unparsable committed line ends the prefix
        assert row["verdict"] == "prefix" and row["event_count"] == 1  # turn/start only
        problem = corpus.problems.filter((pl.col("session_id") == "c") & (pl.col("kind") == "unparsable-line"))
        assert "longer than the longest JavaScript string" in problem["message"].item()
    else:  # inside a complete zstd frame it fails the read
        assert (row["verdict"], row["read_cause"]) == ("failed", "zstd-torn-record-in-complete-frame")
        assert "longer than the longest JavaScript string" in str(row["read_message"])


def test_a_line_of_multibyte_text_is_measured_in_utf16_units(monkeypatch: pytest.MonkeyPatch) -> None:
    _lower_string_limit(monkeypatch, 10)
    text = "é" * 8  # 16 bytes, 8 units: decodable
    assert not exceeds_js_string(orjson.dumps(text)) and len(orjson.dumps(text)) > 10
    assert exceeds_js_string(b"a" * 11)
    assert utf16_length("\U0001f642".encode()) == 2


def test_a_header_line_longer_than_a_js_string_fails_the_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lower_string_limit(monkeypatch, 200)
    head = header("c", created_at=2, cwd="/" + "d" * 300)
    write_file(log_path(tmp_path, head, "none"), encode_log(head, [], "none"))
    corpus = read_corpus(tmp_path, compression="none", jobs=1)
    assert corpus.listing_error is not None and "longest JavaScript string" in corpus.listing_error
    rows = corpus.problems.filter(pl.col("kind") == "header-too-long")
    assert rows["fails_listing"].to_list() == [True]
