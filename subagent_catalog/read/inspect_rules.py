"""What upstream's cold ``inspect()`` checks and changes after a log is read.

After the JSONL backend hands over the header and the event prefix, the
persistence coordinator migrates legacy events, validates message shapes,
refuses unknown event types, appends synthetic closers for a turn left open
and validates the header and every event again while building a session.
Any failure makes upstream's listing report the child ``unavailable``.
``validate_cold_read`` reproduces that path and names the failing rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from subagent_catalog.read.inspect_migrate import (
    SURFACE_TYPES,
    TEXT_NOT_STARTED,
    TEXT_STARTED,
    InspectFailure,
    assert_message_shape,
    is_object,
    migrate_events,
    nonempty_str,
    prop,
    provider_model,
)
from subagent_catalog.read.jsvalue import MAX_SAFE_INTEGER, is_number, is_safe_integer, js_number, js_strict_equal
from subagent_catalog.read.paths import MISSING

ENVELOPE_KEYS = frozenset({"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"})


_ENVELOPE_SPECIAL = frozenset({"request/header", "request/header-delta", *SURFACE_TYPES})


# --- closers --------------------------------------------------------------------------------


def interrupted_turn_closers(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Synthetic events upstream appends when a log ends inside an open turn.

    Raises:
        InspectFailure: where upstream's scan reads a property of ``null``.

    Examples:
        >>> [e["type"] for e in interrupted_turn_closers(
        ...     [{"type": "turn/start", "seq": 0, "time": 5, "data": {"turn": 1}}])]
        ['turn/end']
    """
    open_turn: Any = None
    open_step: Any = None
    pending: dict[Any, dict[str, Any]] = {}
    for event in events:
        kind = event.get("type")
        data = event.get("data", MISSING)
        if kind == "turn/start":
            open_turn = prop(data, "turn")
            open_step = None
            pending.clear()
        elif kind == "turn/end":
            open_turn = None
            open_step = None
            pending.clear()
        elif kind == "step/start":
            open_step = prop(data, "step")
        elif kind == "step/end":
            pending.clear()
            open_step = None
        elif kind == "assistant/message":
            content = prop(prop(data, "message"), "content")
            for block in content if isinstance(content, list) else []:
                if prop(block, "type") == "tool-call":
                    key = _map_key(prop(block, "id"))
                    pending[key] = {"id": prop(block, "id"), "step": prop(data, "step"), "callSeq": None}
        elif kind == "tool/call":
            key = _map_key(prop(data, "callId"))
            if key in pending:
                pending[key]["callSeq"] = event["seq"]
        elif kind == "tool/result":
            pending.pop(_map_key(prop(prop(prop(data, "message"), "source"), "callId")), None)
    if open_turn is None or not events:
        return []
    last = events[-1]
    seq = int(last["seq"]) + 1
    stamp = {"time": last["time"]} if "time" in last else {}  # JavaScript's undefined: the key is left out
    closers: list[dict[str, Any]] = []
    for entry in pending.values():
        call_id = entry["id"]
        started = entry["callSeq"] is not None
        data_out: dict[str, Any] = {}
        if open_turn is not MISSING:
            data_out["turn"] = open_turn
        if entry["step"] is not MISSING:
            data_out["step"] = entry["step"]
        text = TEXT_STARTED if started else TEXT_NOT_STARTED
        data_out["message"] = {
            "id": f"interrupted-tool-result-{_js_concat(call_id)}-{seq}",
            "role": "user",
            "source": {"kind": "tool", "callId": call_id},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "isError": True,
                    "content": [{"type": "text", "text": text}],
                }
            ],
        }
        data_out["error"] = (
            {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
            if started
            else {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
        )
        closer: dict[str, Any] = {
            "type": "tool/result",
            "seq": seq,
            **stamp,
            "data": data_out,
            "surfaceOp": "append",
        }
        if started:
            closer["sourceEventSeqs"] = [entry["callSeq"]]
        closers.append(closer)
        seq += 1
    if open_step is not None:
        step_data: dict[str, Any] = {}
        if open_turn is not MISSING:
            step_data["turn"] = open_turn
        if open_step is not MISSING:
            step_data["step"] = open_step
        closers.append({"type": "step/end", "seq": seq, **stamp, "data": step_data})
        seq += 1
    end_data: dict[str, Any] = {}
    if open_turn is not MISSING:
        end_data["turn"] = open_turn
    end_data["reason"] = {"kind": "interrupted"}
    closers.append({"type": "turn/end", "seq": seq, **stamp, "data": end_data})
    return closers


def _map_key(value: Any) -> Any:
    """A hashable key that keeps JavaScript ``Map`` identity (``1`` is not ``true``)."""
    if isinstance(value, (dict, list)):
        return ("object", id(value))
    return (
        type(value).__name__ if not is_number(value) else "number",
        value if not is_number(value) else js_number(value),
    )


def _js_concat(value: Any) -> str:
    from subagent_catalog.read.jsvalue import js_string

    return "undefined" if value is MISSING else js_string(value)


# --- session construction -------------------------------------------------------------------


def assert_header(meta: dict[str, Any]) -> None:
    """Upstream's header rules when a session is built from a read (version, createdAt, cwd, seedLength...).

    Raises:
        InspectFailure: with cause ``header``.

    Examples:
        >>> assert_header({"version": 0, "id": "a", "createdAt": 1, "delegationDepth": 0})
        >>> assert_header({"version": 0, "id": "a", "createdAt": 1, "cwd": "w"})
        Traceback (most recent call last):
        ...
        subagent_catalog.read.inspect_migrate.InspectFailure: session header cwd must be an absolute path
    """

    def fail(why: str) -> InspectFailure:
        return InspectFailure("header", f"session header {why}")

    version = meta.get("version")
    if not (is_number(version) and js_number(version) == 0):
        raise fail("has an unsupported version")
    created = meta.get("createdAt")
    if not (is_safe_integer(created) and created >= 0):
        raise fail("createdAt must be a non-negative safe integer")
    cwd = meta.get("cwd", MISSING)
    if cwd is not MISSING:
        if not isinstance(cwd, str):
            raise fail("cwd must be a string")
        if not cwd.startswith("/"):
            raise fail("cwd must be an absolute path")
    parent = meta.get("parentSession", MISSING)
    if parent is not MISSING and not isinstance(parent, str):
        raise fail("parentSession must be a string")
    seed_length = meta.get("seedLength", MISSING)
    if seed_length is not MISSING and not (is_safe_integer(seed_length) and seed_length >= 0):
        raise fail("seedLength must be a non-negative safe integer")
    origin = meta.get("origin", MISSING)
    if origin is not MISSING and origin != "subagent":
        raise fail('origin must be "subagent"')
    depth = meta.get("delegationDepth", MISSING)
    if depth is not MISSING and not (is_safe_integer(depth) and depth >= 0):
        raise fail("delegationDepth must be a non-negative safe integer")
    preset = meta.get("agentPreset", MISSING)
    if preset is not MISSING and not isinstance(preset, str):
        raise fail("agentPreset must be a string")


def _assert_envelope(event: dict[str, Any], index: int) -> None:
    seq = event.get("seq")

    def fail(why: str) -> InspectFailure:
        return InspectFailure("envelope", f"event at index {index} {why}", index)

    if event.get("type") == "request/header-delta":
        raise fail("uses unsupported legacy request/header-delta format")
    for key in event:
        if key not in ENVELOPE_KEYS:
            raise fail(f'has an invalid event envelope (unknown key "{key}")')
    time = event.get("time", MISSING)
    ignorable = event.get("ignorable", MISSING)
    if not isinstance(event.get("type"), str):
        raise fail("has an invalid event envelope (type)")
    if not (is_safe_integer(seq) and seq >= 0):
        raise fail("has an invalid event envelope (seq)")
    if not is_safe_integer(time):
        raise fail("has an invalid event envelope (time)")
    if "data" not in event:
        raise fail("has an invalid event envelope (missing data)")
    if ignorable is not MISSING and ignorable is not True:
        raise fail("has an invalid event envelope (ignorable)")
    kind = event["type"]
    if kind == "request/header":
        data = event["data"]
        header = prop(data, "header") if is_object(data) else MISSING
        header_record = header if isinstance(header, dict) else None
        config = header_record.get("config", MISSING) if header_record is not None else MISSING
        if not isinstance(config, dict) or not provider_model(config):
            raise InspectFailure("request-header", f"request/header at index {index} lacks provider/model", index)
        effort = config.get("reasoningEffort", MISSING)
        if effort is not MISSING and not nonempty_str(effort):
            raise InspectFailure(
                "request-header", f"request/header at index {index} has an invalid reasoningEffort", index
            )
        assert header_record is not None
        defaults = header_record.get("adapterDefaults", MISSING)
        if defaults is not MISSING and (
            not isinstance(defaults, dict)
            or (
                any(k not in ("reasoningEffort", "maxTokens") for k in defaults)
                or any(v is not True for v in defaults.values())
                or (defaults.get("reasoningEffort") is True and "reasoningEffort" not in config)
                or (defaults.get("maxTokens") is True and "maxTokens" not in config)
            )
        ):
            raise InspectFailure(
                "request-header", f"request/header at index {index} has invalid adapterDefaults", index
            )
    assert_message_shape(event)
    if kind == "request/header" and isinstance(event["data"], dict) and event["data"].get("reason") == "fallback":
        raise InspectFailure("legacy-event", f'request/header at index {index} has reason "fallback"', index)


def _is_event_seq(value: Any) -> bool:
    return is_safe_integer(value) and value >= 0


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return len(a) == len(b) and all(k in b and _json_equal(v, b[k]) for k, v in a.items())
    return js_strict_equal(a, b)


class _Surface:
    """The model-visible surface fold (upstream ``planSurfaceEvent``)."""

    def __init__(self, event_at: Callable[[int], dict[str, Any]]) -> None:
        self.nodes: list[int] = []
        self.event_at = event_at  # the balanced event of a seq (seq == index)

    def _provenance(self, event: dict[str, Any], shadowed: list[int]) -> None:
        seq = event["seq"]
        raw = event.get("sourceEventSeqs", MISSING)
        sources: set[int] = set()
        if raw is not MISSING:
            if not isinstance(raw, list):
                raise InspectFailure("surface", f"sourceEventSeqs on event at seq {seq} must be an array", seq)
            if not raw and event["type"] != "assistant/message":
                raise InspectFailure("surface", "sourceEventSeqs must not be empty except on assistant/message", seq)
            later = None
            for source in raw:
                if not _is_event_seq(source):
                    raise InspectFailure("surface", "sourceEventSeqs must contain non-negative safe integers", seq)
                sources.add(int(source))
                if later is None and source >= seq:
                    later = source
            if len(sources) != len(raw):
                raise InspectFailure("surface", "sourceEventSeqs must not contain duplicates", seq)
            if later is not None:
                raise InspectFailure("surface", f"sourceEventSeqs must reference earlier events: {later} >= {seq}", seq)
        missing = [s for s in shadowed if s not in sources]
        if missing:
            raise InspectFailure("surface", "surface replace: sourceEventSeqs must include every shadowed node", seq)

    def validate(self, event: dict[str, Any]) -> None:
        seq = int(event["seq"])
        kind = event["type"]
        op = event.get("surfaceOp", MISSING)
        if kind not in SURFACE_TYPES:
            if op is not MISSING:
                raise InspectFailure("surface", f'"{kind}" is not surface-eligible and cannot carry surfaceOp', seq)
            if "sourceEventSeqs" in event:
                raise InspectFailure("surface", f'"{kind}" cannot carry sourceEventSeqs', seq)
            return
        if op is MISSING:
            raise InspectFailure("surface", f'"{kind}" requires a surfaceOp marker', seq)
        if op == "append" and isinstance(op, str):
            self._provenance(event, [])
            self.nodes.append(seq)
            return
        if not isinstance(op, dict):
            raise InspectFailure("surface", f'"{kind}" carries an invalid surfaceOp', seq)
        if not (
            len(op) == 3
            and {"op", "start", "end"} <= op.keys()
            and op["op"] == "replace"
            and _is_event_seq(op["start"])
            and _is_event_seq(op["end"])
        ):
            raise InspectFailure("surface", f'"{kind}" carries an invalid replace surfaceOp', seq)
        start, end = int(op["start"]), int(op["end"])
        if start not in self.nodes or end not in self.nodes:
            raise InspectFailure("surface", "surface replace: range not found in surface", seq)
        start_idx, end_idx = self.nodes.index(start), self.nodes.index(end)
        if start_idx > end_idx:
            raise InspectFailure("surface", "surface replace: start is after end", seq)
        shadowed = self.nodes[start_idx : end_idx + 1]
        self._provenance(event, shadowed)
        if kind == "tool/result":
            if len(shadowed) != 1:
                raise InspectFailure("surface", "tool/result replacement must rewrite exactly one node", seq)
            original = self.event_at(shadowed[0])
            if original.get("type") != "tool/result":
                raise InspectFailure("surface", "tool/result replacement must target a tool/result", seq)
            if not _json_equal(_without_content(original), _without_content(event)):
                raise InspectFailure("surface", "tool/result replacement may change only content", seq)
        self.nodes[start_idx : end_idx + 1] = [seq]


def _without_content(event: dict[str, Any]) -> dict[str, Any]:
    data = dict(event["data"])
    message = data["message"]
    first = message["content"][0]
    data["message"] = {**message, "content": [{**first, "content": None}]}
    return data


def validate_cold_read(meta: dict[str, Any], events: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    """Apply upstream's cold-inspect path to a read prefix.

    Args:
        meta: the header as the JSONL reader returns it.
        events: the contiguous event prefix (seq == index).
        session_id: the id the listing asked for.

    Returns:
        The events upstream folds: migrated, plus closers for an open turn.

    Raises:
        InspectFailure: where upstream's inspect throws.

    Examples:
        >>> head = {"version": 0, "id": "c", "createdAt": 1, "delegationDepth": 0}
        >>> [e["type"] for e in validate_cold_read(head, [
        ...     {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}], "c")]
        ['turn/start', 'turn/end']
    """
    balanced = _balance(meta, events, session_id)
    check_events(enumerate(balanced), balanced.__getitem__)
    return balanced


def _balance(meta: dict[str, Any], events: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    migrated = migrate_events(events, session_id)
    closers = interrupted_turn_closers(migrated)
    for closer in closers:
        assert_message_shape(closer)
    balanced = migrated + closers
    assert_header(meta)
    return balanced


def check_events(indexed: Iterable[tuple[int, dict[str, Any]]], event_at: Callable[[int], dict[str, Any]]) -> None:
    """The envelope, contiguity and surface rules over ``(index, event)`` pairs of a balanced log.

    Raises:
        InspectFailure: where upstream's inspect throws.

    Examples:
        >>> check_events(enumerate([{"type": "turn/start", "seq": 0, "time": 1, "data": {}}]), lambda seq: {})
    """
    surface = _Surface(event_at)
    for index, event in indexed:
        seq, stamp, kind = event.get("seq"), event.get("time"), event.get("type")
        if (
            type(seq) is int
            and seq == index
            and type(stamp) is int
            and -MAX_SAFE_INTEGER <= stamp <= MAX_SAFE_INTEGER
            and type(kind) is str
            and kind not in _ENVELOPE_SPECIAL
            and "data" in event
            and event.get("ignorable", True) is True
            and "surfaceOp" not in event
            and "sourceEventSeqs" not in event
            and ENVELOPE_KEYS.issuperset(event)
        ):
            continue  # the common healthy case: every rule below passes for it
        _assert_envelope(event, index)
        if not js_strict_equal(event["seq"], index):
            raise InspectFailure("envelope", f"seed must be contiguous from 0 (index {index})", index)
        surface.validate(event)


def validate_packed_read(
    meta: dict[str, Any], events: list[dict[str, Any]], session_id: str, packed: type
) -> list[dict[str, Any]]:
    """``validate_cold_read`` over a prefix where one ``packed`` stand-in replaces each packed chunk row.

    A stand-in is an ``assistant/chunk`` event with the seq and time of the
    row's last member and no data; the members it stands for are healthy
    ``assistant/chunk`` events (the row was validated), which no rule but the
    closers' "last event" reads. Every other event's seq must equal its index
    in the expanded log. Returns the balanced events, stand-ins kept.

    Raises:
        InspectFailure: where upstream's inspect throws.

    Examples:
        >>> class Row(dict): ...
        >>> head = {"version": 0, "id": "c", "createdAt": 1, "delegationDepth": 0}
        >>> [(e["type"], e["seq"]) for e in validate_packed_read(head, [
        ...     {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
        ...     Row({"type": "assistant/chunk", "seq": 3, "time": 4})], "c", Row)]
        [('turn/start', 0), ('assistant/chunk', 3), ('turn/end', 4)]
    """
    balanced = _balance(meta, events, session_id)
    plain = [event for event in balanced if type(event) is not packed]
    by_seq: dict[int, dict[str, Any]] = {}

    def event_at(seq: int) -> dict[str, Any]:
        if not by_seq:
            by_seq.update((event["seq"], event) for event in plain)
        return by_seq[seq]

    check_events(((event["seq"], event) for event in plain), event_at)
    return balanced
