"""A cache of the assembled corpus frames, keyed by the fingerprint of the whole walk.

A warm read over an unchanged corpus would otherwise decode every cached
facts record and assemble the frames again. This cache keeps the
``sessions``, ``descriptors`` and ``problems`` frames of the last read of a
root (one encoding), and frames derived from them later (the catalog), in
one file beside the facts cache (``frames-<digest>.arrow``). It is used
only when the **corpus fingerprint** is unchanged: a digest of

- the code: the facts cache's ``reader_fingerprint``, every source file of
  this package, the Python version and the versions of the libraries the
  frames go through (Polars, pyarrow, pyuca, msgspec, orjson, zstandard);
- the root as given and its real path, and the encoding;
- the whole walk: for every log its path, names, and the facts cache's
  identity fields (size, ``mtime_ns``, ``ctime_ns``, inode, device) and real
  path; every other entry with its kind and message; the names in every
  project directory;
- the filesystem questions assembly asked beyond the walk (``FsProbes``),
  which are asked again and must get the same answers.

Any change to a log (touched, edited, added, removed, renamed) or to the
code changes the fingerprint, and the frames are assembled from the facts
again. The file has the facts cache's safeguards: never inside the corpus,
MAC'd with the cache directory's key (``store.cache.make_key``) over a magic
of its own, owner and size checked before it is read (``MAX_FRAMES_FILE_BYTES``),
each frame's schema checked when it is loaded, written atomically; any
doubt is a miss, never an exception. Cached state is untrusted
(``docs/reliability.md``): the MAC keeps out files the user did not write;
the schemas keep a damaged one from reaching the catalog. The file is written
a frame at a time, each an Arrow IPC file of ``SLICE_ROWS``-row batches
(pyarrow's writer over Polars' buffers), through the MAC: it is never held
whole.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import struct
import sys
from collections.abc import Mapping
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import IO, Any

import polars as pl

from subagent_catalog.frames.assemble import FsProbes
from subagent_catalog.frames.corpus import Corpus, source_column
from subagent_catalog.frames.schemas import CORPUS_SESSION_SCHEMA, DESCRIPTOR_SCHEMA, PROBLEM_SCHEMA
from subagent_catalog.read.discover import Discovery
from subagent_catalog.read.paths import Compression
from subagent_catalog.store.cache import (
    CacheKeyError,
    _inside,
    default_cache_dir,
    make_key,
    read_key,
    read_sealed,
    reader_fingerprint,
    replace_file,
    root_digest,
)

FRAMES_FORMAT = "2"
MAX_FRAMES_FILE_BYTES = 1 << 30
SLICE_ROWS = 1024
"""Rows per record batch of a frame in the file (written a batch at a time)."""
_MAGIC = b"subagent_catalog frames cache 1\n"
_MAC_BYTES = hashlib.sha256().digest_size
_LIBRARIES = ("polars", "pyarrow", "pyuca", "msgspec", "orjson", "zstandard", "genai-prices")
CORPUS_FRAMES: dict[str, Mapping[str, Any]] = {
    "sessions": CORPUS_SESSION_SCHEMA,
    "descriptors": DESCRIPTOR_SCHEMA,
    "problems": PROBLEM_SCHEMA,
}


def frames_file(root: str | os.PathLike[str], compression: Compression, *, directory: str | None = None) -> str:
    """The frames cache file of a corpus root read in one encoding.

    Examples:
        >>> frames_file("/srv/corpus", "zstd", directory="/c").startswith("/c/frames-")
        True
    """
    return os.path.join(directory or default_cache_dir(), f"frames-{root_digest(root, compression)}.arrow")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A digest of everything besides the corpus that the cached frames depend on.

    Examples:
        >>> len(code_digest())
        64
    """
    digest = hashlib.sha256(f"{FRAMES_FORMAT}|{sys.version_info[:3]}|{reader_fingerprint()}".encode())
    for name in _LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "-"
        digest.update(f"|{name}={version}".encode())
    package = Path(__file__).resolve().parent.parent
    for path in sorted(package.rglob("*.py")):
        digest.update(b"\0" + str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _text(value: str) -> str:
    return os.fsencode(value).hex() if not value.isascii() or "\0" in value or "\n" in value else value


def corpus_fingerprint(found: Discovery) -> str:
    """The digest of the code, the root, the encoding and the whole walk (see the module docstring).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.read.discover import discover
        >>> root = tempfile.mkdtemp()
        >>> corpus_fingerprint(discover(root, "none")) == corpus_fingerprint(discover(root, "none"))
        True
        >>> corpus_fingerprint(discover(root, "none")) == corpus_fingerprint(discover(root, "zstd"))
        False
    """
    lines = [code_digest(), _text(found.root), _text(os.path.realpath(found.root)), found.compression]
    for f in found.files:
        lines.append(
            f"F\0{_text(f.path)}\0{_text(f.project_dir)}\0{_text(f.session_dir)}\0{f.regular}\0{f.size}\0"
            f"{f.mtime_ns}\0{f.ctime_ns}\0{f.inode}\0{f.device}\0{_text(f.read_path)}"
        )
    for e in found.entries:
        lines.append(f"E\0{_text(e.path)}\0{e.kind}\0{_text(e.message)}\0{e.severity}\0{e.fails_listing}")
    for project in sorted(found.project_names, key=os.fsencode):
        names = sorted(found.project_names[project], key=os.fsencode)
        lines.append("P\0" + _text(project) + "\0" + "\0".join(_text(n) for n in names))
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()


def _ipc(frame: pl.DataFrame) -> bytes:
    sink = io.BytesIO()
    frame.write_ipc(sink, compression="uncompressed")
    return sink.getvalue()


def _pack(head: dict[str, Any], frames: Mapping[str, pl.DataFrame]) -> bytes:
    """A file's body made whole, each frame by Polars' IPC writer (the files of earlier versions; tests)."""
    blobs = {name: _ipc(frame) for name, frame in frames.items()}
    head = {**head, "frames": [[name, len(blob)] for name, blob in blobs.items()]}
    text = json.dumps(head, sort_keys=True).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs.values())


