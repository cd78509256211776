"""The data-quality gate: named checks over a corpus, pass or fail.

Each check is data (:class:`Check`): a name, what it means, and a function
that returns the offending sessions (or corpus entries) as a frame with the
columns of :data:`OFFENDER_SCHEMA`. :func:`run_checks` runs every check and
marks the ones named in ``fail_on`` as failing when they find anything; the
others are reported as warnings. A check that needs the listing cannot run
when upstream's listing fails as a whole; it is ``unevaluated`` and, when
selected, fails the gate (the gate fails closed).

The formatters (:func:`format_text`, :func:`format_markdown`,
:func:`format_json`) render a :class:`GateResult` for terminals, CI job
summaries and machines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import polars as pl

from subagent_catalog.catalog import Semantics, catalog, deviations
from subagent_catalog.corpus import Corpus
from subagent_catalog.errors import CatalogError

__all__ = [
    "CHECKS",
    "DEFAULT_FAIL_ON",
    "OFFENDER_SCHEMA",
    "Check",
    "CheckResult",
    "GateResult",
    "check_names",
    "format_json",
    "format_markdown",
    "format_text",
    "parse_fail_on",
    "printable",
    "run_checks",
]

Status = Literal["pass", "fail", "warn", "unevaluated"]
Source = Literal["listing", "sessions", "descriptors", "problems", "catalog"]

OFFENDER_SCHEMA: dict[str, Any] = {
    "session_id": pl.String,
    "path": pl.String,
    "cause": pl.String,
    "detail": pl.String,
    "line": pl.Int64,
}


class GateContext:
    """What the checks read: the corpus, the semantics, and the catalog (computed once).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> GateContext(read_corpus(tempfile.mkdtemp()), "projection").catalog.height
        0
    """

    def __init__(self, corpus: Corpus, semantics: Semantics) -> None:
        self.corpus = corpus
        self.semantics: Semantics = semantics

    @cached_property
    def catalog(self) -> pl.DataFrame:
        """Every parent's listing rows (raises ``CatalogError`` when the listing fails)."""
        return catalog(self.corpus, semantics=self.semantics)


@dataclass(frozen=True)
class Check:
    """One named data-quality check.

    Attributes:
        name: the name ``--fail-on`` uses.
        description: one line saying what an offender is.
        source: the frame it counts from.
        default: part of the default ``fail_on`` set.
        needs_listing: cannot run when upstream's listing fails as a whole.
        offenders: returns the offenders frame (:data:`OFFENDER_SCHEMA`).
    """

    name: str
    description: str
    source: Source
    default: bool
    needs_listing: bool
    offenders: Callable[[GateContext], pl.DataFrame] = field(repr=False)


def _offenders(frame: pl.DataFrame, **columns: pl.Expr) -> pl.DataFrame:
    exprs = [columns.get(name, pl.lit(None)).cast(dtype).alias(name) for name, dtype in OFFENDER_SCHEMA.items()]
    return frame.select(exprs) if frame.height else pl.DataFrame(schema=OFFENDER_SCHEMA)


def _first_problem(ctx: GateContext, kinds: Iterable[str] | None = None) -> pl.DataFrame:
    """The first problem message per path (optionally of the given kinds)."""
    problems = ctx.corpus.problems
    if kinds is not None:
        problems = problems.filter(pl.col("kind").is_in(list(kinds)))
    return (
        problems.filter(pl.col("scope") == "file")
        .group_by("path", maintain_order=True)
        .agg(
            pl.col("kind").first().alias("problem_kind"),
            pl.col("message").first().alias("problem_message"),
            pl.col("line").first().alias("problem_line"),
        )
    )


def _sessions_with(ctx: GateContext, verdict: str, kinds: Iterable[str] | None) -> pl.DataFrame:
    sessions = ctx.corpus.sessions.filter(pl.col("verdict") == verdict)
    joined = sessions.join(_first_problem(ctx, kinds), on="path", how="left")
    return _offenders(
        joined,
        session_id=pl.col("session_id"),
        path=pl.col("path"),
        cause=pl.coalesce(pl.col("read_cause"), pl.col("list_skip"), pl.col("problem_kind"), pl.lit(verdict)),
        detail=pl.coalesce(pl.col("read_message"), pl.col("problem_message")),
        line=pl.coalesce(pl.col("read_line"), pl.col("problem_line")),
    )


