"""``search_events``: find events by the text they carry, over a corpus or an archive.

The text is the decoded text of an event's payload, field by field (message
text, reasoning, tool names and arguments, tool results, errors, subagent
labels), never the raw JSON: a pattern matches a ``"`` or a newline in the
text, and never a JSON key such as ``"type"``.

For speed a cheap vectorised filter runs first on the raw ``data`` JSON
string (the event type, and for a literal pattern its JSON-escaped form,
which every event whose text holds the pattern contains); only the rows it
keeps are decoded with ``orjson`` and checked on the extracted text. The
filter is conservative: when escaping cannot be trusted to appear verbatim
(a regex, a pattern with characters outside the Basic Multilingual Plane or
lone surrogates, a case-insensitive non-ASCII pattern), only the type filter
runs.

Over an ``Archive`` exported with events the Parquet files are read one at
a time with the filter pushed into the scan; over a raw ``Corpus`` the logs
are read one at a time (or its loaded events frame is used), so memory holds
one file's candidates at a time, and ``limit`` stops early.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import orjson
import polars as pl

from subagent_catalog.errors import CorpusRootError, SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus, facts_events
from subagent_catalog.frames.schemas import EVENT_SCHEMA
from subagent_catalog.read.jsvalue import frame_text, json_text
from subagent_catalog.read.logread import read_log_file
from subagent_catalog.store.archive import Archive, ArchiveCorpus
from subagent_catalog.store.layout import ArchiveError
from subagent_catalog.store.location import iter_parquet

__all__ = [
    "ARCHIVE_BATCH_ROWS",
    "DEFAULT_TYPES",
    "FIELD_ORDER",
    "MAX_PATTERN_CHARS",
    "SEARCH_SCHEMA",
    "SearchError",
    "SearchField",
    "event_texts",
    "prefilter",
    "search_events",
]

SearchField = Literal["text", "reasoning", "name", "arguments", "result", "error", "label", "persona", "data"]
"""Which text of an event matched (see ``search_events``)."""

FIELD_ORDER: tuple[SearchField, ...] = (
    "text",
    "reasoning",
    "name",
    "arguments",
    "result",
    "error",
    "label",
    "persona",
    "data",
)
"""The order of an event's matching fields in the result."""

DEFAULT_TYPES: tuple[str, ...] = (
    "user/message",
    "assistant/message",
    "tool/call",
    "tool/result",
    "turn/end",
    "subagent/descriptor",
)
"""The event types searched by default: those that carry message, tool, error or label text.

``assistant/chunk`` is not among them: its deltas are fragments of the text
the step's ``assistant/message`` holds whole (a word may be split across
two chunks); pass ``types=["assistant/chunk"]`` to search them anyway.
"""

SEARCH_SCHEMA: dict[str, Any] = {
    **{name: EVENT_SCHEMA[name] for name in ("session_id", "seq", "time_ms", "type", "turn", "step")},
    "field": pl.String,
    "snippet": pl.String,
    "matches": pl.Int64,
    "project_dir": pl.String,
}
"""The columns of ``search_events``' result."""

_RANK: dict[str, int] = {name: rank for rank, name in enumerate(FIELD_ORDER)}
_ELLIPSIS = "\u2026"
_COLUMNS = ("session_id", "seq", "time_ms", "type", "turn", "step", "data")

# Characters a case-insensitive ASCII letter matches besides its two ASCII cases: what Python's
# re.IGNORECASE matches, a superset of the regex engine's simple case folding (tests/test_search.py
# checks this table against every code point in both).
_EXTRA_CASES = {"i": "\u0130\u0131", "k": "\u212a", "s": "\u017f"}


class SearchError(SubagentCatalogError, ValueError):
    """A search that cannot run: an empty or invalid pattern, or a bad option."""


# --- matching ---------------------------------------------------------------------------------

MAX_PATTERN_CHARS = 10_000
"""The longest pattern searched (literal or regex): a longer one is a ``SearchError``, not a huge regex."""

_Hit = tuple[int, int, int]
_Find = Callable[[list[str]], "list[_Hit | None]"]
"""(start, end, count) of the pattern in each text (character offsets), or None where it does not occur."""


def _brief(error: BaseException) -> str:
    text = " ".join(line.strip() for line in str(error).split("This error occurred")[0].splitlines() if line.strip())
    return text[:200] + ("…" if len(text) > 200 else "")


