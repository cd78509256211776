"""A ``RunSummary`` as terminal lines, as JSON values and as Markdown (``summary --format text|json|md``).

The three say the same: how runs ended, the failed ones, time, tokens, cost per model (unpriced
models named), tools with their failures, the slowest and costliest runs and the largest trees.
Text from the corpus is left as it is here: the CLI makes terminal output safe, and Markdown
cells go through ``md_cell`` (code spans, pipes escaped).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

import polars as pl

from subagent_catalog.analysis.run_summary import RunSummary
from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.units import clock, human_cost, human_count, human_duration

FAILED_LINES = 10
"""Failed runs the text and Markdown list by default (``limit``)."""


def _join(counts: dict[str, int]) -> str:
    return ", ".join(f"{key} {value:,}" for key, value in counts.items()) if counts else "none"


def _model(row: dict[str, Any]) -> str:
    return f"{row['provider'] or '?'}/{row['model'] or '?'}"


def _message(row: dict[str, Any]) -> str:
    text = row["error_message"] or row["outcome_detail"] or ""
    if row["error_code"] and row["error_code"] not in text:
        text = f"{text} ({row['error_code']})" if text else row["error_code"]
    return " ".join(clip(text, 160).split())


def runs_lines(runs: RunSummary, *, limit: int = FAILED_LINES) -> list[str]:
    """The run facts as ``summary`` lines (``limit`` failed runs named; 0: all).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> lines = runs_lines(run_summary(read_corpus("data/sample")), limit=1)
        >>> print("\\n".join(lines[:3]))
        runs         completed 17, error 1, aborted 1, max-tokens 1, open 1, no-turns 2, unreadable 3
        failed       7 runs
          error       auth-refactor  context length exceeded (CONTEXT_LENGTH)
    """
    totals = runs.totals
    failed = runs.failures if limit == 0 else runs.failures.head(limit)
    lines = [
        f"runs         {_join(runs.outcomes)}",
        f"failed       {runs.failed:,} run{'s' if runs.failed != 1 else ''}",
    ]
    for row in failed.iter_rows(named=True):
        name = row["session_id"] if row["session_id"] is not None else f"(no id) {row['path']}"
        lines.append(f"  {row['outcome']:<11} {clip(name, 60)}  {_message(row)}".rstrip())
    if runs.failed > failed.height:
        lines.append(f"  … {runs.failed - failed.height:,} more (subagent-catalog runs, or the report)")
    lines.append(
        f"run time     active {human_duration(totals['active_ms'])} of {human_duration(totals['wall_ms'])} wall in all "
        f"(model {human_duration(totals['llm_ms'])}, tools busy {human_duration(totals['tool_busy_ms'])}; "
        f"tool calls summed {human_duration(totals['tool_ms'])})"
    )
    counts = [("input", "input_tokens"), ("cache read", "cache_read_tokens"), ("cache write", "cache_write_tokens")]
    counts.append(("output", "output_tokens"))
    lines.append("tokens       " + ", ".join(f"{name} {human_count(totals[key])}" for name, key in counts))
    unpriced = ", ".join(_model(r) for r in runs.unpriced.iter_rows(named=True))
    cost = human_cost(totals["cost_usd"])
    if totals["unpriced_sessions"]:
        cost += f" of the priced runs; {totals['unpriced_sessions']} unpriced (models: {unpriced or 'none'})"
    lines.append(f"cost         {cost}")
    for row in runs.models.iter_rows(named=True):
        seed = " (fork seeds)" if row["in_seed"] else ""
        lines.append(
            f"  {_model(row)}{seed}: {row['steps']:,} steps, {human_count(row['billed_input_tokens'])} in, "
            f"{human_count(row['output_tokens'])} out, {human_cost(row['cost_usd'])}"
            + ("" if row["cost_usd"] is not None else " (unpriced)")
        )
    lines.append(f"tools        {totals['tool_calls']:,} calls, {totals['tool_calls_failed']:,} failed")
    for row in runs.tools.filter(pl.col("failed") > 0).head(5).iter_rows(named=True):
        lines.append(f"  {row['name']}: {row['failed']:,} of {row['calls']:,} failed ({row['top_error_codes']})")
    slowest = ", ".join(  # by active time, the wall time beside it
        f"{r['session_id'] or '(no id)'} {human_duration(r['active_ms'])} (wall {human_duration(r['wall_ms'])})"
        for r in runs.slowest.head(3).iter_rows(named=True)
    )
    costliest = ", ".join(
        f"{r['session_id'] or '(no id)'} {human_cost(r['cost_usd'])}"
        for r in runs.costliest.head(3).iter_rows(named=True)
    )
    lines.append(f"slowest      {slowest or 'none'}")
    lines.append(f"costliest    {costliest or 'none'}")
    for row in runs.trees.head(1).iter_rows(named=True):
        lines.append(
            f"largest tree {row['session_id']}: {row['sessions']:,} sessions, {row['failed']:,} failed, "
            f"{human_duration(row['wall_ms'])} wall (active {human_duration(row['active_ms'])} summed over sessions), "
            f"{human_cost(row['cost_usd'])}, "
            f"at most {row['peak_children_running']} direct "
            f"{'child' if row['peak_children_running'] == 1 else 'children'} at once"
        )
    return lines


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
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
        "by_project": _records(runs.by_project),
        "by_day": _records(runs.by_day),
        "failures": _records(runs.failures),
        "slowest": _records(runs.slowest),
        "costliest": _records(runs.costliest),
        "slowest_trees": _records(runs.slowest_trees()),
        "costliest_trees": _records(runs.costliest_trees()),
        "largest_trees": _records(runs.trees.head(10)),
        "models": _records(runs.models),
        "unpriced_models": _records(runs.unpriced),
        "tools": _records(runs.tools),
    }


_CELL_SPECIAL = re.compile(r"[|\\`*_\[\]<>#]")


def md_cell(value: object) -> str:
    """A value as one Markdown table cell: one line, ``|`` and other markup escaped.

    Examples:
        >>> md_cell("a|b <i>x</i>\\nc"), md_cell(None)
        ('a\\\\|b \\\\<i\\\\>x\\\\</i\\\\> c', '–')
    """
    if value is None:
        return "–"
    text = " ".join(str(value).split())
    return _CELL_SPECIAL.sub(lambda m: "\\" + m[0], clip(text, 200))


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
        >>> "| error | auth-refactor |" in text, "| local-vllm/qwen3-coder | 4 |" in text
        (True, True)
    """
    totals = runs.totals
    lines = ["## Runs", ""]
    lines += _table(["outcome", "sessions"], [[name, f"{n:,}"] for name, n in runs.outcomes.items()])
    lines += [
        f"Active time {human_duration(totals['active_ms'])} of {human_duration(totals['wall_ms'])} wall (model "
        f"{human_duration(totals['llm_ms'])}, tools busy {human_duration(totals['tool_busy_ms'])}; tool calls summed "
        f"{human_duration(totals['tool_ms'])}); cost {human_cost(totals['cost_usd'])}"
        + (f" ({totals['unpriced_sessions']} sessions unpriced)" if totals["unpriced_sessions"] else "")
        + f"; tool calls {totals['tool_calls']:,}, failed {totals['tool_calls_failed']:,}.",
        "",
    ]
    failed = runs.failures if limit == 0 else runs.failures.head(limit)
    lines += [f"### Failed runs ({runs.failed:,})", ""]
    if failed.height:
        lines += _table(
            ["outcome", "session", "label", "error", "start", "active", "wall", "cost"],
            [
                [
                    r["outcome"],
                    r["session_id"] or f"(no id) {r['path']}",
                    r["label"],
                    _message(r) or None,
                    clock(r["start_ms"]) or None,
                    human_duration(r["active_ms"]),
                    human_duration(r["wall_ms"]),
                    human_cost(r["cost_usd"]),
                ]
                for r in failed.iter_rows(named=True)
            ],
        )
        if runs.failed > failed.height:
            lines += [f"… and {runs.failed - failed.height:,} more.", ""]
    else:
        lines += ["None.", ""]
    lines += ["### Tokens and cost by model", ""]
    lines += _table(
        ["model", "steps", "input (billed)", "output", "cost"],
        [
            [
                _model(r) + (" (fork seeds)" if r["in_seed"] else ""),
                f"{r['steps']:,}",
                human_count(r["billed_input_tokens"]),
                human_count(r["output_tokens"]),
                human_cost(r["cost_usd"]) if r["cost_usd"] is not None else "unpriced",
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
                    f"{r['calls']:,}",
                    f"{r['failed']:,}",
                    "–" if r["failure_rate"] is None else f"{100 * r['failure_rate']:.1f}%",
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
                r["session_id"],
                r["outcome"],
                human_duration(r["active_ms"]),
                human_duration(r["wall_ms"]),
                human_cost(r["cost_usd"]),
            ]
            for r in runs.slowest.head(5).iter_rows(named=True)
        ],
    )
    return lines
