"""Per-file rows of the corpus frames, built as columns a chunk at a time.

``FrameChunks`` takes one file's walk entry and ``LogFacts`` at a time and
keeps only columns: a session's row is a list of values in schema order
(``session_values``: no dict per session), and every ``CHUNK_FILES`` files
become Polars frames (``frames.columns``) and the Python values are dropped,
so building the frames of a large corpus never holds the facts of every
file. What one file decides alone is decided here: its ``sessions`` row, its
``descriptors`` rows, its own ``problems`` and upstream's stored-identity
check. The rules that need the whole corpus (duplicate ids, per-id lookups,
the listing error) run over the frames afterwards (``frames.rules``).

``problems`` rows carry sort keys (``PROBLEM_KEYS``): walk entries first
(group 0, by the walk's top-level index and their index below it), then each
file's problems in list order (group 1; a corpus-level problem about the
file, such as a duplicate id, before the file's own), then problems about the
whole root (group 2). ``descriptors`` rows carry the file's list order and
their index in it (``DESCRIPTOR_KEYS``). The archive stores these keys; the
in-memory corpus sorts by them and drops them.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable
from typing import Any

import polars as pl

from subagent_catalog.frames.columns import Columns
from subagent_catalog.frames.lookup import Holders, NameIndex, lookup_candidates, lookup_error
from subagent_catalog.frames.outcome import session_outcome
from subagent_catalog.frames.probes import FsProbes, identity_error
from subagent_catalog.frames.schemas import (
    DESCRIPTOR_SCHEMA,
    LISTING_FATAL_KINDS,
    PROBLEM_SCHEMA,
    RUN_SCHEMA,
    SESSION_SCHEMA,
)
from subagent_catalog.frames.units import clock, in_calendar
from subagent_catalog.read.discover import FoundEntry, SessionFile
from subagent_catalog.read.jsvalue import is_safe_integer, js_number, json_text
from subagent_catalog.read.logread import LogFacts
from subagent_catalog.read.paths import MISSING, Compression, encode_segment

CHUNK_FILES = 2048
"""Files per chunk: their rows become Polars frames and the Python values are dropped."""

PROBLEM_KEYS: dict[str, Any] = {"archive_group": pl.Int64, "archive_order": pl.Int64, "archive_sub": pl.Int64}
"""Sort keys of ``problems`` rows: (group, order, index) as the module docstring says."""

DESCRIPTOR_KEYS: dict[str, Any] = {"archive_order": pl.Int64, "archive_sub": pl.Int64}
"""Sort keys of ``descriptors`` rows: the file's list order, the row's index in the file."""

GROUP_ENTRY, GROUP_FILE, GROUP_ROOT = 0, 1, 2

SESSION_SHARED = {
    "path": "path_bytes",
    "session_id": "session_dir",
    "read_header_json": "header_json",
    "created_at": "created_at_ms",
    "first_event_at": "first_event_ms",
    "last_event_at": "last_event_ms",
}
"""``sessions`` columns that mostly repeat another one's values: built over its buffers (``share_buffers``)."""


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


def _calendar(ms: int | None) -> int | None:
    """A ``*_at`` column's value: the time when a ``datetime`` can hold it (years 1 to 9999), else null."""
    return ms if in_calendar(ms) else None


def time_problems(created_at_ms: int | None, first_ms: int | None, last_ms: int | None) -> list[tuple[str, int | None]]:
    """A log's ``time-out-of-range`` problems as (message, line): its ``createdAt``, its event times.

    A time outside years 1 to 9999 UTC is kept exact (``created_at_ms``, ``first_event_ms``...) but no date
    names it, so the ``*_at`` column beside it is null; the message shows it with an expanded year.

    Examples:
        >>> for message, line in time_problems(2**53 - 1, -1, 253_402_300_800_000):
        ...     print(line, message.split(", outside")[0].split(" is outside")[0])
        1 createdAt 9007199254740991 ms (+287396-10-12 08:59:00.991 UTC)
        None event times reach 253402300800000 ms (+010000-01-01 00:00:00.000 UTC)
        >>> time_problems(0, 0, 5)
        []
    """
    out: list[tuple[str, int | None]] = []
    if created_at_ms is not None and not in_calendar(created_at_ms):
        shown = f"{created_at_ms} ms ({clock(created_at_ms, precision='millisecond')})"
        out.append((f"createdAt {shown} is outside years 1 to 9999 UTC: created_at is null, created_at_ms exact", 1))
    outside = [ms for ms in dict.fromkeys((first_ms, last_ms)) if ms is not None and not in_calendar(ms)]
    if outside:
        shown = " and ".join(f"{ms} ms ({clock(ms, precision='millisecond')})" for ms in outside)
        out.append(
            (
                f"event times reach {shown}, outside years 1 to 9999 UTC: first_event_at and last_event_at are "
                "null there, every *_ms column exact",
                None,
            )
        )
    return out


