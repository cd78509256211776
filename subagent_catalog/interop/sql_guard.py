"""What ``sql`` lets through: one read-only statement, checked by DuckDB's own parser before anything runs.

A query is parsed (``extract_statements``, never bound: no table function
runs, no file is opened) on the sandboxed connection. It must be one
statement of type ``SELECT`` (which covers ``WITH``, ``FROM``-first,
``VALUES``, ``TABLE``, ``DESCRIBE``, ``SUMMARIZE``, ``SHOW``, ``PIVOT`` and
``UNPIVOT`` inside a query) or ``EXPLAIN`` (``EXPLAIN ANALYZE`` included);
every other type (``COPY``, ``EXPORT``, ``ATTACH``, ``INSTALL``/``LOAD``,
``PRAGMA``, ``SET``/``RESET``, ``CALL``, ``CREATE``...) is refused with one
line naming it. The tables a query names are read from the parse tree
(``json_serialize_sql``, again without binding), so only those are made.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import orjson

from subagent_catalog.interop.errors import SqlError
from subagent_catalog.interop.sql_engine import first_line

MAX_QUERY_CHARS = 100_000
"""The longest query accepted (DuckDB's parser takes seconds on a deeply nested query of a million characters)."""

MAX_NESTING = 1000
"""The deepest nesting of brackets accepted (DuckDB's parser took 13 s and 1.8 GB over 20,000 with an error inside)."""


READ_ONLY = ("SELECT", "EXPLAIN")
"""The statement types that run (DuckDB's ``StatementType`` names)."""

_READ_ONLY_TEXT = "SELECT, WITH, FROM, VALUES, TABLE, DESCRIBE, SUMMARIZE, SHOW, EXPLAIN"
_SETTINGS_HINT = (
    "the settings are fixed; use sql()'s memory_limit_mb, threads and timeout (--memory-limit, --threads, --timeout)"
)
_WRITE_HINT = "to write a result, give `subagent-catalog sql` -o FILE (--format csv|json|parquet) or write the frame"
_HINTS: dict[str, str] = {
    "COPY": _WRITE_HINT,
    "COPY_DATABASE": "files cannot be read or written",
    "EXPORT": _WRITE_HINT,
    "ATTACH": "no other database can be attached: the query reads only the tables (docs/sql.md)",
    "DETACH": "no other database can be attached: the query reads only the tables (docs/sql.md)",
    "LOAD": "extensions cannot be installed or loaded",
    "EXTENSION": "extensions cannot be installed or loaded",
    "PRAGMA": _SETTINGS_HINT,
    "SET": _SETTINGS_HINT,
    "VARIABLE_SET": _SETTINGS_HINT,
    "MULTI": "a PIVOT without its values creates a type first: name them (PIVOT t ON c IN ('a', 'b') USING ...)",
}
_DEFAULT_HINT = "the tables are read-only; use a single SELECT (or WITH ... SELECT) query"


def checked_statement(con: duckdb.DuckDBPyConnection, query: str) -> Any:
    """The one read-only statement ``query`` holds, parsed by DuckDB (never bound); else a ``SqlError``.

    Raises:
        SqlError: the query is not text, too long, not encodable as UTF-8,
            does not parse, holds no statement or several, or a statement
            of a refused type (``reason`` says which).

    Examples:
        >>> con = duckdb.connect()
        >>> checked_statement(con, "select 1").type.name
        'SELECT'
        >>> checked_statement(con, "install httpfs")
        Traceback (most recent call last):
        ...
        subagent_catalog.interop.errors.SqlError: LOAD statements are refused: ... (hint: extensions cannot be ...)
    """
    if not isinstance(query, str):
        raise SqlError(f"the query is a {type(query).__name__}, not text", hint="pass the SQL as a str", reason="query")
    if len(query) > MAX_QUERY_CHARS:
        raise SqlError(
            f"the query is {len(query):,} characters long; at most {MAX_QUERY_CHARS:,} are accepted",
            hint="shorten it (a long IN list can be a join with a VALUES table)",
            reason="too-long",
        )
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as error:
        raise SqlError(
            f"the query is not valid UTF-8 (character {error.start + 1} cannot be encoded)",
            hint="pass the query as UTF-8 text",
            reason="encoding",
        ) from None
    if "\x00" in query:
        raise SqlError("the query holds a NUL character", hint="remove it", reason="syntax")
    depth = nesting(query)
    if depth > MAX_NESTING:
        raise SqlError(
            f"the query nests {depth:,} brackets deep; at most {MAX_NESTING:,} are accepted",
            hint="flatten it (DuckDB refuses expressions deeper than 1,000 anyway)",
            reason="too-long",
        )
    try:
        statements = con.extract_statements(query)
        kinds = [statement.type.name for statement in statements]
    except duckdb.Error as error:
        raise SqlError(first_line(error), hint="check the SQL syntax (DuckDB's dialect)", reason="syntax") from None
    except ValueError as error:  # a statement type the Python client has no name for (UPDATE EXTENSIONS)
        raise SqlError(
            f"a statement of an unknown type ({first_line(error)}) is refused", hint=_DEFAULT_HINT, reason="refused"
        ) from None
    if not statements:
        raise SqlError("the query holds no statement", hint="give one SELECT query", reason="syntax")
    if len(statements) > 1:
        raise SqlError(
            f"the query holds {len(statements)} statements; sql runs exactly one",
            hint="run them one at a time (a WITH clause can chain steps)",
            reason="refused",
        )
    (statement,), (kind,) = statements, kinds
    if kind not in READ_ONLY:
        refused = f"{kind.replace('_', ' ')} statements are refused: sql runs one read-only query ({_READ_ONLY_TEXT})"
        raise SqlError(refused, hint=_HINTS.get(kind, _DEFAULT_HINT), reason="refused")
    return statement


def nesting(query: str) -> int:
    r"""How deep the query's brackets (``(``, ``[``, ``{``) nest, outside strings, quoted names and comments.

    Examples:
        >>> nesting("select ((1)), '((((' -- ((((\n"), nesting("select [[{'a': (1)}]]")
        (2, 4)
    """
    depth = deepest = 0
    index, size = 0, len(query)
    while index < size:
        char = query[index]
        if char in "'\"":
            end = query.find(char, index + 1)
            while end != -1 and query[end + 1 : end + 2] == char:  # a doubled quote is one quote
                end = query.find(char, end + 2)
            index = size if end == -1 else end + 1
            continue
        if query.startswith("--", index):
            end = query.find("\n", index)
            index = size if end == -1 else end + 1
            continue
        if query.startswith("/*", index):
            end = query.find("*/", index + 2)
            index = size if end == -1 else end + 2
            continue
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth = max(depth - 1, 0)
        index += 1
    return deepest


def _strings_under(value: Any, key: str) -> Iterator[str]:
    """Every string value of ``key`` in a parsed JSON tree (walked without recursion: a deep query is fine)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found = item.get(key)
            if isinstance(found, str):
                yield found
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def named_tables(con: duckdb.DuckDBPyConnection, statement: Any, candidates: set[str]) -> set[str]:
    """Which of ``candidates`` (lower-case table names) the statement names, from its parse tree, never bound.

    A ``SELECT`` is serialised by DuckDB (``json_serialize_sql``); an
    ``EXPLAIN``, or a tree too deep to serialise, falls back to the query's
    tokens (a word equal to a table name counts: never fewer tables than
    the query reads).

    Examples:
        >>> con = duckdb.connect()
        >>> names = {"sessions", "events", "catalog"}
        >>> sorted(named_tables(con, con.extract_statements("select count(*) as events from Sessions")[0], names))
        ['sessions']
        >>> sorted(named_tables(con, con.extract_statements("explain select * from catalog")[0], names))
        ['catalog']
    """
    text = statement.query
    if statement.type.name == "SELECT":
        try:
            serialised = con.execute("select json_serialize_sql(?::varchar)", [text]).fetchall()[0]
            tree = orjson.loads(serialised[0]) if serialised else None
        except (duckdb.Error, orjson.JSONDecodeError):
            tree = None
        if isinstance(tree, dict) and tree.get("error") is False:
            return {name.lower() for name in _strings_under(tree, "table_name")} & candidates
    words: set[str] = set()
    for start, end in _token_spans(text):
        word = text[start:end].strip().strip('"').lower()
        if word in candidates:
            words.add(word)
    return words


def _token_spans(text: str) -> Iterator[tuple[int, int]]:
    tokens = duckdb.tokenize(text)
    for index, (start, _kind) in enumerate(tokens):
        end = tokens[index + 1][0] if index + 1 < len(tokens) else len(text)
        yield start, end
