"""The own events of one log that a detector needs, with their ``data`` decoded.

Detectors that need more than the facts the single read keeps (a call's arguments, a result's text,
a retry) read the logs they must, one at a time, through ``Corpus.log_events`` (a raw corpus's file,
or an archive's events), and keep the session's own events of the types they ask for (a fork's seed
is its parent's history: found in the parent).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson
import polars as pl

from subagent_catalog.forking import process_pool
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.event_text import event_text
from subagent_catalog.read.jsvalue import is_safe_integer
from subagent_catalog.read.paths import Compression
from subagent_catalog.read.search_scan import healthy_parts, line_spans

__all__ = ["Event", "Events", "events_for", "events_of", "own_events", "read_wanted"]


class Event(NamedTuple):
    """One event: its position, time, turn and step, type, decoded ``data`` and searchable ``text``."""

    seq: int
    time_ms: int | None
    turn: int | None
    step: int | None
    type: str
    data: Any
    text: str | None


def _decode(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:  # a lone surrogate escape: Python's decoder keeps it
        try:
            return json.loads(raw)
        except ValueError:
            return None


def own_events(corpus: Corpus, list_order: int, types: frozenset[str]) -> list[Event]:
    """The session's own events of these types (not a fork's seed), in log order.

    Raises:
        CorpusRootError: the log cannot be opened any more.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1")
        >>> log.turn_start(); log.user("hi"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> [(e.seq, e.type, e.text) for e in own_events(read_corpus(root), 0, frozenset({"user/message"}))]
        [(1, 'user/message', 'hi')]
    """
    frame = corpus.log_events(list_order).filter(
        pl.col("type").is_in(list(types)) & ~pl.col("in_seed").fill_null(False)
    )
    return [
        Event(seq, time_ms, turn, step, kind, _decode(data), text)
        for seq, time_ms, turn, step, kind, data, text in frame.select(
            "seq", "time_ms", "turn", "step", "type", "data", "text"
        ).iter_rows()
    ]


PARALLEL_THRESHOLD = 64
"""Fewer logs than this are probed in the calling process."""


def _int(value: Any) -> int | None:
    return int(value) if is_safe_integer(value) else None


def _scan_types(args: tuple[str, Compression, tuple[str, ...], int]) -> list[Event] | None:
    """A healthy log's own events of these types, decoding only the lines that can hold one (the pool's worker).

    ``None`` when the log is not healthy or a line is odd: the reader decides (``Corpus.log_events``).
    """
    path, compression, types, seed_length = args
    parts = healthy_parts(path, compression)
    if parts is None:
        return None
    body = parts[1]
    needles = [t.encode() for t in types] + [t.replace("/", "\\/").encode() for t in types]
    if b"\\u" in body:
        needles.append(b"\\u")
    out: list[Event] = []
    for start, end in line_spans(body, needles, body):
        try:
            event = orjson.loads(body[start:end])
        except orjson.JSONDecodeError:
            return None
        if not isinstance(event, dict):
            return None
        kind = event.get("type")
        if kind not in types:
            continue
        seq = _int(event.get("seq"))
        if seq is None:
            return None
        if seq < seed_length:
            continue
        data = event.get("data")
        text, _fields = event_text(kind, data)
        turn = _int(data.get("turn")) if isinstance(data, dict) else None
        step = _int(data.get("step")) if isinstance(data, dict) else None
        out.append(Event(seq, _int(event.get("time")), turn, step, kind, data, text))
    out.sort(key=lambda e: e.seq)
    return out


def events_of(
    corpus: Corpus, rows: list[dict[str, Any]], types: frozenset[str], *, jobs: int | None = None
) -> dict[int, list[Event]]:
    """``own_events`` of many sessions at once, by ``list_order``: a raw corpus's healthy logs byte-scanned in a pool.

    Only the lines that can hold one of the types are decoded (the search engine's way); a log that is
    not healthy, and every session of an archive, is read by ``own_events``.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = corpus.sessions.filter(pl.col("session_id") == "retry-yes").to_dicts()
        >>> [(e.seq, e.turn, e.type) for e in events_of(corpus, rows, frozenset({"llm/retry"}))[rows[0]["list_order"]]]
        [(2, 1, 'llm/retry'), (3, 1, 'llm/retry'), (4, 1, 'llm/retry')]
    """
    return read_wanted(corpus, [(row, types) for row in rows], jobs=jobs)


def read_wanted(
    corpus: Corpus, wants: list[tuple[dict[str, Any], frozenset[str]]], *, jobs: int | None = None
) -> dict[int, list[Event]]:
    """Each session's own events of its own set of types (``(row, types)``, a row at most once), each log read once.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = {r["session_id"]: r for r in corpus.sessions.to_dicts()}
        >>> got = read_wanted(corpus, [(rows["retry-yes"], frozenset({"llm/retry"})),
        ...                            (rows["context-error"], frozenset({"turn/end"}))])
        >>> [[e.type for e in got[rows[s]["list_order"]]] for s in ("retry-yes", "context-error")]
        [['llm/retry', 'llm/retry', 'llm/retry'], ['turn/end']]
    """
    wanted = [(row, types) for row, types in wants if row.get("verdict") != "skipped" and types]
    out: dict[int, list[Event]] = {}
    fast: list[tuple[dict[str, Any], frozenset[str]]] = []
    if wanted and corpus.stored_events() is None:  # its logs are read in place (not an archive's events files)
        fast = [(row, types) for row, types in wanted if row.get("verdict") == "ok"]
    if fast:
        readable = corpus.sessions.filter(pl.col("verdict") != "skipped").sort("list_order")["list_order"].to_list()
        paths = dict(zip(readable, corpus.log_sources(), strict=True))
        tasks = [
            (paths[row["list_order"]], corpus.compression, tuple(sorted(types)), row.get("seed_length") or 0)
            for row, types in fast
        ]
        workers = jobs if jobs is not None else (os.cpu_count() or 1)
        if workers <= 1 or len(tasks) < PARALLEL_THRESHOLD:
            found = list(map(_scan_types, tasks))
        else:
            with process_pool(workers) as pool:  # workers use no Polars: forking is safe (heap frozen)
                found = list(pool.map(_scan_types, tasks, chunksize=max(1, len(tasks) // (workers * 8))))
        for (row, _types), events in zip(fast, found, strict=True):
            if events is not None:
                out[row["list_order"]] = events
    for row, types in wanted:
        if row["list_order"] not in out:
            out[row["list_order"]] = own_events(corpus, row["list_order"], types)
    return out


Events = Mapping[int, list[Event]]
"""Sessions' own events by ``list_order`` (``read_wanted``)."""


def events_for(corpus: Corpus, rows: list[dict[str, Any]], types: frozenset[str], events: Events | None) -> Events:
    """The rows' own events of these types by ``list_order``: from ``events`` where that read their log, else read now.

    Examples:
        >>> read = {1: [Event(0, None, 1, None, "turn/end", {}, None), Event(1, None, 1, None, "llm/retry", {}, None)]}
        >>> [e.type for e in events_for(None, [{"list_order": 1}], frozenset({"turn/end"}), read)[1]]  # none read now
        ['turn/end']
    """
    read = events or {}
    unread = [row for row in rows if row["list_order"] not in read]
    fresh = events_of(corpus, unread, types) if unread else {}
    return {
        order: fresh[order] if order in fresh else [event for event in read[order] if event.type in types]
        for order in (row["list_order"] for row in rows)
    }
