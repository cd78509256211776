"""What upstream's cold ``inspect()`` checks and changes after a log is read.

After the JSONL backend hands over the header and the event prefix, the
persistence coordinator migrates legacy events, validates message shapes,
refuses unknown event types, appends synthetic closers for a turn left open
and validates the header and every event again while building a session.
Any failure makes upstream's listing report the child ``unavailable``.
:func:`validate_cold_read` reproduces that path and names the failing rule.
"""

from __future__ import annotations

from typing import Any

from subagent_catalog.jsvalue import MAX_SAFE_INTEGER, is_number, is_safe_integer, js_number, js_strict_equal
from subagent_catalog.paths import MISSING

KNOWN_EVENT_TYPES = frozenset(
    {
        "agent-preset/selected",
        "agent/inbox/spliced",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "assistant/chunk",
        "assistant/message",
        "command/done",
        "command/run",
        "compaction/end",
        "compaction/prune",
        "compaction/start",
        "compaction/summary",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "llm/retry",
        "llm/retry-started",
        "permission/preset",
        "plan/mode",
        "request/context",
        "request/header",
        "sandbox/mode",
        "schedule/change",
        "session/end-seed",
        "session/title",
        "session/title-llm-request",
        "step/end",
        "step/start",
        "subagent/descriptor",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "todo/write",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "tool/call",
        "tool/code-dispatch",
        "tool/code-dispatch-start",
        "tool/result",
        "turn/end",
        "turn/start",
        "user/message",
        "web/deepseek-search-llm-request",
    }
)
SURFACE_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})
ENVELOPE_KEYS = frozenset({"type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable"})
TEXT_STARTED = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the "
    "operation is read-only or idempotent; if it may have side effects, first verify external "
    "state or ask the user. Do not retry blindly."
)
TEXT_NOT_STARTED = (
    "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."
)


_MIGRATING = frozenset({"turn/start", "turn/end", "steering/message", *SURFACE_TYPES})
_ENVELOPE_SPECIAL = frozenset({"request/header", "request/header-delta", *SURFACE_TYPES})


class InspectFailure(Exception):
    """A cold read upstream rejects.

    Attributes:
        cause: a stable short cause code (``unknown-event-type``,
            ``envelope``, ``message-shape``, ``header``, ...).
        seq: the event seq the rule failed on, when there is one.
    """

    def __init__(self, cause: str, message: str, seq: int | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        self.seq = seq


def prop(value: Any, key: str) -> Any:
    """JavaScript ``value[key]`` for a JSON value (``MISSING`` is undefined).

    Raises:
        InspectFailure: reading a property of ``null`` or ``undefined``.

    Examples:
        >>> prop({"a": 1}, "a"), prop([1], "a")
        (1, MISSING)
    """
    if value is None or value is MISSING:
        raise InspectFailure("type-error", f"cannot read property {key!r} of null or undefined")
    if isinstance(value, dict):
        return value.get(key, MISSING)
    return MISSING


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _only_keys(record: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...] = ()) -> bool:
    allowed = set(required) | set(optional)
    return all(k in allowed for k in record) and all(k in record for k in required)


def _int_at_least(value: Any, low: int) -> bool:
    return is_safe_integer(value) and value >= low


def _is_object(value: Any) -> bool:
    return isinstance(value, (dict, list))


# --- legacy rejections and migrations -------------------------------------------------


def _assert_supported(events: list[dict[str, Any]]) -> None:
    present = {kind for event in events if type(kind := event.get("type")) is str}
    if present.isdisjoint(("request/header-delta", "mode/set", "request/header")):
        return
    for legacy in ("request/header-delta", "mode/set"):
        for event in events:
            if event.get("type") == legacy:
                raise InspectFailure(
                    "legacy-event", f"unsupported legacy {legacy} event at seq {event['seq']}", event["seq"]
                )
    for event in events:
        if event.get("type") == "request/header":
            reason = prop(event.get("data", MISSING), "reason")
            if reason == "fallback" and isinstance(reason, str):
                raise InspectFailure(
                    "legacy-event",
                    f'unsupported legacy request/header reason "fallback" at seq {event["seq"]}',
                    event["seq"],
                )


