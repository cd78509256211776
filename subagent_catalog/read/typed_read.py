"""The typed fast path: a healthy log's facts from one typed decode and one pass, or ``None``.

``typed_facts`` decodes the body with ``read.typed_events`` (one C call, one
Struct per line, payloads left unparsed) and walks the events once, doing
only what upstream's rules and the run facts need of a log the types
accepted: seq contiguity (packed rows kept packed: their members' gaps and
times checked over whole lists), the surface provenance of appended
messages, a ``turn/end``'s reason and a ``subagent/descriptor``'s payload
(parsed again by ``orjson`` and judged by the reference code), the run-fact
fold (``run_facts.Fold``, the full path's own steps) and the time spans.
The closers of a turn left open are made by the reference code from the
events after the last ``turn/start`` (the only ones they depend on); the
timing unit's view from the turn and descriptor events and the last event.

Whatever the types refuse, and any rule that fails, returns ``None``: the
caller reads the whole log with the full path (``read.logread``), which
alone names failures. ``tests/test_fastpath.py`` compares both paths.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from functools import partial
from itertools import accumulate, compress
from operator import add, attrgetter
from typing import Any

import msgspec
import orjson
from msgspec import UNSET

from subagent_catalog.read import limits
from subagent_catalog.read.fastpath import FastFacts
from subagent_catalog.read.inspect_migrate import InspectFailure, assert_message_shape, migrate_turn_end
from subagent_catalog.read.inspect_rules import assert_header, check_events, interrupted_turn_closers
from subagent_catalog.read.jsvalue import MAX_SAFE_INTEGER
from subagent_catalog.read.run_facts import Fold, utf8_length
from subagent_catalog.read.typed_events import (
    OPAQUE,
    ROWS,
    USAGE_COUNTS,
    AssistantEvent,
    ChunkEvent,
    Descriptor,
    Header,
    Ignorable,
    RequestContext,
    StepEnd,
    StepStart,
    ToolCall,
    ToolResult,
    ToolRow,
    TurnEnd,
    TurnStart,
    UserEvent,
    decode_body,
)


class _Reject(Exception):
    """The log needs the full path."""


ORJSON_MAX_DEPTH = 1023
"""The deepest nesting ``orjson`` (the full path's parser) accepts; a deeper line falls back to ``json``."""


def suits(body: bytes) -> bool:
    """Whether the typed decoder can only accept lines ``orjson`` accepts too, as far as nesting goes.

    ``msgspec`` refuses nesting past the interpreter's recursion budget. On
    CPython 3.11 with the default limit that is under ``orjson``'s 1,023
    levels, so whatever it decodes the full path parses with ``orjson``. On
    3.12 and later (a C recursion budget of about 1,500) or under a raised
    limit it could accept a line the full path reads as unparsable; there the
    typed path takes only bodies with fewer opening brackets than that depth
    (the packed path reads the others).

    Examples:
        >>> suits(b'{"a":[1]}\\n')
        True
    """
    if sys.version_info < (3, 12) and sys.getrecursionlimit() <= ORJSON_MAX_DEPTH:
        return True
    return body.count(b"[") + body.count(b"{") <= ORJSON_MAX_DEPTH


def typed_facts(meta: dict[str, Any], body: bytes) -> FastFacts | None:
    """A healthy log's facts by the typed fast path; ``None`` for anything the full path must read.

    ``meta`` and ``body`` are the parts ``fastpath.split_log`` gives.

    Examples:
        >>> from subagent_catalog.read.fastpath import split_log
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> body = (b'{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\\n'
        ...         b'{"type":"text-chunks","seq0":1,"time0":6,'
        ...         b'"data":{"turn":1,"step":1,"index":0,"dt":[2],"texts":["a","b"]}}\\n')
        >>> fast = typed_facts(*split_log(head + body, "none"))
        >>> fast.count, fast.first_time, fast.last_time, fast.closers, fast.run.turns_open
        (3, 5, 8, 1, 1)
        >>> typed_facts(*split_log(head + body.replace(b'"time":5', b'"time":5.0'), "none")) is None
        True
    """
    events = decode_body(body)
    if events is None:
        return None
    try:
        assert_header(meta)
        return _fold(meta, events)
    except (_Reject, InspectFailure, orjson.JSONDecodeError):
        return None


def _sources_ok(event: Any, allow_empty: bool) -> bool:
    """Upstream's provenance rules for an appended surface event's ``sourceEventSeqs``."""
    sources = event.sourceEventSeqs
    if sources is UNSET:
        return True
    if not sources:
        return allow_empty
    return max(sources) < event.seq and (len(sources) == 1 or len(set(sources)) == len(sources))


def _pick(events: list[Any], types: list[type], classes: frozenset[type]) -> list[Any]:
    """The events of these classes, in order (one pass in C)."""
    return list(compress(events, map(classes.__contains__, types)))


_SEQ, _TIME, _DATA = attrgetter("seq"), attrgetter("time"), attrgetter("data")
_GAPS, _TEXTS, _LEAST = attrgetter("dt"), attrgetter("texts"), partial(min, default=0)
_CHUNK_USAGE = attrgetter("data.chunk.usage")
_COUNTS = USAGE_COUNTS
_ROW_TYPES = frozenset(ROWS)
_SURFACE = frozenset((AssistantEvent, UserEvent, ToolResult))
_MARKERS = frozenset((TurnStart, TurnEnd, Descriptor))
_CHUNK = frozenset((ChunkEvent,))
_USAGE_SOURCES = frozenset((Header, AssistantEvent, RequestContext))
_CALL_EVENTS = frozenset((ToolCall, ToolResult, TurnEnd))
_TOKEN_TYPES = frozenset((ChunkEvent, *ROWS))
_STEP_EVENTS = frozenset((StepStart, AssistantEvent, StepEnd))
_TITLE: type = next(cls for cls in OPAQUE if cls.__struct_config__.tag == "session/title")
_NAMING = frozenset((UserEvent, _TITLE))


def _names(fold: Fold, events: list[Any], seed: int) -> None:
    """The titles (the seed's too) and the own user messages, in log order: what names the session."""
    for event in events:
        if type(event) is UserEvent:
            if event.seq >= seed and fold.run.prompt is None and event.data.source.kind == "user":
                fold.user_message({"content": [orjson.loads(memoryview(block)) for block in event.data.content]})
        else:
            fold.title(orjson.loads(memoryview(event.data)))


def _step(data: Any) -> tuple[Any, Any]:
    """The ``(turn, step)`` a usage sample belongs to (an absent one is ``None``, as ``dict.get``)."""
    return None if data.turn is UNSET else data.turn, None if data.step is UNSET else data.step


def _surface(events: list[Any]) -> None:
    """Upstream's rules for appended messages and tool results (their facts are folded by ``_walk``)."""
    for event in events:
        if event.sourceEventSeqs is not UNSET and not _sources_ok(event, type(event) is AssistantEvent):
            raise _Reject
        if type(event) is ToolResult:
            message = event.data.message
            if message.content[0].toolCallId != message.source.callId:
                raise _Reject  # the block must answer its source call


def _token_delta(event: Any, turn: Any, step: Any) -> int | None:
    """The time of ``event``'s first token delta of step ``(turn, step)`` (a chunk or a packed row), or ``None``."""
    cls = type(event)
    if cls is ChunkEvent:
        data = event.data
        if (None if data.turn is UNSET else data.turn) != turn or (None if data.step is UNSET else data.step) != step:
            return None  # safe integers or absent (None) on both sides: == is JavaScript's ===
        chunk = data.chunk
        kind = chunk.type
        if kind == "text-delta" or kind == "reasoning-delta":
            empty = chunk.text is not UNSET and bytes(chunk.text) == b'""'
        elif kind == "tool-call-delta":
            empty = chunk.argumentsDelta is not UNSET and bytes(chunk.argumentsDelta) == b'""' and chunk.name is UNSET
        else:
            return None
        return None if empty else int(event.time)
    if cls in _ROW_TYPES:
        data = event.data  # a row's turn and step are JSON numbers (int or float): == is JavaScript's ===
        if data.turn != turn or data.step != step:
            return None
        if cls is ToolRow and data.name is not UNSET:
            return int(event.time)
        for index, text in enumerate(data.texts):
            if text != "":
                return int(event.time + sum(data.dt[:index]))
    return None


def _argument_bytes(raw: Any) -> int | None:
    """The UTF-8 size of a ``tool/call``'s ``data.arguments`` when it is a string (``None`` otherwise).

    Read off the JSON text itself when it holds no ``\\u`` escape: its bytes between the quotes
    less one per escape (each two-byte escape stands for one byte; a run of backslashes pairs
    from its start, as the JSON grammar reads it). Otherwise the string is decoded.

    Raises:
        _Reject: the string is not valid UTF-8 (the full path decodes it with replacement characters).
    """
    if raw is UNSET:
        return None
    text = bytes(raw)
    if not text.startswith(b'"'):
        return None
    if not text.isascii():
        try:
            text.decode("utf-8")
        except UnicodeDecodeError:
            raise _Reject from None
    if b"\\u" not in text:
        backslashes = text.count(b"\\")
        return len(text) - 2 - (backslashes - text.count(b"\\\\") if backslashes else 0)
    try:
        decoded: str = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        raise _Reject from None
    return len(decoded) if decoded.isascii() else utf8_length(decoded)


def _calls(fold: Fold, events: list[Any], types: list[type], seed: int) -> None:
    """Tool calls and results in log order: the call records (seed ones flagged), the own counts and tool time(s).

    ``run_records.CallFold``'s records are built here directly, from values the types already
    checked (safe-integer seqs and times; strings or absent ids, names and error codes). The tool
    time mirrors ``StatsFold.tool_call``/``tool_result``/``turn_end`` over the own events (a dict
    of pending calls cleared at a turn end).
    """
    records, waiting, run = fold.calls.records, fold.calls.pending, fold.run
    pending: dict[str, int] = {}
    spans: list[tuple[int, int]] = []
    tool_ms = results = failures = text_bytes = calls = 0
    for event in _pick(events, types, _CALL_EVENTS):
        cls = type(event)
        mine = event.seq >= seed
        if cls is ToolCall:
            data = event.data
            call_id, name, turn, step = data.callId, data.name, data.turn, data.step
            record = [
                event.seq,
                event.time,
                None if turn is UNSET else turn,
                None if step is UNSET else step,
                None if call_id is UNSET else call_id,
                None if name is UNSET else name,
                _argument_bytes(data.arguments),
                not mine,
                None,
                None,
                None,
                None,
                None,
                None,
            ]
            records.append(record)
            if call_id is not UNSET:
                waiting[call_id] = record
            if mine:
                calls += 1
                if name is not UNSET:
                    fold.tools.add(name)
                if call_id is not UNSET:
                    pending[call_id] = event.time
        elif cls is ToolResult:
            message = event.data.message
            block = message.content[0]
            failed, text = block.isError is True, 0
            if mine:  # the UTF-8 bytes of its text parts (a seed result's are measured in the parent)
                for part in block.content:
                    if part.type == "text" and part.text is not UNSET:
                        text += len(part.text) if part.text.isascii() else utf8_length(part.text)
            error = event.data.error
            name = code = None
            if error is not UNSET:
                name = None if error.name is UNSET else error.name
                code = None if error.code is UNSET else error.code
            call_id = message.source.callId
            answered = waiting.pop(call_id) if call_id in waiting else None
            if answered is None:  # a result no call asked for: a record of its own
                answered = [None, None, None, None, call_id, None, None, not mine, None, None, None, None, None, None]
                records.append(answered)
            answered[8:] = (event.seq, event.time, failed, name, code, text if mine else None)
            if mine:
                results += 1
                failures += failed
                text_bytes += text
                dispatched = pending.pop(call_id, None)
                if dispatched is not None and event.time > dispatched:
                    tool_ms += event.time - dispatched
                    spans.append((dispatched, event.time))
        elif mine and pending:  # a turn/end: calls whose result never landed are dropped
            pending = {}
    run.tool_calls, run.tool_results, run.tool_results_failed, run.tool_output_bytes = (
        calls,
        results,
        failures,
        text_bytes,
    )
    fold.stats.tool_ms, fold.stats.tool_spans = tool_ms, spans


def _steps(fold: Fold, events: list[Any], types: list[type], own: int) -> None:
    """The own model steps in log order (``StatsFold``): step starts, messages, step ends.

    A step's first token is looked for among the events between its
    ``step/start`` and its message, and only until the first one (``_token_delta``).
    """
    stats = fold.stats
    step_start, message, step_end, wants_token = stats.step_start, stats.message, stats.step_end, stats.wants_token
    opened = -1  # index of the open step's step/start
    steps = 0
    for index in compress(range(own, len(events)), map(_STEP_EVENTS.__contains__, types[own:])):
        event = events[index]
        cls = type(event)
        if cls is StepStart:
            data = event.data
            turn = data.turn
            step_start(None if turn is UNSET else turn, data.step, event.time)
            opened = index
        elif cls is AssistantEvent:
            data = event.data
            turn, step = data.turn, data.step
            if turn is UNSET:
                turn = None
            if step is UNSET:
                step = None
            if wants_token(turn, step):
                for between in range(opened + 1, index):
                    if types[between] not in _TOKEN_TYPES:
                        continue
                    found = _token_delta(events[between], turn, step)
                    if found is not None:
                        stats.token(turn, step, found)
                        break
            usage = data.usage
            message(turn, step, event.time, None if usage is UNSET else usage.outputTokens)
        else:  # StepEnd
            steps += 1
            step_end()
    fold.run.steps = steps


def _usage(fold: Fold, events: list[Any], types: list[type], seed: int) -> None:
    """Usage samples of the whole log with the route in effect (headers, messages and usage chunks in seq order)."""
    usage = fold.usage
    chunks = _pick(events, types, _CHUNK)
    picked = _pick(events, types, _USAGE_SOURCES)
    picked += compress(chunks, map(_CHUNK_USAGE, chunks))
    picked.sort(key=_SEQ)
    for event in picked:
        cls = type(event)
        in_seed = event.seq < seed
        if cls is Header:
            _header(event)
            config = event.data.header.config
            fold.route(config.provider, config.model, own=not in_seed)
        elif cls is RequestContext:
            data = orjson.loads(memoryview(event.data))
            usage.context(data.get("contextWindow") if type(data) is dict else None)
        elif cls is AssistantEvent:
            data = event.data
            turn, step = data.turn, data.step
            source = data.message.source
            sample = None if data.usage is UNSET else data.usage
            usage.message(
                event.seq,
                event.time,
                None if turn is UNSET else turn,
                None if step is UNSET else step,
                sample,
                in_seed,
                source.provider,
                source.model,
            )
        elif event.data.chunk.type == "usage":  # a chunk with a usage sample
            turn, step = _step(event.data)
            usage.sample(event.seq, event.time, turn, step, event.data.chunk.usage, in_seed)


def _markers(fold: Fold, markers: list[Any], seed: int, events: list[Any], seqs: list[int]) -> list[dict[str, Any]]:
    """Turn starts and ends (upstream's migration rules, the turn facts) in order; the descriptor events.

    A turn that starts while another is open ends that one's active time at the event before it.
    """
    descriptors = []
    for event in markers:
        if type(event) is TurnStart:
            if event.data.trigger is not UNSET and event.data.turn < 1:
                raise _Reject  # upstream's migration of a legacy turn/start fails
            if event.seq >= seed:
                before = None
                if fold.open_turn is not None:  # an own turn is open: it came after an own event
                    before = _last_view(events[bisect_left(seqs, event.seq) - 1])["time"]
                fold.turn_start(event.data.turn, event.time, before=before)
        elif type(event) is TurnEnd:
            turn, reason = event.data.turn, _reason(event.data.reason, event.seq)
            if event.seq >= seed:
                fold.turn_end(turn, reason, event.time)
        else:
            descriptors.append(_as_dict(event, orjson.loads(memoryview(event.data))))
    return descriptors


_REASONS: dict[bytes, Any] = {}  # turn/end reasons already parsed and found valid (most logs repeat a few)


def _reason(raw: Any, seq: int) -> Any:
    """A ``turn/end`` reason as the full path parses it, checked by upstream's migration rule (``turn`` is valid)."""
    text = bytes(raw)
    reason = _REASONS.get(text)
    if reason is None:
        reason = orjson.loads(text)
        migrate_turn_end({"type": "turn/end", "seq": seq, "data": {"turn": 1, "reason": reason}})
        if len(_REASONS) >= 1024:
            _REASONS.clear()
        _REASONS[text] = reason
    return reason


def _fold(meta: dict[str, Any], events: list[Any]) -> FastFacts:
    """Upstream's rules over a log the types accepted, and its facts; ``_Reject`` where the full path must read it.

    The work is done per kind of event, each kind picked out of the line list
    in C: most lines (chunks, steps, known types no rule reads) cost no Python.
    """
    seed = int(meta.get("seedLength", 0))  # a non-negative safe integer: assert_header passed
    types = list(map(type, events))
    seqs = list(map(_SEQ, events))
    times = list(map(_TIME, events))  # a row's time is its first member's: inside its span
    members = [1] * len(events)
    span: list[int] = []  # least and greatest member times of the packed rows (all, then own)
    own_span: list[int] = []
    if not _ROW_TYPES.isdisjoint(types):
        where = list(compress(range(len(events)), map(_ROW_TYPES.__contains__, types)))
        for index, size in zip(where, _rows([events[i] for i in where], seed, span, own_span), strict=True):
            members[index] = size
    starts = list(accumulate(members, initial=0))
    count = starts.pop()
    if seqs != starts:
        raise _Reject  # a seq gap: every line must start at the seq after the previous line's last event
    if count > limits.MAX_LOG_EVENTS:
        raise _Reject  # the full path fails it over budget
    own = bisect_left(seqs, seed) if seed else 0  # the session's own events: seq >= seedLength
    fold = Fold()
    _surface(_pick(events, types, _SURFACE))
    _usage(fold, events, types, seed)
    _calls(fold, events, types, seed)
    _steps(fold, events, types, own)
    markers = _pick(events, types, _MARKERS)
    descriptors = _markers(fold, markers, seed, events, seqs)
    _names(fold, _pick(events, types, _NAMING), seed)
    first, last = _span(times, span)
    run_first, run_last = _span(times[own:], own_span) if seed else (first, last)
    final = _last_view(events[-1])["time"] if fold.open_turn is not None else None  # where an open turn ends
    run = fold.finish(run_first, run_last, counts=_COUNTS, final=final)
    timing: list[dict[str, Any]] = []
    balanced_timing = timing
    closers = 0
    if events:
        final = _last_view(events[-1])
        timing = [_as_dict(event) for event in markers if event is not events[-1]] + [final]
        balanced_timing = timing
        starts_at = [event for event in markers if type(event) is not Descriptor]
        if starts_at and type(starts_at[-1]) is TurnStart:  # the log ends inside a turn: upstream closes it
            made = _closers(events[bisect_left(seqs, starts_at[-1].seq) :])
            closers, balanced_timing = len(made), timing + made
    return FastFacts(meta, count, first, last, run, descriptors, timing, balanced_timing, closers)


def _span(times: list[int], rows: list[int]) -> tuple[int | None, int | None]:
    """The least and greatest of the events' times and the rows' member times."""
    values = [min(times), max(times), *rows] if times else rows
    return (min(values), max(values)) if values else (None, None)


def _rows(rows: list[Any], seed: int, span: list[int], own_span: list[int]) -> list[int]:
    """Check packed rows as upstream expands them (gaps, member seqs and times); the events each stands for.

    Whole lists at once: the members and gaps of every row counted, and, when
    no row's times fall, each row's bounds are its first member's time and
    that plus its gaps. ``span`` and ``own_span`` get the bounds of all the
    members and of the session's own (``seq >= seed``).
    """
    datas = list(map(_DATA, rows))
    gaps = list(map(_GAPS, datas))
    sizes = list(map(len, map(_TEXTS, datas)))
    if list(map(len, gaps)) != [size - 1 for size in sizes]:
        raise _Reject  # a row's dt must have one gap per member after the first
    seq0 = list(map(_SEQ, rows))
    if max(map(add, seq0, sizes)) - 1 > MAX_SAFE_INTEGER:
        raise _Reject  # member seqs must stay safe integers
    time0 = list(map(_TIME, rows))
    if min(map(_LEAST, gaps)) >= 0:  # times never fall: a row's bounds are its first and last member's times
        lows, highs = time0, list(map(add, time0, map(sum, gaps)))
    else:
        bounds = [_bounds(list(accumulate(dt, initial=time))) for dt, time in zip(gaps, time0, strict=True)]
        lows, highs = [low for low, _ in bounds], [high for _, high in bounds]
    if min(lows) < -MAX_SAFE_INTEGER or max(highs) > MAX_SAFE_INTEGER:
        raise _Reject  # member times must stay safe integers
    span += (min(lows), max(highs))
    own = bisect_left(seq0, seed) if seed else 0
    if own < len(rows):
        own_span += (min(lows[own:]), max(highs[own:]))
    if own and seq0[own - 1] + sizes[own - 1] > seed:  # a row across the seed: only its own members
        row = own - 1
        own_span += _bounds(list(accumulate(gaps[row], initial=time0[row]))[seed - seq0[row] :])
    return sizes


def _bounds(times: list[int]) -> tuple[int, int]:
    return min(times), max(times)


def _header(event: Any) -> None:
    """Upstream's ``request/header`` rules beyond the types: no legacy reason, consistent adapter defaults."""
    data = event.data
    if data.reason == "fallback":
        raise _Reject
    defaults = data.header.adapterDefaults
    if defaults is not UNSET:
        config = data.header.config
        if (defaults.reasoningEffort is True and config.reasoningEffort is UNSET) or (
            defaults.maxTokens is True and config.maxTokens is UNSET
        ):
            raise _Reject


def _as_dict(event: Any, data: Any = UNSET) -> dict[str, Any]:
    view = {"type": type(event).__struct_config__.tag, "seq": event.seq, "time": event.time}
    if data is not UNSET:
        view["data"] = data
    return view


def _last_view(event: Any) -> dict[str, Any]:
    """The last event as the closers and the timing unit see it (a packed row: its last member)."""
    if type(event) in ROWS:
        data = event.data
        members = len(data.texts)
        return {"type": "assistant/chunk", "seq": event.seq + members - 1, "time": sum(data.dt, event.time)}
    if type(event) is Ignorable:
        return {"type": event.type, "seq": event.seq, "time": event.time}
    return _as_dict(event)


def _closer_view(event: Any) -> dict[str, Any]:
    """What ``interrupted_turn_closers`` reads of an event after the last ``turn/start``."""
    cls = type(event)
    view = _last_view(event)
    if cls is TurnStart:
        view["data"] = {"turn": event.data.turn}
    elif cls is StepStart:
        view["data"] = {"step": event.data.step}
    elif cls is AssistantEvent:
        blocks = [
            {"type": block.type, **({} if block.id is UNSET else {"id": block.id})}
            for block in event.data.message.content
        ]
        view["data"] = {
            "message": {"content": blocks},
            **({} if event.data.step is UNSET else {"step": event.data.step}),
        }
    elif cls is ToolCall:
        view["data"] = {} if event.data.callId is UNSET else {"callId": event.data.callId}
    elif cls is ToolResult:
        view["data"] = {"message": {"source": {"callId": event.data.message.source.callId}}}
    return view


def _closers(tail: list[Any]) -> list[dict[str, Any]]:
    """The closers upstream appends to the turn open at the end (``tail``: its events from its start), checked."""
    closers = interrupted_turn_closers([_closer_view(event) for event in tail])
    for closer in closers:
        assert_message_shape(closer)
    check_events(((closer["seq"], closer) for closer in closers), lambda seq: {})
    return closers
