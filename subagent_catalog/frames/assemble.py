"""Assembly of the corpus frames from a walk and per-file facts (no log I/O).

``assemble`` turns a ``Discovery``
and one ``LogFacts`` per file into the
``sessions``, ``descriptors`` and ``problems`` frames, applying upstream's
corpus-wide rules (stored identity, duplicate ids, mixed encodings, per-id
lookups) that no single file can decide.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import polars as pl

from subagent_catalog.frames.corpus import Corpus, facts_events
from subagent_catalog.frames.schemas import (
    DESCRIPTOR_SCHEMA,
    EVENT_SCHEMA,
    LISTING_FATAL_KINDS,
    PROBLEM_SCHEMA,
    RUN_SCHEMA,
    SESSION_SCHEMA,
)
from subagent_catalog.read.discover import Discovery, SessionFile
from subagent_catalog.read.jsvalue import clean_row, is_safe_integer, js_number, json_text
from subagent_catalog.read.logread import LogFacts
from subagent_catalog.read.paths import (
    MISSING,
    Compression,
    PathIdentityError,
    encode_segment,
    log_name,
    project_dir_name,
)


def _json_text(value: Any) -> str | None:
    return None if value is MISSING else json_text(value, nonfinite="roundtrip")


def _safe_int(value: Any) -> int | None:
    return int(value) if is_safe_integer(value) else None


def _expected_log_path(root: str, meta: dict[str, Any], compression: Compression) -> str:
    project = project_dir_name(meta.get("cwd", MISSING))
    return os.path.join(root, project, encode_segment(meta["id"]), log_name(compression))


_PROBES: dict[str, Callable[[str], Any]] = {
    "exists": os.path.exists,
    "lexists": os.path.lexists,
    "isdir": os.path.isdir,
    "realpath": os.path.realpath,
}


class FsProbes:
    """The filesystem questions assembly asks beyond the walk, with their answers (to ask again later).

    Examples:
        >>> probes = FsProbes()
        >>> probes.ask("exists", "/nonexistent/x"), probes.unchanged()
        (False, True)
        >>> FsProbes.from_json(probes.to_json()).unchanged()
        True
    """

    def __init__(self, asked: list[tuple[str, str, Any]] | None = None) -> None:
        self.asked = asked if asked is not None else []

    def ask(self, kind: str, path: str) -> Any:
        """The answer of ``os.path.<kind>(path)`` (an ``OSError`` re-raised), recorded.

        Examples:
            >>> FsProbes().ask("isdir", "/")
            True
        """
        try:
            answer = _PROBES[kind](path)
        except OSError:
            self.asked.append((kind, path, None))
            raise
        self.asked.append((kind, path, answer))
        return answer

    def unchanged(self) -> bool:
        """Whether every question gets the answer it got (``None``: raised ``OSError``).

        Examples:
            >>> FsProbes([("exists", "/", False)]).unchanged()
            False
        """
        for kind, path, answer in self.asked:
            try:
                now = _PROBES[kind](path)
            except OSError:
                now = None
            if now != answer or type(now) is not type(answer):
                return False
        return True

    def to_json(self) -> list[list[Any]]:
        """The questions and answers as JSON values (paths as the hex of their bytes).

        Examples:
            >>> FsProbes([("realpath", "/a", "/b")]).to_json()
            [['realpath', '2f61', '2f62']]
        """
        return [
            [kind, os.fsencode(path).hex(), os.fsencode(answer).hex() if isinstance(answer, str) else answer]
            for kind, path, answer in self.asked
        ]

    @classmethod
    def from_json(cls, value: Any) -> FsProbes | None:
        """The probes of ``to_json`` output, or ``None`` when it is not such output.

        Examples:
            >>> FsProbes.from_json([["rm", "2f", True]]) is None
            True
        """
        asked: list[tuple[str, str, Any]] = []
        if not isinstance(value, list):
            return None
        for item in value:
            if not (isinstance(item, list) and len(item) == 3 and item[0] in _PROBES and isinstance(item[1], str)):
                return None
            kind, path, answer = item
            try:
                decoded = os.fsdecode(bytes.fromhex(path))
                if kind == "realpath":
                    answer = None if answer is None else os.fsdecode(bytes.fromhex(answer))
                elif answer is not None and not isinstance(answer, bool):
                    return None
            except (TypeError, ValueError):
                return None
            asked.append((kind, decoded, answer))
        return cls(asked)


def _ask(probes: FsProbes | None, kind: str, path: str) -> Any:
    return _PROBES[kind](path) if probes is None else probes.ask(kind, path)


def _same_file(a: str, b: str, probes: FsProbes | None = None) -> bool:
    try:
        return bool(_ask(probes, "exists", b)) and _ask(probes, "realpath", a) == _ask(probes, "realpath", b)
    except OSError:
        return False


def identity_error(
    root: str, path: str, meta: dict[str, Any], compression: Compression, probes: FsProbes | None = None
) -> str | None:
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
    if path == expected or _same_file(path, expected, probes):
        return None
    return f'corrupt session log "{path}": header id "{meta["id"]}" and cwd identify "{expected}"'


def assemble(
    found: Discovery,
    facts_list: list[LogFacts],
    *,
    jobs: int | None = None,
    want_events: bool = False,
    probes: FsProbes | None = None,
) -> Corpus:
    """Build the corpus frames from a walk and per-file facts (no log I/O).

    ``probes`` records the filesystem questions asked beyond the walk (the
    frames cache asks them again before it reuses the frames).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.read.discover import discover
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
            mismatch = identity_error(found.root, file.path, meta, found.compression, probes)
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
    _lookup_errors(found, sessions, probes)
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
        **run_columns(facts),
    }


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


def _lookup_errors(found: Discovery, sessions: list[dict[str, Any]], probes: FsProbes | None) -> None:
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
                if not own_dir and _ask(probes, "lexists", entry) and not _ask(probes, "isdir", entry):
                    # upstream opens <entry>/session.jsonl: ENOTDIR is not "absent", the lookup throws
                    row["lookup_error"] = f"{entry!r} is not a directory (ENOTDIR while looking up the log)"
                elif own_dir or _ask(probes, "exists", os.path.join(entry, own)):
                    matches += 1
        if row["lookup_error"] is None and matches > 1:
            row["lookup_error"] = (
                f'duplicate JSONL session id "{row["session_id"]}" appears in multiple project directories'
            )
