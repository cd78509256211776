"""``search_events`` and ``search_sessions``: find events by the text they carry, over a corpus or an archive.

The text is the events' decoded ``text`` column (``read.event_text``:
message text, reasoning, tool names and arguments, tool results, errors,
subagent labels; the chunks of a stream that never got its message,
assembled), never the raw JSON: a pattern matches a ``"`` or a newline in
the text, and never a JSON key such as ``"type"`` or an id. The match is one
vectorized Polars query over that column (``analysis.search_match``: Rust
regex, linear time, case-insensitive in the engine).

Over an ``Archive`` exported with events its Parquet files are scanned a few
at a time, the pattern pushed into the reader (with a limit, a bounded batch
at a time, files in the order their footers' statistics give); over a
``Corpus`` whose events are loaded, that frame is used; over a raw ``Corpus``
the logs are scanned in parallel (``read.search_scan``): each is decompressed
once, its bytes searched for the pattern's JSON-escaped form, and only the
lines that hold it decoded. ``limit`` stops early.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import polars as pl

from subagent_catalog.analysis.search_match import (
    FIELD_ORDER,
    MAX_PATTERN_CHARS,
    Pattern,
    SearchError,
    compile_pattern,
    contains,
    match_events,
)
from subagent_catalog.bounds import COUNT
from subagent_catalog.errors import CorpusRootError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.schemas import EVENT_SCHEMA
from subagent_catalog.frames.source import Source
from subagent_catalog.read.event_text import TEXT_TYPES, event_parts
from subagent_catalog.read.search_scan import needle_for, scan_logs

__all__ = [
    "DEFAULT_TYPES",
    "FIELD_ORDER",
    "MAX_PATTERN_CHARS",
    "SEARCH_SCHEMA",
    "SESSION_HITS_SCHEMA",
    "SearchError",
    "event_texts",
    "search_events",
    "search_sessions",
]

DEFAULT_TYPES: tuple[str, ...] = TEXT_TYPES
"""The event types searched by default: those that carry message, tool, error or label text.

An ``assistant/chunk`` has text only when it is the last chunk of a stream
that never got its ``assistant/message`` (a killed run, an aborted turn, a
retried attempt): the stream's blocks assembled from its chunks. Every other
chunk's text is its message's, searched there.
"""

SEARCH_SCHEMA: dict[str, Any] = {
    **{name: EVENT_SCHEMA[name] for name in ("session_id", "seq", "time_ms", "type", "turn", "step")},
    "field": pl.String,
    "block": pl.Int64,
    "start": pl.Int64,
    "end": pl.Int64,
    "snippet": pl.String,
    "matches": pl.Int64,
    "project_dir": pl.String,
    "list_order": pl.Int64,
}
"""The columns of ``search_events``' result."""

SESSION_HITS_SCHEMA: dict[str, Any] = {
    "session_id": pl.String,
    "project_dir": pl.String,
    "list_order": pl.Int64,
    "events": pl.Int64,
    "hits": pl.Int64,
    "matches": pl.Int64,
    "first_seq": pl.Int64,
    "first_type": pl.String,
    "first_snippet": pl.String,
}
"""The columns of ``search_sessions``' result."""

_KEY = ["list_order", "seq", "_pos", "_rank"]
_COLUMNS = ["session_id", "seq", "time_ms", "type", "turn", "step", "text", "text_fields"]
_STORED_COLUMNS = ["list_order", "event_index", "project_dir"]


def event_texts(kind: str | None, data: Any) -> list[tuple[str, str]]:
    """The searchable texts of one event, as (field, text) pairs in document order (its ``text`` parts).

    Examples:
        >>> event_texts("tool/call", {"name": "grep", "arguments": '{"q":"x"}', "callId": "c1"})
        [('name', 'grep'), ('arguments', '{"q":"x"}')]
        >>> event_texts("request/context", {"provider": "p", "contextWindow": 1})
        [('data', 'p')]
    """
    return event_parts(kind, data)


# --- sources ----------------------------------------------------------------------------------


