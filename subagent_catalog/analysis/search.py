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
import re
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
from subagent_catalog.store.layout import ArchiveError, join_location

__all__ = [
    "DEFAULT_TYPES",
    "FIELD_ORDER",
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

# Characters Python's re.IGNORECASE matches with an ASCII letter besides its two ASCII cases
# (tests/test_search.py checks this table against every code point).
_EXTRA_CASES = {"i": "\u0130\u0131", "k": "\u212a", "s": "\u017f"}


class SearchError(SubagentCatalogError, ValueError):
    """A search that cannot run: an empty or invalid pattern, or a bad option."""


# --- matching ---------------------------------------------------------------------------------

_Find = Callable[[str], "tuple[int, int, int] | None"]


def _finder(pattern: str, *, regex: bool, ignore_case: bool) -> _Find:
    """A function giving (start, end, count) of the pattern in a text, or None."""
    if not regex and not ignore_case:
        size = len(pattern)

        def find_literal(text: str) -> tuple[int, int, int] | None:
            start = text.find(pattern)
            return None if start < 0 else (start, start + size, text.count(pattern))

        return find_literal
    source = pattern if regex else re.escape(pattern)
    try:
        compiled = re.compile(source, re.IGNORECASE if ignore_case else 0)
    except (re.error, OverflowError, RecursionError) as error:
        raise SearchError(
            f"invalid regular expression {pattern!r}: {error}",
            hint="fix the pattern (Python re syntax), or pass regex=False to search for the text literally",
        ) from None

    def find_regex(text: str) -> tuple[int, int, int] | None:
        first = compiled.search(text)
        if first is None:
            return None
        return first.start(), first.end(), sum(1 for _ in compiled.finditer(text))

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
    rows: list[Row] = []
    names = [*_COLUMNS, "list_order", "_pos", "project_dir"]
    for session_id, seq, time_ms, kind, turn, step, data, order, pos, project in frame.select(names).iter_rows():
        if data is None:
            continue
        found: dict[str, list[Any]] = {}
        for name, text in event_texts(kind, _decode(data)):
            hit = find(text)
            if hit is None:
                continue
            seen = found.get(name)
            if seen is None:
                found[name] = [hit[2], _snippet(text, hit[0], hit[1], context)]
            else:
                seen[0] += hit[2]
        for name, (count, snippet) in found.items():
            key = (order if order is not None else -1, seq, pos, _RANK[name])
            rows.append((*key, session_id, seq, time_ms, kind, turn, step, name, snippet, count, project))
    return rows


# --- sources ----------------------------------------------------------------------------------


Frames = Iterator[tuple[pl.DataFrame, int | None]]
"""Candidate rows, each with the smallest ``list_order`` any later frame can hold (None: no more frames)."""


def _archive_frames(archive: Archive, predicate: pl.Expr, limit: int | None) -> Frames:
    """The candidate rows of each events file; with a limit, files in order of their first log."""
    if not archive.has_events:
        raise ArchiveError(
            f"archive {archive.path!r} holds no events table, which search_events reads",
            hint="re-export with export_archive(root, out, events=True), or search read_corpus(root)",
        )
    locations = [join_location(archive.path, name) for name in archive.manifest["tables"]["events"]["files"]]

    def scan(path: str) -> pl.LazyFrame:
        return pl.scan_parquet(path, hive_partitioning=False, glob=False, storage_options=archive.storage_options)

    try:
        bounds: list[int | None] = [None] * len(locations)
        if limit is not None:
            bounds = [scan(path).select(pl.col("list_order").min()).collect().item() for path in locations]
            order = sorted(range(len(locations)), key=lambda i: (bounds[i] is None, bounds[i] or 0, i))
            locations, bounds = [locations[i] for i in order], [bounds[i] for i in order]
        for index, path in enumerate(locations):
            frame = (
                scan(path)
                .filter(predicate)
                .select(*_COLUMNS, "list_order", pl.col("event_index").alias("_pos"), "project_dir")
                .collect()
            )
            yield frame, bounds[index + 1] if index + 1 < len(bounds) else None
    except (pl.exceptions.PolarsError, OSError) as error:
        raise ArchiveError(
            f"cannot read the events of archive {archive.path!r}: {type(error).__name__}: {str(error)[:200]}",
            hint="a data file is missing or damaged: re-export the archive",
        ) from None


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
        pattern: the text to find (a Python ``re`` pattern with ``regex=True``).
        types: the event types to search (default ``DEFAULT_TYPES``: the
            text-bearing ones, without ``assistant/chunk``).
        regex: treat ``pattern`` as a regular expression.
        ignore_case: match regardless of case (``re.IGNORECASE``).
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
