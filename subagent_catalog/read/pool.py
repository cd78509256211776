"""Reading many logs, in order, in a process pool for large roots.

Each file is one ``read_log_file``.
Workers never use Polars (a forked child of a process that ran Polars can
deadlock in it): events travel back as one Arrow IPC buffer per file, built
with pyarrow.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from subagent_catalog.forking import process_pool
from subagent_catalog.progress import Progress
from subagent_catalog.read.jsvalue import frame_text
from subagent_catalog.read.logread import LogFacts, read_log_file
from subagent_catalog.read.paths import (
    Compression,
)

if TYPE_CHECKING:
    pass


PARALLEL_THRESHOLD = 64


def _worker(args: tuple[str, Compression, bool]) -> LogFacts:
    path, compression, want_events = args
    facts = read_log_file(path, compression, want_events=want_events, exact_path=True)
    if want_events:
        # Ship one compact Arrow buffer per file instead of a Python tuple per event. Built with
        # pyarrow, not Polars: a forked worker of a process that ran Polars must not use Polars.
        facts.events_ipc, facts.events = _arrow_events(facts.events or []), None
    return facts


_ARROW_EVENT_TYPES = {
    "session_id": "large_string",
    "seq": "int64",
    "time_ms": "int64",
    "type": "large_string",
    "turn": "int64",
    "step": "int64",
    "ignorable": "bool_",
    "in_seed": "bool_",
    "data": "large_string",
    "text": "large_string",
    "text_fields": "large_string",
}


def _arrow_events(rows: list[tuple[Any, ...]]) -> bytes:
    import pyarrow as pa

    columns = list(zip(*rows, strict=True)) if rows else [() for _ in _ARROW_EVENT_TYPES]
    arrays = [
        pa.array([frame_text(v) if isinstance(v, str) else v for v in column], type=getattr(pa, kind)())
        for column, kind in zip(columns, _ARROW_EVENT_TYPES.values(), strict=True)
    ]
    table = pa.Table.from_arrays(arrays, names=list(_ARROW_EVENT_TYPES))
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def read_all(
    paths: list[str], compression: Compression, *, want_events: bool, jobs: int | None, progress: Progress
) -> Iterator[LogFacts]:
    """The facts of every path, in order: serially for small roots or ``jobs=1``, else in a process pool.

    Examples:
        >>> from subagent_catalog.progress import quiet
        >>> list(read_all([], "none", want_events=False, jobs=1, progress=quiet))
        []
    """
    total = len(paths)
    work = [(path, compression, want_events) for path in paths]
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    if workers <= 1 or total < PARALLEL_THRESHOLD:
        for done, item in enumerate(work, 1):
            facts = _worker(item)
            progress(done, total)
            yield facts
        return
    chunk = max(1, min(64, total // (workers * 8) or 1))
    # Workers never use Polars (a forked child of a process that ran Polars can deadlock in it), so
    # the platform's default start method works, and scripts need no main guard. The pool starts
    # them with the heap frozen: a child never finalizes its parent's garbage (forking.py).
    with process_pool(workers) as pool:
        for done, facts in enumerate(pool.map(_worker, work, chunksize=chunk), 1):
            progress(done, total)
            yield facts
