"""Run facts of one session: time, turns and outcomes, models, tokens and tools, in one pass.

``fold_run`` reads the scanned events once (packed chunk rows already
expanded, no synthetic closers) and keeps only the session's own events,
``seq >= header.seedLength`` (a forked child's log starts with its parent's
events, which must not be counted again). Legacy shapes upstream migrates
on read (old ``turn/end`` reasons, top-level ``tool/result`` fields) are read
as their migrated form. Nothing is estimated: a fact the events do not
carry is ``None``. Every field names the event field it comes from in
``docs/frames.md``.

The fold also keeps what the session's own events say of where its time
went (upstream's ``sessionStats``, ``read.run_stats``; the active and
tool-busy unions, ``read.run_time``), every step's usage attributed to its
model and every tool call with its result (``read.run_records``: the seed's
too, flagged ``in_seed``), and how full the context got (each own step's
prompt, input + cache read + cache write, against the ``request/context``
window stated before it), and what names it: its last ``session/title``
(``data.title``, the seed's too, as upstream's title projection folds them)
and its first own ``user/message`` written by a human (``data.source.kind``
``user``, or no source, as older logs have: subagent notices, runtime-context
snapshots and coordinator relays are not prompts), each whitespace-folded and
clipped (``clip_name``); ``RunFacts.name`` is the title, else the prompt.
Names are plain text: a view escapes them (a title may hold markup).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from subagent_catalog.read.jsvalue import MAX_SAFE_INTEGER, frame_text, is_safe_integer
from subagent_catalog.read.run_records import CallFold, UsageFold, UsageSample, utf8_length
from subagent_catalog.read.run_stats import StatsFold, row_first_token, token_delta
from subagent_catalog.read.run_time import ActiveFold, time_before

TURN_KINDS = ("completed", "error", "aborted", "max-tokens", "blocked", "interrupted")
USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
STATS_FIELDS = ("llm_ms", "tool_ms", "ttft_ms", "ttft_steps", "decode_ms", "decode_tokens")
"""The time-split fields of ``RunFacts`` (upstream's ``sessionStats``; ``None`` only for a sum past safe integers)."""
TEXT_FIELDS = (
    "last_turn_outcome",
    "last_abort_cause",
    "last_abort_reason",
    "last_error_message",
    "last_error_code",
    "title",
    "prompt",
)
"""The optional text fields of ``RunFacts``."""
CONTEXT_FIELDS = ("last_context_tokens", "peak_context_tokens", "context_window", "peak_context_share")
"""The context-size fields of ``RunFacts`` (``Fold.finish``; upstream's ``contextPressure``, see ``docs/runs.md``)."""

_IN_SEED = UsageSample._fields.index("in_seed")

TEXT_CLIP = 400
"""Characters a session's ``title`` and ``prompt`` keep (enough to tell tasks apart: ``compare --match``)."""

NAME_CLIP = 80
"""Characters a session's ``name`` keeps (the title, else the prompt)."""

__all__ = [
    "CONTEXT_FIELDS",
    "STATS_FIELDS",
    "TEXT_FIELDS",
    "TURN_KINDS",
    "USAGE_FIELDS",
    "Fold",
    "RunFacts",
    "clip_name",
    "fold_run",
    "utf8_length",
]


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
    last_abort_reason: str | None = None
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
    last_turn_open: bool = False
    llm_ms: int | None = 0
    tool_ms: int | None = 0
    ttft_ms: int | None = 0
    ttft_steps: int | None = 0
    decode_ms: int | None = 0
    decode_tokens: int | None = 0
    active_ms: int | None = None
    tool_busy_ms: int | None = None
    last_context_tokens: int | None = None
    peak_context_tokens: int | None = None
    context_window: int | None = None
    peak_context_share: float | None = None
    usage_samples: list[tuple[Any, ...]] = field(default_factory=list)  # ``UsageSample`` fields
    tool_call_records: list[tuple[Any, ...]] = field(default_factory=list)  # ``ToolCallRecord`` fields
    title: str | None = None
    prompt: str | None = None

    @property
    def name(self) -> str | None:
        """The session's name: its last title, else its first human prompt, clipped to ``NAME_CLIP``."""
        text = self.title if self.title is not None else self.prompt
        return None if text is None else clip_name(text, NAME_CLIP)


def clip_name(text: str, clip: int = TEXT_CLIP) -> str | None:
    """Whitespace folded to single spaces and clipped to ``clip`` characters (``None`` when nothing is left).

    A lone surrogate (a JavaScript string may hold one) becomes U+FFFD, as in every text column.

    Examples:
        >>> clip_name("  Fix the\\n\\nflaky   test  ")
        'Fix the flaky test'
        >>> clip_name("a" * 10, clip=5)
        'aaaa…'
        >>> clip_name(" \\n ") is None
        True
        >>> clip_name("bad \\udc00 title")
        'bad \\ufffd title'
    """
    folded = " ".join(text.split())
    if not folded:
        return None
    return frame_text(folded if len(folded) <= clip else folded[: max(clip - 1, 0)] + "…")


def message_text(content: Any) -> str:
    """A message's text: its content when a string, else its ``text`` blocks joined by spaces.

    Examples:
        >>> message_text([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}])
        'a b'
    """
    if type(content) is str:
        return content
    if type(content) is not list:
        return ""
    return " ".join(
        block["text"]
        for block in content
        if type(block) is dict and block.get("type") == "text" and type(block.get("text")) is str
    )


INT64_MAX = (1 << 63) - 1
TOKEN_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
"""The ``RunFacts`` token sums (``USAGE_FIELDS`` of the own samples)."""


def _token_sum(values: list[int]) -> int | None:
    """A session's token count: exact while it fits a 64-bit column, ``None`` past it (``token_overflow``)."""
    total = sum(values)
    return total if total <= INT64_MAX else None


def token_overflow(run: RunFacts) -> list[str]:
    """The token counts whose sum passed 2^63 - 1 (left ``None``, never wrapped), to report as a problem.

    Examples:
        >>> usage = {"inputTokens": 2**53 - 1, "outputTokens": 1}
        >>> events = [{"type": "assistant/chunk", "seq": n, "time": n, "data": {"turn": 1, "step": n,
        ...     "chunk": {"type": "usage", "usage": usage}}} for n in range(1100)]
        >>> run = fold_run(events, 0)
        >>> run.input_tokens, run.output_tokens, token_overflow(run)
        (None, 1100, ['input_tokens'])
    """
    missing = [(name, at) for at, name in enumerate(TOKEN_COUNTS, start=7) if getattr(run, name) is None]
    if not missing or not run.usage_steps:
        return []
    own = [sample for sample in run.usage_samples if not sample[_IN_SEED]]
    return [name for name, at in missing if any(sample[at] is not None for sample in own)]


def _turn_reason(reason: Any) -> tuple[str | None, str | None, str | None, str | None]:
    """(kind, abort cause or error message, abort reason text or error code) of a ``turn/end`` reason.

    Legacy shapes are read as upstream migrates them.
    """
    if type(reason) is not dict or type(reason.get("kind")) is not str:
        return None, None, None, None
    kind = reason["kind"]
    if kind == "disposed":
        return "aborted", "disposed", None, None
    if kind == "aborted":
        cause = reason.get("reason")
        if "reason" not in reason:
            return "aborted", "legacy", None, None
        if type(cause) is not dict:
            return "aborted", None, None, None
        text = cause.get("reason")
        return (
            "aborted",
            cause.get("kind") if type(cause.get("kind")) is str else None,
            text if type(text) is str else None,
            None,
        )
    if kind == "error":
        failure = reason.get("error", reason.get("failure"))
        if type(failure) is not dict:  # legacy {kind, step, message, code?}
            failure = {"message": reason.get("message"), "code": reason.get("code", "UNKNOWN")}
        message, code = failure.get("message"), failure.get("code")
        return kind, message if type(message) is str else None, None, code if type(code) is str else None
    return kind, None, None, None


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
    with the same code. ``stats`` is upstream's ``sessionStats`` over the
    own events, ``usage`` and ``calls`` the usage samples and tool calls of
    the whole log (seed ones flagged).
    """

    def __init__(self) -> None:
        self.run = RunFacts()
        self.open_turn: tuple[Any, Any] | None = None  # (data.turn, time) of the open turn/start
        self.turn_times: list[int] = []
        self.models: dict[str, None] = {}
        self.providers: dict[str, None] = {}
        self.headers = 0
        self.tools: set[str] = set()
        self.stats = StatsFold()
        self.usage = UsageFold()
        self.calls = CallFold()
        self.active = ActiveFold()

    def turn_start(self, turn: Any, time: Any, *, before: int | None = None) -> None:
        """A ``turn/start`` with ``data.turn`` (``None`` when absent).

        ``before``: when a turn is still open, the time of the last own event before this one (where that
        turn's active time ends; ``read.run_time``).
        """
        self.run.turns += 1
        if self.open_turn is not None:
            self.run.turns_open += 1
        self.open_turn = (turn, time)
        self.active.start(time, before=before)

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
        self.active.end(time)
        kind, first, second, code = _turn_reason(reason)
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
            run.last_abort_cause, run.last_abort_reason = first, second
        elif kind == "error":
            run.last_error_message, run.last_error_code = first, code

    def header(self, data: Any, *, own: bool = True) -> None:
        """A ``request/header`` with its ``data`` (``own``: of the session's own events)."""
        header = data.get("header") if type(data) is dict else None
        config = header.get("config") if type(header) is dict else None
        if type(config) is dict:
            self.route(config.get("provider"), config.get("model"), own=own)
        else:
            self.route(None, None, own=own)

    def route(self, provider: Any, model: Any, *, own: bool = True) -> None:
        """A ``request/header`` whose ``data.header.config`` names ``provider`` and ``model`` (or not: ``None``).

        Every header sets the route usage is attributed to; only the own
        events' headers make ``models`` and ``providers``.
        """
        self.usage.route(provider, model)
        if not own:
            return
        self.headers += 1
        if type(provider) is str:
            self.providers[provider] = None
            if type(model) is str:
                self.models[f"{provider}/{model}"] = None

    def context(self, data: Any) -> None:
        """A ``request/context`` with its ``data``: the context window in effect from here (``None``: not stated)."""
        self.usage.context(data.get("contextWindow") if type(data) is dict else None)

    def sample(self, seq: int, time: Any, turn: Any, step: Any, usage: Any, *, in_seed: bool = False) -> None:
        """A usage sample (a chunk's or a message's) of step ``(turn, step)``; anything but a record is no sample."""
        self.usage.sample(seq, time, turn, step, usage, in_seed)

    def message(self, seq: int, time: Any, data: Any, *, in_seed: bool = False) -> None:
        """An ``assistant/message`` with its ``data``: its usage sample, its model, its step's model time."""
        if type(data) is not dict:
            return
        turn, step, usage = data.get("turn"), data.get("step"), data.get("usage")
        message = data.get("message")
        source = message.get("source") if type(message) is dict else None
        provider, model = (source.get("provider"), source.get("model")) if type(source) is dict else (None, None)
        self.usage.message(seq, time, turn, step, usage if type(usage) is dict else None, in_seed, provider, model)
        if not in_seed:
            self.stats.message(turn, step, time, usage.get("outputTokens") if type(usage) is dict else None)

    def tool_call(self, seq: int, time: Any, data: Any, *, in_seed: bool = False) -> None:
        """A ``tool/call`` with its ``data``."""
        record = data if type(data) is dict else {}
        call_id, name = record.get("callId"), record.get("name")
        arguments = record.get("arguments")
        self.calls.call(seq, time, record.get("turn"), record.get("step"), call_id, name, arguments, in_seed)
        if in_seed:
            return
        self.run.tool_calls += 1
        if type(name) is str:
            self.tools.add(name)
        self.stats.tool_call(call_id, time)

    def tool_result(self, event: dict[str, Any], data: Any, *, in_seed: bool = False) -> None:
        """A ``tool/result`` event: only appended results count, every one ends its call's tool time."""
        message = data.get("message") if type(data) is dict else None
        if type(message) is dict:
            source = message.get("source")
            call_id = source.get("callId") if type(source) is dict else None
            content = message.get("content")
            block = content[0] if type(content) is list and content else None
        else:  # legacy {callId, content, isError}
            call_id = data.get("callId") if type(data) is dict else None
            block = data
        if not in_seed:
            self.stats.tool_result(call_id, event.get("time"))
        if event.get("surfaceOp") != "append" or type(data) is not dict:
            return
        error = data.get("error")
        name, code = (error.get("name"), error.get("code")) if type(error) is dict else (None, None)
        if in_seed:  # a seed result is its parent's: its size is measured there
            failed = type(block) is dict and block.get("isError") is True
            self.calls.result(event["seq"], event.get("time"), call_id, failed, name, code, None, in_seed=True)
        elif type(block) is dict:
            failed, text = block.get("isError") is True, _text_bytes(block.get("content"))
            self.calls.result(event["seq"], event.get("time"), call_id, failed, name, code, text)
            self.tool_outcome(failed, text)
        else:
            self.calls.result(event["seq"], event.get("time"), call_id, False, name, code, 0)
            self.run.tool_results += 1

    def tool_outcome(self, failed: bool, text_bytes: int) -> None:
        """An appended tool result whose block says ``isError: true`` (``failed``) and holds ``text_bytes`` of text."""
        self.run.tool_results += 1
        if failed:
            self.run.tool_results_failed += 1
        self.run.tool_output_bytes += text_bytes

    def title(self, data: Any) -> None:
        """A ``session/title`` with its ``data``: a non-blank ``data.title`` names the session from here."""
        title = data.get("title") if type(data) is dict else None
        name = clip_name(title) if type(title) is str else None
        if name is not None:
            self.run.title = name

    def user_message(self, data: Any) -> None:
        """An own ``user/message`` with its ``data``: the first with text written by a human is the prompt."""
        if self.run.prompt is not None or type(data) is not dict:
            return
        source = data.get("source")
        if type(source) is dict and source.get("kind") not in (None, "user"):
            return
        self.run.prompt = clip_name(message_text(data.get("content")))

    def finish(self, first: int | None, last: int | None, *, counts: Any = None, final: int | None = None) -> RunFacts:
        """The run facts, with the own events' time span ``first``..``last`` (``counts``: see ``UsageFold.samples``).

        ``final`` is the time of the last own event (in log order), where a turn still open ends; ``last`` when
        not given.
        """
        run = self.run
        if first is not None:
            end = last if final is None else final
            run.active_ms, run.tool_busy_ms = self.active.finish(end, self.stats.tool_spans)
        if self.open_turn is not None:
            run.turns_open += 1
            run.last_turn_open = True
        run.first_ms, run.last_ms = first, last
        if self.turn_times:
            run.turn_ms = total if (total := sum(self.turn_times)) <= MAX_SAFE_INTEGER else None
        if self.headers:
            run.models, run.providers = list(self.models), list(self.providers)
        run.tools = sorted(self.tools)
        samples = self.usage.samples(counts)
        own = [sample for sample in samples if not sample[_IN_SEED]]
        run.usage_samples = samples
        run.usage_steps = len(own)
        run.input_tokens, run.output_tokens, run.cache_read_tokens, run.cache_write_tokens, run.reasoning_tokens = (
            _token_sum(values) if values else None for values in _usage_counts(own)
        )
        windows = self.usage.windows
        if len(own) != len(samples):  # a fork's seed samples: only the own ones' windows
            windows = [window for sample, window in zip(samples, windows, strict=True) if not sample[_IN_SEED]]
        _context(run, own, windows)
        run.context_window = self.usage.window
        stats = self.stats
        for name in STATS_FIELDS:
            value = getattr(stats, name)
            setattr(run, name, value if value <= MAX_SAFE_INTEGER else None)
        run.tool_call_records = self.calls.finish()
        return run


def _context(run: RunFacts, own: list[tuple[Any, ...]], windows: list[int | None]) -> None:
    """The own samples' prompt sizes (input + cache read + cache write): the last, the peak, the peak share.

    A sample without ``inputTokens`` has no known prompt size; a share needs the window in effect at the
    sample (the last ``request/context`` before it).
    """
    prompt = peak = share = None
    for sample, window in zip(own, windows, strict=True):
        uncached = sample[7]
        if uncached is None:
            prompt = None
            continue
        prompt = uncached + (sample[9] or 0) + (sample[10] or 0)
        if prompt > MAX_SAFE_INTEGER:
            prompt = None
            continue
        if peak is None or prompt > peak:
            peak = prompt
        if window is not None and (share is None or prompt / window > share):
            share = prompt / window
    run.last_context_tokens, run.peak_context_tokens, run.peak_context_share = prompt, peak, share


def _usage_counts(samples: list[tuple[Any, ...]]) -> list[list[int]]:
    """Per count of ``USAGE_FIELDS``, the values the samples carry."""
    if not samples:
        return [[], [], [], [], []]
    columns = list(zip(*samples, strict=True))[7:12]
    return [[value for value in column if value is not None] for column in columns]


def _fold_seed(fold: Fold, seed: list[dict[str, Any]]) -> None:
    """The seed's part of the fold: its route, usage samples and tool calls (flagged ``in_seed``)."""
    for event in seed:
        kind = event.get("type")
        if kind == "assistant/chunk":
            data = event.get("data")
            chunk = data.get("chunk") if type(data) is dict else None
            usage = chunk.get("usage") if type(chunk) is dict and chunk.get("type") == "usage" else None
            if type(usage) is dict and type(data) is dict:
                fold.sample(event["seq"], event.get("time"), data.get("turn"), data.get("step"), usage, in_seed=True)
        elif kind == "assistant/message":
            fold.message(event["seq"], event.get("time"), event.get("data"), in_seed=True)
        elif kind == "request/header":
            fold.header(event.get("data"), own=False)
        elif kind == "request/context":
            fold.context(event.get("data"))
        elif kind == "tool/call":
            fold.tool_call(event["seq"], event.get("time"), event.get("data"), in_seed=True)
        elif kind == "tool/result":
            fold.tool_result(event, event.get("data"), in_seed=True)
        elif kind == "session/title":
            fold.title(event.get("data"))


def _chunk(fold: Fold, event: dict[str, Any], seed_length: int) -> None:
    """An own ``assistant/chunk`` (or a packed row's stand-in): a usage sample or a step's first token."""
    data = event.get("data")
    if type(data) is not dict:
        times = getattr(event, "times", None)  # a packed row kept packed (read.fastpath.PackedRow)
        if times is not None:
            value = event.value  # type: ignore[attr-defined]
            row = value.get("data")
            if fold.stats.wants_token(row.get("turn"), row.get("step")):
                skip = max(0, seed_length - event.seq0)  # type: ignore[attr-defined]
                found = row_first_token(value, times, skip)
                if found is not None:
                    fold.stats.token(row.get("turn"), row.get("step"), found)
        return
    chunk = data.get("chunk")
    if type(chunk) is not dict:
        return
    if chunk.get("type") == "usage":
        if type(usage := chunk.get("usage")) is dict:
            fold.sample(event["seq"], event.get("time"), data.get("turn"), data.get("step"), usage)
    elif fold.stats.wants_token(data.get("turn"), data.get("step")) and token_delta(chunk):
        fold.stats.token(data.get("turn"), data.get("step"), event.get("time"))


def fold_run(
    events: list[dict[str, Any]], seed_length: int = 0, *, span: tuple[int | None, int | None] | None = None
) -> RunFacts:
    """The run facts of a session's own events (``seq >= seed_length``), and its seed's usage and calls.

    Token usage is one sample per ``(turn, step)``: a usage chunk and the
    ``assistant/message`` usage of the same step are the same sample, and a
    later sample replaces an earlier one (upstream's ``tokenUsage`` rule).

    Args:
        events: the scanned events (seq order, packed rows expanded or kept as ``fastpath.PackedRow``).
        seed_length: the header's ``seedLength`` (absent: 0, the whole log is the session's).
        span: the (min, max) safe-integer ``time`` of all ``events``, when the caller has it
            (used only when every event is the session's own, to save a pass).

    Examples:
        >>> events = [
        ...     {"type": "turn/start", "seq": 0, "time": 10, "data": {"turn": 1}},
        ...     {"type": "step/start", "seq": 1, "time": 10, "data": {"turn": 1, "step": 1}},
        ...     {"type": "assistant/chunk", "seq": 2, "time": 11, "data": {"turn": 1, "step": 1,
        ...      "chunk": {"type": "text-delta", "index": 0, "text": "hi"}}},
        ...     {"type": "assistant/chunk", "seq": 3, "time": 12, "data": {"turn": 1, "step": 1,
        ...      "chunk": {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 2}}}},
        ...     {"type": "turn/end", "seq": 4, "time": 15, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ... ]
        >>> run = fold_run(events)
        >>> run.turns, run.turn_ms, run.last_turn_outcome, run.input_tokens, run.cache_read_tokens, run.llm_ms
        (1, 5, 'completed', 5, None, 0)
        >>> fold_run(events, seed_length=4).turns, fold_run(events, seed_length=4).first_ms
        (0, 15)
        >>> [sample[:5:4] + sample[7:8] for sample in fold_run(events, seed_length=4).usage_samples]
        [(3, True, 5)]
        >>> fold_run(events[:3]).last_turn_open
        True
    """
    start = 0
    while start < len(events) and not (type(seq := events[start].get("seq")) is int and seq >= seed_length):
        start += 1  # the scanned prefix is in seq order: the seed is a head
    own = events[start:] if start else events
    fold = Fold()
    if start:
        _fold_seed(fold, events[:start])
    stats = fold.stats
    for index, event in enumerate(own):
        kind = event.get("type")
        if kind == "assistant/chunk":  # most events: test the chunk kind and move on
            _chunk(fold, event, seed_length)
            continue
        data = event.get("data")
        record = data if type(data) is dict else {}
        if kind == "assistant/message":
            fold.message(event["seq"], event.get("time"), data)
        elif kind == "step/start":
            stats.step_start(record.get("turn"), record.get("step"), event.get("time"))
        elif kind == "step/end":
            fold.run.steps += 1
            stats.step_end()
        elif kind == "turn/start":
            before = time_before(own, index) if fold.open_turn is not None else None
            fold.turn_start(record.get("turn") if type(data) is dict else None, event.get("time"), before=before)
        elif kind == "turn/end":
            stats.turn_end()
            fold.turn_end(record.get("turn"), record.get("reason"), event.get("time"))
        elif kind == "tool/call":
            fold.tool_call(event["seq"], event.get("time"), data)
        elif kind == "tool/result":
            fold.tool_result(event, data)
        elif kind == "request/header":
            fold.header(data)
        elif kind == "request/context":
            fold.context(data)
        elif kind == "user/message":
            fold.user_message(data)
        elif kind == "session/title":
            fold.title(data)
    if span is not None and not start:
        first, last = span
    else:
        times = [int(e["time"]) for e in own if is_safe_integer(e.get("time"))]
        first, last = (min(times), max(times)) if times else (None, None)
    final = time_before(own, len(own)) if fold.open_turn is not None else None
    return fold.finish(first, last, final=final)
