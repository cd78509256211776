"""How a synthetic session starts: its descriptor payload, the replayed seed, a spawned child's preamble.

Shared by both synthesis profiles (``events`` for ``full``, ``small``), so
both write the same identity and seed for a plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from subagent_catalog.synth.plan import SessionPlan
from subagent_catalog.synth.writer import EventLog, descriptor


def descriptor_payload(plan: SessionPlan) -> Any:
    """The descriptor payload a planned subagent writes, with its planned damage.

    Examples:
        >>> from subagent_catalog.synth.plan import plan_corpus
        >>> plan = next(p for p in plan_corpus(60, seed=1) if p.kind == "subagent" and p.damage is None)
        >>> descriptor_payload(plan)["version"]
        2
    """
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


def replay_seed(log: EventLog, plan: SessionPlan, parent_events: Sequence[dict[str, Any]]) -> int:
    """Start a seeded session's log with its parent's events up to the end of one turn; return the seed length.

    Examples:
        >>> from subagent_catalog.synth.plan import plan_corpus
        >>> plan = next(p for p in plan_corpus(60, seed=1) if p.seeded)
        >>> parent = [{"type": "turn/start", "seq": 0, "time": 5, "data": {"turn": 1}},
        ...           {"type": "turn/end", "seq": 1, "time": 6, "data": {"turn": 1}}]
        >>> log = EventLog(plan.id)
        >>> replay_seed(log, plan, parent), [e["type"] for e in log.events]
        (2, ['turn/start', 'turn/end', 'session/end-seed'])
    """
    cuts = [i + 1 for i, event in enumerate(parent_events) if event["type"] == "turn/end"] or [len(parent_events)]
    cut = cuts[int(plan.seed_pick * len(cuts))]
    log.events = list(parent_events[:cut])
    log.time = max(plan.created_at, int(parent_events[cut - 1]["time"]))
    log.turn = max((int(e["data"]["turn"]) for e in log.events if e["type"] == "turn/start"), default=0)
    log.add("session/end-seed", {}, dt=1)
    return cut


def session_start(
    log: EventLog, plan: SessionPlan, parent_events: Callable[[int], Sequence[dict[str, Any]]]
) -> tuple[int | None, bool]:
    """A session's first events: the replayed seed, or a spawned child's preamble.

    Returns the seed length (``None`` without a seed) and whether the
    descriptor is still to be written (in the first turn).

    Examples:
        >>> from subagent_catalog.synth.plan import plan_corpus
        >>> plan = next(p for p in plan_corpus(60, seed=1) if p.kind == "subagent" and not p.seeded and not p.damage)
        >>> log = EventLog(plan.id)
        >>> session_start(log, plan, lambda parent: ()), [e["type"] for e in log.events]
        ((None, False), ['approval/policy', 'subagent/descriptor', 'session/end-seed'])
    """
    seed_length: int | None = None
    if plan.seeded and plan.parent is not None:
        seed_length = replay_seed(log, plan, parent_events(plan.parent))
    pending = plan.kind == "subagent" and plan.damage != "no-descriptor"
    if plan.kind == "subagent" and not plan.seeded:
        # A spawned child starts from its descriptor, written before its first turn.
        log.add("approval/policy", {"policy": "never", "source": "delegation"}, dt=0)
        if pending:
            log.descriptor(descriptor_payload(plan))
            pending = False
        log.add("session/end-seed", {}, dt=0)
    return seed_length, pending
