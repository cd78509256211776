"""Size limits: huge files, decompression bombs and over-long lines become rows, not out-of-memory.

Upstream (Node) cannot read a file over 2 GiB (``readFile``) nor decode a line
longer than V8's longest string; zstd plaintext is bounded by this reader. The
2 GiB file and the declared-size bomb are real; the string limit (512 MiB) and
the unknown-size bomb use a lowered limit so the tests stay small.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
import zstandard

from subagent_catalog.catalog.listing import list_children
from subagent_catalog.corpus import read_corpus
from subagent_catalog.read import limits, scanner
from subagent_catalog.read.limits import MAX_READ_BYTES, exceeds_js_string, utf16_length
from subagent_catalog.read.zstdframes import compress_frame
from subagent_catalog.synth.writer import (
    EventLog,
    descriptor,
    encode_log,
    header,
    log_path,
    simple_child_events,
    write_file,
    write_session,
)


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


# --- parse budgets: memory bombs -------------------------------------------------------------------
# A hostile user's reports: a 7.7 KB zstd log whose one event holds `[{},{},...]` (90 MB of plaintext)
# peaked at 2.9 GB; two such lines (a 15-75 KB file) at 5-7 GB; 8 M tiny events in a 3-5 MB file at
# 3.4 GB. Each is rebuilt below at full size and read in a child process, which reports its peak RSS.

CHILD_RSS_BOUND = 400 << 20
"""The child's peak RSS bound: Python, Polars and the package (~85 MiB) and the largest frame's plaintext.

Measured: 146 MiB, 145 MiB and 187 MiB for the three reports (the budgets refuse each before parsing).
"""

_READ_IN_CHILD = r"""
import json, sys
import polars as pl
from subagent_catalog import list_agents_text, list_children, read_corpus
corpus = read_corpus(sys.argv[1], compression="zstd", jobs=1, cache=False)
rows = corpus.sessions.select("session_id", "verdict", "read_cause", "event_count").rows()
problems = corpus.problems.filter(pl.col("session_id") == "bad").select("kind", "severity", "message").rows()
children = list_children(corpus, "P").select("kind", "id", "reason", "cause", "cause_detail", "label").rows()
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(json.dumps({"rows": rows, "problems": problems, "children": children,
                  "text": list_agents_text(corpus, "P"), "hwm": hwm * 1024}))
