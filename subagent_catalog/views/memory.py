"""Giving freed memory back between the stages of a large report or summary.

A report of a large corpus runs stages one after the other (the catalog,
the frames, the run summary, the charts, the session forest), each dropping
what it made before the next. Python hands its large freed blocks back to
the C library's heap, which keeps them for its own later use: the freed
pages of one stage then add to the next stage's in the process's resident
memory. ``release_freed_memory`` asks the C library to return them (glibc's
``malloc_trim``; nothing elsewhere). Polars' own allocator returns what it
frees by itself over about a second (its pages decay, ``dirty_decay_ms`` and
``muzzy_decay_ms``); ``settle_freed_memory`` waits that second between two
stages of a large job, as long as the resident size keeps falling, so the
next stage does not stack its memory on pages already freed.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import time
from collections.abc import Callable

__all__ = ["LARGE_JOB", "between_stages", "release_freed_memory", "resident_bytes", "settle_freed_memory"]

LARGE_JOB = 50_000
"""Sessions from which a report or a summary waits for freed memory between its stages (smaller never pause)."""


@functools.cache
def _trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim  # glibc; musl has none
    except (OSError, AttributeError):
        return None
    return trim


def release_freed_memory() -> bool:
    """Return the C heap's free pages to the operating system; whether the C library can.

    Examples:
        >>> release_freed_memory() in (True, False)
        True
    """
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True


def resident_bytes() -> int | None:
    """This process's resident size in bytes (``None`` where ``/proc`` does not tell it).

    Examples:
        >>> size = resident_bytes()
        >>> size is None or size > 0
        True
    """
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def settle_freed_memory(*, least: float = 0.6, limit: float = 2.0, step: float = 0.1) -> int:
    """Release freed memory, then wait while the resident size keeps falling; the bytes it fell by.

    Polars' allocator returns pages freed by a stage gradually over about a
    second (at 500,000 sessions, 0.3 GB after the out-of-core catalog), and
    pages freed by one stage's threads are not reused by the next stage's.
    Waiting for them between two large stages lowers the job's peak. The
    wait lasts ``least`` seconds (the allocator starts slowly: its dirty
    pages decay over 0.5 s), then ends when the size falls by less than 4 MiB
    in a ``step``, or after ``limit`` seconds.

    Examples:
        >>> settle_freed_memory(least=0.1, limit=0.1) >= 0
        True
    """
    release_freed_memory()
    start = resident_bytes()
    if start is None:
        return 0
    before, first = start, max(1, round(least / step))
    for done in range(1, max(first, round(limit / step)) + 1):  # counted in steps: no sum of floats
        time.sleep(step)
        now = resident_bytes() or before
        falling = before - now >= 4 << 20
        before = min(before, now)
        if not falling and done >= first:
            break
    return max(0, start - before)


def between_stages(sessions: int) -> None:
    """What a report or a summary of ``sessions`` sessions does between two stages: settle, or release only.

    A job of ``LARGE_JOB`` sessions or more waits for the freed pages
    (``settle_freed_memory``, about a second); a smaller one only releases
    the C heap's, never pausing.

    Examples:
        >>> between_stages(10)
    """
    if sessions >= LARGE_JOB:
        settle_freed_memory()
    else:
        release_freed_memory()
