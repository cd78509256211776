"""Which columns of a table a narrow box keeps: one priority rule, as data, for the report and ``show`` pages.

Each table is a tuple of ``Column`` (its key, heading, priority). A table sits in a ``.fit`` box
(``FIT_CSS``, a CSS container): below ``HIDE_BELOW[p]`` pixels of box width the columns of priority
``p`` are hidden, and below ``CARDS_BELOW`` each row becomes a stacked card of its priority-1
cells, each with its heading. ``columns`` puts the column a table is ranked by (and, for
failures, the error) first and makes it priority 1, so the ranked figure never leaves the box.
No table scrolls sideways: its cells wrap (``overflow-wrap: anywhere``; the short words of ``WHOLE_WORDS``
columns only where they cannot fit) and the rule drops the least needed columns instead, and says so: a
"+N columns" control shows them all (``fit_css``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from markupsafe import Markup

from subagent_catalog.frames.units import TOKEN_LABELS, plural

Priority = Literal[1, 2, 3]
"""1: always shown (also on a card); 2: hidden in a narrow box; 3: hidden first."""


@dataclass(frozen=True)
class Column:
    """One column of a fitted table."""

    key: str
    heading: str
    priority: Priority
    num: bool = False
    tip: str | None = None
    sort: str | None = None
    """The key a sortable table's header button sorts by (the report's diagnostics table)."""

    @property
    def classes(self) -> str:
        """The cell's classes: its priority (``p1``...), its key (``c-cost``) and ``num`` for a figure.

        Examples:
            >>> Column("cost", "cost", 2, num=True).classes
            'p2 c-cost num'
        """
        return f"p{self.priority} c-{self.key}" + (" num" if self.num else "")


HIDE_BELOW: dict[int, int] = {3: 900, 2: 640}
"""Box width (CSS px) under which columns of each priority are hidden (a desktop's box, 1,024 px wide or
more, hides none)."""

CARDS_BELOW = 440
"""Box width (CSS px) under which rows become stacked cards of their priority-1 cells."""

WHOLE_WORDS: tuple[str, ...] = ("code", "codes", "error", "tool", "outcome", "outcomes", "kind", "kinds", "severity")
WHOLE_WORDS += ("reason", "cause", "scope", "start")
"""Columns of short words (codes, tool and error names, outcomes, kinds, dates): a word breaks only where it cannot
fit its line."""

CARD_FIRST: tuple[str, ...] = ("name", "outcome")
"""Cells a card shows first, in this order (then the error and the ranked figure, in column order;
the reveal button last)."""

TABLES: dict[str, tuple[Column, ...]] = {
    "runs": (
        Column("reveal", "tree", 1),
        Column("name", "run", 1),
        Column("outcome", "outcome", 1),
        Column("message", "error or detail", 1),
        Column("code", "code", 2),
        Column("parent", "parent", 3),
        Column("start", "start (UTC)", 3),
        Column("active", "active", 2, num=True, tip="the time a turn of its own was open"),
        Column("wall", "wall", 3, num=True, tip="first to last own event, idle time included"),
        Column("tokens", "tokens", 2, num=True),
        Column("cost", "cost", 2, num=True),
    ),
    "trees": (
        Column("reveal", "tree", 1),
        Column("name", "top session", 1),
        Column("sessions", "sessions", 1, num=True),
        Column("failed", "failed", 1, num=True),
        Column("depth", "depth", 3, num=True),
        Column("peak", "peak at once", 3, num=True),
        Column(
            "active",
            "active (Σ sessions)",
            2,
            num=True,
            tip="the sessions' active times summed: sessions that ran at once add up",
        ),
        Column("wall", "wall time", 3, num=True),
        Column("tokens", "tokens", 2, num=True),
        Column("cost", "cost", 2, num=True),
    ),
    "diagnostics": (
        Column("reveal", "tree", 1),
        Column("id", "id", 1, sort="i"),
        Column("parent", "parent", 3, sort="p"),
        Column("reason", "reason", 1, sort="r"),
        Column("cause", "cause", 2, sort="u"),
        Column("detail", "detail", 1, sort="x"),
        Column("path", "path (under root)", 3, sort="f"),
        Column("line", "line", 3, num=True, sort="l"),
    ),
    "roots": (
        Column("reveal", "tree", 1),
        Column("root", "root", 1),
        Column("sessions", "sessions", 1, num=True),
        Column("agents", "subagents", 1, num=True),
        Column("damaged", "diagnostics", 1, num=True),
    ),
    "models": (
        Column("provider", "provider", 3),
        Column("model", "model", 1),
        Column("sessions", "sessions", 2, num=True),
        Column("steps", "steps", 3, num=True),
        Column("input", TOKEN_LABELS["input_tokens"], 3, num=True),
        Column("cache_read", TOKEN_LABELS["cache_read_tokens"], 3, num=True),
        Column("cache_write", TOKEN_LABELS["cache_write_tokens"], 3, num=True),
        Column("output", TOKEN_LABELS["output_tokens"], 2, num=True),
        Column("cost", "cost", 1, num=True),
    ),
    "dashboard": (
        Column("name", "session", 1),
        Column("outcome", "outcome", 1),
        Column("message", "error", 1),
        Column("code", "code", 1),
        Column("active", "active", 1, num=True, tip="the time a turn of its own was open"),
        Column("cost", "cost", 1, num=True),
        Column("tokens", "tokens", 1, num=True),
        Column("kind", "kind", 3),
        Column("reason", "reason · cause", 3),
        Column("parent", "parent", 2),
        Column("project", "project", 2),
    ),
    "tools": (
        Column("name", "tool", 1),
        Column("calls", "calls", 1, num=True),
        Column("failed", "failed", 1, num=True),
        Column("no_result", "never answered", 2, num=True),
        Column("rate", "failure rate", 1, num=True),
        Column("codes", "top error codes", 2),
    ),
    "error_groups": (
        Column("code", "code", 1),
        Column("message", "message", 1),
        Column("runs", "runs", 1, num=True),
        Column("outcomes", "outcomes", 2),
        Column("first", "first seen", 3),
        Column("last", "last seen", 2),
        Column("cost", "cost", 1, num=True),
        Column("example", "example", 1),
    ),
    "finding_kinds": (
        Column("kind", "kind", 1),
        Column("severity", "worst", 1),
        Column("findings", "findings", 1, num=True),
        Column("runs", "runs", 1, num=True),
        Column("projects", "projects", 2, num=True),
    ),
    "finding_projects": (
        Column("project", "project", 1),
        Column("findings", "findings", 1, num=True),
        Column("runs", "runs", 2, num=True),
        Column("kinds", "most found", 1),
    ),
    "finding_runs": (
        Column("name", "run", 1),
        Column("severity", "worst", 1),
        Column("count", "findings", 1, num=True),
        Column("kinds", "kinds", 2),
        Column("project", "project", 3),
    ),
    "trend_days": (
        Column("day", "day", 1),
        Column("runs", "runs", 1, num=True),
        Column("failed", "failed", 1, num=True),
        Column("cost", "cost", 1, num=True),
        Column("tokens", "tokens", 2, num=True),
        Column("p50", "active p50", 2, num=True),
        Column("p95", "active p95", 1, num=True),
    ),
    "trend_models": (
        Column("day", "day", 1),
        Column("model", "model", 1),
        Column("runs", "runs", 1, num=True),
        Column("failed", "failed", 2, num=True),
        Column("cost", "cost", 1, num=True),
        Column("tokens", "tokens", 3, num=True),
        Column("p50", "active p50", 3, num=True),
        Column("p95", "active p95", 2, num=True),
    ),
    "tool_failures": (
        Column("tool", "tool", 1),
        Column("session", "session", 1),
        Column("where", "where", 2),
        Column("time", "time (UTC)", 3),
        Column("error", "error", 2),
        Column("code", "code", 1),
    ),
    "problem_kinds": (
        Column("severity", "severity", 1),
        Column("kind", "kind", 1),
        Column("scope", "scope", 2),
        Column("fails_listing", "fails listing", 2),
        Column("count", "count", 1, num=True),
    ),
    "problems": (
        Column("severity", "severity", 1),
        Column("kind", "kind", 1),
        Column("session", "session", 2),
        Column("path", "path (under root)", 3),
        Column("line", "line", 3, num=True),
        Column("message", "message", 1),
    ),
    "turns": (
        Column("turn", "turn", 1, num=True),
        Column("starts", "starts", 2),
        Column("took", "took", 1),
        Column("steps", "steps", 2, num=True),
        Column("calls", "tool calls", 2, num=True),
        Column("errors", "errors", 1, num=True),
        Column("ended", "ended", 1),
    ),
}
"""The fitted tables' columns, in their default order."""


