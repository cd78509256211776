"""Archives: a corpus's derived frames as a partitioned Parquet dataset.

:func:`export_archive` reads a session root once (here, or sharded across a
Dask cluster, see :mod:`subagent_catalog.distributed`) and writes the
``sessions``, ``descriptors``, ``problems`` and optionally ``events`` frames
as Parquet files partitioned by project directory, plus ``manifest.json``.
:func:`open_archive` gives them back as Polars LazyFrames (local paths or
object-store URLs) and as a :class:`~subagent_catalog.corpus.Corpus` the
catalog accepts, so a catalog over an archive has the same rows as over the
raw corpus.

Layout (``gen-NNNNNN`` is replaced whole by every export; the manifest names
the current one and every data file)::

    OUT/manifest.json
    OUT/gen-000001/sessions/project_dir=<dir>/part-000000.parquet
    OUT/gen-000001/descriptors/project_dir=<dir>/part-000000.parquet
    OUT/gen-000001/problems/project_dir=<dir>/part-000000.parquet
    OUT/gen-000001/events/project_dir=<dir>/part-000000.parquet
    OUT/gen-000001/facts/part-000000.parquet

Each file also holds the ``project_dir`` column, so readers take the value
from the data, not from the directory name (project directories whose names
are not URL-safe get a hashed directory name).

Re-exporting into an archive re-reads only the files whose
``(path, size, mtime_ns)`` changed: the ``facts`` table keeps, per file, the
pickled :class:`~subagent_catalog.logread.LogFacts` of the last read. These
pickles are of our own dataclass, written by this module from parsed JSON
values; they are loaded with an unpickler that admits only those dataclasses
(never anything from corpus content, never arbitrary classes).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import re
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from subagent_catalog.corpus import (
    DESCRIPTOR_SCHEMA,
    EVENT_SCHEMA,
    PROBLEM_SCHEMA,
    SESSION_SCHEMA,
    CompressionOption,
    Corpus,
    Progress,
    _choose_compression,
    assemble,
)
from subagent_catalog.discover import Discovery, discover
from subagent_catalog.distributed import (
    EVENT_EXTRA,
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
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.facts_codec import load_facts, reader_digest
from subagent_catalog.jsvalue import frame_text
from subagent_catalog.logread import LogFacts
from subagent_catalog.paths import Compression

Engine = Literal["local", "dask"]
Table = Literal["sessions", "descriptors", "problems", "events"]

ARCHIVE_FORMAT = "subagent-catalog-archive"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
PARQUET_CODEC: Literal["zstd"] = "zstd"
FACTS_ROWS_PER_FILE = 65_536
TRANSIENT_CAUSES = frozenset({"io-error", "unstable-file"})
"""Read failures that say nothing about the file's bytes: never cached."""

ROW_EXTRA: dict[str, Any] = {"project_dir": pl.String, "archive_row": pl.Int64}
"""Columns the descriptors and problems tables add: the partition key and the frame's row order."""

FACTS_SCHEMA: dict[str, Any] = {
    "rel_path": pl.String,
    "rel_path_bytes": pl.Binary,
    "project_dir": pl.String,
    "list_order": pl.Int64,
    "size": pl.Int64,
    "mtime_ns": pl.Int64,
    "facts": pl.Binary,
}

TABLE_SCHEMAS: dict[str, dict[str, Any]] = {
    "sessions": SESSION_SCHEMA,
    "descriptors": {**DESCRIPTOR_SCHEMA, **ROW_EXTRA},
    "problems": {**PROBLEM_SCHEMA, **ROW_EXTRA},
    "events": {**EVENT_SCHEMA, **EVENT_EXTRA},
    "facts": FACTS_SCHEMA,
}
TABLE_ORDER: dict[str, list[str]] = {
    "sessions": ["list_order"],
    "descriptors": ["archive_row"],
    "problems": ["archive_row"],
    "events": ["list_order", "event_index"],
}

_SAFE_SEGMENT = re.compile(r"[A-Za-z0-9._~-]{1,200}")
_GENERATION = re.compile(r"gen-(\d{6})")
_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


class ArchiveError(SubagentCatalogError):
    """An archive cannot be written or read (bad target, missing manifest, foreign format)."""


# --------------------------------------------------------------------------- writing


