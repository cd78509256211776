"""How a run went, as the browser shows it: a row's badge and facts, the detail pane's lead, the children timeline.

Pure functions over ``corpus.sessions`` rows and ``tree_timeline`` rows (no widgets): the
browser calls them, and tests call them directly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from subagent_catalog.analysis.run_names import run_names
from subagent_catalog.analysis.timeline import concurrency, tree_timeline
from subagent_catalog.frames import units
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.source import Source
from subagent_catalog.frames.units import context_text, time_split
from subagent_catalog.views import palette

FAILED_OUTCOMES = ("error", "aborted", "max-tokens", "blocked", "interrupted", "open", "unreadable")
"""The ``outcome`` values of a run that did not complete (``open``: killed, crashed or still running)."""

FAILED_CHOICE = "failed (any)"
"""The outcome filter's choice that matches every ``FAILED_OUTCOMES`` value."""

OUTCOME_COLOURS = palette.OUTCOME_COLOURS
"""A colour per outcome (badges and timeline bars; an outcome not here is drawn grey): ``views.palette``'s."""


def human_ms(ms: int | float | None) -> str:
    """A duration for reading: ``850 ms``, ``5.5 s``, ``1 min 32 s``, ``2 h 05 min`` (``—`` when unknown).

    Examples:
        >>> [human_ms(v) for v in (None, 850, 5_524, 92_000, 5_524_119, 90_061_000)]
        ['—', '850 ms', '5.5 s', '1 min 32 s', '1 h 32 min', '25 h 01 min']
    """
    if ms is None or (isinstance(ms, float) and math.isnan(ms)):
        return "—"
    ms = max(0, int(ms))
    if ms < 1_000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(ms // 1000, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def human_count(value: int | None) -> str:
    """A count for reading: ``950``, ``12.3 k``, ``4.1 M``, ``1.31 B`` (``—`` when unknown).

    Examples:
        >>> [human_count(v) for v in (None, 950, 12_345, 4_100_000, 1_310_000_000)]
        ['—', '950', '12.3 k', '4.1 M', '1.31 B']
    """
    return "—" if value is None else units.human_count(value)


def human_cost(cost: float | None) -> str | None:
    """A cost in USD for reading (``None`` when unknown: an unpriced model, no usage).

    Cents from $1; below, two significant digits (``frames.units.human_cost``), so a tiny cost
    keeps its figure and costs side by side read alike.

    Examples:
        >>> [human_cost(v) for v in (None, 0.0, 0.00055, 0.004, 0.0123, 12.5)]
        [None, '$0', '$0.00055', '$0.0040', '$0.012', '$12.50']
    """
    return None if cost is None or math.isnan(cost) else units.human_cost(cost, significant=2)


def cost_text(row: dict[str, Any]) -> str | None:
    """A session's cost for reading: exact, ``≥ $x`` when part of it is unknown (``cost_usd_known``), or ``None``.

    Examples:
        >>> cost_text({"cost_usd": 0.0123}), cost_text({"cost_usd": None, "cost_usd_known": 0.0123})
        ('$0.012', '≥ $0.012')
        >>> cost_text({"cost_usd": None, "cost_usd_known": 0.0}), cost_text({"cost_usd": None})
        (None, None)
    """
    if row.get("cost_usd") is not None:
        return human_cost(row["cost_usd"])
    known = row.get("cost_usd_known")
    return f"≥ {human_cost(known)}" if known else None


def facts_text(row: dict[str, Any]) -> str:
    """A row's facts after its label: active time (of its wall time), cost, tokens, failed tool results.

    Args:
        row: a node with ``run_wall_ms``, ``active_ms``, ``tokens``, ``cost_usd`` and ``tool_results_failed``.

    Examples:
        >>> facts_text({"run_wall_ms": 92_000, "active_ms": 92_000, "tokens": 12_345, "cost_usd": 0.0123,
        ...             "tool_results_failed": 2})
        '1 min 32 s · $0.012 · 12.3 k tok · 2 tools failed'
        >>> facts_text({"run_wall_ms": 8_245, "active_ms": 245, "tokens": None, "cost_usd": None})
        '245 ms active of 8.2 s'
        >>> facts_text({"run_wall_ms": None, "tokens": None, "cost_usd": 0.0, "tool_results_failed": 0})
        ''
        >>> facts_text({"run_wall_ms": 10, "tokens": 2_000, "cost_usd": None, "cost_usd_known": 0.5})
        '10 ms · ≥ $0.50 · 2,000 tok'
    """
    parts: list[str] = []
    wall, active = row.get("run_wall_ms"), row.get("active_ms")
    if wall is not None:
        parts.append(
            human_ms(wall) if active is None or active == wall else f"{human_ms(active)} active of {human_ms(wall)}"
        )
    cost = cost_text(row) if row.get("tokens") is not None else None  # no usage: no cost to show
    if cost is not None:
        parts.append(cost)
    if row.get("tokens") is not None:
        parts.append(f"{human_count(row['tokens'])} tok")
    failed = row.get("tool_results_failed") or 0
    if failed:
        parts.append(f"{failed} tool{'' if failed == 1 else 's'} failed")
    return " · ".join(parts)


def badge_html(outcome: str | None) -> str:
    """An outcome as a badge (escaped HTML; the browser's style sheet colours ``sc-o-<outcome>``).

    Examples:
        >>> badge_html("error")
        '<span class="sc-badge sc-o-error">error</span>'
    """
    return "" if outcome is None else f'<span class="sc-badge sc-o-{escape(outcome)}">{escape(outcome)}</span>'


def run_facts_html(row: dict[str, Any], *, name: str | None = None) -> str:
    """The detail pane's lead: the run's name, outcome and why, time, tokens, cost and tool failures.

    Args:
        row: the session's ``corpus.sessions`` row (with ``cost_usd``; ``cost_usd_known`` when it has one).
        name: its readable name (``run_names``), if any.

    Examples:
        >>> row = {"outcome": "error", "outcome_detail": "context length exceeded (CONTEXT_LENGTH)",
        ...        "run_first_ms": 0, "run_last_ms": 5_500, "run_wall_ms": 5_500, "llm_ms": 4_000, "tool_ms": 900,
        ...        "input_tokens": 1000, "output_tokens": 20, "cache_read_tokens": 300, "cache_write_tokens": None,
        ...        "reasoning_tokens": None, "cost_usd": 0.0004, "tool_calls": 3, "tool_results_failed": 1,
        ...        "turns": 2, "steps": 4, "models": ["deepseek-chat"]}
        >>> pane = run_facts_html(row, name="<b>Fix it</b>")
        >>> "&lt;b&gt;Fix it" in pane and "5.5 s" in pane and "CONTEXT_LENGTH" in pane and "1 of 3 failed" in pane
        True
        >>> row.update(active_ms=515, tool_busy_ms=300, tool_ms=815, llm_ms=200)
        >>> split = "active 515 ms of 5.5 s wall (model 200 ms, tools busy 300 ms); tool calls summed 815 ms"
        >>> split in run_facts_html(row)
        True
    """
    facts: list[tuple[str, str]] = []
    outcome = row.get("outcome")
    detail = row.get("outcome_detail")
    if outcome is not None:
        facts.append(("outcome", badge_html(outcome) + (f" {escape(detail)}" if detail else "")))
    if row.get("run_wall_ms") is not None:  # busy and model time inside active time inside wall time
        facts.append(("time", escape(time_split(row, duration=human_ms))))
    if row.get("peak_context_tokens") is not None:
        facts.append(("context", escape(context_text(row))))
    tokens = [
        f"{human_count(row[column])} {label}"
        for label, column in (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cache read", "cache_read_tokens"),
            ("cache write", "cache_write_tokens"),
            ("reasoning", "reasoning_tokens"),
        )
        if row.get(column) is not None
    ]
    if tokens:
        facts.append(("tokens", escape(" · ".join(tokens))))
    cost = cost_text(row)
    if row.get("input_tokens") is None:
        pass  # no usage reported: no cost to show
    elif cost is not None:
        partial = " (the rest: a model without a price, <code>unpriced_models</code>)" if cost.startswith("≥") else ""
        facts.append(("cost", escape(cost) + partial))
    else:
        facts.append(("cost", "unknown (a model without a price: <code>unpriced_models</code>)"))
    if row.get("tool_calls"):
        failed = row.get("tool_results_failed") or 0
        facts.append(("tool calls", escape(f"{row['tool_calls']} ({failed} of {row['tool_calls']} failed)")))
    if row.get("turns"):
        facts.append(("turns, steps", escape(f"{row['turns']}, {row.get('steps') or 0}")))
    if models := row.get("models"):
        facts.append(("models", escape(", ".join(str(m) for m in models))))
    cells = "".join(f"<tr><th>{escape(label)}</th><td>{value}</td></tr>" for label, value in facts)
    title = f'<div class="sc-run-name" title="{escape(name)}">{escape(name)}</div>' if name else ""
    return f'<div class="sc-run">{title}<table class="sc-run-facts">{cells}</table></div>' if facts or title else ""


def lead_html(row: dict[str, Any], lead: str) -> str:
    """The pane while the rest of it is read: the session's title, its run facts and timeline slot (``lead``).

    Examples:
        >>> html = lead_html({"session_id": "<s>", "path": "/r/p/s/session.jsonl"}, "")
        >>> "&lt;s&gt;</div>" in html and "reading the log…" in html
        True
    """
    title = escape(row.get("session_id") or row.get("path"))
    waiting = '<div class="sc-placeholder">reading the log…</div>'
    return f'<div class="sc-lead"><div class="sc-title">{title}</div>{lead}{waiting}</div>'


def timeline_payload(source: Source, session_id: str, keys: dict[int, int]) -> dict[str, Any]:
    """The children timeline the browser draws: one bar per direct child, and how many ran at once.

    Args:
        source: the corpus (or archive) the browser shows.
        session_id: the parent session.
        keys: browser key (row of ``corpus.sessions``) of each ``list_order``.

    Returns:
        ``session``, ``t0`` (epoch ms of the axis' start), ``span`` (ms), ``rows``: one
        ``[key, start, end, outcome, label, id]`` per child with a span (times in ms from ``t0``,
        ordered by start), ``no_span`` (children without own events), ``outcomes`` (the distinct ones),
        ``colours``, ``curve`` (``[time, running]`` steps from ``t0``) and ``peak``.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("tests/data/run-facts")
        >>> keys = dict(zip(corpus.sessions["list_order"].to_list(), range(corpus.sessions.height)))
        >>> data = timeline_payload(corpus, "parent-1", keys)
        >>> [row[5] for row in data["rows"]], data["peak"]
        (['child-1'], 1)
    """
    rows = tree_timeline(source, session_id, max_depth=1)
    top = rows.filter(pl.col("depth") == 0)
    children = rows.filter(pl.col("depth") == 1)
    spans = children.filter(pl.col("start_ms").is_not_null() & pl.col("end_ms").is_not_null())
    starts = [v for v in [*spans["start_ms"].to_list(), *top["start_ms"].to_list()] if v is not None]
    ends = [v for v in [*spans["end_ms"].to_list(), *top["end_ms"].to_list()] if v is not None]
    t0 = min(starts) if starts else 0
    span = max(1, (max(ends) if ends else t0) - t0)
    outcomes = sorted({o or "other" for o in spans["outcome"].to_list()})
    drawn = [
        [keys.get(order, -1), start - t0, end - t0, outcome or "other", label or "", sid or ""]
        for order, start, end, outcome, label, sid in spans.select(
            "list_order", "start_ms", "end_ms", "outcome", "label", "session_id"
        ).iter_rows()
    ]
    curve = concurrency(rows, among="children")
    return {
        "session": session_id,
        "t0": t0,
        "span": span,
        "rows": drawn,
        "no_span": children.height - spans.height,
        "outcomes": outcomes,
        "colours": {o: palette.outcome_colour(o) for o in outcomes},
        "curve": [[time - t0, running] for time, running in curve.iter_rows()],
        "peak": max([0, *curve["running"].to_list()]),
    }


class RunNames:
    """The readable names of the browser's runs (``run_names``: the ``name`` column), looked up as rows are drawn.

    Only runs are named (listed sessions that are not subagents: roots and forks); a subagent's
    row has its descriptor's label.

    Args:
        source: the corpus (or archive corpus) the browser shows.
        nodes: the tree's nodes (``key``-th row: ``listed``, ``session_id``, ``origin``, ``list_order``).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.views.widgets.session_tree import SessionTree
        >>> corpus = read_corpus("data/sample")
        >>> names = RunNames(corpus, SessionTree(corpus).nodes)
        >>> key = corpus.sessions["session_id"].to_list().index("run-webapp-1")
        >>> names.lookup([key]) == [key], names.get(key)
        (True, 'task 1 for run-webapp-1')
    """

    def __init__(self, source: Source, nodes: pl.DataFrame) -> None:
        self.source = source
        self._orders: list[int] = nodes["list_order"].to_list()
        self._runs = (
            nodes["listed"].fill_null(False)
            & nodes["session_id"].is_not_null()
            & (nodes["origin"] != "subagent").fill_null(True)
        ).to_list()
        self._names: dict[int, str | None] = {}

    def get(self, key: int) -> str | None:
        """The name found for a row (``None``: not looked up, or none)."""
        return self._names.get(key)

    def lookup(self, keys: Sequence[int]) -> list[int]:
        """Look up the names of these rows' runs not looked up yet; returns the keys that got a name."""
        wanted = [key for key in dict.fromkeys(keys) if key not in self._names and self._runs[key]]
        if not wanted:
            return []
        names = run_names(self.source, list_orders=[self._orders[key] for key in wanted])["name"].to_list()
        self._names.update(zip(wanted, names, strict=True))
        return [key for key, name in zip(wanted, names, strict=True) if name is not None]
