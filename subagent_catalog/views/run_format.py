"""A ``RunSummary`` as terminal lines, as JSON values and as Markdown (``summary --format text|json|md``).

The three say the same: how runs ended, the failed ones, time, tokens, cost per model (unpriced
models named), tools with their failures, the slowest and costliest runs and the largest trees, each
session by its name and short id (``views.names.name_text``).
Text from the corpus is left as it is here: the CLI makes terminal output safe, and Markdown
cells go through ``views.text.md_cell`` (the one Markdown escaper).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

import polars as pl

from subagent_catalog.analysis.run_summary import RunSummary
from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.units import (
    TOKEN_LABELS,
    clock,
    exact_count,
    human_count,
    human_duration,
    partial_cost,
    plural,
    share,
)
from subagent_catalog.views.names import name_text
from subagent_catalog.views.text import md_cell

TOKENS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
"""The token quantities every view lists, in this order (labels: ``frames.units.TOKEN_LABELS``)."""

FAILED_LINES = 10
"""Failed runs the text and Markdown list by default (``limit``)."""

ERROR_GROUP_LINES = 5
"""Error groups the text lists (all of them with ``limit=0``)."""


def _model(row: dict[str, Any]) -> str:
    return f"{row['provider'] or '?'}/{row['model'] or '?'}"


def _example(group: Mapping[str, Any]) -> str:
    """An error group's example run, named as every text view names a session."""
    label, name, path = group["example_label"], group["example_name"], group["example_path"]
    return name_text(group["example_session_id"], label=label, name=name, path=path)


def _who(row: Mapping[str, Any]) -> str:
    """A run or a tree's top named as every text view names a session (``views.names.name_text``)."""
    return name_text(row["session_id"], label=row.get("label"), name=row.get("name"), path=row.get("path"))


def run_message(row: Mapping[str, Any], limit: int = 160) -> str:
    """What a run's error says (its message, else its outcome's detail) with its code, on one line.

    Examples:
        >>> run_message({"error_message": "boom", "outcome_detail": None, "error_code": "E1"})
        'boom (E1)'
    """
    text = row["error_message"] or row["outcome_detail"] or ""
    if row["error_code"] and row["error_code"] not in text:
        text = f"{text} ({row['error_code']})" if text else row["error_code"]
    return " ".join(clip(text, limit).split())


def run_cost(row: Mapping[str, Any]) -> str:
    """A run's (or a tree's) cost as the views show it: exact, a lower bound ``≥ $x``, or ``–``.

    Beside an unknown part: the sessions of unknown cost it leaves out (``cost_unknown``, a tree's).

    Examples:
        >>> run_cost({"cost_usd": None, "cost_usd_known": 13.0812, "cost_unknown": 2})
        '≥ $13.08 (2 sessions of unknown cost)'
        >>> run_cost({"cost_usd": 0.25, "cost_usd_known": 0.25}), run_cost({"cost_usd": None, "cost_usd_known": 0.0})
        ('$0.25', '–')
    """
    return partial_cost(row["cost_usd"], row["cost_usd_known"], unknown=row.get("cost_unknown"))


def costliest_text(runs: RunSummary, row: dict[str, Any]) -> str:
    """A row of the costliest runs or trees by what they rank by (``cost_basis``): its cost, or its tokens.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> runs = run_summary(read_corpus("data/sample"))
        >>> costliest_text(runs, runs.costliest_trees().row(0, named=True))
        '≥ $0.011 (1 session of unknown cost)'
    """
    return run_cost(row) if runs.cost_basis == "cost" else f"{human_count(row['tokens'])} tokens"


def total_cost(runs: RunSummary) -> str:
    """The corpus's cost: exact, or its known part as a lower bound and the sessions it leaves out.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> total_cost(run_summary(read_corpus("data/sample")))
        '≥ $0.015 (4 sessions of unknown cost: 2 unpriced, 2 unreadable)'
    """
    totals = runs.totals
    text = partial_cost(totals["cost_usd"], totals["cost_usd_known"])
    if not totals["cost_unknown"]:
        return text
    parts = [f"{totals['unpriced_sessions']:,} unpriced"] if totals["unpriced_sessions"] else []
    parts += [f"{totals['usage_unknown']:,} unreadable"] if totals["usage_unknown"] else []
    what = f"{plural(totals['cost_unknown'], 'session')} of unknown cost: {', '.join(parts)}"
    return f"{text} ({what})" if text != "–" else f"unknown ({what}; nothing priced)"