def _finder(pattern: str, *, regex: bool, ignore_case: bool) -> _Find:
    """A function giving (start, end, count) of the pattern in each of a list of texts.

    A literal pattern is found with ``str.find``; a regex, or any
    case-insensitive pattern, runs in Polars' Rust ``regex`` engine, whose
    time is linear in the text whatever the pattern (no backtracking: a
    pattern such as ``(a+)+$`` cannot take exponential time), over all the
    texts of a batch at once.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise SearchError(
            f"the pattern is {len(pattern):,} characters long; the longest searched is {MAX_PATTERN_CHARS:,}",
            hint="search for a shorter, distinctive part of the text",
        )
    if not regex and not ignore_case:
        size = len(pattern)

        def find_literal(texts: list[str]) -> list[_Hit | None]:
            out: list[_Hit | None] = []
            for text in texts:
                start = text.find(pattern)
                out.append(None if start < 0 else (start, start + size, text.count(pattern)))
            return out

        return find_literal
    source = (frame_text(pattern) or "") if regex else pl.escape_regex(frame_text(pattern) or "")
    if ignore_case:
        source = "(?i)" + source
    try:
        pl.Series([""], dtype=pl.String).str.contains(source)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as error:
        raise SearchError(
            f"invalid regular expression {pattern[:200]!r}{'…' if len(pattern) > 200 else ''}: {_brief(error)}",
            hint="fix the pattern (Rust regex syntax: no look-around or backreferences), "
            "or pass regex=False to search for the text literally",
        ) from None

    def find_regex(texts: list[str]) -> list[_Hit | None]:
        if not texts:
            return []
        column = pl.Series([frame_text(text) for text in texts], dtype=pl.String)  # lone surrogates: U+FFFD
        found = pl.DataFrame({"text": column}).select(
            pl.col("text").str.find(source).alias("at"),
            pl.col("text").str.extract(source, 0).alias("match"),
            pl.col("text").str.count_matches(source).alias("count"),
        )
        out: list[_Hit | None] = []
        for text, (at, match, count) in zip(texts, found.iter_rows(), strict=True):
            if at is None:
                out.append(None)
                continue
            start = at if text.isascii() else len(text.encode("utf-8")[:at].decode("utf-8"))  # bytes to characters
            out.append((start, start + len(match or ""), count))
        return out

    return find_regex


def _fold_class(char: str) -> str:
    if not char.isalpha():
        return f"\\x{{{ord(char):x}}}"
    lower = char.lower()
    variants = lower + lower.upper() + _EXTRA_CASES.get(lower, "")
    return "[" + "".join(f"\\x{{{ord(c):x}}}" for c in variants) + "]"


def prefilter(pattern: str, *, regex: bool = False, ignore_case: bool = False) -> pl.Expr | None:
    """The filter on the raw ``data`` JSON that keeps every event whose text may hold the pattern.

    A literal appears in the JSON text as its JSON-escaped form (the reader
    writes ``data`` with one escape per character), so that form is searched
    for; ``None`` when no such filter is safe (a regex, characters outside the
    Basic Multilingual Plane or lone surrogates, a case-insensitive pattern
    that is not ASCII). Rows it keeps are then checked on the decoded text.

    Examples:
        >>> frame = pl.DataFrame({"data": ['{"text":"say \\\\"hi\\\\""}', '{"text":"bye"}']})
        >>> frame.filter(prefilter('"hi"')).height
        1
        >>> prefilter("a.b", regex=True) is None
        True
    """
    if regex or any(ord(c) > 0xFFFF or 0xD800 <= ord(c) <= 0xDFFF for c in pattern):
        return None
    escaped = json_text(pattern)[1:-1]
    if not ignore_case:
        return pl.col("data").str.contains(escaped, literal=True)
    if not pattern.isascii():
        return None
    return pl.col("data").str.contains("".join(_fold_class(c) for c in escaped))


# --- the text of an event ---------------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    """Every string value inside a decoded JSON value (keys excluded), in document order."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def _content(content: Any, out: list[tuple[str, str]]) -> None:
    """The texts of a message's content (a string, or a list of blocks)."""
    if isinstance(content, str):
        out.append(("text", content))
        return
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, dict):
            _block(block, out)


def _block(block: dict[str, Any], out: list[tuple[str, str]]) -> None:
    kind = block.get("type")
    if kind in ("text", "reasoning"):
        _add(out, "text" if kind == "text" else "reasoning", block.get("text"))
    elif kind == "tool-call":
        _add(out, "name", block.get("name"))
        _add(out, "arguments", block.get("arguments"))
    elif kind == "tool-result":
        result = block.get("content")
        if isinstance(result, str):
            out.append(("result", result))
        elif isinstance(result, list):
            for part in result:
                if isinstance(part, dict) and part.get("type") == "text":
                    _add(out, "result", part.get("text"))


