"""Prototype of the proposed cache integration for ``corpus.read_corpus``.

``read_corpus_cached`` is ``read_corpus`` plus a ``cache`` option, written
against the library's own pieces (``discover``, ``_read_all``, ``assemble``)
exactly as proposed for ``corpus.py`` (see the Performance section of README.md). The
benchmarks use it to measure warm reads until the lead wires the cache in.
"""

from __future__ import annotations

import os
from typing import Any

from subagent_catalog.cache import FactsCache
from subagent_catalog.corpus import (
    CompressionOption,
    Corpus,
    Progress,
    _choose_compression,
    _quiet,
    _read_all,
    assemble,
)
from subagent_catalog.discover import SessionFile, discover
from subagent_catalog.logread import LogFacts
from subagent_catalog.paths import Compression


def read_facts(
    files: list[SessionFile],
    compression: Compression,
    *,
    want_events: bool,
    jobs: int | None,
    progress: Progress,
    store: FactsCache | None,
) -> list[LogFacts]:
    """Facts of every file, from the cache where it holds them (never for events)."""
    if store is None or want_events:
        facts = list(
            _read_all([f.source for f in files], compression, want_events=want_events, jobs=jobs, progress=progress)
        )
        if store is not None:
            for file, item in zip(files, facts, strict=True):
                store.put(file, item)
        return facts
    out: list[LogFacts | None] = [store.get(file) for file in files]
    missing = [i for i, item in enumerate(out) if item is None]
    hits = len(files) - len(missing)
    if hits:
        progress(hits, len(files))
    read = _read_all([files[i].source for i in missing], compression, want_events=False, jobs=jobs, progress=_quiet)
    for done, (i, item) in enumerate(zip(missing, read, strict=True), 1):
        out[i] = item
        store.put(files[i], item)
        progress(hits + done, len(files))
    return [item for item in out if item is not None]


def read_corpus_cached(
    root: str | os.PathLike[str],
    *,
    compression: CompressionOption = "auto",
    events: bool = False,
    progress: Progress | None = None,
    jobs: int | None = None,
    cache: bool | str = True,
) -> Corpus:
    """``read_corpus`` with the facts cache (``cache``: True, False, or a cache directory)."""
    root_path = os.fspath(root)
    chosen: Compression = _choose_compression(root_path, compression) if os.path.isdir(root_path) else "zstd"
    found = discover(root_path, chosen)
    store = None
    if cache:
        store = FactsCache.load(root_path, chosen, directory=cache if isinstance(cache, str) else None)
    facts = read_facts(found.files, chosen, want_events=events, jobs=jobs, progress=progress or _quiet, store=store)
    if store is not None:
        store.save()
    corpus = assemble(found, facts, jobs=jobs, want_events=events)
    extra: Any = store
    object.__setattr__(corpus, "_facts_cache", extra)
    return corpus
