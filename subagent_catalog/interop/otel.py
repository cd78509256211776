"""``to_otlp``: a corpus (or an archive) as OpenTelemetry spans, one trace per root run.

The shape of a trace (``otel_session`` builds each session's part):

- each session log is an **AGENT** span; its turns are **CHAIN** spans, each
  model step (``turn``, ``step``) an **LLM** span and each tool call a
  **TOOL** span under the turn's CHAIN;
- a subagent child (``origin == "subagent"``) is an AGENT subtree under the
  parent's TOOL span that started it (``otel_links`` finds it: the
  ``started subagent <id>`` result of a background start, else the call whose
  ``prompt`` argument the child received as its first message), or under the
  parent's AGENT span when no call can be told (``dsh.spawn.link`` says which);
- every other session (a root, an ordinary fork, a child whose parent log is
  missing) starts its own trace; a fork carries a span link to the AGENT span
  of the session it was forked from, and its inherited seed is not exported
  again.

Ids are derived from session ids and seqs, so re-exporting gives the same
trace and span ids (a receiver that keys on them keeps one copy); the trace
id is the root run's, whichever part of it is exported. Damaged logs export
what is readable, with an ERROR status and a ``dsh.read_problem`` event.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import polars as pl
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext

from subagent_catalog.analysis.transcript import session_transcript
from subagent_catalog.errors import UnknownSessionError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.nearest import nearest_ids
from subagent_catalog.interop.errors import OtlpExportError
from subagent_catalog.interop.otel_attributes import Export, PriceFunction, table_price
from subagent_catalog.interop.otel_conventions import (
    GEN_AI_SCHEMA_URL,
    MAX_TEXT,
    PROJECT_NAME,
    SPAN_KIND,
    Conventions,
    conventions_text,
)
from subagent_catalog.interop.otel_links import spawn_link
from subagent_catalog.interop.otel_session import SessionSpans, context, session_spans, span_id, trace_id
from subagent_catalog.interop.otlp_json import json_line
from subagent_catalog.outputs import PathLike, open_output
from subagent_catalog.prices import Prices, PriceTable, price_table
from subagent_catalog.store.source import Source, source_corpus
from subagent_catalog.version import __version__

SCOPE_NAME = "subagent_catalog.interop.otel"
REQUEST_SPANS = 512
"""Small traces are sent (and written) together until a request holds at least this many spans."""


def export_settings(
    *,
    project: str = "dsh",
    conventions: Conventions = "openinference+gen_ai",
    max_text: int = MAX_TEXT,
    price: PriceFunction | None = None,
    prices: Prices | PriceTable | None = None,
) -> Export:
    """The resource, scope and options every span of an export shares.

    The resource names the Phoenix project (``openinference.project.name``)
    and nothing of the machine; the scope names the conventions' versions.

    Examples:
        >>> export_settings().scope.schema_url
        'https://opentelemetry.io/schemas/1.44.0'
    """
    exporter = f"subagent-catalog {__version__}"
    resource = Resource({"service.name": "dsh", PROJECT_NAME: project, "dsh.exporter": exporter})
    scope = InstrumentationScope(
        SCOPE_NAME, __version__, GEN_AI_SCHEMA_URL, {"dsh.conventions": conventions_text(), "dsh.max_text": max_text}
    )
    chosen = price if price is not None else table_price(price_table(prices))
    return Export(resource, scope, conventions, max_text, chosen)


@dataclass
class _Node:
    row: dict[str, Any]
    key: str
    children: list[_Node] = field(default_factory=list)
    parent: _Node | None = None


@dataclass
class _Forest:
    roots: list[_Node]
    by_id: dict[str, _Node]  # the first log (list order) of each session id


def _forest(corpus: Corpus) -> _Forest:
    """Every readable log as a node; subagents under their parent's node, everything else a root."""
    rows = corpus.sessions.filter(pl.col("verdict") != "skipped").sort("list_order").to_dicts()
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["session_id"]] = counts.get(row["session_id"], 0) + 1
    nodes = [
        _Node(row, row["session_id"] if counts[row["session_id"]] == 1 else f"{row['session_id']}\x00{row['path']}")
        for row in rows
    ]
    by_id: dict[str, _Node] = {}
    for node in nodes:
        by_id.setdefault(node.row["session_id"], node)
    parent_of: dict[int, _Node] = {}
    for node in nodes:
        parent = by_id.get(node.row["parent_session"]) if isinstance(node.row["parent_session"], str) else None
        if node.row["origin"] == "subagent" and parent is not None and parent is not node:
            parent_of[id(node)] = parent
    for node in nodes:  # a parent chain that loops back is cut where the loop closes
        seen = {id(node)}
        at = parent_of.get(id(node))
        while at is not None and id(at) not in seen:
            seen.add(id(at))
            at = parent_of.get(id(at))
        if at is not None:
            parent_of.pop(id(at), None)
    roots = []
    for node in nodes:
        node.parent = parent_of.get(id(node))
        if node.parent is None:
            roots.append(node)
        else:
            node.parent.children.append(node)
    return _Forest(roots, by_id)


