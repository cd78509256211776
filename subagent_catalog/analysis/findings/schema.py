"""What a finding is: one row naming a session, a kind, a severity, where its evidence starts and ends, and why.

A finding is a pattern in a run that an auditor wants to look at (a tool called with the same
arguments again and again, a turn drowned in failing calls, a child whose result never reached its
parent). Every detector returns rows of ``FINDING_SCHEMA``; ``finding_frame`` builds the frame and
orders it (``list_order``, then ``seq`` with unknown positions last, then ``kind``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import polars as pl

__all__ = [
    "EVIDENCE_CLIP",
    "FINDING_SCHEMA",
    "SEVERITIES",
    "Finding",
    "Severity",
    "clip_evidence",
    "finding_counts",
    "finding_frame",
    "project_counts",
    "severity_rank",
    "worst_runs",
]

Severity = Literal["info", "warn", "error"]
SEVERITIES: tuple[Severity, ...] = ("info", "warn", "error")
"""The severities, least first (``check --fail-on-finding KIND:warn`` fails on ``warn`` and ``error``)."""

EVIDENCE_CLIP = 300
"""Characters of evidence a finding keeps (``…`` marks a cut)."""

FINDING_SCHEMA: dict[str, pl.DataType] = {
    "list_order": pl.Int64(),
    "session_id": pl.String(),
    "project_dir": pl.String(),
    "kind": pl.String(),
    "severity": pl.String(),
    "turn": pl.Int64(),
    "step": pl.Int64(),
    "seq": pl.Int64(),
    "seq_end": pl.Int64(),
    "message": pl.String(),
    "evidence": pl.String(),
}
"""The columns of ``findings``: the session (``list_order`` in the corpus's ``sessions``, its id and
project folder), ``kind`` (the detector or the user rule that found it), ``severity`` (``SEVERITIES``),
where the evidence is (the ``turn`` and ``step`` of its first event, the ``seq`` of that event and
``seq_end`` of its last one; null when the finding is about the whole run), ``message`` (one sentence
with the figures) and ``evidence`` (an excerpt, clipped to ``EVIDENCE_CLIP`` characters)."""


@dataclass(frozen=True)
class Finding:
    """One finding, before it is a row (``finding_frame`` makes the rows)."""

    list_order: int
    session_id: str | None
    project_dir: str | None
    kind: str
    severity: Severity
    message: str
    evidence: str = ""
    turn: int | None = None
    step: int | None = None
    seq: int | None = None
    seq_end: int | None = None

    @classmethod
    def about(
        cls,
        session: Mapping[str, Any],
        kind: str,
        severity: Severity,
        message: str,
        evidence: str = "",
        turn: int | None = None,
        step: int | None = None,
        seq: int | None = None,
        seq_end: int | None = None,
    ) -> Finding:
        """A finding about a session row: its ``list_order``, ``session_id`` and ``project_dir``, then the rest.

        Examples:
            >>> Finding.about({"list_order": 0, "session_id": "s", "project_dir": "p"}, "stalled", "warn", "open").kind
            'stalled'
        """
        order, session_id, project = session["list_order"], session["session_id"], session["project_dir"]
        return cls(order, session_id, project, kind, severity, message, evidence, turn, step, seq, seq_end)


def clip_evidence(text: str, limit: int = EVIDENCE_CLIP) -> str:
    """Evidence text with its whitespace folded, clipped to ``limit`` characters (``…`` marks the cut).

    Examples:
        >>> clip_evidence("a\\n  b")
        'a b'
        >>> clip_evidence("x" * 10, 4)
        'xxx…'
    """
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: limit - 1] + "…"


def finding_frame(found: list[Finding]) -> pl.DataFrame:
    """The rows of some findings, in ``FINDING_SCHEMA``, ordered by session, position and kind.

    Examples:
        >>> rows = [Finding(1, "b", None, "stalled", "warn", "stalled")]
        >>> rows.append(Finding(0, "a", None, "fan-out", "info", "m", seq=4))
        >>> finding_frame(rows).select("session_id", "kind", "seq").rows()
        [('a', 'fan-out', 4), ('b', 'stalled', None)]
    """
    rows = [{**asdict(f), "evidence": clip_evidence(f.evidence)} for f in found]
    frame = pl.DataFrame(rows, schema=FINDING_SCHEMA)
    return frame.sort(["list_order", "seq", "seq_end", "kind", "message"], nulls_last=True, maintain_order=True)


def finding_counts(found: pl.DataFrame, by: str) -> pl.DataFrame:
    """Findings counted by one column (``kind``, ``severity``, ``project_dir``): the one tally every view shows.

    Columns: ``by``, ``findings``, ``runs`` (sessions with one), ``projects`` and ``worst`` (severity);
    the most findings first, then by ``by``.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.findings import findings
        >>> found = findings(read_corpus("data/findings"), detectors=["tool-loop", "stalled"])
        >>> finding_counts(found, "kind").rows()
        [('stalled', 1, 1, 1, 'warn'), ('tool-loop', 1, 1, 1, 'warn')]
    """
    return (
        found.group_by(by)
        .agg(
            pl.len().cast(pl.Int64).alias("findings"),
            pl.col("list_order").n_unique().cast(pl.Int64).alias("runs"),
            pl.col("project_dir").n_unique().cast(pl.Int64).alias("projects"),
            _severity_name(severity_rank().max()).alias("worst"),
        )
        .sort(["findings", by], descending=[True, False], nulls_last=True)
    )


def severity_rank() -> pl.Expr:
    """A finding's severity as its rank in ``SEVERITIES`` (``info`` 0 to ``error`` 2).

    Examples:
        >>> pl.DataFrame({"severity": ["error", "info"]}).select(severity_rank())["severity"].to_list()
        [2, 0]
    """
    return pl.col("severity").replace_strict(list(SEVERITIES), range(len(SEVERITIES)), return_dtype=pl.Int64)


def _severity_name(rank: pl.Expr) -> pl.Expr:
    return rank.replace_strict(range(len(SEVERITIES)), list(SEVERITIES), return_dtype=pl.String)


def worst_runs(found: pl.DataFrame) -> pl.DataFrame:
    """The runs with findings, the worst first: ``list_order``, ``session_id``, ``project_dir``, ``worst``.

    ``findings`` counts each run's; the worst is its most severe; ties go to more findings, then list order.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.findings import findings
        >>> found = findings(read_corpus("data/findings"), detectors=["tool-loop", "stalled"])
        >>> worst_runs(found).select("worst", "findings").rows()
        [('warn', 1), ('warn', 1)]
    """
    runs = found.group_by("list_order").agg(
        pl.col("session_id").first(),
        pl.col("project_dir").first(),
        severity_rank().max().alias("worst"),
        pl.len().cast(pl.Int64).alias("findings"),
    )
    runs = runs.sort(["worst", "findings", "list_order"], descending=[True, True, False])
    return runs.with_columns(_severity_name(pl.col("worst")))


def project_counts(found: pl.DataFrame, kinds: int = 3) -> pl.DataFrame:
    """``finding_counts`` by ``project_dir`` with each project's ``kinds`` most frequent kinds (``top_kinds``).

    ``top_kinds`` is a list of ``{kind, findings}``, the most first, ties by name.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.findings import findings
        >>> found = findings(read_corpus("data/findings"), detectors=["tool-loop", "stalled"])
        >>> project_counts(found)["top_kinds"].to_list()[0]
        [{'kind': 'stalled', 'findings': 1}, {'kind': 'tool-loop', 'findings': 1}]
    """
    per_kind = found.group_by("project_dir", "kind").len("findings").with_columns(pl.col("findings").cast(pl.Int64))
    per_kind = per_kind.sort(["findings", "kind"], descending=[True, False])
    top = per_kind.group_by("project_dir", maintain_order=True).agg(
        pl.struct("kind", "findings").head(kinds).alias("top_kinds")
    )
    counts = finding_counts(found, "project_dir")
    return counts.join(top, on="project_dir", how="left", nulls_equal=True, maintain_order="left")
