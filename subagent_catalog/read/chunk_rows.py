"""Packed chunk rows: ``text-chunks``, ``reasoning-chunks``, ``tool-call-chunks``.

A run of ``assistant/chunk`` delta events may be stored as one row. Reading
validates the row exactly as upstream does and expands it back to the
events it stands for; a malformed row is an unparsable line.
"""

from __future__ import annotations

from typing import Any

from subagent_catalog.read.jsvalue import is_number, is_record, is_safe_integer

CHUNK_ROW_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
_ENVELOPE = ("type", "seq0", "time0", "data")
_TEXT_DATA = ("turn", "step", "index", "dt", "texts")
_TOOL_DATA = ("turn", "step", "index", "id", "dt", "args")
_TOOL_DATA_NAMED = ("turn", "step", "index", "id", "name", "dt", "args")


class MalformedChunkRow(ValueError):
    """A row-tagged line that fails upstream's row validation."""


def _exact_keys(value: Any, keys: tuple[str, ...]) -> bool:
    if isinstance(value, list):
        # An array's own keys are its indices (and never the row's keys).
        return len(keys) == 0 and len(value) == 0
    return isinstance(value, dict) and len(value) == len(keys) and all(k in value for k in keys)


def _malformed(tag: str, why: str) -> MalformedChunkRow:
    return MalformedChunkRow(f"malformed {tag} storage row: {why}")


def _run_payload(tag: str, data: dict[str, Any], key: str) -> list[str]:
    if not (is_number(data.get("turn")) and is_number(data.get("step")) and is_number(data.get("index"))):
        raise _malformed(tag, "turn/step/index must be numbers")
    payload = data.get(key)
    if not isinstance(payload, list) or not payload or not all(isinstance(e, str) for e in payload):
        raise _malformed(tag, f"{key} must be a non-empty string array")
    dt = data.get("dt")
    if not isinstance(dt, list) or not all(is_safe_integer(gap) for gap in dt):
        raise _malformed(tag, "dt must be an array of safe integers")
    if len(dt) != len(payload) - 1:
        raise _malformed(tag, f"dt length {len(dt)} does not match {len(payload)} members")
    return payload


def expand_chunk_row(value: dict[str, Any]) -> list[dict[str, Any]]:
    """Validate one row-tagged value and expand it to ``assistant/chunk`` events.

    Raises:
        MalformedChunkRow: when upstream would reject the row.

    Examples:
        >>> row = {"type": "text-chunks", "seq0": 4, "time0": 10,
        ...        "data": {"turn": 1, "step": 1, "index": 0, "dt": [2], "texts": ["a", "b"]}}
        >>> [(e["seq"], e["time"], e["data"]["chunk"]["text"]) for e in expand_chunk_row(row)]
        [(4, 10, 'a'), (5, 12, 'b')]
    """
    tag = value["type"]
    if not _exact_keys(value, _ENVELOPE):
        raise _malformed(tag, "envelope must be exactly {type, seq0, time0, data}")
    seq0 = value["seq0"]
    if not is_safe_integer(seq0) or seq0 < 0:
        raise _malformed(tag, "seq0 must be a non-negative safe integer")
    time0 = value["time0"]
    if not is_safe_integer(time0):
        raise _malformed(tag, "time0 must be a safe integer")
    data = value["data"]
    if not is_record(data):
        raise _malformed(tag, "data must be an object")
    if tag == "tool-call-chunks":
        named = _exact_keys(data, _TOOL_DATA_NAMED)
        if not named and not _exact_keys(data, _TOOL_DATA):
            raise _malformed(tag, "data must be exactly {turn, step, index, id, name?, dt, args}")
        if not isinstance(data["id"], str) or (named and not isinstance(data["name"], str)):
            raise _malformed(tag, "id (and name when present) must be strings")
        payload = _run_payload(tag, data, "args")
    else:
        if not _exact_keys(data, _TEXT_DATA):
            raise _malformed(tag, "data must be exactly {turn, step, index, dt, texts}")
        payload = _run_payload(tag, data, "texts")
    seq0 = int(seq0)
    if not is_safe_integer(seq0 + len(payload) - 1):
        raise _malformed(tag, "member seqs must stay safe integers")
    time = int(time0)
    times = [time]
    for gap in data["dt"]:
        time += int(gap)
        if not is_safe_integer(time):
            raise _malformed(tag, "member times must stay safe integers")
        times.append(time)
    events: list[dict[str, Any]] = []
    for k, member in enumerate(payload):
        chunk: dict[str, Any]
        if tag == "text-chunks":
            chunk = {"type": "text-delta", "index": data["index"], "text": member}
        elif tag == "reasoning-chunks":
            chunk = {"type": "reasoning-delta", "index": data["index"], "text": member}
        else:
            chunk = {"type": "tool-call-delta", "index": data["index"], "id": data["id"]}
            if "name" in data:
                chunk["name"] = data["name"]
            chunk["argumentsDelta"] = member
        events.append(
            {
                "type": "assistant/chunk",
                "seq": seq0 + k,
                "time": times[k],
                "data": {"turn": data["turn"], "step": data["step"], "chunk": chunk},
            }
        )
    return events


def row_members(value: Any) -> int:
    """How many events a parsed line would expand to, counted before expanding it (1 for a plain record).

    A row-tagged value whose payload (``texts`` or ``args``) is a list stands
    for one event per member; anything else for one (a malformed row fails
    its validation before it builds any event).

    Examples:
        >>> row_members({"type": "text-chunks", "data": {"texts": ["a", "b", "c"]}})
        3
        >>> row_members({"type": "turn/end", "seq": 3})
        1
    """
    if not (isinstance(value, dict) and isinstance(value.get("type"), str) and value["type"] in CHUNK_ROW_TYPES):
        return 1
    data = value.get("data")
    if not isinstance(data, dict):
        return 1
    payload = data.get("args" if value["type"] == "tool-call-chunks" else "texts")
    return len(payload) if isinstance(payload, list) else 1


def decode_storage_record(value: Any) -> list[Any]:
    """The session events one parsed log line stores.

    Examples:
        >>> decode_storage_record({"type": "turn/end", "seq": 3})
        [{'type': 'turn/end', 'seq': 3}]
    """
    if isinstance(value, dict) and isinstance(value.get("type"), str) and value["type"] in CHUNK_ROW_TYPES:
        return expand_chunk_row(value)
    return [value]