Frames = Iterator[tuple[pl.DataFrame, int | None]]
"""Candidate rows, each with the smallest ``list_order`` any later frame can hold (None: no more frames)."""


SCAN_BATCH_LOGS = 256
"""Raw logs whose candidate events are matched at a time (one Polars query per batch)."""

MATCH_BATCH_BYTES = 8 * 1024 * 1024
"""Bytes of candidate text matched together without a limit: small frames of several files are one query
(its planning paid once, not per group of files), and memory holds about this much text more than one frame."""


_CANDIDATE_SCHEMA: dict[str, Any] = {
    "seq": pl.Int64,
    "time_ms": pl.Int64,
    "type": pl.String,
    "turn": pl.Int64,
    "step": pl.Int64,
    "text": pl.String,
    "text_fields": pl.String,
    "_pos": pl.Int64,
}


def _corpus_frames(corpus: Corpus, predicate: pl.Expr, pattern: str, options: dict[str, Any]) -> Frames:
    """The candidate rows of a corpus: its loaded events at once, else its logs scanned in parallel."""
    logs = (
        corpus.sessions.filter(pl.col("verdict") != "skipped")
        .sort("list_order")
        .select("list_order", "project_dir", "session_id", "verdict")
    )
    ids = logs["session_id"]
    if corpus._events is not None and ids.null_count() == 0 and not ids.is_duplicated().any():
        frame = (
            corpus._events.lazy()
            .with_row_index("_pos")
            .with_columns(pl.col("_pos").cast(pl.Int64))
            .filter(predicate)
            .join(logs.lazy().drop("verdict"), on="session_id", how="left", maintain_order="left")
            .collect()
        )
        yield frame, None
        return
    if not os.path.isdir(corpus.log_root):
        raise CorpusRootError(
            f"the corpus root {corpus.log_root!r} is not a directory any more",
            hint="search the corpus where its logs are, or an archive exported with events=True",
        )
    orders = logs["list_order"].to_list()
    projects = logs["project_dir"].to_list()
    healthy = (logs["verdict"] == "ok").to_list()
    needle = needle_for(pattern, types=frozenset(options["types"]), **options["pattern"])
    work = list(zip(corpus.log_sources(), healthy, strict=True))
    rows: list[tuple[Any, ...]] = []
    keys: list[tuple[int, str | None, str]] = []
    schema = [*_CANDIDATE_SCHEMA.items(), ("list_order", pl.Int64)]
    for index, (session_id, found) in enumerate(scan_logs(work, corpus.compression, needle, jobs=corpus._jobs)):
        if found:
            keys.append((len(found), session_id, projects[index]))
            rows.extend((*row, orders[index]) for row in found)
        flush = options["limit"] is not None or len(rows) >= 50_000 or (index + 1) % SCAN_BATCH_LOGS == 0
        if flush or index + 1 == len(work):
            if rows:
                columns = zip(*rows, strict=True)  # column by column: much cheaper than rows of long texts
                frame = pl.DataFrame(
                    [pl.Series(name, values, dtype=kind) for (name, kind), values in zip(schema, columns, strict=True)]
                ).with_columns(
                    pl.Series("session_id", [sid for n, sid, _ in keys for _ in range(n)], dtype=pl.String),
                    pl.Series("project_dir", [project for n, _, project in keys for _ in range(n)], dtype=pl.String),
                )
                yield frame, orders[index + 1] if index + 1 < len(orders) else None
            rows, keys = [], []


