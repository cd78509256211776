"""``check --fail-on-finding KIND[:SEVERITY]``: findings as gate checks, one per requested kind.

A finding check is named ``finding:KIND`` (``finding:KIND:SEVERITY`` when a least severity is
given); its offenders are the findings of that kind at that severity or worse, one row each
(``cause`` the kind, ``detail`` the severity, the message and where the evidence is; no ``line``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from subagent_catalog.analysis.findings import DETECTORS, SEVERITIES, FindingsError, Rule, findings, load_rules
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.source import Source

__all__ = ["FindingGate", "finding_offenders", "parse_finding_gates"]


@dataclass(frozen=True)
class FindingGate:
    """One ``--fail-on-finding`` value: a finding kind and the least severity that counts."""

    kind: str
    severity: str = "info"
    spelled: str = ""

    @property
    def name(self) -> str:
        """The check's name in the gate's results."""
        return f"finding:{self.spelled or self.kind}"

    @property
    def description(self) -> str:
        """One line saying what an offender is."""
        worse = "" if self.severity == "info" else f" of severity {self.severity} or worse"
        return f"findings of kind {self.kind}{worse} (docs/findings.md)"


def parse_finding_gates(values: Sequence[str], rules: Sequence[Rule] = ()) -> list[FindingGate]:
    """Parse ``--fail-on-finding`` values: comma-separated ``KIND`` or ``KIND:SEVERITY`` (a detector or a rule).

    Raises:
        FindingsError: an unknown kind or severity.

    Examples:
        >>> [g.name for g in parse_finding_gates(["tool-loop,stalled:warn"])]
        ['finding:tool-loop', 'finding:stalled:warn']
        >>> parse_finding_gates(["nothing"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.findings.options.FindingsError: unknown finding kind 'nothing' (hint: a detector ...
    """
    kinds = set(DETECTORS) | {rule.name for rule in rules}
    gates: list[FindingGate] = []
    for value in values:
        for part in value.split(","):
            spelled = part.strip()
            if not spelled:
                continue
            kind, _, severity = spelled.partition(":")
            if kind not in kinds:
                raise FindingsError(
                    f"unknown finding kind {kind!r}",
                    hint=f"a detector ({', '.join(DETECTORS)}) or a rule of --rules",
                )
            if severity and severity not in SEVERITIES:
                raise FindingsError(
                    f"unknown severity {severity!r} in {spelled!r}", hint=f"one of {', '.join(SEVERITIES)}"
                )
            gate = FindingGate(kind, severity or "info", spelled)
            if gate not in gates:
                gates.append(gate)
    return gates


def finding_offenders(
    source: Source, corpus: Corpus, gates: Sequence[FindingGate], rules: str | os.PathLike[str] | None
) -> dict[str, pl.DataFrame]:
    """Each finding check's offenders (``gate_checks.OFFENDER_SCHEMA`` columns), by check name.

    Only the detectors the gates name run (and the rules, when a gate names one of them).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> found = finding_offenders(corpus, corpus, parse_finding_gates(["stalled"]), None)
        >>> found["finding:stalled"].select("session_id", "cause", "line").rows()
        [('stalled-yes', 'stalled', None)]
    """
    loaded = load_rules(rules) if rules is not None else []
    names = {rule.name for rule in loaded}
    detectors = sorted({gate.kind for gate in gates if gate.kind in DETECTORS})
    wanted = [rule for rule in loaded if any(gate.kind == rule.name for gate in gates)]
    found = findings(source, detectors=detectors, rules=wanted) if gates else None
    paths = corpus.sessions.select("list_order", "path")
    seq = pl.col("seq").cast(pl.String)
    span = pl.when(pl.col("seq_end").is_not_null() & (pl.col("seq_end") != pl.col("seq")))
    seqs = span.then(pl.format("seq {}-{}", seq, pl.col("seq_end"))).otherwise(pl.format("seq {}", seq))
    where = pl.when(pl.col("seq").is_null()).then(pl.lit("whole run")).otherwise(seqs)
    out: dict[str, pl.DataFrame] = {}
    for gate in gates:
        if gate.kind not in DETECTORS and gate.kind not in names:  # pragma: no cover - parse_finding_gates refuses it
            raise FindingsError(f"unknown finding kind {gate.kind!r}")
        assert found is not None
        least = SEVERITIES.index(gate.severity)
        rows = found.filter((pl.col("kind") == gate.kind) & pl.col("severity").is_in(list(SEVERITIES[least:])))
        out[gate.name] = rows.join(paths, on="list_order", how="left").select(
            pl.col("session_id").cast(pl.String),
            pl.col("path").cast(pl.String),
            pl.col("kind").alias("cause"),
            pl.format("{}: {} ({})", "severity", "message", where).alias("detail"),
            pl.lit(None, pl.Int64).alias("line"),
        )
    return out
