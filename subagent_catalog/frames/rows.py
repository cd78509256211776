"""Per-file rows of the corpus frames, built as columns a chunk at a time.

``FrameChunks`` takes one file's walk entry and ``LogFacts`` at a time and
keeps only columns: every ``CHUNK_FILES`` files become Polars frames and the
Python values are dropped, so building the frames of a large corpus never
holds a dict per row (nor the facts of every file). What one file decides
alone is decided here: its ``sessions`` row, its ``descriptors`` rows, its own
``problems`` and upstream's stored-identity check. The rules that need the
whole corpus (duplicate ids, per-id lookups, the listing error) run over the
frames afterwards (``frames.rules``).

``problems`` rows carry sort keys (``PROBLEM_KEYS``): walk entries first
(group 0, by the walk's top-level index and their index below it), then each
file's problems in list order (group 1; a corpus-level problem about the
file, such as a duplicate id, before the file's own), then problems about the
whole root (group 2). ``descriptors`` rows carry the file's list order and
their index in it (``DESCRIPTOR_KEYS``). The archive stores these keys; the
in-memory corpus sorts by them and drops them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import polars as pl

from subagent_catalog.frames.probes import FsProbes, identity_error
from subagent_catalog.frames.schemas import (
    DESCRIPTOR_SCHEMA,
    LISTING_FATAL_KINDS,
    PROBLEM_SCHEMA,
    RUN_SCHEMA,
    SESSION_SCHEMA,
)
from subagent_catalog.read.discover import FoundEntry, SessionFile
from subagent_catalog.read.jsvalue import frame_text, is_safe_integer, js_number, json_text
from subagent_catalog.read.logread import LogFacts
from subagent_catalog.read.paths import MISSING, Compression

CHUNK_FILES = 2048
"""Files per chunk: their rows become Polars frames and the Python values are dropped."""

PROBLEM_KEYS: dict[str, Any] = {"archive_group": pl.Int64, "archive_order": pl.Int64, "archive_sub": pl.Int64}
"""Sort keys of ``problems`` rows: (group, order, index) as the module docstring says."""

DESCRIPTOR_KEYS: dict[str, Any] = {"archive_order": pl.Int64, "archive_sub": pl.Int64}
"""Sort keys of ``descriptors`` rows: the file's list order, the row's index in the file."""

GROUP_ENTRY, GROUP_FILE, GROUP_ROOT = 0, 1, 2


def display_path(path: str) -> str:
    r"""A path as text: bytes that are not UTF-8 shown as ``\xNN`` (distinct, unlike U+FFFD).

    Examples:
        >>> display_path(os.fsdecode(b"/r/a\x80"))
        '/r/a\\x80'
    """
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _json_text(value: Any) -> str | None:
    return None if value is MISSING else json_text(value, nonfinite="roundtrip")


def _safe_int(value: Any) -> int | None:
    return int(value) if is_safe_integer(value) else None


def seed_length(facts: LogFacts) -> int:
    """The header's ``seedLength`` as a row count (0 unless a safe integer).

    Examples:
        >>> seed_length(LogFacts(size=0, list_meta={"seedLength": 3})), seed_length(LogFacts(size=0))
        (3, 0)
    """
    meta = facts.read_meta or facts.list_meta or {}
    value = meta.get("seedLength", 0)
    return int(value) if is_safe_integer(value) else 0


def run_columns(facts: LogFacts) -> dict[str, Any]:
    """The run-fact columns of a session row (all null when the log's events were not scanned).

    Examples:
        >>> from subagent_catalog.read.logread import analyse_log
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> row = run_columns(analyse_log(head, "none"))
        >>> row["turns"], row["run_wall_ms"], row["tools"]
        (0, None, [])
        >>> set(run_columns(analyse_log(b"x\\n", "none")).values())
        {None}
    """
    run = facts.run
    if run is None:
        return dict.fromkeys(RUN_SCHEMA)
    row = {name: getattr(run, name[4:] if name.startswith("run_") else name, None) for name in RUN_SCHEMA}
    row["run_wall_ms"] = None if run.first_ms is None or run.last_ms is None else run.last_ms - run.first_ms
    return row


def session_row(file: SessionFile, facts: LogFacts, order: int, compression: Compression) -> dict[str, Any]:
    """One file's ``sessions`` row, before the rules that need the whole corpus.

    Examples:
        >>> file = SessionFile("/r/_no-cwd/a/session.jsonl", "_no-cwd", "a", True, 9, 0, 1, 1)
        >>> row = session_row(file, LogFacts(size=9, list_meta={"id": "a", "createdAt": 5}), 0, "none")
        >>> row["session_id"], row["listed"], row["created_at_ms"], row["lookup_error"]
        ('a', True, 5, None)
    """
    meta = facts.list_meta if facts.list_meta is not None else facts.read_meta
    header: dict[str, Any] = meta or {}
    created = header.get("createdAt")
    verdict = facts.verdict if facts.list_meta is not None else "skipped"
    valid = sum(1 for d in facts.descriptors if d.status == "valid")
    seed = seed_length(facts)
    return {
        "list_order": order,
        "session_id": header.get("id") if isinstance(header.get("id"), str) else None,
        "path": display_path(file.path),
        "path_bytes": os.fsencode(file.path),
        "project_dir": file.project_dir,
        "session_dir": file.session_dir,
        "encoding": compression,
        "bytes": file.size,
        "mtime": file.mtime_ns,
        "listed": facts.list_meta is not None and facts.list_error is None,
        "list_skip": facts.list_skip,
        "list_error": facts.list_error,
        "version": js_number(header["version"]) if "version" in header else None,
        "created_at_ms": _safe_int(created),
        "created_at": _safe_int(created),
        "cwd": header.get("cwd") if isinstance(header.get("cwd"), str) else None,
        "parent_session": header.get("parentSession") if isinstance(header.get("parentSession"), str) else None,
        "origin": header.get("origin") if isinstance(header.get("origin"), str) else None,
        "seed_length": _safe_int(header.get("seedLength")),
        "delegation_depth": _safe_int(header.get("delegationDepth")),
        "agent_preset": header.get("agentPreset") if isinstance(header.get("agentPreset"), str) else None,
        "header_json": _json_text(meta) if meta is not None else None,
        "verdict": verdict,
        "read_cause": facts.read_cause,
        "read_message": facts.read_message,
        "read_line": facts.read_line,
        "read_offset": facts.read_offset,
        "read_header_json": _json_text(facts.read_meta) if facts.read_meta is not None else None,
        "event_count": facts.event_count,
        "first_event_ms": facts.first_time,
        "last_event_ms": facts.last_time,
        "first_event_at": facts.first_time,
        "last_event_at": facts.last_time,
        "closers": facts.closers,
        "descriptor_count": len(facts.descriptors),
        "valid_descriptor_count": valid,
        "last_descriptor_seq": facts.descriptors[-1].seq if facts.descriptors else None,
        "last_descriptor_status": facts.descriptors[-1].status if facts.descriptors else None,
        "identity_mode": facts.identity_mode,
        "identity_label": facts.identity_label,
        "identity_seq": facts.identity_seq,
        "identity_from_seed": (facts.identity_seq < seed) if facts.identity_seq is not None else None,
        "identity_cause": facts.identity_cause,
        "identity_detail": facts.identity_detail,
        "unit_failure": facts.unit_failure,
        "unit_failure_live": facts.unit_failure_live,
        "lookup_error": None,
        **run_columns(facts),
    }


def problem_row(
    scope: str,
    kind: str,
    severity: str,
    fails: bool,
    path: str,
    session_id: str | None,
    message: str,
    line: int | None,
    offset: int | None = None,
) -> dict[str, Any]:
    """One ``problems`` row (without its sort keys).

    Examples:
        >>> problem_row("file", "torn-tail", "warning", False, "/r/p/s/session.jsonl", "s", "cut", 3)["line"]
        3
    """
    return {
        "scope": scope,
        "kind": kind,
        "severity": severity,
        "fails_listing": fails,
        "path": display_path(path),
        "path_bytes": os.fsencode(path),
        "session_id": session_id,
        "line": line,
        "offset": offset,
        "message": message,
    }


def entry_row(entry: FoundEntry) -> dict[str, Any]:
    """The ``problems`` row of a walk entry that is not a log we read.

    Examples:
        >>> entry_row(FoundEntry("/r/x", "ignored-root-file", "root-level file"))["scope"]
        'entry'
    """
    return {
        "scope": "corpus" if entry.fails_listing else "entry",
        "kind": entry.kind,
        "severity": entry.severity,
        "fails_listing": entry.fails_listing,
        "path": display_path(entry.path),
        "path_bytes": os.fsencode(entry.path),
        "session_id": None,
        "line": None,
        "offset": None,
        "message": entry.message,
    }


def duplicate_message(session_id: str) -> str:
    """Upstream's message for an id listed from more than one project directory.

    Examples:
        >>> duplicate_message("a")
        'duplicate JSONL session id "a" appears in multiple project directories'
    """
    return f'duplicate JSONL session id "{session_id}" appears in multiple project directories'


class Columns:
    """Rows of one schema collected as columns, turned into one Polars frame per ``flush``.

    Examples:
        >>> cols = Columns({"a": pl.Int64, "b": pl.String})
        >>> cols.add({"a": 1, "b": "x\\udc00"})
        >>> cols.add({"a": 2})
        >>> cols.flush()
        >>> cols.frame().rows()
        [(1, 'x\\ufffd'), (2, None)]
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.names = list(schema)
        self.values: list[list[Any]] = [[] for _ in self.names]
        self.chunks: list[pl.DataFrame] = []

    def __len__(self) -> int:
        return len(self.values[0])

    def add(self, row: dict[str, Any]) -> None:
        """Append one row (a missing column is null; strings made UTF-8-safe with ``frame_text``)."""
        get = row.get
        for name, column in zip(self.names, self.values, strict=True):
            value = get(name)
            if value.__class__ is str:
                value = frame_text(value)
            elif value.__class__ is list and value and isinstance(value[0], str):
                value = [frame_text(v) for v in value]
            column.append(value)

    def flush(self) -> None:
        """Turn the collected rows into a frame chunk and drop the Python values."""
        if len(self):
            self.chunks.append(pl.DataFrame(dict(zip(self.names, self.values, strict=True)), schema=self.schema))
            self.values = [[] for _ in self.names]

    def frame(self) -> pl.DataFrame:
        """Every chunk flushed so far, as one frame (empty with the schema when none)."""
        if not self.chunks:
            return pl.DataFrame(schema=self.schema)
        frame = pl.concat(self.chunks, rechunk=False) if len(self.chunks) > 1 else self.chunks[0]
        self.chunks = [frame]
        return frame


class FrameChunks:
    """The per-file part of the corpus frames, built a chunk of files at a time.

    Args:
        root: the corpus root as given (the identity check compares paths under it).
        compression: the encoding the root is read as.
        probes: records the filesystem questions the identity check asks.
        chunk_files: files per chunk.

    Examples:
        >>> file = SessionFile("/r/_no-cwd/a/session.jsonl", "_no-cwd", "a", True, 9, 0, 1, 1)
        >>> chunks = FrameChunks("/r", "none")
        >>> chunks.add(0, file, LogFacts(size=9, list_meta={"id": "b"}))
        >>> sessions, descriptors, problems = chunks.frames()
        >>> sessions["listed"].to_list(), problems["kind"].to_list()
        ([False], ['identity-mismatch'])
    """

    def __init__(
        self, root: str, compression: Compression, *, probes: FsProbes | None = None, chunk_files: int = CHUNK_FILES
    ) -> None:
        self.root = root
        self.compression = compression
        self.probes = probes
        self.chunk_files = chunk_files
        self.sessions = Columns(SESSION_SCHEMA)
        self.descriptors = Columns({**DESCRIPTOR_SCHEMA, **DESCRIPTOR_KEYS})
        self.problems = Columns({**PROBLEM_SCHEMA, **PROBLEM_KEYS})
        self.first_error: tuple[int, str, str] | None = None

    def add(self, order: int, file: SessionFile, facts: LogFacts) -> None:
        """Add one file's rows (``order`` is its list order).

        ``first_error`` keeps the file-level listing error of the smallest
        order added (exact message and path: the frames show text safely).
        """
        row = session_row(file, facts, order, self.compression)
        meta = facts.list_meta
        error = facts.list_error
        if error is None and meta is not None:
            error = mismatch = identity_error(self.root, file.path, meta, self.compression, self.probes)
            if mismatch is not None:
                row["list_error"], row["listed"] = mismatch, False
                self._problem(
                    problem_row("corpus", "identity-mismatch", "error", True, file.path, meta["id"], mismatch, 1),
                    order,
                    0,
                )
        if error is not None and (self.first_error is None or order < self.first_error[0]):
            self.first_error = (order, error, file.path)
        self.sessions.add(row)
        session_id = row["session_id"]
        for sub, record in enumerate(facts.problems, 1):
            fatal = record.kind in LISTING_FATAL_KINDS
            self._problem(
                problem_row(
                    "corpus" if fatal else "file",
                    record.kind,
                    record.severity,
                    fatal,
                    file.path,
                    session_id,
                    record.message,
                    record.line,
                    record.offset,
                ),
                order,
                sub,
            )
        seed = seed_length(facts)
        last_seq = facts.descriptors[-1].seq if facts.descriptors else None
        for sub, d in enumerate(facts.descriptors):
            self.descriptors.add(
                {
                    "session_id": session_id,
                    "path": file.path,
                    "seq": d.seq,
                    "time_ms": d.time,
                    "in_seed": d.seq < seed,
                    "is_last": d.seq == last_seq,
                    "payload": d.payload,
                    "valid": d.status == "valid",
                    "status": d.status,
                    "reason": d.reason,
                    "version": d.version,
                    "mode": d.mode,
                    "provider": d.provider,
                    "label": d.label,
                    "agent_provider": d.agent_provider,
                    "agent_model": d.agent_model,
                    "persona": d.persona,
                    "tool_allow": d.tool_allow,
                    "tool_deny": d.tool_deny,
                    "archive_order": order,
                    "archive_sub": sub,
                }
            )
        if len(self.sessions) >= self.chunk_files:
            self.flush()

    def add_entries(self, entries: Iterable[tuple[int, int, FoundEntry]]) -> None:
        """Add walk entries as ``problems`` rows, each with its (top-level index, index below it)."""
        for top, sub, entry in entries:
            self._problem(entry_row(entry), top, sub, group=GROUP_ENTRY)

    def _problem(self, row: dict[str, Any], order: int, sub: int, *, group: int = GROUP_FILE) -> None:
        row["archive_group"], row["archive_order"], row["archive_sub"] = group, order, sub
        self.problems.add(row)

    def flush(self) -> None:
        """Turn the rows collected so far into frame chunks."""
        for columns in (self.sessions, self.descriptors, self.problems):
            columns.flush()

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """``sessions``, ``descriptors`` (with ``DESCRIPTOR_KEYS``) and ``problems`` (with ``PROBLEM_KEYS``)."""
        self.flush()
        return self.sessions.frame(), self.descriptors.frame(), self.problems.frame()
