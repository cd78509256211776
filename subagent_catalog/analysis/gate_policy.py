"""The gate's tolerances: per-check thresholds and a baseline of known offenders.

* **Thresholds.** ``max_count`` (``--max CHECK=N``) lets a selected check
  find up to ``N`` offenders; ``max_rate`` (``--max-rate CHECK=R``) up to a
  fraction ``R`` of the session files (those of the window, when there is
  one). ``parse_max`` and ``parse_max_rate`` read the command-line forms.
* **Baseline.** ``load_baseline`` reads an earlier ``check --format json``
  output; ``mark_known`` flags the offenders it already holds, so the gate
  fails only on new ones. An offender is identified by its check, session
  id, path (relative to the corpus root, so a corpus mounted elsewhere
  matches) and cause; not by its detail text or line, which change as a log
  grows. Matching counts: two offenders with one identity now and one in
  the baseline make one new offender.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from subagent_catalog.analysis.gate_checks import CHECKS_BY_NAME, check_names
from subagent_catalog.bounds import COUNT
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.regular import read_regular

__all__ = [
    "BASELINE_BYTES",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "Baseline",
    "BaselineError",
    "OffenderKey",
    "check_limits",
    "load_baseline",
    "mark_known",
    "parse_max",
    "parse_max_rate",
    "read_baseline",
]

FORMAT_NAME = "subagent-catalog-check"
"""The ``format`` field of ``check --format json`` output."""

FORMAT_VERSION = 1
"""The ``format_version`` of ``check --format json`` output (output without the field predates it, and reads)."""

BASELINE_BYTES = 512 * 2**20
"""The largest baseline file read."""

BASELINE_HINT = "write one with: subagent-catalog check ROOT --format json > previous.json"

OffenderKey = tuple[str, str | None, str | None, str | None]
"""How an offender is matched against a baseline: check, session id, path relative to the root, cause."""


class BaselineError(SubagentCatalogError, ValueError):
    """A baseline that cannot be used: missing, unreadable, not JSON, not a gate result, another version."""


def _name(text: str, what: str) -> str:
    name = text.strip()
    if name not in CHECKS_BY_NAME:
        raise ValueError(f"unknown check {name!r} in {what} (hint: choose from {', '.join(check_names())})")
    return name


def _split(text: str, what: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise ValueError(f"expected {what}, got {text!r} (hint: for example corrupt=5)")
    return name, value.strip()


def parse_max(text: str) -> tuple[str, int]:
    """Read a ``--max`` value ``CHECK=N``: the check may find up to ``N`` offenders (a whole number, 0 or more).

    Raises:
        ValueError: no ``=``, an unknown check, or ``N`` not a whole number of at least 0.

    Examples:
        >>> parse_max("corrupt=5")
        ('corrupt', 5)
        >>> parse_max("corrupt=-1")
        Traceback (most recent call last):
        ...
        ValueError: corrupt=-1: N must be a whole number from 0 to 9,007,199,254,740,991 (hint: for example corrupt=5)
    """
    name, value = _split(text, "CHECK=N")
    name = _name(name, "--max")
    try:
        limit = int(value)
    except ValueError:
        limit = -1
    if not COUNT.admits(limit):
        raise ValueError(f"{text}: N must be {COUNT.describe()} (hint: for example {name}=5)")
    return name, limit


def parse_max_rate(text: str) -> tuple[str, float]:
    """Read a ``--max-rate`` value ``CHECK=R``: ``R`` a fraction from 0 to 1 (``0.01``) or a percentage (``1%``).

    Raises:
        ValueError: no ``=``, an unknown check, or ``R`` not a number from 0 to 1 (0% to 100%).

    Examples:
        >>> parse_max_rate("unavailable=0.01")
        ('unavailable', 0.01)
        >>> parse_max_rate("unavailable=2.5%")
        ('unavailable', 0.025)
        >>> parse_max_rate("unavailable=5")
        Traceback (most recent call last):
        ...
        ValueError: unavailable=5: R must be a fraction from 0 to 1 or a percentage (hint: ...)
    """
    name, value = _split(text, "CHECK=R")
    name = _name(name, "--max-rate")
    percent = value.endswith("%")
    try:
        rate = float(value[:-1] if percent else value) / (100 if percent else 1)
    except ValueError:
        rate = math.nan
    if not 0 <= rate <= 1:  # also refuses nan
        raise ValueError(
            f"{text}: R must be a fraction from 0 to 1 or a percentage (hint: for example {name}=0.01 or {name}=1%)"
        )
    return name, rate


def check_limits(max_count: Mapping[str, int], max_rate: Mapping[str, float]) -> None:
    """Validate threshold mappings given from Python (check names, ranges).

    Raises:
        ValueError: an unknown check, a count outside ``bounds.COUNT`` (a ``BoundError``), a rate outside 0..1.

    Examples:
        >>> check_limits({"corrupt": 5}, {"unavailable": 0.01})
        >>> check_limits({"nope": 1}, {})
        Traceback (most recent call last):
        ...
        ValueError: unknown check 'nope' in max_count (hint: choose from corpus-error, ...)
    """
    for name, limit in max_count.items():
        _name(name, "max_count")
        COUNT.check(f"max_count[{name!r}]", limit)
    for name, rate in max_rate.items():
        _name(name, "max_rate")
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
            raise ValueError(f"max_rate[{name!r}] must be a fraction from 0 to 1, not {rate!r}")


def relative(path: str | None, root: str | None) -> str | None:
    """``path`` relative to ``root`` when it lies below it (as text), else unchanged.

    Examples:
        >>> relative("/mnt/a/--p--/s/session.jsonl", "/mnt/a/")
        '--p--/s/session.jsonl'
        >>> relative("/elsewhere/x", "/mnt/a"), relative(None, "/mnt/a")
        ('/elsewhere/x', None)
    """
    if path is None or not root:
        return path
    base = root.rstrip(os.sep) + os.sep
    return path[len(base) :] if path.startswith(base) else path


@dataclass(frozen=True)
class Baseline:
    """The offenders of an earlier gate run.

    Attributes:
        path: where it was read from.
        root: the corpus root of that run (offender paths are matched relative to it).
        semantics: that run's listing semantics (``None`` when it does not say).
        format_version: the file's ``format_version`` (``None``: it predates the field).
        keys: how many offenders of each identity (``OffenderKey``) it holds.
    """

    path: str
    root: str | None
    semantics: str | None
    format_version: int | None
    keys: Counter[OffenderKey] = field(default_factory=Counter)

    @property
    def size(self) -> int:
        """The number of offenders it holds."""
        return sum(self.keys.values())

    def check_semantics(self, semantics: str) -> None:
        """Refuse a run whose semantics differ from the baseline's (catalog offenders would not compare).

        Raises:
            BaselineError: the semantics differ.

        Examples:
            >>> Baseline("b.json", "/r", "trace", 1).check_semantics("projection")
            Traceback (most recent call last):
            ...
            subagent_catalog.analysis.gate_policy.BaselineError: baseline 'b.json' was written with semantics trace, ...
        """
        if self.semantics is not None and self.semantics != semantics:
            raise BaselineError(
                f"baseline {self.path!r} was written with semantics {self.semantics}, this run uses {semantics}",
                hint=f"pass --semantics {self.semantics}, or write a new baseline",
            )


def _bad(path: str, why: str) -> BaselineError:
    return BaselineError(f"baseline {path!r} is not a check --format json output: {why}", hint=BASELINE_HINT)


def read_baseline(data: Any, *, path: str = "<baseline>") -> Baseline:
    """A ``Baseline`` from the parsed JSON of a ``check --format json`` output (any format version up to ours).

    Raises:
        BaselineError: the data is not such an output, or of a newer format version.

    Examples:
        >>> data = {"format_version": 1, "root": "/r", "semantics": "projection", "checks": [
        ...     {"name": "corrupt", "offenders": [{"session_id": "c", "path": "/r/p/c/session.jsonl", "cause": "x"}]}]}
        >>> read_baseline(data).keys
        Counter({('corrupt', 'c', 'p/c/session.jsonl', 'x'): 1})
        >>> read_baseline({"format_version": 9, "checks": []}, path="new.json")
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.gate_policy.BaselineError: baseline 'new.json' has format version 9; ... (hint: ...)
    """
    if not isinstance(data, dict):
        raise _bad(path, f"expected a JSON object, got {type(data).__name__}")
    version = data.get("format_version")
    readable = isinstance(version, int) and not isinstance(version, bool) and 1 <= version <= FORMAT_VERSION
    if version is not None and not readable:
        raise BaselineError(
            f"baseline {path!r} has format version {version!r}; this subagent-catalog reads {FORMAT_VERSION}",
            hint="write the baseline with this version: subagent-catalog check ROOT --format json > previous.json",
        )
    if data.get("format", FORMAT_NAME) != FORMAT_NAME:
        raise _bad(path, f"its format is {data.get('format')!r}")
    root, semantics, checks = data.get("root"), data.get("semantics"), data.get("checks")
    if not isinstance(checks, list) or not isinstance(root, str | None) or not isinstance(semantics, str | None):
        raise _bad(path, "no 'checks' list (or a 'root' or 'semantics' that is not text)")
    keys: Counter[OffenderKey] = Counter()
    for check in checks:
        if not isinstance(check, dict) or not isinstance(check.get("name"), str):
            raise _bad(path, "a check without a name")
        offenders = check.get("offenders")
        if not isinstance(offenders, list):
            raise _bad(path, f"check {check['name']!r} has no 'offenders' list")
        for row in offenders:
            values = [row.get(k) for k in ("session_id", "path", "cause")] if isinstance(row, dict) else [0]
            texts = [value for value in values if isinstance(value, str | None)]
            if len(texts) != 3:
                raise _bad(path, f"an offender of {check['name']!r} is not an object of texts")
            keys[(check["name"], texts[0], relative(texts[1], root), texts[2])] += 1
    return Baseline(path, root, semantics, version, keys)


def load_baseline(path: str) -> Baseline:
    """Read a baseline file (an earlier ``check --format json`` output).

    Raises:
        BaselineError: the file is missing, unreadable, too large, not JSON,
            not a gate result, or of a newer format version.

    Examples:
        >>> load_baseline("/nonexistent/previous.json")
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.gate_policy.BaselineError: cannot read baseline '/nonexistent/previous.json': ...
    """
    try:
        raw = read_regular(path, limit=BASELINE_BYTES + 1)  # a FIFO never blocks, a device is never read
    except OSError as error:
        raise BaselineError(
            f"cannot read baseline {path!r}: {error.strerror or error}", hint=f"check the path; {BASELINE_HINT}"
        ) from error
    if len(raw) > BASELINE_BYTES:
        raise _bad(path, f"larger than {BASELINE_BYTES // 2**20} MiB")
    try:
        data = json.loads(raw)
    except RecursionError as error:
        raise _bad(path, "nested too deeply") from error
    except ValueError as error:
        raise _bad(path, f"not JSON ({error})") from error
    return read_baseline(data, path=path)


def mark_known(name: str, offenders: pl.DataFrame, root: str, baseline: Baseline) -> pl.DataFrame:
    """``offenders`` with an ``in_baseline`` column: whether the baseline already holds each one.

    Rows are matched in order: when the baseline holds an identity fewer
    times than the check finds it now, the later rows are new.

    Examples:
        >>> rows = pl.DataFrame({"session_id": ["a", "a"], "path": ["/r/a", "/r/a"], "cause": ["x", "x"]})
        >>> base = Baseline("b.json", "/old", None, 1, Counter({("corrupt", "a", "/r/a", "x"): 1}))
        >>> mark_known("corrupt", rows, "/elsewhere", base)["in_baseline"].to_list()
        [True, False]
    """
    left = Counter({key: count for key, count in baseline.keys.items() if key[0] == name})
    flags = []
    for session_id, path, cause in offenders.select("session_id", "path", "cause").iter_rows():
        key = (name, session_id, relative(path, root), cause)
        flags.append(left[key] > 0)
        if left[key] > 0:
            left[key] -= 1
    return offenders.with_columns(pl.Series("in_baseline", flags, dtype=pl.Boolean))