def _root_of(node: _Node) -> _Node:
    while node.parent is not None:
        node = node.parent
    return node


def _selected(forest: _Forest, corpus: Corpus, sessions: Sequence[str] | None) -> list[tuple[_Node, _Node]]:
    """(node to export with its subtree, its root run) pairs."""
    if sessions is None:
        return [(root, root) for root in forest.roots]
    chosen: list[tuple[_Node, _Node]] = []
    for session_id in sessions:
        node = forest.by_id.get(session_id)
        if node is None:
            near = nearest_ids(session_id, corpus.sessions["session_id"].to_list())
            hint = f"did you mean {', '.join(near)}?" if near else "check the id (subagent-catalog summary lists them)"
            message = f"no readable session log has id {session_id!r}"
            raise UnknownSessionError(session_id, near, message=message, hint=hint)
        chosen.append((node, _root_of(node)))
    return chosen


def _link_to_parent(forest: _Forest, node: _Node) -> list[Link]:
    """A fork's (or any non-subagent child's) span link to the AGENT span of the session it names as parent."""
    parent_id = node.row["parent_session"]
    if not isinstance(parent_id, str) or (node.row["origin"] == "subagent" and parent_id in forest.by_id):
        return []
    parent = forest.by_id.get(parent_id)
    if parent is None or parent is node:
        return []
    parent_root = _root_of(parent)
    trace = trace_id(parent_root.key)
    kind = "fork-of" if node.row["seed_length"] is not None else "child-of"
    attributes = {"dsh.link": kind, "dsh.parent_session": parent_id}
    if node.row["seed_length"] is not None:
        attributes["dsh.seed_length"] = node.row["seed_length"]
    return [Link(context(trace, span_id(parent.key, "agent")), attributes)]


def _tree_spans(
    export: Export, corpus: Corpus, forest: _Forest, start: _Node, root: _Node, parent_spans: SessionSpans | None
) -> list[ReadableSpan]:
    trace = trace_id(root.key)
    spans: list[ReadableSpan] = []
    claimed: set[tuple[int, int]] = set()
    stack: list[tuple[_Node, SessionSpans | None]] = [(start, parent_spans)]
    while stack:
        node, parent = stack.pop()
        events = corpus.log_events(node.row["list_order"])
        rows = session_transcript(corpus, node.row, events)
        links = [] if parent is not None else _link_to_parent(forest, node)

        def place(
            first_user: str | None, parent: SessionSpans | None = parent, row: dict[str, Any] = node.row
        ) -> tuple[SpanContext | None, dict[str, Any]]:
            if parent is None:
                return None, {}
            return spawn_link(parent, row, first_user, claimed)

        built = session_spans(export, node.row, rows, events, key=node.key, trace=trace, parent=place, links=links)
        spans.extend(built.spans)
        stack.extend((child, built) for child in reversed(node.children))
    return spans


