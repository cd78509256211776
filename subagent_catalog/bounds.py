"""The range of every numeric parameter, one per kind (layer 1: imports only ``errors``).

A numeric keyword argument of the library and a numeric option of the command
line is of one kind, and each kind has one documented range:

=========  ==============================================  =========================================
kind       values                                          range
=========  ==============================================  =========================================
seconds    a finite number (``MILLISECONDS``: whole ms)    0 to ``SECONDS_MAX`` (ten years)
count      a whole number                                  0 to ``COUNT_MAX`` (2**53 - 1)
size       a whole number of bytes, characters or MiB      0 to ``SIZE_MAX`` (2**62)
seed       a whole number                                  0 to ``SEED_MAX`` (2**32 - 1)
ratio      a finite number (a share, a factor)             0 to ``RATIO_MAX`` (1,000,000)
=========  ==============================================  =========================================

Ten years of seconds keep a deadline (``time.monotonic() + timeout``, a
``threading.Timer``) far below ``threading.TIMEOUT_MAX``; 2**53 - 1 is the
largest whole number the logs' JSON holds exactly; 2**62 bytes fits an int64
(an OTLP attribute, a Parquet column) with room to add; numpy's generators take
any 32-bit seed. A parameter narrows its kind's range where it must
(``Bound.narrow``: ``--resamples`` is a count from 100 to ``RESAMPLES_MAX``),
never widens it. ``Bound.check`` refuses anything else (``inf``, ``nan``, a
negative number, ``2**63``, a float for a whole number, a bool) with one
``BoundError`` before any work; the command line's option types
(``cli.options.bounded``) hold the same ``Bound`` and make the refusal a usage
error (exit status 2).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import Literal

from subagent_catalog.errors import BoundError, SubagentCatalogError

__all__ = [
    "COUNT",
    "MEMORY_MB",
    "MILLISECONDS",
    "POSITIVE_COUNT",
    "POSITIVE_SECONDS",
    "RATIO",
    "REQUEST_BYTES",
    "RESAMPLES",
    "SECONDS",
    "SEED",
    "SIZE",
    "TEXT_CHARS",
    "WORKERS",
    "Bound",
]

Kind = Literal["seconds", "count", "size", "seed", "ratio"]

SECONDS_MAX = 315_360_000
"""Ten years (of 365 days) in seconds: the longest timeout, deadline or age a parameter takes."""
COUNT_MAX = 2**53 - 1
"""The largest count: the largest whole number JSON readers (and the logs' own fields) hold exactly."""
SIZE_MAX = 2**62
"""The largest size in bytes or characters (an int64 with room to add)."""
SEED_MAX = 2**32 - 1
"""The largest seed."""
RATIO_MAX = 1_000_000
"""The largest share or factor."""
WORKERS_MAX = 1024
"""The most worker processes or threads a call starts."""
RESAMPLES_MAX = 100_000
"""The most bootstrap resamples (each costs a pass over both samples)."""


def _shown(value: float) -> str:
    """A bound as the messages write it: thousands separated, a whole float without ``.0``."""
    if isinstance(value, float) and not value.is_integer():
        return repr(value)
    return f"{int(value):,}"


@dataclass(frozen=True)
class Bound:
    """The values a numeric parameter takes: its kind's range, or a part of it.

    Attributes:
        kind: ``seconds``, ``count``, ``size``, ``seed`` or ``ratio``.
        low: the smallest value (excluded when ``low_open``).
        high: the largest value.
        integer: whole numbers only (an ``int``, never a ``bool`` or a float).
        unit: what the number counts (``seconds``, ``bytes``...), for messages; empty for a plain number.
        low_open: ``low`` itself is refused (a positive number of seconds).

    Examples:
        >>> SEED.admits(7), SEED.admits(-1), SEED.admits(2**32), SEED.admits(7.0), SEED.admits(True)
        (True, False, False, False, False)
        >>> POSITIVE_SECONDS.admits(0.5), POSITIVE_SECONDS.admits(0), POSITIVE_SECONDS.admits(float("nan"))
        (True, False, False)
    """

    kind: Kind
    low: float
    high: float
    integer: bool
    unit: str = ""
    low_open: bool = False

    def narrow(
        self, low: float | None = None, high: float | None = None, *, low_open: bool = False, unit: str | None = None
    ) -> Bound:
        """This range narrowed to a parameter's: ``low`` and ``high`` must lie within it.

        Raises:
            ValueError: a ``low`` or ``high`` outside this range (a programming error).

        Examples:
            >>> COUNT.narrow(100, RESAMPLES_MAX).describe()
            'a whole number from 100 to 100,000'
            >>> SIZE.narrow(unit="characters").describe()
            'a number of characters from 0 to 4,611,686,018,427,387,904'
        """
        new_low = self.low if low is None else low
        new_high = self.high if high is None else high
        if not self.low <= new_low <= new_high <= self.high:
            raise ValueError(f"{new_low}..{new_high} is not within the {self.kind} range {self.low}..{self.high}")
        return replace(self, low=new_low, high=new_high, low_open=low_open, unit=self.unit if unit is None else unit)

    def admits(self, value: object) -> bool:
        """Whether ``value`` is in this range (of the right type: a whole number where one is meant, finite).

        Examples:
            >>> COUNT.admits(0), COUNT.admits(2**63), RATIO.admits(float("inf"))
            (True, False, False)
        """
        number: float
        if isinstance(value, bool):
            return False
        if self.integer:
            if not isinstance(value, numbers.Integral):
                return False
            number = int(value)
        else:
            if not isinstance(value, numbers.Real) or not math.isfinite(number := float(value)):
                return False
        above = self.low < number if self.low_open else self.low <= number
        return above and number <= self.high

    def describe(self) -> str:
        """The range in words, as the error messages give it.

        Examples:
            >>> POSITIVE_SECONDS.describe()
            'a positive number of seconds up to 315,360,000'
            >>> SEED.describe()
            'a whole number from 0 to 4,294,967,295'
        """
        what = f"number of {self.unit}" if self.unit else "whole number" if self.integer else "number"
        high = _shown(self.high)
        if (self.low_open and self.low == 0) or (self.integer and self.low == 1 and not self.low_open):
            return f"a positive {what} up to {high}"
        if self.low_open:
            return f"a {what} above {_shown(self.low)}, up to {high}"
        return f"a {what} from {_shown(self.low)} to {high}"

    def check(
        self,
        name: str,
        value: object,
        *,
        error: type[SubagentCatalogError] = BoundError,
        hint: str | None = None,
        optional: bool = False,
    ) -> None:
        """Refuse ``value`` for the parameter ``name`` unless ``admits`` it (or it is ``None`` and ``optional``).

        Raises:
            BoundError: (or ``error``, a module's own error type) naming the parameter, its range and the value.

        Examples:
            >>> SEED.check("seed", 3), WORKERS.check("jobs", None, optional=True)
            (None, None)
            >>> SEED.check("seed", -1)
            Traceback (most recent call last):
            ...
            subagent_catalog.errors.BoundError: seed must be a whole number from 0 to 4,294,967,295, not -1
        """
        if not (self.admits(value) or (optional and value is None)):
            raise error(f"{name} must be {self.describe()}, not {value!r}", hint=hint)


SECONDS = Bound("seconds", 0, SECONDS_MAX, integer=False, unit="seconds")
"""Seconds: a timeout, a deadline, an age (0 allowed: ``retry_for``)."""
POSITIVE_SECONDS = SECONDS.narrow(0, low_open=True)
"""Seconds above 0: a timeout."""
MILLISECONDS = Bound("seconds", 0, SECONDS_MAX * 1000, integer=True, unit="milliseconds")
"""Whole milliseconds (the logs' unit): an age such as ``stalled_after_ms``."""
COUNT = Bound("count", 0, COUNT_MAX, integer=True)
"""A count: rows shown, resamples, a detector's threshold, files per task."""
POSITIVE_COUNT = COUNT.narrow(1)
"""A count of at least 1: rows to show, files per task."""
WORKERS = COUNT.narrow(1, WORKERS_MAX)
"""Worker processes (``jobs``) or threads."""
RESAMPLES = COUNT.narrow(1, RESAMPLES_MAX)
"""Bootstrap resamples."""
SIZE = Bound("size", 0, SIZE_MAX, integer=True, unit="bytes")
"""A size in bytes."""
REQUEST_BYTES = SIZE.narrow(1)
"""The byte budget of a request."""
TEXT_CHARS = SIZE.narrow(unit="characters")
"""A text length in characters (``max_text``)."""
MEMORY_MB = SIZE.narrow(16, SIZE_MAX >> 20, unit="MiB")
"""A memory limit in MiB (DuckDB's)."""
SEED = Bound("seed", 0, SEED_MAX, integer=True)
"""A random generator's seed."""
RATIO = Bound("ratio", 0, RATIO_MAX, integer=False)
"""A share or a factor."""
