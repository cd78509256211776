"""A tree of runs over time (a Gantt chart with a concurrency curve) as self-contained, escaped HTML.

``timeline_html`` draws ``analysis.timeline.tree_timeline`` rows: a step curve of how many sessions
ran at once (``concurrency``), then one bar per session from its first to its last own event,
coloured by outcome (``views.palette``), on an axis at round steps of time, each row labelled (the
caller's cell: a reveal button in the report, a page link in ``show --tree``). Past ``max_bars``
sessions the bars are packed into lanes and drawn as one SVG path per outcome, so a 1,000-child hub
is a handful of nodes, not thousands. A session without a span (it never logged an event of its own)
is named under the chart, never dropped.

Nothing is fetched and nothing runs: the markup is plain HTML and inline SVG with classes styled
by ``TIMELINE_CSS`` (the page includes it once), every text from the corpus escaped.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import polars as pl

from subagent_catalog.analysis.tallies import tally
from subagent_catalog.analysis.text import clip
from subagent_catalog.analysis.timeline import concurrency, curve_slices
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.units import clock, human_duration, plural
from subagent_catalog.views import palette
from subagent_catalog.views.names import name_html
from subagent_catalog.views.svg_charts import duration_ticks

MAX_BARS = 60
"""Sessions drawn one labelled row each; a larger tree is drawn in packed lanes."""

MAX_LANES = 120
"""Lanes of the packed view; past it, sessions share lanes (the curve still counts each)."""

MAX_NAMED = 20
"""Sessions without a span named under the chart (the rest are counted)."""

CURVE_POINTS = 200
"""Slices of the concurrency curve past which each slice is drawn at the most sessions running in it (the
peak stays exact), so the curve's size does not grow with the tree."""

TIMELINE_CSS = (
    ".tl{margin:8px 0 18px;min-width:0}"
    ".tl figcaption{font-size:13px;margin-bottom:4px;overflow-wrap:anywhere}"
    ".tl .tl-axis{position:relative;height:15px;font-size:11px;color:#656d76;margin-left:var(--tl-name,32%)}"
    ".tl .tl-axis span{position:absolute;top:0;white-space:nowrap;transform:translateX(-50%)}"
    ".tl .tl-axis span:first-child{transform:none}.tl .tl-axis span.tl-end{transform:translateX(-100%)}"
    ".tl .tl-curve{display:grid;grid-template-columns:var(--tl-name,32%) 1fr;align-items:end;"
    "border-bottom:1px solid #d8dee4}"
    ".tl .tl-curve span{font-size:11px;color:#656d76;padding-right:6px;text-align:right}"
    ".tl svg{display:block;width:100%}"
    ".tl .tl-rows{list-style:none;margin:0;padding:0}"
    ".tl .tl-row{display:grid;grid-template-columns:var(--tl-name,32%) 1fr;align-items:center;min-height:18px;"
    "border-bottom:1px solid #f0f2f4}"
    ".tl .tl-name{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-size:12px;padding-right:6px}"
    ".tl .tl-track{position:relative;height:12px;min-width:0}"
    ".tl .tl-bar{position:absolute;top:1px;height:10px;border-radius:2px;min-width:2px}"
    ".tl .tl-legend{font-size:11px;color:#656d76;display:flex;flex-wrap:wrap;gap:2px 10px;margin-top:4px}"
    ".tl .tl-key{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:3px;"
    "vertical-align:-1px}"
    ".tl .tl-note{font-size:12px;color:#656d76;margin:4px 0 0;overflow-wrap:anywhere}"
    ".tl .tl-lanes{margin-left:var(--tl-name,32%)}"
    "@media (max-width:600px){.tl{--tl-name:38%}}"
)
"""The timeline's styles (class-scoped under ``.tl``), for a page's ``<style>``."""

Label = Callable[[dict[str, Any]], str]
"""Gives the escaped HTML naming one timeline row (its ``tree_timeline`` row as a dict)."""


def default_label(row: dict[str, Any]) -> str:
    """A row named by ``views.names.name_html``: its label (else its id), the id beside it, escaped.

    Examples:
        >>> default_label({"session_id": "c1", "label": "<b>fix</b>", "depth": 1})  # doctest: +NORMALIZE_WHITESPACE
        '<span class="nm"><bdi class="nm-t" title="&lt;b&gt;fix&lt;/b&gt;">&lt;b&gt;fix&lt;/b&gt;</bdi>
        <code class="nm-id" title="c1">c1</code></span>'
    """
    return name_html(row.get("session_id"), label=row.get("label"))


