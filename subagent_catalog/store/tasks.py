"""The work of an archive export, as tasks a worker runs alone and whose results are small.

An export runs in two waves of tasks (here, in a local process pool or on
Dask workers) and the client only plans, checks and commits:

1. ``walk_task`` walks some project directories (upstream's ``list()`` for
   them) and writes, as scratch parts of the new generation, every log it
   found (``_walk``), every name in each project directory (``_names``, for
   upstream's per-id lookups) and the walk's ``problems`` rows. It returns
   counts per project, from which the client numbers files in list order.
2. ``read_task`` reads a slice of one or more projects' logs (or reuses
   their facts from the previous generation when the file is unchanged),
   builds their ``sessions``, ``descriptors``, ``problems``, ``facts`` and
   ``events`` rows (``frames.rows``: the same code ``read_corpus`` uses) and
   writes them as parts. It returns row counts, its first listing error and
   a digest of its files' keys.

Tasks use pyarrow, never Polars (a forked local worker must not). A task
that cannot see the corpus (a missing mount) refuses its work instead of
recording every log as unreadable.
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from subagent_catalog.frames.columns import Columns
from subagent_catalog.frames.lookup import FLAT_SUFFIXES, NameIndex, lookup_candidates
from subagent_catalog.frames.probes import FsProbes, RebasedProbes
from subagent_catalog.frames.rows import FrameChunks
from subagent_catalog.frames.schemas import EVENT_SCHEMA
from subagent_catalog.read.discover import SessionFile, walk_project
from subagent_catalog.read.event_text import TEXT_TYPES
from subagent_catalog.read.jsvalue import frame_text
from subagent_catalog.read.logread import LogFacts
from subagent_catalog.read.paths import Compression, log_name
from subagent_catalog.store.archive_check import read_guard
from subagent_catalog.store.codec import FactsRecordError, dump_facts, load_facts, reader_digest
from subagent_catalog.store.layout import DATA_TEXT, EVENT_EXTRA, EVENT_FILE_EXTRA, FACTS_SCHEMA, TRANSIENT_CAUSES
from subagent_catalog.store.location import Location, iter_parquet, read_parquet
from subagent_catalog.store.parts import PartWriter

WALK_SCHEMA: dict[str, Any] = {
    "top_index": pl.Int64,
    "local_index": pl.Int64,
    "project_bytes": pl.Binary,
    "session_bytes": pl.Binary,
    "read_path": pl.Binary,
    "size": pl.Int64,
    "mtime_ns": pl.Int64,
    "ctime_ns": pl.Int64,
    "inode": pl.UInt64,
    "device": pl.UInt64,
}
"""The ``_walk`` scratch table: one row per log found, exact names as bytes."""

NAMES_SCHEMA: dict[str, Any] = {"top_index": pl.Int64, "project_bytes": pl.Binary, "name": pl.Binary}
"""The ``_names`` scratch table: every name in every readable project directory."""


class RootNotVisibleError(FileNotFoundError):
    """A worker cannot see the corpus root or one of its project directories (raised on the worker)."""


@dataclass(frozen=True)
class Job:
    """What every task of one export shares.

    Attributes:
        root: the corpus root as given (paths in rows and messages start with it).
        fs_root: the root as workers open it (absolute for remote workers).
        compression: the encoding the root is read as.
        location: the archive (tasks write their parts there).
        data_dir: the generation being written (``gen-NNNNNN``).
        events: also write the events table.
    """

    root: str
    fs_root: str
    compression: Compression
    location: Location
    data_dir: str
    events: bool


@dataclass
class TaskResult:
    """What any task gives back: the parts it wrote, their row counts, who ran it."""

    task: int
    files: dict[str, list[str]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    parts: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    worker: str = ""
    reader: str = ""

    def take(self, writer: PartWriter) -> None:
        """Record what a part writer wrote, and who ran the task."""
        self.files, self.rows, self.parts = writer.files, writer.rows, writer.parts
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.reader = reader_digest()


@dataclass
class ProjectCount:
    """One walked project directory: its logs, whether it could be listed, its first listing-failing entry."""

    top_index: int
    name: str
    files: int
    readable: bool
    failing: tuple[int, str, str] | None = None
    mismatch: bool = False


@dataclass
class WalkTask:
    """Walk some project directories: ``(top-level index, name)`` each."""

    job: Job
    task: int
    projects: list[tuple[int, str]]

    def describe(self) -> str:
        """The task, for messages."""
        names = [name for _, name in self.projects]
        return f"walking {len(names)} project director(ies) from {_first(self.job.root, names)}"


@dataclass
class WalkResult(TaskResult):
    """A walk task's result."""

    counts: list[ProjectCount] = field(default_factory=list)


