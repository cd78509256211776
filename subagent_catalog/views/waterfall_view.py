"""A run's waterfall (``analysis.waterfall``) as escaped HTML with inline SVG: turns, model steps, tool calls.

One time axis at round steps (``svg_charts.duration_ticks``), offsets from the page's start (a
``show`` page's: the session's first own event, so a fork's ``+0`` is its own first event, not its
first turn) or else the run's first bar. Turns are bands in their outcome's colour
(``views.palette``, at full strength: a failed turn reads as its outcome, not as a paler one); a
model step is split into its wait for the first token and its decode, tool calls sit in lanes, so
parallel calls are side by side, all in the palette's series colours (no outcome's); a failed call
and a retried model call are drawn in the error colour. Each bar is a link to its step (``#seq-N``,
the page's anchor of the transcript row), with a tooltip saying what it is. The drawing keeps
750 px of width on a page (``WATERFALL_CSS``: a narrow screen scrolls it), so no label is under 9 px.

Past ``AGGREGATE_AT`` bars the drawing is aggregated into ``COLUMNS`` pixel columns per track:
consecutive busy columns are one bar (its link goes to the first step that starts in it) and
columns holding a failure are marked on top, so a 5,000-step run is a bounded number of SVG
nodes. A time the log does not give is never drawn: a start without an end is a hollow mark,
and bars without a start are counted under the chart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from subagent_catalog.analysis.tallies import tally
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.units import human_duration, plural
from subagent_catalog.views import palette
from subagent_catalog.views.svg_charts import duration_ticks

AGGREGATE_AT = 500
"""Bars drawn one by one; a run with more is drawn in pixel columns."""

COLUMNS = 300
"""Pixel columns of an aggregated waterfall (each merges the bars that fall in it)."""

MAX_LANES = 12
"""Lanes drawn per kind (model steps, tool calls); bars of further lanes share the last (the caption says so)."""

WIDTH, LEFT, TRACK, GAP, TOP = 1000, 90, 14, 3, 22
"""The SVG's width, its label gutter, a track's height, the gap between tracks, the axis's height."""

PLOT = WIDTH - LEFT - 10

FONT = 12
"""The labels' size in SVG units."""

WATERFALL_CSS = "figure.sc-wf svg{min-width:750px}"
"""A page's style: the drawing at least 750 px wide (a narrow screen scrolls it), so its labels stay >= 9 px."""

TTFT, DECODE = palette.SERIES_COLOURS["lavender"], palette.SERIES_COLOURS["indigo"]
TOOL, FAILED = palette.SERIES_COLOURS["slate"], palette.OUTCOME_COLOURS["error"]
BUSY = "#b6c2cf"

Href = Callable[[int], str | None]
"""The link of a step (its transcript row's ``seq``), or ``None`` when the step is not on the page."""


def step_href(seq: int) -> str | None:
    """A step's anchor on a ``show`` page (``transcript_parts.anchor``'s id).

    Examples:
        >>> step_href(12)
        '#seq-12'
    """
    return f"#seq-{seq}"


class _Axis:
    def __init__(self, first: int, last: int) -> None:
        self.first, self.span = first, max(1, last - first)

    def x(self, ms: int) -> float:
        return LEFT + (ms - self.first) / self.span * PLOT

    def column(self, ms: int) -> int:
        return min(COLUMNS - 1, max(0, int((ms - self.first) / self.span * COLUMNS)))


def _link(href: Href, seq: int | None, inner: str, tip: str) -> str:
    target = href(seq) if seq is not None else None
    title = f"<title>{escape(tip)}</title>"
    if target is None:
        return f"<g>{title}{inner}</g>"
    return f'<a href="{escape(target)}" class="sc-wf-bar">{title}{inner}</a>'


def _rect(x: float, y: float, width: float, fill: str, extra: str = "", *, height: float = TRACK) -> str:
    return f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(width, 1.0):.1f}" height="{height:g}" fill="{fill}"{extra}/>'


