"""The findings cache: what the log-reading parts of ``findings`` found in a session, kept by what decided it.

A detector that reads a log (``tool-loop``, ``retry-storm``, ``context-growth``, the subagent
detectors), a user rule and a Python scanner each cost a read of every log they need. Their findings
in one session are a function of that session's log (and, for the subagent detectors, of its
children's logs), of the code, of the thresholds, of the rules and of the scanner, so they are kept
per session under a digest of all of these:

- the log's **fingerprint** as the facts cache defines it (``store.cache``: its path inside the root,
  size, ``mtime_ns``, ``ctime_ns``, inode and device), checked against the size and mtime the corpus
  was read with (a log changed since the read is neither answered from the cache nor stored);
- ``frames_cache.code_digest`` (every source file of the package, the libraries' versions);
- the part: one built-in detector and its threshold, the subagent detectors chosen (with
  ``fan_out_children`` and every child's fingerprint), the rules' digest (every field of every rule,
  in order), or one scanner's identity (``module:qualname`` and a digest of its module's source file,
  and the kinds it may not use).

A touched log, a changed threshold or a changed rules file misses only the entries it changes. The
file lives beside the facts cache (``findings-<digest>.json``, never under the corpus), MAC'd with
the cache directory's key over a magic of its own, written atomically (temp file and rename: a
concurrent writer's entries may be lost, never torn); any doubt about the file is a miss, and a
malformed entry is dropped and computed again, never a finding. Archives are not cached (their
events are already columns), nor a scanner's time-out (it may pass next time).
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl

from subagent_catalog.analysis.findings.schema import SEVERITIES, Finding, Severity
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.store.cache import (
    CacheKeyError,
    _inside,
    default_cache_dir,
    make_key,
    read_key,
    read_sealed,
    replace_file,
    root_digest,
)
from subagent_catalog.store.frames_cache import code_digest

__all__ = [
    "FINDINGS_FORMAT",
    "MAX_FINDINGS_FILE_BYTES",
    "FindingsCache",
    "Parts",
    "findings_file",
    "log_fingerprints",
    "open_cache",
]

FINDINGS_FORMAT = "1"
MAX_FINDINGS_FILE_BYTES = 256 << 20
"""A findings cache file larger than this is ignored (and a larger one is not written)."""
MAX_ENTRIES = 1_000_000
"""Past this many entries, only those used by the last call are kept."""
_MAGIC = b"subagent_catalog findings cache 1\n"
_MAC_BYTES = hashlib.sha256().digest_size

Row = tuple[str, Severity, str, str, int | None, int | None, int | None, int | None]
"""A cached finding: ``kind, severity, message, evidence, turn, step, seq, seq_end`` (the session is the entry's)."""


def findings_file(root: str | os.PathLike[str], compression: str, *, directory: str | None = None) -> str:
    """The findings cache file of a corpus root read in one encoding.

    Examples:
        >>> findings_file("/srv/corpus", "zstd", directory="/c").startswith("/c/findings-")
        True
    """
    return os.path.join(directory or default_cache_dir(), f"findings-{root_digest(root, compression)}.json")


def log_fingerprints(corpus: Corpus) -> dict[int, str]:
    """Each readable log's fingerprint by ``list_order``: the facts cache's identity fields, unchanged since the read.

    A log whose size or mtime differs from the corpus's row (changed since it was read), or that
    cannot be stat'ed, has none (never cached).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> prints = log_fingerprints(read_corpus("data/findings"))
        >>> len(prints) > 0, all(len(p.split("|")) == 6 for p in prints.values())
        (True, True)
    """
    frame = (
        corpus.sessions.filter(pl.col("verdict") != "skipped")
        .sort("list_order")
        .select("list_order", "bytes", pl.col("mtime").dt.epoch("ns"))
    )
    root = os.path.realpath(corpus.root)
    out: dict[int, str] = {}
    for (order, size, mtime), source in zip(frame.iter_rows(), corpus.log_sources(), strict=True):
        try:
            info = os.stat(source)
        except OSError:
            continue
        if info.st_size != size or info.st_mtime_ns != mtime:
            continue
        where = os.path.relpath(os.path.realpath(source), root)
        out[order] = f"{where}|{info.st_size}|{info.st_mtime_ns}|{info.st_ctime_ns}|{info.st_ino}|{info.st_dev}"
    return out


def rules_digest(rules: Sequence[Any]) -> str:
    """A digest of every field of every rule, in order (any change to the rules file changes it).

    Examples:
        >>> from subagent_catalog.analysis.findings.rules import Rule
        >>> rules_digest([Rule("a", "x")]) == rules_digest([Rule("a", "x", regex=True)])
        False
    """
    fields = [[r.name, r.pattern, r.regex, r.ignore_case, r.scope, r.severity, r.message] for r in rules]
    return hashlib.sha256(orjson.dumps(fields)).hexdigest()


def scanner_identity(scanner: Callable[..., Any]) -> str | None:
    """``module:qualname`` and a digest of the module's source file; ``None`` when it has no stable identity.

    A lambda, a nested function or a function without a source file is never cached.

    Examples:
        >>> from subagent_catalog.analysis.findings.cache import scanner_identity
        >>> scanner_identity(rules_digest).startswith("subagent_catalog.analysis.findings.cache:rules_digest|")
        True
        >>> scanner_identity(lambda rows, session: []) is None
        True
    """
    module, qualname = getattr(scanner, "__module__", None), getattr(scanner, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    try:
        path = inspect.getsourcefile(scanner)
        with open(path or "", "rb") as handle:
            source = handle.read()
    except (OSError, TypeError):
        return None
    return f"{module}:{qualname}|{hashlib.sha256(source).hexdigest()}"


def _row(value: Any) -> Row | None:
    """A cached finding checked field by field, or ``None``."""
    if not isinstance(value, list) or len(value) != 8:
        return None
    kind, severity, message, evidence, *where = value
    if not (isinstance(kind, str) and kind and severity in SEVERITIES and isinstance(message, str) and message):
        return None
    if not isinstance(evidence, str):
        return None
    if any(w is not None and (isinstance(w, bool) or not isinstance(w, int)) for w in where):
        return None
    level: Severity = severity
    return (kind, level, message, evidence, where[0], where[1], where[2], where[3])


@dataclass
class FindingsCache:
    """The findings cache of one corpus root and encoding.

    Attributes:
        path: the cache file.
        status: how loading went (``new``, ``loaded``, ``ignored: <why>``) or why saving did not.
        writable: ``False`` when the file would land inside the corpus or the key cannot be trusted.
        hits: entries answered from the cache.
        misses: entries that were not (absent, or malformed: ``rejected``).
        rejected: entries dropped because they were malformed.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> cache = FindingsCache.open(read_corpus(tempfile.mkdtemp()), directory=tempfile.mkdtemp())
        >>> cache.status, cache.get("k") is None, cache.misses
        ('new', True, 1)
    """

    path: str
    status: str
    writable: bool
    entries: dict[str, Any]
    hits: int = 0
    misses: int = 0
    rejected: int = 0
    root: str = ""
    _used: set[str] = field(default_factory=set)
    _dirty: bool = False

    @classmethod
    def open(cls, corpus: Corpus, *, directory: str | None = None) -> FindingsCache:
        """The cache of ``corpus``'s root (empty when there is none, or it cannot be trusted); never raises.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> root = tempfile.mkdtemp()
            >>> FindingsCache.open(read_corpus(root), directory=root + "/c").status
            'ignored: cache directory is inside the corpus'
        """
        path = findings_file(corpus.root, corpus.compression, directory=directory)
        if _inside(os.path.dirname(path), corpus.root):
            return cls(path, "ignored: cache directory is inside the corpus", False, {})
        try:
            entries, status = _read(path, os.path.realpath(corpus.root))
        except CacheKeyError as error:
            return cls(path, f"ignored: {error.strerror}", False, {})
        except Exception as error:  # any unreadable cache file is a miss, never fatal
            entries, status = {}, f"ignored: unreadable findings cache ({type(error).__name__})"
        return cls(path, status, True, entries, root=os.path.realpath(corpus.root))

    def get(self, key: str) -> list[Row] | None:
        """The cached findings of one entry, or ``None`` (absent, or malformed: then dropped).

        Examples:
            >>> bad = {"k": [["x", "fatal", "m", "", 1, 2, 3, 4]]}
            >>> cache = FindingsCache("/nowhere/findings.json", "new", False, bad)
            >>> cache.get("k") is None, cache.rejected, "k" in cache.entries
            (True, 1, False)
        """
        value = self.entries.get(key)
        rows = [_row(item) for item in value] if isinstance(value, list) else None
        if rows is None or any(row is None for row in rows):
            if key in self.entries:
                del self.entries[key]
                self.rejected += 1
                self._dirty = True
            self.misses += 1
            return None
        self.hits += 1
        self._used.add(key)
        return [row for row in rows if row is not None]

    def put(self, key: str, found: Iterable[Finding]) -> None:
        """Keep one entry's findings (each finding's session is the entry's).

        Examples:
            >>> cache = FindingsCache("/nowhere/findings.json", "new", False, {})
            >>> cache.put("k", [Finding(0, "s", "p", "tool-loop", "warn", "m", seq=4)])
            >>> cache.get("k")
            [('tool-loop', 'warn', 'm', '', None, None, 4, None)]
        """
        self.entries[key] = [
            [f.kind, f.severity, f.message, f.evidence, f.turn, f.step, f.seq, f.seq_end] for f in found
        ]
        self._used.add(key)
        self._dirty = True

    def save(self) -> str | None:
        """Write the file atomically when an entry changed; its path, or ``None`` (``status`` says why not).

        Examples:
            >>> import os, tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> where = tempfile.mkdtemp()
            >>> cache = FindingsCache.open(read_corpus(tempfile.mkdtemp()), directory=where)
            >>> cache.save() is None  # nothing changed
            True
            >>> cache.put("k", [])
            >>> os.path.dirname(cache.save()) == where
            True
        """
        if not self.writable or not self._dirty:
            return None
        entries = self.entries
        if len(entries) > MAX_ENTRIES:
            entries = {key: value for key, value in entries.items() if key in self._used}
        body = orjson.dumps({"format": FINDINGS_FORMAT, "root": self.root, "entries": entries})
        if len(body) + len(_MAGIC) + _MAC_BYTES > MAX_FINDINGS_FILE_BYTES:
            self.status = "not saved: larger than the findings cache's size limit"
            return None
        directory = os.path.dirname(self.path)
        try:
            key = make_key(directory)
            replace_file(self.path, ".findings-", lambda handle: handle.write(_MAGIC + _mac(key, body) + body))
        except OSError as error:
            self.status = f"not saved: {error.strerror or error}"
            return None
        self._dirty = False
        return self.path


def _mac(key: bytes, body: bytes | memoryview) -> bytes:
    return hmac.new(key, _MAGIC + body, hashlib.sha256).digest()


def _read(path: str, root: str) -> tuple[dict[str, Any], str]:
    """The entries of a cache file and how loading went (``CacheKeyError``: the key cannot be trusted)."""
    key = os.path.dirname(path)
    body, status = read_sealed(
        path, lambda: read_key(key), what="findings cache", magic=_MAGIC, limit=MAX_FINDINGS_FILE_BYTES, mac=_mac
    )
    if body is None:
        return {}, status
    document = orjson.loads(body)
    if not isinstance(document, dict) or document.get("format") != FINDINGS_FORMAT or document.get("root") != root:
        return {}, "ignored: another format or root"
    entries = document.get("entries")
    if not isinstance(entries, dict):
        return {}, "ignored: no entries"
    return entries, "loaded"


def open_cache(corpus: Corpus, cache: bool | str | os.PathLike[str]) -> FindingsCache | None:
    """The findings cache ``findings(cache=...)`` uses, or ``None`` (off, or an archive).

    ``True``: the directory ``corpus`` was read with (none when it was read with ``cache=False``);
    a path: that directory; ``False``: no cache.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> open_cache(read_corpus(tempfile.mkdtemp(), cache=False), True) is None
        True
        >>> open_cache(read_corpus(tempfile.mkdtemp(), cache=False), tempfile.mkdtemp()).status
        'new'
    """
    if cache is False or not corpus.keeps_caches():
        return None
    if cache is True:
        derived = getattr(corpus, "_derived", None)
        path = getattr(derived, "path", None)
        if not isinstance(path, str):
            return None
        return FindingsCache.open(corpus, directory=os.path.dirname(path))
    return FindingsCache.open(corpus, directory=os.fspath(cache))


@dataclass
class Parts:
    """The cache as ``findings`` uses it: rows split into those answered and those to compute, then kept.

    Examples:
        >>> parts = Parts(None, {})
        >>> parts.split([{"list_order": 0}], "tool-loop", 3)
        ([], [{'list_order': 0}], {})
    """

    store: FindingsCache | None
    prints: dict[int, str]

    def key(
        self, row: dict[str, Any], parts: tuple[object, ...], more: Callable[[dict[str, Any]], str | None] | None
    ) -> str | None:
        """The entry key of one session for one part, or ``None`` when it cannot be cached.

        Examples:
            >>> Parts(None, {0: "p|1|2|3|4|5"}).key({"list_order": 0}, ("tool-loop", 3), None) is None  # no store
            True
        """
        fingerprint = self.prints.get(row["list_order"])
        extra = more(row) if more is not None else ""
        if self.store is None or fingerprint is None or extra is None:
            return None
        # a digest of the code and the parts that decide the entry
        return hashlib.sha256(orjson.dumps([code_digest(), *map(str, (*parts, fingerprint, extra))])).hexdigest()

    def split(
        self,
        rows: list[dict[str, Any]],
        *parts: object,
        more: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> tuple[list[Finding], list[dict[str, Any]], dict[int, str]]:
        """The cached findings of ``rows``, the rows to compute, and the keys to keep those under (by list order).

        Examples:
            >>> store = FindingsCache("/nowhere/findings.json", "new", False, {})
            >>> parts = Parts(store, {0: "p|1|2|3|4|5"})
            >>> row = {"list_order": 0, "session_id": "s", "project_dir": "p"}
            >>> _, todo, keys = parts.split([row], "retry-storm", 3)
            >>> _ = parts.keep(keys, [Finding(0, "s", "p", "retry-storm", "warn", "3 retries")])
            >>> [f.message for f in parts.split([row], "retry-storm", 3)[0]], parts.split([row], "retry-storm", 4)[1]
            (['3 retries'], [{'list_order': 0, 'session_id': 's', 'project_dir': 'p'}])
        """
        found: list[Finding] = []
        missed: list[dict[str, Any]] = []
        keys: dict[int, str] = {}
        for row in rows:
            key = self.key(row, parts, more)
            cached = self.store.get(key) if self.store is not None and key is not None else None
            if cached is None:
                missed.append(row)
                if key is not None:
                    keys[row["list_order"]] = key
                continue
            found += [
                Finding.about(row, kind, severity, message, evidence, turn=turn, step=step, seq=seq, seq_end=seq_end)
                for kind, severity, message, evidence, turn, step, seq, seq_end in cached
            ]
        return found, missed, keys

    def keep(
        self, keys: dict[int, str], found: list[Finding], *, unless: frozenset[str] = frozenset()
    ) -> list[Finding]:
        """Store each computed session's findings under its key (none: an empty entry), unless one is of ``unless``.

        Returns ``found``.

        Examples:
            >>> store = FindingsCache("/nowhere/findings.json", "new", False, {})
            >>> _ = Parts(store, {}).keep({0: "k"}, [Finding(0, "s", "p", "scanner-timeout", "info", "m")],
            ...                           unless=frozenset({"scanner-timeout"}))
            >>> store.entries
            {}
        """
        if self.store is None:
            return found
        by_order: dict[int, list[Finding]] = {}
        for finding in found:
            by_order.setdefault(finding.list_order, []).append(finding)
        for order, key in keys.items():
            mine = by_order.get(order, [])
            if not any(finding.kind in unless for finding in mine):
                self.store.put(key, mine)
        return found