class FramesCache:
    """The frames cache of one corpus root and encoding, for one walk.

    Attributes:
        path: the cache file.
        status: how loading went (``new``, ``loaded``, ``stale``, ``ignored: <why>``).
        fingerprint: the walk's ``corpus_fingerprint`` (with the digest of the price table ``sessions.cost_usd``
            was computed with, ``prices``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.read.discover import discover
        >>> found = discover(tempfile.mkdtemp(), "none")
        >>> cache = FramesCache(found, directory=tempfile.mkdtemp())
        >>> cache.load() is None, cache.status
        (True, 'new')
    """

    def __init__(self, found: Discovery, *, directory: str | None = None, prices: str = "") -> None:
        self.found = found
        self.path = frames_file(found.root, found.compression, directory=directory)
        self.fingerprint = corpus_fingerprint(found)
        if prices:  # the sessions' costs depend on the price table too
            self.fingerprint = hashlib.sha256(f"{self.fingerprint}|prices={prices}".encode()).hexdigest()
        self.status = "new"
        self.writable = not _inside(os.path.dirname(self.path), found.root)
        self._head: dict[str, Any] = {}
        self._frames: dict[str, pl.DataFrame] = {}
        if not self.writable:
            self.status = "ignored: cache directory is inside the corpus"

    def load(self, *, jobs: int | None = None) -> Corpus | None:
        """The cached corpus of this walk, or ``None`` (a miss: absent, stale, untrusted or damaged).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.read.discover import discover
            >>> FramesCache(discover(tempfile.mkdtemp(), "none"), directory=tempfile.mkdtemp()).load() is None
            True
        """
        if not self.writable:
            return None
        try:
            loaded = self._read()
        except Exception as error:  # any unreadable cache file is a miss, never fatal
            self.status = f"ignored: unreadable frames cache ({type(error).__name__})"
            return None
        if loaded is None:
            return None
        head, frames = loaded
        self._head, self._frames = head, frames
        self.status = "loaded"
        corpus = Corpus(
            root=self.found.root,
            compression=self.found.compression,
            sessions=frames["sessions"],
            descriptors=frames["descriptors"],
            problems=frames["problems"],
            listing_error=head["listing_error"],
            listing_error_path=head["listing_error_path"],
            _jobs=jobs,
            _sources=source_column(self.found.files),
        )
        attach(corpus, self)
        return corpus

    def _read(self) -> tuple[dict[str, Any], dict[str, pl.DataFrame]] | None:
        body = self._body()
        if body is None:
            return None
        (length,) = struct.unpack_from("<Q", body)
        if 8 + length > len(body):
            raise ValueError("header length")
        head = json.loads(bytes(body[8 : 8 + length]))
        if not isinstance(head, dict) or head.get("fingerprint") != self.fingerprint:
            self.status = "stale"
            return None
        probes = FsProbes.from_json(head["probes"])
        if probes is None or not probes.unchanged():
            self.status = "stale: the filesystem answers differently"
            return None
        if not (head["listing_error"] is None or isinstance(head["listing_error"], str)):
            raise TypeError("listing_error")
        if not (head["listing_error_path"] is None or isinstance(head["listing_error_path"], str)):
            raise TypeError("listing_error_path")
        frames: dict[str, pl.DataFrame] = {}
        offset = 8 + length
        for name, size in head["frames"]:
            if not isinstance(name, str) or not isinstance(size, int) or size < 0 or offset + size > len(body):
                raise ValueError("frame size")
            frames[name] = _frame(body[offset : offset + size])
            offset += size
        for name, schema in CORPUS_FRAMES.items():
            if name not in frames or frames[name].schema != pl.Schema(schema):
                self.status = f"ignored: the cached {name} frame has another schema"
                return None
        return head, frames

    def _body(self) -> memoryview | None:
        try:
            body, status = read_sealed(
                self.path,
                lambda: read_key(os.path.dirname(self.path)),
                what="frames cache",
                magic=_MAGIC,
                limit=MAX_FRAMES_FILE_BYTES,
                mac=_mac,
                least=8,
            )
        except CacheKeyError as error:
            body, status = None, f"ignored: {error.strerror}"
        self.status = status if body is None else self.status
        return body

    def save(self, corpus: Corpus, probes: FsProbes) -> str | None:
        """Write the frames of ``corpus`` (assembled from this walk) atomically; the path, or ``None``.

        A file that would exceed ``MAX_FRAMES_FILE_BYTES``, or a directory
        that cannot be written, is skipped (``status`` says why).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.frames.assemble import assemble
            >>> from subagent_catalog.read.discover import discover
            >>> found, probes = discover(tempfile.mkdtemp(), "none"), FsProbes()
            >>> cache = FramesCache(found, directory=tempfile.mkdtemp())
            >>> cache.save(assemble(found, [], probes=probes), probes) == cache.path
            True
        """
        if not self.writable:
            return None
        self._head = {
            "format": FRAMES_FORMAT,
            "fingerprint": self.fingerprint,
            "probes": probes.to_json(),
            "listing_error": corpus.listing_error,
            "listing_error_path": corpus.listing_error_path,
        }
        self._frames = {"sessions": corpus.sessions, "descriptors": corpus.descriptors, "problems": corpus.problems}
        attach(corpus, self)
        return self._write()

    def _write(self) -> str | None:
        """Write the file a frame at a time, a slice of rows at a time: the body is never held whole.

        Each frame's IPC size is measured first (written to a counter), so the
        head can give the sizes; then the frames are written again into the
        temp file through the MAC, and the MAC is put in its place last.
        """
        try:
            sizes = {name: _IpcSink().put(frame) for name, frame in self._frames.items()}
            text = json.dumps({**self._head, "frames": [[name, size] for name, size in sizes.items()]}, sort_keys=True)
            head = struct.pack("<Q", len(text.encode())) + text.encode()
            if len(_MAGIC) + _MAC_BYTES + len(head) + sum(sizes.values()) > MAX_FRAMES_FILE_BYTES:
                self.status = "not saved: larger than the frames cache's size limit"
                return None
            directory = os.path.dirname(self.path)
            key = make_key(directory)

            def write(handle: IO[bytes]) -> None:
                handle.write(_MAGIC + bytes(_MAC_BYTES))
                sink = _IpcSink(handle, _new_mac(key))
                sink.write(head)
                for name, frame in self._frames.items():
                    if sink.put(frame) != sizes[name]:
                        raise OSError(f"the {name} frame's IPC size changed between two writes")
                handle.seek(len(_MAGIC))
                handle.write(sink.digest())

            replace_file(self.path, ".frames-", write)
        except OSError as error:
            self.status = f"not saved: {error.strerror or error}"
            return None
        return self.path

    def _mine(self, corpus: Corpus) -> bool:
        """Whether ``corpus`` still holds the very frames this cache saved or loaded."""
        return (
            bool(self._head)
            and all(getattr(corpus, name) is self._frames.get(name) for name in CORPUS_FRAMES)
            and corpus.listing_error == self._head["listing_error"]
        )

    def get(self, name: str, schema: Mapping[str, Any], corpus: Corpus) -> pl.DataFrame | None:
        """A frame derived from ``corpus``, cached with its frames, when it has ``schema`` (else ``None``).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> corpus = read_corpus(tempfile.mkdtemp(), cache=tempfile.mkdtemp())
            >>> corpus._derived.get("x", {}, corpus) is None
            True
        """
        if name in CORPUS_FRAMES or not self._mine(corpus):
            return None
        frame = self._frames.get(name)
        if frame is None or frame.schema != pl.Schema(schema):
            return None
        return frame.clone()

    def put(self, name: str, frame: pl.DataFrame, corpus: Corpus) -> None:
        """Keep a frame derived from ``corpus``'s frames (by code ``code_digest`` covers) in the file.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> corpus = read_corpus(tempfile.mkdtemp(), cache=tempfile.mkdtemp())
            >>> corpus._derived.put("x", pl.DataFrame({"a": [1]}), corpus)
            >>> corpus._derived.get("x", {"a": pl.Int64}, corpus).item()
            1
        """
        if name in CORPUS_FRAMES or not self._mine(corpus):
            return
        self._frames[name] = frame
        self._write()


