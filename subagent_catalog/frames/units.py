"""Figures as people read them: durations (``1 h 32 min``), costs (``$0.0131``), token counts (``1.2 M``).

Every view (the report, ``summary``, the notebook display, ``show`` pages) formats run facts with these,
so one figure reads the same everywhere. ``None`` (a figure no event reported) is ``–``, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

MISSING = "–"
"""What a view shows for a figure that is not known (``None``)."""


def human_duration(ms: float | None) -> str:
    """A duration in milliseconds in the two largest units that matter.

    Examples:
        >>> [human_duration(v) for v in (0, 850, 5_524, 92_000, 5_524_119, 200_000_000, None)]
        ['0 ms', '850 ms', '5.5 s', '1 min 32 s', '1 h 32 min', '2 d 7 h', '–']
        >>> human_duration(-1500)
        '-1.5 s'
    """
    if ms is None:
        return MISSING
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


def human_cost(usd: float | None, *, significant: int | None = None) -> str:
    """A cost in US dollars with the digits that matter (``–`` when unknown: an unpriced model).

    By default a cost below $1 shows at most four decimals (three significant digits below $0.001),
    its trailing zeros dropped. With ``significant``, a cost below $1 shows exactly that many
    significant digits, trailing zeros kept, so two figures side by side read alike (``$0.0037``
    beside ``$0.0050``, not ``$0.005``); a cost that rounds to $1 or more shows cents either way.

    Examples:
        >>> human_cost(12.345), human_cost(0.0131), human_cost(0.000547), human_cost(0.0), human_cost(None)
        ('$12.35', '$0.0131', '$0.000547', '$0', '–')
        >>> [human_cost(v, significant=2) for v in (0.0037, 0.005, 0.8836, 0.996, 1.1715, 0.0000001)]
        ['$0.0037', '$0.0050', '$0.88', '$1.00', '$1.17', '$0.00000010']
    """
    if usd is None:
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


def partial_cost(usd: float | None, known: float | None) -> str:
    """A cost that may have unknown parts: ``usd`` when known, else its known part as a lower bound.

    ``≥ $13.08`` when part of it is unknown (an unpriced model, an unreadable log) and the known part
    is more than 0; ``–`` when nothing of it is known. Say beside it what is unknown.

    Examples:
        >>> partial_cost(0.5, 0.5), partial_cost(None, 13.0812), partial_cost(None, 0.0), partial_cost(None, None)
        ('$0.5', '≥ $13.08', '–', '–')
    """
    if usd is not None:
        return human_cost(usd)
    return f"≥ {human_cost(known)}" if known else MISSING


def human_count(value: int | None) -> str:
    """A count in thousands or millions past 10,000 (``–`` when unknown).

    Examples:
        >>> human_count(950), human_count(12_345), human_count(1_234_567), human_count(None)
        ('950', '12.3 k', '1.23 M', '–')
    """
    if value is None:
        return MISSING
    if abs(value) < 10_000:
        return f"{value:,}"
    if abs(value) < 1_000_000:
        return f"{value / 1000:.1f} k"
    return f"{value / 1_000_000:.3g} M"


def clock(ms: int | None, *, seconds: bool = True) -> str:
    """A UTC time in milliseconds since the epoch as ``YYYY-MM-DD HH:MM:SS UTC`` (empty when unknown).

    Examples:
        >>> clock(1_767_225_601_001), clock(1_767_225_601_001, seconds=False), clock(None)
        ('2026-01-01 00:00:01 UTC', '2026-01-01 00:00 UTC', '')
    """
    if ms is None:
        return ""
    try:
        moment = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC")


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
    peak, share, window = row.get("peak_context_tokens"), row.get("peak_context_share"), row.get("context_window")
    if peak is None:
        return MISSING
    text = f"largest prompt {human_count(peak)} tokens"
    if share is not None:
        text += f" ({100 * share:.0f}% of the window at most)"
    text += f"; last prompt {human_count(row.get('last_context_tokens'))}"
    return text + (f"; window {human_count(window)}" if window is not None else "; no window stated")