def partition_segment(value: str | None) -> str:
    """The directory name of one ``project_dir`` partition.

    URL-safe names are kept as they are (every name upstream writes is);
    ``None`` is Hive's default partition; any other name becomes a digest
    (the true value is in the ``project_dir`` column of the files).

    Examples:
        >>> partition_segment("--home-dev-app--"), partition_segment(None)
        ('project_dir=--home-dev-app--', 'project_dir=__HIVE_DEFAULT_PARTITION__')
        >>> partition_segment("a b=c")
        'project_dir=_h442f4def38b0cce061a8ef14'
    """
    if value is None:
        return f"project_dir={_NULL_PARTITION}"
    if _SAFE_SEGMENT.fullmatch(value) and value not in (".", "..", _NULL_PARTITION):
        return f"project_dir={value}"
    return "project_dir=_h" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass
class _TableWriter:
    """Writes one table's fragments under ``base`` and remembers them (relative to the archive)."""

    archive: str
    relative: str
    files: list[str] = field(default_factory=list)
    rows: int = 0

    def write(self, frame: pl.DataFrame, *, partitioned: bool = True) -> None:
        if frame.height == 0:
            return
        groups: Iterable[tuple[Any, pl.DataFrame]]
        if partitioned:
            parts = frame.partition_by("project_dir", maintain_order=True, as_dict=True)
            groups = ((key[0], part) for key, part in parts.items())
        else:
            groups = [(None, frame)]
        for value, part in groups:
            folder = f"{self.relative}/{partition_segment(value)}" if partitioned else self.relative
            name = f"{folder}/part-{len(self.files):06d}.parquet"
            target = os.path.join(self.archive, *name.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            part.write_parquet(target, compression=PARQUET_CODEC)
            self.files.append(name)
            self.rows += part.height

    def entry(self, order: list[str] | None) -> dict[str, Any]:
        return {"files": list(self.files), "rows": self.rows, "partition_by": "project_dir", "order_by": order}


def _rel_key(file_project: str, file_session: str, compression: Compression) -> bytes:
    """A log's path below the root, exact (file names need not be UTF-8)."""
    from subagent_catalog.paths import log_name

    return os.fsencode(f"{file_project}/{file_session}/{log_name(compression)}")


def _problem_project(path_bytes: bytes | None, root: str, projects: dict[str, set[str]]) -> str | None:
    """The project directory a problem lies in (``None`` at or above root level)."""
    if path_bytes is None:
        return None
    path = os.fsdecode(path_bytes)
    prefix = root.rstrip(os.sep) + os.sep
    if not path.startswith(prefix):
        return None
    parts = path[len(prefix) :].split(os.sep)
    if len(parts) > 1 or parts[0] in projects:
        return frame_text(parts[0])
    return None


def _inside(child: str, parent: str) -> bool:
    child_real, parent_real = os.path.realpath(child), os.path.realpath(parent)
    return child_real == parent_real or child_real.startswith(parent_real.rstrip(os.sep) + os.sep)


def _read_manifest_file(out: str) -> dict[str, Any] | None:
    path = os.path.join(out, MANIFEST)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        manifest: dict[str, Any] = json.load(handle)
    if manifest.get("format") != ARCHIVE_FORMAT:
        raise ArchiveError(
            f"{path!r} is not a subagent_catalog archive manifest",
            hint="choose another output directory; an export never overwrites foreign data",
        )
    return manifest


def _prepare_target(out: str, root: str) -> dict[str, Any] | None:
    if _inside(out, root):
        raise ArchiveError(
            f"archive target {out!r} lies inside the corpus root {root!r}",
            hint="corpora are read-only: write the archive outside the root",
        )
    if os.path.exists(out) and not os.path.isdir(out):
        raise ArchiveError(f"archive target {out!r} is not a directory", hint="pass a new or archive directory")
    if not os.path.isdir(out):
        return None
    manifest = _read_manifest_file(out)
    if manifest is None:
        foreign = [name for name in os.listdir(out) if not _GENERATION.fullmatch(name) and name != MANIFEST + ".tmp"]
        if foreign:
            raise ArchiveError(
                f"archive target {out!r} is a non-empty directory without an archive manifest",
                hint="pass a new or empty directory, or an existing archive to update",
            )
    return manifest


@dataclass
class _Previous:
    """What an earlier export into the same archive lets this one reuse."""

    facts: dict[bytes, tuple[int, int, int, bytes]]
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
    facts: dict[bytes, tuple[int, int, int, bytes]] = {}
    if paths:
        frame = pl.read_parquet(paths, hive_partitioning=False).filter(pl.col("facts").is_not_null())
        for rel, order, size, mtime, blob in frame.select(
            "rel_path_bytes", "list_order", "size", "mtime_ns", "facts"
        ).iter_rows():
            facts[rel] = (order, size, mtime, blob)
    has_events = bool(manifest.get("events"))
    events = manifest["tables"]["events"]["files"] if has_events else []
    return _Previous(facts, has_events, events, None)


def _fingerprint_digest(rows: Iterable[tuple[bytes, int, int]]) -> str:
    digest = hashlib.sha256()
    for rel, size, mtime in sorted(rows):
        digest.update(rel + f"\0{size}\0{mtime}\n".encode())
    return digest.hexdigest()


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _versions(engine: Engine) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    from subagent_catalog import __version__

    out = {"subagent_catalog": __version__, "polars": pl.__version__, "python": platform.python_version()}
    for name in ("pyarrow", *(("dask", "distributed") if engine == "dask" else ())):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "unknown"
    return out


def _copy_events(out: str, previous: _Previous, remap: dict[int, int], writer: _TableWriter) -> int:
    """Carry the events of unchanged files over from the previous generation (one fragment at a time)."""
    if not remap:
        return 0
    mapping = pl.DataFrame(
        {"list_order": list(remap), "new_order": list(remap.values())},
        schema={"list_order": pl.Int64, "new_order": pl.Int64},
    )
    copied = 0
    for name in previous.events_files:
        frame = pl.read_parquet(os.path.join(out, *name.split("/")), hive_partitioning=False)
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
        >>> from subagent_catalog.writer import header, write_session
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
    chosen = _choose_compression(root, compression) if os.path.isdir(root) else "zstd"
    found = discover(root, chosen)
    manifest_before = _prepare_target(target, root)
    previous = _previous(target, manifest_before, chosen, incremental)
    generation = (manifest_before["generation"] + 1) if manifest_before else 1
    data_dir = f"gen-{generation:06d}"
    staging = os.path.join(target, data_dir)
    if os.path.isdir(staging):
        shutil.rmtree(staging)  # a crashed earlier export of the same generation
    os.makedirs(staging)

    try:
        manifest = _export_into(
            found,
            target,
            data_dir,
            previous,
            events=events,
            engine=engine,
            scheduler=scheduler,
            jobs=jobs,
            batch_size=batch_size,
            progress=progress,
        )
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    manifest.update(
        {
            "generation": generation,
            "compression_option": compression,
            "seconds": round(time.perf_counter() - started, 3),
        }
    )
    manifest["update"]["incremental"] = incremental
    manifest["update"]["full_read_reason"] = previous.reason
    manifest["update"]["previous_generation"] = manifest_before["generation"] if manifest_before else None
    temporary = os.path.join(target, MANIFEST + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1, ensure_ascii=True)
        handle.write("\n")
    os.replace(temporary, os.path.join(target, MANIFEST))
    for name in os.listdir(target):
        if _GENERATION.fullmatch(name) and name != data_dir:
            shutil.rmtree(os.path.join(target, name), ignore_errors=True)
    return manifest


def _export_into(
    found: Discovery,
    target: str,
    data_dir: str,
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
    rels = [_rel_key(f.project_dir, f.session_dir, compression) for f in found.files]
    facts_list: list[LogFacts | None] = [None] * len(found.files)
    blobs: list[bytes | None] = [None] * len(found.files)
    remap: dict[int, int] = {}
    tasks: list[Task] = []
    for order, (file, rel) in enumerate(zip(found.files, rels, strict=True)):
        cached = previous.facts.get(rel)
        if (
            cached is not None
            and cached[1] == file.size
            and cached[2] == file.mtime_ns
            and (previous.has_events or not events)
        ):
            facts_list[order] = load_facts(cached[3])
            blobs[order] = cached[3]
            if events:
                remap[cached[0]] = order
            continue
        # The local engine opens the path as read_corpus does (messages name it the same way);
        # remote workers need an absolute path (their working directory is not ours).
        source = file.source if engine == "local" else os.path.abspath(file.source)
        tasks.append((order, source, frame_text(file.project_dir) or ""))

    writers = {
        name: _TableWriter(target, f"{data_dir}/{name}") for name in ("sessions", "descriptors", "problems", "events")
    }
    facts_writer = _TableWriter(target, f"{data_dir}/facts")
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
    fingerprints = [(rel, f.size, f.mtime_ns) for rel, f in zip(rels, found.files, strict=True)]
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
            "key": ["rel_path_bytes", "size", "mtime_ns"],
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
        },
        "engine": detail,
    }


