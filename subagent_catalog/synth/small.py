"""The ``small`` synthesis profile: the same corpus plan, a handful of events per session.

Scale tests of the catalog need hundreds of thousands of sessions, not their
transcripts. A small session keeps everything the listing reads (the header
from the plan: tree shape, hubs, depth, ``createdAt`` ties, ordinary forks
with a replayed seed; the descriptor and its damage) and one short turn: a
user message, one assistant step, the turn's end. Damage that lives in the
bytes (torn tails, garbage lines, seq gaps, header-only and empty files) is
applied by the same encoder as the full profile.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any

from subagent_catalog.synth.events import WORKER, worker_plans
from subagent_catalog.synth.plan import TASKS
from subagent_catalog.synth.seeding import descriptor_payload, session_start
from subagent_catalog.synth.writer import EventLog


@lru_cache(maxsize=64)
def small_session_events(index: int) -> tuple[tuple[dict[str, Any], ...], int | None]:
    """The events of plan ``index`` under the small profile, and its seed length.

    Examples:
        >>> from subagent_catalog.synth.plan import plan_corpus
        >>> WORKER.update(plans=plan_corpus(3, seed=1), seed=1)
        >>> small_session_events.cache_clear()
        >>> events, seed_length = small_session_events(0)
        >>> [event["type"] for event in events][:3], seed_length
        (['turn/start', 'user/message', 'step/start'], None)
    """
    plan = worker_plans()[index]
    rng = random.Random(f"subagent_catalog.synth:small:{WORKER['seed']}:{index}")
    log = EventLog(plan.id, time=plan.created_at)
    seed_length, pending = session_start(log, plan, lambda parent: small_session_events(parent)[0])
    log.turn_start()
    if pending:
        log.descriptor(descriptor_payload(plan))
    task = rng.choice(TASKS)
    log.user(f"Task: {task}.")
    if plan.damage == "unknown-event-type":
        log.add("x-vendor/trace", {"span": rng.getrandbits(32)}, dt=0)
    log.assistant(f"Done: {task}", chunks=rng.randint(0, 3))
    log.turn_end()
    return tuple(log.events), seed_length
