"""Build ``data/findings``: a small corpus in the real dsh on-disk format, one pathology per session.

Run ``python data/make_findings.py`` (it refuses to overwrite an existing ``data/findings``). Each
session plants one pathology a detector of ``subagent_catalog.analysis.findings`` must find, or a
near miss it must not find (the same tool with other arguments of the same size, failures spread
over turns, fewer retries, a smaller prompt); docs/findings.md walks through it, and the expectations
in ``tests/test_findings.py`` are written from this list, not from a run of the code. Deterministic:
the same bytes every run.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from typing import Any

from subagent_catalog.synth.writer import descriptor, header, write_session

T0 = 1_790_000_000_000
HOUR = 3_600_000
CWD = "/work/findings"
COSTS_CWD = "/work/costs"


class Log:
    """Events with explicit times: ``at`` is milliseconds after ``T0``."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.events: list[dict[str, Any]] = []
        self.turn = 0
        self.at = 0
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
        data: dict[str, Any] = {
            "turn": self.turn,
            "step": step,
            "message": {
                "id": f"m-{self.session_id}-{len(self.events)}",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
            },
        }
        if usage is not None:
            data["usage"] = usage
        self.add("assistant/message", data, surfaceOp="append")
        self.add("step/end", {"turn": self.turn, "step": step})

    def call(
        self, name: str, arguments: dict[str, Any], result: str | None, *, error: bool = False, step: int = 1
    ) -> None:
        """A step with one tool call and (unless ``result`` is None) its appended result."""
        self.calls += 1
        call_id = f"call_{self.calls}"
        args = json.dumps(arguments)
        self.add("step/start", {"turn": self.turn, "step": step})
        self.add(
            "assistant/message",
            {
                "turn": self.turn,
                "step": step,
                "message": {
                    "id": f"m-{self.session_id}-{len(self.events)}",
                    "role": "assistant",
                    "content": [{"type": "tool-call", "id": call_id, "name": name, "arguments": args}],
                    "source": {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"},
                },
            },
            surfaceOp="append",
        )
        self.add("tool/call", {"turn": self.turn, "step": step, "callId": call_id, "name": name, "arguments": args})
        if result is not None:
            block = {"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": result}]}
            if error:
                block["isError"] = True
            self.add(
                "tool/result",
                {
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


def write(
    root: str, log: Log, *, cwd: str = CWD, parent: str | None = None, at: int | None = None, **head: Any
) -> None:
    """Write a log at its canonical path (a subagent when it has a ``parent``)."""
    created = T0 + (at if at is not None else 0)
    write_session(
        root,
        header(log.session_id, created_at=created, cwd=cwd, parent=parent, subagent=parent is not None, **head),
        log.events,
        "none",
    )


def child(root: str, session_id: str, parent: str, prompt: str, *, at: int, open_for: int | None = None) -> None:
    """A child created at ``at`` that answers its prompt (or, with ``open_for``, is still working)."""
    log = Log(session_id)
    log.at = at
    log.add("subagent/descriptor", descriptor("continuable", label=session_id), dt=1)
    log.turn_start(prompt)
    if open_for is None:
        log.answer("done")
        log.turn_end()
    else:
        log.answer("still working", step=1)
        log.add("step/start", {"turn": log.turn, "step": 2}, dt=open_for)
    write(root, log, parent=parent, at=at, delegation_depth=1)


def main(root: str) -> None:
    """Write every planted session under ``root``."""
    # tool-loop: four identical read_file calls in a row; the near miss has the same sizes, other bytes.
    log = Log("loop-yes")
    log.turn_start("read the config")
    for _ in range(4):
        log.call("read_file", {"path": "a.py"}, "x = 1")
    log.answer("done")
    log.turn_end()
    write(root, log)
    log = Log("loop-no")
    log.turn_start("read the files")
    for name in ("a", "b", "c", "d"):
        log.call("read_file", {"path": f"{name}.py"}, "x = 1")
    log.answer("done")
    log.turn_end()
    write(root, log)

    # tool-error-storm: five failed results in one turn; the near miss spreads five over five turns.
    log = Log("storm-yes")
    log.turn_start("run the build")
    for n in range(5):
        log.call("shell", {"cmd": f"make {n}"}, "exit 2", error=True)
    log.answer("it fails")
    log.turn_end()
    write(root, log)
    log = Log("storm-no")
    for n in range(5):
        log.turn_start(f"try {n}")
        log.call("shell", {"cmd": f"make {n}"}, "exit 2", error=True)
        log.answer("failed")
        log.turn_end()
    write(root, log)

    # retry-storm: three model retries in one turn; the near miss has two, then one in the next turn.
    log = Log("retry-yes")
    log.turn_start("summarise")
    for attempt in (1, 2, 3):
        log.retry(attempt=attempt)
    log.answer("summary")
    log.turn_end()
    write(root, log)
    log = Log("retry-no")
    log.turn_start("summarise")
    log.retry(attempt=1)
    log.retry(attempt=2)
    log.answer("summary")
    log.turn_end()
    log.turn_start("again")
    log.retry(attempt=1)
    log.answer("summary")
    log.turn_end()
    write(root, log)

    # context-growth: a prompt at 94 % of a 128K window; the near miss peaks at 50 %; one turn
    # ends with a context-length error.
    for session_id, tokens in (("context-yes", 120_000), ("context-no", 64_000)):
        log = Log(session_id)
        log.add("request/context", {"provider": "deepseek", "model": "deepseek-chat", "contextWindow": 128_000})
        log.turn_start("long task")
        log.answer("step one", step=1, usage={"inputTokens": 1_000, "outputTokens": 10})
        log.answer("step two", step=2, usage={"inputTokens": tokens, "outputTokens": 10})
        log.turn_end()
        write(root, log)
    log = Log("context-error")
    log.turn_start("huge task")
    log.turn_end("error", error={"message": "context length exceeded", "code": "CONTEXT_LENGTH"})
    write(root, log)

    # fan-out: ten children started in one turn, each settled and its notice read.
    parent = Log("fanout-parent")
    parent.turn_start("split the work")
    kids = [f"fanout-child-{n}" for n in range(10)]
    for kid in kids:
        parent.call(
            "subagent",
            {"description": kid, "prompt": f"do part {kid}", "run_in_background": True},
            f"started subagent {kid}",
        )
    parent.answer("started them")
    parent.turn_end()
    for kid in kids:
        child(root, kid, "fanout-parent", f"do part {kid}", at=parent.at)
    parent.at += 100
    for kid in kids:
        parent.notice(kid)
        parent.answer("noted")
        parent.turn_end()
    write(root, parent)

    # duplicate-task: two foreground children given the same prompt (linked by start time).
    parent = Log("dup-parent")
    parent.turn_start("check twice")
    start = parent.at
    for n in range(2):
        parent.call(
            "subagent",
            {"description": "audit", "prompt": "audit the parser", "run_in_background": False},
            "parser is fine",
        )
        child(root, f"dup-child-{n}", "dup-parent", "audit the parser", at=start + 15 + 40 * n)
    parent.answer("both agree")
    parent.turn_end()
    write(root, parent)

    # unread-child: two continuable children, both completed; only the first one's notice arrived.
    parent = Log("unread-parent")
    parent.turn_start("two tasks")
    parent.call("subagent", {"description": "a", "prompt": "task a"}, "started subagent read-child")
    parent.call("subagent", {"description": "b", "prompt": "task b"}, "started subagent unread-child")
    parent.answer("waiting")
    parent.turn_end()
    child(root, "read-child", "unread-parent", "task a", at=parent.at)
    child(root, "unread-child", "unread-parent", "task b", at=parent.at)
    parent.at += 100
    parent.notice("read-child")
    parent.answer("got a")
    parent.turn_end()
    write(root, parent)

    # runaway-child: the root completes; its child works on for three hours (the corpus's last event).
    parent = Log("runaway-root")
    parent.turn_start("background job")
    parent.call("subagent", {"description": "long", "prompt": "long job"}, "started subagent runaway-child")
    parent.answer("started")
    parent.turn_end()
    write(root, parent)
    child(root, "runaway-child", "runaway-root", "long job", at=parent.at, open_for=3 * HOUR)

    # stalled: an open run whose last event is two hours before the corpus's last one.
    log = Log("stalled-yes")
    log.at = HOUR
    log.turn_start("never finishes")
    log.answer("working", step=1)
    write(root, log, at=HOUR)

    # cost-outlier: twenty runs of one project cost the same; a twenty-first costs forty times more.
    for n in range(21):
        log = Log(f"cost-{n:02d}")
        log.turn_start("priced task")
        tokens = 400_000 if n == 20 else 10_000
        log.answer("ok", usage={"inputTokens": tokens, "outputTokens": 100})
        log.turn_end()
        write(root, log, cwd=COSTS_CWD)


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "findings")
    if os.path.exists(target):
        sys.exit(f"{target} exists: remove it first to rebuild it")
    main(target)
