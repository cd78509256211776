"""``sql``: SQL over a corpus's frames or an archive's Parquet, with DuckDB, in a sandbox.

Every call opens its own in-memory DuckDB connection (never DuckDB's shared
default one) with file-system access, extension installs and autoloading,
persistent secrets and Python replacement scans switched off, no temporary
directory (nothing spills to disk), a memory limit and a thread count. The
query is parsed, never bound, before anything runs (``sql_guard``): one
read-only statement, or a one-line refusal. The tables it names
(``sql_tables.SQL_TABLES``) are registered as views over Arrow data (a
corpus's frames, an archive's Parquet through ``pyarrow.dataset``), then
the configuration is locked and the query runs under a deadline (a timer
thread interrupts it) with its result bounded by the memory limit. So a
query reads only the registered tables, can neither read nor write a file
nor reach the network, and ends in time.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from subagent_catalog.interop.errors import SqlError
from subagent_catalog.interop.sql_guard import SqlErrorReason, checked_statement, named_tables
from subagent_catalog.interop.sql_tables import SQL_TABLES, arrow_table, select_list, table_names
from subagent_catalog.store.source import Source

MEMORY_LIMIT_MB = 2048
"""DuckDB's memory limit (MiB) for a query, and the bound of its result's size."""
THREADS = min(4, os.cpu_count() or 1)
"""DuckDB's threads for a query."""
TIMEOUT_S = 300.0
"""The seconds a query may run before it is interrupted."""
_BATCH_ROWS = 65_536
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


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _check_limits(memory_limit_mb: int, threads: int, timeout: float) -> None:
    if not isinstance(memory_limit_mb, int) or memory_limit_mb < 16:
        raise ValueError(f"memory_limit_mb must be an int of at least 16, not {memory_limit_mb!r}")
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an int of at least 1, not {threads!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")


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


def connect(
    source: Source, query: str, *, memory_limit_mb: int = MEMORY_LIMIT_MB, threads: int = THREADS
) -> duckdb.DuckDBPyConnection:
    """The locked sandbox connection for ``query``: checked, with the tables it names registered (as views).

    Raises:
        SqlError: the query is refused before it runs (``sql_guard.checked_statement``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> connect(read_corpus(tempfile.mkdtemp()), "select count(*) from sessions").sql("show tables").fetchall()
        [('_data_sessions',), ('sessions',)]
    """
    con = sandbox(memory_limit_mb=memory_limit_mb, threads=threads)
    try:
        statement = checked_statement(con, query)
        for name in sorted(named_tables(con, statement, set(SQL_TABLES))):
            data, columns = arrow_table(source, name)
            con.register(f"_data_{name}", data)
            con.execute(f'CREATE VIEW "{name}" AS SELECT {select_list(data, columns)} FROM "_data_{name}"')
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def _unique(names: list[str]) -> list[str]:
    """Column names made unique as DuckDB's own Polars conversion does (``a``, ``a_1``, ...; case-insensitive)."""
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        candidate, number = name, 1
        while candidate.lower() in seen:
            candidate, number = f"{name}_{number}", number + 1
        seen.add(candidate.lower())
        out.append(candidate)
    return out


def _error(error: BaseException, *, fired: bool, timeout: float, memory_limit_mb: int) -> SqlError:
    line = _first_line(error)
    reason: SqlErrorReason = "query"
    hint = f"the tables are {', '.join(table_names())} (docs/sql.md); files cannot be read or written"
    if fired or isinstance(error, duckdb.InterruptException) or line.startswith("INTERRUPT Error"):
        return SqlError(
            f"the query ran longer than {timeout:g} s and was interrupted",
            hint="narrow it (a WHERE, a LIMIT, no cross join) or allow more time (timeout=, --timeout)",
            reason="timeout",
        )
    if isinstance(error, duckdb.OutOfMemoryException) or line.startswith("Out of Memory Error"):
        reason = "memory"
        line = f"the query needs more than its memory limit of {memory_limit_mb} MiB ({line})"
        hint = "narrow it, or raise the limit (memory_limit_mb=, --memory-limit); nothing spills to disk"
    return SqlError(line, hint=hint, reason=reason)


def _run(con: duckdb.DuckDBPyConnection, query: str, *, timeout: float, memory_limit_mb: int) -> pl.DataFrame:
    """Run the checked query; interrupt it after ``timeout`` s; refuse a result larger than the memory limit."""
    done, fired = threading.Event(), threading.Event()

    def watch() -> None:
        if done.wait(timeout):
            return
        fired.set()
        while not done.wait(_INTERRUPT_EVERY_S):  # again and again: an interrupt between two stages is lost
            con.interrupt()

    watcher = threading.Thread(target=watch, name="sql-deadline", daemon=True)
    watcher.start()
    limit = memory_limit_mb * 2**20
    try:
        relation = con.sql(query)
        if relation is None:
            return pl.DataFrame()
        reader = relation.to_arrow_reader(_BATCH_ROWS)
        batches, size = [], 0
        for batch in reader:
            size += batch.nbytes
            if size > limit:
                raise SqlError(
                    f"the result is larger than the memory limit of {memory_limit_mb} MiB",
                    hint="select fewer rows or columns (a LIMIT, an aggregate), or raise the limit (--memory-limit)",
                    reason="result-too-large",
                )
            batches.append(batch)
        table = pa.Table.from_batches(batches, schema=reader.schema)
    except SqlError:
        raise
    except (duckdb.Error, OSError, pa.ArrowException) as error:
        raise _error(error, fired=fired.is_set(), timeout=timeout, memory_limit_mb=memory_limit_mb) from None
    finally:
        done.set()
        watcher.join()
    table = table.rename_columns(_unique(table.column_names))
    try:
        frame = pl.from_arrow(table, rechunk=False)
    except (pl.exceptions.PolarsError, pa.ArrowException) as error:
        types = ", ".join(f"{field.name} {field.type}" for field in table.schema)
        raise SqlError(
            f"the result has a column Polars cannot hold ({_first_line(error)[:200]}; columns: {types[:300]})",
            hint="cast that column, e.g. to text with ::VARCHAR",
            reason="result-type",
        ) from None
    assert isinstance(frame, pl.DataFrame)
    return frame


def sql(
    source: Source,
    query: str,
    *,
    memory_limit_mb: int = MEMORY_LIMIT_MB,
    threads: int = THREADS,
    timeout: float = TIMEOUT_S,
) -> pl.DataFrame:
    """Run one read-only SQL query (DuckDB's dialect) over a corpus or an archive; the result as a Polars frame.

    Tables: ``sessions``, ``descriptors``, ``problems``, ``events`` (the
    frames, docs/frames.md; over an archive its Parquet files, read directly),
    ``catalog`` (``catalog(source)``: every parent's children rows) and the
    run tables ``usage_by_model``, ``tool_calls``, ``run_trees``. The frames
    reach DuckDB as Arrow data without a copy. Call
    ``.to_pandas(types_mapper=pd.ArrowDtype)`` on the result for pandas.

    The query runs in a sandbox (docs/sql.md): one ``SELECT`` (``WITH``,
    ``FROM``, ``VALUES``, ``DESCRIBE``, ``SUMMARIZE``, ``SHOW``) or
    ``EXPLAIN`` statement; no file, extension, setting or network access.

    Args:
        source: a read corpus or an opened archive.
        query: one SQL query; it may name any of the tables.
        memory_limit_mb: DuckDB's memory limit for the query (MiB; nothing
            spills to disk), and the largest result accepted. The tables
            themselves (the frames, made before the query) are not counted.
        threads: DuckDB's threads.
        timeout: seconds the query may run (the tables it names are made
            first, outside this time); then it is interrupted.

    Returns:
        The query's rows (an empty frame for a query that returns none).
        Duplicate column names get ``_1``, ``_2``... as DuckDB's ``.pl()``
        gives them.

    Raises:
        SqlError: the query was refused or failed; ``reason`` says why
            (``syntax``, ``refused``, ``timeout``, ``memory``, ``query``...)
            and the hint what to do.
        CatalogError: the query names ``catalog`` and upstream's listing of
            this root fails as a whole.
        ValueError: a limit is not a positive number.

    Examples:
        >>> from subagent_catalog import read_corpus
        >>> corpus = read_corpus("data/sample")
        >>> sql(corpus, "select verdict, count(*) as logs from sessions group by verdict order by verdict").rows()
        [('failed', 2), ('ok', 22), ('skipped', 1), ('torn-tail', 1)]
        >>> sql(corpus, "select * from session")
        Traceback (most recent call last):
        ...
        subagent_catalog.interop.errors.SqlError: Catalog Error: Table with name session does not exist! (hint: ...)
    """
    _check_limits(memory_limit_mb, threads, timeout)
    con = connect(source, query, memory_limit_mb=memory_limit_mb, threads=threads)
    try:
        return _run(con, query, timeout=timeout, memory_limit_mb=memory_limit_mb)
    finally:
        con.close()
