"""Which of a parent's tool calls started a subagent child.

Upstream writes no call id into a child's log: the child's header names its
``parentSession`` and its descriptor its label, nothing more. What links the
two is in the parent's own events, written by upstream's ``tool-subagent``
(``packages/subagent/tool-subagent``):

1. a background start of a continuable child returns exactly
   ``started subagent <childId>`` as the call's result: that call started
   the child (``dsh.spawn.link = "result-id"``);
2. every start hands the call's ``prompt`` argument to the child as its
   first user message; a foreground or one-shot call returns the child's
   output instead of its id, so the call is the one whose ``prompt`` equals
   the child's first user message and which was running when the child was
   created (started at or before ``createdAt``, with no result before it),
   each call claimed once (``"prompt"``);
3. otherwise (another provider, a missing or damaged log, a child started
   by ``send_message`` work or by hand) no call is claimed: the child hangs
   under the parent's AGENT span (``"none"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import SpanContext

from subagent_catalog.interop.otel_session import SessionSpans, ToolCall


@dataclass
class _Index:
    """A parent's tool calls by the child id their result names, and (those naming none) by their prompt."""

    started: dict[str, list[ToolCall]] = field(default_factory=dict)
    prompted: dict[str, list[ToolCall]] = field(default_factory=dict)


def _index(parent: SessionSpans) -> _Index:
    if parent.by_child is None:
        index = _Index()
        for call in parent.tools:  # tool order kept within each list: the first unclaimed one wins, as in a scan
            if call.started_child is not None:
                index.started.setdefault(call.started_child, []).append(call)
            elif call.prompt is not None:
                index.prompted.setdefault(call.prompt, []).append(call)
        parent.by_child = index
    found: _Index = parent.by_child
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
        >>> ctx, spawn = spawn_link(parent, {"session_id": "k", "created_at_ms": 12}, "go", set())
        >>> ctx.span_id, spawn
        (7, {'link': 'prompt', 'call_id': 'c1', 'tool': 'subagent'})
        >>> spawn_link(parent, {"session_id": "k2", "created_at_ms": 12}, "go", {(1, 7)})[1]
        {'link': 'none'}
    """
    index = _index(parent)
    for call in index.started.get(child["session_id"], ()):
        spot = (call.context.trace_id, call.context.span_id)
        if spot not in claimed:
            claimed.add(spot)
            return call.context, {"link": "result-id", "call_id": call.call_id, "tool": call.name}
    created = child.get("created_at_ms")
    if first_user is not None and created is not None:
        for call in index.prompted.get(first_user, ()):
            spot = (call.context.trace_id, call.context.span_id)
            if spot in claimed:
                continue
            if call.start_ms <= created and (call.end_ms is None or created <= call.end_ms):
                claimed.add(spot)
                return call.context, {"link": "prompt", "call_id": call.call_id, "tool": call.name}
    return parent.agent, {"link": "none"}
