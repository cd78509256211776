"""How a run ended: one ``outcome`` per session, by a fixed precedence over its read and its own events.

The precedence (``session_outcome``), first that applies:

1. ``unreadable``: upstream cannot read the log (``verdict`` ``failed``, or
   ``skipped`` by ``list()``), or its events could not be scanned.
2. ``open``: the session's last own ``turn/start`` has no ``turn/end``: the
   run was killed, crashed or is still running (the ``verdict`` says whether
   the log ends in a torn record).
3. the kind of the last own ``turn/end``: ``completed``, ``error``,
   ``aborted``, ``max-tokens``, ``blocked``, ``interrupted`` (a legacy
   ``disposed`` is ``aborted``); ``other`` for a kind upstream's vocabulary
   does not have, or a ``turn/end`` without a readable reason.
4. ``no-turns``: no own turn at all (a header-only log, a fork that never ran).

``outcome_detail`` says what it was: the read cause and message, the error
message and code, who aborted it (``aborted by parent``, with the hook's reason), that the model
hit its output limit (``max-tokens``), the unknown kind, or how an open log ends.
"""

from __future__ import annotations

from typing import Literal, get_args

from subagent_catalog.read.run_facts import TURN_KINDS, RunFacts

Outcome = Literal[
    "completed",
    "error",
    "aborted",
    "max-tokens",
    "blocked",
    "interrupted",
    "other",
    "open",
    "no-turns",
    "unreadable",
]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
"""Every outcome, in the order reports list them."""


def ended_detail(kind: str, text: str | None, reason: str | None, code: str | None) -> str | None:
    """What a ``turn/end`` of ``kind`` says (``text``: error message or abort cause; a hook's ``reason``; ``code``).

    Examples:
        >>> ended_detail("error", "hang up", None, "E"), ended_detail("aborted", "hook", "budget", None)
        ('hang up (E)', 'aborted by hook: budget')
    """
    if kind == "error":
        return f"{text} ({code})" if text is not None and code is not None else text or code
    if kind == "aborted":
        by = f"aborted by {text}" if text in ("user", "parent", "hook") else f"aborted ({text})" if text else None
        return f"{by}: {reason}" if by and reason else by or reason
    return "max-tokens: the model stopped at its output token limit" if kind == "max-tokens" else None


def outcome_text(outcome: str, detail: str | None) -> str:
    """An outcome with its detail, said once.

    Examples:
        >>> outcome_text("error", "boom"), outcome_text("aborted", "aborted by user"), outcome_text("open", None)
        ('error: boom', 'aborted by user', 'open')
    """
    return detail if detail and detail.startswith(outcome) else f"{outcome}: {detail}" if detail else outcome


def session_outcome(
    verdict: str,
    run: RunFacts | None,
    *,
    read_cause: str | None = None,
    read_message: str | None = None,
    list_skip: str | None = None,
) -> tuple[Outcome, str | None]:
    """(outcome, outcome_detail) of one session by the module's precedence.

    Args:
        verdict: the ``sessions`` verdict (``ok``, ``torn-tail``, ``prefix``, ``failed``, ``skipped``).
        run: the run facts of the session's own events (``None``: not scanned).
        read_cause: why the read failed.
        read_message: the read failure's message.
        list_skip: why ``list()`` skips the file.

    Examples:
        >>> from subagent_catalog.read.run_facts import RunFacts
        >>> session_outcome("ok", RunFacts(turns=1, turns_completed=1, last_turn_outcome="completed"))
        ('completed', None)
        >>> session_outcome("torn-tail", RunFacts(turns=2, turns_open=1, last_turn_open=True,
        ...     turns_completed=1, last_turn_outcome="completed"))
        ('open', 'the last turn never ended; the log ends in a torn record (killed mid-write)')
        >>> session_outcome("ok", RunFacts(turns=1, turns_error=1, last_turn_outcome="error",
        ...     last_error_message="socket hang up", last_error_code="UNKNOWN"))
        ('error', 'socket hang up (UNKNOWN)')
        >>> session_outcome("failed", None, read_cause="seq-gap-before-turn-end", read_message="gap at line 4")
        ('unreadable', 'seq-gap-before-turn-end: gap at line 4')
        >>> session_outcome("ok", RunFacts())
        ('no-turns', None)
        >>> session_outcome("ok", RunFacts(turns=1, turns_aborted=1, last_turn_outcome="aborted",
        ...     last_abort_cause="parent"))
        ('aborted', 'aborted by parent')
        >>> session_outcome("ok", RunFacts(turns=1, turns_max_tokens=1, last_turn_outcome="max-tokens"))
        ('max-tokens', 'max-tokens: the model stopped at its output token limit')
    """
    if verdict == "skipped":
        return "unreadable", f"list() skips the file: {list_skip}" if list_skip else "list() skips the file"
    if verdict == "failed" or run is None:
        if read_cause and read_message:
            return "unreadable", f"{read_cause}: {read_message}"
        return "unreadable", read_cause or read_message or "the events could not be scanned"
    if run.last_turn_open:
        detail = "the last turn never ended"
        if verdict == "torn-tail":
            detail += "; the log ends in a torn record (killed mid-write)"
        elif verdict == "prefix":
            detail += "; the readable log ends at a damaged line"
        return "open", detail
    ends = (
        run.turns_completed
        + run.turns_error
        + run.turns_aborted
        + run.turns_max_tokens
        + run.turns_blocked
        + run.turns_interrupted
        + run.turns_other
    )
    if not ends:
        return "no-turns", None
    kind = run.last_turn_outcome
    if kind is None:
        return "other", "the last turn/end has no readable reason"
    if kind in ("error", "aborted", "max-tokens"):
        aborted = kind == "aborted"
        text = run.last_abort_cause if aborted else run.last_error_message
        return kind, ended_detail(kind, text, run.last_abort_reason if aborted else None, run.last_error_code)  # type: ignore[return-value]
    if kind in TURN_KINDS:
        return kind, None  # type: ignore[return-value]
    return "other", f"turn/end reason kind {kind!r}"
