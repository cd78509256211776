"""One session's spans: its transcript grouped into an AGENT span, CHAIN turns, LLM steps and TOOL calls.

Built on ``analysis.transcript`` (the log folded into steps, with usage,
models, tool-call start times and result durations), never on a second fold
of the raw events; the events frame is only looked up for the times of
``step/start`` and the model named by ``request/header`` for a step that
never got its message. A fork's inherited seed (``in_seed``) is not
exported again: its parent's spans already hold it.

Span ids are hashes of the session's key and the seq (or turn and step) of
what the span stands for, so exporting the same corpus twice gives the same
spans; times are the events' times (milliseconds, as nanoseconds).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from subagent_catalog.analysis.findings.spawns import call_prompt
from subagent_catalog.analysis.run_names import name_text, session_name
from subagent_catalog.interop import otel_attributes as attrs
from subagent_catalog.interop.otel_attributes import Export, Message
from subagent_catalog.interop.otel_conventions import clip
from subagent_catalog.interop.otel_outcome import run_status, turn_status

_STARTED = re.compile(r"started subagent (\S+)\s*\Z")
_MS = 1_000_000
_MAX_NS = 2**64 - 1


def span_id(*parts: object) -> int:
    """A span id (64 bits, never 0) derived from ``parts``.

    Examples:
        >>> span_id("s1", "agent") == span_id("s1", "agent") != span_id("s2", "agent")
        True
    """
    digest = hashlib.blake2b(repr(parts).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") or 1


def trace_id(*parts: object) -> int:
    """A trace id (128 bits, never 0) derived from ``parts``.

    Examples:
        >>> trace_id("root-run").bit_length() <= 128
        True
    """
    digest = hashlib.blake2b(repr(("trace", *parts)).encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(digest, "big") or 1


def context(trace: int, span: int) -> SpanContext:
    """A sampled, local span context.

    Examples:
        >>> context(1, 2).span_id
        2
    """
    return SpanContext(trace, span, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


@dataclass
class ToolCall:
    """One executed tool call (its TOOL span) and what it says about subagents it started."""

    context: SpanContext
    call_id: str | None
    name: str | None
    arguments: str | None
    start_ms: int
    end_ms: int | None = None
    result: str | None = None
    is_error: bool = False
    error: Any = None
    turn: Any = None
    prompt: str | None = None  # the ``prompt`` argument (what a spawned child receives first)
    started_child: str | None = None  # ``started subagent <id>`` in its result
    seq: int = 0
    listed: bool = field(default=False, compare=False)  # in the session's exported calls


@dataclass
class _Step:
    key: tuple[Any, Any]
    seq: int
    start_ms: int
    end_ms: int
    texts: list[str] = field(default_factory=list)
    reasoning: int = 0
    calls: list[tuple[str | None, str | None, str | None]] = field(default_factory=list)
    usage: Any = None
    model: str | None = None
    finish: Any = None
    retries: list[tuple[int, str | None]] = field(default_factory=list)
    failed: str | None = None
    partial: bool = False
    inputs: list[Message] = field(default_factory=list)


@dataclass
class _Turn:
    seq: int
    number: Any
    start_ms: int
    end_ms: int
    outcome: str | None = None
    closed: bool = False
    first_user: str | None = None
    last_assistant: str | None = None
    reason: Any = None  # the ``turn/end`` reason


@dataclass
class SessionSpans:
    """What ``session_spans`` built: the spans and what linking children needs.

    Attributes:
        spans: the session's spans, AGENT first.
        agent: the AGENT span's context.
        tools: every TOOL span's call, in log order.
        first_user: the first user message of the session's own events.
        start_ms: the AGENT span's start.
        by_child: ``otel_links``' index of ``tools`` (made on first use).
    """

    spans: list[ReadableSpan]
    agent: SpanContext
    tools: list[ToolCall]
    first_user: str | None
    start_ms: int
    by_child: Any = field(default=None, compare=False, repr=False)


def _detail(row: dict[str, Any]) -> dict[str, Any]:
    raw = row["detail"]
    if not raw:
        return {}
    value = orjson.loads(raw)
    return value if isinstance(value, dict) else {}


def _lookups(events: pl.DataFrame) -> tuple[dict[tuple[Any, Any], int], list[tuple[int, str]]]:
    """``step/start`` times by (turn, step), and (seq, provider/model) of each ``request/header``."""
    starts: dict[tuple[Any, Any], int] = {}
    models: list[tuple[int, str]] = []
    wanted = events.filter(pl.col("type").is_in(["step/start", "request/header"]))
    for kind, seq, turn, step, time, raw in wanted.select("type", "seq", "turn", "step", "time_ms", "data").iter_rows():
        if kind == "step/start":
            starts[(turn, step)] = time
            continue
        try:
            config = orjson.loads(raw or "null")["header"]["config"]
            models.append((seq, f"{config.get('provider')}/{config.get('model')}"))
        except (orjson.JSONDecodeError, TypeError, KeyError, AttributeError):
            continue
    return starts, models


def _model_at(models: list[tuple[int, str]], seq: int) -> str | None:
    found = None
    for at, model in models:
        if at > seq:
            break
        found = model
    return found


class _Builder:
    """Groups one session's own transcript rows into turns, model steps and tool calls."""

    def __init__(self, events: pl.DataFrame) -> None:
        self.starts, self.models = _lookups(events)
        self.turns: list[_Turn] = []
        self.open: dict[Any, _Turn] = {}
        self.steps: dict[tuple[Any, Any], _Step] = {}
        self.tools: dict[str, ToolCall] = {}
        self.tool_order: list[ToolCall] = []
        self.pending: list[Message] = []
        self.first_user: str | None = None
        self.last_assistant: str | None = None
        self.first_ms: int | None = None
        self.last_ms: int | None = None

    def step(self, row: dict[str, Any]) -> _Step:
        key = (row["turn"], row["step"])
        step = self.steps.get(key)
        if step is None:
            start = self.starts.get(key, row["time_ms"])
            step = self.steps[key] = _Step(key, row["seq"], min(start, row["time_ms"]), row["last_time_ms"])
            step.inputs, self.pending = self.pending, []
        step.end_ms = max(step.end_ms, row["last_time_ms"])
        return step

    def add(self, row: dict[str, Any], trace: int, key: str) -> None:
        if row["time_ms"] is None:  # a row without events of its own takes the last time seen
            row = {**row, "time_ms": self.last_ms or 0, "last_time_ms": self.last_ms or 0}
        else:
            self.first_ms = row["time_ms"] if self.first_ms is None else min(self.first_ms, row["time_ms"])
            self.last_ms = max(self.last_ms or row["last_time_ms"], row["last_time_ms"])
        kind = row["kind"]
        turn = self.open.get(row["turn"]) if row["turn"] is not None else None
        if turn is not None and row["last_time_ms"] is not None:
            turn.end_ms = max(turn.end_ms, row["last_time_ms"])
        if kind == "turn-start":
            turn = _Turn(row["seq"], row["turn"], row["time_ms"], row["last_time_ms"])
            self.turns.append(turn)
            self.open[row["turn"]] = turn
        elif kind == "turn-end" and turn is not None:
            turn.outcome, turn.closed = row["name"], True
            turn.reason = _detail(row).get("reason")
        elif kind == "user":
            self.pending.append(Message("user", row["text"] or ""))
            self.first_user = self.first_user if self.first_user is not None else row["text"]
            if turn is not None and turn.first_user is None:
                turn.first_user = row["text"]
        elif kind in ("assistant", "reasoning") or (kind == "tool-call" and row["event_type"] != "tool/call"):
            self._model_row(row, trace, key, turn)
        elif kind == "retry":
            step = self.step(row)
            step.retries.append((row["time_ms"], row["text"]))
        elif kind == "tool-call":
            self._call(row, trace, key)
        elif kind == "tool-result":
            self._result(row, trace, key)

    def _model_row(self, row: dict[str, Any], trace: int, key: str, turn: _Turn | None) -> None:
        step = self.step(row)
        detail = _detail(row)
        if "usage" in detail:
            step.usage = detail["usage"]  # the step's last usage sample wins (upstream's tokenUsage rule)
        if detail.get("partial") == "a retried attempt":
            return  # the attempt's failure is the retry row's; its text is not the step's output
        if row["partial"]:
            step.partial = True
        if row["kind"] == "assistant" and row["text"]:
            step.texts.append(row["text"])
            self.last_assistant = row["text"]
            if turn is not None:
                turn.last_assistant = row["text"]
        elif row["kind"] == "reasoning":
            step.reasoning += 1
        elif row["kind"] == "tool-call":
            step.calls.append((row["call_id"], row["name"], row["text"]))
            if "started_ms" in detail:
                self._call(row, trace, key)
            elif row["call_id"] is not None:  # requested; a result may still come
                self.tools.setdefault(row["call_id"], self._new_call(row, trace, key, started=False))
        if "model" in detail:
            step.model = detail["model"]
        if "finish" in detail:
            step.finish = detail["finish"]
        if row["is_error"] and detail.get("failure"):
            step.failed = str(detail["failure"])

    def _new_call(self, row: dict[str, Any], trace: int, key: str, *, started: bool) -> ToolCall:
        detail = _detail(row)
        start = detail.get("started_ms", row["time_ms"]) if started else row["time_ms"]
        return ToolCall(
            context(trace, span_id(key, "tool", row["seq"], row["call_id"])),
            row["call_id"],
            row["name"],
            row["text"],
            int(start),
            turn=row["turn"],
            prompt=call_prompt(row["text"]),
            seq=row["seq"],
        )

    def _call(self, row: dict[str, Any], trace: int, key: str) -> None:
        call_id = row["call_id"]
        known = self.tools.get(call_id) if call_id is not None else None
        if known is not None and not known.listed:
            known.start_ms = int(_detail(row).get("started_ms", known.start_ms))
            self._list(known)
            return
        call = self._new_call(row, trace, key, started=True)
        if call_id is not None:
            self.tools[call_id] = call
        self._list(call)

    def _list(self, call: ToolCall) -> None:
        call.listed = True
        self.tool_order.append(call)

    def _result(self, row: dict[str, Any], trace: int, key: str) -> None:
        detail = _detail(row)
        self.pending.append(Message("tool", row["text"] or "", row["call_id"]))
        if detail.get("repeat"):
            return  # a pruner's replacement of a result already exported
        call = self.tools.get(row["call_id"]) if row["call_id"] is not None else None
        if call is None:  # a result without a call in this log's own events
            ctx = context(trace, span_id(key, "tool", row["seq"], row["call_id"]))
            call = ToolCall(ctx, row["call_id"], row["name"], None, row["time_ms"], turn=row["turn"], seq=row["seq"])
            if row["call_id"] is not None:
                self.tools[row["call_id"]] = call
        if not call.listed:
            self._list(call)
        call.end_ms, call.result, call.is_error = row["time_ms"], row["text"], bool(row["is_error"])
        call.error = detail.get("error")
        started = _STARTED.match(row["text"] or "")
        if started:
            call.started_child = started.group(1)


