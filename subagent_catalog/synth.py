"""Synthesize realistic session corpora in the real on-disk format.

Benchmarks and scale tests need large corpora that look like archived dsh
runs: several project directories, root sessions, subagents (one-shot and
continuable, spawned fresh or forked with a replayed seed), ordinary forks,
wide fan-out under a few parents, trees up to five levels deep, mostly small
logs with a long tail of multi-thousand-event ones, streamed chunk runs
stored as packed rows, tool results of 1–50 KB, and a few percent of logs
damaged in the ways archives get damaged.

Everything is a pure function of ``(sessions, seed)``: the corpus plan is
drawn serially from one generator, and each session's events from its own
generator, so a process pool writes byte-identical corpora for a seed.
The logs are written with :mod:`subagent_catalog.writer` (header shapes,
canonical paths, refusing to overwrite); this module adds the richer event
shapes and packs reasoning and tool-call chunk runs as well as text runs.

Run ``python -m subagent_catalog.synth OUT --sessions N --seed S``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

import orjson

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.paths import Compression
from subagent_catalog.writer import EventLog, descriptor, dumps, header, log_path, write_file

SessionKind = Literal["root", "subagent", "fork"]
DamageKind = Literal[
    "torn-tail",
    "garbage-line",
    "seq-gap",
    "unknown-event-type",
    "malformed-descriptor",
    "unknown-descriptor-version",
    "no-descriptor",
    "header-only",
    "empty-file",
]
DAMAGE_KINDS: tuple[DamageKind, ...] = (
    "torn-tail",
    "garbage-line",
    "seq-gap",
    "unknown-event-type",
    "malformed-descriptor",
    "unknown-descriptor-version",
    "no-descriptor",
    "header-only",
    "empty-file",
)
# Damage that needs a subagent child to mean anything (it is about identity).
_DESCRIPTOR_DAMAGE = frozenset({"malformed-descriptor", "unknown-descriptor-version", "no-descriptor"})

MAX_DEPTH = 5
MAX_HUB_FANOUT = 400
MAX_FANOUT = 40
BASE_TIME_MS = 1_760_000_000_000
PROJECTS = (
    "webapp",
    "api-server",
    "data-pipeline",
    "ml-infra",
    "docs-site",
    "cli-tools",
    "mobile-app",
    "billing",
    "search",
    "auth-service",
    "infra",
    "analytics",
)
TASKS = (
    "Find the flaky CI test",
    "Refactor config loader",
    "Map module dependencies",
    "Add retry with jitter to the HTTP client",
    "Profile the slow endpoint",
    "Summarize error logs",
    "Reproduce crash on resume",
    "Write migration for the orders table",
    "Review the auth middleware",
    "Update API docs",
    "Bump dependencies and fix breakage",
    "Investigate memory growth in the worker",
    "Port the parser to streaming",
    "Audit logging for secrets",
    "Résumé des tests échoués",
    "日本語 ラベルの確認",
)
_WORD_TEXT = """the a of to and in is for that on with this it as be are by we from at or an not
    session log file parser reader writer test suite retry timer request response header
    descriptor subagent fork seed parent child tree depth label mode provider continuable
    one-shot build config loader module endpoint latency profile memory worker queue cache
    index table column frame row batch stream chunk token usage tool call result error
    patch diff commit branch merge review docs api client server socket timeout backoff
    jitter flaky linux macos windows python typescript rust go function class method
    return value null undefined string number array object map set promise async await
    Résumé naïve café 日本語 ラベル — “quoted” ✓ λ"""
WORDS = tuple(_WORD_TEXT.split())
CODE_LINES = (
    "export function projectKey(cwd: string): string {",
    "  const parts = cwd.split(/[\\\\/:]+/).filter(Boolean);",
    "  return `--${parts.join('-')}--`;",
    "}",
    "def read_log(path: str) -> list[dict[str, Any]]:",
    "    with open(path, 'rb') as handle:",
    "        return [json.loads(line) for line in handle]",
    "FAILED tests/test_loader.py::test_resume - AssertionError: expected 3, got 2",
    "error[E0308]: mismatched types --> src/main.rs:42:17",
    "  at Object.<anonymous> (/srv/app/src/retry.ts:88:11)",
    "2026-01-14T09:12:03.114Z WARN  worker[7]: queue depth 1834 above threshold",
    "| id | status | duration_ms |",
    "|----|--------|-------------|",
    '{"level":"info","msg":"request done","status":200,"ms":12.4}',
)


@dataclass(frozen=True)
class SessionPlan:
    """One session of a synthetic corpus, decided before any event is drawn.

    ``parent`` and the other indices refer to positions in the plan list;
    ``size`` is the target count of the session's own events; ``seed_pick``
    (in ``[0, 1)``) chooses where a seeded session cuts its parent's log.
    """

    index: int
    id: str
    kind: SessionKind
    cwd: str | None
    parent: int | None
    depth: int
    delegation_depth: int
    created_at: int
    size: int
    seeded: bool
    seed_pick: float
    mode: Literal["one-shot", "continuable"] | None = None
    provider: Literal["spawn", "fork"] | None = None
    label: str | None = None
    extra: tuple[tuple[str, Any], ...] = ()
    damage: DamageKind | None = None
    damage_variant: int = 0


@dataclass(frozen=True)
class DamagedSession:
    """A session the synthesizer damaged on purpose, and how."""

    session_id: str
    path: str
    kind: DamageKind
    detail: str


@dataclass
class SynthStats:
    """What :func:`generate` wrote.

    ``damaged`` lists the deliberately damaged sessions (paths relative to
    the root); ``max_depth`` counts edges from a root session (children are
    1); ``max_fanout`` is the largest number of direct children of one session.
    """

    root: str
    compression: Compression
    seed: int
    sessions: int
    roots: int
    subagents: int
    forks: int
    seeded: int
    projects: int
    max_depth: int
    max_fanout: int
    events: int
    bytes: int
    largest_events: int
    seconds: float
    damaged: list[DamagedSession] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The stats as plain JSON values.

        Examples:
            >>> SynthStats("r", "none", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0).to_json()["damaged"]
            []
        """
        return asdict(self)


