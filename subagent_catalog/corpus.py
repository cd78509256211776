"""``read_corpus``: a session root in, Polars frames out.

The reader walks the root as upstream's ``list()`` does, reads every log
once (in parallel across files), and accounts for every entry under the
root as a ``sessions`` row or a ``problems`` row. Bad data never raises.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import polars as pl

from subagent_catalog.discover import Discovery, SessionFile, discover
from subagent_catalog.errors import CatalogError
from subagent_catalog.jsvalue import clean_row, frame_text, is_safe_integer, js_number, json_text
from subagent_catalog.logread import LogFacts, read_log_file
from subagent_catalog.paths import (
    MISSING,
    Compression,
    PathIdentityError,
    encode_segment,
    log_name,
    project_dir_name,
)

if TYPE_CHECKING:
    from subagent_catalog.cache import FactsCache

CompressionOption = Literal["zstd", "none", "auto"]
PARALLEL_THRESHOLD = 64
# Per-file problems that make upstream's whole listing fail (list() reads the header of every log).
LISTING_FATAL_KINDS = frozenset({"zstd-header-frame", "retired-header-fields", "io-error", "header-too-long"})


class Progress(Protocol):
    """Receives progress: called with files done and files in all."""

    def __call__(self, done: int, total: int) -> None:
        """Report that ``done`` of ``total`` files are read."""


def _quiet(done: int, total: int) -> None:
    return None


SESSION_SCHEMA: dict[str, Any] = {
    "list_order": pl.Int64,
    "session_id": pl.String,
    "path": pl.String,
    "path_bytes": pl.Binary,
    "project_dir": pl.String,
    "session_dir": pl.String,
    "encoding": pl.String,
    "bytes": pl.Int64,
    "mtime": pl.Datetime("ns", "UTC"),
    "listed": pl.Boolean,
    "list_skip": pl.String,
    "list_error": pl.String,
    "version": pl.Float64,
    "created_at_ms": pl.Int64,
    "created_at": pl.Datetime("ms", "UTC"),
    "cwd": pl.String,
    "parent_session": pl.String,
    "origin": pl.String,
    "seed_length": pl.Int64,
    "delegation_depth": pl.Int64,
    "agent_preset": pl.String,
    "header_json": pl.String,
    "verdict": pl.String,
    "read_cause": pl.String,
    "read_message": pl.String,
    "read_line": pl.Int64,
    "read_offset": pl.Int64,
    "read_header_json": pl.String,
    "event_count": pl.Int64,
    "first_event_ms": pl.Int64,
    "last_event_ms": pl.Int64,
    "first_event_at": pl.Datetime("ms", "UTC"),
    "last_event_at": pl.Datetime("ms", "UTC"),
    "closers": pl.Int64,
    "descriptor_count": pl.Int64,
    "valid_descriptor_count": pl.Int64,
    "last_descriptor_seq": pl.Int64,
    "last_descriptor_status": pl.String,
    "identity_mode": pl.String,
    "identity_label": pl.String,
    "identity_seq": pl.Int64,
    "identity_from_seed": pl.Boolean,
    "identity_cause": pl.String,
    "identity_detail": pl.String,
    "unit_failure": pl.String,
    "unit_failure_live": pl.String,
    "lookup_error": pl.String,
}

DESCRIPTOR_SCHEMA: dict[str, Any] = {
    "session_id": pl.String,
    "path": pl.String,
    "seq": pl.Int64,
    "time_ms": pl.Int64,
    "in_seed": pl.Boolean,
    "is_last": pl.Boolean,
    "payload": pl.String,
    "valid": pl.Boolean,
    "status": pl.String,
    "reason": pl.String,
    "version": pl.String,
    "mode": pl.String,
    "provider": pl.String,
    "label": pl.String,
    "agent_provider": pl.String,
    "agent_model": pl.String,
    "persona": pl.String,
    "tool_allow": pl.List(pl.String),
    "tool_deny": pl.List(pl.String),
}

PROBLEM_SCHEMA: dict[str, Any] = {
    "scope": pl.String,
    "kind": pl.String,
    "severity": pl.String,
    "fails_listing": pl.Boolean,
    "path": pl.String,
    "path_bytes": pl.Binary,
    "session_id": pl.String,
    "line": pl.Int64,
    "offset": pl.Int64,
    "message": pl.String,
}

EVENT_SCHEMA: dict[str, Any] = {
    "session_id": pl.String,
    "seq": pl.Int64,
    "time_ms": pl.Int64,
    "type": pl.String,
    "turn": pl.Int64,
    "step": pl.Int64,
    "ignorable": pl.Boolean,
    "data": pl.String,
}


@dataclass
class Corpus:
    """A read corpus: frames plus what the catalog needs.

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
    _sources: list[str] | None = field(default=None, repr=False)

    def log_sources(self, *, sessions: Iterable[str] | None = None) -> list[str]:
        """Exact paths of the logs to read for events (skipped headers excluded), in list order.

        File names that are not UTF-8 are exact here (the frames' ``path``
        column shows them with U+FFFD; ``path_bytes`` holds the bytes).

        Examples:
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
            return [self._sources[row] for row in frame["_row"].to_list()]
        return [
            os.fsdecode(raw) if raw is not None else path
            for raw, path in frame.select("path_bytes", "path").iter_rows()
        ]

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
                for facts in _read_all(paths, self.compression, want_events=True, jobs=self._jobs, progress=_quiet)
            ]
            self._events = pl.concat(frames, rechunk=False) if frames else pl.DataFrame(schema=EVENT_SCHEMA)
        return self._events

    def require_listing(self) -> None:
        """Raise upstream's whole-listing failure, if the corpus has one.

        Raises:
            CatalogError: code ``PERSISTENCE_LIST_FAILED``.
        """
        if self.listing_error is not None:
            raise CatalogError(
                "PERSISTENCE_LIST_FAILED",
                self.listing_error,
                path=self.listing_error_path,
                hint="see corpus.problems (fails_listing); upstream lists nothing from this root",
            )

    def _repr_html_(self) -> str:
        from subagent_catalog.display import corpus_html  # type: ignore[import-not-found,unused-ignore]

        return str(corpus_html(self))

    def __repr__(self) -> str:
        listed = int(self.sessions["listed"].sum()) if self.sessions.height else 0
        state = f"listing fails: {self.listing_error}" if self.listing_error else "listing ok"
        return (
            f"Corpus({self.root!r}, {self.compression}, {self.sessions.height} files, {listed} listed, "
            f"{self.problems.height} problems, {state})"
        )


def facts_events(facts: LogFacts) -> pl.DataFrame:
    """The events frame of one file's facts.

    Examples:
        >>> facts_events(LogFacts(size=0)).columns[:3]
        ['session_id', 'seq', 'time_ms']
    """
    if facts.events_ipc is not None:
        return pl.read_ipc_stream(facts.events_ipc).cast(pl.Schema(EVENT_SCHEMA))
    rows = [tuple(frame_text(v) if isinstance(v, str) else v for v in row) for row in facts.events or []]
    return pl.DataFrame(rows, schema=EVENT_SCHEMA, orient="row")


def _worker(args: tuple[str, Compression, bool]) -> LogFacts:
    path, compression, want_events = args
    facts = read_log_file(path, compression, want_events=want_events, exact_path=True)
    if want_events:
        # Ship one compact Arrow buffer per file instead of a Python tuple per event. Built with
        # pyarrow, not Polars: a forked worker of a process that ran Polars must not use Polars.
        facts.events_ipc, facts.events = _arrow_events(facts.events or []), None
    return facts


_ARROW_EVENT_TYPES = {
    "session_id": "large_string",
    "seq": "int64",
    "time_ms": "int64",
    "type": "large_string",
    "turn": "int64",
    "step": "int64",
    "ignorable": "bool_",
    "data": "large_string",
}


def _arrow_events(rows: list[tuple[Any, ...]]) -> bytes:
    import pyarrow as pa

    columns = list(zip(*rows, strict=True)) if rows else [() for _ in _ARROW_EVENT_TYPES]
    arrays = [
        pa.array([frame_text(v) if isinstance(v, str) else v for v in column], type=getattr(pa, kind)())
        for column, kind in zip(columns, _ARROW_EVENT_TYPES.values(), strict=True)
    ]
    table = pa.Table.from_arrays(arrays, names=list(_ARROW_EVENT_TYPES))
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _read_all(
    paths: list[str], compression: Compression, *, want_events: bool, jobs: int | None, progress: Progress
) -> Iterator[LogFacts]:
    total = len(paths)
    work = [(path, compression, want_events) for path in paths]
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    if workers <= 1 or total < PARALLEL_THRESHOLD:
        for done, item in enumerate(work, 1):
            facts = _worker(item)
            progress(done, total)
            yield facts
        return
    chunk = max(1, min(64, total // (workers * 8) or 1))
    # Workers never use Polars (a forked child of a process that ran Polars can deadlock in it), so
    # the platform's default start method works, and scripts need no main guard.
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for done, facts in enumerate(pool.map(_worker, work, chunksize=chunk), 1):
            progress(done, total)
            yield facts


def _choose_compression(root: str, option: CompressionOption) -> Compression:
    if option != "auto":
        return option
    plain = zstd = 0
    try:
        for project in os.scandir(root):
            if not project.is_dir(follow_symlinks=False):
                continue
            for session in os.scandir(project.path):
                if session.is_dir(follow_symlinks=False):
                    names = set(os.listdir(session.path))
                    plain += "session.jsonl" in names
                    zstd += "session.jsonl.zstd" in names
    except OSError:
        return "zstd"
    return "zstd" if zstd > plain else "none" if plain else "zstd"


def _json_text(value: Any) -> str | None:
    return None if value is MISSING else json_text(value, nonfinite="roundtrip")


def _safe_int(value: Any) -> int | None:
    return int(value) if is_safe_integer(value) else None


def _expected_log_path(root: str, meta: dict[str, Any], compression: Compression) -> str:
    project = project_dir_name(meta.get("cwd", MISSING))
    return os.path.join(root, project, encode_segment(meta["id"]), log_name(compression))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.exists(b) and os.path.realpath(a) == os.path.realpath(b)
    except OSError:
        return False


def identity_error(root: str, path: str, meta: dict[str, Any], compression: Compression) -> str | None:
    """Upstream's ``assertStoredIdentity`` for a listed header, as a message.

    Examples:
        >>> identity_error("/r", "/r/_no-cwd/a/session.jsonl", {"id": "a"}, "none") is None
        True
        >>> identity_error("/r", "/r/_no-cwd/a/session.jsonl", {"id": "b"}, "none")
        'corrupt session log "/r/_no-cwd/a/session.jsonl": header id "b" and cwd identify "/r/_no-cwd/b/session.jsonl"'
    """
    try:
        expected = _expected_log_path(root, meta, compression)
    except (PathIdentityError, TypeError) as error:
        return f'corrupt session log "{path}": header id cannot name a storage path ({error})'
    if path == expected or _same_file(path, expected):
        return None
    return f'corrupt session log "{path}": header id "{meta["id"]}" and cwd identify "{expected}"'


def read_corpus(
    root: str | os.PathLike[str],
    *,
    compression: CompressionOption = "auto",
    events: bool = False,
    progress: Progress | None = None,
    jobs: int | None = None,
    cache: bool | str | os.PathLike[str] = True,
) -> Corpus:
    """Read a dsh session root into frames.

    Args:
        root: a directory of ``<project>/<session>/session.jsonl[.zstd]``.
        compression: the encoding to read the root as (``auto``: the one
            its logs use; a root holding both fails upstream's listing).
        events: also load the events frame now (otherwise it loads on
            first use of ``corpus.events``).
        progress: called as files are read (quiet by default).
        jobs: worker processes (default: all cores; small roots read serially).
        cache: reuse per-file facts of unchanged files from the facts cache
            (outside the root: ``$SUBAGENT_CATALOG_CACHE``, else
            ``$XDG_CACHE_HOME/subagent_catalog``, else
            ``~/.cache/subagent_catalog``); a path names the cache directory;
            ``False`` (or ``SUBAGENT_CATALOG_CACHE=off`` with the default)
            reads every file.

    Raises:
        CorpusRootError: the root is missing, not a directory or unreadable.

    Examples:
        >>> import tempfile
        >>> read_corpus(tempfile.mkdtemp(), cache=False).sessions.height
        0
    """
    root_path = os.fspath(root)
    chosen = _choose_compression(root_path, compression) if os.path.isdir(root_path) else "zstd"
    found = discover(root_path, chosen)
    store = _open_cache(root_path, chosen, cache)
    facts_list = _read_facts(
        found.files, chosen, want_events=events, jobs=jobs, progress=progress or _quiet, store=store
    )
    if store is not None:
        store.save()
    return assemble(found, facts_list, jobs=jobs, want_events=events)


def _open_cache(root: str, compression: Compression, cache: bool | str | os.PathLike[str]) -> FactsCache | None:
    if cache is False:
        return None
    if cache is True and os.environ.get("SUBAGENT_CATALOG_CACHE", "").lower() in ("off", "0", "no", "false"):
        return None
    from subagent_catalog.cache import FactsCache

    directory = None if cache is True else os.fspath(cache)
    return FactsCache.load(root, compression, directory=directory)


def _read_facts(
    files: list[SessionFile],
    compression: Compression,
    *,
    want_events: bool,
    jobs: int | None,
    progress: Progress,
    store: FactsCache | None,
) -> list[LogFacts]:
    """Facts of every file in order: cached ones reused, the rest read (and cached)."""
    sources = [f.source for f in files]
    if store is None or want_events:
        facts = list(_read_all(sources, compression, want_events=want_events, jobs=jobs, progress=progress))
        if store is not None:
            for file, item in zip(files, facts, strict=True):
                store.put(file, item)
        return facts
    found: list[LogFacts | None] = [store.get(file) for file in files]
    missing = [index for index, item in enumerate(found) if item is None]
    hits = len(files) - len(missing)
    if hits:
        progress(hits, len(files))
    fresh = _read_all([sources[i] for i in missing], compression, want_events=False, jobs=jobs, progress=_quiet)
    for done, (index, item) in enumerate(zip(missing, fresh, strict=True), 1):
        found[index] = item
        store.put(files[index], item)
        progress(hits + done, len(files))
    return [item for item in found if item is not None]


def assemble(
    found: Discovery, facts_list: list[LogFacts], *, jobs: int | None = None, want_events: bool = False
) -> Corpus:
    """Build the corpus frames from a walk and per-file facts (no log I/O).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.discover import discover
        >>> assemble(discover(tempfile.mkdtemp(), "none"), []).listing_error is None
        True
    """
    sessions: list[dict[str, Any]] = []
    descriptors: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    listing_errors: list[tuple[int, str, str]] = []
    for entry in found.entries:
        problems.append(
            {
                "scope": "corpus" if entry.fails_listing else "entry",
                "kind": entry.kind,
                "severity": entry.severity,
                "fails_listing": entry.fails_listing,
                "path": display_path(entry.path),
                "path_bytes": os.fsencode(entry.path),
                "message": entry.message,
            }
        )
        if entry.fails_listing:
            listing_errors.append((0, entry.message, entry.path))
    seen_ids: dict[str, str] = {}
    for order, (file, facts) in enumerate(zip(found.files, facts_list, strict=True)):
        row = _session_row(found, file, facts, order)
        meta = facts.list_meta
        if facts.list_error is not None:
            listing_errors.append((1, facts.list_error, file.path))
        elif meta is not None:
            mismatch = identity_error(found.root, file.path, meta, found.compression)
            if mismatch is not None:
                row["list_error"], row["listed"] = mismatch, False
                listing_errors.append((1, mismatch, file.path))
                problems.append(
                    _problem("corpus", "identity-mismatch", "error", True, file.path, meta["id"], mismatch, 1)
                )
            elif meta["id"] in seen_ids:
                message = f'duplicate JSONL session id "{meta["id"]}" appears in multiple project directories'
                row["list_error"], row["listed"] = message, False
                listing_errors.append((1, message, file.path))
                problems.append(_problem("corpus", "duplicate-id", "error", True, file.path, meta["id"], message, 1))
            else:
                seen_ids[meta["id"]] = file.path
        sessions.append(row)
        session_id = row["session_id"]
        for record in facts.problems:
            problems.append(
                _problem(
                    "corpus" if record.kind in LISTING_FATAL_KINDS else "file",
                    record.kind,
                    record.severity,
                    record.kind in LISTING_FATAL_KINDS,
                    file.path,
                    session_id,
                    record.message,
                    record.line,
                    record.offset,
                )
            )
        seed = _seed_length(facts)
        last_seq = facts.descriptors[-1].seq if facts.descriptors else None
        for d in facts.descriptors:
            descriptors.append(
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
                }
            )
    if found.compression and _mixed_encodings(found):
        problems.append(
            _problem(
                "corpus",
                "mixed-encodings",
                "error",
                True,
                found.root,
                None,
                "the root holds logs of both encodings; upstream refuses it in either mode",
                None,
            )
        )
    _lookup_errors(found, sessions)
    listing_errors.sort(key=lambda item: item[0])
    error = listing_errors[0] if listing_errors else None
    events_frame = None
    if want_events:
        frames = []
        for item in facts_list:
            frames.append(facts_events(item))
            item.events_ipc = item.events = None  # one copy of the events at a time
        events_frame = pl.concat(frames, rechunk=False) if frames else pl.DataFrame(schema=EVENT_SCHEMA)
    return Corpus(
        root=found.root,
        compression=found.compression,
        sessions=_frame(sessions, SESSION_SCHEMA),
        descriptors=_frame(descriptors, DESCRIPTOR_SCHEMA),
        problems=_frame(problems, PROBLEM_SCHEMA),
        listing_error=error[1] if error else None,
        listing_error_path=error[2] if error else None,
        _events=events_frame,
        _jobs=jobs,
        _sources=[f.source for f in found.files],
    )


def display_path(path: str) -> str:
    r"""A path as text: bytes that are not UTF-8 shown as ``\xNN`` (distinct, unlike U+FFFD).

    Examples:
        >>> display_path(os.fsdecode(b"/r/a\x80"))
        '/r/a\\x80'
    """
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _frame(rows: list[dict[str, Any]], schema: dict[str, Any]) -> pl.DataFrame:
    if not rows:
        return pl.DataFrame(schema=schema)
    return pl.DataFrame([clean_row(row) for row in rows], schema=schema)


def _mixed_encodings(found: Discovery) -> bool:
    return any(entry.kind == "encoding-mismatch" for entry in found.entries) and bool(found.files)


def _problem(
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


def _seed_length(facts: LogFacts) -> int:
    meta = facts.read_meta or facts.list_meta or {}
    value = meta.get("seedLength", 0)
    return int(value) if is_safe_integer(value) else 0


def _session_row(found: Discovery, file: SessionFile, facts: LogFacts, order: int) -> dict[str, Any]:
    meta = facts.list_meta if facts.list_meta is not None else facts.read_meta
    header: dict[str, Any] = meta or {}
    created = header.get("createdAt")
    verdict = facts.verdict if facts.list_meta is not None else "skipped"
    valid = sum(1 for d in facts.descriptors if d.status == "valid")
    seed = _seed_length(facts)
    return {
        "list_order": order,
        "session_id": header.get("id") if isinstance(header.get("id"), str) else None,
        "path": display_path(file.path),
        "path_bytes": os.fsencode(file.path),
        "project_dir": file.project_dir,
        "session_dir": file.session_dir,
        "encoding": found.compression,
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
    }


def _lookup_errors(found: Discovery, sessions: list[dict[str, Any]]) -> None:
    """Upstream's per-id ``findLog``: a listed id whose lookup throws reads as unavailable."""
    own = log_name(found.compression)
    projects = sorted(found.project_names, key=os.fsencode)
    for row in sessions:
        if not row["listed"] or row["session_id"] is None:
            continue
        encoded = encode_segment(row["session_id"])
        matches = 0
        for project in projects:
            names = found.project_names[project]
            for suffix in (".jsonl.zstd", ".jsonl"):
                if encoded + suffix in names:
                    row["lookup_error"] = (
                        f"session artifact {os.path.join(found.root, project, encoded + suffix)!r} "
                        "uses the unsupported flat-file layout"
                    )
            if encoded in names:
                own_dir = project == row["project_dir"] and encoded == row["session_dir"]
                entry = os.path.join(found.root, project, encoded)
                if not own_dir and os.path.lexists(entry) and not os.path.isdir(entry):
                    # upstream opens <entry>/session.jsonl: ENOTDIR is not "absent", the lookup throws
                    row["lookup_error"] = f"{entry!r} is not a directory (ENOTDIR while looking up the log)"
                elif own_dir or os.path.exists(os.path.join(entry, own)):
                    matches += 1
        if row["lookup_error"] is None and matches > 1:
            row["lookup_error"] = (
                f'duplicate JSONL session id "{row["session_id"]}" appears in multiple project directories'
            )


def iter_paths(corpus: Corpus) -> Iterable[str]:
    """Paths of every session file, in list() order.

    Examples:
        >>> import tempfile
        >>> list(iter_paths(read_corpus(tempfile.mkdtemp())))
        []
    """
    return corpus.sessions["path"].to_list()


ProgressCallback = Callable[[int, int], None]


choose_compression = _choose_compression
