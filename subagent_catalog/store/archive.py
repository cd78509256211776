"""Archives: a corpus's derived frames as a partitioned Parquet dataset.

``export_archive`` reads a session root once (here, or sharded across a Dask cluster, see
``subagent_catalog.store.distributed``) and writes the ``sessions``, ``descriptors``, ``problems`` and
optionally ``events`` frames as Parquet files partitioned by project directory, plus ``manifest.json``.
``open_archive`` gives them back as Polars LazyFrames (local paths or object-store URLs) and as a
``Corpus`` the catalog accepts, so a catalog over an archive has the same rows as over the raw corpus.

Layout (every export writes a new ``gen-NNNNNN``, commits the manifest that names it and every data
file, then removes the files the previous manifest named; ``.lock`` makes exports take turns)::

    OUT/manifest.json
    OUT/.lock
    OUT/gen-000001/sessions/project_dir=<dir>/part-000000.parquet
    OUT/gen-000001/descriptors/project_dir=<dir>/part-000000.parquet
    OUT/gen-000001/problems/project_dir=<dir>/part-000000.parquet
    OUT/gen-000001/events/project_dir=<dir>/part-000000.parquet
    OUT/gen-000001/facts/part-000000.parquet

Each file also holds the ``project_dir`` column, so readers take the value from the data, not from the
directory name (project directories whose names are not URL-safe get a hashed directory name).

Re-exporting into an archive re-reads only the files whose ``(path, size, mtime_ns, ctime_ns, inode)``
changed: the ``facts`` table keeps, per file, the ``LogFacts`` of the last read as a typed record
(``subagent_catalog.store.codec``); a record that fails to decode or check is read again. The manifest
is validated before it is trusted (``subagent_catalog.store.manifest``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.costs import with_costs
from subagent_catalog.frames.schemas import DESCRIPTOR_SCHEMA, PROBLEM_SCHEMA, SESSION_SCHEMA, EventFrames
from subagent_catalog.prices import price_table
from subagent_catalog.read.paths import Compression
from subagent_catalog.store.archive_check import check_table, read_error, read_guard
from subagent_catalog.store.archive_corpus import NO_EVENTS_HINT, ArchiveCorpus
from subagent_catalog.store.archive_search import event_frames
from subagent_catalog.store.layout import (
    EVENT_FILE_EXTRA,
    MANIFEST,
    TABLE_ORDER,
    TABLE_SCHEMAS,
    ArchiveError,
    Table,
    is_url,
    table_view,
)
from subagent_catalog.store.location import Location, parquet_dataset
from subagent_catalog.store.manifest import FORMAT_VERSION, MAX_MANIFEST_BYTES, parse_manifest


@dataclass
class Archive:
    """An opened archive: its manifest and its tables as LazyFrames.

    ``.collect().to_pandas(types_mapper=pd.ArrowDtype)`` gives a table as pandas
    with Arrow-backed columns (docs/pandas.md).

    Attributes:
        path: the archive directory or object-store URL.
        manifest: the parsed ``manifest.json``.
        storage_options: passed to Polars for object-store URLs.
    """

    path: str
    manifest: dict[str, Any]
    storage_options: dict[str, Any] | None = None
    _corpus: ArchiveCorpus | None = field(default=None, repr=False)
    _lean: tuple[frozenset[str], ArchiveCorpus] | None = field(default=None, repr=False)
    _first_orders: dict[str, dict[str, int | None]] = field(default_factory=dict, repr=False)

    @property
    def location(self) -> Location:
        """Where the archive lives (a local directory or an object-store URL)."""
        return Location(self.path, self.storage_options)

    def _entry(self, table: Table | Literal["facts"]) -> dict[str, Any]:
        entry: dict[str, Any] = self.manifest["fingerprints"] if table == "facts" else self.manifest["tables"][table]
        return entry

    def check(self, table: Table | Literal["facts"]) -> None:
        """Check a table's files against the manifest before they are read (once per table).

        Each file is a regular file of the recorded size whose Parquet footer
        has the table's schema and the recorded row count, and the files add
        up to the manifest's row count (``store.archive_check``).

        Raises:
            ArchiveError: naming the file that fails.

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import tempfile
            >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
            >>> _ = export_archive(root, out, jobs=1)
            >>> open_archive(out).check("sessions")
        """
        if table not in self._first_orders:
            complete = self.manifest.get("format_version") == FORMAT_VERSION
            names = self._entry(table)["files"]
            smallest = check_table(self.location, table, self._entry(table), complete=complete)
            self._first_orders[table] = dict(zip(names, smallest, strict=True))

    def first_orders(self, table: Table) -> dict[str, int | None]:
        """Each file's smallest ``list_order``, from the footer statistics ``check`` read (``None``: not told).

        Only these numbers are kept of the footers (all of them take about
        170 MB at 500,000 sessions): a search with ``limit=`` orders the events
        files by them without reading a footer again.

        Raises:
            ArchiveError: a file of the table fails its checks.

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> from subagent_catalog.synth.writer import header, write_session
            >>> import tempfile
            >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
            >>> _ = write_session(root, header("a", created_at=1), [], "none")
            >>> _ = export_archive(root, out, jobs=1)
            >>> list(open_archive(out).first_orders("sessions").values())
            [0]
        """
        self.check(table)
        return self._first_orders[table]

    @contextmanager
    def reading(self, *tables: Table | Literal["facts"]) -> Iterator[None]:
        """The guard every read of this archive's files runs in: an error becomes an ``ArchiveError`` naming the file.

        ``tables`` are checked first (any table is, before its first scan). Any error met in the block (Polars,
        Arrow, thrift, zstd, UTF-8, a Rust panic) is traced to a damaged file of the tables checked so far
        (``store.archive_check.read_guard``); an error none of them explains is not the archive's: it passes.

        Raises:
            ArchiveError: a read inside the block failed on a damaged file.

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import tempfile
            >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
            >>> _ = export_archive(root, out, jobs=1)
            >>> with open_archive(out).reading("sessions"):
            ...     raise pl.exceptions.ComputeError("no file is damaged: not the archive's")
            Traceback (most recent call last):
            ...
            polars.exceptions.ComputeError: no file is damaged: not the archive's
        """
        for table in tables:
            self.check(table)
        with read_guard(self.location, self._checked_files):
            yield

    def read_error(self, error: BaseException) -> ArchiveError | None:
        """What ``reading`` raises for an error a reader has typed already (DuckDB's, in ``sql``); ``None``: no damage.

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import tempfile
            >>> out = tempfile.mkdtemp()
            >>> _ = export_archive(tempfile.mkdtemp(), out, jobs=1)
            >>> open_archive(out).read_error(ValueError("a bug")) is None
            True
        """
        return read_error(self.location, self._checked_files(), error)

    def _checked_files(self) -> list[str]:
        """The files of every table checked so far: the only ones a reader may have read (``_scan`` checks first)."""
        return [name for table in self._first_orders for name in self._entry(table)["files"]]  # type: ignore[arg-type]

    @property
    def root(self) -> str:
        """The corpus root the archive was exported from."""
        return str(self.manifest["root"])

    @property
    def log_root(self) -> str:
        """The directory the logs are read from when events come from the corpus root (no events table).

        ``root`` as the export was given it, except that a relative root
        opened from another working directory is read at ``root_abs`` (the
        directory it named then) while that is a directory: the archive can
        be opened from anywhere.

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import os, tempfile
            >>> base = tempfile.mkdtemp()
            >>> os.makedirs(os.path.join(base, "logs"))
            >>> here = os.getcwd(); os.chdir(base)
            >>> _ = export_archive("logs", "arch", jobs=1)
            >>> os.chdir(here)
            >>> archive = open_archive(os.path.join(base, "arch"))
            >>> archive.root, archive.log_root == os.path.join(base, "logs")
            ('logs', True)
        """
        root = self.root
        recorded = self.manifest.get("root_abs")
        if is_url(root) or os.path.isabs(root) or not isinstance(recorded, str) or not os.path.isabs(recorded):
            return root
        if not os.path.isdir(recorded) or os.path.realpath(root) == os.path.realpath(recorded):
            return root  # the relative root is that directory (or the recorded one is gone): read it as given
        return recorded

    @property
    def compression(self) -> Compression:
        """The encoding the root was read as."""
        value = self.manifest["compression"]
        return "zstd" if value == "zstd" else "none"

    @property
    def listing_error(self) -> str | None:
        """Upstream's whole-listing failure message, if the root has one."""
        value = self.manifest.get("listing_error")
        return None if value is None else str(value)

    @property
    def listing_error_path(self) -> str | None:
        """The file behind ``listing_error``."""
        value = self.manifest.get("listing_error_path")
        return None if value is None else str(value)

    def order_by(self, table: Table) -> list[str]:
        """The columns whose ascending order is the table's frame order (the manifest's ``order_by``).

        Examples:
            >>> Archive("a", {"tables": {"descriptors": {"order_by": ["archive_row"]}}}).order_by("descriptors")
            ['archive_row']
        """
        named = self.manifest["tables"].get(table, {}).get("order_by")
        if isinstance(named, list) and named and all(isinstance(name, str) for name in named):
            return list(named)
        return list(TABLE_ORDER[table])

    @property
    def has_events(self) -> bool:
        """Whether the archive holds the events table."""
        return bool(self.manifest.get("events"))

    def scan(self, table: Table | Literal["facts"]) -> pl.LazyFrame:
        """One table as a LazyFrame (files listed in the manifest, no directory listing).

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import tempfile
            >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
            >>> _ = export_archive(root, out, jobs=1)
            >>> open_archive(out).scan("sessions").collect().height
            0
        """
        return self._scan(table, self._entry(table)["files"])

    def _scan(self, table: Table | Literal["facts"], files: list[str]) -> pl.LazyFrame:
        """``scan(table)`` over these files of the table, in this order."""
        if not files:
            schema = TABLE_SCHEMAS[table]
            return pl.LazyFrame(schema={k: v for k, v in schema.items() if k not in EVENT_FILE_EXTRA})
        self.check(table)
        return table_view(table, self.location.scan(files), self.manifest.get("format_version"))

    @property
    def splits_text(self) -> bool:
        """Whether the events files keep the text of events outside ``TEXT_TYPES`` apart (``data_text``, format 6).

        ``scan("events")`` joins it back into ``text``; a search of those types alone reads ``text`` only.
        """
        return int(self.manifest.get("format_version") or 0) >= 6

    @property
    def sessions(self) -> pl.LazyFrame:
        """The sessions table (``list_order`` gives upstream's list() order)."""
        return self.scan("sessions")

    @property
    def descriptors(self) -> pl.LazyFrame:
        """The descriptors table (plus ``project_dir`` and its sort keys)."""
        return self.scan("descriptors")

    @property
    def problems(self) -> pl.LazyFrame:
        """The problems table (plus ``project_dir``, null above project level, and its sort keys)."""
        return self.scan("problems")

    @property
    def events(self) -> pl.LazyFrame:
        """The events table (plus ``project_dir``, ``list_order`` and ``event_index``).

        Raises:
            ArchiveError: the archive was exported without events, or a file fails its checks.
        """
        if not self.has_events:
            raise ArchiveError("this archive holds no events table", hint="re-export with events=True")
        return self.scan("events")

    @property
    def fingerprints(self) -> pl.LazyFrame:
        """Per file: ``rel_path`` (exact in ``rel_path_bytes``) and the incremental key (size, mtime, ctime, inode)."""
        return self.scan("facts").drop("facts")

    def to_corpus(self, *, events: bool = False) -> Corpus:
        """Collect the frames into a Corpus (cached; the catalog accepts it).

        Args:
            events: also collect the events table now (else on first use).

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> from subagent_catalog.synth.writer import header, write_session
            >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
            >>> _ = write_session(root, header("a", created_at=1), [], "none")
            >>> _ = export_archive(root, out, jobs=1)
            >>> open_archive(out).to_corpus().sessions.equals(read_corpus(root).sessions)
            True
        """
        if self._corpus is None:
            self._corpus = self._collect(frozenset())
        if events:
            _ = self._corpus.events
        return self._corpus

    def frames(self, *, without: Iterable[str] = ()) -> Corpus:
        """The corpus frames without some ``sessions`` columns: what a view that reads only the others needs.

        Reports and gates over a large archive read a few dozen of the
        ``sessions`` columns; leaving out the rest (headers as JSON, exact
        path bytes, identity details...) halves the frame. The corpus of
        ``to_corpus`` is returned when it was collected already; the last
        projection is kept for a caller asking for the same one again.

        Args:
            without: ``sessions`` columns to leave out (``cost_usd`` is always computed).

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import tempfile
            >>> from subagent_catalog.synth.writer import header, write_session
            >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
            >>> _ = write_session(root, header("a", created_at=1), [], "none")
            >>> _ = export_archive(root, out, jobs=1)
            >>> lean = open_archive(out).frames(without=["header_json", "read_header_json"])
            >>> "header_json" in lean.sessions.columns, lean.sessions["session_id"].to_list()
            (False, ['a'])
        """
        left_out = frozenset(without) & frozenset(SESSION_SCHEMA)
        if self._corpus is not None or not left_out:
            return self.to_corpus()
        if self._lean is None or self._lean[0] != left_out:
            self._lean = None  # the previous projection is released before the next is read
            self._lean = (left_out, self._collect(left_out))
        return self._lean[1]

    def release_frames(self) -> None:
        """Let go of the frames ``frames(without=...)`` keeps (collected again when asked for; ``to_corpus``'s stay).

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import tempfile
            >>> out = tempfile.mkdtemp()
            >>> _ = export_archive(tempfile.mkdtemp(), out, jobs=1)
            >>> archive = open_archive(out)
            >>> lean = archive.frames(without=["header_json"])
            >>> archive.release_frames()
            >>> archive.frames(without=["header_json"]) is lean
            False
        """
        self._lean = None

    def _collect(self, without: frozenset[str]) -> ArchiveCorpus:
        """The frames collected in their order, ``sessions`` without the columns named."""
        schema = {name: kind for name, kind in SESSION_SCHEMA.items() if name not in without}
        with self.reading("sessions", "descriptors", "problems"):
            sessions = _typed(self._sessions_in_order(list(schema)), schema)
            sessions = with_costs(sessions, price_table())
            # The small tables are sorted at once (each group is a read of every file of the table).
            descriptors = _in_order(
                self.descriptors, self.order_by("descriptors"), list(DESCRIPTOR_SCHEMA), at_once=None
            )
            descriptors = _typed(descriptors, DESCRIPTOR_SCHEMA)
            problems = _in_order(self.problems, self.order_by("problems"), list(PROBLEM_SCHEMA), at_once=None)
            problems = _typed(problems, PROBLEM_SCHEMA)
        corpus = ArchiveCorpus(
            root=self.root,
            compression=self.compression,
            sessions=sessions,
            descriptors=descriptors,
            problems=problems,
            listing_error=self.listing_error,
            listing_error_path=self.listing_error_path,
        )
        corpus._archive = self
        corpus._rebase(self.log_root)
        return corpus

    def _sessions_in_order(self, columns: list[str]) -> pl.DataFrame:
        """These ``sessions`` columns in ``list_order``: the files read in the order of their first rows, unsorted.

        An export writes each file's rows in ``list_order`` and the files'
        ranges do not overlap, so the files read in the order of their smallest
        ``list_order`` (from the footers ``check`` read) give the rows in order
        with no sort: a sort holds the rows read and their sorted copy at once
        (about 0.1 GB more at the peak for 500,000 sessions). The order read is
        checked (strictly increasing); any other archive is sorted.
        """
        smallest = self.first_orders("sessions")
        if self.order_by("sessions") == ["list_order"] and None not in smallest.values():
            files = sorted(smallest, key=lambda name: (smallest[name], name))
            frame = _in_file_order(self._scan("sessions", files), columns)
            if frame is not None:
                return frame
        return _in_order(self.sessions, self.order_by("sessions"), columns)

    # -- the ``Source`` interface (frames.source): an archive is read out of core, its files checked first

    def table(self, name: Table, columns: Sequence[str] | None = None) -> pl.LazyFrame:
        """One table as a scan of its files, with these columns (``None``: all the files hold).

        Raises:
            ArchiveError: the table lacks a column asked for (written by an older version).

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import tempfile
            >>> out = tempfile.mkdtemp()
            >>> _ = export_archive(tempfile.mkdtemp(), out, jobs=1)
            >>> open_archive(out).table("sessions", ["session_id"]).collect().columns
            ['session_id']
        """
        frame = self.scan(name)
        if columns is None:
            return frame
        missing = [column for column in columns if column not in frame.collect_schema()]
        if missing:
            raise ArchiveError(
                f"archive {self.path!r} has no {name} column {missing[0]!r}",
                hint="re-export it with this version of subagent_catalog",
            )
        return frame.select(columns)

    def collect(self, frame: pl.LazyFrame) -> pl.DataFrame:
        """Collect a lazy frame of the archive's tables streamed (its memory bounded); run it inside ``reading``."""
        return frame.collect(engine="streaming")

    def log_events(self, list_order: int) -> pl.DataFrame:
        """The events of one log (from the events table, else from the corpus root): ``ArchiveCorpus.log_events``."""
        return self.to_corpus().log_events(list_order)

    def log_sources(self, *, sessions: Iterable[str] | None = None) -> list[str]:
        """The exact paths of the logs under the corpus root, in list order: ``ArchiveCorpus.log_sources``."""
        return self.to_corpus().log_sources(sessions=sessions)

    def stored_events(self) -> pl.LazyFrame | None:
        """The events table, lazily, in frame order (``None``: the archive holds none)."""
        return self.events.sort(self.order_by("events"), maintain_order=True) if self.has_events else None

    def event_frames(
        self, columns: Sequence[str], *, types: Sequence[str], pushed: pl.Expr, where: pl.Expr, in_order: bool
    ) -> EventFrames | None:
        """A search's candidate rows from the events files (``store.archive_search``); ``None``: none, root here.

        Raises:
            ArchiveError: no events table and the corpus root is not here.
        """
        if not self.has_events and self.events_available():
            return None
        return event_frames(self, columns, types=types, pushed=pushed, where=where, in_order=in_order)

    def events_available(self) -> bool:
        """Whether events can be read: the archive holds an events table, or its corpus root is here.

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import tempfile
            >>> out = tempfile.mkdtemp()
            >>> _ = export_archive(tempfile.mkdtemp(), out, jobs=1)
            >>> open_archive(out).events_available()
            True
        """
        return self.has_events or (not is_url(self.log_root) and os.path.isdir(self.log_root))

    def require_events(self, *, needed_for: str) -> None:
        """Raise when the archive holds no events table and its corpus root is not here.

        Raises:
            ArchiveError: naming the archive and what needed the events.
        """
        if not self.events_available():
            raise ArchiveError(
                f"the archive {self.path!r} holds no events table, which {needed_for} reads, "
                f"and its corpus root {self.root!r} is not here",
                hint=NO_EVENTS_HINT,
            )

    def session_count(self) -> int:
        """How many session files the archive holds, from its manifest (nothing read)."""
        return int(self.manifest["tables"]["sessions"].get("rows") or 0)

    def empty_reason(self) -> str | None:
        """Why the archive holds nothing to report on (from its manifest's row counts: nothing read), or ``None``."""
        counts = self.manifest.get("row_counts", {})
        if counts.get("sessions") or self.listing_error is not None:
            return None
        return f"the archive {self.path!r} holds no session (it was exported from {self.root!r}, then empty)"

    def protected_roots(self) -> list[str]:
        """The archive's directory and its recorded corpus root (local ones): nothing may be written there."""
        return [path for path in dict.fromkeys([self.path, self.root, self.log_root]) if not is_url(path)]

    def keeps_caches(self) -> bool:
        """No: an archive is read from its files, and the logs it names may not be here."""
        return False

    def dataset(self, name: str) -> Any | None:
        """A table's Parquet files as a ``pyarrow.dataset``, checked first (``None``: no such table).

        Examples:
            >>> from subagent_catalog.store.export import export_archive
            >>> import tempfile
            >>> out = tempfile.mkdtemp()
            >>> _ = export_archive(tempfile.mkdtemp(), out, jobs=1)
            >>> open_archive(out).dataset("sessions").num_rows, open_archive(out).dataset("events") is None
            (0, True)
        """
        if name not in self.manifest["tables"] or (name == "events" and not self.has_events):
            return None
        table: Table = name  # type: ignore[assignment]
        names = self._entry(table)["files"]
        if not names:  # a table of no rows: its schema, nothing read
            return self._scan(table, []).collect().to_arrow()
        self.check(table)  # sizes, checksums, footers: no damaged part reaches pyarrow's reader
        return parquet_dataset(self.location, names)

    def __repr__(self) -> str:
        counts = self.manifest.get("row_counts", {})
        state = f"listing fails: {self.listing_error}" if self.listing_error else "listing ok"
        return (
            f"Archive({self.path!r}, root={self.root!r}, {self.compression}, {counts.get('sessions')} sessions, "
            f"events={'yes' if self.has_events else 'no'}, {state})"
        )


COLUMNS_AT_ONCE = 8
"""Columns ``_in_order`` reads and sorts at a time."""


def _in_order(
    frame: pl.LazyFrame, order_by: list[str], columns: list[str], *, at_once: int | None = COLUMNS_AT_ONCE
) -> pl.DataFrame:
    """``frame.sort(order_by).select(columns)`` collected a few columns at a time.

    A sort holds the rows it read and their sorted copy at once, and Polars'
    allocator keeps that memory a while after it is freed: for the summary's
    frames of 500,000 sessions, sorting every column at once left the process
    about 0.3 GB larger at its peak. A few columns at a time, each read sorts
    only them (the files are read again, only those columns and the order:
    eight at a time cost no measurable CPU). The sort is stable, so every
    group has the same row order even if the order columns had ties (they
    have none: they are the table's order). Each group is made one chunk
    while it is small: a frame of several chunks is copied whole when a
    column is added to it (``with_costs``).
    """
    step = at_once or len(columns) or 1
    parts = [
        frame.sort(order_by, maintain_order=True).select(columns[start : start + step]).collect().rechunk()
        for start in range(0, max(1, len(columns)), step)
    ]
    return pl.concat(parts, how="horizontal") if len(parts) > 1 else parts[0]


def _in_file_order(frame: pl.LazyFrame, columns: list[str]) -> pl.DataFrame | None:
    """``frame.select(columns)`` collected a few columns at a time; ``None`` when ``list_order`` is not increasing.

    The first group read holds ``list_order``, whose order is checked
    (strictly increasing, no null) before the other groups are read: they read
    the same files in the same order.
    """
    first = ["list_order", *(name for name in columns[: COLUMNS_AT_ONCE - 1] if name != "list_order")]
    head = frame.select(first).collect().rechunk()
    order = head["list_order"]
    if order.null_count() or (order.len() > 1 and not (order.diff().drop_nulls() > 0).all()):
        return None
    rest = [name for name in columns if name not in first]
    parts = [head] + [
        frame.select(rest[start : start + COLUMNS_AT_ONCE]).collect().rechunk()
        for start in range(0, len(rest), COLUMNS_AT_ONCE)
    ]
    whole = pl.concat(parts, how="horizontal") if len(parts) > 1 else head
    return whole.select(columns)


def _typed(frame: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """``frame.cast(schema)``, casting only the columns of another type (a cast to the same type copies)."""
    differ = {name: kind for name, kind in schema.items() if frame.schema[name] != kind}
    return frame.cast(differ) if differ else frame  # type: ignore[arg-type]


def open_archive(path: str | os.PathLike[str], *, storage_options: dict[str, Any] | None = None) -> Archive:
    """Open an archive written by ``export_archive``.

    Args:
        path: the archive directory, or an object-store URL (``s3://bucket/a``,
            ``gs://...``), or a ``file:///...`` URL (the local directory it names).
        storage_options: Polars' object-store options (``aws_endpoint_url``,
            ``aws_access_key_id``, ``aws_region``...), used for the manifest
            (through ``pyarrow.fs``) and every table scan; credentials not
            given here come from the environment.

    Raises:
        ArchiveError: no manifest, or a manifest of another format or version.

    Examples:
        >>> from subagent_catalog.store.export import export_archive
        >>> import tempfile
        >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> _ = export_archive(root, out, jobs=1)
        >>> open_archive(out).listing_error is None
        True
    """
    place = Location(os.fspath(path), storage_options)  # a file:// URL is kept as the local path it names
    location, storage_options = place.url, place.storage_options
    manifest_path = place.full(MANIFEST)
    try:
        data = place.read(MANIFEST, limit=MAX_MANIFEST_BYTES + 1)
    except FileNotFoundError:
        raise ArchiveError(f"no archive manifest at {manifest_path!r}", hint="export one with export_archive") from None
    except OSError as error:
        raise ArchiveError(
            f"cannot read {manifest_path!r}: {error.strerror or error}",
            hint="check the path, the credentials and the storage options (endpoint, region)",
        ) from None
    manifest = parse_manifest(data, where=manifest_path)
    return Archive(path=location, manifest=manifest, storage_options=storage_options)
