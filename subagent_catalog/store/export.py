"""Writing archives: ``export_archive``.

Reads a root once (here or on a Dask cluster) and writes its frames as a new
archive generation, re-reading only the files that changed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl

from subagent_catalog.frames.assemble import assemble
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.outputs import inside, open_output, output_failure
from subagent_catalog.progress import Progress
from subagent_catalog.read.discover import Discovery, choose_compression, discover
from subagent_catalog.read.jsvalue import frame_text
from subagent_catalog.read.logread import LogFacts
from subagent_catalog.read.paths import Compression, CompressionOption
from subagent_catalog.store.codec import FactsRecordError, load_facts, reader_digest
from subagent_catalog.store.distributed import (
    LOCAL_SERIAL_BELOW,
    BatchResult,
    EngineError,
    RootNotVisibleError,
    Task,
    events_frame,
    plan_batches,
    run_dask,
    run_local,
)
from subagent_catalog.store.layout import (
    ARCHIVE_FORMAT,
    FACTS_ROWS_PER_FILE,
    FACTS_SCHEMA,
    GENERATION_DIR,
    LOCK,
    MANIFEST,
    PARQUET_CODEC,
    STAGING_MARKER,
    TABLE_ORDER,
    TRANSIENT_CAUSES,
    ArchiveError,
    Engine,
    TableWriter,
    is_url,
    problem_project,
    rel_key,
)
from subagent_catalog.store.manifest import FORMAT_VERSION, read_manifest_file


def _refuse_overlap(target: str, root: str) -> None:
    """Neither the archive inside the corpus nor the corpus inside the archive (by device and inode)."""
    if inside(target, root):
        raise ArchiveError(
            f"archive target {target!r} lies inside the corpus root {root!r}",
            hint="corpora are read-only: write the archive outside the root",
        )
    if os.path.isdir(target) and inside(root, target):
        raise ArchiveError(
            f"the corpus root {root!r} lies inside the archive target {target!r}",
            hint="write the archive to a directory that does not contain the corpus",
        )


@dataclass
class _Target:
    """The archive directory's state, read under the lock for this export."""

    manifest: dict[str, Any] | None
    generation: int
    stale: list[str]


def _ours(target: str, name: str) -> bool:
    """A generation directory an interrupted export of ours left (it holds the staging marker)."""
    folder = os.path.join(target, name)
    return not os.path.islink(folder) and os.path.isfile(os.path.join(folder, STAGING_MARKER))