def _ns(ms: int) -> int:
    """Milliseconds as OTLP's unsigned 64-bit nanoseconds (a negative or too large time is clamped)."""
    return min(max(ms, 0) * _MS, _MAX_NS)


def _status(error: bool, description: str | None) -> Status:
    return Status(StatusCode.ERROR, description) if error else Status(StatusCode.UNSET)


def _span(
    export: Export,
    name: str,
    ctx: SpanContext,
    parent: SpanContext | None,
    start_ms: int,
    end_ms: int | None,
    attributes: dict[str, Any],
    *,
    status: Status | None = None,
    events: Sequence[Event] = (),
    links: Sequence[Link] = (),
) -> ReadableSpan:
    end = max(start_ms, end_ms if end_ms is not None else start_ms)  # a clock that stepped back never ends early
    start_ns, end_ns = _ns(start_ms), _ns(end)
    if start_ns != start_ms * _MS or end_ns != end * _MS:
        attributes = {**attributes, "dsh.time_clamped": True, "dsh.start_ms": start_ms, "dsh.end_ms": end}
    return ReadableSpan(
        name=name,
        context=ctx,
        parent=parent,
        resource=export.resource,
        attributes={k: v for k, v in attributes.items() if v is not None},
        events=events,
        links=links,
        kind=SpanKind.INTERNAL,
        status=status or Status(StatusCode.UNSET),
        start_time=start_ns,
        end_time=end_ns,
        instrumentation_scope=export.scope,
    )


