"""Everything the toolkit derives from one session log file, read once.

``read_log_file`` is the per-file worker: it reads the bytes, gives
upstream's ``list()`` verdict on the header, upstream's full-read verdict
(``ok``, ``torn-tail``, ``prefix`` or ``failed``, with the cause), the
descriptors, the identity fold and, on request, the events. It is a pure
function of the file's bytes, so it can run in any worker process and its
result can be cached by file identity.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import astuple, dataclass, field
from typing import Any, Literal

from subagent_catalog.read import fastpath, typed_read
from subagent_catalog.read.event_rows import EventRowStream, event_rows, event_stream, first_own_seq
from subagent_catalog.read.inspect_migrate import InspectFailure
from subagent_catalog.read.inspect_rules import validate_cold_read
from subagent_catalog.read.jsvalue import is_safe_integer, json_text
from subagent_catalog.read.limits import (
    MAX_JS_STRING,
    MAX_PLAINTEXT_BYTES,
    MAX_READ_BYTES,
    PlaintextTooLarge,
    exceeds_js_string,
)
from subagent_catalog.read.paths import Compression
from subagent_catalog.read.projection import IdentityFold, fold_identity, timing_view_failure
from subagent_catalog.read.run_facts import RunFacts, fold_run, token_overflow
from subagent_catalog.read.scanner import LogReadError, LogScan, parse_list_header, scan_log

ReadVerdict = Literal["ok", "torn-tail", "prefix", "failed", "skipped"]


@dataclass
class ProblemRecord:
    """One thing wrong with a file (see the ``problems`` frame)."""

    kind: str
    message: str
    line: int | None = None
    offset: int | None = None
    severity: Literal["error", "warning", "info"] = "warning"


@dataclass
class DescriptorRecord:
    """One ``subagent/descriptor`` event and upstream's verdict on it."""

    seq: int
    time: int | None
    payload: str
    status: str
    reason: str | None
    version: str | None
    mode: str | None
    provider: str | None
    label: str | None
    agent_provider: str | None
    agent_model: str | None
    persona: str | None
    tool_allow: list[str] | None
    tool_deny: list[str] | None


@dataclass
class LogFacts:
    """Per-file facts (picklable; the unit of caching and parallel work).

    ``list_meta`` is the header as upstream's ``list()`` sees it (``None``
    when list() skips the file, with ``list_skip`` saying why); ``list_error``
    is set when this file alone makes upstream's whole listing fail. The
    ``read_*`` fields describe upstream's full read (``inspect()``).
    ``run`` holds the run facts of the session's own events (``None`` when
    the events could not be scanned, or the header's ``seedLength`` is not a
    non-negative safe integer).
    """

    size: int
    list_meta: dict[str, Any] | None = None
    list_skip: str | None = None
    list_error: str | None = None
    verdict: ReadVerdict = "failed"
    read_cause: str | None = None
    read_message: str | None = None
    read_line: int | None = None
    read_offset: int | None = None
    read_meta: dict[str, Any] | None = None
    event_count: int = 0
    first_time: int | None = None
    last_time: int | None = None
    closers: int = 0
    descriptors: list[DescriptorRecord] = field(default_factory=list)
    identity_mode: str | None = None
    identity_label: str | None = None
    identity_seq: int | None = None
    identity_cause: str | None = None
    identity_detail: str | None = None
    unit_failure: str | None = None
    unit_failure_live: str | None = None
    problems: list[ProblemRecord] = field(default_factory=list)
    run: RunFacts | None = None
    events: list[tuple[Any, ...]] | None = None
    events_ipc: bytes | None = None


def _first_line_zstd(data: bytes) -> tuple[bytes | None, str | None, str | None]:
    """(line, skip reason, whole-listing error) as upstream's readFirstZstdLine."""
    import zstandard

    from subagent_catalog.read.zstdframes import ZstdStructureError, decode_frame, scan_frames

    if not data:
        return None, "empty file", None
    try:
        scan = scan_frames(data, max_frames=1)
    except ZstdStructureError as error:
        return None, None, f"header frame failed validation: {error}"
    if not scan.frames:
        return None, "zstd file cut inside the header frame", None
    start, end = scan.frames[0]
    try:
        plain = decode_frame(data[start:end], budget=MAX_PLAINTEXT_BYTES)
    except (zstandard.ZstdError, PlaintextTooLarge) as error:
        return None, None, f"corrupt Zstandard session log: header frame failed validation ({error})"
    if not plain or plain.find(b"\n") != len(plain) - 1:
        return None, None, "corrupt Zstandard session log: first frame is not exactly one header line"
    return plain[:-1], None, None


