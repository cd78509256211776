"""Where a session's time went: upstream's ``sessionStats`` fold over its own events.

``StatsFold`` keeps the state upstream's ``sessionStats`` projection unit
keeps (packages/session/session-stats), one method per event kind, so the
full read (``run_facts.fold_run``, event by event) and the typed fast path
(``read.typed_read``, kinds picked out in C) fold the same way:

- model time (``llm_ms``): ``step/start`` to the step's ``assistant/message``,
  summed over steps that assembled a message (a cancelled step adds nothing);
- first-token latency (``ttft_ms`` over ``ttft_steps``): ``step/start`` to the
  step's first non-empty text, reasoning or tool-call delta before its
  message (``token_delta``);
- decode time and tokens (``decode_ms``, ``decode_tokens``): first token to
  message, over steps whose message reports ``outputTokens``;
- tool time (``tool_ms``): ``tool/call`` to the ``tool/result`` answering its
  ``callId``, calls still pending at a ``turn/end`` dropped (each timed call's
  interval is kept in ``tool_spans``, for ``read.run_time``'s tool-busy union);
- a ``step/end`` closes the open step (upstream's ``turns`` and ``steps`` counts are not kept here:
  ``steps`` is the run facts' own count, and ``docs/runs.md`` says how upstream's ``turns`` differs).

Every difference is clamped at 0, as upstream does. A time that is not a
safe integer contributes nothing (upstream's read refuses such a log; the
toolkit still folds the readable prefix).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from subagent_catalog.read.jsvalue import MAX_SAFE_INTEGER, is_safe_integer


@dataclass(slots=True)
class StepTiming:
    """One model step's boundaries (times in ms; ``None`` where the step has none)."""

    turn: Any
    step: Any
    start_ms: int
    first_token_ms: int | None = None
    message_ms: int | None = None

    @property
    def llm_ms(self) -> int | None:
        """Model time: step start to message (at least 0)."""
        return None if self.message_ms is None else max(0, self.message_ms - self.start_ms)

    @property
    def ttft_ms(self) -> int | None:
        """First-token latency: step start to first token (at least 0)."""
        return None if self.first_token_ms is None else max(0, self.first_token_ms - self.start_ms)


def token_delta(chunk: Any) -> bool:
    """Whether an ``assistant/chunk``'s ``data.chunk`` carries visible model output (upstream's ``isTokenDelta``).

    A non-empty text or reasoning delta, or a tool-call delta with arguments or a name.

    Examples:
        >>> token_delta({"type": "text-delta", "text": "a"}), token_delta({"type": "text-delta", "text": ""})
        (True, False)
        >>> token_delta({"type": "tool-call-delta", "argumentsDelta": "", "name": "grep"})
        True
        >>> token_delta({"type": "usage"})
        False
    """
    if type(chunk) is not dict:
        return False
    kind = chunk.get("type")
    if kind == "text-delta" or kind == "reasoning-delta":
        return chunk.get("text") != ""
    if kind == "tool-call-delta":
        return chunk.get("argumentsDelta") != "" or "name" in chunk
    return False


def row_first_token(row: dict[str, Any], times: list[int], first_member: int = 0) -> int | None:
    """The time of a packed chunk row's first member that is a token delta (from ``first_member`` on), or ``None``.

    ``row`` is the parsed row (``text-chunks``, ``reasoning-chunks``,
    ``tool-call-chunks``), ``times`` its members' times.

    Examples:
        >>> row = {"type": "text-chunks", "data": {"texts": ["", "a"]}}
        >>> row_first_token(row, [5, 7])
        7
        >>> row_first_token({"type": "tool-call-chunks", "data": {"name": "grep", "args": [""]}}, [3])
        3
    """
    data = row.get("data")
    if type(data) is not dict:
        return None
    if row.get("type") == "tool-call-chunks":
        if "name" in data:
            return times[first_member] if first_member < len(times) else None
        members = data.get("args")
    else:
        members = data.get("texts")
    if type(members) is not list:
        return None
    for index in range(first_member, min(len(members), len(times))):
        if members[index] != "":
            return times[index]
    return None


def _time(value: Any) -> int | None:
    if type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    return int(value) if is_safe_integer(value) else None


def same(left: Any, right: Any) -> bool:
    """JavaScript's ``===`` on JSON values of ``data.turn``/``data.step`` (a number is never a boolean).

    Examples:
        >>> same(1, 1.0), same(1, True), same(None, None)
        (True, False, True)
    """
    return left is right or (left == right and (type(left) is bool) == (type(right) is bool))


