"""Where the per-file work of an archive export runs: here, or on a Dask cluster.

Reading a session log is a pure function of its bytes
(``subagent_catalog.read.logread.read_log_file``), so an export cuts the file
list into batches and runs ``read_batch`` on each, either in this process
or a local process pool (``engine="local"``) or on the workers of a
``dask.distributed`` scheduler (``engine="dask"``). A batch comes back as the
encoded facts of its files (events stripped) plus, on request, the events of
those files as one Polars frame, so the client never holds every event at
once.

Dask is an optional extra (``pip install 'subagent-catalog[scale]'``); this
module imports it only inside ``run_dask``.

The facts are typed records written by ``dump_facts`` and read back by
``load_facts`` (``subagent_catalog.store.codec``), which decodes them into
fixed types and checks them: a facts record never runs code or builds more
than its bytes describe, even from an archive someone else wrote.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import math
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import polars as pl

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.read.logread import LogFacts
from subagent_catalog.read.paths import Compression
from subagent_catalog.store.codec import dump_facts, reader_digest

BATCH_SIZE = 256
"""Most files per task: large enough that task overhead stays small."""

LOCAL_SERIAL_BELOW = 64
"""The local engine reads fewer files than this in-process (no pool)."""

WORKER_WAIT_SECONDS = 60
"""How long an export waits for the first worker of an external scheduler."""

WORKER_LOST_SECONDS = 60.0
"""How long a running export waits with no worker alive (all died or left) before it gives up."""

WORKER_CHECK_SECONDS = 1.0
"""How often a waiting export asks the scheduler whether any worker is alive."""

IN_FLIGHT_PER_WORKER = 4
"""Batches submitted ahead per worker: the scheduler never holds the whole file list."""

Task = tuple[int, str, str]
"""One file to read: (list order, path to open, project directory)."""

EventRows = list[tuple[int, str, list[tuple[Any, ...]]]]
"""Per file: (list order, project dir, event rows as ``corpus.EVENT_SCHEMA`` tuples)."""

EVENT_EXTRA: dict[str, Any] = {"project_dir": pl.String, "list_order": pl.Int64, "event_index": pl.Int64}
"""Columns the archive's events table adds to ``EVENT_SCHEMA``."""


class EngineError(SubagentCatalogError):
    """The engine could not run the per-file work (cluster unreachable, workers mismatched)."""


def batch_failure(error: BaseException, batch: Sequence[Task]) -> BaseException:
    """The error to raise for a batch whose task failed on the cluster with ``error``.

    A worker that died on the batch (Dask's ``KilledWorker``: the task killed
    every worker it was given, as a crash or the memory limit does), a
    worker-side ``OSError`` or ``MemoryError`` and a cancelled task become one-line
    ``EngineError``s naming the batch; ``RootNotVisibleError`` and anything
    else (a bug) are returned unchanged.

    Examples:
        >>> class KilledWorker(Exception): ...
        >>> print(batch_failure(KilledWorker("read_batch-1f", None, 3), [(0, "/c/p/s/session.jsonl", "p")]))
        a Dask worker died while reading 1 file(s) from '/c/p/s/session.jsonl' (hint: ...)
        >>> print(batch_failure(PermissionError(13, "Permission denied"), [(0, "/c/a", "p"), (1, "/c/b", "p")]))
        a Dask worker could not read 2 file(s) from '/c/a': [Errno 13] Permission denied (hint: ...)
    """
    where = f"{len(batch)} file(s) from {batch[0][1]!r}" if batch else "an empty batch"
    name = type(error).__name__
    if isinstance(error, RootNotVisibleError):
        return error
    if name == "KilledWorker":
        return EngineError(
            f"a Dask worker died while reading {where}",
            hint="a file of the batch may crash the reader or pass the worker's memory limit: read the worker "
            "logs, give workers more memory (dask worker --memory-limit), or export with --engine local",
        )
    if isinstance(error, (OSError, MemoryError)):
        return EngineError(
            f"a Dask worker could not read {where}: {error}",
            hint="every worker must read the corpus at the same path, with the same permissions and enough memory",
        )
    if "CancelledError" in name:
        return EngineError(
            f"the Dask scheduler cancelled the task reading {where}",
            hint="the scheduler may have restarted or lost this client: re-run the export",
        )
    return error


class RootNotVisibleError(FileNotFoundError):
    """A worker cannot see the corpus root (raised on the worker, re-raised on the client)."""


@dataclass
class BatchResult:
    """What one batch of files gives back.

    Attributes:
        facts: ``(list order, encoded facts or None)`` per file; ``None`` when
            the facts cannot be stored (the client reads that file itself).
        events: the batch's events with ``EVENT_EXTRA`` columns, when asked for.
        worker: ``host:pid`` of the process that did the work.
        reader: ``reader_digest`` of that process's code.
        event_rows: the events as plain rows instead of ``events`` (see ``read_batch``).
    """

    facts: list[tuple[int, bytes | None]]
    events: pl.DataFrame | None
    worker: str
    reader: str
    event_rows: EventRows | None = None