@dataclass
class CountTask:
    """Count the logs of each encoding in some project directories (for ``compression="auto"``)."""

    fs_root: str
    projects: list[str]

    def describe(self) -> str:
        """The task, for messages."""
        return f"counting logs in {len(self.projects)} project director(ies) from {_first(self.fs_root, self.projects)}"


def _first(root: str, names: list[str]) -> str:
    return repr(os.path.join(root, names[0])) if names else repr(root)


def count_task(task: CountTask) -> tuple[int, int] | None:
    """Logs of each encoding in the task's project directories (``None`` on an I/O error).

    Counts as ``read.discover.choose_compression`` does: every real session
    directory of every real project directory.

    Examples:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(root, "p", "s"))
        >>> _ = open(os.path.join(root, "p", "s", "session.jsonl"), "w").close()
        >>> count_task(CountTask(root, ["p"]))
        (1, 0)
    """
    plain = zstd = 0
    try:
        for name in task.projects:
            for session in os.scandir(os.path.join(task.fs_root, name)):
                if session.is_dir(follow_symlinks=False):
                    names = set(os.listdir(session.path))
                    plain += "session.jsonl" in names
                    zstd += "session.jsonl.zstd" in names
    except OSError:
        return None
    return plain, zstd


def _require(path: str, what: str) -> None:
    if not os.path.isdir(path):
        raise RootNotVisibleError(
            f"{what} {path!r} is not a directory on worker {socket.gethostname()}: "
            "mount the corpus at the same path on every worker"
        )


_FILE_STATS = ("size", "mtime_ns", "ctime_ns", "inode", "device")
"""The stat fields of a ``SessionFile`` the walk's and the facts' parts keep (the facts have no ``device``)."""


def walk_task(task: WalkTask) -> WalkResult:
    """Walk the task's project directories and write the scratch tables and the walk's problems.

    Raises:
        RootNotVisibleError: the root or a project directory is not here (a missing or empty mount).

    Examples:
        >>> import tempfile
        >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(root, "p", "s"))
        >>> _ = open(os.path.join(root, "p", "s", "session.jsonl"), "w").write("{}\\n")
        >>> job = Job(root, root, "none", Location(out), "gen-000001", False)
        >>> result = walk_task(WalkTask(job, 1, [(0, "p")]))
        >>> [(c.name, c.files) for c in result.counts], sorted(result.files)
        ([('p', 1)], ['_names', '_walk'])
    """
    job = task.job
    _require(job.fs_root, "corpus root")
    root_real = os.path.realpath(job.fs_root)
    walk = Columns(WALK_SCHEMA)
    names = Columns(NAMES_SCHEMA)
    chunks = FrameChunks(job.root, job.compression)
    result = WalkResult(task=task.task)
    for top, name in task.projects:
        _require(os.path.join(job.fs_root, name), "project directory")
        found = walk_project(job.root, name, job.compression, root_real, fs_root=job.fs_root)
        project_bytes = os.fsencode(name)
        for index, file in enumerate(found.files):
            walk.add(
                {
                    "top_index": top,
                    "local_index": index,
                    "project_bytes": project_bytes,
                    "session_bytes": os.fsencode(file.session_dir),
                    "read_path": os.fsencode(file.read_path),
                    **{name: getattr(file, name) for name in _FILE_STATS},
                }
            )
        for item in sorted(found.names or ()):
            names.add({"top_index": top, "project_bytes": project_bytes, "name": os.fsencode(item)})
        chunks.add_entries((top, sub, entry, name) for sub, entry in enumerate(found.entries))
        failing = next(((sub, e.message, e.path) for sub, e in enumerate(found.entries) if e.fails_listing), None)
        mismatch = any(entry.kind == "encoding-mismatch" for entry in found.entries)
        result.counts.append(ProjectCount(top, name, len(found.files), found.names is not None, failing, mismatch))
    for columns in (walk, names):
        columns.flush()
    writer = PartWriter(job.location, job.data_dir, task.task)
    writer.write("_walk", walk.table())
    writer.write("_names", names.table())
    writer.write("problems", chunks.tables()[2])
    result.take(writer)
    return result


