"""How a run went, as the browser shows it: a row's badge and facts, the detail pane's lead, the children timeline.

Pure functions over ``corpus.sessions`` rows and ``tree_timeline`` rows (no widgets): the
browser calls them, and tests call them directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from subagent_catalog.analysis.run_names import run_names
from subagent_catalog.analysis.timeline import concurrency, tree_timeline
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.source import Source
from subagent_catalog.frames.units import MISSING, human_count, human_duration, partial_cost, plural
from subagent_catalog.views import palette
from subagent_catalog.views.transcript_parts import run_facts

FAILED_CHOICE = "failed (any)"
"""The outcome filter's choice that matches every ``FAILED_OUTCOMES`` value."""

OUTCOME_COLOURS = palette.OUTCOME_COLOURS
"""A colour per outcome (badges and timeline bars; an outcome not here is drawn grey): ``views.palette``'s."""


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
        split = active not in (None, wall)
        parts.append(f"{human_duration(active)} active of {human_duration(wall)}" if split else human_duration(wall))
    if row.get("tokens") is not None:  # no usage: no cost to show
        cost = partial_cost(row.get("cost_usd"), row.get("cost_usd_known"))
        parts += [cost] * (cost != MISSING) + [f"{human_count(row['tokens'])} tok"]
    if failed := row.get("tool_results_failed"):
        parts.append(f"{plural(failed, 'tool')} failed")
    return " · ".join(parts)


def badge_html(outcome: str | None) -> str:
    """An outcome as a badge (escaped HTML; the browser's style sheet colours ``sc-o-<outcome>``).

    Examples:
        >>> badge_html("error")
        '<span class="sc-badge sc-o-error">error</span>'
    """
    return "" if outcome is None else f'<span class="sc-badge sc-o-{escape(outcome)}">{escape(outcome)}</span>'


def run_facts_html(row: dict[str, Any], *, name: str | None = None) -> str:
    """The detail pane's lead: the run's name and its facts as a ``show`` page states them (``run_facts``).

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
        >>> "&lt;b&gt;Fix it" in pane and "5.5 s" in pane and "CONTEXT_LENGTH" in pane and "3, 1 failed" in pane
        True
        >>> row.update(active_ms=515, tool_busy_ms=300, tool_ms=815, llm_ms=200)
        >>> split = "active 515 ms of 5.5 s wall (model 200 ms, tools busy 300 ms); tool calls summed 815 ms"
        >>> split in run_facts_html(row)
        True
    """
    facts = [
        (label, badge_html(row["outcome"]) + escape(f" {row.get('outcome_detail') or ''}").rstrip())
        if label == "outcome" and row.get("outcome") is not None
        else (label, escape(text))
        for label, text, _ in run_facts(row)
        if label != "identity" and (label != "outcome" or row.get("outcome") is not None)
    ]
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
