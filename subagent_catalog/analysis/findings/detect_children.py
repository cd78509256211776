"""Detectors over the subagent tree: ``fan-out``, ``duplicate-task``, ``unread-child`` and ``runaway-child``.

They use the exact lineage (each child's header ``parentSession``) and the parent's own events (its
spawn calls, their results, the notices it received: ``spawns.read_spawns``), never guesses from
names. Only parents are read: a session with a child in the corpus, or with a call of a subagent tool.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl

from subagent_catalog.analysis.findings.log_events import Events, events_for, events_of
from subagent_catalog.analysis.findings.options import FindingOptions
from subagent_catalog.analysis.findings.schema import Finding
from subagent_catalog.analysis.findings.spawns import (
    SPAWN_EVENT_TYPES,
    SPAWN_TOOLS,
    ParentSpawns,
    link_children,
    parent_calls,
    waiting_children,
)
from subagent_catalog.analysis.run_names import name_text
from subagent_catalog.analysis.summary import iso
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.units import human_duration, plural

__all__ = ["duplicate_task", "fan_out", "parent_spawns", "runaway_child", "spawn_parents", "unread_child"]


def spawn_parents(
    rows: list[dict[str, Any]], *, only: set[str] | None = None
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The parents (a child names it, or it called a subagent tool) in list order, and each one's children by id.

    ``only``: the parents among these session ids alone. A session id several logs carry is its first
    log's (in list order), as upstream's lookup takes it.

    Examples:
        >>> rows = [{"session_id": "p", "list_order": 0, "parent_session": None, "tools": []},
        ...         {"session_id": "c", "list_order": 1, "parent_session": "p", "tools": ["subagent"]}]
        >>> parents, children = spawn_parents(rows)
        >>> [p["session_id"] for p in parents], [c["session_id"] for c in children["p"]]
        (['p', 'c'], ['c'])
    """
    first: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["session_id"] is not None and row.get("verdict") != "skipped":
            first.setdefault(row["session_id"], row)
    children: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        parent = row.get("parent_session")
        if parent is not None and parent in first:
            children.setdefault(parent, []).append(row)
    parents = {row["session_id"] for row in first.values() if SPAWN_TOOLS.intersection(row.get("tools") or [])}
    parents.update(children)
    if only is not None:
        parents &= only
    return sorted((first[session] for session in parents), key=lambda row: row["list_order"]), children


def parent_spawns(
    corpus: Corpus, rows: list[dict[str, Any]], *, only: set[str] | None = None, events: Events | None = None
) -> dict[int, ParentSpawns]:
    """Each parent's spawns (``spawn_parents``), by its ``list_order``, children attached.

    ``only``: the parents among these session ids alone (their logs alone are read); ``events``: the
    parents' events of ``SPAWN_EVENT_TYPES`` already read (``findings`` reads each log once).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = list(corpus.sessions.iter_rows(named=True))
        >>> found = parent_spawns(corpus, rows)
        >>> sorted(len(p.spawns) for p in found.values())
        [1, 2, 2, 10]
    """
    parents, children = spawn_parents(rows, only=only)
    orders = [row["list_order"] for row in parents]
    records = dict(
        corpus.sessions.filter(pl.col("list_order").is_in(orders)).select("list_order", "tool_call_records").iter_rows()
    )
    logs = events_for(corpus, parents, SPAWN_EVENT_TYPES, events)
    found: dict[int, ParentSpawns] = {}
    waiting: dict[int, list[dict[str, Any]]] = {}
    for row in parents:
        order = row["list_order"]
        calls = parent_calls({**row, "tool_call_records": records.get(order)}, logs[order])
        found[order] = calls
        waiting[order] = waiting_children(calls, children.get(row["session_id"], []))
    kids = [child for group in waiting.values() for child in group]
    firsts = events_of(corpus, kids, frozenset({"user/message"})) if kids else {}
    messages = {
        child["session_id"]: (firsts[child["list_order"]][0].text if firsts.get(child["list_order"]) else None)
        for child in kids
    }
    for order, calls in found.items():
        link_children(calls, waiting[order], messages)
    return found


