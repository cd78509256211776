"""The report's "Runs" section: the page data for how runs ended, what failed, what was slow or costly.

``runs_section`` turns a ``RunSummary`` into plain, bounded values the template shows (every
figure already formatted, every text clipped; the template escapes), and draws the timelines of the
largest trees (``views.timeline_view``). A session of the failures table that the tree holds gets
its tree node, so its "reveal" button opens the tree down to it. A run without a descriptor label
(a root, a fork) is shown by its name (``analysis.run_names``: its title or first prompt), read from
the events of the listed rows only, when the source has events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from subagent_catalog.analysis.forest import Forest
from subagent_catalog.analysis.run_names import run_names
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES, RunSummary
from subagent_catalog.analysis.text import clip
from subagent_catalog.analysis.timeline import tree_timeline
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.units import (
    NO_TIME,
    OUT_OF_RANGE,
    clock,
    human_count,
    human_duration,
    partial_cost,
    plural,
    time_split,
)
from subagent_catalog.store.source import events_available, origin_archive
from subagent_catalog.views.report_data import relative_path
from subagent_catalog.views.run_format import model_cost, run_cost, total_tokens
from subagent_catalog.views.timeline_view import OUTCOME_COLOURS, timeline_html

FAILURE_ROWS = 200
"""Failed sessions the page lists (the count says how many there are)."""

GROUP_ROWS = 40
"""Projects and days the outcome tables list (the most failed projects, the latest days)."""

TOOL_ROWS = 30
"""Tools the tool table lists (the most failed first)."""

TIMELINES = 3
"""Trees whose timeline the page draws (the largest)."""


def _tokens(value: int | None) -> str:
    return human_count(value)


def run_row_names(corpus: Corpus, tables: Iterable[pl.DataFrame]) -> dict[int, str]:
    """The names (title or first prompt) of the rows of run tables that have no label, by list order.

    Only those rows' logs are read (over an archive, its events table); an archive exported
    without events gives none.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> corpus = read_corpus("data/sample")
        >>> names = run_row_names(corpus, [run_summary(corpus).slowest])
        >>> names[8]  # run-webapp-1, a root: its first prompt
        'task 1 for run-webapp-1'
    """
    wanted = sorted(
        {
            order
            for table in tables
            for order, label in table.select("list_order", "label").iter_rows()
            if label is None and order is not None
        }
    )
    archive = origin_archive(corpus)  # a window of an archive: its rows are named by the archive's events
    if not wanted or (archive is None and not events_available(corpus)):
        return {}
    # Over an archive its events table names the rows (none without one): the report's frames
    # of an archive leave out the columns a read of the root's logs would need.
    found = run_names(archive if archive is not None else corpus, list_orders=wanted).drop_nulls("name")
    return dict(zip(found["list_order"].to_list(), found["name"].to_list(), strict=True))


Nodes = Mapping[str, int]
"""Tree nodes by session id (``Forest.index``, or ``report_data.node_index``)."""


def _run_row(row: dict[str, Any], forest: Nodes | None, root: str, names: dict[int, str]) -> dict[str, Any]:
    node = forest.get(row["session_id"]) if forest is not None and row["session_id"] is not None else None
    message = row["error_message"] or row["outcome_detail"]
    return {
        "id": row["session_id"],
        "label": row["label"],
        "name": names.get(row["list_order"]) if row["label"] is None else None,
        "parent": row["parent_session"],
        "outcome": row["outcome"],
        "message": clip(message, 400) if message else None,
        "code": row["error_code"],
        "start": clock(row["start_ms"], seconds=False).removesuffix(" UTC"),
        "wall": human_duration(row["wall_ms"]),
        "active": human_duration(row["active_ms"]),
        "split": time_split({**row, "run_wall_ms": row["wall_ms"]}),
        "llm": human_duration(row["llm_ms"]),
        "tool": human_duration(row["tool_ms"]),
        "tokens": _tokens(row["tokens"]),
        "cost": run_cost(row),
        "node": node,
        "path": clip(relative_path(row["path"], root), 300),
    }


def _tree_row(row: dict[str, Any], forest: Nodes | None) -> dict[str, Any]:
    return {
        "id": row["session_id"],
        "node": forest.get(row["session_id"]) if forest is not None and row["session_id"] else None,
        "sessions": f"{row['sessions']:,}",
        "failed": row["failed"],
        "depth": row["max_depth"],
        "peak": row["peak_children_running"],
        "wall": human_duration(row["wall_ms"]),
        "active": human_duration(row["active_ms"]),
        "tokens": _tokens(row["tokens"]),
        "cost": run_cost(row),
    }


_BIN_TEXT = {NO_TIME: "(no time)", OUT_OF_RANGE: "(out of range: before year 1 or after 9999)"}
"""How the labelled day bins read in the report."""


def _outcome_rows(frame: pl.DataFrame, key: str, outcomes: list[str]) -> list[dict[str, Any]]:
    """Rows of an outcome count table, each with its bar segments (outcome, count, percent of the row)."""
    out = []
    for row in frame.iter_rows(named=True):
        total = row["sessions"] or 1
        segments = [(name, row.get(name, 0), 100 * row.get(name, 0) / total) for name in outcomes if row.get(name)]
        value = row[key]
        out.append(
            {
                "key": _BIN_TEXT.get(value, value) if key == "bin" else str(value) if value is not None else "(none)",
                "sessions": row["sessions"],
                "failed": row["failed"],
                "counts": [row.get(name, 0) for name in outcomes],
                "segments": segments,
            }
        )
    return out


def _timeline_label(forest: Nodes | None) -> Any:
    def label(row: dict[str, Any]) -> str:
        sid = row.get("session_id")
        name = escape(clip(row.get("label") or sid or "(no id)", 80))
        tip = escape(clip(f"{sid or '(no id)'} · {row.get('label') or ''}", 300))
        node = forest.get(sid) if forest is not None and sid is not None else None
        if node is None:
            return f'<span title="{tip}">{name}</span>'
        return f'<button type="button" class="reveal linkish" data-node="{node}" title="{tip}">{name}</button>'

    return label


def runs_section(corpus: Corpus, runs: RunSummary, forest: Forest | Nodes | None) -> dict[str, Any]:
    """The "Runs" section's values for the report template.

    ``forest`` gives each shown session its tree node (the forest, or its
    nodes by session id alone: ``report_data.node_index``); ``None`` shows
    no tree links.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> corpus = read_corpus("data/sample")
        >>> section = runs_section(corpus, run_summary(corpus), None)
        >>> section["failed"], section["failures"][0]["id"], section["failures"][0]["code"]
        (7, 'auth-refactor', 'CONTEXT_LENGTH')
    """
    nodes = forest.index if isinstance(forest, Forest) else forest
    outcomes = list(runs.outcomes)
    totals = runs.totals
    listed = runs.failures.head(FAILURE_ROWS)
    names = run_row_names(corpus, [listed, runs.slowest, runs.costliest])
    by_day = runs.by_day.tail(GROUP_ROWS) if runs.by_day.height > GROUP_ROWS else runs.by_day
    timelines = []
    label = _timeline_label(nodes)
    for row in runs.trees.head(TIMELINES).iter_rows(named=True):
        if row["session_id"] is None:
            continue
        rows = tree_timeline(corpus, row["session_id"], trees=runs.tree_rows)
        caption = f"{row['session_id']} · {plural(rows.height, 'session')} · " + (
            f"peak {plural(row['peak_children_running'], 'child', 'children')} at once"
            if row["peak_children_running"] is not None
            else "peak unknown"
        )
        timelines.append(timeline_html(rows, label=label, caption=caption))
    models = [
        {
            "provider": r["provider"],
            "model": r["model"],
            "seed": r["in_seed"],
            "sessions": f"{r['sessions']:,}",
            "steps": f"{r['steps']:,}",
            "input": _tokens(r["input_tokens"]),
            "cache_read": _tokens(r["cache_read_tokens"]),
            "cache_write": _tokens(r["cache_write_tokens"]),
            "output": _tokens(r["output_tokens"]),
            "cost": model_cost(r),
            "unpriced": r["cost_usd"] is None,
        }
        for r in runs.models.iter_rows(named=True)
    ]
    tools = [
        {
            "name": r["name"],
            "calls": f"{r['calls']:,}",
            "failed": r["failed"],
            "no_result": r["no_result"],
            "rate": "–" if r["failure_rate"] is None else f"{100 * r['failure_rate']:.1f}%",
            "codes": r["top_error_codes"],
        }
        for r in runs.tools.head(TOOL_ROWS).iter_rows(named=True)
    ]
    return {
        "sessions": runs.sessions,
        "failed": runs.failed,
        "failed_outcomes": [name for name in FAILED_OUTCOMES if name in runs.outcomes],
        "outcomes": runs.outcomes,
        "outcome_names": outcomes,
        "colours": OUTCOME_COLOURS,
        "wall": human_duration(totals["wall_ms"]),
        "active": human_duration(totals["active_ms"]),
        "llm": human_duration(totals["llm_ms"]),
        "tool": human_duration(totals["tool_ms"]),
        "busy": human_duration(totals["tool_busy_ms"]),
        "input": total_tokens(runs, "input_tokens"),
        "cache_read": total_tokens(runs, "cache_read_tokens"),
        "cache_write": total_tokens(runs, "cache_write_tokens"),
        "output": total_tokens(runs, "output_tokens"),
        "cost": partial_cost(totals["cost_usd"], totals["cost_usd_known"]),
        "cost_known": totals["cost_usd_known"] > 0,
        "cost_unknown": totals["cost_unknown"],
        "cost_unknown_parts": ", ".join(
            [f"{totals['unpriced_sessions']:,} unpriced"] * bool(totals["unpriced_sessions"])
            + [f"{totals['usage_unknown']:,} unreadable"] * bool(totals["usage_unknown"])
        ),
        "cost_rank": "by tokens: nothing is priced"
        if runs.cost_basis == "tokens"
        else "by known cost; ≥ is a lower bound",
        "notes": list(runs.notes),
        "unpriced_sessions": totals["unpriced_sessions"],
        "tool_calls": totals["tool_calls"],
        "tool_calls_failed": totals["tool_calls_failed"],
        "by_project": _outcome_rows(runs.by_project.head(GROUP_ROWS), "project_dir", outcomes),
        "projects_total": runs.by_project.height,
        "by_day": _outcome_rows(by_day, "bin", outcomes),
        "days_total": runs.by_day.height,
        "failures": [_run_row(r, nodes, corpus.root, names) for r in listed.iter_rows(named=True)],
        "slowest": [_run_row(r, nodes, corpus.root, names) for r in runs.slowest.iter_rows(named=True)],
        "costliest": [_run_row(r, nodes, corpus.root, names) for r in runs.costliest.iter_rows(named=True)],
        "slowest_trees": [_tree_row(r, nodes) for r in runs.slowest_trees().iter_rows(named=True)],
        "costliest_trees": [_tree_row(r, nodes) for r in runs.costliest_trees().iter_rows(named=True)],
        "trees_total": runs.trees.height,
        "models": models,
        "unpriced": [
            {k: r[k] for k in ("provider", "model", "sessions", "steps", "reason")}
            for r in runs.unpriced.iter_rows(named=True)
        ],
        "tools": tools,
        "tools_total": runs.tools.height,
        "timelines": timelines,
        "timelines_total": runs.trees.height,
    }