def _curve_path(curve: pl.DataFrame, start: int, span: int, peak: int, height: int) -> str:
    """A step path of the running count over a 1000 x ``height`` box.

    A curve of more than ``CURVE_POINTS`` changes is drawn in ``CURVE_POINTS`` slices of the span:
    each slice at the most sessions running anywhere in it, then at the count it ends with.
    """

    def y(running: int) -> str:
        return f"{height - (height - 2) * running / peak:.1f}"

    parts: list[str] = [f"M0 {height}"]
    if curve.height <= CURVE_POINTS:
        for time_ms, running in curve.iter_rows():
            parts.append(f"H{1000 * (time_ms - start) / span:.1f}V{y(running)}")
    else:
        slices = curve_slices(curve, start=start, span=span, slices=CURVE_POINTS)
        level = 0
        for index, top, after in slices.iter_rows():
            x, x_end = 1000 * index / CURVE_POINTS, 1000 * (index + 1) / CURVE_POINTS
            high = max(top, level)
            if high != level:
                parts.append(f"H{x:.1f}V{y(high)}")
            if after != high:
                parts.append(f"H{x_end:.1f}V{y(after)}")
            level = after
    parts.append(f"H1000V{height}Z")
    return "".join(parts)


def _pack(spans: list[tuple[int, int]]) -> list[int]:
    """Each span's lane (spans in start order): the first lane free by its start, at most ``MAX_LANES``."""
    free: list[tuple[int, int]] = []  # (end of the lane's last span, lane)
    lanes: list[int] = []
    used = 0
    for start, end in spans:
        if free and free[0][0] < start:
            _, lane = heapq.heappop(free)
        elif used < MAX_LANES:
            lane, used = used, used + 1
        else:  # every lane busy: share the one that frees first
            _, lane = heapq.heappop(free)
        lanes.append(lane)
        heapq.heappush(free, (end, lane))
    return lanes


