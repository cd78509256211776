"""``transcript``: one session's log as readable steps (user, assistant, tools, turns, errors).

One row per logical step, in log order: a user message, an assistant text
block, a reasoning block, a tool call (with its arguments), a tool result, a
turn's start and end, a descriptor, a retried model failure, any other event,
and a last row when the log could not be read to its end. Streamed
``assistant/chunk`` events (and packed chunk rows, already expanded by the
reader) are folded into the message they stream; a stream that never got its
``assistant/message`` (a torn log, an abort, a retried attempt) is assembled
from its chunks and marked ``partial``. ``step/start`` and ``step/end`` are
not rows (the ``turn`` and ``step`` columns carry them); every other event is
in exactly one row's ``seqs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import orjson
import polars as pl

from subagent_catalog.analysis.find_session import find_session
from subagent_catalog.analysis.readable_prefix import readable_events
from subagent_catalog.analysis.text import clip_strings, utf8_length
from subagent_catalog.analysis.user_message import user_message
from subagent_catalog.bounds import TEXT_CHARS
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.source import Source
from subagent_catalog.frames.units import calendar_datetime
from subagent_catalog.read.jsvalue import frame_text, parse_json
from subagent_catalog.read.run_stats import StatsFold, StepTiming

TranscriptKind = Literal[
    "user",
    "assistant",
    "reasoning",
    "tool-call",
    "tool-result",
    "turn-start",
    "turn-end",
    "descriptor",
    "retry",
    "event",
    "read-problem",
]
TRANSCRIPT_KINDS: tuple[TranscriptKind, ...] = get_args(TranscriptKind)

TRANSCRIPT_SCHEMA: dict[str, Any] = {
    "session_id": pl.String,
    "seq": pl.Int64,
    "seqs": pl.List(pl.Int64),
    "time_ms": pl.Int64,
    "time": pl.Datetime("ms", "UTC"),
    "last_time_ms": pl.Int64,
    "turn": pl.Int64,
    "step": pl.Int64,
    "kind": pl.String,
    "event_type": pl.String,
    "name": pl.String,
    "call_id": pl.String,
    "text": pl.String,
    "is_error": pl.Boolean,
    "partial": pl.Boolean,
    "in_seed": pl.Boolean,
    "llm_ms": pl.Int64,
    "ttft_ms": pl.Int64,
    "step_start_ms": pl.Int64,
    "detail": pl.String,
}
"""The transcript's columns (docs/frames.md describes each)."""

STRUCTURAL_TYPES = frozenset({"step/start", "step/end"})
"""Event types that are no row of their own (the ``turn``/``step`` columns carry them)."""

_BLOCK_KIND: dict[str, TranscriptKind] = {"text": "assistant", "reasoning": "reasoning", "tool-call": "tool-call"}
_DELTA_BLOCK = {"text-delta": "text", "reasoning-delta": "reasoning", "tool-call-delta": "tool-call"}


@dataclass
class _Row:
    index: int  # position of the row's first event in the log (the sort key)
    kind: TranscriptKind
    event_type: str
    seqs: list[int]
    times: list[int]
    turn: int | None
    step: int | None
    text: str | None = None
    name: str | None = None
    call_id: str | None = None
    is_error: bool | None = None
    partial: bool = False
    detail: dict[str, Any] = field(default_factory=dict)
    source: int | None = None  # the seq of the event holding the row's content, when not ``seqs[0]``


@dataclass
class _Block:
    type: str
    index: int  # event position of its first chunk
    seqs: list[int] = field(default_factory=list)
    times: list[int] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    final: dict[str, Any] | None = None
    call_id: str | None = None
    name: str | None = None


@dataclass
class _Stream:
    """The chunks of one (turn, step) since its last message or retry."""

    index: int
    blocks: dict[Any, _Block] = field(default_factory=dict)
    seqs: list[int] = field(default_factory=list)  # usage, finish and unknown chunks
    times: list[int] = field(default_factory=list)
    usage: Any = None
    finish: Any = None