def _read_here(
    orders: list[int],
    tasks: list[Task],
    facts_list: list[LogFacts | None],
    events_writer: _TableWriter,
    compression: Compression,
    events: bool,
) -> None:
    """Files whose facts could not travel as a pickle (pathologically deep JSON): read on the client."""
    from subagent_catalog import logread

    by_order = {task[0]: task for task in tasks}
    for order in orders:
        task = by_order[order]
        facts = logread.read_log_file(task[1], compression, want_events=events, exact_path=True)
        if events:
            events_writer.write(events_frame([(order, task[2], facts.events or [])]))
        facts.events = None
        facts_list[order] = facts


def _write_frames(corpus: Corpus, found: Discovery, writers: dict[str, _TableWriter]) -> None:
    writers["sessions"].write(corpus.sessions)
    project_of = dict(corpus.sessions.select("path", "project_dir").iter_rows())
    descriptors = corpus.descriptors.with_columns(
        pl.col("path").replace_strict(project_of, default=None, return_dtype=pl.String).alias("project_dir"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("archive_row"),
    )
    writers["descriptors"].write(descriptors)
    raw_paths = corpus.problems["path_bytes"].to_list()
    projects = [_problem_project(path, found.root, found.project_names) for path in raw_paths]
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
    writer: _TableWriter,
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
                blob if cacheable else None,
            )
        )
    for start in range(0, len(rows), FACTS_ROWS_PER_FILE):
        chunk = rows[start : start + FACTS_ROWS_PER_FILE]
        writer.write(pl.DataFrame(chunk, schema=FACTS_SCHEMA, orient="row"), partitioned=False)


