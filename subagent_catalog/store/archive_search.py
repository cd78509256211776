"""An archive's events files read for a search: the pattern pushed into the Parquet reader, files in order.

``Archive.event_frames`` (the ``Source`` interface's) is this module's
``event_frames``: ``analysis.search`` hands it the columns and the filters,
and matches the rows it yields, whatever source they come from.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, Protocol

import polars as pl

from subagent_catalog.frames.schemas import EventFrames
from subagent_catalog.read.event_text import TEXT_TYPES
from subagent_catalog.store.layout import DATA_TEXT, ArchiveError, Table, joined_text
from subagent_catalog.store.location import Location, iter_parquet


class EventFiles(Protocol):
    """What a search reads of an archive (``store.archive.Archive`` is one; it imports this module)."""

    path: str
    manifest: dict[str, Any]

    @property
    def location(self) -> Location:
        """Where the archive lives."""

    @property
    def has_events(self) -> bool:
        """Whether it holds the events table."""

    @property
    def splits_text(self) -> bool:
        """Whether its events files keep some text in ``data_text``."""

    def first_orders(self, table: Table) -> dict[str, int | None]:
        """Each file's smallest ``list_order``."""

    def reading(self, *tables: Table) -> AbstractContextManager[None]:
        """The guard its reads run in."""


ARCHIVE_BATCH_ROWS = 32_768
"""Rows of an archive's events file read at a time with a limit: a search holds one batch, and its hits, in memory."""

ARCHIVE_SCAN_FILES = 4
"""Events files scanned together without a limit: a search holds their matching events in memory."""


def event_frames(
    archive: EventFiles,
    columns: Sequence[str],
    *,
    types: Sequence[str],
    pushed: pl.Expr,
    where: pl.Expr,
    in_order: bool,
) -> EventFrames:
    """The rows of the events files that pass ``pushed`` (read by the Parquet reader) and then ``where``.

    Without ``in_order``, ``ARCHIVE_SCAN_FILES`` files are scanned together
    (Polars reads them in parallel) with only ``pushed`` in the reader: the
    columns it reads alone are decompressed for every row, the others for the
    rows it keeps. With ``in_order`` (a search with a limit), the files are
    read in the order of their first ``list_order`` (their footers'
    statistics), ``ARCHIVE_BATCH_ROWS`` rows at a time, and each frame comes
    with the smallest ``list_order`` a later frame may hold. The text of
    types outside ``TEXT_TYPES`` (``data_text``, format 6) is read only when
    ``types`` names one of them.

    Raises:
        ArchiveError: the archive holds no events table, or a file is damaged.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.store.archive import open_archive
        >>> from subagent_catalog.store.export import export_archive
        >>> out = tempfile.mkdtemp()
        >>> _ = export_archive("data/sample", out, jobs=1, events=True)
        >>> frames = event_frames(open_archive(out), ["list_order", "type"], types=["user/message"],
        ...                       pushed=pl.col("type") == "user/message", where=pl.lit(True), in_order=True)
        >>> first, _ = next(iter(frames))
        >>> first["type"].unique().to_list()
        ['user/message']
    """
    if not archive.has_events:
        raise ArchiveError(
            f"archive {archive.path!r} holds no events table, which search_events reads",
            hint="re-export with export_archive(root, out, events=True), or search read_corpus(root)",
        )
    names = list(archive.manifest["tables"]["events"]["files"])
    data = archive.splits_text and not set(types) <= set(TEXT_TYPES)
    wanted = list(columns)
    if not in_order:

        def scan(group: list[str]) -> pl.DataFrame:
            scan = archive.location.scan(group)
            if data:
                scan = joined_text(scan)
            return scan.filter(pushed).select(wanted).collect().filter(where)

        groups = [names[first : first + ARCHIVE_SCAN_FILES] for first in range(0, len(names), ARCHIVE_SCAN_FILES)]
        # One group is scanned ahead while the caller matches the last: Polars releases the GIL, and each
        # stage's serial parts overlap the other's parallel ones. Memory holds two groups' matching events.
        with archive.reading("events"), ThreadPoolExecutor(max_workers=1) as ahead:  # errors name the file
            pending = ahead.submit(scan, groups[0]) if groups else None
            for index in range(len(groups)):
                assert pending is not None  # one scan is pending while groups remain
                found = pending.result()
                pending = ahead.submit(scan, groups[index + 1]) if index + 1 < len(groups) else None
                yield found, None
        return
    read = [*wanted, *([DATA_TEXT] if data else [])]
    with archive.reading("events"):  # files checked against the manifest; any read error names the file
        bounds: list[int | None] = []  # each file's smallest list_order: its footer's statistics, else its column
        for name in names:
            smallest = archive.first_orders("events")[name]
            if smallest is None:
                import pyarrow.compute as pc  # only when a footer lacks statistics: 0.1 s saved on a first search

                for batch in iter_parquet(
                    archive.location, [name], columns=["list_order"], batch_rows=ARCHIVE_BATCH_ROWS
                ):
                    value = pc.min(batch.column(0)).as_py()
                    if value is not None and (smallest is None or value < smallest):
                        smallest = int(value)
            bounds.append(smallest)
        order = sorted(range(len(names)), key=lambda i: (bounds[i] is None, bounds[i] or 0, i))
        names, bounds = [names[i] for i in order], [bounds[i] for i in order]
        for index, name in enumerate(names):
            later = bounds[index + 1] if index + 1 < len(bounds) else None
            own = bounds[index]
            batches = iter(iter_parquet(archive.location, [name], columns=read, batch_rows=ARCHIVE_BATCH_ROWS))
            batch = next(batches, None)
            while batch is not None:
                following = next(batches, None)
                table = pl.from_arrow(batch)
                assert isinstance(table, pl.DataFrame)  # a record batch is a frame, never a series
                rows = joined_text(table.lazy()) if data else table.lazy()
                frame = rows.filter(pushed & where).collect()
                # The rest of this file may hold any list order from the file's smallest on.
                yield frame, later if following is None else own if own is not None else -1
                batch = following
