"""``Source``: everything an analysis needs from its input, whatever the input is.

Every function, view and command that reads a corpus takes a ``Source``
and asks it only the questions below. Three classes implement it:

* ``frames.corpus.Corpus``, a corpus root read into memory (``read_corpus``;
  a window or a subset of one, ``analysis.window``, ``analysis.subset``);
* ``store.archive.Archive``, an opened Parquet archive (``open_archive``),
  read out of core: its tables are scans of its files;
* ``store.archive.ArchiveCorpus``, an archive's frames collected into
  memory (``Archive.to_corpus``; a window or a subset of one), whose
  events still come from the archive's files.

Whether rows are in memory, in Parquet files or in the logs under a root is
each implementation's business, decided once, inside it: ``analysis/``,
``views/`` and ``interop/`` never ask which kind of source they were given
(``tests/test_layout.py`` holds them to it). What a source answers:

* **frames**: ``to_corpus()`` (the ``sessions``, ``descriptors`` and
  ``problems`` frames in memory), ``frames(without=...)`` (the same without
  some ``sessions`` columns: a large archive is not collected whole),
  ``table(name, columns)`` (one frame, lazily, with the columns asked for)
  and ``collect(frame)`` (a lazy frame of the source's tables collected the
  way the source is best read: an archive's streamed);
* **events**: ``log_events(list_order)`` (one log's), ``stored_events()``
  (every log's as one lazy scan when the source stores them in files, else
  ``None``: read them log by log), ``event_frames(...)`` (a search's
  candidate rows pushed down into those files), ``log_sources()`` (the
  exact paths of the logs' raw text, for search and rules),
  ``events_available()`` and ``require_events(needed_for=...)``;
* **the listing input**: the source itself (the catalog functions take any
  source), its ``listing_error`` and ``listing_error_path``;
* **identity**: ``root``, ``log_root``, ``compression``, ``session_count()``,
  ``empty_reason()`` (why there is nothing to report on),
  ``protected_roots()`` (where nothing may be written), ``keeps_caches()``
  (whether a cache keyed on its logs may be kept);
* **the guard**: ``reading()`` (every read of the source's files runs inside
  it: a damaged file becomes one ``ArchiveError`` naming it) and
  ``read_error(error)`` (the same for an error another reader, DuckDB, met);
  ``dataset(table)`` (its files as a ``pyarrow.dataset`` for such a reader)
  and ``release_frames()`` (a view done with ``frames`` lets them go).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import polars as pl

from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.schemas import EventFrames, FrameName
from subagent_catalog.read.paths import Compression


@runtime_checkable
class Source(Protocol):
    """What every function that reads a corpus asks of its input (see the module's docstring)."""

    @property
    def root(self) -> str:
        """The corpus root as given (an archive's: the root it was exported from)."""

    @property
    def log_root(self) -> str:
        """The directory the logs are read from."""

    @property
    def compression(self) -> Compression:
        """The encoding the root was read as."""

    @property
    def listing_error(self) -> str | None:
        """Upstream's whole-listing failure message, if the root has one."""

    @property
    def listing_error_path(self) -> str | None:
        """The file behind ``listing_error``."""

    def to_corpus(self) -> Corpus:
        """The frames in memory (a corpus itself; an archive's collected once)."""

    def frames(self, *, without: Iterable[str] = ()) -> Corpus:
        """The frames without these ``sessions`` columns (a corpus: itself, whole)."""

    def table(self, name: FrameName, columns: Sequence[str] | None = None) -> pl.LazyFrame:
        """One frame lazily, with these columns (``None``: all it has)."""

    def collect(self, frame: pl.LazyFrame) -> pl.DataFrame:
        """Collect a lazy frame of this source's tables the way the source is best read."""

    def log_events(self, list_order: int) -> pl.DataFrame:
        """The events of one log, the one whose ``sessions`` row has this ``list_order``."""

    def stored_events(self) -> pl.LazyFrame | None:
        """Every log's events as one scan with ``list_order``, when they are stored in files (else ``None``)."""

    def event_frames(
        self, columns: Sequence[str], *, types: Sequence[str], pushed: pl.Expr, where: pl.Expr, in_order: bool
    ) -> EventFrames | None:
        """A search's candidate rows from the files the events are stored in (``None``: read the logs)."""

    def log_sources(self, *, sessions: Iterable[str] | None = None) -> list[str]:
        """The exact paths of the logs (skipped headers excluded), in list order."""

    def events_available(self) -> bool:
        """Whether events can be read (an archive without them: only while its root is here)."""

    def require_events(self, *, needed_for: str) -> None:
        """Raise when events cannot be read, naming what needed them."""

    def session_count(self) -> int:
        """How many session files the source holds."""

    def empty_reason(self) -> str | None:
        """Why the source holds nothing to report on, or ``None``."""

    def protected_roots(self) -> list[str]:
        """The local directories nothing may be written into."""

    def keeps_caches(self) -> bool:
        """Whether a cache keyed on the source's logs may be kept (not for an archive's: its logs may be gone)."""

    def reading(self) -> AbstractContextManager[None]:
        """The guard every read of the source's files runs in."""

    def read_error(self, error: BaseException) -> Exception | None:
        """The error ``reading`` would raise for one another reader met (``None``: no damaged file explains it)."""

    def dataset(self, name: str) -> Any | None:
        """The files of one table as a ``pyarrow.dataset`` (``None``: the source has no such files)."""

    def release_frames(self) -> None:
        """Let go of frames ``frames(without=...)`` keeps."""


_SOURCE_TYPES: set[type] = set()
"""The classes found to implement ``Source`` so far."""


def require_source(value: object) -> Source:
    """``value`` when it is a source, else a ``TypeError`` saying how to get one.

    Raises:
        TypeError: ``value`` is neither a corpus nor an archive.

    Examples:
        >>> require_source(3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: expected a Corpus or an Archive, not int (read one with read_corpus(root) or open_archive(path), ...)
    """
    if type(value) in _SOURCE_TYPES:
        return value  # type: ignore[return-value]
    if isinstance(value, Source):  # a protocol check asks for every member: about 50 µs, so once per class
        _SOURCE_TYPES.add(type(value))
        return value
    raise TypeError(
        f"expected a Corpus or an Archive, not {type(value).__name__} "
        "(read one with read_corpus(root) or open_archive(path), or open_source(location))"
    )
