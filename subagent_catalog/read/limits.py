"""The size limits that bound a read's memory, and where they come from.

Upstream reads a log with Node: ``readFile`` refuses a file larger than
``MAX_READ_BYTES`` (2 GiB − 1), and decoding a record to a string fails when
it would be longer than V8's longest string (``MAX_JS_STRING`` UTF-16 code
units). A record that long is therefore unparsable upstream, and a file that
large cannot be read at all; this reader gives the same outcomes without
building either in memory. The zstd plaintext limit is this reader's own: a
decompression bomb becomes a failed read (``plaintext-too-large``) instead
of an out-of-memory.

Bytes are not memory: parsed JSON costs per value (``{},`` is 3 bytes of
plaintext and 72 bytes of Python objects), and per event (a packed chunk row
stands for one event in 4 bytes, expanded to ~800). The parse budgets
``MAX_LOG_VALUES`` and ``MAX_LOG_EVENTS`` are also this reader's own: every
complete line is charged before it is parsed, and a log that would pass
either budget fails its read (``over-budget``) without being parsed further.
Together they bound a read's memory to about the file, five times its
plaintext (the plaintext, and the strings parsed from it: a Python string
holding an astral character takes 4 bytes a character), ``VALUE_BYTES`` per
budgeted value and ``EVENT_BYTES`` per budgeted event: ``read_memory_bound``.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterable

MAX_READ_BYTES = 2**31 - 1
"""Node's ``kIoMaxLength``: ``fs.readFile`` throws ``ERR_FS_FILE_TOO_LARGE`` above it."""

MAX_JS_STRING = 2**29 - 24
"""V8's ``String::kMaxLength`` on 64-bit hosts, in UTF-16 code units."""

MAX_PLAINTEXT_BYTES = 2**31 - 1
"""The most plaintext one zstd log may decompress to (this reader's bound, not upstream's)."""

MAX_LOG_VALUES = 4_000_000
"""The most JSON values (object keys included) the lines of one log may hold (this reader's bound).

A parsed value costs at most about ``VALUE_BYTES`` of Python objects beyond
its text, so this bounds the parsed values to about 0.44 GB. The largest logs
of the conformance corpora hold 44 thousand values, those of a 3,000-session
synthetic corpus 73 thousand (its largest log, 1.8 MB): a fiftyfold margin.
Values are counted as ``count_values`` does, before a line is parsed.
"""

MAX_LOG_EVENTS = 500_000
"""The most event records one log may hold: lines, plus the events a packed chunk row stands for.

Each kept event costs at most about ``EVENT_BYTES`` beyond its charged
values (an expanded chunk row builds three objects per event, and the
events frame a row and a JSON text), so this bounds the events to about
0.4 GB. The largest logs of the conformance and synthetic corpora hold 4,093
and 8,012 events: a sixtyfold margin.
"""

VALUE_BYTES = 110
"""Measured upper bound on the memory one budgeted value costs, with a margin.

Peak RSS of a line just under the budget, per value: 4 M two-letter strings in one array 103 bytes
(their 19 MiB of plaintext included), ``[{"a":0},…]`` 91, an object of distinct keys 81, ``[{},…]`` 49.
"""

EVENT_BYTES = 800
"""Measured upper bound on the memory one budgeted event costs beyond its values.

A packed row of 500 k one-letter text chunks costs 404 MiB read and 481 MiB with its events frame
rows, less its 1 M values' ~110 MB: ~800 bytes an event; a ``{"seq":N}`` line costs ~300 bytes in all.
"""

_CHUNK = 1 << 24


def utf16_length(data: bytes | memoryview) -> int:
    """The length of ``data`` decoded as Node decodes UTF-8 (U+FFFD for bad bytes), in UTF-16 units.

    Decodes in 16 MiB pieces, so memory stays small whatever the input's size.

    Examples:
        >>> utf16_length("a\U0001f642é".encode()), utf16_length(b"\\xff\\xfe")
        (4, 2)
    """
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    view = memoryview(data)
    units = 0
    for start in range(0, len(view), _CHUNK):
        units += len(decoder.decode(view[start : start + _CHUNK]).encode("utf-16-le")) // 2
    return units + len(decoder.decode(b"", final=True).encode("utf-16-le")) // 2