def total_tokens(runs: RunSummary, name: str) -> str:
    """A token total: ``≥`` before it when some sessions' usage could not be read (``usage_unknown``).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> runs = run_summary(read_corpus("data/sample"))
        >>> total_tokens(runs, "output_tokens"), total_tokens(runs, "cache_write_tokens")
        ('≥ 4,190', '–')
    """
    return human_count(runs.totals[name], lower=bool(runs.totals["usage_unknown"]))


def runs_lines(runs: RunSummary, *, limit: int = FAILED_LINES) -> list[str]:
    """The run facts as ``summary`` lines (``limit`` failed runs named; 0: all).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> lines = runs_lines(run_summary(read_corpus("data/sample")), limit=1)
        >>> print("\\n".join(lines[:3]))
        runs         completed 17, error 1, aborted 1, max-tokens 1, open 1, no-turns 2, unreadable 3
        failed       7 runs
          error       Refactor the auth module (auth-refactor)  context length exceeded (CONTEXT_LENGTH)
    """
    totals = runs.totals
    failed = runs.failures if limit == 0 else runs.failures.head(limit)
    lines = [
        f"runs         {', '.join(f'{key} {value:,}' for key, value in runs.outcomes.items()) or 'none'}",
        f"failed       {runs.failed:,} run{'s' if runs.failed != 1 else ''}",
    ]
    for row in failed.iter_rows(named=True):
        lines.append(f"  {row['outcome']:<11} {clip(_who(row), 80)}  {run_message(row)}".rstrip())
    if runs.failed > failed.height:
        lines.append(f"  … {runs.failed - failed.height:,} more (subagent-catalog runs, or the report)")
    lines += error_group_lines(runs, limit=ERROR_GROUP_LINES if limit else 0)
    lines.append(
        f"run time     active {human_duration(totals['active_ms'])} of {human_duration(totals['wall_ms'])} wall in all "
        f"(model {human_duration(totals['llm_ms'])}, tools busy {human_duration(totals['tool_busy_ms'])}; "
        f"tool calls summed {human_duration(totals['tool_ms'])})"
    )
    lines.append("tokens       " + ", ".join(f"{TOKEN_LABELS[key]} {total_tokens(runs, key)}" for key in TOKENS))
    lines.append(f"cost         {total_cost(runs)}")
    for row in runs.models.iter_rows(named=True):
        seed = " (fork seeds)" if row["in_seed"] else ""
        counts = ", ".join(f"{TOKEN_LABELS[key]} {human_count(row[key])}" for key in TOKENS)
        lines.append(f"  {_model(row)}{seed}: {plural(row['steps'], 'step')}, {counts}, {model_cost(row)}")
    lines.append(f"tools        {totals['tool_calls']:,} calls, {totals['tool_calls_failed']:,} failed")
    for row in runs.tools.filter(pl.col("failed") > 0).head(5).iter_rows(named=True):
        lines.append(f"  {row['name']}: {row['failed']:,} of {row['calls']:,} failed ({row['top_error_codes']})")
    slowest = ", ".join(  # by active time, the wall time beside it
        f"{_who(r)} {human_duration(r['active_ms'])} (wall {human_duration(r['wall_ms'])})"
        for r in runs.slowest.head(3).iter_rows(named=True)
    )
    costliest = ", ".join(f"{_who(r)} {costliest_text(runs, r)}" for r in runs.costliest.head(3).iter_rows(named=True))
    by = " (by tokens: nothing is priced)" if runs.cost_basis == "tokens" and costliest else ""
    lines.append(f"slowest      {slowest or 'none'}")
    lines.append(f"costliest    {costliest or 'none'}{by}")
    for row in runs.trees.head(1).iter_rows(named=True):
        lines.append(
            f"largest tree {_who(row)}: {plural(row['sessions'], 'session')}, {row['failed']:,} failed, "
            f"{human_duration(row['wall_ms'])} wall (active {human_duration(row['active_ms'])} summed over sessions), "
            f"{run_cost(row)}, "
            f"at most {row['peak_children_running']} direct "
            f"{'child' if row['peak_children_running'] == 1 else 'children'} at once"
        )
    lines += [f"note         {note}" for note in runs.notes]
    return lines


