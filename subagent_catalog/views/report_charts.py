"""The HTML report's charts, drawn as inline SVG from their counts (``views.svg_charts``).

No chart library and no JavaScript engine is imported: the counts come from
Polars, the drawing from a few small functions. Every label is made visible
(control characters as pictures) and cut to a column width here.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.units import CALENDAR_MAX_MS, CALENDAR_MIN_MS
from subagent_catalog.views import svg_charts
from subagent_catalog.views.palette import LISTING_COLOURS, STATUS_COLOURS

TOP_CATEGORIES = 15


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


def _top(values: list[str | None], limit: int = TOP_CATEGORIES, width: int = HORIZONTAL_LABEL) -> list[str]:
    """Bound categories: clip long names, keep the ``limit`` most frequent, fold the rest into ``(other)``.

    Names are cut here, to ``width`` columns (a wide or astral character takes two).
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


def _series(colours: dict[str, str], counted: Counter[tuple[Any, Any]]) -> list[str]:
    """The colours drawn, in the palette's order, then any the palette does not name (sorted)."""
    present = {str(s) for _, s in counted}
    return [name for name in colours if name in present] + sorted(present - set(colours))


def _bar_chart(
    key: str,
    title: str,
    note: str,
    counted: Counter[tuple[Any, Any]],
    *,
    category: str,
    color: str,
    horizontal: bool,
    colors: dict[str, str] = LISTING_COLOURS,
    category_title: str | None = None,
    sort: list[str] | None = None,
) -> Chart:
    """A stacked bar chart of rows counted by (category, color) (``counted``), with totals on the bars."""
    category_title = category_title or category
    values = [{category: c, color: s, "count": n} for (c, s), n in counted.items()]
    table = sorted(values, key=lambda v: (str(v[category]), str(v[color])))
    columns = [category_title, color, "count"]
    rows = [[v[category], v[color], v["count"]] for v in table]
    chart = Chart(key, title, note, None, columns, rows)
    if not values:
        return chart
    totals: Counter[str] = Counter()
    for (name, _), n in counted.items():
        totals[str(name)] += n
    if sort is not None:
        order = sort
    elif horizontal:
        order = sorted(totals, key=lambda name: (-totals[name], name))
    else:
        order = sorted(totals)
    data = svg_charts.Counts(
        order, _series(colors, counted), {(str(c), str(s)): n for (c, s), n in counted.items()}, colors, category_title
    )
    counts = counted.values()
    return _drawn(
        chart,
        lambda log: svg_charts.bar_chart(data, horizontal=horizontal, colour_title=color, log=log, label=title),
        max(counts) >= LOG_RATIO * min(counts),
    )


def _time_chart(key: str, title: str, note: str, binned: pl.DataFrame, every: str, category_title: str) -> Chart:
    """Listing rows by (createdAt bin, outcome) on a time axis; the table names each bin in UTC."""
    counted = binned.group_by("bin", "outcome").len().sort("bin", "outcome")
    starts, names, counts = counted["bin"].to_list(), counted["outcome"].to_list(), counted["len"].to_list()
    rows = [
        [(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%SZ"), name, n]
        for ms, name, n in zip(starts, names, counts, strict=True)
    ]
    chart = Chart(key, title, note, None, [category_title, "outcome", "count"], rows)
    if not rows:
        return chart
    bin_ms = {"1h": 3_600_000, "1d": 86_400_000, "1w": 7 * 86_400_000}[every]
    bins = list(zip(starts, names, counts, strict=True))
    series = _series(LISTING_COLOURS, Counter({(0, name): 1 for name in names}))

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
                horizontal=True,
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
                horizontal=True,
            )
        )
        # each row's delegationDepth by its session id (``?``: unknown), the last session of an id winning
        sessions = corpus.sessions.select("session_id", "delegation_depth")
        sessions = sessions.filter(pl.col("session_id").is_in(listed["id"].unique().implode())).unique(
            "session_id", keep="last", maintain_order=True
        )  # the listed ids' sessions only: no table of every session's id
        joined = listed.select(pl.col("id").alias("session_id")).join(
            sessions, on="session_id", how="left", nulls_equal=True, maintain_order="left"
        )
        depths = joined["delegation_depth"].cast(pl.String).fill_null("?").to_list()
        del sessions, joined
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
        millis = dated["ms"].to_list()
        days = (max(millis) - min(millis)) / 86_400_000 if millis else 0
        every = "1h" if days <= 2 else "1d" if days <= 120 else "1w"  # hours up to two days, days up to 120, weeks
        binned = dated.select(
            pl.from_epoch("ms", time_unit="ms").dt.truncate(every).dt.epoch("ms").alias("bin"), "outcome"
        )
        unit = {"1h": "hour", "1d": "day", "1w": "week"}[every]
        left_off = (
            f" {undated:,} row{'' if undated == 1 else 's'} with a createdAt outside years 1 to 9999 "
            "(problems: time-out-of-range) not drawn."
            if undated
            else ""
        )
        charts.append(
            _time_chart(
                "time",
                f"Listing rows over time (per {unit})",
                "By the child's createdAt (UTC)." + left_off,
                binned,
                every,
                f"created ({unit}, UTC)",
            )
        )
    descriptors = corpus.descriptors
    statuses = descriptors["status"].to_list()
    for key, title, note in (
        (
            "version",
            "Descriptor versions",
            "Every subagent/descriptor event (seed copies included), by its version field.",
        ),
        ("mode", "Descriptor modes", "Every subagent/descriptor event, by its mode field."),
    ):
        counts = Counter(zip(_top(descriptors[key].to_list(), width=VERTICAL_LABEL), statuses, strict=True))
        charts.append(
            _bar_chart(
                key,
                title,
                note,
                counts,
                category=key,
                color="status",
                horizontal=False,
                colors=STATUS_COLOURS,
            )
        )
    return charts
