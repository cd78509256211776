"""The report's "Runs" section: the page data for how runs ended, what failed, what was slow or costly.

``runs_section`` turns a ``RunSummary`` into plain, bounded values the template shows (every
figure already formatted, every text clipped; the template escapes), and draws the timelines of the
largest trees (``views.timeline_view``). A session of the failures table that the tree holds gets
its tree node, so its "reveal" button opens the tree down to it. A run without a descriptor label
(a root, a fork) is shown by its name (the ``name`` column: its title or first prompt).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from markupsafe import Markup

from subagent_catalog.analysis.forest import Forest
from subagent_catalog.analysis.run_summary import RunSummary
from subagent_catalog.analysis.text import clip
from subagent_catalog.analysis.timeline import tree_timeline
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.units import (
    NO_TIME,
    OUT_OF_RANGE,
    TOKEN_LABELS,
    clock,
    human_count,
    human_duration,
    partial_cost,
    plural,
    share,
    time_split,
)
from subagent_catalog.views.names import name_html, names_by_id, session_name
from subagent_catalog.views.palette import OUTCOME_COLOURS
from subagent_catalog.views.report_data import relative_path
from subagent_catalog.views.report_errors import ERROR_GROUP_ROWS, error_index, errors_section, failing_calls
from subagent_catalog.views.report_trends import trends_section
from subagent_catalog.views.run_format import model_cost, run_cost, total_tokens
from subagent_catalog.views.site_links import SiteLinks
from subagent_catalog.views.table_columns import columns
from subagent_catalog.views.timeline_view import timeline_html

FAILURE_ROWS = 50
"""Failed sessions the page lists of each failed outcome (each outcome says how many more it has)."""

GROUP_ROWS = 40
"""Projects and days the outcome tables list (the most failed projects, the latest days)."""

TOOL_ROWS = 30
"""Tools the tool table lists (the most failed first)."""

TIMELINES = 3
"""Trees whose timeline the page draws (the largest)."""


def _named(sid: str | None, names: Mapping[str, tuple[str | None, str | None]], link: SiteLinks | None) -> Markup:
    label, name = names.get(sid, (None, None)) if sid is not None else (None, None)
    if link is not None:
        return Markup(link.name(sid, label=label, name=name))
    return Markup(name_html(sid, label=label, name=name))


Nodes = Mapping[str, int]
"""Tree nodes by session id (``Forest.index``, or ``report_data.node_index``)."""

NameMap = Mapping[str, tuple[str | None, str | None]]
"""A session's label and name by its id (``names_by_id``)."""


def _run_row(
    row: dict[str, Any],
    forest: Nodes | None,
    root: str,
    parents: NameMap,
    link: SiteLinks | None = None,
) -> dict[str, Any]:
    node = forest.get(row["session_id"]) if forest is not None and row["session_id"] is not None else None
    message = row["error_message"] or row["outcome_detail"]
    name = row["name"]
    return {
        "id": row["session_id"],
        "label": row["label"],
        "name": name,
        "name_html": Markup(
            link.name(row["session_id"], label=row["label"], name=name)
            if link is not None
            else name_html(row["session_id"], label=row["label"], name=name)
        ),
        "parent": row["parent_session"],
        "parent_html": _named(row["parent_session"], parents, link),
        "outcome": row["outcome"],
        "message": clip(message, 400) if message else None,
        "code": row["error_code"],
        "start": clock(row["start_ms"], seconds=False).removesuffix(" UTC"),
        "wall": human_duration(row["wall_ms"]),
        "active": human_duration(row["active_ms"]),
        "split": time_split({**row, "run_wall_ms": row["wall_ms"]}),
        "llm": human_duration(row["llm_ms"]),
        "tool": human_duration(row["tool_ms"]),
        "tokens": human_count(row["tokens"]),
        "cost": run_cost(row),
        "node": node,
        "path": clip(relative_path(row["path"], root), 300),
    }


