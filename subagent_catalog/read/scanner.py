"""Upstream's log scan: header record, contiguous event prefix, torn tails.

Both encodings feed the same line scanner (upstream ``SessionLogScanner``):
records end with ``\\n`` only; a final record without one is a torn tail;
an unparsable committed line or a seq gap ends the prefix, and the whole read
fails if a later record decodes to a ``turn/end``. Plain-text logs are one
write; zstd logs feed one write per frame and add frame rules on top.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import orjson

from subagent_catalog.read.chunk_rows import CHUNK_ROW_TYPES, MalformedChunkRow, decode_storage_record, row_members
from subagent_catalog.read.jsvalue import (
    JsonLineError,
    is_negative_zero,
    is_number,
    is_safe_integer,
    js_number,
    js_strict_equal,
    parse_json,
)
from subagent_catalog.read.limits import (
    MAX_JS_STRING,
    MAX_LOG_EVENTS,
    MAX_LOG_VALUES,
    MAX_PLAINTEXT_BYTES,
    OverBudget,
    ParseBudget,
    PlaintextTooLarge,
    exceeds_js_string,
    line_over_budget,
)
from subagent_catalog.read.paths import Compression

if TYPE_CHECKING:
    from subagent_catalog.read.zstdframes import FrameScan

ReadCause = Literal[
    "header-missing",
    "header-not-json",
    "header-not-session",
    "header-retired-fields",
    "foreign-format-version",
    "unparsable-line-before-turn-end",
    "seq-gap-before-turn-end",
    "null-record",
    "zstd-structure",
    "zstd-frame-damage",
    "zstd-header-frame",
    "zstd-torn-record-in-complete-frame",
    "plaintext-too-large",
    "over-budget",
]


class LogReadError(Exception):
    """A log the upstream backend refuses to read.

    Attributes:
        cause: stable cause code.
        line: 1-based line number in the plaintext (header is line 1), if known.
        offset: byte offset in the file, if known.
    """

    def __init__(self, cause: ReadCause, message: str, *, line: int | None = None, offset: int | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        self.line = line
        self.offset = offset


@dataclass
class PrefixIssue:
    """Why the readable prefix stopped before the end of the log."""

    kind: Literal["unparsable-line", "seq-gap"]
    line: int
    message: str


@dataclass
class LogScan:
    """What a successful scan yields.

    ``torn_bytes`` counts bytes dropped as an incomplete final record (plain)
    or an incomplete final frame (zstd); ``issue`` is the first damage that
    ended the prefix without failing the read.
    """

    meta: dict[str, Any]
    events: list[dict[str, Any]]
    committed_bytes: int
    input_bytes: int
    issue: PrefixIssue | None = None
    torn_bytes: int = 0
    torn_events: int = 0
    unparsable_lines: list[int] = field(default_factory=list)
    event_lines: list[int] = field(default_factory=list)


RETIRED_HEADER_FIELDS = ("sandboxMode", "approvalPolicy")


def header_shape_ok(value: Any) -> bool:
    """Upstream's ``isHeaderLine`` guard.

    Examples:
        >>> header_shape_ok({"type": "session", "version": 0, "id": "a", "createdAt": 1, "delegationDepth": 0})
        True
        >>> header_shape_ok({"type": "session", "version": 0, "id": "a", "createdAt": -1, "delegationDepth": 0})
        False
    """
    if not isinstance(value, dict):
        return False
    if value.get("type") != "session" or not isinstance(value.get("type"), str):
        return False
    if not is_number(value.get("version")) or not isinstance(value.get("id"), str):
        return False
    for key in ("createdAt", "delegationDepth"):
        number = value.get(key)
        if not is_safe_integer(number) or number < 0 or is_negative_zero(number):
            return False
    if "origin" in value and value["origin"] != "subagent":
        return False
    return "agentPreset" not in value or isinstance(value["agentPreset"], str)


def header_meta(value: dict[str, Any]) -> dict[str, Any]:
    """Upstream's ``fromHeaderLine``: the header fields, others dropped.

    Raises:
        LogReadError: for the retired policy fields.

    Examples:
        >>> header_meta({"type": "session", "version": 0, "id": "a", "createdAt": 1, "delegationDepth": 0, "x": 1})
        {'version': 0, 'id': 'a', 'createdAt': 1, 'delegationDepth': 0}
    """
    if any(key in value for key in RETIRED_HEADER_FIELDS):
        raise LogReadError("header-retired-fields", "session header uses retired policy baseline fields", line=1)
    meta: dict[str, Any] = {"version": value["version"], "id": value["id"], "createdAt": value["createdAt"]}
    for key in ("cwd", "parentSession", "seedLength", "origin"):
        if key in value:
            meta[key] = value[key]
    meta["delegationDepth"] = value["delegationDepth"]
    if "agentPreset" in value:
        meta["agentPreset"] = value["agentPreset"]
    return meta


def parse_list_header(first_line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """Upstream ``parseHeaderMeta`` as ``list()`` uses it.

    Returns:
        ``(meta, None)`` for a listed header, ``(None, why)`` for a skipped one.

    Raises:
        LogReadError: for the retired fields (the whole listing fails).

    Examples:
        >>> parse_list_header(b'{"type":"session"}')
        (None, 'first line is not a session header')
    """
    if line_over_budget(first_line):
        return None, f"the first line holds more than {MAX_LOG_VALUES:,} JSON values (this reader's parse budget)"
    try:
        parsed = parse_json(first_line, keep_negative_zero=True)
    except JsonLineError:
        return None, "first line is not JSON"
    if not header_shape_ok(parsed):
        return None, "first line is not a session header"
    return header_meta(parsed), None


def parse_header_record(record: bytes) -> dict[str, Any]:
    """Upstream ``parseHeaderRecord`` for a full read.

    Raises:
        LogReadError: when the header cannot start a read.

    Examples:
        >>> parse_header_record(b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n')["id"]
        'a'
    """
    if not record or record[-1:] != b"\n" or record.find(b"\n") != len(record) - 1:
        raise LogReadError("header-missing", "empty or header-less session log", line=1)
    if len(record) > MAX_JS_STRING and exceeds_js_string(memoryview(record)[:-1]):
        raise LogReadError(
            "header-not-json",
            f"corrupt session log: header line is not valid JSON (its {len(record) - 1} bytes are longer than "
            "the longest JavaScript string)",
            line=1,
        )
    if line_over_budget(record[:-1]):
        raise LogReadError(
            "over-budget",
            f"the header line holds more than {MAX_LOG_VALUES:,} JSON values, this reader's parse budget; not parsed",
            line=1,
        )
    try:
        parsed = parse_json(record[:-1], keep_negative_zero=True)
    except JsonLineError as error:
        raise LogReadError("header-not-json", "corrupt session log: header line is not valid JSON", line=1) from error
    if isinstance(parsed, dict) and is_number(parsed.get("version")) and js_number(parsed["version"]) != 0:
        ident = parsed.get("id")
        raise LogReadError(
            "foreign-format-version",
            f'session "{ident!s}" uses log format v{parsed["version"]}, which this reader (format v0) does not read',
            line=1,
        )
    if not header_shape_ok(parsed):
        raise LogReadError("header-not-session", "corrupt session log: first line is not a session header", line=1)
    return header_meta(parsed)


class LineScanner:
    """Incremental event-line scanner after an independently supplied header.

    Every complete line is charged against the parse budgets before it is
    parsed (``replay(n)`` yields the first ``n`` writes again, see
    ``ParseBudget``); a log that would pass one fails with ``over-budget``.
    """

    def __init__(self, header_record: bytes, replay: Callable[[int], Iterable[bytes]] | None = None) -> None:
        self.meta = parse_header_record(header_record)
        self.budget = ParseBudget(replay)
        self.expanded = 0  # events beyond one that packed chunk rows stood for
        self.events: list[dict[str, Any]] = []
        self.input_bytes = len(header_record)
        self.committed_bytes = len(header_record)
        self.line = 1
        self.issue: PrefixIssue | None = None
        self.unparsable: list[int] = []
        self.event_lines: list[int] = []
        self._fragment = bytearray()

    def write(self, chunk: bytes) -> None:
        """Consume the next plaintext bytes, keeping an incomplete last record."""
        start = self.input_bytes
        self.input_bytes += len(chunk)
        try:
            self.budget.charge(self._fragment, chunk, chunk.rfind(b"\n") + 1, records=self.line - 1 + self.expanded)
        except OverBudget as error:
            message = f"{error} (lines from {self.line + 1}); not parsed"
            raise LogReadError("over-budget", message, line=self.line + 1) from error
        position = 0
        while True:
            newline = chunk.find(b"\n", position)
            if newline == -1:
                break
            if self._fragment:
                self._fragment += chunk[position:newline]
                line = bytes(self._fragment)
                self._fragment.clear()
            else:
                line = chunk[position:newline]
            self._consume(line, start + newline + 1)
            position = newline + 1
        if position < len(chunk):
            self._fragment += chunk[position:]
        if self.line - 1 + self.expanded > MAX_LOG_EVENTS:  # the lines were charged first, the rows' members now
            raise LogReadError(
                "over-budget",
                f"the log holds more than {MAX_LOG_EVENTS:,} event records, this reader's parse budget "
                f"({self.line - 1:,} lines, and {self.expanded:,} more events in packed rows)",
                line=self.line,
            )

    def _consume(self, line: bytes, end_byte: int) -> None:
        if len(line) > MAX_JS_STRING and exceeds_js_string(line):
            # Upstream cannot decode the record into a string: an unparsable line, never parsed here.
            self.line += 1
            self.unparsable.append(self.line)
            if self.issue is None:
                self.issue = PrefixIssue(
                    "unparsable-line",
                    self.line,
                    f"unparsable committed event at line {self.line}: {len(line)} bytes, longer than the longest "
                    "JavaScript string",
                )
            return
        if self.issue is None:
            # Fast path: a plain event record carrying the next seq (the healthy common case).
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                value = None
            if type(value) is dict:
                kind = value.get("type")
                seq = value.get("seq")
                if type(seq) is int and seq == len(self.events) and not (type(kind) is str and kind in CHUNK_ROW_TYPES):
                    self.line += 1
                    self.events.append(value)
                    self.event_lines.append(self.line)
                    self.committed_bytes = end_byte
                    return
        self.line += 1
        try:
            parsed = parse_json(line)
            members = row_members(parsed)
            if members > 1:
                self.expanded += members - 1
                if self.line - 1 + self.expanded > MAX_LOG_EVENTS:
                    raise LogReadError(
                        "over-budget",
                        f"the log holds more than {MAX_LOG_EVENTS:,} event records, this reader's parse budget "
                        f"(the packed row at line {self.line} stands for {members:,} events); not expanded",
                        line=self.line,
                    )
            decoded = decode_storage_record(parsed)
        except (JsonLineError, MalformedChunkRow) as error:
            self.unparsable.append(self.line)
            if self.issue is None:
                self.issue = PrefixIssue(
                    "unparsable-line", self.line, f"unparsable committed event at line {self.line}: {error}"
                )
            return
        if any(event is None for event in decoded):
            raise LogReadError(
                "null-record", f"record at line {self.line} is null (upstream fails reading it)", line=self.line
            )
        if self.issue is not None:
            if _has_turn_end(decoded):
                raise self._fail()
            return
        row_start = len(self.events)
        for event in decoded:
            seq = event.get("seq") if isinstance(event, dict) else None
            if not isinstance(event, dict) or not js_strict_equal(seq, len(self.events)):
                expected = len(self.events)
                del self.events[row_start:]
                del self.event_lines[row_start:]
                self.issue = PrefixIssue(
                    "seq-gap",
                    self.line,
                    f"seq gap in committed region at line {self.line} (expected {expected}, got {seq})",
                )
                if _has_turn_end(decoded):
                    raise self._fail()
                return
            self.events.append(event)
            self.event_lines.append(self.line)
        self.committed_bytes = end_byte

    def _fail(self) -> LogReadError:
        assert self.issue is not None
        cause: ReadCause = (
            "unparsable-line-before-turn-end" if self.issue.kind == "unparsable-line" else "seq-gap-before-turn-end"
        )
        return LogReadError(
            cause,
            f"corrupt session log: {self.issue.message}, and a later record (line {self.line}) holds a turn/end",
            line=self.issue.line,
        )


def _log_scan(scanner: LineScanner, *, torn_bytes: int, torn_events: int = 0) -> LogScan:
    """What a scanner read, as a ``LogScan`` with the torn tail its caller counted."""
    return LogScan(
        meta=scanner.meta,
        events=scanner.events,
        committed_bytes=scanner.committed_bytes,
        input_bytes=scanner.input_bytes,
        issue=scanner.issue,
        torn_bytes=torn_bytes,
        torn_events=torn_events,
        unparsable_lines=scanner.unparsable,
        event_lines=scanner.event_lines,
    )


def _has_turn_end(decoded: list[Any]) -> bool:
    return any(isinstance(event, dict) and event.get("type") == "turn/end" for event in decoded)


def scan_plain(buffer: bytes) -> LogScan:
    """Scan a plain-text log exactly as upstream's ``scanLog``.

    Raises:
        LogReadError: when upstream's read fails.

    Examples:
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> s = scan_plain(head + b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\\n{"ty')
        >>> len(s.events), s.torn_bytes
        (1, 4)
    """
    header_end = buffer.find(b"\n")
    if header_end == -1:
        raise LogReadError("header-missing", "empty or header-less session log", line=1)
    scanner = LineScanner(buffer[: header_end + 1])
    scanner.write(buffer[header_end + 1 :])
    return _log_scan(scanner, torn_bytes=len(scanner._fragment))


def scan_zstd(buffer: bytes) -> LogScan:
    """Scan a zstd log exactly as upstream's ``readZstdPrefix``.

    Raises:
        LogReadError: when upstream's read fails.

    Examples:
        >>> from subagent_catalog.read.zstdframes import compress_frame
        >>> head = b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\\n'
        >>> scan_zstd(compress_frame(head)).events
        []
    """
    from subagent_catalog.read.zstdframes import ZstdStructureError, scan_frames

    try:
        frames = scan_frames(buffer)
    except ZstdStructureError as error:
        raise LogReadError("zstd-structure", str(error), offset=error.offset) from error
    if not frames.frames:
        raise LogReadError("header-missing", "empty or header-less Zstandard session log", offset=0)
    try:
        return _scan_zstd_frames(buffer, frames)
    except PlaintextTooLarge as error:
        raise LogReadError("plaintext-too-large", str(error)) from error


def _scan_zstd_frames(buffer: bytes, frames: FrameScan) -> LogScan:
    import zstandard

    from subagent_catalog.read.zstdframes import decode_frame, decode_torn_prefix

    budget = MAX_PLAINTEXT_BYTES
    first_start, first_end = frames.frames[0]
    try:
        header_plain = decode_frame(buffer[first_start:first_end], budget=budget)
    except zstandard.ZstdError as error:
        raise LogReadError(
            "zstd-frame-damage", f"header frame failed to decode: {error}", offset=first_start
        ) from error
    if not header_plain or header_plain.find(b"\n") != len(header_plain) - 1:
        raise LogReadError(
            "zstd-header-frame", "corrupt Zstandard session log: first frame is not exactly one header line", offset=0
        )

    def replay(count: int) -> Iterator[bytes]:  # the first writes again, for the budget's recount
        for start, end in frames.frames[1 : 1 + count]:
            yield decode_frame(buffer[start:end], budget=budget)

    scanner = LineScanner(header_plain, replay)
    for start, end in frames.frames[1:]:
        try:
            plain = decode_frame(buffer[start:end], budget=budget - scanner.input_bytes)
        except zstandard.ZstdError as error:
            raise LogReadError(
                "zstd-frame-damage", f"frame at byte {start} failed to decode: {error}", offset=start
            ) from error
        scanner.write(plain)
    if scanner.committed_bytes != scanner.input_bytes:
        line = scanner.issue.line if scanner.issue is not None else scanner.line + 1
        raise LogReadError(
            "zstd-torn-record-in-complete-frame",
            "corrupt Zstandard session log: complete frame contains a torn JSONL record"
            + (f" ({scanner.issue.message})" if scanner.issue is not None else ""),
            line=line,
        )
    complete_events = len(scanner.events)
    torn_bytes = 0
    if frames.torn_start is not None:
        torn_bytes = len(buffer) - frames.torn_start
        scanner.write(decode_torn_prefix(buffer[frames.torn_start :], budget=budget - scanner.input_bytes))
    return _log_scan(scanner, torn_bytes=torn_bytes, torn_events=len(scanner.events) - complete_events)


def scan_log(buffer: bytes, compression: Compression) -> LogScan:
    """Scan one log in its encoding.

    Raises:
        LogReadError: when upstream's read fails.

    Examples:
        >>> scan_log(b"", "none")
        Traceback (most recent call last):
        ...
        subagent_catalog.read.scanner.LogReadError: empty or header-less session log
    """
    return scan_zstd(buffer) if compression == "zstd" else scan_plain(buffer)