def _list_verdict(facts: LogFacts, data: bytes, compression: Compression) -> None:
    if compression == "zstd":
        line, skip, error = _first_line_zstd(data)
    else:
        newline, error = data.find(b"\n"), None
        line = data[:newline] if newline != -1 else None
        skip = None if line is not None else "empty file" if not data else "no complete first line (no newline)"
    kind = "zstd-header-frame"
    if error is None and line is not None and exceeds_js_string(line):
        # upstream's list() decodes the first line to a string outside any try: the listing fails
        error = f"the header line ({len(line)} bytes) is longer than the longest JavaScript string"
        kind = "header-too-long"
    if error is not None:
        facts.list_error = error
        facts.problems.append(ProblemRecord(kind, error, line=1, offset=0, severity="error"))
        return
    if line is not None:
        try:
            facts.list_meta, skip = parse_list_header(line)
        except LogReadError as retired:
            facts.list_error = str(retired)
            facts.problems.append(ProblemRecord("retired-header-fields", str(retired), line=1, severity="error"))
            return
    if facts.list_meta is None:
        facts.list_skip = skip
        facts.problems.append(ProblemRecord("header-skipped", f"list() skips this file: {skip}", line=1))


def _descriptor_records(events: list[dict[str, Any]]) -> list[DescriptorRecord]:
    from subagent_catalog.read.descriptor import classify_descriptor

    records = []
    for event in events:
        if event.get("type") != "subagent/descriptor":
            continue
        time = event.get("time")
        records.append(
            DescriptorRecord(
                int(event["seq"]),
                int(time) if is_safe_integer(time) else None,
                json_text(event.get("data")),
                *astuple(classify_descriptor(event.get("data"))),  # the verdict's fields, in the record's order
            )
        )
    return records


def _scan_problems(facts: LogFacts, scan: LogScan, compression: Compression) -> None:
    if scan.torn_bytes:
        where = "incomplete final frame" if compression == "zstd" else "final record without newline"
        facts.problems.append(
            ProblemRecord(
                "torn-tail",
                f"{where}: {scan.torn_bytes} bytes dropped"
                + (f", {scan.torn_events} events recovered from it" if scan.torn_events else ""),
                offset=facts.size - scan.torn_bytes if compression == "zstd" else scan.input_bytes - scan.torn_bytes,
            )
        )
    if scan.issue is not None:
        facts.problems.append(ProblemRecord(scan.issue.kind, scan.issue.message, line=scan.issue.line))
    for line in scan.unparsable_lines[1:]:
        facts.problems.append(
            ProblemRecord("unparsable-line", f"unparsable line {line} (after the prefix ended)", line=line)
        )


def _identity_facts(facts: LogFacts, fold: IdentityFold, dropped_descriptor: bool) -> None:
    if fold.identity is not None:
        facts.identity_mode = fold.identity.mode
        facts.identity_label = fold.identity.label
        facts.identity_seq = fold.identity.seq
        return
    if fold.last is None:
        facts.identity_cause = "no-descriptor"
        facts.identity_detail = (
            "a descriptor line was dropped with the damaged or torn end of the log"
            if dropped_descriptor
            else "the log holds no subagent/descriptor event"
        )
    else:
        unknown = fold.last.status == "unknown-version"
        facts.identity_cause = "unknown-descriptor-version" if unknown else "malformed-descriptor"
        facts.identity_detail = f"last descriptor (seq {fold.last_seq}): {fold.last.reason}"


def _overflow_problems(facts: LogFacts) -> None:
    """A problem row per token count whose sum over the log passed 2^63 - 1 (the count is left null)."""
    for name in token_overflow(facts.run) if facts.run is not None else []:
        message = f"the log's {name} add up past 2^63 - 1: the count is left null (unknown), never wrapped"
        facts.problems.append(ProblemRecord("token-sum-overflow", message))


