"""A per-corpus cache of derived per-file facts, stored outside the corpus.

Reading a log is a pure function of its bytes, so the
``LogFacts`` of an unchanged file can be
reused. The cache keeps one Arrow IPC file per corpus root and encoding, in
the user's cache directory (``$SUBAGENT_CATALOG_CACHE``, else
``$XDG_CACHE_HOME/subagent_catalog``, else ``~/.cache/subagent_catalog``),
never under the corpus root. An entry is keyed by the file's path inside
the root and is used only while the file's size, ``mtime_ns`` and inode are
unchanged. Events are not cached (a read that wants them reads the files).

The cache is an optimisation and never an authority: a missing, corrupt,
foreign-version or foreign-owner cache file is ignored, entries are written
for the reader version that produced them (a fingerprint of the reading
modules' sources), and the file is replaced atomically (temp file + rename).
Entries are typed facts records (``store.codec``), checked when read; a
bad entry is a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import tempfile
from functools import lru_cache
from typing import Any

from subagent_catalog.read.discover import SessionFile
from subagent_catalog.read.logread import LogFacts
from subagent_catalog.read.paths import Compression
from subagent_catalog.store.codec import dump_facts, load_facts, reader_digest

CACHE_FORMAT = "2"
ENV_VAR = "SUBAGENT_CATALOG_CACHE"
_META_PREFIX = b"subagent_catalog."


def default_cache_dir() -> str:
    """Where caches live unless a directory is given.

    ``$SUBAGENT_CATALOG_CACHE``, else ``$XDG_CACHE_HOME/subagent_catalog``,
    else ``~/.cache/subagent_catalog``.

    Examples:
        >>> import os
        >>> from unittest import mock
        >>> with mock.patch.dict(os.environ, {"SUBAGENT_CATALOG_CACHE": "/tmp/sc-cache"}):
        ...     default_cache_dir()
        '/tmp/sc-cache'
    """
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "subagent_catalog")


@lru_cache(maxsize=1)
def reader_fingerprint() -> str:
    """The cache format, the Python version and the reader's code (``reader_digest``).

    Examples:
        >>> len(reader_fingerprint())
        32
    """
    import sys

    text = f"{CACHE_FORMAT}|{sys.version_info[:2]}|{reader_digest()}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cache_file(root: str | os.PathLike[str], compression: Compression, *, directory: str | None = None) -> str:
    """The cache file of a corpus root read in one encoding.

    Examples:
        >>> cache_file("/srv/corpus", "zstd", directory="/c").startswith("/c/facts-")
        True
        >>> cache_file("/srv/corpus", "zstd", directory="/c") != cache_file("/srv/corpus", "none", directory="/c")
        True
    """
    real = os.path.realpath(os.fspath(root))
    digest = hashlib.sha256(f"{real}\0{compression}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return os.path.join(directory or default_cache_dir(), f"facts-{digest}.arrow")


def _inside(path: str, root: str) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _loads(blob: bytes) -> LogFacts | None:
    try:
        return load_facts(blob)
    except Exception:  # a damaged or foreign entry is a miss
        return None


Entry = tuple[int, int, int, bytes]


class FactsCache:
    """The facts of one corpus root (one encoding), keyed by file identity.

    Attributes:
        root: the corpus root as given.
        compression: the encoding the facts were derived for.
        path: the cache file.
        status: how loading went (``new``, ``loaded``, or ``ignored: <why>``).
        writable: ``False`` when the cache file would land inside the corpus.
        hits: ``get`` calls answered from the cache.
        misses: ``get`` calls that were not.

    Examples:
        >>> import tempfile
        >>> cache = FactsCache.load(tempfile.mkdtemp(), "none", directory=tempfile.mkdtemp())
        >>> cache.status, len(cache)
        ('new', 0)
    """

    def __init__(
        self,
        root: str,
        compression: Compression,
        path: str,
        entries: dict[str, Entry],
        *,
        status: str,
        writable: bool,
    ) -> None:
        self.root = root
        self.compression: Compression = compression
        self.path = path
        self.status = status
        self.writable = writable
        self.hits = 0
        self.misses = 0
        self._entries = entries
        self._prefix = os.path.join(root, "")
        self._touched: set[str] = set()
        self._dirty = False

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"FactsCache({self.path!r}, {len(self)} entries, {self.status}, hits={self.hits}, misses={self.misses})"

    @classmethod
    def load(
        cls, root: str | os.PathLike[str], compression: Compression, *, directory: str | None = None
    ) -> FactsCache:
        """Open the cache of ``root`` (empty when there is none or it is unusable).

        Never raises on a bad cache file: it is ignored and replaced on ``save``.

        Examples:
            >>> import tempfile, os
            >>> d = tempfile.mkdtemp()
            >>> p = cache_file("/srv/x", "zstd", directory=d)
            >>> _ = open(p, "wb").write(b"not arrow")
            >>> FactsCache.load("/srv/x", "zstd", directory=d).status.startswith("ignored")
            True
        """
        root_path = os.fspath(root)
        path = cache_file(root_path, compression, directory=directory)
        writable = not _inside(os.path.dirname(path), root_path)
        if not writable:
            return cls(
                root_path, compression, path, {}, status="ignored: cache directory is inside the corpus", writable=False
            )
        entries, status = _read_cache_file(path, root_path, compression)
        return cls(root_path, compression, path, entries, status=status, writable=True)

    def _key(self, file: SessionFile) -> str:
        path = file.path
        if path.startswith(self._prefix):
            return path[len(self._prefix) :]
        return os.path.relpath(path, self.root)

    def get(self, file: SessionFile) -> LogFacts | None:
        """The cached facts of ``file``, or ``None`` when absent or stale.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.read.discover import SessionFile
            >>> cache = FactsCache.load(tempfile.mkdtemp(), "none", directory=tempfile.mkdtemp())
            >>> cache.get(SessionFile(cache.root + "/p/s/session.jsonl", "p", "s", True, 1, 1, 1, 1)) is None
            True
        """
        key = self._key(file)
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        if entry[:3] != (file.size, file.mtime_ns, file.inode):
            del self._entries[key]
            self._dirty = True
            self.misses += 1
            return None
        facts = _loads(entry[3])
        if facts is None:
            del self._entries[key]
            self._dirty = True
            self.misses += 1
            return None
        self._touched.add(key)
        self.hits += 1
        return facts

    def put(self, file: SessionFile, facts: LogFacts) -> None:
        """Remember the facts of ``file`` (without events).

        Facts of a file that changed while it was read (size differs from the
        listing) or that could not be read (``io-error``) are not kept.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.read.discover import SessionFile
            >>> cache = FactsCache.load(tempfile.mkdtemp(), "none", directory=tempfile.mkdtemp())
            >>> from subagent_catalog.read.logread import analyse_log
            >>> f = SessionFile(cache.root + "/p/s/session.jsonl", "p", "s", True, 5, 1, 1, 1)
            >>> cache.put(f, analyse_log(b"junk\\n", "none"))
            >>> cache.get(f).list_skip
            'first line is not JSON'
        """
        if facts.read_cause == "io-error" or facts.size != file.size:
            return
        blob = dump_facts(facts)
        if blob is None:
            return  # facts that are not storable (e.g. over the record size limit): read it again next time
        key = self._key(file)
        self._entries[key] = (file.size, file.mtime_ns, file.inode, blob)
        self._touched.add(key)
        self._dirty = True

    def save(self) -> str | None:
        """Write the cache file atomically; returns its path, or ``None`` when nothing was written.

        Only entries used since ``load`` (got or put) are kept, so files
        that left the corpus leave the cache. A cache that cannot be written
        (read-only directory, full disk) is skipped; ``status`` says why.

        Examples:
            >>> import tempfile
            >>> cache = FactsCache.load(tempfile.mkdtemp(), "none", directory=tempfile.mkdtemp())
            >>> cache.save() is None
            True
        """
        if not self.writable:
            return None
        keep = {key: entry for key, entry in self._entries.items() if key in self._touched}
        if not self._dirty and len(keep) == len(self._entries):
            return None
        try:
            _write_cache_file(self.path, keep, self.root, self.compression)
        except OSError as error:
            self.status = f"not saved: {error.strerror or error}"
            return None
        self._entries = keep
        self._dirty = False
        return self.path


def _metadata(root: str, compression: Compression) -> dict[bytes, bytes]:
    return {
        _META_PREFIX + b"format": CACHE_FORMAT.encode(),
        _META_PREFIX + b"fingerprint": reader_fingerprint().encode(),
        _META_PREFIX + b"root": os.path.realpath(root).encode("utf-8", "surrogateescape"),
        _META_PREFIX + b"compression": compression.encode(),
    }


def _read_cache_file(path: str, root: str, compression: Compression) -> tuple[dict[str, Entry], str]:
    pa: Any = importlib.import_module("pyarrow")
    ipc: Any = importlib.import_module("pyarrow.ipc")

    try:
        info = os.stat(path)
    except FileNotFoundError:
        return {}, "new"
    except OSError as error:
        return {}, f"ignored: {error.strerror}"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return {}, "ignored: the cache file belongs to another user"
    try:
        with pa.memory_map(path, "r") as source:
            table = ipc.open_file(source).read_all()
        metadata = table.schema.metadata or {}
        expected = _metadata(root, compression)
        for key, value in expected.items():
            if metadata.get(key) != value:
                return {}, f"ignored: {key.decode().removeprefix('subagent_catalog.')} differs"
        columns = table.to_pydict()
        entries = {
            os.fsdecode(key): (int(size), int(mtime), int(inode), bytes(blob))
            for key, size, mtime, inode, blob in zip(
                columns["path"], columns["size"], columns["mtime_ns"], columns["inode"], columns["facts"], strict=True
            )
        }
    except Exception as error:  # any unreadable cache file is ignored, never fatal
        return {}, f"ignored: unreadable cache file ({type(error).__name__})"
    return entries, "loaded"


def _write_cache_file(path: str, entries: dict[str, Entry], root: str, compression: Compression) -> None:
    pa: Any = importlib.import_module("pyarrow")
    ipc: Any = importlib.import_module("pyarrow.ipc")

    keys = sorted(entries)
    schema = pa.schema(
        [
            ("path", pa.binary()),
            ("size", pa.int64()),
            ("mtime_ns", pa.int64()),
            ("inode", pa.uint64()),
            ("facts", pa.large_binary()),
        ],
        metadata=_metadata(root, compression),
    )
    table = pa.table(
        {
            "path": pa.array([os.fsencode(k) for k in keys], pa.binary()),
            "size": pa.array([entries[k][0] for k in keys], pa.int64()),
            "mtime_ns": pa.array([entries[k][1] for k in keys], pa.int64()),
            "inode": pa.array([entries[k][2] for k in keys], pa.uint64()),
            "facts": pa.array([entries[k][3] for k in keys], pa.large_binary()),
        },
        schema=schema,
    )
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    descriptor, temp = tempfile.mkstemp(prefix=".facts-", suffix=".tmp", dir=directory)
    try:
        options = ipc.IpcWriteOptions(compression="zstd" if pa.Codec.is_available("zstd") else None)
        with os.fdopen(descriptor, "wb") as handle:
            with ipc.new_file(handle, schema, options=options) as writer:
                writer.write_table(table)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
