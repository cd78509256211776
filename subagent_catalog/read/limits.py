"""The size limits that bound a read's memory, and where they come from.

Upstream reads a log with Node: ``readFile`` refuses a file larger than
``MAX_READ_BYTES`` (2 GiB − 1), and decoding a record to a string fails when
it would be longer than V8's longest string (``MAX_JS_STRING`` UTF-16 code
units). A record that long is therefore unparsable upstream, and a file that
large cannot be read at all; this reader gives the same outcomes without
building either in memory. The zstd plaintext limit is this reader's own: a
decompression bomb becomes a failed read (``plaintext-too-large``) instead
of an out-of-memory. Together they bound a read's memory to about the file,
its plaintext and ten times its longest parsed line.
"""

from __future__ import annotations

import codecs

MAX_READ_BYTES = 2**31 - 1
"""Node's ``kIoMaxLength``: ``fs.readFile`` throws ``ERR_FS_FILE_TOO_LARGE`` above it."""

MAX_JS_STRING = 2**29 - 24
"""V8's ``String::kMaxLength`` on 64-bit hosts, in UTF-16 code units."""

MAX_PLAINTEXT_BYTES = 2**31 - 1
"""The most plaintext one zstd log may decompress to (this reader's bound, not upstream's)."""

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