def analyse_log(data: bytes, compression: Compression, *, want_events: bool = False) -> LogFacts:
    """Derive every per-file fact from a log's bytes.

    Examples:
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> facts = analyse_log(head, "none")
        >>> facts.verdict, facts.identity_cause
        ('ok', 'no-descriptor')
    """
    facts = LogFacts(size=len(data))
    _list_verdict(facts, data, compression)
    if fastpath.enabled() and _analyse_fast(facts, data, compression, want_events, "auto"):
        return facts
    try:
        scan = scan_log(data, compression)
    except LogReadError as error:
        facts.verdict = "failed"
        facts.read_cause = error.cause
        facts.read_message = str(error)
        facts.read_line = error.line
        facts.read_offset = error.offset
        if facts.list_meta is not None:  # a header list() skips already has its problem row
            facts.problems.append(
                ProblemRecord(error.cause, str(error), line=error.line, offset=error.offset, severity="error")
            )
        return facts
    facts.read_meta = scan.meta
    _scan_problems(facts, scan, compression)
    session_id = scan.meta["id"]
    events = scan.events
    facts.descriptors = _descriptor_records(events)
    if want_events:
        facts.events = event_rows(session_id, events, first_own_seq(scan.meta))
    facts.event_count = len(events)
    times = [e["time"] for e in events if is_safe_integer(e.get("time"))]
    if times:
        facts.first_time, facts.last_time = int(min(times)), int(max(times))
    seed = scan.meta.get("seedLength", 0)  # own events are seq >= seedLength; an invalid one: unknown
    span = (facts.first_time, facts.last_time)
    facts.run = fold_run(events, int(seed), span=span) if is_safe_integer(seed) and seed >= 0 else None
    _overflow_problems(facts)
    dropped = (scan.issue is not None or scan.torn_bytes > 0) and b"subagent/descriptor" in _dropped_region(
        data, scan, compression
    )
    # Closers are never descriptors: the identity of the prefix is the identity of the balanced log.
    _identity_facts(facts, fold_identity(events), dropped)
    facts.unit_failure_live = timing_view_failure(events)
    try:
        balanced = validate_cold_read(scan.meta, events, session_id)
    except InspectFailure as failure:
        facts.verdict = "failed"
        facts.read_cause = failure.cause
        facts.read_message = str(failure)
        seq = failure.seq
        facts.read_line = scan.event_lines[seq] if seq is not None and 0 <= seq < len(scan.event_lines) else None
        facts.problems.append(ProblemRecord(failure.cause, str(failure), line=facts.read_line, severity="error"))
        return facts
    facts.closers = len(balanced) - len(events)
    facts.verdict = "prefix" if scan.issue is not None else "torn-tail" if scan.torn_bytes else "ok"
    facts.unit_failure = facts.unit_failure_live if len(balanced) == len(events) else timing_view_failure(balanced)
    return facts


FastPath = Literal["auto", "typed", "packed"]


def analyse_log_fast(
    data: bytes, compression: Compression, *, want_events: bool = False, path: FastPath = "auto"
) -> LogFacts | None:
    """``analyse_log`` by a fast path alone: ``None`` when the log needs the full path.

    ``path="typed"`` is the typed decoder (``read/typed_read.py``, facts only),
    ``"packed"`` the ``orjson`` reader with packed rows kept packed
    (``read/fastpath.py``, events rows too); ``"auto"`` the one ``analyse_log``
    tries: typed without events (unless ``typed_read.suits`` says no), packed with them.

    Raises:
        ValueError: ``path="typed"`` with ``want_events`` (the typed path keeps no events).

    Examples:
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> analyse_log_fast(head, "none") == analyse_log(head, "none"), analyse_log_fast(head[:-1], "none")
        (True, None)
        >>> analyse_log_fast(head, "none", path="packed") == analyse_log(head, "none")
        True
    """
    if path == "typed" and want_events:
        raise ValueError("the typed fast path gives no events rows; use path='packed'")
    facts = LogFacts(size=len(data))
    _list_verdict(facts, data, compression)
    return facts if _analyse_fast(facts, data, compression, want_events, path) else None