def columns(table: str, *, first: Sequence[str] = (), drop: Sequence[str] = ()) -> list[Column]:
    """A table's columns with ``first`` (the ranked column, a failure's error) leading, kept at priority 1.

    A ``reveal`` column stays the very first (it is a button, not a figure).

    Args:
        table: which table (a key of ``TABLES``; another raises ``KeyError``).
        first: keys moved to the front, in this order, made priority 1.
        drop: keys left out (a table that does not show them).

    Examples:
        >>> [c.key for c in columns("trees", first=["cost"])][:3]
        ['reveal', 'cost', 'name']
        >>> columns("runs", first=["cost"])[1].priority
        1
        >>> [c.key for c in columns("turns", drop=["calls"])]
        ['turn', 'starts', 'took', 'steps', 'errors', 'ended']
    """
    known = {column.key: column for column in TABLES[table]}
    missing = [key for key in (*first, *drop) if key not in known]
    if missing:
        raise KeyError(f"table {table!r} has no column {missing[0]!r}")
    lead = [replace(known[key], priority=1) for key in first if key not in drop]
    rest = [column for column in TABLES[table] if column.key not in first and column.key not in drop]
    head = [column for column in rest if column.key == "reveal"]
    return head + lead + [column for column in rest if column.key != "reveal"]


