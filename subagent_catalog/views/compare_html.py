"""The comparison page: one self-contained HTML file in the report's visual language (its CSS inlined).

``compare_page(comparison)`` returns the page: what changed significantly, outcome rates with their
intervals drawn on a common axis, each metric's distribution on both sides (p10 to p90, the box from
p25 to p75, the median), new and vanished error groups, the pairs whose outcome changed, tools, models,
the health of both sides and the notes. The drawings are inline SVG computed here; the page holds no
script and fetches nothing (its Content-Security-Policy allows inline styles only). Every value from a
corpus is escaped (Jinja autoescaping).
"""

from __future__ import annotations

import os
from importlib.resources import files
from typing import Any

import jinja2
import polars as pl
from markupsafe import Markup, escape

from subagent_catalog.analysis.compare import Comparison
from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.display import breakable
from subagent_catalog.views.compare_display import (
    P_ADJ,
    UNADJUSTED,
    figures,
    headline,
    interval,
    p_text,
    percent,
    points,
    row_figures,
    side_model_cost,
)
from subagent_catalog.views.names import NAME_CSS, name_html
from subagent_catalog.views.palette import BETTER_COLOURS, outcome_css

WIDTH = 260
"""Width of each drawing's coordinates (its ``viewBox``); on the page a drawing takes its cell's width."""

A_COLOUR, B_COLOUR = "#9d9da0", "#4c78a8"

_THIN = 'vector-effect="non-scaling-stroke"'
"""Strokes keep their width when a drawing is stretched or squeezed to its cell."""


def _x(value: float, low: float, high: float) -> float:
    return 8 + (WIDTH - 16) * ((value - low) / (high - low) if high > low else 0.5)


def _svg(css: str, height: int, label: str) -> str:
    """The opening tag of a drawing that stretches to its cell's width at a fixed height."""
    return (
        f'<svg class="{css}" viewBox="0 0 {WIDTH} {height}" preserveAspectRatio="none" width="100%" '
        f'height="{height}" role="img" aria-label="{escape(label)}">'
    )


