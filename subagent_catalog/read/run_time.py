"""Active time: how long a session's own turns were open, and how long a tool call was running inside them.

Upstream's ``sessionStats`` sums durations (``tool_ms`` adds every call's
call-to-result time, so parallel calls count once each), and a session's
wall time runs from its first to its last own event, idle stretches
included. The unions here never count a moment twice:

- ``active_ms``: the time at least one of the session's own turns was open.
  A turn is open from its ``turn/start`` to the next ``turn/end`` (whichever
  turn it names); a turn that never ended is open to the last own event before
  the next ``turn/start``, or to the log's last own event.
- ``tool_busy_ms``: the time at least one tool call was running while a turn
  was open. The calls are exactly those ``tool_ms`` sums (a ``tool/call``
  answered by a ``tool/result`` naming its ``callId`` before a ``turn/end``);
  a call never answered adds nothing, as upstream's tool time drops it (the log
  never says when it stopped).

Both are unions of intervals whose ends are own event times, so
``tool_busy_ms <= active_ms <= run_wall_ms`` always holds, and
``tool_busy_ms <= tool_ms`` (a union is never more than its sum).
An interval whose end comes before its start (a clock that went back) is empty.
"""

from __future__ import annotations

from typing import Any

from subagent_catalog.read.jsvalue import is_safe_integer

Span = tuple[int, int]


def merged(spans: list[Span]) -> list[Span]:
    """The union of intervals as sorted, disjoint, non-empty intervals (touching ones joined).

    Examples:
        >>> merged([(5, 9), (0, 2), (1, 3), (9, 10), (7, 6)])
        [(0, 3), (5, 10)]
        >>> merged([])
        []
    """
    out: list[Span] = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def covered(spans: list[Span]) -> int:
    """The length of sorted disjoint intervals (``merged``'s).

    Examples:
        >>> covered([(0, 3), (5, 10)])
        8
    """
    return sum(end - start for start, end in spans)


def overlap(left: list[Span], right: list[Span]) -> int:
    """The length of the intersection of two lists of sorted disjoint intervals.

    Examples:
        >>> overlap([(0, 10), (20, 30)], [(5, 25)])
        10
        >>> overlap([(0, 10)], [])
        0
    """
    total = i = j = 0
    while i < len(left) and j < len(right):
        start = max(left[i][0], right[j][0])
        end = min(left[i][1], right[j][1])
        if end > start:
            total += end - start
        if left[i][1] < right[j][1]:
            i += 1
        else:
            j += 1
    return total


def time_before(events: list[Any], end: int) -> int | None:
    """The safe-integer ``time`` of the last of ``events[:end]`` that has one (a packed row's: its last member's).

    Examples:
        >>> time_before([{"time": 4}, {"time": 1.5}, {}], 3)
        4
        >>> time_before([{"time": "x"}], 1) is None
        True
    """
    for index in range(end - 1, -1, -1):
        time = events[index].get("time")
        if is_safe_integer(time):
            return int(time)
    return None


class ActiveFold:
    """The own turns' intervals, fed turn by turn (``run_facts.Fold`` calls it from both readers).

    Examples:
        >>> fold = ActiveFold()
        >>> fold.start(10)
        >>> fold.end(30)            # turn 1: 10..30
        >>> fold.start(40)
        >>> fold.start(100, before=55)  # turn 2 never ended: open to its last event, 55
        >>> fold.finish(120, [(12, 20), (15, 25), (50, 60)])  # turn 3 open to the last event, 120
        (55, 18)
    """

    __slots__ = ("opened", "spans")

    def __init__(self) -> None:
        self.opened: int | None = None  # start time of the open turn (None: none open, or no safe time)
        self.spans: list[Span] = []

    def start(self, time: Any, *, before: int | None = None) -> None:
        """A ``turn/start`` at ``time``; ``before``: the time of the last own event before it (when a turn is open)."""
        if self.opened is not None and before is not None:
            self.spans.append((self.opened, before))
        self.opened = int(time) if is_safe_integer(time) else None

    def end(self, time: Any) -> None:
        """A ``turn/end`` at ``time``: the open turn ends."""
        if self.opened is not None and is_safe_integer(time):
            self.spans.append((self.opened, int(time)))
        self.opened = None

    def finish(self, final: int | None, tool_spans: list[Span]) -> tuple[int, int]:
        """``(active_ms, tool_busy_ms)``; ``final``: the time of the log's last own event (for a turn still open)."""
        if self.opened is not None and final is not None:
            self.spans.append((self.opened, final))
            self.opened = None
        turns = merged(self.spans)
        return covered(turns), overlap(turns, merged(tool_spans)) if tool_spans and turns else 0
