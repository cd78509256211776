"""Write session logs in the real on-disk format (for fixtures, samples, synthesis).

This is our own writer of upstream's format: a header line, then one JSON
record per line (packed chunk rows optional); zstd logs put the header alone
in the first frame and each write batch in its own checksummed frame. It
never touches an existing corpus: it refuses to overwrite a file.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from subagent_catalog.read.paths import MISSING, Compression, encode_segment, log_name, project_dir_name
from subagent_catalog.read.zstdframes import compress_frame


def dumps(value: Any) -> bytes:
    """``JSON.stringify`` bytes (compact, UTF-8, lone surrogates escaped).

    Examples:
        >>> dumps({"a": "é"})
        b'{"a":"\\xc3\\xa9"}'
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def header(
    session_id: str,
    *,
    created_at: int,
    cwd: str | None = None,
    parent: str | None = None,
    seed_length: int | None = None,
    subagent: bool = False,
    delegation_depth: int = 0,
    agent_preset: str | None = None,
) -> dict[str, Any]:
    """A header line object in upstream's key order.

    Examples:
        >>> list(header("c", created_at=5, parent="P", subagent=True))
        ['type', 'version', 'id', 'createdAt', 'parentSession', 'origin', 'delegationDepth']
    """
    out: dict[str, Any] = {"type": "session", "version": 0, "id": session_id, "createdAt": created_at}
    if cwd is not None:
        out["cwd"] = cwd
    if parent is not None:
        out["parentSession"] = parent
    if seed_length is not None:
        out["seedLength"] = seed_length
    if subagent:
        out["origin"] = "subagent"
    out["delegationDepth"] = delegation_depth
    if agent_preset is not None:
        out["agentPreset"] = agent_preset
    return out


def descriptor(mode: str, *, label: str | None = None, provider: str = "spawn", **extra: Any) -> dict[str, Any]:
    """A v2 descriptor payload.

    Examples:
        >>> descriptor("one-shot")
        {'version': 2, 'mode': 'one-shot', 'provider': 'spawn'}
    """
    out: dict[str, Any] = {"version": 2, "mode": mode, "provider": provider}
    if label is not None:
        out["label"] = label
    out.update(extra)
    return out


def assistant_data(
    session_id: str, events: Sequence[Any], turn: int, step: int, content: list[dict[str, Any]]
) -> dict[str, Any]:
    """An ``assistant/message`` event's data: a deepseek-chat message of ``content``, its id from the events so far.

    Examples:
        >>> assistant_data("s1", [{}, {}], 1, 2, [])["message"]["id"]
        'm-s1-2'
    """
    return {
        "turn": turn,
        "step": step,
        "message": {
            "id": f"m-{session_id}-{len(events)}",
            "role": "assistant",
            "content": content,
            "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
        },
    }


@dataclass
class EventLog:
    """Builds a contiguous event list (seq from 0) with realistic shapes."""

    session_id: str
    time: int = 1_700_000_000_000
    events: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 0

    def add(self, kind: str, data: Any, *, dt: int = 1, **envelope: Any) -> dict[str, Any]:
        """Append one event and return it."""
        self.time += dt
        event = {"type": kind, "seq": len(self.events), "time": self.time, "data": data, **envelope}
        self.events.append(event)
        return event

    def turn_start(self) -> None:
        """Open a turn."""
        self.turn += 1
        self.add("turn/start", {"turn": self.turn})

    def turn_end(self, kind: str = "completed") -> None:
        """Close the current turn."""
        self.add("turn/end", {"turn": self.turn, "reason": {"kind": kind}})

    def user(self, text: str) -> None:
        """A user message."""
        self.add(
            "user/message",
            {
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "user"},
                "role": "user",
                "id": str(uuid.UUID(int=len(self.events) + 1)),
            },
            surfaceOp="append",
        )

    def descriptor(self, payload: Any) -> None:
        """A ``subagent/descriptor`` event."""
        self.add("subagent/descriptor", payload)

    def assistant(self, text: str, *, chunks: int = 0, step: int = 1) -> None:
        """An assistant step: optional streamed chunks, then the message."""
        self.add("step/start", {"turn": self.turn, "step": step})
        for i in range(chunks):
            self.add(
                "assistant/chunk",
                {
                    "turn": self.turn,
                    "step": step,
                    "chunk": {"type": "text-delta", "index": 0, "text": f"{text[:8]}{i}"},
                },
            )
        content = [{"type": "text", "text": text}]
        data = assistant_data(self.session_id, self.events, self.turn, step, content)
        self.add("assistant/message", data, surfaceOp="append")
        self.add("step/end", {"turn": self.turn, "step": step})

    def tool_round(self, call_id: str, result_text: str, *, step: int = 1) -> None:
        """An assistant tool call, its start and its result."""
        self.add("step/start", {"turn": self.turn, "step": step})
        content = [{"type": "tool-call", "id": call_id, "name": "read_file", "arguments": "{}"}]
        data = assistant_data(self.session_id, self.events, self.turn, step, content)
        self.add("assistant/message", data, surfaceOp="append")
        self.add("tool/call", {"turn": self.turn, "step": step, "callId": call_id, "name": "read_file"})
        self.add(
            "tool/result",
            {
                "turn": self.turn,
                "step": step,
                "message": {
                    "id": f"r-{self.session_id}-{len(self.events)}",
                    "role": "user",
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": call_id,
                            "content": [{"type": "text", "text": result_text}],
                        }
                    ],
                    "source": {"kind": "tool", "callId": call_id},
                },
            },
            surfaceOp="append",
        )
        self.add("step/end", {"turn": self.turn, "step": step})