def _analyse_fast(facts: LogFacts, data: bytes, compression: Compression, want_events: bool, path: FastPath) -> bool:
    """Fill ``facts`` from a fast path and say so, or leave them untouched when the log needs the full path."""
    parts = fastpath.split_log(data, compression)
    if parts is None:
        return False
    meta, body = parts
    if path == "typed" or (path == "auto" and not want_events and typed_read.suits(body)):
        fast = typed_read.typed_facts(meta, body)
    else:
        fast = fastpath.packed_facts(meta, body)
    if fast is None:
        return False
    # The same steps as analyse_log's full path for a log with no damage (nothing below can fail).
    facts.read_meta = fast.meta
    facts.descriptors = _descriptor_records(fast.descriptors)
    if want_events:
        assert fast.events is not None
        facts.events = event_rows(fast.meta["id"], list(fastpath.expand_packed(fast.events)), first_own_seq(fast.meta))
    facts.event_count = fast.count
    facts.first_time, facts.last_time = fast.first_time, fast.last_time
    facts.run = fast.run
    _overflow_problems(facts)
    _identity_facts(facts, fold_identity(fast.descriptors), False)
    facts.unit_failure_live = timing_view_failure(fast.timing)
    facts.closers = fast.closers
    facts.verdict = "ok"
    facts.unit_failure = timing_view_failure(fast.balanced_timing) if fast.closers else facts.unit_failure_live
    return True


def _dropped_region(data: bytes, scan: LogScan, compression: Compression) -> bytes:
    if compression == "none":
        return data[scan.committed_bytes :]
    # zstd: the dropped plaintext is not kept; recover it cheaply for the cause only.
    from subagent_catalog.read.zstdframes import decode_frame, decode_torn_prefix, scan_frames

    try:
        frames = scan_frames(data)
        plain = b"".join(decode_frame(data[s:e], budget=MAX_PLAINTEXT_BYTES) for s, e in frames.frames)
        if frames.torn_start is not None:
            plain += decode_torn_prefix(data[frames.torn_start :], budget=MAX_PLAINTEXT_BYTES)
        return plain[scan.committed_bytes :]
    except Exception:
        return b""


STABLE_READ_ATTEMPTS = 5


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
# A directory handle that needs only search permission (Linux ``O_PATH``) and never follows a link.
_DIR_FLAGS = (
    (getattr(os, "O_PATH", 0) or os.O_RDONLY)
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_WALK_BY_FD = os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd and bool(getattr(os, "O_NOFOLLOW", 0))


class _Location:
    """Where a log is opened from: its full path, or (exact mode) a directory fd and a name.

    In exact mode the canonical path is walked one component at a time with
    ``O_NOFOLLOW``, so a directory on the way swapped for a symlink after the
    walk fails with ``ELOOP`` or ``ENOTDIR`` before anything beyond it is opened.
    """

    def __init__(self, path: str, *, exact: bool) -> None:
        self.path = path
        self.dir_fd: int | None = None
        self.name = path
        if exact and _WALK_BY_FD and os.path.isabs(path):
            head, self.name = os.path.split(path)
            self.dir_fd = _open_directory_nofollow(head, path)

    def revision(self) -> tuple[int, int, int, int, int]:
        info = os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)

    def read(self) -> tuple[bytes, tuple[int, int]]:
        """Read a regular file without following a final symlink and without blocking on a FIFO.

        Raises:
            FileTooLargeError: the file is larger than Node's ``readFile`` reads (only its head is read).
        """
        fd = os.open(self.name, _OPEN_FLAGS, dir_fd=self.dir_fd)
        with os.fdopen(fd, "rb", closefd=True) as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", self.path)
            if info.st_size > MAX_READ_BYTES:
                raise FileTooLargeError(info.st_size, _read_head(handle))
            return handle.read(), (info.st_dev, info.st_ino)

    def close(self) -> None:
        if self.dir_fd is not None:
            os.close(self.dir_fd)
            self.dir_fd = None


class FileTooLargeError(Exception):
    """A log larger than ``MAX_READ_BYTES``: upstream's ``readFile`` refuses it; only its head was read."""

    def __init__(self, size: int, head: bytes) -> None:
        super().__init__(f"file size ({size} bytes) is greater than 2 GiB; upstream's readFile refuses it")
        self.size = size
        self.head = head


_HEAD_PIECE = 1 << 20
_ZSTD_MAGIC_BYTES = b"\x28\xb5\x2f\xfd"


def _read_head(handle: Any) -> bytes:
    """The file's first bytes, enough for ``list()``: up to the first newline (plain) or frame (zstd).

    Reads 1 MiB, then doubles, until the first newline or first complete zstd frame is in, at
    most three bytes per unit of the longest JavaScript string (a longer first line cannot be
    decoded by upstream anyway).
    """
    from subagent_catalog.read.zstdframes import ZstdStructureError, scan_frames

    head = bytearray()
    want = _HEAD_PIECE
    while len(head) < 3 * MAX_JS_STRING + 1:
        piece = handle.read(want - len(head))
        if not piece:
            break
        head += piece
        if b"\n" in head and not head.startswith(_ZSTD_MAGIC_BYTES):
            break
        try:
            if scan_frames(bytes(head), max_frames=1).frames:
                break
        except ZstdStructureError:
            break
        want *= 2
    return bytes(head)


