"""The typed fast path (``read/typed_read.py``) against the full path: every way typed decoding could differ.

Each test builds a log, reads it by the full path (the reference) and by
the typed path, and requires equal facts (``tests.test_fastpath.compare``);
it also says whether the typed path must answer or leave the log to the
full path. JSON semantics first (duplicate keys, key order, integral
floats, ``-0``, big integers, NUL, surrogates, invalid UTF-8, NaN, deep
nesting, line structure), then one-field nudges of every field of a log
that holds every typed event type, then random event sequences
(hypothesis) for the folds (turns, closers, timing, spans, seeds).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subagent_catalog.read import typed_read
from subagent_catalog.read.logread import analyse_log_fast
from subagent_catalog.read.paths import Compression
from subagent_catalog.read.typed_events import decode_body
from subagent_catalog.synth.writer import dumps
from tests.helpers import header, raw_log
from tests.test_fastpath import compare

ENCODINGS: list[Compression] = ["none", "zstd"]
HEAD = header("S", created_at=5, cwd="/w")


def _tool_result(seq_of_call: int, call: str, text: Any = "out \u00e9\U0001f600", error: Any = False) -> dict[str, Any]:
    return {
        "turn": 1,
        "step": 1,
        "message": {
            "id": f"r-{call}",
            "role": "user",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call,
                    "content": [{"type": "text", "text": text}],
                    "isError": error,
                }
            ],
            "source": {"kind": "tool", "callId": call},
        },
    }


def _assistant(step: int, blocks: list[dict[str, Any]], usage: Any = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "turn": 1,
        "step": step,
        "message": {
            "id": f"m-{step}",
            "role": "assistant",
            "content": blocks,
            "source": {"kind": "model", "provider": "p", "model": "m"},
        },
    }
    if usage is not None:
        data["usage"] = usage
    return data


def template(*, open_turn: bool = False) -> list[dict[str, Any]]:
    """A healthy log holding every event type the typed path decodes (seqs filled in by ``_numbered``)."""
    events: list[dict[str, Any]] = [
        {"type": "turn/start", "data": {"turn": 1}},
        {
            "type": "user/message",
            "data": {
                "id": "u1",
                "role": "user",
                "source": {"kind": "user"},
                "content": [{"type": "text", "text": "hi"}],
            },
            "surfaceOp": "append",
        },
        {
            "type": "request/header",
            "data": {
                "header": {
                    "config": {"provider": "p", "model": "m", "reasoningEffort": "high", "maxTokens": 100},
                    "adapterDefaults": {"reasoningEffort": True},
                },
                "reason": "initial",
            },
        },
        {
            "type": "subagent/descriptor",
            "data": {"version": 2, "mode": "continuable", "provider": "spawn", "label": "L"},
        },
        {"type": "step/start", "data": {"turn": 1, "step": 1}},
        {
            "type": "reasoning-chunks",
            "data": {"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "b", "c"]},
        },
        {"type": "assistant/chunk", "data": {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0}}},
        {
            "type": "assistant/chunk",
            "data": {
                "turn": 1,
                "step": 1,
                "chunk": {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 2, "cacheReadTokens": 1}},
            },
        },
        {
            "type": "assistant/message",
            "data": _assistant(
                1, [{"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}], {"inputTokens": 6}
            ),
            "surfaceOp": "append",
            "sourceEventSeqs": [],
        },
        {"type": "tool/call", "data": {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"}},
        {"type": "tool/result", "data": _tool_result(9, "c1"), "surfaceOp": "append", "sourceEventSeqs": [11]},
        {"type": "step/end", "data": {"turn": 1, "step": 1}},
        {
            "type": "tool-call-chunks",
            "data": {"turn": 1, "step": 2, "index": 1, "id": "t1", "name": "grep", "dt": [0], "args": ['{"a"', ":1}"]},
        },
        {"type": "text-chunks", "data": {"turn": 1, "step": 2, "index": 0, "dt": [], "texts": ["x"]}},
        {"type": "approval/policy", "data": {"policy": "ask", "source": "user"}},
        {"type": "x-future/telemetry", "data": {"v": 1}, "ignorable": True},
        {
            "type": "turn/end",
            "data": {"turn": 1, "reason": {"kind": "error", "error": {"message": "boom", "code": "E"}}},
        },
        {"type": "turn/start", "data": {"turn": 2}},
        {"type": "step/start", "data": {"turn": 2, "step": 1}},
        {
            "type": "assistant/message",
            "data": _assistant(1, [{"type": "tool-call", "id": "c2"}, {"type": "tool-call", "id": "c3"}]),
            "surfaceOp": "append",
        },
        {"type": "tool/call", "data": {"turn": 2, "step": 1, "callId": "c2", "name": "write"}},
    ]
    if not open_turn:
        events.append(
            {"type": "turn/end", "data": {"turn": 2, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}}
        )
    return _numbered(events)


def _numbered(events: list[dict[str, Any]], start: int = 0, time: int = 100) -> list[dict[str, Any]]:
    """Give each event the next seq and a later time (a row its ``seq0``/``time0`` and its members' seqs)."""
    seq = start
    out = []
    for event in events:
        if event["type"].endswith("-chunks"):
            members = event["data"]["texts" if "texts" in event["data"] else "args"]
            numbered = {"type": event["type"], "seq0": seq, "time0": time, "data": event["data"]}
            seq += len(members)
        else:
            numbered = {
                "type": event["type"],
                "seq": seq,
                "time": time,
                **{k: v for k, v in event.items() if k != "type"},
            }
            seq += 1
        out.append(numbered)
        time += 7
    return out


def _log(events: list[Any], compression: Compression, *, head: dict[str, Any] = HEAD) -> bytes:
    lines = [e if isinstance(e, bytes) else dumps(e) + b"\n" for e in events]
    return raw_log(head, lines, compression)


@pytest.mark.parametrize("compression", ENCODINGS)
@pytest.mark.parametrize("open_turn", [False, True])
def test_the_template_takes_the_typed_path_with_the_same_facts(compression: Compression, open_turn: bool) -> None:
    data = _log(template(open_turn=open_turn), compression)
    assert compare(data, compression, events=True)
    facts = analyse_log_fast(data, compression, path="typed")
    assert facts is not None and facts.run is not None
    assert facts.closers == (4 if open_turn else 0)  # two tool results (one started), the step and the turn
    assert facts.run.tools == ["read", "write"] and facts.run.usage_steps == 1 and facts.run.turns == 2
    assert len(facts.descriptors) == 1 and facts.identity_label == "L"


# --- JSON semantics: what the full path's parser (orjson, then json) does, the typed path does or leaves ----------


def _line(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass") + b"\n"


BASE = template()


def _with_line(index: int, raw: bytes) -> list[Any]:
    events: list[Any] = list(BASE)
    events[index] = raw
    return events


def _text(event: dict[str, Any]) -> str:
    return orjson.dumps(event).decode()


def _case(index: int, transform: Any) -> list[Any]:
    return _with_line(index, _line(transform(_text(BASE[index]))))


TURN_START, USAGE, TOOL_CALL, TOOL_RESULT, POLICY, TURN_END = 0, 7, 9, 10, 14, 16
assert [BASE[i]["type"] for i in (TURN_START, TOOL_CALL, TOOL_RESULT, POLICY, TURN_END)] == [
    "turn/start",
    "tool/call",
    "tool/result",
    "approval/policy",
    "turn/end",
]
SEQ = f'"seq":{BASE[TOOL_CALL]["seq"]}'  # the tool call's
TIME = f'"time":{BASE[TOOL_CALL]["time"]}'
CALL, RESULT = orjson.dumps(BASE[TOOL_CALL]), orjson.dumps(BASE[TOOL_RESULT])

CASES: dict[str, tuple[list[Any], bool]] = {
    # Duplicate keys: JSON.parse, orjson and msgspec all keep the last value; a second, different
    # "type" makes the tagged union refuse the line.
    "duplicate seq, last wins": (_case(TOOL_CALL, lambda t: t.replace(SEQ, '"seq":3,' + SEQ)), True),
    "duplicate seq, last is wrong": (_case(TOOL_CALL, lambda t: t.replace(SEQ, SEQ + ',"seq":3')), False),
    "duplicate type, other value": (_case(TOOL_CALL, lambda t: t[:-1] + ',"type":"tool/result"}'), False),
    "duplicate type, same value": (_case(TOOL_CALL, lambda t: t[:-1] + ',"type":"tool/call"}'), True),
    "duplicate data key, first of another type": (
        _case(TOOL_CALL, lambda t: t.replace('"name":"read"', '"name":1,"name":"read"')),
        False,
    ),
    "duplicate data key": (_case(TOOL_CALL, lambda t: t.replace('"name":"read"', '"name":"x","name":"read"')), True),
    "duplicate reason kind": (
        _case(TURN_END, lambda t: t.replace('"kind":"error"', '"kind":"completed","kind":"error"')),
        True,
    ),
    # Key order: the envelope's keys in any order.
    "type last": (
        _case(TOOL_CALL, lambda t: "{" + t[1:-1].replace('"type":"tool/call",', "") + ',"type":"tool/call"}'),
        True,
    ),
    # Integral floats: upstream accepts 9.0 as seq 9, the types do not (the full path reads it).
    "seq as float": (_case(TOOL_CALL, lambda t: t.replace(SEQ, SEQ + ".0")), False),
    "time as float": (_case(TOOL_CALL, lambda t: t.replace(TIME, TIME + ".0")), False),
    "time with exponent": (_case(TOOL_CALL, lambda t: t.replace(TIME, TIME + "e0")), False),
    "turn as float": (_case(TURN_END, lambda t: t.replace('"turn":1', '"turn":1.0')), False),
    "usage as float": (_case(USAGE, lambda t: t.replace('"inputTokens":5', '"inputTokens":5.0')), False),
    "gap as float": (_case(5, lambda t: t.replace('"dt":[1,2]', '"dt":[1.0,2]')), False),
    # -0: an integer 0 to orjson and to msgspec (json.loads, reached only on a line orjson refuses, gives -0.0).
    "negative zero time": (
        _with_line(0, _line('{"type":"turn/start","seq":0,"time":-0,"data":{"turn":1}}')),
        True,
    ),
    "negative zero with a huge number elsewhere": (
        _with_line(0, _line('{"type":"turn/start","seq":-0,"time":-0,"data":{"turn":1}}')),
        True,
    ),
    "huge number in an unread payload, -0 time": (
        _case(TOOL_CALL, lambda t: t.replace(TIME, '"time":-0').replace('"arguments":"{}"', '"arguments":1e999')),
        True,
    ),
    # Big integers: beyond the safe range the types refuse them; in an unread payload they do not matter.
    "seq beyond safe": (_case(TOOL_CALL, lambda t: t.replace(SEQ, f'"seq":{2**53}')), False),
    "time beyond 64 bits": (_case(TOOL_CALL, lambda t: t.replace(TIME, f'"time":{2**64 + 1}')), False),
    "big integer in a payload": (
        _case(TOOL_CALL, lambda t: t.replace('"arguments":"{}"', f'"arguments":{2**70}')),
        True,
    ),
    "big usage count": (_case(USAGE, lambda t: t.replace('"inputTokens":5', f'"inputTokens":{2**60}')), False),
    # NUL and escapes.
    "NUL in a tool name": (_case(TOOL_CALL, lambda t: t.replace('"name":"read"', '"name":"re\\u0000ad"')), True),
    "escaped surrogate pair": (_case(TOOL_RESULT, lambda t: t.replace("out", "\\ud83d\\ude00")), True),
    "lone surrogate in a read string": (
        _case(TOOL_CALL, lambda t: t.replace('"name":"read"', '"name":"\\ud800"')),
        False,
    ),
    "lone surrogate in a payload": (
        _case(TOOL_CALL, lambda t: t.replace('"arguments":"{}"', '"arguments":"\\udc00"')),
        False,
    ),
    "lone surrogate in result text": (_case(TOOL_RESULT, lambda t: t.replace("out", "\\ud800")), False),
    # NaN and Infinity are not JSON (upstream's JSON.parse throws).
    "NaN in a payload": (_case(TOOL_CALL, lambda t: t.replace('"arguments":"{}"', '"arguments":NaN')), False),
    "Infinity in a payload": (
        _case(TOOL_CALL, lambda t: t.replace('"arguments":"{}"', '"arguments":-Infinity')),
        False,
    ),
    # Line structure: one JSON object per line, nothing else.
    "blank line": ([*BASE[:3], b"\n", *BASE[3:]], False),
    "whitespace line": ([*BASE[:3], b" \n", *BASE[3:]], False),
    "carriage return": (_with_line(TOOL_CALL, orjson.dumps(BASE[TOOL_CALL]) + b"\r\n"), False),
    "two records on a line": ([*BASE[:TOOL_CALL], CALL + b" " + RESULT + b"\n", *BASE[TOOL_RESULT + 1 :]], False),
    "two records on a line and a blank line": (
        [*BASE[:TOOL_CALL], CALL + b" " + RESULT + b"\n", b"\n", *BASE[TOOL_RESULT + 1 :]],
        False,
    ),
    "a record across two lines and two on one": (
        [
            *BASE[:TOOL_CALL],
            CALL.replace(b'"name":', b'"name":\n') + b"\n",
            RESULT + b" " + RESULT + b"\n",
            *BASE[TOOL_RESULT + 1 :],
        ],
        False,
    ),
    "a record across two lines": (_case(TOOL_CALL, lambda t: t.replace('"name":', '"name":\n')), False),
    "byte order mark": (_with_line(0, b"\xef\xbb\xbf" + orjson.dumps(BASE[0]) + b"\n"), False),
    "leading space": (_with_line(0, b" " + orjson.dumps(BASE[0]) + b"\n"), False),
    "not an object": (_with_line(TOOL_CALL, b"[1]\n"), False),
    "null record": (_with_line(TOOL_CALL, b"null\n"), False),
}


def _raw_cases() -> Iterator[tuple[str, list[Any], bool]]:
    for name, (events, answers) in CASES.items():
        yield name, events, answers
    # Invalid UTF-8: the full path decodes a line with U+FFFD for each bad sequence; in a string
    # the typed path reads, msgspec refuses it; in an unread payload no fact depends on it.
    bad = {
        "invalid UTF-8 in a payload": (POLICY, b'"policy":"ask"', b'"policy":"\xff\xfe"', True),
        "invalid UTF-8 in a tool name": (TOOL_CALL, b'"name":"read"', b'"name":"r\xffd"', False),
        "invalid UTF-8 in tool arguments (their size is read)": (
            TOOL_CALL,
            b'"arguments":"{}"',
            b'"arguments":"\xff\xfe"',
            False,
        ),
        "overlong UTF-8 in result text": (TOOL_RESULT, b"out", b"o\xc0\x80t", False),
        "encoded surrogate in a payload": (POLICY, b'"ask"', b'"\xed\xa0\x80"', True),
        "encoded surrogate in tool arguments": (TOOL_CALL, b'"{}"', b'"\xed\xa0\x80"', False),
    }
    for name, (index, old, new, answers) in bad.items():
        yield name, _with_line(index, orjson.dumps(BASE[index]).replace(old, new) + b"\n"), answers


@pytest.mark.parametrize("compression", ENCODINGS)
@pytest.mark.parametrize(("name", "events", "answers"), list(_raw_cases()), ids=[c[0] for c in _raw_cases()])
def test_json_semantics_match_the_full_path(
    compression: Compression, name: str, events: list[Any], answers: bool
) -> None:
    data = _log(events, compression)
    assert compare(data, compression, events=True) is answers, name


def _deep(depth: int) -> list[Any]:
    return _case(TOOL_CALL, lambda t: t.replace('"arguments":"{}"', '"arguments":' + "[" * depth + "]" * depth))


@pytest.mark.parametrize("depth", [100, 900, 1000, 1023, 1024, 1200, 1500, 3000])
def test_deep_nesting_takes_the_typed_path_only_where_orjson_parses_it(depth: int) -> None:
    # msgspec stops at the interpreter's recursion budget, orjson at 1,023 levels; on CPython 3.11
    # the first is the smaller, so the typed path never takes a line orjson refuses.
    data = _log(_deep(depth), "none")
    answered = compare(data, "none")
    assert not answered or depth <= typed_read.ORJSON_MAX_DEPTH


def test_a_raised_recursion_limit_keeps_deep_lines_off_the_typed_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # With a raised limit (or on CPython 3.12+) msgspec could accept a line orjson refuses, and
    # json.loads (the full path's last resort) might refuse it by a frame or two: typed_read.suits
    # then counts brackets, and a log that could nest that deep goes to the packed path.
    deep = _log(_deep(1100), "none")
    assert typed_read.suits(deep) and typed_read.suits(orjson.dumps(BASE[0]) + b"\n")
    monkeypatch.setattr(sys, "getrecursionlimit", lambda: 10_000)
    assert not typed_read.suits(deep) and typed_read.suits(orjson.dumps(BASE[0]) + b"\n")
    monkeypatch.undo()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        assert analyse_log_fast(deep, "none") is None  # "auto": not typed; the packed path refuses the line
        compare(deep, "none", events=True)  # and whatever the typed path says, it says what the full path says
    finally:
        sys.setrecursionlimit(limit)


def test_decode_lines_alone_would_accept_what_the_line_rules_refuse() -> None:
    # Why decode_body checks the line structure itself: decode_lines skips blank lines and takes
    # two values on one line.
    from subagent_catalog.read.typed_events import _LINES

    line = orjson.dumps({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}})
    assert len(_LINES.decode_lines(line + b"\n\n" + line + b" " + line + b"\n")) == 3
    assert decode_body(line + b"\n\n" + line + b" " + line + b"\n") is None
    assert decode_body(line + b"\n" + line) is None  # a torn tail
    assert decode_body(line + b"\n") is not None


# --- one-field nudges of every field of the template --------------------------------------------------------------

ODD: list[Any] = [1.0, -1, 2**53, 2**64, "", None, True, [], {}, ...]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from _paths(child, (*prefix, key))
        yield (*prefix, "extra")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield (*prefix, index)
            yield from _paths(child, (*prefix, index))


def _set(events: list[dict[str, Any]], index: int, path: tuple[Any, ...], value: Any) -> list[dict[str, Any]]:
    copy: list[dict[str, Any]] = orjson.loads(orjson.dumps(events))
    target: Any = copy[index]
    for key in path[:-1]:
        target = target[key]
    if value is ...:
        if isinstance(target, dict):
            target.pop(path[-1], None)
        else:
            del target[path[-1]]
    elif isinstance(target, list) and path[-1] == len(target):
        target.append(value)
    else:
        target[path[-1]] = value
    return copy


def _nudges(events: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for index, event in enumerate(events):
        for path in _paths(event):
            for value in ODD:
                yield _set(events, index, path, value)


@pytest.mark.parametrize(
    ("variant", "compression"), [("closed", "none"), ("closed", "zstd"), ("open", "none"), ("seeded", "zstd")]
)
def test_every_field_nudged_has_the_same_facts(variant: str, compression: Compression) -> None:
    events = template(open_turn=variant != "closed")
    head = {**HEAD, "seedLength": 9} if variant == "seeded" else HEAD
    answered = total = 0
    for number, nudged in enumerate(_nudges(events)):
        total += 1
        answered += compare(_log(nudged, compression, head=head), compression, events=number % 16 == 0)
    assert total > 2500 and 0.05 * total < answered < total  # many odd values are left to the full path


# --- random event sequences -----------------------------------------------------------------------------------------

_SIMPLE = [
    lambda turn, call: {"type": "turn/start", "data": {"turn": turn}},
    lambda turn, call: {"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}},
    lambda turn, call: {"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "disposed"}}},
    lambda turn, call: {"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "aborted"}}},
    lambda turn, call: {"type": "step/start", "data": {"turn": turn, "step": 1}},
    lambda turn, call: {"type": "step/end", "data": {"turn": turn, "step": 1}},
    lambda turn, call: {"type": "tool/call", "data": {"turn": turn, "callId": call, "name": f"t{call}"}},
    lambda turn, call: {
        "type": "tool/result",
        "data": _tool_result(0, call, error=turn % 2 == 0),
        "surfaceOp": "append",
    },
    lambda turn, call: {
        "type": "assistant/message",
        "data": _assistant(turn, [{"type": "tool-call", "id": call}], {"outputTokens": turn}),
        "surfaceOp": "append",
    },
    lambda turn, call: {
        "type": "assistant/chunk",
        "data": {"turn": turn, "step": 1, "chunk": {"type": "usage", "usage": {"inputTokens": turn}}},
    },
    lambda turn, call: {"type": "subagent/descriptor", "data": {"version": 2, "mode": "one-shot", "provider": "p"}},
    lambda turn, call: {"type": "subagent/descriptor", "data": {"version": 1, "mode": "one-shot"}},
    lambda turn, call: {
        "type": "text-chunks",
        "data": {"turn": turn, "step": 1, "index": 0, "dt": [turn], "texts": ["a", "b"]},
    },
    lambda turn, call: {"type": "session/title", "data": {"title": "t"}},
    lambda turn, call: {"type": "x-other/kind", "data": None, "ignorable": True},
]


@st.composite
def _sequences(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int, int]:
    kinds = draw(st.lists(st.integers(0, len(_SIMPLE) - 1), max_size=25))
    turns = draw(st.lists(st.integers(1, 3), min_size=len(kinds), max_size=len(kinds)))
    calls = draw(st.lists(st.sampled_from(["c1", "c2"]), min_size=len(kinds), max_size=len(kinds)))
    start_time = draw(st.integers(-50, 50))
    seed = draw(st.integers(0, 8))
    events = _numbered([_SIMPLE[k](t, c) for k, t, c in zip(kinds, turns, calls, strict=True)], time=start_time)
    return events, seed, draw(st.integers(-9, 9))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_sequences(), st.sampled_from(ENCODINGS))
def test_random_event_sequences_have_the_same_facts(
    case: tuple[list[dict[str, Any]], int, int], compression: Compression
) -> None:
    events, seed, shift = case
    for event in events[::3]:  # some times out of order, some negative
        event["time" if "time" in event else "time0"] += shift * 10
    head = {**HEAD, "seedLength": seed} if seed else HEAD
    compare(_log(events, compression, head=head), compression)


@pytest.mark.parametrize("compression", ENCODINGS)
def test_steps_without_turns_time_their_first_token_on_both_paths(compression: Compression) -> None:
    """step/start, chunk and message without ``turn``: both paths match them (absent === absent) and time the token."""
    events = [
        {"type": "turn/start", "seq": 0, "time": 100, "data": {"turn": 1}},
        {"type": "step/start", "seq": 1, "time": 110, "data": {"step": 1}},
        {
            "type": "assistant/chunk",
            "seq": 2,
            "time": 115,
            "data": {"step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "a"}},
        },
        {
            "type": "assistant/message",
            "seq": 3,
            "time": 130,
            "data": {
                "step": 1,
                "message": {
                    "id": "m",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "a"}],
                    "source": {"kind": "model", "provider": "p", "model": "m"},
                },
            },
            "surfaceOp": "append",
        },
        {"type": "step/end", "seq": 4, "time": 131, "data": {"step": 1}},
    ]
    data = _log([orjson.dumps(event) + b"\n" for event in events], compression)
    assert compare(data, compression) is True  # the typed path reads it, with the full path's facts
    facts = analyse_log_fast(data, compression, path="typed")
    assert facts is not None and facts.run is not None
    assert (facts.run.llm_ms, facts.run.ttft_ms, facts.run.ttft_steps) == (20, 5, 1)


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=["Cs"])), ascii_only=st.booleans())
def test_argument_bytes_read_off_the_json_text_equal_the_decoded_strings(text: str, ascii_only: bool) -> None:
    """A tool call's argument size, read off its JSON text (escapes counted), is the decoded string's UTF-8 size."""
    import json

    from msgspec import Raw

    raw = Raw(json.dumps(text, ensure_ascii=ascii_only).encode())
    assert typed_read._argument_bytes(raw) == len(text.encode("utf-8"))