@dataclass
class Slice:
    """Files ``start`` to ``stop`` (walk order) of one project directory, numbered from ``offset`` in list order."""

    top_index: int
    name: str
    start: int
    stop: int
    offset: int


@dataclass
class Previous:
    """Where a read task finds the previous generation's facts and events of its projects."""

    facts: list[str]
    events: list[str]
    events_usable: bool


@dataclass
class ReadTask:
    """Read (or reuse) the logs of some slices and write their rows."""

    job: Job
    task: int
    slices: list[Slice]
    walk_parts: list[str]
    suspicious: str | None
    names_parts: list[str]
    previous: Previous | None

    def describe(self) -> str:
        """The task, for messages."""
        files = sum(piece.stop - piece.start for piece in self.slices)
        return f"reading {files} file(s) from {_first(self.job.root, [piece.name for piece in self.slices])}"


@dataclass
class ReadResult(TaskResult):
    """A read task's result."""

    first_error: tuple[int, str, str] | None = None
    files_read: int = 0
    files_reused: int = 0
    events_reused: int = 0
    damaged: int = 0
    cached: int = 0
    digest: str = ""


def _name_index(job: Job, task: ReadTask, files: list[tuple[int, SessionFile]]) -> tuple[NameIndex, Any]:
    """The suspicious names this task's directories may meet, and ``holders`` for its lookups."""
    index = NameIndex()
    held: dict[str, set[str]] = {}
    if task.suspicious is not None:
        wanted = sorted({os.fsencode(name) for _, f in files for name in lookup_candidates(f.session_dir)})
        table = read_parquet(job.location, [task.suspicious], filters=[("name", "in", wanted)])
        for project_bytes, name_bytes in zip(
            table.column("project_bytes").to_pylist(), table.column("name").to_pylist(), strict=True
        ):
            held.setdefault(os.fsdecode(name_bytes), set()).add(os.fsdecode(project_bytes))
    for name, projects in held.items():
        if len(projects) > 1:
            index.shared.add(name)
        for suffix in FLAT_SUFFIXES:
            if name.endswith(suffix):
                index.flat.add(name[: -len(suffix)])

    def holders(names: set[str]) -> list[tuple[str, set[str]]]:
        found: dict[str, set[str]] = {}
        unknown = []
        for name in names:
            if name in held:
                for project in held[name]:
                    found.setdefault(project, set()).add(name)
            elif not name.endswith(FLAT_SUFFIXES):  # every flat file is in the suspicious table
                unknown.append(os.fsencode(name))
        if unknown and task.names_parts:
            table = read_parquet(job.location, task.names_parts, filters=[("name", "in", sorted(unknown))])
            for project_bytes, name_bytes in zip(
                table.column("project_bytes").to_pylist(), table.column("name").to_pylist(), strict=True
            ):
                found.setdefault(os.fsdecode(project_bytes), set()).add(os.fsdecode(name_bytes))
        return sorted(found.items(), key=lambda item: os.fsencode(item[0]))

    return index, holders


PREVIOUS_BATCH_ROWS = 4_096
"""Rows of the previous generation's facts read at a time (a record is at most 4 MiB; most are about 1 KB)."""


