"""The less common shapes a synthetic session holds, drawn from their own generator.

Turn outcomes other than ``completed`` (``error``, ``aborted``,
``max-tokens``, a run killed in its last turn), retried steps (two usage samples for one step), usage
fields an adapter sometimes leaves out or adds, a second model route and
tool failures with and without ``data.error``. Every draw here comes from
a session's *extra* generator (``extra_rng``), never from the one that
shapes the corpus, so session ids, event counts, times and tree shapes
are those the same seed gave before these shapes existed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

ROUTES: tuple[tuple[str, str], ...] = (
    ("deepseek-official", "deepseek-v4-flash"),
    ("deepseek-official", "deepseek-v4-pro"),
    ("openrouter", "deepseek/deepseek-v4-flash"),
)
"""Model routes ``(provider, model)``: the first is every session's default."""

FAILURES: tuple[dict[str, Any], ...] = (
    {"message": "provider overloaded", "code": "RATE_LIMITED", "status": 529},
    {"message": "context length exceeded", "code": "CONTEXT_LENGTH_EXCEEDED", "status": 400},
    {"message": "stream ended before a finish chunk", "code": "NETWORK"},
    {"message": "TypeError: fetch failed", "code": "UNKNOWN"},
)
"""``LlmFailure`` payloads of failed model calls (upstream ``llm/types.ts``)."""

ABORT_CAUSES = ("user", "parent", "disposed", "hook")
"""The ``AgentCancelCause`` kinds an aborted turn carries (a ``hook`` also says why: ``HOOK_REASONS``)."""

HOOK_REASONS = ("token budget exceeded", "policy denied the tool")
"""Reasons a ``hook`` cancel cause gives."""

TOOL_ERRORS: tuple[dict[str, str], ...] = (
    {"name": "ToolError", "code": "EXIT_NONZERO"},
    {"name": "ToolError", "code": "FILE_NOT_FOUND"},
    {"name": "ToolTimeoutError", "code": "TIMEOUT"},
)
"""``ToolErrorInfo`` payloads of failed tool results."""

Outcome = Literal["completed", "error", "error-no-usage", "aborted", "max-tokens", "retried"]
"""How a turn's last (text) step ends; ``retried`` completes after one failed attempt."""

STEP_DEBT: dict[str, int] = {
    "completed": 0,
    "max-tokens": 0,
    "retried": 2,  # the failed attempt's usage and finish chunks
    "error": -1,  # no assistant/message
    "error-no-usage": -2,  # no assistant/message, no usage chunk
    "aborted": -2,  # no usage or finish chunk; the message is the interrupted one
}
"""Events an outcome adds to (or removes from) the step's normal shape; the step's
text stream pays it back by merging or splitting deltas, so event counts stay."""


def extra_rng(seed: int, index: int) -> random.Random:
    """The extra generator of session ``index`` of a synthesis seeded ``seed``.

    Examples:
        >>> extra_rng(1, 0).random() == extra_rng(1, 0).random()
        True
    """
    return random.Random(f"subagent_catalog.synth:events-extra:{seed}:{index}")


