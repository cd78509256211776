"""A comparison as terminal text, Markdown (CI job summaries) and JSON: what changed significantly first.

Every figure comes from the ``Comparison`` frames; an unknown one is ``–``, never 0. The text and the
Markdown lead with the rows whose Holm-adjusted p-value is below 0.05, then give the outcomes, the
metrics, new and vanished error groups, tools, models, health rows that differ, the paired tasks and
the notes. JSON holds every frame whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from subagent_catalog.analysis.compare import Comparison
from subagent_catalog.analysis.compare_gate import GateResult
from subagent_catalog.views.compare_display import (
    P_ADJ,
    UNADJUSTED,
    headline,
    interval,
    p_text,
    percent,
    points,
    row_figures,
    side_model_cost,
)
from subagent_catalog.views.text import md_cell

TOP = 10
"""Rows of the error, tool and model tables the text and Markdown show (JSON has all)."""


def _sections(comparison: Comparison, limit: int) -> list[tuple[str, list[str], list[list[str]]]]:
    """Each table's title, headers and rows (the error, tool and model tables' first ``limit`` rows)."""
    c = comparison
    differ = c.health.filter(pl.col("a_share").ne_missing(pl.col("b_share")) | (pl.col("a") != pl.col("b")))
    outcome_heads = ["outcome", "A", "B", "A rate", "B rate", "B - A", f"{round(c.confidence * 100)}% interval", P_ADJ]
    metric_heads = ["metric", "per", "A median", "B median", "change", "interval", "A mean", "B mean", "change"]
    sections = [
        (
            "Outcomes (share of runs)",
            [*outcome_heads, "better"],
            [
                [
                    row["outcome"],
                    f"{row['a']:,}",
                    f"{row['b']:,}",
                    percent(row["a_rate"]),
                    percent(row["b_rate"]),
                    points(row["diff"]),
                    interval(row["diff_low"], row["diff_high"]),
                    p_text(row["p_adjusted"]),
                    row["better"] or "",
                ]
                for row in c.outcomes.iter_rows(named=True)
            ],
        ),
        (
            "Metrics (median and mean; change of B over A with its bootstrap interval)",
            [*metric_heads, P_ADJ, "better", "note"],
            [
                [
                    row["metric"],
                    row["level"],
                    *row_figures(row, "median"),
                    percent(row["median_change"], signed=True),
                    interval(row["median_change_low"], row["median_change_high"], unit="%"),
                    *row_figures(row, "mean"),
                    percent(row["mean_change"], signed=True),
                    p_text(row["p_adjusted"]),
                    row["better"] or "",
                    row["note"] or "",
                ]
                for row in c.metrics.iter_rows(named=True)
            ],
        ),
        (
            "Error groups (failed runs, as in the report; new and vanished first)",
            ["change", "code", "message", "outcomes", "A", "B", P_ADJ],
            [
                [
                    row["change"],
                    row["code"] or "",
                    row["message"] or "",
                    row["outcomes"] or "",
                    f"{row['a']:,}",
                    f"{row['b']:,}",
                    p_text(row["p_adjusted"]),
                ]
                for row in c.errors.head(limit).iter_rows(named=True)
            ],
        ),
        (
            "Tools (failed / calls)",
            ["tool", "side", "A failed", "B failed", "B - A", "interval", P_ADJ, "top codes"],
            [
                [
                    row["name"] or "",
                    row["side"],
                    f"{row['a_failed']:,}/{row['a_calls']:,}",
                    f"{row['b_failed']:,}/{row['b_calls']:,}",
                    points(row["diff"]),
                    interval(row["diff_low"], row["diff_high"]),
                    p_text(row["p_adjusted"]),
                    row["b_top_error_codes"] or row["a_top_error_codes"] or "",
                ]
                for row in c.tools.head(limit).iter_rows(named=True)
            ],
        ),
        (
            "Models (runs served, cost)",
            ["model", "side", "A runs", "B runs", "A cost", "B cost", "share B - A"],
            [
                [
                    f"{row['provider'] or '?'}/{row['model'] or '?'}",
                    row["side"],
                    f"{row['a_sessions'] or 0:,}",
                    f"{row['b_sessions'] or 0:,}",
                    side_model_cost(row, "a"),
                    side_model_cost(row, "b"),
                    points(row["diff"]),
                ]
                for row in c.models.head(limit).iter_rows(named=True)
            ],
        ),
        (
            "Health (rows that differ)",
            ["aspect", "value", "A", "B", "B - A", P_ADJ],
            [
                [
                    row["aspect"],
                    row["value"],
                    f"{row['a']:,}/{row['a_total']:,}",
                    f"{row['b']:,}/{row['b_total']:,}",
                    points(row["diff"]),
                    p_text(row["p_adjusted"]),
                ]
                for row in differ.iter_rows(named=True)
            ],
        ),
    ]
    if c.tasks is not None:
        rows = [
            [
                row["metric"],
                f"{row['pairs']:,}",
                f"{row['b_higher']:,}",
                f"{row['a_higher']:,}",
                row["test"],
                p_text(row["p_adjusted"]),
                row["better"] or "",
            ]
            for row in c.tasks.iter_rows(named=True)
        ]
        sections.append(
            (f"Paired by {c.match}", ["paired", "pairs", "B higher", "A higher", "test", P_ADJ, "better"], rows)
        )
    return sections


def _document(comparison: Comparison, gates: Sequence[GateResult], limit: int, *, md: bool) -> str:
    """The terminal text, or Markdown (``md``): the lead, what changed, the tables, the gates, the notes."""
    cell, item = (md_cell, "- ") if md else (str, "  ")
    heading = (lambda title: ["", f"### {title}", ""]) if md else (lambda title: ["", title])
    lines = [
        f"compare: B = {comparison.b_label} against A = {comparison.a_label}",
        f"runs {comparison.runs[0]:,} → {comparison.runs[1]:,} · trees {comparison.trees[0]:,} → "
        f"{comparison.trees[1]:,}",
    ]
    if comparison.pairs is not None:
        changed = comparison.pairs.filter(pl.col("change") != "same")
        lines.append(f"pairs by {comparison.match}: {comparison.pairs.height:,}, outcome changed in {changed.height:,}")
    lines.append("")
    if md:
        labels = f"B = {md_cell(comparison.b_label)} against A = {md_cell(comparison.a_label)}"
        lines = [f"## Comparison: {labels}", "", *map(md_cell, lines[1:])]
    found = headline(comparison)
    if found:
        lines.append(f"{'**Changed significantly**' if md else 'Changed significantly'} (Holm-adjusted p < 0.05):")
        lines += [item + cell(line) for line in found]
    else:
        lines.append("No significant difference (no Holm-adjusted p-value below 0.05).")
    lines += ["", cell(UNADJUSTED)]
    for title, headers, rows in _sections(comparison, limit):
        lines += heading(title)
        if not rows:
            lines.append("(none)" if md else "  (none)")
        elif md:
            lines += ["| " + " | ".join(md_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
            lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
        else:
            widths = [max(len(str(value)) for value in column) for column in zip(headers, *rows, strict=True)]
            lines += [
                "  " + "  ".join(str(value).ljust(width) for value, width in zip(line, widths, strict=True)).rstrip()
                for line in (headers, *rows)
            ]
    marks = ("❌", "✅") if md else ("FAIL", "ok  ")
    if gates:
        lines += heading("Gates")
        lines += [f"{item}{marks[gate.holds is False]}{' ' if md else '  '}{cell(gate.detail)}" for gate in gates]
    lines += heading("Notes") + [f"{'- ' if md else '  - '}{cell(note)}" for note in comparison.notes]
    return "\n".join(lines) + "\n"


def compare_text(comparison: Comparison, *, gates: Sequence[GateResult] = (), limit: int = TOP) -> str:
    """The terminal summary: what changed significantly, the tables, the gates and the notes.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.compare import compare
        >>> corpus = read_corpus("tests/data/run-facts")
        >>> print(compare_text(compare(corpus, corpus)).splitlines()[3])
        No significant difference (no Holm-adjusted p-value below 0.05).
    """
    return _document(comparison, gates, limit, md=False)


def compare_markdown(comparison: Comparison, *, gates: Sequence[GateResult] = (), limit: int = TOP) -> str:
    """The comparison as Markdown (a CI job summary): what changed significantly, the tables, gates, notes.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.compare import compare
        >>> corpus = read_corpus("tests/data/run-facts")
        >>> compare_markdown(compare(corpus, corpus)).splitlines()[0]
        '## Comparison: B = B against A = A'
    """
    return _document(comparison, gates, limit, md=True)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def compare_json(comparison: Comparison, *, gates: Sequence[GateResult] = ()) -> dict[str, Any]:
    """The comparison as JSON values: every frame whole, the gates, the notes (no NaN: unknown is ``null``).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.compare import compare
        >>> corpus = read_corpus("tests/data/run-facts")
        >>> sorted(compare_json(compare(corpus, corpus)))[:4]
        ['a', 'b', 'confidence', 'cost_unknown']
    """
    frames = ("outcomes", "metrics", "models", "tools", "errors", "health", "tasks", "pairs")
    out: dict[str, Any] = {
        "a": {"label": comparison.a_label, "runs": comparison.runs[0], "trees": comparison.trees[0]},
        "b": {"label": comparison.b_label, "runs": comparison.runs[1], "trees": comparison.trees[1]},
        "match": comparison.match,
        "confidence": comparison.confidence,
        "seed": comparison.seed,
        "resamples": comparison.resamples,
        "cost_unknown": {"a": comparison.cost_unknown[0], "b": comparison.cost_unknown[1]},
    }
    for name in frames:
        frame = getattr(comparison, name)
        out[name] = None if frame is None else _plain(frame.to_dicts())
    out["gates"] = [
        {"condition": gate.condition.text, "value": gate.value, "holds": gate.holds, "detail": gate.detail}
        for gate in gates
    ]
    out["notes"] = list(comparison.notes)
    return out
