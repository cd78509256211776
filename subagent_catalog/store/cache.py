"""A per-corpus cache of derived per-file facts, stored outside the corpus.

Reading a log is a pure function of its bytes, so the
``LogFacts`` of an unchanged file can be
reused. The cache keeps one file per corpus root and encoding, in the
user's cache directory (``$SUBAGENT_CATALOG_CACHE``, else
``$XDG_CACHE_HOME/subagent_catalog``, else ``~/.cache/subagent_catalog``),
never under the corpus root. An entry is keyed by the file's path inside
the root and is used only while the file's size, ``mtime_ns``, ``ctime_ns``,
inode and device are all unchanged: an edit that keeps the size and puts the
mtime back (``touch -r``, ``cp -p`` over the log) still changes the ctime,
which no unprivileged user can set back. Events are not cached (a read that wants
them reads the files).

The cache is an optimisation and never an authority. A cache file is a
magic line, an HMAC-SHA256 of the rest, and an Arrow IPC table; the MAC key
is ``facts.key`` in the cache directory (32 random bytes, created ``0600``,
used only while it is a regular file owned by the user and private to
them). The MAC is checked before the table is parsed, so a cache file copied
from another account or machine, edited or planted without the key, or
truncated, is ignored as a whole, as are a foreign-owner, over-large
(``MAX_CACHE_FILE_BYTES``, ``MAX_CACHE_ENTRIES``) or foreign-version file.
Each entry is a typed facts record (``store.codec``), checked again when it
is used; a bad entry is a miss, never an exception. Writes are atomic (temp
file + rename).

Threat model: this guards against cache files the user did not write
(shared or restored cache directories, tampering by anyone who cannot read
the key) and against damage; it does not guard against code running as the
user, which can read the key (or change this package). A same-size edit
after the facts were read, with the mtime put back, that lands within one
filesystem timestamp tick (a few ms) of the file's previous change keeps
every key field and is not seen.
"""

from __future__ import annotations

import array
import contextlib
import errno
import hashlib
import hmac
import importlib
import itertools
import os
import stat
import tempfile
from collections.abc import Callable
from functools import lru_cache
from typing import IO, Any

from subagent_catalog.outputs import inside
from subagent_catalog.read.discover import SessionFile
from subagent_catalog.read.logread import LogFacts
from subagent_catalog.read.paths import Compression
from subagent_catalog.store.codec import FactsRecordError, dump_facts, load_facts, reader_digest

CACHE_FORMAT = "4"
ENV_VAR = "SUBAGENT_CATALOG_CACHE"
KEY_NAME = "facts.key"
MAX_CACHE_FILE_BYTES = 2 << 30
MAX_CACHE_ENTRIES = 2_000_000
WRITE_BATCH = 4096
"""Records per record batch of the file (each batch is built and compressed alone)."""
_MAGIC = b"subagent_catalog facts cache 2\n"
_KEY_BYTES = 32
_MAC_BYTES = hashlib.sha256().digest_size
_META_PREFIX = b"subagent_catalog."
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
"""Flags of every read: no link followed, and no wait on a FIFO planted under a cache file's name (the type and
owner are checked on the descriptor before anything is read)."""


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
    return os.path.join(directory or default_cache_dir(), f"facts-{root_digest(root, compression)}.arrow")


def root_digest(root: str | os.PathLike[str], compression: str) -> str:
    """What names a corpus root's cache files (facts, frames, findings): its real path and encoding, hashed.

    Examples:
        >>> digest = root_digest("/srv/corpus", "zstd")
        >>> len(digest), digest == root_digest("/srv/corpus", "none")
        (32, False)
    """
    real = os.path.realpath(os.fspath(root))
    return hashlib.sha256(f"{real}\0{compression}".encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _inside(path: str, root: str) -> bool:
    """Whether a cache directory lies in the corpus: by real path, and as outputs are checked.

    ``outputs.inside`` compares devices and inodes, and places inside file
    systems: bind mounts of the corpus, or of a folder inside it, are seen
    through.
    """
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep) or inside(path, root)


class CacheKeyError(OSError):
    """The cache directory's key file exists but cannot be trusted (or cannot be made)."""


