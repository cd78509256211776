"""Forked workers never garbage-collect what they inherited (``subagent_catalog.forking``).

The bug this guards: a test process that had run notebooks (ZeroMQ clients left as
garbage) forked the synthesizer's pool, and a worker died of a segmentation fault
"Garbage-collecting" in its first task. Here the inherited garbage is a cycle whose
finalizer records the process it ran in.
"""

from __future__ import annotations

import gc
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path

import pytest

import subagent_catalog
from subagent_catalog.forking import frozen_heap, process_pool


class _Witness:
    """Garbage from birth (it refers to itself); its finalizer leaves a file named after the process."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.me = self

    def __del__(self) -> None:
        (self.where / str(os.getpid())).touch()


def _finalized_in(where: Path, make_pool: object) -> tuple[set[str], set[str]]:
    """Leave a witness as garbage, let workers collect, then the parent: who finalized it."""
    gc.collect()
    gc.disable()  # the witness must still be garbage, not yet collected, when the workers fork
    try:
        _Witness(where)
        with make_pool() as pool:  # type: ignore[operator]
            for _ in range(6):
                pool.submit(gc.collect).result()
        in_workers = {path.name for path in where.iterdir()}
        gc.collect()
    finally:
        gc.enable()
    return in_workers, {path.name for path in where.iterdir()}


def test_a_plain_forked_pool_finalizes_the_parents_garbage_in_a_worker(tmp_path: Path) -> None:
    """The hazard is real: without a frozen heap a worker runs the parent's finalizer."""
    in_workers, _ = _finalized_in(tmp_path, lambda: ProcessPoolExecutor(2, mp_context=get_context("fork")))
    assert in_workers and str(os.getpid()) not in in_workers


def test_a_worker_of_process_pool_never_finalizes_inherited_garbage(tmp_path: Path) -> None:
    in_workers, after = _finalized_in(tmp_path, lambda: process_pool(2, start="fork"))
    assert in_workers == set()
    assert after == {str(os.getpid())}  # the parent collects its own garbage once the workers run


def test_the_heap_is_unfrozen_after_the_workers_start() -> None:
    with process_pool(2) as pool:
        assert gc.get_freeze_count() == 0
        assert list(pool.map(abs, [-4, 5])) == [4, 5]


def test_a_callers_own_freeze_is_kept() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with frozen_heap():
            pass
        with process_pool(1) as pool:
            assert pool.submit(abs, -1).result() == 1
        assert gc.get_freeze_count() >= frozen > 0
    finally:
        gc.unfreeze()


def test_a_failing_initializer_breaks_the_pool_at_once() -> None:
    with pytest.raises(BrokenProcessPool):
        process_pool(1, initializer=_fail)


def _fail() -> None:
    raise RuntimeError("no start")


def test_every_process_pool_of_the_package_is_made_by_process_pool() -> None:
    package = Path(subagent_catalog.__file__).parent
    makers = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "ProcessPoolExecutor(" in path.read_text(encoding="utf-8")
    )
    assert makers == ["forking.py"]
