"""The command line's streams, output files and errors (the plumbing under ``subagent_catalog.cli``).

* **Terminal streams.** Everything the CLI prints to stdout or stderr has
  the terminal rule of ``subagent_catalog.views.text`` applied (control,
  bidi and other format characters escaped); files written with ``-o`` keep
  the exact data. Text the encoding of a stream cannot hold (``PYTHONIOENCODING=ascii``)
  is printed with backslash escapes, never a ``UnicodeEncodeError``.
* **Output files** go through ``subagent_catalog.outputs.open_output``
  (exclusive temporary file, atomic replace) with the corpus root as the
  protected directory, and are checked with ``check_target`` before the
  corpus is read, so a bad ``-o`` fails at once.
* **Errors.** The library's deliberate errors (``SubagentCatalogError``,
  output, archive and engine errors included) and ``OSError`` become one
  ``Error: ...`` line ending with a hint (exit status 1); so does anything
  unexpected, as an internal error (``SUBAGENT_CATALOG_TRACEBACK=1`` shows its
  traceback). A Rust panic's report, which Polars prints on descriptor 2 before it raises, is kept off
  stderr (``subagent_catalog.cli.panics``). A closed pipe on stdout (``... | head -1``) ends the command
  quietly with status 141, as a tool killed by ``SIGPIPE``; a closed stdout
  (``>&-``) is one error line.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any, Literal, TypeVar, cast

import click

from subagent_catalog.cli.panics import TRACEBACK_VARIABLE, quiet_panics, traceback_wanted
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.outputs import PathLike, check_output, open_output
from subagent_catalog.views.text import csv_cells, csv_safe, json_terminal, printable, terminal_frame, terminal_safe

if TYPE_CHECKING:
    import polars as pl

F = TypeVar("F", bound=Callable[..., Any])

PIPE_CLOSED_STATUS = 141
"""Exit status when stdout's reader went away: 128 + SIGPIPE, what a shell reports for a killed tool."""

_OS_HINTS = {
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a component of the path is not a directory",
    errno.EACCES: "check the permissions",
    errno.EPERM: "check the permissions",
    errno.ENOSPC: "free some space or choose another file system",
    errno.EDQUOT: "free some space or choose another file system",
    errno.EROFS: "the file system is read-only: choose another path",
    errno.EBADF: "the stream is closed: leave it open, or write to a file with -o FILE",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n) or use fewer --jobs",
    errno.ENOMEM: "not enough memory: use fewer --jobs or a smaller corpus",
}


class StreamError(OSError):
    """Writing to stdout or stderr failed (closed when the program started, full disk, ...)."""


