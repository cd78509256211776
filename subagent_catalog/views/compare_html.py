"""The comparison page: one self-contained HTML file in the report's visual language (its CSS inlined).

``compare_page(comparison)`` returns the page: what changed significantly, outcome rates with their
intervals drawn on a common axis, each metric's distribution on both sides (p10 to p90, the box from
p25 to p75, the median), new and vanished error groups, the pairs whose outcome changed, tools, models,
the health of both sides and the notes. The drawings are inline SVG computed here; the page holds no
script and fetches nothing (its Content-Security-Policy allows inline styles only). Every value from a
corpus is escaped (Jinja autoescaping).
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import jinja2
import polars as pl
from markupsafe import Markup, escape

from subagent_catalog.analysis.compare import Comparison
from subagent_catalog.analysis.compare_display import figure, headline, interval, p_text, percent, points
from subagent_catalog.analysis.text import clip

WIDTH = 260
"""Width of each drawing, in pixels."""

A_COLOUR, B_COLOUR = "#9d9da0", "#4c78a8"


def _x(value: float, low: float, high: float) -> float:
    return 8 + (WIDTH - 16) * ((value - low) / (high - low) if high > low else 0.5)


def interval_svg(
    diff: float | None, low: float | None, high: float | None, *, span: float, better: str | None = None
) -> Markup:
    """A difference and its interval on an axis from ``-span`` to ``+span`` with 0 marked (empty when unknown).

    Green when B is the better side, red when A is, grey when neither is (``better``).

    Examples:
        >>> "<line" in interval_svg(0.1, 0.02, 0.2, span=0.3)
        True
        >>> interval_svg(None, None, None, span=1.0)
        Markup('')
    """
    if diff is None or low is None or high is None:
        return Markup("")
    zero = _x(0, -span, span)
    colour = {"b": "#2da44e", "a": "#e45756"}.get(better or "", "#656d76")
    parts = [
        f'<svg class="ci" width="{WIDTH}" height="18" role="img" aria-label="{escape(points(diff))} '
        f'{escape(interval(low, high))}">',
        f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="1" y2="17" stroke="#d8dee4"/>',
        f'<line x1="{_x(low, -span, span):.1f}" x2="{_x(high, -span, span):.1f}" y1="9" y2="9" '
        f'stroke="{colour}" stroke-width="2"/>',
        f'<circle cx="{_x(diff, -span, span):.1f}" cy="9" r="4" fill="{colour}"/></svg>',
    ]
    return Markup("".join(parts))


def boxes_svg(row: dict[str, Any]) -> Markup:
    """A metric's distribution on both sides (A grey above, B blue below) on one axis: p10–p90, p25–p75, median.

    Examples:
        >>> row = {f"{s}_{q}": v for s in "ab" for q, v in
        ...        (("p10", 1.0), ("p25", 2.0), ("median", 3.0), ("p75", 4.0), ("p90", 5.0))}
        >>> boxes_svg(row).count("<rect")
        2
    """
    keys = ("p10", "p25", "median", "p75", "p90")
    values = [row.get(f"{side}_{key}") for side in "ab" for key in keys]
    known = [v for v in values if v is not None]
    if not known:
        return Markup("")
    low, high = min(known), max(known)
    parts = [f'<svg class="dist" width="{WIDTH}" height="34" role="img" aria-label="distributions of A and B">']
    for index, (side, colour) in enumerate((("a", A_COLOUR), ("b", B_COLOUR))):
        q = [row.get(f"{side}_{key}") for key in keys]
        if any(v is None for v in q):
            continue
        p10, p25, median, p75, p90 = (_x(float(v), low, high) for v in q)  # type: ignore[arg-type]
        y = 4 + index * 16
        parts += [
            f'<line x1="{p10:.1f}" x2="{p90:.1f}" y1="{y + 5}" y2="{y + 5}" stroke="{colour}"/>',
            f'<rect x="{p25:.1f}" y="{y}" width="{max(p75 - p25, 1):.1f}" height="10" fill="{colour}" '
            'fill-opacity="0.35" stroke="' + colour + '"/>',
            f'<line x1="{median:.1f}" x2="{median:.1f}" y1="{y - 1}" y2="{y + 11}" stroke="{colour}" '
            'stroke-width="2"/>',
        ]
    parts.append("</svg>")
    return Markup("".join(parts))


def _span(frame: pl.DataFrame) -> float:
    if frame.height == 0:
        return 1.0
    bounds = frame.select(pl.max_horizontal(pl.col("diff_low").abs(), pl.col("diff_high").abs()).max()).item()
    return max(float(bounds or 0.0), 0.01) * 1.1


def compare_page(comparison: Comparison, *, title: str | None = None) -> str:
    """The comparison as a self-contained HTML page.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.compare import compare
        >>> corpus = read_corpus("tests/data/run-facts")
        >>> page = compare_page(compare(corpus, corpus))
        >>> page.startswith("<!DOCTYPE html>"), "<script" in page, "No significant difference" in page
        (True, False, True)
    """
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("subagent_catalog.views", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["clip"] = clip
    helpers = {
        "percent": percent,
        "points": points,
        "interval": interval,
        "p_text": p_text,
        "figure": figure,
        "interval_svg": interval_svg,
        "boxes_svg": boxes_svg,
    }
    css = files("subagent_catalog.views").joinpath("templates").joinpath("report.css").read_text("utf-8")
    changed = comparison.pairs.filter(pl.col("change") != "same") if comparison.pairs is not None else None
    template = env.get_template("compare.html.j2")
    return template.render(
        title=title or f"{comparison.b_label} against {comparison.a_label}",
        c=comparison,
        css=Markup(css),
        headline=headline(comparison),
        outcome_span=_span(comparison.outcomes),
        tool_span=_span(comparison.tools),
        outcomes=comparison.outcomes.to_dicts(),
        metrics=comparison.metrics.to_dicts(),
        errors=comparison.errors.head(50).to_dicts(),
        errors_more=max(comparison.errors.height - 50, 0),
        tools=comparison.tools.head(50).to_dicts(),
        models=comparison.models.to_dicts(),
        health=comparison.health.to_dicts(),
        tasks=comparison.tasks.to_dicts() if comparison.tasks is not None else None,
        changed=changed.head(200).to_dicts() if changed is not None else None,
        changed_total=changed.height if changed is not None else 0,
        a_colour=A_COLOUR,
        b_colour=B_COLOUR,
        **helpers,
    )