def fan_out(rows: dict[int, dict[str, Any]], spawns: dict[int, ParentSpawns], options: FindingOptions) -> list[Finding]:
    """``fan-out``: a session starting ``fan_out_children`` or more subagents in one turn.

    A start is a spawn call whose result is not an error (a refused start started nothing; a call
    still without a result may have started its child).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = {row["list_order"]: row for row in corpus.sessions.iter_rows(named=True)}
        >>> [f.message for f in fan_out(rows, parent_spawns(corpus, list(rows.values())), FindingOptions())]
        ['started 10 subagents in turn 1 (subagent ×10)']
    """
    found: list[Finding] = []
    for order, parent in spawns.items():
        row = rows[order]
        by_turn: dict[int, list[Any]] = {}
        for spawn in parent.spawns:
            if spawn.route != "failed" and spawn.turn is not None:
                by_turn.setdefault(spawn.turn, []).append(spawn)
        for turn, started in sorted(by_turn.items()):
            if len(started) < options.fan_out_children:
                continue
            tools = Counter(spawn.name or "?" for spawn in started)
            prompts = [s.prompt for s in started if s.prompt]
            found.append(
                Finding.about(
                    row,
                    "fan-out",
                    "warn",
                    f"started {len(started)} subagents in turn {turn} ("
                    + ", ".join(f"{name} ×{count}" for name, count in sorted(tools.items()))
                    + ")",
                    " | ".join(prompts[:5]) + (f" | … {len(prompts) - 5} more" if len(prompts) > 5 else ""),
                    turn=turn,
                    step=started[0].step,
                    seq=started[0].seq,
                    seq_end=started[-1].seq,
                )
            )
    return found


def duplicate_task(rows: dict[int, dict[str, Any]], spawns: dict[int, ParentSpawns]) -> list[Finding]:
    """``duplicate-task``: two or more subagents of one parent started with the same task prompt.

    The prompt is the spawn call's ``prompt`` argument, compared byte for byte; refused starts do
    not count. One finding per prompt.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = {row["list_order"]: row for row in corpus.sessions.iter_rows(named=True)}
        >>> [(f.session_id, f.message) for f in duplicate_task(rows, parent_spawns(corpus, list(rows.values())))]
        [('dup-parent', '2 subagents started with the same task prompt: dup-child-0, dup-child-1')]
    """
    found: list[Finding] = []
    by_id = _by_id(rows)
    for order, parent in spawns.items():
        row = rows[order]
        groups: dict[str, list[Any]] = {}
        for spawn in parent.spawns:
            if spawn.route != "failed" and spawn.prompt and spawn.prompt.strip():
                groups.setdefault(spawn.prompt, []).append(spawn)
        for prompt, same in groups.items():
            if len(same) < 2:
                continue
            children = [_named(s.child_id, by_id) for s in same if s.child_id is not None]
            named = f": {', '.join(children)}" if children else ""
            found.append(
                Finding.about(
                    row,
                    "duplicate-task",
                    "warn",
                    f"{len(same)} subagents started with the same task prompt{named}",
                    prompt,
                    turn=same[0].turn,
                    step=same[0].step,
                    seq=same[0].seq,
                    seq_end=same[-1].seq,
                )
            )
    return found


def unread_child(rows: dict[int, dict[str, Any]], spawns: dict[int, ParentSpawns]) -> list[Finding]:
    """``unread-child``: a child that ended, started by a call whose result never reached the parent.

    A foreground child's result is its call's result (none: unread); a continuable child's is the
    ``subagent-settled`` notice it sends when it ends (no notice from it in the parent's log:
    unread). A child still open is not judged here (``runaway-child``, ``stalled``), nor is a
    one-shot background job (its result is collected by the generic job tools, under a job id).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = {row["list_order"]: row for row in corpus.sessions.iter_rows(named=True)}
        >>> [(f.session_id, f.message) for f in unread_child(rows, parent_spawns(corpus, list(rows.values())))]
        [('unread-parent', 'child unread-child ended (completed) but its notice never reached the parent')]
    """
    by_id = _by_id(rows)
    found: list[Finding] = []
    for order, parent in spawns.items():
        row = rows[order]
        for spawn in parent.spawns:
            child = spawn.child_id
            ended = by_id[child].get("outcome") if child is not None and child in by_id else None
            if child is None or ended is None or ended == "open":
                continue
            if spawn.route == "continuable" and child not in parent.notices:
                message = f"child {_named(child, by_id)} ended ({ended}) but its notice never reached the parent"
            elif spawn.route == "no-result":
                message = (
                    f"child {_named(child, by_id)} ended ({ended}) but the call that started it never got a result"
                )
            else:
                continue
            found.append(
                Finding.about(
                    row,
                    "unread-child",
                    "warn",
                    message,
                    f"{spawn.name}: {spawn.prompt or ''}",
                    turn=spawn.turn,
                    step=spawn.step,
                    seq=spawn.seq,
                    seq_end=spawn.result_seq,
                )
            )
    return found