def _bar_svg(bar: dict[str, Any], axis: _Axis, y: float, href: Href) -> str:
    start, end, kind = bar["start_ms"], bar["end_ms"], bar["kind"]
    x = axis.x(start)
    if kind == "retry":
        inner = f'<rect x="{x - 1:.1f}" y="{y:.1f}" width="2" height="{TRACK}" fill="{FAILED}"/>'
    elif end is None:  # a start without an end: a hollow mark, nothing guessed
        colour = palette.outcome_colour(bar["outcome"]) if kind == "turn" else FAILED if bar["failed"] else TOOL
        inner = _rect(x, y + 1, 4, "#ffffff", f' stroke="{colour}" stroke-width="1.5"', height=TRACK - 2)
    elif kind == "turn":
        inner = _rect(x, y, axis.x(end) - x, palette.outcome_colour(bar["outcome"]), ' stroke="#ffffff"')
    elif kind == "model":
        ttft = bar["ttft_ms"]
        opacity = ' fill-opacity="0.55"' if bar["partial"] else ""
        fill = FAILED if bar["failed"] else DECODE
        if ttft is None or bar["partial"]:
            inner = _rect(x, y, axis.x(end) - x, fill, opacity)
        else:
            token = axis.x(min(start + ttft, end))
            inner = _rect(x, y, token - x, TTFT) + _rect(token, y, axis.x(end) - token, fill, opacity)
    else:
        inner = _rect(x, y, axis.x(end) - x, FAILED if bar["failed"] else TOOL)
    return _link(href, bar["seq"], inner, bar["label"])


def _aggregated(bars: list[dict[str, Any]], axis: _Axis, y: float, href: Href, kind: str) -> list[str]:
    """One track's bars merged into pixel columns: runs of busy columns, failures marked on top (its lower half)."""
    what = {"turn": "turns", "model": "model steps", "tool": "tool calls", "retry": "retried model calls"}[kind]
    fill_of = {"turn": BUSY, "model": DECODE, "tool": TOOL, "retry": FAILED}[kind]
    busy, failed = [0] * (COLUMNS + 1), [0] * (COLUMNS + 1)
    starts, fails = [0] * COLUMNS, [0] * COLUMNS
    first_seq: dict[int, int] = {}
    first_fail: dict[int, int] = {}
    for bar in bars:  # in start order
        low = axis.column(bar["start_ms"])
        high = max(low, axis.column(bar["end_ms"] if bar["end_ms"] is not None else bar["start_ms"]))  # clock back
        busy[low] += 1
        busy[high + 1] -= 1
        starts[low] += 1
        if bar["seq"] is not None:
            first_seq.setdefault(low, bar["seq"])
        if bar["failed"]:
            failed[low] += 1
            failed[high + 1] -= 1
            fails[low] += 1
            if bar["seq"] is not None:
                first_fail.setdefault(low, bar["seq"])
    parts: list[str] = []
    for counts, firsts, fill, failing in ((busy, first_seq, fill_of, False), (failed, first_fail, FAILED, True)):
        running, begin = 0, None
        for column in range(COLUMNS + 1):
            running += counts[column] if column < COLUMNS else 0
            covered = column < COLUMNS and running > 0
            if covered and begin is None:
                begin = column
            elif not covered and begin is not None:
                started = sum((fails if failing else starts)[begin:column])
                low_ms = axis.first + begin * axis.span // COLUMNS
                high_ms = axis.first + column * axis.span // COLUMNS
                tip = (
                    f"{plural(started, 'failed ' + what if failing else what)} starting from "
                    f"+{human_duration(low_ms - axis.first)} to +{human_duration(high_ms - axis.first)}"
                    " (click: the first)"
                )
                x = LEFT + begin * PLOT / COLUMNS
                wide = (column - begin) * PLOT / COLUMNS
                half = failing and kind != "retry"  # the failures take the lower half: the busy runs stay seen
                inner = _rect(x, y + TRACK / 2, wide, fill, height=TRACK / 2) if half else _rect(x, y, wide, fill)
                parts.append(_link(href, firsts.get(begin), inner, tip))
                begin = None
    return parts