# --------------------------------------------------------------------------- reading


def _is_url(path: str) -> bool:
    return "://" in path


def _join(base: str, relative: str) -> str:
    if _is_url(base):
        return base.rstrip("/") + "/" + relative
    return os.path.join(base, *relative.split("/"))


def _read_text(location: str) -> str:
    if not _is_url(location):
        with open(location, encoding="utf-8") as handle:
            return handle.read()
    import importlib

    fs: Any = importlib.import_module("pyarrow.fs")
    filesystem, inner = fs.FileSystem.from_uri(location)
    with filesystem.open_input_stream(inner) as stream:
        data: bytes = stream.read()
    return data.decode("utf-8")


class ArchiveCorpus(Corpus):
    """A :class:`Corpus` collected from an archive; its events come from the archive when it holds them."""

    _archive: Archive | None = None

    @property
    def events(self) -> pl.DataFrame:
        """Every event of every readable log (from the archive, or re-read from the root)."""
        if self._events is None and self._archive is not None:
            if self._archive.has_events:
                self._events = (
                    self._archive.events.sort(TABLE_ORDER["events"], maintain_order=True)
                    .select(list(EVENT_SCHEMA))
                    .collect()
                )
            elif not os.path.isdir(self.root):
                raise ArchiveError(
                    "this archive holds no events and its corpus root is not here",
                    hint="re-export with events=True, or open the archive where the root exists",
                )
        return super().events