def _get(value: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(key, int):
            value = value[key] if isinstance(value, list) and -len(value) <= key < len(value) else None
        else:
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            return None
    return value


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _blocks_text(content: Any) -> str:
    """The text of a content list (``text`` blocks joined as they are; others as ``[type]`` lines), or a string."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        kind = _get(block, "type")
        text = _get(block, "text")
        if kind == "text" and isinstance(text, str):
            parts.append(text)
        else:
            if parts and not parts[-1].endswith("\n"):
                parts.append("\n")
            parts.append(f"[{kind if isinstance(kind, str) else 'block'}]\n")
    return "".join(parts).removesuffix("\n") if parts and parts[-1].startswith("[") else "".join(parts)


class _Fold:
    """Folds one log's events (in file order) into rows (texts past ``clip`` characters cut as they are added)."""

    def __init__(self, clip: int | None = None) -> None:
        self.clip = clip
        self.rows: list[_Row] = []
        self.streams: dict[tuple[Any, Any], _Stream] = {}
        self.calls: dict[str, _Row] = {}  # call id -> its tool-call row
        self.started: set[str] = set()
        self.call_times: dict[str, int] = {}
        self.results: set[str] = set()

    def add(self, row: _Row) -> _Row:
        if self.clip is not None and row.text is not None and len(row.text) > self.clip:
            row.detail["text_bytes"] = utf8_length(row.text)  # what the view says is not shown
            row.text = row.text[: self.clip]
        self.rows.append(row)
        if row.kind == "tool-call" and row.call_id is not None:
            self.calls.setdefault(row.call_id, row)
        return row

    def chunk(self, index: int, seq: int, time: int, turn: Any, step: Any, chunk: Any) -> None:
        stream = self.streams.setdefault((turn, step), _Stream(index))
        kind = _get(chunk, "type")
        slot = _get(chunk, "index")
        if kind in ("block-start", "block-end") or kind in _DELTA_BLOCK:
            if kind == "block-start":
                block_type = _str(_get(chunk, "blockType")) or "text"
            elif kind == "block-end":
                block_type = _str(_get(chunk, "block", "type")) or "text"
            else:
                block_type = _DELTA_BLOCK[kind]
            block = stream.blocks.get(slot)
            if block is None:
                block = stream.blocks[slot] = _Block(block_type, index)
            block.seqs.append(seq)
            block.times.append(time)
            if kind == "block-end":
                final = _get(chunk, "block")
                block.final = final if isinstance(final, dict) else None
            elif kind == "tool-call-delta":
                block.call_id = block.call_id or _str(_get(chunk, "id"))
                block.name = block.name or _str(_get(chunk, "name"))
                block.parts.append(_str(_get(chunk, "argumentsDelta")) or "")
            elif kind != "block-start":
                block.parts.append(_str(_get(chunk, "text")) or "")
            return
        stream.seqs.append(seq)
        stream.times.append(time)
        if kind == "usage":
            stream.usage = _get(chunk, "usage")
        elif kind == "finish":
            stream.finish = _get(chunk, "reason")

    def message(self, index: int, seq: int, time: int, turn: Any, step: Any, data: Any) -> None:
        stream = self.streams.pop((turn, step), None)
        message = _get(data, "message")
        content = _get(message, "content")
        made: list[_Row] = []
        blocks = content if isinstance(content, list) else [{"type": "text", "text": _blocks_text(content)}]
        for position, block in enumerate(blocks):
            made.append(self._block_row(index, seq, time, turn, step, block, "assistant/message"))
            chunks = stream.blocks.pop(position, None) if stream is not None else None
            if chunks is not None:  # the block's own chunks come first
                made[-1].index = min(chunks.index, index)
                made[-1].seqs[:0] = chunks.seqs
                made[-1].times[:0] = chunks.times
        if not made:
            made.append(_Row(index, "assistant", "assistant/message", [], [time], turn, step, text="", source=seq))
        last = made[-1]
        last.seqs.append(seq)
        if stream is not None:
            for chunks in stream.blocks.values():  # chunks of blocks the message does not hold
                last.seqs[:0] = chunks.seqs
                last.times[:0] = chunks.times
                last.index = min(last.index, chunks.index)
            last.seqs[:0] = stream.seqs  # usage and finish chunks (their times are not the row's)
            if stream.finish is not None:
                last.detail["finish"] = stream.finish
        usage = _get(data, "usage")
        if usage is None and stream is not None:
            usage = stream.usage
        if usage is not None:
            last.detail["usage"] = usage
        source = _get(message, "source")
        if isinstance(source, dict) and (source.get("provider") or source.get("model")):
            last.detail["model"] = f"{source.get('provider')}/{source.get('model')}"
        if _get(message, "interrupted") is True:
            last.detail["interrupted"] = True
        for row in made:
            self.add(row)

    def _block_row(self, index: int, seq: int, time: int, turn: Any, step: Any, block: Any, event_type: str) -> _Row:
        block_type = _str(_get(block, "type")) or "block"
        kind = _BLOCK_KIND.get(block_type, "assistant")
        row = _Row(index, kind, event_type, [], [time], turn, step, source=seq)
        if kind == "tool-call":
            row.call_id = _str(_get(block, "id"))
            row.name = _str(_get(block, "name"))
            row.text = _str(_get(block, "arguments"))
        elif block_type in _BLOCK_KIND:
            row.text = _str(_get(block, "text")) or ""
        else:
            row.text = f"[{block_type}]"
            row.detail["block"] = block
        return row

    def flush(self, key: tuple[Any, Any], why: str) -> None:
        """A stream that ended without its message becomes partial rows."""
        stream = self.streams.pop(key, None)
        if stream is None:
            return
        turn, step = key
        made: list[_Row] = []
        for block in stream.blocks.values():
            kind = _BLOCK_KIND.get(block.type, "assistant")
            row = _Row(block.index, kind, "assistant/chunk", block.seqs, block.times, turn, step, partial=True)
            final = block.final or {}
            if kind == "tool-call":
                row.call_id = _str(final.get("id")) or block.call_id
                row.name = _str(final.get("name")) or block.name
            text = _str(final.get("arguments" if kind == "tool-call" else "text"))
            row.text = text if text is not None else "".join(block.parts)
            made.append(row)
        if not made:
            made.append(_Row(stream.index, "assistant", "assistant/chunk", [], [], turn, step, text="", partial=True))
        last = made[-1]
        last.seqs = last.seqs + stream.seqs
        last.times = last.times + stream.times
        last.detail["partial"] = why
        if stream.usage is not None:
            last.detail["usage"] = stream.usage
        if stream.finish is not None:
            last.detail["finish"] = stream.finish
            failure = _get(stream.finish, "failure", "message")
            if _get(stream.finish, "kind") in ("error", "aborted"):
                last.is_error = True
                if isinstance(failure, str):
                    last.detail["failure"] = failure
        for row in made:
            self.add(row)

    def tool_call(self, index: int, seq: int, time: int, turn: Any, step: Any, data: Any) -> None:
        call_id = _str(_get(data, "callId"))
        self.call_times[call_id or ""] = time
        requested = self.calls.get(call_id) if call_id is not None else None
        if requested is not None and call_id not in self.started:
            self.started.add(call_id)  # type: ignore[arg-type]
            requested.seqs.append(seq)
            requested.times.append(time)
            requested.detail["started_ms"] = time
            return
        row = _Row(index, "tool-call", "tool/call", [seq], [time], turn, step)
        row.call_id, row.name, row.text = call_id, _str(_get(data, "name")), _str(_get(data, "arguments"))
        row.detail["started_ms"] = time
        if call_id is not None:
            self.started.add(call_id)
        self.add(row)

    def tool_result(self, index: int, seq: int, time: int, turn: Any, step: Any, data: Any) -> None:
        block = _get(data, "message", "content", 0)
        if block is not None:
            call_id = _str(_get(data, "message", "source", "callId")) or _str(_get(block, "toolCallId"))
            content, flag = _get(block, "content"), _get(block, "isError")
        else:  # the legacy shape keeps the result at the top of data
            call_id, content, flag = _str(_get(data, "callId")), _get(data, "content"), _get(data, "isError")
        row = _Row(index, "tool-result", "tool/result", [seq], [time], turn, step, call_id=call_id)
        row.text = _blocks_text(content)
        row.is_error = flag is True
        call = self.calls.get(call_id) if call_id is not None else None
        row.name = call.name if call is not None else None
        error = _get(data, "error")
        if error is not None:
            row.detail["error"] = error
        started = self.call_times.get(call_id or "")
        if started is not None:
            row.detail["duration_ms"] = time - started
        if call_id is not None:
            if call_id in self.results:
                row.detail["repeat"] = True  # a second result for the call (a pruner's replacement)
            self.results.add(call_id)
        self.add(row)


def _turn_end_text(reason: Any) -> tuple[str, bool]:
    kind = _get(reason, "kind")
    kind_text = kind if isinstance(kind, str) else "?"
    if kind == "error":
        message = _get(reason, "error", "message")
        if message is None:
            message = _get(reason, "failure", "message") or _get(reason, "message")
        return (f"error: {message}" if isinstance(message, str) else "error"), True
    cause = _get(reason, "reason", "kind")
    if kind == "aborted" and isinstance(cause, str):
        return f"aborted ({cause})", False
    return kind_text, False


def _event_text(kind: str, data: Any, raw: str | None) -> str | None:
    if kind == "request/header":
        config = _get(data, "header", "config")
        reason = _get(data, "reason")
        text = f"{_get(config, 'provider')}/{_get(config, 'model')}"
        return f"{text} ({reason})" if isinstance(reason, str) else text
    return raw


def transcript_rows(events: pl.DataFrame, *, seed_length: int | None = None, clip: int | None = None) -> pl.DataFrame:
    """Fold one log's events frame (``corpus.events``' columns, file order) into transcript rows.

    Pure: no file is read. ``seed_length`` marks the rows of a fork's seed
    (``in_seed``). With ``clip``, a ``text`` longer than ``clip`` characters
    keeps its first ``clip`` (its ``detail`` records ``text_bytes``, the whole
    text's UTF-8 length), and strings in ``detail`` are cut there too. Use
    ``transcript`` to get a session's rows from a corpus.

    Examples:
        >>> from subagent_catalog.frames.schemas import EVENT_SCHEMA
        >>> events = pl.DataFrame([
        ...     ("s", 0, 5, "turn/start", 1, None, None, False, '{"turn":1}', None, None),
        ...     ("s", 1, 6, "user/message", None, None, None, False, '{"content":[{"type":"text","text":"hi"}]}',
        ...      "hi", "text"),
        ... ], schema=EVENT_SCHEMA, orient="row")
        >>> transcript_rows(events).select("seq", "kind", "text").rows()
        [(0, 'turn-start', 'turn 1'), (1, 'user', 'hi')]
    """
    fold = _Fold(clip)
    columns = events.select("session_id", "seq", "time_ms", "type", "turn", "step", "data")
    session_id = None
    open_turn: Any = None  # rows between turn/start and turn/end (step/start and step/end) belong to it
    open_step: Any = None
    stats = StatsFold()  # the own events' model steps, timed as upstream's sessionStats times them
    timed: dict[int, StepTiming] = {}
    for index, (sid, seq, time, kind, turn, step, raw) in enumerate(columns.iter_rows()):
        session_id = session_id or sid
        try:
            data = parse_json(raw) if raw is not None else None
        except ValueError:
            data = None
        if seq >= (seed_length or 0) and (step_timing := stats.event(kind, data, time)) is not None:
            timed[seq] = step_timing  # a message that closes a step is timed under its seq
        if kind == "turn/start":
            open_turn, open_step = _get(data, "turn"), None
        elif kind == "step/start":
            open_step = _get(data, "step")
        turn = turn if turn is not None else open_turn
        step = step if step is not None or kind == "turn/end" else open_step
        if kind == "turn/end":
            open_turn = open_step = None
        elif kind == "step/end":
            open_step = None
        if kind == "assistant/chunk":
            fold.chunk(index, seq, time, turn, step, _get(data, "chunk"))
        elif kind == "assistant/message":
            fold.message(index, seq, time, turn, step, data)
        elif kind in STRUCTURAL_TYPES:
            continue
        elif kind in ("llm/retry",):
            fold.flush((turn, step), "a retried attempt")
            row = _Row(index, "retry", kind, [seq], [time], turn, step, is_error=True)
            row.text = _str(_get(data, "failure", "message")) or raw
            row.detail["failure"] = _get(data, "failure")
            fold.add(row)
        elif kind == "tool/call":
            fold.tool_call(index, seq, time, turn, step, data)
        elif kind == "tool/result":
            fold.tool_result(index, seq, time, turn, step, data)
        elif kind == "user/message":
            text, detail = user_message(data)
            fold.add(_Row(index, "user", kind, [seq], [time], turn, step, text=text, detail=detail))
        elif kind == "turn/start":
            number = _get(data, "turn")
            fold.add(_Row(index, "turn-start", kind, [seq], [time], turn, step, text=f"turn {number}"))
        elif kind == "turn/end":
            for key in [key for key in fold.streams if key[0] == turn]:
                fold.flush(key, "the turn ended before the message")
            text, failed = _turn_end_text(_get(data, "reason"))
            row = _Row(index, "turn-end", kind, [seq], [time], turn, step, text=text, is_error=failed)
            row.name = _str(_get(data, "reason", "kind"))
            row.detail["reason"] = _get(data, "reason")
            fold.add(row)
        elif kind == "subagent/descriptor":
            row = _Row(index, "descriptor", kind, [seq], [time], turn, step, text=_str(_get(data, "label")))
            row.name = _str(_get(data, "mode"))
            row.detail["descriptor"] = data
            fold.add(row)
        else:
            fold.add(
                _Row(index, "event", kind, [seq], [time], turn, step, text=_event_text(kind, data, raw), name=kind)
            )
    for key in list(fold.streams):
        fold.flush(key, "the log ends before the message")
    return _frame(fold.rows, session_id, seed_length, clip, timed)


def _clean(value: Any) -> Any:
    """A JSON value whose strings can live in a Polars column (lone surrogates become U+FFFD)."""
    if isinstance(value, str):
        return frame_text(value)
    if isinstance(value, dict):
        return {frame_text(str(key)): _clean(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


def _frame(
    rows: list[_Row],
    session_id: str | None,
    seed_length: int | None,
    clip: int | None,
    timed: dict[int, StepTiming] | None = None,
) -> pl.DataFrame:
    rows = sorted(rows, key=lambda row: row.index)  # stable: rows of one event keep their order
    timed = timed or {}
    firsts = [row.source if row.source is not None else row.seqs[0] if row.seqs else None for row in rows]
    last_row = {first: at for at, first in enumerate(firsts) if first in timed}  # a message's last block row
    records = []
    for at, (row, first) in enumerate(zip(rows, firsts, strict=True)):
        step = timed[first] if first is not None and last_row.get(first) == at else None
        kept = row.detail if clip is None else clip_strings(row.detail, clip)
        detail = orjson.dumps(_clean(kept), option=orjson.OPT_SORT_KEYS).decode() if row.detail else None
        records.append(
            (
                session_id,
                first,
                sorted(row.seqs),
                min(row.times) if row.times else None,
                max(row.times) if row.times else None,
                row.turn,
                row.step,
                row.kind,
                row.event_type,
                frame_text(row.name),
                frame_text(row.call_id),
                frame_text(row.text),
                row.is_error,
                row.partial,
                (first < seed_length) if first is not None and seed_length is not None else False,
                *((step.llm_ms, step.ttft_ms, step.start_ms) if step is not None else (None, None, None)),
                detail,
            )
        )
    schema = {name: dtype for name, dtype in TRANSCRIPT_SCHEMA.items() if name != "time"}
    frame = pl.DataFrame(records, schema=schema, orient="row")
    return frame.with_columns(calendar_datetime(pl.col("time_ms")).alias("time")).select(list(TRANSCRIPT_SCHEMA))


def read_problem_row(
    session: dict[str, Any], last: pl.DataFrame, problem: dict[str, Any] | None = None
) -> pl.DataFrame:
    """The last transcript row of a log that was not read to its end (empty when it was).

    Args:
        session: the log's ``sessions`` row.
        last: the transcript rows before it (for its time).
        problem: the log's ``problems`` row of the same kind, which says more
            when the read itself kept no message (a torn tail).

    Examples:
        >>> row = {"session_id": "s", "verdict": "failed", "read_cause": "corrupt-line",
        ...        "read_message": "line 9 is no JSON", "read_line": 9, "read_offset": 120}
        >>> read_problem_row(row, pl.DataFrame(schema=TRANSCRIPT_SCHEMA))["text"].to_list()
        ['corrupt-line: line 9 is no JSON (line 9)']
    """
    if session["verdict"] in ("ok", "skipped"):
        return pl.DataFrame(schema=TRANSCRIPT_SCHEMA)
    cause = session["read_cause"] or session["verdict"]
    message = session["read_message"] or (problem or {}).get("message") or session["verdict"]
    line = session["read_line"] if session["read_line"] is not None else (problem or {}).get("line")
    offset = session["read_offset"] if session["read_offset"] is not None else (problem or {}).get("offset")
    where = f" (line {line})" if line is not None else f" (byte {offset})" if offset is not None else ""
    detail = {"verdict": session["verdict"], "read_cause": cause, "read_line": line, "read_offset": offset}
    time = last["last_time_ms"].max() if last.height else None
    record = {
        "session_id": session["session_id"],
        "seqs": [],
        "time_ms": time,
        "last_time_ms": time,
        "kind": "read-problem",
        "text": f"{cause}: {message}{where}",
        "is_error": session["verdict"] == "failed",
        "partial": False,
        "in_seed": False,
        "detail": orjson.dumps(detail, option=orjson.OPT_SORT_KEYS).decode(),
    }
    schema = {name: dtype for name, dtype in TRANSCRIPT_SCHEMA.items() if name != "time"}
    frame = pl.DataFrame([record], schema=schema)
    return frame.with_columns(calendar_datetime(pl.col("time_ms")).alias("time")).select(list(TRANSCRIPT_SCHEMA))


def transcript(corpus: Source, session_id: str, *, path: str | None = None, clip: int | None = None) -> pl.DataFrame:
    """One session's log as readable steps, read from that one file (or the archive's events).

    Args:
        corpus: a read corpus or an opened archive (``store.source.Source``; an archive's events table, or its root).
        session_id: the session whose log to show.
        path: which log, when several files carry the same session id.
        clip: keep at most this many characters of each text (``detail``'s
            ``text_bytes`` then holds the whole text's size; ``transcript_text``
            gives it whole): what the views use to bound what they render.

    Returns:
        One row per step (``TRANSCRIPT_SCHEMA``; docs/frames.md describes each
        column), in log order, plus a ``read-problem`` row when the log could
        not be read to its end. A log upstream cannot read shows its lines
        before the damage (``readable_prefix``), then that row.

    Raises:
        SessionLookupError: see ``find_session``.
        BoundError: ``clip`` is not a number of characters (``bounds.TEXT_CHARS``).

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1")
        >>> log.turn_start(); log.user("fix the bug"); log.tool_round("c1", "ok"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> transcript(read_corpus(root), "s1").select("kind", "name", "text").rows()[1:4]
        [('user', None, 'fix the bug'), ('tool-call', 'read_file', '{}'), ('tool-result', 'read_file', 'ok')]
    """
    TEXT_CHARS.check("clip", clip, optional=True)
    corpus = corpus.to_corpus()  # a corpus, or an archive's frames
    session = find_session(corpus, session_id, path=path)
    events = corpus.log_events(session["list_order"])
    if events.height == 0 and session["verdict"] == "failed":  # show what can be read before the damage
        events = readable_events(session)
    return session_transcript(corpus, session, events, clip=clip)


def session_transcript(
    corpus: Corpus, session: dict[str, Any], events: pl.DataFrame, *, clip: int | None = None
) -> pl.DataFrame:
    """The transcript of one ``sessions`` row from its log's events (already read), read-problem row included.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1"); log.turn_start(); log.user("hi")
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> corpus = read_corpus(root)
        >>> session_transcript(corpus, corpus.sessions.row(0, named=True), corpus.log_events(0))["text"].to_list()
        ['turn 1', 'hi']
    """
    rows = transcript_rows(events, seed_length=session["seed_length"], clip=clip)
    rows = rows.with_columns(pl.lit(session["session_id"], pl.String).alias("session_id"))
    kind = session["read_cause"] or session["verdict"]
    problems = corpus.problems.filter((pl.col("path") == session["path"]) & (pl.col("kind") == kind))
    problem = problems.row(0, named=True) if problems.height else None
    return pl.concat([rows, read_problem_row(session, rows, problem)])


def turn_summary(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per own turn of ``transcript`` rows: what a page's turn table shows, in turn order.

    Columns ``turn``, ``row`` (the index in ``rows`` of the turn's first row), ``start_ms``, ``took``
    (ms; null when a time is unknown), ``steps``, ``calls``, ``failed`` (error rows) and ``ended``
    (the turn's end kind, ``open`` when it never ended).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> turns = turn_summary(transcript(read_corpus("data/sample"), "auth-refactor"))
        >>> turns.select("turn", "ended", "calls").rows()
        [(1, 'completed', 1), (2, 'error', 1)]
    """
    own = rows.with_row_index("row").filter(~pl.col("in_seed") & pl.col("turn").is_not_null())
    end = pl.col("name").filter(pl.col("kind") == "turn-end").first()
    return own.group_by("turn", maintain_order=True).agg(
        pl.col("row").first().cast(pl.Int64),
        pl.col("time_ms").min().alias("start_ms"),
        (pl.col("last_time_ms").max() - pl.col("time_ms").min()).alias("took"),
        pl.col("step").drop_nulls().n_unique().cast(pl.Int64).alias("steps"),
        (pl.col("kind") == "tool-call").sum().cast(pl.Int64).alias("calls"),
        pl.col("is_error").fill_null(False).sum().cast(pl.Int64).alias("failed"),
        pl.when((pl.col("kind") == "turn-end").any())
        .then(pl.when(end.is_null() | (end == "")).then(pl.lit("?")).otherwise(end))
        .otherwise(pl.lit("open"))
        .alias("ended"),
    )
