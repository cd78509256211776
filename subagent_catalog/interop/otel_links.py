"""Which of a parent's tool calls started a subagent child.

Upstream writes no call id into a child's log: the child's header names its
``parentSession`` and its descriptor its label, nothing more. What links the
two is in the parent's own events, written by upstream's ``tool-subagent``
(``packages/subagent/tool-subagent``). The rules, in order:

1. a background start of a continuable child returns exactly
   ``started subagent <childId>`` as the call's result: that call started
   the child (``dsh.spawn.link = "result-id"``);
2. upstream creates the child's session when the call starts, so one of
   the calls that were running when the child was created (started at most
   ``SPAWN_WINDOW_MS`` before ``createdAt``, no result before it) of a
   subagent tool (``subagent``, ``fork_subagent``, or any call with a
   ``prompt`` argument: an agent preset's tool): the one whose ``prompt``
   is the child's first user message, else the one whose ``prompt`` that
   message holds, else the latest start (``"start-time"``);
3. every start hands the call's ``prompt`` argument to the child as its
   first user message: the unclaimed call whose ``prompt`` equals it,
   whatever its time (``"prompt"``);
4. otherwise (a child started by the harness itself, by another provider, a
   missing or damaged parent log) no call is claimed: the child hangs under
   the parent's AGENT span (``"none"``).

Each call is given to one child. Rules 2 and 3 are fallbacks: the export
counts the children each rule attached (``OtlpParts.spawn_links``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import SpanContext

from subagent_catalog.analysis.findings.spawns import SPAWN_TOOLS, SPAWN_WINDOW_MS, SpawnLink
from subagent_catalog.interop.otel_session import SessionSpans, ToolCall

SPAWN_LINKS: tuple[SpawnLink, ...] = ("result-id", "start-time", "prompt", "none")
"""How a child was attached to its parent (``dsh.spawn.link``), rule by rule."""


@dataclass
class _Index:
    """A parent's tool calls by the child id their result names, by start time and by their prompt."""

    started: dict[str, list[ToolCall]] = field(default_factory=dict)
    spawning: list[ToolCall] = field(default_factory=list)  # subagent tool calls naming no child, by start time
    starts: list[int] = field(default_factory=list)  # their start times
    prompted: dict[str, list[ToolCall]] = field(default_factory=dict)


def _index(parent: SessionSpans) -> _Index:
    if parent.by_child is None:
        index = _Index()
        for call in parent.tools:  # tool order kept within each list: the first unclaimed one wins, as in a scan
            if call.started_child is not None:
                index.started.setdefault(call.started_child, []).append(call)
                continue
            if call.prompt is not None:
                index.prompted.setdefault(call.prompt, []).append(call)
            if call.name in SPAWN_TOOLS or call.prompt is not None:
                index.spawning.append(call)
        index.spawning.sort(key=lambda call: call.start_ms)  # stable: tool order among equal starts
        index.starts = [call.start_ms for call in index.spawning]
        parent.by_child = index
    found: _Index = parent.by_child
    return found


def _spot(call: ToolCall) -> tuple[int, int]:
    return (call.context.trace_id, call.context.span_id)


def _running(index: _Index, created: int, first_user: str | None, claimed: set[tuple[int, int]]) -> ToolCall | None:
    """Rule 2: of the unclaimed subagent calls running at ``created``, the one its prompt names, else the latest.

    Calls started together (one model step's parallel calls, a millisecond
    apart) are told apart by the child's first user message: the call whose
    ``prompt`` it is, then the call whose ``prompt`` it holds, then the
    latest start (the first in tool order among equal starts).
    """
    at = bisect.bisect_right(index.starts, created) - 1
    best: tuple[int, int, int, int] | None = None
    found: ToolCall | None = None
    while at >= 0 and index.starts[at] >= created - SPAWN_WINDOW_MS:
        call = index.spawning[at]
        at -= 1
        if _spot(call) in claimed or (call.end_ms is not None and call.end_ms < created):
            continue
        prompt = call.prompt
        exact = first_user is not None and prompt == first_user
        within = first_user is not None and prompt is not None and prompt != "" and prompt in first_user
        rank = (int(exact), int(within), call.start_ms, -at)
        if best is None or rank >= best:
            best, found = rank, call
    return found


def spawn_link(
    parent: SessionSpans, child: dict[str, Any], first_user: str | None, claimed: set[tuple[int, int]]
) -> tuple[SpanContext, dict[str, Any]]:
    """The span a child's AGENT span hangs under, and its ``dsh.spawn.*`` attributes.

    The parent's calls are looked up by index (a parent of thousands of
    children is linked in linear time), in the order a scan of its tool
    calls would meet them.

    Args:
        parent: the parent session's spans (its tool calls).
        child: the child's ``sessions`` row.
        first_user: the child's first own user message.
        claimed: the TOOL spans (trace and span id) already given to a sibling (updated).

    Examples:
        >>> from subagent_catalog.interop.otel_session import ToolCall, context
        >>> call = ToolCall(context(1, 7), "c1", "subagent", '{"prompt":"go"}', 10, 20, prompt="go")
        >>> parent = SessionSpans([], context(1, 2), [call], None, 0)
        >>> ctx, spawn = spawn_link(parent, {"session_id": "k", "created_at_ms": 12}, "go on", set())
        >>> ctx.span_id, spawn
        (7, {'link': 'start-time', 'call_id': 'c1', 'tool': 'subagent'})
        >>> spawn_link(parent, {"session_id": "k", "created_at_ms": 99}, "go", set())[1]  # created after it ended
        {'link': 'prompt', 'call_id': 'c1', 'tool': 'subagent'}
        >>> spawn_link(parent, {"session_id": "k2", "created_at_ms": 12}, "go", {(1, 7)})[1]
        {'link': 'none'}
    """
    index = _index(parent)
    for call in index.started.get(child["session_id"], ()):
        if _spot(call) not in claimed:
            claimed.add(_spot(call))
            return call.context, {"link": "result-id", "call_id": call.call_id, "tool": call.name}
    created = child.get("created_at_ms")
    found = _running(index, created, first_user, claimed) if created is not None else None
    if found is not None:
        claimed.add(_spot(found))
        return found.context, {"link": "start-time", "call_id": found.call_id, "tool": found.name}
    for call in index.prompted.get(first_user, ()) if first_user is not None else ():
        if _spot(call) not in claimed:
            claimed.add(_spot(call))
            return call.context, {"link": "prompt", "call_id": call.call_id, "tool": call.name}
    return parent.agent, {"link": "none"}


def spawn_summary(counts: dict[SpawnLink, int]) -> str:
    """One line on how an export's subagents were attached (``OtlpParts.spawn_links``), the fallbacks counted.

    Examples:
        >>> line = spawn_summary({"result-id": 142, "start-time": 90, "prompt": 0, "none": 8})
        >>> line.split(", ")[1:]
        ['90 by start time', '0 by prompt (90 fallbacks)', "8 under the parent's AGENT span (no call found)"]
        >>> spawn_summary({})
        'subagents: none exported'
    """
    total = sum(counts.values())
    if not total:
        return "subagents: none exported"
    fallbacks = counts.get("start-time", 0) + counts.get("prompt", 0)
    return (
        f"subagents: {counts.get('result-id', 0)} by the child id in their call's result, "
        f"{counts.get('start-time', 0)} by start time, {counts.get('prompt', 0)} by prompt ({fallbacks} fallbacks), "
        f"{counts.get('none', 0)} under the parent's AGENT span (no call found)"
    )