def group_cost(row: Mapping[str, Any]) -> str:
    """What a group of runs cost (an error group, a day of the trends): exact, or a lower bound and its unknown runs.

    Examples:
        >>> group_cost({"cost_usd_known": 0.5, "cost_unknown": 0})
        '$0.50'
        >>> group_cost({"cost_usd_known": 0.5, "cost_unknown": 2})
        '≥ $0.50 (2 runs of unknown cost)'
        >>> group_cost({"cost_usd_known": 0.0, "cost_unknown": 1})
        '– (1 run of unknown cost)'
    """
    unknown = row["cost_unknown"]
    return partial_cost(None if unknown else row["cost_usd_known"], row["cost_usd_known"], unknown=unknown, of="run")


def error_group_lines(runs: RunSummary, *, limit: int = ERROR_GROUP_LINES) -> list[str]:
    """The failures grouped by error (``RunSummary.error_groups``) as ``summary`` lines (``limit`` groups; 0: all).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> print("\\n".join(error_group_lines(run_summary(read_corpus("data/sample")), limit=2)))
        by error     7 groups of 7 failed runs (error code and message), most runs first
              1 run   max-tokens: the model stopped at its output token limit  (Draft the abstract (rs-03), $0.00055)
              1 run   aborted by parent  (Summarise results (rs-01), $0.00055)
          … 5 more groups (subagent-catalog runs --table errors)
    """
    groups = runs.error_groups
    if groups.is_empty():
        return []
    shown = groups if limit == 0 else groups.head(limit)
    lines = [
        f"by error     {plural(groups.height, 'group')} of {plural(runs.failed, 'failed run')} "
        "(error code and message), most runs first"
    ]
    for row in shown.iter_rows(named=True):
        what = " ".join(part for part in (row["code"], clip(row["message"] or "", 100)) if part)
        example = _example(row)
        count = plural(row["runs"], "run")
        lines.append(f"  {count:>9}   {' '.join(what.split())}  ({clip(example, 60)}, {group_cost(row)})")
    if groups.height > shown.height:
        lines.append(f"  … {plural(groups.height - shown.height, 'more group')} (subagent-catalog runs --table errors)")
    return lines


def model_cost(row: dict[str, Any]) -> str:
    """A model's cost (``usage_by_model(by="model")`` row): exact, or a lower bound and its unpriced steps.

    Examples:
        >>> model_cost({"cost_usd": None, "cost_usd_known": 0.0, "unpriced_steps": 4})
        'unpriced'
        >>> model_cost({"cost_usd": None, "cost_usd_known": 0.5, "unpriced_steps": 1})
        '≥ $0.50 (1 step unpriced)'
    """
    text = partial_cost(row["cost_usd"], row["cost_usd_known"])
    if row["cost_usd"] is not None:
        return text
    return f"{text} ({plural(row['unpriced_steps'], 'step')} unpriced)" if row["cost_usd_known"] else "unpriced"


def _plain(value: Any) -> Any:
    if isinstance(value, date):  # a datetime too
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _records(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return [_plain(row) for row in frame.to_dicts()]


def runs_json(runs: RunSummary) -> dict[str, Any]:
    """The run facts as JSON values (every failed run; the frames as lists of records).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> facts = runs_json(run_summary(read_corpus("data/sample")))
        >>> facts["failed"], facts["failures"][0]["session_id"], facts["unpriced_models"][0]["model"]
        (7, 'auth-refactor', 'qwen3-coder')
    """
    return {
        "sessions": runs.sessions,
        "outcomes": runs.outcomes,
        "failed": runs.failed,
        "totals": _plain(runs.totals),
        "notes": list(runs.notes),
        "cost_basis": runs.cost_basis,
        "by_project": _records(runs.by_project),
        "by_day": _records(runs.by_day),
        "failures": _records(runs.failures),
        "error_groups": _records(runs.error_groups),
        "slowest": _records(runs.slowest),
        "costliest": _records(runs.costliest),
        "slowest_trees": _records(runs.slowest_trees()),
        "costliest_trees": _records(runs.costliest_trees()),
        "largest_trees": _records(runs.trees.head(10)),
        "models": _records(runs.models),
        "unpriced_models": _records(runs.unpriced),
        "tools": _records(runs.tools),
    }


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(md_cell(cell) for cell in row) + " |" for row in rows]
    return [*out, ""]