def events_frame(rows: EventRows) -> pl.DataFrame:
    """The events table rows of some files (``EVENT_SCHEMA`` plus ``EVENT_EXTRA``).

    Examples:
        >>> events_frame([(4, "_no-cwd", [("a", 0, 1, "turn/start", 1, None, False, "{}")])])["list_order"].to_list()
        [4]
    """
    from subagent_catalog.frames.corpus import facts_events
    from subagent_catalog.frames.schemas import EVENT_SCHEMA

    frames = [
        facts_events(LogFacts(size=0, events=events)).with_columns(
            pl.lit(project, pl.String).alias("project_dir"),
            pl.lit(order, pl.Int64).alias("list_order"),
            pl.int_range(pl.len(), dtype=pl.Int64).alias("event_index"),
        )
        for order, project, events in rows
    ]
    if not frames:
        return pl.DataFrame(schema={**EVENT_SCHEMA, **EVENT_EXTRA})
    return pl.concat(frames)


def read_batch(
    tasks: Sequence[Task], compression: Compression, want_events: bool, root: str, *, frames: bool = True
) -> BatchResult:
    """Read a batch of log files: the unit of work of both engines.

    Args:
        tasks: the files, as ``(list order, absolute path, project dir)``.
        compression: the encoding of the root.
        want_events: also return the files' events.
        root: the absolute corpus root; a worker that cannot see it refuses
            the batch rather than reporting every file unreadable.
        frames: return the events as a Polars frame (``events``); otherwise
            as plain rows (``event_rows``), for forked workers, which must not
            use Polars.

    Raises:
        RootNotVisibleError: ``root`` is not a directory on this worker.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.store.codec import load_facts
        >>> from subagent_catalog.synth.writer import header, write_session
        >>> root = tempfile.mkdtemp()
        >>> path = write_session(root, header("a", created_at=1), [], "none")
        >>> result = read_batch([(0, path, "_no-cwd")], "none", True, root)
        >>> load_facts(result.facts[0][1] or b"").verdict, result.events.height
        ('ok', 0)
    """
    from subagent_catalog.read import logread

    if not os.path.isdir(root):
        raise RootNotVisibleError(
            f"corpus root {root!r} is not a directory on worker {socket.gethostname()}: "
            "mount the corpus at the same path on every worker"
        )
    blobs: list[tuple[int, bytes | None]] = []
    rows: EventRows = []
    for order, path, project in tasks:
        facts = logread.read_log_file(path, compression, want_events=want_events, exact_path=True)
        blob = dump_facts(facts)
        if want_events and blob is not None:  # without a blob the client reads the file again, events included
            rows.append((order, project, facts.events or []))
        blobs.append((order, blob))
    worker = f"{socket.gethostname()}:{os.getpid()}"
    if not want_events:
        return BatchResult(facts=blobs, events=None, worker=worker, reader=reader_digest())
    if frames:
        return BatchResult(facts=blobs, events=events_frame(rows), worker=worker, reader=reader_digest())
    return BatchResult(facts=blobs, events=None, worker=worker, reader=reader_digest(), event_rows=rows)


def plan_batches(tasks: Sequence[Task], *, workers: int, batch_size: int | None = None) -> list[list[Task]]:
    """Cut the file list into batches: at most ``batch_size`` files, about four batches per worker or more.

    Examples:
        >>> [len(b) for b in plan_batches([(i, "p", "d") for i in range(10)], workers=2)]
        [2, 2, 2, 2, 2]
        >>> len(plan_batches([(i, "p", "d") for i in range(3000)], workers=2))
        12
    """
    if not tasks:
        return []
    cap = batch_size if batch_size is not None else BATCH_SIZE
    size = max(1, min(cap, math.ceil(len(tasks) / (max(1, workers) * 4))))
    return [list(tasks[i : i + size]) for i in range(0, len(tasks), size)]


def run_local(
    batches: Sequence[Sequence[Task]], *, compression: Compression, want_events: bool, root: str, jobs: int | None
) -> Iterator[BatchResult]:
    """Run the batches here: in-process for small work or ``jobs=1``, else in a process pool.

    Examples:
        >>> list(run_local([], compression="none", want_events=False, root="/", jobs=1))
        []
    """
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    files = sum(len(batch) for batch in batches)
    if workers <= 1 or files < LOCAL_SERIAL_BELOW:
        for batch in batches:
            yield read_batch(batch, compression, want_events, root)
        return
    # Forked workers (the platform default, no __main__ guard needed) must not
    # touch Polars: a child forked while Polars' thread pool runs can deadlock.
    # They return plain event rows; the frames are built here.
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(read_batch, batch, compression, want_events, root, frames=False) for batch in batches]
        for future in as_completed(futures):
            result: BatchResult = future.result()
            if result.event_rows is not None:
                result.events, result.event_rows = events_frame(result.event_rows), None
            yield result


