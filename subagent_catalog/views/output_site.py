"""A directory of output files that a command owns: it never replaces or removes a file it did not write.

``show --tree -o DIR`` writes one page per session into ``DIR``; the pages' names come from ids
that the logs choose, so a log could name a page like a file of the user's. ``claim_site`` guards
the directory as ``export`` guards an archive:

* ``DIR/manifest.json`` (``SITE_MANIFEST``) names every file the last run wrote with the SHA-256 of
  its bytes; a non-empty ``DIR`` without it is refused before anything is written (not even a
  lock file is created), and so is a manifest that is damaged, too large, a link, or not ours;
* before the first page is written, every name this run will write is checked: a name that
  exists must be a file the previous manifest names, still holding the bytes it recorded (a
  file named only as *pending* by an interrupted run must carry ``marker`` in its first bytes);
  anything else (a user's ``index.html``, a link, a FIFO, an edited page) is refused;
* the manifest is rewritten first with this run's names added as pending, then each file goes
  through ``outputs.write_output`` (an exclusive temporary file, an atomic replace, never inside
  a corpus, never through a link; a new name is put in place only while it is still free), then
  the manifest is committed, and only then are the files of the previous run that this one did
  not write again removed, each only while it still holds the bytes the manifest recorded;
* runs into one ``DIR`` take turns: each holds ``flock`` on the directory itself; a second is
  refused at once.

Failures are ``OutputError`` with one line and a hint.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from subagent_catalog.outputs import OutputError, inside, output_failure, write_output
from subagent_catalog.read.regular import NotRegularFileError, open_regular, read_regular

SITE_MANIFEST = "manifest.json"
"""The manifest's name in the directory (no page name ends in ``.json``)."""

SITE_FORMAT = "subagent-catalog output site"
"""The manifest's ``format``: a ``manifest.json`` without it is not ours."""

MAX_SITE_MANIFEST = 64 << 20
"""The largest manifest read (about 600,000 files)."""

_DIGEST = re.compile(r"[0-9a-f]{64}")


def _refused(directory: str, why: str, hint: str) -> OutputError:
    return OutputError(f"refusing to write into {directory!r}: {why}", hint=hint)


def _read_own(path: str, *, head: int | None = None) -> bytes | str | None:
    """A regular file's first ``head`` bytes, else its SHA-256; ``None`` unless a regular file with one link."""
    try:
        fd = open_regular(path, follow=False)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_nlink != 1:
            return None
        if head is not None:
            return handle.read(head)
        digest = hashlib.sha256()
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def read_site_manifest(directory: str, *, names: re.Pattern[str]) -> dict[str, str | None] | None:
    """The files a site's manifest names (a digest each, ``None`` for pending), or ``None`` without a manifest.

    Raises:
        OutputError: the manifest is a link, not a regular file, too large, not JSON, not ours, or
            names a file that ``names`` does not match (a path, a foreign name).

    Examples:
        >>> import tempfile
        >>> read_site_manifest(tempfile.mkdtemp(), names=re.compile(r"[a-z]+\\.html")) is None
        True
    """
    path = os.path.join(directory, SITE_MANIFEST)
    hint = f"remove {SITE_MANIFEST!r} only if nothing else in the directory is yours, or choose a new directory"
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise output_failure(path, error, action="read") from None
    if not stat.S_ISREG(info.st_mode):
        raise _refused(directory, f"{SITE_MANIFEST} is not a regular file", hint)
    try:
        data = read_regular(path, limit=MAX_SITE_MANIFEST + 1, follow=False)
    except NotRegularFileError:
        raise _refused(directory, f"{SITE_MANIFEST} is not a regular file", hint) from None
    except OSError as error:
        raise output_failure(path, error, action="read") from None
    if len(data) > MAX_SITE_MANIFEST:
        raise _refused(directory, f"{SITE_MANIFEST} is larger than {MAX_SITE_MANIFEST:,} bytes", hint)
    try:
        manifest = json.loads(data)
    except (ValueError, RecursionError):
        raise _refused(directory, f"{SITE_MANIFEST} is damaged (not JSON)", hint) from None
    if not isinstance(manifest, dict) or manifest.get("format") != SITE_FORMAT:
        raise _refused(directory, f"its {SITE_MANIFEST} was not written by subagent-catalog show --tree", hint)
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(name, str)
        and names.fullmatch(name)
        and (digest is None or (isinstance(digest, str) and _DIGEST.fullmatch(digest)))
        for name, digest in files.items()
    ):
        raise _refused(directory, f"{SITE_MANIFEST} is damaged (a file entry is not one of ours)", hint)
    return files


