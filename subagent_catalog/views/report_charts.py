"""The HTML report's charts, rendered offline to inline SVG.

Vega-Lite specs go through vl-convert; every label is made XML-safe and cut
to a column width here, never by the renderer.
"""

from __future__ import annotations

import base64
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import polars as pl

from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.units import CALENDAR_MAX_MS, CALENDAR_MIN_MS

TOP_CATEGORIES = 15


HORIZONTAL_LABEL = 36


VERTICAL_LABEL = 18


OUTCOME_COLORS = {
    "child": "#4c78a8",
    "corrupt": "#e45756",
    "unavailable": "#f58518",
    "unsupported": "#b279a2",
    "omitted": "#9d9da0",
}


STATUS_COLORS = {"valid": "#4c78a8", "malformed": "#e45756", "unknown-version": "#b279a2"}


_CONTROL = re.compile("[\x00-\x1f\x7f]")


_NOT_XML = re.compile("[\ufffe\uffff\ud800-\udfff]")


def chart_text(value: str) -> str:
    """Text as a chart shows it: control characters as visible pictures, nothing XML forbids.

    The chart renderer parses its own SVG as XML and aborts the whole
    process (an uncatchable Rust panic) on a character XML 1.0 forbids, so
    every string in a chart spec goes through this first. C0 controls and
    DEL become their Control Pictures (``U+2400``–``U+2421``); the
    non-characters U+FFFE/U+FFFF and lone surrogates become U+FFFD.

    Examples:
        >>> chart_text("gpt\\x00x\\x7f")
        'gpt␀x␡'
        >>> chart_text("a\\ufffeb")
        'a�b'
    """
    text = _CONTROL.sub(lambda m: chr(0x2421 if m[0] == "\x7f" else 0x2400 + ord(m[0])), value)
    return _NOT_XML.sub("\ufffd", text)


def _chart_safe(value: Any) -> Any:
    """``value`` (a chart spec) with ``chart_text`` applied to every string, keys included."""
    if isinstance(value, str):
        return chart_text(value)
    if isinstance(value, dict):
        return {chart_text(k) if isinstance(k, str) else k: _chart_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_chart_safe(v) for v in value]
    return value


@dataclass
class Chart:
    """One rendered chart: a title, an SVG ``data:`` URI and its data as a table.

    ``svg_uri`` is ``None`` when there is nothing to count, or when the
    renderer refused the chart (``failure`` then says why; the table stays).
    """

    key: str
    title: str
    note: str
    svg_uri: str | None
    columns: list[str]
    rows: list[list[Any]]
    failure: str | None = None
    log_uri: str | None = None
    """The same counts on a log scale, one bar (or line) per colour, when small counts sit next to large ones."""


def _svg_uri(spec: dict[str, Any]) -> str:
    import vl_convert

    svg: str = vl_convert.vegalite_to_svg(_chart_safe(spec))
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _drawn(chart: Chart, spec: dict[str, Any], log_spec: dict[str, Any] | None = None) -> Chart:
    """``chart`` with its SVGs, or with ``failure`` set when the renderer raises (the report goes on)."""
    try:
        chart.svg_uri = _svg_uri(spec)
        chart.log_uri = _svg_uri(log_spec) if log_spec is not None else None
    except (ValueError, RuntimeError) as error:  # vl-convert reports a failed conversion as ValueError
        chart.svg_uri = chart.log_uri = None
        chart.failure = clip(" ".join(f"{type(error).__name__}: {error}".split()), 300)
    return chart


LOG_RATIO = 20
"""A chart gets a log-scale view when its largest count is at least this many times its smallest."""


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


def _top(values: list[str | None], limit: int = TOP_CATEGORIES, width: int = HORIZONTAL_LABEL) -> list[str]:
    """Bound categories: clip long names, keep the ``limit`` most frequent, fold the rest into ``(other)``.

    Names are cut here, to ``width`` columns, and never by the renderer: Vega
    cuts a label past its pixel limit by UTF-16 unit, which can split a
    surrogate pair (an emoji), and vl-convert then fails the whole chart.
    """
    shown: dict[str, str] = {}  # each distinct value is cut once (a large corpus repeats a few names)
    named = [
        "(none)"
        if value is None
        else shown[value]
        if value in shown
        else shown.setdefault(value, _clip_columns(chart_text(clip(value)), width))
        for value in values
    ]
    keep = {name for name, _ in Counter(named).most_common(limit)}
    return [name if name in keep else "(other)" for name in named]


