"""The data-quality gate's checks.

Each check is a name, a default and a function from a ``GateContext``
(the corpus, its catalog rows, deviations) to offender rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import polars as pl

from subagent_catalog.catalog.deviations import deviations
from subagent_catalog.catalog.model import CorpusSource, Semantics
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.frames.corpus import Corpus

Status = Literal["pass", "fail", "warn", "tolerated", "unevaluated"]


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

    def __init__(self, corpus: Corpus, semantics: Semantics, *, listing: CorpusSource | None = None) -> None:
        self.corpus = corpus
        self.semantics: Semantics = semantics
        self.listing: CorpusSource = corpus if listing is None else listing
        """What the listing checks read: the corpus, or the archive it came from (read out of core)."""

    @cached_property
    def catalog(self) -> pl.DataFrame:
        """Every parent's listing rows (raises ``CatalogError`` when the listing fails)."""
        return catalog(self.listing, semantics=self.semantics)


@dataclass(frozen=True)
class Check:
    """One named data-quality check.

    Attributes:
        name: the name ``--fail-on`` uses.
        description: one line saying what an offender is.
        source: the frame it counts from.
        default: part of the default ``fail_on`` set.
        needs_listing: cannot run when upstream's listing fails as a whole.
        offenders: returns the offenders frame (``OFFENDER_SCHEMA``).
    """

    name: str
    description: str
    source: Source
    default: bool
    needs_listing: bool
    offenders: Callable[[GateContext], pl.DataFrame] = field(repr=False)


def _offenders(frame: pl.DataFrame, **columns: pl.Expr) -> pl.DataFrame:
    """The offender rows of ``frame`` (``session_id`` and ``path`` its own unless ``columns`` says otherwise)."""
    columns = {"session_id": pl.col("session_id"), "path": pl.col("path"), **columns}
    exprs = [columns.get(name, pl.lit(None)).cast(dtype).alias(name) for name, dtype in OFFENDER_SCHEMA.items()]
    return frame.select(exprs) if frame.height else pl.DataFrame(schema=OFFENDER_SCHEMA)


def _problems(problems: pl.DataFrame) -> pl.DataFrame:
    """``problems`` rows as offenders: their kind, message and line."""
    return _offenders(problems, cause=pl.col("kind"), detail=pl.col("message"), line=pl.col("line"))


def _corpus_error(ctx: GateContext) -> pl.DataFrame:
    corpus = ctx.corpus
    rows = _problems(corpus.problems.filter(pl.col("fails_listing")))
    if corpus.listing_error is not None and rows.height == 0:
        row = {"path": corpus.listing_error_path, "cause": "listing-failed", "detail": corpus.listing_error}
        rows = pl.DataFrame([row], schema=OFFENDER_SCHEMA)
    return rows


def _catalog_reason(reason: str) -> Callable[[GateContext], pl.DataFrame]:
    def count(ctx: GateContext) -> pl.DataFrame:
        rows = ctx.catalog.filter((pl.col("kind") == "diagnostic") & (pl.col("reason") == reason))
        return _offenders(
            rows,
            session_id=pl.col("id"),
            cause=pl.col("cause"),
            detail=pl.col("cause_detail"),
        )

    return count


def _lineage_error(ctx: GateContext) -> pl.DataFrame:
    rows = ctx.catalog.filter(pl.col("kind") == "error")
    return _offenders(
        rows,
        session_id=pl.col("parent"),
        cause=pl.col("reason"),
        detail=pl.col("cause_detail"),
    )


def _descriptor_status(status: str) -> Callable[[GateContext], pl.DataFrame]:
    def count(ctx: GateContext) -> pl.DataFrame:
        rows = ctx.corpus.descriptors.filter(pl.col("status") == status)
        per_session = rows.group_by("path", maintain_order=True).agg(
            pl.col("session_id").first(),
            pl.col("version").first(),
            pl.format("seq {}: {}", pl.col("seq"), pl.col("reason").fill_null("?")).str.join("; ").alias("detail"),
        )
        cause = "unknown-descriptor-version" if status == "unknown-version" else "malformed-descriptor"
        return _offenders(
            per_session,
            cause=pl.lit(cause),
            detail=pl.col("detail"),
        )

    return count


def _problem_kind(kind: str) -> Callable[[GateContext], pl.DataFrame]:
    def count(ctx: GateContext) -> pl.DataFrame:
        return _problems(ctx.corpus.problems.filter(pl.col("kind") == kind))

    return count


def _verdict(verdict: str, kinds: Iterable[str] | None) -> Callable[[GateContext], pl.DataFrame]:
    chosen = tuple(kinds) if kinds is not None else None

    def count(ctx: GateContext) -> pl.DataFrame:
        problems = ctx.corpus.problems.filter(pl.col("scope") == "file")
        if chosen is not None:
            problems = problems.filter(pl.col("kind").is_in(list(chosen)))
        first = problems.group_by("path", maintain_order=True).agg(  # the first problem of each path
            pl.col("kind").first().alias("problem_kind"),
            pl.col("message").first().alias("problem_message"),
            pl.col("line").first().alias("problem_line"),
        )
        sessions = ctx.corpus.sessions.filter(pl.col("verdict") == verdict)
        joined = sessions.join(first, on="path", how="left")
        return _offenders(
            joined,
            cause=pl.coalesce(pl.col("read_cause"), pl.col("list_skip"), pl.col("problem_kind"), pl.lit(verdict)),
            detail=pl.coalesce(pl.col("read_message"), pl.col("problem_message")),
            line=pl.coalesce(pl.col("read_line"), pl.col("problem_line")),
        )

    return count


def _deviation(ctx: GateContext) -> pl.DataFrame:
    rows = deviations(ctx.listing)
    return _offenders(
        rows,
        session_id=pl.col("id"),
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
        _verdict("failed", None),
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
