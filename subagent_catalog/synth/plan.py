"""The shape of a synthetic corpus.

Sessions, trees, fan-out, sizes and damage, drawn serially from one seeded
generator (``plan_corpus``).
"""

from __future__ import annotations

import math
import random
import uuid
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from subagent_catalog.errors import SubagentCatalogError

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


def log_uniform(rng: random.Random, low: float, high: float) -> int:
    """An integer drawn log-uniformly from ``[low, high]``.

    Examples:
        >>> import random
        >>> 10 <= log_uniform(random.Random(0), 10, 1000) <= 1000
        True
    """
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def new_uuid(rng: random.Random) -> str:
    """A UUID4 string drawn from ``rng`` (reproducible).

    Examples:
        >>> import random
        >>> new_uuid(random.Random(0)) == new_uuid(random.Random(0))
        True
    """
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _own_size(rng: random.Random, kind: SessionKind, hub: bool) -> int:
    if rng.random() < 0.025:
        return log_uniform(rng, 1500, 8000)
    if hub:
        return log_uniform(rng, 200, 1200)
    if kind == "root":
        return log_uniform(rng, 40, 600)
    return log_uniform(rng, 20, 300)


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
    root sessions fan out to up to ``MAX_HUB_FANOUT`` subagents; trees
    are at most ``MAX_DEPTH`` edges deep. Parents always come before
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
        session_id = new_uuid(rng)
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
        # A subagent goes to a parent with a quota (a hub) by its share, else to a recent session with room.
        share = sum(quota.values()) / max(1, remaining_sub) if kind == "subagent" and quota else 0.0
        parent = min(quota) if share and rng.random() < min(1.0, 1.5 * share) else None
        for _ in range(8 if parent is None else 0):
            back = min(len(recent) - 1, int(rng.expovariate(1 / 6)))
            if fanout[recent[-1 - back]] < MAX_FANOUT and recent[-1 - back] not in quota:
                parent = recent[-1 - back]
                break
        if parent is None:
            parent = recent[-1] if fanout[recent[-1]] < MAX_FANOUT else recent[0]
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
        descriptor: dict[str, Any] = {}  # a subagent's mode, provider and label (an ordinary fork has none)
        if kind == "subagent":
            provider = "fork" if rng.random() < 0.25 else "spawn"
            mode = "one-shot" if rng.random() < 0.55 else "continuable"
            label: str | None = rng.choice(TASKS)
            if mode == "one-shot" and rng.random() < 0.15:
                label = None
            descriptor = {"mode": mode, "provider": provider, "label": label}
        plan = SessionPlan(
            index=index,
            id=session_id,
            kind=kind,
            cwd=parent_plan.cwd,
            parent=parent,
            depth=depth,
            delegation_depth=parent_plan.delegation_depth + (kind == "subagent"),
            created_at=created,
            size=_own_size(rng, kind, False),
            seeded=descriptor.get("provider", "fork") == "fork",
            seed_pick=rng.random(),
            extra=_descriptor_extra(rng, descriptor["mode"]) if descriptor else (),
            **descriptor,
        )
        plans.append(plan)
        fanout.append(0)
        if depth < MAX_DEPTH:
            recent.append(index)
    return _assign_damage(plans, rng, damaged_fraction)


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
                out[choice] = replace(plans[choice], damage=kind, damage_variant=rng.randrange(1_000_000))
                break
    return out


DAMAGE_KINDS: tuple[DamageKind, ...] = get_args(DamageKind)