def session_span_stream(
    export: Export,
    session: dict[str, Any],
    rows: pl.DataFrame,
    events: pl.DataFrame,
    *,
    key: str,
    trace: int,
    parent: SpanContext | Callable[[str | None], tuple[SpanContext | None, dict[str, Any]]] | None,
    links: Sequence[Link] = (),
    extra: Mapping[str, Any] | None = None,
) -> tuple[SessionSpans, Iterator[ReadableSpan]]:
    """One session log's spans made one at a time: what linking needs (no spans), then the spans, AGENT first.

    The log's transcript and events are folded at once (and no longer
    needed when this returns); each span is made when the iterator reaches
    it, so a log of thousands of steps never holds all its spans. Arguments
    as for ``session_spans``; ``extra`` adds attributes to the AGENT span (a fork's ``dsh.fork_of``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.transcript import session_transcript
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> from subagent_catalog.interop.otel import export_settings
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1"); log.turn_start(); log.user("fix it"); log.tool_round("c1", "ok"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> corpus = read_corpus(root); row = corpus.sessions.row(0, named=True); events = corpus.log_events(0)
        >>> built, spans = session_span_stream(export_settings(), row, session_transcript(corpus, row, events),
        ...                                    events, key="s1", trace=trace_id("s1"), parent=None)
        >>> built.spans, [span.name for span in spans]
        ([], ['fix it (s1)', 'turn 1', 'deepseek/deepseek-chat', 'read_file'])
    """
    builder = _Builder(events)
    read_problem: dict[str, Any] | None = None
    for row in rows.iter_rows(named=True):
        if row["kind"] == "read-problem":
            read_problem = row
        elif not row["in_seed"]:
            builder.add(row, trace, key)
    agent_ctx = context(trace, span_id(key, "agent"))
    created = session["created_at_ms"]
    start_ms = min((t for t in (created, builder.first_ms) if t is not None), default=0)
    end_ms = max([t for t in (builder.last_ms, start_ms) if t is not None])
    problem_events: list[Event] = []
    if session["verdict"] not in ("ok", "skipped") and read_problem is not None:
        problem_events.append(
            Event("dsh.read_problem", attrs.read_problem(read_problem["text"], _detail(read_problem)), _ns(end_ms))
        )
    status, outcome = run_status(session, read_problem["text"] if read_problem is not None else None)
    spawn: dict[str, Any] = {}
    if callable(parent):
        parent, spawn = parent(builder.first_user)
    agent_attributes = attrs.agent(export, session, builder.first_user, builder.last_assistant, spawn) | outcome
    agent_attributes |= extra or {}
    name = agent_span_name(session)
    agent = _span(
        export,
        name,
        agent_ctx,
        parent,
        start_ms,
        end_ms,
        agent_attributes,
        status=status,
        events=problem_events,
        links=links,
    )
    built = SessionSpans([], agent_ctx, builder.tool_order, builder.first_user, start_ms)
    return built, itertools.chain((agent,), _inner_spans(export, session, builder, key, trace, agent_ctx))


