"""The data-quality gate: named checks over a corpus, pass or fail.

Each check is data (``Check``): a name, what it means, and a function
that returns the offending sessions (or corpus entries) as a frame with the
columns of ``OFFENDER_SCHEMA``. ``run_checks`` runs every check and
marks the ones named in ``fail_on`` as failing when they find anything; the
others are reported as warnings. A check that needs the listing cannot run
when upstream's listing fails as a whole; it is ``unevaluated`` and, when
selected, fails the gate (the gate fails closed).

A corpus without a listed session (no session file at all, a wrong mount;
or only files upstream's listing skips) fails the gate whatever the
selection, unless ``allow_empty``. Thresholds (``max_count``, ``max_rate``)
and a baseline of known offenders (``subagent_catalog.analysis.gate_policy``)
let a selected check find some offenders and still pass (``tolerated``).

The formatters (``views.gate_format``: ``format_text``, ``format_markdown``,
``format_json``) render a ``GateResult`` for terminals, CI job
summaries and machines.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from subagent_catalog.analysis.findings import load_rules
from subagent_catalog.analysis.gate_checks import (
    CHECKS,
    DEFAULT_FAIL_ON,
    OFFENDER_SCHEMA,
    GateContext,
    Status,
    parse_fail_on,
)
from subagent_catalog.analysis.gate_findings import finding_offenders, parse_finding_gates
from subagent_catalog.analysis.gate_policy import FORMAT_NAME, FORMAT_VERSION, Baseline, check_limits, mark_known
from subagent_catalog.analysis.window import Window
from subagent_catalog.catalog.model import Semantics
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.schemas import SESSION_SCHEMA
from subagent_catalog.frames.source import Source

__all__ = [
    "CHECKS",
    "DEFAULT_FAIL_ON",
    "OFFENDER_SCHEMA",
    "READ_BY_GATE",
    "UNREAD_BY_GATE",
    "CheckResult",
    "EmptyCorpus",
    "GateResult",
    "empty_corpus",
    "parse_fail_on",
    "run_checks",
]

READ_BY_GATE: tuple[str, ...] = (
    "list_order",
    "session_id",
    "path",
    "listed",
    "list_skip",
    "created_at_ms",
    "verdict",
    "read_cause",
    "read_message",
    "read_line",
    "usage_samples",  # what ``cost_usd`` is computed from, so the frames keep their ``cost_usd``
)
"""The few ``sessions`` columns ``run_checks`` reads (its listing checks read the archive out of core)."""

UNREAD_BY_GATE: tuple[str, ...] = tuple(name for name in SESSION_SCHEMA if name not in READ_BY_GATE)
"""What ``run_checks`` leaves unread: every other column."""


@dataclass
class CheckResult:
    """One check's outcome.

    Attributes:
        name: the check.
        description: what an offender is.
        selected: the check is in ``fail_on``.
        status: ``pass`` (nothing found), ``fail`` (selected, found more
            than it tolerates), ``tolerated`` (selected, found some, but all
            in the baseline or within its thresholds), ``warn`` (not
            selected, found some), ``unevaluated`` (needs the listing, which
            fails).
        count: the number of offenders.
        offenders: one row per offender (``OFFENDER_SCHEMA``; with a
            baseline also ``in_baseline``).
        note: why a check is unevaluated.
        known: offenders the baseline already holds (0 without one).
        max_count: the most offenders tolerated (``max_count``), if given.
        max_rate: the largest tolerated share of the session files, if given.
        rate: new offenders per session file (``None`` when there is no session file).
    """

    name: str
    description: str
    selected: bool
    status: Status
    count: int
    offenders: pl.DataFrame
    note: str | None = None
    known: int = 0
    max_count: int | None = None
    max_rate: float | None = None
    rate: float | None = None

    @property
    def new(self) -> int:
        """The offenders the baseline does not hold (all of them without a baseline)."""
        return self.count - self.known

    @property
    def failed(self) -> bool:
        """The check makes the gate fail."""
        return self.selected and self.status in ("fail", "unevaluated")


@dataclass(frozen=True)
class EmptyCorpus:
    """Why a corpus counts as empty: it has no session upstream lists.

    Attributes:
        message: what was found (no session file, or only skipped ones).
        hint: what to look at.
        allowed: ``allow_empty`` was given, so it does not fail the gate.
    """

    message: str
    hint: str
    allowed: bool = False


@dataclass
class GateResult:
    """Every check's outcome for one corpus.

    Attributes:
        root: the corpus root.
        semantics: the listing semantics the catalog checks used.
        fail_on: the selected checks (with those a threshold selects).
        checks: one result per check, in ``CHECKS`` order.
        window: the time window the offenders were kept from (``Window.describe``), if any.
        session_files: the corpus's session files (skipped ones included).
        listed_sessions: those upstream's listing lists.
        window_files: the session files created in the window (``None`` without a window).
        empty: set when the corpus has no listed session.
        baseline: the baseline file the offenders were compared with, if any.
    """

    root: str
    semantics: Semantics
    fail_on: tuple[str, ...]
    checks: list[CheckResult]
    window: str | None = None
    session_files: int = 0
    listed_sessions: int = 0
    window_files: int | None = None
    empty: EmptyCorpus | None = None
    baseline: str | None = None

    @property
    def selected_checks(self) -> int:
        """The checks selected to fail the gate."""
        return sum(1 for check in self.checks if check.selected)

    @property
    def new_offenders(self) -> int:
        """The offenders no baseline holds, over every check."""
        return sum(check.new for check in self.checks)

    @property
    def denominator(self) -> int:
        """What ``max_rate`` divides by: the session files (of the window, when there is one)."""
        return self.session_files if self.window_files is None else self.window_files

    @property
    def empty_fails(self) -> bool:
        """The corpus is empty and that was not allowed."""
        return self.empty is not None and not self.empty.allowed

    @property
    def failed(self) -> bool:
        """The corpus is empty (not allowed), or some selected check fails (or cannot be evaluated)."""
        return self.empty_fails or any(check.failed for check in self.checks)

    @property
    def known(self) -> int:
        """Offenders (of every check) the baseline already holds."""
        return sum(check.known for check in self.checks)

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
            >>> data = run_checks(read_corpus(tempfile.mkdtemp())).to_dict()
            >>> data["format_version"], data["failed"], data["empty"]["message"]
            (1, True, "no session files under '/tmp/...'")
        """
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "root": self.root,
            "semantics": self.semantics,
            "window": self.window,
            "failed": self.failed,
            "fail_on": list(self.fail_on),
            "failing": self.failing,
            "session_files": self.session_files,
            "listed_sessions": self.listed_sessions,
            "window_files": self.window_files,
            "empty": None if self.empty is None else asdict(self.empty),
            "baseline": None if self.baseline is None else {"path": self.baseline, "known": self.known},
            "checks": [
                {
                    "name": check.name,
                    "description": check.description,
                    "selected": check.selected,
                    "status": check.status,
                    "count": check.count,
                    "new": check.new,
                    "known": check.known,
                    "max": check.max_count,
                    "max_rate": check.max_rate,
                    "rate": check.rate,
                    "note": check.note,
                    "offenders": check.offenders.to_dicts(),
                }
                for check in self.checks
            ],
        }


