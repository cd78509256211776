"""Typed event records for the fast path: one ``msgspec`` Struct per event type, decoded in one call.

Each line of a healthy log decodes, in C, to one Struct of a tagged union on
``type``. The Structs are upstream's envelope and message rules written as
types: unknown envelope keys are forbidden, ``seq`` and ``time`` are
integers within the safe range (a float such as ``1.0`` is refused, although
upstream would accept it), ``ignorable`` may only be ``true``, a surface
event must carry ``surfaceOp: "append"`` (a replace op is left to the full
path), and the fields upstream's rules and the run facts read are typed
strictly (non-empty strings, roles, sources, one tool-result block...).
Payloads no rule reads stay unparsed (``msgspec.Raw``) or are skipped.

Anything the union does not accept makes ``decode_body`` return ``None``
and the caller reads the whole log with the full path. What the types
cannot say (row gaps and member counts, seq contiguity, duplicate
``sourceEventSeqs``, a turn's reason) ``read.typed_read`` checks in Python.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Annotated, Any, Final, Literal, TypeAlias, Union

import msgspec
from msgspec import UNSET, Meta, Raw, Struct, UnsetType, field

from subagent_catalog.read.chunk_rows import CHUNK_ROW_TYPES
from subagent_catalog.read.inspect_migrate import KNOWN_EVENT_TYPES
from subagent_catalog.read.jsvalue import MAX_SAFE_INTEGER

SafeInt: TypeAlias = Annotated[int, Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
"""``Number.isSafeInteger`` for a JSON integer (floats are refused by the type)."""
EventSeq: TypeAlias = Annotated[int, Meta(ge=0, le=MAX_SAFE_INTEGER)]
Count: TypeAlias = Annotated[int, Meta(ge=0, le=MAX_SAFE_INTEGER)]
NonEmpty: TypeAlias = Annotated[str, Meta(min_length=1)]
Number: TypeAlias = int | float


class _Record(Struct, gc=False):
    """A nested record: keys other than the declared ones are skipped (no rule reads them)."""


class _Exact(Struct, gc=False, forbid_unknown_fields=True):
    """A nested record whose key set upstream checks exactly."""


# --- packed chunk rows (upstream's row validation, as types) --------------------------------------


class TextRowData(_Exact):
    """``data`` of a ``text-chunks`` or ``reasoning-chunks`` row: exactly these keys."""

    turn: Number
    step: Number
    index: Number
    dt: list[SafeInt]
    texts: Annotated[list[str], Meta(min_length=1)]


class ToolRowData(_Exact):
    """``data`` of a ``tool-call-chunks`` row: exactly these keys (``name`` optional)."""

    turn: Number
    step: Number
    index: Number
    id: str
    dt: list[SafeInt]
    texts: Annotated[list[str], Meta(min_length=1)] = field(name="args")  # the members, as in the text rows
    name: str | UnsetType = UNSET


class _Row(Struct, tag_field="type", gc=False, forbid_unknown_fields=True):
    """A packed row: exactly ``{type, seq0, time0, data}``; ``seq``/``time`` are its first member's."""

    seq: EventSeq = field(name="seq0")
    time: SafeInt = field(name="time0")


class TextRow(_Row, tag="text-chunks"):
    """A ``text-chunks`` row."""

    data: TextRowData


class ReasoningRow(_Row, tag="reasoning-chunks"):
    """A ``reasoning-chunks`` row."""

    data: TextRowData


class ToolRow(_Row, tag="tool-call-chunks"):
    """A ``tool-call-chunks`` row."""

    data: ToolRowData


ROWS: Final = (TextRow, ReasoningRow, ToolRow)
"""The packed row types (``seq`` and ``time`` are the first member's)."""


# --- the envelope ---------------------------------------------------------------------------------


class Event(Struct, tag_field="type", gc=False, forbid_unknown_fields=True, kw_only=True):
    """The envelope every event shares: no other keys, safe-integer ``seq`` and ``time``, ``ignorable`` ``true``."""

    seq: EventSeq
    time: SafeInt
    ignorable: Literal[True] | UnsetType = UNSET


