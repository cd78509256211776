"""Detectors over whole runs, from the facts alone: ``stalled``, ``cost-outlier`` and ``unexamined``."""

from __future__ import annotations

from typing import Any

import polars as pl

from subagent_catalog.analysis.findings.options import FindingOptions
from subagent_catalog.analysis.findings.schema import Finding
from subagent_catalog.frames.units import human_cost, human_duration

__all__ = ["cost_outlier", "stalled", "unexamined"]


def stalled(rows: list[dict[str, Any]], options: FindingOptions) -> list[Finding]:
    """``stalled``: an ``open`` run whose last event is ``stalled_after_ms`` or more before the corpus's last event.

    The corpus's last event (not the clock) is the reference, so an archived corpus reads the same
    every day. A run whose last event time is unknown is not judged.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> rows = list(read_corpus("data/findings").sessions.iter_rows(named=True))
        >>> [(f.session_id, f.message) for f in stalled(rows, FindingOptions())]
        [('stalled-yes', "open, and no event for 2 h before the corpus's last event")]
    """
    times = [row["last_event_ms"] for row in rows if row.get("last_event_ms") is not None]
    if not times:
        return []
    last = max(times)
    found: list[Finding] = []
    for row in rows:
        at = row.get("last_event_ms")
        if row.get("outcome") != "open" or at is None or last - at < options.stalled_after_ms:
            continue
        found.append(
            Finding.about(
                row,
                "stalled",
                "warn",
                f"open, and no event for {human_duration(last - at)} before the corpus's last event",
                f"outcome detail: {row.get('outcome_detail') or 'none'}",
            )
        )
    return found


def cost_outlier(rows: list[dict[str, Any]], options: FindingOptions) -> list[Finding]:
    """``cost-outlier``: a run whose known cost is above ``cost_outlier_factor`` times its project's p95.

    The p95 is over the project's runs of known cost (nearest rank, the run itself included) and is
    used only when at least ``cost_outlier_min_runs`` runs have a known cost and it is above $0; runs
    of unknown cost are neither judged nor counted (the message says how many there were).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> rows = list(read_corpus("data/findings").sessions.iter_rows(named=True))
        >>> [(f.session_id, f.message) for f in cost_outlier(rows, FindingOptions())]
        [('cost-20', "cost $0.11, 38× its project's p95 ($0.0028 over 21 runs of known cost)")]
    """
    frame = pl.DataFrame(
        [(row["list_order"], row.get("project_dir"), row.get("cost_usd")) for row in rows],
        schema={"list_order": pl.Int64, "project_dir": pl.String, "cost_usd": pl.Float64},
        orient="row",
    )
    stats = frame.group_by("project_dir").agg(
        pl.col("cost_usd").quantile(0.95, interpolation="nearest").alias("p95"),
        pl.col("cost_usd").is_not_null().sum().alias("known"),
        pl.col("cost_usd").is_null().sum().alias("unknown"),
        pl.col("cost_usd").median().alias("median"),
    )
    by_project = {row[0]: row[1:] for row in stats.iter_rows()}
    found: list[Finding] = []
    for row in rows:
        cost = row.get("cost_usd")
        p95, known, unknown, median = by_project[row.get("project_dir")]
        if cost is None or p95 is None or p95 <= 0 or known < options.cost_outlier_min_runs:
            continue
        if cost <= options.cost_outlier_factor * p95:
            continue
        left_out = f"; {unknown} of unknown cost left out" if unknown else ""
        found.append(
            Finding.about(
                row,
                "cost-outlier",
                "info",
                f"cost {human_cost(cost)}, {cost / p95:.0f}× its project's p95 "
                f"({human_cost(p95)} over {known} runs of known cost{left_out})",
                f"the project's known costs: median {human_cost(median)}, p95 {human_cost(p95)}, "
                f"{options.cost_outlier_factor:g}× p95 {human_cost(options.cost_outlier_factor * p95)}",
            )
        )
    return found


def unexamined(rows: list[dict[str, Any]]) -> list[Finding]:
    """``unexamined``: a log the detectors saw only in part (damaged, torn) or not at all (no readable header).

    Its findings are a lower bound: what its unread part holds is unknown.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> rows = list(read_corpus("data/findings").sessions.iter_rows(named=True))
        >>> unexamined(rows)
        []
    """
    found: list[Finding] = []
    for row in rows:
        verdict = row.get("verdict")
        if verdict == "ok":
            continue
        line = row.get("read_line")
        cause = row.get("read_cause") or verdict
        seen = "not examined" if verdict == "skipped" else f"examined up to line {line}" if line else "examined in part"
        found.append(
            Finding.about(
                row,
                "unexamined",
                "info",
                f"log {seen} ({cause}): its findings are a lower bound",
                row.get("read_message") or "",
            )
        )
    return found
