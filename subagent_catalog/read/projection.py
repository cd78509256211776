"""Upstream's projection units folded over a cold child's events.

The ``subagent`` unit gives the identity: every ``subagent/descriptor`` in
the whole log (fork seed included) is folded, last wins, and any payload
that is not a valid v2 descriptor resets it. The ``subagentTiming`` unit
never affects a row's values, but its view schema can reject a log (an open
interval with a negative time), which upstream reports as ``corrupt``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from subagent_catalog.read.descriptor import DescriptorVerdict, classify_descriptor
from subagent_catalog.read.jsvalue import is_number, is_safe_integer


@dataclass(frozen=True)
class Identity:
    """A served identity: the mode and label of the last valid descriptor."""

    mode: str
    label: str | None
    seq: int


@dataclass(frozen=True)
class IdentityFold:
    """The ``subagent`` unit's value and, when it has none, why.

    ``last`` is the verdict on the last descriptor (``None`` when the log
    holds no descriptor); ``last_seq`` its seq.
    """

    identity: Identity | None
    last: DescriptorVerdict | None
    last_seq: int | None
    count: int


def fold_identity(events: list[dict[str, Any]]) -> IdentityFold:
    """Fold the identity, last descriptor wins.

    Examples:
        >>> d = {"version": 2, "mode": "one-shot", "provider": "p"}
        >>> fold_identity([{"type": "subagent/descriptor", "seq": 3, "data": d}]).identity
        Identity(mode='one-shot', label=None, seq=3)
        >>> fold_identity([{"type": "subagent/descriptor", "seq": 3, "data": d},
        ...                {"type": "subagent/descriptor", "seq": 4, "data": None}]).identity is None
        True
    """
    identity: Identity | None = None
    last: DescriptorVerdict | None = None
    last_seq: int | None = None
    count = 0
    for event in events:
        if event.get("type") != "subagent/descriptor":
            continue
        count += 1
        verdict = classify_descriptor(event.get("data"))
        last, last_seq = verdict, int(event["seq"])
        if verdict.valid:
            assert verdict.mode is not None
            identity = Identity(verdict.mode, verdict.label, last_seq)
        else:
            identity = None
    return IdentityFold(identity, last, last_seq, count)


def timing_view_failure(events: list[dict[str, Any]]) -> str | None:
    """Why the ``subagentTiming`` unit's view schema rejects the log, if it does.

    Examples:
        >>> timing_view_failure([
        ...     {"type": "subagent/descriptor", "seq": 0, "time": -3, "data": {}},
        ...     {"type": "turn/start", "seq": 1, "time": -2, "data": {}}])
        'subagentTiming view: active.since must be a non-negative integer (got -2)'
    """
    descriptor_seen = False
    settled = 0
    active: dict[str, Any] | None = None
    pending: Any = None
    for event in events:
        kind = event.get("type")
        time = event.get("time")
        if not is_number(time) and kind in ("turn/start", "subagent/descriptor", "turn/end"):
            # JavaScript would coerce or produce NaN here; the view schema then rejects the value.
            return f"subagentTiming view: {kind} at seq {event.get('seq')} has a non-number time"
        if kind == "turn/start":
            if descriptor_seen:
                active = {"since": time, "through": time}
            else:
                pending = time
        elif kind == "subagent/descriptor":
            since = active["since"] if active is not None else pending
            descriptor_seen = True
            settled = 0
            pending = None
            active = None if since is None else {"since": since, "through": time}
        elif kind == "turn/end":
            if not descriptor_seen:
                pending = None
            elif active is not None:
                settled = settled + max(0, time - active["since"])
                active = None
        elif active is not None:
            if not is_number(time):
                return f"subagentTiming view: event at seq {event.get('seq')} has a non-number time"
            active = {**active, "through": time}
    if not (is_safe_integer(settled) and settled >= 0):
        return f"subagentTiming view: settledMs must be a non-negative integer (got {settled})"
    if active is not None:
        for key in ("since", "through"):
            value = active[key]
            if not (is_safe_integer(value) and value >= 0):
                return f"subagentTiming view: active.{key} must be a non-negative integer (got {value})"
    return None
