"""``read_corpus``: a session root in, Polars frames out; ``open_source``: a corpus root or an archive.

The reader walks the root as upstream's ``list()`` does, reads every log
once (in parallel across files), and accounts for every entry under the
root as a ``sessions`` row or a ``problems`` row. Bad data never raises.
``open_source`` applies the input rule (``store.source``): an archive
location is opened (nothing read yet), anything else read as a corpus root.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal

from subagent_catalog.bounds import WORKERS
from subagent_catalog.errors import CorpusRootError, EmptySourceError
from subagent_catalog.frames.assemble import FsProbes, assemble
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.costs import with_costs
from subagent_catalog.frames.source import Source
from subagent_catalog.prices import Prices, PriceTable, price_table
from subagent_catalog.progress import Progress, default_progress, quiet
from subagent_catalog.read.discover import SessionFile, discover
from subagent_catalog.read.logread import LogFacts
from subagent_catalog.read.paths import (
    Compression,
    CompressionOption,
)
from subagent_catalog.read.pool import read_all
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.labels import Labels, session_labels
from subagent_catalog.store.layout import is_url
from subagent_catalog.store.location import local_location
from subagent_catalog.store.source import InputKind, input_kind, inputs_below, misplaced_archive

if TYPE_CHECKING:
    from subagent_catalog.store.cache import FactsCache


def read_corpus(
    root: str | os.PathLike[str],
    *,
    compression: CompressionOption = "auto",
    events: bool = False,
    progress: Progress | None = None,
    jobs: int | None = None,
    cache: bool | str | os.PathLike[str] = True,
    prices: Prices | PriceTable | None = None,
    labels: str | os.PathLike[str] | None = None,
) -> Corpus:
    """Read a dsh session root into frames.

    Args:
        root: a directory of ``<project>/<session>/session.jsonl[.zstd]``.
        compression: the encoding to read the root as (``auto``: the one
            its logs use; a root holding both fails upstream's listing).
        events: also load the events frame now (otherwise it loads on
            first use of ``corpus.events``).
        progress: called as files are read (by default ``progress.default_progress()``: once
            ``subagent_catalog.widgets`` is imported, in an interactive notebook a bar that shows
            once the read takes a second; quiet elsewhere, in CI and with
            ``SUBAGENT_CATALOG_PROGRESS=off``).
        jobs: worker processes (default: all cores; small roots read serially).
        cache: reuse per-file facts of unchanged files from the facts cache
            (outside the root: ``$SUBAGENT_CATALOG_CACHE``, else
            ``$XDG_CACHE_HOME/subagent_catalog``, else
            ``~/.cache/subagent_catalog``); a path names the cache directory;
            ``False`` (or ``SUBAGENT_CATALOG_CACHE=off`` with the default)
            reads every file. When the whole walk and the code are unchanged
            (``store.frames_cache``), the frames themselves are reused.
        prices: the price table ``sessions.cost_usd`` is computed with (default:
            ``genai-prices``' offline table; a mapping or a TOML/CSV file extends it, see ``prices``).
        labels: a label store (``store.labels.Labels``' file, outside the root, existing): ``sessions`` gets a
            ``labels`` column, each session's labels by its id (an empty list when it has none).

    A root that holds no session log (and no listing failure) is an empty
    corpus: its ``problems`` hold one ``empty-root`` row (severity warning)
    that says so. A project folder or a session folder is no corpus root.

    Raises:
        CorpusRootError: the root is missing, not a directory or unreadable.
        CorpusLevelError: the root is a project folder or a session folder (no log at
            ``<root>/<project>/<session>/``); its ``corpus_root`` and hint name the root that was meant.
        LabelsError: the label store does not exist, lies under the root, is a link (symbolic, or a hard
            link of another file) or is not a label store.
        BoundError: ``jobs`` is not a number of workers (``bounds.WORKERS``: 1 to 1,024).

    Examples:
        >>> import tempfile
        >>> empty = read_corpus(tempfile.mkdtemp(), cache=False)
        >>> empty.sessions.height, empty.problems["kind"].to_list()
        (0, ['empty-root'])
        >>> read_corpus("data/sample/_no-cwd", cache=False)
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.CorpusLevelError: 'data/sample/_no-cwd' looks like a project folder (its folder ...
    """
    WORKERS.check("jobs", jobs, optional=True)
    if labels is not None:
        given = Labels(labels, protected=[root], must_exist=True)
        corpus = read_corpus(
            root, compression=compression, events=events, progress=progress, jobs=jobs, cache=cache, prices=prices
        )
        corpus.sessions = session_labels(corpus.sessions, given)
        return corpus
    if progress is None:
        auto = default_progress()  # in a notebook: a bar once the read takes a second
        if auto is not None:
            try:
                return read_corpus(
                    root, compression=compression, events=events, progress=auto, jobs=jobs, cache=cache, prices=prices
                )
            finally:
                auto.close()
    table = price_table(prices)  # a bad table fails before anything is read
    root_path = os.fspath(root)
    found = discover(root_path, compression)  # "auto": the encoding is chosen during the walk
    chosen = found.compression
    directory: Literal[False] | str | None = None if cache is True else False if cache is False else os.fspath(cache)
    if cache is True and os.environ.get("SUBAGENT_CATALOG_CACHE", "").lower() in ("off", "0", "no", "false"):
        directory = False  # None: the default cache directory; False: caching is off
    frames = store = None
    if directory is not False:
        from subagent_catalog.store.cache import FactsCache
        from subagent_catalog.store.frames_cache import FramesCache

        frames = FramesCache(found, directory=directory, prices=table.digest())
        if not events:
            hit = frames.load(jobs=jobs)
            if hit is not None:
                (progress or quiet)(len(found.files), len(found.files))
                return hit
        store = FactsCache.load(root_path, chosen, directory=directory)
    facts_list = _read_facts(
        found.files, chosen, want_events=events, jobs=jobs, progress=progress or quiet, store=store
    )
    probes = FsProbes()
    corpus = assemble(found, facts_list, jobs=jobs, want_events=events, probes=probes)
    corpus.sessions = with_costs(corpus.sessions, table)
    if store is not None:
        store.save()
    if frames is not None:
        frames.save(corpus, probes)
    return corpus


EMPTY_HINT = (
    "check the path (is it mounted?) and --compression: a corpus root holds <project>/<session>/session.jsonl "
    "or session.jsonl.zstd, an archive holds manifest.json (written by export)"
)


def open_source(
    location: str | os.PathLike[str],
    *,
    input: InputKind = "auto",
    storage_options: dict[str, Any] | None = None,
    compression: CompressionOption = "auto",
    jobs: int | None = None,
    progress: Progress | None = None,
    cache: bool | str | os.PathLike[str] = True,
    allow_empty: bool = False,
) -> Source:
    """Open an input by the input rule: an archive (a URL, or a path holding ``manifest.json``) or a corpus root.

    An archive is only opened (its manifest read and checked); its tables are
    scanned when a function reads them. A corpus root is read with
    ``read_corpus``.

    Args:
        location: a corpus root, an archive directory or an archive URL
            (``s3://``, ``gs://``); a ``file://`` URL is the local path it names
            (a corpus root or an archive directory, by the same rule).
        input: ``auto`` (the rule above), or ``corpus``/``archive`` to force one.
        storage_options: an archive URL's object-store options (see ``open_archive``).
        compression: the encoding a corpus root is read as.
        jobs: worker processes for reading a corpus root.
        progress: called as a corpus root's files are read.
        cache: ``read_corpus``'s facts cache setting.
        allow_empty: return an empty input instead of raising (``EmptySourceError``).

    Raises:
        CorpusRootError: a corpus root is missing or unreadable, or ``input="corpus"`` names a URL.
        CorpusLevelError: the location is a project or a session folder (whatever ``allow_empty``), or an
            archive exported from one; the hint names the corpus root that was meant.
        EmptySourceError: the input holds no session log and no archive manifest (or is an archive of no
            session), and ``allow_empty`` is false.
        ArchiveError: the archive's manifest is missing, unreadable or of another format; a ``file://`` URL
            that is not a plain local path, or is given storage options.
        BoundError: ``jobs`` is not a number of workers (``bounds.WORKERS``), whatever the input.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.store.export import export_archive
        >>> root, out = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> type(open_source(root, allow_empty=True)).__name__
        'Corpus'
        >>> _ = export_archive(root, out, jobs=1)
        >>> type(open_source(out, allow_empty=True)).__name__
        'Archive'
        >>> open_source(root, cache=False)
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.EmptySourceError: no session log under '...' and no archive manifest ... (hint: ...)
    """
    WORKERS.check("jobs", jobs, optional=True)
    path = os.fspath(location)
    local = local_location(path, storage_options)  # a file:// URL is the local path it names
    if local != path:
        path, storage_options = local, None
    kind = input_kind(path) if input == "auto" else input
    source: Source
    if kind == "archive":
        source = open_archive(path, storage_options=storage_options)
        misplaced = misplaced_archive(source)
        if misplaced is not None:
            raise misplaced
    elif is_url(path):
        raise CorpusRootError(
            f"cannot read {path!r} as a corpus root: a corpus root is a local directory",
            hint="read it as an archive (--input archive), or give the local path of the corpus",
        )
    else:
        source = read_corpus(path, compression=compression, jobs=jobs, progress=progress, cache=cache)
    reason = None if allow_empty else source.empty_reason()
    if reason is not None:
        hint = EMPTY_HINT if isinstance(source, Corpus) else "re-export it from the corpus root that holds the logs"
        raise (inputs_below(path) if isinstance(source, Corpus) else None) or EmptySourceError(reason, hint=hint)
    return source


def _read_facts(
    files: list[SessionFile],
    compression: Compression,
    *,
    want_events: bool,
    jobs: int | None,
    progress: Progress,
    store: FactsCache | None,
) -> Iterator[LogFacts]:
    """Facts of every file in order, one at a time: cached ones reused, the rest read (and cached)."""
    sources = [f.source for f in files]
    if store is None or want_events:
        read = read_all(sources, compression, want_events=want_events, jobs=jobs, progress=progress)
        for file, item in zip(files, read, strict=True):
            if store is not None:
                store.put(file, item)
            yield item
        return
    cached: list[LogFacts | None] = [store.get(file) for file in files]
    missing = [index for index, item in enumerate(cached) if item is None]
    hits = len(files) - len(missing)
    if hits:
        progress(hits, len(files))
    fresh = read_all([sources[i] for i in missing], compression, want_events=False, jobs=jobs, progress=quiet)
    done = 0
    for index, hit in enumerate(cached):
        item = hit if hit is not None else next(fresh)
        if hit is None:
            store.put(files[index], item)
            done += 1
            progress(hits + done, len(files))
        cached[index] = None  # handed on: assembly keeps columns, not facts
        yield item
