"""Run facts of one session: time, turns and outcomes, models, tokens and tools, in one pass.

``fold_run`` reads the scanned events once (packed chunk rows already
expanded, no synthetic closers) and keeps only the session's own events,
``seq >= header.seedLength`` (a forked child's log starts with its parent's
events, which must not be counted again). Legacy shapes upstream migrates
on read (old ``turn/end`` reasons, top-level ``tool/result`` fields) are read
as their migrated form. Nothing is estimated: a fact the events do not
carry is ``None``. Every field names the event field it comes from in
``docs/frames.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from subagent_catalog.read.jsvalue import MAX_SAFE_INTEGER, is_safe_integer

TURN_KINDS = ("completed", "error", "aborted", "max-tokens", "blocked", "interrupted")
USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")


@dataclass
class RunFacts:
    """What a session did, over its own events (see ``fold_run``).

    Counts are 0 when the events hold none of the thing counted; the other
    fields are ``None`` when the events do not carry the fact.
    """

    first_ms: int | None = None
    last_ms: int | None = None
    turns: int = 0
    turns_open: int = 0
    turn_ms: int | None = None
    turns_completed: int = 0
    turns_error: int = 0
    turns_aborted: int = 0
    turns_max_tokens: int = 0
    turns_blocked: int = 0
    turns_interrupted: int = 0
    turns_other: int = 0
    last_turn_outcome: str | None = None
    last_abort_cause: str | None = None
    last_error_message: str | None = None
    last_error_code: str | None = None
    models: list[str] | None = None
    providers: list[str] | None = None
    steps: int = 0
    usage_steps: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    tool_calls: int = 0
    tools: list[str] = field(default_factory=list)
    tool_results: int = 0
    tool_results_failed: int = 0
    tool_output_bytes: int = 0


def _int(value: Any) -> int | None:
    return int(value) if is_safe_integer(value) else None


def _safe_sum(values: list[int]) -> int | None:
    total = sum(values)
    return total if total <= MAX_SAFE_INTEGER else None


def _turn_reason(reason: Any) -> tuple[str | None, str | None, str | None, str | None]:
    """(kind, abort cause, error message, error code) of a ``turn/end`` reason, legacy shapes migrated."""
    if type(reason) is not dict or type(reason.get("kind")) is not str:
        return None, None, None, None
    kind = reason["kind"]
    if kind == "disposed":
        return "aborted", "disposed", None, None
    if kind == "aborted":
        cause = reason.get("reason")
        if "reason" not in reason:
            return "aborted", "legacy", None, None
        return (
            "aborted",
            cause.get("kind") if type(cause) is dict and type(cause.get("kind")) is str else None,
            None,
            None,
        )
    if kind == "error":
        failure = reason.get("error", reason.get("failure"))
        if type(failure) is not dict:  # legacy {kind, step, message, code?}
            failure = {"message": reason.get("message"), "code": reason.get("code", "UNKNOWN")}
        message, code = failure.get("message"), failure.get("code")
        return kind, None, message if type(message) is str else None, code if type(code) is str else None
    return kind, None, None, None


def utf8_length(text: str) -> int:
    """The UTF-8 length of a string, lone surrogates counted as their three-byte encoding.

    Examples:
        >>> utf8_length("abc"), utf8_length("\\u00e9"), utf8_length("\\ud800")
        (3, 2, 3)
    """
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _text_bytes(blocks: Any) -> int:
    total = 0
    if type(blocks) is list:
        for block in blocks:
            if type(block) is dict and block.get("type") == "text" and type(text := block.get("text")) is str:
                total += utf8_length(text)
    return total


class Fold:
    """The running state of ``fold_run``, one step per event kind.

    The steps take the values ``fold_run`` reads from an event, so a reader
    that decodes events into other shapes (``read.typed_read``) folds them
    with the same code.
    """

    def __init__(self) -> None:
        self.run = RunFacts()
        self.open_turn: tuple[Any, Any] | None = None  # (data.turn, time) of the open turn/start
        self.turn_times: list[int] = []
        self.usage: dict[tuple[Any, Any], Any] = {}  # samples: dicts, or records with the same ``get``
        self.models: dict[str, None] = {}
        self.providers: dict[str, None] = {}
        self.headers = 0
        self.tools: set[str] = set()

    def turn_start(self, turn: Any, time: Any) -> None:
        """A ``turn/start`` with ``data.turn`` (``None`` when absent)."""
        self.run.turns += 1
        if self.open_turn is not None:
            self.run.turns_open += 1
        self.open_turn = (turn, time)

    def turn_end(self, turn: Any, reason: Any, time: Any) -> None:
        """A ``turn/end`` with ``data.turn`` and ``data.reason`` (``None`` when absent)."""
        run = self.run
        if self.open_turn is not None:
            started, start = self.open_turn
            if started is not None and started == turn and is_safe_integer(start) and is_safe_integer(time):
                self.turn_times.append(max(0, int(time) - int(start)))
            elif started is None or started != turn:
                run.turns_open += 1
            self.open_turn = None
        kind, cause, message, code = _turn_reason(reason)
        if kind is None:
            run.turns_other += 1
            run.last_turn_outcome = None
            return
        run.last_turn_outcome = kind
        if kind in TURN_KINDS:
            name = "turns_" + kind.replace("-", "_")
            setattr(run, name, getattr(run, name) + 1)
        else:
            run.turns_other += 1
        if kind == "aborted":
            run.last_abort_cause = cause
        elif kind == "error":
            run.last_error_message, run.last_error_code = message, code

    def header(self, data: Any) -> None:
        """A ``request/header`` with its ``data``."""
        header = data.get("header") if type(data) is dict else None
        config = header.get("config") if type(header) is dict else None
        if type(config) is dict:
            self.route(config.get("provider"), config.get("model"))
        else:
            self.route(None, None)

    def route(self, provider: Any, model: Any) -> None:
        """A ``request/header`` whose ``data.header.config`` names ``provider`` and ``model`` (or not: ``None``)."""
        self.headers += 1
        if type(provider) is str:
            self.providers[provider] = None
            if type(model) is str:
                self.models[f"{provider}/{model}"] = None

    def sample(self, turn: Any, step: Any, usage: Any) -> None:
        """A usage sample (a chunk's or a message's) of step ``(turn, step)``; anything but a record is no sample."""
        self.usage[(turn, step)] = usage

    def tool_result(self, event: dict[str, Any], data: Any) -> None:
        """A ``tool/result`` event (only appended results count)."""
        if event.get("surfaceOp") != "append" or type(data) is not dict:
            return
        message = data.get("message")
        if type(message) is dict:
            content = message.get("content")
            block = content[0] if type(content) is list and content else None
        else:  # legacy {callId, content, isError}
            block = data
        if type(block) is dict:
            self.tool_outcome(block.get("isError") is True, _text_bytes(block.get("content")))
        else:
            self.run.tool_results += 1

    def tool_outcome(self, failed: bool, text_bytes: int) -> None:
        """An appended tool result whose block says ``isError: true`` (``failed``) and holds ``text_bytes`` of text."""
        self.run.tool_results += 1
        if failed:
            self.run.tool_results_failed += 1
        self.run.tool_output_bytes += text_bytes

    def finish(self, first: int | None, last: int | None) -> RunFacts:
        """The run facts, with the own events' time span ``first``..``last``."""
        run = self.run
        if self.open_turn is not None:
            run.turns_open += 1
        run.first_ms, run.last_ms = first, last
        if self.turn_times:
            run.turn_ms = _safe_sum(self.turn_times)
        if self.headers:
            run.models, run.providers = list(self.models), list(self.providers)
        run.tools = sorted(self.tools)
        run.usage_steps = len(self.usage)
        run.input_tokens, run.output_tokens, run.cache_read_tokens, run.cache_write_tokens, run.reasoning_tokens = (
            _safe_sum(values) if values else None for values in self.usage_counts()
        )
        return run

    def usage_counts(self) -> list[list[int]]:
        """Per field of ``USAGE_FIELDS``, the non-negative safe-integer counts of the samples kept."""
        sums: dict[str, list[int]] = {name: [] for name in USAGE_FIELDS}
        for usage in self.usage.values():
            for name in USAGE_FIELDS:
                value = usage.get(name)
                if is_safe_integer(value) and value >= 0:
                    sums[name].append(int(value))
        return list(sums.values())


