"""Findings as text for a terminal and as a Markdown table (``subagent-catalog findings``).

A session is named as every text view names one (``views.names.name_text``: its name, then its short
id), from the labels and names the caller looked up (``views.names.names_by_id``); without them, by id.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import polars as pl

from subagent_catalog.analysis.findings.schema import EVIDENCE_CLIP, finding_counts, worst_runs
from subagent_catalog.views.names import name_text
from subagent_catalog.views.text import md_cell

Names = Mapping[str, tuple[str | None, str | None]]
"""Labels and names by session id (``views.names.names_by_id``)."""

__all__ = ["findings_lines", "findings_markdown", "findings_tally", "position"]


def position(row: dict[str, object], *, dash: str = "-") -> str:
    """Where a finding's evidence is: ``turn 3 step 2 seq 40-58`` (``dash`` between a range's ends), or ``whole run``.

    Examples:
        >>> position({"turn": 3, "step": 2, "seq": 40, "seq_end": 58})
        'turn 3 step 2 seq 40-58'
        >>> position({"turn": None, "step": None, "seq": None, "seq_end": None})
        'whole run'
        >>> position({"turn": None, "step": 1, "seq": 4, "seq_end": 6}, dash="–")
        'step 1 seq 4–6'
    """
    parts = [f"{name} {row[name]}" for name in ("turn", "step") if row.get(name) is not None]
    if row.get("seq") is not None:
        end = row.get("seq_end")
        parts.append(f"seq {row['seq']}" + (f"{dash}{end}" if end is not None and end != row["seq"] else ""))
    return " ".join(parts) or "whole run"


def _session(session_id: str | None, names: Names | None) -> str:
    if session_id is None:
        return "(no readable id)"
    label, name = (names or {}).get(session_id, (None, None))
    return name_text(session_id, label=label, name=name)


def findings_lines(found: pl.DataFrame, names: Names | None = None) -> Iterator[str]:
    """The text format: a line per session (in list order), then its findings and their evidence, indented.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.findings import findings
        >>> lines = list(findings_lines(findings(read_corpus("data/findings"), detectors=["tool-loop"])))
        >>> print("\\n".join(lines))
        loop-yes  (--work-findings--)  1 finding
          warn   tool-loop  turn 1 step 1 seq 4-20: read_file called 4 times in a row with the same arguments (16 bytes)
                 read_file({"path": "a.py"})
    """
    counts = dict(finding_counts(found, "list_order").select("list_order", "findings").iter_rows())
    current: int | None = None
    for row in found.iter_rows(named=True):
        if row["list_order"] != current:
            current = row["list_order"]
            count = counts[current]
            many = "s" if count != 1 else ""
            yield f"{_session(row['session_id'], names)}  ({row['project_dir']})  {count} finding{many}"
        yield f"  {row['severity']:<5}  {row['kind']}  {position(row)}: {row['message']}"
        if row["evidence"]:
            yield f"         {row['evidence']}"


def findings_tally(found: pl.DataFrame) -> str:
    """One line: how many findings, in how many sessions, by severity and by kind.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.findings import findings
        >>> findings_tally(findings(read_corpus("data/findings"), detectors=["tool-loop", "stalled"]))
        '2 findings in 2 sessions (warn 2; stalled 1, tool-loop 1)'
        >>> findings_tally(findings(read_corpus("data/findings"), detectors=[]))
        '0 findings'
    """
    if found.height == 0:
        return "0 findings"
    severities, kinds = (
        ", ".join(f"{v} {n}" for v, n in finding_counts(found, by).sort(by).select(by, "findings").rows())
        for by in ("severity", "kind")
    )
    sessions = worst_runs(found).height
    plural = "s" if found.height != 1 else ""
    return f"{found.height} finding{plural} in {sessions} session{'s' if sessions != 1 else ''} ({severities}; {kinds})"


def findings_markdown(found: pl.DataFrame, names: Names | None = None) -> str:
    """A Markdown table of the findings (every cell escaped by ``md_cell``: no markup of the corpus is live).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.findings import findings
        >>> print(findings_markdown(findings(read_corpus("data/findings"), detectors=["stalled"])))
        ... # doctest: +NORMALIZE_WHITESPACE
        | session | kind | severity | where | message | evidence |
        |---|---|---|---|---|---|
        | stalled-yes | stalled | warn | whole run | open, and no event for 2 h before the corpus's last event
          | outcome detail: the last turn never ended |
    """
    lines = ["| session | kind | severity | where | message | evidence |", "|---|---|---|---|---|---|"]
    for row in found.iter_rows(named=True):
        cells = (
            _session(row["session_id"], names),
            row["kind"],
            row["severity"],
            position(row),
            row["message"],
            row["evidence"],
        )
        lines.append("| " + " | ".join(md_cell(cell, limit=EVIDENCE_CLIP) for cell in cells) + " |")
    return "\n".join(lines)
