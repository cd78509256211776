"""Writing output files without ever destroying data (layer 1: imports only the base modules).

Every file this package writes (reports, CSV/JSON listings, archive
manifests) goes through ``open_output``: the bytes go to a temporary file
created exclusively (``mkstemp``: ``O_CREAT|O_EXCL``, so a planted file or
symbolic link of the same name is never opened) in the target's directory,
and only a complete file replaces the target (``os.replace``). A reader of
the target sees the old file or the new one, never half of one, and a
hard link of the target elsewhere keeps its bytes.

Before anything is written the target is checked:

* it must not lie inside a protected directory (a corpus root), compared
  by device and inode of every ancestor and by its place inside its file
  system, so a bind mount (of the corpus or of a folder inside it), a
  symbolic link or a ``..`` path to the corpus is seen through;
* an existing target must be a regular file with one link (a hard link of
  a corpus log is refused, not replaced) and not a symbolic link (replacing
  the link would surprise; write to its target instead);
* an existing character device or FIFO (``/dev/null``, a pipe) is written
  in place, since it cannot be replaced (unless ``stream=False``: a label
  store is a regular file or a new name); any other kind of file is refused.

``check_output`` is the one check of every file the package writes: outputs,
sites, archive files, label stores and their SQLite side files
(``store.labels``; the caches check their directory with ``inside``).

Failures are ``OutputError`` with one line and a hint, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO, Any

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.regular import _kind

PathLike = str | os.PathLike[str]


class OutputError(SubagentCatalogError):
    """An output file or directory cannot, or must not, be written."""


_HINTS = {
    errno.ENOENT: "create the directory first, or choose another path",
    errno.ENOTDIR: "a component of the path is not a directory",
    errno.EACCES: "choose a path you may write to",
    errno.EPERM: "choose a path you may write to",
    errno.EROFS: "the file system is read-only: choose another path",
    errno.ENOSPC: "free some space or choose another file system",
    errno.EDQUOT: "free some space or choose another file system",
    errno.EISDIR: "pass a file path, not a directory",
}


def output_failure(path: PathLike, error: OSError, *, action: str = "write", role: str | None = None) -> OutputError:
    """The one-line error for an ``OSError`` met while writing ``path`` (``role``: what it is, see ``check_output``).

    Examples:
        >>> import errno
        >>> str(output_failure("/x/r.html", OSError(errno.ENOSPC, "No space left on device")))
        "cannot write '/x/r.html': No space left on device (hint: free some space or choose another file system)"
    """
    reason = error.strerror or str(error) or type(error).__name__
    hint = _HINTS.get(error.errno or 0, "check the path and its permissions")
    name = f"{role} {os.fspath(path)!r}" if role else repr(os.fspath(path))
    return OutputError(f"cannot {action} {name}: {reason}", hint=hint)


def identity(path: PathLike) -> tuple[int, int]:
    """The (device, inode) of ``path``, following links.

    Examples:
        >>> import os
        >>> identity(".") == identity(os.getcwd())
        True
    """
    info = os.stat(path)
    return info.st_dev, info.st_ino


def _existing_directory(path: PathLike) -> str | None:
    """The deepest existing directory at or above ``path`` (links followed)."""
    current = os.path.abspath(os.fspath(path))
    while True:
        try:
            info = os.stat(current)
        except OSError:
            parent = os.path.dirname(current)
            if parent == current:
                return None
            current = parent
            continue
        if stat.S_ISDIR(info.st_mode):
            return current
        current = os.path.dirname(current)


def _unescape(field: str) -> str:
    """A ``/proc/self/mountinfo`` path field (spaces, tabs, newlines and backslashes are octal escapes)."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)