def _tree_row(row: dict[str, Any], forest: Nodes | None, tops: NameMap, link: SiteLinks | None) -> dict[str, Any]:
    return {
        "id": row["session_id"],
        "name_html": _named(row["session_id"], tops, link),
        "node": forest.get(row["session_id"]) if forest is not None and row["session_id"] else None,
        "sessions": f"{row['sessions']:,}",
        "failed": row["failed"],
        "depth": row["max_depth"],
        "peak": row["peak_children_running"],
        "wall": human_duration(row["wall_ms"]),
        "active": human_duration(row["active_ms"]),
        "tokens": human_count(row["tokens"]),
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


def runs_section(
    corpus: Corpus, runs: RunSummary, forest: Forest | Nodes | None, *, link: SiteLinks | None = None
) -> dict[str, Any]:
    """The "Runs" section's values for the report template.

    ``forest`` gives each shown session its tree node (the forest, or its
    nodes by session id alone: ``report_data.node_index``); ``None`` shows
    no tree links. ``link`` (``report --site``) links every session a row
    names to its page, or says why it has none.

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
    listed = runs.listed_failures(FAILURE_ROWS, ERROR_GROUP_ROWS)
    row_of = {path: i for i, path in enumerate(listed["path"].to_list())}  # a listed run's row (``fail-N``)
    slowest_trees, costliest_trees = runs.slowest_trees(), runs.costliest_trees()
    drawn = runs.trees.head(TIMELINES)
    shown_tops = pl.concat([frame["session_id"] for frame in (slowest_trees, costliest_trees, drawn)])
    parents = pl.concat([frame["parent_session"] for frame in (listed, runs.slowest, runs.costliest)])
    trees_by_top = {
        sid: tree_timeline(corpus, sid, trees=runs.tree_rows)
        for sid in drawn["session_id"].to_list()
        if sid is not None
    }
    unlabelled = [sid for rows in trees_by_top.values() for sid in rows.filter(pl.col("label").is_null())["session_id"]]
    named = names_by_id(corpus, [*shown_tops.to_list(), *parents.to_list(), *unlabelled])
    timelines = []

    def label(row: dict[str, Any]) -> str:
        sid = row.get("session_id")
        known = named.get(sid, (None, None)) if sid is not None else (None, None)
        href = link.href(sid) if link is not None else None
        name = name_html(sid, label=row.get("label") or known[0], name=known[1], href=href)
        if href is not None:  # a linked name: its page (the tables' reveal buttons open the tree)
            return name
        node = nodes.get(sid) if nodes is not None and sid is not None else None
        if node is None:
            return name
        tip = escape(clip(sid, 300))
        return f'<button type="button" class="reveal linkish" data-node="{node}" title="{tip}">{name}</button>'

    for row in drawn.iter_rows(named=True):
        if row["session_id"] is None:
            continue
        rows = trees_by_top[row["session_id"]]
        top_label, top_name = named.get(row["session_id"], (None, None))
        title = session_name(top_label, top_name) or row["session_id"]
        caption = f"{title} · {plural(rows.height, 'session')} · " + (
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
            "input": human_count(r["input_tokens"]),
            "cache_read": human_count(r["cache_read_tokens"]),
            "cache_write": human_count(r["cache_write_tokens"]),
            "output": human_count(r["output_tokens"]),
            "cost": model_cost(r),
            "unpriced": r["cost_usd"] is None,
        }
        for r in runs.models.iter_rows(named=True)
    ]
    failing = failing_calls(runs, TOOL_ROWS)
    ranked = "cost" if runs.cost_basis == "cost" else "tokens"
    called = names_by_id(corpus, [c["session"] for entry in failing for c in entry["calls"]])
    for entry in failing:
        for c in entry["calls"]:
            c["session_html"] = _named(c["session"], called, link)
    anchors = {entry["name"]: entry["anchor"] for entry in failing}
    tools = [
        {
            "name": r["name"],
            "anchor": anchors.get(r["name"]),
            "calls": f"{r['calls']:,}",
            "failed": r["failed"],
            "no_result": r["no_result"],
            "rate": share(r["failure_rate"]),
            "codes": r["top_error_codes"],
        }
        for r in runs.tools.head(TOOL_ROWS).iter_rows(named=True)
    ]
    return {
        "sessions": runs.sessions,
        "failed": runs.failed,
        "per_outcome": FAILURE_ROWS,
        "outcomes": runs.outcomes,
        "outcome_names": outcomes,
        "colours": OUTCOME_COLOURS,
        "wall": human_duration(totals["wall_ms"]),
        "active": human_duration(totals["active_ms"]),
        "llm": human_duration(totals["llm_ms"]),
        "tool": human_duration(totals["tool_ms"]),
        "busy": human_duration(totals["tool_busy_ms"]),
        "labels": TOKEN_LABELS,
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
        "by_day": _outcome_rows(runs.by_day.tail(GROUP_ROWS), "bin", outcomes),
        "days_total": runs.by_day.height,
        "failures": [_run_row(r, nodes, corpus.root, named, link) for r in listed.iter_rows(named=True)],
        "slowest": [_run_row(r, nodes, corpus.root, named, link) for r in runs.slowest.iter_rows(named=True)],
        "costliest": [_run_row(r, nodes, corpus.root, named, link) for r in runs.costliest.iter_rows(named=True)],
        "slowest_trees": [_tree_row(r, nodes, named, link) for r in slowest_trees.iter_rows(named=True)],
        "costliest_trees": [_tree_row(r, nodes, named, link) for r in costliest_trees.iter_rows(named=True)],
        "site": link is not None,
        "cols": {  # each run and tree table's columns (``views.table_columns``), the ranked one first
            "failures": columns("runs", first=["message"], drop=["outcome"]),  # its outcome heads its group
            "slowest": columns("runs", first=["active"], drop=["message", "code"]),
            "costliest": columns("runs", first=[ranked], drop=["message", "code"]),
            "slowest_trees": columns("trees", first=["active"]),
            "costliest_trees": columns("trees", first=[ranked]),
        },
        "trees_total": runs.trees.height,
        "models": models,
        "unpriced": [
            {k: r[k] for k in ("provider", "model", "sessions", "steps", "reason")}
            for r in runs.unpriced.iter_rows(named=True)
        ],
        "tools": tools,
        "tools_total": runs.tools.height,
        "failing_calls": failing,
        "errors": errors_section(runs, row_of),
        "error_index": error_index(runs, row_of, nodes),
        "trends": trends_section(runs),
        "timelines": timelines,
        "timelines_total": runs.trees.height,
    }
