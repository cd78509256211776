"""Table sources: what the catalog reads out of core (an opened archive, for instance).

A ``TableSource`` gives the corpus frames as Polars ``LazyFrame`` scans
(``scan("sessions")``...), the columns that restore each table's frame
order (``order_by``), and upstream's whole-listing failure. The catalog
computes over such a source with lazy queries that read only the columns
and rows a call needs, instead of collecting every table into a ``Corpus``.

The frames hold text as it can live in a UTF-8 column (``frame_text``: lone
surrogates become U+FFFD) and only *string* ``parentSession`` values in
``parent_session``; ``header_json`` holds the exact header. ``value_key``
gives every value the listing compares an exact key, and ``column_key`` the
same key from a column's text wherever the text is exact (it holds no
U+FFFD); the rare other rows are keyed from their parsed header.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec, Protocol, TypeGuard, TypeVar, runtime_checkable

import polars as pl

from subagent_catalog.frames.corpus import Corpus, raise_listing_error
from subagent_catalog.frames.source import require_source
from subagent_catalog.read.jsvalue import frame_text, is_number, js_number, json_text, parse_json

SourceTable = Literal["sessions", "descriptors", "problems"]


@runtime_checkable
class TableSource(Protocol):
    """The corpus frames as lazy scans (``store.archive.Archive`` implements it)."""

    @property
    def listing_error(self) -> str | None:
        """Upstream's whole-listing failure message, if the root has one."""

    @property
    def listing_error_path(self) -> str | None:
        """The file behind ``listing_error``."""

    def scan(self, table: SourceTable) -> pl.LazyFrame:
        """One frame as a LazyFrame (its rows in any order)."""

    def order_by(self, table: SourceTable) -> list[str]:
        """The columns whose ascending order is the frame's row order."""


P = ParamSpec("P")
R = TypeVar("R")


def source_reads(function: Callable[P, R]) -> Callable[P, R]:
    """Run a function over a source inside the source's ``reading`` guard: where sources enter.

    The one guard of an archive's reads (``store.archive.Archive.reading``):
    its files are checked against its manifest before a table is first
    scanned, and any reader error met while the function runs (Polars,
    Arrow, thrift, zstd, UTF-8, a Rust panic) becomes one ``ArchiveError``
    naming the damaged file; an error no file explains passes as it is. The
    source is the function's first argument; an in-memory corpus's guard does
    nothing, so the function need not know what it got. The catalog's own
    ``TableSource`` views run as they are; anything else is refused.

    Raises:
        TypeError: the first argument is no source (``frames.source.require_source``).

    Examples:
        >>> @source_reads
        ... def height(corpus: object) -> int:
        ...     return 1
        >>> height("data/sample")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: expected a Corpus or an Archive, not str (read one with ...)
    """

    @functools.wraps(function)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        source = args[0] if args else None
        try:
            checked = require_source(source)
        except TypeError:
            if is_table_source(source):  # the catalog's own view of frames
                return function(*args, **kwargs)
            raise
        with checked.reading():
            return function(*args, **kwargs)

    return guarded


def is_table_source(source: object) -> TypeGuard[TableSource]:
    """Whether the catalog reads ``source`` out of core (a ``TableSource``, not a ``Corpus``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> is_table_source(read_corpus(tempfile.mkdtemp())), is_table_source("x")
        (False, False)
    """
    return isinstance(source, TableSource) and not isinstance(source, Corpus)


@dataclass(frozen=True)
class CorpusTables:
    """An in-memory corpus's frames as a ``TableSource`` (no copy: each scan is the frame, lazily).

    The frames are in their own order already; descriptors and problems get a
    row number to say so.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> tables = CorpusTables(read_corpus("data/sample", cache=False))
        >>> tables.order_by("descriptors"), tables.scan("sessions").collect().height
        (['_row'], 26)
    """

    corpus: Corpus

    @property
    def listing_error(self) -> str | None:
        """Upstream's whole-listing failure message, if the root has one."""
        return self.corpus.listing_error

    @property
    def listing_error_path(self) -> str | None:
        """The file behind ``listing_error``."""
        return self.corpus.listing_error_path

    def scan(self, table: SourceTable) -> pl.LazyFrame:
        """One frame as a LazyFrame (descriptors and problems with their row number, ``_row``)."""
        frame: pl.LazyFrame = getattr(self.corpus, table).lazy()
        return frame if table == "sessions" else frame.with_row_index("_row")

    def order_by(self, table: SourceTable) -> list[str]:
        """``list_order`` for sessions, the row number for the other frames."""
        return ["list_order"] if table == "sessions" else ["_row"]


def require_listing(source: TableSource) -> None:
    """Raise upstream's whole-listing failure, as ``Corpus.require_listing`` does.

    Raises:
        CatalogError: code ``PERSISTENCE_LIST_FAILED``.

    Examples:
        >>> class Failing:
        ...     listing_error, listing_error_path = "boom", "/r/x.jsonl"
        >>> require_listing(Failing())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.CatalogError: boom (hint: ...)
    """
    raise_listing_error(source.listing_error, source.listing_error_path)


KEY_TEXT = 0
"""A string whose column text is exact (no U+FFFD): the key's text is the string."""
KEY_ESCAPED = 1
"""Any other string: the key's text is its JSON text (lone surrogates escaped, so distinct)."""
KEY_NUMBER = 2
KEY_BOOLEAN = 3
KEY_NULL = 4


def exact_text(text: str) -> bool:
    """Whether a column's text is the exact string (``frame_text`` maps only lone surrogates to U+FFFD).

    Examples:
        >>> exact_text("abc"), exact_text("a\\ufffdb")
        (True, False)
    """
    return "\ufffd" not in text


def value_key(value: Any) -> tuple[int, str] | None:
    """An exact key for a ``parentSession`` or id value, with ``map_key``'s equality (``None`` for objects).

    Numbers compare as JavaScript doubles (``1`` and ``1.0`` are one key,
    ``"1"`` another); objects and arrays never equal anything.

    Examples:
        >>> value_key("a"), value_key(1) == value_key(1.0), value_key("1") == value_key(1)
        ((0, 'a'), True, False)
        >>> value_key("x\\ud800"), value_key({}) is None
        ((1, '"x\\\\ud800"'), True)
    """
    if isinstance(value, str):
        exact = exact_text(value) and frame_text(value) == value
        return (KEY_TEXT, value) if exact else (KEY_ESCAPED, json_text(value))
    if isinstance(value, bool):
        return (KEY_BOOLEAN, "true" if value else "false")
    if is_number(value):
        return (KEY_NUMBER, repr(js_number(value) + 0.0))  # + 0.0: -0 and 0 are one key
    if value is None:
        return (KEY_NULL, "")
    return None


def key_value(kind: int, text: str) -> Any:
    """The value a ``value_key`` stands for (strings, numbers, booleans, null).

    Examples:
        >>> [key_value(*value_key(v)) for v in ("a", "x\\ud800", 2, True, None)]
        ['a', 'x\\ud800', 2.0, True, None]
    """
    if kind == KEY_TEXT:
        return text
    if kind == KEY_ESCAPED:
        return parse_json(text)
    if kind == KEY_NUMBER:
        return float(text)
    if kind == KEY_BOOLEAN:
        return text == "true"
    return None
