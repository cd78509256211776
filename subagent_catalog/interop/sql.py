"""``sql``: SQL over a corpus's frames or an archive's Parquet, with DuckDB.

DuckDB runs in memory with file-system access, extension installs and
autoloading switched off and the configuration locked: a query reads only
the tables registered here, and cannot read or write a file (``COPY ... TO``,
``read_csv``, ``ATTACH`` are refused), so it can never write into a corpus
or reach the network. Tables (``sql_tables.SQL_TABLES``) are registered only
when the query names them: ``events`` is read (or an archive's events table
scanned) only for a query that uses it.
"""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl

from subagent_catalog.interop.errors import SqlError
from subagent_catalog.interop.sql_tables import SQL_TABLES, arrow_table, select_list, table_names
from subagent_catalog.store.source import Source

DUCKDB_CONFIG: dict[str, Any] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}
"""The connection's settings: no files, no extension downloads, not changeable by a query."""


def _names(query: str) -> set[str]:
    try:
        return set(duckdb.get_table_names(query, qualified=False))
    except duckdb.Error as error:
        raise SqlError(_first_line(error), hint="check the SQL syntax (DuckDB's dialect)") from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def connect(source: Source, query: str) -> duckdb.DuckDBPyConnection:
    """A locked-down DuckDB connection with the tables ``query`` names registered (as views over the data).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> connect(read_corpus(tempfile.mkdtemp()), "select count(*) from sessions").sql("show tables").fetchall()
        [('_data_sessions',), ('sessions',)]
    """
    con = duckdb.connect(":memory:", config=DUCKDB_CONFIG)
    for name in sorted(_names(query) & set(SQL_TABLES)):
        data, columns = arrow_table(source, name)
        con.register(f"_data_{name}", data)
        con.execute(f'CREATE VIEW "{name}" AS SELECT {select_list(data, columns)} FROM "_data_{name}"')
    return con


def sql(source: Source, query: str) -> pl.DataFrame:
    """Run a SQL query (DuckDB's dialect) over a corpus or an archive; the result as a Polars frame.

    Tables: ``sessions``, ``descriptors``, ``problems``, ``events`` (the
    frames, docs/frames.md; over an archive its Parquet files, read directly)
    and ``catalog`` (``catalog(source)``: every parent's children rows).
    The frames reach DuckDB as Arrow data without a copy. Call
    ``.to_pandas(types_mapper=pd.ArrowDtype)`` on the result for pandas.

    Args:
        source: a read corpus or an opened archive.
        query: one SQL query; it may name any of the tables.

    Returns:
        The query's rows (an empty frame for a query that returns none).

    Raises:
        SqlError: DuckDB refused the query (syntax, an unknown table or
            column, reading or writing a file); the hint names the tables.
        CatalogError: the query names ``catalog`` and upstream's listing of
            this root fails as a whole.

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
    con = connect(source, query)
    try:
        result = con.sql(query)
        if result is None:
            return pl.DataFrame()
        frame: pl.DataFrame = result.pl()
        return frame
    except duckdb.Error as error:
        hint = f"the tables are {', '.join(table_names())} (docs/sql.md); files cannot be read or written"
        raise SqlError(_first_line(error), hint=hint) from None
    finally:
        con.close()
