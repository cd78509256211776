"""The HTML report's charts, drawn as inline SVG from their counts (``views.svg_charts``).

No chart library and no JavaScript engine is imported: the counts come from
Polars, the drawing from a few small functions. Every label is made visible
(control characters as pictures) and cut to a column width here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from subagent_catalog.analysis.chart_counts import folded_tally, listing_counts
from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.units import plural
from subagent_catalog.views import svg_charts
from subagent_catalog.views.palette import LISTING_COLOURS, STATUS_COLOURS

HORIZONTAL_LABEL = 36


VERTICAL_LABEL = 18


_CONTROL = re.compile("[\x00-\x1f\x7f]")


_NOT_XML = re.compile("[\ufffe\uffff\ud800-\udfff]")


def chart_text(value: str) -> str:
    """Text as a chart shows it: control characters as visible pictures, nothing XML forbids.

    A chart's SVG must be well-formed XML wherever it is copied, so every
    label goes through this first. C0 controls and
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


@dataclass
class Chart:
    """One drawn chart: a title, its inline SVG markup and its data as a table.

    ``svg`` is ``None`` when there is nothing to count, or when the chart
    could not be drawn (``failure`` then says why; the table stays).
    """

    key: str
    title: str
    note: str
    svg: str | None
    columns: list[str]
    rows: list[list[Any]]
    failure: str | None = None
    log_svg: str | None = None
    """The same counts on a log scale, one bar (or line) per colour, when small counts sit next to large ones."""


def _drawn(chart: Chart, draw: Callable[[bool], str], log: bool) -> Chart:
    """``chart`` with its SVGs, or with ``failure`` set when drawing raises ``ValueError`` (the report goes on)."""
    try:
        chart.svg = draw(False)
        chart.log_svg = draw(True) if log else None
    except ValueError as error:
        chart.svg = chart.log_svg = None
        chart.failure = clip(" ".join(f"{type(error).__name__}: {error}".split()), 300)
    return chart


LOG_RATIO = 20
"""A chart gets a log-scale view when its largest count is at least this many times its smallest."""


def _label(width: int) -> Callable[[str], str]:
    """A category's label: made visible (``chart_text``) and cut to ``width`` columns."""
    return lambda value: _clip_columns(chart_text(clip(value)), width)


def _clip_columns(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns, ellipsis included."""
    if svg_charts.columns(text) <= width:
        return text
    used = kept = 0
    for char in text:
        if used + svg_charts.columns(char) > width - 1:
            break
        used, kept = used + svg_charts.columns(char), kept + 1
    return text[:kept] + "…"


def _series(colours: dict[str, str], present: set[str]) -> list[str]:
    """The colours drawn, in the palette's order, then any the palette does not name (sorted)."""
    return [name for name in colours if name in present] + sorted(present - set(colours))


def _bar_chart(
    key: str,
    title: str,
    note: str,
    counted: pl.DataFrame,
    *,
    category: str,
    color: str,
    horizontal: bool,
    colors: dict[str, str] = LISTING_COLOURS,
    category_title: str | None = None,
    in_order: bool = False,
) -> Chart:
    """A stacked bar chart of a ``folded_tally`` (``counted``), with totals on the bars.

    Bars go the largest first when ``horizontal``, in ``counted``'s order when ``in_order``, else by name.
    """
    category_title = category_title or category
    pairs = [(str(c), str(s), n) for c, s, n in counted.select("category", "colour", "count").iter_rows()]
    rows: list[list[Any]] = [[c, s, n] for c, s, n in sorted(pairs)]
    chart = Chart(key, title, note, None, [category_title, color, "count"], rows)
    if not pairs:
        return chart
    order = list(dict.fromkeys(c for c, _, _ in pairs))
    data = svg_charts.Counts(
        order if horizontal or in_order else sorted(order),
        _series(colors, {s for _, s, _ in pairs}),
        {(c, s): n for c, s, n in pairs},
        colors,
        category_title,
    )
    counts = [n for _, _, n in pairs]
    return _drawn(
        chart,
        lambda log: svg_charts.bar_chart(data, horizontal=horizontal, colour_title=color, log=log, label=title),
        max(counts) >= LOG_RATIO * min(counts),
    )


def _time_chart(key: str, title: str, note: str, counted: pl.DataFrame, every: str, category_title: str) -> Chart:
    """Listing rows by (createdAt bin, outcome) on a time axis; the table names each bin in UTC."""
    starts, names, counts = counted["bin"].to_list(), counted["outcome"].to_list(), counted["count"].to_list()
    rows = [
        [(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%SZ"), name, n]
        for ms, name, n in zip(starts, names, counts, strict=True)
    ]
    chart = Chart(key, title, note, None, [category_title, "outcome", "count"], rows)
    if not rows:
        return chart
    bin_ms = {"1h": 3_600_000, "1d": 86_400_000, "1w": 7 * 86_400_000}[every]
    bins = list(zip(starts, names, counts, strict=True))
    series = _series(LISTING_COLOURS, set(names))

    def draw(log: bool) -> str:
        return svg_charts.time_chart(
            bins,
            bin_ms=bin_ms,
            colours=LISTING_COLOURS,
            series=series,
            category_title=category_title,
            colour_title="outcome",
            log=log,
            label=title,
        )

    return _drawn(chart, draw, max(counts) >= LOG_RATIO * min(counts))


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
        counts = listing_counts(rows, corpus.sessions, label=_label(HORIZONTAL_LABEL))
        charts.append(
            _bar_chart(
                "reason-cause",
                "Diagnostics by reason and cause",
                "Each diagnostic row once; the cause is the audit column behind upstream's reason.",
                counts.reason_cause,
                category="cause",
                color="reason",
                horizontal=True,
            )
        )
        charts.append(
            _bar_chart(
                "provider",
                "Listing rows by provider",
                "Provider of the child's last descriptor; (none) when it has none.",
                counts.provider,
                category="provider",
                color="outcome",
                horizontal=True,
            )
        )
        charts.append(
            _bar_chart(
                "depth",
                "Listing rows by delegation depth",
                "delegationDepth from the child's header.",
                counts.depth,
                category="depth",
                color="outcome",
                horizontal=False,
                category_title="delegation depth",
                in_order=True,
            )
        )
        unit = {"1h": "hour", "1d": "day", "1w": "week"}[counts.every]
        left_off = (
            f" {plural(counts.undated, 'row')} with a createdAt outside years 1 to 9999 "
            "(problems: time-out-of-range) not drawn."
            if counts.undated
            else ""
        )
        charts.append(
            _time_chart(
                "time",
                f"Listing rows over time (per {unit})",
                "By the child's createdAt (UTC)." + left_off,
                counts.time,
                counts.every,
                f"created ({unit}, UTC)",
            )
        )
    for key, title, note in (
        (
            "version",
            "Descriptor versions",
            "Every subagent/descriptor event (seed copies included), by its version field.",
        ),
        ("mode", "Descriptor modes", "Every subagent/descriptor event, by its mode field."),
    ):
        counted = folded_tally(corpus.descriptors, key, "status", label=_label(VERTICAL_LABEL))
        charts.append(
            _bar_chart(key, title, note, counted, category=key, color="status", horizontal=False, colors=STATUS_COLOURS)
        )
    return charts