EMPTY_HINT = (
    "is it the right directory, and mounted? A root holds <project>/<session>/session.jsonl or "
    "session.jsonl.zstd; pass --allow-empty if an empty corpus is expected"
)


def empty_corpus(corpus: Corpus, *, allowed: bool = False) -> EmptyCorpus | None:
    """Why the corpus counts as empty (no session file, or none upstream lists), or ``None``.

    A corpus whose files are damaged but listed is not empty: its checks
    report the damage.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> empty_corpus(read_corpus(tempfile.mkdtemp())).message
        "no session files under '/tmp/...'"
    """
    sessions = corpus.sessions
    if sessions.height and bool(sessions["listed"].any()):
        return None
    if sessions.height:
        message = (
            f"no listed session under {corpus.root!r}: upstream's listing skips all {sessions.height} "
            "session files (empty, half-written or without a valid header; see skipped-header)"
        )
        return EmptyCorpus(message, "check how the logs were copied; " + EMPTY_HINT, allowed)
    hint = EMPTY_HINT
    if corpus.problems.filter(pl.col("kind") == "encoding-mismatch").height:
        hint = "its logs use the other encoding than the one it was read as (see corpus-error); " + hint
    return EmptyCorpus(f"no session files under {corpus.root!r}", hint, allowed)


def _judge(result: CheckResult, offenders: pl.DataFrame, denominator: int) -> CheckResult:
    """Set the status of an evaluated check from its (new) offenders and thresholds."""
    max_count, max_rate = result.max_count, result.max_rate
    known = int(offenders["in_baseline"].sum()) if "in_baseline" in offenders.columns else 0
    new = offenders.height - known
    rate = new / denominator if denominator else None
    if offenders.height == 0:
        status: Status = "pass"
    elif not result.selected:
        status = "warn"
    else:
        limit = max_count if max_count is not None else None if max_rate is not None else 0
        too_many = limit is not None and new > limit
        too_often = max_rate is not None and new > 0 and (rate is None or rate > max_rate)
        status = "fail" if too_many or too_often else "tolerated"
    result.status, result.count, result.offenders = status, offenders.height, offenders
    result.known, result.rate = known, rate
    return result