def pack_chunk_runs(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pack runs of 3+ consecutive text-delta chunks into ``text-chunks`` rows.

    Examples:
        >>> evs = [{"type": "assistant/chunk", "seq": i, "time": 10 + i,
        ...         "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": str(i)}}}
        ...        for i in range(3)]
        >>> [r["type"] for r in pack_chunk_runs(evs)]
        ['text-chunks']
    """
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []

    def packable(event: dict[str, Any]) -> bool:
        data = event.get("data")
        return (
            event.get("type") == "assistant/chunk"
            and set(event) == {"type", "seq", "time", "data"}
            and isinstance(data, dict)
            and set(data) == {"turn", "step", "chunk"}
            and isinstance(data["chunk"], dict)
            and set(data["chunk"]) == {"type", "index", "text"}
            and data["chunk"]["type"] == "text-delta"
        )

    def continues(prev: dict[str, Any], nxt: dict[str, Any]) -> bool:
        a, b = prev["data"], nxt["data"]
        return bool(
            nxt["seq"] == prev["seq"] + 1
            and a["turn"] == b["turn"]
            and a["step"] == b["step"]
            and a["chunk"]["index"] == b["chunk"]["index"]
        )

    def flush() -> None:
        if len(run) >= 3:
            first = run[0]
            out.append(
                {
                    "type": "text-chunks",
                    "seq0": first["seq"],
                    "time0": first["time"],
                    "data": {
                        "turn": first["data"]["turn"],
                        "step": first["data"]["step"],
                        "index": first["data"]["chunk"]["index"],
                        "dt": [run[i + 1]["time"] - run[i]["time"] for i in range(len(run) - 1)],
                        "texts": [e["data"]["chunk"]["text"] for e in run],
                    },
                }
            )
        else:
            out.extend(run)
        run.clear()

    for event in events:
        if run and not (packable(event) and continues(run[-1], event)):
            flush()
        (run if packable(event) else out).append(event)
    flush()
    return out


def encode_log(
    head: dict[str, Any],
    events: Sequence[dict[str, Any]],
    compression: Compression,
    *,
    batch: int = 16,
    pack: bool = True,
) -> bytes:
    """The bytes of a complete log.

    Examples:
        >>> encode_log(header("a", created_at=1), [], "none")
        b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
    """
    head_line = dumps(head) + b"\n"
    batches = [list(events[i : i + batch]) for i in range(0, len(events), batch)]
    bodies = []
    for chunk in batches:
        records = pack_chunk_runs(chunk) if pack else chunk
        bodies.append(b"".join(dumps(record) + b"\n" for record in records))
    if compression == "none":
        return head_line + b"".join(bodies)
    return compress_frame(head_line) + b"".join(compress_frame(body) for body in bodies)


def log_path(root: str | os.PathLike[str], head: dict[str, Any], compression: Compression) -> str:
    """Where upstream stores this header's log under ``root``.

    Examples:
        >>> log_path("/r", header("a b", created_at=1), "none")
        '/r/_no-cwd/a~0020b/session.jsonl'
    """
    return os.path.join(
        os.fspath(root), project_dir_name(head.get("cwd", MISSING)), encode_segment(head["id"]), log_name(compression)
    )


def write_file(path: str | os.PathLike[str], data: bytes) -> str:
    """Write bytes to a new file (refuses to overwrite), creating directories.

    Raises:
        FileExistsError: the file already exists.

    Examples:
        >>> import tempfile, os
        >>> p = write_file(os.path.join(tempfile.mkdtemp(), "x", "f"), b"1")
        >>> open(p, "rb").read()
        b'1'
    """
    target = os.fspath(path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "xb") as handle:
        handle.write(data)
    return target


def write_session(
    root: str | os.PathLike[str],
    head: dict[str, Any],
    events: Sequence[dict[str, Any]],
    compression: Compression,
    *,
    batch: int = 16,
    pack: bool = True,
    tail: bytes = b"",
) -> str:
    """Write one session log at its canonical path; ``tail`` appends raw bytes (damage).

    Examples:
        >>> import tempfile
        >>> write_session(tempfile.mkdtemp(), header("a", created_at=1), [], "none").endswith("a/session.jsonl")
        True
    """
    data = encode_log(head, events, compression, batch=batch, pack=pack) + tail
    return write_file(log_path(root, head, compression), data)


def simple_child_events(session_id: str, payload: Any, *, label_text: str = "work") -> list[dict[str, Any]]:
    """A small healthy child log: one turn holding a descriptor.

    Examples:
        >>> [e["type"] for e in simple_child_events("c", descriptor("one-shot"))]
        ['turn/start', 'user/message', 'subagent/descriptor', 'turn/end']
    """
    log = EventLog(session_id)
    log.turn_start()
    log.user(label_text)
    if payload is not MISSING:
        log.descriptor(payload)
    log.turn_end()
    return log.events