def exceeds_js_string(line: bytes | memoryview) -> bool:
    """Whether Node could not decode ``line`` into one string (``ERR_STRING_TOO_LONG``).

    Every UTF-8 byte yields at most one UTF-16 unit, so a line of at most
    ``MAX_JS_STRING`` bytes always fits; only longer ones are measured.

    Examples:
        >>> exceeds_js_string(b"{}")
        False
    """
    return len(line) > MAX_JS_STRING and utf16_length(line) > MAX_JS_STRING


class PlaintextTooLarge(Exception):
    """A zstd log decompresses to more than its plaintext budget."""

    def __init__(self, budget: int, declared: int | None = None) -> None:
        what = f"a frame declares {declared} bytes" if declared is not None else "the frames decompress further"
        super().__init__(f"zstd plaintext exceeds {budget} bytes ({what}); not decompressed further")
        self.budget = budget
        self.declared = declared


# A JSON string: from its quote to its closing quote, or to the end of the line when it is not closed
# (never across a newline: a raw newline cannot be inside a JSON string). Possessive and never failing,
# so each byte is matched once: linear on any input.
_STRING = re.compile(rb'"(?:[^"\\\n]++|\\[^\n]?)*+"?')


def _marks(data: bytes | bytearray, start: int, end: int) -> int:
    return (
        data.count(b"{", start, end)
        + data.count(b"[", start, end)
        + data.count(b",", start, end)
        + data.count(b":", start, end)
        + data.count(b"\n", start, end)
    )


def count_marks(data: bytes) -> int:
    """The ``{ [ , :`` and newlines of ``data``, strings included: ``ParseBudget``'s second-tier charge of its lines.

    Examples:
        >>> count_marks(b'{"a,b":[1]}\\n')
        5
    """
    return _marks(data, 0, len(data))


def count_values(data: bytes, start: int = 0, end: int | None = None, *, limit: int | None = None) -> int:
    """An upper bound on the JSON values and object keys the complete lines of ``data[start:end]`` parse to.

    Counts ``{``, ``[``, ``,`` and ``:`` outside strings, and one per newline:
    every value or key but a line's top-level value follows one of them, so
    it bounds what a line parses to, and a line's length in bytes bounds it.
    Commas and colons inside strings (prose, code, CSV) do not count. It
    walks the strings without copying anything, and stops once the count
    passes ``limit`` (returning a count above it): consecutive strings are
    separated by a counted byte, so it visits at most ``limit`` + lines strings.

    Examples:
        >>> count_values(b'{"a,b":[1,2],"c":{}}\\n')  # 7 values and keys
        8
        >>> count_values(b'[{},{},{}]\\n')  # 4 values
        7
    """
    stop = len(data) if end is None else end
    total = 0
    position = start
    for match in _STRING.finditer(data, start, stop):
        total += _marks(data, position, match.start())
        if limit is not None and total > limit:
            return total
        position = match.end()
    return total + _marks(data, position, stop)


def line_over_budget(line: bytes) -> bool:
    """Whether one line alone holds more than ``MAX_LOG_VALUES`` values (a header is charged on its own).

    Examples:
        >>> line_over_budget(b'{"type":"session"}'), line_over_budget(b"[" + b"{}," * MAX_LOG_VALUES + b"{}]")
        (False, True)
    """
    return len(line) + 1 > MAX_LOG_VALUES and count_values(line + b"\n", limit=MAX_LOG_VALUES) > MAX_LOG_VALUES


def read_memory_bound(file_bytes: int, plaintext_bytes: int) -> int:
    """About the most memory (bytes) reading one log costs beyond the interpreter, by this reader's limits.

    The file; its plaintext (a copy for a plain-text log; for a zstd log the
    frames are decoded one at a time, but a damaged end decodes them all
    again) and up to four times more for the strings parsed from it; and the
    two parse budgets at ``VALUE_BYTES`` and ``EVENT_BYTES``. A log just under
    both budgets (500 k packed events and 3 M strings, 17 MiB of plaintext)
    measured 653 MiB, 725 MiB with its events frame, against 886 MiB here
    (``benchmarks/budget_worst_case.py``).

    Examples:
        >>> read_memory_bound(0, 0) // 10**6
        840
    """
    budgets = MAX_LOG_VALUES * VALUE_BYTES + MAX_LOG_EVENTS * EVENT_BYTES
    return file_bytes + 5 * plaintext_bytes + budgets


