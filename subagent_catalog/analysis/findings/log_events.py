"""The own events of one log that a detector needs, with their ``data`` decoded.

Detectors that need more than the facts the single read keeps (a call's arguments, a result's text,
a retry) read the logs they must, one at a time, through ``Corpus.log_events`` (a raw corpus's file,
or an archive's events), and keep the session's own events of the types they ask for (a fork's seed
is its parent's history: found in the parent).
"""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

import orjson
import polars as pl

from subagent_catalog.forking import process_pool
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.paths import Compression
from subagent_catalog.read.search_scan import healthy_parts
from subagent_catalog.store.archive import ArchiveCorpus

__all__ = ["Event", "logs_with_type", "own_events"]


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


def _mentions(args: tuple[str, Compression, tuple[bytes, ...]]) -> bool:
    """Whether a log can hold an event of a type: its bytes hold one of the needles (or it is not healthy)."""
    path, compression, needles = args
    parts = healthy_parts(path, compression)
    if parts is None:
        return True  # unstable or odd: the reader decides
    body = parts[1]
    return any(needle in body for needle in needles) or b"\\u" in body or b"\\/" in body


def logs_with_type(corpus: Corpus, rows: list[dict[str, Any]], kind: str, *, jobs: int | None = None) -> list[int]:
    """The ``list_order`` of the rows whose log may hold an event of type ``kind`` (the others cannot).

    A raw corpus's healthy logs are probed by their bytes (the type's JSON forms, or an escape that
    could hide it), in a process pool for many logs; any other log, and every session of an archive,
    is a candidate.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = list(corpus.sessions.iter_rows(named=True))
        >>> orders = logs_with_type(corpus, rows, "llm/retry")
        >>> sorted(corpus.sessions.filter(pl.col("list_order").is_in(orders))["session_id"])
        ['retry-no', 'retry-yes']
    """
    wanted = [row for row in rows if row.get("verdict") != "skipped" and (row.get("event_count") or 0) > 0]
    if isinstance(corpus, ArchiveCorpus) or not wanted:
        return [row["list_order"] for row in wanted]
    readable = corpus.sessions.filter(pl.col("verdict") != "skipped").sort("list_order")["list_order"].to_list()
    paths = dict(zip(readable, corpus.log_sources(), strict=True))
    needles = (kind.encode(), kind.replace("/", "\\/").encode())
    tasks = [(paths[row["list_order"]], corpus.compression, needles) for row in wanted]
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    if workers <= 1 or len(tasks) < PARALLEL_THRESHOLD:
        flags = list(map(_mentions, tasks))
    else:
        with process_pool(workers) as pool:  # workers use no Polars: forking is safe (heap frozen)
            flags = list(pool.map(_mentions, tasks, chunksize=max(1, len(tasks) // (workers * 8))))
    return [row["list_order"] for row, flag in zip(wanted, flags, strict=True) if flag]
