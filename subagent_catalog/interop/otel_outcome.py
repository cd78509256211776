"""How a run (an AGENT span) and a turn (a CHAIN span) ended, as an OTLP status and ``dsh.*`` attributes.

Never a second guess: a run's outcome is the ``sessions`` row's ``outcome``
(``docs/runs.md``: the library's one rule), a turn's is its ``turn/end``
reason read by the run facts' own reader. The outcomes that count as a
failed run (``run_summary``'s ``FAILED_OUTCOMES``: ``error``, ``aborted``,
``max-tokens``, ``blocked``, ``interrupted``, ``other``, ``open``,
``unreadable``) get status ERROR with the outcome detail as its message;
``completed`` and ``no-turns`` stay UNSET, as OpenInference advises for a
span that did not fail (OK is left to an application that checked it).
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Status, StatusCode

from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.frames.outcome import ended_detail, outcome_text
from subagent_catalog.read.run_facts import TURN_KINDS, _turn_reason

__all__ = ["FAILED_OUTCOMES", "run_status", "turn_status"]


def run_status(session: dict[str, Any], read_problem: str | None) -> tuple[Status, dict[str, Any]]:
    """An AGENT span's status and outcome attributes, from its ``sessions`` row.

    A damaged log keeps its read problem as the message (it names the damage
    more exactly); any other failed outcome has ``"<outcome>: <detail>"``.

    Examples:
        >>> row = {"outcome": "error", "outcome_detail": "context length exceeded (CONTEXT_LENGTH)",
        ...        "last_error_code": "CONTEXT_LENGTH", "active_ms": 1200, "verdict": "ok"}
        >>> status, attributes = run_status(row, None)
        >>> status.status_code.name, status.description
        ('ERROR', 'error: context length exceeded (CONTEXT_LENGTH)')
        >>> attributes["dsh.outcome"], attributes["dsh.error_code"], attributes["dsh.active_ms"]
        ('error', 'CONTEXT_LENGTH', 1200)
        >>> run_status({"outcome": "completed", "verdict": "ok"}, None)[0].status_code.name
        'UNSET'
    """
    outcome = session.get("outcome")
    detail = session.get("outcome_detail")
    attributes: dict[str, Any] = {
        "dsh.outcome": outcome,
        "dsh.outcome_detail": detail,
        "dsh.error_code": session.get("last_error_code") if outcome == "error" else None,
        "dsh.active_ms": session.get("active_ms"),
    }
    if session.get("verdict") not in ("ok", "skipped", None) and read_problem is not None:
        return Status(StatusCode.ERROR, read_problem), attributes
    if isinstance(outcome, str) and outcome in FAILED_OUTCOMES:
        return Status(StatusCode.ERROR, outcome_text(outcome, detail)), attributes
    return Status(StatusCode.UNSET), attributes


def turn_status(reason: Any, closed: bool) -> tuple[Status, dict[str, Any]]:
    """A CHAIN span's status and outcome attributes, from its ``turn/end`` reason (``None``: no ``turn/end``).

    A turn that never ended is ``open``; a turn whose reason names no kind is
    ``other``, as for a run.

    Examples:
        >>> status, attributes = turn_status({"kind": "aborted", "reason": {"kind": "user"}}, True)
        >>> status.description, attributes["dsh.outcome_detail"]
        ('aborted by user', 'aborted by user')
        >>> status, attributes = turn_status({"kind": "completed"}, True)
        >>> status.status_code.name, attributes
        ('UNSET', {})
        >>> turn_status(None, False)[0].description
        'open: the turn never ended'
    """
    if not closed:
        detail: str | None = "the turn never ended"
        outcome, code = "open", None
    else:
        kind, text, second, code = _turn_reason(reason)
        outcome = kind if kind in TURN_KINDS else "other"
        detail = kind if outcome == "other" else ended_detail(outcome, text, second, code)
    if outcome not in FAILED_OUTCOMES:
        return Status(StatusCode.UNSET), {}
    attributes = {"dsh.outcome": outcome, "dsh.outcome_detail": detail, "dsh.error_code": code}
    return Status(StatusCode.ERROR, outcome_text(outcome, detail)), attributes
