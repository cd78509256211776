"""Bar charts drawn as inline SVG straight from counts: no chart library, no JavaScript engine.

Every chart is a stacked bar chart of counts by (category, colour) with
totals on the bars, an integer count axis, axis titles, a legend and a
``<title>`` tooltip on every bar; the log view puts one bar per colour side by
side on a log count axis. A time chart places its bins on a continuous time
axis and merges bins that would share a pixel column, so the drawing's size is
bounded by its width, not by the corpus. Every text is escaped here.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from html import escape

from subagent_catalog.views.palette import GREY

PLOT_WIDTH = 430
"""The plot area's width in SVG units (the chart scales down to its box)."""

PLOT_HEIGHT = 220
"""The plot area's height of a vertical chart."""

BAND = 22
"""The height of one category's band in a horizontal chart."""

FONT = 11
CHAR = 6.4
"""The width of one column of 11 px text, for laying out labels (wide characters count two)."""

INK, MUTED, GRID = "#1f2328", "#57606a", "#eeeeee"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


def _rect(x: float, y: float, width: float, height: float, fill: str, tip: str) -> str:
    """One bar, its tooltip inside."""
    return f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" fill="{fill}">{tip}</rect>'


@dataclass(frozen=True)
class Counts:
    """What a chart draws: counts by (category, colour), the categories' order and the colours' fills."""

    categories: list[str]
    series: list[str]
    counts: dict[tuple[str, str], int]
    colours: dict[str, str]
    category_title: str


def columns(text: str) -> int:
    """The columns ``text`` takes (wide and astral characters take two).

    Examples:
        >>> columns("ab"), columns("中"), columns("😀")
        (2, 2, 2)
    """
    return sum(2 if char > "\uffff" or unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def nice_ticks(largest: float, *, count: int = 5) -> list[int]:
    """Integer ticks from 0 past ``largest``, about ``count`` of them, at a step of 1, 2 or 5 times a power of ten.

    Examples:
        >>> nice_ticks(7)
        [0, 2, 4, 6, 8]
        >>> nice_ticks(1)
        [0, 1]
        >>> nice_ticks(1234)
        [0, 500, 1000, 1500]
    """
    if largest <= 1:
        return [0, 1]
    raw = largest / count
    power = 10 ** math.floor(math.log10(raw))
    step = max(1, int(next(m * power for m in (1, 2, 5, 10) if m * power >= raw)))
    top = math.ceil(largest / step) * step
    return list(range(0, top + 1, step))


DURATION_STEPS_MS = (
    *(m * 10**k for k in range(3) for m in (1, 2, 5)),
    *(s * 1_000 for s in (1, 2, 5, 10, 20, 30)),
    *(m * 60_000 for m in (1, 2, 5, 10, 20, 30)),
    *(h * 3_600_000 for h in (1, 2, 5, 10)),
)
"""The steps of a duration axis: 1, 2, 5 x 10^k ms; then 1, 2, 5, 10, 20, 30 s and min; 1, 2, 5, 10 h (then days)."""


def duration_ticks(span_ms: float, *, count: int = 5) -> list[int]:
    """Offsets (ms) from 0 up to ``span_ms`` at a round step of time, about ``count`` steps (``DURATION_STEPS_MS``).

    Examples:
        >>> duration_ticks(2_000_000)  # 0, 10, 20 and 30 min (never ``+33 min 20 s``)
        [0, 600000, 1200000, 1800000]
        >>> duration_ticks(60_000), duration_ticks(7)
        ([0, 20000, 40000, 60000], [0, 2, 4, 6])
        >>> duration_ticks(9 * 86_400_000)[1]  # past ten hours a step: whole days
        172800000
    """
    raw = max(span_ms, 1) / count
    step = next((s for s in DURATION_STEPS_MS if s >= raw), None)
    if step is None:
        days = raw / 86_400_000
        power = 10 ** math.floor(math.log10(days))
        step = next(m * power for m in (1, 2, 5, 10) if m * power >= days) * 86_400_000
    return list(range(0, int(span_ms) + 1, int(step)))


def log_ticks(largest: int) -> list[int]:
    """Tick values for a log count axis: 1, 2, 5, 10, 20, 50, … up to the first past ``largest``.

    Examples:
        >>> log_ticks(130)
        [1, 2, 5, 10, 20, 50, 100, 200]
    """
    ticks: list[int] = []
    step = 1
    while not ticks or ticks[-1] < largest:
        ticks.extend(step * m for m in (1, 2, 5))
        step *= 10
    return [t for i, t in enumerate(ticks) if i == 0 or ticks[i - 1] < largest]


class _Scale:
    """Counts to a length along the count axis (linear from 0, or log from 0.7)."""

    def __init__(self, ticks: list[int], length: float, *, log: bool) -> None:
        self.log, self.length = log, length
        self.low = math.log10(0.7) if log else 0.0
        self.high = math.log10(ticks[-1]) if log else float(ticks[-1])

    def __call__(self, value: float) -> float:
        v = math.log10(max(value, 0.7)) if self.log else value
        return max(0.0, (v - self.low) / (self.high - self.low) * self.length)


def _text(
    x: float, y: float, text: str, *, anchor: str = "start", size: int = FONT, fill: str = INK, extra: str = ""
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}" text-anchor="{anchor}"{extra}>'
        f"{escape(text)}</text>"
    )


