"""The data-quality gate: named checks over a corpus, pass or fail.

Each check is data (``Check``): a name, what it means, and a function
that returns the offending sessions (or corpus entries) as a frame with the
columns of ``OFFENDER_SCHEMA``. ``run_checks`` runs every check and
marks the ones named in ``fail_on`` as failing when they find anything; the
others are reported as warnings. A check that needs the listing cannot run
when upstream's listing fails as a whole; it is ``unevaluated`` and, when
selected, fails the gate (the gate fails closed).

The formatters (``format_text``, ``format_markdown``,
``format_json``) render a ``GateResult`` for terminals, CI job
summaries and machines.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl

from subagent_catalog.analysis.window import Window
from subagent_catalog.catalog.model import Semantics
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.views.gate_checks import (
    CHECKS,
    DEFAULT_FAIL_ON,
    OFFENDER_SCHEMA,
    GateContext,
    Status,
    parse_fail_on,
)

__all__ = [
    "CHECKS",
    "DEFAULT_FAIL_ON",
    "OFFENDER_SCHEMA",
    "CheckResult",
    "GateResult",
    "parse_fail_on",
    "run_checks",
]


@dataclass
class CheckResult:
    """One check's outcome.

    Attributes:
        name: the check.
        description: what an offender is.
        selected: the check is in ``fail_on``.
        status: ``pass`` (nothing found), ``fail`` (selected, found some),
            ``warn`` (not selected, found some), ``unevaluated`` (needs the
            listing, which fails).
        count: the number of offenders.
        offenders: one row per offender (``OFFENDER_SCHEMA``).
        note: why a check is unevaluated.
    """

    name: str
    description: str
    selected: bool
    status: Status
    count: int
    offenders: pl.DataFrame
    note: str | None = None

    @property
    def failed(self) -> bool:
        """The check makes the gate fail."""
        return self.selected and self.status in ("fail", "unevaluated")


@dataclass
class GateResult:
    """Every check's outcome for one corpus.

    Attributes:
        root: the corpus root.
        semantics: the listing semantics the catalog checks used.
        fail_on: the selected checks.
        checks: one result per check, in ``CHECKS`` order.
        window: the time window the offenders were kept from (``Window.describe``), if any.
    """

    root: str
    semantics: Semantics
    fail_on: tuple[str, ...]
    checks: list[CheckResult]
    window: str | None = None

    @property
    def failed(self) -> bool:
        """Some selected check fails (or cannot be evaluated)."""
        return any(check.failed for check in self.checks)

    @property
    def failing(self) -> list[str]:
        """Names of the checks that fail the gate."""
        return [check.name for check in self.checks if check.failed]

    @property
    def counts(self) -> dict[str, int]:
        """Offender count per check."""
        return {check.name: check.count for check in self.checks}

    def __getitem__(self, name: str) -> CheckResult:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (every offender included).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> run_checks(read_corpus(tempfile.mkdtemp())).to_dict()["failed"]
            False
        """
        return {
            "root": self.root,
            "semantics": self.semantics,
            "window": self.window,
            "failed": self.failed,
            "fail_on": list(self.fail_on),
            "failing": self.failing,
            "checks": [
                {
                    "name": check.name,
                    "description": check.description,
                    "selected": check.selected,
                    "status": check.status,
                    "count": check.count,
                    "note": check.note,
                    "offenders": check.offenders.to_dicts(),
                }
                for check in self.checks
            ],
        }


def _outside(corpus: Corpus, window: Window | None) -> pl.Series | None:
    """The paths of the session files a bounded window leaves out (``None``: no window)."""
    if window is None or not window.bounded:
        return None
    return corpus.sessions.filter(~window.expr("created_at", corpus.sessions.schema["created_at"]))["path"]


def run_checks(
    corpus: Corpus,
    *,
    fail_on: Iterable[str] | None = None,
    semantics: Semantics = "projection",
    window: Window | None = None,
) -> GateResult:
    """Run every check on a corpus.

    Args:
        corpus: a read corpus.
        fail_on: the checks that fail the gate when they find anything
            (default ``DEFAULT_FAIL_ON``); the others only warn.
        semantics: the listing semantics for the catalog checks
            (``unsupported`` is only produced by ``trace``).
        window: keep only the offenders of sessions created in this window
            (offenders that are no session file, such as corpus-level
            problems, are kept); the checks run on the whole corpus, so the
            listing and its rows are upstream's.

    Raises:
        ValueError: an unknown check name in ``fail_on``.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> result = run_checks(read_corpus(tempfile.mkdtemp()), fail_on=["corrupt"])
        >>> result.failed, result["corrupt"].status, result["torn-tail"].selected
        (False, 'pass', False)
    """
    chosen = DEFAULT_FAIL_ON if fail_on is None else parse_fail_on(",".join(fail_on))
    ctx = GateContext(corpus, semantics)
    outside = _outside(corpus, window)
    results: list[CheckResult] = []
    for check in CHECKS:
        selected = check.name in chosen
        if check.needs_listing and corpus.listing_error is not None:
            results.append(
                CheckResult(
                    check.name,
                    check.description,
                    selected,
                    "unevaluated",
                    0,
                    pl.DataFrame(schema=OFFENDER_SCHEMA),
                    note="upstream's listing fails as a whole, so there are no listing rows to check",
                )
            )
            continue
        try:
            offenders = check.offenders(ctx)
            if outside is not None:
                offenders = offenders.filter(~pl.col("path").is_in(outside.implode()).fill_null(False))
        except CatalogError as error:
            results.append(
                CheckResult(
                    check.name,
                    check.description,
                    selected,
                    "unevaluated",
                    0,
                    pl.DataFrame(schema=OFFENDER_SCHEMA),
                    note=error.message,
                )
            )
            continue
        status: Status = "pass" if offenders.height == 0 else "fail" if selected else "warn"
        results.append(CheckResult(check.name, check.description, selected, status, offenders.height, offenders))
    shown = window.describe() if window is not None and window.bounded else None
    return GateResult(root=corpus.root, semantics=semantics, fail_on=tuple(chosen), checks=results, window=shown)