def read_key(directory: str) -> bytes | None:
    """The MAC key of a cache directory, or ``None`` when it has none yet.

    Raises:
        CacheKeyError: the key file is not a private regular file of the
            user's holding exactly one key.

    Examples:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> read_key(d) is None, len(make_key(d)), read_key(d) == make_key(d)
        (True, 32, True)
    """
    try:
        fd = os.open(os.path.join(directory, KEY_NAME), os.O_RDONLY | _NOFOLLOW)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR):  # no key yet, or no directory (saving will say why)
            return None
        raise CacheKeyError(error.errno, f"the cache key cannot be opened ({error.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CacheKeyError(errno.EINVAL, "the cache key is not a regular file")
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise CacheKeyError(errno.EPERM, "the cache key belongs to another user")
        if info.st_mode & 0o077:
            raise CacheKeyError(errno.EPERM, "the cache key is readable or writable by others")
        key = handle.read(_KEY_BYTES + 1)
    if info.st_size != _KEY_BYTES or len(key) != _KEY_BYTES:
        raise CacheKeyError(errno.EINVAL, "the cache key file does not hold one key")
    return key


def make_key(directory: str) -> bytes:
    """The MAC key of a cache directory, created (``0600``, atomically) when it has none.

    Raises:
        CacheKeyError: the key file cannot be trusted.
        OSError: the directory cannot be made or written.

    Examples:
        >>> import os, stat, tempfile
        >>> d = tempfile.mkdtemp()
        >>> key = make_key(d)
        >>> stat.S_IMODE(os.stat(os.path.join(d, KEY_NAME)).st_mode) == 0o600
        True
    """
    key = read_key(directory)
    if key is not None:
        return key
    os.makedirs(directory, mode=0o700, exist_ok=True)
    descriptor, temp = tempfile.mkstemp(prefix=".facts-key-", dir=directory)  # mkstemp makes it 0600
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(os.urandom(_KEY_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process made one first: use it
            os.link(temp, os.path.join(directory, KEY_NAME))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    key = read_key(directory)
    if key is None:
        raise CacheKeyError(errno.ENOENT, "the cache key vanished while it was made")
    return key


def _mac(key: bytes, body: bytes | memoryview) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()


Entry = tuple[int, int, int, int, int, bytes]
"""``(size, mtime_ns, ctime_ns, inode, device, facts record)``."""


def _identity(file: SessionFile) -> tuple[int, int, int, int, int]:
    return (file.size, file.mtime_ns, file.ctime_ns, file.inode, file.device)


class FactsCache:
    """The facts of one corpus root (one encoding), keyed by file identity.

    Attributes:
        root: the corpus root as given.
        compression: the encoding the facts were derived for.
        path: the cache file.
        status: how loading went (``new``, ``loaded``, or ``ignored: <why>``).
        writable: ``False`` when the cache file would land inside the corpus,
            or the directory's key cannot be trusted.
        hits: ``get`` calls answered from the cache.
        misses: ``get`` calls that were not.
        rejected: entries whose record failed its checks (each also a miss).

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
        self.rejected = 0
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
            >>> _ = open(p, "wb").write(b"not a cache")
            >>> FactsCache.load("/srv/x", "zstd", directory=d).status
            'ignored: no cache key in this directory'
        """
        root_path = os.fspath(root)
        path = cache_file(root_path, compression, directory=directory)
        if _inside(os.path.dirname(path), root_path):
            return cls(
                root_path, compression, path, {}, status="ignored: cache directory is inside the corpus", writable=False
            )
        try:
            key = read_key(os.path.dirname(path))
        except CacheKeyError as error:
            return cls(root_path, compression, path, {}, status=f"ignored: {error.strerror}", writable=False)
        entries, status = _read_cache_file(path, root_path, compression, key)
        return cls(root_path, compression, path, entries, status=status, writable=True)

    def _key(self, file: SessionFile) -> str:
        path = file.path
        if path.startswith(self._prefix):
            return path[len(self._prefix) :]
        return os.path.relpath(path, self.root)

    def _drop(self, key: str) -> None:
        del self._entries[key]
        self._dirty = True
        self.misses += 1

    def get(self, file: SessionFile) -> LogFacts | None:
        """The cached facts of ``file``, or ``None`` when absent, stale or not a sound record.

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
        if entry[:5] != _identity(file):
            self._drop(key)
            return None
        try:
            facts = load_facts(entry[5], size=file.size)
        except FactsRecordError:
            self.rejected += 1
            self._drop(key)
            return None
        self._touched.add(key)
        self.hits += 1
        return facts

    def put(self, file: SessionFile, facts: LogFacts) -> None:
        """Remember the facts of ``file`` (without events).

        Facts of a file that changed while it was read (size differs from the
        listing), that could not be read (``io-error``) or that are not
        storable (``dump_facts`` gives ``None``) are not kept.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.read.discover import SessionFile
            >>> from subagent_catalog.read.logread import analyse_log
            >>> cache = FactsCache.load(tempfile.mkdtemp(), "none", directory=tempfile.mkdtemp())
            >>> f = SessionFile(cache.root + "/p/s/session.jsonl", "p", "s", True, 5, 1, 1, 1)
            >>> cache.put(f, analyse_log(b"junk\\n", "none"))
            >>> cache.get(f).list_skip
            'first line is not JSON'
        """
        if facts.read_cause == "io-error" or facts.size != file.size:
            return
        blob = dump_facts(facts)
        if blob is None:
            return  # e.g. facts over the record size limit: read the file again next time
        key = self._key(file)
        self._entries[key] = (*_identity(file), blob)
        self._touched.add(key)
        self._dirty = True

    def save(self) -> str | None:
        """Write the cache file atomically; returns its path, or ``None`` when nothing was written.

        Only entries used since ``load`` (got or put) are kept, so files
        that left the corpus leave the cache; past ``MAX_CACHE_ENTRIES`` or
        ``MAX_CACHE_FILE_BYTES`` of records the rest are left out. A cache
        that cannot be written (read-only directory, full disk) is skipped;
        ``status`` says why.

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
            key = make_key(os.path.dirname(self.path))
            _write_cache_file(self.path, keep, self.root, self.compression, key)
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


_COLUMNS = ("path", "size", "mtime_ns", "ctime_ns", "inode", "device", "facts")


def read_sealed(
    path: str,
    key: Callable[[], bytes | None],
    *,
    what: str,
    magic: bytes,
    limit: int,
    mac: Callable[[bytes, memoryview], bytes],
    least: int = 0,
    apart: bool = False,
) -> tuple[memoryview | None, str]:
    """The MAC-checked body of a cache file (after ``magic`` and its MAC), or ``None`` and why not (``"new"``: none).

    The file is opened without following a link or waiting on a FIFO; one that is not a regular file of this user's
    (``apart``: each said alone), larger than ``limit`` bytes, without a ``key`` (read once the file is open), under
    ``least`` bytes of body or whose MAC (``mac(key, body)``) differs is ignored, ``what`` naming it.

    Examples:
        >>> read_sealed("/nowhere", lambda: None, what="cache file", magic=_MAGIC, limit=1, mac=_mac)
        (None, 'new')
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return None, "new"
    except OSError as error:
        return None, f"ignored: {error.strerror}"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        regular = stat.S_ISREG(info.st_mode)
        if not regular or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
            if not apart:
                return None, f"ignored: the {what} is not a regular file of this user's"
            return None, f"ignored: the {what} " + ("belongs to another user" if regular else "is not a regular file")
        if info.st_size > limit:
            return None, f"ignored: the {what} is larger than {limit} bytes"
        known = key()
        if known is None:
            return None, "ignored: no cache key in this directory"
        data = handle.read(limit + 1)
    head = len(magic) + _MAC_BYTES
    if len(data) > limit or len(data) < head + least or not data.startswith(magic):
        return None, f"ignored: not a {what} of this format"
    body = memoryview(data)[head:]
    if not hmac.compare_digest(data[len(magic) : head], mac(known, body)):
        return None, f"ignored: the {what}'s MAC does not match this directory's key"
    return body, "loaded"


def _read_cache_file(path: str, root: str, compression: Compression, key: bytes | None) -> tuple[dict[str, Entry], str]:
    pa: Any = importlib.import_module("pyarrow")
    ipc: Any = importlib.import_module("pyarrow.ipc")

    body, status = read_sealed(
        path, lambda: key, what="cache file", magic=_MAGIC, limit=MAX_CACHE_FILE_BYTES, mac=_mac, apart=True
    )
    if body is None:
        return {}, status
    try:
        reader = ipc.open_file(pa.BufferReader(pa.py_buffer(body)))
        metadata = reader.schema.metadata or {}
        for name, value in _metadata(root, compression).items():
            if metadata.get(name) != value:
                return {}, f"ignored: {name.decode().removeprefix('subagent_catalog.')} differs"
        if reader.schema.names != list(_COLUMNS):
            return {}, "ignored: unexpected cache columns"
        table = reader.read_all()
        if table.num_rows > MAX_CACHE_ENTRIES:
            return {}, f"ignored: more than {MAX_CACHE_ENTRIES} entries"
        columns = [table.column(name).to_pylist() for name in _COLUMNS]
        entries = {
            os.fsdecode(name): (int(size), int(mtime), int(ctime), int(inode), int(device), bytes(blob))
            for name, size, mtime, ctime, inode, device, blob in zip(*columns, strict=True)
        }
    except Exception as error:  # any unreadable cache file is ignored, never fatal
        return {}, f"ignored: unreadable cache file ({type(error).__name__})"
    return entries, "loaded"


def _array(pa: Any, kind: Any, values: list[Any]) -> Any:
    """A column of the file (no nulls) made from its buffers.

    pyarrow's conversion of Python values imports pandas (about 40 MB)
    whenever pandas is installed; the bytes written are the same.

    Examples:
        >>> import pyarrow as pa
        >>> _array(pa, pa.binary(), [b"a", b"", b"bc"]).to_pylist(), _array(pa, pa.uint64(), [2**64 - 1]).to_pylist()
        ([b'a', b'', b'bc'], [18446744073709551615])
    """
    if kind == pa.binary() or kind == pa.large_binary():
        offsets = array.array("i" if kind == pa.binary() else "q", itertools.accumulate(map(len, values), initial=0))
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(values))]
    else:
        buffers = [None, pa.py_buffer(array.array("q" if kind == pa.int64() else "Q", values))]
    return pa.Array.from_buffers(kind, len(values), buffers)


def replace_file(path: str, prefix: str, write: Callable[[IO[bytes]], object]) -> None:
    """Write ``path`` anew: ``write`` fills a private temporary file beside it, synced, then renamed over it.

    On any failure the temporary file is removed and ``path`` is left as it was.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "file")
        >>> replace_file(path, ".file-", lambda handle: handle.write(b"new"))
        >>> open(path, "rb").read(), len(os.listdir(os.path.dirname(path)))
        (b'new', 1)
    """
    descriptor, temp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _write_cache_file(path: str, entries: dict[str, Entry], root: str, compression: Compression, key: bytes) -> None:
    pa: Any = importlib.import_module("pyarrow")
    ipc: Any = importlib.import_module("pyarrow.ipc")

    keys: list[str] = []  # sorted, within MAX_CACHE_ENTRIES and MAX_CACHE_FILE_BYTES of records
    total, budget = 0, MAX_CACHE_FILE_BYTES // 2  # room for the paths, the other columns and the Arrow framing
    for name in sorted(entries)[:MAX_CACHE_ENTRIES]:
        total += len(entries[name][5]) + len(name) + 64
        if total > budget:
            break
        keys.append(name)
    types = [pa.binary(), pa.int64(), pa.int64(), pa.int64(), pa.uint64(), pa.uint64(), pa.large_binary()]
    schema = pa.schema(list(zip(_COLUMNS, types, strict=True)), metadata=_metadata(root, compression))
    sink = pa.BufferOutputStream()
    options = ipc.IpcWriteOptions(compression="zstd" if pa.Codec.is_available("zstd") else None)
    with ipc.new_file(sink, schema, options=options) as writer:
        for start in range(0, len(keys), WRITE_BATCH):  # a batch of records at a time, never a copy of them all
            batch = keys[start : start + WRITE_BATCH]
            columns: list[list[Any]] = [[os.fsencode(k) for k in batch]]
            columns += [[entries[k][i] for k in batch] for i in range(len(types) - 1)]
            arrays = [_array(pa, kind, values) for kind, values in zip(types, columns, strict=True)]
            writer.write_batch(pa.record_batch(arrays, schema=schema))
    body = memoryview(sink.getvalue())
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)

    def write(handle: IO[bytes]) -> None:
        handle.write(_MAGIC + _mac(key, body))
        handle.write(body)

    replace_file(path, ".facts-", write)