def _corpus_error(ctx: GateContext) -> pl.DataFrame:
    corpus = ctx.corpus
    rows = _offenders(
        corpus.problems.filter(pl.col("fails_listing")),
        session_id=pl.col("session_id"),
        path=pl.col("path"),
        cause=pl.col("kind"),
        detail=pl.col("message"),
        line=pl.col("line"),
    )
    if corpus.listing_error is not None and rows.height == 0:
        rows = pl.DataFrame(
            [
                {
                    "session_id": None,
                    "path": corpus.listing_error_path,
                    "cause": "listing-failed",
                    "detail": corpus.listing_error,
                    "line": None,
                }
            ],
            schema=OFFENDER_SCHEMA,
        )
    return rows


def _read_failed(ctx: GateContext) -> pl.DataFrame:
    return _sessions_with(ctx, "failed", None)


def _catalog_reason(reason: str) -> Callable[[GateContext], pl.DataFrame]:
    def count(ctx: GateContext) -> pl.DataFrame:
        rows = ctx.catalog.filter((pl.col("kind") == "diagnostic") & (pl.col("reason") == reason))
        return _offenders(
            rows,
            session_id=pl.col("id"),
            path=pl.col("path"),
            cause=pl.col("cause"),
            detail=pl.col("cause_detail"),
        )

    return count


def _lineage_error(ctx: GateContext) -> pl.DataFrame:
    rows = ctx.catalog.filter(pl.col("kind") == "error")
    return _offenders(
        rows,
        session_id=pl.col("parent"),
        path=pl.col("path"),
        cause=pl.col("reason"),
        detail=pl.col("cause_detail"),
    )


def _descriptor_status(status: str) -> Callable[[GateContext], pl.DataFrame]:
    def count(ctx: GateContext) -> pl.DataFrame:
        rows = ctx.corpus.descriptors.filter(pl.col("status") == status)
        if rows.height == 0:
            return pl.DataFrame(schema=OFFENDER_SCHEMA)
        per_session = rows.group_by("path", maintain_order=True).agg(
            pl.col("session_id").first(),
            pl.col("version").first(),
            pl.format("seq {}: {}", pl.col("seq"), pl.col("reason").fill_null("?")).str.join("; ").alias("detail"),
        )
        cause = "unknown-descriptor-version" if status == "unknown-version" else "malformed-descriptor"
        return _offenders(
            per_session,
            session_id=pl.col("session_id"),
            path=pl.col("path"),
            cause=pl.lit(cause),
            detail=pl.col("detail"),
        )

    return count


def _problem_kind(kind: str) -> Callable[[GateContext], pl.DataFrame]:
    def count(ctx: GateContext) -> pl.DataFrame:
        rows = ctx.corpus.problems.filter(pl.col("kind") == kind)
        return _offenders(
            rows,
            session_id=pl.col("session_id"),
            path=pl.col("path"),
            cause=pl.col("kind"),
            detail=pl.col("message"),
            line=pl.col("line"),
        )

    return count


def _verdict(verdict: str, kinds: Iterable[str] | None) -> Callable[[GateContext], pl.DataFrame]:
    chosen = tuple(kinds) if kinds is not None else None

    def count(ctx: GateContext) -> pl.DataFrame:
        return _sessions_with(ctx, verdict, chosen)

    return count


def _deviation(ctx: GateContext) -> pl.DataFrame:
    rows = deviations(ctx.corpus)
    return _offenders(
        rows,
        session_id=pl.col("id"),
        path=pl.col("path"),
        cause=pl.col("deviation"),
        detail=pl.format("projection {} / trace {}", pl.col("projection"), pl.col("trace")),
    )