# --- the plan ---------------------------------------------------------------------------------


def _log_uniform(rng: random.Random, low: float, high: float) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _own_size(rng: random.Random, kind: SessionKind, hub: bool) -> int:
    if rng.random() < 0.025:
        return _log_uniform(rng, 1500, 8000)
    if hub:
        return _log_uniform(rng, 200, 1200)
    if kind == "root":
        return _log_uniform(rng, 40, 600)
    return _log_uniform(rng, 20, 300)


def _descriptor_extra(rng: random.Random, mode: str) -> tuple[tuple[str, Any], ...]:
    if mode != "continuable":
        return ()
    extra: list[tuple[str, Any]] = []
    if rng.random() < 0.2:
        extra += [
            ("agentProvider", "deepseek-official"),
            ("agentModel", rng.choice(["deepseek-v4", "deepseek-v4-flash"])),
        ]
    if rng.random() < 0.1:
        extra.append(("persona", rng.choice(["reviewer", "tester", "archivist"])))
    if rng.random() < 0.1:
        side = rng.choice(["allow", "deny", "both"])
        tool_filter: dict[str, list[str]] = {}
        if side in ("allow", "both"):
            tool_filter["allow"] = ["read_file", "grep"]
        if side in ("deny", "both"):
            tool_filter["deny"] = ["shell"]
        extra.append(("toolFilter", tool_filter))
    return tuple(extra)


