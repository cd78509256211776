"""Where spans go: OTLP JSON lines files and OTLP/HTTP collectors, a request at a time.

Spans arrive as ``TracePart``s (``otel.otlp_parts``: one session log's spans,
tagged with the ordinal of its trace), or as whole traces (lists of spans,
``otel.otlp_traces`` or ``[to_otlp(...)]``). ``request_batches`` groups them
into export requests: small traces together until a request holds at least
``REQUEST_SPANS`` spans, and a trace larger than ``MAX_REQUEST_SPANS`` split
across requests (OTLP lets one trace's spans come in several requests;
receivers join them by trace id). So memory holds one request's spans at a
time, whatever the size of a run tree, and no request grows with it.
``send_otlp`` also splits a request over its byte budget
(``MAX_REQUEST_BYTES``), sends on after a failed request, and names the
traces that did not get through.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry.sdk.trace import ReadableSpan

from subagent_catalog.bounds import POSITIVE_SECONDS, REQUEST_BYTES, SECONDS
from subagent_catalog.interop.errors import OtlpExportError
from subagent_catalog.interop.otel_conventions import SPAN_KIND
from subagent_catalog.interop.otlp_http import RETRY_FOR, check_headers, deliver, parse_endpoint
from subagent_catalog.interop.otlp_json import json_line
from subagent_catalog.outputs import PathLike, open_output

REQUEST_SPANS = 512
"""Small traces are sent (and written) together until a request holds at least this many spans."""
MAX_REQUEST_SPANS = 2048
"""No request (no line of a file) holds more spans: a larger trace is split across requests."""


@dataclass(frozen=True)
class TracePart:
    """Some spans of one trace, in export order.

    Attributes:
        trace: the trace's ordinal in the export (0, 1, ...): consecutive
            parts with the same ordinal belong to one trace.
        spans: the spans (for ``otlp_parts``: one session log's).
    """

    trace: int
    spans: list[ReadableSpan]


Spans = Iterable[TracePart] | Iterable[Sequence[ReadableSpan]]
"""What the writers take: trace parts (streamed), or whole traces (lists of spans)."""


def trace_parts(items: Spans) -> Iterator[TracePart]:
    """Trace parts as they are, or each whole trace (a list of spans) as one part of its own trace.

    Examples:
        >>> [(part.trace, part.spans) for part in trace_parts([[], []])]
        [(0, []), (1, [])]
    """
    ordinal = 0
    for item in items:
        if isinstance(item, TracePart):
            yield item
        else:
            yield TracePart(ordinal, list(item))
            ordinal += 1


@dataclass
class OtlpStats:
    """What an export wrote or sent.

    Attributes:
        traces: root runs (or selected subtrees).
        spans: spans in all.
        kinds: spans per ``openinference.span.kind``.
        requests: OTLP requests (lines of a file).
        trace_spans: spans per trace (its trace id in hex), in export order.
        names: the root session of each trace (its first span's ``dsh.session.id``).
        accepted_spans: spans in requests the collector accepted (``send_otlp``).
        bytes: bytes of the requests sent (``send_otlp``).
        failed: each trace that did not get through (hex trace id), and why
            (``send_otlp``; it then raises ``OtlpDeliveryError``).
        present: traces the receiver held before this export sent them (hex
            trace ids; counted only when ``send_otlp`` is given ``present=``).
    """

    traces: int = 0
    spans: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    trace_spans: dict[str, int] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    accepted_spans: int = 0
    bytes: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    present: set[str] = field(default_factory=set)

    def count_spans(self, spans: Sequence[ReadableSpan]) -> None:
        """Add spans of a trace already counted.

        Examples:
            >>> stats = OtlpStats(); stats.count_spans([]); stats.spans
            0
        """
        self.spans += len(spans)
        for span in spans:
            kind = str((span.attributes or {}).get(SPAN_KIND, "UNKNOWN"))
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
        last: int | None = None
        trace = ""
        for span in spans:
            number = span.context.trace_id if span.context is not None else 0
            if number != last:
                last, trace = number, f"{number:032x}"
                if trace not in self.trace_spans:
                    self.names[trace] = str((span.attributes or {}).get("dsh.session.id", ""))
            self.trace_spans[trace] = self.trace_spans.get(trace, 0) + 1

    def label(self, trace: str) -> str:
        """A trace as the messages name it: its root session, else its trace id.

        Examples:
            >>> stats = OtlpStats(names={"0" * 32: "run-1"}); stats.label("0" * 32), stats.label("1" * 32)
            ('run-1', 'trace 11111111111111111111111111111111')
        """
        return self.names.get(trace) or f"trace {trace}"


def request_batches(items: Spans, stats: OtlpStats) -> Iterator[list[ReadableSpan]]:
    """Group spans into export requests, counting them (see the module's rule).

    Examples:
        >>> stats = OtlpStats()
        >>> [len(batch) for batch in request_batches([[], []], stats)], stats.traces, stats.requests
        ([], 2, 0)
    """
    batch: list[ReadableSpan] = []
    current: int | None = None
    for part in trace_parts(items):
        if part.trace != current:  # a trace boundary: a request may end here
            if len(batch) >= REQUEST_SPANS:
                stats.requests += 1
                yield batch
                batch = []
            stats.traces += 1
            current = part.trace
        stats.count_spans(part.spans)
        batch.extend(part.spans)
        while len(batch) >= MAX_REQUEST_SPANS:
            stats.requests += 1
            yield batch[:MAX_REQUEST_SPANS]
            batch = batch[MAX_REQUEST_SPANS:]
    if batch:
        stats.requests += 1
        yield batch


def write_otlp_json(traces: Spans, path: PathLike, *, protected: Sequence[PathLike] = ()) -> OtlpStats:
    """Write spans to an OTLP JSON lines file, a request per line (atomically; never inside ``protected``).

    Args:
        traces: ``otlp_parts(...)`` (streamed: memory holds one request), or
            whole traces (``otlp_traces(...)``, ``[to_otlp(...)]``).
        path: the file.
        protected: directories the file must not be inside (the corpus).

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

    Raises:
        EndpointError: the URL is malformed (``otlp_http.parse_endpoint``).

    Examples:
        >>> traces_endpoint("http://127.0.0.1:6006"), traces_endpoint("http://h:4318/custom")
        ('http://127.0.0.1:6006/v1/traces', 'http://h:4318/custom')
    """
    return parse_endpoint(url).url


def _env_headers() -> dict[str, str]:
    """The OpenTelemetry exporter's header variables (``OTEL_EXPORTER_OTLP_TRACES_HEADERS``, else ``..._HEADERS``)."""
    from opentelemetry.util.re import parse_env_headers

    for name in ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"):
        value = os.environ.get(name)
        if value:
            return dict(parse_env_headers(value, liberal=True))
    return {}


class OtlpDeliveryError(OtlpExportError):
    """Some traces did not get through: requests a collector refused, or that failed or passed their deadline.

    Attributes:
        stats: what was sent: ``stats.failed`` maps each trace that did not
            get through (hex trace id) to why, ``stats.names`` names its root session.
    """

    def __init__(self, message: str, *, hint: str | None = None, stats: OtlpStats) -> None:
        super().__init__(message, hint=hint)
        self.stats = stats


MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""The default byte budget of one OTLP/HTTP request (4 MiB, gRPC's default message limit): larger ones are split."""
FAILURES_IN_A_ROW = 3
"""``send_otlp`` stops sending after this many failed requests in a row (the rest of the traces are named unsent)."""
SHOWN_TRACES = 5
"""An error names this many traces that did not get through (``OtlpDeliveryError.stats.failed`` has them all)."""


def sized_requests(batch: list[ReadableSpan], budget: int) -> Iterator[tuple[list[ReadableSpan], bytes]]:
    """A batch as OTLP/HTTP bodies of at most ``budget`` bytes each, spans in order (a span larger alone goes alone).

    Examples:
        >>> from subagent_catalog.interop.otel_session import context
        >>> spans = [ReadableSpan("s" * 1000, context=context(1, n), start_time=0, end_time=1) for n in range(1, 9)]
        >>> [len(part) for part, body in sized_requests(spans, 3000)]
        [2, 2, 2, 2]
        >>> [len(part) for part, body in sized_requests(spans, 10)]
        [1, 1, 1, 1, 1, 1, 1, 1]
    """
    if not batch:
        return
    body = _encoded(batch)
    if len(body) <= budget or len(batch) == 1:
        yield batch, body
        return
    pieces = min(len(batch), -(-len(body) // budget) + 1)  # a piece a little under the budget, on average
    step = -(-len(batch) // pieces)
    for start in range(0, len(batch), step):
        yield from sized_requests(batch[start : start + step], budget)


def _encoded(spans: Sequence[ReadableSpan]) -> bytes:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return bytes(encode_spans(spans).SerializePartialToString())


def _trace_id(span: ReadableSpan) -> str:
    return f"{span.context.trace_id if span.context is not None else 0:032x}"


def _trace_ids(spans: Sequence[ReadableSpan]) -> list[str]:
    """The distinct trace ids (hex) of some spans, in order."""
    return list(dict.fromkeys(_trace_id(span) for span in spans))


def _failure(url: str, stats: OtlpStats, sent: int, failed_requests: int, stopped: bool) -> OtlpDeliveryError:
    """The error naming the traces that did not get through."""
    failed = list(stats.failed)
    shown = ", ".join(stats.label(trace) for trace in failed[:SHOWN_TRACES])
    more = f" and {len(failed) - SHOWN_TRACES} more" if len(failed) > SHOWN_TRACES else ""
    first = stats.failed[failed[0]]
    lost = stats.spans - stats.accepted_spans
    stop = f"; stopped after {FAILURES_IN_A_ROW} failed requests in a row, the rest not sent" if stopped else ""
    return OtlpDeliveryError(
        f"{url} did not accept {lost} spans ({failed_requests} of {sent} requests failed{stop}): "
        f"{len(failed)} of {len(stats.trace_spans)} traces did not get through: {shown}{more}; "
        f"the first error: {first}",
        hint="check that a collector listens for OTLP/HTTP (protobuf) at that URL, the headers, --timeout "
        "(each attempt's whole time), --retry-for (how long a busy collector is waited for) and "
        "--max-request-bytes; the traces that got through are stored, "
        "and sending the same export again completes the others",
        stats=stats,
    )


def send_otlp(
    traces: Spans,
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    retry_for: float = RETRY_FOR,
    max_request_bytes: int = MAX_REQUEST_BYTES,
    present: Callable[[Mapping[str, str]], Iterable[str]] | None = None,
) -> OtlpStats:
    """Send spans over OTLP/HTTP (protobuf) to ``endpoint`` only, each attempt within ``timeout`` seconds in all.

    Requests hold at most ``MAX_REQUEST_SPANS`` spans and ``max_request_bytes``
    bytes: a larger trace goes in several requests (receivers join a trace's
    spans by trace id). Each attempt's deadline covers all of it: name
    lookup, connect, TLS, sending and the reply; a busy answer (429, 502,
    503, 504) is tried again for up to ``retry_for`` seconds (``deliver``);
    a redirect is not followed (docs/traces.md).
    A failed request does not end the export: the next ones are sent (less
    the spans of the traces that failed), unless ``FAILURES_IN_A_ROW``
    failed in a row; then the error names every trace that did not get
    through.

    Args:
        traces: ``otlp_parts(...)`` (streamed), or whole traces
            (``otlp_traces(...)``, ``[to_otlp(...)]``).
        endpoint: the collector's URL (``http://127.0.0.1:6006`` gets ``/v1/traces``).
        headers: HTTP headers (an API key); none: the OpenTelemetry
            exporter's environment (``OTEL_EXPORTER_OTLP_HEADERS``).
        timeout: seconds per attempt, all of it.
        retry_for: seconds a request answered busy is tried again (a request
            ends within ``retry_for + timeout`` seconds).
        max_request_bytes: the byte budget of a request (a single span larger
            than it is sent alone).
        present: asked before each request with the traces it starts sending
            (trace id -> its first span id, hex), it returns the trace ids the
            receiver already holds (``phoenix_check.phoenix_presence``); they go in
            ``stats.present``.

    Raises:
        BoundError: ``timeout``, ``retry_for`` or ``max_request_bytes`` outside its range (``bounds``).
        EndpointError: the URL or a header is malformed (before anything is sent).
        OtlpDeliveryError: some traces did not get through (a request was
            refused, failed or passed its deadline): the message names them,
            ``error.stats`` has all of them.

    Examples:
        >>> send_otlp([], "http://127.0.0.1:9").spans
        0
    """
    POSITIVE_SECONDS.check("timeout", timeout)
    SECONDS.check("retry_for", retry_for)
    REQUEST_BYTES.check("max_request_bytes", max_request_bytes)
    target = parse_endpoint(endpoint)
    sent_headers = check_headers(dict(headers) if headers is not None else _env_headers())

    stats = OtlpStats()
    asked: set[str] = set()
    requests = failed_requests = in_a_row = 0
    skipped = False
    for batch in request_batches(traces, stats):
        if in_a_row >= FAILURES_IN_A_ROW:  # stopped: the rest is named, not sent
            skipped = True
            for trace in _trace_ids(batch):
                stats.failed.setdefault(trace, "not sent")
            continue
        if present is not None:
            new: dict[str, str] = {}
            for span in batch:
                trace = _trace_id(span)
                if trace not in asked and trace not in new:
                    new[trace] = f"{span.context.span_id if span.context is not None else 0:016x}"
            asked.update(new)
            if new:
                stats.present.update(present(new))
        for piece, body in sized_requests(batch, max_request_bytes):
            if in_a_row >= FAILURES_IN_A_ROW:
                skipped = True
                for trace in _trace_ids(piece):
                    stats.failed.setdefault(trace, "not sent")
                continue
            if stats.failed:  # a trace that failed is not sent on: its other spans would wait for the same fate
                kept = [span for span in piece if _trace_id(span) not in stats.failed]
                if not kept:
                    continue
                if len(kept) < len(piece):
                    piece, body = kept, _encoded(kept)
            requests += 1
            try:
                deliver(target, body, sent_headers, timeout=timeout, retry_for=retry_for)
            except OtlpExportError as error:
                failed_requests += 1
                in_a_row += 1
                for trace in _trace_ids(piece):
                    stats.failed.setdefault(trace, str(error))
            else:
                in_a_row = 0
                stats.accepted_spans += len(piece)
                stats.bytes += len(body)
    stats.requests = requests
    if stats.failed:
        raise _failure(target.url, stats, requests, failed_requests, skipped)
    return stats
