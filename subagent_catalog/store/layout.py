"""The archive's on-disk layout.

The manifest, generations, table schemas and partition names; local
paths and object-store URLs alike.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Literal

import polars as pl

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.rows import DESCRIPTOR_KEYS, PROBLEM_KEYS
from subagent_catalog.frames.schemas import DESCRIPTOR_SCHEMA, EVENT_SCHEMA, PROBLEM_SCHEMA, SESSION_SCHEMA
from subagent_catalog.frames.units import calendar_only

Engine = Literal["local", "dask"]


Table = Literal["sessions", "descriptors", "problems", "events"]


ARCHIVE_FORMAT = "subagent-catalog-archive"


MANIFEST = "manifest.json"


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


SESSIONS_SINCE_8: dict[str, Any] = {name: SESSION_SCHEMA[name] for name in ("title", "prompt", "name")}
"""``sessions`` columns an archive holds since format 8 (what names a session); an older one gives them as nulls."""

SESSIONS_SINCE: dict[int, dict[str, Any]] = {7: SESSIONS_SINCE_7, 8: SESSIONS_SINCE_8}
"""``sessions`` columns by the format that added them (``with_newer_columns``)."""


def with_newer_columns(sessions: pl.LazyFrame, format_version: Any) -> pl.LazyFrame:
    """The sessions table of an archive of this format, the columns added since (``SESSIONS_SINCE``) null.

    Examples:
        >>> old = with_newer_columns(pl.LazyFrame({"list_order": [0]}), 6).collect()
        >>> old["active_ms"].to_list(), old["name"].to_list()
        ([None], [None])
    """
    version = format_version if isinstance(format_version, int) else 0
    present = sessions.collect_schema()
    missing = [
        pl.lit(None, kind).alias(name)
        for since, columns in SESSIONS_SINCE.items()
        if version < since
        for name, kind in columns.items()
        if name not in present
    ]
    return sessions.with_columns(missing) if missing else sessions


SESSION_TIMES = ("created_at", "first_event_at", "last_event_at")
"""The ``sessions`` ``Datetime`` columns of a log's times (each beside its exact ``*_ms`` column)."""


def table_view(table: str, files: pl.LazyFrame, format_version: Any) -> pl.LazyFrame:
    """A table as readers see it, from its files in an archive of this format.

    The events files' ``data_text`` is joined back into ``text`` (format 6 on, ``joined_text``); a sessions
    table of an older format gets the columns added since, null (``with_newer_columns``), and its
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
    return calendar_only(with_newer_columns(files, version), SESSION_TIMES)


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


def is_url(path: str) -> bool:
    """Whether a location is an object-store URL rather than a local path.

    Examples:
        >>> is_url("s3://bucket/x"), is_url("/tmp/x")
        (True, False)
    """
    return "://" in path
