"""The readable part of a log upstream cannot read: its events before the damaged line.

A log whose read fails (``verdict`` ``failed``: a corrupt line before a ``turn/end``, an event
type upstream does not know...) has no events in the corpus, yet everything before the damage is
often plain, readable history. ``readable_events`` reads the log again (read-only, as every read)
and folds the lines before ``read_line`` (or before ``read_offset``) as a log of their own, so a
transcript can show them, followed by the row that says where and why the read stopped.
"""

from __future__ import annotations

import os
from typing import Any

import polars as pl
import zstandard

from subagent_catalog.frames.corpus import facts_events
from subagent_catalog.frames.schemas import EVENT_SCHEMA
from subagent_catalog.read.logread import analyse_log, read_stable_bytes
from subagent_catalog.read.zstdframes import decode_frame, scan_frames


def readable_events(session: dict[str, Any]) -> pl.DataFrame:
    """The events of a failed log's lines before its damage (empty when none can be recovered).

    Args:
        session: the log's ``sessions`` row (``verdict``, ``read_line`` or ``read_offset``,
            ``path``/``path_bytes``, ``encoding``).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/sample")
        >>> row = corpus.sessions.filter(pl.col("session_id") == "garbage-line").row(0, named=True)
        >>> row["verdict"], corpus.log_events(row["list_order"]).height, readable_events(row)["type"].to_list()[:2]
        ('failed', 0, ['turn/start', 'user/message'])
    """
    empty = pl.DataFrame(schema=EVENT_SCHEMA)
    if session.get("verdict") != "failed":
        return empty
    line, offset = session.get("read_line"), session.get("read_offset")
    raw = session.get("path_bytes")
    path = os.fsdecode(raw) if raw is not None else session.get("path")
    if path is None or (line is None and offset is None):
        return empty
    try:
        data, _ = read_stable_bytes(path, exact=True)
    except OSError:
        return empty
    text = data
    if session.get("encoding") == "zstd":  # its frames decoded in order up to the first that fails
        try:
            frames = scan_frames(data).frames
        except ValueError:
            return empty
        parts: list[bytes] = []
        for start, end in frames:
            try:
                parts.append(decode_frame(data[start:end]))
            except (zstandard.ZstdError, ValueError, MemoryError):  # a damaged or oversized frame: stop there
                break
        text = b"".join(parts)
        del parts
    if line is not None:
        cut = 0
        for _ in range(max(0, int(line) - 1)):
            cut = text.find(b"\n", cut) + 1
            if cut == 0:
                return empty
        prefix = text[:cut]
    else:
        prefix = text[: text.rfind(b"\n", 0, int(offset or 0)) + 1]
    if not prefix:
        return empty
    facts = analyse_log(prefix, "none", want_events=True)
    return facts_events(facts) if facts.verdict != "failed" else empty