def seed_length(facts: LogFacts) -> int:
    """The header's ``seedLength`` as a row count (0 unless a safe integer).

    Examples:
        >>> seed_length(LogFacts(size=0, list_meta={"seedLength": 3})), seed_length(LogFacts(size=0))
        (3, 0)
    """
    meta = facts.read_meta or facts.list_meta or {}
    value = meta.get("seedLength", 0)
    return int(value) if is_safe_integer(value) else 0


_RUN_FIELDS = [name.removeprefix("run_") for name in RUN_SCHEMA if name != "run_wall_ms"]
_RUN_VALUES = operator.attrgetter(*_RUN_FIELDS)
_WALL_AT = list(RUN_SCHEMA).index("run_wall_ms")
_VERDICT_AT = list(SESSION_SCHEMA).index("verdict")


def run_values(facts: LogFacts) -> list[Any]:
    """The run-fact columns of a session row, in ``RUN_SCHEMA`` order (all null when the events were not scanned).

    Examples:
        >>> from subagent_catalog.read.logread import analyse_log
        >>> values = run_values(analyse_log(b'{"type":"session","version":0,"id":"a","createdAt":1}\\n', "none"))
        >>> len(values) == len(RUN_SCHEMA), values[:3]
        (True, [None, None, None])
    """
    run = facts.run
    if run is None:
        return [None] * len(RUN_SCHEMA)
    values = list(_RUN_VALUES(run))
    wall = None if run.first_ms is None or run.last_ms is None else run.last_ms - run.first_ms
    values.insert(_WALL_AT, wall)
    return values


def run_detail_values(facts: LogFacts) -> list[Any]:
    """The nested ``usage_samples`` and ``tool_call_records`` of a session row (records as tuples; null unscanned).

    Examples:
        >>> from subagent_catalog.read.logread import analyse_log
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> run_detail_values(analyse_log(head, "none")), run_detail_values(analyse_log(b"x\\n", "none"))
        ([[], []], [None, None])
    """
    run = facts.run
    if run is None:
        return [None, None]
    return [run.usage_samples, run.tool_call_records]  # lists of tuples: the struct columns take them as they are


def run_columns(facts: LogFacts) -> dict[str, Any]:
    """The run-fact columns of a session row by name (``run_values``).

    Examples:
        >>> from subagent_catalog.read.logread import analyse_log
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> row = run_columns(analyse_log(head, "none"))
        >>> row["turns"], row["run_wall_ms"], row["tools"]
        (0, None, [])
        >>> set(run_columns(analyse_log(b"x\\n", "none")).values())
        {None}
    """
    return dict(zip(RUN_SCHEMA, run_values(facts), strict=True))


def _text_field(header: dict[str, Any], key: str) -> str | None:
    value = header.get(key)
    return value if isinstance(value, str) else None


