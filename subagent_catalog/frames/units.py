"""Figures as people read them: counts, token counts, costs, shares, durations, times; token quantities' names.

Counts ``4,125``, token counts ``1.2 M``, costs ``$0.0131``, shares ``5.6%``, durations ``1 h 32 min``; the
one name of each token quantity is ``TOKEN_LABELS``.

The one home of every figure's format: each view (the report and its site, ``summary``, ``runs``,
``show`` pages, compare, the widgets, the notebook display) formats run facts with these, so one figure
reads the same everywhere. ``None`` (a figure no event reported) is ``–`` (``MISSING``), never 0; a
figure built on unknown parts is a lower bound and reads ``≥ …`` (``LOWER``: each formatter's ``lower=``).

Times are epoch milliseconds, exact in the frames' ``*_ms`` columns whatever their value: a log may hold
any safe integer, up to 2^53 - 1 ms (year 285,428) and down to -(2^53 - 1). A Python ``datetime`` (and so
``date``, ``strftime`` and Polars' conversion to Python) holds only years 1 to 9999 (``CALENDAR_MIN_MS`` to
``CALENDAR_MAX_MS``), and Polars panics formatting a time past about year 262,000. So every conversion of a
time to a ``Datetime`` column (``calendar_datetime``, ``calendar_only``), every per-day key (``calendar_day``)
and every time a view shows (``clock``, ``iso_time``) goes through the helpers below: none of them raises, a
``Datetime`` is null outside the calendar, and a time shown outside it reads with an expanded year
(``+010000-01-01 00:00:00 UTC``, ISO 8601's and JavaScript's form).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import polars as pl

MISSING = "–"
"""What a view shows for a figure that is not known (``None``)."""

CALENDAR_MIN_MS = -62_135_596_800_000
"""0001-01-01T00:00:00.000Z: the first millisecond a Python ``datetime`` can hold."""

CALENDAR_MAX_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the last millisecond a Python ``datetime`` can hold."""

LOWER = "≥ "
"""What a view puts before a figure that leaves unknown parts out (a lower bound)."""

TOKEN_LABELS: dict[str, str] = {
    "input_tokens": "input",
    "cache_read_tokens": "cache read",
    "cache_write_tokens": "cache write",
    "output_tokens": "output",
    "reasoning_tokens": "reasoning",
    "billed_input_tokens": "input + cache",
    "tokens": "total",
}
"""Each token quantity's one label in every view: ``input`` is the uncached prompt only, ``input + cache`` adds
cache read and write (a prompt's billed tokens), ``total`` adds the output too; ``reasoning`` is part of the output."""

OUT_OF_RANGE = "out of range"
"""The bin of a time outside years 1 to 9999 in a per-day (or other calendar) grouping."""