def _previous_facts(job: Job, task: ReadTask, files: list[tuple[int, SessionFile]]) -> dict[bytes, tuple[Any, ...]]:
    """The previous generation's facts of these files: rel path -> (list order, key, record).

    Read in batches, keeping the first record of each path: a part repeating
    a row holds no more than one record per file in memory.
    """
    if task.previous is None or not task.previous.facts:
        return {}
    import pyarrow.compute as pc

    rels = sorted(rel_path(file, job.compression) for _, file in files)
    out: dict[bytes, tuple[Any, ...]] = {}
    parts = task.previous.facts
    batches = iter_parquet(
        job.location,
        parts,
        where=pc.field("rel_path_bytes").isin(rels),
        columns=["rel_path_bytes", "list_order", "size", "mtime_ns", "ctime_ns", "inode", "facts"],
        batch_rows=PREVIOUS_BATCH_ROWS,
    )
    with read_guard(job.location, lambda: parts):  # a damaged part passed its checks: it is named
        for batch in batches:
            for row in batch.to_pylist():
                if row["facts"] is not None and row["rel_path_bytes"] not in out:
                    key = (row["size"], row["mtime_ns"], row["ctime_ns"], row["inode"])
                    out[row["rel_path_bytes"]] = (row["list_order"], key, row["facts"])
    return out


def rel_path(file: SessionFile, compression: Compression) -> bytes:
    """A log's path below the root, exact (file names need not be UTF-8).

    Examples:
        >>> rel_path(SessionFile("/r/p/s/session.jsonl", "p", "s", True, 1, 1, 1, 1), "none")
        b'p/s/session.jsonl'
    """
    return os.fsencode(f"{file.project_dir}/{file.session_dir}/{log_name(compression)}")


def events_table(order: int, project: str, events: list[tuple[Any, ...]]) -> Any:
    """One file's events as an Arrow table with the archive's extra columns.

    The text of an event whose type is not one of ``TEXT_TYPES`` is written
    to ``data_text`` and its ``text`` left null (format 6).

    Examples:
        >>> table = events_table(3, "p", [("a", 0, 1, "request/header", 1, None, False, False, "{}", "m", "data"),
        ...     ("a", 1, 2, "user/message", 1, None, False, False, "{}", "hi", "text")])
        >>> table.column("list_order").to_pylist(), table.column("text").to_pylist()
        ([3, 3], [None, 'hi'])
        >>> table.column("data_text").to_pylist()
        ['m', None]
    """
    columns = Columns({**EVENT_SCHEMA, **EVENT_EXTRA, **EVENT_FILE_EXTRA})
    names = list(EVENT_SCHEMA)
    for index, row in enumerate(events):
        values = dict(zip(names, row, strict=True))
        values.update(project_dir=project, list_order=order, event_index=index)
        if values["type"] not in TEXT_TYPES:
            values[DATA_TEXT], values["text"] = values["text"], None
        columns.add(values)
    columns.flush()
    return columns.table()


