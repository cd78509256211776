"""The interop errors: an HTTP request without a whole reply, a trace export refused, a SQL query DuckDB refused."""

from __future__ import annotations

from typing import Literal

from subagent_catalog.errors import SubagentCatalogError

SqlErrorReason = Literal[
    "syntax", "refused", "too-long", "encoding", "timeout", "memory", "result-too-large", "result-type", "query"
]
"""Why a query failed: the ``reason`` of a ``SqlError``."""


ExchangeReason = Literal["refused", "dropped", "timeout", "failed"]
"""Why an HTTP request got no whole reply: the ``reason`` of an ``ExchangeError``."""


class ExchangeError(SubagentCatalogError):
    """One HTTP request (``otlp_http.exchange``) got no whole reply; the message names the URL.

    Attributes:
        url: the URL asked.
        reason: ``refused`` (the connection was refused), ``dropped`` (closed
            or reset before any reply), ``timeout`` (no whole reply within the
            request's deadline) or ``failed`` (a name that does not resolve,
            TLS, a reply that is not HTTP, a header line too long).
        detail: what happened, without the URL.
    """

    def __init__(self, url: str, detail: str, *, reason: ExchangeReason, hint: str | None = None) -> None:
        super().__init__(f"{url}: {detail}", hint=hint)
        self.url = url
        self.reason: ExchangeReason = reason
        self.detail = detail


class OtlpExportError(SubagentCatalogError):
    """Spans could not be sent to an OTLP endpoint (refused, unreachable, timed out, a malformed URL)."""


class SqlError(SubagentCatalogError, ValueError):
    """A SQL query that could not run: syntax, a refused statement, a limit, an unknown table or column.

    Attributes:
        reason: why, as a stable word (``SqlErrorReason``):
            ``syntax``, ``refused`` (not one read-only statement),
            ``too-long``, ``encoding``, ``timeout``, ``memory``,
            ``result-too-large``, ``result-type`` or ``query`` (DuckDB
            refused it while binding or running: an unknown table or
            column, a file access, a type error).
    """

    def __init__(self, message: str, *, hint: str | None = None, reason: SqlErrorReason = "query") -> None:
        super().__init__(message, hint=hint)
        self.reason: SqlErrorReason = reason


class EndpointError(OtlpExportError):
    """An OTLP endpoint URL or header that cannot be used (malformed, not http(s), a bad port or host)."""
