"""``sql``: SQL over a corpus's frames or an archive's Parquet, with DuckDB, in a sandbox.

Every call opens its own in-memory DuckDB connection (never DuckDB's shared
default one) with file-system access, extension installs and autoloading,
persistent secrets and Python replacement scans switched off, no temporary
directory (nothing spills to disk), a memory limit and a thread count
(``sql_engine``). The query is parsed, never bound, before anything runs
(``sql_guard``): one read-only statement, or a one-line refusal. The
tables it names (``sql_tables.SQL_TABLES``) are made here and registered
as views over Arrow data (a corpus's frames, an archive's Parquet through
``pyarrow.dataset``), then the configuration is locked. On Linux the query
then runs in a forked child (``sql_process``) that is killed at its
deadline or when its memory passes the bound; elsewhere it runs here,
interrupted at its deadline. Its result is bounded by the memory limit. So
a query reads only the registered tables, can neither read nor write a
file nor reach the network, and ends in time.
"""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl
import pyarrow as pa

from subagent_catalog.catalog.source import source_reads
from subagent_catalog.frames.source import Source
from subagent_catalog.interop import sql_process
from subagent_catalog.interop.errors import SqlError
from subagent_catalog.interop.sql_engine import (
    DUCKDB_CONFIG,
    MEMORY_LIMIT_MB,
    THREADS,
    TIMEOUT_S,
    check_limits,
    first_line,
    locked,
    run_arrow,
    sandbox,
)
from subagent_catalog.interop.sql_guard import checked_statement, named_tables
from subagent_catalog.interop.sql_tables import SQL_TABLES, arrow_table
from subagent_catalog.store.layout import ArchiveError

__all__ = [
    "DUCKDB_CONFIG",
    "MEMORY_LIMIT_MB",
    "THREADS",
    "TIMEOUT_S",
    "connect",
    "query_tables",
    "sandbox",
    "sql",
    "sql_tables_of",
]

ISOLATE = True
"""Run queries in a child process where ``sql_process.available()`` (switch off only to compare)."""


@source_reads
def sql_tables_of(source: Source, query: str) -> dict[str, tuple[Any, tuple[str, ...]]]:
    """Check ``query`` (``sql_guard``) and make the tables it names: name -> (Arrow data, the view's columns).

    Raises:
        SqlError: the query is refused before it runs.
        CatalogError: it names ``catalog`` and the root's listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> sorted(sql_tables_of(read_corpus(tempfile.mkdtemp()), "select * from sessions join problems using (path)"))
        ['problems', 'sessions']
    """
    names = query_tables(query)
    return {name: arrow_table(source, name) for name in sorted(names)}


def query_tables(query: str) -> set[str]:
    """Check ``query`` (``sql_guard``: one read-only statement) and give the tables it names; no table is made.

    The parse runs here: its cost is bounded by the length and nesting
    limits (the worst measured within them: 1.6 s and 190 MB).

    Raises:
        SqlError: the query is refused.

    Examples:
        >>> sorted(query_tables("select * from events join sessions using (session_id)"))
        ['events', 'sessions']
    """
    parser = sandbox(memory_limit_mb=64, threads=1)
    try:
        return named_tables(parser, checked_statement(parser, query), set(SQL_TABLES))
    finally:
        parser.close()


@source_reads
def connect(source: Source, query: str, *, memory_limit_mb: int = MEMORY_LIMIT_MB, threads: int = THREADS) -> Any:
    """The locked sandbox connection for ``query`` in this process, with the tables it names registered (as views).

    Raises:
        SqlError: the query is refused before it runs (``sql_guard.checked_statement``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> connect(read_corpus(tempfile.mkdtemp()), "select count(*) from sessions").sql("show tables").fetchall()
        [('_data_sessions',), ('sessions',)]
    """
    return locked(sql_tables_of(source, query), memory_limit_mb=memory_limit_mb, threads=threads)


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


def _frame(table: pa.Table) -> pl.DataFrame:
    """The result as Polars: duplicate names made unique as DuckDB's ``.pl()`` does; a type it cannot hold refused."""
    table = table.rename_columns(_unique(table.column_names))
    for field in table.schema:
        metadata = field.metadata or {}
        extension = metadata.get(b"ARROW:extension:name")  # an extension type that came through IPC
        if isinstance(field.type, pa.BaseExtensionType) or extension is not None:  # DuckDB's BIGNUM: opaque bytes
            said = orjson.loads(metadata.get(b"ARROW:extension:metadata") or b"{}") if extension else {}
            kind = getattr(field.type, "type_name", None) or (said.get("type_name") if isinstance(said, dict) else None)
            kind = kind or str(extension or field.type)
            raise SqlError(
                f"the result's column {field.name!r} is of DuckDB's type {kind}, which Polars would hold as raw bytes",
                hint="cast that column, e.g. to text with ::VARCHAR",
                reason="result-type",
            )
    try:
        frame = pl.from_arrow(table, rechunk=False)
    except (pl.exceptions.PolarsError, pa.ArrowException) as error:
        types = ", ".join(f"{field.name} {field.type}" for field in table.schema)
        raise SqlError(
            f"the result has a column Polars cannot hold ({first_line(error)[:200]}; columns: {types[:300]})",
            hint="cast that column, e.g. to text with ::VARCHAR",
            reason="result-type",
        ) from None
    assert isinstance(frame, pl.DataFrame)
    return frame


@source_reads
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
            spills to disk), and the largest result accepted; on Linux the
            query's process is killed once it grows past
            ``sql_process.memory_bound_mb`` of it. The tables themselves
            (the frames, made before the query) are not counted.
        threads: DuckDB's threads.
        timeout: seconds the query may run (the tables it names are made
            first, outside this time); then it is stopped.

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
        ArchiveError: a part of the archive is damaged (it is named), or fails its checks.
        BoundError: a limit outside its range (``sql_engine.check_limits``; a ``ValueError``).

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
    check_limits(memory_limit_mb, threads, timeout)
    tables = sql_tables_of(source, query)
    try:
        if ISOLATE and sql_process.available():
            table = sql_process.run_isolated(
                tables, query, memory_limit_mb=memory_limit_mb, threads=threads, timeout=timeout
            )
        else:
            con = locked(tables, memory_limit_mb=memory_limit_mb, threads=threads)
            try:
                table = run_arrow(con, query, timeout=timeout, memory_limit_mb=memory_limit_mb)
            finally:
                con.close()
    except SqlError as error:
        # DuckDB reads an archive's tables itself and names the Arrow stream that failed ('_data_sessions'):
        # only then are the parts probed (a query DuckDB refused reads no part again), for the damaged part's error
        damaged = source.read_error(error) if "'_data_" in str(error.args[0] if error.args else "") else None
        if not isinstance(damaged, ArchiveError):
            raise
        raise damaged from None
    return _frame(table)
