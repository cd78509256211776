"""The events frame's rows of one log: from its parsed events, or streamed from a healthy log's bytes.

``event_rows`` gives the rows of a log's events (``EVENT_SCHEMA`` order:
``session_id``, ``seq``, ``time_ms``, ``type``, ``turn``, ``step``,
``ignorable``, ``in_seed``, ``data`` and the decoded ``text`` and
``text_fields`` of ``event_text.log_texts``), as ``read_log_file`` keeps
them. They cost far more than the log's bytes as Python objects (a log of
100,000 events: about 150 MB of rows beside about 120 MB of parsed events).

``EventRowStream`` gives the same rows a chunk at a time from the body of a
log the packed fast path reads (``read.fastpath``: every line a JSON object
``orjson`` parses, the seqs consecutive, packed chunk rows that pass its
check), one line parsed at a time: only a chunk of rows and the chunks of
streams still waiting for their message are held, never the log's events.
The text a stream without a message gets on its last chunk is known only
when the stream ends, so it comes apart (``late_texts``, by row position,
which in a log the fast path reads is the event's seq).
At the first line the fast path would not read, the stream stops with
``FullReadNeeded``, and the caller reads the log the full way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from subagent_catalog.read import fastpath, limits
from subagent_catalog.read.chunk_rows import CHUNK_ROW_TYPES, expand_chunk_row
from subagent_catalog.read.event_text import OpenStreams, Text, event_steps, event_text, log_texts, stream_text
from subagent_catalog.read.jsvalue import frame_text, is_safe_integer, json_text
from subagent_catalog.read.paths import Compression

CHUNK_ROWS = 4096
"""Rows per chunk of an ``EventRowStream``."""


class FullReadNeeded(Exception):
    """A line the packed fast path does not read: the log takes the full read (``read_log_file``)."""


def first_own_seq(meta: dict[str, Any]) -> int:
    """The header's ``seedLength`` as the first own seq (0 unless a non-negative safe integer).

    Examples:
        >>> first_own_seq({"seedLength": 3}), first_own_seq({"seedLength": -1}), first_own_seq({})
        (3, 0, 0)
    """
    seed = meta.get("seedLength", 0)
    return int(seed) if is_safe_integer(seed) and seed >= 0 else 0


def event_row(session_id: str, event: dict[str, Any], seed: int) -> tuple[Any, ...]:
    """One event's row without its text (the first nine columns of ``EVENT_SCHEMA``).

    Examples:
        >>> event_row("s", {"type": "step/start", "seq": 4, "time": 9, "data": {"turn": 1, "step": 2}}, 0)
        ('s', 4, 9, 'step/start', 1, 2, False, False, '{"turn":1,"step":2}')
    """
    data = event.get("data")
    turn = step = None
    if isinstance(data, dict):
        turn = data.get("turn") if is_safe_integer(data.get("turn")) else None
        step = data.get("step") if is_safe_integer(data.get("step")) else None
    time = event.get("time")
    return (
        frame_text(session_id),
        int(event["seq"]),
        int(time) if is_safe_integer(time) else None,
        frame_text(event["type"]) if isinstance(event.get("type"), str) else None,
        int(turn) if turn is not None else None,
        int(step) if step is not None else None,
        event.get("ignorable") is True,
        event["seq"] < seed,
        json_text(data) if "data" in event else None,
    )


def event_rows(session_id: str, events: list[dict[str, Any]], seed: int) -> list[tuple[Any, ...]]:
    """The events frame's rows of one log (``EVENT_SCHEMA`` order), with each event's decoded text.

    Examples:
        >>> event_rows("s", [{"type": "tool/call", "seq": 0, "data": {"name": "grep"}}], 0)[0][-2:]
        ('grep', 'name')
    """
    return [(*event_row(session_id, event, seed), *text) for event, text in zip(events, log_texts(events), strict=True)]


class EventRowStream:
    """The rows of a healthy log's events, a chunk at a time, one line of the body parsed at a time.

    Iterating gives lists of about ``chunk_rows`` rows (``event_rows``'
    rows, in order) and may raise ``FullReadNeeded`` at any point; once it
    is done, ``late_texts`` maps the position of each stream's last chunk
    that gets a text (a stream that never got its message) to that text. It
    can be iterated once: the body is dropped as it ends.

    Examples:
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> line = b'{"type":"tool/call","seq":0,"time":5,"data":{"turn":1,"step":1,"name":"grep"}}\\n'
        >>> stream = event_stream(head + line, "none")
        >>> [row[1:4] + row[-2:] for rows in stream for row in rows], stream.late_texts
        ([(0, 5, 'tool/call', 'grep', 'name')], {})
        >>> list(event_stream(head + b'{"seq":1}\\n', "none"))  # a seq gap: the full read decides
        Traceback (most recent call last):
        ...
        subagent_catalog.read.event_rows.FullReadNeeded: seq 1 where 0 was next
    """

    def __init__(self, meta: dict[str, Any], body: bytes, *, chunk_rows: int | None = None) -> None:
        self.meta = meta
        self.chunk_rows = chunk_rows or CHUNK_ROWS  # read at call time (tests lower it)
        self.late_texts: dict[int, Text] = {}
        self._body = body

    def _orphans(self, streams: list[list[tuple[int, dict[str, Any]]]]) -> None:
        for chunks in streams:
            text = stream_text([event for _, event in chunks])
            if text[0] is not None:
                self.late_texts[chunks[-1][0]] = text

    def __iter__(self) -> Iterator[list[tuple[Any, ...]]]:
        body, self._body = self._body, b""
        session_id, seed = self.meta["id"], first_own_seq(self.meta)
        streams = OpenStreams()
        loads, view, size = orjson.loads, memoryview(body), len(body)
        most = limits.MAX_LOG_EVENTS  # read at call time (tests lower the budgets)
        rows: list[tuple[Any, ...]] = []
        start = expected = 0
        while start < size:  # the body ends with a newline (split_log)
            end = body.index(b"\n", start)
            try:
                value = loads(view[start:end])
            except orjson.JSONDecodeError:
                raise FullReadNeeded(f"a line at byte {start} is not JSON orjson reads") from None
            start = end + 1
            if type(value) is not dict:
                raise FullReadNeeded(f"the line ending at byte {end} is not an object")
            kind = value.get("type")
            if type(kind) is str and kind in CHUNK_ROW_TYPES:
                packed = fastpath.packed_row(kind, value, expected)
                if packed is None:
                    raise FullReadNeeded(f"a {kind} row the fast path does not read")
                members = expand_chunk_row(value)
            else:
                seq = value.get("seq")
                if type(seq) is not int or seq != expected:
                    raise FullReadNeeded(f"seq {seq!r} where {expected} was next")
                members = [value]
            for event in members:
                kind = event.get("type")
                text = (None, None) if kind == "assistant/chunk" else event_text(kind, event.get("data"))
                rows.append((*event_row(session_id, event, seed), *text))
                self._orphans(streams.feed(*event_steps(event), (expected, event)))
                expected += 1
            if expected > most:
                raise FullReadNeeded(f"more than {most} events")
            if len(rows) >= self.chunk_rows:
                yield rows
                rows = []
        self._orphans(streams.end())
        if rows:
            yield rows


def event_stream(data: bytes, compression: Compression) -> EventRowStream | None:
    """The rows of a log's events as a stream, or ``None`` when no fast path reads it (or it is switched off).

    ``None`` for a header the full read rejects, a torn tail or a damaged
    frame, a body near a parse budget (``fastpath.split_log``); the stream
    itself stops with ``FullReadNeeded`` at a line the fast path does not read.

    Examples:
        >>> event_stream(b'{"type":"session"', "none") is None
        True
    """
    if not fastpath.enabled():
        return None
    parts = fastpath.split_log(data, compression)
    return None if parts is None else EventRowStream(*parts)