def search_events(
    source: Source,
    pattern: str,
    *,
    types: Sequence[str] | None = None,
    regex: bool = False,
    ignore_case: bool = False,
    limit: int | None = None,
    context: int = 40,
) -> pl.DataFrame:
    """The events whose text holds a pattern: one row per (event, field) that matches.

    The text searched is each event's ``text`` column (``corpus.events``),
    part by part; per event type (``field`` in brackets): ``user/message``
    content text and reasoning blocks (``text``, ``reasoning``);
    ``assistant/message`` text (``text``), reasoning (``reasoning``) and tool
    calls (``name``, ``arguments``); ``assistant/chunk``: the assembled blocks
    of a stream that never got its message, on its last chunk (as in a
    message); ``tool/call`` (``name``, ``arguments``); ``tool/result`` output
    text (``result``) and ``data.error`` (``error``); ``turn/end`` the
    reason's error message and code (``error``); ``subagent/descriptor``
    (``label``, ``persona``); any other type: every string value of its data
    (``data``). Adjacent blocks of one kind are one text (a phrase running
    from one into the next is found). JSON keys and ids are never searched.

    Args:
        source: a read corpus (its loaded events, or its logs scanned in
            parallel), or an archive exported with events.
        pattern: the text to find (with ``regex=True`` a regular expression in
            the syntax of Rust's ``regex`` crate, which Polars uses: linear
            time, no look-around or backreferences); at most
            ``MAX_PATTERN_CHARS`` characters.
        types: the event types to search (default ``DEFAULT_TYPES``).
        regex: treat ``pattern`` as a regular expression.
        ignore_case: match regardless of case (the regex engine's ``(?i)``:
            Unicode simple case folding).
        limit: at most this many rows (the first ones in order); reading
            stops as soon as they are known.
        context: characters of text kept on either side of the field's first
            match in ``snippet`` (``…`` marks a cut end; newlines are kept).

    Returns:
        A frame with ``SEARCH_SCHEMA``: ``session_id``, ``seq``, ``time_ms``,
        ``type``, ``turn``, ``step``, ``field``, ``block`` (the part of the
        event's ``text`` holding the field's first match), ``start`` and
        ``end`` (that match's character offsets in the event's ``text``),
        ``snippet``, ``matches`` (in that field, non-overlapping),
        ``project_dir`` and ``list_order`` (the ``sessions`` row:
        ``join(corpus.sessions, on="list_order")`` reaches the run facts); in
        list order, then by ``seq``, then in ``FIELD_ORDER``.

    Raises:
        SearchError: an empty pattern, an invalid regex, or a bad option.
        ArchiveError: the archive holds no events (or a data file is unreadable).
        CorpusRootError: the corpus's logs are no longer where they were read.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1")
        >>> log.turn_start(); log.user('fix the "retry" loop'); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> search_events(read_corpus(root), '"retry"').select("seq", "field", "start", "snippet", "matches").rows()
        [(1, 'text', 8, 'fix the "retry" loop', 1)]
        >>> search_events(read_corpus(root), "type").height    # keys are not text
        0
    """
    if not isinstance(pattern, str) or pattern == "":
        raise SearchError(
            f"the pattern must be a non-empty string, not {pattern!r}",
            hint='pass the text to look for, e.g. search_events(corpus, "timeout")',
        )
    if isinstance(types, str) or (types is not None and not all(isinstance(t, str) for t in types)):
        raise SearchError(
            f"types must be a list of event type names, not {types!r}",
            hint='pass a list, e.g. types=["tool/result"]',
        )
    chosen = list(DEFAULT_TYPES if types is None else types)
    if not chosen:
        raise SearchError("types is empty: no event would be searched", hint="leave types=None for DEFAULT_TYPES")
    COUNT.check("limit", limit, error=SearchError, hint="pass limit=100, say, or None", optional=True)
    COUNT.check("context", context, error=SearchError, hint="pass context=40, say")
    compiled = compile_pattern(pattern, regex=regex, ignore_case=ignore_case)
    if limit == 0:
        return pl.DataFrame(schema=SEARCH_SCHEMA)
    kept = pl.col("type").is_in(chosen) & pl.col("text").is_not_null()
    predicate = kept if compiled.anchored else kept & contains("text", compiled)
    if not isinstance(source, Source):
        raise SearchError(
            f"cannot search a {type(source).__name__}",
            hint="pass a Corpus (read_corpus(root)) or an Archive (open_archive(path))",
        )
    # An anchored regex is tried part by part (its anchors hold at a part's ends): the whole text filters nothing.
    pushed = kept if compiled.anchored else contains("text", compiled)
    stored = source.event_frames(
        [*_COLUMNS, *_STORED_COLUMNS], types=chosen, pushed=pushed, where=kept, in_order=limit is not None
    )
    if stored is not None:  # its rows hold the pattern (pushed into the reader): not searched twice
        frames = _batched(((frame.rename({"event_index": "_pos"}), later) for frame, later in stored), limit)
        return _collect(frames, compiled, context, limit, prefiltered=True)
    options = {"types": chosen, "pattern": {"regex": regex, "ignore_case": ignore_case}, "limit": limit}
    frames = _corpus_frames(source.to_corpus(), predicate, pattern, options)
    return _collect(frames, compiled, context, limit, prefiltered=False)