def fit_caption(cols: Sequence[Column]) -> Markup:
    r"""A fitted table's "+N columns" control, its first child: shown by ``FIT_CSS`` when its box hides columns.

    One count per width: N is the number of columns hidden there; checked, it shows them all.

    Examples:
        >>> str(fit_caption(columns("roots")))
        ''
        >>> import re
        >>> re.findall(r'class="c(\d)">([^<]*)', fit_caption(columns("trend_models")))
        [('3', '+2 columns'), ('2', '+4 columns'), ('0', 'every column shown')]
    """
    hidden = {p: sum(1 for c in cols if c.priority >= p) for p in HIDE_BELOW}
    counts = "".join(f'<span class="c{p}">+{plural(n, "column")}</span>' for p, n in hidden.items() if n)
    if not counts:
        return Markup("")
    return Markup(
        '<caption class="cols"><label title="show every column (the table then scrolls sideways)">'
        f'<input type="checkbox" class="cols-all"> {counts}<span class="c0">every column shown</span></label></caption>'
    )


def fit_css() -> str:
    """The CSS of the rule, made from ``HIDE_BELOW`` and ``CARDS_BELOW`` (the same on every page).

    A table whose box hides columns shows its ``cols`` caption (the report's ``fit_head``): a checkbox
    "+N columns" (N: the columns hidden at that width) that shows them all, the table then scrolling sideways.

    Examples:
        >>> "@container fit (max-width: 899.98px)" in fit_css()
        True
    """
    every = ".fit:has(.cols-all:checked)"
    rules = [
        ".fit{container:fit/inline-size;max-width:100%;min-width:0}",
        ".fit>table{width:100%;max-width:100%}",
        ".fit>table>tbody>tr>td{overflow-wrap:anywhere}",
        # short words (codes, outcomes, kinds) break only where they cannot fit: ``anywhere`` let the table layout
        # squeeze their column to a letter beside columns with room (CONTE/XT_/LENGT/H at 1,400 px)
        f".fit>table>tbody>tr>td:is({','.join(f'.c-{key}' for key in WHOLE_WORDS)}){{overflow-wrap:break-word}}",
        ".fit th,.fit th *{white-space:normal;overflow-wrap:normal}",
        ".fit>table>tbody>tr>td.num{white-space:nowrap;overflow-wrap:normal}",
        ".fit td .note{white-space:normal;display:block;font-size:11px;color:#656d76}",
        ".fit>table>caption.cols{display:none;text-align:right;font-size:12px;padding:0 0 2px}",
        ".fit .cols label{cursor:pointer;color:#0969da;white-space:nowrap}.fit .cols span{display:none}",
    ]
    for priority, width in sorted(HIDE_BELOW.items(), reverse=True):
        hidden = ",".join(f".fit .p{p}" for p in range(priority, 4))
        rules.append(
            f"@container fit (max-width: {width - 0.02:.2f}px){{{hidden}{{display:none}}"
            ".fit>table>caption.cols{display:table-caption}"
            + "".join(f".fit .cols .c{q}{{display:{'inline' if q == priority else 'none'}}}" for q in HIDE_BELOW)
            + "}"
        )
    rules.append(  # "+N columns" checked: every column, the label reads "fewer columns"
        ",".join(f"{every} .p{p}" for p in range(2, 4)) + "{display:table-cell}"
        f"{every}{{overflow-x:auto}}{every} .cols span{{display:none}}{every} .cols .c0{{display:inline}}"
    )
    rules.append(
        f"@container fit (max-width: {CARDS_BELOW - 0.02:.2f}px){{"
        ".fit>table,.fit>table>tbody,.fit>table>tbody>tr,.fit>table>tbody>tr>td{display:block;width:auto}"
        ".fit>table>thead{display:none}.fit>table>caption.cols{display:block}"
        ".fit>table>tbody>tr{display:flex;flex-direction:column;border:1px solid #d8dee4;border-radius:6px;"
        "margin:0 0 8px;padding:4px 8px}"
        + "".join(f".fit .c-{key}{{order:{i - len(CARD_FIRST)}}}" for i, key in enumerate(CARD_FIRST))
        + ".fit .c-reveal{order:9}"
        ".fit>table>tbody>tr>td{border:0;padding:2px 0;text-align:left;white-space:normal}"
        '.fit>table>tbody>tr>td[data-h]::before{content:attr(data-h) ": ";color:#656d76;font-size:11px}'
        f".fit>table>tbody>tr>td:empty{{display:none}}{every}>table>tbody>tr>td:not(:empty){{display:block}}"
        "}"
    )
    return "".join(rules)


FIT_CSS = fit_css()
"""``fit_css()``, for a page's ``<style>``."""
