"""A parent's subagent starts: which tool calls started children, which child each started, what came back.

Upstream writes no call id into a child's log: the child's header names its ``parentSession``, nothing
more. What links a child to the call that started it is in the parent's own events, written by
upstream's ``tool-subagent`` (``packages/subagent/tool-subagent``):

- a *spawn call* is a call of ``subagent`` or ``fork_subagent``, or any call whose arguments carry a
  ``prompt`` string (an agent preset's own tool);
- its appended result says how it went (``SpawnRoute``): ``started subagent <id>`` (a continuable
  child in the background: the id names the child), ``started background subagent job <id>`` (a
  one-shot job: the id is a job's, not a session's), an errored result (the start was refused, or a
  foreground child failed), any other text (a foreground child's final answer), or no result at all;
- a continuable child's end reaches the parent as a ``user/message`` whose source is
  ``subagent-settled`` with the child's ``senderSessionId`` (the *notice*).

Children are attached to calls by these rules, in order (each call starts one child):

1. the child id a ``started subagent`` result names (``"result-id"``);
2. a call that was running when the child was created (started at most ``SPAWN_WINDOW_MS`` before its
   ``createdAt``, no result before it): the one whose ``prompt`` is the child's first own user
   message, else the one whose ``prompt`` that message holds, else the latest start (``"start-time"``);
3. an unclaimed call whose ``prompt`` is the child's first user message (``"prompt"``);
4. none (a child started by the harness itself, or a parent log without the call): ``"none"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from subagent_catalog.analysis.findings.log_events import Event, own_events
from subagent_catalog.frames.corpus import Corpus

__all__ = [
    "SPAWN_EVENT_TYPES",
    "SPAWN_TOOLS",
    "SPAWN_WINDOW_MS",
    "ParentSpawns",
    "Spawn",
    "SpawnLink",
    "SpawnRoute",
    "call_prompt",
    "link_children",
    "parent_calls",
    "read_spawns",
    "waiting_children",
]

SPAWN_TOOLS = frozenset({"subagent", "fork_subagent"})
"""Upstream's subagent tools (an agent preset's own tool is known by its ``prompt`` argument)."""
SPAWN_WINDOW_MS = 60_000
"""Rule 2 takes a call started at most this long before the child's ``createdAt``."""

SpawnRoute = Literal["continuable", "job", "foreground", "failed", "no-result"]
SpawnLink = Literal["result-id", "start-time", "prompt", "none"]

_STARTED = re.compile(r"\Astarted subagent (\S+)\s*\Z")
_JOB = re.compile(r"\Astarted background subagent job (\S+)\s*\Z")


@dataclass
class Spawn:
    """One spawn call of a parent: the call, its result, and the child attached to it."""

    seq: int
    time_ms: int | None
    turn: int | None
    step: int | None
    call_id: str | None
    name: str | None
    prompt: str | None
    route: SpawnRoute
    result_seq: int | None
    result_time_ms: int | None
    result_text: str | None
    named_child: str | None = None  # the id a ``started subagent`` result names
    child_id: str | None = None
    link: SpawnLink = "none"


@dataclass
class ParentSpawns:
    """A parent's spawn calls in log order, the notices it received (child id → first notice's seq)."""

    spawns: list[Spawn] = field(default_factory=list)
    notices: dict[str, int] = field(default_factory=dict)


def call_prompt(arguments: Any) -> str | None:
    """A tool call's ``prompt`` argument (its ``arguments`` JSON text), or ``None`` when it has none.

    Examples:
        >>> call_prompt('{"prompt": "fix it"}'), call_prompt("{}"), call_prompt("not json"), call_prompt(None)
        ('fix it', None, None, None)
    """
    if not isinstance(arguments, str) or not arguments:
        return None
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return None
    prompt = value.get("prompt") if isinstance(value, dict) else None
    return prompt if isinstance(prompt, str) else None


def _spawn_calls(calls: list[Event], results: dict[int, Event], records: list[dict[str, Any]]) -> list[Spawn]:
    answered = {record["seq"]: record for record in records if record.get("seq") is not None}
    out: list[Spawn] = []
    for call in calls:
        data = call.data if isinstance(call.data, dict) else {}
        name, arguments = data.get("name"), data.get("arguments")
        prompt = call_prompt(arguments)
        if name not in SPAWN_TOOLS and prompt is None:
            continue
        record = answered.get(call.seq, {})
        result_seq = record.get("result_seq")
        result = results.get(result_seq) if result_seq is not None else None
        text = result.text if result is not None else None
        stripped = (text or "").strip()
        started = _STARTED.match(stripped) if result_seq is not None and record.get("is_error") is not True else None
        route: SpawnRoute = "continuable" if started else "job" if _JOB.match(stripped) else "foreground"
        if result_seq is None or record.get("is_error") is True:
            route = "no-result" if result_seq is None else "failed"
        named = started.group(1) if started else None
        call_id = data.get("callId")
        out.append(
            Spawn(
                call.seq,
                call.time_ms,
                call.turn,
                call.step,
                call_id if isinstance(call_id, str) else None,
                name if isinstance(name, str) else None,
                prompt,
                route,
                result_seq,
                record.get("result_time_ms"),
                text,
                named_child=named,
            )
        )
    return out


def _running(spawns: list[Spawn], created: int | None) -> list[Spawn]:
    if created is None:
        return []
    return [
        s
        for s in spawns
        if s.child_id is None
        and s.named_child is None
        and s.time_ms is not None
        and s.time_ms <= created <= s.time_ms + SPAWN_WINDOW_MS
        and (s.result_time_ms is None or s.result_time_ms >= created)
    ]


