"""``ArchiveCorpus``: an archive's frames collected into memory, its events still read from the archive's files.

``Archive.to_corpus`` (and ``Archive.frames``) collect one; a window or a
subset of one is one too (``windowed``). Where it answers the ``Source``
interface (``frames.source``) differently from a corpus read from its root,
it asks the archive it came from, through ``StoredArchive``: what it needs
of an ``store.archive.Archive`` (which imports this module, not the reverse).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

import polars as pl

from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.schemas import EVENT_SCHEMA, EventFrames
from subagent_catalog.read.paths import log_name
from subagent_catalog.store.layout import ArchiveError, Table


class StoredArchive(Protocol):
    """What an ``ArchiveCorpus`` asks of the archive it came from (``store.archive.Archive`` is one)."""

    @property
    def path(self) -> str:
        """The archive's directory or URL."""

    @property
    def log_root(self) -> str:
        """Where its corpus root's logs are read."""

    @property
    def has_events(self) -> bool:
        """Whether it holds the events table."""

    @property
    def events(self) -> pl.LazyFrame:
        """The events table, lazily."""

    def order_by(self, table: Table) -> list[str]:
        """A table's frame order."""

    def reading(self, *tables: Table) -> AbstractContextManager[None]:
        """The guard its reads run in."""

    def read_error(self, error: BaseException) -> Exception | None:
        """Its error for a damaged file another reader met."""

    def events_available(self) -> bool:
        """Whether its events can be read."""

    def require_events(self, *, needed_for: str) -> None:
        """Raise when its events cannot be read."""

    def protected_roots(self) -> list[str]:
        """Where nothing may be written."""

    def event_frames(
        self, columns: Sequence[str], *, types: Sequence[str], pushed: pl.Expr, where: pl.Expr, in_order: bool
    ) -> EventFrames | None:
        """A search's candidate rows from its events files."""


NO_EVENTS_HINT = "re-export with events (export --events, export_archive(..., events=True)), or read the corpus root"


