"""OTLP JSON lines: spans encoded by the OpenTelemetry exporter's own protobuf encoder, written as OTLP/JSON.

Each line is one ``ExportTraceServiceRequest`` (one trace, or several small
ones) in the OTLP/JSON encoding: the protobuf JSON mapping of
``opentelemetry-proto`` with the three differences the OTLP specification
makes (trace and span ids as lowercase hex, not base64; enums as integers;
keys in lowerCamelCase). It is what the OpenTelemetry Collector's file
exporter writes and its ``otlpjsonfile`` receiver reads. ``parse_line``
reads a line back through the protobuf schema, refusing unknown fields: the
check that every line is valid OTLP.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan

_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _ids(value: Any, convert: Any) -> None:
    """Convert the id fields of a span or link dict in place (spans hold links)."""
    for key in _ID_KEYS:
        if value.get(key):
            value[key] = convert(value[key])
    for link in value.get("links", ()):
        _ids(link, convert)


def _each_span(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        span
        for resource in request.get("resourceSpans", ())
        for scope in resource.get("scopeSpans", ())
        for span in scope.get("spans", ())
    ]


def json_line(spans: Sequence[ReadableSpan]) -> bytes:
    """One line of an OTLP JSON lines file (newline included).

    Examples:
        >>> from subagent_catalog.interop.otel_session import context
        >>> json_line([ReadableSpan("s", context=context(1, 2), start_time=0, end_time=1)]).endswith(b"\\n")
        True
    """
    request: dict[str, Any] = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for span in _each_span(request):
        _ids(span, lambda text: base64.b64decode(text).hex())
    return orjson.dumps(request) + b"\n"


def parse_line(line: bytes | str) -> ExportTraceServiceRequest:
    """Read one OTLP JSON line back into the protobuf message, refusing fields the schema does not have.

    Raises:
        google.protobuf.json_format.ParseError: the line is not a valid
            ``ExportTraceServiceRequest``.
        ValueError: an id is not hex.

    Examples:
        >>> from subagent_catalog.interop.otel_session import context
        >>> line = json_line([ReadableSpan("s", context=context(1, 2), start_time=0, end_time=1)])
        >>> parse_line(line).resource_spans[0].scope_spans[0].spans[0].span_id.hex()
        '0000000000000002'
    """
    value = orjson.loads(line)
    for span in _each_span(value):
        _ids(span, lambda text: base64.b64encode(bytes.fromhex(text)).decode())
    message = ExportTraceServiceRequest()
    json_format.ParseDict(value, message, ignore_unknown_fields=False)
    return message
