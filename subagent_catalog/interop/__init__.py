"""Interop: dsh runs opened where researchers already work (layer 7: imports every layer below ``views``).

Owns the ways a corpus or an archive leaves this toolkit in another tool's
terms: OpenTelemetry traces with the OpenInference and GenAI semantic
conventions (``otel``: one trace per root run, built from the per-session
``transcript`` view; ``otel_session``: one session's spans;
``otel_links``: which tool call started which child; ``otel_conventions``:
attribute names, pinned versions, clipping; ``otlp_json``: the OTLP JSON
lines file format; ``otlp_export``: requests to files and collectors;
``otlp_http``: endpoint URLs and POSTs with a whole-request deadline;
``phoenix_check``: Phoenix asked back, which traces it holds, how many spans
it stored, our model prices written into its table), SQL
over the frames in a DuckDB sandbox (``sql``; ``sql_guard``: what it lets
through; ``sql_engine``: the connection; ``sql_process``: the forked child
a query runs in) and the table mapping it registers (``sql_tables``). It imports no
UI library: the CLI (``cli.interop``) translates its errors.
"""

import sys
import types
from typing import TYPE_CHECKING, Any

from subagent_catalog.interop.otel import otlp_parts, otlp_traces, send_otlp, to_otlp, write_otlp_json

if TYPE_CHECKING:
    from subagent_catalog.interop.sql import sql

__all__ = ["otlp_parts", "otlp_traces", "send_otlp", "sql", "to_otlp", "write_otlp_json"]


class _Interop(types.ModuleType):
    """This package, whose ``sql`` (the function) is imported on first use: DuckDB and pyarrow load only then.

    A trace export never loads them (about 50 MB). The import system names a
    loaded submodule on its package; the submodule ``sql`` leaves the name to
    the function, as when the function was imported here eagerly.
    """

    def __getattr__(self, name: str) -> Any:
        if name == "sql":
            from subagent_catalog.interop.sql import sql

            return sql
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "sql" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Interop
