"""The run questions of a corpus answered at once: how runs ended, which failed, what was slow or costly.

``run_summary`` gathers, from the run facts every read already holds (``sessions``' outcome, time,
token and cost columns, ``usage_by_model``, ``unpriced_models``, ``tool_calls``, ``run_trees``),
what the report's "Runs" section, ``summary`` (text, JSON, Markdown) and the notebook display
show. Every session counts: an unreadable log is an ``unreadable`` outcome and a row of the
failures, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from subagent_catalog.analysis.runs import tool_calls, unpriced_models, usage_by_model
from subagent_catalog.analysis.trees import run_trees
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.outcome import OUTCOMES
from subagent_catalog.prices import Prices, PriceTable

FAILED_OUTCOMES: tuple[str, ...] = (
    "error",
    "aborted",
    "max-tokens",
    "blocked",
    "interrupted",
    "other",
    "open",
    "unreadable",
)
"""The outcomes that count as a failed run (``completed`` and ``no-turns`` do not)."""

TOP = 10
"""Rows of each "slowest" and "costliest" table."""

RUN_COLUMNS = (
    "list_order",
    "session_id",
    "label",
    "parent_session",
    "project_dir",
    "outcome",
    "outcome_detail",
    "error_message",
    "error_code",
    "start_ms",
    "wall_ms",
    "active_ms",
    "llm_ms",
    "tool_ms",
    "tool_busy_ms",
    "peak_context_share",
    "tokens",
    "cost_usd",
    "path",
)
"""The columns of ``RunSummary.failures``, ``slowest`` and ``costliest``: one session each. ``label`` is the
descriptor identity's label, ``start_ms`` its first own event (its ``createdAt`` when it logged none),
``wall_ms`` first to last own event, ``active_ms`` the time a turn of its own was open (``tool_busy_ms``: and a
tool call ran), ``peak_context_share`` its largest prompt over its context window, ``tokens`` input + cache read
+ cache write + output."""

_TOKENS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")


@dataclass
class RunSummary:
    """A corpus's runs at a glance (``run_summary``); every frame holds plain values, ready to show."""

    sessions: int
    outcomes: dict[str, int]
    """Sessions per outcome, in ``OUTCOMES`` order (outcomes no session has are left out)."""
    failed: int
    """Sessions whose outcome is in ``FAILED_OUTCOMES``."""
    totals: dict[str, Any]
    """``wall_ms``, ``active_ms``, ``llm_ms``, ``tool_ms``, ``tool_busy_ms`` and the token sums over every session
    (``None`` when none reported it), ``cost_usd`` (the priced sessions' sum), ``unpriced_sessions`` (sessions
    with steps but no cost), ``tool_calls`` and ``tool_calls_failed``."""
    by_project: pl.DataFrame
    """``project_dir``, ``sessions``, ``failed`` and one count column per outcome present, most failed first."""
    by_day: pl.DataFrame
    """``day`` (UTC date of ``createdAt``, else of the first event; null when neither), ``sessions``,
    ``failed`` and one count column per outcome present, in day order."""
    failures: pl.DataFrame
    """Every failed session (``RUN_COLUMNS``), by outcome (``FAILED_OUTCOMES`` order), then start."""
    slowest: pl.DataFrame
    """The ``TOP`` sessions with the most active time (``active_ms``: idle time is not slowness), ``wall_ms`` beside."""
    costliest: pl.DataFrame
    """The ``TOP`` costliest sessions by ``cost_usd``."""
    trees: pl.DataFrame
    """Trees of more than one session (``run_trees`` rows of their tops): ``session_id``, ``list_order``,
    ``sessions``, ``subagents``, ``failed``, ``max_depth``, ``peak_children_running``, ``wall_ms``,
    ``active_ms`` (the sessions' active times summed: sessions that ran at once add up), ``tokens``, ``cost_usd``;
    largest first."""
    models: pl.DataFrame
    """``usage_by_model(by="model")``."""
    unpriced: pl.DataFrame
    """``unpriced_models``."""
    tools: pl.DataFrame
    """Per tool name: ``calls``, ``failed`` (answered with an error), ``no_result``, ``failure_rate``
    (failed / calls) and ``top_error_codes`` (up to three ``CODE ×N``), most failed first."""
    tree_rows: pl.DataFrame = field(default_factory=pl.DataFrame)
    """``run_trees`` of every session (what ``tree_timeline(..., trees=)`` takes)."""

    def slowest_trees(self, n: int = TOP) -> pl.DataFrame:
        """The ``n`` trees with the most active time (summed over their sessions; ``wall_ms`` beside it)."""
        return self.trees.sort(["active_ms", "list_order"], descending=[True, False], nulls_last=True).head(n)

    def costliest_trees(self, n: int = TOP) -> pl.DataFrame:
        """The ``n`` trees with the highest cost (trees with an unpriced session last)."""
        return self.trees.sort(["cost_usd", "list_order"], descending=[True, False], nulls_last=True).head(n)