CHECKS: tuple[Check, ...] = (
    Check(
        "corpus-error",
        "upstream's listing fails as a whole (legacy flat files, duplicate ids, misplaced headers, mixed encodings)",
        "listing",
        True,
        False,
        _corpus_error,
    ),
    Check(
        "read-failed",
        "session logs (any session) whose full read fails",
        "sessions",
        True,
        False,
        _read_failed,
    ),
    Check(
        "unavailable",
        "subagents listed as 'diagnostic: unavailable' (their log cannot be read)",
        "catalog",
        True,
        True,
        _catalog_reason("unavailable"),
    ),
    Check(
        "corrupt",
        "subagents listed as 'diagnostic: corrupt' (no usable identity, header mismatch, unit failure)",
        "catalog",
        True,
        True,
        _catalog_reason("corrupt"),
    ),
    Check(
        "unsupported",
        "subagents listed as 'diagnostic: unsupported' (only the trace semantics produce it)",
        "catalog",
        True,
        True,
        _catalog_reason("unsupported"),
    ),
    Check(
        "unsupported-version",
        "sessions holding a descriptor of a version other than 2 (status unknown-version)",
        "descriptors",
        True,
        False,
        _descriptor_status("unknown-version"),
    ),
    Check(
        "malformed-descriptor",
        "sessions holding a descriptor that fails v2 validation",
        "descriptors",
        True,
        False,
        _descriptor_status("malformed"),
    ),
    Check(
        "unknown-event-type",
        "logs holding an event type upstream does not know (not ignorable): they cannot be reconstructed",
        "problems",
        True,
        False,
        _problem_kind("unknown-event-type"),
    ),
    Check(
        "torn-tail",
        "logs whose final record lacks its newline (dropped; the rest reads)",
        "sessions",
        False,
        False,
        _verdict("torn-tail", None),
    ),
    Check(
        "prefix",
        "logs with a damaged record and no later turn end: only the valid prefix reads",
        "sessions",
        False,
        False,
        _verdict("prefix", None),
    ),
    Check(
        "skipped-header",
        "files upstream's listing skips (empty, half-written or not a valid header)",
        "sessions",
        False,
        False,
        _verdict("skipped", ("header-skipped",)),
    ),
    Check(
        "lineage-error",
        "parents whose trace-semantics listing fails (parent not listed, lineage cycle)",
        "catalog",
        False,
        True,
        _lineage_error,
    ),
    Check(
        "deviation",
        "subagents on which the projection and trace semantics disagree",
        "catalog",
        False,
        True,
        _deviation,
    ),
)

CHECKS_BY_NAME: dict[str, Check] = {check.name: check for check in CHECKS}
DEFAULT_FAIL_ON: tuple[str, ...] = tuple(check.name for check in CHECKS if check.default)


def check_names() -> list[str]:
    """Every check's name, in report order.

    Examples:
        >>> check_names()[:3]
        ['corpus-error', 'read-failed', 'unavailable']
    """
    return [check.name for check in CHECKS]


def parse_fail_on(text: str) -> tuple[str, ...]:
    """Parse a ``--fail-on`` value: comma-separated names, ``all``, ``default`` or ``none``.

    Raises:
        ValueError: an unknown check name.

    Examples:
        >>> parse_fail_on("corrupt, torn-tail")
        ('corrupt', 'torn-tail')
        >>> parse_fail_on("none")
        ()
        >>> parse_fail_on("default") == DEFAULT_FAIL_ON
        True
    """
    names: list[str] = []
    for part in text.split(","):
        name = part.strip()
        if not name or name == "none":
            continue
        expanded = check_names() if name == "all" else DEFAULT_FAIL_ON if name == "default" else (name,)
        for item in expanded:
            if item not in CHECKS_BY_NAME:
                raise ValueError(
                    f"unknown check {item!r} (hint: choose from {', '.join(check_names())}, all, default or none)"
                )
            if item not in names:
                names.append(item)
    return tuple(names)


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
        offenders: one row per offender (:data:`OFFENDER_SCHEMA`).
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
        checks: one result per check, in :data:`CHECKS` order.
    """

    root: str
    semantics: Semantics
    fail_on: tuple[str, ...]
    checks: list[CheckResult]

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


def run_checks(
    corpus: Corpus, *, fail_on: Iterable[str] | None = None, semantics: Semantics = "projection"
) -> GateResult:
    """Run every check on a corpus.

    Args:
        corpus: a read corpus.
        fail_on: the checks that fail the gate when they find anything
            (default :data:`DEFAULT_FAIL_ON`); the others only warn.
        semantics: the listing semantics for the catalog checks
            (``unsupported`` is only produced by ``trace``).

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
    return GateResult(root=corpus.root, semantics=semantics, fail_on=tuple(chosen), checks=results)


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: object, *, limit: int = 300) -> str:
    """A value made safe for a terminal line: control characters escaped, length bounded.

    Examples:
        >>> printable("a\\x1b[31mb\\nc")
        'a\\\\x1b[31mb\\\\nc'
        >>> printable("x" * 10, limit=4)
        'xxxx…'
        >>> printable(None)
        '-'
    """
    if text is None:
        return "-"
    value = str(text).replace("\n", "\\n").replace("\t", "\\t")
    value = _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", value
    )
    return value if len(value) <= limit else value[:limit] + "…"