def _open_directory_nofollow(directory: str, path: str) -> int:
    parts = [part for part in directory.split(os.sep) if part]
    if any(part in (".", "..") for part in parts):
        raise OSError(errno.EINVAL, "not a canonical path", path)
    fd = os.open(os.sep, _DIR_FLAGS)
    try:
        for part in parts:
            try:
                step = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise OSError(error.errno, f"a directory on the way is not a directory ({part!r})", path) from None
                raise OSError(error.errno, error.strerror, path) from None
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_stable_bytes(path: str, *, exact: bool = False) -> tuple[bytes, bool]:
    """The file's bytes under upstream's revision-stable loop, and whether they are stable.

    A writer appending between the two stats would give a torn physical
    read, so the read is retried while the file's revision (device, inode,
    size, mtime, ctime) changes, at most ``STABLE_READ_ATTEMPTS`` times. The
    file is opened without following a symlink and without blocking, and
    must be a regular file (a log swapped for a symlink or a FIFO after the
    walk is refused, never followed or waited on). With ``exact`` the path
    must be canonical (as the walk resolved it) and no component of it is
    followed if it became a symlink: a directory on the way swapped for a
    symlink is refused before anything beyond it is opened.

    Raises:
        OSError: the file cannot be opened or read, or is not a regular file.

    Examples:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "f")
        >>> _ = open(path, "wb").write(b"abc")
        >>> read_stable_bytes(path)
        (b'abc', True)
    """
    location = _Location(path, exact=exact)
    try:
        data = b""
        for _ in range(STABLE_READ_ATTEMPTS):
            before = location.revision()
            data, identity = location.read()
            after = location.revision()
            if after == before and after[:2] == identity:
                return data, True
        return data, False
    finally:
        location.close()


def read_log_file(
    path: str, compression: Compression, *, want_events: bool = False, exact_path: bool = False
) -> LogFacts:
    """Read one log file (never written to) and derive its facts.

    I/O errors become a failed verdict with cause ``io-error`` (and, as
    upstream's listing fails on an unreadable log, a listing error); a file
    that keeps changing while read is listed from its last read but its full
    read fails with cause ``unstable-file`` (never a half-parsed record).

    Examples:
        >>> read_log_file("/nonexistent/session.jsonl", "none").read_cause
        'io-error'
    """
    try:
        data, stable = read_stable_bytes(path, exact=exact_path)
    except FileTooLargeError as error:
        facts = LogFacts(size=error.size)
        _list_verdict(facts, error.head, compression)  # list() reads only the header
        facts.verdict, facts.read_cause, facts.read_message = "failed", "file-too-large", str(error)
        facts.problems.append(ProblemRecord("file-too-large", str(error), severity="error"))
        return facts
    except OSError as error:
        message = f"{path}: {error.strerror}"
        facts = LogFacts(size=0, verdict="failed", read_cause="io-error", read_message=message)
        facts.list_error = f"cannot read {message}"
        facts.problems.append(ProblemRecord("io-error", message, severity="error"))
        return facts
    facts = analyse_log(data, compression, want_events=want_events)
    if not stable:
        message = f"the file changed during each of {STABLE_READ_ATTEMPTS} reads (a writer is appending)"
        facts.verdict, facts.read_cause, facts.read_message = "failed", "unstable-file", message
        facts.events = [] if want_events else None
        facts.run = None  # the bytes are not one revision of the file: no facts from them
        facts.problems.append(ProblemRecord("unstable-file", message, severity="error"))
    return facts


def log_event_stream(path: str, compression: Compression) -> EventRowStream | None:
    """The rows of a log's events read a chunk at a time (``event_rows.EventRowStream``), from a canonical path.

    ``None`` when the file cannot be read now, is too large, keeps changing
    while read, or no fast path reads it: ``read_log_file`` then gives the
    events (or says why there are none). A stream that stops with
    ``FullReadNeeded`` leaves the log to ``read_log_file`` too.

    Examples:
        >>> log_event_stream("/nonexistent/session.jsonl", "none") is None
        True
    """
    try:
        data, stable = read_stable_bytes(path, exact=True)
    except (OSError, FileTooLargeError):
        return None
    return event_stream(data, compression) if stable else None