def _add(out: list[tuple[str, str]], name: str, value: Any) -> None:
    if isinstance(value, str):
        out.append((name, value))


def _message(data: dict[str, Any]) -> dict[str, Any]:
    message = data.get("message")
    return message if isinstance(message, dict) else {}


def event_texts(kind: str | None, data: Any) -> list[tuple[str, str]]:
    """The searchable texts of one event, as (field, text) pairs in document order.

    Examples:
        >>> event_texts("tool/call", {"name": "grep", "arguments": '{"q":"x"}', "callId": "c1"})
        [('name', 'grep'), ('arguments', '{"q":"x"}')]
        >>> event_texts("request/context", {"provider": "p", "contextWindow": 1})
        [('data', 'p')]
    """
    out: list[tuple[str, str]] = []
    if not isinstance(data, dict):
        out.extend(("data", text) for text in _strings(data))
        return out
    if kind == "user/message":
        _content(data.get("content"), out)
    elif kind == "assistant/message":
        _content(_message(data).get("content"), out)
    elif kind == "tool/call":
        _add(out, "name", data.get("name"))
        _add(out, "arguments", data.get("arguments"))
    elif kind == "tool/result":
        _content(_message(data).get("content"), out)
        error = data.get("error")
        out.extend(("error", text) for text in _strings(error))
    elif kind == "turn/end":
        reason = data.get("reason")
        if isinstance(reason, dict):
            out.extend(("error", text) for text in _strings(reason.get("error")))
    elif kind == "subagent/descriptor":
        _add(out, "label", data.get("label"))
        _add(out, "persona", data.get("persona"))
    elif kind == "assistant/chunk":
        chunk = data.get("chunk")
        if isinstance(chunk, dict):
            delta = {"text-delta": "text", "reasoning-delta": "reasoning"}.get(str(chunk.get("type")))
            if delta is not None:
                _add(out, delta, chunk.get("text"))
            elif chunk.get("type") == "tool-call-delta":
                _add(out, "arguments", chunk.get("argumentsDelta"))
            elif chunk.get("type") == "block-end" and isinstance(chunk.get("block"), dict):
                _block(chunk["block"], out)
    else:
        out.extend(("data", text) for text in _strings(data))
    return out


