"""Process pools whose forked workers never garbage-collect what they inherited (layer 0).

A forked child starts with a copy of every Python object of its parent, including
garbage not yet collected. When the child's garbage collector then finalizes such
an object, native state that only made sense in the parent (a ZeroMQ socket of a
Jupyter client, a gRPC channel, a thread's lock) is torn down in the wrong process:
seen here as a worker dying of a segmentation fault "Garbage-collecting" in the
middle of its task, after the test process had run notebooks. ``process_pool``
starts its workers with the parent's heap frozen (``gc.freeze``, as CPython's
documentation advises before a fork), so a child's collector only ever looks at
objects the child made. The parent unfreezes right after and collects its own
garbage itself, as before. Every process pool of the package is made here.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, Literal

StartMethod = Literal["fork", "spawn", "forkserver"]
"""How workers start; ``None`` (the default) is the platform's default method."""


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep every object alive now out of the garbage collector's reach until the block ends.

    A caller's own earlier ``gc.freeze()`` is respected: the heap is unfrozen at
    the end only if nothing was frozen before.

    Examples:
        >>> import gc
        >>> with frozen_heap():
        ...     gc.get_freeze_count() > 0
        True
        >>> gc.get_freeze_count()
        0
    """
    already = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        yield
    finally:
        if not already:
            gc.unfreeze()


def fork_frozen() -> int:
    """``os.fork()`` with the parent's heap frozen in the child for good (0 in the child, its pid in the parent).

    The child never garbage-collects, and so never finalizes, an object it
    inherited; the parent unfreezes right after (unless it had frozen its heap
    itself). Python 3.12+ warns of a fork in a threaded process: the callers'
    children use only what they open themselves, so the warning is silenced.

    Examples:
        >>> import gc, os
        >>> pid = fork_frozen()
        >>> if pid == 0:
        ...     os._exit(0 if gc.get_freeze_count() > 0 else 1)
        >>> os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), gc.get_freeze_count()
        (0, 0)
    """
    already = gc.get_freeze_count() > 0
    gc.freeze()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid != 0 and not already:
        gc.unfreeze()
    return pid


def process_pool(
    workers: int,
    *,
    start: StartMethod | None = None,
    initializer: Callable[..., object] | None = None,
    initargs: tuple[Any, ...] = (),
) -> ProcessPoolExecutor:
    """A ``ProcessPoolExecutor`` of ``workers`` processes, started now with the heap frozen.

    With the ``fork`` start method every worker is forked at the pool's first
    task; this function runs a no-op task inside ``frozen_heap`` so that moment
    is now. Use the pool as a context manager (or call ``shutdown``).

    Args:
        workers: the number of worker processes (at least 1).
        start: the start method; the platform's default when ``None``.
        initializer: called in each worker before its first task.
        initargs: the initializer's arguments.

    Returns:
        The running pool.

    Examples:
        >>> with process_pool(2) as pool:
        ...     list(pool.map(abs, [-1, 2, -3]))
        [1, 2, 3]
    """
    context = multiprocessing.get_context(start)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=initializer, initargs=initargs)
    try:
        with frozen_heap():
            pool.submit(int).result()
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    return pool
