"""The archive's on-disk layout.

The manifest, generations, table schemas, partition names and the
partitioned Parquet writer; local paths and object-store URLs alike.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.rows import DESCRIPTOR_KEYS, PROBLEM_KEYS
from subagent_catalog.frames.schemas import DESCRIPTOR_SCHEMA, EVENT_SCHEMA, PROBLEM_SCHEMA, SESSION_SCHEMA
from subagent_catalog.frames.units import calendar_only
from subagent_catalog.read.jsvalue import frame_text
from subagent_catalog.read.paths import Compression

Engine = Literal["local", "dask"]


Table = Literal["sessions", "descriptors", "problems", "events"]


ARCHIVE_FORMAT = "subagent-catalog-archive"


MANIFEST = "manifest.json"


FACTS_ROWS_PER_FILE = 65_536


TRANSIENT_CAUSES = frozenset({"io-error", "unstable-file"})
"""Read failures that say nothing about the file's bytes: never cached."""


SESSIONS_SINCE_7: dict[str, Any] = {
    name: SESSION_SCHEMA[name]
    for name in (
        "active_ms",
        "tool_busy_ms",
        "last_context_tokens",
        "peak_context_tokens",
        "context_window",
        "peak_context_share",
    )
}
"""``sessions`` columns an archive holds since format 7; reading an older one gives them as nulls (not known)."""


def with_columns_since_7(sessions: pl.LazyFrame, format_version: Any) -> pl.LazyFrame:
    """The sessions table of an archive of this format, the ``SESSIONS_SINCE_7`` columns null if it is older.

    Examples:
        >>> with_columns_since_7(pl.LazyFrame({"list_order": [0]}), 6).collect()["active_ms"].to_list()
        [None]
    """
    if isinstance(format_version, int) and format_version >= 7:
        return sessions
    present = sessions.collect_schema()
    missing = [pl.lit(None, kind).alias(name) for name, kind in SESSIONS_SINCE_7.items() if name not in present]
    return sessions.with_columns(missing) if missing else sessions


SESSION_TIMES = ("created_at", "first_event_at", "last_event_at")
"""The ``sessions`` ``Datetime`` columns of a log's times (each beside its exact ``*_ms`` column)."""


def table_view(table: str, files: pl.LazyFrame, format_version: Any) -> pl.LazyFrame:
    """A table as readers see it, from its files in an archive of this format.

    The events files' ``data_text`` is joined back into ``text`` (format 6 on, ``joined_text``); a sessions
    table before format 7 gets the ``SESSIONS_SINCE_7`` columns, null (``with_columns_since_7``), and its
    ``SESSION_TIMES`` are null outside years 1 to 9999 as a read corpus's are (``calendar_only``: an archive
    written before that rule holds them).

    Examples:
        >>> times = {name: pl.Series([2**53 - 1]).cast(pl.Datetime("ms", "UTC")) for name in SESSION_TIMES}
        >>> sessions = table_view("sessions", pl.LazyFrame({"list_order": [0], **times}), 6).collect()
        >>> sessions.schema["context_window"], sessions["created_at"].to_list()
        (Int64, [None])
    """
    version = format_version if isinstance(format_version, int) else 0
    if table == "events" and version >= 6:
        return joined_text(files)
    if table != "sessions":
        return files
    return calendar_only(with_columns_since_7(files, version), SESSION_TIMES)


EVENT_EXTRA: dict[str, Any] = {"project_dir": pl.String, "list_order": pl.Int64, "event_index": pl.Int64}
"""Columns the archive's events table adds to ``EVENT_SCHEMA``."""

DATA_TEXT = "data_text"
"""The events files' column (format 6) holding the ``text`` of events whose type is not one of
``TEXT_TYPES`` (a request header's strings, say); their ``text`` column is null there, so a search of
the message and tool types decompresses only their text. Reading the table puts it back into ``text``."""

EVENT_FILE_EXTRA: dict[str, Any] = {DATA_TEXT: pl.String}
"""Columns the events files hold beyond the table's (``TABLE_SCHEMAS`` has them; readers never see them)."""


def joined_text(files: pl.LazyFrame) -> pl.LazyFrame:
    """The events table from its files (format 6): ``data_text`` put back into ``text``, then dropped.

    Examples:
        >>> files = pl.LazyFrame({"type": ["user/message", "request/header"], "text": ["hi", None],
        ...     "data_text": [None, "model-x"]})
        >>> joined_text(files).collect().rows()
        [('user/message', 'hi'), ('request/header', 'model-x')]
    """
    return files.with_columns(pl.coalesce("text", DATA_TEXT).alias("text")).drop(DATA_TEXT)


DESCRIPTOR_EXTRA: dict[str, Any] = {"project_dir": pl.String, **DESCRIPTOR_KEYS}
"""Columns the descriptors table adds: the partition key and the row's sort keys (format 3)."""

PROBLEM_EXTRA: dict[str, Any] = {"project_dir": pl.String, **PROBLEM_KEYS}
"""Columns the problems table adds: the partition key (null above project level) and the sort keys (format 3)."""