def _clip_columns(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns, ellipsis included (wide and astral characters take two)."""
    widths = [2 if char > "\uffff" or unicodedata.east_asian_width(char) in "WF" else 1 for char in text]
    if sum(widths) <= width:
        return text
    used = kept = 0
    for columns in widths:
        if used + columns > width - 1:
            break
        used, kept = used + columns, kept + 1
    return text[:kept] + "…"


def _bar_chart(
    key: str,
    title: str,
    note: str,
    counted: Counter[tuple[Any, Any]],
    *,
    category: str,
    color: str,
    colors: dict[str, str],
    horizontal: bool,
    category_title: str,
    sort: list[str] | None = None,
    time_unit: str | None = None,
) -> Chart:
    """A stacked bar chart of rows counted by (category, color) (``counted``), with totals on the bars."""
    import altair as alt

    values = [{category: c, color: s, "count": n} for (c, s), n in counted.items()]
    table = sorted(values, key=lambda v: (str(v[category]), str(v[color])))
    columns = [category_title, color, "count"]
    rows = [[v[category], v[color], v["count"]] for v in table]
    if not values:
        return Chart(key, title, note, None, columns, rows)
    domain = [name for name in colors if any(v[color] == name for v in values)]
    domain += sorted({v[color] for v in values} - set(domain))
    scale = alt.Scale(domain=domain, range=[colors.get(name, "#72b7b2") for name in domain])
    legend = alt.Legend(title=None, orient="bottom", direction="horizontal")
    source = alt.Data(values=values)  # type: ignore[no-untyped-call]
    integer = alt.Axis(tickMinStep=1, format="d")  # counts: no fractional ticks
    total = (
        alt.X("sum(count):Q", title="count", axis=integer)
        if horizontal
        else alt.Y("sum(count):Q", title="count", axis=integer)
    )
    if time_unit is not None:
        fmt = "%b %d %H:00" if "hours" in time_unit else "%b %d"
        place: Any = alt.X(
            f"{category}:T",
            timeUnit=cast(Any, time_unit),
            title=category_title,
            axis=alt.Axis(
                labelAngle=-40,
                labelOverlap="greedy",
                **{"format": fmt, **_time_ticks([str(v[category]) for v in values], "hours" in time_unit)},
            ),
        )
    elif horizontal:
        totals: Counter[Any] = Counter()
        for (name, _), n in counted.items():
            totals[name] += n
        by_total = sorted(totals, key=lambda name: (-totals[name], str(name)))
        place = alt.Y(
            f"{category}:N",
            sort=sort if sort is not None else by_total,
            title=category_title,
            axis=alt.Axis(labelLimit=0),  # no cut: Vega's cut can split a surrogate pair
        )
    else:
        place = alt.X(
            f"{category}:N",
            sort=sort if sort is not None else "ascending",
            title=category_title,
            axis=alt.Axis(labelAngle=0, labelLimit=0),
        )
    channels = {"x": total, "y": place} if horizontal else {"x": place, "y": total}
    bars = alt.Chart(source).mark_bar().encode(color=alt.Color(f"{color}:N", scale=scale, legend=legend), **channels)
    layers = [bars]
    if time_unit is None:
        text = (
            alt.Chart(source)
            .mark_text(
                align="left" if horizontal else "center",
                baseline="middle" if horizontal else "bottom",
                dx=3 if horizontal else 0,
                dy=0 if horizontal else -3,
                fontSize=10,
                color="#444",
            )
            .encode(text=alt.Text("sum(count):Q"), **channels)
        )
        layers.append(text)
    height = max(60, 22 * len({v[category] for v in values})) if horizontal else 220
    chart = _configured(alt.layer(*layers).properties(width=430, height=height))
    counts = [v["count"] for v in values]
    log_spec = None
    if max(counts) >= LOG_RATIO * min(counts):
        log_spec = _log_chart(source, place, color, scale, legend, horizontal, time_unit, max(counts), height)
    return _drawn(Chart(key, title, note, None, columns, rows), chart.to_dict(), log_spec)


def _configured(chart: Any) -> Any:
    return (
        chart.configure_view(stroke=None)
        .configure_axis(labelFontSize=11, titleFontSize=11, gridColor="#eeeeee")
        .configure_legend(labelFontSize=11, symbolType="square")
    )


def _log_chart(
    source: Any,
    place: Any,
    color: str,
    scale: Any,
    legend: Any,
    horizontal: bool,
    time_unit: str | None,
    largest: int,
    height: int,
) -> dict[str, Any]:
    """The log-scale view: one bar per (category, colour) side by side, each labelled; lines over time."""
    import altair as alt

    log = alt.Scale(type="log", domainMin=0.7)
    axis = alt.Axis(values=log_ticks(largest), format="d")
    shade = alt.Color(f"{color}:N", scale=scale, legend=legend)
    if time_unit is not None:
        lines = alt.Chart(source).mark_line(point=True, strokeWidth=1.5)
        chart = lines.encode(x=place, y=alt.Y("sum(count):Q", title="count (log)", scale=log, axis=axis), color=shade)
        return cast(dict[str, Any], _configured(chart.properties(width=430, height=220)).to_dict())
    if horizontal:
        channels: dict[str, Any] = {
            "x": alt.X("sum(count):Q", title="count (log)", scale=log, axis=axis),
            "y": place,
            "yOffset": alt.YOffset(f"{color}:N"),
        }
        label: dict[str, Any] = {"align": "left", "baseline": "middle", "dx": 3}
    else:
        channels = {
            "x": place,
            "y": alt.Y("sum(count):Q", title="count (log)", scale=log, axis=axis),
            "xOffset": alt.XOffset(f"{color}:N"),
        }
        label = {"align": "center", "baseline": "bottom", "dy": -2}
    bars = alt.Chart(source).mark_bar().encode(color=shade, **channels)
    text = (
        alt.Chart(source).mark_text(fontSize=9, color="#444", **label).encode(text=alt.Text("sum(count):Q"), **channels)
    )
    size = {"height": height * 2} if horizontal else {"height": 220}
    return cast(dict[str, Any], _configured(alt.layer(bars, text).properties(width=430, **size)).to_dict())


YEARS_OF_DAY_TICKS = 2
"""The longest span (in years) the time chart puts day ticks on; a longer one is ticked by year."""


def _time_ticks(bins: list[str], hours: bool) -> dict[str, Any]:
    """Day ticks on whole days (at most about 12), when the bins are days, two or more, over at most two years.

    Vega's own ticks fall between day bins (``Oct 09`` twice). A longer span keeps Vega's ticks, labelled
    by year (``{"format": "%Y"}``): Vega generates a day interval's ticks day by day. Hour bins keep
    Vega's ticks (their labels name the hour; this vl-convert fails on an
    ``hour`` interval), and a one-bin domain takes no interval (the renderer
    fails on it).
    """
    instants = sorted({datetime.fromisoformat(b) for b in bins})
    if hours or len(instants) < 2:
        return {}
    days = (instants[-1] - instants[0]).total_seconds() / 86400
    if days > YEARS_OF_DAY_TICKS * 366:
        # Vega walks a day interval day by day (a 3,000-year span took minutes): its own year ticks, named by year.
        return {"format": "%Y"}
    return {"tickCount": {"interval": "day", "step": max(1, math.ceil(days / 12))}}


def _time_bins(millis: list[int]) -> tuple[str, str]:
    """A bin width for the time chart: (Polars duration, Vega-Lite time unit)."""
    span = (max(millis) - min(millis)) / 86_400_000 if millis else 0
    if span <= 2:
        return "1h", "utcyearmonthdatehours"
    if span <= 120:
        return "1d", "utcyearmonthdate"
    return "1w", "utcyearmonthdate"


def _listed_depths(corpus: Corpus, listed: pl.DataFrame) -> list[str]:
    """Each listing row's ``delegationDepth`` as a category (``?`` when unknown), by the row's session id.

    The last session of an id wins, as a dict built over the sessions would have it.
    """
    ids = listed["id"].unique()
    sessions = corpus.sessions.select("session_id", "delegation_depth")
    sessions = sessions.filter(pl.col("session_id").is_in(ids.implode())).unique(
        "session_id", keep="last", maintain_order=True
    )  # the listed ids' sessions only: no table of every session's id
    joined = listed.select(pl.col("id").alias("session_id")).join(
        sessions, on="session_id", how="left", nulls_equal=True, maintain_order="left"
    )
    return joined["delegation_depth"].cast(pl.String).fill_null("?").to_list()


def report_charts(corpus: Corpus, rows: pl.DataFrame | None) -> list[Chart]:
    """Every chart of the report for a corpus and its catalog rows (``None``: the listing fails).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog import read_corpus
        >>> [chart.title for chart in report_charts(read_corpus(tempfile.mkdtemp(), cache=False), None)][:0]
        []
    """
    charts: list[Chart] = []
    if rows is not None:
        # Column lists, never a dict per row: a large corpus has hundreds of thousands of listing rows.
        listed = rows.filter(pl.col("kind").is_in(["child", "diagnostic"]))
        kinds, reasons = listed["kind"].to_list(), listed["reason"].to_list()
        outcomes = ["child" if kind == "child" else str(reason) for kind, reason in zip(kinds, reasons, strict=True)]
        diagnostic = [kind == "diagnostic" for kind in kinds]
        causes = _top([c for c, d in zip(listed["cause"].to_list(), diagnostic, strict=True) if d], 25)
        charts.append(
            _bar_chart(
                "reason-cause",
                "Diagnostics by reason and cause",
                "Each diagnostic row once; the cause is the audit column behind upstream's reason.",
                Counter(zip(causes, (str(r) for r, d in zip(reasons, diagnostic, strict=True) if d), strict=True)),
                category="cause",
                color="reason",
                colors=OUTCOME_COLORS,
                horizontal=True,
                category_title="cause",
            )
        )
        del causes, diagnostic, kinds, reasons
        charts.append(
            _bar_chart(
                "provider",
                "Listing rows by provider",
                "Provider of the child's last descriptor; (none) when it has none.",
                Counter(zip(_top(listed["provider"].to_list()), outcomes, strict=True)),
                category="provider",
                color="outcome",
                colors=OUTCOME_COLORS,
                horizontal=True,
                category_title="provider",
            )
        )
        depths = _listed_depths(corpus, listed)
        counted = Counter(zip(depths, outcomes, strict=True))
        del depths
        order = sorted({depth for depth, _ in counted}, key=lambda d: (d == "?", int(d) if d != "?" else 0))
        charts.append(
            _bar_chart(
                "depth",
                "Listing rows by delegation depth",
                "delegationDepth from the child's header.",
                counted,
                category="depth",
                color="outcome",
                colors=OUTCOME_COLORS,
                horizontal=False,
                category_title="delegation depth",
                sort=order,
            )
        )
        # A time axis names dates: a createdAt past year 9999 is left off it, and the note counts it.
        created = listed["created_at_ms"]
        frame = pl.DataFrame(
            {"ms": created, "outcome": pl.Series(outcomes, dtype=pl.String)},
            schema={"ms": pl.Int64, "outcome": pl.String},
        ).filter(pl.col("ms").is_not_null())
        del outcomes, listed
        dated = frame.filter(pl.col("ms").is_between(CALENDAR_MIN_MS, CALENDAR_MAX_MS))
        undated = frame.height - dated.height
        every, time_unit = _time_bins(dated["ms"].to_list())
        binned = dated.select(
            pl.from_epoch("ms", time_unit="ms").dt.truncate(every).dt.strftime("%Y-%m-%dT%H:%M:%SZ").alias("bin"),
            "outcome",
        )
        unit = {"1h": "hour", "1d": "day", "1w": "week"}[every]
        left_off = (
            f" {undated:,} row{'' if undated == 1 else 's'} with a createdAt outside years 1 to 9999 "
            "(problems: time-out-of-range) not drawn."
            if undated
            else ""
        )
        charts.append(
            _bar_chart(
                "time",
                f"Listing rows over time (per {unit})",
                "By the child's createdAt (UTC)." + left_off,
                Counter(zip(binned["bin"].to_list(), binned["outcome"].to_list(), strict=True)),
                category="created",
                color="outcome",
                colors=OUTCOME_COLORS,
                horizontal=False,
                category_title=f"created ({unit}, UTC)",
                time_unit=time_unit,
            )
        )
    descriptors = corpus.descriptors
    statuses = descriptors["status"].to_list()
    versions = _top(descriptors["version"].to_list(), width=VERTICAL_LABEL)
    charts.append(
        _bar_chart(
            "version",
            "Descriptor versions",
            "Every subagent/descriptor event (seed copies included), by its version field.",
            Counter(zip(versions, statuses, strict=True)),
            category="version",
            color="status",
            colors=STATUS_COLORS,
            horizontal=False,
            category_title="version",
        )
    )
    del versions
    modes = _top(descriptors["mode"].to_list(), width=VERTICAL_LABEL)
    charts.append(
        _bar_chart(
            "mode",
            "Descriptor modes",
            "Every subagent/descriptor event, by its mode field.",
            Counter(zip(modes, statuses, strict=True)),
            category="mode",
            color="status",
            colors=STATUS_COLORS,
            horizontal=False,
            category_title="mode",
        )
    )
    return charts