def interval_svg(
    diff: float | None, low: float | None, high: float | None, *, span: float, better: str | None = None
) -> Markup:
    """A difference and its interval on an axis from ``-span`` to ``+span`` with 0 marked (empty when unknown).

    ``BETTER_COLOURS``' green when B is the better side, red when A is, grey when neither is (``better``). The drawing
    stretches to its cell; the dot is a round cap of a constant width, so it stays round.

    Examples:
        >>> "<line" in interval_svg(0.1, 0.02, 0.2, span=0.3)
        True
        >>> interval_svg(None, None, None, span=1.0)
        Markup('')
    """
    if diff is None or low is None or high is None:
        return Markup("")
    zero = _x(0, -span, span)
    colour = BETTER_COLOURS.get(better or "", "#656d76")
    dot = _x(diff, -span, span)
    parts = [
        _svg("ci", 18, f"{points(diff)} {interval(low, high)}"),
        f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="1" y2="17" stroke="#d8dee4" {_THIN}/>',
        f'<line x1="{_x(low, -span, span):.1f}" x2="{_x(high, -span, span):.1f}" y1="9" y2="9" '
        f'stroke="{colour}" stroke-width="2" {_THIN}/>',
        f'<line x1="{dot:.1f}" x2="{dot:.1f}" y1="9" y2="9" stroke="{colour}" stroke-width="8" '
        f'stroke-linecap="round" {_THIN}/></svg>',
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
    parts = [_svg("dist", 34, "distributions of A and B")]
    for index, (side, colour) in enumerate((("a", A_COLOUR), ("b", B_COLOUR))):
        q = [row.get(f"{side}_{key}") for key in keys]
        if any(v is None for v in q):
            continue
        p10, p25, median, p75, p90 = (_x(float(v), low, high) for v in q)  # type: ignore[arg-type]
        y = 4 + index * 16
        parts += [
            f'<line x1="{p10:.1f}" x2="{p90:.1f}" y1="{y + 5}" y2="{y + 5}" stroke="{colour}" {_THIN}/>',
            f'<rect x="{p25:.1f}" y="{y}" width="{max(p75 - p25, 1):.1f}" height="10" fill="{colour}" '
            f'fill-opacity="0.35" stroke="{colour}" {_THIN}/>',
            f'<line x1="{median:.1f}" x2="{median:.1f}" y1="{y - 1}" y2="{y + 11}" stroke="{colour}" '
            f'stroke-width="2" {_THIN}/>',
        ]
    parts.append("</svg>")
    return Markup("".join(parts))


def keep(text: str) -> str:
    """A figure that never breaks across lines but after a comma (``[+1.0, +20.0] pp``, ``< 0.001``).

    Examples:
        >>> keep("[+1.0, +20.0] pp") == "[+1.0, +20.0]\u00a0pp", keep("< 0.001") == "<\u00a00.001"
        (True, True)
    """
    return text.replace(" ", "\u00a0").replace(",\u00a0", ", ")


def _span(frame: pl.DataFrame) -> float:
    if frame.height == 0:
        return 1.0
    bounds = frame.select(pl.max_horizontal(pl.col("diff_low").abs(), pl.col("diff_high").abs()).max()).item()
    return max(float(bounds or 0.0), 0.01) * 1.1


def compare_page(
    comparison: Comparison,
    *,
    title: str | None = None,
    a_pages: str | os.PathLike[str] | None = None,
    b_pages: str | os.PathLike[str] | None = None,
    page_dir: str | os.PathLike[str] = ".",
) -> str:
    """The comparison as a self-contained HTML page.

    Args:
        comparison: what ``compare`` returned.
        title: the page's title (default: B against A).
        a_pages: a directory ``show --tree -o DIR`` wrote from A: the runs the page names (the pairs,
            the error groups' example runs) link to their pages there, for the pages its manifest lists.
        b_pages: the same for B.
        page_dir: the directory the page is written into (the links are relative to it).

    Raises:
        PagesError: ``a_pages`` or ``b_pages`` is not a directory of ``show --tree`` pages.
        OutputError: its manifest is damaged or not ours.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.compare import compare
        >>> corpus = read_corpus("tests/data/run-facts")
        >>> page = compare_page(compare(corpus, corpus))
        >>> page.startswith("<!DOCTYPE html>"), "<script" in page, "No significant difference" in page
        (True, False, True)
    """
    from subagent_catalog.views.compare_links import side_pages

    sides = {
        tag: side_pages(pages, page_dir=page_dir) if pages is not None else None
        for tag, pages in (("a", a_pages), ("b", b_pages))
    }

    def run(session_id: str | None, side: str, name: str | None = None) -> Markup:
        """A run named as the report names it (``name_html``), linked to its side's page when there is one."""
        if session_id is None:
            return Markup('<span class="muted">–</span>')
        pages = sides[side]
        href = pages.href(session_id) if pages is not None else None
        return Markup(name_html(session_id, name=name, href=href))

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("subagent_catalog.views", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(clip=clip, keep=keep)
    shown = (percent, points, interval, p_text, figures, row_figures, side_model_cost, interval_svg, boxes_svg)
    helpers = {helper.__name__: helper for helper in (*shown, run)}  # the template calls each by its name
    helpers["breakable"] = lambda text: Markup(breakable(text))
    css = files("subagent_catalog.views").joinpath("templates").joinpath("report.css").read_text("utf-8")
    css += outcome_css(".badge.o-{outcome}") + NAME_CSS  # the report's outcome colours and names
    css += "".join(f".badge.better-{side}{{background:{fill};color:#ffffff}}" for side, fill in BETTER_COLOURS.items())
    changed = comparison.pairs.filter(pl.col("change") != "same") if comparison.pairs is not None else None
    metrics = comparison.metrics.to_dicts()
    notes: list[str] = []  # the distinct parts of the metric rows' notes, in order; each row's marks: their numbers
    for row in metrics:
        row["marks"] = []
        for part in (row["note"] or "").split("; "):
            if part:
                if part not in notes:
                    notes.append(part)
                row["marks"].append(notes.index(part) + 1)
    return env.get_template("compare.html.j2").render(
        title=title or f"{comparison.b_label} against {comparison.a_label}",
        c=comparison,
        css=Markup(css),
        headline=headline(comparison),
        unadjusted=UNADJUSTED,
        outcome_span=_span(comparison.outcomes),
        tool_span=_span(comparison.tools),
        outcomes=comparison.outcomes.to_dicts(),
        metrics=metrics,
        metric_notes=notes,
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
        P_ADJ=P_ADJ,
        **helpers,
    )