def _by_id(rows: dict[int, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The rows by session id (the first listed of an id)."""
    by_id: dict[str, dict[str, Any]] = {}
    for row in rows.values():
        if row["session_id"] is not None:
            by_id.setdefault(row["session_id"], row)
    return by_id


def _named(sid: str, by_id: dict[str, dict[str, Any]]) -> str:
    """A session named in a message as every view names it (``name_text``: its name, then its short id)."""
    row = by_id.get(sid, {})
    return name_text(sid, label=row.get("identity_label"), name=row.get("name"))


def runaway_child(rows: dict[int, dict[str, Any]], options: FindingOptions) -> list[Finding]:
    """``runaway-child``: a subagent its root left running: started before the root's end, working long after it.

    The root is the run the subagent works for (up its ``parentSession`` chain, the first session that is
    not a subagent: a root or an ordinary fork), its end its last event when its outcome says it ended
    (not ``open`` nor ``unreadable``: a damaged log's end is unknown). A subagent (``origin``
    ``subagent``) created by then whose last event is later by at least ``runaway_after_ms`` and
    ``runaway_share`` of the root's wall time worked on for nobody. An ordinary fork (a child without
    that origin) is its own run, and a child created after its root's end was not left running by it:
    neither is a runaway. Only the top of a runaway subtree is a finding (its message
    counts the runaway descendants under it).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> rows = {row["list_order"]: row for row in read_corpus("data/findings").sessions.iter_rows(named=True)}
        >>> [(f.session_id, f.message) for f in runaway_child(rows, FindingOptions())]
        [('runaway-child', 'still running 3 h after its root background job (runaway-root) ended (completed)')]
        >>> runaway_child(rows, FindingOptions(runaway_after_ms=4 * 3_600_000))
        []
    """
    by_id: dict[str, dict[str, Any]] = {}
    for row in rows.values():
        if row["session_id"] is not None and row.get("verdict") != "skipped":
            by_id.setdefault(row["session_id"], row)
    late: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for row in by_id.values():
        if row.get("origin") != "subagent" or row.get("parent_session") not in by_id or row["last_event_ms"] is None:
            continue
        root, seen = by_id[row["parent_session"]], {row["session_id"]}  # the run it works for: up its parents
        while (
            root.get("origin") == "subagent" and root.get("parent_session") in by_id and root["session_id"] not in seen
        ):
            seen.add(root["session_id"])  # the first session not a subagent
            root = by_id[root["parent_session"]]
        ended_at = root.get("last_event_ms")
        if root.get("outcome") in (None, "open", "unreadable") or ended_at is None:
            continue
        allowed = max(options.runaway_after_ms, options.runaway_share * (root.get("run_wall_ms") or 0))
        if row["last_event_ms"] - ended_at >= allowed:
            late[row["session_id"]] = (row, root)
    below: dict[str, int] = {}
    for session, (row, _) in late.items():
        parent, seen = row.get("parent_session"), {session}
        while parent in late and parent not in seen:  # count it under the top of its runaway chain
            seen.add(parent)
            top = parent
            parent = late[parent][0].get("parent_session")
            if parent not in late:
                below[top] = below.get(top, 0) + 1
    found: list[Finding] = []
    for session, (row, root) in late.items():
        ended_at = root["last_event_ms"]
        if row.get("parent_session") in late or (row.get("created_at_ms") or ended_at) > ended_at:
            continue
        state = "still running" if row.get("outcome") == "open" else f"ran on ({row.get('outcome')})"
        more = below.get(session, 0)
        under = f", with {plural(more, 'runaway descendant')}" if more else ""
        found.append(
            Finding.about(
                row,
                "runaway-child",
                "warn",
                f"{state} {human_duration(row['last_event_ms'] - ended_at)} after its root "
                f"{_named(root['session_id'], by_id)} ended ({root.get('outcome')}){under}",
                f"root's last event {iso(ended_at)}, the child's {iso(row['last_event_ms'])}",
            )
        )
    return found
