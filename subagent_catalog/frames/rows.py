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

from subagent_catalog.frames.lookup import Holders, NameIndex, lookup_candidates, lookup_error
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


def arrow_type(dtype: Any, *, views: bool = False) -> Any:
    """The Arrow type a Polars column type is built from here (Polars reads it back as that type).

    Pure inspection of the Polars type: safe in a forked worker that must not run Polars.
    With ``views``, text and bytes are Arrow's view types, Polars' own layout: Polars takes
    such an array's buffers as they are, where from ``large_string`` it builds views beside
    the Arrow buffers and keeps both (the offsets too) alive.

    Examples:
        >>> arrow_type(pl.Datetime("ms", "UTC")), arrow_type(pl.List(pl.String))
        (TimestampType(timestamp[ms, tz=UTC]), LargeListType(large_list<item: large_string>))
        >>> arrow_type(pl.List(pl.String), views=True), arrow_type(pl.Binary, views=True)
        (LargeListType(large_list<item: string_view>), DataType(binary_view))
    """
    import pyarrow as pa

    views = views and hasattr(pa, "string_view")  # pyarrow < 16 has no view types
    simple = {
        pl.Int64: pa.int64(),
        pl.UInt64: pa.uint64(),
        pl.Float64: pa.float64(),
        pl.Boolean: pa.bool_(),
        pl.String: pa.string_view() if views else pa.large_string(),
        pl.Binary: pa.binary_view() if views else pa.large_binary(),
    }
    for polars_type, arrow in simple.items():
        if dtype == polars_type:
            return arrow
    if isinstance(dtype, pl.Datetime):
        return pa.timestamp(dtype.time_unit or "us", tz=dtype.time_zone)
    if isinstance(dtype, pl.List):
        return pa.large_list(arrow_type(dtype.inner, views=views))
    raise TypeError(f"no Arrow type for {dtype!r}")


def arrow_schema(schema: dict[str, Any], *, views: bool = False) -> Any:
    """The Arrow schema of a Polars column schema (see ``arrow_type``).

    Examples:
        >>> arrow_schema({"a": pl.Int64}).names
        ['a']
    """
    import pyarrow as pa

    return pa.schema([(name, arrow_type(dtype, views=views)) for name, dtype in schema.items()])


def share_buffers(frame: pl.DataFrame, shared: dict[str, str]) -> pl.DataFrame:
    """``frame`` with each ``shared`` column taking its equal values from the column it names.

    The values do not change; the memory does. A column equal throughout to
    the other one cast to its type becomes that cast (Polars shares the
    buffers: ``Int64`` as ``Datetime``, UTF-8 ``Binary`` as ``String``);
    text equal in some rows points at the other column's bytes there (views)
    and keeps its own bytes elsewhere.

    Examples:
        >>> frame = pl.DataFrame({"a": ["x" * 20, "y" * 20, None], "b": ["x" * 20, "z", None]})
        >>> share_buffers(frame, {"b": "a"}).equals(frame)
        True
        >>> frame = pl.DataFrame({"raw": [b"/r/a", b"/r/\\xff"], "text": ["/r/a", "/r/\\xff"]})
        >>> share_buffers(frame, {"text": "raw"}).equals(frame)
        True
    """
    columns = []
    for name, base in shared.items():
        dtype = frame.schema[name]
        try:
            same = frame[base].cast(dtype, strict=False)
        except pl.exceptions.ComputeError:  # bytes that are not UTF-8: this chunk keeps its own text
            continue
        equal = same.eq_missing(frame[name])
        if equal.all():
            columns.append(same.alias(name))
        elif dtype == pl.String and equal.any():
            columns.append(frame.select(pl.when(equal).then(same).otherwise(pl.col(name)).alias(name)).to_series())
    return frame.with_columns(columns) if columns else frame


