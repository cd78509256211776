"""The packed fast path, and what both fast paths share: ``split_log`` and the ``FastFacts`` they give.

``split_log`` refuses outright what no fast path reads (a header the full
read rejects, a torn tail, a torn or damaged zstd frame, the header not alone
in its frame, a body near a parse budget). ``packed_facts`` then reads a
log that has nothing unusual about it: every line a JSON object ``orjson``
parses (valid UTF-8), every plain record carrying the next seq as an
``int``, every packed chunk row (``text-chunks``, ``reasoning-chunks``,
``tool-call-chunks``) passing a check stricter than upstream's row
validation (integer seqs, times and gaps, string members, the exact key
sets) and starting at the next seq. A row is kept as one ``PackedRow``
stand-in (an ``assistant/chunk`` event with the seq and time of its last
member, its members' times beside it) instead of one dict per member, and
upstream's rules run once over that shorter list. It serves reads with
events rows (``events=True``); the typed path (``read.typed_read``) reads
the facts of the others.

At the first line it does not fully understand it returns ``None``, and the
caller reads the whole file with the full (reference) path, so every verdict,
problem and message on a damaged log comes from the full path alone. The
rules that read events afterwards either never look at ``assistant/chunk``
delta events or only at their seq and time (``docs/reading.md``), which the
stand-in and ``time_span`` give exactly.

``SUBAGENT_CATALOG_EXACT_READ=1`` (or ``ENABLED = False``) turns both fast
paths off: every log takes the full path (the differential tests compare them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import orjson

from subagent_catalog.read import limits
from subagent_catalog.read.chunk_rows import CHUNK_ROW_TYPES, expand_chunk_row
from subagent_catalog.read.inspect_migrate import InspectFailure
from subagent_catalog.read.inspect_rules import validate_packed_read
from subagent_catalog.read.jsvalue import MAX_SAFE_INTEGER, is_number, is_safe_integer
from subagent_catalog.read.limits import PlaintextTooLarge, count_marks
from subagent_catalog.read.paths import Compression
from subagent_catalog.read.run_facts import RunFacts, fold_run
from subagent_catalog.read.scanner import LogReadError, parse_header_record

EXACT_ENV = "SUBAGENT_CATALOG_EXACT_READ"
"""Set to ``1`` to force the full read path for every log."""

ENABLED = True
"""Module switch: ``False`` forces the full read path for every log."""

_TEXT_KEYS = ("turn", "step", "index", "dt", "texts")
_TOOL_KEYS = ("turn", "step", "index", "id", "dt", "args")
_TOOL_KEYS_NAMED = ("turn", "step", "index", "id", "name", "dt", "args")


def enabled() -> bool:
    """Whether the fast path may be tried (``ENABLED`` and no ``SUBAGENT_CATALOG_EXACT_READ=1``).

    Examples:
        >>> isinstance(enabled(), bool)
        True
    """
    return ENABLED and os.environ.get(EXACT_ENV, "") in ("", "0")


class PackedRow(dict[str, Any]):
    """One packed chunk row kept packed: ``{"type": "assistant/chunk", "seq": last, "time": last}``.

    ``value`` is the parsed row, ``seq0`` its first member's seq and
    ``times`` its members' times (all safe integers).
    """

    __slots__ = ("seq0", "times", "value")

    def __init__(self, value: dict[str, Any], seq0: int, times: list[int]) -> None:
        super().__init__(type="assistant/chunk", seq=seq0 + len(times) - 1, time=times[-1])
        self.value = value
        self.seq0 = seq0
        self.times = times


@dataclass
class FastFacts:
    """What a fast path gives of a healthy log, for ``read.logread`` to fill its ``LogFacts`` with.

    ``descriptors`` are the ``subagent/descriptor`` events as the full path
    parses them; ``timing`` and ``balanced_timing`` hold what the timing unit
    reads of the events without and with the synthetic closers (``closers``
    of them); ``events`` are the packed path's events, rows kept as
    ``PackedRow`` stand-ins (``None`` on the typed path, which keeps none).
    """

    meta: dict[str, Any]
    count: int
    first_time: int | None
    last_time: int | None
    run: RunFacts | None
    descriptors: list[dict[str, Any]]
    timing: list[dict[str, Any]]
    balanced_timing: list[dict[str, Any]]
    closers: int
    events: list[dict[str, Any]] | None = None


def packed_row(tag: str, value: dict[str, Any], expected: int) -> PackedRow | None:
    """The stand-in of a row the full path accepts and expands from seq ``expected``, or ``None``.

    Examples:
        >>> value = {"type": "text-chunks", "seq0": 0, "time0": 5,
        ...          "data": {"turn": 1, "step": 1, "index": 0, "dt": [2], "texts": ["a", "b"]}}
        >>> packed_row("text-chunks", value, 0).times, packed_row("text-chunks", value, 1)
        ([5, 7], None)
    """
    if len(value) != 4 or "seq0" not in value or "time0" not in value or "data" not in value:
        return None
    seq0, time0, data = value["seq0"], value["time0"], value["data"]
    if type(seq0) is not int or seq0 != expected or type(time0) is not int or type(data) is not dict:
        return None
    if not -MAX_SAFE_INTEGER <= time0 <= MAX_SAFE_INTEGER:
        return None
    if tag == "tool-call-chunks":
        keys = _TOOL_KEYS_NAMED if len(data) == 7 else _TOOL_KEYS
        if len(data) != len(keys) or not all(key in data for key in keys):
            return None
        if type(data["id"]) is not str or ("name" in data and type(data["name"]) is not str):
            return None
        payload = data["args"]
    else:
        if len(data) != 5 or not all(key in data for key in _TEXT_KEYS):
            return None
        payload = data["texts"]
    if not (is_number(data["turn"]) and is_number(data["step"]) and is_number(data["index"])):
        return None
    if type(payload) is not list or not payload or set(map(type, payload)) != {str}:
        return None
    gaps = data["dt"]
    if type(gaps) is not list or len(gaps) != len(payload) - 1:
        return None
    if gaps and (set(map(type, gaps)) != {int} or min(gaps) < -MAX_SAFE_INTEGER or max(gaps) > MAX_SAFE_INTEGER):
        return None
    if seq0 + len(payload) - 1 > MAX_SAFE_INTEGER:
        return None
    times = list(accumulate(gaps, initial=time0))
    if min(times) < -MAX_SAFE_INTEGER or max(times) > MAX_SAFE_INTEGER:
        return None
    return PackedRow(value, seq0, times)


def _events(body: bytes) -> tuple[list[dict[str, Any]], int] | None:
    loads = orjson.loads
    events: list[dict[str, Any]] = []
    expected = 0
    most = limits.MAX_LOG_EVENTS  # read at call time (tests lower the budgets)
    lines = body.split(b"\n")
    lines.pop()  # the body ends with a newline (or is empty): nothing after it
    for line in lines:
        try:
            value = loads(line)
        except orjson.JSONDecodeError:
            return None
        if type(value) is not dict:
            return None
        kind = value.get("type")
        if type(kind) is str and kind in CHUNK_ROW_TYPES:
            row = packed_row(kind, value, expected)
            if row is None:
                return None
            events.append(row)
            expected += len(row.times)
            if expected > most:
                return None
            continue
        seq = value.get("seq")
        if type(seq) is not int or seq != expected:
            return None
        events.append(value)
        expected += 1
    return events, expected


def _zstd_parts(data: bytes) -> tuple[bytes, bytes] | None:
    from subagent_catalog.read.zstdframes import decode_frame, scan_frames

    frames = scan_frames(data)
    if not frames.frames or frames.torn_start is not None:
        return None
    start, end = frames.frames[0]
    header = decode_frame(data[start:end], budget=limits.MAX_PLAINTEXT_BYTES)
    if not header or header.find(b"\n") != len(header) - 1:
        return None
    used = len(header)
    pieces = []
    marks = 0
    for start, end in frames.frames[1:]:
        plain = decode_frame(data[start:end], budget=limits.MAX_PLAINTEXT_BYTES - used)
        used += len(plain)
        if used - len(header) > limits.MAX_LOG_VALUES:  # past the cheap tier: charge the marks as they come
            marks += count_marks(plain)
            if marks > limits.MAX_LOG_VALUES:
                return None  # the full path fails it over budget; nothing more is held
        pieces.append(plain)
    return header, b"".join(pieces)


def split_log(data: bytes, compression: Compression) -> tuple[dict[str, Any], bytes] | None:
    """The header (as the full read takes it) and the body of a log no fast path should refuse outright.

    ``None`` when the header does not start a read, the log has a torn tail
    or a torn or damaged zstd frame, the header is not alone in the first
    frame, or the body is near a parse budget or a line could be longer than
    the longest JavaScript string: the full path reads those.

    Examples:
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> split_log(head + b'{"seq":0}\\n', "none")[1], split_log(head + b'{"seq":0}', "none")
        (b'{"seq":0}\\n', None)
    """
    import zstandard

    from subagent_catalog.read.zstdframes import ZstdStructureError

    try:
        if compression == "zstd":
            parts = _zstd_parts(data)
        else:
            end = data.find(b"\n") + 1  # past the header line
            parts = (data[:end], data[end:]) if end else None
        if parts is None:
            return None
        header, body = parts
        meta = parse_header_record(header)
    except (LogReadError, PlaintextTooLarge, ZstdStructureError, zstandard.ZstdError):
        return None
    if body[-1:] not in (b"", b"\n") or len(body) > limits.MAX_JS_STRING:
        return None
    most = limits.MAX_LOG_EVENTS  # read at call time (tests lower the budgets)
    if len(body) > 2 * most and body.count(b"\n") > most:  # more lines than the events budget: more events too
        return None  # (a line is at least one byte and its newline)
    # Inside the value budget at its first or second tier, so the full path would charge it without failing.
    if len(body) > limits.MAX_LOG_VALUES and count_marks(body) > limits.MAX_LOG_VALUES:
        return None
    return meta, body


def packed_facts(meta: dict[str, Any], body: bytes) -> FastFacts | None:
    """The facts of a healthy log's body read by ``orjson`` with packed rows kept packed; ``None`` otherwise.

    Examples:
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> row = (b'{"type":"text-chunks","seq0":0,"time0":5,'
        ...        b'"data":{"turn":1,"step":1,"index":0,"dt":[2],"texts":["a","b"]}}\\n')
        >>> fast = packed_facts(*split_log(head + row, "none"))
        >>> fast.count, fast.events, fast.events[0].times, (fast.first_time, fast.last_time)
        (2, [{'type': 'assistant/chunk', 'seq': 1, 'time': 7}], [5, 7], (5, 7))
        >>> packed_facts(*split_log(head + row.replace(b'"dt":[2]', b'"dt":[]'), "none")) is None
        True
    """
    read = _events(body)
    if read is None or read[1] > limits.MAX_LOG_EVENTS:
        return None
    events, count = read
    try:
        balanced = validate_packed_read(meta, events, meta["id"], PackedRow)
    except InspectFailure:
        return None  # the full path names the failing rule and the line
    first, last = time_span(events)
    seed = meta.get("seedLength", 0)
    run = None
    if is_safe_integer(seed) and seed >= 0:
        run = fold_run(events, int(seed), span=(first, last))
        if seed:  # fold_run read the stand-ins' times only: the own events' span, members included
            run.first_ms, run.last_ms = time_span(events, int(seed))
    descriptors = [event for event in events if event.get("type") == "subagent/descriptor"]
    return FastFacts(meta, count, first, last, run, descriptors, events, balanced, len(balanced) - len(events), events)


def time_span(events: list[dict[str, Any]], seed_length: int = 0) -> tuple[int | None, int | None]:
    """The least and greatest safe-integer ``time`` of the events with ``seq >= seed_length``, members included.

    Examples:
        >>> time_span([{"seq": 0, "time": 9}, PackedRow({}, 1, [4, 12])], 0)
        (4, 12)
        >>> time_span([{"seq": 0, "time": 9}, PackedRow({}, 1, [4, 12])], 2)
        (12, 12)
    """
    times: list[int | float] = []
    for event in events:
        if type(event) is PackedRow:
            skip = seed_length - event.seq0
            members = event.times[skip:] if skip > 0 else event.times
            if members:
                times.append(min(members))
                times.append(max(members))
        elif event["seq"] >= seed_length:
            time = event.get("time")
            if (type(time) is int and -MAX_SAFE_INTEGER <= time <= MAX_SAFE_INTEGER) or is_safe_integer(time):
                times.append(time)
    return (int(min(times)), int(max(times))) if times else (None, None)


def expand_packed(events: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The events as the full path holds them: each packed row expanded to its members.

    Examples:
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> row = (b'{"type":"text-chunks","seq0":0,"time0":5,'
        ...        b'"data":{"turn":1,"step":1,"index":0,"dt":[2],"texts":["a","b"]}}\\n')
        >>> [e["seq"] for e in expand_packed(packed_facts(*split_log(head + row, "none")).events)]
        [0, 1]
    """
    for event in events:
        if type(event) is PackedRow:
            yield from expand_chunk_row(event.value)
        else:
            yield event
