"""Opening a file this package only reads safely (layer 0: imports nothing of the package).

A cache file, its key, an archive's manifest or parts, and every file a user
names (a price table, a ``--live`` overlay, a ``check --baseline``) go
through here. ``open()`` of a FIFO blocks until a writer comes, and a device
(``/dev/zero``) or a socket is not data: a file named like one we read may be
any of them (planted in a shared cache directory, or in an archive, or
given by mistake). ``open_regular`` opens without blocking (``O_NONBLOCK``;
regular files ignore it), checks with ``fstat`` that what it opened is a
regular file (and, when asked, owned by this user or root) before one byte
is read, and only then hands it over; ``read_regular`` reads at most a given
number of bytes of it.
"""

from __future__ import annotations

import errno
import os
import stat

OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
"""Read-only, never blocking on a FIFO, not inherited by child processes."""


class NotRegularFileError(OSError):
    """A file to read is not a regular file (a FIFO, a device, a directory...) or not owned as required."""


def open_regular(path: str | os.PathLike[str], *, follow: bool = True, own: bool = False) -> int:
    """A descriptor of a regular file, opened without blocking and checked before anything is read.

    Args:
        path: the file.
        follow: follow a symbolic link in the last component (else ``O_NOFOLLOW``).
        own: also require that this user (or root) owns it.

    Raises:
        NotRegularFileError: it is not a regular file, or not owned as required.
        OSError: it cannot be opened (``FileNotFoundError`` when missing).

    Examples:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> os.mkfifo(os.path.join(folder, "pipe"))
        >>> open_regular(os.path.join(folder, "pipe"))
        Traceback (most recent call last):
        ...
        subagent_catalog.regular.NotRegularFileError: [Errno 22] not a regular file (a FIFO): '...pipe'
    """
    flags = OPEN_FLAGS | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError(errno.EINVAL, f"not a regular file ({_kind(info.st_mode)})", os.fspath(path))
        if own and hasattr(os, "getuid") and info.st_uid not in (os.getuid(), 0):
            raise NotRegularFileError(errno.EPERM, "owned by another user", os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], *, limit: int, follow: bool = True, own: bool = False) -> bytes:
    """At most ``limit`` bytes of a regular file (see ``open_regular``).

    Raises:
        NotRegularFileError: it is not a regular file, or not owned as required.
        OSError: it cannot be opened or read.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "m.json")
        >>> _ = open(path, "wb").write(b"{}")
        >>> read_regular(path, limit=10)
        b'{}'
    """
    with os.fdopen(open_regular(path, follow=follow, own=own), "rb") as handle:
        return handle.read(limit)


def regular_file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why a path (links followed) is not a regular file to read, or ``None`` when it is one; never opens it.

    Examples:
        >>> import tempfile
        >>> regular_file_problem(tempfile.gettempdir())
        'not a regular file (a directory)'
        >>> regular_file_problem("/nonexistent/x")
        'No such file or directory'
    """
    try:
        info = os.stat(path)
    except OSError as error:
        return error.strerror or str(error)
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file ({_kind(info.st_mode)})"
    return None


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"