_COPY_BELOW = 32 << 20
"""A cached frame smaller than this is copied by Polars' reader unless pyarrow is loaded already."""


def _frame(blob: memoryview) -> pl.DataFrame:
    """One frame of the file, over the file's own bytes where it can (no copy, no decoding).

    pyarrow reads the IPC stream in place and Polars takes its buffers as they
    are; a pyarrow without the view types Polars writes (before 16) gets
    Polars' own reader, which copies. So does a frame under ``_COPY_BELOW``
    bytes while pyarrow is not loaded yet: importing it (0.2 s) costs more than
    the copy, and a small command (the sample's report) need not pay it.

    Examples:
        >>> frame = pl.DataFrame({"a": [1, None], "b": ["x", "y" * 20]})
        >>> _frame(memoryview(_ipc(frame))).equals(frame)
        True
    """
    if len(blob) < _COPY_BELOW and "pyarrow" not in sys.modules:
        return pl.read_ipc(io.BytesIO(blob))
    import pyarrow as pa

    try:
        table = pa.ipc.open_file(pa.py_buffer(blob)).read_all()
    except (pa.ArrowException, NotImplementedError):
        return pl.read_ipc(io.BytesIO(blob))
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def _mac(key: bytes, body: bytes | memoryview) -> bytes:
    mac = _new_mac(key)
    mac.update(body)
    return mac.digest()