@contextlib.contextmanager
def _locked_target(target: str, root: str) -> Iterator[_Target]:
    """Create (if new), check and lock the archive directory for one export."""
    import fcntl

    if is_url(target):
        raise ArchiveError(
            f"export writes local archives only, not {target!r}",
            hint="export to a local directory and copy it to the object store; open_archive reads URLs",
        )
    if os.path.lexists(target) and not os.path.isdir(target):
        raise ArchiveError(f"archive target {target!r} is not a directory", hint="pass a new or archive directory")
    _refuse_overlap(target, root)
    if os.path.isdir(target):
        _inspect_target(target)  # foreign data is refused before anything (even the lock file) is created
    try:
        os.makedirs(target, exist_ok=True)
        lock = os.open(os.path.join(target, LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise output_failure(target, error, action="create the archive") from None
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ArchiveError(
                f"another export is writing to {target!r}",
                hint="wait for it to finish (exports into one archive take turns), or export elsewhere",
            ) from None
        _refuse_overlap(target, root)
        yield _inspect_target(target)
    finally:
        os.close(lock)


def _inspect_target(target: str) -> _Target:
    """The archive directory's manifest and generations; refuses a directory that is not (yet) an archive."""
    manifest = read_manifest_file(target)
    try:
        names = sorted(os.listdir(target))
    except OSError as error:
        raise output_failure(target, error, action="list") from None
    generations = [name for name in names if GENERATION_DIR.fullmatch(name)]
    if manifest is None:
        foreign = [name for name in names if name != LOCK and not (name in generations and _ours(target, name))]
        if foreign:
            raise ArchiveError(
                f"archive target {target!r} is a non-empty directory without an archive manifest "
                f"(it holds {foreign[0]!r})",
                hint="pass a new or empty directory, or an existing archive to update",
            )
    current = manifest["data_dir"] if manifest else None
    stale = [name for name in generations if name != current and _ours(target, name)]
    numbers = [int(name[4:]) for name in generations]
    generation = max([manifest["generation"] if manifest else 0, *numbers]) + 1
    return _Target(manifest, generation, stale)


def _unlink_inside(target: str, relative: str) -> bool:
    """Remove one file named relative to the archive, never through a symbolic link."""
    parts = relative.split("/")
    current = target
    for part in parts[:-1]:
        current = os.path.join(current, part)
        try:
            info = os.lstat(current)
        except OSError:
            return False
        if not stat.S_ISDIR(info.st_mode):
            return False
    path = os.path.join(current, parts[-1])
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        os.unlink(path)
    except OSError:
        return False
    return True


def _remove_generation(target: str, data_dir: str, files: Iterable[str]) -> None:
    """Remove the named files of one generation, then its directories that became empty (nothing else)."""
    for name in files:
        if name.startswith(data_dir + "/"):
            _unlink_inside(target, name)
    _unlink_inside(target, f"{data_dir}/{STAGING_MARKER}")
    base = os.path.join(target, data_dir)
    if os.path.islink(base) or not os.path.isdir(base):
        return
    for folder, _dirs, _files in os.walk(base, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _manifest_files(manifest: dict[str, Any]) -> list[str]:
    tables = manifest["tables"]
    return [name for entry in (*tables.values(), manifest["fingerprints"]) for name in entry["files"]]


@dataclass
class _Previous:
    """What an earlier export into the same archive lets this one reuse."""

    facts: dict[bytes, tuple[int, tuple[int, int, int, int], bytes]]
    has_events: bool
    events_files: list[str]
    reason: str | None


def _previous(out: str, manifest: dict[str, Any] | None, compression: Compression, incremental: bool) -> _Previous:
    none = _Previous({}, False, [], None)
    if manifest is None:
        none.reason = "no previous archive"
        return none
    if not incremental:
        none.reason = "incremental=False"
        return none
    if manifest.get("format_version") != FORMAT_VERSION:
        none.reason = f"archive format {manifest.get('format_version')} != {FORMAT_VERSION}"
        return none
    if manifest.get("reader_digest") != reader_digest():
        none.reason = "the reader code changed since the last export"
        return none
    if manifest.get("compression") != compression:
        none.reason = f"the root was read as {manifest.get('compression')}, now as {compression}"
        return none
    table = manifest["fingerprints"]
    paths = [os.path.join(out, *name.split("/")) for name in table["files"]]
    facts: dict[bytes, tuple[int, tuple[int, int, int, int], bytes]] = {}
    if paths:
        try:
            frame = pl.read_parquet(paths, hive_partitioning=False, glob=False).filter(pl.col("facts").is_not_null())
            rows = frame.select(
                "rel_path_bytes", "list_order", "size", "mtime_ns", "ctime_ns", "inode", "facts"
            ).iter_rows()
            for rel, order, size, mtime, ctime, inode, blob in rows:
                facts[rel] = (order, (size, mtime, ctime, inode), blob)
        except (pl.exceptions.PolarsError, OSError) as error:
            none.reason = f"the previous facts table is unreadable ({type(error).__name__})"
            return none
    has_events = bool(manifest.get("events"))
    events = manifest["tables"]["events"]["files"] if has_events else []
    return _Previous(facts, has_events, events, None)


def _load_or_none(blob: bytes, size: int) -> LogFacts | None:
    """Stored facts, or ``None`` for a damaged or tampered record (it is read again)."""
    try:
        return load_facts(blob, size=size)
    except FactsRecordError:  # a bad record is a miss, never trusted and never fatal
        return None


def _fingerprint_digest(rows: Iterable[tuple[bytes, int, int, int, int]]) -> str:
    digest = hashlib.sha256()
    for rel, size, mtime, ctime, inode in sorted(rows):
        digest.update(rel + f"\0{size}\0{mtime}\0{ctime}\0{inode}\n".encode())
    return digest.hexdigest()


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _versions(engine: Engine) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    from subagent_catalog.version import __version__

    out = {"subagent_catalog": __version__, "polars": pl.__version__, "python": platform.python_version()}
    for name in ("pyarrow", *(("dask", "distributed") if engine == "dask" else ())):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "unknown"
    return out


def _copy_events(out: str, previous: _Previous, remap: dict[int, int], writer: TableWriter) -> int:
    """Carry the events of unchanged files over from the previous generation (one fragment at a time)."""
    if not remap:
        return 0
    mapping = pl.DataFrame(
        {"list_order": list(remap), "new_order": list(remap.values())},
        schema={"list_order": pl.Int64, "new_order": pl.Int64},
    )
    copied = 0
    for name in previous.events_files:
        frame = pl.read_parquet(os.path.join(out, *name.split("/")), hive_partitioning=False, glob=False)
        kept = (
            frame.join(mapping, on="list_order", how="inner", maintain_order="left")
            .with_columns(pl.col("new_order").alias("list_order"))
            .drop("new_order")
        )
        writer.write(kept)
        copied += kept.height
    return copied


def _run_engine(
    engine: Engine,
    batches: list[list[Task]],
    *,
    compression: Compression,
    want_events: bool,
    root: str,
    scheduler: str | None,
    jobs: int | None,
    detail: dict[str, Any],
) -> Iterator[BatchResult]:
    if engine == "local":
        serial = jobs == 1 or sum(len(batch) for batch in batches) < LOCAL_SERIAL_BELOW
        detail["workers"] = 1 if serial else (jobs or os.cpu_count() or 1)
        return run_local(batches, compression=compression, want_events=want_events, root=root, jobs=jobs)
    if engine == "dask":
        return run_dask(
            batches,
            compression=compression,
            want_events=want_events,
            root=root,
            scheduler=scheduler,
            workers=jobs or 2,
            on_start=detail.update,
        )
    raise ValueError(f"engine must be 'local' or 'dask', not {engine!r}")


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
) -> dict[str, Any]:
    """Read a session root and write its frames as a Parquet archive.

    Args:
        source: the corpus root (read-only; never written to).
        out: the archive directory: new, empty, or an archive to update.
        events: also write the events table.
        engine: ``local`` (this machine, a process pool) or ``dask``.
        scheduler: the Dask scheduler address (``tcp://host:8786``); with
            ``engine="dask"`` and no address, a local cluster of ``jobs``
            (default 2) worker processes runs for the call.
        incremental: reuse the facts of files whose path, size and mtime did
            not change since the archive's last export.
        compression: the encoding to read the root as (``auto`` detects it).
        jobs: local engine: worker processes (default: all cores, ``1`` reads
            in-process); dask engine without scheduler: local cluster workers.
        batch_size: most files per task (default 256).
        progress: called with (files done, files to read).

    Returns:
        The manifest written to ``OUT/manifest.json``.

    Raises:
        CorpusRootError: the root is missing or unreadable.
        ArchiveError: the target is inside the root, or is foreign data.
        EngineError: the Dask engine is missing or unreachable, or its
            workers cannot see the corpus or run other reader code.

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
    started = time.perf_counter()
    root = os.fspath(source)
    target = os.fspath(out)
    chosen = choose_compression(root, compression) if os.path.isdir(root) else "zstd"
    found = discover(root, chosen)
    with _locked_target(target, root) as locked:
        manifest_before = locked.manifest
        previous = _previous(target, manifest_before, chosen, incremental)
        data_dir = f"gen-{locked.generation:06d}"
        writers = {name: TableWriter(target, f"{data_dir}/{name}") for name in (*TABLE_ORDER, "facts")}
        try:
            os.mkdir(os.path.join(target, data_dir))
        except OSError as error:
            raise output_failure(target, error, action="write the archive") from None
        try:
            os.close(os.open(os.path.join(target, data_dir, STAGING_MARKER), os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            manifest = _export_into(
                found,
                target,
                writers,
                previous,
                events=events,
                engine=engine,
                scheduler=scheduler,
                jobs=jobs,
                batch_size=batch_size,
                progress=progress,
            )
            manifest.update(
                {
                    "generation": locked.generation,
                    "compression_option": compression,
                    "seconds": round(time.perf_counter() - started, 3),
                }
            )
            manifest["update"]["incremental"] = incremental
            manifest["update"]["full_read_reason"] = previous.reason
            manifest["update"]["previous_generation"] = manifest_before["generation"] if manifest_before else None
            manifest["update"]["stale_staging"] = locked.stale
            with open_output(os.path.join(target, MANIFEST), protected=[root]) as handle:
                json.dump(manifest, handle, indent=1, ensure_ascii=True)
                handle.write("\n")
        except BaseException as error:
            _remove_generation(target, data_dir, [name for writer in writers.values() for name in writer.files])
            if isinstance(error, OSError):
                raise output_failure(target, error, action="write the archive") from None
            raise
        _unlink_inside(target, f"{data_dir}/{STAGING_MARKER}")
        if manifest_before is not None:
            _remove_generation(target, manifest_before["data_dir"], _manifest_files(manifest_before))
    return manifest


def _export_into(
    found: Discovery,
    target: str,
    writers: dict[str, TableWriter],
    previous: _Previous,
    *,
    events: bool,
    engine: Engine,
    scheduler: str | None,
    jobs: int | None,
    batch_size: int | None,
    progress: Progress | None,
) -> dict[str, Any]:
    compression = found.compression
    root_abs = os.path.abspath(found.root)
    rels = [rel_key(f.project_dir, f.session_dir, compression) for f in found.files]
    facts_list: list[LogFacts | None] = [None] * len(found.files)
    blobs: list[bytes | None] = [None] * len(found.files)
    remap: dict[int, int] = {}
    tasks: list[Task] = []
    damaged = 0
    for order, (file, rel) in enumerate(zip(found.files, rels, strict=True)):
        cached = previous.facts.get(rel)
        if (
            cached is not None
            and cached[1] == (file.size, file.mtime_ns, file.ctime_ns, file.inode)
            and (previous.has_events or not events)
        ):
            reused = _load_or_none(cached[2], file.size)
            if reused is not None:
                facts_list[order] = reused
                blobs[order] = cached[2]
                if events:
                    remap[cached[0]] = order
                continue
            damaged += 1
        # The local engine opens the path as read_corpus does (messages name it the same way);
        # remote workers need an absolute path (their working directory is not ours).
        source = file.source if engine == "local" else os.path.abspath(file.source)
        tasks.append((order, source, frame_text(file.project_dir) or ""))

    facts_writer = writers["facts"]
    data_dir = facts_writer.relative.split("/")[0]
    workers_seen: set[str] = set()
    detail: dict[str, Any] = {"name": engine}
    workers_hint = jobs or (2 if engine == "dask" else (os.cpu_count() or 1))
    batches = plan_batches(tasks, workers=workers_hint, batch_size=batch_size)
    done = 0
    local_reads: list[int] = []
    try:
        results = _run_engine(
            engine,
            batches,
            compression=compression,
            want_events=events,
            root=root_abs,
            scheduler=scheduler,
            jobs=jobs,
            detail=detail,
        )
        for result in results:
            if result.reader != reader_digest():
                raise EngineError(
                    f"worker {result.worker} runs different subagent_catalog reader code than this client",
                    hint="install the same subagent_catalog version on the client and every worker",
                )
            workers_seen.add(result.worker)
            for order, blob in result.facts:
                if blob is None:
                    local_reads.append(order)
                else:
                    facts_list[order] = load_facts(blob)
                    blobs[order] = blob
            if result.events is not None:
                writers["events"].write(result.events)
            done += len(result.facts)
            if progress is not None:
                progress(done, len(tasks))
    except RootNotVisibleError as error:
        raise EngineError(str(error), hint="every worker must see the corpus root at the same path") from error
    if local_reads:
        _read_here(local_reads, tasks, facts_list, writers["events"], compression, events)
    events_reused = _copy_events(target, previous, remap, writers["events"]) if events else 0

    complete = [facts for facts in facts_list if facts is not None]
    if len(complete) != len(facts_list):
        raise EngineError("the engine returned no facts for some files", hint="re-run the export")
    corpus = assemble(found, complete)
    _write_frames(corpus, found, writers)
    _write_facts(found, rels, facts_list, blobs, facts_writer)

    tables = {name: writers[name].entry(TABLE_ORDER[name]) for name in ("sessions", "descriptors", "problems")}
    tables["events"] = writers["events"].entry(TABLE_ORDER["events"])
    fingerprints = [(rel, f.size, f.mtime_ns, f.ctime_ns, f.inode) for rel, f in zip(rels, found.files, strict=True)]
    detail["batches"] = len(batches)
    detail["batch_size"] = max((len(b) for b in batches), default=0)
    detail["workers_used"] = len(workers_seen)
    return {
        "format": ARCHIVE_FORMAT,
        "format_version": FORMAT_VERSION,
        "created_at": _now(),
        "versions": _versions(engine),
        "reader_digest": reader_digest(),
        "root": found.root,
        "root_abs": root_abs,
        "compression": compression,
        "parquet_compression": PARQUET_CODEC,
        "events": events,
        "data_dir": data_dir,
        "listing_error": corpus.listing_error,
        "listing_error_path": corpus.listing_error_path,
        "row_counts": {
            "sessions": corpus.sessions.height,
            "descriptors": corpus.descriptors.height,
            "problems": corpus.problems.height,
            "events": writers["events"].rows if events else None,
            "files": len(found.files),
            "projects": len(found.project_names),
        },
        "tables": tables,
        "fingerprints": {
            "key": ["rel_path_bytes", "size", "mtime_ns", "ctime_ns", "inode"],
            "files": facts_writer.files,
            "rows": len(fingerprints),
            "cached": sum(1 for blob in blobs if blob is not None),
            "digest": _fingerprint_digest(fingerprints),
        },
        "update": {
            "files_read": len(tasks),
            "files_reused": len(found.files) - len(tasks),
            "events_reused": events_reused,
            "read_here": len(local_reads),
            "damaged_facts": damaged,
        },
        "engine": detail,
    }


def _read_here(
    orders: list[int],
    tasks: list[Task],
    facts_list: list[LogFacts | None],
    events_writer: TableWriter,
    compression: Compression,
    events: bool,
) -> None:
    """Files whose facts could not travel as a record (over the record size cap): read on the client."""
    from subagent_catalog.read import logread

    by_order = {task[0]: task for task in tasks}
    for order in orders:
        task = by_order[order]
        facts = logread.read_log_file(task[1], compression, want_events=events, exact_path=True)
        if events:
            events_writer.write(events_frame([(order, task[2], facts.events or [])]))
        facts.events = None
        facts_list[order] = facts


def _write_frames(corpus: Corpus, found: Discovery, writers: dict[str, TableWriter]) -> None:
    writers["sessions"].write(corpus.sessions)
    project_of = dict(corpus.sessions.select("path", "project_dir").iter_rows())
    descriptors = corpus.descriptors.with_columns(
        pl.col("path").replace_strict(project_of, default=None, return_dtype=pl.String).alias("project_dir"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("archive_row"),
    )
    writers["descriptors"].write(descriptors)
    raw_paths = corpus.problems["path_bytes"].to_list()
    projects = [problem_project(path, found.root, found.project_names) for path in raw_paths]
    problems = corpus.problems.with_columns(
        pl.Series("project_dir", projects, dtype=pl.String),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("archive_row"),
    )
    writers["problems"].write(problems)


def _write_facts(
    found: Discovery,
    rels: list[bytes],
    facts_list: list[LogFacts | None],
    blobs: list[bytes | None],
    writer: TableWriter,
) -> None:
    rows = []
    for order, (file, rel, facts, blob) in enumerate(zip(found.files, rels, facts_list, blobs, strict=True)):
        cacheable = blob is not None and facts is not None and facts.read_cause not in TRANSIENT_CAUSES
        rows.append(
            (
                rel.decode("utf-8", "backslashreplace"),
                rel,
                frame_text(file.project_dir),
                order,
                file.size,
                file.mtime_ns,
                file.ctime_ns,
                file.inode,
                blob if cacheable else None,
            )
        )
    for start in range(0, len(rows), FACTS_ROWS_PER_FILE):
        chunk = rows[start : start + FACTS_ROWS_PER_FILE]
        writer.write(pl.DataFrame(chunk, schema=FACTS_SCHEMA, orient="row"), partitioned=False)
