"""The report's "Trends" section: runs, failures, cost, tokens and active time by UTC day and by model.

``trends_section`` turns ``RunSummary.trends`` and ``trends_by_model`` into line charts
(``views.svg_charts.line_chart``, coloured from ``views.palette``'s series colours: no line is an
outcome, so none takes an outcome's colour) and bounded table rows. An
unknown value is never drawn or shown as 0: a day whose cost leaves runs of unknown cost out is a
hollow point and a ``≥`` figure with the count beside it; the percentiles say how many runs' active
time is unknown. The ``out of range`` and ``no time`` bins have no place on a day axis: they are
rows of the table, and the charts' note names them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
from markupsafe import Markup

from subagent_catalog.analysis.run_summary import RunSummary
from subagent_catalog.analysis.trends import top_models
from subagent_catalog.frames.units import NO_TIME, OUT_OF_RANGE, human_cost, human_count, human_duration, plural
from subagent_catalog.views.palette import SERIES_COLOURS
from subagent_catalog.views.run_format import group_cost
from subagent_catalog.views.svg_charts import Line, line_chart

TREND_DAYS = 120
"""Days the trend charts draw (the latest with runs)."""

TREND_ROWS = 40
"""Days the trend table lists (the latest), and the rows of the per-model table."""

TREND_MODELS = 5
"""Models the per-model cost chart draws (those that cost most, then used the most tokens)."""

_BIN_TEXT = {NO_TIME: "(no time)", OUT_OF_RANGE: "(out of range)"}


def _unknown(count: int, what: str) -> str:
    return f" ({plural(count, 'run')} {what})" if count else ""


def _row(row: dict[str, Any]) -> dict[str, Any]:
    model = (
        None if row["model"] is None and row["provider"] is None else f"{row['provider'] or '?'}/{row['model'] or '?'}"
    )
    return {
        "day": _BIN_TEXT.get(row["bin"], row["bin"]),
        "model": model,
        "runs": f"{row['runs']:,}",
        "failed": row["failed"],
        "cost": group_cost(row),
        "tokens": human_count(row["tokens"]) + _unknown(row["tokens_unknown"], "without a count"),
        "p50": human_duration(row["active_p50_ms"]),
        "p95": human_duration(row["active_p95_ms"]) + _unknown(row["active_unknown"], "unknown"),
    }


def _chart(
    title: str,
    key: str,
    days: list[int],
    lines: list[Line],
    colours: dict[str, str],
    unit: str,
    fmt: Callable[[float], str],
) -> dict[str, Any]:
    svg = line_chart(days, lines, colours=colours, value_title=unit, fmt=fmt, label=title) if days else None
    return {"key": key, "title": title, "svg": Markup(svg) if svg else None}


def trends_section(runs: RunSummary) -> dict[str, Any]:
    """The "Trends" section's values: the charts' SVG, the notes, the per-day and per-model rows.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> section = trends_section(run_summary(read_corpus("data/sample")))
        >>> [chart["key"] for chart in section["charts"]]
        ['runs', 'cost', 'tokens', 'active', 'models']
        >>> section["days"][-1]["day"], section["days"][-1]["cost"]
        ('(no time)', '– (1 run of unknown cost)')
    """
    frame = runs.trends
    dated = frame.filter(pl.col("day").is_not_null()).tail(TREND_DAYS)
    days = [d.toordinal() for d in dated["day"].to_list()]
    rows = dated.to_dicts()

    def line(name: str, values: list[Any], lower: list[bool] | None = None) -> Line:
        return Line(name, [None if v is None else float(v) for v in values], lower or [False] * len(values))

    colours = {
        "runs": SERIES_COLOURS["indigo"],
        "failed": SERIES_COLOURS["wine"],
        "known cost": SERIES_COLOURS["indigo"],
        "tokens": SERIES_COLOURS["teal"],
        "p50": SERIES_COLOURS["indigo"],
        "p95": SERIES_COLOURS["olive"],
    }
    cost = line("known cost", [r["cost_usd_known"] for r in rows], [r["cost_unknown"] > 0 for r in rows])
    charts = [
        _chart(
            "Runs and failed runs per day",
            "runs",
            days,
            [line("runs", dated["runs"].to_list()), line("failed", dated["failed"].to_list())],
            colours,
            "runs",
            lambda v: human_count(int(v)),
        ),
        _chart(
            "Cost per day (hollow: a lower bound, some runs' cost unknown)",
            "cost",
            days,
            [cost],
            colours,
            "USD",
            human_cost,
        ),
        _chart(
            "Tokens per day",
            "tokens",
            days,
            [line("tokens", dated["tokens"].to_list(), [r["tokens_unknown"] > 0 for r in rows])],
            colours,
            "tokens",
            lambda v: human_count(int(v)),
        ),
        _chart(
            "Active time per run, p50 and p95 per day",
            "active",
            days,
            [line("p50", dated["active_p50_ms"].to_list()), line("p95", dated["active_p95_ms"].to_list())],
            colours,
            "active time",
            lambda v: human_duration(v),
        ),
    ]
    by_model = runs.trends_by_model.filter(pl.col("day").is_not_null() & pl.col("model").is_not_null())
    by_model = by_model.filter(pl.col("day") >= dated["day"].min()) if days else by_model.clear()
    ranked = top_models(by_model, TREND_MODELS)
    model_lines = []
    model_colours: dict[str, str] = {}
    for i, (provider, model) in enumerate(ranked.select("provider", "model").iter_rows()):
        name = f"{provider or '?'}/{model}"
        mine = by_model.filter((pl.col("provider").eq_missing(provider)) & (pl.col("model") == model))
        values = dict(
            zip(mine["day"].to_list(), mine.select("cost_usd_known", pl.col("cost_unknown") > 0).rows(), strict=True)
        )
        model_lines.append(
            Line(
                name,
                [values[d][0] if d in values else None for d in dated["day"].to_list()],
                [values[d][1] if d in values else False for d in dated["day"].to_list()],
            )
        )
        model_colours[name] = SERIES_COLOURS[("indigo", "wine", "olive", "teal", "rose")[i % 5]]
    charts.append(
        _chart(
            "Known cost per day by model",
            "models",
            days if model_lines else [],
            model_lines,
            model_colours,
            "USD",
            human_cost,
        )
    )
    labelled = frame.filter(pl.col("day").is_null())
    left_out = [f"{_BIN_TEXT[r['bin']]} {plural(r['runs'], 'run')}" for r in labelled.iter_rows(named=True)]
    earlier = frame.filter(pl.col("day").is_not_null()).height - dated.height
    notes = []
    if left_out:
        notes.append("not on the day axis (rows of the table): " + ", ".join(left_out))
    if earlier:
        notes.append(
            f"the charts draw the latest {TREND_DAYS} days with runs; {plural(earlier, 'earlier day')} are left out"
        )
    if ranked.height < by_model.select("provider", "model").unique().height:
        notes.append(f"the per-model chart draws the {TREND_MODELS} models that cost most; the table has the others")
    return {
        "charts": charts,
        "notes": notes,
        "days": [_row(r) for r in frame.tail(TREND_ROWS).iter_rows(named=True)],
        "days_total": frame.height,
        "models": [_row(r) for r in runs.trends_by_model.tail(TREND_ROWS).iter_rows(named=True)],
        "models_total": runs.trends_by_model.height,
    }
