"""Searching raw logs near the decompression floor: only the lines whose bytes can match are decoded.

``scan_log`` is the per-file worker of ``search_events`` over a raw corpus
(it runs in a process pool and uses no Polars). A log the read found
healthy (verdict ``ok``, so its events are exactly its lines) is
decompressed once and its **bytes** are searched for the pattern's
JSON-escaped form (the form every event whose text holds the pattern
contains; for a case-insensitive ASCII pattern the same in a lower-cased
copy); only the lines holding it are decoded (``orjson``) and their text
(``event_text``) checked. A pattern no byte form can stand for (a regex, a
case-insensitive non-ASCII pattern) decodes every line of the searched
types. Lines holding an escape a writer may use for a pattern character
(``\\u``, ``\\/``) are decoded too. Streams without a message are found from
a small typed view of every line (``msgspec``, in C) and assembled from their
chunks alone. Any other log (damaged, torn, unstable) is read whole by the
reader, as ``corpus.events`` holds it.

The worker returns the candidate events' text; ``search_events`` does the
exact matching (Polars' Rust regex) over all of them at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import orjson

from subagent_catalog.forking import process_pool
from subagent_catalog.read.chunk_rows import CHUNK_ROW_TYPES, expand_chunk_row
from subagent_catalog.read.event_text import event_text, orphan_streams, stream_text
from subagent_catalog.read.fastpath import split_log
from subagent_catalog.read.jsvalue import frame_text, is_safe_integer, json_text
from subagent_catalog.read.logread import FileTooLargeError, read_log_file, read_stable_bytes
from subagent_catalog.read.paths import Compression

__all__ = ["Candidate", "Needle", "ScanResult", "healthy_parts", "line_spans", "needle_for", "scan_log", "scan_logs"]

Candidate = tuple[int, int | None, str, int | None, int | None, str, str, int]
"""A candidate event: ``(seq, time_ms, type, turn, step, text, text_fields, position)``."""

ScanResult = tuple[str | None, list[Candidate]]
"""One log's session id (``None`` when it has no readable header) and candidate events."""

Mode = Literal["literal", "fold", "all"]

# Non-ASCII characters a case-insensitive ASCII letter may match (Unicode simple case folding, and more).
_FOLD_EXTRA = {"k": ("\u212a",), "s": ("\u017f",), "i": ("\u0130", "\u0131")}


@dataclass(frozen=True)
class Needle:
    """What a worker looks for: the pattern's byte forms, how candidates are checked, which types count."""

    mode: Mode
    needle: bytes
    check: str
    types: frozenset[str]
    slash: bool
    extra: tuple[bytes, ...] = ()
    halves: tuple[bytes, ...] = ()


def needle_for(pattern: str, *, regex: bool, ignore_case: bool, types: frozenset[str]) -> Needle:
    """The byte search for a pattern: its JSON-escaped form (lower-cased when case does not matter).

    Examples:
        >>> needle_for('say "hi"', regex=False, ignore_case=False, types=frozenset()).needle
        b'say \\\\"hi\\\\"'
        >>> needle_for("Kit", regex=False, ignore_case=True, types=frozenset()).extra
        (b'\\xe2\\x84\\xaa', b'\\xc4\\xb0', b'\\xc4\\xb1')
        >>> needle_for("a.b", regex=True, ignore_case=False, types=frozenset()).mode
        'all'
    """
    surrogate = any(0xD800 <= ord(c) <= 0xDFFF for c in pattern)
    if regex or surrogate or (ignore_case and not pattern.isascii()):
        return Needle("all", b"", "", types, False)
    escaped = json_text(pattern)[1:-1].encode("utf-8")
    # A match across two adjacent blocks holds one of the pattern's halves whole in one block.
    middle = len(pattern) // 2
    halves = tuple(json_text(half)[1:-1].encode("utf-8") for half in (pattern[:middle], pattern[middle:]) if half)
    if len(pattern) < 2:
        halves = ()
    if not ignore_case:
        return Needle("literal", escaped, pattern, types, "/" in pattern, (), halves)
    extra = tuple(
        dict.fromkeys(
            c.encode("utf-8") for letter, chars in _FOLD_EXTRA.items() if letter in pattern.lower() for c in chars
        )
    )
    return Needle(
        "fold", escaped.lower(), pattern.casefold(), types, "/" in pattern, extra, tuple(h.lower() for h in halves)
    )