def _side_title(top: float, height: float, text: str) -> str:
    """An axis title up the left edge, centred on ``top`` to ``top + height``."""
    middle = top + height / 2
    return _text(12, middle, text, anchor="middle", extra=f' transform="rotate(-90 12 {middle:.1f})"')


def _legend(body: list[str], series: list[str], colours: dict[str, str], top: float, width: float) -> float:
    """Add a legend's items to ``body``, laid out in rows under the plot from ``top``; returns where they end."""
    x, y = 0.0, top
    for name in series:
        item = 16 + columns(name) * CHAR + 14
        if x and x + item > width:
            x, y = 0.0, y + 16
        body.append(
            f'<rect class="key" x="{x:.1f}" y="{y:.1f}" width="10" height="10" fill="{colours.get(name, GREY)}"/>'
            + _text(x + 14, y + 9, name)
        )
        x += item
    return top + (y + 16 - top)


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'height="{height:.0f}" role="img" aria-label="{escape(label)}" font-family="system-ui, sans-serif">'
        + "".join(body)
        + "</svg>"
    )


def _tip(category_title: str, category: str, colour_title: str, name: str, count: int) -> str:
    return f"<title>{escape(f'{category_title}: {category} · {colour_title}: {name} · count: {count:,}')}</title>"


def bar_chart(data: Counts, *, horizontal: bool, colour_title: str, log: bool = False, label: str = "chart") -> str:
    """A bar chart of ``data`` as SVG markup: stacked with totals, or (``log``) one labelled bar per colour.

    Examples:
        >>> data = Counts(["a", "b"], ["ok"], {("a", "ok"): 3, ("b", "ok"): 1}, {"ok": "#0072B2"}, "kind")
        >>> svg = bar_chart(data, horizontal=True, colour_title="outcome")
        >>> svg.count("<rect"), "kind: a · outcome: ok · count: 3" in svg
        (3, True)
    """
    totals = {c: sum(data.counts.get((c, s), 0) for s in data.series) for c in data.categories}
    largest = max([data.counts[k] for k in data.counts] if log else list(totals.values()), default=1)
    ticks = log_ticks(largest) if log else nice_ticks(largest)
    lanes = len(data.series) if log else 1
    label_width = max([columns(c) for c in data.categories] + [columns(data.category_title) // 2]) * CHAR
    body: list[str] = []
    if horizontal:
        band = BAND * (2 if log and lanes > 1 else 1)
        left, top = label_width + 26, 8.0
        height = band * len(data.categories)
        scale = _Scale(ticks, PLOT_WIDTH, log=log)
        for t in ticks:
            x = left + scale(t)
            body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + height:.1f}" stroke="{GRID}"/>')
            body.append(_text(x, top + height + 13, f"{t:,}", anchor="middle", fill=MUTED))
        for i, category in enumerate(data.categories):
            y = top + i * band
            body.append(_text(left - 5, y + band / 2 + 4, category, anchor="end"))
            x, lane_height = left, (band - 6) / lanes
            for j, name in enumerate(data.series):
                count = data.counts.get((category, name), 0)
                if not count:
                    continue
                tip = _tip(data.category_title, category, colour_title, name, count)
                fill = data.colours.get(name, GREY)
                if log:
                    w, ly = scale(count), y + 3 + j * lane_height
                    body.append(_rect(left, ly, w, lane_height, fill, tip))
                    body.append(_text(left + w + 3, ly + lane_height / 2 + 3, f"{count:,}", size=9, fill=MUTED))
                else:
                    w = scale(count)
                    body.append(_rect(x, y + 3, w, band - 6, fill, tip))
                    x += w
            if not log:
                body.append(_text(x + 3, y + band / 2 + 4, f"{totals[category]:,}", size=10, fill=MUTED))
        body.append(_text(left + PLOT_WIDTH / 2, top + height + 28, "count (log)" if log else "count", anchor="middle"))
        body.append(_side_title(top, height, data.category_title))
        width = left + PLOT_WIDTH + 40
        return _svg(width, _legend(body, data.series, data.colours, top + height + 40, width), body, label)
    slot = PLOT_WIDTH / max(1, len(data.categories))
    bar = min(slot * 0.8, 60)
    slanted = max((columns(c) for c in data.categories), default=0) * CHAR > slot
    reach = columns(data.categories[0]) * CHAR * 0.77 - slot / 2 if slanted and data.categories else 0
    left, top = max(48.0, reach + 8), 14.0
    scale = _Scale(ticks, PLOT_HEIGHT, log=log)
    for t in ticks:
        y = top + PLOT_HEIGHT - scale(t)
        body.append(f'<line x1="{left}" x2="{left + PLOT_WIDTH}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 4, y + 4, f"{t:,}", anchor="end", fill=MUTED))
    for i, category in enumerate(data.categories):
        mid = left + (i + 0.5) * slot
        if slanted:
            body.append(
                _text(
                    mid,
                    top + PLOT_HEIGHT + 12,
                    category,
                    anchor="end",
                    extra=f' transform="rotate(-40 {mid:.1f} {top + PLOT_HEIGHT + 12:.1f})"',
                )
            )
        else:
            body.append(_text(mid, top + PLOT_HEIGHT + 14, category, anchor="middle"))
        y = top + PLOT_HEIGHT
        lane = bar / lanes
        for j, name in enumerate(data.series):
            count = data.counts.get((category, name), 0)
            if not count:
                continue
            tip = _tip(data.category_title, category, colour_title, name, count)
            fill = data.colours.get(name, GREY)
            h = scale(count)
            if log:
                x = mid - bar / 2 + j * lane
                body.append(_rect(x, top + PLOT_HEIGHT - h, lane, h, fill, tip))
                body.append(
                    _text(x + lane / 2, top + PLOT_HEIGHT - h - 2, f"{count:,}", anchor="middle", size=9, fill=MUTED)
                )
            else:
                y -= h
                body.append(_rect(mid - bar / 2, y, bar, h, fill, tip))
        if not log:
            body.append(_text(mid, y - 3, f"{totals[category]:,}", anchor="middle", size=10, fill=MUTED))
    under = top + PLOT_HEIGHT + (max(columns(c) for c in data.categories) * CHAR * 0.65 + 18 if slanted else 20)
    body.append(_text(left + PLOT_WIDTH / 2, under + 10, data.category_title, anchor="middle"))
    body.append(_side_title(top, PLOT_HEIGHT, "count (log)" if log else "count"))
    width = left + PLOT_WIDTH + 10
    return _svg(width, _legend(body, data.series, data.colours, under + 24, width), body, label)


_HOUR, _DAY = 3_600_000, 86_400_000
_FIRST_MS = int((datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) / _ONE_MS)
_LAST_MS = int((datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - _EPOCH) / _ONE_MS)
_STEPS = [_HOUR * h for h in (1, 3, 6, 12)] + [_DAY * d for d in (1, 2, 7, 14, 30, 91, 182)]


def time_ticks(first: int, last: int, *, least: int = _HOUR, most: int = 7) -> list[tuple[int, str]]:
    """Ticks on whole hours, days or years between ``first`` and ``last`` (ms), at most ``most``, labelled.

    The step is at least ``least`` (the chart's bin width), so day bins get no hour ticks.

    Examples:
        >>> [name for _, name in time_ticks(0, 3 * 86_400_000, least=86_400_000)]
        ['Jan 01', 'Jan 02', 'Jan 03', 'Jan 04']
        >>> [name for _, name in time_ticks(0, 40 * 365 * 86_400_000)][:3]
        ['1970', '1980', '1990']
        >>> time_ticks(253_402_300_799_999, 253_402_300_799_999 + 86_400_000)  # the last moment a date can name
        []
    """
    first, last = max(first, _FIRST_MS), min(last, _LAST_MS)  # a date past year 9999 has no name
    span = max(1, last - first)
    step = next((s for s in _STEPS if s >= least and span / s <= most - 1), None)
    if step is None:
        low, high = (_EPOCH + timedelta(milliseconds=first)).year, (_EPOCH + timedelta(milliseconds=last)).year
        every = next(n for n in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000) if (high - low) / n <= most - 1)
        years = range(-(-low // every) * every, high + 1, every)
        return [(int((datetime(y, 1, 1, tzinfo=UTC) - _EPOCH) / _ONE_MS), f"{y:04d}") for y in years if y >= 1]
    shape = "%b %d %H:00" if step < _DAY else "%Y-%m-%d" if span > 366 * _DAY else "%b %d"
    start = -(-first // step) * step
    return [(ms, (_EPOCH + timedelta(milliseconds=ms)).strftime(shape)) for ms in range(start, last + 1, step)]


def _bin_name(ms: int, bin_ms: int) -> str:
    moment = _EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%d %H:00" if bin_ms < 86_400_000 else "%Y-%m-%d")


def _time_tick(x: float, top: float, name: str) -> list[str]:
    """A tick under a time axis at ``x`` with its label slanted (the time chart's and the line chart's)."""
    under = top + PLOT_HEIGHT
    return [
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{under}" y2="{under + 4}" stroke="{MUTED}"/>',
        _text(x, under + 14, name, anchor="end", extra=f' transform="rotate(-40 {x:.1f} {under + 14:.1f})"'),
    ]


def time_chart(
    bins: Sequence[tuple[int, str, int]],
    *,
    bin_ms: int,
    colours: dict[str, str],
    series: list[str],
    category_title: str,
    colour_title: str,
    log: bool = False,
    label: str = "chart",
) -> str:
    """Counts by (bin start in ms, colour) as stacked bars (or, ``log``, lines) on a time axis, as SVG.

    Bins that fall in one pixel column are drawn as one bar (its tooltip says
    how many bins it holds), so the drawing stays bounded for any span.

    Examples:
        >>> svg = time_chart([(0, "ok", 2), (3_600_000, "ok", 1)], bin_ms=3_600_000, colours={"ok": "#0072B2"},
        ...                  series=["ok"], category_title="created", colour_title="outcome")
        >>> svg.count("<rect"), "Jan 01 01:00" in svg
        (3, True)
    """
    first = min(b[0] for b in bins)
    last = max(b[0] for b in bins) + bin_ms
    span = max(last - first, bin_ms)
    columns_: dict[int, dict[str, int]] = {}
    starts: dict[int, tuple[int, int]] = {}
    for start, name, count in bins:
        column = min(PLOT_WIDTH - 1, int((start - first) / span * PLOT_WIDTH))
        columns_.setdefault(column, {})
        columns_[column][name] = columns_[column].get(name, 0) + count
        low, high = starts.get(column, (start, start))
        starts[column] = (min(low, start), max(high, start))
    per_column = max(1.0, bin_ms / span * PLOT_WIDTH)
    largest = max(max(counts.values()) if log else sum(counts.values()) for counts in columns_.values())
    ticks = log_ticks(largest) if log else nice_ticks(largest)
    left, top = 72.0, 10.0
    scale = _Scale(ticks, PLOT_HEIGHT, log=log)
    body: list[str] = []
    for t in ticks:
        y = top + PLOT_HEIGHT - scale(t)
        body.append(f'<line x1="{left}" x2="{left + PLOT_WIDTH}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 4, y + 4, f"{t:,}", anchor="end", fill=MUTED))
    for ms, name in time_ticks(first, last, least=min(bin_ms, _DAY)):
        body += _time_tick(left + (ms - first) / span * PLOT_WIDTH, top, name)
    lines: dict[str, list[str]] = {name: [] for name in series}
    for column in sorted(columns_):
        counts = columns_[column]
        low, high = starts[column]
        when = _bin_name(low, bin_ms) if low == high else f"{_bin_name(low, bin_ms)} – {_bin_name(high, bin_ms)}"
        x = left + column
        y = top + PLOT_HEIGHT
        for name in series:
            count = counts.get(name, 0)
            if not count:
                continue
            tip = _tip(category_title, when, colour_title, name, count)
            h = scale(count)
            if log:
                lines[name].append(f"{x + per_column / 2:.1f},{top + PLOT_HEIGHT - h:.1f}")
                body.append(
                    f'<circle cx="{x + per_column / 2:.1f}" cy="{top + PLOT_HEIGHT - h:.1f}" r="2.5" '
                    f'fill="{colours.get(name, GREY)}">{tip}</circle>'
                )
            else:
                y -= h
                body.append(_rect(x, y, per_column, h, colours.get(name, GREY), tip))
    for name, points in lines.items():
        if len(points) > 1:
            body.insert(
                0,
                f'<polyline points="{" ".join(points)}" fill="none" stroke="{colours.get(name, GREY)}" '
                'stroke-width="1.5"/>',
            )
    under = top + PLOT_HEIGHT + 62
    body.append(_text(left + PLOT_WIDTH / 2, under, category_title, anchor="middle"))
    body.append(_side_title(top, PLOT_HEIGHT, "count (log)" if log else "count"))
    width = left + PLOT_WIDTH + 10
    return _svg(width, _legend(body, series, colours, under + 10, width), body, label)


@dataclass(frozen=True)
class Line:
    """One line of ``line_chart``: a value per day (``None`` when unknown: no point, never 0) and its lower bounds."""

    name: str
    values: list[float | None]
    lower: list[bool]


def value_ticks(largest: float, *, count: int = 4) -> list[float]:
    """Ticks from 0 past ``largest`` (any positive size, fractions too) at a step of 1, 2 or 5 times a power of ten.

    Examples:
        >>> value_ticks(0.011)
        [0.0, 0.005, 0.01, 0.015]
        >>> value_ticks(0)
        [0.0, 1.0]
    """
    if not largest > 0 or not math.isfinite(largest):
        return [0.0, 1.0]
    raw = largest / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    steps = math.ceil(largest / step - 1e-9)
    return [round(i * step, 12) for i in range(steps + 1)]


def line_chart(
    days: Sequence[int],
    lines: Sequence[Line],
    *,
    colours: dict[str, str],
    value_title: str,
    fmt: Callable[[float], str],
    label: str = "chart",
) -> str:
    """Values by UTC day (``days``: proleptic ordinals, ``date.toordinal()``) as lines with a point per day, as SVG.

    A line joins two points only on consecutive days (a day with no value is a gap, not a slope); an
    unknown value has no point; a lower bound is a hollow point whose tooltip says ``≥``.

    Examples:
        >>> from datetime import date
        >>> days = [date(2026, 1, d).toordinal() for d in (1, 2, 4)]
        >>> svg = line_chart(days, [Line("cost", [1.0, None, 2.5], [False, False, True])],
        ...                  colours={"cost": "#0072B2"}, value_title="USD", fmt=lambda v: f"${v:.2f}")
        >>> svg.count("<circle"), "2026-01-04 · cost: ≥ $2.50" in svg, svg.count("<polyline")  # 2 points, 1 key
        (3, True, 0)
    """
    known = [v for line in lines for v in line.values if v is not None]
    ticks = value_ticks(max(known, default=0.0))
    first, last = min(days, default=0), max(days, default=0)
    span = max(1, last - first)
    left, top = 72.0, 10.0
    body: list[str] = []
    for t in ticks:
        y = top + PLOT_HEIGHT - t / ticks[-1] * PLOT_HEIGHT
        body.append(f'<line x1="{left}" x2="{left + PLOT_WIDTH}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 4, y + 4, fmt(t), anchor="end", fill=MUTED))
    shown = sorted({first, last, *(first + span * i // 4 for i in range(1, 4))}) if days else []
    for ordinal in shown:
        body += _time_tick(left + (ordinal - first) / span * PLOT_WIDTH, top, date.fromordinal(ordinal).isoformat())
    for line in lines:
        colour = colours.get(line.name, GREY)
        segment: list[str] = []
        segments: list[list[str]] = []
        previous: int | None = None
        for ordinal, value, lower in zip(days, line.values, line.lower, strict=True):
            if value is None:
                previous = None
                continue
            x = left + (ordinal - first) / span * PLOT_WIDTH
            y = top + PLOT_HEIGHT - value / ticks[-1] * PLOT_HEIGHT
            if previous is None or ordinal != previous + 1:
                segment = []
                segments.append(segment)
            segment.append(f"{x:.1f},{y:.1f}")
            previous = ordinal
            tip = escape(f"{date.fromordinal(ordinal).isoformat()} · {line.name}: {'≥ ' if lower else ''}{fmt(value)}")
            fill = "#ffffff" if lower else colour
            body.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{fill}" stroke="{colour}" stroke-width="1.5">'
                f"<title>{tip}</title></circle>"
            )
        for points in segments:
            if len(points) > 1:
                body.insert(
                    0, f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" stroke-width="1.5"/>'
                )
    under = top + PLOT_HEIGHT + 62
    body.append(_text(left + PLOT_WIDTH / 2, under, "day (UTC)", anchor="middle"))
    body.append(_side_title(top, PLOT_HEIGHT, value_title))
    width = left + PLOT_WIDTH + 10
    y = _legend(body, [line.name for line in lines], colours, under + 10, width)
    if any(any(line.lower) for line in lines):
        body.append(f'<circle cx="5" cy="{y + 5:.1f}" r="3.5" fill="#ffffff" stroke="{MUTED}" stroke-width="1.5"/>')
        body.append(_text(14, y + 9, "hollow: a lower bound (≥), some runs' figure unknown"))
        y += 16
    return _svg(width, y, body, label)