class OverBudget(Exception):
    """A log whose lines would pass a parse budget (``MAX_LOG_VALUES`` or ``MAX_LOG_EVENTS``)."""

    def __init__(self, what: str, budget: int) -> None:
        super().__init__(f"the log holds more than {budget:,} {what}, this reader's parse budget")
        self.what = what
        self.budget = budget


class ParseBudget:
    """Charges a log's complete lines against ``MAX_LOG_VALUES`` and ``MAX_LOG_EVENTS`` before they are parsed.

    Lines are charged a region at a time (the lines a write completes) at the
    cheapest tier that keeps the total within the budget: first their length
    in bytes (free), then their ``{ [ , :`` and newlines (strings included), then ``count_values``; each tier
    bounds the next, so the log fails only when its ``count_values`` total
    passes the budget. Moving up a tier recounts the earlier regions, which
    ``replay(n)`` yields again (the first ``n`` writes); without it they keep
    the looser bound.

    Examples:
        >>> budget = ParseBudget()
        >>> budget.charge(b"", b'{"a":1}\\n', 8, records=0)
        >>> budget.values, budget.tier
        (8, 0)
    """

    def __init__(self, replay: Callable[[int], Iterable[bytes]] | None = None) -> None:
        self.replay = replay
        self.tier = 0
        self.values = 0
        self.writes = 0

    def charge(self, fragment: bytes | bytearray, chunk: bytes, end: int, *, records: int) -> None:
        """Charge the lines ``fragment + chunk[:end]`` (``end`` just past a newline, or 0) before parsing them.

        ``records`` is the count of event records already charged.

        Raises:
            OverBudget: the lines would pass a budget.
        """
        self.writes += 1
        if end == 0:
            return
        if records + len(fragment) + end > MAX_LOG_EVENTS:
            lines = chunk.count(b"\n", 0, end)
            if records + lines > MAX_LOG_EVENTS:
                raise OverBudget("event records", MAX_LOG_EVENTS)
        cost = self._cost(fragment, chunk, end, self.tier, MAX_LOG_VALUES - self.values)
        while self.values + cost > MAX_LOG_VALUES and self.tier < 2:
            self.tier += 1
            self.values = self._recount()
            cost = self._cost(fragment, chunk, end, self.tier, MAX_LOG_VALUES - self.values)
        if self.values + cost > MAX_LOG_VALUES:
            raise OverBudget("JSON values", MAX_LOG_VALUES)
        self.values += cost

    def _recount(self) -> int:
        """The earlier writes' lines at the current tier (or their charge so far, if they cannot be replayed)."""
        earlier = self.writes - 1
        if earlier == 0:
            return 0
        if self.replay is None:
            return self.values
        total = 0
        fragment = b""
        for chunk in self.replay(earlier):
            end = chunk.rfind(b"\n") + 1
            if end:
                total += self._cost(fragment, chunk, end, self.tier, None)
                fragment = chunk[end:]
            else:
                fragment += chunk
        return total

    @staticmethod
    def _cost(fragment: bytes | bytearray, chunk: bytes, end: int, tier: int, limit: int | None) -> int:
        if tier == 0:
            return len(fragment) + end
        if tier == 1:
            return _marks(fragment, 0, len(fragment)) + _marks(chunk, 0, end)
        if not fragment:
            return count_values(chunk, 0, end, limit=limit)
        first = chunk.find(b"\n") + 1  # the fragment's line ends at the chunk's first newline
        head = count_values(bytes(fragment) + chunk[:first], limit=limit)
        rest = None if limit is None else max(limit - head, 0)
        return head + count_values(chunk, first, end, limit=rest)
