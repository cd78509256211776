"""Run a Phoenix server for the interop tests: loopback only, offline, in a given working directory.

``python -m tests.phoenix_server WORKDIR HTTP_PORT GRPC_PORT`` starts ``phoenix serve`` with:

- ``PHOENIX_WORKING_DIR`` (its SQLite database) in WORKDIR, a temporary directory of the test;
- ``PHOENIX_HOST=127.0.0.1`` for the HTTP server (UI, REST API, OTLP/HTTP ``/v1/traces``);
- its gRPC OTLP receiver bound to 127.0.0.1 too: Phoenix binds it to ``[::]`` with no setting to
  change that, so the bind address is rewritten here before the server starts;
- ``PHOENIX_ALLOW_EXTERNAL_RESOURCES=false`` (no web fonts, telemetry pixels or WASM download: Phoenix
  makes no public-internet request on its own), ``PHOENIX_TELEMETRY_ENABLED=false``, the agent
  assistant and the MCP endpoint off.
"""

from __future__ import annotations

import os
import sys

OFFLINE = {
    "PHOENIX_HOST": "127.0.0.1",
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
    "PHOENIX_ENABLE_MCP_SERVER": "false",
    "PHOENIX_ENABLE_PROMETHEUS": "false",
}


def environment(workdir: str, http_port: int, grpc_port: int) -> dict[str, str]:
    """The environment the server runs with (the caller's, less any other PHOENIX_* or OTEL_* setting)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    env.update(OFFLINE)
    env.update({"PHOENIX_WORKING_DIR": workdir, "PHOENIX_PORT": str(http_port), "PHOENIX_GRPC_PORT": str(grpc_port)})
    return env


def _loopback_grpc() -> None:
    import grpc.aio

    server_class = type(grpc.aio.server())
    bind = server_class.add_insecure_port

    def add_insecure_port(self: object, address: str) -> int:
        return bind(self, address.replace("[::]:", "127.0.0.1:"))  # type: ignore[arg-type]

    server_class.add_insecure_port = add_insecure_port  # type: ignore[method-assign]


if __name__ == "__main__":
    workdir, http_port, grpc_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.environ.clear()
    os.environ.update(environment(workdir, http_port, grpc_port))
    _loopback_grpc()
    from phoenix.server.main import main

    sys.argv = ["phoenix", "serve"]
    sys.exit(main())