def _connect(stack: ExitStack, scheduler: str | None, workers: int) -> Any:
    try:
        dask_distributed: Any = importlib.import_module("distributed")
    except ImportError as error:
        raise EngineError(
            "the dask engine needs dask.distributed, which is not installed",
            hint="pip install 'subagent-catalog[scale]', or use engine='local'",
        ) from error
    if scheduler is None:
        cluster = stack.enter_context(
            dask_distributed.LocalCluster(
                n_workers=workers,
                processes=True,
                threads_per_worker=1,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
                silence_logs=logging.ERROR,
            )
        )
        client = stack.enter_context(dask_distributed.Client(cluster))
        client.wait_for_workers(workers)
        return client
    try:
        client = stack.enter_context(dask_distributed.Client(scheduler, timeout="20s"))
    except (OSError, TimeoutError) as error:
        raise EngineError(
            f"cannot reach the Dask scheduler at {scheduler!r}: {error}",
            hint="start one with `dask scheduler` and workers with `dask worker ADDRESS`, then pass its tcp:// address",
        ) from error
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
    except TimeoutError as error:
        raise EngineError(
            f"no worker joined the Dask scheduler at {scheduler!r} within {WORKER_WAIT_SECONDS} s",
            hint=f"start workers with `dask worker {scheduler}`",
        ) from error
    return client


def run_dask(
    batches: Sequence[Sequence[Task]],
    *,
    compression: Compression,
    want_events: bool,
    root: str,
    scheduler: str | None,
    workers: int = 2,
    on_start: Callable[[dict[str, Any]], None] | None = None,
) -> Iterator[BatchResult]:
    """Run the batches on a Dask cluster, yielding results as they complete.

    Args:
        batches: the batches (see ``plan_batches``).
        compression: the encoding of the root.
        want_events: also return events.
        root: the absolute corpus root, at the same path on every worker.
        scheduler: a scheduler address (``tcp://host:8786``); ``None`` starts a
            local cluster of ``workers`` processes (one thread each) for the call.
        workers: worker processes of the local cluster.
        on_start: called once with facts about the cluster (address, workers).

    Raises:
        EngineError: Dask is missing or the scheduler cannot be reached; no
            worker is alive for ``WORKER_LOST_SECONDS`` while batches wait; a
            batch killed its workers or failed on an I/O error (see
            ``batch_failure``).

    Examples:
        >>> list(run_dask([], compression="none", want_events=False, root="/", scheduler=None))
        []
    """
    if not batches:
        return
    with ExitStack() as stack:
        client = _connect(stack, scheduler, workers)
        dask_completed: Any = importlib.import_module("distributed").as_completed
        joined = len(client.scheduler_info().get("workers", {}))
        if on_start is not None:
            on_start({"scheduler": scheduler if scheduler is not None else "local-cluster", "workers": joined})

        batch_of: dict[Any, Sequence[Task]] = {}

        def submit(batch: Sequence[Task]) -> Any:
            future = client.submit(read_batch, list(batch), compression, want_events, root, pure=False)
            batch_of[future.key] = batch
            return future

        waiting = iter(batches)
        window = max(8, IN_FLIGHT_PER_WORKER * max(1, joined))
        running = dask_completed([submit(batch) for batch in itertools.islice(waiting, window)])
        while not running.is_empty():
            _wait_for_one(running, client, scheduler)
            future = next(running)
            batch = batch_of.pop(future.key)
            try:
                result: BatchResult = future.result()
            except Exception as error:
                failure = batch_failure(error, batch)
                if failure is error:
                    raise
                raise failure from error
            future.release()
            following = next(waiting, None)
            if following is not None:
                running.add(submit(following))
            yield result


def _workers_alive(client: Any, scheduler: str | None) -> int:
    try:
        return len(client.scheduler_info(n_workers=-1).get("workers", {}))
    except (OSError, TimeoutError) as error:
        where = repr(scheduler) if scheduler is not None else "of the local cluster"
        raise EngineError(
            f"lost the connection to the Dask scheduler {where}: {error}",
            hint="check that the scheduler is still running, then re-run the export",
        ) from error


def _wait_for_one(running: Any, client: Any, scheduler: str | None) -> None:
    """Block until a batch is done; give up when no worker has been alive for ``WORKER_LOST_SECONDS``."""
    checked = time.monotonic()
    lost_since: float | None = None
    while not running.has_ready() and not running.is_empty():
        with running.thread_condition:
            running.thread_condition.wait(timeout=0.1)
        now = time.monotonic()
        if now - checked < WORKER_CHECK_SECONDS:
            continue
        checked = now
        if _workers_alive(client, scheduler):
            lost_since = None
        elif lost_since is None:
            lost_since = now
        elif now - lost_since >= WORKER_LOST_SECONDS:
            where = repr(scheduler) if scheduler is not None else "of the local cluster"
            raise EngineError(
                f"no Dask worker of the scheduler {where} has been alive for {WORKER_LOST_SECONDS:g} s "
                f"while {running.count()} batch(es) wait",
                hint=f"the workers died or left: read their logs and start workers with `dask worker {scheduler}`"
                if scheduler is not None
                else "the workers died: read their logs, or export with --engine local",
            )