class ClosedStream(io.TextIOBase):
    """Stands in for a standard stream that was closed when the program started (``>&-``).

    Writing raises ``StreamError`` (``EBADF``), which the CLI reports as one line.

    Examples:
        >>> ClosedStream("stdout").write("x")
        Traceback (most recent call last):
        ...
        subagent_catalog.cli.io.StreamError: [Errno 9] Bad file descriptor: '<stdout>'
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self._label = name

    def write(self, text: str) -> int:  # noqa: D102 - io.TextIOBase
        raise StreamError(errno.EBADF, os.strerror(errno.EBADF), f"<{self._label}>")

    def writable(self) -> bool:  # noqa: D102 - io.TextIOBase
        return True

    def isatty(self) -> bool:  # noqa: D102 - io.TextIOBase
        return False


def os_error_line(error: OSError) -> str:
    """One line with a hint for an ``OSError`` no library call turned into its own error.

    Examples:
        >>> import errno
        >>> os_error_line(OSError(errno.ENOSPC, "No space left on device", "/dev/full"))
        "No space left on device: '/dev/full' (hint: free some space or choose another file system)"
        >>> os_error_line(StreamError(errno.ENOSPC, "No space left on device", "<stdout>"))
        'cannot write to stdout: No space left on device (hint: free some space or choose another file system)'

    """
    reason = error.strerror or str(error) or type(error).__name__
    hint = _OS_HINTS.get(error.errno or 0, "check the path and its permissions")
    if isinstance(error, StreamError):
        return terminal_safe(f"cannot write to {str(error.filename).strip('<>')}: {reason} (hint: {hint})")
    where = f": {os.fsdecode(error.filename)!r}" if error.filename is not None else ""
    return terminal_safe(f"{reason}{where} (hint: {hint})")


def translate_errors(func: F) -> F:
    """Turn the library's deliberate errors and ``OSError`` into one-line click errors (exit status 1).

    Corpus values in the message (paths, ids, labels) are escaped by the terminal rule.

    Examples:
        >>> from subagent_catalog.errors import CorpusRootError
        >>> @translate_errors
        ... def boom() -> None:
        ...     raise CorpusRootError("no root \\x1b[2J", hint="check the path")
        >>> try:
        ...     boom()
        ... except click.ClickException as error:
        ...     print(error.message, error.exit_code)
        no root \\x1b[2J (hint: check the path) 1
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except SubagentCatalogError as error:
            raise click.ClickException(terminal_safe(str(error))) from error
        except BrokenPipeError:
            raise
        except OSError as error:
            if error.errno == errno.EPIPE:
                raise
            raise click.ClickException(os_error_line(error)) from error

    return cast(F, wrapper)


def _pipe_closed() -> None:
    """Stdout's reader is gone: silence the streams and exit like a tool killed by SIGPIPE."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        spare = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.dup2(spare, stream.fileno())
        os.close(spare)
    raise SystemExit(PIPE_CLOSED_STATUS)


@contextlib.contextmanager
def stdout_errors() -> Iterator[None]:
    """Re-raise an ``OSError`` from writing to stdout as a ``StreamError`` naming stdout (``EPIPE`` passes).

    Examples:
        >>> import errno
        >>> try:
        ...     with stdout_errors():
        ...         raise OSError(errno.ENOSPC, "No space left on device")
        ... except StreamError as error:
        ...     error.filename
        '<stdout>'
    """
    try:
        yield
    except StreamError:
        raise
    except OSError as error:
        if error.errno == errno.EPIPE:
            raise
        raise StreamError(error.errno, error.strerror or str(error), "<stdout>") from error


def echo(text: str) -> None:
    """Print a line on stdout (the caller has escaped it); a failed write names stdout.

    Examples:
        >>> echo("hello")
        hello
    """
    with stdout_errors():
        click.echo(fit(text, sys.stdout))


def fit(text: str, stream: object) -> str:
    """``text`` with what the stream's encoding cannot hold as backslash escapes (``PYTHONIOENCODING=ascii``).

    click writes to a stream it deems misconfigured (ASCII) in UTF-8 regardless;
    fitting the text first keeps every stream's output in its own encoding.

    Examples:
        >>> import io
        >>> fit("kö 🚀", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
        'k\\\\xf6 \\\\U0001f680'
    """
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        return text


def _escape_message(error: click.ClickException) -> None:
    # click declares ``message`` final; the error is about to be shown, with the terminal rule applied
    vars(error)["message"] = fit(terminal_safe(error.message, keep="\n"), sys.stderr)


class CatalogGroup(click.Group):
    """The command group: safe streams, escaped error lines, no traceback for a closed pipe or a bug.

    Examples:
        >>> @click.group(cls=CatalogGroup)
        ... def demo() -> None: ...
        >>> isinstance(demo, CatalogGroup)
        True
    """

    def main(self, *args: Any, **kwargs: Any) -> Any:  # noqa: D102 - click.Group
        # safe standard streams: a closed descriptor 0, 1 or 2 on /dev/null (no output file gets its number and
        # stray writes), a closed stdout or stderr a ClosedStream; what their encoding cannot hold as backslash escapes
        for fd in (0, 1, 2):
            try:
                os.fstat(fd)
            except OSError:
                with contextlib.suppress(OSError):
                    spare = os.open(os.devnull, os.O_RDWR)
                    if spare != fd:
                        os.dup2(spare, fd)
                        os.close(spare)
        if sys.stdout is None:
            sys.stdout = ClosedStream("stdout")
        if sys.stderr is None:
            sys.stderr = ClosedStream("stderr")
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
                with contextlib.suppress(ValueError, OSError):
                    stream.reconfigure(errors="backslashreplace")
        with quiet_panics():  # a Rust panic's report never reaches stderr (cli.panics)
            return super().main(*args, **kwargs)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:  # noqa: D102 - click.Group
        try:
            return super().make_context(*args, **kwargs)
        except click.ClickException as error:
            _escape_message(error)
            raise

    def invoke(self, ctx: click.Context) -> Any:  # noqa: D102 - click.Group
        try:
            result = super().invoke(ctx)
            if sys.stdout is not None and not isinstance(sys.stdout, ClosedStream):
                with stdout_errors():
                    sys.stdout.flush()
            return result
        except click.ClickException as error:
            _escape_message(error)
            raise
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except OSError as error:
            if error.errno == errno.EPIPE:
                _pipe_closed()
            raise click.ClickException(os_error_line(error)) from error
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as error:  # Exception, and a Rust panic (PanicException derives from BaseException)
            if traceback_wanted():
                raise
            detail = printable(f"{type(error).__name__}: {error}", limit=500)
            raise click.ClickException(
                f"internal error: {detail} (hint: this is a bug in subagent-catalog; please report it "
                f"with the command line, and set {TRACEBACK_VARIABLE}=1 to see the traceback)"
            ) from error


def note(message: str, *, quiet: bool = False) -> None:
    """Print one line on stderr, escaped by the terminal rule (unless ``quiet``).

    Examples:
        >>> note("wrote x \\x1b[2J", quiet=True)
    """
    if not quiet:
        click.echo(fit(terminal_safe(message), sys.stderr), err=True)


def is_stdout(path: str | None) -> bool:
    """Whether an ``-o`` value means stdout (none, or ``-``).

    Examples:
        >>> is_stdout(None), is_stdout("-"), is_stdout("out.csv")
        (True, True, False)
    """
    return path is None or path == "-"


def check_target(path: str | None, protected: Sequence[PathLike]) -> None:
    """Refuse a bad output path before any work: inside the corpus, a link, a directory, no such directory.

    Stdout (``None`` or ``-``) is always fine.

    Raises:
        OutputError: the path is refused (see ``outputs.check_output``) or its
            directory does not exist.

    Examples:
        >>> check_target("-", ["/data/corpus"])
        >>> check_target("/nonexistent/x.html", [])
        Traceback (most recent call last):
        ...
        subagent_catalog.outputs.OutputError: cannot write '/nonexistent/x.html': No such file or directory (hint: ...)
    """
    if path is not None and path != "-":
        check_output(path, protected=protected)


@contextlib.contextmanager
def output_stream(path: str | None, *, protected: Sequence[PathLike] = (), binary: bool = False) -> Iterator[IO[Any]]:
    """Yield stdout (``None`` or ``-``) or the output file, written atomically through ``open_output``.

    Text files are UTF-8 with lone surrogates replaced; nothing is escaped
    (the caller escapes what goes to stdout).

    Raises:
        OutputError: the file is refused or cannot be written.

    Examples:
        >>> with output_stream(None) as out:
        ...     out is sys.stdout
        True
    """
    if is_stdout(path):
        with stdout_errors():
            yield sys.stdout.buffer if binary else sys.stdout
        return
    assert path is not None
    text: dict[str, Any] = {} if binary else {"errors": "replace", "newline": ""}
    with open_output(path, binary=binary, protected=protected, **text) as handle:
        yield handle


def write_rows(out: IO[str], frame: pl.DataFrame, fmt: Literal["csv", "json"], *, to_terminal: bool) -> None:
    """Write ``frame`` as CSV (nested cells as JSON text) or as JSON lines, escaped for a terminal.

    CSV cells that a spreadsheet would run as a formula are neutralised (``csv_safe``); for a
    terminal, control and bidi characters in cells are escaped. An empty frame writes the CSV
    header, or nothing as JSON lines.

    Examples:
        >>> import io, polars as pl
        >>> out = io.StringIO()
        >>> write_rows(out, pl.DataFrame({"a": [1], "b": [["x"]]}), "csv", to_terminal=False)
        >>> out.getvalue()
        'a,b\\n1,"[""x""]"\\n'
        >>> out = io.StringIO()
        >>> write_rows(out, pl.DataFrame({"a": [1, 2]}), "json", to_terminal=False)
        >>> out.getvalue()
        '{"a":1}\\n{"a":2}\\n'
    """
    if fmt == "csv":
        flat = csv_cells(frame)
        out.write(csv_safe(terminal_frame(flat) if to_terminal else flat).write_csv())
        return
    text = frame.write_ndjson() if frame.height else ""
    text = text if not text or text.endswith("\n") else text + "\n"
    out.write(json_terminal(text) if to_terminal else text)
