"""Walk a session root the way upstream's ``list()`` does.

Upstream lists ``ROOT/<project>/<session>/session.jsonl[.zstd]``: project and
session directories are real directories (symlinks are not followed when
listing), names are visited in byte order, and a few layouts make the whole
listing fail (a flat ``*.jsonl`` file in a project directory, a log of the
other encoding anywhere). Every other entry is accounted for as ignored.

A folder with no log at that depth that is one or two levels inside a
corpus root (a project folder, a session folder) is not read as an empty
corpus: ``check_level`` raises ``CorpusLevelError`` naming the root that was
meant.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field

from subagent_catalog.errors import CorpusLevelError, CorpusRootError
from subagent_catalog.read.paths import NO_CWD_DIR, Compression, CompressionOption, log_name, other_compression

LOG_NAMES = ("session.jsonl", "session.jsonl.zstd")
"""A session log's names (plain, zstd)."""


@dataclass(slots=True)
class FoundEntry:
    """A filesystem entry under the root that is not a session log we read."""

    path: str
    kind: str
    message: str
    severity: str = "info"
    fails_listing: bool = False


class SessionFile:
    """A session log upstream's ``list()`` would open.

    Attributes:
        path: the log's path as the walk shows it (under the root as given).
        project_dir: its project directory's name.
        session_dir: its session directory's name.
        regular: whether it is a regular file.
        size: its size in bytes.
        mtime_ns: its modification time (ns).
        inode: its inode number.
        device: its device number.
        read_path: the path to open when it is not ``path`` (the in-root
            target of a symlinked log, or the real path under a root given
            through a symlink), else empty.
        ctime_ns: its status change time (ns).

    A walk holds one per log until the read ends, so a log found by the walk
    keeps its path as parts it shares with its siblings (its project's
    shown path and the log's name around its own ``session_dir``), not as a
    string of its own: given ``tail``, ``path`` is the part before
    ``session_dir`` and the log's path is ``path + session_dir + tail``.

    Examples:
        >>> file = SessionFile("/r/p/s/session.jsonl", "p", "s", True, 9, 0, 1, 1)
        >>> file.path, file.source
        ('/r/p/s/session.jsonl', '/r/p/s/session.jsonl')
        >>> SessionFile("/r/p/", "p", "s", True, 9, 0, 1, 1, tail="/session.jsonl") == file
        True
    """

    __slots__ = (
        "_head",
        "_tail",
        "ctime_ns",
        "device",
        "inode",
        "mtime_ns",
        "project_dir",
        "read_path",
        "regular",
        "session_dir",
        "size",
    )

    def __init__(
        self,
        path: str,
        project_dir: str,
        session_dir: str,
        regular: bool,
        size: int,
        mtime_ns: int,
        inode: int,
        device: int,
        read_path: str = "",
        ctime_ns: int = 0,
        *,
        tail: str | None = None,
    ) -> None:
        self._head = path  # with ``tail``: the part of the path before ``session_dir``
        self._tail = tail
        self.project_dir = project_dir
        self.session_dir = session_dir
        self.regular = regular
        self.size = size
        self.mtime_ns = mtime_ns
        self.inode = inode
        self.device = device
        self.read_path = read_path
        self.ctime_ns = ctime_ns

    @property
    def path(self) -> str:
        """The log's path as the walk shows it."""
        return self._head if self._tail is None else self._head + self.session_dir + self._tail

    @property
    def source(self) -> str:
        """The path to open: the log itself, or the in-root target of a symlinked log."""
        return self.read_path or self.path

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _SESSION_FILE_FIELDS)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionFile) and self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it replaces

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={v!r}" for n, v in zip(_SESSION_FILE_FIELDS, self._values(), strict=True))
        return f"SessionFile({shown})"


_SESSION_FILE_FIELDS = (
    "path",
    "project_dir",
    "session_dir",
    "regular",
    "size",
    "mtime_ns",
    "inode",
    "device",
    "read_path",
    "ctime_ns",
)
"""What a ``SessionFile`` is, in its constructor's order (compared and shown)."""


@dataclass
class Discovery:
    """The result of walking a root, in upstream's visiting order."""

    root: str
    compression: Compression
    files: list[SessionFile] = field(default_factory=list)
    entries: list[FoundEntry] = field(default_factory=list)
    project_names: dict[str, set[str]] = field(default_factory=dict)
    logs_seen: LogsSeen = field(default_factory=lambda: LogsSeen())


