"""Time windows: select the rows of sessions created in ``[since, until)``.

A window never changes what upstream lists. The listing (``catalog``,
``list_children``...) is always computed over the whole corpus; a window
then keeps the rows whose session was created inside it, so a child's
``has_children``, a diagnostic's cause and every count of the listing stay
exact. The key is the session header's ``createdAt`` (the ``created_at``
column of ``corpus.sessions`` and of the catalog row frames), compared as the
exact epoch milliseconds of ``created_at_ms`` when the frame has it (a
``createdAt`` past year 9999 has a null ``created_at`` but is after every
bound); the bounds are half-open (``since`` included, ``until`` excluded). A
session with no ``createdAt`` (a header that could not be read) is outside
every bounded window; ``Window.without_time`` counts them. With neither bound
a window keeps everything, nulls included.

``parse_instant`` reads the bounds as the command line writes them: ISO
dates and datetimes (naive means UTC) and spans back from now
(``"7 days"``, ``"36h"``).
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta

import polars as pl

from subagent_catalog.analysis.subset import keep_sessions
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.source import Source

__all__ = ["Window", "WindowError", "in_window", "parse_instant", "window_corpus"]

ACCEPTED = (
    "an ISO date or datetime (2026-11-01, 2026-11-01T12:00, 2026-11-01T12:00:00Z, 2026-11-01T12:00+02:00; "
    "naive means UTC), a span back from now ('7 days', '36 hours', '2 weeks', '90 minutes', '7d', '12h', "
    "'30s'), or 'now'"
)

_UNITS = {
    alias: unit
    for unit, aliases in (
        ("seconds", "s sec secs second"),
        ("minutes", "min mins minute"),
        ("hours", "h hr hrs hour"),
        ("days", "d day"),
        ("weeks", "w week"),
    )
    for alias in (unit, *aliases.split())
}
_HINT = f"use {ACCEPTED}"
_SPAN = re.compile(r"^(?P<count>\d+(?:\.\d+)?)\s*(?P<unit>[a-z]+)(?:\s+ago)?$")
_ISO_START = re.compile(r"^\d{4}-\d{2}-\d{2}")


class WindowError(SubagentCatalogError, ValueError):
    """A time bound that cannot be read, or a window whose ``since`` is not before its ``until``."""


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def parse_instant(text: str, *, now: datetime | None = None) -> datetime:
    """Read a time bound: an ISO date/datetime or a span back from ``now``.

    Args:
        text: ``2026-11-01``, ``2026-11-01T12:00`` (optionally with ``Z`` or
            an offset; naive means UTC), a span such as ``7 days``,
            ``36 hours``, ``2 weeks``, ``90 minutes``, ``7d``, ``12h``
            (``... ago`` is accepted too), or ``now``.
        now: the instant spans count back from (default: the current time;
            naive means UTC).

    Returns:
        An aware UTC datetime.

    Raises:
        WindowError: anything else (its hint lists the accepted forms).

    Examples:
        >>> from datetime import datetime, UTC
        >>> parse_instant("2026-11-01")
        datetime.datetime(2026, 11, 1, 0, 0, tzinfo=datetime.timezone.utc)
        >>> parse_instant("2026-11-01T12:00+02:00").hour
        10
        >>> parse_instant("7 days", now=datetime(2026, 11, 8, tzinfo=UTC)).date().isoformat()
        '2026-11-01'
        >>> parse_instant("12h", now=datetime(2026, 11, 8)).isoformat()
        '2026-11-07T12:00:00+00:00'
    """
    if not isinstance(text, str):
        raise WindowError(f"not a time: {text!r}", hint=_HINT)
    cleaned = text.strip()
    lowered = cleaned.lower()
    base = _utc(now) if now is not None else datetime.now(UTC)
    if lowered == "now":
        return base
    span = _SPAN.match(lowered)
    if span is not None:
        unit = _UNITS.get(span["unit"])
        if unit is None:
            raise WindowError(f"unknown time unit {span['unit']!r} in {text!r}", hint=_HINT)
        try:
            return base - timedelta(**{unit: float(span["count"])})
        except OverflowError as error:
            raise WindowError(f"span too large: {text!r}", hint=_HINT) from error
    if _ISO_START.match(cleaned):
        try:
            return _utc(datetime.fromisoformat(cleaned))
        except ValueError as error:
            raise WindowError(f"not a valid ISO date or datetime: {text!r} ({error})", hint=_HINT) from error
    raise WindowError(f"not a time: {text!r}", hint=_HINT)


@dataclasses.dataclass(frozen=True)
class Window:
    """A half-open time window ``[since, until)`` over session creation times.

    Attributes:
        since: the first instant inside (aware UTC), or ``None`` (no lower bound).
        until: the first instant after (aware UTC), or ``None`` (no upper bound).

    Examples:
        >>> from datetime import datetime, UTC
        >>> window = Window.of("2026-01-02", "2026-01-03")
        >>> window.contains_ms(int(datetime(2026, 1, 2, 12, tzinfo=UTC).timestamp() * 1000))
        True
        >>> window.contains_ms(None), Window().contains_ms(None)
        (False, True)
        >>> Window(datetime(2026, 1, 2)) == Window.of("2026-01-02")
        True
    """

    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _utc(value))  # naive means UTC, aware is converted
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise WindowError(
                f"empty window: since {self.since.isoformat()} is not before until {self.until.isoformat()}",
                hint="the window is [since, until): pass a since earlier than the until",
            )

    @classmethod
    def of(
        cls, since: datetime | str | None = None, until: datetime | str | None = None, *, now: datetime | None = None
    ) -> Window:
        """A window from bounds given as datetimes (naive means UTC) or ``parse_instant`` text.

        Raises:
            WindowError: a bound cannot be read, or ``since`` is not before ``until``.

        Examples:
            >>> Window.of("2026-01-01", None).since.isoformat()
            '2026-01-01T00:00:00+00:00'
            >>> Window.of("2026-01-02", "2026-01-01")
            Traceback (most recent call last):
            ...
            subagent_catalog.analysis.window.WindowError: empty window: ...
        """
        low, high = (b if b is None or isinstance(b, datetime) else parse_instant(b, now=now) for b in (since, until))
        return cls(low, high)

    @property
    def bounded(self) -> bool:
        """Whether the window has a bound at all (an unbounded window keeps every row).

        Examples:
            >>> Window().bounded, Window.of(until="2026-01-01").bounded
            (False, True)
        """
        return self.since is not None or self.until is not None

    def contains_ms(self, created_at_ms: int | None) -> bool:
        """Whether a creation time in epoch milliseconds is inside (``None``: only in an unbounded window).

        Examples:
            >>> second = "1970-01-01T00:00:01"
            >>> Window.of(second).contains_ms(999), Window.of(until=second).contains_ms(999)
            (False, True)
        """
        if not self.bounded:
            return True
        if created_at_ms is None:
            return False
        if self.since is not None and created_at_ms < _ms(self.since):
            return False
        return not (self.until is not None and created_at_ms >= _ms(self.until))

    def expr(self, column: str = "created_at", dtype: pl.DataType | None = None) -> pl.Expr:
        """The filter expression of the window on ``column`` (a ``Datetime`` or epoch-millisecond integer).

        Examples:
            >>> import polars as pl
            >>> frame = pl.DataFrame({"created_at_ms": [0, 1000, None]})
            >>> keep = Window.of(until="1970-01-01T00:00:01").expr("created_at_ms", pl.Int64())
            >>> frame.filter(keep)["created_at_ms"].to_list()
            [0]
        """
        keep = pl.lit(True)
        if self.since is not None:
            keep = keep & (pl.col(column) >= _literal(self.since, dtype))
        if self.until is not None:
            keep = keep & (pl.col(column) < _literal(self.until, dtype))
        return keep.fill_null(False) if self.bounded else keep

    def frame(self, frame: pl.DataFrame, column: str = "created_at") -> pl.DataFrame:
        """The rows of ``frame`` whose ``column`` is inside the window (nulls are outside a bounded window).

        ``created_at`` is read as ``created_at_ms`` when the frame has that column: the exact time, also
        for a ``createdAt`` no date names (after year 9999), whose ``created_at`` is null.

        Raises:
            WindowError: ``frame`` has no such column.

        Examples:
            >>> import polars as pl
            >>> from datetime import datetime
            >>> frame = pl.DataFrame({"created_at": [datetime(2026, 1, 1), datetime(2026, 1, 2), None]})
            >>> Window.of("2026-01-02").frame(frame).height, Window().frame(frame).height
            (1, 3)
        """
        if column not in frame.columns:
            raise WindowError(
                f"cannot window a frame without a {column!r} column",
                hint="window corpus.sessions or catalog row frames, or pass column=",
            )
        if not self.bounded:
            return frame
        column = _exact(frame, column)
        return frame.filter(self.expr(column, frame.schema[column]))

    def without_time(self, frame: pl.DataFrame, column: str = "created_at") -> int:
        """How many rows a bounded window leaves out because ``column`` is null (0 for an unbounded one).

        Examples:
            >>> import polars as pl
            >>> frame = pl.DataFrame({"created_at": [None, 5]})
            >>> Window.of("2026-01-01").without_time(frame), Window().without_time(frame)
            (1, 0)
        """
        return frame[_exact(frame, column)].null_count() if self.bounded and column in frame.columns else 0

    def corpus(self, corpus: Corpus) -> Corpus:
        """The corpus restricted to sessions created in the window (see ``window_corpus``).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> Window.of("2026-01-01").corpus(read_corpus(tempfile.mkdtemp())).sessions.height
            0
        """
        if not self.bounded:
            return corpus
        indexed = corpus.sessions.with_row_index("_subset_row")
        return keep_sessions(corpus, indexed, self.frame(indexed))

    def describe(self) -> str:
        """The window as one line of text (``2026-01-01 00:00:00 UTC → open``).

        Examples:
            >>> Window.of("2026-01-01").describe()
            '[2026-01-01 00:00:00 UTC, open)'
        """
        since = self.since.strftime("%Y-%m-%d %H:%M:%S UTC") if self.since else "open"
        until = self.until.strftime("%Y-%m-%d %H:%M:%S UTC") if self.until else "open"
        return f"[{since}, {until})"


def _exact(frame: pl.DataFrame, column: str) -> str:
    """The column a window compares: ``created_at_ms`` for ``created_at`` when the frame has it (exact in any year)."""
    return "created_at_ms" if column == "created_at" and "created_at_ms" in frame.columns else column


def _ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def _literal(value: datetime, dtype: pl.DataType | None) -> pl.Expr:
    """A bound as a literal comparable with a column of ``dtype`` (naive datetimes are UTC)."""
    if dtype is not None and dtype.is_integer():
        return pl.lit(_ms(value))
    if isinstance(dtype, pl.Datetime) and dtype.time_zone is None:
        return pl.lit(value.replace(tzinfo=None))
    if isinstance(dtype, pl.Datetime) and dtype.time_zone not in (None, "UTC"):
        return pl.lit(value).dt.convert_time_zone(dtype.time_zone)
    return pl.lit(value)


def in_window(
    frame: pl.DataFrame,
    *,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    column: str = "created_at",
) -> pl.DataFrame:
    """The rows of ``frame`` created in ``[since, until)``.

    Works on ``corpus.sessions`` and on the catalog row frames
    (``catalog``, ``catalog_descendants``, ``list_children``...), whose
    ``created_at`` is the child session's. Rows with a null ``created_at``
    are outside any bounded window; with neither bound the frame is returned
    as it is. Filter the listing after computing it over the whole corpus:
    ``in_window(catalog(corpus), since=...)``.

    Args:
        frame: a frame with ``column``.
        since: the first instant inside (a datetime, naive means UTC, or ``parse_instant`` text).
        until: the first instant after.
        column: a ``Datetime`` or epoch-millisecond integer column.

    Raises:
        WindowError: a bound cannot be read, ``since`` is not before ``until``, or the column is missing.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> import polars as pl
        >>> from datetime import datetime
        >>> days = pl.DataFrame({"created_at": [datetime(2026, 1, d) for d in (1, 2, 3)]})
        >>> in_window(days, since="2026-01-02", until="2026-01-03")["created_at"].dt.day().to_list()
        [2]
    """
    return Window.of(since, until).frame(frame, column)


def window_corpus(
    corpus: Source, *, since: datetime | str | None = None, until: datetime | str | None = None
) -> Corpus:
    """The corpus restricted to the sessions created in ``[since, until)``.

    ``sessions`` keeps the rows in the window; ``descriptors`` those of kept
    session files (by ``path``); ``problems`` drops those of session files
    outside the window and keeps the rest (corpus-level problems have no
    creation time); loaded ``events`` are restricted by ``session_id`` and
    unloaded ones are read for the kept logs only. ``listing_error`` stays:
    upstream's listing of the root still fails as a whole.

    Do not compute a listing from the result: the window would change what
    upstream lists. Compute it over the whole corpus and window its rows
    (``in_window(catalog(corpus), ...)``).

    Raises:
        WindowError: a bound cannot be read, or ``since`` is not before ``until``.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> window_corpus(read_corpus(tempfile.mkdtemp()), since="7 days").sessions.height
        0
    """
    corpus = corpus.to_corpus()  # a corpus, or an archive's frames
    return Window.of(since, until).corpus(corpus)