def _sum(frame: pl.DataFrame, name: str) -> int | None:
    column = frame[name]
    return int(column.sum()) if column.null_count() < column.len() else None


def _counts_by(frame: pl.DataFrame, key: str, present: list[str]) -> pl.DataFrame:
    return frame.group_by(key).agg(
        pl.len().cast(pl.Int64).alias("sessions"),
        pl.col("outcome").is_in(FAILED_OUTCOMES).sum().cast(pl.Int64).alias("failed"),
        *((pl.col("outcome") == name).sum().cast(pl.Int64).alias(name) for name in present),
    )


def session_runs(sessions: pl.DataFrame) -> pl.DataFrame:
    """``sessions`` rows as ``RUN_COLUMNS`` (what the run tables show of a session).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> runs = session_runs(read_corpus("tests/data/run-facts").sessions)
        >>> runs.select("session_id", "outcome", "tokens").rows()
        [('child-1', 'open', 1419), ('parent-1', 'completed', None)]
    """
    tokens = pl.when(pl.any_horizontal(pl.col(name).is_not_null() for name in _TOKENS)).then(pl.sum_horizontal(_TOKENS))
    return sessions.select(
        "list_order",
        "session_id",
        pl.col("identity_label").alias("label"),
        "parent_session",
        "project_dir",
        "outcome",
        "outcome_detail",
        pl.col("last_error_message").alias("error_message"),
        pl.col("last_error_code").alias("error_code"),
        pl.coalesce("run_first_ms", "created_at_ms").alias("start_ms"),
        pl.col("run_wall_ms").alias("wall_ms"),
        "active_ms",
        "llm_ms",
        "tool_ms",
        "tool_busy_ms",
        "peak_context_share",
        tokens.cast(pl.Int64).alias("tokens"),
        "cost_usd",
        "path",
    )