def _decode(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        try:  # lone surrogates (written as \\udXXX escapes), which orjson refuses
            return json.loads(text)
        except (ValueError, RecursionError):
            return None


def _snippet(text: str, start: int, end: int, context: int) -> str:
    low, high = max(0, start - context), min(len(text), end + context)
    head = _ELLIPSIS if low > 0 else ""
    tail = _ELLIPSIS if high < len(text) else ""
    return frame_text(head + text[low:high] + tail) or ""


Row = tuple[Any, ...]
"""A result row: (list_order, seq, position, field rank) then the ``SEARCH_SCHEMA`` columns."""


def _verify(frame: pl.DataFrame, find: _Find, context: int) -> list[Row]:
    """Result rows of candidate events (``_COLUMNS`` plus ``list_order``, ``_pos``, ``project_dir``)."""
    names = [*_COLUMNS, "list_order", "_pos", "project_dir"]
    events: list[tuple[Any, ...]] = []
    fields: list[tuple[int, str]] = []  # (event, field) of each text
    texts: list[str] = []
    for values in frame.select(names).iter_rows():
        if values[6] is None:
            continue
        for name, text in event_texts(values[3], _decode(values[6])):
            fields.append((len(events), name))
            texts.append(text)
        events.append(values)
    found: dict[tuple[int, str], list[Any]] = {}
    for (event, name), text, hit in zip(fields, texts, find(texts), strict=True):
        if hit is None:
            continue
        seen = found.get((event, name))
        if seen is None:
            found[(event, name)] = [hit[2], _snippet(text, hit[0], hit[1], context)]
        else:
            seen[0] += hit[2]
    rows: list[Row] = []
    for (event, name), (count, snippet) in found.items():
        session_id, seq, time_ms, kind, turn, step, _data, order, pos, project = events[event]
        key = (order if order is not None else -1, seq, pos, _RANK[name])
        rows.append((*key, session_id, seq, time_ms, kind, turn, step, name, snippet, count, project))
    return rows


# --- sources ----------------------------------------------------------------------------------


Frames = Iterator[tuple[pl.DataFrame, int | None]]
"""Candidate rows, each with the smallest ``list_order`` any later frame can hold (None: no more frames)."""


ARCHIVE_BATCH_ROWS = 32_768
"""Rows of an archive's events file decoded at a time: a search holds one batch, and its hits, in memory."""


def _archive_frames(archive: Archive, predicate: pl.Expr, limit: int | None) -> Frames:
    """The candidate rows of each events file, a bounded batch at a time; with a limit, files by first log."""
    if not archive.has_events:
        raise ArchiveError(
            f"archive {archive.path!r} holds no events table, which search_events reads",
            hint="re-export with export_archive(root, out, events=True), or search read_corpus(root)",
        )
    names = list(archive.manifest["tables"]["events"]["files"])
    columns = [*_COLUMNS, "list_order", "event_index", "project_dir"]
    with archive.reading("events"):  # files checked against the manifest; any read error names the file
        bounds: list[int | None] = [None] * len(names)
        if limit is not None:
            bounds = [_first_order(archive, name) for name in names]
            order = sorted(range(len(names)), key=lambda i: (bounds[i] is None, bounds[i] or 0, i))
            names, bounds = [names[i] for i in order], [bounds[i] for i in order]
        for index, name in enumerate(names):
            later = bounds[index + 1] if index + 1 < len(bounds) else None
            own = bounds[index]
            batches = _batches(archive, name, columns)
            batch = next(batches, None)
            while batch is not None:
                following = next(batches, None)
                table = pl.from_arrow(batch)
                assert isinstance(table, pl.DataFrame)  # a record batch is a frame, never a series
                frame = (
                    table.lazy()
                    .filter(predicate)
                    .select(*_COLUMNS, "list_order", pl.col("event_index").alias("_pos"), "project_dir")
                    .collect()
                )
                # The rest of this file may hold any list order from the file's smallest on.
                yield frame, later if following is None else own if own is not None else -1
                batch = following


def _first_order(archive: Archive, name: str) -> int | None:
    """The smallest ``list_order`` of one events file (pyarrow, a bounded batch at a time)."""
    import pyarrow.compute as pc

    smallest: int | None = None
    for batch in iter_parquet(archive.location, [name], columns=["list_order"], batch_rows=ARCHIVE_BATCH_ROWS):
        value = pc.min(batch.column(0)).as_py()
        if value is not None and (smallest is None or value < smallest):
            smallest = int(value)
    return smallest


def _batches(archive: Archive, name: str, columns: list[str]) -> Iterator[Any]:
    """One events file as Arrow record batches of at most ``ARCHIVE_BATCH_ROWS`` rows and about 32 MiB."""
    return iter(iter_parquet(archive.location, [name], columns=columns, batch_rows=ARCHIVE_BATCH_ROWS))


def _corpus_frames(corpus: Corpus, predicate: pl.Expr) -> Frames:
    """The candidate rows of a raw corpus, one log at a time in list order (or its loaded events at once)."""
    logs = (
        corpus.sessions.filter(pl.col("verdict") != "skipped")
        .sort("list_order")
        .select("list_order", "project_dir", "session_id")
    )
    ids = logs["session_id"]
    if corpus._events is not None and ids.null_count() == 0 and not ids.is_duplicated().any():
        frame = (
            corpus._events.lazy()
            .with_row_index("_pos")
            .with_columns(pl.col("_pos").cast(pl.Int64))
            .filter(predicate)
            .join(logs.lazy(), on="session_id", how="left", maintain_order="left")
            .collect()
        )
        yield frame, None
        return
    if not os.path.isdir(corpus.root):
        raise CorpusRootError(
            f"the corpus root {corpus.root!r} is not a directory any more",
            hint="search the corpus where its logs are, or an archive exported with events=True",
        )
    orders = logs["list_order"].to_list()
    projects = logs["project_dir"].to_list()
    for index, path in enumerate(corpus.log_sources()):
        frame = (
            facts_events(read_log_file(path, corpus.compression, want_events=True))
            .lazy()
            .with_row_index("_pos")
            .filter(predicate)
            .with_columns(
                pl.col("_pos").cast(pl.Int64),
                pl.lit(orders[index], pl.Int64).alias("list_order"),
                pl.lit(projects[index], pl.String).alias("project_dir"),
            )
            .collect()
        )
        yield frame, orders[index + 1] if index + 1 < len(orders) else None


def _check(pattern: str, types: Sequence[str] | None, limit: int | None, context: int) -> list[str]:
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
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise SearchError(f"limit must be None or an integer >= 0, not {limit!r}", hint="pass limit=100, say")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise SearchError(f"context must be an integer >= 0, not {context!r}", hint="pass context=40, say")
    return chosen


def search_events(
    source: Corpus | Archive,
    pattern: str,
    *,
    types: Sequence[str] | None = None,
    regex: bool = False,
    ignore_case: bool = False,
    limit: int | None = None,
    context: int = 40,
) -> pl.DataFrame:
    """The events whose text holds a pattern: one row per (event, field) that matches.

    The text searched, per event type (``field`` in brackets): ``user/message``
    content text blocks (``text``); ``assistant/message`` text (``text``),
    reasoning (``reasoning``) and tool calls (``name``, ``arguments``);
    ``tool/call`` (``name``, ``arguments``); ``tool/result`` output text
    (``result``) and ``data.error`` (``error``); ``turn/end`` the reason's
    error message and code (``error``); ``subagent/descriptor`` (``label``,
    ``persona``); ``assistant/chunk`` deltas (``text``, ``reasoning``,
    ``arguments``); any other type: every string value of its data
    (``data``). JSON keys are never searched.

    Args:
        source: a read corpus (its logs are read one at a time, or its
            loaded events are used), or an archive exported with events.
        pattern: the text to find (with ``regex=True`` a regular expression in
            the syntax of Rust's ``regex`` crate, which Polars uses: linear
            time, no look-around or backreferences); at most
            ``MAX_PATTERN_CHARS`` characters.
        types: the event types to search (default ``DEFAULT_TYPES``: the
            text-bearing ones, without ``assistant/chunk``).
        regex: treat ``pattern`` as a regular expression.
        ignore_case: match regardless of case (the regex engine's ``(?i)``:
            Unicode simple case folding).
        limit: at most this many rows (the first ones in order); reading
            stops as soon as they are known.
        context: characters of text kept on either side of the field's first
            match in ``snippet`` (``…`` marks a cut end; newlines are kept).

    Returns:
        A frame with ``SEARCH_SCHEMA``: ``session_id``, ``seq``, ``time_ms``,
        ``type``, ``turn``, ``step``, ``field``, ``snippet``, ``matches`` (in
        that field, non-overlapping) and ``project_dir``; in list order, then
        by ``seq``, then in ``FIELD_ORDER``.

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
        >>> search_events(read_corpus(root), '"retry"').select("seq", "field", "snippet", "matches").rows()
        [(1, 'text', 'fix the "retry" loop', 1)]
        >>> search_events(read_corpus(root), "type").height    # keys are not text
        0
    """
    chosen = _check(pattern, types, limit, context)
    find = _finder(pattern, regex=regex, ignore_case=ignore_case)
    if limit == 0:
        return pl.DataFrame(schema=SEARCH_SCHEMA)
    predicate = pl.col("type").is_in(chosen) & pl.col("data").is_not_null()
    content = prefilter(pattern, regex=regex, ignore_case=ignore_case)
    if content is not None:
        predicate = predicate & content
    if isinstance(source, ArchiveCorpus) and source._events is None and source._archive is not None:
        archive = source._archive
        if archive.has_events or not os.path.isdir(source.root):
            source = archive
    elif isinstance(source, Archive) and not source.has_events and os.path.isdir(source.root):
        source = source.to_corpus()  # no events table: its logs are read from the corpus root it records
    if isinstance(source, Archive):
        frames = _archive_frames(source, predicate, limit)
    elif isinstance(source, Corpus):
        frames = _corpus_frames(source, predicate)
    else:
        raise SearchError(
            f"cannot search a {type(source).__name__}",
            hint="pass a Corpus (read_corpus(root)) or an Archive (open_archive(path))",
        )
    rows: list[Row] = []
    for frame, later in frames:
        rows.extend(_verify(frame, find, context))
        if limit is not None and len(rows) >= limit:
            rows.sort(key=_key)
            del rows[limit:]
            if later is None or later > rows[-1][0]:
                break
    rows.sort(key=_key)
    if limit is not None:
        del rows[limit:]
    return pl.DataFrame([row[4:] for row in rows], schema=SEARCH_SCHEMA, orient="row")


def _key(row: Row) -> tuple[Any, ...]:
    return row[:4]
