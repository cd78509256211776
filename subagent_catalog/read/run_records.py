"""Per-step token usage and per-call tool records of one log, seed and own parts alike.

``UsageSample`` is the usage a step reported, attributed to the model that
served it; ``ToolCallRecord`` is one ``tool/call`` with the ``tool/result``
that answered it. Both are folded in the same pass as the other run facts
(``run_facts.fold_run`` and the typed fast path) and are flagged
``in_seed`` when they belong to a fork's inherited history
(``seq < seedLength``), so a fork's own figures never count its parent's
events again while upstream's whole-log figures (seed + own) stay
available.

Usage follows upstream's ``tokenUsage`` rule: one sample per
``(data.turn, data.step)``; a usage ``assistant/chunk`` and the step's
``assistant/message.data.usage`` are the same sample, a later one replacing
an earlier one. The model is the step's ``assistant/message``
``source.provider``/``source.model`` when the step has one, otherwise the
route in effect: the last ``request/header`` ``data.header.config`` before
the sample anywhere in the log (a fork inherits its parent's route).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, NamedTuple

from subagent_catalog.read.jsvalue import MAX_SAFE_INTEGER, is_safe_integer

USAGE_COUNTS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
"""The counts of a usage sample, in ``UsageSample`` order."""


class UsageSample(NamedTuple):
    """The fields of a usage sample: the usage a step reported, and the model that served it.

    The sample is the step's last one (of its ``(turn, step)``); ``seq`` and
    ``time`` are those of the event whose sample was kept; a count is ``None``
    when the sample does not carry it as a non-negative safe integer. The
    fold keeps each sample as a plain tuple in this field order (the frames'
    struct column and the stored record take it as it is, and Python's
    collector stops tracking a tuple of plain values);
    ``UsageSample._make(sample)`` names its fields.
    """

    seq: int
    time: int | None
    turn: int | None
    step: int | None
    in_seed: bool
    provider: str | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    reasoning_tokens: int | None


class ToolCallRecord(NamedTuple):
    """The fields of a tool call record: a ``tool/call`` and the ``tool/result`` answering it.

    The result is the first appended one naming the call's ``callId``; the record is kept as a
    plain tuple in this field order, as ``UsageSample``. A result no call of the log asked for is a
    record of its own with the call's fields ``None`` (``seq`` among them); a call with no result has
    the result's fields ``None``; a fork's seed result has no ``result_bytes``
    (it is its parent's result, measured in the parent).
    """

    seq: int | None
    time: int | None
    turn: int | None
    step: int | None
    call_id: str | None
    name: str | None
    argument_bytes: int | None
    in_seed: bool
    result_seq: int | None = None
    result_time: int | None = None
    is_error: bool | None = None
    error_name: str | None = None
    error_code: str | None = None
    result_bytes: int | None = None


def _int(value: Any) -> int | None:
    if type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    return int(value) if is_safe_integer(value) else None


def _count(value: Any) -> int | None:
    if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER:
        return value
    return int(value) if is_safe_integer(value) and value >= 0 else None


def _text(value: Any) -> str | None:
    return value if type(value) is str else None


def utf8_length(text: str) -> int:
    """The UTF-8 length of a string, lone surrogates counted as their three-byte encoding.

    Examples:
        >>> utf8_length("abc"), utf8_length("\\u00e9"), utf8_length("\\ud800")
        (3, 2, 3)
    """
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class UsageFold:
    """Usage samples by step, with the route in effect (see the module docstring).

    Examples:
        >>> fold = UsageFold()
        >>> fold.route("deepseek", "deepseek-chat")
        >>> fold.sample(3, 10, 1, 1, {"inputTokens": 5, "outputTokens": 2}, False)
        >>> fold.sample(4, 11, 1, 1, {"inputTokens": 6, "outputTokens": 2}, False)
        >>> [(UsageSample._make(s).seq, UsageSample._make(s).model, UsageSample._make(s).input_tokens)
        ...  for s in fold.samples()]
        [(4, 'deepseek-chat', 6)]
    """

    def __init__(self) -> None:
        self.provider: str | None = None
        self.model: str | None = None
        self.window: int | None = None
        self.by_step: dict[tuple[Any, Any, bool], list[Any]] = {}
        self.windows: list[int | None] = []

    def route(self, provider: Any, model: Any) -> None:
        """A ``request/header`` naming ``provider`` and ``model`` (anything but strings: no route)."""
        self.provider, self.model = _text(provider), _text(model)

    def context(self, window: Any) -> None:
        """A ``request/context`` whose ``data.contextWindow`` is ``window`` (not a positive safe integer: no window).

        Like upstream's ``contextPressure``, the last one wins: one without a window removes the window.
        """
        self.window = int(window) if is_safe_integer(window) and window > 0 else None

    def sample(self, seq: int, time: Any, turn: Any, step: Any, usage: Any, in_seed: bool) -> None:
        """A usage sample of step ``(turn, step)`` at ``seq``: it replaces the step's earlier one."""
        self.by_step[(turn, step, in_seed)] = [
            seq,
            time,
            turn,
            step,
            in_seed,
            self.provider,
            self.model,
            usage,
            self.window,
        ]

    def message(
        self, seq: int, time: Any, turn: Any, step: Any, usage: Any, in_seed: bool, provider: Any, model: Any
    ) -> None:
        """An ``assistant/message`` of ``(turn, step)``: its usage sample (``None``: none) and its model."""
        key = (turn, step, in_seed)
        named = type(provider) is str and type(model) is str
        if usage is not None:
            self.by_step[key] = [
                seq,
                time,
                turn,
                step,
                in_seed,
                provider if named else self.provider,
                model if named else self.model,
                usage,
                self.window,
            ]
        elif named and (kept := self.by_step.get(key)) is not None:
            kept[5], kept[6] = provider, model

    def source(self, turn: Any, step: Any, in_seed: bool, provider: Any, model: Any) -> None:
        """An ``assistant/message`` of ``(turn, step)`` written by ``provider``/``model``: its step's sample's model."""
        kept = self.by_step.get((turn, step, in_seed))
        if kept is not None and type(provider) is str and type(model) is str:
            kept[5], kept[6] = provider, model

    def samples(self, counts: Any = None) -> list[tuple[Any, ...]]:
        """The kept samples in ``seq`` order (``windows``: the context window in effect at each, in the same order).

        ``counts`` turns a sample into its five counts when the samples are
        not parsed JSON objects (the typed reader's records, whose values its
        types already checked: their times, turns and steps are safe integers).
        """
        kept = sorted(self.by_step.values(), key=_FIRST)
        self.windows = [entry[8] for entry in kept]
        if counts is not None:
            return [(*entry[:7], *counts(entry[7])) for entry in kept]
        out = []
        for seq, time, turn, step, in_seed, provider, model, usage, _window in kept:
            get = usage.get
            out.append(
                (
                    seq,
                    _int(time),
                    _int(turn),
                    _int(step),
                    in_seed,
                    provider,
                    model,
                    *(_count(get(name)) for name in USAGE_COUNTS),
                )
            )
        return out


_FIRST = itemgetter(0)


class CallFold:
    """Tool calls paired with their results by ``callId``, in log order (see ``ToolCallRecord``).

    Records are built as lists while results may still arrive; ``finish`` gives them as ``ToolCallRecord``.

    Examples:
        >>> fold = CallFold()
        >>> fold.call(4, 10, 1, 1, "c1", "grep", '{"q":"x"}', False)
        >>> fold.result(5, 12, "c1", True, "ToolArgsError", "INVALID_ARGS", 3)
        >>> record = ToolCallRecord._make(fold.finish()[0])
        >>> record.name, record.argument_bytes, record.result_time, record.is_error, record.error_code
        ('grep', 9, 12, True, 'INVALID_ARGS')
    """

    def __init__(self) -> None:
        self.records: list[list[Any]] = []
        self.pending: dict[str, list[Any]] = {}

    def call(
        self, seq: int, time: Any, turn: Any, step: Any, call_id: Any, name: Any, arguments: Any, in_seed: bool
    ) -> None:
        """A ``tool/call`` (``data.callId``, ``data.name``, ``data.arguments``)."""
        record = [
            seq,
            time if type(time) is int else _int(time),
            turn if type(turn) is int else _int(turn),
            step if type(step) is int else _int(step),
            call_id if type(call_id) is str else None,
            name if type(name) is str else None,
            (len(arguments) if arguments.isascii() else utf8_length(arguments)) if type(arguments) is str else None,
            in_seed,
            None,
            None,
            None,
            None,
            None,
            None,
        ]
        self.records.append(record)
        if type(call_id) is str:
            self.pending[call_id] = record

    def result(
        self,
        seq: int,
        time: Any,
        call_id: Any,
        failed: bool,
        error_name: Any,
        error_code: Any,
        text_bytes: int | None,
        *,
        in_seed: bool = False,
    ) -> None:
        """An appended ``tool/result`` answering ``call_id``: the call's record, or a record of its own.

        ``text_bytes`` is ``None`` for a fork's seed result (its parent's: measured in the parent).
        """
        record = self.pending.pop(call_id, None) if type(call_id) is str else None
        if record is None:
            record = [None, None, None, None, _text(call_id), None, None, in_seed, None, None, None, None, None, None]
            self.records.append(record)
        record[8:] = (
            seq,
            time if type(time) is int else _int(time),
            failed,
            error_name if type(error_name) is str else None,
            error_code if type(error_code) is str else None,
            text_bytes,
        )

    def finish(self) -> list[tuple[Any, ...]]:
        """The records as tuples (``ToolCallRecord`` field order), in log order (a call's place, or a lone result's)."""
        return list(map(tuple, self.records))
