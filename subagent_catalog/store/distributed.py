"""Where the work of an archive export runs: here, in a local process pool, or on a Dask cluster.

An export is a list of independent tasks (``store.tasks``): each writes its
own Parquet parts and returns a small result. ``LocalPool`` runs them in this
process or a local process pool; ``run_dask`` on the workers of a
``dask.distributed`` scheduler, with a bounded number in flight, a one-line
error for a task that kills its workers or fails on I/O, and a time limit
when no worker is alive. Dask is an optional extra (``pip install
'subagent-catalog[scale]'``); this module imports it only inside
``run_dask``.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from typing import Any, Literal

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.forking import process_pool
from subagent_catalog.store.tasks import RootNotVisibleError

__all__ = ["EngineError", "LocalPool", "RootNotVisibleError", "run_dask", "task_failure"]

WORKER_WAIT_SECONDS = 60
"""How long an export waits for the first worker of an external scheduler."""

WORKER_LOST_SECONDS = 60.0
"""How long a running export waits with no worker alive (all died or left) before it gives up."""

WORKER_CHECK_SECONDS = 1.0
"""How often a waiting export asks the scheduler whether any worker is alive."""

IN_FLIGHT_PER_WORKER = 4
"""Tasks submitted ahead per worker: the scheduler never holds the whole task list."""


class EngineError(SubagentCatalogError):
    """The engine could not run the work (cluster unreachable, workers lost or mismatched)."""


def task_failure(error: BaseException, where: str) -> BaseException:
    """The error to raise for a task (described by ``where``) that failed with ``error`` on a worker.

    A worker that died on the task (Dask's ``KilledWorker``: the task killed
    every worker it was given, as a crash or the memory limit does), a
    worker-side ``OSError`` or ``MemoryError`` and a cancelled task become
    one-line ``EngineError``s naming the task; ``RootNotVisibleError`` and
    anything else (a bug) are returned unchanged.

    Examples:
        >>> class KilledWorker(Exception): ...
        >>> print(task_failure(KilledWorker("read_task-1f", None, 3), "reading 1 file(s) from '/c/p/s/session.jsonl'"))
        a Dask worker died while reading 1 file(s) from '/c/p/s/session.jsonl' (hint: ...)
        >>> print(task_failure(PermissionError(13, "Permission denied"), "reading 2 file(s) from '/c/a'"))
        a Dask worker failed while reading 2 file(s) from '/c/a': [Errno 13] Permission denied (hint: ...)
    """
    name = type(error).__name__
    if isinstance(error, RootNotVisibleError):
        return error
    if name == "KilledWorker":
        return EngineError(
            f"a Dask worker died while {where}",
            hint="a file of the task may crash the reader or pass the worker's memory limit: read the worker "
            "logs, give workers more memory (dask worker --memory-limit), or export with --engine local",
        )
    if isinstance(error, (OSError, MemoryError)):
        return EngineError(
            f"a Dask worker failed while {where}: {error}",
            hint="every worker must read the corpus at the same path and reach the archive location, "
            "with the same permissions and enough memory",
        )
    if "CancelledError" in name:
        return EngineError(
            f"the Dask scheduler cancelled the task {where}",
            hint="the scheduler may have restarted or lost this client: re-run the export",
        )
    return error


class LocalPool:
    """A process pool kept for every wave of tasks of one export (created on first use).

    ``start="fork"`` needs no main guard in scripts (the tasks must not use
    Polars: a forked child of a process that ran Polars can deadlock in it);
    ``spawn`` starts fresh interpreters (needed for object stores, whose
    clients are not safe across ``fork``; scripts then need ``if __name__ ==
    "__main__":``). With ``jobs=1``, or a single task, tasks run in this
    process.

    Examples:
        >>> with LocalPool(jobs=1) as pool:
        ...     list(pool.run(len, ["ab", "c"]))
        [2, 1]
    """

    def __init__(self, *, jobs: int | None, start: Literal["fork", "spawn"] = "fork") -> None:
        self.workers = jobs if jobs is not None else (os.cpu_count() or 1)
        self.start = start
        self._executor: ProcessPoolExecutor | None = None

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def run(self, func: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[Any]:
        """Run ``func`` on each task, yielding results as they complete (at most a few per worker in flight)."""
        if self.workers <= 1 or len(tasks) <= 1:
            for task in tasks:
                yield func(task)
            return
        if self._executor is None:
            self._executor = process_pool(self.workers, start=self.start)
        pool = self._executor
        waiting = iter(tasks)
        running = {pool.submit(func, task) for task in itertools.islice(waiting, IN_FLIGHT_PER_WORKER * self.workers)}
        try:
            while running:
                done = next(as_completed(running))
                running.discard(done)
                following = next(waiting, None)
                if following is not None:
                    running.add(pool.submit(func, following))
                yield done.result()
        finally:
            for future in running:
                future.cancel()


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
                # its workers' task errors come back through the futures; what they log alone is a heartbeat
                # racing the cluster's own shutdown (a traceback on stderr after a good export)
                silence_logs=logging.CRITICAL,
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
    func: Callable[[Any], Any],
    tasks: Sequence[Any],
    *,
    scheduler: str | None,
    workers: int = 2,
    client: Any = None,
) -> Iterator[Any]:
    """Run ``func`` on each task on a Dask cluster, yielding results as they complete.

    Args:
        func: the task function (importable on the workers).
        tasks: its arguments, one per task (each has a ``describe()`` for messages).
        scheduler: a scheduler address (``tcp://host:8786``); ``None`` starts a
            local cluster of ``workers`` processes (one thread each) for the call.
        workers: worker processes of the local cluster.
        client: a connected ``distributed.Client`` to use (``scheduler`` is then only named in messages).

    Raises:
        EngineError: Dask is missing or the scheduler cannot be reached; no
            worker is alive for ``WORKER_LOST_SECONDS`` while tasks wait; a
            task killed its workers or failed on an I/O error (see
            ``task_failure``).

    Examples:
        >>> list(run_dask(len, [], scheduler=None))
        []
    """
    if not tasks:
        return
    with ExitStack() as stack:
        if client is None:
            client = _connect(stack, scheduler, workers)
        dask_completed: Any = importlib.import_module("distributed").as_completed
        joined = len(client.scheduler_info().get("workers", {}))

        task_of: dict[Any, Any] = {}

        def submit(task: Any) -> Any:
            future = client.submit(func, task, pure=False)
            task_of[future.key] = task
            return future

        waiting = iter(tasks)
        window = max(8, IN_FLIGHT_PER_WORKER * max(1, joined))
        running = dask_completed([submit(task) for task in itertools.islice(waiting, window)])
        try:
            while not running.is_empty():
                _wait_for_one(running, client, scheduler)
                future = next(running)
                task = task_of.pop(future.key)
                try:
                    result = future.result()
                except Exception as error:
                    failure = task_failure(error, task.describe())
                    if failure is error:
                        raise
                    raise failure from error
                future.release()
                following = next(waiting, None)
                if following is not None:
                    running.add(submit(following))
                yield result
        finally:
            for future in list(running.futures):
                future.cancel()


def _wait_for_one(running: Any, client: Any, scheduler: str | None) -> None:
    """Block until a batch is done; give up when no worker has been alive for ``WORKER_LOST_SECONDS``."""
    checked = time.monotonic()
    lost_since: float | None = None
    where = repr(scheduler) if scheduler is not None else "of the local cluster"
    while not running.has_ready() and not running.is_empty():
        with running.thread_condition:
            running.thread_condition.wait(timeout=0.1)
        now = time.monotonic()
        if now - checked < WORKER_CHECK_SECONDS:
            continue
        checked = now
        try:
            alive = len(client.scheduler_info(n_workers=-1).get("workers", {}))
        except (OSError, TimeoutError) as error:
            raise EngineError(
                f"lost the connection to the Dask scheduler {where}: {error}",
                hint="check that the scheduler is still running, then re-run the export",
            ) from error
        if alive:
            lost_since = None
        elif lost_since is None:
            lost_since = now
        elif now - lost_since >= WORKER_LOST_SECONDS:
            raise EngineError(
                f"no Dask worker of the scheduler {where} has been alive for {WORKER_LOST_SECONDS:g} s "
                f"while {running.count()} task(s) wait",
                hint=f"the workers died or left: read their logs and start workers with `dask worker {scheduler}`"
                if scheduler is not None
                else "the workers died: read their logs, or export with --engine local",
            )