"""


def _hostile_corpus(root: Path, *frames: bytes) -> Path:
    """Parent P, a healthy child "ok" and a child "bad" whose log is its header frame and ``frames``."""
    parent = header("P", created_at=1)
    write_session(root, parent, [], "zstd")
    sibling = header("ok", created_at=2, parent="P", subagent=True)
    write_session(root, sibling, simple_child_events("ok", descriptor("continuable", label="fine")), "zstd")
    bad = header("bad", created_at=3, parent="P", subagent=True)
    head = compress_frame(encode_log(bad, [], "none"))
    return Path(write_file(log_path(root, bad, "zstd"), head + b"".join(frames)))


def _read_in_child(root: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "SUBAGENT_CATALOG_CACHE": "off"}
    done = subprocess.run(
        [sys.executable, "-c", _READ_IN_CHILD, str(root)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _assert_over_budget_and_sibling_fine(result: dict[str, Any], what: str) -> None:
    assert result["hwm"] < CHILD_RSS_BOUND, f"peak RSS {result['hwm'] >> 20} MB"
    rows = {row[0]: row[1:] for row in result["rows"]}
    assert rows["bad"] == ["failed", "over-budget", 0]
    assert rows["ok"] == ["ok", None, 4] and rows["P"] == ["ok", None, 0]
    [(kind, severity, message)] = result["problems"]
    assert (kind, severity) == ("over-budget", "error")
    assert f"more than {what}, this reader's parse budget" in message
    by_id = {row[1]: row for row in result["children"]}
    assert by_id["ok"] == ["child", "ok", None, None, None, "fine"]
    assert by_id["bad"][:4] == ["diagnostic", "bad", "unavailable", "over-budget"] and by_id["bad"][4] == message
    assert result["text"] == "ok [ready] — fine\nbad [diagnostic: unavailable]"


def _empty_objects_event(seq: int, members: int) -> bytes:
    return b'{"type":"turn/start","seq":%d,"time":1,"data":[' % seq + b"{}," * (members - 1) + b"{}]}\n"


def test_a_7_kb_log_of_one_90_mb_empty_object_array_is_over_budget(tmp_path: Path) -> None:
    frame = compress_frame(_empty_objects_event(0, 30_000_000))  # 90 MB of plaintext
    assert len(frame) < 10_000
    _hostile_corpus(tmp_path, frame)
    _assert_over_budget_and_sibling_fine(_read_in_child(tmp_path), f"{limits.MAX_LOG_VALUES:,} JSON values")


def test_two_90_mb_empty_object_array_lines_are_over_budget_fast(tmp_path: Path) -> None:
    line = _empty_objects_event(0, 30_000_000)
    frames = (compress_frame(line), compress_frame(line.replace(b'"seq":0', b'"seq":1', 1)))
    assert sum(map(len, frames)) < 20_000
    _hostile_corpus(tmp_path, *frames)
    started = time.monotonic()
    result = _read_in_child(tmp_path)
    assert time.monotonic() - started < 30  # unbudgeted: 12 s and 5.1 GB here
    _assert_over_budget_and_sibling_fine(result, f"{limits.MAX_LOG_VALUES:,} JSON values")


def _tiny_events(count: int) -> bytes:
    """``{"seq":N}`` lines for N in 0..count-1 (contiguous: every one is a kept event), built by the thousand."""
    first = b"".join(b'{"seq":%d}\n' % n for n in range(1000))
    block = b"".join(b'{"seq":@%03d}\n' % n for n in range(1000))
    return first + b"".join(block.replace(b"@", b"%d" % k) for k in range(1, count // 1000))


def test_8_million_tiny_events_in_a_3_mb_log_are_over_budget(tmp_path: Path) -> None:
    body = _tiny_events(8_000_000)
    assert body.count(b"\n") == 8_000_000 and body.endswith(b'{"seq":7999999}\n')
    frame = zstandard.ZstdCompressor(level=3, write_checksum=True).compress(body)
    assert len(frame) < 5 << 20
    _hostile_corpus(tmp_path, frame)
    _assert_over_budget_and_sibling_fine(_read_in_child(tmp_path), f"{limits.MAX_LOG_EVENTS:,} event records")


def test_8_million_events_in_one_packed_row_are_over_budget(tmp_path: Path) -> None:
    members = 8_000_000
    row = b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":['
    row += b"0," * (members - 2) + b'0],"texts":[' + b'"a",' * (members - 1) + b'"a"]}}\n'
    _hostile_corpus(tmp_path, compress_frame(row))
    # 16 M values: the values budget refuses the line before the events budget sees its members
    _assert_over_budget_and_sibling_fine(_read_in_child(tmp_path), f"{limits.MAX_LOG_VALUES:,} JSON values")


def _lower_budgets(monkeypatch: pytest.MonkeyPatch, *, values: int, events: int) -> None:
    for module in (limits, scanner):
        monkeypatch.setattr(module, "MAX_LOG_VALUES", values)
        monkeypatch.setattr(module, "MAX_LOG_EVENTS", events)


def _child_log(root: Path, compression: str, events: list[dict[str, Any]], *, batch: int = 16) -> Path:
    """Parent P and child c with ``events``; returns the child's log path."""
    write_session(root, header("P", created_at=1), [], compression)  # type: ignore[arg-type]
    child = header("c", created_at=2, parent="P", subagent=True)
    return Path(write_session(root, child, events, compression, batch=batch))  # type: ignore[arg-type]


def _plain(path: Path, compression: str) -> bytes:
    from subagent_catalog.read.zstdframes import decode_frame, scan_frames

    data = path.read_bytes()
    if compression == "none":
        return data
    return b"".join(decode_frame(data[start:end]) for start, end in scan_frames(data).frames)


