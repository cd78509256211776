"""Per-file facts as bytes, and the digest of the code that derives them.

The facts cache and archives store ``LogFacts`` (events stripped) as
typed MessagePack records written and read with msgspec: one positional
array per record (``LogFacts``, ``DescriptorRecord``, ``ProblemRecord``)
with a fixed type per field (``Literal`` verdicts, causes, statuses and
severities; ints, strings, ``None``), decoded strictly (a missing, extra or
mistyped field is refused). Such a decoder builds no cycles and no shared
objects, and its cost is linear in the blob, which is capped at
``MAX_FACTS_BYTES`` (a larger record is not stored).

Strings are UTF-8; a string holding lone surrogates (a JavaScript string
from a ``\\ud800`` escape, or a path decoded with ``surrogateescape``) makes
the record a ``w`` record, whose text fields may also be an extension
value holding the string's WTF-8 bytes. The headers (``list_meta``,
``read_meta``) are parsed JSON values, kept exactly: a flat header of
plain scalars is a MessagePack map; any other is a flattened tree (one
kind byte per node plus a list of scalars, so nesting of any depth costs no
recursion) with big integers as two's-complement bytes and floats as
IEEE doubles (``-0.0`` and the infinities ``1e999`` parses to included).
Each header is at most ``MAX_HEADER_BYTES`` and is sized before it is
decoded.

After decoding, ``check_facts`` requires what the reader can produce
(header shapes, verdict and cause combinations, non-negative counts and
1-based lines, ...); anything else raises ``FactsRecordError``, which every
caller treats as a miss. ``reader_digest`` names the reader's code: stored
facts are reused only under the same code.
"""

from __future__ import annotations

import hashlib
from dataclasses import fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import msgspec
from msgspec.msgpack import Ext

from subagent_catalog.read.logread import DescriptorRecord, LogFacts, ProblemRecord
from subagent_catalog.read.run_facts import STATS_FIELDS, TEXT_FIELDS, RunFacts
from subagent_catalog.read.run_records import ToolCallRecord, UsageSample
from subagent_catalog.store.facts_check import FactsRecordError, check_facts

__all__ = [
    "MAX_FACTS_BYTES",
    "MAX_HEADER_BYTES",
    "FactsRecordError",
    "dump_facts",
    "load_facts",
    "reader_digest",
    "reader_modules",
]

MAX_FACTS_BYTES = 4 << 20
MAX_HEADER_BYTES = 256 << 10
FACTS_MAGIC = b"SCF3"
_UTF8, _WTF8 = b"u", b"w"
_WTF8_EXT = 1

_INT64_MIN, _UINT64_MAX = -(2**63), 2**64 - 1
Scalar = None | bool | int | float | str


