"""Logs with planted pathologies, and random corpora that record what they planted (``findings``' ground truth).

``PlantLog`` writes the events upstream writes for a turn, a model step, a tool call and its
result, a model retry and a subagent's settled notice, with explicit times. ``data/make_findings.py``
uses it for the fixed corpus ``data/findings``; ``write_planted_corpus`` writes a random corpus (from a
seed) of clean runs, planted pathologies and near misses, and returns what it planted, so a test can
check that ``findings`` reports every planted one and nothing else.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from subagent_catalog.synth.writer import assistant_data, descriptor, header, write_session

__all__ = ["CWD", "HOUR", "T0", "PlantLog", "planted_child", "write_planted_log"]

T0 = 1_790_000_000_000
"""The epoch milliseconds every planted time counts from."""
HOUR = 3_600_000
CWD = "/work/findings"


class PlantLog:
    """A log's events with explicit times (``at``: milliseconds after ``T0``) and the shapes upstream writes."""

    def __init__(self, session_id: str, *, at: int = 0) -> None:
        self.session_id = session_id
        self.events: list[dict[str, Any]] = []
        self.turn = 0
        self.at = at
        self.calls = 0

    def add(self, kind: str, data: Any, *, dt: int = 10, **envelope: Any) -> None:
        """Append one event ``dt`` ms after the last."""
        self.at += dt
        self.events.append({"type": kind, "seq": len(self.events), "time": T0 + self.at, "data": data, **envelope})

    def turn_start(self, text: str, *, source: dict[str, Any] | None = None) -> None:
        """Open a turn with a user message."""
        self.turn += 1
        self.add("turn/start", {"turn": self.turn})
        self.user(text, source=source)

    def user(self, text: str, *, source: dict[str, Any] | None = None) -> None:
        """An appended user message (``source``: a notice's, else the user's)."""
        message = {
            "content": [{"type": "text", "text": text}],
            "source": source or {"kind": "user"},
            "role": "user",
            "id": str(uuid.UUID(int=len(self.events) + 1)),
        }
        self.add("user/message", message, surfaceOp="append")

    def turn_end(self, kind: str = "completed", **reason: Any) -> None:
        """Close the current turn."""
        self.add("turn/end", {"turn": self.turn, "reason": {"kind": kind, **reason}})

    def answer(self, text: str, *, step: int = 1, usage: dict[str, int] | None = None) -> None:
        """A model step that answers with text (and reports ``usage``)."""
        self.add("step/start", {"turn": self.turn, "step": step})
        data = assistant_data(self.session_id, self.events, self.turn, step, [{"type": "text", "text": text}])
        if usage is not None:
            data["usage"] = usage
        self.add("assistant/message", data, surfaceOp="append")
        self.add("step/end", {"turn": self.turn, "step": step})

    def call(
        self,
        name: str,
        arguments: dict[str, Any],
        result: str | None,
        *,
        error: bool = False,
        step: int = 1,
        result_dt: int = 10,
    ) -> None:
        """A step with one tool call and (unless ``result`` is None) its appended result."""
        self.calls += 1
        call_id = f"call_{self.calls}"
        args = json.dumps(arguments)
        self.add("step/start", {"turn": self.turn, "step": step})
        content = [{"type": "tool-call", "id": call_id, "name": name, "arguments": args}]
        data = assistant_data(self.session_id, self.events, self.turn, step, content)
        self.add("assistant/message", data, surfaceOp="append")
        self.add("tool/call", {"turn": self.turn, "step": step, "callId": call_id, "name": name, "arguments": args})
        if result is not None:
            block: dict[str, Any] = {
                "type": "tool-result",
                "toolCallId": call_id,
                "content": [{"type": "text", "text": result}],
            }
            if error:
                block["isError"] = True
            self.add(
                "tool/result",
                dt=result_dt,
                data={
                    "turn": self.turn,
                    "step": step,
                    "message": {
                        "source": {"kind": "tool", "callId": call_id},
                        "content": [block],
                        "role": "user",
                        "id": str(uuid.UUID(int=10_000 + len(self.events))),
                    },
                },
                surfaceOp="append",
            )
        self.add("step/end", {"turn": self.turn, "step": step})

    def retry(self, *, step: int = 1, attempt: int = 1) -> None:
        """An ``llm/retry`` of the current turn's step."""
        self.add(
            "llm/retry",
            {
                "retryId": str(uuid.UUID(int=20_000 + len(self.events))),
                "turn": self.turn,
                "step": step,
                "provider": "deepseek",
                "mode": "normal",
                "retry": attempt,
                "maxRetries": 5,
                "delayMs": 10,
                "failure": {"message": "rate limit exceeded", "code": "RATE_LIMIT", "status": 429},
            },
        )

    def notice(self, child: str) -> None:
        """A turn opened by a child's subagent-settled notice."""
        text = f"Background subagent {child} finished and will do no further work unless you send it more."
        self.turn_start(
            text, source={"kind": "subagent-settled", "form": "notice", "summary": text, "senderSessionId": child}
        )


def write_planted_log(
    root: str, log: PlantLog, *, cwd: str = CWD, parent: str | None = None, at: int | None = None, **head: Any
) -> None:
    """Write a log at its canonical path (a subagent when it has a ``parent``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> root = tempfile.mkdtemp()
        >>> log = PlantLog("s1"); log.turn_start("hi"); log.call("grep", {"q": "x"}, "found"); log.turn_end()
        >>> write_planted_log(root, log)
        >>> read_corpus(root).sessions.select("session_id", "tool_calls", "outcome").row(0)
        ('s1', 1, 'completed')
    """
    created = T0 + (at if at is not None else 0)
    write_session(
        root,
        header(log.session_id, created_at=created, cwd=cwd, parent=parent, subagent=parent is not None, **head),
        log.events,
        "none",
    )


def planted_child(
    root: str,
    session_id: str,
    parent: str,
    prompt: str,
    *,
    at: int,
    open_for: int | None = None,
    work_ms: int = 0,
    cwd: str = CWD,
) -> int:
    """A child created at ``at`` that answers its prompt after ``work_ms`` (or, with ``open_for``, is still working).

    Returns:
        Its last event's time (milliseconds after ``T0``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> root = tempfile.mkdtemp()
        >>> planted_child(root, "c1", "p1", "do it", at=100, work_ms=50)
        211
        >>> read_corpus(root).sessions.select("session_id", "parent_session", "outcome").row(0)
        ('c1', 'p1', 'completed')
    """
    log = PlantLog(session_id, at=at)
    log.add("subagent/descriptor", descriptor("continuable", label=session_id), dt=1)
    log.turn_start(prompt)
    log.at += work_ms
    if open_for is None:
        log.answer("done")
        log.turn_end()
    else:
        log.answer("still working", step=1)
        log.add("step/start", {"turn": log.turn, "step": 2}, dt=open_for)
    write_planted_log(root, log, cwd=cwd, parent=parent, at=at, delegation_depth=1)
    return log.at
