"""Giving freed memory back between the stages of a large report or summary.

A report of a large corpus runs stages one after the other (the catalog,
the frames, the run summary, the charts, the session forest), each dropping
what it made before the next. Python hands its large freed blocks back to
the C library's heap, which keeps them for its own later use: the freed
pages of one stage then add to the next stage's in the process's resident
memory. ``release_freed_memory`` asks the C library to return them (glibc's
``malloc_trim``; nothing elsewhere). Polars' own allocator returns what it
frees by itself, after a few seconds.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable

__all__ = ["release_freed_memory"]


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
