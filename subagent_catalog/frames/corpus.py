"""``Corpus``: the frames of one read session root, plus what the catalog needs."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from subagent_catalog.errors import CatalogError, CorpusRootError
from subagent_catalog.frames.display import corpus_html
from subagent_catalog.frames.schemas import EVENT_SCHEMA, EventFrames, FrameName
from subagent_catalog.progress import quiet
from subagent_catalog.read.discover import SessionFile
from subagent_catalog.read.event_rows import FullReadNeeded
from subagent_catalog.read.jsvalue import frame_text
from subagent_catalog.read.logread import LogFacts, log_event_stream, read_log_file
from subagent_catalog.read.paths import (
    Compression,
)
from subagent_catalog.read.pool import read_all


def source_column(files: Iterable[SessionFile]) -> pl.Series | None:
    """Where to read each log from when that is not its shown path: one ``Binary`` value per walked file.

    A log read through a symlink inside the root has its target's exact
    bytes; every other row is null (read from ``path_bytes``). ``None`` when
    no row needs one, the usual case: a corpus then holds no second copy of
    its paths.

    Examples:
        >>> plain = SessionFile("/r/p/a/session.jsonl", "p", "a", True, 1, 1, 1, 1)
        >>> linked = SessionFile("/r/p/b/session.jsonl", "p", "b", True, 1, 1, 1, 1, read_path="/r/p/b/t")
        >>> source_column([plain]) is None, source_column([plain, linked]).to_list()
        (True, [None, b'/r/p/b/t'])
    """
    column = [os.fsencode(f.read_path) if f.read_path and f.read_path != f.path else None for f in files]
    return pl.Series("source", column, dtype=pl.Binary) if any(value is not None for value in column) else None


@dataclass
class Corpus:
    """A read corpus: frames plus what the catalog needs.

    Each frame is a Polars ``DataFrame``; ``.to_pandas(types_mapper=pd.ArrowDtype)``
    gives pandas with Arrow-backed columns (docs/pandas.md).

    Attributes:
        root: the root as given.
        compression: the encoding the root was read as.
        sessions: one row per session log file, in upstream ``list()`` order.
        descriptors: one row per ``subagent/descriptor`` event.
        problems: one row per thing wrong (corpus-level and per file).
        listing_error: the message upstream's whole listing fails with, if it does.
        listing_error_path: the file behind ``listing_error``.
    """

    root: str
    compression: Compression
    sessions: pl.DataFrame
    descriptors: pl.DataFrame
    problems: pl.DataFrame
    listing_error: str | None = None
    listing_error_path: str | None = None
    _events: pl.DataFrame | None = field(default=None, repr=False)
    _jobs: int | None = field(default=None, repr=False)
    _sources: pl.Series | None = field(default=None, repr=False)  # ``source_column``: null rows read path_bytes
    _log_root: str | None = field(default=None, repr=False)  # where ``_sources`` points when not ``root``

    @property
    def log_root(self) -> str:
        """The directory the logs are read from (the root; an archive's may be where the export ran)."""
        return self._log_root if self._log_root is not None else self.root

    def log_sources(self, *, sessions: Iterable[str] | None = None) -> list[str]:
        """Exact paths of the logs to read for events (skipped headers excluded), in list order.

        File names that are not UTF-8 are exact here (the frames' ``path``
        column shows them with U+FFFD; ``path_bytes`` holds the bytes).

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> import tempfile
            >>> read_corpus(tempfile.mkdtemp()).log_sources()
            []
        """
        frame = self.sessions.with_row_index("_row")
        frame = frame.filter(pl.col("verdict") != "skipped")
        if sessions is not None:
            frame = frame.filter(pl.col("session_id").is_in(list(sessions)))
        frame = frame.sort("list_order")
        if self._sources is not None:
            frame = frame.with_columns(source=self._sources.gather(frame["_row"]))
            frame = frame.with_columns(path_bytes=pl.coalesce("source", "path_bytes"))
        return [
            os.fsdecode(raw) if raw is not None else path
            for raw, path in frame.select("path_bytes", "path").iter_rows()
        ]

    def log_events(self, list_order: int) -> pl.DataFrame:
        """The events of one log, the file whose ``sessions`` row has this ``list_order``.

        Read from that one file only (``corpus.events`` is used when it is
        already loaded, and never loaded here); a log whose events cannot be
        read gives the events before the damage (its ``sessions`` row says why).

        Raises:
            CorpusRootError: the file cannot be opened any more.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> from subagent_catalog.synth.writer import EventLog, header, write_session
            >>> root = tempfile.mkdtemp()
            >>> log = EventLog("s1")
            >>> log.user("hi")
            >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
            >>> read_corpus(root).log_events(0)["type"].to_list()
            ['user/message']
        """
        frame = self.sessions.with_row_index("_row").filter(pl.col("list_order") == list_order)
        if frame.height == 0 or frame["verdict"][0] == "skipped":
            return pl.DataFrame(schema=EVENT_SCHEMA)
        if self._events is not None:
            ids = self.sessions.filter(pl.col("session_id") == frame["session_id"][0])
            if ids.height == 1:  # the loaded frame tells logs apart only by session id
                return self._events.filter(pl.col("session_id") == frame["session_id"][0])
        row, raw, path = frame.select("_row", "path_bytes", "path").row(0)
        if self._sources is not None and self._sources[row] is not None:
            raw = self._sources[row]
        source = os.fsdecode(raw) if raw is not None else path
        streamed = _streamed_events(source, self.compression)
        if streamed is not None:
            return streamed
        facts = read_log_file(source, self.compression, want_events=True, exact_path=True)
        if facts.read_cause == "io-error":
            raise CorpusRootError(
                f"cannot read the log again: {facts.read_message}",
                hint="the file was moved or removed after the corpus was read; read the corpus again",
            )
        return facts_events(facts)

    @property
    def events(self) -> pl.DataFrame:
        """Every event of every readable log (loaded on first use).

        Packed chunk rows appear expanded as the ``assistant/chunk`` events
        they stand for; closers upstream synthesises are not included.
        """
        if self._events is None:
            paths = self.log_sources()
            frames = [
                facts_events(facts)
                for facts in read_all(paths, self.compression, want_events=True, jobs=self._jobs, progress=quiet)
            ]
            self._events = pl.concat(frames, rechunk=False) if frames else pl.DataFrame(schema=EVENT_SCHEMA)
        return self._events

    # -- the ``Source`` interface (frames.source): a corpus in memory answers from its frames and its logs.

    def to_corpus(self) -> Corpus:
        """The frames in memory: the corpus itself."""
        return self

    def frames(self, *, without: Iterable[str] = ()) -> Corpus:
        """The frames a view reads: the corpus itself, whole (its frames are in memory already)."""
        return self

    def table(self, name: FrameName, columns: Sequence[str] | None = None) -> pl.LazyFrame:
        """One frame lazily, with these columns (``None``: all).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> read_corpus(tempfile.mkdtemp()).table("sessions", ["session_id"]).collect().columns
            ['session_id']
        """
        frame: pl.DataFrame = getattr(self, name)
        return frame.lazy() if columns is None else frame.lazy().select(columns)

    def collect(self, frame: pl.LazyFrame) -> pl.DataFrame:
        """Collect a lazy frame of the corpus's frames (at once: they are in memory)."""
        return frame.collect()

    def stored_events(self) -> pl.LazyFrame | None:
        """``None``: a corpus's events are read from its logs, one log at a time."""
        return None

    def event_frames(
        self, columns: Sequence[str], *, types: Sequence[str], pushed: pl.Expr, where: pl.Expr, in_order: bool
    ) -> EventFrames | None:
        """``None``: a corpus's events are searched in its logs (or its loaded ``events``)."""
        return None

    def events_available(self) -> bool:
        """Whether events can be read: a corpus's logs always can (a log gone since says so when read)."""
        return True

    def require_events(self, *, needed_for: str) -> None:
        """Nothing to check: a corpus's events are read from its logs."""

    def session_count(self) -> int:
        """How many session files the corpus holds."""
        return self.sessions.height

    def empty_reason(self) -> str | None:
        """Why the corpus holds nothing to report on (no session file, no failing listing), or ``None``.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> read_corpus(tempfile.mkdtemp(), cache=False).empty_reason().startswith("no session log under")
            True
        """
        if self.sessions.height or self.listing_error is not None:
            return None  # logs of the other encoding fail the listing, which then says why
        return f"no session log under {self.root!r} and no archive manifest (manifest.json)"

    def protected_roots(self) -> list[str]:
        """The root and where its logs are read: nothing may be written there (``outputs.check_output``).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> root = tempfile.mkdtemp()
            >>> read_corpus(root).protected_roots() == [root]
            True
        """
        return [path for path in dict.fromkeys([self.root, self.log_root]) if "://" not in path]

    def keeps_caches(self) -> bool:
        """Whether a cache keyed on the logs may be kept: yes, they are read from the root."""
        return True

    def reading(self) -> AbstractContextManager[None]:
        """No guard: a corpus's frames are in memory and its logs say what is wrong with them."""
        return nullcontext()

    def read_error(self, error: BaseException) -> Exception | None:
        """``None``: no file of a corpus in memory explains another reader's error."""
        return None

    def dataset(self, name: str) -> Any | None:
        """``None``: a corpus's tables are its frames, not files."""
        return None

    def release_frames(self) -> None:
        """Nothing to let go: the frames are the corpus."""

    def windowed(self, source: Corpus, rows: pl.DataFrame, *, events_loaded: bool = False) -> None:
        """Nothing to do: a window of a corpus reads its events from its logs (``ArchiveCorpus`` overrides it)."""

    def require_listing(self) -> None:
        """Raise upstream's whole-listing failure, if the corpus has one.

        Raises:
            CatalogError: code ``PERSISTENCE_LIST_FAILED``.
        """
        raise_listing_error(self.listing_error, self.listing_error_path)

    def _repr_html_(self) -> str:
        return str(corpus_html(self))

    def __repr__(self) -> str:
        listed = int(self.sessions["listed"].sum()) if self.sessions.height else 0
        state = f"listing fails: {self.listing_error}" if self.listing_error else "listing ok"
        return (
            f"Corpus({self.root!r}, {self.compression}, {self.sessions.height} files, {listed} listed, "
            f"{self.problems.height} problems, {state})"
        )


def raise_listing_error(message: str | None, path: str | None) -> None:
    """Raise upstream's whole-listing failure when there is one (``message`` not ``None``).

    Raises:
        CatalogError: code ``PERSISTENCE_LIST_FAILED``.

    Examples:
        >>> raise_listing_error(None, None)
        >>> raise_listing_error("boom", "/r/x.jsonl")
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.CatalogError: boom (hint: see corpus.problems (fails_listing); ...)
    """
    if message is not None:
        raise CatalogError(
            "PERSISTENCE_LIST_FAILED",
            message,
            path=path,
            hint="see corpus.problems (fails_listing); upstream lists nothing from this root",
        )


def facts_events(facts: LogFacts) -> pl.DataFrame:
    """The events frame of one file's facts.

    Examples:
        >>> facts_events(LogFacts(size=0)).columns[:3]
        ['session_id', 'seq', 'time_ms']
    """
    if facts.events_ipc is not None:
        return pl.read_ipc_stream(facts.events_ipc).cast(pl.Schema(EVENT_SCHEMA))
    return _rows_frame(facts.events or [])


def _rows_frame(rows: list[tuple[Any, ...]]) -> pl.DataFrame:
    """Events rows (``EVENT_SCHEMA`` order) as a frame, their text made UTF-8-safe."""
    safe = [tuple(frame_text(v) if isinstance(v, str) else v for v in row) for row in rows]
    return pl.DataFrame(safe, schema=EVENT_SCHEMA, orient="row")


def _streamed_events(path: str, compression: Compression) -> pl.DataFrame | None:
    """The events frame of a log the fast path reads, built a chunk of rows at a time; ``None`` otherwise.

    The same frame as ``facts_events(read_log_file(...))`` without the log's
    events or rows ever held whole as Python objects (a star run's root log
    of 100,000 events cost about 200 MB more the other way).
    """
    stream = log_event_stream(path, compression)
    if stream is None:
        return None
    try:
        chunks = [_rows_frame(rows) for rows in stream]
    except FullReadNeeded:
        return None
    if not chunks:
        return pl.DataFrame(schema=EVENT_SCHEMA)
    frame = pl.concat(chunks, rechunk=True) if len(chunks) > 1 else chunks[0]
    if stream.late_texts:
        at = list(stream.late_texts)
        texts, fields = zip(*stream.late_texts.values(), strict=True)
        frame = frame.with_columns(
            frame["text"].scatter(at, pl.Series([frame_text(t) for t in texts], dtype=pl.String)),
            frame["text_fields"].scatter(at, pl.Series(list(fields), dtype=pl.String)),
        )
    return frame