def waterfall_html(
    bars: pl.DataFrame, *, href: Href = step_href, caption: str = "Waterfall", start: int | None = None
) -> str:
    """The waterfall of one run as a ``<figure>`` of escaped HTML and inline SVG (no script, nothing fetched).

    Args:
        bars: ``analysis.waterfall.waterfall`` rows.
        href: the link of a step by its ``seq`` (default the page's ``#seq-N``); ``None`` leaves it unlinked.
        caption: the figure's first words.
        start: the time (epoch ms) offsets count from (a page's first own event); default the first bar's.

    Examples:
        >>> from subagent_catalog.analysis.waterfall import WATERFALL_SCHEMA
        >>> bars = pl.DataFrame([
        ...     {"kind": "tool", "seq": 4, "start_ms": 10, "end_ms": 30, "lane": 0, "failed": True, "label": "<grep>"},
        ... ], schema=WATERFALL_SCHEMA)
        >>> html = waterfall_html(bars)
        >>> '<a href="#seq-4"' in html and "&lt;grep&gt;" in html and palette.OUTCOME_COLOURS["error"] in html
        True
    """
    if bars.height == 0:
        return ""
    timed = bars.filter(pl.col("start_ms").is_not_null())
    no_start = bars.height - timed.height
    notes: list[str] = []
    if no_start:
        kinds = tally(bars.filter(pl.col("start_ms").is_null()), "kind").rows()
        what = ", ".join(f"{count:,} {kind}" for kind, count in kinds)
        notes.append(f"{plural(no_start, 'bar')} not drawn: the log gives no start time ({what})")
    open_ended = timed.filter(pl.col("end_ms").is_null() & (pl.col("kind") != "retry")).height
    if open_ended:
        notes.append(f"{plural(open_ended, 'hollow mark')}: a start whose end the log does not give (never drawn as 0)")
    if timed.height == 0:
        return (
            f'<figure class="sc-wf" style="margin:8px 0 12px"><figcaption style="font-size:13px">{escape(caption)}: '
            f"no step has a time; {escape('; '.join(notes))}</figcaption></figure>"
        )
    first = int(timed["start_ms"].min())  # type: ignore[arg-type]
    first = min(first, start) if start is not None else first
    last = int(max(timed["start_ms"].max(), timed["end_ms"].max() or first))  # type: ignore[type-var, arg-type]
    axis = _Axis(first, last)
    aggregate = timed.filter(pl.col("kind") != "turn").height > AGGREGATE_AT or timed.height > 2 * AGGREGATE_AT
    # The tracks drawn, top to bottom ((kind, name, lane)), and each (kind, lane)'s track index
    tracks: list[tuple[str, str, int]] = [("turn", "turns", 0)]
    where: dict[tuple[str, int], int] = {("turn", 0): 0, ("retry", 0): 1}
    for kind, name in (("model", "model"), ("tool", "tools")):
        lanes = bars.filter(pl.col("kind") == kind)["lane"].max()
        count = 1 if aggregate or not isinstance(lanes, int) else min(lanes + 1, MAX_LANES)
        for lane in range(count):
            where[(kind, lane)] = len(tracks)
            tracks.append((kind, name if lane == 0 else "", lane))
    tracks, where = tracks, where
    height = TOP + len(tracks) * (TRACK + GAP) + 2
    body: list[str] = []
    for offset in duration_ticks(axis.span):  # about five, at a round step, up to the span
        x = axis.x(first + offset)
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP - 4}" y2="{height}" stroke="#eaeef2"/>')
        text = f"+{human_duration(offset)}"  # drawn whole: past the right edge, it ends at its tick
        anchor = "end" if x + len(text) * FONT * 0.3 > WIDTH - 2 else "middle"
        body.append(
            f'<text x="{x:.1f}" y="{TOP - 8}" font-size="{FONT}" fill="#57606a" text-anchor="{anchor}">'
            f"{escape(text)}</text>"
        )
    for index, (_kind, name, _lane) in enumerate(tracks):
        if name:
            y = TOP + index * (TRACK + GAP) + TRACK - 2
            body.append(
                f'<text x="{LEFT - 6}" y="{y}" font-size="{FONT}" fill="#1f2328" text-anchor="end">{name}</text>'
            )
    records = timed.to_dicts()
    shared = 0
    if aggregate:
        for kind in ("turn", "model", "tool", "retry"):
            chosen = [r for r in records if r["kind"] == kind]
            if chosen:
                y = TOP + where[(kind, 0)] * (TRACK + GAP)
                body.extend(_aggregated(chosen, axis, y, href, kind))
    else:
        unlinked = sum(1 for bar in records if bar["seq"] is not None and href(bar["seq"]) is None)
        if unlinked:
            notes.append(f"{plural(unlinked, 'bar')} without a link: the step is not shown here")
        for bar in records:
            lane = bar["lane"] or 0
            if bar["kind"] in ("model", "tool") and lane >= MAX_LANES:
                shared += 1
                lane = MAX_LANES - 1
            y = TOP + where[(bar["kind"], lane if bar["kind"] in ("model", "tool") else 0)] * (TRACK + GAP)
            body.append(_bar_svg(bar, axis, y, href))
    if shared:
        notes.append(f"{plural(shared, 'bar')} past {MAX_LANES} lanes drawn in the last lane")
    counts = {kind: timed.filter(pl.col("kind") == kind).height for kind in ("turn", "model", "tool")}
    failures = timed.filter(pl.col("failed")).height
    head = (
        f"{caption}: {plural(counts['turn'], 'turn')}, {plural(counts['model'], 'model step')}, "
        f"{plural(counts['tool'], 'tool call')} over {human_duration(axis.span)}"
        + (f", {plural(failures, 'failure')}" if failures else "")
        + (
            f"; drawn in {COLUMNS} columns (bars in one column merged, a click goes to the first step)"
            if aggregate
            else "; click a bar to see its step"
        )
    )
    svg = (
        f'<svg viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(head)}" style="display:block;width:100%;height:auto" '
        'font-family="system-ui, sans-serif">' + "".join(body) + "</svg>"
    )
    keys = [
        (TTFT, "wait for the first token"),
        (DECODE, "model decode" if not aggregate else "model step"),
        (TOOL, "tool call"),
        (FAILED, "failed"),
        (palette.outcome_colour("completed"), "turn (in its outcome's colour)"),
    ]
    legend = "".join(
        f'<span style="white-space:nowrap"><span style="display:inline-block;width:10px;height:10px;'
        f'background:{colour};border-radius:2px;margin-right:3px;vertical-align:-1px"></span>{escape(text)}</span>'
        for colour, text in keys
    )
    note = "".join(f"<div>{escape(n)}</div>" for n in notes)
    return (
        '<figure class="sc-wf" style="margin:8px 0 14px;min-width:0">'
        f'<figcaption style="font-size:13px;margin-bottom:2px;overflow-wrap:anywhere">{escape(head)}</figcaption>'
        f'<div class="sc-wf-scroll" style="overflow-x:auto;max-width:100%">{svg}</div>'
        f'<div style="font-size:11px;color:#57606a;display:flex;flex-wrap:wrap;gap:2px 10px;margin-top:3px">'
        f"{legend}</div>"
        f'<div class="sc-wf-notes" style="font-size:12px;color:#57606a">{note}</div></figure>'
    )