def plan_corpus(sessions: int, seed: int, *, damaged_fraction: float = 0.03) -> list[SessionPlan]:
    """Decide every session of a corpus: tree, kinds, sizes, damage.

    About 30 % of sessions are subagents and 15 % ordinary forks; a few
    root sessions fan out to up to :data:`MAX_HUB_FANOUT` subagents; trees
    are at most :data:`MAX_DEPTH` edges deep. Parents always come before
    their children in the list.

    Examples:
        >>> plans = plan_corpus(200, 7)
        >>> plans[0].kind, plans[0].parent, len(plans)
        ('root', None, 200)
        >>> plan_corpus(200, 7) == plans
        True
        >>> max(p.depth for p in plans) <= MAX_DEPTH
        True
    """
    if sessions < 1:
        raise SubagentCatalogError(f"cannot plan {sessions} sessions", hint="pass --sessions 1 or more")
    rng = random.Random(f"subagent_catalog.synth:plan:{seed}")
    n_sub = round(sessions * 0.30)
    n_fork = round(sessions * 0.15)
    n_root = max(1, sessions - n_sub - n_fork)
    n_sub = sessions - n_root - n_fork
    sub: list[SessionKind] = ["subagent"]
    fork: list[SessionKind] = ["fork"]
    root: list[SessionKind] = ["root"]
    kinds = sub * n_sub + fork * n_fork + root * (n_root - 1)
    rng.shuffle(kinds)
    kinds.insert(0, "root")
    root_positions = [i for i, kind in enumerate(kinds) if kind == "root"]
    hub_count = 0 if sessions < 50 else 1 + sessions // 4000
    hub_high = max(2, min(MAX_HUB_FANOUT, n_sub // (2 * hub_count))) if hub_count else 0
    early = root_positions[: max(1, len(root_positions) // 2)]
    hub_positions = set(rng.sample(early, min(hub_count, len(early))))
    projects = [f"/home/dev/projects/{name}" for name in PROJECTS[: max(3, min(len(PROJECTS), sessions // 400))]]

    plans: list[SessionPlan] = []
    fanout: list[int] = []
    quota: dict[int, int] = {}
    last_child_time: dict[int, int] = {}
    recent: deque[int] = deque(maxlen=64)
    remaining_sub = n_sub
    for index, kind in enumerate(kinds):
        session_id = _uuid(rng)
        if kind == "root":
            cwd = None if rng.random() < 0.03 else rng.choice(projects)
            hub = index in hub_positions
            if hub:
                quota[index] = rng.randint(max(2, hub_high // 2), hub_high)
            elif rng.random() < 0.006:
                quota[index] = rng.randint(5, 25)  # a parent that delegates a handful of tasks at once
            plans.append(
                SessionPlan(
                    index=index,
                    id=session_id,
                    kind="root",
                    cwd=cwd,
                    parent=None,
                    depth=0,
                    delegation_depth=0,
                    created_at=BASE_TIME_MS + rng.randint(0, sessions * 60_000),
                    size=_own_size(rng, "root", hub),
                    seeded=False,
                    seed_pick=0.0,
                )
            )
            fanout.append(0)
            recent.append(index)
            continue
        parent = _pick_parent(rng, kind, quota, remaining_sub, recent, fanout)
        if kind == "subagent":
            remaining_sub -= 1
        parent_plan = plans[parent]
        fanout[parent] += 1
        if parent in quota:
            quota[parent] -= 1
            if quota[parent] <= 0:
                del quota[parent]
        created = parent_plan.created_at + rng.randint(2_000, 3_600_000)
        if parent in last_child_time and rng.random() < 0.05:
            created = last_child_time[parent]  # a tie: siblings started in the same millisecond
        last_child_time[parent] = created
        depth = parent_plan.depth + 1
        if kind == "subagent":
            provider: Literal["spawn", "fork"] = "fork" if rng.random() < 0.25 else "spawn"
            mode: Literal["one-shot", "continuable"] = "one-shot" if rng.random() < 0.55 else "continuable"
            label = rng.choice(TASKS)
            if mode == "one-shot" and rng.random() < 0.15:
                label_or_none: str | None = None
            else:
                label_or_none = label
            plan = SessionPlan(
                index=index,
                id=session_id,
                kind="subagent",
                cwd=parent_plan.cwd,
                parent=parent,
                depth=depth,
                delegation_depth=parent_plan.delegation_depth + 1,
                created_at=created,
                size=_own_size(rng, "subagent", False),
                seeded=provider == "fork",
                seed_pick=rng.random(),
                mode=mode,
                provider=provider,
                label=label_or_none,
                extra=_descriptor_extra(rng, mode),
            )
        else:
            plan = SessionPlan(
                index=index,
                id=session_id,
                kind="fork",
                cwd=parent_plan.cwd,
                parent=parent,
                depth=depth,
                delegation_depth=parent_plan.delegation_depth,
                created_at=created,
                size=_own_size(rng, "fork", False),
                seeded=True,
                seed_pick=rng.random(),
            )
        plans.append(plan)
        fanout.append(0)
        if depth < MAX_DEPTH:
            recent.append(index)
    return _assign_damage(plans, rng, damaged_fraction)


def _pick_parent(
    rng: random.Random,
    kind: SessionKind,
    quota: dict[int, int],
    remaining_sub: int,
    recent: deque[int],
    fanout: list[int],
) -> int:
    if kind == "subagent" and quota:
        share = sum(quota.values()) / max(1, remaining_sub)
        if rng.random() < min(1.0, 1.5 * share):
            return min(quota)
    for _ in range(8):
        back = min(len(recent) - 1, int(rng.expovariate(1 / 6)))
        candidate = recent[-1 - back]
        if fanout[candidate] < MAX_FANOUT and candidate not in quota:
            return candidate
    return recent[-1] if fanout[recent[-1]] < MAX_FANOUT else recent[0]


def _assign_damage(plans: list[SessionPlan], rng: random.Random, fraction: float) -> list[SessionPlan]:
    count = round(len(plans) * fraction)
    if count <= 0:
        return plans
    seeded_parents = {p.parent for p in plans if p.seeded}
    subagent_parents = {p.parent for p in plans if p.kind == "subagent"}
    eligible = [
        p.index for p in plans if p.index not in seeded_parents and p.index not in subagent_parents and p.index > 0
    ]
    subagents = [i for i in eligible if plans[i].kind == "subagent"]
    kinds = [DAMAGE_KINDS[i % len(DAMAGE_KINDS)] for i in range(count)]
    rng.shuffle(kinds)
    taken: set[int] = set()
    out = list(plans)
    for kind in kinds:
        pool = subagents if kind in _DESCRIPTOR_DAMAGE or rng.random() < 0.7 else eligible
        free = [i for i in pool if i not in taken] if len(taken) > len(pool) // 2 else pool
        for _ in range(32):
            if not free:
                break
            choice = rng.choice(free)
            if choice not in taken:
                taken.add(choice)
                out[choice] = _replace_damage(plans[choice], kind, rng.randrange(1_000_000))
                break
    return out


def _replace_damage(plan: SessionPlan, kind: DamageKind, variant: int) -> SessionPlan:
    return replace(plan, damage=kind, damage_variant=variant)


# --- events -----------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _text_source(seed: int) -> str:
    rng = random.Random(f"subagent_catalog.synth:text:{seed}")
    parts: list[str] = []
    size = 0
    while size < 300_000:
        if rng.random() < 0.15:
            piece = rng.choice(CODE_LINES) + "\n"
        else:
            piece = " ".join(rng.choices(WORDS, k=rng.randint(6, 18))) + ".\n"
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


class SynthLog(EventLog):
    """An :class:`~subagent_catalog.writer.EventLog` with the event shapes of real dsh runs.

    Examples:
        >>> log = SynthLog("s", rng=random.Random(1), text="lorem ipsum dolor sit amet " * 50)
        >>> log.turn_start()
        >>> log.text_step(1, deltas=3)
        >>> log.turn_end()
        >>> [e["type"] for e in log.events][:3]
        ['turn/start', 'step/start', 'assistant/chunk']
    """

    def __init__(self, session_id: str, *, rng: random.Random, text: str, time_ms: int = BASE_TIME_MS) -> None:
        super().__init__(session_id, time=time_ms)
        self.rng = rng
        self.text = text

    def snippet(self, size: int) -> str:
        """A slice of the text source about ``size`` characters long."""
        size = max(1, min(size, len(self.text) - 1))
        start = self.rng.randrange(0, len(self.text) - size)
        return self.text[start : start + size]

    def words(self, count: int) -> list[str]:
        """``count`` stream deltas (a word each, with its leading space)."""
        return [" " + word for word in self.rng.choices(WORDS, k=count)]

    def message_id(self) -> str:
        """A fresh message id."""
        return _uuid(self.rng)

    def gap(self, low: int, high: int) -> int:
        """A time step in milliseconds."""
        return self.rng.randint(low, high)

    def spliced(self, text: str | None) -> None:
        """An inbox splice: a queued user message, or the removal of one."""
        if text is None:
            self.add(
                "agent/inbox/spliced", {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}, dt=0
            )
            return
        message = {
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"},
            "role": "user",
            "id": self.message_id(),
        }
        self.add(
            "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [message]}, dt=self.gap(1000, 90_000)
        )

    def user_message(self, text: str, *, source: dict[str, Any] | None = None) -> None:
        """A ``user/message`` on the surface."""
        self.add(
            "user/message",
            {
                "content": [{"type": "text", "text": text}],
                "source": source or {"kind": "user"},
                "role": "user",
                "id": self.message_id(),
            },
            dt=self.gap(0, 30),
            surfaceOp="append",
        )

    def request_header(self, size: int) -> None:
        """The request header a step sends (system prompt of ``size`` characters)."""
        self.add(
            "request/header",
            {
                "header": {
                    "config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"},
                    "system": self.snippet(size),
                }
            },
            dt=0,
        )

    def chunk(self, step: int, chunk: dict[str, Any], dt: int) -> None:
        """One ``assistant/chunk`` event."""
        self.add("assistant/chunk", {"turn": self.turn, "step": step, "chunk": chunk}, dt=dt)

    def stream(self, step: int, kind: Literal["text", "reasoning"], index: int, deltas: int) -> str:
        """A streamed text or reasoning block: start, deltas, end; returns the text."""
        pieces = self.words(deltas)
        self.chunk(step, {"type": "block-start", "index": index, "blockType": kind}, self.gap(100, 900))
        delta_type = "text-delta" if kind == "text" else "reasoning-delta"
        for piece in pieces:
            self.chunk(step, {"type": delta_type, "index": index, "text": piece}, self.gap(0, 40))
        body = "".join(pieces)
        self.chunk(step, {"type": "block-end", "index": index, "block": {"type": kind, "text": body}}, self.gap(0, 5))
        return body

    def finish(self, step: int, reason: str) -> None:
        """Usage and finish chunks closing a model response."""
        usage = {
            "inputTokens": self.rng.randint(800, 60_000),
            "outputTokens": self.rng.randint(20, 2_000),
            "cacheReadTokens": self.rng.randint(0, 50_000),
            "reasoningTokens": self.rng.randint(0, 1_500),
        }
        self.chunk(step, {"type": "usage", "usage": usage}, self.gap(20, 200))
        self.chunk(step, {"type": "finish", "reason": {"kind": reason}}, 0)

    def assistant_message(self, step: int, content: list[dict[str, Any]]) -> None:
        """The assistant message a step settles on."""
        message = {
            "role": "assistant",
            "content": content,
            "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"},
            "id": self.message_id(),
        }
        self.add(
            "assistant/message",
            {"turn": self.turn, "step": step, "message": message},
            dt=self.gap(1, 5),
            surfaceOp="append",
        )

    def text_step(self, step: int, *, deltas: int, reasoning: int = 0, first: str | None = None) -> None:
        """A step that ends with a text answer."""
        self.add("step/start", {"turn": self.turn, "step": step}, dt=self.gap(5, 40))
        if first is not None:
            self.user_message(first)
            self.request_header(self.rng.randint(2_000, 6_000))
        if reasoning:
            self.stream(step, "reasoning", 0, reasoning)
        body = self.stream(step, "text", 1 if reasoning else 0, deltas)
        self.finish(step, "stop")
        self.assistant_message(step, [{"type": "text", "text": body}])
        self.add("step/end", {"turn": self.turn, "step": step}, dt=self.gap(1, 3))

    def tool_step(
        self, step: int, *, arg_deltas: int, reasoning: int, result_size: int, first: str | None = None
    ) -> None:
        """A step that calls a tool and records its result."""
        self.add("step/start", {"turn": self.turn, "step": step}, dt=self.gap(5, 40))
        if first is not None:
            self.user_message(first)
            self.request_header(self.rng.randint(2_000, 6_000))
        if self.rng.random() < 0.3:
            self.add(
                "request/context",
                {"provider": "deepseek-official", "model": "deepseek-v4-flash", "contextWindow": 1_000_000},
                dt=0,
            )
        index = 0
        if reasoning:
            self.stream(step, "reasoning", 0, reasoning)
            index = 1
        call_id = f"call_{index:02d}_{self.rng.getrandbits(96):024x}"
        name = self.rng.choice(["read_file", "grep", "shell", "edit_file", "list_dir"])
        path = self.rng.choice(["src/retry.ts", "src/loader.py", "tests/test_loader.py", "README.md", "Cargo.toml"])
        arguments = json.dumps({"path": path, "query": self.snippet(self.rng.randint(10, 60)).strip()})
        step_size = max(1, len(arguments) // arg_deltas)
        pieces = [arguments[i : i + step_size] for i in range(0, len(arguments), step_size)]
        self.chunk(step, {"type": "block-start", "index": index, "blockType": "tool-call"}, self.gap(50, 500))
        for piece in pieces:
            self.chunk(
                step,
                {"type": "tool-call-delta", "index": index, "id": call_id, "name": name, "argumentsDelta": piece},
                self.gap(0, 30),
            )
        self.chunk(
            step,
            {
                "type": "block-end",
                "index": index,
                "block": {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments},
            },
            0,
        )
        self.finish(step, "tool-calls")
        self.assistant_message(step, [{"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}])
        call_seq = len(self.events)
        self.add(
            "tool/call",
            {"turn": self.turn, "step": step, "callId": call_id, "name": name, "arguments": arguments},
            dt=self.gap(1, 5),
        )
        result = {
            "source": {"kind": "tool", "callId": call_id},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "content": [{"type": "text", "text": self.snippet(result_size)}],
                    "isError": self.rng.random() < 0.05,
                }
            ],
            "role": "user",
            "id": self.message_id(),
        }
        self.add(
            "tool/result",
            {"turn": self.turn, "step": step, "message": result},
            dt=self.gap(10, 30_000),
            sourceEventSeqs=[call_seq],
            surfaceOp="append",
        )
        self.add("step/end", {"turn": self.turn, "step": step}, dt=self.gap(1, 3))


def _descriptor_payload(plan: SessionPlan) -> Any:
    assert plan.mode is not None and plan.provider is not None
    payload: Any = descriptor(plan.mode, label=plan.label, provider=plan.provider, **dict(plan.extra))
    if plan.damage == "unknown-descriptor-version":
        payload["version"] = (3, 1, 3)[plan.damage_variant % 3]
    elif plan.damage == "malformed-descriptor":
        variant = plan.damage_variant % 6
        if variant == 0:
            payload["version"] = "2"
        elif variant == 1:
            payload = {"version": 2, "mode": "continuable", "provider": plan.provider}
        elif variant == 2:
            payload["lable"] = plan.label or "typo"
        elif variant == 3:
            payload = {**payload, "mode": "continuable", "label": payload.get("label") or "x", "toolFilter": {}}
        elif variant == 4:
            payload = {**payload, "mode": "one-shot", "persona": "reviewer"}
            payload.pop("toolFilter", None)
        else:
            payload = None
    return payload


_WORKER: dict[str, Any] = {}


def _plans() -> Sequence[SessionPlan]:
    plans: Sequence[SessionPlan] = _WORKER["plans"]
    return plans


@lru_cache(maxsize=48)
def _session_events(index: int) -> tuple[tuple[dict[str, Any], ...], int | None]:
    """The events of plan ``index`` of the current synthesis and its seed length.

    Seeded sessions start with their parent's events up to the end of one of
    its turns (their parent's descriptor included); the events never depend
    on the worker or on the order sessions are written in.
    """
    plan = _plans()[index]
    seed: int = _WORKER["seed"]
    rng = random.Random(f"subagent_catalog.synth:events:{seed}:{index}")
    log = SynthLog(plan.id, rng=rng, text=_text_source(seed), time_ms=plan.created_at)
    seed_length: int | None = None
    if plan.seeded and plan.parent is not None:
        parent_events, _ = _session_events(plan.parent)
        cuts = [i + 1 for i, event in enumerate(parent_events) if event["type"] == "turn/end"] or [len(parent_events)]
        cut = cuts[int(plan.seed_pick * len(cuts))]
        log.events = list(parent_events[:cut])
        seed_length = cut
        log.time = max(plan.created_at, int(parent_events[cut - 1]["time"]))
        log.turn = max((int(e["data"]["turn"]) for e in log.events if e["type"] == "turn/start"), default=0)
        log.add("session/end-seed", {}, dt=1)
    pending_descriptor = plan.kind == "subagent" and plan.damage != "no-descriptor"
    if plan.kind == "subagent" and not plan.seeded:
        # A spawned child starts from its descriptor, written before its first turn.
        log.add("approval/policy", {"policy": "never", "source": "delegation"}, dt=0)
        if pending_descriptor:
            log.descriptor(_descriptor_payload(plan))
            pending_descriptor = False
        log.add("session/end-seed", {}, dt=0)
    own_start = len(log.events)
    damage_at = own_start + max(1, plan.size // 2)
    unknown_done = plan.damage != "unknown-event-type"
    turn = 0
    while len(log.events) - own_start < plan.size or turn == 0:
        turn += 1
        task = rng.choice(TASKS)
        log.spliced(f"Task: {task}. {log.snippet(rng.randint(20, 200))}")
        log.turn_start()
        log.spliced(None)
        if pending_descriptor:
            log.descriptor(_descriptor_payload(plan))
            pending_descriptor = False
        if turn == 1 and seed_length is None:
            log.add(
                "session/title",
                {"title": task[:24], "messageSeqs": [len(log.events) + 2], "source": {"kind": "fallback"}},
                dt=0,
            )
        steps = 1 + min(12, int(rng.expovariate(1 / 1.8)))
        budget = max(4, (plan.size - (len(log.events) - own_start)) // (steps * 2))
        for step in range(1, steps + 1):
            first = f"Task: {task}." if step == 1 else None
            reasoning = rng.randint(3, min(40, budget)) if rng.random() < 0.6 else 0
            if step < steps:
                log.tool_step(
                    step,
                    arg_deltas=rng.randint(2, 12),
                    reasoning=reasoning,
                    result_size=_log_uniform(rng, 1_024, 51_200 if rng.random() < 0.3 else 8_192),
                    first=first,
                )
            else:
                log.text_step(step, deltas=rng.randint(3, max(4, min(60, budget))), reasoning=reasoning, first=first)
            if not unknown_done and len(log.events) >= damage_at:
                log.add("x-vendor/trace", {"span": rng.getrandbits(32)}, dt=0)
                unknown_done = True
        if rng.random() < 0.15:
            log.add(
                "todo/write",
                {"todos": [{"content": rng.choice(TASKS), "status": "in_progress"}]},
                dt=rng.randint(1, 50),
            )
        if rng.random() < 0.05:
            log.add("x-future/telemetry", {"v": 1}, dt=0, ignorable=True)
        log.turn_end()
    if not unknown_done:
        log.add("x-vendor/trace", {"span": 0}, dt=0)
        log.turn_start()
        log.turn_end()
    return tuple(log.events), seed_length


# --- encoding ---------------------------------------------------------------------------------

_FLUSH_AFTER = frozenset(
    {"step/end", "turn/end", "session/end-seed", "subagent/descriptor", "tool/result", "todo/write"}
)
_BATCH_LIMIT = 64


def _batches(events: Sequence[dict[str, Any]], seed_length: int | None) -> list[list[dict[str, Any]]]:
    out: list[list[dict[str, Any]]] = []
    start = seed_length or 0
    for low in range(0, start, 512):
        out.append(list(events[low : min(start, low + 512)]))
    current: list[dict[str, Any]] = []
    for event in events[start:]:
        current.append(event)
        if event["type"] in _FLUSH_AFTER or len(current) >= _BATCH_LIMIT:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def _packable(event: dict[str, Any]) -> tuple[Any, ...] | None:
    if event["type"] != "assistant/chunk" or len(event) != 4:
        return None
    data = event["data"]
    chunk = data.get("chunk") if isinstance(data, dict) else None
    if not isinstance(chunk, dict):
        return None
    kind = chunk.get("type")
    if kind in ("text-delta", "reasoning-delta") and len(chunk) == 3:
        return (kind, data["turn"], data["step"], chunk["index"])
    if kind == "tool-call-delta" and len(chunk) == 5:
        return (kind, data["turn"], data["step"], chunk["index"], chunk["id"], chunk["name"])
    return None


_ROW_TAG = {"text-delta": "text-chunks", "reasoning-delta": "reasoning-chunks", "tool-call-delta": "tool-call-chunks"}


def pack_rows(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pack runs of 2+ text, reasoning or tool-call deltas into packed chunk rows.

    Runs share turn, step and block index (and call id and name); members
    have consecutive seqs. Everything else is kept as is.

    Examples:
        >>> evs = [{"type": "assistant/chunk", "seq": i, "time": 5 + i,
        ...         "data": {"turn": 1, "step": 1, "chunk": {"type": "reasoning-delta", "index": 0, "text": "w"}}}
        ...        for i in range(3)]
        >>> [(r["type"], r["seq0"], r["data"]["dt"]) for r in pack_rows(evs)]
        [('reasoning-chunks', 0, [1, 1])]
    """
    out: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []
    run_key: tuple[Any, ...] | None = None

    def flush() -> None:
        if len(run) >= 2 and run_key is not None:
            first = run[0]
            data: dict[str, Any] = {"turn": run_key[1], "step": run_key[2], "index": run_key[3]}
            if run_key[0] == "tool-call-delta":
                data["id"] = run_key[4]
                data["name"] = run_key[5]
            data["dt"] = [run[i + 1]["time"] - run[i]["time"] for i in range(len(run) - 1)]
            member = "argumentsDelta" if run_key[0] == "tool-call-delta" else "text"
            data["args" if run_key[0] == "tool-call-delta" else "texts"] = [e["data"]["chunk"][member] for e in run]
            out.append({"type": _ROW_TAG[run_key[0]], "seq0": first["seq"], "time0": first["time"], "data": data})
        else:
            out.extend(run)
        run.clear()

    for event in events:
        key = _packable(event)
        if key is not None and run and key == run_key and event["seq"] == run[-1]["seq"] + 1:
            run.append(event)
            continue
        flush()
        run_key = key
        if key is not None:
            run.append(event)
        else:
            out.append(event)
    flush()
    return out


def _dump(record: Any) -> bytes:
    try:
        encoded: bytes = orjson.dumps(record)
        return encoded
    except TypeError:
        return dumps(record)


def _last_index(records: list[bytes], needle: bytes) -> int | None:
    for position in range(len(records) - 1, -1, -1):
        if needle in records[position]:
            return position
    return None


def encode_session(
    head: dict[str, Any],
    events: Sequence[dict[str, Any]],
    seed_length: int | None,
    compression: Compression,
    *,
    damage: DamageKind | None = None,
    rng: random.Random | None = None,
    compressor: Any = None,
) -> bytes:
    """The bytes of one synthetic log, with encoding-level damage applied.

    Records are grouped in write batches (the seed as one write, then a
    batch per step, tool result or turn end); zstd logs put each batch in
    its own checksummed frame after a header-only frame.

    Examples:
        >>> from subagent_catalog.writer import header
        >>> encode_session(header("a", created_at=1), [], None, "none", damage="empty-file")
        b''
        >>> encode_session(header("a", created_at=1), [], None, "none").count(b"\\n")
        1
    """
    rng = rng or random.Random(0)
    if damage == "empty-file":
        return b""
    head_line = _dump(head) + b"\n"
    batches = (
        []
        if damage == "header-only"
        else [[_dump(r) + b"\n" for r in pack_rows(b)] for b in _batches(events, seed_length)]
    )
    if damage in ("garbage-line", "seq-gap"):
        _damage_records(batches, damage, rng)
    tail_records: list[bytes] = []
    if damage == "torn-tail":
        turn = max((int(e["data"]["turn"]) for e in events if e["type"] == "turn/start"), default=0) + 1
        nxt = len(events)
        stamp = int(events[-1]["time"]) + 5 if events else int(head["createdAt"])
        tail_records = [
            _dump({"type": "turn/start", "seq": nxt, "time": stamp, "data": {"turn": turn}}) + b"\n",
            _dump({"type": "step/start", "seq": nxt + 1, "time": stamp + 3, "data": {"turn": turn, "step": 1}}) + b"\n",
        ]
    if compression == "none":
        data = head_line + b"".join(b"".join(batch) for batch in batches)
        if tail_records:
            torn = b"".join(tail_records)
            data += torn[: rng.randint(len(tail_records[0]) + 5, len(torn) - 2)]
        return data
    if compressor is None:
        import zstandard

        compressor = zstandard.ZstdCompressor(level=3, write_checksum=True)
    frames: list[bytes] = [compressor.compress(head_line)]
    frames.extend(compressor.compress(b"".join(batch)) for batch in batches)
    if tail_records:
        frame: bytes = compressor.compress(b"".join(tail_records))
        frames.append(frame[: max(6, int(len(frame) * rng.uniform(0.3, 0.9)))])
    return b"".join(frames)


def _damage_records(batches: list[list[bytes]], damage: DamageKind, rng: random.Random) -> None:
    """Insert a garbage line or remove one record just before the last ``turn/end``."""
    flat = [(b, r) for b, batch in enumerate(batches) for r in range(len(batch))]
    ends = [i for i, (b, r) in enumerate(flat) if b'"type":"turn/end"' in batches[b][r]]
    if not ends or ends[-1] == 0:
        return
    b, r = flat[ends[-1]]
    if damage == "garbage-line":
        garbage = rng.choice([b'{"type":"step/start","seq":', b"\x00\x00\x00\x00", b"<<<<<<< HEAD", b""])
        batches[b].insert(r, garbage + b"\n")
        return
    for position in range(ends[-1] - 1, -1, -1):
        pb, pr = flat[position]
        record = batches[pb][pr]
        if b'"seq":' in record and b'"seq0":' not in record:
            del batches[pb][pr]
            return


# --- writing ----------------------------------------------------------------------------------


def _init_worker(plans: Sequence[SessionPlan], root: str, compression: Compression, seed: int) -> None:
    _WORKER.clear()
    _WORKER.update(plans=plans, root=root, compression=compression, seed=seed)
    _session_events.cache_clear()


def _head(plan: SessionPlan, seed_length: int | None) -> dict[str, Any]:
    parent = _plans()[plan.parent].id if plan.parent is not None else None
    return header(
        plan.id,
        created_at=plan.created_at,
        cwd=plan.cwd,
        parent=parent,
        seed_length=seed_length,
        subagent=plan.kind == "subagent",
        delegation_depth=plan.delegation_depth,
    )


def _write_one(index: int) -> tuple[int, str, int, int]:
    plan = _plans()[index]
    root: str = _WORKER["root"]
    compression: Compression = _WORKER["compression"]
    compressor = _WORKER.get("compressor")
    if compressor is None and compression == "zstd":
        import zstandard

        compressor = _WORKER["compressor"] = zstandard.ZstdCompressor(level=3, write_checksum=True)
    events, seed_length = _session_events(index)
    head = _head(plan, seed_length)
    rng = random.Random(f"subagent_catalog.synth:damage:{_WORKER['seed']}:{index}")
    data = encode_session(head, events, seed_length, compression, damage=plan.damage, rng=rng, compressor=compressor)
    path = write_file(log_path(root, head, compression), data)
    count = 0 if plan.damage in ("header-only", "empty-file") else len(events)
    return index, os.path.relpath(path, root), len(data), count


def _check_out(out: str) -> None:
    if os.path.lexists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise SubagentCatalogError(
            f"refusing to write a corpus into {out!r}: it exists and is not an empty directory",
            hint="pass a new directory (the synthesizer never overwrites)",
        )
    os.makedirs(out, exist_ok=True)


def _chunks(count: int, size: int) -> Iterator[range]:
    for low in range(0, count, size):
        yield range(low, min(count, low + size))


def _write_range(indices: range) -> list[tuple[int, str, int, int]]:
    return [_write_one(i) for i in indices]


def generate(
    out: str | os.PathLike[str],
    *,
    sessions: int,
    seed: int,
    compression: Compression = "zstd",
    damaged_fraction: float = 0.03,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SynthStats:
    """Write a synthetic corpus of ``sessions`` logs under a new directory ``out``.

    Args:
        out: a directory that does not exist yet, or is empty.
        sessions: how many session logs to write.
        seed: the corpus is a pure function of ``(sessions, seed, damaged_fraction)``.
        compression: ``zstd`` (``session.jsonl.zstd``) or ``none``.
        damaged_fraction: share of sessions damaged on purpose (see
            :data:`DAMAGE_KINDS`); ``SynthStats.damaged`` lists them.
        jobs: worker processes (default: all cores; small corpora are written serially).
        progress: called with (sessions written, sessions in all).

    Returns:
        What was written.

    Raises:
        SubagentCatalogError: ``out`` exists and is not an empty directory.

    Examples:
        >>> import tempfile, os
        >>> out = os.path.join(tempfile.mkdtemp(), "corpus")
        >>> stats = generate(out, sessions=12, seed=1, compression="none", jobs=1)
        >>> stats.sessions, stats.roots + stats.subagents + stats.forks
        (12, 12)
    """
    started = time.perf_counter()
    root = os.fspath(out)
    _check_out(root)
    plans = plan_corpus(sessions, seed, damaged_fraction=damaged_fraction)
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    results: list[tuple[int, str, int, int]] = []
    report = progress or (lambda done, total: None)
    if workers <= 1 or sessions < 200:
        _init_worker(plans, root, compression, seed)
        try:
            for index in range(sessions):
                results.append(_write_one(index))
                report(len(results), sessions)
        finally:
            _WORKER.clear()
            _session_events.cache_clear()
    else:
        with ProcessPoolExecutor(
            max_workers=workers, initializer=_init_worker, initargs=(plans, root, compression, seed)
        ) as pool:
            for batch in pool.map(_write_range, _chunks(sessions, 32)):
                results.extend(batch)
                report(len(results), sessions)
    return _stats(root, compression, seed, plans, results, time.perf_counter() - started)


def _stats(
    root: str,
    compression: Compression,
    seed: int,
    plans: list[SessionPlan],
    results: list[tuple[int, str, int, int]],
    seconds: float,
) -> SynthStats:
    fanout: dict[int, int] = {}
    for plan in plans:
        if plan.parent is not None:
            fanout[plan.parent] = fanout.get(plan.parent, 0) + 1
    paths = {index: path for index, path, _, _ in results}
    damaged = [
        DamagedSession(plan.id, paths[plan.index], plan.damage, _damage_detail(plan))
        for plan in plans
        if plan.damage is not None
    ]
    return SynthStats(
        root=root,
        compression=compression,
        seed=seed,
        sessions=len(plans),
        roots=sum(1 for p in plans if p.kind == "root"),
        subagents=sum(1 for p in plans if p.kind == "subagent"),
        forks=sum(1 for p in plans if p.kind == "fork"),
        seeded=sum(1 for p in plans if p.seeded),
        projects=len({p.cwd for p in plans}),
        max_depth=max(p.depth for p in plans),
        max_fanout=max(fanout.values(), default=0),
        events=sum(r[3] for r in results),
        bytes=sum(r[2] for r in results),
        largest_events=max((r[3] for r in results), default=0),
        seconds=round(seconds, 3),
        damaged=damaged,
    )


def _damage_detail(plan: SessionPlan) -> str:
    if plan.damage == "malformed-descriptor":
        return (
            "version as a string",
            "continuable without label",
            "unknown key",
            "empty toolFilter",
            "one-shot with a continuable-only key",
            "null payload",
        )[plan.damage_variant % 6]
    if plan.damage == "unknown-descriptor-version":
        return f"version {(3, 1, 3)[plan.damage_variant % 3]}"
    return {
        "torn-tail": "final record cut (plain) or final frame cut (zstd)",
        "garbage-line": "unparsable line just before the last turn/end",
        "seq-gap": "one record missing just before the last turn/end",
        "unknown-event-type": "x-vendor/trace event without ignorable",
        "no-descriptor": "subagent log without its own descriptor",
        "header-only": "header line only",
        "empty-file": "zero bytes",
    }.get(plan.damage or "", "")


def main(argv: Sequence[str] | None = None) -> int:
    """The ``python -m subagent_catalog.synth`` command; prints the stats as JSON.

    Examples:
        >>> import tempfile, os, contextlib, io
        >>> out = os.path.join(tempfile.mkdtemp(), "c")
        >>> with contextlib.redirect_stdout(io.StringIO()):
        ...     code = main([out, "--sessions", "3", "--seed", "2", "--compression", "none"])
        >>> code, main([out, "--sessions", "3", "--seed", "2"])  # never overwrites
        (0, 2)
    """
    parser = argparse.ArgumentParser(
        prog="python -m subagent_catalog.synth", description="Write a synthetic dsh session corpus."
    )
    parser.add_argument("out", help="a new (or empty) directory to write the corpus into")
    parser.add_argument("--sessions", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--compression", choices=["zstd", "none"], default="zstd")
    parser.add_argument("--damaged-fraction", type=float, default=0.03)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--manifest", help="also write the stats (damaged sessions included) to this JSON file")
    args = parser.parse_args(argv)
    if args.manifest and os.path.realpath(args.manifest).startswith(os.path.realpath(args.out) + os.sep):
        parser.error("--manifest must not be inside the corpus")
    try:
        stats = generate(
            args.out,
            sessions=args.sessions,
            seed=args.seed,
            compression=args.compression,
            damaged_fraction=args.damaged_fraction,
            jobs=args.jobs,
        )
    except SubagentCatalogError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    summary = stats.to_json()
    if args.manifest:
        with open(args.manifest, "x", encoding="utf-8") as handle:
            json.dump(summary, handle, ensure_ascii=False, indent=1)
    summary["damaged"] = len(stats.damaged)
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