def _below(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def fs_place(path: PathLike) -> tuple[int, str] | None:
    """Where an existing directory lies inside its file system: ``(device, path from that file system's root)``.

    A bind mount shows a directory of a file system at a second place; the
    place here is the same from either (read from ``/proc/self/mountinfo``,
    ``None`` where there is none).

    Examples:
        >>> import tempfile
        >>> place = fs_place(tempfile.gettempdir())
        >>> place is None or place[1].startswith("/")
        True
    """
    real = os.path.realpath(os.fspath(path))
    try:
        device = os.stat(real).st_dev
    except OSError:
        return None
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as handle:
            mounts = [line.split(" ") for line in handle.read().splitlines()]
    except OSError:
        return None
    best: tuple[str, str] | None = None  # (mount point, the directory of its file system mounted there)
    for fields in mounts:
        point = _unescape(fields[4]) if len(fields) > 5 else None
        if point is not None and _below(real, point) and (best is None or len(point) >= len(best[0])):
            best = (point, _unescape(fields[3]))
    if best is None:
        return None
    point, source = best
    rest = real[len(point.rstrip("/")) :] if point != "/" else real
    return device, (source.rstrip("/") + rest) or "/"


def inside(path: PathLike, directory: PathLike) -> bool:
    """Whether ``path`` is ``directory`` or lies below it, by device and inode (links and bind mounts seen through).

    ``path`` need not exist: its deepest existing ancestor decides. Besides
    its ancestors' identities, the place of that ancestor inside its file
    system is compared with the directory's (``fs_place``), so a bind mount
    of a folder inside ``directory`` mounted elsewhere is inside too.

    Examples:
        >>> import os, tempfile
        >>> base = tempfile.mkdtemp()
        >>> inside(os.path.join(base, "new", "file.html"), base), inside(base, os.path.join(base, "x"))
        (True, False)
    """
    try:
        target = identity(directory)
    except OSError:
        return False
    existing = _existing_directory(path)
    if existing is None:
        return False
    real = os.path.realpath(existing)
    while True:  # it, or one of the directories above it, is ``directory``
        with contextlib.suppress(OSError):
            if identity(real) == target:
                return True
        if os.path.dirname(real) == real:
            break
        real = os.path.dirname(real)
    here, there = fs_place(existing), fs_place(directory)
    return here is not None and there is not None and here[0] == there[0] and _below(here[1], there[1])


def check_output(
    path: PathLike,
    *,
    protected: Sequence[PathLike] = (),
    replace: bool = True,
    stream: bool = True,
    role: str | None = None,
) -> None:
    """Refuse a path this package would write: inside a protected directory, through a link, not a regular file.

    The one ownership check of every file written (outputs, sites, archive
    files, label stores and their SQLite side files).

    Args:
        path: the file to be written.
        protected: directories nothing may be written into (corpus roots, an archive's recorded root).
        replace: whether an existing file may be replaced (else any existing entry is refused).
        stream: whether an existing character device or FIFO (``/dev/null``, a pipe) may be written in
            place (else only a regular file or a new name is accepted).
        role: what the file is, for the messages (``"the label store"``; default: none).

    Raises:
        OutputError: the path is inside a protected directory, its
            directory does not exist, or it is a directory, a symbolic link
            to a file, a file with more than one hard link, or another kind
            of file (a socket; a device or FIFO unless ``stream``); or it
            exists and ``replace`` is false.

    Examples:
        >>> import os, tempfile
        >>> corpus = tempfile.mkdtemp()
        >>> check_output(os.path.join(tempfile.mkdtemp(), "r.html"), protected=[corpus])
        >>> check_output(os.path.join(corpus, "r.html"), protected=[corpus])
        Traceback (most recent call last):
        ...
        subagent_catalog.outputs.OutputError: refusing to write ... inside the corpus ... (hint: ...)
        >>> check_output("/dev/null", stream=False, role="the label store")
        Traceback (most recent call last):
        ...
        subagent_catalog.outputs.OutputError: cannot write the label store '/dev/null': it is not a regular file ...
    """
    text = os.fspath(path)
    name = f"{role} {text!r}" if role else repr(text)
    for root in protected:
        if inside(text, root):
            raise OutputError(
                f"refusing to write {name}: it is inside the corpus {os.fspath(root)!r}",
                hint="corpora are read-only: write outputs outside the corpus root",
            )
    directory = os.path.dirname(os.path.abspath(text))
    try:
        if not stat.S_ISDIR(os.stat(directory).st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), directory)
    except OSError as error:
        raise output_failure(text, error, role=role) from None
    try:
        info = os.lstat(text)
    except FileNotFoundError:
        return
    except OSError as error:
        raise output_failure(text, error, role=role) from error
    if not replace:
        raise OutputError(
            f"refusing to replace {name}: it exists and this command did not write it",
            hint="remove it or choose another path",
        )
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.stat(text)
        except OSError:
            raise OutputError(
                f"refusing to write {name}: it is a dangling symbolic link",
                hint="remove the link or choose another path",
            ) from None
        if stream and (stat.S_ISCHR(target.st_mode) or stat.S_ISFIFO(target.st_mode)):
            return
        resolved = os.path.realpath(text)
        for root in protected:
            if inside(resolved, root):
                raise OutputError(
                    f"refusing to write {name}: it is a symbolic link into the corpus {os.fspath(root)!r}",
                    hint="corpora are read-only: remove the link and write outputs outside the corpus root",
                )
        raise OutputError(
            f"refusing to replace {name}: it is a symbolic link",
            hint=f"write to its target {os.path.realpath(text)!r} directly, or remove the link",
        )
    if stat.S_ISDIR(info.st_mode):
        raise OutputError(
            f"cannot write {name}: it is a directory, not a regular file", hint="pass a file path, not a directory"
        )
    if stat.S_ISREG(info.st_mode):
        if info.st_nlink > 1:
            raise OutputError(
                f"refusing to write {name}: the file has {info.st_nlink} hard links",
                hint="another name shares its bytes (perhaps a corpus log): remove this name or choose another path",
            )
        return
    if not (stream and (stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode))):
        raise OutputError(
            f"cannot write {name}: it is not a regular file ({_kind(info.st_mode)})",
            hint="remove it or choose another path",
        )


