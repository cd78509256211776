"""The report's "Findings" section: findings counted by kind and by project, and the worst runs with their evidence.

``findings_section`` gives the template three tables over ``analysis.findings.findings``' frame:
the kinds (findings, runs, projects, the worst severity), the projects (findings, runs, the kinds
most found there) and the worst runs (the worst severity first, then the most findings), each run
named and, in a linked site (``report --site``), linked to its page, every finding's evidence
linking to its step there (``#seq-N``).
"""

from __future__ import annotations

from typing import Any

import polars as pl
from markupsafe import Markup

from subagent_catalog.analysis.findings.schema import finding_counts, project_counts, severity_rank, worst_runs
from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.views.findings_text import position
from subagent_catalog.views.names import name_html, names_by_id
from subagent_catalog.views.site_links import SiteLinks

__all__ = ["FINDINGS_PER_RUN", "FINDING_RUN_ROWS", "findings_section"]

FINDING_RUN_ROWS = 50
"""Runs the worst-runs table lists (the count says how many runs have findings)."""
FINDINGS_PER_RUN = 20
"""Findings listed under one run."""
PROJECT_ROWS = 30
"""Projects the project table lists (the most findings first)."""


def findings_section(corpus: Corpus, found: pl.DataFrame, *, link: SiteLinks | None = None) -> dict[str, Any]:
    """The "Findings" section's values for the report template.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.findings import findings
        >>> corpus = read_corpus("data/findings")
        >>> section = findings_section(corpus, findings(corpus))
        >>> section["total"], section["runs_total"], section["kinds"][0]["kind"], section["worst"][0]["severity"]
        (11, 11, 'context-growth', 'error')
    """
    runs, projects = worst_runs(found), project_counts(found)
    shown = runs.head(FINDING_RUN_ROWS)
    names = names_by_id(corpus, [sid for sid in shown["session_id"].to_list() if sid is not None])
    worst = []
    for run in shown.iter_rows(named=True):
        sid = run["session_id"]
        label, name = names.get(sid, (None, None)) if sid is not None else (None, None)
        href = link.href(sid) if link is not None else None
        rows = found.filter(pl.col("list_order") == run["list_order"]).sort(
            severity_rank(), "seq", descending=[True, False], maintain_order=True
        )
        items = [
            {
                "kind": row["kind"],
                "severity": row["severity"],
                "where": position(row, dash="–"),
                "href": f"{href}#seq-{row['seq']}" if href is not None and row["seq"] is not None else None,
                "message": clip(row["message"], 300),
                "evidence": clip(row["evidence"], 300) if row["evidence"] else None,
            }
            for row in rows.head(FINDINGS_PER_RUN).iter_rows(named=True)
        ]
        kinds = ", ".join(dict.fromkeys(rows["kind"].to_list()))
        worst.append(
            {
                "name_html": Markup(
                    link.name(sid, label=label, name=name)
                    if link is not None
                    else name_html(sid, label=label, name=name)
                ),
                "severity": run["worst"],
                "count": f"{run['findings']:,}",
                "kinds": kinds,
                "project": run["project_dir"],
                "items": items,
                "more": max(0, rows.height - FINDINGS_PER_RUN),
            }
        )
    return {
        "total": found.height,
        "runs_total": runs.height,
        "kinds": [
            {
                "kind": r["kind"],
                "severity": r["worst"],
                "findings": f"{r['findings']:,}",
                "runs": f"{r['runs']:,}",
                "projects": f"{r['projects']:,}",
            }
            for r in finding_counts(found, "kind").iter_rows(named=True)
        ],
        "projects": [
            {
                "project": r["project_dir"],
                "findings": f"{r['findings']:,}",
                "runs": f"{r['runs']:,}",
                "kinds": ", ".join(f"{k['kind']} {k['findings']:,}" for k in r["top_kinds"]),
            }
            for r in projects.head(PROJECT_ROWS).iter_rows(named=True)
        ],
        "projects_total": projects.height,
        "worst": worst,
        "note": None,
    }
