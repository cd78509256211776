"""Build ``data/sample``: a small corpus in the real dsh on-disk format.

Run ``python data/make_sample.py`` (it refuses to overwrite an existing
``data/sample``). Three projects; trees three levels deep; one-shot and
continuable children; ordinary forks; and a handful of damaged children,
one of each kind an auditor meets. Runs report token usage (two DeepSeek
models and one no price table knows), and a few end badly: an error, an
abort, max tokens, a failed tool, a run killed mid-turn. Deterministic: the
same bytes every run.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from subagent_catalog.synth.writer import EventLog, descriptor, dumps, header, write_file, write_session

BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z
COMPRESSION = "none"

ROUTES = {
    "run-research-7": ("deepseek", "deepseek-reasoner"),
    "scratch": ("local-vllm", "qwen3-coder"),  # a self-hosted model: no price table knows it
}
"""The model a session's messages come from (``deepseek/deepseek-chat`` when not named; children take their root's)."""

ENDINGS: dict[tuple[str, int], dict[str, Any]] = {
    ("auth-refactor", 2): {"kind": "error", "error": {"message": "context length exceeded", "code": "CONTEXT_LENGTH"}},
    ("rs-01", 1): {"kind": "aborted", "reason": {"kind": "parent"}},
    ("rs-03", 1): {"kind": "max-tokens"},
}
"""Turns that do not complete: (session, turn) -> the turn/end reason."""


def shape(events: list[dict[str, Any]], session_id: str, route: tuple[str, str]) -> list[dict[str, Any]]:
    """The events with usage on every message, the route's model, the turn endings above, failed tools.

    Adds no event: the counts, seqs and times are those of the plain log.
    """
    out = []
    for event in events:
        event = {**event, "data": dict(event["data"]) if isinstance(event.get("data"), dict) else event.get("data")}
        data = event["data"]
        seq = event["seq"]
        if event["type"] == "assistant/message" and "message" in data:
            provider, model = route
            data["message"] = {**data["message"], "source": {"kind": "model", "provider": provider, "model": model}}
            data["usage"] = {
                "inputTokens": 900 + 37 * seq,
                "outputTokens": 40 + 3 * seq,
                "cacheReadTokens": 2_000 + 11 * seq,
                **({"reasoningTokens": 20 + seq} if model == "deepseek-reasoner" else {}),
            }
        elif event["type"] == "turn/end" and (session_id, data.get("turn")) in ENDINGS:
            data["reason"] = ENDINGS[(session_id, data["turn"])]
        elif event["type"] == "tool/result" and session_id == "check-sql":
            block = {**data["message"]["content"][0], "isError": True}
            block["content"] = [{"type": "text", "text": 'syntax error at or near "SELEC" (line 3)\n'}]
            data["message"] = {**data["message"], "content": [block]}
            data["error"] = {"name": "ToolError", "code": "EXIT_NONZERO"}
        out.append(event)
    return out


def run(
    session_id: str, *, start: int, turns: int = 1, payload: Any = None, tools: int = 1, chunks: int = 4
) -> EventLog:
    """A realistic healthy log: turns with a user message, tool rounds and an answer."""
    log = EventLog(session_id, time=start)
    for turn in range(turns):
        log.turn_start()
        log.user(f"task {turn + 1} for {session_id}")
        if payload is not None and turn == 0:
            log.descriptor(payload)
        for call in range(tools):
            log.tool_round(f"call-{session_id}-{turn}-{call}", f"result {call} of turn {turn + 1}\n" * 3, step=call + 1)
        log.assistant(f"Done with task {turn + 1}.", chunks=chunks, step=tools + 1)
        log.turn_end()
    return log


def child(
    root: str,
    session_id: str,
    parent: str,
    *,
    created: int,
    cwd: str | None,
    payload: Any,
    depth: int = 1,
    turns: int = 1,
    tail: bytes = b"",
    events: list[dict[str, Any]] | None = None,
    seed_length: int | None = None,
    route: tuple[str, str] = ("deepseek", "deepseek-chat"),
) -> None:
    """Write one subagent child (its messages from ``route``'s model)."""
    head = header(
        session_id,
        created_at=BASE + created,
        cwd=cwd,
        parent=parent,
        subagent=True,
        delegation_depth=depth,
        seed_length=seed_length,
    )
    log_events = (
        events if events is not None else run(session_id, start=BASE + created, turns=turns, payload=payload).events
    )
    write_session(root, head, shape(log_events, session_id, route), COMPRESSION, tail=tail)


def main(out: str) -> None:
    """Write the sample corpus under ``out``."""
    if os.path.exists(out):
        sys.exit(f"{out} exists; remove it first (the generator never overwrites)")
    web, lab = "/home/dev/projects/webapp", "/srv/research/agents"

    # Project webapp: a run with a three-level subagent tree and a fork.
    root_log = run("run-webapp-1", start=BASE, turns=3, tools=2)
    root_events = shape(root_log.events, "run-webapp-1", ("deepseek", "deepseek-chat"))
    write_session(out, header("run-webapp-1", created_at=BASE, cwd=web), root_events, COMPRESSION)
    child(
        out,
        "auth-refactor",
        "run-webapp-1",
        created=1_000,
        cwd=web,
        payload=descriptor("continuable", label="Refactor the auth module", agentModel="deepseek-chat"),
        turns=2,
    )
    child(
        out,
        "scan-tests",
        "auth-refactor",
        created=2_000,
        cwd=web,
        depth=2,
        payload=descriptor("one-shot", label="Find tests touching auth"),
    )
    child(
        out,
        "write-migration",
        "auth-refactor",
        created=2_500,
        cwd=web,
        depth=2,
        payload=descriptor(
            "continuable", label="Write the session-table migration", toolFilter={"allow": ["read_file", "write_file"]}
        ),
    )
    child(
        out,
        "check-sql",
        "write-migration",
        created=3_000,
        cwd=web,
        depth=3,
        payload=descriptor("one-shot", label="Lint the SQL"),
    )
    child(
        out,
        "search-docs",
        "run-webapp-1",
        created=1_500,
        cwd=web,
        payload=descriptor("one-shot", label="Search the framework docs", provider="explore"),
    )
    # Damaged children, one per kind.
    killed = run(
        "torn-writer", start=BASE + 4_000, payload=descriptor("continuable", label="Crashed mid-write (torn tail)")
    )
    child(
        out,
        "torn-writer",
        "run-webapp-1",
        created=4_000,
        cwd=web,
        payload=None,
        events=killed.events[:-1],  # killed before its turn/end: the torn record is the last thing written
        tail=b'{"type":"assistant/chunk","seq":99,"ti',
    )
    garbage = run("garbage-line", start=BASE + 4_100, payload=descriptor("continuable", label="Garbage line")).events
    child(
        out,
        "garbage-line",
        "run-webapp-1",
        created=4_100,
        cwd=web,
        payload=None,
        events=garbage[:3],
        tail=b"#### not json ####\n" + b"".join(dumps(e) + b"\n" for e in garbage[3:]),
    )
    child(
        out,
        "bad-descriptor",
        "run-webapp-1",
        created=4_200,
        cwd=web,
        payload={"version": 2, "mode": "continuable", "provider": "spawn"},
    )
    child(out, "no-descriptor", "run-webapp-1", created=4_300, cwd=web, payload=None)
    child(
        out,
        "future-descriptor",
        "run-webapp-1",
        created=4_400,
        cwd=web,
        payload={"version": 3, "mode": "continuable", "provider": "spawn", "label": "From a newer harness"},
    )
    unknown = run("unknown-event", start=BASE + 4_500, payload=descriptor("one-shot", label="Newer event type"))
    unknown.add("telemetry/flush", {"bytes": 12})
    child(out, "unknown-event", "run-webapp-1", created=4_500, cwd=web, payload=None, events=unknown.events)

    # An ordinary fork of the run (seed = the run's first turn), with its own subagent.
    seed = [e for e in root_events if e["seq"] < 12]
    fork = EventLog("fork-webapp-1", time=BASE + 5_000, events=[dict(e) for e in seed], turn=1)
    fork.turn_start()
    fork.user("continue from the first turn on a branch")
    fork.turn_end()
    write_session(
        out,
        header("fork-webapp-1", created_at=BASE + 5_000, cwd=web, parent="run-webapp-1", seed_length=len(seed)),
        shape(fork.events, "fork-webapp-1", ("deepseek", "deepseek-chat")),
        COMPRESSION,
    )
    child(
        out,
        "branch-helper",
        "fork-webapp-1",
        created=6_000,
        cwd=web,
        payload=descriptor("continuable", label="Branch helper"),
    )
    # A stillborn subagent fork: its only descriptor is the ancestor's, replayed in the seed.
    parent_events = run(
        "seed-source", start=BASE + 6_500, payload=descriptor("continuable", label="Seed source")
    ).events
    child(out, "seed-source", "run-webapp-1", created=6_500, cwd=web, payload=None, events=parent_events)
    child(
        out,
        "stillborn-fork",
        "seed-source",
        created=7_000,
        cwd=web,
        depth=2,
        payload=None,
        events=[dict(e) for e in parent_events],
        seed_length=len(parent_events),
    )

    # Project research: a run with a wide fan-out and two own descriptors on one child.
    research = ROUTES["run-research-7"]
    write_session(
        out,
        header("run-research-7", created_at=BASE + 86_400_000, cwd=lab),
        shape(run("run-research-7", start=BASE + 86_400_000, turns=2).events, "run-research-7", research),
        COMPRESSION,
    )
    for i, label in enumerate(["Survey papers", "Summarise results", "Plot metrics", "Draft the abstract"]):
        child(
            out,
            f"rs-{i:02d}",
            "run-research-7",
            created=86_401_000 + i * 10,
            cwd=lab,
            payload=descriptor("one-shot" if i % 2 else "continuable", label=label),
            route=research,
        )
    twice = run("two-descriptors", start=BASE + 86_402_000, payload=descriptor("continuable", label="First label"))
    twice.add("subagent/descriptor", descriptor("continuable", label="Second label"))
    child(
        out,
        "two-descriptors",
        "run-research-7",
        created=86_402_000,
        cwd=lab,
        payload=None,
        events=twice.events,
        route=research,
    )

    # No cwd: an unnamed run with a unicode label, a header-only child and an unreadable file.
    local = ROUTES["scratch"]
    write_session(
        out,
        header("scratch", created_at=BASE + 172_800_000),
        shape(run("scratch", start=BASE + 172_800_000).events, "scratch", local),
        COMPRESSION,
    )
    child(
        out,
        "résumé-écrit",
        "scratch",
        created=172_801_000,
        cwd=None,
        payload=descriptor("continuable", label="Rédiger le résumé — 日本語"),
        route=local,
    )
    child(out, "header-only", "scratch", created=172_802_000, cwd=None, payload=None, events=[])
    write_file(os.path.join(out, "_no-cwd", "empty-file", "session.jsonl"), b"")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample"))