NO_TIME = "no time"
"""The bin of a row without a time in such a grouping."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CYCLE_MS = 146_097 * 86_400_000
"""400 Gregorian years (146,097 days): the calendar repeats after them, weekdays included."""

Precision = Literal["minute", "second", "millisecond"]
_FORMATS: dict[str, str] = {"minute": "-%m-%d %H:%M", "second": "-%m-%d %H:%M:%S", "millisecond": "-%m-%d %H:%M:%S.%f"}


def token_label(name: str) -> str:
    """The label of a token quantity (``TOKEN_LABELS``) by its column name or upstream's usage key.

    Examples:
        >>> token_label("cache_read_tokens"), token_label("cacheReadTokens"), token_label("inputTokens")
        ('cache read', 'cache read', 'input')
        >>> token_label("billed_input_tokens"), token_label("somethingNew")
        ('input + cache', 'somethingNew')
    """
    if name in TOKEN_LABELS:
        return TOKEN_LABELS[name]
    column = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
    return TOKEN_LABELS.get(column, name)


def _bound(text: str, lower: bool) -> str:
    """``text`` marked as a lower bound when ``lower`` (an unknown figure stays ``MISSING``)."""
    return LOWER + text if lower and text != MISSING else text


def human_duration(ms: float | None, *, lower: bool = False) -> str:
    """A duration in milliseconds in the two largest units that matter (``≥`` before it when ``lower``).

    Examples:
        >>> [human_duration(v) for v in (0, 850, 5_524, 92_000, 5_524_119, 200_000_000, None)]
        ['0 ms', '850 ms', '5.5 s', '1 min 32 s', '1 h 32 min', '2 d 7 h', '–']
        >>> human_duration(-1500), human_duration(92_000, lower=True), human_duration(float("nan"))
        ('-1.5 s', '≥ 1 min 32 s', '–')
    """
    if ms is None or ms != ms:  # NaN: a pandas missing value
        return MISSING
    if lower:
        return _bound(human_duration(ms), lower)
    if ms < 0:
        return "-" + human_duration(-ms)
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    whole = int(seconds)
    minutes, second = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {second} s" if second else f"{minutes} min"
    hours, minute = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minute} min" if minute else f"{hours} h"
    days, hour = divmod(hours, 24)
    return f"{days} d {hour} h" if hour else f"{days} d"


def human_cost(usd: float | None, *, significant: int | None = 2) -> str:
    """A cost in US dollars with the digits that matter (``–`` when unknown: an unpriced model).

    Cents from $1; below $1, exactly ``significant`` significant digits (two by default), trailing
    zeros kept, so two figures side by side read alike (``$0.0040`` beside ``$0.00055``, not
    ``$0.004``) and a tiny cost keeps its figure; a cost that rounds to $1 or more shows cents.
    ``significant=None`` shows at most four decimals below $1 (three significant digits below
    $0.001), trailing zeros dropped.

    Examples:
        >>> human_cost(12.345), human_cost(0.0131), human_cost(0.000547), human_cost(0.0), human_cost(None)
        ('$12.35', '$0.013', '$0.00055', '$0', '–')
        >>> [human_cost(v) for v in (0.0037, 0.005, 0.8836, 0.996, 1.1715, 0.0000001)]
        ['$0.0037', '$0.0050', '$0.88', '$1.00', '$1.17', '$0.00000010']
        >>> human_cost(0.0131, significant=None), human_cost(0.000547, significant=None)
        ('$0.0131', '$0.000547')
    """
    if usd is None or usd != usd:  # NaN: a pandas missing value
        return MISSING
    if usd == 0:
        return "$0"
    if significant is not None:
        rounded = float(f"{abs(usd):.{significant}g}")
        if rounded < 1:
            places = significant - 1 - math.floor(math.log10(rounded))
            return f"{'-' if usd < 0 else ''}${rounded:.{places}f}"
        return f"{'-' if usd < 0 else ''}${abs(usd):,.2f}"
    if abs(usd) >= 1:
        return f"${usd:,.2f}"
    return f"${usd:.3g}" if abs(usd) < 0.001 else f"${usd:.4f}".rstrip("0")


def partial_cost(usd: float | None, known: float | None, *, unknown: int | None = None, of: str = "session") -> str:
    """A cost that may have unknown parts: ``usd`` when known, else its known part as a lower bound.

    ``≥ $13.08`` when part of it is unknown (an unpriced model, an unreadable log) and the known part
    is more than 0; ``–`` when nothing of it is known. ``unknown`` (when given and above 0, with ``usd``
    unknown) says beside it how many ``of`` (sessions, runs) it leaves out: every view says it so.

    Examples:
        >>> partial_cost(0.5, 0.5), partial_cost(None, 13.0812), partial_cost(None, 0.0), partial_cost(None, None)
        ('$0.50', '≥ $13.08', '–', '–')
        >>> partial_cost(None, 13.0812, unknown=2), partial_cost(None, 0.0, unknown=1, of="run")
        ('≥ $13.08 (2 sessions of unknown cost)', '– (1 run of unknown cost)')
    """
    if usd is not None and usd == usd:
        return human_cost(usd)
    text = f"{LOWER}{human_cost(known)}" if known else MISSING
    return f"{text} ({plural(unknown, of)} of unknown cost)" if unknown else text


def exact_count(value: int | None, *, lower: bool = False) -> str:
    """A count of things (sessions, files, runs, calls) in full with thousands separators: ``4,125``.

    Examples:
        >>> exact_count(5000), exact_count(7), exact_count(None), exact_count(12, lower=True)
        ('5,000', '7', '–', '≥ 12')
    """
    return MISSING if value is None else _bound(f"{value:,}", lower)


def share(value: float | None, *, digits: int = 1, signed: bool = False, lower: bool = False) -> str:
    """A share (a fraction, 0.056) as a percentage: ``5.6%``, no space, ``digits`` decimals (``+`` when ``signed``).

    Examples:
        >>> share(0.056), share(1.0, digits=0), share(None), share(0.12, signed=True), share(0.4, lower=True)
        ('5.6%', '100%', '–', '+12.0%', '≥ 40.0%')
    """
    if value is None or value != value:
        return MISSING
    return _bound(f"{100 * value:{'+' if signed else ''}.{digits}f}%", lower)


def human_count(value: int | None, *, lower: bool = False) -> str:
    """A count in thousands, millions, billions or trillions past 10,000 (``–`` when unknown): token counts.

    Examples:
        >>> human_count(950), human_count(12_345), human_count(1_234_567), human_count(None)
        ('950', '12.3 k', '1.23 M', '–')
        >>> human_count(1_310_000_000), human_count(999_999_999), human_count(4 * 10**15)
        ('1.31 B', '1 B', '4,000 T')
        >>> human_count(1_310_000_000, lower=True)
        '≥ 1.31 B'
    """
    if value is None:
        return MISSING
    if lower:
        return _bound(human_count(value), lower)
    if abs(value) < 10_000:
        return f"{value:,}"
    if abs(value) < 1_000_000:
        return f"{value / 1000:.1f} k"
    for unit, size in (("M", 10**6), ("B", 10**9)):
        if float(f"{abs(value) / size:.3g}") < 1000:
            return f"{value / size:.3g} {unit}"
    return f"{value / 10**12:,.3g} T" if abs(value) < 10**15 else f"{value / 10**12:,.0f} T"


def plural(count: int, singular: str, many: str | None = None) -> str:
    """``count`` and the noun that agrees with it: ``1 session``, ``2 sessions``, ``1 child``, ``3 children``.

    Examples:
        >>> plural(1, "session"), plural(1_234, "session"), plural(1, "child", "children"), plural(0, "lane")
        ('1 session', '1,234 sessions', '1 child', '0 lanes')
    """
    return f"{count:,} {singular if count == 1 else many or singular + 's'}"


def in_calendar(ms: int | None) -> bool:
    """Whether a time in epoch milliseconds falls in years 1 to 9999 UTC (what a ``datetime`` can hold).

    Examples:
        >>> in_calendar(0), in_calendar(CALENDAR_MAX_MS), in_calendar(CALENDAR_MAX_MS + 1), in_calendar(None)
        (True, True, False, False)
    """
    return ms is not None and CALENDAR_MIN_MS <= ms <= CALENDAR_MAX_MS


def _year_and_rest(ms: int, fmt: str) -> tuple[int, str]:
    """The proleptic Gregorian UTC year of any time (years shifted by whole 400-year cycles) and the rest as ``fmt``."""
    cycles = (ms - CALENDAR_MIN_MS) // _CYCLE_MS - 5  # lands in years 1..2000 with room for the 400-year cycles
    shifted = _EPOCH + timedelta(milliseconds=ms - cycles * _CYCLE_MS)
    return shifted.year + 400 * cycles, shifted.strftime(fmt)


def _year_text(year: int) -> str:
    return f"{year:04d}" if 1 <= year <= 9999 else f"{year:+07d}"


def clock(ms: int | None, *, seconds: bool = True, precision: Precision | None = None) -> str:
    """A UTC time in epoch milliseconds as ``YYYY-MM-DD HH:MM:SS UTC`` (empty when unknown); never raises.

    A time outside years 1 to 9999 has an expanded year: a sign and six digits (ISO 8601's expanded
    form, as JavaScript's ``toISOString`` writes it), so ``+010000-01-01`` never reads as a date in year 1000.

    Args:
        ms: milliseconds since 1970-01-01T00:00:00Z, any integer.
        seconds: to the second (``False``: to the minute).
        precision: ``minute``, ``second`` or ``millisecond`` (overrides ``seconds``).

    Examples:
        >>> clock(1_767_225_601_001), clock(1_767_225_601_001, seconds=False), clock(None)
        ('2026-01-01 00:00:01 UTC', '2026-01-01 00:00 UTC', '')
        >>> clock(1_767_225_601_001, precision="millisecond")
        '2026-01-01 00:00:01.001 UTC'
        >>> clock(253_402_300_800_000), clock(2**53 - 1), clock(-(2**53 - 1))
        ('+010000-01-01 00:00:00 UTC', '+287396-10-12 08:59:00 UTC', '-283457-03-21 15:00:59 UTC')
        >>> clock(CALENDAR_MIN_MS - 1)
        '+000000-12-31 23:59:59 UTC'
    """
    if ms is None:
        return ""
    chosen = precision if precision is not None else "second" if seconds else "minute"
    year, rest = _year_and_rest(int(ms), _FORMATS[chosen])
    if chosen == "millisecond":
        rest = rest[:-3]
    return f"{_year_text(year)}{rest} UTC"


def iso_time(ms: int | None) -> str | None:
    """A UTC time in epoch milliseconds as ISO 8601 text, as JavaScript's ``toISOString`` writes it; never raises.

    ``None`` stays ``None``. Outside years 0 to 9999 JavaScript writes a signed six-digit year; here every
    time outside years 1 to 9999 does (year 0 too), and times beyond JavaScript's ±8.64e15 ms get one as well.

    Examples:
        >>> iso_time(1_767_225_601_001), iso_time(None)
        ('2026-01-01T00:00:01.001Z', None)
        >>> iso_time(253_402_300_800_000), iso_time(-62_198_755_200_000)
        ('+010000-01-01T00:00:00.000Z', '-000001-01-01T00:00:00.000Z')
    """
    if ms is None:
        return None
    year, rest = _year_and_rest(int(ms), "-%m-%dT%H:%M:%S.%f")
    return f"{_year_text(year)}{rest[:-3]}Z"


def calendar_ms(ms: pl.Expr) -> pl.Expr:
    """An epoch-millisecond column with the times outside years 1 to 9999 made null (to convert safely).

    Examples:
        >>> pl.select(calendar_ms(pl.lit(pl.Series([0, 2**53 - 1, None])))).to_series().to_list()
        [0, None, None]
    """
    return pl.when(ms.is_between(CALENDAR_MIN_MS, CALENDAR_MAX_MS)).then(ms)


def calendar_datetime(ms: pl.Expr) -> pl.Expr:
    """An epoch-millisecond column as ``Datetime("ms", "UTC")``, null outside years 1 to 9999.

    Polars holds such a time but panics printing it past about year 262,000, and Python refuses it past
    year 9999: a frame never carries one in a ``Datetime`` column (the ``*_ms`` column keeps it exact).

    Examples:
        >>> frame = pl.DataFrame({"time_ms": [1_767_225_601_001, 2**53 - 1, -(2**53 - 1)]})
        >>> frame.select(calendar_datetime(pl.col("time_ms")).alias("time"))["time"].to_list()[1:]
        [None, None]
    """
    return calendar_ms(ms).cast(pl.Datetime("ms", "UTC"))


def calendar_day(ms: pl.Expr) -> pl.Expr:
    """The UTC day of an epoch-millisecond column as ``YYYY-MM-DD``; ``out of range`` outside years 1 to 9999.

    The key of per-day bins: every time outside the calendar shares one labelled bin, none is dropped; a null
    time stays null.

    Examples:
        >>> frame = pl.DataFrame({"ms": [1_767_225_601_001, 2**53 - 1, None]})
        >>> frame.select(calendar_day(pl.col("ms")).alias("day"))["day"].to_list()
        ['2026-01-01', 'out of range', None]
    """
    day = calendar_datetime(ms).dt.date().cast(pl.String)
    return pl.when(ms.is_null()).then(pl.lit(None, pl.String)).otherwise(day.fill_null(pl.lit(OUT_OF_RANGE)))


def time_split(row: Mapping[str, Any], *, duration: Callable[[Any], str] = human_duration) -> str:
    """A run's time, each part inside the whole it is shown in (empty when its wall time is unknown).

    Tool-busy time (when a call ran) and model time sit inside active time (when a turn of its own was
    open), active time inside wall time (first to last own event). The tools' time summed over their calls
    (``tool_ms``, upstream's figure) is added, labelled as such, when it differs from the busy time (calls
    that ran at once); model time is left out of the parts if it exceeds the active time (steps outside any
    turn, in a malformed log). No figure is clamped or made up.

    Args:
        row: a ``sessions`` row (``run_wall_ms``, ``active_ms``, ``llm_ms``, ``tool_busy_ms``, ``tool_ms``).
        duration: how a duration reads (``human_duration``).

    Examples:
        >>> time_split({"run_wall_ms": 8_245, "active_ms": 515, "llm_ms": 200, "tool_busy_ms": 300, "tool_ms": 815})
        'active 515 ms of 8.2 s wall (model 200 ms, tools busy 300 ms); tool calls summed 815 ms'
        >>> time_split({"run_wall_ms": 570, "active_ms": 570, "llm_ms": 52, "tool_busy_ms": 0, "tool_ms": 0})
        'active 570 ms, all of its wall time (model 52 ms)'
        >>> time_split({"run_wall_ms": 40, "active_ms": None}), time_split({"run_wall_ms": None})
        ('40 ms first to last event', '')
    """
    wall, active = row.get("run_wall_ms"), row.get("active_ms")
    if wall is None:
        return ""
    if active is None:
        return f"{duration(wall)} first to last event"
    llm, busy, summed = row.get("llm_ms"), row.get("tool_busy_ms"), row.get("tool_ms")
    head = f"active {duration(active)}" + (f" of {duration(wall)} wall" if active < wall else ", all of its wall time")
    parts = []
    if llm and llm <= active:
        parts.append(f"model {duration(llm)}")
    if busy:
        parts.append(f"tools busy {duration(busy)}")
    text = head + (f" ({', '.join(parts)})" if parts else "")
    if summed is not None and summed != (busy or 0):
        text += f"; tool calls summed {duration(summed)}"
    return text


def context_text(row: Mapping[str, Any]) -> str:
    """How full a run's context got: its largest prompt, the most of its window a prompt took, its last prompt.

    The share is each prompt over the window stated when it was sent (``peak_context_share``); the window
    shown is the last one stated (``context_window``).

    Args:
        row: a ``sessions`` row (``peak_context_tokens``, ``peak_context_share``, ``last_context_tokens``,
            ``context_window``).

    Examples:
        >>> context_text({"peak_context_tokens": 63_000, "peak_context_share": 0.9613, "last_context_tokens": 63_000,
        ...               "context_window": 65_536})
        'largest prompt 63.0 k tokens (96% of the window at most); last prompt 63.0 k; window 65.5 k'
        >>> context_text({"peak_context_tokens": 900, "peak_context_share": None, "last_context_tokens": None})
        'largest prompt 900 tokens; last prompt –; no window stated'
    """
    peak, peak_share, window = row.get("peak_context_tokens"), row.get("peak_context_share"), row.get("context_window")
    if peak is None:
        return MISSING
    text = f"largest prompt {human_count(peak)} tokens"
    if peak_share is not None:
        text += f" ({share(peak_share, digits=0)} of the window at most)"
    text += f"; last prompt {human_count(row.get('last_context_tokens'))}"
    return text + (f"; window {human_count(window)}" if window is not None else "; no window stated")


def calendar_only(frame: pl.LazyFrame, columns: tuple[str, ...]) -> pl.LazyFrame:
    """``frame`` with its ``Datetime`` ``columns`` null outside years 1 to 9999 (as a read corpus has them).

    For frames read from elsewhere (an archive written before this rule, or edited): a ``Datetime`` value
    past the calendar would make Polars panic when printing it, and Python refuse it.

    Examples:
        >>> times = pl.Series([0, 2**53 - 1]).cast(pl.Datetime("ms", "UTC"))
        >>> calendar_only(pl.LazyFrame({"at": times}), ("at",)).collect()["at"].is_null().to_list()
        [False, True]
    """
    return frame.with_columns(
        pl.when(pl.col(name).dt.epoch("ms").is_between(CALENDAR_MIN_MS, CALENDAR_MAX_MS)).then(pl.col(name)).alias(name)
        for name in columns
    )
