"""Writing archives: ``export_archive``.

The client plans and commits; the work runs as tasks (``store.tasks``) that
write their own Parquet parts, here or on a Dask cluster:

1. the client lists the root's top level only, and claims the target
   (``store.target``);
2. walk tasks walk the project directories (split across workers) and write
   scratch tables; the client numbers the files in list order from their
   counts and finds the few names that can make upstream's per-id lookups
   fail (a lazy query over the names table);
3. read tasks read the logs (or reuse the previous generation's facts of
   unchanged files), build every row and write the parts;
4. the client finds duplicate ids over the sessions parts (a lazy query),
   rewrites the few parts they touch, and commits the manifest.

The client holds per-project counts and the manifest's file list, never a
row per session.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import math
import os
import platform
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from subagent_catalog.bounds import POSITIVE_COUNT, WORKERS
from subagent_catalog.errors import EmptySourceError
from subagent_catalog.frames.assemble import empty_root_row, mixed_encodings_row
from subagent_catalog.frames.columns import Columns
from subagent_catalog.frames.rows import GROUP_ENTRY, entry_row
from subagent_catalog.frames.rules import (
    Duplicates,
    duplicate_problems,
    duplicates_error,
    find_duplicates,
    first_listing_error,
    mark_duplicates,
)
from subagent_catalog.frames.schemas import PROBLEM_SCHEMA
from subagent_catalog.outputs import output_failure
from subagent_catalog.progress import Progress
from subagent_catalog.read.discover import LogsSeen, check_level, list_top, top_entry
from subagent_catalog.read.jsvalue import frame_text
from subagent_catalog.read.paths import Compression, CompressionOption
from subagent_catalog.store.archive_check import check_table
from subagent_catalog.store.checksum import DIGEST_KEY
from subagent_catalog.store.codec import reader_digest
from subagent_catalog.store.distributed import EngineError, LocalPool, RootNotVisibleError, _connect, run_dask
from subagent_catalog.store.layout import (
    ARCHIVE_FORMAT,
    PARQUET_CODEC,
    PROBLEM_EXTRA,
    TABLE_ORDER,
    ArchiveError,
    Engine,
    partition_segment,
)
from subagent_catalog.store.location import Location, arrow_filesystem
from subagent_catalog.store.manifest import FORMAT_VERSION
from subagent_catalog.store.parts import PartWriter, encode_parquet
from subagent_catalog.store.source import inputs_below
from subagent_catalog.store.target import Claim, claim_target, commit, discard, manifest_files, remove_files
from subagent_catalog.store.tasks import (
    CountTask,
    Job,
    Previous,
    ProjectCount,
    ReadResult,
    ReadTask,
    Slice,
    WalkResult,
    WalkTask,
    count_task,
    read_task,
    walk_task,
)

BATCH_SIZE = 256
"""Most files per read task planned by itself, until a corpus would need more than ``MAX_READ_TASKS``."""

MIN_BATCH = 64
"""Fewest files per read task when planning by itself (fewer, larger parts for small corpora)."""

MAX_READ_TASKS = 512
"""Read tasks planned by themselves for a large corpus: each writes one part per table, and every
query over the archive opens every part of its tables (at 500,000 sessions, 256-file tasks made
1,954 parts a table and one ``list_children`` 1.7 s, most of it in reading Parquet footers)."""

MAX_BATCH = 8192
"""Most files per read task planned by itself (a task holds its files' rows, and events, until it writes them)."""


def read_batch(total: int, workers: int) -> int:
    """Files per read task for ``total`` files on ``workers`` workers (when ``batch_size`` is not given).

    Four tasks per worker for small corpora (64 to 256 files each); beyond
    that, 256 files a task until the corpus would need more than
    ``MAX_READ_TASKS`` tasks, then larger tasks (at most ``MAX_BATCH`` files).

    Examples:
        >>> read_batch(1_000, 2), read_batch(20_000, 2), read_batch(500_000, 2), read_batch(10**8, 2)
        (125, 256, 977, 8192)
    """
    small = min(BATCH_SIZE, max(MIN_BATCH, math.ceil(total / (max(1, workers) * 4))))
    return min(MAX_BATCH, max(small, math.ceil(total / MAX_READ_TASKS)))


TABLES = ("sessions", "descriptors", "problems", "events")


class _Runner:
    """Runs task functions on the chosen engine (one Dask connection for the whole export)."""

    def __init__(self, stack: ExitStack, engine: Engine, scheduler: str | None, jobs: int | None, local: bool):
        if engine not in ("local", "dask"):
            raise ValueError(f"engine must be 'local' or 'dask', not {engine!r}")
        self.engine, self.scheduler = engine, scheduler
        self.detail: dict[str, Any] = {"name": engine}
        self.workers_seen: set[str] = set()
        self.client: Any = None
        self.pool: LocalPool | None = None
        if engine == "dask":
            self.client = _connect(stack, scheduler, jobs or 2)
            joined = len(self.client.scheduler_info().get("workers", {}))
            self.detail.update(scheduler=scheduler if scheduler is not None else "local-cluster", workers=joined)
        else:
            self.pool = stack.enter_context(LocalPool(jobs=jobs, start="fork" if local else "spawn"))
            self.detail["workers"] = self.pool.workers

    @property
    def workers(self) -> int:
        return max(1, int(self.detail.get("workers") or 1))

    def map(self, func: Callable[[Any], Any], tasks: list[Any]) -> Iterator[Any]:
        if self.pool is None:
            results = run_dask(func, tasks, scheduler=self.scheduler, client=self.client)
        else:
            results = self.pool.run(func, tasks)
        try:
            for result in results:
                if getattr(result, "reader", reader_digest()) != reader_digest():
                    raise EngineError(
                        f"worker {result.worker} runs different subagent_catalog reader code than this client",
                        hint="install the same subagent_catalog version on the client and every worker",
                    )
                if getattr(result, "worker", ""):
                    self.workers_seen.add(result.worker)
                yield result
        except RootNotVisibleError as error:
            raise EngineError(str(error), hint="every worker must see the corpus root at the same path") from error


def _chunks(items: list[Any], parts: int) -> list[list[Any]]:
    size = max(1, math.ceil(len(items) / max(1, parts)))
    return [items[i : i + size] for i in range(0, len(items), size)]


def _choose_compression(runner: _Runner, root: str, fs_root: str, projects: list[tuple[int, str]]) -> Compression:
    """``auto``: the encoding ``LogsSeen.majority`` picks from the logs counted by tasks."""
    seen = LogsSeen()
    groups = _chunks(projects, runner.workers * 4)
    for counted in runner.map(count_task, [CountTask(fs_root, [name for _, name in group]) for group in groups]):
        if counted is None:
            return LogsSeen(unlisted=True).majority()
        seen.add(LogsSeen(*counted))
    return seen.majority()


@dataclass
class _Reuse:
    """What the previous generation lets this export reuse: its facts and events files by partition."""

    facts: dict[str, list[str]] = field(default_factory=dict)
    events: dict[str, list[str]] = field(default_factory=dict)
    has_events: bool = False
    reason: str | None = None


def _by_partition(files: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name in files:
        out.setdefault(name.split("/")[2], []).append(name)
    return out


def _reuse(
    manifest: dict[str, Any] | None, compression: Compression, incremental: bool, location: Location | None = None
) -> _Reuse:
    if manifest is None:
        return _Reuse(reason="no previous archive")
    if not incremental:
        return _Reuse(reason="incremental=False")
    if manifest.get("format_version") != FORMAT_VERSION:
        return _Reuse(reason=f"archive format {manifest.get('format_version')} != {FORMAT_VERSION}")
    if manifest.get("reader_digest") != reader_digest():
        return _Reuse(reason="the reader code changed since the last export")
    if manifest.get("compression") != compression:
        return _Reuse(reason=f"the root was read as {manifest.get('compression')}, now as {compression}")
    has_events = bool(manifest.get("events"))
    if location is not None:  # the files to reuse are checked against the manifest before any is read
        try:
            check_table(location, "facts", manifest["fingerprints"])
            if has_events:
                check_table(location, "events", manifest["tables"]["events"])
        except ArchiveError as error:
            return _Reuse(reason=f"the previous generation fails its checks: {str(error)[:300]}")
    events = _by_partition(manifest["tables"]["events"]["files"]) if has_events else {}
    return _Reuse(_by_partition(manifest["fingerprints"]["files"]), events, has_events)


def _suspicious_names(location: Location, names_parts: list[str], data_dir: str, task: int) -> str | None:
    """Write the names that can make a lookup fail (in several projects, flat files and their stems); its part."""
    if not names_parts:
        return None
    names = location.scan(names_parts)
    # Names grouped by their 64-bit hashes (8 bytes a name, not the text): a name in two project
    # directories spans two top-level indexes; a collision only adds a candidate, checked exactly later.
    spans = (
        names.group_by(pl.col("name").hash(seed=0).alias("_name"))
        .agg(pl.col("top_index").min().alias("low"), pl.col("top_index").max().alias("high"))
        .filter(pl.col("low") != pl.col("high"))
        .collect()
    )
    multi = names.filter(pl.col("name").hash(seed=0).is_in(spans["_name"].implode()))
    flat = names.filter(pl.col("name").bin.ends_with(b".jsonl") | pl.col("name").bin.ends_with(b".jsonl.zstd"))
    flat_names = flat.select("name").collect()["name"].to_list()
    stems = [name[: -len(".jsonl.zstd")] if name.endswith(b".zstd") else name[: -len(".jsonl")] for name in flat_names]
    wanted = pl.concat(
        [multi.select("name"), pl.LazyFrame({"name": [*flat_names, *stems]}, schema={"name": pl.Binary})]
    ).unique()
    rows = names.join(wanted, on="name", how="semi").sort("name", "project_bytes").collect()
    if rows.height == 0:
        return None
    writer = PartWriter(location, data_dir, task)
    writer.write("_scratch", rows.to_arrow())
    return writer.files["_scratch"][0]


def _fix_duplicates(
    location: Location,
    data_dir: str,
    files: dict[str, list[str]],
    tasks: Iterator[int],
    parts: dict[str, tuple[int, int, str]],
) -> tuple[Duplicates, PartWriter]:
    """Unlist later copies of an id listed twice: rewrite the sessions parts that hold them, add their problems."""
    writer = PartWriter(location, data_dir, next(tasks))
    if not files.get("sessions"):
        return Duplicates([], [], [], []), writer
    scanned = location.scan(files["sessions"], include_file_paths="_part")
    listed = scanned.filter(pl.col("listed") & pl.col("session_id").is_not_null())
    # Ids compared by their 64-bit hashes first (8 bytes a session, not the text); true duplicates are
    # then told apart exactly among the few candidates (find_duplicates).
    shared = (
        listed.select("list_order", pl.col("session_id").hash(seed=0).alias("_id"))
        .filter(pl.col("_id").is_duplicated())
        .collect()
    )
    if shared.height == 0:
        return Duplicates([], [], [], []), writer
    found = (
        listed.filter(pl.col("list_order").is_in(shared["list_order"].implode()))
        .select("list_order", "session_id", "header_json", "path_bytes", "project_dir", "_part")
        .collect()
    )
    duplicates = find_duplicates(found)
    if not duplicates.orders:
        return duplicates, writer
    part_of = dict(found.select("list_order", "_part").iter_rows())
    by_path = {location.full(name): name for name in files["sessions"]}
    for path in sorted({part_of[order] for order in duplicates.orders}):
        name = by_path[path]
        frame = pl.read_parquet(path, storage_options=location.storage_options, hive_partitioning=False)
        rewritten = PartWriter(location, data_dir, next(tasks))
        rewritten.write("sessions", mark_duplicates(frame, duplicates).to_arrow())
        index = files["sessions"].index(name)
        files["sessions"][index : index + 1] = rewritten.files["sessions"]
        parts.update(rewritten.parts)
        location.delete(name)
    writer.write("problems", _problems_table(duplicate_problems(duplicates)))
    return duplicates, writer


def _problems_table(rows: Iterable[dict[str, Any]]) -> Any:
    """Problems rows as an Arrow table of the problems parts' columns."""
    problems = Columns({**PROBLEM_SCHEMA, **PROBLEM_EXTRA})
    for row in rows:
        problems.add(row)
    problems.flush()
    return problems.table()


def export_archive(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    events: bool = False,
    engine: Engine = "local",
    scheduler: str | None = None,
    incremental: bool = True,
    compression: CompressionOption = "auto",
    jobs: int | None = None,
    batch_size: int | None = None,
    progress: Progress | None = None,
    storage_options: dict[str, Any] | None = None,
    allow_empty: bool = True,
) -> dict[str, Any]:
    """Read a session root and write its frames as a Parquet archive, locally or to an object store.

    Args:
        source: the corpus root (read-only; never written to).
        out: the archive: a new, empty or archive directory (a ``file:///...`` URL
            names one), or an object-store URL (``s3://bucket/prefix``, ``gs://...``).
        events: also write the events table.
        engine: ``local`` (this machine, a process pool) or ``dask``.
        scheduler: the Dask scheduler address (``tcp://host:8786``); with
            ``engine="dask"`` and no address, a local cluster of ``jobs``
            (default 2) worker processes runs for the call.
        incremental: reuse the facts of files whose path, size, mtime, ctime
            and inode did not change since the archive's last export.
        compression: the encoding to read the root as (``auto`` detects it).
        jobs: local engine: worker processes (default: all cores, ``1`` works
            in-process); dask engine without scheduler: local cluster workers.
        batch_size: most files per read task (default: ``read_batch``, 64 to 256 files,
            more for corpora of over 131,072 files so that at most 512 tasks write parts).
        progress: called with (files done, files to read).
        storage_options: for an object-store ``out``: Polars' object_store
            options (``aws_endpoint_url``, ``aws_access_key_id``,
            ``aws_region``...), used for the manifest, every part the workers
            write and every read of the archive.
        allow_empty: write the archive of a root that holds no session log
            (and no listing failure); ``False`` refuses it before anything is
            committed, so a wrong or unmounted root never replaces an archive.

    Returns:
        The manifest written to ``OUT/manifest.json``.

    Raises:
        CorpusRootError: the root is missing or unreadable.
        CorpusLevelError: the root is a project or a session folder (nothing is written).
        EmptySourceError: ``allow_empty`` is false and the root holds no session log.
        ArchiveError: the target is inside the root, is foreign data, or an
            object-store location cannot be opened.
        EngineError: the Dask engine is missing or unreachable, or its
            workers cannot see the corpus or run other reader code.
        BoundError: ``jobs`` (``bounds.WORKERS``) or ``batch_size`` (``bounds.POSITIVE_COUNT``) out of range.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.synth.writer import header, write_session
        >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> _ = write_session(root, header("a", created_at=1, cwd="/w"), [], "none")
        >>> manifest = export_archive(root, out, jobs=1)
        >>> manifest["row_counts"]["sessions"], manifest["compression"], manifest["update"]["files_read"]
        (1, 'none', 1)
        >>> export_archive(root, out, jobs=1)["update"]["files_read"]
        0
    """
    WORKERS.check("jobs", jobs, optional=True)
    POSITIVE_COUNT.check("batch_size", batch_size, optional=True)
    started = time.perf_counter()
    root = os.fspath(source)
    location = Location(os.fspath(out), storage_options)
    if not location.local:
        arrow_filesystem(location.url, storage_options)  # bad options fail before any work
    top = list_top(root)
    check_level(root, top)  # a project or session folder is refused before the target is touched
    with ExitStack() as stack:
        runner = _Runner(stack, engine, scheduler, jobs, location.local)
        fs_root = os.path.abspath(root) if engine == "dask" else root
        projects = [(index, entry.name) for index, entry in enumerate(top) if entry.is_dir(follow_symlinks=False)]
        chosen = _choose_compression(runner, root, fs_root, projects) if compression == "auto" else compression
        with claim_target(location, root) as claim:
            try:
                manifest, scratch = _export(
                    claim, runner, root, fs_root, chosen, top, projects, events, incremental, batch_size, progress
                )
                if not allow_empty and not manifest["row_counts"]["sessions"] and manifest["listing_error"] is None:
                    raise inputs_below(root) or EmptySourceError(  # a folder above corpus roots names them
                        f"no session log under {root!r}: refusing to export an empty corpus",
                        hint="check the path (is it mounted?); pass --allow-empty (allow_empty=True) to export it",
                    )
            except BaseException as error:
                discard(claim)
                if isinstance(error, OSError):
                    raise output_failure(location.url, error, action="write the archive") from None
                raise
            manifest.update(compression_option=compression, seconds=round(time.perf_counter() - started, 3))
            manifest["update"].update(
                incremental=incremental,
                previous_generation=claim.manifest["generation"] if claim.manifest else None,
                stale_staging=claim.stale,
            )
            try:
                commit(claim, manifest, root=root)
            except BaseException:
                discard(claim)
                raise
            remove_files(location, claim.data_dir, scratch)
            if claim.manifest is not None:
                remove_files(location, claim.manifest["data_dir"], manifest_files(claim.manifest))
    return manifest


def _export(
    claim: Claim,
    runner: _Runner,
    root: str,
    fs_root: str,
    compression: Compression,
    top: list[os.DirEntry[str]],
    projects: list[tuple[int, str]],
    events: bool,
    incremental: bool,
    batch_size: int | None,
    progress: Progress | None,
) -> tuple[dict[str, Any], list[str]]:
    """The manifest of the new generation, once every part is written; and the scratch parts to remove."""
    location, data_dir = claim.location, claim.data_dir
    job = Job(root, fs_root, compression, location, data_dir, events)
    reuse = _reuse(claim.manifest, compression, incremental, location)
    if reuse.reason is None and events and not reuse.has_events:
        reuse = _Reuse(reason="events were requested and the previous archive has none")
    files: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    parts: dict[str, tuple[int, int, str]] = {}

    def take(result: Any) -> None:
        for table, names in result.files.items():
            files.setdefault(table, []).extend(names)
        for table, count in result.rows.items():
            rows[table] = rows.get(table, 0) + count
        parts.update(result.parts)

    # Task numbers name the parts: walk tasks 1..W, then the client's own parts, read tasks, the fix-ups.
    client_tasks = itertools.count(0)
    # Root-level names that are not project directories: problems rows above project level.
    top_rows = [
        dict(
            entry_row(top_entry(entry)), project_dir=None, archive_group=GROUP_ENTRY, archive_order=index, archive_sub=0
        )
        for index, entry in enumerate(top)
        if not entry.is_dir(follow_symlinks=False)
    ]
    writer = PartWriter(location, data_dir, next(client_tasks))
    writer.write("problems", _problems_table(top_rows))
    take(writer)

    walks = [WalkTask(job, 1 + i, group) for i, group in enumerate(_chunks(projects, runner.workers * 4))]
    counts: list[ProjectCount] = []
    walk_part: dict[int, list[str]] = {}
    for walked in runner.map(walk_task, walks):
        assert isinstance(walked, WalkResult)
        take(walked)
        counts.extend(walked.counts)
        for count in walked.counts:
            walk_part[count.top_index] = walked.files.get("_walk", [])
    counts.sort(key=lambda count: count.top_index)
    total = sum(count.files for count in counts)
    names_parts = sorted(files.pop("_names", []))
    walk_parts = files.pop("_walk", [])
    suspicious = _suspicious_names(location, names_parts, data_dir, 1 + len(walks))
    next_task = 2 + len(walks)

    batch = batch_size or read_batch(total, runner.workers)
    # The walked projects (in list order) cut into read tasks of at most ``batch`` files.
    reads: list[ReadTask] = []
    pending: list[Slice] = []
    size = offset = 0

    def close() -> None:
        nonlocal pending, size
        if not pending:
            return
        segments = sorted({partition_segment(frame_text(piece.name)) for piece in pending})
        previous = None
        if reuse.reason is None:
            previous = Previous(
                facts=[name for seg in segments for name in reuse.facts.get(seg, [])],
                events=[name for seg in segments for name in reuse.events.get(seg, [])],
                events_usable=reuse.has_events,
            )
        parts = sorted({name for piece in pending for name in walk_part[piece.top_index]})
        reads.append(ReadTask(job, next_task + len(reads), pending, parts, suspicious, names_parts, previous))
        pending, size = [], 0

    for count in counts:
        start = 0
        while start < count.files:
            stop = min(count.files, start + batch - size)
            pending.append(Slice(count.top_index, count.name, start, stop, offset + start))
            size += stop - start
            start = stop
            if size >= batch:
                close()
        offset += count.files
    close()
    next_task += len(reads)
    results: dict[int, ReadResult] = {}
    done = 0
    for result in runner.map(read_task, reads):
        assert isinstance(result, ReadResult)
        take(result)
        results[result.task] = result
        done += result.files_read + result.files_reused
        if progress is not None:
            progress(done, total)

    fixups = itertools.count(next_task)
    duplicates, fixer = _fix_duplicates(location, data_dir, files, fixups, parts)
    take(fixer)
    failing = min(((count.top_index, *count.failing) for count in counts if count.failing is not None), default=None)
    ordered = [results[task] for task in sorted(results)]
    file_error = first_listing_error(*(r.first_error for r in ordered), duplicates_error(duplicates))
    listing = (failing[2], failing[3]) if failing else (file_error[1], file_error[2]) if file_error else (None, None)
    mixed = total and any(count.mismatch for count in counts)
    if mixed or (not total and listing[0] is None):  # as assemble adds them: read_corpus's problems, row for row
        writer = PartWriter(location, data_dir, next(fixups))
        writer.write("problems", _problems_table([mixed_encodings_row(root) if mixed else empty_root_row(root)]))
        take(writer)
    digest = hashlib.sha256("".join(r.digest for r in ordered).encode())
    runner.detail.update(
        walk_tasks=len(walks), read_tasks=len(reads), batch_size=batch, workers_used=len(runner.workers_seen)
    )
    from importlib.metadata import PackageNotFoundError, version

    from subagent_catalog.version import __version__

    versions = {"subagent_catalog": __version__, "polars": pl.__version__, "python": platform.python_version()}
    for name in ("pyarrow", *(("dask", "distributed") if runner.engine == "dask" else ())):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "unknown"
    return {
        "format": ARCHIVE_FORMAT,
        "format_version": FORMAT_VERSION,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "versions": versions,
        "reader_digest": reader_digest(),
        "root": root,
        "root_abs": os.path.abspath(root),
        "compression": compression,
        "parquet_compression": PARQUET_CODEC,
        "events": events,
        "data_dir": data_dir,
        "generation": claim.generation,
        "listing_error": listing[0],
        "listing_error_path": listing[1],
        "row_counts": {
            "sessions": total,
            "descriptors": rows.get("descriptors", 0),
            "problems": rows.get("problems", 0),
            "events": rows.get("events", 0) if events else None,
            "files": total,
            "projects": sum(1 for count in counts if count.readable),
        },
        "tables": {
            name: {
                "files": files.get(name, []) if name != "events" or events else [],
                "rows": rows.get(name, 0) if name != "events" or events else 0,
                **_file_stats(files.get(name, []) if name != "events" or events else [], parts),
                "partition_by": "project_dir",
                "order_by": TABLE_ORDER[name],
            }
            for name in TABLES
        },
        "fingerprints": {
            "key": ["rel_path_bytes", "size", "mtime_ns", "ctime_ns", "inode"],
            "files": files.get("facts", []),
            "rows": total,
            **_file_stats(files.get("facts", []), parts),
            "cached": sum(r.cached for r in ordered),
            "digest": digest.hexdigest(),
            "partition_by": "project_dir",
            "order_by": TABLE_ORDER["facts"],
        },
        "update": {
            "files_read": sum(r.files_read for r in ordered),
            "files_reused": sum(r.files_reused for r in ordered),
            "events_reused": sum(r.events_reused for r in ordered),
            "damaged_facts": sum(r.damaged for r in ordered),
            "full_read_reason": reuse.reason,
        },
        "engine": runner.detail,
    }, [*walk_parts, *names_parts, *([suspicious] if suspicious else [])]


def _file_stats(names: list[str], parts: dict[str, tuple[int, int, str]]) -> dict[str, list[int] | list[str]]:
    """Per file of a table: ``file_rows``, ``file_bytes`` and ``file_blake2b``, which readers check before reading."""
    if not all(name in parts for name in names):
        return {}
    return {
        "file_rows": [parts[name][0] for name in names],
        "file_bytes": [parts[name][1] for name in names],
        DIGEST_KEY: [parts[name][2] for name in names],
    }


__all__ = ["encode_parquet", "export_archive", "read_batch"]
