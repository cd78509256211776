"""The DuckDB side of ``sql``: a sandboxed connection, the tables registered, the query run to Arrow.

Used in-process and in the query's child process (``sql_process``); it
imports no Polars (a forked child must not touch Polars' thread pool).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import duckdb
import pyarrow as pa

from subagent_catalog.bounds import MEMORY_MB, POSITIVE_SECONDS, WORKERS
from subagent_catalog.interop.errors import SqlError
from subagent_catalog.interop.sql_tables import SQL_TABLES, select_list

MEMORY_LIMIT_MB = 2048
"""DuckDB's memory limit (MiB) for a query, and the bound of its result's size."""
THREADS = min(4, os.cpu_count() or 1)
"""DuckDB's threads for a query."""
TIMEOUT_S = 300.0
"""The seconds a query may run before it is stopped."""
MESSAGE_CHARS = 1000
"""An error message from DuckDB is clipped to this many characters."""
BATCH_ROWS = 65_536
_INTERRUPT_EVERY_S = 0.05

DUCKDB_CONFIG: dict[str, Any] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "allow_persistent_secrets": False,
    "python_enable_replacements": False,
    "temp_directory": "",
    "max_temp_directory_size": "0KB",
}
"""The connection's settings at open (besides the limits): no files, no extensions, no secrets, no spilling.

After the tables are registered, ``enable_progress_bar`` is switched off and
``lock_configuration`` on, so a query cannot change any of them.
"""

Tables = Mapping[str, tuple[Any, tuple[str, ...]]]
"""Table name -> (Arrow data: a table or a ``pyarrow.dataset``, the columns its view shows; empty: all)."""


def first_line(error: BaseException) -> str:
    """An error's first line, clipped (a message can quote a 100,000-character identifier).

    Examples:
        >>> first_line(ValueError("a\\nb")), len(first_line(ValueError("x" * 5000))) < 1100
        ('a', True)
    """
    text = str(error).strip()
    line = text.splitlines()[0] if text else type(error).__name__
    return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS] + f"… ({len(line):,} characters)"


def check_limits(memory_limit_mb: int, threads: int, timeout: float) -> None:
    """Refuse a limit outside its range (``bounds.MEMORY_MB``, ``bounds.WORKERS``, ``bounds.POSITIVE_SECONDS``).

    Raises:
        BoundError: which one (a ``ValueError``).

    Examples:
        >>> check_limits(64, 1, 0.5)
        >>> check_limits(64, 1, float("inf"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.BoundError: timeout must be a positive number of seconds up to 315,360,000, not inf
    """
    MEMORY_MB.check("memory_limit_mb", memory_limit_mb)
    WORKERS.check("threads", threads)
    POSITIVE_SECONDS.check("timeout", timeout)


def sandbox(*, memory_limit_mb: int = MEMORY_LIMIT_MB, threads: int = THREADS) -> duckdb.DuckDBPyConnection:
    """A private in-memory DuckDB connection with external access off and the limits set (not yet locked).

    Examples:
        >>> sandbox(memory_limit_mb=64).sql("select current_setting('enable_external_access')").fetchall()
        [(False,)]
    """
    config = {**DUCKDB_CONFIG, "memory_limit": f"{memory_limit_mb}MB", "threads": threads}
    con = duckdb.connect(":memory:", config=config)
    con.execute("SET enable_progress_bar = false")
    return con


def locked(tables: Tables, *, memory_limit_mb: int, threads: int) -> duckdb.DuckDBPyConnection:
    """A sandbox connection with ``tables`` registered (as views over the data), then its configuration locked.

    Examples:
        >>> con = locked({"t": (pa.table({"a": [1]}), ())}, memory_limit_mb=64, threads=1)
        >>> con.sql("select a from t").fetchall()
        [(1,)]
    """
    con = sandbox(memory_limit_mb=memory_limit_mb, threads=threads)
    try:
        for name, (data, columns) in sorted(tables.items()):
            con.register(f"_data_{name}", data)
            con.execute(f'CREATE VIEW "{name}" AS SELECT {select_list(data, columns)} FROM "_data_{name}"')
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def timeout_error(timeout: float) -> SqlError:
    """The error of a query stopped at its deadline.

    Examples:
        >>> timeout_error(2).reason
        'timeout'
    """
    return SqlError(
        f"the query ran longer than {timeout:g} s and was stopped",
        hint="narrow it (a WHERE, a LIMIT, no cross join) or allow more time (timeout=, --timeout)",
        reason="timeout",
    )


