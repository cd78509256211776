"""Detectors over a session's model steps: ``retry-storm`` and ``context-growth``.

``context-growth`` starts from the facts the single read keeps (each step's usage, the peak share of
the context window); both read the logs that can hold what they count (``llm/retry`` events, the
``turn/end`` of a turn that ended in an error), and only those.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from subagent_catalog.analysis.findings.log_events import Events, events_for
from subagent_catalog.analysis.findings.options import FindingOptions
from subagent_catalog.analysis.findings.schema import Finding
from subagent_catalog.frames.corpus import Corpus

__all__ = ["CONTEXT_ERROR", "RETRY", "TURN_END", "context_growth", "retry_storm"]

CONTEXT_ERROR = re.compile(r"context[ _-]?(length|window|limit|overflow)|too many tokens|prompt is too long", re.I)
"""An error code or message that says the prompt did not fit the model's context."""


RETRY = frozenset({"llm/retry"})
TURN_END = frozenset({"turn/end"})


def _failure(data: Any) -> str:
    failure = data.get("failure") if isinstance(data, dict) else None
    if not isinstance(failure, dict):
        return "no reason given"
    code, message = failure.get("code"), failure.get("message")
    parts = [str(part) for part in (code, message) if isinstance(part, str | int) and not isinstance(part, bool)]
    return ": ".join(parts) or "no reason given"


def _steps(steps: list[int]) -> str:
    if not steps:
        return "step unknown"
    return f"step {steps[0]}" if len(steps) == 1 else f"steps {', '.join(map(str, steps))}"


def retry_storm(
    corpus: Corpus, rows: list[dict[str, Any]], options: FindingOptions, events: Events | None = None
) -> list[Finding]:
    """``retry-storm``: ``retry_storm_retries`` or more model-call retries (``llm/retry`` events) in one turn.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = list(corpus.sessions.iter_rows(named=True))
        >>> [(f.session_id, f.message) for f in retry_storm(corpus, rows, FindingOptions())]
        [('retry-yes', '3 model calls retried in turn 1 (step 1)')]
    """
    found: list[Finding] = []
    readable = [row for row in rows if (row.get("event_count") or 0) > 0]
    logs = events_for(corpus, readable, RETRY, events)
    for row in readable:
        order = row["list_order"]
        by_turn: dict[int, list[Any]] = {}
        for event in logs[order]:
            if event.turn is not None:
                by_turn.setdefault(event.turn, []).append(event)
        for turn, retries in sorted(by_turn.items()):
            if len(retries) < options.retry_storm_retries:
                continue
            steps = sorted({e.step for e in retries if e.step is not None})
            reasons = Counter(_failure(e.data) for e in retries).most_common()
            found.append(
                Finding.about(
                    row,
                    "retry-storm",
                    "warn",
                    f"{len(retries)} model calls retried in turn {turn} ({_steps(steps)})",
                    "; ".join(f"{reason} ×{count}" for reason, count in reasons),
                    turn=turn,
                    step=retries[0].step,
                    seq=retries[0].seq,
                    seq_end=retries[-1].seq,
                )
            )
    return found


def _prompt(sample: dict[str, Any]) -> int | None:
    uncached = sample.get("input_tokens")
    if uncached is None:
        return None
    return int(uncached + (sample.get("cache_read_tokens") or 0) + (sample.get("cache_write_tokens") or 0))


def _near_limit(row: dict[str, Any], options: FindingOptions) -> Finding | None:
    share, window = row.get("peak_context_share"), row.get("context_window")
    if share is None or share < options.context_share:
        return None
    samples = [s for s in row.get("usage_samples") or [] if not s.get("in_seed")]
    over = (
        s for s in samples if (prompt := _prompt(s)) is not None and window and prompt / window >= options.context_share
    )
    first = next(over, None)
    if first is None:  # the window changed during the run: the peak's step
        first = next((s for s in samples if _prompt(s) == row.get("peak_context_tokens")), None)
    where = f" (first at turn {first.get('turn')}, step {first.get('step')})" if first is not None else ""
    peak = row.get("peak_context_tokens")
    return Finding.about(
        row,
        "context-growth",
        "warn",
        f"a prompt filled {share:.0%} of its context window{where}",
        f"peak prompt {peak:,} tokens" + (f" of a {window:,}-token window" if window else "")
        if peak is not None
        else "",
        turn=first.get("turn") if first is not None else None,
        step=first.get("step") if first is not None else None,
        seq=first.get("seq") if first is not None else None,
    )


def context_growth(
    corpus: Corpus, rows: list[dict[str, Any]], options: FindingOptions, events: Events | None = None
) -> list[Finding]:
    """``context-growth``: a prompt at ``context_share`` of its window or more, or a turn ended by a context error.

    A prompt's size is its input tokens plus cache reads and writes (the facts' context share); a
    context error is a turn ended in ``error`` whose code or message says the prompt did not fit
    (``CONTEXT_ERROR``): severity ``error``, one finding per such turn.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = list(corpus.sessions.iter_rows(named=True))
        >>> [(f.session_id, f.severity) for f in context_growth(corpus, rows, FindingOptions())]
        [('context-yes', 'warn'), ('context-error', 'error')]
    """
    found = [near for near in (_near_limit(row, options) for row in rows) if near is not None]
    failed = [row for row in rows if row.get("turns_error")]
    logs = events_for(corpus, failed, TURN_END, events)
    for row in failed:
        for event in logs[row["list_order"]]:
            reason = event.data.get("reason") if isinstance(event.data, dict) else None
            error = reason.get("error") if isinstance(reason, dict) else None
            code, message = (error.get(key) if isinstance(error, dict) else None for key in ("code", "message"))
            code, message = (code if isinstance(code, str) else None), (message if isinstance(message, str) else None)
            if not any(text is not None and CONTEXT_ERROR.search(text) for text in (code, message)):
                continue
            found.append(
                Finding.about(
                    row,
                    "context-growth",
                    "error",
                    f"turn {event.turn} ended with a context error ({code or 'no code'})",
                    message or "",
                    turn=event.turn,
                    seq=event.seq,
                )
            )
    return found
