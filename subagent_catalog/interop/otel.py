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

Ids are derived from session ids and seqs and from the export's identity
(``otel_identity``: the project, and a digest of the settings and of the
run's logs, or a user ``run_id``), so re-sending the same export gives the
same trace and span ids (a receiver that keys on them keeps one copy) while
another project, price table or ``max_text`` gives new ones; the trace id is
the root run's, whichever part of it is exported. A failed run's AGENT span
has status ERROR and its outcome (``otel_outcome``). Damaged logs export
what is readable, with an ERROR status and a ``dsh.read_problem`` event.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext

from subagent_catalog.analysis.findings.spawns import SpawnLink
from subagent_catalog.analysis.transcript import session_transcript
from subagent_catalog.bounds import TEXT_CHARS
from subagent_catalog.errors import UnknownSessionError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.nearest import unknown_id_hint
from subagent_catalog.frames.source import Source
from subagent_catalog.interop.otel_attributes import Export, PriceFunction, StepUsage
from subagent_catalog.interop.otel_conventions import (
    GEN_AI_SCHEMA_URL,
    MAX_TEXT,
    PROJECT_NAME,
    Conventions,
    conventions_text,
)
from subagent_catalog.interop.otel_identity import FACT_COLUMNS, ExportIdentity, log_facts_digest, settings_digest
from subagent_catalog.interop.otel_links import SPAWN_LINKS, spawn_link, spawn_summary
from subagent_catalog.interop.otel_session import (
    SessionSpans,
    context,
    session_span_stream,
    span_id,
    trace_id,
)
from subagent_catalog.interop.otlp_export import (
    MAX_REQUEST_SPANS,
    REQUEST_SPANS,
    OtlpStats,
    TracePart,
    request_batches,
    send_otlp,
    trace_parts,
    traces_endpoint,
    write_otlp_json,
)
from subagent_catalog.prices import SAMPLE_COLUMNS, Prices, PriceTable, price_table, request_cost
from subagent_catalog.version import __version__

__all__ = [
    "MAX_REQUEST_SPANS",
    "REQUEST_SPANS",
    "SCOPE_NAME",
    "ExportIdentity",
    "OtlpParts",
    "OtlpStats",
    "TracePart",
    "export_settings",
    "otlp_parts",
    "otlp_traces",
    "request_batches",
    "send_otlp",
    "spawn_summary",
    "to_otlp",
    "trace_parts",
    "traces_endpoint",
    "write_otlp_json",
]

SCOPE_NAME = "subagent_catalog.interop.otel"
PART_SPANS = 512
"""A streamed part holds at most this many spans (a log with more comes in several parts)."""


def export_settings(
    *,
    project: str = "dsh",
    conventions: Conventions = "openinference+gen_ai",
    max_text: int = MAX_TEXT,
    price: PriceFunction | None = None,
    prices: Prices | PriceTable | None = None,
    export_id: str | None = None,
) -> Export:
    """The resource, scope and options every span of an export shares.

    The resource names the Phoenix project (``openinference.project.name``)
    and nothing of the machine; the scope names the conventions' versions;
    ``export_id`` (``ExportIdentity.name``) goes on every AGENT span as ``dsh.export.id``.

    Examples:
        >>> export_settings().scope.schema_url
        'https://opentelemetry.io/schemas/1.44.0'
    """
    TEXT_CHARS.check("max_text", max_text)
    exporter = f"subagent-catalog {__version__}"
    resource = Resource({"service.name": "dsh", PROJECT_NAME: project, "dsh.exporter": exporter})
    scope = InstrumentationScope(
        SCOPE_NAME, __version__, GEN_AI_SCHEMA_URL, {"dsh.conventions": conventions_text(), "dsh.max_text": max_text}
    )
    if price is not None:
        return Export(resource, scope, conventions, max_text, price, export_id)
    table = price_table(prices)

    def priced(usage: StepUsage) -> float | None:  # a step's cost as ``usage_by_model`` prices it (at its end time)
        counts = {name: getattr(usage, name) for name in SAMPLE_COLUMNS[3:]}
        return request_cost(table, usage.provider, usage.model, usage.time_ms, counts)

    return Export(resource, scope, conventions, max_text, priced, export_id)


@dataclass(slots=True)
class _Node:
    session_id: str
    parent_session: str | None
    origin: str | None
    seed_length: int | None
    key: str
    index: int  # the log's row in ``corpus.sessions`` (read when its spans are made)
    children: list[_Node] = field(default_factory=list)
    parent: _Node | None = None


UNREAD_COLUMNS = ("usage_samples", "tool_call_records")
"""``sessions`` columns no span reads: a log's row is read without them (a star run's root row holds 20,000
tool call records, about 30 MB as Python values)."""


@dataclass
class _Forest:
    roots: list[_Node]
    by_id: dict[str, _Node]  # the first log (list order) of each session id
    table: pl.DataFrame  # ``corpus.sessions`` without ``UNREAD_COLUMNS``
    scopes: dict[int, str] = field(default_factory=dict)  # id(root) -> what its ids derive from

    def full_row(self, node: _Node) -> dict[str, Any]:
        return self.table.row(node.index, named=True)

    def run_digests(self) -> dict[int, str]:
        """Each root run's content digest (``otel_identity.log_facts_digest`` of its tree's logs, depth first)."""
        facts = self.table.select(*FACT_COLUMNS).rows()
        digests: dict[int, str] = {}
        for root in self.roots:
            rows, stack = [], [root]
            while stack:
                node = stack.pop()
                rows.append(facts[node.index])
                stack.extend(reversed(node.children))
            digests[id(root)] = log_facts_digest(rows)
        return digests

    def key(self, node: _Node) -> str:
        """What the node's span ids derive from: its export scope (its root run's) and its session key."""
        return f"{self.scopes[id(_root_of(node))]}\x00{node.key}"

    def trace(self, root: _Node) -> int:
        return trace_id(self.key(root))


def _forest(corpus: Corpus) -> _Forest:
    """Every readable log as a node; subagents under their parent's node, everything else a root."""
    columns = ("session_id", "path", "parent_session", "origin", "seed_length")
    rows = (
        corpus.sessions.select(*columns, "verdict", "list_order")
        .with_row_index("_row")
        .filter(pl.col("verdict") != "skipped")
        .sort("list_order")
        .select("_row", *columns)
        .iter_rows()
    )
    nodes = [
        _Node(session_id, parent, origin, seed_length, session_id, index)
        for index, session_id, _path, parent, origin, seed_length in rows
    ]
    counts = Counter(node.session_id for node in nodes)
    paths = corpus.sessions["path"]
    for node in nodes:
        if counts[node.session_id] > 1:
            node.key = f"{node.session_id}\x00{paths[node.index]}"
    by_id = {node.session_id: node for node in reversed(nodes)}  # the first log of each id
    parent_of: dict[int, _Node] = {}
    for node in nodes:
        parent = by_id.get(node.parent_session) if isinstance(node.parent_session, str) else None
        if node.origin == "subagent" and parent is not None and parent is not node:
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
    return _Forest(roots, by_id, corpus.sessions.drop(UNREAD_COLUMNS, strict=False))


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
            otherwise = "check the id (subagent-catalog summary lists them)"
            near, hint = unknown_id_hint(session_id, corpus.sessions["session_id"].to_list(), otherwise=otherwise)
            message = f"no readable session log has id {session_id!r}"
            raise UnknownSessionError(session_id, near, message=message, hint=hint)
        chosen.append((node, _root_of(node)))
    return chosen


def _link_to_parent(forest: _Forest, node: _Node) -> tuple[list[Link], dict[str, Any]]:
    """A fork's (or any non-subagent child's) span link to the AGENT span of the session it names as parent.

    A fork's AGENT span also gets ``dsh.fork_of`` (the parent's session id)
    and ``dsh.fork_of_trace_id`` (its trace, as receivers show it: 32 hex
    digits), which a receiver that shows no span links can filter on.
    """
    parent_id = node.parent_session
    if not isinstance(parent_id, str) or (node.origin == "subagent" and parent_id in forest.by_id):
        return [], {}
    parent = forest.by_id.get(parent_id)
    if parent is None or parent is node:
        return [], {}
    trace = forest.trace(_root_of(parent))
    kind = "fork-of" if node.seed_length is not None else "child-of"
    attributes: dict[str, Any] = {"dsh.link": kind, "dsh.parent_session": parent_id}
    fork: dict[str, Any] = {}
    if node.seed_length is not None:
        attributes["dsh.seed_length"] = node.seed_length
        fork = {"dsh.fork_of": parent_id, "dsh.fork_of_trace_id": format(trace, "032x")}
    return [Link(context(trace, span_id(forest.key(parent), "agent")), attributes)], fork


def _linking_part(built: SessionSpans) -> SessionSpans:
    """What a session's children need of it while they wait on the stack: its calls without their texts."""
    tools = [dataclasses.replace(call, arguments=None, result=None, error=None) for call in built.tools]
    return SessionSpans([], built.agent, tools, built.first_user, built.start_ms)


def _tree_parts(
    export: Export,
    corpus: Corpus,
    forest: _Forest,
    start: _Node,
    root: _Node,
    parent_spans: SessionSpans | None,
    spawned: dict[SpawnLink, int],
) -> Iterator[list[ReadableSpan]]:
    """The spans of one tree, depth first in list order, at most ``PART_SPANS`` at a time, as they are made."""
    trace = forest.trace(root)
    claimed: set[tuple[int, int]] = set()
    stack: list[tuple[_Node, SessionSpans | None]] = [(start, parent_spans)]
    while stack:
        node, parent = stack.pop()
        row = forest.full_row(node)
        events = corpus.log_events(row["list_order"])
        rows = session_transcript(corpus, row, events)
        links, fork = ([], {}) if parent is not None else _link_to_parent(forest, node)

        def place(
            first_user: str | None, parent: SessionSpans | None = parent, row: dict[str, Any] = row
        ) -> tuple[SpanContext | None, dict[str, Any]]:
            if parent is None:
                return None, {}
            ctx, spawn = spawn_link(parent, row, first_user, claimed)
            spawned[spawn["link"]] += 1
            return ctx, spawn

        built, spans = session_span_stream(
            export, row, rows, events, key=forest.key(node), trace=trace, parent=place, links=links, extra=fork
        )
        del rows, events  # folded: only the spans still to make hold the log now
        if node.children:
            waiting = _linking_part(built)
            stack.extend((child, waiting) for child in reversed(node.children))
        del built
        while chunk := list(itertools.islice(spans, PART_SPANS)):
            yield chunk


class OtlpParts:
    """The streamed export ``otlp_parts`` returns: its ``TracePart``s when iterated (once), and what it is.

    Attributes:
        identity: the export's identity (``ExportIdentity``: what its ids
            derive from; ``identity.name`` names it), known before iterating.
        spawn_links: how each exported subagent was attached (``result-id``,
            ``start-time``, ``prompt``, ``none``: see ``otel_links``), counted
            as the parts are made (complete once iterated).
    """

    def __init__(self, identity: ExportIdentity, parts: Iterator[TracePart], spawn_links: dict[SpawnLink, int]):
        self.identity = identity
        self.spawn_links = spawn_links
        self._parts = parts

    def __iter__(self) -> Iterator[TracePart]:
        return self._parts

    @property
    def spawn_fallbacks(self) -> int:
        """Subagents attached by a fallback (their call's start time or prompt), not by the child id its result names.

        Examples:
            >>> parts = OtlpParts(ExportIdentity("dsh", None, "", "", 0), iter([]), {"start-time": 2, "prompt": 1})
            >>> parts.spawn_fallbacks
            3
        """
        return self.spawn_links.get("start-time", 0) + self.spawn_links.get("prompt", 0)


def otlp_parts(
    source: Source,
    *,
    sessions: Sequence[str] | None = None,
    conventions: Conventions = "openinference+gen_ai",
    project: str = "dsh",
    max_text: int = MAX_TEXT,
    price: PriceFunction | None = None,
    prices: Prices | PriceTable | None = None,
    run_id: str | None = None,
) -> OtlpParts:
    """The spans of every exported session log, one part per log, trace after trace: the streamed export.

    A part is built from one log's events and handed on at once, so memory
    holds one log's spans (and, for the logs whose subagents are still to
    come, what linking them needs: their tool calls), never a whole tree.
    ``write_otlp_json`` and ``send_otlp`` take the parts. Arguments as for
    ``to_otlp``. The result also says what the export is (``identity``) and,
    once iterated, how its subagents were attached (``spawn_links``).

    Raises:
        UnknownSessionError: a ``sessions`` id names no readable log.
        BoundError: ``max_text`` is not a number of characters (``bounds.TEXT_CHARS``), before any work.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> for sid in ("a", "b"):
        ...     log = EventLog(sid); log.turn_start(); log.user("hi"); log.turn_end()
        ...     _ = write_session(root, header(sid, created_at=1), log.events, "none")
        >>> parts = otlp_parts(read_corpus(root), run_id="nightly")
        >>> [(part.trace, len(part.spans)) for part in parts], parts.identity.name
        ([(0, 2), (1, 2)], 'dsh/run nightly')
    """
    TEXT_CHARS.check("max_text", max_text)
    corpus = source.to_corpus()
    table = None if price is not None else price_table(prices)
    forest = _forest(corpus)
    selected = _selected(forest, corpus, sessions)
    settings = settings_digest(conventions=conventions, max_text=max_text, price=price, table=table)
    digests = forest.run_digests()
    content = [(node.key, digests[id(root)]) for node, root in selected]
    digest = log_facts_digest([settings, sessions is None, *content])
    identity = ExportIdentity(project, run_id, settings, digest, len(selected))
    forest.scopes = {key: repr(identity.scope(value)) for key, value in digests.items()}
    export = export_settings(
        project=project, conventions=conventions, max_text=max_text, price=price, prices=table, export_id=identity.name
    )
    spawned: dict[SpawnLink, int] = dict.fromkeys(SPAWN_LINKS, 0)
    return OtlpParts(identity, _parts(export, corpus, forest, selected, spawned), spawned)


def _parts(
    export: Export,
    corpus: Corpus,
    forest: _Forest,
    selected: list[tuple[_Node, _Node]],
    spawned: dict[SpawnLink, int],
) -> Iterator[TracePart]:
    for ordinal, (node, root) in enumerate(selected):
        parent = node.parent
        parent_spans = None
        if parent is not None:  # a child exported alone keeps the parent span a whole export gives it
            row = forest.full_row(parent)
            events = corpus.log_events(row["list_order"])
            rows = session_transcript(corpus, row, events)
            built, _ = session_span_stream(
                export, row, rows, events, key=forest.key(parent), trace=forest.trace(root), parent=None
            )
            parent_spans = _linking_part(built)  # its spans are never made
        for spans in _tree_parts(export, corpus, forest, node, root, parent_spans, spawned):
            yield TracePart(ordinal, spans)


def otlp_traces(
    source: Source,
    *,
    sessions: Sequence[str] | None = None,
    conventions: Conventions = "openinference+gen_ai",
    project: str = "dsh",
    max_text: int = MAX_TEXT,
    price: PriceFunction | None = None,
    prices: Prices | PriceTable | None = None,
    run_id: str | None = None,
) -> Iterator[list[ReadableSpan]]:
    """The spans of each root run (or of each selected session's subtree), one list per trace, in list order.

    Memory holds one whole trace's spans: a run of thousands of subagents is
    large; ``otlp_parts`` streams instead (the writers take either).
    Arguments as for ``to_otlp``.

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
    parts = otlp_parts(
        source,
        sessions=sessions,
        conventions=conventions,
        project=project,
        max_text=max_text,
        price=price,
        prices=prices,
        run_id=run_id,
    )
    for _, trace in itertools.groupby(parts, key=lambda part: part.trace):
        yield [span for part in trace for span in part.spans]


def to_otlp(
    source: Source,
    *,
    sessions: Sequence[str] | None = None,
    conventions: Conventions = "openinference+gen_ai",
    project: str = "dsh",
    max_text: int = MAX_TEXT,
    price: PriceFunction | None = None,
    prices: Prices | PriceTable | None = None,
    run_id: str | None = None,
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
        run_id: what the ids derive from instead of the content digest
            (``otel_identity``): the same ``run_id`` and project give the same
            ids whatever changed; default: the settings' and the runs' digest.

    Returns:
        Every span, trace after trace (``otlp_traces`` yields them one trace at a time).

    Raises:
        UnknownSessionError: a ``sessions`` id names no readable log.
        BoundError: ``max_text`` is not a number of characters (``bounds.TEXT_CHARS``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1"); log.turn_start(); log.user("fix it"); log.tool_round("c1", "ok"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> [(s.name, s.attributes["openinference.span.kind"]) for s in to_otlp(read_corpus(root))]
        [('fix it (s1)', 'AGENT'), ('turn 1', 'CHAIN'), ('deepseek/deepseek-chat', 'LLM'), ('read_file', 'TOOL')]
    """
    traces = otlp_traces(
        source,
        sessions=sessions,
        conventions=conventions,
        project=project,
        max_text=max_text,
        price=price,
        prices=prices,
        run_id=run_id,
    )
    return [span for trace in traces for span in trace]