class Columns:
    """Rows of one schema collected as columns, turned into an Arrow table per ``flush``.

    Building uses pyarrow only, so it runs in forked workers (which must not
    use Polars); ``frame()`` gives the Polars frame. With ``polars=True`` each
    chunk becomes a Polars frame as it is flushed (built as Arrow view types,
    which Polars takes over as they are, so the whole never exists twice), its
    ``shared`` columns over the buffers of the columns they repeat
    (``share_buffers``).

    Examples:
        >>> cols = Columns({"a": pl.Int64, "b": pl.String})
        >>> cols.add({"a": 1, "b": "x\\udc00"})
        >>> cols.add({"a": 2})
        >>> cols.flush()
        >>> cols.frame().rows()
        [(1, 'x\\ufffd'), (2, None)]
        >>> cols = Columns({"a": pl.Int64, "b": pl.List(pl.String)}, polars=True)
        >>> cols.add({"a": 1})
        >>> cols.flush()
        >>> cols.frame().dtypes
        [Int64, List(String)]
    """

    def __init__(self, schema: dict[str, Any], *, polars: bool = False, shared: dict[str, str] | None = None) -> None:
        self.schema = schema
        self.arrow = arrow_schema(schema, views=polars)
        self.names = list(schema)
        self.polars = polars
        self.shared = shared or {}
        self.values: list[list[Any]] = [[] for _ in self.names]
        self.chunks: list[Any] = []

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
        """Turn the collected rows into an Arrow table chunk and drop the Python values."""
        import pyarrow as pa

        if not len(self):
            return
        if self.polars:
            self.chunks.append(self._polars_chunk())
            return
        arrays = [pa.array(values, type=field.type) for values, field in zip(self.values, self.arrow, strict=True)]
        self.values = [[] for _ in self.names]
        self.chunks.append(pa.Table.from_arrays(arrays, schema=self.arrow))

    def _polars_chunk(self) -> pl.DataFrame:
        """The collected rows as a Polars frame: a column of nulls only as Polars' shared zeroed storage."""
        import pyarrow as pa

        height = len(self)
        # Polars keeps these buffers as they are (view types); the system allocator measured a lower
        # peak than Arrow's default pool (mimalloc), which keeps what the builders free.
        pool = pa.system_memory_pool()
        built = [
            (field, values)
            for field, values in zip(self.arrow, self.values, strict=True)
            if values.count(None) < height
        ]
        self.values = [[] for _ in self.names]
        arrays = [pa.array(values, type=field.type, memory_pool=pool) for field, values in built]
        table = pa.Table.from_arrays(arrays, schema=pa.schema([field for field, _ in built]))
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        nulls = [
            pl.repeat(None, height, dtype=dtype, eager=True).alias(name)
            for name, dtype in self.schema.items()
            if name not in table.column_names
        ]
        if nulls:
            frame = (frame.with_columns(nulls) if frame.width else pl.DataFrame(nulls)).select(self.names)
        return share_buffers(frame, self.shared)

    def table(self) -> Any:
        """Every chunk flushed so far as one Arrow table (not copied; not with ``polars=True``)."""
        import pyarrow as pa

        assert not self.polars, "the chunks are Polars frames"
        return pa.concat_tables(self.chunks) if self.chunks else self.arrow.empty_table()

    def frame(self) -> pl.DataFrame:
        """Every chunk flushed so far, as one Polars frame (empty with the schema when none)."""
        if not self.polars:
            frame = pl.from_arrow(self.table())
            assert isinstance(frame, pl.DataFrame)
            return frame
        if not self.chunks:
            return pl.DataFrame(schema=self.schema)
        frames: list[pl.DataFrame] = self.chunks
        return pl.concat(frames, rechunk=False) if len(frames) > 1 else frames[0]


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
        self._lookup_column = self.sessions.names.index("lookup_error")

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
                    file.project_dir,
                )
        if error is not None and (self.first_error is None or order < self.first_error[0]):
            self.first_error = (order, error, file.path)
        if row["listed"] and self.index is not None and meta is not None:
            encoded = encode_segment(meta["id"])  # the identity check passed: the id encodes
            if not self.index.plain(encoded, file.session_dir):
                self._lookups.append((len(self.sessions), file.project_dir, file.session_dir, encoded, meta["id"]))
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
                file.project_dir,
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
        column = self.sessions.values[self._lookup_column]
        for row, project, session_dir, encoded, session_id in self._lookups:
            names = set(lookup_candidates(encoded))
            held = [(holder, names & have) for holder, have in found if names & have]
            error = lookup_error(
                self.root, self.compression, project, session_dir, encoded, session_id, held, self.probes
            )
            column[row] = frame_text(error)
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
