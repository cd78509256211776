"""Corpora of simple runs with known rates: what a comparison of two corpora must find.

``write_runs`` writes ``runs`` root sessions, one turn each: a human prompt (``task <i>``, so two corpora
of the same size pair run for run by prompt), one model step that reports usage of a priced model
(``deepseek-official``/``deepseek-v4-flash``), ``tools`` tool calls of which each fails with probability
``tool_failure_rate`` (``data.error`` code ``EXIT_NONZERO``), then a ``turn/end`` that is an ``error``
(message ``provider overloaded``, code ``RATE_LIMITED``) with probability ``error_rate``, else
``completed``. Every draw comes from one generator seeded by ``seed``: a corpus is a pure function of
its arguments. ``token_scale`` and ``time_scale`` multiply the drawn tokens and the gaps between events
(cost and active time differences of a known ratio).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from subagent_catalog.read.paths import Compression
from subagent_catalog.synth.writer import EventLog, header, write_session

MODEL = ("deepseek-official", "deepseek-v4-flash")
"""The provider and model every step of ``write_runs`` reports."""


@dataclass(frozen=True)
class RunsWritten:
    """What ``write_runs`` wrote: the root, the runs, and how many ended in error and how many tool calls failed."""

    root: str
    runs: int
    errors: int
    tool_calls: int
    tool_failures: int


def write_runs(
    out: str | os.PathLike[str],
    *,
    runs: int,
    seed: int,
    error_rate: float = 0.0,
    tool_failure_rate: float = 0.0,
    tools: int = 2,
    token_scale: float = 1.0,
    time_scale: float = 1.0,
    compression: Compression = "none",
    cwd: str = "/home/dev/project",
) -> RunsWritten:
    """Write ``runs`` one-turn root sessions under ``out`` whose turns end in error at ``error_rate``.

    Args:
        out: the corpus root to write into (the writer refuses to overwrite a log).
        runs: how many sessions.
        seed: seeds every draw.
        error_rate: the probability that a run's turn ends with ``error``.
        tool_failure_rate: the probability that a tool call's result is an error.
        tools: tool calls per run.
        token_scale: multiplies the drawn token counts (and so the cost).
        time_scale: multiplies the drawn gaps between events (and so the active time).
        compression: ``none`` or ``zstd``.
        cwd: the working directory every header names: it names the project directory the logs go
            into (two calls with two ``cwd`` and two seeds give one root of two projects).

    Returns:
        What was written (``errors``: the runs that ended in error).

    Examples:
        >>> import tempfile
        >>> written = write_runs(tempfile.mkdtemp(), runs=20, seed=1, error_rate=0.5)
        >>> written.runs, 0 < written.errors < 20
        (20, True)
    """
    rng = random.Random(f"subagent_catalog.synth.runs:{seed}")
    root = os.fspath(out)
    errors = failures = 0
    for index in range(runs):
        failed = rng.random() < error_rate
        errors += failed
        log = EventLog(f"run-{seed}-{index:05d}", time=1_700_000_000_000 + index * 3_600_000)

        def gap(low: int, high: int) -> int:
            return max(1, round(rng.randint(low, high) * time_scale))

        log.turn_start()
        log.user(f"task {index}")
        for call in range(tools):
            call_id = f"call-{index}-{call}"
            log.add("step/start", {"turn": log.turn, "step": call + 1}, dt=gap(5, 50))
            asked = {
                "id": f"m-{index}-{call}",
                "role": "assistant",
                "content": [{"type": "tool-call", "id": call_id, "name": "shell", "arguments": "{}"}],
                "source": {"kind": "model", "provider": MODEL[0], "model": MODEL[1]},
            }
            log.add(
                "assistant/message",
                {"turn": log.turn, "step": call + 1, "message": asked},
                dt=gap(5, 50),
                surfaceOp="append",
            )
            log.add(
                "tool/call", {"turn": log.turn, "step": call + 1, "callId": call_id, "name": "shell"}, dt=gap(200, 2000)
            )
            bad = rng.random() < tool_failure_rate
            failures += bad
            result = {
                "turn": log.turn,
                "step": call + 1,
                "message": {
                    "id": f"r-{index}-{call}",
                    "role": "user",
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": call_id,
                            "content": [{"type": "text", "text": "exit 1" if bad else "ok"}],
                            "isError": bad,
                        }
                    ],
                    "source": {"kind": "tool", "callId": call_id},
                },
                **({"error": {"name": "ToolError", "code": "EXIT_NONZERO"}} if bad else {}),
            }
            log.add("tool/result", result, dt=gap(100, 3000), surfaceOp="append")
            log.add("step/end", {"turn": log.turn, "step": call + 1}, dt=1)
        step = tools + 1
        usage = {
            "inputTokens": round(rng.randint(2_000, 40_000) * token_scale),
            "outputTokens": round(rng.randint(100, 2_000) * token_scale),
        }
        log.add("step/start", {"turn": log.turn, "step": step}, dt=gap(5, 50))
        message = {
            "id": f"m-{index}",
            "role": "assistant",
            "content": [{"type": "text", "text": "done"}],
            "source": {"kind": "model", "provider": MODEL[0], "model": MODEL[1]},
        }
        log.add(
            "assistant/message",
            {"turn": log.turn, "step": step, "message": message, "usage": usage},
            dt=gap(500, 8000),
            surfaceOp="append",
        )
        log.add("step/end", {"turn": log.turn, "step": step}, dt=1)
        error = {"message": "provider overloaded", "code": "RATE_LIMITED"}
        reason = {"kind": "error", "error": error} if failed else {"kind": "completed"}
        log.add("turn/end", {"turn": log.turn, "reason": reason}, dt=gap(1, 20))
        head = header(log.session_id, created_at=log.events[0]["time"] - 1, cwd=cwd)
        write_session(root, head, log.events, compression)
    return RunsWritten(root, runs, errors, runs * tools, failures)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m subagent_catalog.synth.runs OUT --runs N --seed S [--error-rate P] ...``; prints what it wrote.

    Examples:
        >>> import tempfile, contextlib, io
        >>> with contextlib.redirect_stdout(io.StringIO()) as out:
        ...     code = main([tempfile.mkdtemp(), "--runs", "3", "--seed", "1", "--error-rate", "1"])
        >>> code, json.loads(out.getvalue())["errors"]
        (0, 3)
    """
    parser = argparse.ArgumentParser(
        prog="python -m subagent_catalog.synth.runs", description="Write one-turn runs of known error rates."
    )
    parser.add_argument("out", help="the corpus root to write into")
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--tool-failure-rate", type=float, default=0.0)
    parser.add_argument("--token-scale", type=float, default=1.0)
    parser.add_argument("--time-scale", type=float, default=1.0)
    parser.add_argument("--cwd", default="/home/dev/project", help="the working directory (names the project)")
    args = parser.parse_args(argv)
    print(json.dumps(asdict(write_runs(**vars(args)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
