"""The query's own process: DuckDB runs in a forked child the caller can stop, whatever the query does.

DuckDB's memory limit covers its operators (sorts, hash tables, aggregates),
not a value one scalar call builds (``range(300000000)`` as a list,
``repeat('x', 2000000000)``: gigabytes before any check), and its interrupt
is only seen between chunks (such a call runs on for tens of seconds). So on
Linux the query runs in a child made by ``fork`` (the Arrow tables are
shared copy-on-write, nothing is copied or sent), which writes its result to
a pipe as an Arrow IPC stream. The caller reads the pipe, and kills the
child (``SIGKILL``) the moment its memory grows past the bound (read from
``/proc``), its result past the memory limit, or the deadline passes.
Nothing of the caller's process is touched by the query: a crash in DuckDB
is a ``SqlError`` too. The child uses only DuckDB and pyarrow (never
Polars' thread pool) and leaves with ``os._exit``.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

import orjson
import pyarrow as pa

from subagent_catalog.forking import fork_frozen
from subagent_catalog.interop.errors import SqlError
from subagent_catalog.interop.sql_engine import Tables, batches, locked, memory_error, result_error, timeout_error

_POLL_S = 0.02
_READ = 1 << 20


def available() -> bool:
    """Whether queries run in a child process here (Linux: ``fork`` and ``/proc``).

    Examples:
        >>> isinstance(available(), bool)
        True
    """
    return sys.platform.startswith("linux") and hasattr(os, "fork") and os.path.exists(f"/proc/{os.getpid()}/statm")


def memory_bound_mb(memory_limit_mb: int) -> int:
    """How much the child may grow (MiB) before it is killed: DuckDB's limit, and room for what it does not count.

    Examples:
        >>> memory_bound_mb(256), memory_bound_mb(2048)
        (512, 3072)
    """
    return memory_limit_mb + max(256, memory_limit_mb // 2)


def _resident(pid: int) -> int:
    with open(f"/proc/{pid}/statm", encoding="ascii") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


Work = Callable[[BinaryIO], None]
"""What a child does with its output pipe (raising ``SqlError`` to report one)."""


@dataclass(frozen=True)
class Stops:
    """Why the caller stops a child: the errors for its deadline, its memory bound and its output's bound."""

    timeout: SqlError
    memory: SqlError
    output: SqlError


def _forked(work: Work, *, timeout: float, bound_mb: int, output_limit: int, stops: Stops) -> bytes:
    """Run ``work`` in a forked child; what it wrote, once it has exited cleanly; a ``SqlError`` otherwise."""
    data_read, data_write = os.pipe()
    error_read, error_write = os.pipe()
    base = _resident(os.getpid())
    pid = fork_frozen()  # the child never finalizes an object it inherited (a notebook's ZeroMQ sockets)
    if pid == 0:  # pragma: no cover - the child (measured through its results)
        os.close(data_read)
        os.close(error_read)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        faulthandler.disable()  # a crash here is the caller's SqlError, not a stack dump on its stderr
        status = 0
        try:
            with os.fdopen(data_write, "wb", buffering=_READ) as out, os.fdopen(error_write, "wb") as errors:
                try:
                    work(out)
                except SqlError as error:
                    errors.write(
                        orjson.dumps({"message": str(error.args[0]), "hint": error.hint, "reason": error.reason})
                    )
                    status = 3
        except BaseException:
            status = 4
        finally:
            os._exit(status)
    os.close(data_write)
    os.close(error_write)
    deadline = time.monotonic() + timeout
    data = bytearray()
    stopped: SqlError | None = None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                stopped = stops.timeout
                break
            with contextlib.suppress(OSError):  # the child may be gone already
                if _resident(pid) - base > bound_mb * 2**20:
                    stopped = stops.memory
                    break
            ready, _, _ = select.select([data_read], [], [], min(left, _POLL_S))
            if not ready:
                continue
            chunk = os.read(data_read, _READ)
            if not chunk:
                break
            data += chunk
            if len(data) > output_limit:
                stopped = stops.output
                break
    finally:
        if stopped is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        os.close(data_read)
        status = _reap(pid, deadline)
        with os.fdopen(error_read, "rb") as errors:
            said = errors.read(1 << 16)
    if stopped is not None:
        raise stopped
    if said:
        reported = orjson.loads(said)
        raise SqlError(reported["message"], hint=reported["hint"], reason=reported["reason"])
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        why = f"signal {-code}" if code < 0 else f"exit status {code}"
        raise SqlError(
            f"the query's process ended without a result ({why})",
            hint="narrow the query; if it keeps happening, report it with the query",
            reason="query",
        )
    return bytes(data)


def run_isolated(tables: Tables, query: str, *, memory_limit_mb: int, threads: int, timeout: float) -> pa.Table:
    """Run a checked query over ``tables`` in a forked child; its whole result as an Arrow table.

    Raises:
        SqlError: DuckDB refused the query, or the child was stopped: past
            the deadline (``timeout``), its memory bound (``memory``), the
            result's bound (``result-too-large``), or it died (``query``).

    Examples:
        >>> run_isolated({"t": (pa.table({"a": [1, 2]}), ())}, "select sum(a)::bigint as s from t",
        ...              memory_limit_mb=64, threads=1, timeout=10).to_pylist()
        [{'s': 3}]
    """
    bound = memory_bound_mb(memory_limit_mb)
    stops = Stops(
        timeout_error(timeout),
        memory_error(memory_limit_mb, f"the query's process grew past {bound} MiB"),
        result_error(memory_limit_mb),
    )

    def work(out: BinaryIO) -> None:
        """The child's: the result as an Arrow IPC stream on ``out``, its deadline and result bound looser than ours."""
        con = locked(tables, memory_limit_mb=memory_limit_mb, threads=threads)
        schema, stream = batches(
            con, query, timeout=timeout + 5, memory_limit_mb=memory_limit_mb, result_limit_mb=2 * memory_limit_mb
        )
        with pa.ipc.new_stream(out, schema) as writer:
            for batch in stream:
                writer.write_batch(batch)

    data = _forked(work, timeout=timeout, bound_mb=bound, output_limit=memory_limit_mb * 2**20, stops=stops)
    with pa.ipc.open_stream(pa.py_buffer(data)) as reader:
        return reader.read_all()


def _reap(pid: int, deadline: float) -> int:
    """The child's exit status, waited for until the deadline (then it is killed)."""
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.001)  # it closed its pipe: it is leaving
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]
