"""Golden logs for active time and context size (``tests/data/active-time``), written by the project's writer.

Each session is one situation where a wall-clock figure or a sum over calls misleads, with its
times chosen so every expected figure can be read off the events by hand (``tests/test_active_time.py``
states them). ``python -m tests.golden_time DIR`` writes the corpus (``DIR`` must not hold it yet); a
test writes it again and compares the bytes with the committed copy.

- ``parallel-tools``: one step calls three tools at once; their results land 199-498 ms later, so
  the calls' summed time (997 ms) is more than the run's wall time (570 ms).
- ``idle-tail``: a run fails with a context-length error 245 ms in (its last prompt 96 % of the
  stated window), and a ``session/title`` arrives 8 s later.
- ``open-turn``: a completed turn, 5 s idle, then a turn killed while its tool call ran (no result,
  no ``turn/end``).
- ``crash-resumed``: a turn that never ended (the process died), resumed a minute later by a turn that
  completed.
- ``window-switch``: a 100,000-token prompt on a 131,072-token window, then a switch to a model with a
  65,536-token window and a 20,000-token prompt.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from subagent_catalog.synth.writer import header, write_session

START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
CWD = "/work/app"


class _Log:
    """Events at chosen times (ms after ``START``), seq from 0, in the shapes upstream's runtime writes."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.events: list[dict[str, Any]] = []

    def add(self, at: int, kind: str, data: Any, **envelope: Any) -> None:
        self.events.append({"type": kind, "seq": len(self.events), "time": START + at, "data": data, **envelope})

    def user(self, at: int, text: str) -> None:
        source = {"kind": "user"}
        message = {"role": "user", "content": [{"type": "text", "text": text}], "source": source}
        self.add(at, "user/message", {**message, "id": f"u-{self.session_id}-{len(self.events)}"}, surfaceOp="append")

    def request(self, at: int, model: str, window: int) -> None:
        config = {"provider": "deepseek-official", "model": model}
        self.add(
            at,
            "request/header",
            {"header": {"config": config, "system": "You are a coding agent."}, "reason": "initial"},
        )
        self.add(at, "request/context", {"provider": "deepseek-official", "model": model, "contextWindow": window})

    def usage(self, at: int, turn: int, step: int, **counts: int) -> None:
        self.add(at, "assistant/chunk", {"turn": turn, "step": step, "chunk": {"type": "usage", "usage": counts}})

    def message(self, at: int, turn: int, step: int, model: str, blocks: list[dict[str, Any]], usage: Any) -> None:
        body = {
            "id": f"m-{self.session_id}-{len(self.events)}",
            "role": "assistant",
            "content": blocks,
            "source": {"kind": "model", "provider": "deepseek-official", "model": model},
        }
        self.add(
            at, "assistant/message", {"turn": turn, "step": step, "message": body, "usage": usage}, surfaceOp="append"
        )

    def call(self, at: int, turn: int, step: int, call_id: str, name: str) -> None:
        self.add(at, "tool/call", {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": "{}"})

    def result(self, at: int, turn: int, step: int, call_id: str, text: str) -> None:
        block = {"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}]}
        body = {
            "id": f"r-{self.session_id}-{len(self.events)}",
            "role": "user",
            "content": [block],
            "source": {"kind": "tool", "callId": call_id},
        }
        self.add(at, "tool/result", {"turn": turn, "step": step, "message": body}, surfaceOp="append")


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _calls(*ids: str) -> list[dict[str, Any]]:
    return [{"type": "tool-call", "id": call_id, "name": "shell", "arguments": "{}"} for call_id in ids]


FLASH, PRO = "deepseek-v4-flash", "deepseek-v4-pro"


def parallel_tools() -> list[dict[str, Any]]:
    log = _Log("parallel-tools")
    log.add(0, "turn/start", {"turn": 1})
    log.user(1, "run the three test suites")
    log.add(2, "step/start", {"turn": 1, "step": 1})
    log.request(3, FLASH, 131_072)
    usage = {"inputTokens": 1_000, "outputTokens": 30, "cacheReadTokens": 2_000}
    log.usage(20, 1, 1, **usage)
    log.message(21, 1, 1, FLASH, _calls("c1", "c2", "c3"), usage)
    for at, call_id in ((25, "c1"), (26, "c2"), (27, "c3")):
        log.call(at, 1, 1, call_id, "shell")
    for at, call_id in ((225, "c2"), (325, "c1"), (525, "c3")):
        log.result(at, 1, 1, call_id, f"{call_id} passed")
    log.add(526, "step/end", {"turn": 1, "step": 1})
    log.add(527, "step/start", {"turn": 1, "step": 2})
    usage = {"inputTokens": 100, "outputTokens": 10, "cacheReadTokens": 3_050}
    log.usage(540, 1, 2, **usage)
    log.message(560, 1, 2, FLASH, _text("All three suites pass."), usage)
    log.add(561, "step/end", {"turn": 1, "step": 2})
    log.add(570, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    return log.events


def idle_tail() -> list[dict[str, Any]]:
    log = _Log("idle-tail")
    log.add(0, "turn/start", {"turn": 1})
    log.user(1, "summarise the repository")
    log.add(2, "step/start", {"turn": 1, "step": 1})
    log.request(3, FLASH, 65_536)
    usage = {"inputTokens": 60_000, "outputTokens": 40, "cacheReadTokens": 2_000, "cacheWriteTokens": 1_000}
    log.usage(120, 1, 1, **usage)
    log.message(130, 1, 1, FLASH, _text("The repository holds"), usage)
    log.add(131, "step/end", {"turn": 1, "step": 1})
    error = {"message": "context length exceeded", "code": "CONTEXT_LENGTH"}
    log.add(245, "turn/end", {"turn": 1, "reason": {"kind": "error", "error": error}})
    title = {"title": "Summarise the repository", "messageSeqs": [1], "source": {"kind": "fallback"}}
    log.add(8_245, "session/title", title)
    return log.events


def open_turn() -> list[dict[str, Any]]:
    log = _Log("open-turn")
    log.add(0, "turn/start", {"turn": 1})
    log.user(1, "list the files")
    log.add(2, "step/start", {"turn": 1, "step": 1})
    log.request(3, FLASH, 131_072)
    usage = {"inputTokens": 500, "outputTokens": 5}
    log.message(50, 1, 1, FLASH, _text("Done."), usage)
    log.add(51, "step/end", {"turn": 1, "step": 1})
    log.add(100, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    log.add(5_100, "turn/start", {"turn": 2})
    log.user(5_101, "now run the slow build")
    log.add(5_102, "step/start", {"turn": 2, "step": 1})
    usage = {"inputTokens": 600, "outputTokens": 8}
    log.message(5_140, 2, 1, FLASH, _calls("build"), usage)
    log.call(5_150, 2, 1, "build", "shell")  # killed while the build ran: no result, no turn/end
    return log.events


def crash_resumed() -> list[dict[str, Any]]:
    log = _Log("crash-resumed")
    log.add(0, "turn/start", {"turn": 1})
    log.user(1, "refactor the parser")
    log.add(2, "step/start", {"turn": 1, "step": 1})
    log.request(3, FLASH, 131_072)
    log.usage(80, 1, 1, inputTokens=700, outputTokens=0)  # the process died here
    log.add(60_080, "turn/start", {"turn": 2})
    log.user(60_081, "continue")
    log.add(60_082, "step/start", {"turn": 2, "step": 1})
    usage = {"inputTokens": 800, "outputTokens": 12}
    log.message(60_150, 2, 1, FLASH, _text("Refactored."), usage)
    log.add(60_151, "step/end", {"turn": 2, "step": 1})
    log.add(60_180, "turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    return log.events


def window_switch() -> list[dict[str, Any]]:
    log = _Log("window-switch")
    log.add(0, "turn/start", {"turn": 1})
    log.user(1, "review the whole diff")
    log.add(2, "step/start", {"turn": 1, "step": 1})
    log.request(3, PRO, 131_072)
    usage = {"inputTokens": 90_000, "outputTokens": 100, "cacheReadTokens": 10_000}
    log.message(400, 1, 1, PRO, _text("The diff is large."), usage)
    log.add(401, "step/end", {"turn": 1, "step": 1})
    log.add(402, "step/start", {"turn": 1, "step": 2})
    log.request(403, FLASH, 65_536)
    usage = {"inputTokens": 20_000, "outputTokens": 50}
    log.message(600, 1, 2, FLASH, _text("Summary written."), usage)
    log.add(601, "step/end", {"turn": 1, "step": 2})
    log.add(610, "turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    return log.events


SESSIONS = {
    "parallel-tools": parallel_tools,
    "idle-tail": idle_tail,
    "open-turn": open_turn,
    "crash-resumed": crash_resumed,
    "window-switch": window_switch,
}


def write_golden(root: str | Path) -> list[str]:
    """Write the golden corpus under ``root`` (the writer refuses to overwrite a file); the paths written."""
    return [
        write_session(root, header(session_id, created_at=START, cwd=CWD), make(), "none")
        for session_id, make in SESSIONS.items()
    ]


if __name__ == "__main__":
    for path in write_golden(sys.argv[1]):
        print(path)
