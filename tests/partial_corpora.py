"""Corpora whose numbers are partly unknown, written with the synthesizer's writer (``synth.writer``).

``write_partial_tree`` wrote the golden corpus ``tests/data/partial-tree`` (the test of it checks that it
still does): a tree ``lab-root`` whose children are priced, priced in part (a step of a model no price table
knows) and unreadable (a garbage line before its turn ended: nothing of its usage can be read), beside a
smaller tree ``small-root`` that is priced whole and holds a child with no model usage (a known cost of 0).
``write_unpriced`` writes a corpus whose models no price table knows; ``write_overflow`` logs whose token
counts add up past 2^63 - 1.
"""

from __future__ import annotations

import os
from typing import Any

from subagent_catalog.synth.writer import EventLog, descriptor, header, write_session

T0 = 1_767_225_600_000
"""2026-01-01 00:00 UTC: a time genai-prices prices DeepSeek's models at."""

CWD = "/work/lab"


def _step(log: EventLog, step: int, model: tuple[str, str], tokens: tuple[int, int]) -> None:
    """A model step that reported its usage: ``tokens`` is (input, output)."""
    provider, name = model
    log.add("step/start", {"turn": log.turn, "step": step})
    log.add(
        "assistant/message",
        {
            "turn": log.turn,
            "step": step,
            "message": {
                "id": f"m-{log.session_id}-{len(log.events)}",
                "role": "assistant",
                "content": [{"type": "text", "text": f"step {step} of {log.session_id}"}],
                "source": {"kind": "model", "provider": provider, "model": name},
            },
            "usage": {"inputTokens": tokens[0], "outputTokens": tokens[1]},
        },
        surfaceOp="append",
    )
    log.add("step/end", {"turn": log.turn, "step": step})


def _session(
    root: str | os.PathLike[str],
    session_id: str,
    steps: list[tuple[tuple[str, str], tuple[int, int]]],
    *,
    parent: str | None = None,
    at: int = 0,
    tail: bytes = b"",
) -> str:
    """One log of one turn: a prompt, a descriptor for a child, its steps; ``tail``: raw bytes after them."""
    log = EventLog(session_id, time=T0 + at)
    log.turn_start()
    log.user(f"task for {session_id}")
    if parent is not None:
        log.descriptor(descriptor("one-shot", label=f"{session_id} work"))
    for number, (model, tokens) in enumerate(steps, start=1):
        _step(log, number, model, tokens)
    if not tail:
        log.turn_end()
    head = header(
        session_id,
        created_at=T0 + at,
        cwd=CWD,
        parent=parent,
        subagent=parent is not None,
        delegation_depth=1 if parent else 0,
    )
    return write_session(root, head, log.events, "none", tail=tail)


CHAT = ("deepseek", "deepseek-chat")
REASONER = ("deepseek", "deepseek-reasoner")
UNKNOWN = ("local-vllm", "qwen3-coder")
"""A model no price table knows."""


def write_partial_tree(root: str | os.PathLike[str]) -> None:
    """The golden partial tree (module docstring)."""
    _session(root, "lab-root", [(CHAT, (400_000, 20_000))])
    _session(root, "priced-child", [(REASONER, (300_000, 10_000))], parent="lab-root", at=1_000)
    _session(root, "mixed-child", [(CHAT, (200_000, 5_000)), (UNKNOWN, (900_000, 1_000))], parent="lab-root", at=2_000)
    # A garbage line before the turn ended: upstream cannot read the log, and its usage is unknown.
    garbage = b"#### not json ####\n" + b'{"type":"turn/end","seq":99,"time":1,"data":{"turn":1}}\n'
    _session(root, "unreadable-child", [(CHAT, (800_000, 9_000))], parent="lab-root", at=3_000, tail=garbage)
    _session(root, "small-root", [(CHAT, (10_000, 1_000))], at=10_000)
    _session(root, "idle-child", [], parent="small-root", at=11_000)


def write_unpriced(root: str | os.PathLike[str]) -> None:
    """A corpus whose every model is unknown to every price table; one run has no model usage at all."""
    _session(root, "big-run", [(UNKNOWN, (50_000, 2_000)), (("acme", "mystery-1"), (9_000, 100))])
    _session(root, "small-run", [(UNKNOWN, (1_000, 10))], at=1_000)
    _session(root, "helper", [(UNKNOWN, (20_000, 500))], parent="big-run", at=2_000)
    _session(root, "no-usage", [], at=3_000)


def write_overflow(root: str | os.PathLike[str], logs: int = 1_100) -> dict[str, Any]:
    """``logs`` logs of one step of 2^53 - 1 input tokens each (every one accepted): their sum passes 2^63 - 1.

    All but the first are its children, so the tree's sums pass it too. Returns the exact totals.
    """
    most = 2**53 - 1
    _session(root, "ov-0", [(CHAT, (most, 1))])
    for index in range(1, logs):
        _session(root, f"ov-{index}", [(CHAT, (most, 1))], parent="ov-0", at=index)
    return {"input_tokens": logs * most, "output_tokens": logs}