@dataclass
class Site:
    """A claimed output directory: what its previous run wrote, and what this run has written so far."""

    directory: str
    protected: list[str]
    names: re.Pattern[str]
    marker: bytes
    previous: dict[str, str | None]
    written: dict[str, str] = field(default_factory=dict)
    planned: set[str] = field(default_factory=set)

    def _ours(self, name: str) -> bool:
        """Whether ``DIR/name`` is a file the previous run wrote and nobody changed since."""
        if name not in self.previous:
            return False
        path = os.path.join(self.directory, name)
        recorded = self.previous[name]
        if recorded is None:  # pending: an interrupted run may have written it
            head = _read_own(path, head=4096)
            return isinstance(head, bytes) and self.marker in head
        return _read_own(path) == recorded

    def plan(self, names: Sequence[str]) -> None:
        """Check every name this run will write, then mark them pending in the manifest.

        Raises:
            OutputError: a name is not one of ours, or exists and is not a file the previous run
                wrote (unchanged).
        """
        for name in names:
            if not self.names.fullmatch(name):
                raise OutputError(f"refusing to write {name!r}: not a file name of this site", hint="report this")
            path = os.path.join(self.directory, name)
            if os.path.lexists(path) and not self._ours(name):
                raise OutputError(
                    f"refusing to replace {path!r}: this command did not write it (or it changed since)",
                    hint="move it away, or write into a new directory",
                )
        self.planned = set(names)
        self._write_manifest({**self.previous, **dict.fromkeys(self.planned)}, complete=False)

    def write(self, name: str, text: str) -> str:
        """Write one planned file (its old version only if ours); return its path."""
        if name not in self.planned:
            raise OutputError(f"refusing to write {name!r}: it was not planned", hint="report this")
        path = os.path.join(self.directory, name)
        data = text.encode("utf-8", "replace")
        replace = os.path.lexists(path)
        if replace and not self._ours(name):
            raise OutputError(
                f"refusing to replace {path!r}: it changed while this command ran",
                hint="another process writes into this directory: let it finish, or write elsewhere",
            )
        write_output(path, data, protected=self.protected, replace=replace)
        self.written[name] = hashlib.sha256(data).hexdigest()
        return path

    def commit(self) -> list[str]:
        """Record what this run wrote, then remove the previous run's files it did not write again.

        Returns:
            The names removed (a file that changed since its run wrote it is kept).
        """
        stale = {name: digest for name, digest in self.previous.items() if name not in self.written}
        self._write_manifest({**stale, **self.written}, complete=False)
        removed = []
        for name in stale:
            if os.path.lexists(os.path.join(self.directory, name)) and self._ours(name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.directory, name))
                removed.append(name)
        self._write_manifest(dict(self.written), complete=True)
        return removed

    def _write_manifest(self, files: dict[str, str | None], *, complete: bool) -> None:
        manifest = {"format": SITE_FORMAT, "version": 1, "complete": complete, "files": dict(sorted(files.items()))}
        text = json.dumps(manifest, indent=0, ensure_ascii=True) + "\n"
        write_output(os.path.join(self.directory, SITE_MANIFEST), text, protected=self.protected)


def check_site(directory: str | os.PathLike[str], *, protected: Sequence[str], names: re.Pattern[str]) -> None:
    """Refuse a directory a site cannot be written into, before any work (``claim_site`` checks again).

    Raises:
        OutputError: it lies inside a protected directory, is not a directory, or is non-empty
            without a manifest of ours (or with a damaged one).

    Examples:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> check_site(folder, protected=[], names=re.compile(r"[a-z]+\\.html"))
        >>> _ = open(os.path.join(folder, "index.html"), "w").write("mine")
        >>> check_site(folder, protected=[], names=re.compile(r"[a-z]+\\.html"))
        Traceback (most recent call last):
        ...
        subagent_catalog.outputs.OutputError: refusing to write into ...: it is a non-empty directory ...
    """
    _inspect(os.fspath(directory), list(protected), names)


def _inspect(target: str, protected: list[str], names: re.Pattern[str]) -> dict[str, str | None] | None:
    for root in protected:
        if inside(target, root):
            raise OutputError(
                f"refusing to write into {target!r}: it is inside the corpus {root!r}",
                hint="corpora are read-only: choose a directory outside the corpus root",
            )
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise output_failure(target, error, action="open") from None
    if not stat.S_ISDIR(info.st_mode):
        raise _refused(target, "it is not a directory", "pass a new or empty directory")
    manifest = read_site_manifest(target, names=names)
    if manifest is None:
        try:
            held = sorted(os.listdir(target))
        except OSError as error:
            raise output_failure(target, error, action="list") from None
        if held:
            raise _refused(
                target,
                f"it is a non-empty directory without the {SITE_MANIFEST} of an earlier run (it holds {held[0]!r})",
                "pass a new or empty directory, or one an earlier run of this command wrote",
            )
    return manifest


@contextlib.contextmanager
def claim_site(
    directory: str | os.PathLike[str], *, protected: Sequence[str], names: re.Pattern[str], marker: bytes
) -> Iterator[Site]:
    """Create (if new), check and lock an output directory for one run; yield its ``Site``.

    Args:
        directory: the output directory.
        protected: directories nothing may be written into (corpus roots).
        names: the names this site's files may have (the manifest accepts no other).
        marker: bytes every file of the site holds in its first 4 KiB (to recognise a file an
            interrupted run wrote).

    Raises:
        OutputError: see ``check_site``; or another run holds the directory; or it cannot be created.

    Examples:
        >>> import tempfile
        >>> folder = os.path.join(tempfile.mkdtemp(), "pages")
        >>> with claim_site(folder, protected=[], names=re.compile(r"[a-z]+\\.html"), marker=b"ours") as site:
        ...     site.plan(["a.html"])
        ...     _ = site.write("a.html", "ours")
        ...     site.commit()
        []
        >>> sorted(os.listdir(folder))
        ['a.html', 'manifest.json']
    """
    import fcntl

    target = os.fspath(directory)
    guarded = [os.fspath(root) for root in protected]
    _inspect(target, guarded, names)  # refused before anything (even the directory) is created
    try:
        os.makedirs(target, exist_ok=True)
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise output_failure(target, error, action="create") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputError(
                f"another run is writing into {target!r}",
                hint="wait for it to finish (runs into one directory take turns), or write elsewhere",
            ) from None
        except OSError as error:
            raise output_failure(target, error, action="lock") from None
        previous = _inspect(target, guarded, names)  # again, under the lock
        yield Site(target, guarded, names, marker, previous or {})
    finally:
        os.close(fd)