class _Data(msgspec.Struct, gc=False):
    turn: Any = None
    step: Any = None


class _Line(msgspec.Struct, gc=False):
    type: Any = None
    data: _Data | None = None


_VIEW = msgspec.json.Decoder(_Line)
_STREAM_TYPES = frozenset({"assistant/chunk", *CHUNK_ROW_TYPES})


def _views(body: bytes) -> list[tuple[Any, Any, Any]] | None:
    """Each line's ``(type, turn, step)`` (a packed row as one ``assistant/chunk``), or ``None`` if any is odd."""
    try:
        lines = _VIEW.decode_lines(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if len(lines) != body.count(b"\n") + (not body.endswith(b"\n")):
        return None  # a blank line: positions would not be line numbers
    return [
        (
            "assistant/chunk" if line.type in CHUNK_ROW_TYPES else line.type,
            None if line.data is None else line.data.turn,
            None if line.data is None else line.data.step,
        )
        for line in lines
    ]


def line_spans(body: bytes, needles: list[bytes], haystack: bytes) -> list[tuple[int, int]]:
    """The ``(start, end)`` of every line holding one of the needles (searched in ``haystack``), in order.

    Examples:
        >>> body = b'{"a":1}\\n{"b":2}\\n{"a":3}'
        >>> line_spans(body, [b'"a"'], body)
        [(0, 7), (16, 23)]
    """
    spans: set[tuple[int, int]] = set()
    for needle in needles:
        at = haystack.find(needle)
        while at != -1:
            start = body.rfind(b"\n", 0, at) + 1
            end = body.find(b"\n", at)
            end = len(body) if end == -1 else end
            spans.add((start, end))
            at = haystack.find(needle, end)
    return sorted(spans)


def _int(value: Any) -> int | None:
    return int(value) if is_safe_integer(value) else None


def _turn_step(data: Any) -> tuple[int | None, int | None]:
    if not isinstance(data, dict):
        return None, None
    return _int(data.get("turn")), _int(data.get("step"))


def _keep(needle: Needle, text: str) -> bool:
    if needle.mode == "literal":
        return needle.check in text
    if needle.mode == "fold":
        return needle.check in text.casefold()
    return True


def _healthy(body: bytes, needle: Needle) -> list[Candidate] | None:
    """The candidates of a healthy log's body; ``None`` when its lines need the reader.

    A line ``orjson`` refuses (a lone surrogate escape, which the reader keeps as WTF-8) sends the
    whole log to the reader.
    """
    try:
        return _candidates(body, needle)
    except orjson.JSONDecodeError:
        return None


def _candidates(body: bytes, needle: Needle) -> list[Candidate] | None:
    candidates: list[Candidate] = []
    if b'"assistant/chunk"' in body or b'-chunks"' in body:
        views = _views(body)
        if views is None:
            return None
        orphans = orphan_streams(views)
        if orphans and "assistant/chunk" in needle.types:
            lines = body.split(b"\n")
            for indices in orphans:
                chunks: list[dict[str, Any]] = []
                for index in indices:
                    value = orjson.loads(lines[index])
                    chunks.extend(expand_chunk_row(value) if value.get("type") in CHUNK_ROW_TYPES else [value])
                text, fields = stream_text(chunks)
                if text is not None and _keep(needle, text):
                    last = chunks[-1]
                    turn, step = _turn_step(last.get("data"))
                    seq = int(last["seq"])
                    candidates.append(
                        (seq, _int(last.get("time")), "assistant/chunk", turn, step, text, fields or "", seq)
                    )
    if needle.mode == "all":
        spans = []
        start = 0
        while start < len(body):
            end = body.find(b"\n", start)
            end = len(body) if end == -1 else end
            spans.append((start, end))
            start = end + 1
    else:
        haystack = body.lower() if needle.mode == "fold" else body
        needles = [needle.needle, *needle.extra]
        if b"\\u" in body:
            needles.append(b"\\u")
        if needle.slash and b"\\/" in body:
            needles.append(b"\\/")
        spans = line_spans(body, needles, haystack)
        if needle.halves and (b"},{" in body or b"}, {" in body):  # lines of several blocks: a match may span two
            joined = set(spans)
            for start, end in line_spans(body, list(needle.halves), haystack):
                line = body[start:end]
                if b"},{" in line or b"}, {" in line:
                    joined.add((start, end))
            spans = sorted(joined)
    for start, end in spans:
        if start == end:
            continue
        event = orjson.loads(body[start:end])
        kind = event.get("type")
        if kind in _STREAM_TYPES or kind not in needle.types:
            continue
        text, fields = event_text(kind, event.get("data"))
        if text is None or not _keep(needle, text):
            continue
        turn, step = _turn_step(event.get("data"))
        seq = int(event["seq"])
        candidates.append((seq, _int(event.get("time")), kind, turn, step, text, fields or "", seq))
    candidates.sort(key=lambda row: row[0])
    return candidates


def _from_reader(path: str, compression: Compression, needle: Needle) -> ScanResult:
    """A log the reader must read (not healthy, or odd): its events as ``corpus.events`` holds them."""
    facts = read_log_file(path, compression, want_events=True, exact_path=True)
    out: list[Candidate] = []
    session_id: str | None = None
    for position, row in enumerate(facts.events or []):
        session_id = row[0]
        kind, text = row[3], row[9]
        if text is None or kind not in needle.types or not _keep(needle, text):
            continue
        out.append((row[1], row[2], kind, row[4], row[5], text, row[10] or "", position))
    return session_id, out


def healthy_parts(path: str, compression: Compression) -> tuple[dict[str, Any], bytes] | None:
    """A healthy log's header and body bytes, decompressed; ``None`` when the file is unstable or odd.

    Examples:
        >>> healthy_parts("/no/such/session.jsonl", "none") is None
        True
    """
    try:
        data, stable = read_stable_bytes(path, exact=True)
    except (OSError, FileTooLargeError):
        return None
    return split_log(data, compression) if stable else None


def scan_log(args: tuple[str, Compression, bool, Needle]) -> ScanResult:
    """One log's candidate events for a search (the pool's worker).

    ``args`` is ``(path, compression, healthy, needle)``: ``healthy`` when the
    corpus read it with verdict ``ok``.

    Examples:
        >>> import os, tempfile
        >>> root = tempfile.mkdtemp()
        >>> path = os.path.join(root, "session.jsonl")
        >>> with open(path, "wb") as out:
        ...     _ = out.write(b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        ...                   b'{"type":"tool/call","seq":0,"time":5,"data":{"name":"grep","arguments":"x"}}\\n')
        >>> needle = needle_for("grep", regex=False, ignore_case=False, types=frozenset({"tool/call"}))
        >>> scan_log((path, "none", True, needle))
        ('a', [(0, 5, 'tool/call', None, None, 'grep\\x1fx', 'name arguments', 0)])
    """
    path, compression, healthy, needle = args
    parts = healthy_parts(path, compression) if healthy else None
    if parts is not None:
        meta, body = parts
        found = _healthy(body, needle)
        if found is not None:
            return frame_text(meta["id"]) if isinstance(meta.get("id"), str) else None, found
    return _from_reader(path, compression, needle)


PARALLEL_THRESHOLD = 64
"""Fewer logs than this are scanned in the calling process."""


def scan_logs(
    work: list[tuple[str, bool]], compression: Compression, needle: Needle, *, jobs: int | None
) -> Iterator[ScanResult]:
    """``scan_log`` of every ``(path, healthy)``, in order: in a process pool for many logs.

    Stopping early (closing the iterator) cancels the logs not yet started.

    Examples:
        >>> needle = needle_for("x", regex=False, ignore_case=False, types=frozenset())
        >>> list(scan_logs([], "none", needle, jobs=1))
        []
    """
    tasks = [(path, compression, healthy, needle) for path, healthy in work]
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    if workers <= 1 or len(tasks) < PARALLEL_THRESHOLD:
        yield from map(scan_log, tasks)
        return
    chunk = max(1, min(16, len(tasks) // (workers * 8) or 1))
    pool = process_pool(workers)  # workers use no Polars: forking is safe (heap frozen: forking.py)
    try:
        yield from pool.map(scan_log, tasks, chunksize=chunk)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