@contextlib.contextmanager
def open_output(
    path: PathLike,
    *,
    binary: bool = False,
    protected: Sequence[PathLike] = (),
    encoding: str = "utf-8",
    errors: str = "strict",
    newline: str | None = None,
    replace: bool = True,
) -> Iterator[IO[Any]]:
    """Open ``path`` for writing; the target is replaced only when the block completes.

    Args:
        path: the output file.
        binary: yield a binary handle instead of a text one.
        protected: directories no output may land in (corpus roots).
        encoding: the text encoding.
        errors: the text encoding's error handler.
        newline: as for ``open``.
        replace: whether an existing target may be replaced; when false the
            complete file is put in place only if the name is still free
            then (a hard link made with ``O_EXCL`` semantics, ``os.link``),
            so a file another process creates meanwhile is never replaced.

    Raises:
        OutputError: the target is refused (see ``check_output``) or cannot be
            written (missing directory, no permission, full disk).

    Examples:
        >>> import os, tempfile
        >>> target = os.path.join(tempfile.mkdtemp(), "out.txt")
        >>> with open_output(target) as handle:
        ...     _ = handle.write("hello\\n")
        >>> open(target).read()
        'hello\\n'
    """
    text = os.fspath(path)
    check_output(text, protected=protected, replace=replace)

    def fdopen(descriptor: int) -> IO[Any]:
        if binary:
            return os.fdopen(descriptor, "wb")
        return os.fdopen(descriptor, "w", encoding=encoding, errors=errors, newline=newline)

    try:
        mode = os.stat(text).st_mode
    except OSError:
        mode = 0
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):  # a stream (a terminal, a pipe): written in place
        try:
            handle = fdopen(os.open(text, os.O_WRONLY | getattr(os, "O_NOCTTY", 0)))
        except OSError as error:
            raise output_failure(text, error) from error
        try:
            with handle:
                yield handle
        except OSError as error:
            raise output_failure(text, error) from error
        return
    directory = os.path.dirname(os.path.abspath(text))
    try:
        descriptor, temporary = tempfile.mkstemp(
            prefix="." + os.path.basename(text) + ".", suffix=".tmp", dir=directory
        )
    except OSError as error:
        raise output_failure(text, error) from error
    try:
        with fdopen(descriptor) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        check_output(text, protected=protected, replace=replace)  # nothing was planted meanwhile
        if replace:
            os.replace(temporary, text)
        else:
            _put_new(temporary, text)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise output_failure(text, error) from error
        raise


def _put_new(temporary: str, text: str) -> None:
    """Give the complete ``temporary`` the name ``text`` only while that name is free (never replacing)."""
    try:
        os.link(temporary, text)
    except FileExistsError:
        raise OutputError(
            f"refusing to replace {text!r}: it appeared while this command wrote it",
            hint="another process writes there: remove it or choose another path",
        ) from None
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
            raise
        # no hard links on this file system: claim the name exclusively, then replace our own claim
        os.close(os.open(text, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
        os.replace(temporary, text)
        return
    os.unlink(temporary)


def write_output(
    path: PathLike,
    data: str | bytes,
    *,
    protected: Sequence[PathLike] = (),
    encoding: str = "utf-8",
    errors: str = "strict",
    replace: bool = True,
) -> None:
    """Write ``data`` to ``path`` atomically (see ``open_output``; ``replace=False`` never replaces a file).

    Examples:
        >>> import os, tempfile
        >>> target = os.path.join(tempfile.mkdtemp(), "out.bin")
        >>> write_output(target, b"\\x00\\x01")
        >>> open(target, "rb").read()
        b'\\x00\\x01'
    """
    binary = isinstance(data, bytes)
    with open_output(
        path, binary=binary, protected=protected, encoding=encoding, errors=errors, replace=replace
    ) as out:
        out.write(data)
