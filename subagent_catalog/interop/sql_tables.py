"""The tables ``sql`` offers, by name: how each comes from a corpus and from an archive.

``SQL_TABLES`` maps a table name to a ``SqlTable``: a function giving the
table as Arrow data (a Polars frame's ``to_arrow()``, zero-copy) for a
corpus or an archive, and optionally a way to read it straight from an
archive's Parquet files (a ``pyarrow.dataset`` DuckDB scans itself, with
projection and filter pushdown). A new table is one more entry; a function
that takes a ``Source`` and returns a ``pl.DataFrame`` (as the run
tables ``usage_by_model``, ``tool_calls`` and ``run_trees`` do) is enough:
``SQL_TABLES["name"] = SqlTable("...", frame=function)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from subagent_catalog.analysis.runs import tool_calls, usage_by_model
from subagent_catalog.analysis.trees import run_trees
from subagent_catalog.catalog import catalog
from subagent_catalog.frames.schemas import DESCRIPTOR_SCHEMA, EVENT_SCHEMA, PROBLEM_SCHEMA, SESSION_SCHEMA
from subagent_catalog.frames.source import Source
from subagent_catalog.store.layout import DATA_TEXT


@dataclass(frozen=True)
class SqlTable:
    """One table ``sql`` can query.

    Attributes:
        description: one line for the docs and the error hint.
        frame: the table from a corpus or an archive, as a Polars frame.
        archive_table: the archive table whose Parquet files hold it
            (read directly, the frame's columns only), when there is one.
        columns: those columns, in frame order.
    """

    description: str
    frame: Callable[[Source], pl.DataFrame]
    archive_table: str | None = None
    columns: tuple[str, ...] = ()


SQL_TABLES: dict[str, SqlTable] = {
    "sessions": SqlTable(
        "one row per session log (docs/frames.md)",
        lambda source: source.to_corpus().sessions,
        "sessions",
        tuple(SESSION_SCHEMA),
    ),
    "descriptors": SqlTable(
        "one row per subagent/descriptor event",
        lambda source: source.to_corpus().descriptors,
        "descriptors",
        tuple(DESCRIPTOR_SCHEMA),
    ),
    "problems": SqlTable(
        "one row per thing wrong", lambda source: source.to_corpus().problems, "problems", tuple(PROBLEM_SCHEMA)
    ),
    "events": SqlTable(
        "every event of every readable log", lambda source: source.to_corpus().events, "events", tuple(EVENT_SCHEMA)
    ),
    "catalog": SqlTable("every parent's children rows (catalog(...))", catalog),
    "usage_by_model": SqlTable(
        "tokens and cost per session and model, each log's own steps (usage_by_model(...))", usage_by_model
    ),
    "tool_calls": SqlTable(
        "one row per tool call of each log's own events, with its result (tool_calls(...))", tool_calls
    ),
    "run_trees": SqlTable("each session's subtree totals (run_trees(...))", run_trees),
}
"""The tables ``sql`` registers when a query names them (add entries here)."""


def arrow_table(source: Source, name: str) -> tuple[Any, tuple[str, ...]]:
    """The data DuckDB scans for table ``name`` and the columns to show (empty: all).

    An archive's tables are its Parquet files (a dataset); a corpus's are
    its frames as Arrow (zero-copy); an archive without an events table
    falls back to its corpus root's events.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> data, columns = arrow_table(read_corpus(tempfile.mkdtemp()), "sessions")
        >>> data.num_rows, columns[:2]
        (0, ('list_order', 'session_id'))
    """
    table = SQL_TABLES[name]
    if table.archive_table is not None:
        dataset = source.dataset(table.archive_table)
        if dataset is not None:
            return dataset, table.columns
    return table.frame(source).to_arrow(), table.columns


def select_list(data: Any, columns: tuple[str, ...]) -> str:
    """The SQL select list of a table's view: its columns (all when empty), quoted.

    An archive's events files (format 6) keep the text of some types in
    ``data_text``: the view's ``text`` is both, as the events frame's is.

    Examples:
        >>> import pyarrow as pa
        >>> select_list(pa.table({"text": ["a"], "data_text": [None]}), ("text",))
        'coalesce("text", "data_text") AS "text"'
        >>> select_list(pa.table({"a": [1]}), ())
        '*'
    """
    if not columns:
        return "*"
    split = DATA_TEXT in data.schema.names
    return ", ".join(
        f'coalesce("text", "{DATA_TEXT}") AS "text"' if split and column == "text" else f'"{column}"'
        for column in columns
    )