def fold_run(
    events: list[dict[str, Any]], seed_length: int = 0, *, span: tuple[int | None, int | None] | None = None
) -> RunFacts:
    """The run facts of a session's own events (``seq >= seed_length``).

    Token usage is one sample per ``(turn, step)``: a usage chunk and the
    ``assistant/message`` usage of the same step are the same sample, and a
    later sample replaces an earlier one (upstream's ``tokenUsage`` rule).

    Args:
        events: the scanned events (seq order, packed rows expanded).
        seed_length: the header's ``seedLength`` (absent: 0, the whole log is the session's).
        span: the (min, max) safe-integer ``time`` of all ``events``, when the caller has it
            (used only when every event is the session's own, to save a pass).

    Examples:
        >>> events = [
        ...     {"type": "turn/start", "seq": 0, "time": 10, "data": {"turn": 1}},
        ...     {"type": "assistant/chunk", "seq": 1, "time": 12, "data": {"turn": 1, "step": 1,
        ...      "chunk": {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 2}}}},
        ...     {"type": "turn/end", "seq": 2, "time": 15, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ... ]
        >>> run = fold_run(events)
        >>> run.turns, run.turn_ms, run.last_turn_outcome, run.input_tokens, run.cache_read_tokens
        (1, 5, 'completed', 5, None)
        >>> fold_run(events, seed_length=2).turns, fold_run(events, seed_length=2).first_ms
        (0, 15)
    """
    start = 0
    while start < len(events) and not (type(seq := events[start].get("seq")) is int and seq >= seed_length):
        start += 1  # the scanned prefix is in seq order: the seed is a head
    own = events[start:] if start else events
    fold = Fold()
    for event in own:
        kind = event.get("type")
        if kind == "assistant/chunk":  # most events: test the chunk kind and move on
            try:
                data = event["data"]
                if data["chunk"]["type"] == "usage" and type(usage := data["chunk"].get("usage")) is dict:
                    fold.sample(data.get("turn"), data.get("step"), usage)
            except (KeyError, TypeError, IndexError, AttributeError):
                pass  # not an object holding a usage chunk
            continue
        data = event.get("data")
        if kind == "assistant/message":
            if type(data) is dict and type(usage := data.get("usage")) is dict:
                fold.sample(data.get("turn"), data.get("step"), usage)
        elif kind == "turn/start":
            fold.turn_start(data.get("turn") if type(data) is dict else None, event.get("time"))
        elif kind == "turn/end":
            record = data if type(data) is dict else {}
            fold.turn_end(record.get("turn"), record.get("reason"), event.get("time"))
        elif kind == "step/end":
            fold.run.steps += 1
        elif kind == "tool/call":
            fold.run.tool_calls += 1
            if type(data) is dict and type(name := data.get("name")) is str:
                fold.tools.add(name)
        elif kind == "tool/result":
            fold.tool_result(event, data)
        elif kind == "request/header":
            fold.header(data)
    if span is not None and not start:
        first, last = span
    else:
        times = [int(e["time"]) for e in own if is_safe_integer(e.get("time"))]
        first, last = (min(times), max(times)) if times else (None, None)
    return fold.finish(first, last)
