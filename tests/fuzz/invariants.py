"""The invariants every hostile corpus must keep, checked for one fuzz case.

* **No crash**: ``read_corpus``, ``catalog`` / ``catalog_descendants`` (both
  semantics), ``deviations``, ``list_children`` / ``list_descendants`` /
  ``list_agents_text``, ``scan_events``, the notebook HTML and, when their
  modules exist, ``report.render_report`` / ``report.summary_text`` and
  ``gate.run_checks`` (with its formatters) raise nothing but the documented
  ``CatalogError`` codes: ``PERSISTENCE_LIST_FAILED`` exactly when
  ``corpus.listing_error`` is set, and under ``trace`` the per-parent
  ``SUBAGENT_PARENT_NOT_FOUND`` / ``SUBAGENT_LINEAGE_CYCLE``.
* **Accounted**: every entry under the root is a ``sessions.path`` or a
  ``problems.path``, lies under an accounted directory, or is a directory on
  the way to one.
* **Read-only**: the root (and the outside sentinel) are byte-for-byte and
  entry-for-entry unchanged, and no path under the root is opened for
  writing (an audit hook on ``open`` and the ``os`` mutators, armed only
  while the library runs).
* **Inside the root**: no ``sessions`` row's real path leaves the root and no
  file of the outside sentinel is ever opened (symlinks never lead out).
* **Parity**: ``jobs=1`` and ``jobs=2`` (with ``PARALLEL_THRESHOLD`` set
  to 1) give identical frames and listing errors.
* **Shapes**: frames carry their declared schemas and closed vocabularies.
* **Inert output**: no ``<script`` or event-handler markup from data in the
  report or the notebook HTML; no raw ESC in terminal text.
* **Live logs**: a log appended to while read is a consistent prefix of what
  was written or ``read_cause == "unstable-file"``.
* **Times** (``tests.fuzz.times``): a time outside years 1 to 9999 is exact in
  its ``*_ms`` column, null in its ``*_at`` one and flagged by a problem row;
  every datetime converts and prints; the run summary, summary JSON, SQL,
  transcripts, timelines, the browser and the dashboard raise nothing over it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import multiprocessing
import os
import re
import signal
import stat
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from subagent_catalog.catalog.deviations import deviations
from subagent_catalog.catalog.listing import list_agents_text, list_children, list_descendants
from subagent_catalog.catalog.schemas import CATALOG_EXTRA, DEVIATION_SCHEMA, ROW_SCHEMA
from subagent_catalog.catalog.tables import catalog, catalog_descendants
from subagent_catalog.corpus import read_corpus
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.events import scan_events
from subagent_catalog.frames.schemas import CORPUS_SESSION_SCHEMA, DESCRIPTOR_SCHEMA, EVENT_SCHEMA, PROBLEM_SCHEMA
from subagent_catalog.read import pool as corpus_module
from subagent_catalog.read.zstdframes import compress_frame
from tests.fuzz import times
from tests.fuzz.mutations import Case, LiveWriterSpec, plaintext, split_lines

PACKAGE_DIR = str(Path(corpus_module.__file__).resolve().parent.parent)
VERDICTS = {"ok", "torn-tail", "prefix", "failed", "skipped"}
SEVERITIES = {"error", "warning", "info"}
SCOPES = {"corpus", "file", "entry"}
ROW_KINDS = {"child", "diagnostic"}
REASONS = {None, "corrupt", "unsupported", "unavailable"}
TRACE_CODES = {"SUBAGENT_PARENT_NOT_FOUND", "SUBAGENT_LINEAGE_CYCLE"}


# --------------------------------------------------------------------------- results


@dataclass
class Violation:
    """One broken invariant."""

    invariant: str
    detail: str
    where: str = ""
    known: str | None = None  # the regression test that covers it (see KNOWN_ISSUES)

    def signature(self) -> str:
        """What identifies the bug behind it (for de-duplication across cases)."""
        head = self.detail.split(":", 1)[0] if self.invariant.startswith("crash") else ""
        return f"{self.invariant}|{self.where}|{head}"


@dataclass
class Outcome:
    """What checking one case found."""

    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stats: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


def _where(error: BaseException) -> str:
    """The innermost frame inside the package (file:function:line)."""
    found = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename.startswith(PACKAGE_DIR):
            found = f"{os.path.basename(frame.filename)}:{frame.name}"
    return found


def crash(invariant: str, error: BaseException) -> Violation:
    """A violation for an exception that escaped."""
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    frames = traceback.extract_tb(error.__traceback__)[-4:]
    trail = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}:{f.name}" for f in reversed(frames))
    return Violation(f"crash:{invariant}", f"{text[:400]} [{trail}]", _where(error))


# --------------------------------------------------------------------------- audit guard


class ForbiddenAccess(BaseException):
    """Raised by the audit hook: a write under a corpus root, or any open outside it.

    A ``BaseException`` so that no ``except Exception`` in the library can
    swallow it.
    """


WATCHED = frozenset(
    {
        "open",
        "os.remove",
        "os.rename",
        "os.rmdir",
        "os.mkdir",
        "os.chmod",
        "os.chown",
        "os.utime",
        "os.truncate",
        "os.symlink",
        "os.link",
        "os.setxattr",
        "os.removexattr",
        "shutil.rmtree",
        "shutil.copyfile",
        "shutil.move",
    }
)
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


@dataclass
class _Guard:
    armed: bool = False
    roots: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()
    hits: list[str] = field(default_factory=list)
    installed: bool = False


_GUARD = _Guard()
_LOCAL = threading.local()


def _under(path: str, tops: tuple[str, ...]) -> bool:
    return any(path == top or path.startswith(top + os.sep) for top in tops)


def _candidates(path: Any, *, follow: bool = True) -> list[str]:
    """The path as given (absolute) and where it leads (the last component kept when not followed)."""
    try:
        text = os.fsdecode(os.fspath(path))
    except TypeError:
        return []
    absolute = os.path.abspath(text)
    if follow:
        return [absolute, os.path.realpath(absolute)]
    return [absolute, os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))]


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in WATCHED or not _GUARD.armed or getattr(_LOCAL, "exempt", False):
        return
    if event == "open":
        path, mode, flags = [*args, None, None, None][:3]
        if isinstance(path, int) or path is None:
            return
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and bool(flags & WRITE_FLAGS)
        )
        follow = not (isinstance(flags, int) and flags & getattr(os, "O_NOFOLLOW", 0))
        names = _candidates(path, follow=follow)
        if writing and any(_under(name, _GUARD.roots) for name in names):
            message = f"opened for writing under the corpus root: {names[0]!r} (mode={mode!r}, flags={flags!r})"
            _GUARD.hits.append(message)
            raise ForbiddenAccess(message)
        if any(_under(name, _GUARD.outside) for name in names):
            message = f"opened a file outside the root (through a symlink?): {names[-1]!r}"
            _GUARD.hits.append(message)
            raise ForbiddenAccess(message)
        return
    for value in args:
        if isinstance(value, (str, bytes, os.PathLike)):
            names = _candidates(value)
            if any(_under(name, _GUARD.roots + _GUARD.outside) for name in names):
                message = f"{event} on {names[0]!r} under the corpus root"
                _GUARD.hits.append(message)
                raise ForbiddenAccess(message)


def install_guard() -> None:
    """Install the process-wide audit hook once (it cannot be removed; it is gated by a flag)."""
    if not _GUARD.installed:
        sys.addaudithook(_hook)
        _GUARD.installed = True


@contextlib.contextmanager
def guarded(roots: list[Path], outside: list[Path]) -> Iterator[list[str]]:
    """Arm the hook for these roots while the library runs; yields the list of hits."""
    install_guard()
    tops = tuple(sorted({p for r in roots for p in (os.path.abspath(r), os.path.realpath(r))}))
    outs = tuple(sorted({p for r in outside for p in (os.path.abspath(r), os.path.realpath(r))}))
    _GUARD.roots, _GUARD.outside, _GUARD.hits = tops, outs, []
    _GUARD.armed = True
    try:
        yield _GUARD.hits
    finally:
        _GUARD.armed = False


@contextlib.contextmanager
def exempt_thread() -> Iterator[None]:
    """Let the current thread write under an armed root (a fixture's writer thread)."""
    _LOCAL.exempt = True
    try:
        yield
    finally:
        _LOCAL.exempt = False


# --------------------------------------------------------------------------- deadline


class CaseTimeout(BaseException):
    """A case ran past its deadline (a hang: a FIFO opened, a loop that never ends)."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`CaseTimeout` in the main thread after ``seconds`` (no-op in other threads).

    A watchdog thread sends SIGALRM to the main thread itself (a process-directed signal may
    land on another thread and leave a blocked main thread waiting), then kills the worker
    processes if the main thread still waits on them (a deadlocked pool never answers), once a
    second until the block is left.
    """
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return
    main = threading.main_thread().ident
    done = threading.Event()

    def expire(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"no answer within {seconds:.0f} s")

    def watchdog() -> None:
        if done.wait(seconds):
            return
        while not done.is_set():
            if main is not None:
                signal.pthread_kill(main, signal.SIGALRM)
            if done.wait(1.0):
                return
            for child in multiprocessing.active_children():  # the main thread waits on a stuck pool
                child.kill()

    previous = signal.signal(signal.SIGALRM, expire)
    guard = threading.Thread(target=watchdog, name="fuzz-deadline", daemon=True)
    guard.start()
    try:
        yield
    finally:
        done.set()
        guard.join()
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- snapshots


def _digest(path: str) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    except OSError as error:
        return f"unreadable:{error.errno}"
    return digest.hexdigest()


def snapshot(top: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``top``: kind, mode, size, mtime, inode, content hash / link target / listing.

    Special files (FIFOs, sockets, devices) are never opened.
    """
    out: dict[str, tuple[Any, ...]] = {}
    stack = [str(top)]
    while stack:
        path = stack.pop()
        try:
            info = os.lstat(path)
        except OSError as error:
            out[path] = ("missing", error.errno)
            continue
        mode = info.st_mode
        if stat.S_ISREG(mode):
            out[path] = ("file", stat.S_IMODE(mode), info.st_size, info.st_mtime_ns, info.st_ino, _digest(path))
        elif stat.S_ISLNK(mode):
            out[path] = ("link", os.readlink(path), info.st_ino)
        elif stat.S_ISDIR(mode):
            try:
                names = sorted(os.listdir(path), key=os.fsencode)
            except OSError as error:
                out[path] = ("dir", stat.S_IMODE(mode), info.st_mtime_ns, f"unlistable:{error.errno}")
                continue
            out[path] = ("dir", stat.S_IMODE(mode), info.st_mtime_ns, tuple(names))
            stack.extend(os.path.join(path, name) for name in names)
        else:
            out[path] = ("special", stat.S_IFMT(mode), stat.S_IMODE(mode), info.st_ino, info.st_mtime_ns)
    return out


def snapshot_diff(before: dict[str, tuple[Any, ...]], after: dict[str, tuple[Any, ...]], skip: set[str]) -> list[str]:
    """Entries that differ (or appeared, or vanished), ``skip`` excepted."""
    changed = []
    for path in sorted(set(before) | set(after)):
        if path in skip:
            continue
        if before.get(path) != after.get(path):
            changed.append(f"{path!r}: {before.get(path)} -> {after.get(path)}")
    return changed


# --------------------------------------------------------------------------- frame checks


def frame_difference(a: pl.DataFrame, b: pl.DataFrame) -> str | None:
    """None when equal, else which column and row differ."""
    if a.equals(b):
        return None
    if a.schema != b.schema:
        return f"schemas differ: {a.schema} vs {b.schema}"
    if a.height != b.height:
        return f"heights differ: {a.height} vs {b.height}"
    for name in a.columns:
        left, right = a[name].to_list(), b[name].to_list()
        for i, (x, y) in enumerate(zip(left, right, strict=True)):
            if x != y and not (isinstance(x, float) and isinstance(y, float) and x != x and y != y):
                return f"column {name!r} row {i}: {x!r} vs {y!r}"
    return "frames differ"


def _schema_ok(frame: pl.DataFrame, schema: dict[str, Any]) -> bool:
    return dict(frame.schema) == dict(schema)


def shape_violations(corpus: Corpus) -> list[Violation]:
    """Schemas, closed vocabularies and the listing-error consistency of a read corpus."""
    out = []
    for name, frame, schema in (
        ("sessions", corpus.sessions, CORPUS_SESSION_SCHEMA),
        ("descriptors", corpus.descriptors, DESCRIPTOR_SCHEMA),
        ("problems", corpus.problems, PROBLEM_SCHEMA),
        ("events", corpus.events, EVENT_SCHEMA),
    ):
        if not _schema_ok(frame, schema):
            out.append(Violation("shape", f"{name} schema {dict(frame.schema)} is not the declared one"))
    bad = set(corpus.sessions["verdict"].to_list()) - VERDICTS
    bad |= set(corpus.problems["severity"].to_list()) - SEVERITIES
    bad |= set(corpus.problems["scope"].to_list()) - SCOPES
    if bad:
        out.append(Violation("shape", f"values outside the vocabularies: {sorted(map(str, bad))}"))
    paths = corpus.sessions["path"].to_list()
    if len(paths) != len(set(paths)):
        out.append(Violation("shape", "two sessions rows share a path"))
    fails = bool(corpus.problems["fails_listing"].any()) if corpus.problems.height else False
    if fails != (corpus.listing_error is not None):
        out.append(
            Violation(
                "shape", f"problems.fails_listing={fails} but listing_error={corpus.listing_error!r} (inconsistent)"
            )
        )
    return out


# --------------------------------------------------------------------------- accounting and containment


def fs_text(path: str) -> str:
    """A path as lossless text: undecodable name bytes (surrogate-escaped) as ``\\xNN``."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    return path


def undecodable(path: str) -> bool:
    """Whether a path holds name bytes that are not UTF-8."""
    return fs_text(path) != path


def unaccounted(root: Path, corpus: Corpus) -> list[str]:
    """Entries under ``root`` that no sessions/problems path accounts for.

    An entry is accounted when its path (or its lossless text, see :func:`fs_text`)
    is a ``sessions.path`` or ``problems.path``, when an ancestor is (the
    ancestor's row covers its content), or when it is a directory on the way to one.
    """
    accounted = {p for p in corpus.sessions["path"].to_list() + corpus.problems["path"].to_list() if p is not None}
    on_the_way: set[str] = set()
    for path in accounted:
        parent = os.path.dirname(path)
        while parent and parent not in on_the_way and parent != os.path.dirname(parent):
            on_the_way.add(parent)
            parent = os.path.dirname(parent)
    missing = []
    stack = [str(root)]
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as iterator:
                entries = list(iterator)
        except OSError:
            continue
        for entry in entries:
            names = {entry.path, fs_text(entry.path)}
            if names & accounted:
                continue
            if names & on_the_way:
                stack.append(entry.path)
                continue
            missing.append(entry.path)
    return sorted(missing, key=os.fsencode)


def outside_rows(root: Path, corpus: Corpus) -> list[str]:
    """Sessions rows whose real path is not under the root's real path."""
    top = os.path.realpath(root)
    out = []
    for path in corpus.sessions["path"].to_list():
        real = os.path.realpath(path)
        if not (real == top or real.startswith(top + os.sep)):
            out.append(f"{path!r} -> {real!r}")
    return out


# --------------------------------------------------------------------------- the API calls


def _api(module: str, attribute: str) -> Callable[..., Any]:
    found = getattr(importlib.import_module(module), attribute)
    assert callable(found), f"{module}.{attribute} is not callable"
    return found  # type: ignore[no-any-return]


def optional_apis() -> dict[str, Callable[..., Any] | None]:
    """The output entry points (report, gate, notebook HTML) the invariants exercise.

    Every one is required (a missing one is an ImportError, never a silent skip); the
    values are typed optional so a caller can switch one off for a focused check.
    """
    return {
        "render_report": _api("subagent_catalog.views.report", "render_report"),
        "summary_text": _api("subagent_catalog.views.summary_text", "summary_text"),
        "run_checks": _api("subagent_catalog.analysis.gate", "run_checks"),
        "format_text": _api("subagent_catalog.views.gate_format", "format_text"),
        "format_markdown": _api("subagent_catalog.views.gate_format", "format_markdown"),
        "format_json": _api("subagent_catalog.views.gate_format", "format_json"),
        "corpus_html": _api("subagent_catalog.frames.display", "corpus_html"),
    }


def _parents(corpus: Corpus, limit: int = 6) -> list[Any]:
    listed = corpus.sessions.filter(pl.col("listed"))
    ids = [i for i in listed["session_id"].to_list() if i is not None][:limit]
    parents = [p for p in listed["parent_session"].to_list() if p is not None][:limit]
    return list(dict.fromkeys([*ids, *parents, "no-such-parent", 5, None]))


def _expect_listing(corpus: Corpus, name: str, call: Callable[[], Any], trace_parent: bool = False) -> list[Violation]:
    try:
        call()
    except CatalogError as error:
        if error.code == "PERSISTENCE_LIST_FAILED" and corpus.listing_error is not None:
            return []
        if trace_parent and error.code in TRACE_CODES and corpus.listing_error is None:
            return []
        return [crash(name, error)]
    except Exception as error:
        return [crash(name, error)]
    if corpus.listing_error is not None:
        return [Violation("listing-error-not-raised", f"{name} returned although listing_error is set")]
    return []


def catalog_violations(corpus: Corpus) -> list[Violation]:
    """Every catalog entry point over a corpus: documented outcomes only, frames in shape."""
    out: list[Violation] = []
    results: dict[str, pl.DataFrame] = {}

    def keep(name: str, fn: Callable[[], pl.DataFrame]) -> Callable[[], None]:
        def run() -> None:
            results[name] = fn()

        return run

    for semantics in ("projection", "trace"):
        every = partial(catalog, corpus, semantics=semantics)
        below = partial(catalog_descendants, corpus, semantics=semantics)
        out += _expect_listing(corpus, f"catalog[{semantics}]", keep(f"catalog-{semantics}", every))
        out += _expect_listing(corpus, f"catalog_descendants[{semantics}]", keep(f"desc-{semantics}", below))
    out += _expect_listing(corpus, "deviations", keep("deviations", partial(deviations, corpus)))
    for parent in _parents(corpus):
        for scope in ("children", "descendants"):
            text = partial(list_agents_text, corpus, parent, scope=scope)
            out += _expect_listing(corpus, f"list_agents_text[{scope}]", text)
        trace = partial(list_agents_text, corpus, parent, semantics="trace")
        out += _expect_listing(corpus, "list_agents_text[trace]", trace, trace_parent=True)
    first = _parents(corpus, 1)[0]
    live = {first: "running"} if isinstance(first, str) else None
    out += _expect_listing(corpus, "list_children", partial(list_children, corpus, first))
    out += _expect_listing(corpus, "list_descendants", partial(list_descendants, corpus, first))
    out += _expect_listing(corpus, "catalog[live]", partial(catalog, corpus, live=live))
    for name, frame in results.items():
        if name.startswith("catalog"):
            schema = {**CATALOG_EXTRA, **ROW_SCHEMA}
        elif name.startswith("desc"):
            schema = {"root": pl.String, "root_json": pl.String, **ROW_SCHEMA}
        else:
            schema = DEVIATION_SCHEMA
        if not _schema_ok(frame, schema):
            out.append(Violation("shape", f"{name} schema {dict(frame.schema)}"))
        if name != "deviations":
            kinds = set(frame["kind"].to_list()) - ROW_KINDS - ({"error"} if name.endswith("trace") else set())
            reasons = set(frame["reason"].to_list()) - REASONS - (TRACE_CODES if name.endswith("trace") else set())
            if kinds or reasons:
                out.append(Violation("shape", f"{name}: unexpected kinds {kinds} / reasons {reasons}"))
    return out


SCRIPT_TAG = re.compile(r"<script", re.IGNORECASE)
HANDLER_MARKUP = re.compile(r"<(?:img|svg|iframe|object|embed|a|body|style)\b[^>]*\bon[a-z]+\s*=", re.IGNORECASE)
_BASELINE: dict[str, int] = {}


def _baseline_scripts(render: Callable[..., Any]) -> int:
    if "report" not in _BASELINE:
        import tempfile

        with tempfile.TemporaryDirectory() as empty:
            _BASELINE["report"] = len(SCRIPT_TAG.findall(str(render(read_fresh(empty)))))
    return _BASELINE["report"]


def markup_violations(html: str, *, expected_scripts: int, what: str) -> list[Violation]:
    """``<script`` tags beyond the page's own, handler attributes, markup inside the JSON blob."""
    out = []
    scripts = len(SCRIPT_TAG.findall(html))
    if scripts != expected_scripts:
        out.append(Violation("inert-html", f"{what}: {scripts} <script tags, the page itself has {expected_scripts}"))
    if HANDLER_MARKUP.search(html):
        out.append(Violation("inert-html", f"{what}: event-handler markup {HANDLER_MARKUP.search(html)!r}"))
    for blob in re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.DOTALL):
        if "<" in blob:
            out.append(Violation("inert-html", f"{what}: raw '<' inside a JSON script blob"))
    return out


def report_violations(corpus: Corpus, apis: dict[str, Callable[..., Any] | None]) -> list[Violation]:
    """The report page and summary (when the module exists): no crash, inert markup, no raw ESC."""
    out: list[Violation] = []
    render = apis["render_report"]
    if render is not None:
        try:
            html = render(corpus)
        except Exception as error:
            out.append(crash("render_report", error))
        else:
            out += markup_violations(html, expected_scripts=_baseline_scripts(render), what="report")
    summary = apis["summary_text"]
    if summary is not None:
        try:
            text = summary(corpus)
        except Exception as error:
            out.append(crash("summary_text", error))
        else:
            if "\x1b" in text:
                out.append(Violation("inert-terminal", "summary_text holds a raw ESC from data"))
    return out


def gate_violations(corpus: Corpus, apis: dict[str, Callable[..., Any] | None]) -> list[Violation]:
    """``gate.run_checks`` and its formatters (when the module exists)."""
    run = apis["run_checks"]
    if run is None:
        return []
    out: list[Violation] = []
    try:
        result = run(corpus)
    except Exception as error:
        return [crash("run_checks", error)]
    for name in ("format_text", "format_markdown", "format_json"):
        formatter = apis[name]
        if formatter is None:
            continue
        try:
            text = formatter(result)
        except Exception as error:
            out.append(crash(name, error))
            continue
        if name == "format_text" and "\x1b" in text:
            out.append(Violation("inert-terminal", "gate format_text holds a raw ESC from data"))
    return out


def notebook_violations(
    corpus: Corpus, apis: dict[str, Callable[..., Any] | None], *, stable: bool = True
) -> list[Violation]:
    """``repr``, the notebook HTML and ``scan_events`` of a corpus (compared with ``events`` when ``stable``)."""
    out: list[Violation] = []
    try:
        repr(corpus)
    except Exception as error:
        out.append(crash("repr", error))
    html_fn = apis["corpus_html"]
    if html_fn is not None:
        try:
            html = str(html_fn(corpus))
        except Exception as error:
            out.append(crash("corpus_html", error))
        else:
            out += markup_violations(html, expected_scripts=0, what="notebook html")
    try:
        lazy = scan_events(corpus).collect()
    except Exception as error:
        out.append(crash("scan_events", error))
    else:
        difference = frame_difference(lazy, corpus.events) if stable else None
        if difference is not None:
            out.append(Violation("parity", f"scan_events differs from corpus.events: {difference}"))
    return out


# --------------------------------------------------------------------------- reads


def _supports_cache() -> bool:
    import inspect

    return "cache" in inspect.signature(read_corpus).parameters


def read_fresh(root: str | Path, **options: Any) -> Corpus:
    """``read_corpus`` that reads every file (the facts cache off, when the library has one)."""
    if _supports_cache():
        options.setdefault("cache", False)
    return read_corpus(root, **options)


def cache_violations(fresh: Corpus, root: Path, directory: Path) -> list[Violation]:
    """A read that fills the facts cache and a read served from it both give the fresh read's frames."""
    if not _supports_cache():
        return []
    out = []
    for attempt in ("filling", "cached"):
        try:
            again = read_corpus(root, jobs=1, cache=str(directory))
        except Exception as error:
            return [crash(f"read_corpus[cache, {attempt}]", error)]
        for name in ("sessions", "descriptors", "problems"):
            difference = frame_difference(getattr(fresh, name), getattr(again, name))
            if difference is not None:
                out.append(Violation("cache", f"{attempt} read, {name}: {difference}"))
        if again.listing_error != fresh.listing_error:
            out.append(Violation("cache", f"{attempt} read: listing_error {again.listing_error!r}"))
    return out


# --------------------------------------------------------------------------- parity


@contextlib.contextmanager
def parallel_threshold(value: int) -> Iterator[None]:
    """Temporarily set ``corpus.PARALLEL_THRESHOLD``."""
    previous = corpus_module.PARALLEL_THRESHOLD
    corpus_module.PARALLEL_THRESHOLD = value
    try:
        yield
    finally:
        corpus_module.PARALLEL_THRESHOLD = previous


def parity_violations(serial: Corpus, root: Path) -> list[Violation]:
    """A jobs=2 read (every root parallel) gives the serial read's frames."""
    try:
        with parallel_threshold(1):
            parallel = read_fresh(root, jobs=2, events=True)
    except Exception as error:
        return [crash("read_corpus[jobs=2]", error)]
    out = []
    for name in ("sessions", "descriptors", "problems", "events"):
        difference = frame_difference(getattr(serial, name), getattr(parallel, name))
        if difference is not None:
            out.append(Violation("parity", f"{name}: {difference}"))
    for name in ("listing_error", "listing_error_path", "compression"):
        if getattr(serial, name) != getattr(parallel, name):
            out.append(Violation("parity", f"{name}: {getattr(serial, name)!r} vs {getattr(parallel, name)!r}"))
    return out


# --------------------------------------------------------------------------- live writers


class LiveWriter(threading.Thread):
    """Appends turn records to a log in a loop (whole records, or each in two writes).

    ``pause`` seconds between records and at most ``limit`` records keep the log's growth
    bounded while still landing many appends inside every read.
    """

    def __init__(self, spec: LiveWriterSpec, *, pause: float = 0.0005, limit: int = 20_000) -> None:
        super().__init__(daemon=True)
        self.spec = spec
        self.pause = pause
        self.limit = limit
        self.stop = threading.Event()
        self.appended = 0
        self.error: BaseException | None = None

    def _record(self) -> bytes:
        seq, time_ms = self.spec.next_seq, self.spec.next_time
        kind = "turn/start" if seq % 2 == 0 else "turn/end"
        turn = 10_000 + seq // 2
        data: dict[str, Any] = (
            {"turn": turn} if kind == "turn/start" else {"turn": turn, "reason": {"kind": "completed"}}
        )
        self.spec.next_seq += 1
        self.spec.next_time += 1
        line = orjson.dumps({"type": kind, "seq": seq, "time": time_ms, "data": data}) + b"\n"
        return compress_frame(line) if self.spec.compression == "zstd" else line

    def run(self) -> None:
        with exempt_thread():
            try:
                fd = os.open(self.spec.path, os.O_WRONLY | os.O_APPEND)
                try:
                    while not self.stop.is_set() and self.appended < self.limit:
                        record = self._record() + (self._record() if self.spec.compression == "none" else b"")
                        if self.spec.kind == "whole":
                            os.write(fd, record)
                        else:
                            cut = max(1, len(record) // 2)
                            os.write(fd, record[:cut])
                            time.sleep(0.0002)
                            os.write(fd, record[cut:])
                        self.appended += 1
                        if self.pause:
                            time.sleep(self.pause)
                finally:
                    os.close(fd)
            except BaseException as error:  # reported by the checker
                self.error = error

    def finish(self) -> None:
        """Stop after the current record (the log then ends on a whole record)."""
        self.stop.set()
        self.join(30)


def written_events(path: str, compression: Any) -> list[dict[str, Any]]:
    """Every complete event of a healthy live log, parsed independently of the library.

    A record the writer is still appending (no newline yet) is not counted.
    """
    with open(path, "rb") as handle:
        text = plaintext(handle.read(), compression) or b""
    return [orjson.loads(line) for line in split_lines(text)[1:] if line.endswith(b"\n")]


def live_violations(corpus: Corpus, spec: LiveWriterSpec, stats: Counter[str]) -> list[Violation]:
    """A log read while appended to: a consistent prefix, or unavailable as ``unstable-file``."""
    rows = corpus.sessions.filter(pl.col("path") == spec.path)
    if rows.height != 1:
        return [Violation("live", f"{spec.path!r}: {rows.height} sessions rows")]
    row = rows.row(0, named=True)
    if row["read_cause"] == "unstable-file":
        stats["live:unstable-file"] += 1
        return []
    stats[f"live:{row['verdict']}"] += 1
    if row["verdict"] not in ("ok", "torn-tail"):
        return [Violation("live", f"{spec.kind} writer: verdict {row['verdict']} cause {row['read_cause']}")]
    expected = written_events(spec.path, spec.compression)
    got = corpus.events.filter(pl.col("session_id") == spec.session_id)
    if got.height > len(expected) or got.height != row["event_count"]:
        return [Violation("live", f"{got.height} events read, {len(expected)} written, count {row['event_count']}")]
    for (seq, kind, data), want in zip(got.select("seq", "type", "data").iter_rows(), expected, strict=False):
        if seq != want["seq"] or kind != want["type"] or orjson.loads(data) != want["data"]:
            return [Violation("live", f"event seq {seq} is not the record written there (half-parsed?)")]
    return []


# --------------------------------------------------------------------------- one case


def check_case(
    case: Case,
    *,
    report: bool = True,
    parity: bool = True,
    cache: bool = True,
    timeout: float = 120.0,
    apis: dict[str, Callable[..., Any] | None] | None = None,
) -> Outcome:
    """Read one case and check every invariant; never raises for a library failure."""
    started = time.monotonic()
    outcome = Outcome()
    apis = optional_apis() if apis is None else apis
    for name in ("render_report", "run_checks"):
        if apis.get(name) is None:
            outcome.notes.append(f"{name} not available: its invariant is skipped")
    if not report:
        outcome.notes.append("report rendering not sampled for this case")
    root, outside = case.root, case.outside
    before = snapshot(root)
    before_outside = snapshot(outside)
    live_paths = {spec.path for spec in case.live}
    writers = [LiveWriter(spec) for spec in case.live]
    corpus: Corpus | None = None
    try:
        with deadline(timeout), guarded([root], [outside]) as hits:
            for writer in writers:
                writer.start()
            try:
                corpus = read_fresh(root, jobs=1, events=True)
            except Exception as error:
                outcome.violations.append(crash("read_corpus", error))
            finally:
                for writer in writers:
                    writer.finish()
            if corpus is not None:
                outcome.stats.update(f"verdict:{v}" for v in corpus.sessions["verdict"].to_list())
                outcome.stats["listing-fails" if corpus.listing_error else "listing-ok"] += 1
                outcome.violations += shape_violations(corpus)
                outcome.violations += catalog_violations(corpus)
                found = notebook_violations(corpus, apis, stable=not writers)
                if any(undecodable(path) for path in before):
                    for violation in found:  # the lazy loaders re-open logs by the frames' (mangled) paths
                        if violation.invariant == "parity":
                            violation.invariant = "parity:undecodable-name"
                outcome.violations += found
                outcome.violations += gate_violations(corpus, apis)
                if report:
                    outcome.violations += report_violations(corpus, apis)
                outcome.violations += [Violation(name, detail) for name, detail in times.frame_violations(corpus)]
                outcome.stats["times:out-of-range"] += times.hostile_rows(corpus).height
                if not writers:
                    outcome.violations += [crash(name, error) for name, error in times.view_violations(corpus)]
                for writer in writers:
                    if writer.error is not None:
                        outcome.notes.append(f"live writer failed: {writer.error!r}")
                    outcome.violations += live_violations(corpus, writer.spec, outcome.stats)
                if parity and not writers:
                    outcome.violations += parity_violations(corpus, root)
                if cache and not writers:
                    outcome.violations += cache_violations(corpus, root, case.workdir / "facts-cache")
        for hit in hits:
            outcome.violations.append(Violation("read-only", hit))
    except ForbiddenAccess as error:
        outcome.violations.append(Violation("read-only", str(error), _where(error)))
    except CaseTimeout as error:
        outcome.violations.append(Violation("hang", str(error), _where(error)))
    finally:
        for writer in writers:
            writer.finish()
    changed = snapshot_diff(before, snapshot(root), live_paths) + snapshot_diff(
        before_outside, snapshot(outside), set()
    )
    if changed:
        outcome.violations.append(Violation("read-only", f"{len(changed)} entries changed: {changed[:3]}"))
    if corpus is not None:
        missing = unaccounted(root, corpus)
        plain = [m for m in missing if not undecodable(m)]
        odd = [m for m in missing if undecodable(m)]
        if plain:
            outcome.violations.append(Violation("accounted", f"{len(plain)} entries unaccounted: {plain[:5]!r}"))
        if odd:
            detail = f"{len(odd)} entries with undecodable names unaccounted: {odd[:5]!r}"
            outcome.violations.append(Violation("accounted:undecodable-name", detail))
        escaped = outside_rows(root, corpus)
        if escaped:
            outcome.violations.append(Violation("inside-root", f"sessions rows outside the root: {escaped[:3]}"))
    for violation in outcome.violations:  # while the corpus still exists (some predicates look at it)
        violation.known = known_issue(violation)
    outcome.seconds = time.monotonic() - started
    return outcome


# --------------------------------------------------------------------------- known, reported issues


def _crash_in(where: str, error: str, *, via: str = "") -> Callable[[Violation], bool]:
    def matches(violation: Violation) -> bool:
        head = violation.detail.split(":", 1)[0].rsplit(".", 1)[-1]
        return (
            violation.invariant.startswith("crash:")
            and violation.where == where
            and head == error
            and via in violation.detail
        )

    return matches


# Violations whose root cause is reported with a named xfail regression test in
# tests/test_regressions.py, as (test name, predicate), e.g.
# ("test_x", _crash_in("logread.py:_dump", "RecursionError")). The fast tier tolerates them and the
# runner lists them as known; remove an entry when the fix lands and the test is un-xfailed.
KNOWN_ISSUES: list[tuple[str, Callable[[Violation], bool]]] = []


def known_issue(violation: Violation) -> str | None:
    """The regression test that already covers this violation, if any."""
    for test, matches in KNOWN_ISSUES:
        if matches(violation):
            return test
    return None


# --------------------------------------------------------------------------- memory probe

PROBE = """
import json, os, resource, sys, collections
os.environ["SUBAGENT_CATALOG_CACHE"] = "off"
import pyarrow
pyarrow.array([0])  # the first pa.array imports pandas when it is installed: a fixed cost, in the baseline too
from subagent_catalog import read_corpus, catalog
from subagent_catalog.errors import CatalogError
corpus = read_corpus(sys.argv[1], jobs=1)
try:
    catalog(corpus)
except CatalogError:
    pass
peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
print(json.dumps({
    "peak_kib": peak,
    "verdicts": dict(collections.Counter(corpus.sessions["verdict"].to_list())),
    "problems": dict(collections.Counter(corpus.problems["kind"].to_list())),
    "bytes": int(corpus.sessions["bytes"].sum() or 0),
}))
"""


def peak_rss(root: Path, *, timeout: float = 1800.0) -> dict[str, Any]:
    """Read a corpus in a fresh interpreter; its peak RSS (KiB) and what it found."""
    import json
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(root)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(Path(__file__).resolve().parents[2]),
        check=False,
    )
    if done.returncode != 0:
        return {"error": done.stderr[-2000:], "returncode": done.returncode}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --------------------------------------------------------------------------- unreadable entries


def unreadable_summary(root: str | Path) -> dict[str, Any]:
    """Read a root and summarise what matters for unreadable entries (JSON-ready)."""
    try:
        corpus = read_fresh(root, compression="none", jobs=1)
    except Exception as error:
        return {"error": type(error).__name__, "message": str(error)}
    violations = shape_violations(corpus) + catalog_violations(corpus)
    return {
        "causes": dict(corpus.sessions.select("path", "read_cause").iter_rows()),
        "kinds": sorted(set(corpus.problems["kind"].to_list())),
        "listing_error": corpus.listing_error is not None,
        "unaccounted": unaccounted(Path(root), corpus),
        "violations": [f"{v.invariant}: {v.detail[:200]}" for v in violations],
    }


UNREADABLE_PROBE = (
    "import json, sys; from tests.fuzz.invariants import unreadable_summary; "
    "print(json.dumps(unreadable_summary(sys.argv[1])))"
)


def unreadable_summary_without_privilege(root: Path) -> dict[str, Any] | None:
    """:func:`unreadable_summary` in a child that cannot bypass permission bits.

    Tests run as root, for whom ``chmod 000`` does not bite; the child keeps
    uid 0 but drops ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH`` from its
    bounding set (``setpriv``). None when that is not possible here.
    """
    import json
    import shutil
    import subprocess

    if os.geteuid() != 0:
        return unreadable_summary(root)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    done = subprocess.run(
        [
            setpriv,
            "--bounding-set",
            "-dac_override,-dac_read_search",
            sys.executable,
            "-c",
            UNREADABLE_PROBE,
            str(root),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(Path(__file__).resolve().parents[2]),
        check=False,
    )
    if done.returncode != 0:
        return None if "setpriv" in done.stderr else {"error": "child failed", "message": done.stderr[-2000:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