def agent_span_name(session: Mapping[str, Any]) -> str:
    """An AGENT span's name: the session as every view names it (``name (short id)``), else ``session ID``.

    A subagent without a label or name is ``subagent ID``; a trace list (Phoenix's) reads as the report.

    Examples:
        >>> agent_span_name({"session_id": "19e18d4e-75f9-4c11-9a6b-7e2f4d1c9b80", "name": "Fix the flaky test"})
        'Fix the flaky test (19e18d4e…)'
        >>> agent_span_name({"session_id": "s1", "origin": "subagent"}), agent_span_name({"session_id": "s2"})
        ('subagent s1', 'session s2')
    """
    sid = session["session_id"]
    if session_name(session.get("identity_label"), session.get("name")) is None:
        return f"{'subagent' if session.get('origin') == 'subagent' else 'session'} {sid}"
    return name_text(sid, label=session.get("identity_label"), name=session.get("name"))


def _inner_spans(
    export: Export, session: dict[str, Any], builder: _Builder, key: str, trace: int, agent_ctx: SpanContext
) -> Iterator[ReadableSpan]:
    """The CHAIN, LLM and TOOL spans of a folded log, in that order, each made when asked for."""
    chains: dict[int, SpanContext] = {}
    for turn in builder.turns:
        ctx = context(trace, span_id(key, "turn", turn.seq))
        chains[id(turn)] = ctx
        status, ended = turn_status(turn.reason, turn.closed)
        attributes = attrs.chain(
            export, session, turn.number, turn.first_user, turn.last_assistant, turn.outcome, turn.closed
        )
        yield _span(
            export, f"turn {turn.number}", ctx, agent_ctx, turn.start_ms, turn.end_ms, attributes | ended, status=status
        )
    by_number = {turn.number: chains[id(turn)] for turn in reversed(builder.turns)}  # a number's first turn

    def parent_of(number: Any) -> SpanContext:
        return by_number.get(number, agent_ctx) if number is not None else agent_ctx

    for step in builder.steps.values():
        model = step.model or _model_at(builder.models, step.seq)
        usage = attrs.step_usage(model, step.usage, step.end_ms)
        cost = export.price(usage) if export.price is not None else None
        retry_events = [Event("dsh.llm.retry", {"dsh.failure": text or ""}, _ns(time)) for time, text in step.retries]
        output = Message("assistant", "\n".join(step.texts), calls=tuple(step.calls))
        yield _span(
            export,
            model or "llm",
            context(trace, span_id(key, "step", step.key[0], step.key[1])),
            parent_of(step.key[0]),
            step.start_ms,
            step.end_ms,
            attrs.llm(export, session, step.key, usage, cost, step.inputs, output, step.finish, step.partial),
            status=_status(step.failed is not None, step.failed),
            events=retry_events,
        )
    for call in builder.tool_order:
        description: str | None = (
            None  # a failed call's status: its error's message, else its result text (200 characters)
        )
        if call.is_error:
            error = call.error
            message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
            description = (
                clip(message if isinstance(message, str) else call.result or "tool error", 200) or "tool error"
            )
        yield _span(
            export,
            call.name or "tool",
            call.context,
            parent_of(call.turn),
            call.start_ms,
            call.end_ms,
            attrs.tool(export, session, call.call_id, call.name, call.arguments, call.result, call.end_ms is None),
            status=_status(call.is_error, description),
        )