def otlp_traces(
    source: Source,
    *,
    sessions: Sequence[str] | None = None,
    conventions: Conventions = "openinference+gen_ai",
    project: str = "dsh",
    max_text: int = MAX_TEXT,
    price: PriceFunction | None = None,
    prices: Prices | PriceTable | None = None,
) -> Iterator[list[ReadableSpan]]:
    """The spans of each root run (or of each selected session's subtree), one list per trace, in list order.

    Reads one log at a time: memory holds one trace's spans. Arguments as
    for ``to_otlp``.

    Raises:
        UnknownSessionError: a ``sessions`` id names no readable log.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> for sid in ("a", "b"):
        ...     log = EventLog(sid); log.turn_start(); log.user("hi"); log.turn_end()
        ...     _ = write_session(root, header(sid, created_at=1), log.events, "none")
        >>> [len(spans) for spans in otlp_traces(read_corpus(root))]
        [2, 2]
    """
    corpus = source_corpus(source)
    export = export_settings(project=project, conventions=conventions, max_text=max_text, price=price, prices=prices)
    forest = _forest(corpus)
    for node, root in _selected(forest, corpus, sessions):
        parent = node.parent
        parent_spans = None
        if parent is not None:  # a child exported alone keeps the parent span a whole export gives it
            events = corpus.log_events(parent.row["list_order"])
            rows = session_transcript(corpus, parent.row, events)
            trace = trace_id(root.key)
            parent_spans = session_spans(export, parent.row, rows, events, key=parent.key, trace=trace, parent=None)
        yield _tree_spans(export, corpus, forest, node, root, parent_spans)


def to_otlp(
    source: Source,
    *,
    sessions: Sequence[str] | None = None,
    conventions: Conventions = "openinference+gen_ai",
    project: str = "dsh",
    max_text: int = MAX_TEXT,
    price: PriceFunction | None = None,
    prices: Prices | PriceTable | None = None,
) -> list[ReadableSpan]:
    """A corpus as OpenTelemetry spans (SDK ``ReadableSpan``s any span exporter accepts).

    Args:
        source: a read corpus or an opened archive (its events table, or its
            corpus root when it has none).
        sessions: export only these sessions, each with its subtree (trace
            ids stay those of their root runs); default: every root run.
        conventions: ``openinference+gen_ai`` (both), ``openinference`` or
            ``gen_ai``; ``dsh.*`` attributes are always written.
        project: the Phoenix project the spans go to (``openinference.project.name``).
        max_text: clip message texts, tool arguments and results to this many
            characters (a marker says how many were cut).
        price: a function giving a model step's cost in USD from its
            ``StepUsage`` (fills ``llm.cost.total``); default: the cost
            ``usage_by_model`` gives the step, from ``prices``.
        prices: the price table (a user table, as for ``usage_by_model``;
            default: ``genai-prices``'). A step of an unpriced model has no cost attribute.

    Returns:
        Every span, trace after trace (``otlp_traces`` yields them one trace at a time).

    Raises:
        UnknownSessionError: a ``sessions`` id names no readable log.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1"); log.turn_start(); log.user("fix it"); log.tool_round("c1", "ok"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> [(s.name, s.attributes["openinference.span.kind"]) for s in to_otlp(read_corpus(root))]
        [('session s1', 'AGENT'), ('turn 1', 'CHAIN'), ('deepseek/deepseek-chat', 'LLM'), ('read_file', 'TOOL')]
    """
    traces = otlp_traces(
        source,
        sessions=sessions,
        conventions=conventions,
        project=project,
        max_text=max_text,
        price=price,
        prices=prices,
    )
    return [span for trace in traces for span in trace]


@dataclass
class OtlpStats:
    """What an export wrote or sent.

    Attributes:
        traces: root runs (or selected subtrees).
        spans: spans in all.
        kinds: spans per ``openinference.span.kind``.
        requests: OTLP requests (lines of a file).
    """

    traces: int = 0
    spans: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    requests: int = 0

    def count(self, trace: Sequence[ReadableSpan]) -> None:
        """Add one trace's spans.

        Examples:
            >>> stats = OtlpStats(); stats.count([]); stats.traces
            1
        """
        self.traces += 1
        self.spans += len(trace)
        for span in trace:
            kind = str((span.attributes or {}).get(SPAN_KIND, "UNKNOWN"))
            self.kinds[kind] = self.kinds.get(kind, 0) + 1