class _Tree(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """A JSON value flattened in pre-order: a kind byte per node; scalars and counts; big ints and WTF-8 strings."""

    kinds: bytes
    values: list[Scalar]
    blobs: list[bytes]


HeaderWire = dict[str, Scalar] | _Tree | None
_KIND_DICT, _KIND_LIST, _KIND_SCALAR, _KIND_BIGINT, _KIND_WTF8 = b"DLSBW"

_PROBLEM_FIELDS = ("kind", "message", "line", "offset", "severity")
_DESCRIPTOR_FIELDS = tuple(f.name for f in fields(DescriptorRecord))
_FACTS_FIELDS = tuple(f.name for f in fields(LogFacts) if f.name not in ("events", "events_ipc"))
_RUN_FIELDS = tuple(f.name for f in fields(RunFacts))
_SAMPLES_AT = _RUN_FIELDS.index("usage_samples")
_CALLS_AT = _RUN_FIELDS.index("tool_call_records")
_RUN_LISTS = ("models", "providers")
_CALL_TEXT = ("call_id", "name", "error_name", "error_code")
_INT_TYPES: dict[str, Any] = {
    **dict.fromkeys(("seq", "result_seq", "time", "result_time", "turn", "step"), int | None),
    **dict.fromkeys(("argument_bytes", "result_bytes"), int | None),
    **{f"{name}_tokens": int | None for name in ("input", "output", "cache_read", "cache_write", "reasoning")},
    "is_error": bool | None,
    "in_seed": bool,
}


def _record(name: str, members: list[tuple[str, Any]]) -> Any:
    """A positional wire record type, decoded strictly."""
    return msgspec.defstruct(name, members, array_like=True, forbid_unknown_fields=True)


def _wire_types(text: Any) -> tuple[Any, Any]:
    """The record types with ``text`` as the type of every string field."""
    optional = text | None
    problem = _record(
        "ProblemWire",
        [
            ("kind", text),
            ("message", text),
            ("line", int | None),
            ("offset", int | None),
            ("severity", Literal["error", "warning", "info"]),
        ],
    )
    descriptor = _record(
        "DescriptorWire",
        [
            ("seq", int),
            ("time", int | None),
            ("payload", text),
            ("status", Literal["valid", "malformed", "unknown-version"]),
            *((name, optional) for name in ("reason", "version", "mode", "provider", "label")),
            *((name, optional) for name in ("agent_provider", "agent_model", "persona")),
            ("tool_allow", list[text] | None),
            ("tool_deny", list[text] | None),
        ],
    )
    sample = _record(
        "UsageSampleWire",
        [(name, optional if name in ("provider", "model") else _INT_TYPES[name]) for name in UsageSample._fields],
    )
    call = _record(
        "ToolCallWire",
        [(name, text | None if name in _CALL_TEXT else _INT_TYPES[name]) for name in ToolCallRecord._fields],
    )
    run_types: dict[str, Any] = {
        **dict.fromkeys(_RUN_LISTS, list[text] | None),
        "tools": list[text],
        **dict.fromkeys(TEXT_FIELDS, optional),
        **dict.fromkeys(STATS_FIELDS, int | None),
        "last_turn_open": bool,
        "peak_context_share": float | None,
        "usage_samples": list[sample],  # type: ignore[valid-type]
        "tool_call_records": list[call],  # type: ignore[valid-type]
    }
    run = _record(
        "RunWire",
        [(f.name, run_types.get(f.name, int | None if f.default is None else int)) for f in fields(RunFacts)],
    )
    facts = _record(
        "FactsWire",
        [
            ("size", int),
            ("list_meta", msgspec.Raw),
            ("list_skip", optional),
            ("list_error", optional),
            ("verdict", Literal["ok", "torn-tail", "prefix", "failed"]),
            ("read_cause", optional),
            ("read_message", optional),
            ("read_line", int | None),
            ("read_offset", int | None),
            ("read_meta", msgspec.Raw),
            ("event_count", int),
            ("first_time", int | None),
            ("last_time", int | None),
            ("closers", int),
            ("descriptors", list[descriptor]),  # type: ignore[valid-type]
            ("identity_mode", optional),
            ("identity_label", optional),
            ("identity_seq", int | None),
            ("identity_cause", Literal["no-descriptor", "unknown-descriptor-version", "malformed-descriptor"] | None),
            ("identity_detail", optional),
            ("unit_failure", optional),
            ("unit_failure_live", optional),
            ("problems", list[problem]),  # type: ignore[valid-type]
            ("run", run | None),
        ],
    )
    return facts, (descriptor, problem, run, sample, call)


_FactsWire, (_DescriptorWire, _ProblemWire, _RunWire, _SampleWire, _CallWire) = _wire_types(str)
_FactsWireW, _ = _wire_types(str | Ext)
assert _FactsWire.__struct_fields__ == _FACTS_FIELDS, "the wire record must mirror LogFacts"
assert _DescriptorWire.__struct_fields__ == _DESCRIPTOR_FIELDS, "the wire record must mirror DescriptorRecord"
assert _ProblemWire.__struct_fields__ == tuple(f.name for f in fields(ProblemRecord))
assert _RunWire.__struct_fields__ == _RUN_FIELDS, "the wire record must mirror RunFacts"

_ENCODER = msgspec.msgpack.Encoder()
_DECODERS = {_UTF8: msgspec.msgpack.Decoder(_FactsWire), _WTF8: msgspec.msgpack.Decoder(_FactsWireW)}
_HEADER_DECODER = msgspec.msgpack.Decoder(HeaderWire)


class _Unstorable(Exception):
    """Facts this encoding does not hold (not a JSON value, too large): they are not stored."""


# --------------------------------------------------------------------------- strings


def _clean(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _wtf8(text: Any) -> Any:
    if type(text) is str and not _clean(text):
        return Ext(_WTF8_EXT, text.encode("utf-8", "surrogatepass"))
    if type(text) is list:
        return [_wtf8(item) for item in text]
    return text


def _from_wtf8(data: bytes) -> str:
    try:
        text = data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as error:
        raise FactsRecordError(f"a WTF-8 string does not decode ({error.reason})") from None
    if _clean(text):
        raise FactsRecordError("a WTF-8 string holds no lone surrogate (not written by dump_facts)")
    return text


def _text(value: Any) -> Any:
    if type(value) is Ext:
        if value.code != _WTF8_EXT:
            raise FactsRecordError(f"unknown extension type {value.code} in a text field")
        return _from_wtf8(bytes(value.data))
    if type(value) is list:
        return [_text(item) for item in value]
    return value


# --------------------------------------------------------------------------- headers


def _tree(value: Any) -> _Tree:
    kinds = bytearray()
    values: list[Scalar] = []
    blobs: list[bytes] = []
    stack = [value]
    while stack:
        if len(kinds) > MAX_HEADER_BYTES:
            raise _Unstorable("header too large")  # also ends any cycle (the reader never makes one)
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            kinds.append(_KIND_DICT)
            values.append(len(item))
            for key, child in reversed(item.items()):
                if type(key) is not str:
                    raise _Unstorable("a header key is not a string")
                stack.append(child)
                stack.append(key)
        elif kind is list:
            kinds.append(_KIND_LIST)
            values.append(len(item))
            stack.extend(reversed(item))
        elif kind is int and not _INT64_MIN <= item <= _UINT64_MAX:
            kinds.append(_KIND_BIGINT)
            blobs.append(item.to_bytes((item.bit_length() + 8) // 8, "little", signed=True))
        elif kind is str and not _clean(item):
            kinds.append(_KIND_WTF8)
            blobs.append(item.encode("utf-8", "surrogatepass"))
        elif item is None or kind in (bool, int, float, str):
            kinds.append(_KIND_SCALAR)
            values.append(item)
        else:
            raise _Unstorable(f"a header holds a {kind.__name__}, not a JSON value")
    return _Tree(bytes(kinds), values, blobs)


def _encode_header(meta: dict[str, Any] | None) -> msgspec.Raw:
    flat = meta is None or all(  # clean text keys, scalar values a msgspec record holds as they are
        type(key) is str
        and _clean(key)
        and (
            (type(value) is str and _clean(value))
            or (type(value) is int and _INT64_MIN <= value <= _UINT64_MAX)
            or value is None
            or type(value) in (bool, float)
        )
        for key, value in meta.items()
    )
    wire: Any = meta if flat else _tree(meta)
    data = _ENCODER.encode(wire)
    if len(data) > MAX_HEADER_BYTES:
        raise _Unstorable("header too large")
    return msgspec.Raw(data)


def _untree(tree: _Tree) -> Any:
    """The value of a flattened tree, without recursion; any malformed tree raises ``FactsRecordError``."""
    kinds, values, blobs = tree.kinds, tree.values, tree.blobs
    if len(kinds) != len(values) + len(blobs) or not kinds:
        raise FactsRecordError("a header tree's kinds do not match its values")
    missing = object()
    root: Any = missing
    stack: list[list[Any]] = []  # [container, children still to come, pending key]
    scalars, datas = iter(values), iter(blobs)
    count: Any = 0
    value: Any
    for index, kind in enumerate(kinds):
        fresh: Any = None
        if kind == _KIND_SCALAR:
            value = next(scalars, None)
        elif kind in (_KIND_DICT, _KIND_LIST):
            count = next(scalars, None)
            if type(count) is not int or not 0 <= count <= len(kinds) - index - 1:
                raise FactsRecordError("a header container's count is out of range")
            value = fresh = {} if kind == _KIND_DICT else []
        elif kind == _KIND_BIGINT:
            data = next(datas, b"")
            if type(data) is not bytes:
                raise FactsRecordError("a big integer node does not hold bytes")
            value = int.from_bytes(data, "little", signed=True)
            if _INT64_MIN <= value <= _UINT64_MAX or len(data) != (value.bit_length() + 8) // 8:
                raise FactsRecordError("a big integer node is not in its shortest form")
        elif kind == _KIND_WTF8:
            value = _from_wtf8(next(datas, b""))
        else:
            raise FactsRecordError(f"unknown header node kind {kind}")
        if not stack:
            if root is not missing:
                raise FactsRecordError("a header tree holds more than one value")
            root = value
        else:
            top = stack[-1]
            container = top[0]
            if type(container) is dict:
                if top[2] is missing:
                    if type(value) is not str or value in container:
                        raise FactsRecordError("a header key is not a string, or repeats")
                    top[2] = value
                    continue
                container[top[2]] = value
                top[2] = missing
            else:
                container.append(value)
            top[1] -= 1
        if fresh is not None and count:
            stack.append([fresh, count, missing])
        else:
            while stack and stack[-1][1] == 0:
                stack.pop()
    if stack or next(scalars, missing) is not missing or next(datas, missing) is not missing:
        raise FactsRecordError("a header tree ends inside a container, or its kinds do not match its values")
    return root


def _decode_header(raw: msgspec.Raw) -> dict[str, Any] | None:
    if len(raw) > MAX_HEADER_BYTES:
        raise FactsRecordError(f"a header record is larger than {MAX_HEADER_BYTES} bytes")
    try:
        wire = _HEADER_DECODER.decode(raw)
    except (msgspec.DecodeError, RecursionError) as error:
        raise FactsRecordError(f"not a header record: {error}") from None
    value = _untree(wire) if isinstance(wire, _Tree) else wire
    if value is not None and type(value) is not dict:
        raise FactsRecordError("a header is not an object")
    return value


# --------------------------------------------------------------------------- records


def _wire(facts: LogFacts, text: Any) -> Any:
    values: dict[str, Any] = {name: text(getattr(facts, name)) for name in _FACTS_FIELDS}
    values["list_meta"] = _encode_header(facts.list_meta)
    values["read_meta"] = _encode_header(facts.read_meta)
    values["descriptors"] = [
        _DescriptorWire(*(text(getattr(record, name)) for name in _DESCRIPTOR_FIELDS)) for record in facts.descriptors
    ]
    values["problems"] = [
        _ProblemWire(*(text(getattr(problem, name)) for name in _PROBLEM_FIELDS)) for problem in facts.problems
    ]
    run = facts.run
    if run is None:
        values["run"] = None
    else:
        parts = [text(getattr(run, name)) for name in _RUN_FIELDS]
        parts[_SAMPLES_AT] = [_SampleWire(*map(text, item)) for item in run.usage_samples]
        parts[_CALLS_AT] = [_CallWire(*map(text, item)) for item in run.tool_call_records]
        values["run"] = _RunWire(*parts)
    return _FactsWire(**values)


def dump_facts(facts: LogFacts) -> bytes | None:
    """One file's facts (without its events) as a typed record; ``None`` if they are not storable.

    Facts the reader could not have produced (see ``check_facts``), values
    that are not JSON in a header, and records over ``MAX_FACTS_BYTES`` are
    not stored: the file is simply read again next time.

    Examples:
        >>> from subagent_catalog.read.logread import analyse_log
        >>> facts = analyse_log(b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n', "none")
        >>> blob = dump_facts(facts)
        >>> blob[:5], load_facts(blob) == facts
        (b'SCF3u', True)
        >>> dump_facts(LogFacts(size=3)) is None  # no list() verdict: not facts the reader derives
        True
    """
    facts = replace(facts, events=None, events_ipc=None)
    try:
        check_facts(facts)
        try:
            tag, data = _UTF8, _ENCODER.encode(_wire(facts, lambda value: value))
        except UnicodeEncodeError:
            tag, data = _WTF8, _ENCODER.encode(_wire(facts, _wtf8))
    except (FactsRecordError, _Unstorable, OverflowError, TypeError, UnicodeEncodeError):
        return None
    if len(data) + len(FACTS_MAGIC) + 1 > MAX_FACTS_BYTES:
        return None
    return FACTS_MAGIC + tag + data


def load_facts(blob: bytes, *, size: int | None = None) -> LogFacts:
    """Decode and check facts written by ``dump_facts``; anything else raises ``FactsRecordError``.

    Args:
        blob: the stored record.
        size: the size the file has now; facts of another size are refused.

    Raises:
        FactsRecordError: the bytes are not a record ``dump_facts`` writes for
            facts the reader derives (a pickle, a damaged or forged record,
            one over ``MAX_FACTS_BYTES``, or facts of a file of another size).

    Examples:
        >>> from subagent_catalog.read.logread import analyse_log
        >>> blob = dump_facts(analyse_log(b"not a header\\n", "none")) or b""
        >>> load_facts(blob).list_skip
        'first line is not JSON'
        >>> load_facts(blob, size=99)
        Traceback (most recent call last):
        ...
        subagent_catalog.store.facts_check.FactsRecordError: facts of a 13-byte file, not of 99 bytes
        >>> import pickle
        >>> load_facts(pickle.dumps(analyse_log(b"x\\n", "none")))
        Traceback (most recent call last):
        ...
        subagent_catalog.store.facts_check.FactsRecordError: not a facts record (no SCF3 header)
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise FactsRecordError(f"a facts record is bytes, not {type(blob).__name__}")
    if len(blob) > MAX_FACTS_BYTES:
        raise FactsRecordError(f"a facts record is larger than {MAX_FACTS_BYTES} bytes")
    head = bytes(blob[: len(FACTS_MAGIC) + 1])
    decoder = _DECODERS.get(head[len(FACTS_MAGIC) :]) if head.startswith(FACTS_MAGIC) else None
    if decoder is None:
        raise FactsRecordError(f"not a facts record (no {FACTS_MAGIC.decode()} header)")
    try:
        wire = decoder.decode(memoryview(blob)[len(head) :])
    except (msgspec.DecodeError, RecursionError) as error:
        raise FactsRecordError(f"not a facts record: {error}") from None
    wtf8 = head.endswith(_WTF8)
    astuple = msgspec.structs.astuple
    values = dict(zip(_FACTS_FIELDS, astuple(wire), strict=True))
    values["list_meta"] = _decode_header(wire.list_meta)
    values["read_meta"] = _decode_header(wire.read_meta)
    record = (lambda item: tuple(map(_text, astuple(item)))) if wtf8 else astuple  # a WTF-8 record's strings
    if wtf8:
        values = {name: _text(value) if type(value) is not list else value for name, value in values.items()}
    values["descriptors"] = [DescriptorRecord(*record(item)) for item in wire.descriptors]
    values["problems"] = [ProblemRecord(*record(item)) for item in wire.problems]
    values["run"] = None
    if (run := wire.run) is not None:
        parts = [_text(value) if wtf8 and type(value) is not list else value for value in astuple(run)]
        parts[_SAMPLES_AT] = [record(item) for item in run.usage_samples]
        parts[_CALLS_AT] = [record(item) for item in run.tool_call_records]
        values["run"] = RunFacts(*parts)
    facts = LogFacts(**values)
    check_facts(facts, size=size)
    return facts


@lru_cache(maxsize=1)
def reader_modules() -> tuple[str, ...]:
    """The modules whose code decides per-file facts: the ``read`` package and the base modules it may import.

    The layer rule (``read`` imports nothing above it) makes this list complete.

    Examples:
        >>> {"read.logread", "read.scanner", "read.descriptor", "errors"} <= set(reader_modules())
        True
    """
    package = Path(__file__).resolve().parent.parent
    names = [f"read.{path.stem}" for path in (package / "read").glob("*.py")]
    return tuple(sorted([*names, "errors", "progress", "regular", "version"]))


@lru_cache(maxsize=1)
def reader_digest() -> str:
    """A digest of the package version and the reader's source: stored facts are reused only under the same code.

    Examples:
        >>> len(reader_digest())
        64
    """
    from subagent_catalog.version import __version__

    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parent.parent
    for name in reader_modules():
        path = package.joinpath(*name.split(".")).with_suffix(".py")
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"?")
    return digest.hexdigest()