def session_values(file: SessionFile, facts: LogFacts, order: int, compression: Compression) -> list[Any]:
    """One file's ``sessions`` row as values in ``SESSION_SCHEMA`` order, before the corpus-wide rules.

    Assembly appends these to its chunk as they are (no dict per session);
    text is made UTF-8-safe a column at a time when the chunk is built.

    Examples:
        >>> file = SessionFile("/r/_no-cwd/a/session.jsonl", "_no-cwd", "a", True, 9, 0, 1, 1)
        >>> values = session_values(file, LogFacts(size=9, list_meta={"id": "a", "createdAt": 5}), 0, "none")
        >>> row = dict(zip(SESSION_SCHEMA, values))
        >>> row["session_id"], row["listed"], row["created_at_ms"], row["lookup_error"]
        ('a', True, 5, None)
    """
    meta = facts.list_meta if facts.list_meta is not None else facts.read_meta
    header: dict[str, Any] = meta or {}
    created = _safe_int(header.get("createdAt"))
    descriptors = facts.descriptors
    last = descriptors[-1] if descriptors else None
    seed = seed_length(facts)
    path = file.path
    identity_seq = facts.identity_seq
    values = [
        order,
        _text_field(header, "id"),
        display_path(path),
        os.fsencode(path),
        file.project_dir,
        file.session_dir,
        compression,
        file.size,
        file.mtime_ns,
        facts.list_meta is not None and facts.list_error is None,
        facts.list_skip,
        facts.list_error,
        js_number(header["version"]) if "version" in header else None,
        created,
        _calendar(created),
        _text_field(header, "cwd"),
        _text_field(header, "parentSession"),
        _text_field(header, "origin"),
        _safe_int(header.get("seedLength")),
        _safe_int(header.get("delegationDepth")),
        _text_field(header, "agentPreset"),
        _json_text(meta) if meta is not None else None,
        facts.verdict if facts.list_meta is not None else "skipped",
        facts.read_cause,
        facts.read_message,
        facts.read_line,
        facts.read_offset,
        _json_text(facts.read_meta) if facts.read_meta is not None else None,
        facts.event_count,
        facts.first_time,
        facts.last_time,
        _calendar(facts.first_time),
        _calendar(facts.last_time),
        facts.closers,
        len(descriptors),
        sum(1 for d in descriptors if d.status == "valid"),
        last.seq if last is not None else None,
        last.status if last is not None else None,
        facts.identity_mode,
        facts.identity_label,
        identity_seq,
        (identity_seq < seed) if identity_seq is not None else None,
        facts.identity_cause,
        facts.identity_detail,
        facts.unit_failure,
        facts.unit_failure_live,
        None,  # lookup_error: decided for the chunk (FrameChunks._look_up)
    ]
    verdict = str(values[_VERDICT_AT])
    values += session_outcome(
        verdict, facts.run, read_cause=facts.read_cause, read_message=facts.read_message, list_skip=facts.list_skip
    )
    values += run_values(facts)
    values += run_detail_values(facts)
    return values


SESSION_AT = {name: index for index, name in enumerate(SESSION_SCHEMA)}
"""A ``sessions`` column's position in ``session_values``."""
_SESSION_ID, _LISTED, _LIST_ERROR, _LOOKUP_ERROR, _CREATED_MS = (
    SESSION_AT[name] for name in ("session_id", "listed", "list_error", "lookup_error", "created_at_ms")
)

TIME_OUT_OF_RANGE = "time-out-of-range"
"""The ``problems`` kind of a log whose ``createdAt`` or event times lie outside years 1 to 9999 UTC."""


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
    scope = "corpus" if entry.fails_listing else "entry"
    return problem_row(scope, entry.kind, entry.severity, entry.fails_listing, entry.path, None, entry.message, None)