def _migrate_turn_start(event: dict[str, Any]) -> dict[str, Any]:
    data = event.get("data", MISSING)
    if event.get("type") != "turn/start" or not isinstance(data, dict) or "trigger" not in data:
        return event
    trigger = data["trigger"]
    if not (
        _int_at_least(data.get("turn"), 1)
        and _only_keys(data, ("turn", "trigger"))
        and isinstance(trigger, dict)
        and _nonempty_str(trigger.get("kind"))
    ):
        raise InspectFailure("turn-shape", f"malformed pre-react-loop turn/start at seq {event['seq']}", event["seq"])
    return {**event, "data": {"turn": data["turn"]}}


def _failure_ok(reason: dict[str, Any]) -> bool:
    failure = reason.get("failure", MISSING)
    if not (isinstance(failure, dict) and _only_keys(reason, ("kind", "step", "failure"))):
        return False
    if not _only_keys(failure, ("message", "code"), ("status", "providerRetryAfterMs", "requestId")):
        return False
    return (
        isinstance(failure["message"], str)
        and isinstance(failure["code"], str)
        and ("status" not in failure or is_number(failure["status"]))
        and ("providerRetryAfterMs" not in failure or is_number(failure["providerRetryAfterMs"]))
        and ("requestId" not in failure or isinstance(failure["requestId"], str))
    )


def _migrate_turn_end(event: dict[str, Any]) -> dict[str, Any]:
    data = event.get("data", MISSING)
    if event.get("type") != "turn/end" or not isinstance(data, dict):
        return event
    seq = event["seq"]
    bad = InspectFailure("turn-shape", f"malformed pre-react-loop turn/end at seq {seq}", seq)
    reason = data.get("reason", MISSING)
    if not (
        _int_at_least(data.get("turn"), 1)
        and _only_keys(data, ("turn", "reason"))
        and isinstance(reason, dict)
        and isinstance(reason.get("kind"), str)
    ):
        raise bad
    kind = reason["kind"]
    new_reason: dict[str, Any] | None = None
    if kind in ("completed", "blocked", "max-tokens", "interrupted"):
        if not _only_keys(reason, ("kind",)):
            raise bad
    elif kind == "aborted":
        if "reason" not in reason:
            if not _only_keys(reason, ("kind",)):
                raise bad
            new_reason = {"kind": "aborted", "reason": {"kind": "legacy"}}
    elif kind == "disposed":
        if not _only_keys(reason, ("kind",)):
            raise bad
        new_reason = {"kind": "aborted", "reason": {"kind": "disposed"}}
    elif kind == "error":
        if "error" in reason:
            return event
        if not _int_at_least(reason.get("step"), 0):
            raise bad
        if _failure_ok(reason):
            new_reason = {"kind": "error", "error": reason["failure"]}
        else:
            code = reason.get("code", MISSING)
            keys = ("kind", "step", "message") if code is MISSING else ("kind", "step", "message", "code")
            if not (
                _only_keys(reason, keys)
                and isinstance(reason.get("message"), str)
                and (code is MISSING or isinstance(code, str))
            ):
                raise bad
            new_reason = {
                "kind": "error",
                "error": {"message": reason["message"], "code": code if isinstance(code, str) else "UNKNOWN"},
            }
    if new_reason is None:
        return event
    return {**event, "data": {**data, "reason": new_reason}}


