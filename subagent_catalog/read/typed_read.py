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
from operator import add, attrgetter, itemgetter
from typing import Any

import orjson
from msgspec import UNSET

from subagent_catalog.read import limits
from subagent_catalog.read.fastpath import FastFacts
from subagent_catalog.read.inspect_migrate import InspectFailure, assert_message_shape, migrate_turn_end
from subagent_catalog.read.inspect_rules import assert_header, check_events, interrupted_turn_closers
from subagent_catalog.read.jsvalue import MAX_SAFE_INTEGER
from subagent_catalog.read.run_facts import USAGE_FIELDS, Fold, utf8_length
from subagent_catalog.read.typed_events import (
    ROWS,
    AssistantEvent,
    ChunkEvent,
    Descriptor,
    Header,
    Ignorable,
    StepEnd,
    StepStart,
    ToolCall,
    ToolResult,
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
_CHUNK_USAGE, _CALL_NAME = attrgetter("data.chunk.usage"), attrgetter("data.name")
_ROW_TYPES = frozenset(ROWS)
_SURFACE = frozenset((AssistantEvent, UserEvent, ToolResult))
_MARKERS = frozenset((TurnStart, TurnEnd, Descriptor))
_CHUNK, _CALL, _HEADER = frozenset((ChunkEvent,)), frozenset((ToolCall,)), frozenset((Header,))


def _step(data: Any) -> tuple[Any, Any]:
    """The ``(turn, step)`` a usage sample belongs to (an absent one is ``None``, as ``dict.get``)."""
    return None if data.turn is UNSET else data.turn, None if data.step is UNSET else data.step


def _surface(fold: Fold, events: list[Any], seed: int) -> list[tuple[int, tuple[Any, Any], Any]]:
    """Upstream's rules for appended messages and tool results, their run facts; the messages' usage samples."""
    samples = []
    results = failed = text = 0
    for event in events:
        if event.sourceEventSeqs is not UNSET and not _sources_ok(event, type(event) is AssistantEvent):
            raise _Reject
        if type(event) is ToolResult:
            message = event.data.message
            block = message.content[0]
            if block.toolCallId != message.source.callId:
                raise _Reject  # the block must answer its source call
            if event.seq >= seed:
                results += 1
                failed += block.isError is True
                for part in block.content:
                    if part.type == "text" and part.text is not UNSET:
                        text += len(part.text) if part.text.isascii() else utf8_length(part.text)
        elif type(event) is AssistantEvent and event.data.usage is not UNSET and event.seq >= seed:
            samples.append((event.seq, _step(event.data), event.data.usage))
    run = fold.run
    run.tool_results, run.tool_results_failed, run.tool_output_bytes = results, failed, text
    return samples


def _markers(fold: Fold, markers: list[Any], seed: int) -> list[dict[str, Any]]:
    """Turn starts and ends (upstream's migration rules, the turn facts) in order; the descriptor events."""
    descriptors = []
    for event in markers:
        if type(event) is TurnStart:
            if event.data.trigger is not UNSET and event.data.turn < 1:
                raise _Reject  # upstream's migration of a legacy turn/start fails
            if event.seq >= seed:
                fold.turn_start(event.data.turn, event.time)
        elif type(event) is TurnEnd:
            turn, reason = event.data.turn, _reason(event.data.reason, event.seq)
            if event.seq >= seed:
                fold.turn_end(turn, reason, event.time)
        else:
            descriptors.append(_as_dict(event, orjson.loads(memoryview(event.data))))
    return descriptors


class _TypedFold(Fold):
    """``Fold`` over typed samples: their counts are non-negative safe integers or absent (``UNSET``)."""

    def usage_counts(self) -> list[list[int]]:
        samples = list(self.usage.values())
        return [[count for count in map(getter, samples) if count is not UNSET] for getter in _USAGE_COUNTS]


_USAGE_COUNTS = [attrgetter(name) for name in USAGE_FIELDS]
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
    fold = _TypedFold()
    samples = _surface(fold, _pick(events, types, _SURFACE), seed)
    for event in compress(chunks := _pick(events[own:], types[own:], _CHUNK), map(_CHUNK_USAGE, chunks)):
        if event.data.chunk.type == "usage":  # a chunk with a usage sample
            samples.append((event.seq, _step(event.data), event.data.chunk.usage))
    samples.sort(key=itemgetter(0))  # a later sample of a step replaces an earlier one
    fold.usage = {step: usage for _, step, usage in samples}
    fold.run.steps = types.count(StepEnd) if not own else types[own:].count(StepEnd)
    calls = _pick(events[own:], types[own:], _CALL)
    fold.run.tool_calls = len(calls)
    fold.tools.update(name for name in map(_CALL_NAME, calls) if name is not UNSET)
    for header in _pick(events, types, _HEADER):
        _header(header)
        if header.seq >= seed:
            config = header.data.header.config
            fold.route(config.provider, config.model)
    markers = _pick(events, types, _MARKERS)
    descriptors = _markers(fold, markers, seed)
    first, last = _span(times, span)
    run_first, run_last = _span(times[own:], own_span) if seed else (first, last)
    run = fold.finish(run_first, run_last)
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