class ArchiveCorpus(Corpus):
    """A ``Corpus`` collected from an archive; its events come from the archive when it holds them."""

    _archive: StoredArchive | None = None
    _window: tuple[StoredArchive, pl.Series] | None = None  # a window of an archive with events: its list orders
    _origin: StoredArchive | None = None  # a window of an archive: the archive it was cut from

    def windowed(self, source: Corpus, rows: pl.DataFrame, *, events_loaded: bool = False) -> None:
        """Read this window's events (``rows``: its sessions) from the events table behind ``source``.

        A window's copy (``dataclasses.replace``) is not the archive's own
        corpus: searches and listings of it must not scan the whole archive,
        so it holds no ``_archive``; its events alone come from the archive's
        events table, its logs' rows only (a window of a window too); what it
        lacks of a read of the logs is read from its ``origin``.
        """
        if not isinstance(source, ArchiveCorpus):
            return
        archive = source._archive if source._archive is not None else source._origin
        self._origin = archive
        if archive is not None and archive.has_events and not events_loaded:
            self._window = (archive, rows["list_order"])

    @property
    def origin(self) -> StoredArchive | None:
        """The archive these frames come from: the archive's own corpus's, or the one a window was cut from."""
        return self._archive if self._archive is not None else self._origin

    # -- the ``Source`` interface (frames.source), where an archive's frames differ from a corpus's

    def _event_table(self) -> StoredArchive | None:
        """The archive whose events table holds these frames' events: a window's, or the own archive's."""
        own = self._archive if self._archive is not None and self._archive.has_events else None
        return self._window[0] if self._window is not None else own

    def stored_events(self) -> pl.LazyFrame | None:
        """The events of these frames' logs in the archive's events table, lazily (``None``: read from the root)."""
        table = self._event_table()
        return None if table is None else self._stored_in(table)

    def _stored_in(self, table: StoredArchive) -> pl.LazyFrame:
        """``table``'s events of these frames' logs, in frame order (a window's: its logs' rows only)."""
        scan = table.events.sort(table.order_by("events"), maintain_order=True)
        return scan.filter(pl.col("list_order").is_in(self._window[1].implode())) if self._window is not None else scan

    def event_frames(
        self, columns: Sequence[str], *, types: Sequence[str], pushed: pl.Expr, where: pl.Expr, in_order: bool
    ) -> EventFrames | None:
        """A search's candidate rows from the archive's files, unless the events are loaded or read from the root.

        A window's frames are searched in their own logs while the root is here (a narrow window's search
        must not scan the whole archive), else in the archive's files, its logs' rows only.
        """
        if self._events is not None:
            return None
        if self._window is not None:
            if os.path.isdir(self.log_root):
                return None
            table, orders = self._window
            mine = where & pl.col("list_order").is_in(orders.implode())
            return table.event_frames(columns, types=types, pushed=pushed, where=mine, in_order=in_order)
        if self._archive is None:
            return None
        return self._archive.event_frames(columns, types=types, pushed=pushed, where=where, in_order=in_order)

    def events_available(self) -> bool:
        """Whether events can be read: from the archive's events table, or its corpus root while that is here."""
        return self.origin is None or self.origin.events_available()

    def require_events(self, *, needed_for: str) -> None:
        """Raise when the archive holds no events table and its corpus root is not here.

        Raises:
            ArchiveError: naming the archive and what needed the events.
        """
        if self.origin is not None:
            self.origin.require_events(needed_for=needed_for)

    def protected_roots(self) -> list[str]:
        """The archive's directory and its recorded corpus root (a window's: those of the archive it came from)."""
        return super().protected_roots() if self.origin is None else self.origin.protected_roots()

    def keeps_caches(self) -> bool:
        """No: the logs an archive's frames name may not be here (nor be what was exported)."""
        return False

    def reading(self) -> AbstractContextManager[None]:
        """The guard of the archive these frames come from: their events are read from its files."""
        return nullcontext() if self.origin is None else self.origin.reading()

    def read_error(self, error: BaseException) -> Exception | None:
        """The archive's error for a damaged file another reader met (``Archive.read_error``)."""
        return None if self.origin is None else self.origin.read_error(error)

    def _rebase(self, there: str) -> None:
        """Read the logs under ``there`` (the archive's ``log_root``), not under the relative root recorded.

        The sessions rows hold each log's path as the export read it, under
        the root as given (``data/sample/p/s/session.jsonl``); from another
        working directory those paths are read under ``root_abs`` instead
        (through ``_sources``; the frames, and so every output, keep them).
        """
        root = self.root
        if there == root or "path_bytes" not in self.sessions.columns:
            return
        self._log_root = there
        prefix = os.path.join(root, "")
        sources: list[bytes | None] = []
        for raw, path in self.sessions.select("path_bytes", "path").iter_rows():
            source = os.fsdecode(raw) if raw is not None else path
            inside = isinstance(source, str) and source.startswith(prefix)
            sources.append(os.fsencode(os.path.join(there, source[len(prefix) :])) if inside else None)
        self._sources = pl.Series("source", sources, dtype=pl.Binary)

    @property
    def events(self) -> pl.DataFrame:
        """Every event of every readable log (from the archive, or re-read from the root)."""
        table = self._event_table()
        if self._events is None and table is not None:
            with table.reading("events"):
                self._events = self._stored_in(table).select(list(EVENT_SCHEMA)).collect()
        self._require_root()
        return super().events

    def _require_root(self) -> None:
        """Raise when the events must be read from the corpus root and it is not here."""
        if self._events is None and self._archive is not None and not os.path.isdir(self.log_root):
            raise ArchiveError(
                f"the archive {self._archive.path!r} holds no events table and its corpus root {self.log_root!r} "
                "is not here",
                hint="re-export with events (export --events, events=True), or open the archive where the root is",
            )

    def log_events(self, list_order: int) -> pl.DataFrame:
        """The events of one log (from the archive's events table when it has one, else from the root).

        Raises:
            ArchiveError: no events table and the corpus root is not here.
        """
        table = self._event_table()
        if table is not None and self._events is None:
            with table.reading("events"):
                frame = (
                    table.events.filter(pl.col("list_order") == list_order)
                    .sort("event_index")
                    .select(list(EVENT_SCHEMA))
                    .collect()
                )
            return frame.cast(pl.Schema(EVENT_SCHEMA))
        self._require_root()
        rows = self.sessions.with_row_index("_row").filter(pl.col("list_order") == list_order)
        for row, raw, path in rows.select("_row", "path_bytes", "path").iter_rows():
            if self._sources is not None and self._sources[row] is not None:
                raw = self._sources[row]
            self._check_path(os.fsdecode(raw) if raw is not None else path)
        return super().log_events(list_order)

    def log_sources(self, *, sessions: Iterable[str] | None = None) -> list[str]:
        """Exact paths of the logs to read, each checked to lie inside the archive's corpus root.

        Raises:
            ArchiveError: a sessions row names a path outside the root (a tampered archive).
        """
        paths = super().log_sources(sessions=sessions)
        for path in paths:
            self._check_path(path)
        return paths

    def _check_path(self, path: str) -> None:
        """Archive paths are data: a log is read only from inside the corpus root the manifest records."""
        root = os.path.abspath(self.log_root)
        full = os.path.abspath(path)
        name = log_name(self.compression)
        if os.path.basename(full) != name or os.path.commonpath([root, full]) != root or full == root:
            raise ArchiveError(
                f"the archive names the log {path!r}, which is not a {name} inside its corpus root {self.root!r}",
                hint="the archive's sessions table was edited: re-export it from the corpus",
            )