class _SurfaceEvent(Event, kw_only=True):
    """A surface event appended to the model-visible surface (``surfaceOp`` ``"append"``)."""

    surfaceOp: Literal["append"]
    sourceEventSeqs: list[EventSeq] | UnsetType = UNSET


# --- what the rules read --------------------------------------------------------------------------


class Usage(_Record):
    """A token-usage sample: only these counts are read (each a non-negative safe integer, or absent or null).

    An absent count and a ``null`` one are both ``None``, as the full path reads them (no count).
    """

    inputTokens: Count | None = None
    outputTokens: Count | None = None
    cacheReadTokens: Count | None = None
    cacheWriteTokens: Count | None = None
    reasoningTokens: Count | None = None


USAGE_COUNTS = attrgetter("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
"""A ``Usage``'s five counts, in ``run_records.USAGE_COUNTS`` order (one C call)."""


class Chunk(_Record):
    """``data.chunk`` of an ``assistant/chunk``: its kind, a usage chunk's sample, a delta's payload left raw.

    ``text``, ``argumentsDelta`` and ``name`` stay undecoded (``Raw``): only
    whether a delta is empty is ever asked (``typed_read.token_delta``).
    """

    type: str
    usage: Usage | UnsetType = UNSET
    text: Raw | UnsetType = UNSET
    argumentsDelta: Raw | UnsetType = UNSET
    name: Raw | UnsetType = UNSET


class ChunkData(_Record):
    """``data`` of an ``assistant/chunk``."""

    chunk: Chunk
    turn: SafeInt | UnsetType = UNSET
    step: SafeInt | UnsetType = UNSET


class TurnTrigger(_Record):
    """The pre-react-loop ``trigger`` of a ``turn/start`` (migrated away upstream)."""

    kind: NonEmpty


class TurnStartData(_Exact):
    """``data`` of a ``turn/start``: ``{turn}``, or the legacy ``{turn, trigger}``."""

    turn: SafeInt
    trigger: TurnTrigger | UnsetType = UNSET


class TurnEndData(_Exact):
    """``data`` of a ``turn/end``: exactly ``{turn, reason}``, the reason checked by upstream's own rule."""

    turn: Annotated[int, Meta(ge=1, le=MAX_SAFE_INTEGER)]
    reason: Raw


class StepData(_Record):
    """``data`` of a ``step/start``: the step a closer would end, and its turn."""

    step: SafeInt
    turn: SafeInt | UnsetType = UNSET


class ToolCallData(_Record):
    """``data`` of a ``tool/call``."""

    callId: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    arguments: Raw | UnsetType = UNSET  # only a string's length is read (``typed_read._arguments``)
    turn: SafeInt | UnsetType = UNSET
    step: SafeInt | UnsetType = UNSET


class Block(_Record):
    """A content block of an assistant message (a ``tool-call`` block names its call)."""

    type: str
    id: NonEmpty | UnsetType = UNSET


class ModelSource(_Record):
    """An assistant message's source: the model that wrote it."""

    kind: Literal["model"]
    provider: NonEmpty
    model: NonEmpty


class AssistantMessage(_Record):
    """The identified message of an ``assistant/message``."""

    id: NonEmpty
    role: Literal["assistant"]
    source: ModelSource
    content: list[Block]


class AssistantData(_Record):
    """``data`` of an ``assistant/message``."""

    message: AssistantMessage
    turn: SafeInt | UnsetType = UNSET
    step: SafeInt | UnsetType = UNSET
    usage: Usage | UnsetType = UNSET


class KindSource(_Record):
    """A user message's source."""

    kind: NonEmpty


class UserData(_Record):
    """``data`` of a ``user/message``: the identified message itself."""

    id: NonEmpty
    role: Literal["user"]
    source: KindSource
    content: list[Raw]


class Part(_Record):
    """A part of a tool result's content (a ``text`` part's bytes are counted)."""

    type: str | UnsetType = UNSET
    text: str | UnsetType = UNSET


class ResultBlock(_Record):
    """The one ``tool-result`` block of a tool result."""

    type: Literal["tool-result"]
    toolCallId: NonEmpty
    content: list[Part]
    isError: bool | UnsetType = UNSET


class ToolSource(_Record):
    """A tool result's source: the call it answers."""

    kind: Literal["tool"]
    callId: NonEmpty


class ToolMessage(_Record):
    """The identified message of a ``tool/result``."""

    id: NonEmpty
    role: Literal["user"]
    source: ToolSource
    content: Annotated[list[ResultBlock], Meta(min_length=1, max_length=1)]


class ToolError(_Record):
    """``data.error`` of a failed ``tool/result``: the error's class name and code."""

    name: str | UnsetType = UNSET
    code: str | UnsetType = UNSET


class ToolResultData(_Record):
    """``data`` of a ``tool/result``."""

    message: ToolMessage
    error: ToolError | UnsetType = UNSET


class ModelConfig(_Record):
    """``data.header.config`` of a ``request/header``."""

    provider: NonEmpty
    model: NonEmpty
    reasoningEffort: NonEmpty | UnsetType = UNSET
    maxTokens: Raw | UnsetType = UNSET


class AdapterDefaults(_Exact):
    """``adapterDefaults``: only these keys, each ``true``."""

    reasoningEffort: Literal[True] | UnsetType = UNSET
    maxTokens: Literal[True] | UnsetType = UNSET


class RequestHeader(_Record):
    """``data.header`` of a ``request/header``."""

    config: ModelConfig
    adapterDefaults: AdapterDefaults | UnsetType = UNSET


class HeaderData(_Record):
    """``data`` of a ``request/header``."""

    header: RequestHeader
    reason: str | UnsetType = UNSET


# --- the events -----------------------------------------------------------------------------------


class ChunkEvent(Event, tag="assistant/chunk"):
    """``assistant/chunk``."""

    data: ChunkData


class TurnStart(Event, tag="turn/start"):
    """``turn/start``."""

    data: TurnStartData


class TurnEnd(Event, tag="turn/end"):
    """``turn/end``."""

    data: TurnEndData


class StepStart(Event, tag="step/start"):
    """``step/start``."""

    data: StepData


class StepEnd(Event, tag="step/end"):
    """``step/end`` (its data is never read)."""

    data: Raw


class ToolCall(Event, tag="tool/call"):
    """``tool/call``."""

    data: ToolCallData


class Descriptor(Event, tag="subagent/descriptor"):
    """``subagent/descriptor``: the payload is parsed again by ``orjson`` and judged by the reference code."""

    data: Raw


class Header(Event, tag="request/header"):
    """``request/header``."""

    data: HeaderData


class RequestContext(Event, tag="request/context"):
    """``request/context``: its payload is parsed by ``orjson`` for ``contextWindow`` (any shape is accepted)."""

    data: Raw


class AssistantEvent(_SurfaceEvent, tag="assistant/message"):
    """``assistant/message``."""

    data: AssistantData


class UserEvent(_SurfaceEvent, tag="user/message"):
    """``user/message``."""

    data: UserData


class ToolResult(_SurfaceEvent, tag="tool/result"):
    """``tool/result``."""

    data: ToolResultData


class Opaque(Event):
    """A known event type no rule reads beyond its envelope."""

    data: Raw


class Ignorable(Struct, gc=False, forbid_unknown_fields=True):
    """An event of a type upstream does not know, marked ``ignorable``: kept, never read."""

    type: str
    seq: EventSeq
    time: SafeInt
    data: Raw
    ignorable: Literal[True]


_READ = (
    ChunkEvent,
    TurnStart,
    TurnEnd,
    StepStart,
    StepEnd,
    ToolCall,
    Descriptor,
    Header,
    RequestContext,
    AssistantEvent,
    UserEvent,
)
_TYPED = {cls.__struct_config__.tag for cls in (*_READ, ToolResult)}
_OPAQUE_TYPES = sorted(KNOWN_EVENT_TYPES - _TYPED)
OPAQUE: Final = tuple(
    msgspec.defstruct(f"Opaque_{index}", [], bases=(Opaque,), tag=kind) for index, kind in enumerate(_OPAQUE_TYPES)
)
"""One Struct per known type whose data no rule reads (``approval/policy``, ``session/title``...)."""

# Types the full path treats specially even when ignorable (migrated, legacy or known): never "unknown".
_NOT_UNKNOWN = KNOWN_EVENT_TYPES | CHUNK_ROW_TYPES | {"steering/message", "request/header-delta", "mode/set"}

_UNION: Any = Union[(*_READ, ToolResult, *ROWS, *OPAQUE)]  # a runtime union of the classes
_LINES = msgspec.json.Decoder(_UNION)
_IGNORABLE = msgspec.json.Decoder(Ignorable)
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def _one_line(line: bytes | memoryview) -> Any:
    try:
        return _LINES.decode(line)
    except msgspec.ValidationError:
        event = _IGNORABLE.decode(line)
        if event.type in _NOT_UNKNOWN:
            raise
        return event


def _decode_lines(body: bytes) -> list[Any]:
    """Decode whole runs of lines at once; a line naming ``"ignorable"`` alone (it may be of an unknown type)."""
    try:
        events: list[Any] = _LINES.decode_lines(body)
        return events
    except msgspec.ValidationError:
        found = body.find(b'"ignorable"')
        if found == -1:
            raise
    view = memoryview(body)
    events = []
    start = 0
    while found != -1:
        line_start = max(start, body.rfind(b"\n", start, found) + 1)
        line_end = body.find(b"\n", found)
        if line_start > start:
            events += _LINES.decode_lines(view[start:line_start])
        events.append(_one_line(view[line_start:line_end]))
        start = line_end + 1
        found = body.find(b'"ignorable"', start)
    if start < len(body):
        events += _LINES.decode_lines(view[start:])
    return events


def _lines(body: bytes) -> int | None:
    """How many lines the body holds if each is ``{...}`` (``None`` if not, or if the last is not ended).

    Every newline but the last must stand between a ``}`` and a ``{``: a
    blank line, a carriage return, whitespace around a record or a record
    across lines are refused. (``find`` jumps from newline to newline; a
    ``count`` of the body would read it byte by byte twice.)
    """
    if not body:
        return 0
    last = len(body) - 1
    if body[0] != 0x7B or body[last] != 0x0A or body[last - 1] != 0x7D:
        return None
    find = body.find
    lines = 1
    newline = find(b"\n")
    while newline != last:
        if body[newline - 1] != 0x7D or body[newline + 1] != 0x7B:  # "}\n{"
            return None
        lines += 1
        newline = find(b"\n", newline + 1)
    return lines


def decode_body(body: bytes) -> list[Any] | None:
    """The typed events of a log body (the lines after the header), or ``None`` for anything unexpected.

    Every line must be exactly one JSON object (``{`` first, ``}`` last, no
    blank line, no carriage return) that decodes to one of the typed events;
    ``decode_lines`` would also take two values on a line or skip a blank one,
    so the line count is checked against the newlines first.

    Examples:
        >>> events = decode_body(b'{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\\n')
        >>> events
        [TurnStart(data=TurnStartData(turn=1, trigger=UNSET), seq=0, time=5, ignorable=UNSET)]
        >>> decode_body(b'{"type":"turn/start","seq":0,"time":5.0,"data":{"turn":1}}\\n') is None
        True
        >>> decode_body(b'{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\\n\\n') is None
        True
    """
    lines = _lines(body)
    if lines is None:
        return None  # a blank line, CRLF, whitespace around a record, a record across lines, or a torn tail
    try:
        events = _decode_lines(body)
    except _DECODE_ERRORS:
        return None
    return events if len(events) == lines else None
