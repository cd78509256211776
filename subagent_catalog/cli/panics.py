"""Rust panic reports kept off the command line's stderr (the plumbing under ``subagent_catalog.cli.io``).

Polars may panic on data it cannot decode (a damaged Parquet page whose checksum was forged). Rust's
panic hook then prints a report on descriptor 2 before Polars raises ``PanicException``, which the
library turns into a typed error that the command line prints as one ``Error:`` line. The report is::

    <blank line>
    thread 'async-executor-0' (123) panicked at crates/polars-arrow/src/array/mod.rs:38:9:
    assertion failed: self.check_bound(offset)
    note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

with ``RUST_BACKTRACE=1`` (or ``full``) a ``stack backtrace:`` block of frame lines (``  12: name``,
``             at file:line``) instead of the note, ended by ``note: Some details are omitted, run with
`RUST_BACKTRACE=full` ...`` in the short form; a later panic of the process has no first note. The message
may have several lines (``assert_eq!``'s ``  left: 113`` and `` right: 114``): the hook writes the header and
the message in one write (up to 512 bytes), the message alone after it.

Neither Polars nor Rust has a setting that silences the hook (only a Rust program can replace it), so
``quiet_panics`` filters the descriptor: it points descriptor 2 at a pipe that a thread drains to the
real stderr through ``PanicFilter``, which drops those reports and passes every other byte in order,
unchanged. On Linux the pipe is in packet mode (``O_DIRECT``: each read returns one write), so a report's
message is exactly the rest of the write that holds its header, whatever its lines; elsewhere it is the one
line after the header (a message of several lines shows its later lines there). ``sys.stderr`` keeps
writing to descriptor 2 (one ordered stream) and answers ``isatty()`` as the real stderr does (a progress
bar is drawn on a terminal as before). On the way out, stderr is flushed, descriptor 2 restored, and the
drainer forwards everything written before, then stops: it never waits for a child process that still
holds the pipe.

``SUBAGENT_CATALOG_TRACEBACK=1`` (which shows an internal error's traceback) shows the reports too.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import selectors
import sys
import threading
from collections.abc import Callable, Iterator

__all__ = ["TRACEBACK_VARIABLE", "PanicFilter", "quiet_panics", "traceback_wanted"]

TRACEBACK_VARIABLE = "SUBAGENT_CATALOG_TRACEBACK"
"""Set (to anything but empty or 0): an internal error shows its traceback (``cli.io``), and nothing is
filtered here (the panic reports show with it)."""


def traceback_wanted() -> bool:
    """Whether ``TRACEBACK_VARIABLE`` asks for tracebacks (set to anything but empty or ``0``).

    Examples:
        >>> traceback_wanted() == (os.environ.get("SUBAGENT_CATALOG_TRACEBACK", "") not in ("", "0"))
        True
    """
    return os.environ.get(TRACEBACK_VARIABLE, "") not in ("", "0")


PIPE_BYTES = 1 << 20
"""The pipe's capacity asked for (Linux caps it at ``/proc/sys/fs/pipe-max-size``): a burst of panic
reports written while the drainer waits for the interpreter does not block the writer."""

_HEADER = re.compile(rb"thread '.*' (?:\(\d+\) )?panicked at ")
_NOTE = re.compile(rb"note: .*RUST_BACKTRACE")
_FRAME = re.compile(rb"\s+(?:\d+: |at )")
_BACKTRACE = b"stack backtrace:"
_THREAD = b"thread '"
_NOTE_START = b"note: "

_active = threading.Lock()
"""Held while a ``quiet_panics`` filters descriptor 2: a nested or concurrent one leaves it alone."""


class PanicFilter:
    """Drop Rust panic reports from a byte stream, passing every other byte in order.

    ``feed`` the stream's bytes as they come and ``close`` it at the end; ``write`` receives what
    passes. A complete line is judged as it ends; an unfinished one (a progress bar's ``\\r`` updates)
    passes at once unless it may begin a report line, which is held until it ends. With ``writes``, each
    ``feed`` is one write of the stream's writers (a packet pipe), and a report's message is the rest of
    the write that ends its header line (or, when that write ends there, the writes up to one that ends a
    line); without, it is the line after the header.

    Examples:
        >>> out = []
        >>> panic = PanicFilter(out.append, writes=True)
        >>> panic.feed(b"reading\\n")
        >>> panic.feed(b"\\nthread 'w' (7) panicked at src/a.rs:1:2:\\nassertion failed\\n  left: 1\\n right: 2\\n")
        >>> panic.feed(b"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\\n")
        >>> panic.feed(b"Error: damaged (hint: re-export it)\\n")
        >>> panic.close()
        >>> b"".join(out)
        b'reading\\nError: damaged (hint: re-export it)\\n'
    """

    def __init__(self, write: Callable[[bytes], object], *, writes: bool = False) -> None:
        self._write = write
        self._writes = writes
        self._state = "text"  # text | message | after (where a report may end) | backtrace
        self._pending = b""  # the unfinished line, held
        self._blank = False  # a blank line, held: a report starts with one
        self._passing = False  # the unfinished line's start has passed: the rest of it passes

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the stream (with ``writes``: the next write).

        Examples:
            >>> out = []
            >>> PanicFilter(out.append).feed(b"\\r 40%|####")
            >>> out
            [b'\\r 40%|####']
        """
        if self._writes and self._state == "message":  # a message written apart from its header
            self._state = "after" if data.endswith(b"\n") else "message"
            return
        out = bytearray()
        while data:
            if self._passing:
                end = data.find(b"\n")
                if end < 0:
                    out += data
                    break
                out += data[: end + 1]
                data, self._passing = data[end + 1 :], False
                continue
            data, self._pending = self._pending + data, b""
            end = data.find(b"\n")
            if end < 0:
                out += self._unfinished(data)
                break
            out += self._line(data[:end], b"\n")
            data = data[end + 1 :]
            if self._writes and self._state == "message" and data:  # the rest of the write is the message
                self._state = "after" if data.endswith(b"\n") else "message"
                break
        if out:
            self._write(bytes(out))

    def close(self) -> None:
        """End the stream: an unfinished line held is judged as it is, a blank line held passes.

        Examples:
            >>> out = []
            >>> panic = PanicFilter(out.append)
            >>> panic.feed(b"a\\n\\n")
            >>> panic.close()
            >>> b"".join(out)
            b'a\\n\\n'
        """
        out = self._line(self._pending, b"") if self._pending else b""
        out = (b"\n" if self._blank else b"") + out
        self._pending, self._blank = b"", False
        if out:
            self._write(out)

    def _line(self, line: bytes, end: bytes) -> bytes:
        """What passes of one line (``line`` without its ``end``): nothing when it belongs to a report."""
        if self._state == "message":
            self._state = "after"
            return b""
        if self._state in ("after", "backtrace"):
            if _NOTE.match(line):
                self._state = "text"
                return b""
            if self._state == "after" and line == _BACKTRACE:
                self._state = "backtrace"
                return b""
            if self._state == "backtrace" and _FRAME.match(line):
                return b""
            self._state = "text"
        if not line and end:
            held, self._blank = self._blank, True
            return b"\n" if held else b""
        if _HEADER.match(line):
            self._blank = False  # the report's own blank line
            self._state = "message" if line.endswith(b":") else "after"  # before Rust 1.73 the message is inline
            return b""
        out = (b"\n" if self._blank else b"") + line + end
        self._blank = False
        return out

    def _unfinished(self, data: bytes) -> bytes:
        """Hold an unfinished line that may be part of a report; else pass it (and the rest of it) now."""
        if self._state == "message" or (self._state != "text" and self._may_end_report(data)):
            self._pending = data
            return b""
        self._state = "text"
        if data.startswith(_THREAD) or _THREAD.startswith(data):
            self._pending = data
            return b""
        out = (b"\n" if self._blank else b"") + data
        self._blank, self._passing = False, True
        return out

    def _may_end_report(self, data: bytes) -> bool:
        """Whether an unfinished line may still become a note, a backtrace header or a frame line."""
        if data.startswith(_NOTE_START) or _NOTE_START.startswith(data) or _BACKTRACE.startswith(data):
            return True
        return self._state == "backtrace" and data[:1].isspace()


class _Stderr(io.TextIOWrapper):
    """``sys.stderr`` while descriptor 2 is the pipe: it writes there, and is a terminal when the real stderr is."""

    terminal = False

    def isatty(self) -> bool:
        return self.terminal


def _drain(read: int, stop: int, forward: int, keep: PanicFilter) -> None:
    """Pass what arrives on ``read`` through ``keep`` until ``stop`` is readable, then what is left."""
    with selectors.DefaultSelector() as selector:
        selector.register(read, selectors.EVENT_READ)
        selector.register(stop, selectors.EVENT_READ)
        stopping = False
        while not stopping:
            ready = {key.fd for key, _ in selector.select()}
            stopping = stop in ready
            if stopping:
                os.set_blocking(read, False)  # all that was written before the stop is in the pipe
            while read in ready or stopping:
                try:
                    chunk = os.read(read, 1 << 16)
                except BlockingIOError:
                    break
                if not chunk:
                    stopping = True
                    break
                _feed(keep, chunk, forward)
                if not stopping:
                    break
    with contextlib.suppress(Exception):
        keep.close()


def _feed(keep: PanicFilter, chunk: bytes, forward: int) -> None:
    try:
        keep.feed(chunk)
    except Exception:
        _write_all(forward, chunk)  # never lose output to a bug of the filter


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data``; when the real stderr is gone it is dropped (the pipe keeps draining)."""
    with contextlib.suppress(OSError):
        while data:
            data = data[os.write(fd, data) :]


@contextlib.contextmanager
def quiet_panics() -> Iterator[None]:
    """Filter Rust panic reports out of this process's descriptor 2 while the block runs.

    Only the outermost block of a process filters (a nested or concurrent one, a forked child's exit
    and a platform without ``fork``-style pipes leave descriptor 2 alone), and nothing is filtered with
    ``SUBAGENT_CATALOG_TRACEBACK=1``. On the way out, stderr is flushed, descriptor 2 restored and
    everything written before has reached the real stderr.

    Examples:
        >>> with quiet_panics():
        ...     print("kept", file=sys.stderr)
    """
    if os.name != "posix" or traceback_wanted():
        yield
        return
    if not _active.acquire(blocking=False):
        yield
        return
    try:
        filtering = _start()
    except OSError:
        filtering = None
    try:
        yield
    finally:
        try:
            if filtering is not None:
                filtering()
        finally:
            _active.release()


def _start() -> Callable[[], None]:
    """Point descriptor 2 at a drained pipe; the function that undoes it."""
    owner = os.getpid()
    real = os.dup(2)
    read, write, packets = _pipe()
    stop_read, stop_write = os.pipe()
    keep = PanicFilter(lambda data: _write_all(real, data), writes=packets)
    drainer = threading.Thread(target=_drain, args=(read, stop_read, real, keep), name="stderr-panics", daemon=True)
    stream = sys.stderr
    _flush(sys.stdout, stream)
    drainer.start()
    os.dup2(write, 2)
    os.close(write)
    twin = _twin(stream, os.isatty(real))
    if twin is not None:
        sys.stderr = twin

    def stop() -> None:
        if os.getpid() != owner:  # a forked child leaving the block: the drainer is its parent's
            return
        _flush(sys.stdout, sys.stderr, twin, stream, sys.__stderr__)
        if twin is not None and sys.stderr is twin:
            sys.stderr = stream
        os.dup2(real, 2)
        os.write(stop_write, b"x")
        drainer.join()
        for fd in (read, stop_read, stop_write, real):
            with contextlib.suppress(OSError):
                os.close(fd)

    return stop


def _pipe() -> tuple[int, int, bool]:
    """A pipe (read end, write end) and whether it is in packet mode (Linux: each read returns one write)."""
    if sys.platform != "linux":
        read, write = os.pipe()
        return read, write, False
    try:
        read, write = os.pipe2(os.O_DIRECT | os.O_CLOEXEC)
        packets = True
    except OSError:  # a kernel before 3.4
        (read, write), packets = os.pipe(), False
    with contextlib.suppress(OSError):
        import fcntl

        fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    return read, write, packets


def _flush(*streams: object) -> None:
    for stream in streams:
        with contextlib.suppress(Exception):
            stream.flush()  # type: ignore[attr-defined]


def _twin(stream: object, terminal: bool) -> _Stderr | None:
    """When ``sys.stderr`` writes to descriptor 2 itself: a twin that answers ``isatty()`` as the real stderr."""
    try:
        if not isinstance(stream, io.TextIOWrapper) or stream.fileno() != 2:
            return None
        twin = _Stderr(
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
            encoding=stream.encoding,
            errors=stream.errors,
            line_buffering=stream.line_buffering,
            write_through=stream.write_through,
        )
    except (OSError, ValueError, AttributeError):
        return None
    twin.terminal = terminal
    return twin
