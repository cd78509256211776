"""Sources: a read corpus or an opened archive, taken alike by every function, view and command.

The protocol has five parts:

* ``Source = Corpus | Archive``: what a function that reads a corpus accepts.
* ``source_corpus(source)``: the corpus frames (``sessions``, ``descriptors``,
  ``problems``) of either; an archive's are collected once
  (``Archive.to_corpus``, cached on the archive) and its events stay in the
  archive until a function needs one log's (``Corpus.log_events``) or all.
* ``source_frames(source, without=...)``: the frames of a view that reads
  only some ``sessions`` columns (an archive's collected without the
  others), and ``listing_source(source)``: what it hands the catalog
  functions (an archive itself, read out of core).
* ``source_archive(source)``: the archive behind a source (the archive itself,
  or the one an ``ArchiveCorpus`` was collected from), so a function that can
  read out of core (the run tables, search, SQL) scans its Parquet files
  instead of frames in memory; ``origin_archive(source)`` also gives the
  archive a window of one was cut from.
* ``input_kind(location)``: the input rule: an object-store URL, or a local
  path holding ``manifest.json``, is an archive; anything else a corpus root
  (a ``file://`` URL is the local path it names).

``empty_source`` says when a source holds nothing to report on: no session
file and no failing listing (a wrong path, an unmounted volume, the wrong
``compression``). Events: an archive exported without them reads a log's
events from its recorded corpus root when that root is here, and otherwise
raises an ``ArchiveError`` saying so (``events_available``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Literal

from subagent_catalog.errors import CorpusLevelError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.discover import LOG_NAMES
from subagent_catalog.store.archive import Archive, ArchiveCorpus
from subagent_catalog.store.layout import MANIFEST, ArchiveError, is_url
from subagent_catalog.store.location import local_location

Source = Corpus | Archive
"""A read corpus (``read_corpus``) or an opened archive (``open_archive``)."""

InputKind = Literal["auto", "corpus", "archive"]
"""How to read an input location: by the input rule (``auto``), or forced."""

NO_EVENTS_HINT = "re-export with events (export --events, export_archive(..., events=True)), or read the corpus root"


def input_kind(location: str | os.PathLike[str]) -> Literal["corpus", "archive"]:
    """How the input rule reads a location: ``archive`` for an object-store URL or a path holding ``manifest.json``.

    A ``file://`` URL is the local path it names (``store.location.local_location``).

    A local ``manifest.json`` counts whatever it is (a link, a directory):
    opening it then says what is wrong, rather than reading the directory
    as an empty corpus.

    Examples:
        >>> import tempfile
        >>> input_kind("s3://bucket/archive"), input_kind(tempfile.mkdtemp())
        ('archive', 'corpus')
    """
    path = local_location(os.fspath(location))
    if is_url(path) or os.path.lexists(os.path.join(path, MANIFEST)):
        return "archive"
    return "corpus"


def source_corpus(source: Source) -> Corpus:
    """The corpus frames of a source: a corpus itself, or an archive's collected (once; events left out).

    Raises:
        TypeError: neither a ``Corpus`` nor an ``Archive``.
        ArchiveError: an archive's data file fails its checks or cannot be read.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.store.export import export_archive
        >>> from subagent_catalog.store.archive import open_archive
        >>> out = tempfile.mkdtemp()
        >>> _ = export_archive(tempfile.mkdtemp(), out, jobs=1)
        >>> archive = open_archive(out)
        >>> source_corpus(archive) is source_corpus(archive), source_corpus(archive).sessions.height
        (True, 0)
    """
    if isinstance(source, Corpus):
        return source
    if isinstance(source, Archive):
        return source.to_corpus()
    raise TypeError(
        f"expected a Corpus or an Archive, not {type(source).__name__} "
        "(read one with read_corpus(root) or open_archive(path), or open_source(location))"
    )


def source_frames(source: Source, *, without: Iterable[str] = ()) -> Corpus:
    """The frames a view reads: a corpus itself, or an archive's without the ``sessions`` columns named.

    A view that reads a few of the ``sessions`` columns names the others, so
    a large archive is not collected whole (``Archive.frames``); a corpus
    already in memory is returned as it is.

    Raises:
        TypeError: neither a ``Corpus`` nor an ``Archive``.
        ArchiveError: an archive's data file fails its checks or cannot be read.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.store.export import export_archive
        >>> from subagent_catalog.store.archive import open_archive
        >>> out = tempfile.mkdtemp()
        >>> _ = export_archive(tempfile.mkdtemp(), out, jobs=1)
        >>> "header_json" in source_frames(open_archive(out), without=["header_json"]).sessions.columns
        False
    """
    if isinstance(source, Archive):
        return source.frames(without=without)
    return source_corpus(source)


def session_count(source: Source) -> int:
    """How many session files a source holds (an archive's from its manifest, nothing read).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> session_count(read_corpus(tempfile.mkdtemp()))
        0
    """
    if isinstance(source, Archive):
        return int(source.manifest["tables"]["sessions"].get("rows") or 0)
    return source_corpus(source).sessions.height


def listing_source(source: Source) -> Source:
    """What a view hands the catalog functions: an archive itself (read out of core), else the corpus.

    ``catalog``, ``deviations`` and ``list_agents_text`` give the same rows
    over an archive as over its collected frames, reading only the columns
    they need a batch at a time.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus(tempfile.mkdtemp())
        >>> listing_source(corpus) is corpus
        True
    """
    return source if isinstance(source, Archive) else source_corpus(source)


def source_archive(source: Source | Any) -> Archive | None:
    """The archive behind a source: the archive itself, or the one an ``ArchiveCorpus`` came from.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> source_archive(read_corpus(tempfile.mkdtemp())) is None
        True
    """
    if isinstance(source, Archive):
        return source
    if isinstance(source, ArchiveCorpus):
        return source._archive
    return None


def origin_archive(source: Source | Any) -> Archive | None:
    """The archive a source's frames come from: ``source_archive``, or the archive a window was cut from.

    A window of an archive (``Window.corpus``, ``subset``) holds no archive of
    its own (its searches and listings must not scan the whole archive), but
    what its frames leave out is read from the archive it came from.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> origin_archive(read_corpus(tempfile.mkdtemp())) is None
        True
    """
    if isinstance(source, ArchiveCorpus):
        return source.origin
    return source_archive(source)


def protected_roots(source: Source) -> list[str]:
    """The local directories nothing may be written into for a source (``outputs.check_output``'s ``protected``).

    A corpus's root (and where its logs are read), or an archive's directory
    and its recorded corpus root (a window of an archive: the archive's).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> root = tempfile.mkdtemp()
        >>> protected_roots(read_corpus(root)) == [root]
        True
    """
    archive = origin_archive(source)
    paths = [archive.path, archive.root, archive.log_root] if archive is not None else [source.root, source.log_root]
    return [path for path in dict.fromkeys(paths) if not is_url(path)]


def events_available(source: Source) -> bool:
    """Whether a source can give events: a corpus always; an archive with an events table, or its root here.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> events_available(read_corpus(tempfile.mkdtemp()))
        True
    """
    archive = source_archive(source)
    if archive is None:
        return True
    return archive.has_events or (not is_url(archive.log_root) and os.path.isdir(archive.log_root))


def require_events(source: Source, *, needed_for: str) -> None:
    """Raise when a source cannot give the events a function needs (an archive without them, its root gone).

    Raises:
        ArchiveError: the archive holds no events table and its corpus root is not here.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> require_events(read_corpus(tempfile.mkdtemp()), needed_for="a transcript")
    """
    archive = source_archive(source)
    if archive is not None and not events_available(source):
        raise ArchiveError(
            f"the archive {archive.path!r} holds no events table, which {needed_for} reads, "
            f"and its corpus root {archive.root!r} is not here",
            hint=NO_EVENTS_HINT,
        )


def misplaced_archive(archive: Archive) -> CorpusLevelError | None:
    """The error of an archive exported from a project folder (as exports did before they refused one), or ``None``.

    Told from the manifest alone: no session, and the listing failing on a log
    directly inside a folder of the exported root (``<root>/<session>/session.jsonl``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.store.export import export_archive
        >>> from subagent_catalog.store.archive import open_archive
        >>> out = tempfile.mkdtemp()
        >>> _ = export_archive(tempfile.mkdtemp(), out, jobs=1)
        >>> misplaced_archive(open_archive(out)) is None
        True
    """
    path = archive.listing_error_path
    if archive.manifest.get("row_counts", {}).get("sessions") or not isinstance(path, str):
        return None
    root = os.path.normpath(archive.root)
    if os.path.basename(path) not in LOG_NAMES or os.path.dirname(os.path.dirname(os.path.normpath(path))) != root:
        return None
    meant = os.path.normpath(os.path.join(root, os.pardir))
    return CorpusLevelError(
        f"the archive {archive.path!r} holds no session: it was exported from {archive.root!r}, a project folder",
        level="project",
        corpus_root=meant,
        hint=f"re-export it from the corpus root, its parent: {meant!r}",
    )


def empty_source(source: Source) -> str | None:
    """Why a source holds nothing to report on (no session file, no failing listing), or ``None``.

    An archive answers from its manifest's row counts (nothing is read).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> empty_source(read_corpus(tempfile.mkdtemp(), cache=False)).startswith("no session log under")
        True
    """
    if isinstance(source, Archive):
        counts = source.manifest.get("row_counts", {})
        if counts.get("sessions") or source.listing_error is not None:
            return None
        return f"the archive {source.path!r} holds no session (it was exported from {source.root!r}, then empty)"
    if source.sessions.height or source.listing_error is not None:
        return None  # logs of the other encoding fail the listing, which then says why
    return f"no session log under {source.root!r} and no archive manifest ({MANIFEST})"