@dataclass
class Variants:
    """One session's draws of the less common shapes.

    Examples:
        >>> v = Variants(random.Random(3))
        >>> v.route_for(0) in ROUTES
        True
    """

    rng: random.Random
    message_usage: bool = True
    switch_at: int | None = None
    second: tuple[str, str] = ROUTES[1]

    def __post_init__(self) -> None:
        self.message_usage = self.rng.random() < 0.9
        if self.rng.random() < 0.3:
            self.switch_at = self.rng.randint(0, 3)
            self.second = self.rng.choice(ROUTES[1:])

    def route_for(self, headers_before: int) -> tuple[str, str]:
        """The route of a request after ``headers_before`` of the session's own headers.

        Examples:
            >>> v = Variants(random.Random(0))
            >>> v.switch_at, v.second = 2, ROUTES[2]
            >>> [v.route_for(n)[0] for n in range(4)]
            ['deepseek-official', 'deepseek-official', 'openrouter', 'openrouter']
        """
        if self.switch_at is not None and headers_before >= self.switch_at:
            return self.second
        return ROUTES[0]

    def outcome(self) -> Outcome:
        """How the next turn's last step ends (about 4 % each of error, aborted and max-tokens).

        Examples:
            >>> Variants(random.Random(5)).outcome() in STEP_DEBT
            True
        """
        draw = self.rng.random()
        for limit, kind in (
            (0.025, "error"),
            (0.04, "error-no-usage"),
            (0.08, "aborted"),
            (0.12, "max-tokens"),
            (0.17, "retried"),
        ):
            if draw < limit:
                return kind  # type: ignore[return-value]
        return "completed"

    def usage(self, drawn: dict[str, int]) -> dict[str, int]:
        """A usage sample from the four drawn counts.

        Sometimes without ``cacheReadTokens`` or ``reasoningTokens``,
        sometimes with a ``cacheWriteTokens``.

        Examples:
            >>> sample = Variants(random.Random(2)).usage(
            ...     {"inputTokens": 9, "outputTokens": 4, "cacheReadTokens": 1, "reasoningTokens": 2})
            >>> {"inputTokens", "outputTokens"} <= set(sample)
            True
        """
        out = dict(drawn)
        if self.rng.random() < 0.15:
            del out["cacheReadTokens"]
        if self.rng.random() < 0.2:
            del out["reasoningTokens"]
        if self.rng.random() < 0.1:
            out["cacheWriteTokens"] = self.rng.randint(1, 20_000)
        return out

    def failed_attempt(self) -> dict[str, int]:
        """The usage a failed attempt of a retried step reported.

        Examples:
            >>> sorted(Variants(random.Random(1)).failed_attempt())
            ['inputTokens', 'outputTokens']
        """
        return {"inputTokens": self.rng.randint(800, 60_000), "outputTokens": self.rng.randint(0, 200)}

    def failure(self) -> dict[str, Any]:
        """A copy of one ``LlmFailure`` payload.

        Examples:
            >>> "code" in Variants(random.Random(1)).failure()
            True
        """
        return dict(self.rng.choice(FAILURES))

    def abort_cause(self) -> dict[str, str]:
        """An aborted turn's cancel cause: its kind, and a ``hook``'s reason.

        Examples:
            >>> Variants(random.Random(1)).abort_cause()["kind"] in ABORT_CAUSES
            True
        """
        kind = self.rng.choice(ABORT_CAUSES)
        return {"kind": kind, "reason": self.rng.choice(HOOK_REASONS)} if kind == "hook" else {"kind": kind}

    def killed(self) -> bool:
        """Whether the run is killed in its last turn (about 4 %): the turn never ends.

        Drawn last, once the session's other draws are made, so it shifts none of them.

        Examples:
            >>> isinstance(Variants(random.Random(1)).killed(), bool)
            True
        """
        return self.rng.random() < 0.04

    def tool_error(self) -> dict[str, str] | None:
        """The ``data.error`` of a failed tool result (absent for about a third of them).

        Examples:
            >>> e = Variants(random.Random(1)).tool_error()
            >>> e is None or set(e) == {"name", "code"}
            True
        """
        return dict(self.rng.choice(TOOL_ERRORS)) if self.rng.random() < 0.65 else None


def repay(pieces: list[str], gaps: list[int], debt: int) -> tuple[list[str], list[int]]:
    """Merge (``debt > 0``) or split (``debt < 0``) stream deltas by ``|debt|`` events.

    The text and the time of the last delta are unchanged: merged deltas
    take the sum of their gaps, a split delta's second half follows at once.

    Examples:
        >>> repay([" a", " bc", " d"], [1, 2, 3], 2)
        ([' a bc d'], [6])
        >>> repay([" a", " bc"], [1, 2], -1)
        ([' ', 'a', ' bc'], [1, 0, 2])
    """
    if debt > 0:
        if len(pieces) <= debt:
            raise ValueError(f"cannot merge {debt} of {len(pieces)} deltas")
        return ["".join(pieces[: debt + 1]), *pieces[debt + 1 :]], [sum(gaps[: debt + 1]), *gaps[debt + 1 :]]
    if -debt > len(pieces):
        raise ValueError(f"cannot split {-debt} of {len(pieces)} deltas")
    out_pieces: list[str] = []
    out_gaps: list[int] = []
    for i, (piece, gap) in enumerate(zip(pieces, gaps, strict=True)):
        if i < -debt:
            if len(piece) < 2:
                raise ValueError(f"cannot split the delta {piece!r}")
            out_pieces += [piece[:1], piece[1:]]
            out_gaps += [gap, 0]
        else:
            out_pieces.append(piece)
            out_gaps.append(gap)
    return out_pieces, out_gaps