def session_spans(
    export: Export,
    session: dict[str, Any],
    rows: pl.DataFrame,
    events: pl.DataFrame,
    *,
    key: str,
    trace: int,
    parent: SpanContext | Callable[[str | None], tuple[SpanContext | None, dict[str, Any]]] | None,
    links: Sequence[Link] = (),
    extra: Mapping[str, Any] | None = None,
) -> SessionSpans:
    """The spans of one session log.

    Args:
        export: the settings of the export.
        session: the log's ``sessions`` row.
        rows: its transcript (``session_transcript``: read-problem row included).
        events: its events frame (for ``step/start`` times and request headers).
        key: what its span ids derive from (the session id; with the path when
            several logs carry that id).
        trace: the trace id of its root run.
        parent: the span the AGENT span hangs under (a parent's AGENT span),
            ``None`` for a root, or a function that picks it (the spawning
            TOOL span) from the session's first own user message and also
            gives the ``dsh.spawn.*`` attributes.
        links: span links (a fork's link to the session it was forked from).
        extra: attributes added to the AGENT span (a fork's ``dsh.fork_of``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.transcript import session_transcript
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> from subagent_catalog.interop.otel import export_settings
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1"); log.turn_start(); log.user("fix it"); log.tool_round("c1", "ok"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> corpus = read_corpus(root); row = corpus.sessions.row(0, named=True); events = corpus.log_events(0)
        >>> built = session_spans(export_settings(), row, session_transcript(corpus, row, events), events,
        ...                       key="s1", trace=trace_id("s1"), parent=None)
        >>> [span.attributes["openinference.span.kind"] for span in built.spans]
        ['AGENT', 'CHAIN', 'LLM', 'TOOL']
    """
    built, spans = session_span_stream(
        export, session, rows, events, key=key, trace=trace, parent=parent, links=links, extra=extra
    )
    built.spans = list(spans)
    return built
