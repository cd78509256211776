"""The interop errors: a trace export the receiver refused, a SQL query DuckDB refused."""

from __future__ import annotations

from subagent_catalog.errors import SubagentCatalogError


class OtlpExportError(SubagentCatalogError):
    """Spans could not be sent to an OTLP endpoint (refused, unreachable, timed out)."""


class SqlError(SubagentCatalogError, ValueError):
    """A SQL query DuckDB could not run (syntax, unknown table or column, a forbidden statement)."""