def run_checks(
    corpus: Source,
    *,
    fail_on: Iterable[str] | None = None,
    semantics: Semantics = "projection",
    window: Window | None = None,
    allow_empty: bool = False,
    max_count: Mapping[str, int] | None = None,
    max_rate: Mapping[str, float] | None = None,
    baseline: Baseline | None = None,
    fail_on_finding: Sequence[str] = (),
    finding_rules: str | os.PathLike[str] | None = None,
) -> GateResult:
    """Run every check on a corpus.

    Args:
        corpus: a read corpus or an opened archive (``store.source.Source``).
        fail_on: the checks that fail the gate when they find anything
            (default ``DEFAULT_FAIL_ON``); the others only warn.
        semantics: the listing semantics for the catalog checks
            (``unsupported`` is only produced by ``trace``).
        window: keep only the offenders of sessions created in this window
            (offenders that are no session file, such as corpus-level
            problems, are kept); the checks run on the whole corpus, so the
            listing and its rows are upstream's. A window that keeps no
            session is not an empty corpus.
        allow_empty: a corpus without a listed session passes (by default it
            fails the gate, whatever ``fail_on`` selects).
        max_count: per check, the most (new) offenders it may find and pass;
            naming a check selects it.
        max_rate: per check, the largest share of the session files (of the
            window, when there is one) its (new) offenders may make; naming
            a check selects it. With both limits a check fails when it
            exceeds either.
        baseline: an earlier result's offenders (``gate_policy.load_baseline``):
            only offenders it does not hold count.
        fail_on_finding: ``KIND`` or ``KIND:SEVERITY`` values (``gate_findings``): each is a
            selected check ``finding:...`` whose offenders are the findings of that kind (at that
            severity or worse); a kind is a built-in detector or a rule of ``finding_rules``.
        finding_rules: a TOML rules file (docs/findings.md) whose rules ``fail_on_finding`` may name.

    Raises:
        ValueError: an unknown check name in ``fail_on``, ``max_count`` or
            ``max_rate``, or a limit out of range.
        BaselineError: the baseline was written with other semantics.
        FindingsError: an unknown finding kind or severity, a malformed rules file.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> empty = read_corpus(tempfile.mkdtemp())
        >>> result = run_checks(empty, fail_on=["corrupt"])
        >>> result.failed, result.empty is not None, result["corrupt"].status, result["torn-tail"].selected
        (True, True, 'pass', False)
        >>> run_checks(empty, allow_empty=True).failed
        False
    """
    counts, rates = dict(max_count or {}), dict(max_rate or {})
    check_limits(counts, rates)
    finding_gates = parse_finding_gates(fail_on_finding, load_rules(finding_rules) if finding_rules is not None else [])
    source = corpus
    if baseline is not None:
        baseline.check_semantics(semantics)
    chosen = DEFAULT_FAIL_ON if fail_on is None else parse_fail_on(",".join(fail_on))
    chosen = (*chosen, *(c.name for c in CHECKS if c.name not in chosen and (c.name in counts or c.name in rates)))
    ctx = GateContext(corpus.frames(without=UNREAD_BY_GATE), semantics, listing=corpus)  # listed out of core
    corpus = ctx.corpus  # a corpus, or an archive's frames
    bounded = window if window is not None and window.bounded else None
    # the paths of the session files a bounded window leaves out (created_at_ms: exact in any year)
    outside = None if bounded is None else corpus.sessions.filter(~bounded.expr("created_at_ms", pl.Int64()))["path"]
    files = corpus.sessions.height
    window_files = None if outside is None else files - outside.len()
    denominator = files if window_files is None else window_files

    def kept(name: str, offenders: pl.DataFrame) -> pl.DataFrame:
        """The offenders of the window, those the baseline does not hold first."""
        if outside is not None:
            offenders = offenders.filter(~pl.col("path").is_in(outside.implode()).fill_null(False))
        if baseline is not None:
            offenders = mark_known(name, offenders, corpus.root, baseline).sort("in_baseline", maintain_order=True)
        return offenders

    results: list[CheckResult] = []
    for check in CHECKS:
        selected = check.name in chosen
        result = CheckResult(
            check.name,
            check.description,
            selected,
            "unevaluated",
            0,
            pl.DataFrame(schema=OFFENDER_SCHEMA),
            max_count=counts.get(check.name),
            max_rate=rates.get(check.name),
        )
        results.append(result)
        if check.needs_listing and corpus.listing_error is not None:
            result.note = "upstream's listing fails as a whole, so there are no listing rows to check"
            continue
        try:
            offenders = check.offenders(ctx)
        except CatalogError as error:
            result.note = error.message
            continue
        _judge(result, kept(check.name, offenders), denominator)
    found = finding_offenders(source, source.to_corpus(), finding_gates, finding_rules) if finding_gates else {}
    for gate in finding_gates:
        offenders = kept(gate.name, found[gate.name])
        result = CheckResult(gate.name, gate.description, True, "unevaluated", 0, offenders)
        results.append(_judge(result, offenders, denominator))
    chosen = (*chosen, *(gate.name for gate in finding_gates))
    shown = None if bounded is None else bounded.describe()
    return GateResult(
        root=corpus.root,
        semantics=semantics,
        fail_on=tuple(chosen),
        checks=results,
        window=shown,
        session_files=files,
        listed_sessions=int(corpus.sessions["listed"].sum()) if files else 0,
        window_files=window_files,
        empty=empty_corpus(corpus, allowed=allow_empty),
        baseline=None if baseline is None else baseline.path,
    )