def _migrate_steering(event: dict[str, Any], session_id: str) -> dict[str, Any]:
    if event.get("type") != "steering/message":
        return event
    seq = event["seq"]
    data = event.get("data", MISSING)
    if not isinstance(data, dict):
        raise InspectFailure("message-shape", f"malformed legacy steering/message at seq {seq}", seq)
    if (
        isinstance(data.get("message"), dict)
        and is_safe_integer(data.get("turn"))
        and _only_keys(data, ("turn", "message"))
    ):
        return {**event, "type": "user/message", "data": data["message"]}
    if not is_safe_integer(data.get("turn")) or not _only_keys(data, ("turn", "content", "source")):
        raise InspectFailure("message-shape", f"malformed legacy steering/message at seq {seq}", seq)
    rest = {k: v for k, v in data.items() if k != "turn"}
    return {
        **event,
        "type": "user/message",
        "data": {**rest, "id": f"legacy-message:{session_id}:{seq}", "role": "user"},
    }


def _migrate_message(event: dict[str, Any], session_id: str, message_ids: dict[int, Any]) -> dict[str, Any]:
    kind = event.get("type")
    data = event.get("data", MISSING)
    if not isinstance(data, dict):
        return event
    seq = event["seq"]
    legacy_id = f"legacy-message:{session_id}:{seq}"
    if kind == "user/message":
        if not any(k in data for k in ("id", "role", "message")) and "content" in data and "source" in data:
            return {**event, "data": {**data, "id": legacy_id, "role": "user"}}
        return event
    if kind == "assistant/message":
        if "message" not in data and "content" in data and "provenance" in data:
            provenance = data["provenance"]
            source = {**provenance, "kind": "model"} if isinstance(provenance, dict) else {"kind": "model"}
            rest = {k: v for k, v in data.items() if k not in ("content", "provenance")}
            message = {"id": legacy_id, "role": "assistant", "content": data["content"], "source": source}
            return {**event, "data": {**rest, "message": message}}
        return event
    if kind == "tool/result" and "message" not in data and all(k in data for k in ("callId", "content", "isError")):
        message_id: Any = legacy_id
        op = event.get("surfaceOp", MISSING)
        if isinstance(op, dict) and op.get("op") == "replace" and is_number(op.get("start")):
            start = js_number(op["start"])
            message_id = message_ids.get(int(start), MISSING) if start.is_integer() else MISSING
        rest = {k: v for k, v in data.items() if k not in ("callId", "content", "isError")}
        message = {
            "id": message_id,
            "role": "user",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": data["callId"],
                    "content": data["content"],
                    "isError": data["isError"],
                }
            ],
            "source": {"kind": "tool", "callId": data["callId"]},
        }
        return {**event, "data": {**rest, "message": message}}
    return event


# --- shapes ----------------------------------------------------------------------------------


def _provider_model(value: Any) -> bool:
    return isinstance(value, dict) and _nonempty_str(value.get("provider")) and _nonempty_str(value.get("model"))


def assert_message_shape(event: dict[str, Any]) -> None:
    """Upstream's identified-message check for message events.

    Raises:
        InspectFailure: with cause ``message-shape``.

    Examples:
        >>> assert_message_shape({"type": "turn/end", "seq": 0})
    """
    kind = event.get("type")
    if not isinstance(kind, str) or kind not in SURFACE_TYPES:
        return
    seq = event.get("seq")

    def fail(why: str) -> InspectFailure:
        return InspectFailure("message-shape", f"{kind} at seq {seq} {why}", seq if isinstance(seq, int) else None)

    data = event.get("data", MISSING)
    record = data if _is_object(data) else None
    message = record if kind == "user/message" else (prop(record, "message") if record is not None else None)
    if not (isinstance(message, (dict, list)) and _nonempty_str(prop(message, "id"))):
        raise fail("lacks an identified message")
    expected_role = "assistant" if kind == "assistant/message" else "user"
    if prop(message, "role") != expected_role or not isinstance(prop(message, "role"), str):
        raise fail(f'message must have role "{expected_role}"')
    source = prop(message, "source")
    if not (_is_object(source) and _nonempty_str(prop(source, "kind"))):
        raise fail("message has invalid source")
    content = prop(message, "content")
    if not isinstance(content, list):
        raise fail("message has invalid content")
    if kind == "assistant/message":
        if prop(source, "kind") != "model" or not _provider_model(source):
            raise fail("message must have model source with provider/model")
        return
    if kind == "tool/result":
        if prop(source, "kind") != "tool" or not _nonempty_str(prop(source, "callId")):
            raise fail("message must have tool source")
        block = content[0] if content else MISSING
        if (
            len(content) != 1
            or not _is_object(block)
            or prop(block, "type") != "tool-result"
            or not isinstance(prop(block, "content"), list)
        ):
            raise fail("must contain one tool-result block")
        if not js_strict_equal(prop(block, "toolCallId"), prop(source, "callId")):
            raise fail("tool-result block must answer its source call")