def timeline_html(
    rows: pl.DataFrame,
    *,
    label: Label | None = None,
    max_bars: int = MAX_BARS,
    caption: str | None = None,
    depth_drawn: int | None = None,
    max_drawn: int | None = None,
) -> str:
    """One tree's timeline: a concurrency curve over per-session bars (packed lanes past ``max_bars``).

    The curve, the legend and the counts always cover every row; ``depth_drawn`` and ``max_drawn``
    bound how many bars are drawn (a note says how many are not), so the chart's size does not
    grow with the tree.

    Args:
        rows: ``tree_timeline`` rows (``depth`` 0 is the top).
        label: the escaped HTML naming a row (default ``default_label``); used in the bar view.
        max_bars: sessions drawn one labelled row each; more are packed into lanes.
        caption: text above the chart (escaped here).
        depth_drawn: when the tree has more than ``max_bars`` sessions with a span, draw only those
            at most this many levels below the top.
        max_drawn: draw at most this many bars (the nearest levels first).

    Examples:
        >>> rows = pl.DataFrame({"session_id": ["top", "a", "b"], "label": [None, "<a>", "b"],
        ...     "depth": [0, 1, 1], "outcome": ["completed", "error", "open"],
        ...     "start_ms": [0, 10, None], "end_ms": [100, 60, None]})
        >>> page = timeline_html(rows)
        >>> page.count('class="tl-bar'), "&lt;a&gt;" in page, "peak 1" in page
        (2, True, True)
    """
    make = label or default_label
    spanned = rows.filter(pl.col("start_ms").is_not_null())
    spanned = spanned.with_columns(pl.coalesce("end_ms", "start_ms").alias("end_ms"))
    unspanned = rows.filter(pl.col("start_ms").is_null())
    head = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
    if spanned.height == 0:
        return (
            f'<figure class="tl">{head}<p class="tl-note">no session of this tree logged a timed event of its own '
            f"({plural(rows.height, 'session')})</p></figure>"
        )
    start = int(spanned["start_ms"].min())  # type: ignore[arg-type]
    end = int(spanned["end_ms"].max())  # type: ignore[arg-type]
    span = max(end - start, 1)
    curve = concurrency(rows)
    peak = int(curve["running"].max() or 0) if curve.height else 0  # type: ignore[arg-type]
    outcomes = {str(name): int(n) for name, n in tally(rows, "outcome").iter_rows()}
    ticks = f'<span style="left:0" title="{escape(clock(start))}">{escape(clock(start)[11:19])} UTC</span>' + "".join(
        f'<span{" class=tl-end" if tick > 0.85 * span else ""} style="left:{100 * tick / span:.2f}%">'
        f"+{escape(human_duration(tick))}</span>"
        for tick in duration_ticks(span, count=3)
        if tick >= 0.35 * span  # the start's clock takes the first third
    )
    parts = [f'<figure class="tl">{head}']
    parts.append(
        '<div class="tl-curve">'
        f"<span>peak {peak:,} running</span>"
        f'<svg viewBox="0 0 1000 40" preserveAspectRatio="none" style="height:40px" role="img" '
        f'aria-label="sessions running at once, peak {peak}">'
        f'<path d="{_curve_path(curve, start, span, max(peak, 1), 40)}" fill="#ddf4ff" stroke="#0969da" '
        'stroke-width="1" vector-effect="non-scaling-stroke"/></svg></div>'
    )
    parts.append(f'<div class="tl-axis">{ticks}</div>')
    keys = ["start_ms", "depth", "list_order"] if "list_order" in spanned.columns else ["start_ms", "depth"]
    drawn = spanned
    if depth_drawn is not None and drawn.height > max_bars:
        drawn = drawn.filter(pl.col("depth") <= depth_drawn)
    deep = drawn.height < spanned.height
    capped = max_drawn is not None and drawn.height > max_drawn
    if max_drawn is not None and capped:
        drawn = drawn.sort(["depth", *keys[:1], *keys[2:]]).head(max_drawn)
    ordered = drawn.sort(keys)
    if drawn.height <= max_bars:
        parts.append('<ol class="tl-rows">')
        for row in ordered.iter_rows(named=True):
            left = 100 * (row["start_ms"] - start) / span
            width = 100 * (row["end_ms"] - row["start_ms"]) / span
            tip = (
                f"{row.get('session_id') or '(no id)'} · {row.get('outcome')} · "
                f"{human_duration(row['end_ms'] - row['start_ms'])} from +{human_duration(row['start_ms'] - start)}"
            )
            indent = min(int(row.get("depth") or 0), 8) * 8
            parts.append(
                f'<li class="tl-row"><div class="tl-name" style="padding-left:{indent}px">{make(row)}</div>'
                f'<div class="tl-track"><span class="tl-bar" title="{escape(clip(tip, 400))}" '
                f'style="left:{left:.2f}%;width:{width:.2f}%;background:{palette.outcome_colour(row.get("outcome"))}"></span>'
                "</div></li>"
            )
        parts.append("</ol>")
    else:
        pairs = list(zip(ordered["start_ms"].to_list(), ordered["end_ms"].to_list(), strict=True))
        lanes = _pack(pairs)
        count = max(lanes) + 1
        lane_h = max(2.0, min(12.0, 360 / count))
        height = count * lane_h
        paths: dict[str, list[str]] = {}
        for (first, last), lane, outcome in zip(pairs, lanes, ordered["outcome"].to_list(), strict=True):
            x = 1000 * (first - start) / span
            w = max(1000 * (last - first) / span, 0.8)
            paths.setdefault(str(outcome), []).append(
                f"M{x:.1f} {lane * lane_h + 0.5:.1f}h{w:.1f}v{lane_h - 1:.1f}h{-w:.1f}z"
            )
        shapes = "".join(
            f'<path fill="{palette.outcome_colour(name)}" d="{"".join(segments)}"><title>{escape(name)}</title></path>'
            for name, segments in paths.items()
        )
        parts.append(
            f'<div class="tl-lanes"><svg viewBox="0 0 1000 {height:.0f}" preserveAspectRatio="none" '
            f'style="height:{height:.0f}px" role="img" aria-label="{plural(drawn.height, "session")} packed in '
            f'{plural(count, "lane")}">{shapes}</svg></div>'
            f'<p class="tl-note">{plural(drawn.height, "session")} packed in {plural(count, "lane")} '
            "(one bar each, coloured by outcome; the tables name them).</p>"
        )
    if drawn.height < spanned.height:
        why = []
        if deep:
            why.append(f"more than {depth_drawn} level{'s' if depth_drawn != 1 else ''} below the top")
        if capped:
            why.append(f"past the first {max_drawn:,} by depth")
        parts.append(
            f'<p class="tl-note">{spanned.height - drawn.height:,} of the {spanned.height:,} sessions with a span '
            f"are not drawn ({' or '.join(why)}); the curve and the counts include them.</p>"
        )
    legend = "".join(
        f'<span><span class="tl-key" style="background:{palette.outcome_colour(name)}"></span>'
        f"{escape(name)} {count:,}</span>"
        for name, count in outcomes.items()
    )
    parts.append(f'<div class="tl-legend">{legend}</div>')
    if unspanned.height:
        names = ", ".join(
            escape(clip(value or "(no id)", 60)) for value in unspanned["session_id"].head(MAX_NAMED).to_list()
        )
        more = f" and {unspanned.height - MAX_NAMED:,} more" if unspanned.height > MAX_NAMED else ""
        parts.append(
            f'<p class="tl-note">{plural(unspanned.height, "session")} logged no '
            f"event of {'their' if unspanned.height != 1 else 'its'} own (no span): {names}{more}</p>"
        )
    parts.append("</figure>")
    return "".join(parts)