class StatsFold:
    """Upstream's ``sessionStats`` state, fed one event at a time (see the module docstring).

    ``message`` returns the step it closes (for per-step views); the totals are the steps' sums.

    Examples:
        >>> fold = StatsFold()
        >>> fold.step_start(1, 1, 10)
        >>> fold.token(1, 1, 13)
        >>> fold.message(1, 1, 20, 4).llm_ms
        10
        >>> fold.tool_call("c1", 21)
        >>> fold.tool_result("c1", 26)
        >>> fold.step_end()
        >>> fold.llm_ms, fold.ttft_ms, fold.ttft_steps, fold.decode_ms, fold.decode_tokens, fold.tool_ms
        (10, 3, 1, 7, 4, 5)
    """

    def __init__(self) -> None:
        self.llm_ms = 0
        self.tool_ms = 0
        self.ttft_ms = 0
        self.ttft_steps = 0
        self.decode_ms = 0
        self.decode_tokens = 0
        self.open: StepTiming | None = None
        self.pending: dict[str, int | None] = {}
        self.tool_spans: list[tuple[int, int]] = []  # (call, result) of every call ``tool_ms`` adds

    def step_start(self, turn: Any, step: Any, time: Any) -> None:
        """A ``step/start`` with ``data.turn``, ``data.step`` and its time."""
        start = time if type(time) is int and -MAX_SAFE_INTEGER <= time <= MAX_SAFE_INTEGER else _time(time)
        self.open = None if start is None else StepTiming(turn, step, start)

    def wants_token(self, turn: Any, step: Any) -> bool:
        """Whether a token delta of ``(turn, step)`` would be the open step's first token."""
        open_step = self.open
        return (
            open_step is not None
            and open_step.first_token_ms is None
            and (open_step.turn is turn or same(open_step.turn, turn))
            and (open_step.step is step or same(open_step.step, step))
        )

    def token(self, turn: Any, step: Any, time: Any) -> None:
        """A token delta of ``(turn, step)`` at ``time`` that ``wants_token`` says is the open step's first token."""
        assert self.open is not None
        self.open.first_token_ms = _time(time)

    def message(self, turn: Any, step: Any, time: Any, output: Any) -> StepTiming | None:
        """An ``assistant/message`` of ``(turn, step)`` whose ``data.usage.outputTokens`` is ``output`` (or ``None``).

        Returns the step it times, or ``None`` when it closes no open step.
        """
        open_step = self.open
        if open_step is None:
            return None
        if not (open_step.turn is turn or same(open_step.turn, turn)) or not (
            open_step.step is step or same(open_step.step, step)
        ):
            return None
        self.open = None
        end = time if type(time) is int and -MAX_SAFE_INTEGER <= time <= MAX_SAFE_INTEGER else _time(time)
        if end is None:
            return None
        open_step.message_ms = end
        start = open_step.start_ms
        self.llm_ms += end - start if end > start else 0
        first = open_step.first_token_ms
        if first is not None:
            self.ttft_ms += first - start if first > start else 0
            self.ttft_steps += 1
            if type(output) is int and 0 <= output <= MAX_SAFE_INTEGER:
                self.decode_ms += end - first if end > first else 0
                self.decode_tokens += output
        return open_step

    def tool_call(self, call_id: Any, time: Any) -> None:
        """A ``tool/call`` with ``data.callId``."""
        if type(call_id) is str:
            self.pending[call_id] = _time(time)

    def tool_result(self, call_id: Any, time: Any) -> None:
        """A ``tool/result`` answering ``call_id`` (``data.message.source.callId``)."""
        if type(call_id) is not str or call_id not in self.pending:
            return
        dispatched = self.pending.pop(call_id)
        end = _time(time)
        if dispatched is not None and end is not None and end > dispatched:
            self.tool_ms += end - dispatched
            self.tool_spans.append((dispatched, end))

    def step_end(self) -> None:
        """A ``step/end``: the open step is closed (a message after it times nothing)."""
        self.open = None

    def turn_end(self) -> None:
        """A ``turn/end``: calls whose result never landed are dropped."""
        if self.pending:
            self.pending = {}

    def event(self, kind: Any, data: Any, time: Any) -> StepTiming | None:
        """One parsed event of the session's own, whatever its kind; the step a message closes, if any.

        Examples:
            >>> fold = StatsFold()
            >>> fold.event("step/start", {"turn": 1, "step": 1}, 5)
            >>> fold.event("assistant/message", {"turn": 1, "step": 1, "message": {}}, 9).llm_ms
            4
        """
        record = data if type(data) is dict else {}
        get = record.get
        if kind == "assistant/chunk":
            if self.wants_token(get("turn"), get("step")) and token_delta(get("chunk")):
                self.token(get("turn"), get("step"), time)
        elif kind == "assistant/message":
            usage = get("usage")
            return self.message(
                get("turn"), get("step"), time, usage.get("outputTokens") if type(usage) is dict else None
            )
        elif kind == "step/start":
            self.step_start(get("turn"), get("step"), time)
        elif kind == "step/end":
            self.step_end()
        elif kind == "tool/call":
            self.tool_call(get("callId"), time)
        elif kind == "tool/result":
            message = get("message")
            source = message.get("source") if type(message) is dict else None
            self.tool_result(source.get("callId") if type(source) is dict else get("callId"), time)
        elif kind == "turn/end":
            self.turn_end()
        return None