def _new_mac(key: bytes) -> hmac.HMAC:
    """The MAC of a body still to come (``update`` it with the body)."""
    return hmac.new(key, _MAGIC, hashlib.sha256)  # its own magic: a facts cache file's MAC never verifies here


class _IpcSink:
    """Where the file's bytes go: counted and, with a file, written to it and MAC'd as they are written.

    Examples:
        >>> sink = _IpcSink()
        >>> sink.put(pl.DataFrame({"a": [1, 2]})) == sink.size > 0
        True
    """

    def __init__(self, handle: IO[bytes] | None = None, mac: hmac.HMAC | None = None) -> None:
        self.handle = handle
        self.mac = mac
        self.size = 0

    def write(self, data: bytes | memoryview) -> int:
        if self.handle is not None and self.mac is not None:
            self.handle.write(data)
            self.mac.update(data)
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        return None

    @property
    def closed(self) -> bool:
        return False

    def put(self, frame: pl.DataFrame) -> int:
        """Write one frame as an Arrow IPC file, ``SLICE_ROWS`` rows at a time; its size in bytes.

        Written by pyarrow from Polars' own buffers (``to_arrow`` shares them),
        a slice at a time: Polars' writer held about twice the frame's bytes.
        ``_frame`` reads either writer's files.

        Raises:
            OSError: pyarrow cannot write the frame.
        """
        import pyarrow as pa

        start = self.size
        try:
            with pa.ipc.new_file(pa.PythonFile(self, mode="w"), frame.head(0).to_arrow().schema) as writer:
                for part in frame.iter_slices(SLICE_ROWS):
                    writer.write_table(part.to_arrow())
        except pa.ArrowException as error:
            raise OSError(f"a frame cannot be written: {error}") from None
        return self.size - start

    def digest(self) -> bytes:
        """The MAC of everything written."""
        assert self.mac is not None
        return self.mac.digest()


def attach(corpus: Corpus, cache: FramesCache) -> None:
    """Let the catalog find (and keep) frames derived from ``corpus`` in its frames cache.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> getattr(read_corpus(tempfile.mkdtemp(), cache=tempfile.mkdtemp()), "_derived", None) is not None
        True
    """
    object.__setattr__(corpus, "_derived", cache)
