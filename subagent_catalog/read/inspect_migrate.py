"""Upstream's cold `inspect()`, first half: legacy-event migrations, message shapes, known types.

``migrate_events`` applies the migrations upstream's persistence coordinator runs on
a read prefix and refuses unsupported or unknown event types; ``InspectFailure``
names the rule that failed. The second half (closers, header and envelope rules)
is ``subagent_catalog.read.inspect_rules``.
"""

from __future__ import annotations

from typing import Any

from subagent_catalog.read.jsvalue import is_number, is_safe_integer, js_number, js_strict_equal
from subagent_catalog.read.paths import MISSING

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


def nonempty_str(value: Any) -> bool:
    """A non-empty string.

    Examples:
        >>> nonempty_str("a"), nonempty_str(""), nonempty_str(1)
        (True, False, False)
    """
    return isinstance(value, str) and value != ""


def _only_keys(record: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...] = ()) -> bool:
    allowed = set(required) | set(optional)
    return all(k in allowed for k in record) and all(k in record for k in required)


def _int_at_least(value: Any, low: int) -> bool:
    return is_safe_integer(value) and value >= low


def is_object(value: Any) -> bool:
    """A JSON object or array (``typeof x === 'object'`` for parsed JSON, null excluded).

    Examples:
        >>> is_object({}), is_object([]), is_object(None)
        (True, True, False)
    """
    return isinstance(value, (dict, list))


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
        and nonempty_str(trigger.get("kind"))
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


def migrate_turn_end(event: dict[str, Any]) -> dict[str, Any]:
    """A ``turn/end`` as upstream migrates it (legacy reasons rewritten); other events unchanged.

    Raises:
        InspectFailure: with cause ``turn-shape`` for a malformed ``turn/end``.

    Examples:
        >>> event = {"type": "turn/end", "seq": 4, "data": {"turn": 1, "reason": {"kind": "disposed"}}}
        >>> migrate_turn_end(event)["data"]
        {'turn': 1, 'reason': {'kind': 'aborted', 'reason': {'kind': 'disposed'}}}
        >>> migrate_turn_end({"type": "turn/end", "seq": 4, "data": {"turn": 0, "reason": {"kind": "completed"}}})
        Traceback (most recent call last):
        ...
        subagent_catalog.read.inspect_migrate.InspectFailure: malformed pre-react-loop turn/end at seq 4
    """
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


def provider_model(value: Any) -> bool:
    """An object with non-empty ``provider`` and ``model`` strings.

    Examples:
        >>> provider_model({"provider": "p", "model": "m"}), provider_model({"provider": "p"})
        (True, False)
    """
    return isinstance(value, dict) and nonempty_str(value.get("provider")) and nonempty_str(value.get("model"))


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
    record = data if is_object(data) else None
    message = record if kind == "user/message" else (prop(record, "message") if record is not None else None)
    if not (isinstance(message, (dict, list)) and nonempty_str(prop(message, "id"))):
        raise fail("lacks an identified message")
    expected_role = "assistant" if kind == "assistant/message" else "user"
    if prop(message, "role") != expected_role or not isinstance(prop(message, "role"), str):
        raise fail(f'message must have role "{expected_role}"')
    source = prop(message, "source")
    if not (is_object(source) and nonempty_str(prop(source, "kind"))):
        raise fail("message has invalid source")
    content = prop(message, "content")
    if not isinstance(content, list):
        raise fail("message has invalid content")
    if kind == "assistant/message":
        if prop(source, "kind") != "model" or not provider_model(source):
            raise fail("message must have model source with provider/model")
        return
    if kind == "tool/result":
        if prop(source, "kind") != "tool" or not nonempty_str(prop(source, "callId")):
            raise fail("message must have tool source")
        block = content[0] if content else MISSING
        if (
            len(content) != 1
            or not is_object(block)
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


def migrate_events(events: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    """Upstream's legacy-event migrations and message-shape checks over a read prefix.

    Raises:
        InspectFailure: an unsupported or unknown event type, or a malformed message.

    Examples:
        >>> [e["type"] for e in migrate_events([{"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}], "c")]
        ['turn/start']
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
        out = migrate_turn_end(out)
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
    return migrated