@dataclass
class Archive:
    """An opened archive: its manifest and its tables as LazyFrames.

    Attributes:
        path: the archive directory or object-store URL.
        manifest: the parsed ``manifest.json``.
        storage_options: passed to Polars for object-store URLs.
    """

    path: str
    manifest: dict[str, Any]
    storage_options: dict[str, Any] | None = None
    _corpus: ArchiveCorpus | None = field(default=None, repr=False)

    @property
    def root(self) -> str:
        """The corpus root the archive was exported from."""
        return str(self.manifest["root"])

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
    def has_events(self) -> bool:
        """Whether the archive holds the events table."""
        return bool(self.manifest.get("events"))

    def scan(self, table: Table | Literal["facts"]) -> pl.LazyFrame:
        """One table as a LazyFrame (files listed in the manifest, no directory listing).

        Examples:
            >>> import tempfile
            >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
            >>> _ = export_archive(root, out, jobs=1)
            >>> open_archive(out).scan("sessions").collect().height
            0
        """
        entry = self.manifest["fingerprints"] if table == "facts" else self.manifest["tables"][table]
        files = entry["files"]
        if not files:
            return pl.LazyFrame(schema=TABLE_SCHEMAS[table])
        return pl.scan_parquet(
            [_join(self.path, name) for name in files],
            hive_partitioning=False,
            storage_options=self.storage_options,
        )

    @property
    def sessions(self) -> pl.LazyFrame:
        """The sessions table (``list_order`` gives upstream's list() order)."""
        return self.scan("sessions")

    @property
    def descriptors(self) -> pl.LazyFrame:
        """The descriptors table (plus ``project_dir`` and ``archive_row``, the corpus frame's order)."""
        return self.scan("descriptors")

    @property
    def problems(self) -> pl.LazyFrame:
        """The problems table (plus ``project_dir``, null above project level, and ``archive_row``)."""
        return self.scan("problems")

    @property
    def events(self) -> pl.LazyFrame:
        """The events table (plus ``project_dir``, ``list_order`` and ``event_index``).

        Raises:
            ArchiveError: the archive was exported without events.
        """
        if not self.has_events:
            raise ArchiveError("this archive holds no events table", hint="re-export with events=True")
        return self.scan("events")

    @property
    def fingerprints(self) -> pl.LazyFrame:
        """Per file: ``rel_path`` (exact in ``rel_path_bytes``), ``size``, ``mtime_ns``: the incremental key."""
        return self.scan("facts").select("rel_path", "rel_path_bytes", "project_dir", "list_order", "size", "mtime_ns")

    def to_corpus(self, *, events: bool = False) -> Corpus:
        """Collect the frames into a Corpus (cached; the catalog accepts it).

        Args:
            events: also collect the events table now (else on first use).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> from subagent_catalog.writer import header, write_session
            >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
            >>> _ = write_session(root, header("a", created_at=1), [], "none")
            >>> _ = export_archive(root, out, jobs=1)
            >>> open_archive(out).to_corpus().sessions.equals(read_corpus(root).sessions)
            True
        """
        if self._corpus is None:
            sessions = self.sessions.sort("list_order").select(list(SESSION_SCHEMA)).collect()
            descriptors = self.descriptors.sort("archive_row").select(list(DESCRIPTOR_SCHEMA)).collect()
            problems = self.problems.sort("archive_row").select(list(PROBLEM_SCHEMA)).collect()
            corpus = ArchiveCorpus(
                root=self.root,
                compression=self.compression,
                sessions=sessions.cast(pl.Schema(SESSION_SCHEMA)),
                descriptors=descriptors.cast(pl.Schema(DESCRIPTOR_SCHEMA)),
                problems=problems.cast(pl.Schema(PROBLEM_SCHEMA)),
                listing_error=self.listing_error,
                listing_error_path=self.manifest.get("listing_error_path"),
            )
            corpus._archive = self
            self._corpus = corpus
        if events:
            _ = self._corpus.events
        return self._corpus

    def __repr__(self) -> str:
        counts = self.manifest.get("row_counts", {})
        state = f"listing fails: {self.listing_error}" if self.listing_error else "listing ok"
        return (
            f"Archive({self.path!r}, root={self.root!r}, {self.compression}, {counts.get('sessions')} sessions, "
            f"events={'yes' if self.has_events else 'no'}, {state})"
        )


def open_archive(path: str | os.PathLike[str], *, storage_options: dict[str, Any] | None = None) -> Archive:
    """Open an archive written by :func:`export_archive`.

    Args:
        path: the archive directory, or an object-store URL (``s3://bucket/a``,
            ``gs://...``, ``file:///...``). The manifest is read with
            ``pyarrow.fs`` (credentials from the environment); the tables are
            scanned by Polars with ``storage_options``.
        storage_options: Polars' object-store options.

    Raises:
        ArchiveError: no manifest, or a manifest of another format or version.

    Examples:
        >>> import tempfile
        >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> _ = export_archive(root, out, jobs=1)
        >>> open_archive(out).listing_error is None
        True
    """
    location = os.fspath(path)
    manifest_path = _join(location, MANIFEST)
    try:
        manifest = json.loads(_read_text(manifest_path))
    except FileNotFoundError as error:
        raise ArchiveError(
            f"no archive manifest at {manifest_path!r}", hint="export one with export_archive"
        ) from error
    except OSError as error:
        raise ArchiveError(f"cannot read {manifest_path!r}: {error}", hint="check the path and credentials") from error
    if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
        raise ArchiveError(f"{manifest_path!r} is not a subagent_catalog archive manifest", hint="check the path")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ArchiveError(
            f"archive format version {manifest.get('format_version')} is not {FORMAT_VERSION}",
            hint="re-export the archive with this version of subagent_catalog",
        )
    return Archive(path=location, manifest=manifest, storage_options=storage_options)