@dataclass(slots=True)
class LogsSeen:
    """Which log names the walk saw, for ``compression="auto"``.

    Session directories holding a ``session.jsonl``, holding a
    ``session.jsonl.zstd``, and whether some directory could not be listed.
    """

    plain: int = 0
    zstd: int = 0
    unlisted: bool = False

    def add(self, other: LogsSeen) -> None:
        """Count ``other``'s directories too."""
        self.plain += other.plain
        self.zstd += other.zstd
        self.unlisted = self.unlisted or other.unlisted

    def majority(self) -> Compression:
        """The encoding ``auto`` reads the root as (upstream's listing needs one).

        ``zstd`` when more session directories hold a zstd log than a plain
        one, else ``none`` if any holds a plain one; ``zstd`` with no logs at
        all or when some directory could not be listed.

        Examples:
            >>> LogsSeen(3, 1).majority(), LogsSeen(1, 1).majority(), LogsSeen(1, 2).majority()
            ('none', 'none', 'zstd')
            >>> LogsSeen(0, 0).majority(), LogsSeen(3, 1, True).majority()
            ('zstd', 'zstd')
        """
        if self.unlisted:
            return "zstd"
        return "zstd" if self.zstd > self.plain else "none" if self.plain else "zstd"


_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def _sorted_entries(path: str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as iterator:
        entries = list(iterator)
    if len(entries) > 1:
        entries.sort(key=lambda entry: entry.name.encode(_FS_ENCODING, _FS_ERRORS))  # os.fsencode, unchecked
    return entries


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    return entry.is_dir(follow_symlinks=False)


def _describe_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def _inside(root_real: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def discover(root: str | os.PathLike[str], compression: CompressionOption) -> Discovery:
    """Walk ``root`` and classify every entry.

    With ``auto``, the encoding is the one ``choose_compression`` picks; it is
    counted during the walk (as ``zstd``) and the root walked again only when
    it is to be read as plain text.

    Raises:
        CorpusRootError: the root is missing, not a directory or unreadable.

    Examples:
        >>> import tempfile
        >>> discover(tempfile.mkdtemp(), "none").files, discover(tempfile.mkdtemp(), "auto").compression
        ([], 'zstd')
    """
    if compression == "auto":
        found = _discover(root, "zstd")
        chosen = found.logs_seen.majority()
        found = found if chosen == "zstd" else _discover(root, chosen)
    else:
        found = _discover(root, compression)
    if not found.files and not (found.logs_seen.plain or found.logs_seen.zstd or found.logs_seen.unlisted):
        check_level(found.root, logs_below=False)  # the walk saw no log at <root>/<project>/<session>/
    return found


def check_level(root: str, top: list[os.DirEntry[str]] | None = None, *, logs_below: bool | None = None) -> None:
    """Refuse a project folder or a session folder given as the corpus root.

    A root holds ``<project>/<session>/session.jsonl[.zstd]``. When no log
    sits at that depth, a folder that holds a log itself is a session folder
    (the root is two levels up), and one whose directories hold logs, or
    whose name is a project directory's (an encoded cwd such as
    ``--home-dev-app--``, or ``_no-cwd``), is a project folder (the root is its
    parent). Anything else, an empty folder included, is a corpus root (maybe
    an empty one). A usual root costs a listing of its first project.

    Args:
        root: the folder, as given.
        top: its entries (``list_top``), when already listed.
        logs_below: whether a log sits at ``<root>/<project>/<session>/``, when a walk
            told already (``None``: look, until the first one).

    Raises:
        CorpusLevelError: the folder is a project or a session folder.
        CorpusRootError: the folder is missing, not a directory or unreadable.

    Examples:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(root, "p", "s"))
        >>> _ = open(os.path.join(root, "p", "s", "session.jsonl"), "w").close()
        >>> check_level(root), check_level(tempfile.mkdtemp())
        (None, None)
        >>> check_level(os.path.join(root, "p", "s"))
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.CorpusLevelError: '...' is a session folder (it holds session.jsonl), ...
        >>> try:
        ...     check_level(os.path.join(root, "p"))
        ... except CorpusLevelError as error:
        ...     error.level, error.corpus_root == root
        ('project', True)
    """
    entries = list_top(root) if top is None else top
    if logs_below or (logs_below is None and any(holds_logs(entry) for entry in entries if _is_real_dir(entry))):
        return  # a corpus root: a log sits at <root>/<project>/<session>/
    names = {entry.name for entry in entries}
    here = next((name for name in LOG_NAMES if name in names), None)
    if here is not None:
        meant = os.path.normpath(os.path.join(root, os.pardir, os.pardir))  # as the user wrote it
        raise CorpusLevelError(
            f"{root!r} is a session folder (it holds {here}), not a corpus root",
            level="session",
            corpus_root=meant,
            hint=f"the corpus root is two levels up: {meant!r}; a root holds <project>/<session>/{here}",
        )
    nested = next(
        (
            (entry.name, name)
            for entry in entries
            if _is_real_dir(entry)
            for name in LOG_NAMES
            if os.path.lexists(os.path.join(entry.path, name))
        ),
        None,
    )
    name = os.path.basename(os.path.normpath(root))
    if nested is None and not (name == NO_CWD_DIR or (len(name) > 4 and name.startswith("--") and name.endswith("--"))):
        return
    meant = os.path.normpath(os.path.join(root, os.pardir))
    why = f"its folder {nested[0]!r} holds {nested[1]}" if nested else "its name is an encoded cwd"
    raise CorpusLevelError(
        f"{root!r} looks like a project folder ({why}), not a corpus root",
        level="project",
        corpus_root=meant,
        hint=f"the corpus root is its parent: {meant!r}; a root holds <project>/<session>/session.jsonl[.zstd]",
    )


def holds_logs(project: os.DirEntry[str]) -> bool:
    """Whether some session directory of a project directory holds a log (of either encoding).

    Examples:
        >>> [holds_logs(entry) for entry in os.scandir("data") if entry.name == "sample"]
        [False]
    """
    try:
        sessions = os.scandir(project.path)
    except OSError:
        return False
    with sessions:
        return any(
            _is_real_dir(session) and any(os.path.lexists(os.path.join(session.path, n)) for n in LOG_NAMES)
            for session in sessions
        )


def _discover(root: str | os.PathLike[str], compression: Compression) -> Discovery:
    root_path = os.fspath(root)
    top = list_top(root_path)
    result = Discovery(root=root_path, compression=compression)
    root_real = os.path.realpath(root_path)
    for project in top:
        if not _is_real_dir(project):
            result.entries.append(top_entry(project))
            continue
        walk = walk_project(root_path, project.name, compression, root_real)
        result.files.extend(walk.files)
        result.entries.extend(walk.entries)
        result.logs_seen.add(walk.logs_seen)
        if walk.names is not None:
            result.project_names[project.name] = walk.names
    return result


def top_entry(entry: os.DirEntry[str]) -> FoundEntry:
    """The entry of a root-level name that is not a real directory (upstream ignores it).

    Examples:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> _ = open(os.path.join(root, "notes.txt"), "w").close()
        >>> top_entry(next(os.scandir(root))).kind
        'ignored-root-file'
    """
    kind = "symlink" if entry.is_symlink() else "file"
    return FoundEntry(
        entry.path, f"ignored-root-{kind}", f"root-level {kind} is not a project directory; upstream ignores it"
    )


def list_top(root: str) -> list[os.DirEntry[str]]:
    """The root's entries in upstream's visiting order (byte order of the names).

    Raises:
        CorpusLevelError: the root is a session log (``session.jsonl[.zstd]``): the hint names its corpus root.
        CorpusRootError: the root is missing, not a directory or unreadable.

    Examples:
        >>> import tempfile
        >>> list_top(tempfile.mkdtemp())
        []
    """
    if not os.path.exists(root):
        raise CorpusRootError(
            f"corpus root {root!r} does not exist",
            hint="check the path; a root holds <project>/<session>/session.jsonl[.zstd]",
        )
    if os.path.basename(root) in LOG_NAMES and os.path.isfile(root):
        meant = os.path.normpath(os.path.join(root, os.pardir, os.pardir, os.pardir))
        raise CorpusLevelError(
            f"{root!r} is a session log, not a corpus root",
            level="log",
            corpus_root=meant,
            hint=f"pass its corpus root, three levels up: {meant!r}; a root holds <project>/<session>/session.jsonl",
        )
    if not os.path.isdir(root):
        raise CorpusRootError(
            f"corpus root {root!r} is not a directory",
            hint="pass the directory that holds the project directories",
        )
    try:
        return _sorted_entries(root)
    except OSError as error:
        raise CorpusRootError(
            f"corpus root {root!r} cannot be read: {error.strerror}", hint="check its permissions"
        ) from error


@dataclass
class ProjectWalk:
    """One project directory's part of a walk: its logs, other entries and names (``None``: unreadable)."""

    files: list[SessionFile] = field(default_factory=list)
    entries: list[FoundEntry] = field(default_factory=list)
    names: set[str] | None = None
    logs_seen: LogsSeen = field(default_factory=LogsSeen)


def walk_project(
    root: str, name: str, compression: Compression, root_real: str, *, fs_root: str | None = None
) -> ProjectWalk:
    """Walk one project directory of ``root`` (a real directory named ``name``) as upstream's ``list()`` does.

    Paths in the result (and in messages) start with ``root`` as given; the
    filesystem is asked through ``fs_root`` when given (the same directory,
    named so that it resolves here: a worker whose working directory is not
    the caller's gets the absolute root).

    Examples:
        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> os.mkdir(os.path.join(root, "p"))
        >>> walk = walk_project(root, "p", "none", os.path.realpath(root))
        >>> walk.files, [e.kind for e in walk.entries], walk.names
        ([], ['empty-project-dir'], set())
    """
    result = Discovery(root=root, compression=compression)
    own, other = log_name(compression), log_name(other_compression(compression))
    shown = os.path.join(root, name)
    try:
        inner = _sorted_entries(os.path.join(fs_root if fs_root is not None else root, name))
    except OSError as error:
        unreadable = FoundEntry(
            shown, "unreadable-directory", f"cannot list project directory: {error.strerror}", "error", True
        )
        return ProjectWalk(entries=[unreadable], logs_seen=LogsSeen(unlisted=True))
    if not inner:
        result.entries.append(FoundEntry(shown, "empty-project-dir", "project directory holds no sessions"))
    # Names from a directory listing are never empty and hold no separator: joined by concatenation.
    prefix, real_project = shown + os.sep, os.path.join(root_real, name)
    parts = (prefix, os.sep + own)  # a log's shown path is prefix + its session directory + this tail
    for entry in inner:
        path = prefix + entry.name
        if entry.name.endswith((".jsonl", ".jsonl.zstd")) and entry.is_file(follow_symlinks=False):
            result.entries.append(
                FoundEntry(
                    path,
                    "legacy-flat-file",
                    f"session artifact {path!r} uses the unsupported flat-file layout "
                    "(upstream refuses the whole root)",
                    "error",
                    True,
                )
            )
            continue
        if not _is_real_dir(entry):
            kind = "symlink" if entry.is_symlink() else "file"
            result.entries.append(
                FoundEntry(
                    path,
                    f"ignored-project-{kind}",
                    f"{kind} in a project directory is not a session directory; upstream ignores it",
                )
            )
            continue
        _session_dir(result, name, entry, path, own, other, root_real, real_project, parts)
    return ProjectWalk(result.files, result.entries, {entry.name for entry in inner}, result.logs_seen)


def _session_dir(
    result: Discovery,
    project: str,
    entry: os.DirEntry[str],
    shown: str,
    own: str,
    other: str,
    root_real: str,
    real_project: str,
    parts: tuple[str, str],
) -> None:
    """One session directory (``entry``, shown as ``shown``; its project's real path ``real_project``).

    ``parts``: what comes before and after the session directory's name in its log's shown path.
    """
    try:
        inner = _sorted_entries(entry.path)
    except OSError as error:
        result.logs_seen.unlisted = True
        result.entries.append(
            FoundEntry(shown, "unreadable-directory", f"cannot list session directory: {error.strerror}", "error", True)
        )
        return
    if len(inner) == 1 and inner[0].name == own:  # the usual directory: its log and nothing else
        log = inner[0]
        if own == "session.jsonl":
            result.logs_seen.plain += 1
        else:
            result.logs_seen.zstd += 1
    else:
        names = {item.name: item for item in inner}
        result.logs_seen.plain += "session.jsonl" in names
        result.logs_seen.zstd += "session.jsonl.zstd" in names
        if other in names and not os.path.exists(names[other].path):
            result.entries.append(
                FoundEntry(
                    os.path.join(shown, other),
                    "dangling-symlink",
                    f"{other} is a symlink to nothing (or a loop); upstream treats it as absent",
                )
            )
        elif other in names:
            result.entries.append(
                FoundEntry(
                    os.path.join(shown, other),
                    "encoding-mismatch",
                    f"session artifact uses {other.removeprefix('session')}, but the root is read as "
                    f"{own.removeprefix('session')} (upstream refuses the whole root)",
                    "error",
                    True,
                )
            )
        for item in inner:
            if item.name not in (own, other):
                result.entries.append(
                    FoundEntry(
                        os.path.join(shown, item.name),
                        "ignored-session-entry",
                        "extra entry in a session directory; upstream ignores it",
                    )
                )
        if own not in names:
            if not inner:
                result.entries.append(
                    FoundEntry(shown, "empty-session-dir", "session directory without a log; upstream ignores it")
                )
            elif other not in names:
                result.entries.append(
                    FoundEntry(shown, "session-dir-without-log", "session directory without a log; upstream ignores it")
                )
            return
        log = names[own]
    log_shown = shown + os.sep + own
    if log.is_symlink():
        if not os.path.exists(log.path):
            result.entries.append(
                FoundEntry(log_shown, "dangling-symlink", "log is a symlink to nothing; upstream treats it as absent")
            )
            return
        if not _inside(root_real, log.path):
            result.entries.append(
                FoundEntry(
                    log_shown,
                    "symlink-outside-root",
                    "log is a symlink leading outside the root; not followed (upstream would read it)",
                    "error",
                    True,
                )
            )
            return
    try:
        info = os.stat(log.path)
    except OSError as error:
        result.entries.append(
            FoundEntry(log_shown, "unreadable-file", f"cannot stat log: {error.strerror}", "error", True)
        )
        return
    # Project and session directories are real directories (not symlinks), so an ordinary log's real
    # path is the root's real path joined with its names: no realpath() (an lstat per path component).
    real = os.path.realpath(log.path) if log.is_symlink() else real_project + os.sep + entry.name + os.sep + own
    regular = stat.S_ISREG(info.st_mode)
    if not regular:
        kind = _describe_kind(info.st_mode)
        result.entries.append(
            FoundEntry(
                log_shown,
                "not-a-regular-file",
                f"log is a {kind}, not a file (upstream's listing fails or blocks on it)",
                "error",
                True,
            )
        )
        return
    # A walk holds a SessionFile per log until the read ends: its path is kept as parts shared with
    # its siblings, and equal values share one object (the device, a ctime equal to the mtime).
    mtime, ctime = info.st_mtime_ns, info.st_ctime_ns
    result.files.append(
        SessionFile(
            parts[0],
            project,
            entry.name,
            regular,
            info.st_size,
            mtime,
            info.st_ino,
            _DEVICES.setdefault(info.st_dev, info.st_dev),
            "" if real == log_shown else real,
            mtime if ctime == mtime else ctime,
            tail=parts[1],
        )
    )


_DEVICES: dict[int, int] = {}
"""One int object per device number seen (every log of a root shares it)."""


def choose_compression(root: str, option: CompressionOption) -> Compression:
    """The encoding to read a root as: the option, or for ``auto`` the one most of its logs use.

    Examples:
        >>> import tempfile
        >>> choose_compression(tempfile.mkdtemp(), "none"), choose_compression(tempfile.mkdtemp(), "auto")
        ('none', 'zstd')
    """
    if option != "auto":
        return option
    seen = LogsSeen()
    try:
        for project in os.scandir(root):
            if not project.is_dir(follow_symlinks=False):
                continue
            for session in os.scandir(project.path):
                if session.is_dir(follow_symlinks=False):
                    names = set(os.listdir(session.path))
                    seen.plain += "session.jsonl" in names
                    seen.zstd += "session.jsonl.zstd" in names
    except OSError:
        seen.unlisted = True
    return seen.majority()