FACTS_SCHEMA: dict[str, Any] = {
    "rel_path": pl.String,
    "rel_path_bytes": pl.Binary,
    "project_dir": pl.String,
    "list_order": pl.Int64,
    "size": pl.Int64,
    "mtime_ns": pl.Int64,
    "ctime_ns": pl.Int64,
    "inode": pl.UInt64,
    "facts": pl.Binary,
}


TABLE_SCHEMAS: dict[str, dict[str, Any]] = {
    "sessions": SESSION_SCHEMA,
    "descriptors": {**DESCRIPTOR_SCHEMA, **DESCRIPTOR_EXTRA},
    "problems": {**PROBLEM_SCHEMA, **PROBLEM_EXTRA},
    "events": {**EVENT_SCHEMA, **EVENT_EXTRA, **EVENT_FILE_EXTRA},
    "facts": FACTS_SCHEMA,
}
"""Each table's files' columns (the events files' ``data_text`` since format 6)."""


TABLE_ORDER: dict[str, list[str]] = {
    "sessions": ["list_order"],
    "descriptors": list(DESCRIPTOR_KEYS),
    "problems": list(PROBLEM_KEYS),
    "events": ["list_order", "event_index"],
    "facts": ["list_order"],
}
"""Each table's row order (format 3; a manifest names its own in ``order_by``)."""


SAFE_SEGMENT = re.compile(r"[A-Za-z0-9._~-]{1,200}")


GENERATION_DIR = re.compile(r"gen-(\d{6})")


LOCK = ".lock"
"""The file an export holds an exclusive ``flock`` on while it writes (never deleted)."""


STAGING_MARKER = ".staging"
"""The file in a generation directory an export is still writing (removed once the manifest names it)."""


NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
PARQUET_CODEC: Literal["zstd"] = "zstd"


class ArchiveError(SubagentCatalogError):
    """An archive cannot be written or read (bad target, missing manifest, foreign format)."""


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
        return f"project_dir={NULL_PARTITION}"
    if SAFE_SEGMENT.fullmatch(value) and value not in (".", "..", NULL_PARTITION):
        return f"project_dir={value}"
    return "project_dir=_h" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def write_part(frame: pl.DataFrame, path: str) -> None:
    """Write one new Parquet part (created exclusively: never a planted file or link).

    The part is encoded in memory (it is compressed, so smaller than the
    frame) and written with plain file I/O, so a full disk or a permission
    problem is an ``OSError`` naming its cause (Polars reports I/O failures
    of its own writer as opaque ``ComputeError``s).

    Raises:
        OSError: the file could not be written (full disk, no permission...).

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "p.parquet")
        >>> write_part(pl.DataFrame({"a": [1]}), path)
        >>> pl.read_parquet(path)["a"].to_list()
        [1]
    """
    buffer = io.BytesIO()
    frame.write_parquet(buffer, compression=PARQUET_CODEC)
    with open(path, "xb") as handle:
        handle.write(buffer.getbuffer())


@dataclass
class TableWriter:
    """Writes one table's fragments under ``base`` and remembers them (relative to the archive)."""

    archive: str
    relative: str
    files: list[str] = field(default_factory=list)
    rows: int = 0

    def write(self, frame: pl.DataFrame, *, partitioned: bool = True) -> None:
        """Append a frame as new part files (one per project directory when partitioned)."""
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
            self.files.append(name)  # before writing: a failed export removes what it began
            os.makedirs(os.path.dirname(target), exist_ok=True)
            write_part(part, target)
            self.rows += part.height

    def entry(self, order: list[str] | None) -> dict[str, Any]:
        """This table's manifest entry: its files, row count, partition key and row order."""
        return {"files": list(self.files), "rows": self.rows, "partition_by": "project_dir", "order_by": order}


def rel_key(file_project: str, file_session: str, compression: Compression) -> bytes:
    """A log's path below the root, exact (file names need not be UTF-8).

    Examples:
        >>> rel_key("proj", "abc", "zstd")
        b'proj/abc/session.jsonl.zstd'
    """
    from subagent_catalog.read.paths import log_name

    return os.fsencode(f"{file_project}/{file_session}/{log_name(compression)}")


def problem_project(path_bytes: bytes | None, root: str, projects: dict[str, set[str]]) -> str | None:
    """The project directory a problem lies in (``None`` at or above root level).

    Examples:
        >>> problem_project(b"/r/proj/abc/session.jsonl", "/r", {"proj": set()})
        'proj'
        >>> problem_project(b"/r", "/r", {}) is None
        True
    """
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


def is_url(path: str) -> bool:
    """Whether a location is an object-store URL rather than a local path.

    Examples:
        >>> is_url("s3://bucket/x"), is_url("/tmp/x")
        (True, False)
    """
    return "://" in path


def join_location(base: str, relative: str) -> str:
    """A file name under an archive location (local path or URL).

    Examples:
        >>> join_location("s3://bucket/arch/", "gen-000001/sessions")
        's3://bucket/arch/gen-000001/sessions'
    """
    if is_url(base):
        return base.rstrip("/") + "/" + relative
    return os.path.join(base, *relative.split("/"))