def memory_error(memory_limit_mb: int, detail: str | None = None) -> SqlError:
    """The error of a query that needed more memory than its limit.

    Examples:
        >>> memory_error(64).reason
        'memory'
    """
    said = f" ({detail})" if detail else ""
    return SqlError(
        f"the query needs more than its memory limit of {memory_limit_mb} MiB{said}",
        hint="narrow it, or raise the limit (memory_limit_mb=, --memory-limit); nothing spills to disk",
        reason="memory",
    )


def result_error(memory_limit_mb: int) -> SqlError:
    """The error of a result larger than the memory limit.

    Examples:
        >>> result_error(64).reason
        'result-too-large'
    """
    return SqlError(
        f"the result is larger than the memory limit of {memory_limit_mb} MiB",
        hint="select fewer rows or columns (a LIMIT, an aggregate), or raise the limit (--memory-limit)",
        reason="result-too-large",
    )


def batches(
    con: duckdb.DuckDBPyConnection,
    query: str,
    *,
    timeout: float,
    memory_limit_mb: int,
    result_limit_mb: int | None = None,
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The query's result as Arrow batches, interrupted after ``timeout`` s, refused past ``result_limit_mb``.

    ``result_limit_mb`` is the memory limit unless given (a child leaves its
    caller a tighter one).

    Raises:
        SqlError: DuckDB refused or stopped it (from the iterator too).

    Examples:
        >>> con = locked({}, memory_limit_mb=64, threads=1)
        >>> schema, rows = batches(con, "select 1 as x", timeout=5, memory_limit_mb=64)
        >>> schema.names, sum(batch.num_rows for batch in rows)
        (['x'], 1)
    """
    done, fired = threading.Event(), threading.Event()

    def watch() -> None:
        if done.wait(timeout):
            return
        fired.set()
        while not done.wait(_INTERRUPT_EVERY_S):  # again and again: an interrupt between two stages is lost
            con.interrupt()

    watcher = threading.Thread(target=watch, name="sql-deadline", daemon=True)
    watcher.start()

    def fail(error: BaseException) -> SqlError:
        """DuckDB's error (or pyarrow's, for one raised while the result streams) as a ``SqlError``."""
        line = first_line(error)
        if fired.is_set() or isinstance(error, duckdb.InterruptException) or line.startswith("INTERRUPT Error"):
            return timeout_error(timeout)
        if isinstance(error, duckdb.OutOfMemoryException) or line.startswith("Out of Memory Error"):
            return memory_error(memory_limit_mb, line)
        hint = f"the tables are {', '.join(SQL_TABLES)} (docs/sql.md); files cannot be read or written"
        return SqlError(line, hint=hint, reason="query")

    try:
        relation = con.sql(query)
        reader = relation.to_arrow_reader(BATCH_ROWS) if relation is not None else None
    except (duckdb.Error, OSError, pa.ArrowException) as error:
        done.set()
        raise fail(error) from None
    if reader is None:
        done.set()
        return pa.schema([]), iter(())

    def stream() -> Iterator[pa.RecordBatch]:
        size = 0
        try:
            for batch in reader:
                size += batch.nbytes
                if size > (result_limit_mb or memory_limit_mb) * 2**20:
                    raise result_error(memory_limit_mb)
                yield batch
        except (duckdb.Error, OSError, pa.ArrowException) as error:
            raise fail(error) from None
        finally:
            done.set()

    return reader.schema, stream()


def run_arrow(con: duckdb.DuckDBPyConnection, query: str, *, timeout: float, memory_limit_mb: int) -> pa.Table:
    """The whole result of a query (``batches``) as one Arrow table.

    Examples:
        >>> run_arrow(locked({}, memory_limit_mb=64, threads=1), "select 2 as y", timeout=5, memory_limit_mb=64)
        pyarrow.Table
        y: int32
        ----
        y: [[2]]
    """
    schema, stream = batches(con, query, timeout=timeout, memory_limit_mb=memory_limit_mb)
    return pa.Table.from_batches(list(stream), schema=schema)
