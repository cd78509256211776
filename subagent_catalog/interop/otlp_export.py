"""Where spans go: OTLP JSON lines files and OTLP/HTTP collectors, a request at a time.

Spans arrive as ``TracePart``s (``otel.otlp_parts``: one session log's spans,
tagged with the ordinal of its trace), or as whole traces (lists of spans,
``otel.otlp_traces`` or ``[to_otlp(...)]``). ``request_batches`` groups them
into export requests: small traces together until a request holds at least
``REQUEST_SPANS`` spans, and a trace larger than ``MAX_REQUEST_SPANS`` split
across requests (OTLP lets one trace's spans come in several requests;
receivers join them by trace id). So memory holds one request's spans at a
time, whatever the size of a run tree, and no request grows with it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry.sdk.trace import ReadableSpan

from subagent_catalog.interop.errors import OtlpExportError
from subagent_catalog.interop.otel_conventions import SPAN_KIND
from subagent_catalog.interop.otlp_http import check_headers, deliver, parse_endpoint
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
    """

    traces: int = 0
    spans: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    requests: int = 0

    def count(self, trace: Sequence[ReadableSpan]) -> None:
        """Add one whole trace's spans.

        Examples:
            >>> stats = OtlpStats(); stats.count([]); stats.traces
            1
        """
        self.traces += 1
        self.count_spans(trace)

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


def send_otlp(
    traces: Spans,
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> OtlpStats:
    """Send spans over OTLP/HTTP (protobuf) to ``endpoint`` only, each request within ``timeout`` seconds in all.

    Each request's deadline covers all of it: name lookup, connect, TLS,
    sending, the reply and any retries (429, 502, 503, 504 are retried within
    it); a redirect is not followed (docs/traces.md).

    Args:
        traces: ``otlp_parts(...)`` (streamed), or whole traces
            (``otlp_traces(...)``, ``[to_otlp(...)]``).
        endpoint: the collector's URL (``http://127.0.0.1:6006`` gets ``/v1/traces``).
        headers: HTTP headers (an API key); none: the OpenTelemetry
            exporter's environment (``OTEL_EXPORTER_OTLP_HEADERS``).
        timeout: seconds per request, all of it.

    Raises:
        EndpointError: the URL or a header is malformed (before anything is sent).
        OtlpExportError: a request was refused, failed or passed its
            deadline; the message says how many requests got through.

    Examples:
        >>> send_otlp([], "http://127.0.0.1:9").spans
        0
    """
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    target = parse_endpoint(endpoint)
    sent_headers = check_headers(dict(headers) if headers is not None else _env_headers())
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    stats = OtlpStats()
    for batch in request_batches(traces, stats):
        body = encode_spans(batch).SerializePartialToString()
        try:
            deliver(target, body, sent_headers, timeout=timeout)
        except OtlpExportError as error:
            raise OtlpExportError(
                f"{target.url} did not accept {len(batch)} spans (after {stats.requests - 1} accepted requests): "
                f"{error}",
                hint="check that a collector listens for OTLP/HTTP (protobuf) at that URL, the headers, "
                "and --timeout (each request's whole time)",
            ) from None
    return stats