def read_task(task: ReadTask) -> ReadResult:
    """Read (or reuse) the task's logs and write their rows as parts.

    Raises:
        RootNotVisibleError: the root or a project directory is not here (a missing or empty mount).

    Examples:
        >>> import tempfile
        >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> job = Job(root, root, "none", Location(out), "gen-000001", False)
        >>> read_task(ReadTask(job, 1, [Slice(0, "gone", 0, 1, 0)], [], None, [], None))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        subagent_catalog.store.tasks.RootNotVisibleError: ...project directory...
    """
    import pyarrow as pa

    from subagent_catalog.read import logread

    job = task.job
    _require(job.fs_root, "corpus root")
    for piece in task.slices:
        _require(os.path.join(job.fs_root, piece.name), "project directory")
    # The task's files as (list order, walk entry), from the walk's scratch parts.
    wanted = [
        [("top_index", "=", piece.top_index), ("local_index", ">=", piece.start), ("local_index", "<", piece.stop)]
        for piece in task.slices
    ]
    table = read_parquet(job.location, task.walk_parts, filters=wanted)
    own = log_name(job.compression)
    by_top = {piece.top_index: piece for piece in task.slices}
    files: list[tuple[int, SessionFile]] = []
    for row in table.to_pylist():
        piece = by_top[row["top_index"]]
        local = row["local_index"]
        if not piece.start <= local < piece.stop:
            continue
        project, session = os.fsdecode(row["project_bytes"]), os.fsdecode(row["session_bytes"])
        path, read_path = os.path.join(job.root, project, session, own), os.fsdecode(row["read_path"])
        size, mtime, inode, device = (row[name] for name in ("size", "mtime_ns", "inode", "device"))
        file = SessionFile(path, project, session, True, size, mtime, inode, device, read_path, row["ctime_ns"])
        files.append((piece.offset + local - piece.start, file))
    files.sort(key=lambda item: item[0])
    index, holders = _name_index(job, task, files)
    previous = _previous_facts(job, task, files)
    probes: FsProbes | None = RebasedProbes(job.root, job.fs_root) if job.root != job.fs_root else None
    chunks = FrameChunks(job.root, job.compression, probes=probes, index=index, holders=holders)
    facts_rows = Columns(FACTS_SCHEMA)
    events: list[Any] = []
    remap: dict[int, int] = {}
    result = ReadResult(task=task.task)
    digest = hashlib.sha256()
    for order, file in files:
        rel = rel_path(file, job.compression)
        key = (file.size, file.mtime_ns, file.ctime_ns, file.inode)
        digest.update(rel + f"\0{file.size}\0{file.mtime_ns}\0{file.ctime_ns}\0{file.inode}\n".encode())
        facts: LogFacts | None = None
        blob: bytes | None = None
        stored = previous.get(rel)
        usable = task.previous is not None and (task.previous.events_usable or not job.events)
        if stored is not None and stored[1] == key and usable:
            try:
                facts, blob = load_facts(stored[2], size=file.size), stored[2]
                if job.events:
                    remap[stored[0]] = order
                result.files_reused += 1
            except FactsRecordError:  # a bad record is a miss, never trusted and never fatal
                result.damaged += 1
        if facts is None:
            facts = logread.read_log_file(file.source, job.compression, want_events=job.events, exact_path=True)
            blob = dump_facts(facts)
            result.files_read += 1
            if job.events:
                events.append(events_table(order, file.project_dir, facts.events or []))
                facts.events = None
        cacheable = blob is not None and facts.read_cause not in TRANSIENT_CAUSES
        result.cached += cacheable
        facts_rows.add(
            {
                "rel_path": rel.decode("utf-8", "backslashreplace"),
                "rel_path_bytes": rel,
                "project_dir": frame_text(file.project_dir),
                "list_order": order,
                **{name: getattr(file, name) for name in _FILE_STATS},
                "facts": blob if cacheable else None,
            }
        )
        chunks.add(order, file, facts)
    if remap:  # the previous generation's events of reused files, renumbered in the new list order
        assert task.previous is not None
        with read_guard(job.location, lambda: task.previous.events if task.previous else []):
            table = read_parquet(job.location, task.previous.events, filters=[("list_order", "in", sorted(remap))])
        renumbered = pa.array([remap[order] for order in table.column("list_order").to_pylist()], type=pa.int64())
        copied = table.set_column(table.schema.get_field_index("list_order"), "list_order", renumbered)
        result.events_reused = copied.num_rows
        events.append(copied)
    facts_rows.flush()
    sessions, descriptors, problems = chunks.tables()
    writer = PartWriter(job.location, job.data_dir, task.task)
    writer.write("sessions", sessions)
    writer.write("descriptors", descriptors)
    writer.write("problems", problems)
    writer.write("facts", facts_rows.table())
    if events:
        table = pa.concat_tables(events).sort_by([("list_order", "ascending"), ("event_index", "ascending")])
        writer.write("events", table)
    result.take(writer)
    result.first_error = chunks.first_error
    result.digest = digest.hexdigest()
    return result