def _pick(candidates: list[Spawn], message: str | None) -> Spawn:
    if message is not None:
        for match in (lambda s: s.prompt == message, lambda s: s.prompt is not None and s.prompt in message):
            found = [s for s in candidates if match(s)]
            if found:
                return found[0]
    return max(candidates, key=lambda s: (s.time_ms or 0, s.seq))


SPAWN_EVENT_TYPES = frozenset({"tool/call", "tool/result", "user/message"})
"""The event types of a parent ``parent_calls`` reads."""


def parent_calls(parent: dict[str, Any], events: list[Event]) -> ParentSpawns:
    """A parent's spawn calls (children not yet attached) and notices, from its own events of ``SPAWN_EVENT_TYPES``.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> import polars as pl
        >>> from subagent_catalog.analysis.findings.log_events import own_events
        >>> corpus = read_corpus("data/findings")
        >>> parent = corpus.sessions.filter(pl.col("session_id") == "unread-parent").row(0, named=True)
        >>> found = parent_calls(parent, own_events(corpus, parent["list_order"], SPAWN_EVENT_TYPES))
        >>> [s.named_child for s in found.spawns], found.notices
        (['read-child', 'unread-child'], {'read-child': 17})
    """
    records = [record for record in parent.get("tool_call_records") or [] if not record.get("in_seed")]
    calls = [e for e in events if e.type == "tool/call"]
    results = {e.seq: e for e in events if e.type == "tool/result"}
    found = ParentSpawns(_spawn_calls(calls, results, records))
    for event in events:
        source = event.data.get("source") if event.type == "user/message" and isinstance(event.data, dict) else None
        if isinstance(source, dict) and source.get("kind") == "subagent-settled":
            sender = source.get("senderSessionId")
            if isinstance(sender, str):
                found.notices.setdefault(sender, event.seq)
    return found


def waiting_children(found: ParentSpawns, children: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Attach the children a ``started subagent`` result names; the others, in creation order (rules 2-3 need them).

    None wait when no call is left that could claim one (no spawn call without a named child).

    Examples:
        >>> call = Spawn(4, 10, 1, 1, "c1", "subagent", "go", "continuable", 5, 11, "started subagent k1", "k1")
        >>> found = ParentSpawns([call])
        >>> waiting_children(found, [{"session_id": "k1", "created_at_ms": 10}]), call.child_id, call.link
        ([], 'k1', 'result-id')
    """
    by_id = {child["session_id"]: child for child in children if child.get("session_id") is not None}
    for spawn in found.spawns:
        if spawn.named_child is not None and spawn.named_child in by_id:
            spawn.child_id, spawn.link = spawn.named_child, "result-id"
    if not any(s.named_child is None for s in found.spawns):
        return []
    claimed = {s.child_id for s in found.spawns if s.child_id is not None}
    return sorted(
        (c for c in by_id.values() if c["session_id"] not in claimed),
        key=lambda c: (c.get("created_at_ms") is None, c.get("created_at_ms") or 0, c["session_id"]),
    )


def link_children(found: ParentSpawns, waiting: list[dict[str, Any]], messages: dict[str, str | None]) -> None:
    """Attach the ``waiting`` children by start time, then by prompt (``messages``: each one's first own message).

    Examples:
        >>> calls = [Spawn(4, 10, 1, 1, "c1", "subagent", "a", "foreground", 9, 90, "done"),
        ...          Spawn(5, 10, 1, 1, "c2", "subagent", "b", "foreground", 12, 95, "done")]
        >>> found = ParentSpawns(calls)
        >>> link_children(found, [{"session_id": "k", "created_at_ms": 11}], {"k": "b"})
        >>> [(s.call_id, s.child_id, s.link) for s in found.spawns]
        [('c1', None, 'none'), ('c2', 'k', 'start-time')]
    """
    for child in waiting:
        candidates = _running(found.spawns, child.get("created_at_ms"))
        message = messages.get(child["session_id"])
        if candidates:
            chosen = _pick(candidates, message)
            chosen.child_id, chosen.link = child["session_id"], "start-time"
            continue
        for spawn in found.spawns:
            if spawn.child_id is None and spawn.named_child is None and message is not None and spawn.prompt == message:
                spawn.child_id, spawn.link = child["session_id"], "prompt"
                break


def read_spawns(corpus: Corpus, parent: dict[str, Any], children: list[dict[str, Any]]) -> ParentSpawns:
    """The spawn calls of one parent with their children attached, and the notices it received.

    ``detect_children.parent_spawns`` does the same for every parent at once (their logs read in a pool).

    Args:
        corpus: the corpus the parent and its children were read from.
        parent: the parent's ``sessions`` row (``list_order``, ``tool_call_records``).
        children: the ``sessions`` rows naming it as ``parent_session`` (``session_id``,
            ``list_order``, ``created_at_ms``).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = {row["session_id"]: row for row in corpus.sessions.iter_rows(named=True)}
        >>> kids = [row for row in rows.values() if row["parent_session"] == "dup-parent"]
        >>> found = read_spawns(corpus, rows["dup-parent"], kids)
        >>> [(s.route, s.link, s.child_id) for s in found.spawns]
        [('foreground', 'prompt', 'dup-child-0'), ('foreground', 'prompt', 'dup-child-1')]
    """
    found = parent_calls(parent, own_events(corpus, parent["list_order"], SPAWN_EVENT_TYPES))
    waiting = waiting_children(found, children)
    messages = {}
    for child in waiting:
        first = own_events(corpus, child["list_order"], frozenset({"user/message"}))
        messages[child["session_id"]] = first[0].text if first else None
    link_children(found, waiting, messages)
    return found