def runs_markdown(runs: RunSummary, *, limit: int = FAILED_LINES) -> list[str]:
    """The run facts as Markdown (for a CI job summary): outcomes, failed runs, models, tools, slowest.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> text = "\\n".join(runs_markdown(run_summary(read_corpus("data/sample"))))
        >>> "| error | Refactor the auth module (auth-refactor) |" in text, "| local-vllm/qwen3-coder | 4 |" in text
        (True, True)
    """
    totals = runs.totals
    lines = ["## Runs", ""]
    lines += _table(["outcome", "sessions"], [[name, f"{n:,}"] for name, n in runs.outcomes.items()])
    lines += [
        f"Active time {human_duration(totals['active_ms'])} of {human_duration(totals['wall_ms'])} wall (model "
        f"{human_duration(totals['llm_ms'])}, tools busy {human_duration(totals['tool_busy_ms'])}; tool calls summed "
        f"{human_duration(totals['tool_ms'])}); cost {total_cost(runs)}"
        + f"; tool calls {totals['tool_calls']:,}, failed {totals['tool_calls_failed']:,}.",
        "",
    ]
    lines += [*(f"- {note}" for note in runs.notes), ""] if runs.notes else []
    failed = runs.failures if limit == 0 else runs.failures.head(limit)
    lines += [f"### Failed runs ({runs.failed:,})", ""]
    if failed.height:
        lines += _table(
            ["outcome", "session", "error", "start", "active", "wall", "cost"],
            [
                [
                    r["outcome"],
                    _who(r),
                    run_message(r) or None,
                    clock(r["start_ms"]) or None,
                    human_duration(r["active_ms"]),
                    human_duration(r["wall_ms"]),
                    run_cost(r),
                ]
                for r in failed.iter_rows(named=True)
            ],
        )
        if runs.failed > failed.height:
            lines += [f"… and {runs.failed - failed.height:,} more.", ""]
    else:
        lines += ["None.", ""]
    if runs.error_groups.height:
        groups = runs.error_groups if limit == 0 else runs.error_groups.head(limit)
        lines += [f"### Failed runs by error ({plural(runs.error_groups.height, 'group')})", ""]
        lines += _table(
            ["runs", "code", "message", "outcomes", "first seen", "last seen", "cost", "example"],
            [
                [
                    exact_count(r["runs"]),
                    r["code"],
                    r["message"],
                    r["outcomes"],
                    clock(r["first_seen_ms"]) or None,
                    clock(r["last_seen_ms"]) or None,
                    group_cost(r),
                    _example(r),
                ]
                for r in groups.iter_rows(named=True)
            ],
        )
        if runs.error_groups.height > groups.height:
            lines += [f"… and {plural(runs.error_groups.height - groups.height, 'more group')}.", ""]
    lines += ["### Tokens and cost by model", ""]
    lines += _table(
        ["model", "steps", *(TOKEN_LABELS[key] for key in TOKENS), "cost"],
        [
            [
                _model(r) + (" (fork seeds)" if r["in_seed"] else ""),
                exact_count(r["steps"]),
                *(human_count(r[key]) for key in TOKENS),
                model_cost(r),
            ]
            for r in runs.models.iter_rows(named=True)
        ],
    )
    if runs.tools.height:
        lines += ["### Tools", ""]
        lines += _table(
            ["tool", "calls", "failed", "rate", "top error codes"],
            [
                [
                    r["name"],
                    exact_count(r["calls"]),
                    exact_count(r["failed"]),
                    share(r["failure_rate"]),
                    r["top_error_codes"],
                ]
                for r in runs.tools.head(20).iter_rows(named=True)
            ],
        )
    lines += ["### Slowest runs", ""]
    lines += _table(
        ["session", "outcome", "active", "wall", "cost"],
        [
            [
                _who(r),
                r["outcome"],
                human_duration(r["active_ms"]),
                human_duration(r["wall_ms"]),
                run_cost(r),
            ]
            for r in runs.slowest.head(5).iter_rows(named=True)
        ],
    )
    by = "tokens: nothing is priced" if runs.cost_basis == "tokens" else "known cost; ≥ is a lower bound"
    lines += [f"### Costliest runs (by {by})", ""]
    lines += _table(
        ["session", "outcome", "tokens", "cost"],
        [
            [_who(r), r["outcome"], human_count(r["tokens"]), run_cost(r)]
            for r in runs.costliest.head(5).iter_rows(named=True)
        ],
    )
    lines += [f"### Costliest trees (by {by})", ""]
    lines += _table(
        ["top session", "sessions", "tokens", "cost"],
        [
            [_who(r), exact_count(r["sessions"]), human_count(r["tokens"]), run_cost(r)]
            for r in runs.costliest_trees(5).iter_rows(named=True)
        ],
    )
    return lines