def _status_word(check: CheckResult) -> str:
    if check.status == "fail":
        return "FAIL"
    if check.status == "unevaluated":
        return "UNEVALUATED" if check.selected else "unevaluated"
    if check.status == "warn":
        return "warn"
    return "ok"


def _unevaluated(result: GateResult) -> dict[str, list[str]]:
    """Selected checks that could not run, grouped by the reason."""
    notes: dict[str, list[str]] = {}
    for check in result.checks:
        if check.status == "unevaluated" and check.selected:
            notes.setdefault(check.note or "unknown reason", []).append(check.name)
    return notes


def format_text(result: GateResult, *, limit: int = 20) -> str:
    """The gate's terminal report: one line per check, then the offenders of each check that found any.

    Args:
        result: a gate result.
        limit: offenders shown per check (``0``: all).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> print(format_text(run_checks(read_corpus(tempfile.mkdtemp()))).splitlines()[0])
        check: PASSED (8 checks selected, semantics projection)
    """
    selected = sum(1 for check in result.checks if check.selected)
    verdict = f"FAILED: {', '.join(result.failing)}" if result.failed else "PASSED"
    lines = [
        f"check: {verdict} ({selected} checks selected, semantics {result.semantics})",
        f"root: {printable(result.root)}",
        "",
    ]
    width = max(len(check.name) for check in result.checks)
    for check in result.checks:
        mark = "*" if check.selected else " "
        lines.append(f" {mark} {check.name:<{width}}  {check.count:>7}  {_status_word(check)}")
    lines.append("   (* = in --fail-on)")
    for note, names in _unevaluated(result).items():
        lines += ["", f"not evaluated ({', '.join(names)}): {printable(note)}"]
    for check in result.checks:
        if check.count == 0:
            continue
        lines += ["", f"{check.name} ({check.count}): {check.description}"]
        shown = check.offenders if limit == 0 else check.offenders.head(limit)
        for row in shown.iter_rows(named=True):
            where = printable(row["path"], limit=200)
            at = f":{row['line']}" if row["line"] is not None else ""
            lines.append(f"  {printable(row['session_id'], limit=80)}  {where}{at}")
            lines.append(f"      {printable(row['cause'], limit=80)}: {printable(row['detail'])}")
        if shown.height < check.count:
            lines.append(f"  … and {check.count - shown.height} more (use --limit 0 or --format json for all)")
    return "\n".join(lines)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def _md(value: object, *, limit: int = 200) -> str:
    text = printable(value, limit=limit)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def format_markdown(result: GateResult, *, limit: int = 20) -> str:
    """The gate's report as GitHub-flavoured Markdown (for CI job summaries).

    Every value from the corpus is escaped (HTML and Markdown punctuation),
    so ids, paths and messages render as text.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> format_markdown(run_checks(read_corpus(tempfile.mkdtemp()))).splitlines()[0]
        '## subagent-catalog check: passed'
    """
    lines = [
        f"## subagent-catalog check: {'**failed**' if result.failed else 'passed'}",
        "",
        f"Root {_md(result.root, limit=400)}, semantics `{result.semantics}`.",
        "",
        "| check | selected | count | status | meaning |",
        "|---|:-:|--:|---|---|",
    ]
    for check in result.checks:
        lines.append(
            f"| `{check.name}` | {'yes' if check.selected else ''} | {check.count} | {_status_word(check)} "
            f"| {_md(check.description)} |"
        )
    for note, names in _unevaluated(result).items():
        lines += ["", f"**Not evaluated** ({', '.join(names)}): {_md(note)}"]
    for check in result.checks:
        if check.count == 0:
            continue
        lines += [
            "",
            f"### {check.name} ({check.count})",
            "",
            "| session | path | cause | detail |",
            "|---|---|---|---|",
        ]
        shown = check.offenders if limit == 0 else check.offenders.head(limit)
        for row in shown.iter_rows(named=True):
            path = _md(row["path"]) + (f":{row['line']}" if row["line"] is not None else "")
            lines.append(
                f"| {_md(row['session_id'], limit=80)} | {path} | {_md(row['cause'])} | {_md(row['detail'])} |"
            )
        if shown.height < check.count:
            lines += ["", f"… and {check.count - shown.height} more."]
    return "\n".join(lines)


def format_json(result: GateResult) -> str:
    """The gate's result as indented JSON (every offender included).

    Examples:
        >>> import json, tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> json.loads(format_json(run_checks(read_corpus(tempfile.mkdtemp()))))["failing"]
        []
    """
    return json.dumps(result.to_dict(), ensure_ascii=False, indent=2)
