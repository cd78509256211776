"""The report's "Errors" section, its search index of failed runs, and the failing calls of each tool.

``errors_section`` gives the failed runs grouped by error code and normalised message
(``RunSummary.error_groups``): runs, outcomes, first and last seen, the known cost with the runs of
unknown cost, and an example linked to its row of the "Failed runs" table (``fail-N``: the table lists each
shown group's example, ``RunSummary.listed_failures``). ``error_index`` is what the report's search matches
besides the tree: each failed run's code and message (bounded), with its row and tree node. ``failing_calls``
lists, per tool of the Tools table, its calls answered with an error (``tool-fails-N`` anchors the tool's first
call), so the table's failed counts lead to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from markupsafe import Markup

from subagent_catalog.analysis.run_summary import RunSummary
from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.units import clock
from subagent_catalog.views.names import name_html
from subagent_catalog.views.run_format import group_cost

ERROR_GROUP_ROWS = 50
"""Error groups the section lists (the most runs first; the count says how many there are)."""

INDEX_ROWS = 5000
"""Failed runs the search index holds (in the Failed runs table's order)."""

INDEX_MESSAGE = 300
"""Characters of a failed run's message the search index keeps."""

CALLS_PER_TOOL = 10
"""Failing calls listed per tool."""


def errors_section(runs: RunSummary, rows: Mapping[str, int]) -> dict[str, Any]:
    """The "Errors" section's rows; ``rows`` gives the Failed runs table's row of a run by its log's path.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> runs = run_summary(read_corpus("data/sample"))
        >>> listed = runs.listed_failures(1, ERROR_GROUP_ROWS)["path"].to_list()
        >>> section = errors_section(runs, {path: i for i, path in enumerate(listed)})
        >>> coded = [g for g in section["groups"] if g["code"]]
        >>> coded[0]["code"], all(g["example_row"] is not None for g in section["groups"]), section["total"]
        ('CONTEXT_LENGTH', True, 7)
    """
    groups = [
        {
            "code": g["code"],
            "message": clip(g["message"], 200) if g["message"] else None,
            "runs": f"{g['runs']:,}",
            "outcomes": g["outcomes"],
            "first": clock(g["first_seen_ms"], seconds=False).removesuffix(" UTC") or "–",
            "last": clock(g["last_seen_ms"], seconds=False).removesuffix(" UTC") or "–",
            "cost": group_cost(g),
            "example_id": g["example_session_id"],
            "example_html": Markup(
                name_html(
                    g["example_session_id"],
                    label=g["example_label"],
                    name=g["example_name"],
                    href=f"#fail-{rows[g['example_path']]}" if g["example_path"] in rows else None,
                )
            ),
            "example_message": clip(g["example_message"], 300) if g["example_message"] else None,
            "example_row": rows.get(g["example_path"]),
        }
        for g in runs.error_groups.head(ERROR_GROUP_ROWS).iter_rows(named=True)
    ]
    return {"groups": groups, "total": runs.error_groups.height}


def error_index(runs: RunSummary, rows: Mapping[str, int], nodes: Mapping[str, int] | None) -> list[dict[str, Any]]:
    """The failed runs the report's search matches by error: id, code, message, Failed-runs row and tree node.

    ``rows`` gives the Failed runs table's row of a run by its log's path.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> index = error_index(run_summary(read_corpus("data/sample")), {}, None)
        >>> [e for e in index if e["c"]][0]["c"], len(index)
        ('CONTEXT_LENGTH', 7)
    """
    frame = runs.failures.head(INDEX_ROWS).select("session_id", "error_code", "error_message", "outcome_detail", "path")
    return [
        {
            "i": sid,
            "c": code,
            "m": clip(message or detail, INDEX_MESSAGE) if message or detail else None,
            "r": rows.get(path),
            "n": nodes.get(sid) if nodes is not None and sid is not None else None,
        }
        for sid, code, message, detail, path in frame.iter_rows()
    ]


def failing_calls(runs: RunSummary, tools: int) -> list[dict[str, Any]]:
    """Per tool of the Tools table's first ``tools`` rows with failures: its first failing calls and how many.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> calls = failing_calls(run_summary(read_corpus("data/sample")), 30)
        >>> calls[0]["name"], calls[0]["calls"][0]["session"], calls[0]["calls"][0]["code"]
        ('read_file', 'check-sql', 'EXIT_NONZERO')
    """
    shown = runs.tools.head(tools).filter(pl.col("failed") > 0)
    out = []
    for index, name in enumerate(shown["name"].to_list()):
        mine = runs.failing_calls.filter(pl.col("name").eq_missing(name))
        out.append(
            {
                "anchor": f"tool-fails-{index}",
                "name": name,
                "total": mine.height,
                "calls": [
                    {
                        "session": c["session_id"],
                        "where": f"turn {c['turn']}, step {c['step']}" if c["turn"] is not None else "",
                        "time": clock(c["time_ms"]).removesuffix(" UTC"),
                        "code": c["error_code"],
                        "error": c["error_name"],
                    }
                    for c in mine.head(CALLS_PER_TOOL).iter_rows(named=True)
                ],
            }
        )
    return out