def _values_of(path: Path, compression: str) -> int:
    """The budget's count for a log: ``count_values`` of its event lines."""
    data = _plain(path, compression)
    return limits.count_values(data[data.index(b"\n") + 1 :])


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_the_values_budget_is_exact_at_its_edge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str
) -> None:
    events = simple_child_events("c", descriptor("continuable", label="edge"))
    path = _child_log(tmp_path, compression, events, batch=1)  # zstd: one frame per event, recounted by replay
    count = _values_of(path, compression)
    _lower_budgets(monkeypatch, values=count, events=100)
    assert _row(tmp_path, compression)["verdict"] == "ok"
    _lower_budgets(monkeypatch, values=count - 1, events=100)
    row = _row(tmp_path, compression)
    assert (row["verdict"], row["read_cause"]) == ("failed", "over-budget")
    assert f"more than {count - 1:,} JSON values" in str(row["read_message"])


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_commas_and_colons_inside_strings_are_not_charged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str
) -> None:
    log = EventLog("c")
    log.turn_start()
    log.descriptor(descriptor("continuable", label="csv"))
    for _ in range(4):
        log.user("a,b:c,{d},[e]\\" * 50)  # 250 marks in each string, every one inside it
    log.turn_end()
    path = _child_log(tmp_path, compression, log.events, batch=2)
    count = _values_of(path, compression)
    plain = _plain(path, compression)
    marks = sum(plain.count(mark) for mark in (b"{", b"[", b",", b":", b"\n"))
    assert marks > count + 1000  # the strings' 4 x 250 marks are not charged
    _lower_budgets(monkeypatch, values=count, events=100)
    assert _row(tmp_path, compression)["verdict"] == "ok"


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_the_events_budget_counts_lines_and_packed_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str
) -> None:
    log = EventLog("c")
    log.turn_start()
    log.descriptor(descriptor("continuable", label="chunks"))
    log.assistant("streamed", chunks=6)  # one packed row of 6 text-chunks members
    log.turn_end()
    path = _child_log(tmp_path, compression, log.events, batch=100)
    assert _plain(path, compression).count(b'"text-chunks"') == 1
    _lower_budgets(monkeypatch, values=10**6, events=len(log.events))
    row = _row(tmp_path, compression)
    assert (row["verdict"], row["event_count"]) == ("ok", len(log.events))
    _lower_budgets(monkeypatch, values=10**6, events=len(log.events) - 1)
    row = _row(tmp_path, compression)
    assert (row["verdict"], row["read_cause"]) == ("failed", "over-budget")
    assert "(7 lines, and 5 more events in packed rows)" in str(row["read_message"])
    _lower_budgets(monkeypatch, values=10**6, events=3)  # fewer lines than the log holds: refused unparsed
    row = _row(tmp_path, compression)
    assert (row["read_cause"], row["read_message"]) == (
        "over-budget",
        "the log holds more than 3 event records, this reader's parse budget (lines from 2); not parsed",
    )


def test_a_header_over_the_values_budget_is_skipped_and_its_read_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _family(tmp_path, "none")
    bomb = header("b", created_at=3, parent="P", subagent=True)
    bomb["x"] = [{}] * 40
    write_session(tmp_path, bomb, simple_child_events("b", descriptor("continuable")), "none")
    _lower_budgets(monkeypatch, values=60, events=100)
    corpus = read_corpus(tmp_path, compression="none", jobs=1, cache=False)
    row = corpus.sessions.filter(pl.col("path").str.contains("/b/")).row(0, named=True)
    assert (row["listed"], row["verdict"], row["read_cause"]) == (False, "skipped", "over-budget")
    assert row["list_skip"] == "the first line holds more than 60 JSON values (this reader's parse budget)"
    assert corpus.problems["kind"].to_list() == ["header-skipped"]
    assert list_children(corpus, "P")["id"].to_list() == ["c"]  # the sibling still lists


def test_the_budget_recounts_earlier_writes_when_it_moves_up_a_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_LOG_VALUES", 12)
    writes = [b'{"a":"x,y,z,w"}\n', b'{"b":"p:q:r:s"}\n', b'{"c":1}\n']
    budget = limits.ParseBudget(lambda count: writes[:count])
    for chunk in writes:
        budget.charge(b"", chunk, len(chunk), records=0)
    assert (budget.tier, budget.values) == (2, 9)  # 3 per line; the bytes, then the marks, would pass 12
    short = [b'{"c":12345}\n', b'{"d":2}\n']  # 3 values each, 12 and 8 bytes
    replayed = limits.ParseBudget(lambda count: short[:count])
    unreplayable = limits.ParseBudget()
    for chunk in short:
        replayed.charge(b"", chunk, len(chunk), records=0)
    assert (replayed.tier, replayed.values) == (1, 6)
    unreplayable.charge(b"", short[0], len(short[0]), records=0)
    with pytest.raises(limits.OverBudget):  # without a replay the first write keeps its byte count
        unreplayable.charge(b"", short[1], len(short[1]), records=0)