def request_batches(traces: Iterable[list[ReadableSpan]], stats: OtlpStats) -> Iterator[list[ReadableSpan]]:
    """Group traces into requests of at least ``REQUEST_SPANS`` spans (a trace is never split), counting them.

    Examples:
        >>> stats = OtlpStats()
        >>> [len(batch) for batch in request_batches([[], []], stats)], stats.traces, stats.requests
        ([], 2, 0)
    """
    batch: list[ReadableSpan] = []
    for trace in traces:
        stats.count(trace)
        batch.extend(trace)
        if len(batch) >= REQUEST_SPANS:
            stats.requests += 1
            yield batch
            batch = []
    if batch:
        stats.requests += 1
        yield batch


def write_otlp_json(
    traces: Iterable[list[ReadableSpan]], path: PathLike, *, protected: Sequence[PathLike] = ()
) -> OtlpStats:
    """Write traces to an OTLP JSON lines file (atomically; never inside ``protected`` directories).

    Raises:
        OutputError: the file is refused or cannot be written.

    Examples:
        >>> import os, tempfile
        >>> target = os.path.join(tempfile.mkdtemp(), "spans.jsonl")
        >>> write_otlp_json([[]], target).traces, open(target).read()
        (1, '')
    """
    stats = OtlpStats()
    with open_output(path, binary=True, protected=protected) as handle:
        for batch in request_batches(traces, stats):
            handle.write(json_line(batch))
    return stats


def traces_endpoint(url: str) -> str:
    """The OTLP/HTTP traces URL: ``/v1/traces`` added when the URL has no path.

    Examples:
        >>> traces_endpoint("http://127.0.0.1:6006"), traces_endpoint("http://h:4318/custom")
        ('http://127.0.0.1:6006/v1/traces', 'http://h:4318/custom')
    """
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    return urlunsplit(parts)


@contextlib.contextmanager
def _exporter_log() -> Iterator[list[str]]:
    """The OpenTelemetry exporter's log messages (retries, failures), kept for the error instead of printed."""
    logger = logging.getLogger("opentelemetry.exporter")
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    handler, propagate = Keep(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield said
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def send_otlp(
    traces: Iterable[list[ReadableSpan]],
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> OtlpStats:
    """Send traces over OTLP/HTTP (protobuf) with the OpenTelemetry exporter, to ``endpoint`` only.

    Args:
        traces: lists of spans (``otlp_traces(...)``, or ``[to_otlp(...)]``).
        endpoint: the collector's URL (``http://127.0.0.1:6006`` gets ``/v1/traces``).
        headers: HTTP headers (an API key); none: the exporter's environment
            (``OTEL_EXPORTER_OTLP_HEADERS``).
        timeout: seconds per request.

    Raises:
        OtlpExportError: the endpoint refused a request or could not be reached.

    Examples:
        >>> send_otlp([], "http://127.0.0.1:9").spans
        0
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    url = traces_endpoint(endpoint)
    if urlsplit(url).scheme not in ("http", "https"):
        raise OtlpExportError(f"not an http(s) URL: {endpoint!r}", hint="pass e.g. --endpoint http://127.0.0.1:6006")
    stats = OtlpStats()
    exporter = OTLPSpanExporter(endpoint=url, headers=dict(headers) if headers else None, timeout=timeout)
    with _exporter_log() as said:
        try:
            for batch in request_batches(traces, stats):
                if exporter.export(batch) != SpanExportResult.SUCCESS:
                    why = f": {said[0][:300]}" if said else ""
                    raise OtlpExportError(
                        f"{url} did not accept {len(batch)} spans (after {stats.requests - 1} accepted requests){why}",
                        hint="check that a collector listens for OTLP/HTTP (protobuf) at that URL, and the headers",
                    )
        finally:
            exporter.shutdown()  # type: ignore[no-untyped-call]
    return stats