def run_summary(corpus: Corpus, *, prices: Prices | PriceTable | None = None, top: int = TOP) -> RunSummary:
    """How the runs of a corpus ended, which failed, what took long or cost most, per model and tool.

    Args:
        corpus: a read corpus (``Window.corpus`` gives one of a time window).
        prices: a price table for the per-model costs (default: genai-prices'; the sessions'
            ``cost_usd`` is what ``read_corpus`` priced).
        top: rows of the slowest and costliest tables.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> runs = run_summary(read_corpus("data/sample"))
        >>> runs.outcomes["completed"], runs.failed, runs.failures["session_id"].to_list()[:2]
        (17, 7, ['auth-refactor', 'rs-01'])
    """
    sessions = corpus.sessions
    runs = session_runs(sessions)
    counted = dict(sessions.group_by("outcome").len().iter_rows()) if sessions.height else {}
    outcomes: dict[str, int] = {str(name): int(counted[name]) for name in OUTCOMES if counted.get(name)}
    present = list(outcomes)
    rank = {name: i for i, name in enumerate(FAILED_OUTCOMES)}
    failures = (
        runs.filter(pl.col("outcome").is_in(FAILED_OUTCOMES))
        .with_columns(pl.col("outcome").replace_strict(rank, default=99).alias("_rank"))
        .sort("_rank", "start_ms", "list_order", nulls_last=True)
        .drop("_rank")
    )
    by_project = (
        _counts_by(sessions, "project_dir", present).sort(
            ["failed", "sessions", "project_dir"], descending=[True, True, False], nulls_last=True
        )
        if sessions.height
        else pl.DataFrame(schema={"project_dir": pl.String, "sessions": pl.Int64, "failed": pl.Int64})
    )
    day = (
        pl.coalesce("created_at_ms", "run_first_ms", "first_event_ms")
        .cast(pl.Datetime("ms", "UTC"))
        .dt.date()
        .alias("day")
    )
    by_day = (
        _counts_by(sessions.with_columns(day), "day", present).sort("day", nulls_last=True)
        if sessions.height
        else pl.DataFrame(schema={"day": pl.Date, "sessions": pl.Int64, "failed": pl.Int64})
    )
    # Only the top rows are kept: a lazy sort then head never holds a sorted copy of every session.
    slowest = (
        runs.lazy()
        .filter(pl.col("active_ms").is_not_null())
        .sort(["active_ms", "list_order"], descending=[True, False])
        .head(top)
        .collect()
    )
    costliest = (
        runs.lazy()
        .filter(pl.col("cost_usd").is_not_null())
        .sort(["cost_usd", "list_order"], descending=[True, False])
        .head(top)
        .collect()
    )
    trees = run_trees(corpus, prices=prices)
    failed_sum = pl.sum_horizontal(f"subtree_{name.replace('-', '_')}" for name in FAILED_OUTCOMES)
    tree_tokens = pl.sum_horizontal(f"subtree_{name}" for name in _TOKENS)
    tops = (
        trees.filter((pl.col("depth") == 0) & (pl.col("subtree_sessions") > 1))
        .select(
            "session_id",
            "list_order",
            pl.col("subtree_sessions").alias("sessions"),
            pl.col("subtree_subagents").alias("subagents"),
            failed_sum.cast(pl.Int64).alias("failed"),
            pl.col("subtree_max_depth").alias("max_depth"),
            "peak_children_running",
            pl.col("subtree_wall_ms").alias("wall_ms"),
            pl.col("subtree_active_ms").alias("active_ms"),
            pl.when(pl.any_horizontal(pl.col(f"subtree_{n}").is_not_null() for n in _TOKENS))
            .then(tree_tokens)
            .cast(pl.Int64)
            .alias("tokens"),
            pl.col("subtree_cost_usd").alias("cost_usd"),
        )
        .sort(["sessions", "list_order"], descending=[True, False])
    )
    calls = tool_calls(corpus)
    tools = _tool_table(calls)
    has_steps = pl.col("usage_steps").fill_null(0) > 0
    totals: dict[str, Any] = {
        "wall_ms": _sum(sessions, "run_wall_ms"),
        "active_ms": _sum(sessions, "active_ms"),
        "llm_ms": _sum(sessions, "llm_ms"),
        "tool_ms": _sum(sessions, "tool_ms"),
        "tool_busy_ms": _sum(sessions, "tool_busy_ms"),
        **{name: _sum(sessions, name) for name in (*_TOKENS, "reasoning_tokens")},
        "cost_usd": float(sessions["cost_usd"].sum()) if sessions["cost_usd"].null_count() < sessions.height else None,
        "unpriced_sessions": sessions.filter(has_steps & pl.col("cost_usd").is_null()).height,
        "tool_calls": calls.filter(pl.col("status") != "no-call").height,
        "tool_calls_failed": calls.filter(pl.col("status") == "error").height,
    }
    return RunSummary(
        sessions=sessions.height,
        outcomes=outcomes,
        failed=failures.height,
        totals=totals,
        by_project=by_project,
        by_day=by_day,
        failures=failures,
        slowest=slowest,
        costliest=costliest,
        trees=tops,
        models=usage_by_model(corpus, by="model", prices=prices),
        unpriced=unpriced_models(corpus, prices=prices),
        tools=tools,
        tree_rows=trees,
    )


def _tool_table(calls: pl.DataFrame) -> pl.DataFrame:
    """Per tool name: calls, failures, calls never answered, failure rate and the commonest error codes."""
    schema = {
        "name": pl.String,
        "calls": pl.Int64,
        "failed": pl.Int64,
        "no_result": pl.Int64,
        "failure_rate": pl.Float64,
        "top_error_codes": pl.String,
    }
    if calls.height == 0:
        return pl.DataFrame(schema=schema)
    codes = (
        calls.filter(pl.col("status") == "error")
        .group_by("name", pl.col("error_code").fill_null("(no code)"))
        .len()
        .sort(["len", "error_code"], descending=[True, False])
        .group_by("name", maintain_order=True)
        .agg(
            pl.format("{} ×{}", "error_code", "len").head(3).str.join(", ").alias("top_error_codes"),
        )
    )
    table = (
        calls.group_by("name")
        .agg(
            (pl.col("status") != "no-call").sum().cast(pl.Int64).alias("calls"),
            (pl.col("status") == "error").sum().cast(pl.Int64).alias("failed"),
            (pl.col("status") == "no-result").sum().cast(pl.Int64).alias("no_result"),
        )
        .with_columns(
            pl.when(pl.col("calls") > 0).then(pl.col("failed") / pl.col("calls")).otherwise(None).alias("failure_rate")
        )
        .join(codes, on="name", how="left", nulls_equal=True)
        .sort(["failed", "calls", "name"], descending=[True, True, False], nulls_last=True)
    )
    return table.select([pl.col(name).cast(dtype) for name, dtype in schema.items()])