def _batched(frames: Frames, limit: int | None) -> Frames:
    """Without a limit, an archive's candidate frames joined until they hold ``MATCH_BATCH_BYTES`` of text."""
    if limit is not None:
        yield from frames
        return
    pending: list[pl.DataFrame] = []
    size = 0
    for frame, _ in frames:
        if frame.height:
            pending.append(frame)
            size += int(frame["text"].str.len_bytes().sum() or 0)
        if size >= MATCH_BATCH_BYTES:
            yield pl.concat(pending, how="vertical_relaxed"), None
            pending, size = [], 0
    if pending:
        yield pl.concat(pending, how="vertical_relaxed"), None


def _collect(frames: Frames, compiled: Pattern, context: int, limit: int | None, *, prefiltered: bool) -> pl.DataFrame:
    found: list[pl.DataFrame] = []
    held = 0
    for frame, later in frames:
        if frame.height == 0:
            continue
        hits = match_events(frame, compiled, context=context, prefiltered=prefiltered)
        if hits.height == 0:
            continue
        found.append(hits)
        held += hits.height
        if limit is not None and held >= limit:
            merged = pl.concat(found).sort(_KEY).head(limit)
            found, held = [merged], merged.height
            if later is None or later > merged["list_order"][-1]:
                break
    if not found:
        return pl.DataFrame(schema=SEARCH_SCHEMA)
    result = pl.concat(found).sort(_KEY, nulls_last=False)
    if limit is not None:
        result = result.head(limit)
    return result.select([pl.col(name).cast(kind) for name, kind in SEARCH_SCHEMA.items()])


def search_sessions(
    source: Source,
    pattern: str,
    *,
    types: Sequence[str] | None = None,
    regex: bool = False,
    ignore_case: bool = False,
    context: int = 40,
) -> pl.DataFrame:
    """The sessions whose events hold a pattern: one row per session, with hit counts.

    The same search as ``search_events`` (every hit: there is no limit),
    grouped by log.

    Returns:
        A frame with ``SESSION_HITS_SCHEMA``: ``session_id``, ``project_dir``,
        ``list_order`` (join ``corpus.sessions`` on it), ``events`` (events
        with a hit), ``hits`` (matching (event, field) rows), ``matches``
        (all matches), and the first hit's ``first_seq``, ``first_type`` and
        ``first_snippet``; in list order.

    Raises:
        SearchError: an empty pattern, an invalid regex, or a bad option.
        ArchiveError: the archive holds no events (or a data file is unreadable).
        CorpusRootError: the corpus's logs are no longer where they were read.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1")
        >>> log.turn_start(); log.user("retry, then retry"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> search_sessions(read_corpus(root), "retry").select("session_id", "events", "matches").rows()
        [('s1', 1, 2)]
    """
    hits = search_events(source, pattern, types=types, regex=regex, ignore_case=ignore_case, context=context)
    grouped = hits.group_by("list_order", maintain_order=True).agg(
        pl.col("session_id").first(),
        pl.col("project_dir").first(),
        pl.struct("seq", "type").n_unique().cast(pl.Int64).alias("events"),
        pl.len().cast(pl.Int64).alias("hits"),
        pl.col("matches").sum().cast(pl.Int64),
        pl.col("seq").first().alias("first_seq"),
        pl.col("type").first().alias("first_type"),
        pl.col("snippet").first().alias("first_snippet"),
    )
    return grouped.select([pl.col(name).cast(kind) for name, kind in SESSION_HITS_SCHEMA.items()])
