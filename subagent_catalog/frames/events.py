"""``scan_events``: the events of a corpus as a Polars LazyFrame.

Reading every event of a large archive is the expensive part of a corpus.
The lazy scan reads one log at a time, only when the query runs, applies the
query's projection and filter to each log's events and stops as soon as a
``head``/``limit`` is satisfied, so memory holds one log's events at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import polars as pl

from subagent_catalog.frames.corpus import facts_events
from subagent_catalog.frames.schemas import EVENT_SCHEMA
from subagent_catalog.frames.source import Source, require_source
from subagent_catalog.read.logread import read_log_file


def scan_events(corpus: Source, *, sessions: Iterable[str] | None = None) -> pl.LazyFrame:
    """A lazy frame of every readable log's events (``corpus.events``' rows, lazily).

    Args:
        corpus: a read corpus (its ``sessions`` frame says which files to read), or an archive (its events
            table, scanned; without one, the logs under its recorded root).
        sessions: only these session ids (skips the other files entirely).

    pandas: ``.collect().to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Raises:
        ArchiveError: an archive without an events table whose corpus root is not here.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> scan_events(read_corpus(tempfile.mkdtemp())).collect().height
        0
    """
    corpus = require_source(corpus)
    corpus.require_events(needed_for="scan_events")  # an archive without events, its root gone: said now
    stored = corpus.stored_events()
    if stored is not None:  # the events are stored in files: scanned there
        if sessions is not None:
            stored = stored.filter(pl.col("session_id").is_in(list(sessions)))
        return stored.select(list(EVENT_SCHEMA))
    paths = corpus.log_sources(sessions=sessions)
    compression = corpus.compression

    def source(
        with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None, batch_size: int | None
    ) -> Iterator[pl.DataFrame]:
        remaining = n_rows
        for path in paths:
            if remaining is not None and remaining <= 0:
                return
            frame = facts_events(read_log_file(path, compression, want_events=True))
            if predicate is not None:
                frame = frame.filter(predicate)
            if with_columns is not None:
                frame = frame.select(with_columns)
            if remaining is not None:
                frame = frame.head(remaining)
                remaining -= frame.height
            yield frame

    from polars.io.plugins import register_io_source

    schema: dict[str, Any] = dict(EVENT_SCHEMA)
    return register_io_source(source, schema=schema, explain_name="subagent_catalog.scan_events")