def _message_id(event: dict[str, Any]) -> Any:
    data = event.get("data", MISSING)
    record = data if isinstance(data, dict) else None
    if event.get("type") == "user/message":
        message = record
    else:
        inner = record.get("message") if record is not None else None
        message = inner if isinstance(inner, dict) else None
    if message is not None and isinstance(message.get("id"), str):
        return message["id"]
    return None


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
    time = last["time"]
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
            "time": time,
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
        closers.append({"type": "step/end", "seq": seq, "time": time, "data": step_data})
        seq += 1
    end_data: dict[str, Any] = {}
    if open_turn is not MISSING:
        end_data["turn"] = open_turn
    end_data["reason"] = {"kind": "interrupted"}
    closers.append({"type": "turn/end", "seq": seq, "time": time, "data": end_data})
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
    from subagent_catalog.jsvalue import js_string

    return "undefined" if value is MISSING else js_string(value)


# --- session construction -------------------------------------------------------------------


def _assert_header(meta: dict[str, Any]) -> None:
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
        header = prop(data, "header") if _is_object(data) else MISSING
        header_record = header if isinstance(header, dict) else None
        config = header_record.get("config", MISSING) if header_record is not None else MISSING
        if not isinstance(config, dict) or not _provider_model(config):
            raise InspectFailure("request-header", f"request/header at index {index} lacks provider/model", index)
        effort = config.get("reasoningEffort", MISSING)
        if effort is not MISSING and not _nonempty_str(effort):
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

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.nodes: list[int] = []
        self.events = events

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
            original = self.events[shadowed[0]]
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
    _assert_supported(events)
    message_ids: dict[int, Any] = {}
    migrated: list[dict[str, Any]] = []
    for event in events:
        kind = event.get("type")
        if type(kind) is str and kind not in _MIGRATING:
            # No migration or message-shape rule applies to this type; only remember a message id.
            data = event.get("data")
            if type(data) is dict and "message" in data:
                message_id = _message_id(event)
                if message_id is not None:
                    message_ids[int(event["seq"])] = message_id
            migrated.append(event)
            continue
        out = _migrate_turn_start(event)
        out = _migrate_turn_end(out)
        out = _migrate_steering(out, session_id)
        out = _migrate_message(out, session_id, message_ids)
        assert_message_shape(out)
        message_id = _message_id(out)
        if message_id is not None:
            message_ids[int(out["seq"])] = message_id
        migrated.append(out)
    for event in migrated:
        kind = event.get("type")
        if not (isinstance(kind, str) and kind in KNOWN_EVENT_TYPES) and event.get("ignorable") is not True:
            raise InspectFailure(
                "unknown-event-type",
                f"event type {kind!r} at seq {event['seq']} is unknown to upstream and not ignorable",
                event["seq"],
            )
    closers = interrupted_turn_closers(migrated)
    for closer in closers:
        assert_message_shape(closer)
    balanced = migrated + closers
    _assert_header(meta)
    surface = _Surface(balanced)
    for index, event in enumerate(balanced):
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
    return balanced
