"""Long runs for the waterfall tests, written in the real log format by ``synth.writer``.

Each turn: a user message, a streamed model step (3 chunks), a model step asking for ``calls``
tool calls at once (started together, answered one after another), every ``fail_every``-th call (none when 0)
failing; the last turn ends in an error when ``last_error``.
"""

from __future__ import annotations

from pathlib import Path

from subagent_catalog.synth.writer import EventLog, header, write_session

MODEL = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}


def long_run(
    root: Path, session_id: str, turns: int, *, calls: int = 2, fail_every: int = 7, last_error: bool = True
) -> EventLog:
    """Write a ``turns``-turn run under ``root`` and return its log (its ``events`` hold every time)."""
    log = EventLog(session_id)
    for t in range(turns):
        log.turn_start()
        log.user(f"turn {t}")
        log.assistant(f"plan {t}", chunks=3, step=1)
        log.add("step/start", {"turn": log.turn, "step": 2})
        ids = [f"c{t}-{i}" for i in range(calls)]
        blocks = [{"type": "tool-call", "id": ident, "name": "shell", "arguments": "{}"} for ident in ids]
        message = {"id": f"m{t}", "role": "assistant", "content": blocks, "source": MODEL}
        log.add("assistant/message", {"turn": log.turn, "step": 2, "message": message}, surfaceOp="append")
        for ident in ids:
            log.add("tool/call", {"turn": log.turn, "step": 2, "callId": ident, "name": "shell"})
        for i, ident in enumerate(ids):
            bad = fail_every > 0 and (t * calls + i) % fail_every == 0
            block = {
                "type": "tool-result",
                "toolCallId": ident,
                "isError": bad,
                "content": [{"type": "text", "text": "boom" if bad else "ok"}],
            }
            result = {
                "id": f"r-{ident}",
                "role": "user",
                "content": [block],
                "source": {"kind": "tool", "callId": ident},
            }
            log.add("tool/result", {"turn": log.turn, "step": 2, "message": result}, dt=5 + i * 7, surfaceOp="append")
        log.add("step/end", {"turn": log.turn, "step": 2})
        if last_error and t == turns - 1:
            reason = {"kind": "error", "error": {"message": "the last turn failed"}}
            log.add("turn/end", {"turn": log.turn, "reason": reason})
        else:
            log.turn_end()
    write_session(root, header(session_id, created_at=1_700_000_000_000), log.events, "none")
    return log