class FrameChunks:
    """The per-file part of the corpus frames, built a chunk of files at a time.

    Args:
        root: the corpus root as given (the identity check compares paths under it).
        compression: the encoding the root is read as.
        probes: records the filesystem questions the identity check and lookups ask.
        chunk_files: files per chunk.
        index: the names that can make an id's lookup fail (``None``: no lookups, ``lookup_error`` stays null).
        holders: which project directories hold some names (needed with ``index``).
        polars: keep each chunk as a Polars frame (``frames()``; ``tables()`` is then not available).

    Examples:
        >>> file = SessionFile("/r/_no-cwd/a/session.jsonl", "_no-cwd", "a", True, 9, 0, 1, 1)
        >>> chunks = FrameChunks("/r", "none")
        >>> chunks.add(0, file, LogFacts(size=9, list_meta={"id": "b"}))
        >>> sessions, descriptors, problems = chunks.frames()
        >>> sessions["listed"].to_list(), problems["kind"].to_list()
        ([False], ['identity-mismatch'])
    """

    def __init__(
        self,
        root: str,
        compression: Compression,
        *,
        probes: FsProbes | None = None,
        chunk_files: int = CHUNK_FILES,
        index: NameIndex | None = None,
        holders: Holders | None = None,
        polars: bool = False,
    ) -> None:
        self.root = root
        self.compression = compression
        self.probes = probes
        self.chunk_files = chunk_files
        self.index = index
        self.holders = holders
        self.sessions = Columns(SESSION_SCHEMA, polars=polars, shared=SESSION_SHARED)
        self.descriptors = Columns({**DESCRIPTOR_SCHEMA, "project_dir": pl.String, **DESCRIPTOR_KEYS}, polars=polars)
        self.problems = Columns({**PROBLEM_SCHEMA, "project_dir": pl.String, **PROBLEM_KEYS}, polars=polars)
        self.first_error: tuple[int, str, str] | None = None
        self._lookups: list[tuple[int, str, str, str, str]] = []

    def add(self, order: int, file: SessionFile, facts: LogFacts) -> None:
        """Add one file's rows (``order`` is its list order).

        ``first_error`` keeps the file-level listing error of the smallest
        order added (exact message and path: the frames show text safely).
        """
        row = session_values(file, facts, order, self.compression)
        meta = facts.list_meta
        error = facts.list_error
        if error is None and meta is not None:
            error = mismatch = identity_error(self.root, file.path, meta, self.compression, self.probes)
            if mismatch is not None:
                row[_LIST_ERROR], row[_LISTED] = mismatch, False
                self._problem(
                    problem_row("corpus", "identity-mismatch", "error", True, file.path, meta["id"], mismatch, 1),
                    order,
                    0,
                    file.project_dir,
                )
        if error is not None and (self.first_error is None or order < self.first_error[0]):
            self.first_error = (order, error, file.path)
        if row[_LISTED] and self.index is not None and meta is not None:
            encoded = encode_segment(meta["id"])  # the identity check passed: the id encodes
            if not self.index.plain(encoded, file.session_dir):
                self._lookups.append((len(self.sessions), file.project_dir, file.session_dir, encoded, meta["id"]))
        self.sessions.add_values(row)
        session_id = row[_SESSION_ID]
        for sub, record in enumerate(facts.problems, 1):
            fatal = record.kind in LISTING_FATAL_KINDS
            where = ("corpus" if fatal else "file", record.kind, record.severity, fatal, file.path, session_id)
            self._problem(problem_row(*where, record.message, record.line, record.offset), order, sub, file.project_dir)
        extra = time_problems(row[_CREATED_MS], facts.first_time, facts.last_time)
        for sub, (message, line) in enumerate(extra, len(facts.problems) + 1):
            problem = problem_row("file", TIME_OUT_OF_RANGE, "warning", False, file.path, session_id, message, line)
            self._problem(problem, order, sub, file.project_dir)
        seed = seed_length(facts)
        last_seq = facts.descriptors[-1].seq if facts.descriptors else None
        for sub, d in enumerate(facts.descriptors):
            self.descriptors.add(
                {
                    **vars(d),  # seq, payload, status and the verdict's fields, under their column names
                    "session_id": session_id,
                    "path": file.path,
                    "time_ms": d.time,
                    "in_seed": d.seq < seed,
                    "is_last": d.seq == last_seq,
                    "valid": d.status == "valid",
                    "project_dir": file.project_dir,
                    "archive_order": order,
                    "archive_sub": sub,
                }
            )
        if len(self.sessions) >= self.chunk_files:
            self.flush()

    def add_entries(self, entries: Iterable[tuple[int, int, FoundEntry, str | None]]) -> None:
        """Add walk entries as ``problems`` rows: (top-level index, index below it, entry, its project directory)."""
        for top, sub, entry, project in entries:
            self._problem(entry_row(entry), top, sub, project, group=GROUP_ENTRY)

    def _problem(
        self, row: dict[str, Any], order: int, sub: int, project: str | None, *, group: int = GROUP_FILE
    ) -> None:
        row["archive_group"], row["archive_order"], row["archive_sub"] = group, order, sub
        row["project_dir"] = project
        self.problems.add(row)

    def _look_up(self) -> None:
        """Upstream's per-id lookup for the collected rows the index could not clear (one ``holders`` call)."""
        if not self._lookups or self.holders is None:
            self._lookups = []
            return
        wanted = {name for pending in self._lookups for name in lookup_candidates(pending[3])}
        found = self.holders(wanted)
        rows = self.sessions.rows
        for row, project, session_dir, encoded, session_id in self._lookups:
            names = set(lookup_candidates(encoded))
            held = [(holder, names & have) for holder, have in found if names & have]
            error = lookup_error(
                self.root, self.compression, project, session_dir, encoded, session_id, held, self.probes
            )
            rows[row][_LOOKUP_ERROR] = error
        self._lookups = []

    def flush(self) -> None:
        """Turn the rows collected so far into frame chunks (after their lookups)."""
        self._look_up()
        for columns in (self.sessions, self.descriptors, self.problems):
            columns.flush()

    def tables(self) -> tuple[Any, Any, Any]:
        """The rows so far as Arrow tables (``sessions``, ``descriptors``, ``problems``): no Polars involved."""
        self.flush()
        return self.sessions.table(), self.descriptors.table(), self.problems.table()

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """``sessions``, ``descriptors`` (with ``DESCRIPTOR_KEYS``) and ``problems`` (with ``PROBLEM_KEYS``)."""
        self.flush()
        return self.sessions.frame(), self.descriptors.frame(), self.problems.frame()
