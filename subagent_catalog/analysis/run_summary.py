"""The run questions of a corpus answered at once: how runs ended, which failed, what was slow or costly.

``run_summary`` gathers, from the run facts every read already holds (``sessions``' outcome, time,
token and cost columns, ``usage_by_model``, ``unpriced_models``, ``tool_calls``, ``run_trees``),
what the report's "Runs" section, ``summary`` (text, JSON, Markdown) and the notebook display
show. Every session counts: an unreadable log is an ``unreadable`` outcome and a row of the
failures, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from subagent_catalog.analysis.error_groups import ERROR_GROUP_SCHEMA, group_failures
from subagent_catalog.analysis.runs import (
    checked_sum,
    checked_total,
    tool_calls,
    unpriced_models,
    usage_by_model,
)
from subagent_catalog.analysis.trees import run_trees, subtree_tokens
from subagent_catalog.analysis.trends import TREND_SCHEMA, TrendBy, trend_rows
from subagent_catalog.bounds import COUNT
from subagent_catalog.catalog.source import source_reads
from subagent_catalog.frames.costs import known_costs
from subagent_catalog.frames.outcome import OUTCOMES
from subagent_catalog.frames.source import Source
from subagent_catalog.frames.units import NO_TIME, calendar_day, plural
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
    "name",
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
    "cost_usd_known",
    "path",
)
"""The columns of ``RunSummary.failures``, ``slowest`` and ``costliest``: one session each. ``label`` is the
descriptor identity's label, ``name`` the run's title or first human prompt (``sessions.name``), ``start_ms``
its first own event (its ``createdAt`` when it logged none), ``wall_ms`` first to last own event, ``active_ms``
the time a turn of its own was open (``tool_busy_ms``: and a tool call ran), ``peak_context_share`` its largest
prompt over its context window, ``tokens`` input + cache read + cache write + output (the tokens billed;
``run_tokens``), ``cost_usd`` null when unknown and ``cost_usd_known`` its known part (``known_costs``)."""

_TOKENS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")

CostBasis = Literal["cost", "tokens"]
"""What the costliest runs and trees rank by: the known cost, or the tokens billed when nothing is priced."""


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
    (``None`` when none reported it, or when the sum passes 2^63 - 1: then its name is in ``overflow``),
    ``cost_usd`` (``None`` when any session's cost is unknown), ``cost_usd_known`` (its known part: what the
    priced samples cost), ``cost_unknown`` (sessions whose cost is unknown), ``unpriced_sessions`` (of them,
    the sessions with steps of a model without a price), ``usage_unknown`` (sessions whose usage could not be
    read: the token sums leave them out), ``overflow``, ``tool_calls`` and ``tool_calls_failed``."""
    by_project: pl.DataFrame
    """``project_dir``, ``sessions``, ``failed`` and one count column per outcome present, most failed first."""
    by_day: pl.DataFrame
    """``day`` (UTC date of ``createdAt``, else of the first event), ``bin`` (that day as ``YYYY-MM-DD``;
    ``out of range`` for a time outside years 1 to 9999 UTC, whose ``day`` is null; ``no time`` when there is
    neither), ``sessions``, ``failed`` and one count column per outcome present, in day order, the labelled
    bins last."""
    failures: pl.DataFrame
    """Every failed session (``RUN_COLUMNS``), by outcome (``FAILED_OUTCOMES`` order), then start."""
    slowest: pl.DataFrame
    """The ``TOP`` sessions with the most active time (``active_ms``: idle time is not slowness), ``wall_ms`` beside."""
    costliest: pl.DataFrame
    """The ``TOP`` costliest sessions by their known cost (``cost_usd_known``: a partial one is a lower
    bound), none whose known cost is 0; by ``tokens`` when nothing is priced (``cost_basis``)."""
    trees: pl.DataFrame
    """Trees of more than one session (``run_trees`` rows of their tops): ``session_id``, ``list_order``,
    ``sessions``, ``subagents``, ``failed``, ``max_depth``, ``peak_children_running``, ``wall_ms``,
    ``active_ms`` (the sessions' active times summed: sessions that ran at once add up), ``tokens``, ``cost_usd``,
    ``cost_usd_known``, ``cost_unknown`` (sessions of unknown cost), ``usage_unknown`` (sessions whose usage could
    not be read), the top's ``label`` and ``name`` (as ``RUN_COLUMNS``); largest first."""
    models: pl.DataFrame
    """``usage_by_model(by="model")``."""
    unpriced: pl.DataFrame
    """``unpriced_models``."""
    tools: pl.DataFrame
    """Per tool name: ``calls``, ``failed`` (answered with an error), ``no_result``, ``failure_rate``
    (failed / calls) and ``top_error_codes`` (up to three ``CODE ×N``), most failed first."""
    failing_calls: pl.DataFrame = field(default_factory=pl.DataFrame)
    """Every tool call answered with an error: ``name``, ``list_order``, ``session_id``, ``turn``, ``step``,
    ``time_ms``, ``error_name`` and ``error_code``, by tool (most failed first, as ``tools``), then in list order."""
    error_groups: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=ERROR_GROUP_SCHEMA))
    """The failures grouped by error code and normalised message (``group_failures``): runs, outcomes, first and
    last seen, known cost, an example; the group with the most runs first."""
    trends: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=TREND_SCHEMA))
    """Per UTC day (``trends(by="day")``, ``TREND_SCHEMA``): runs, failed, known cost with the runs of unknown
    cost, tokens, active-time p50 and p95 with the runs whose active time is unknown."""
    trends_by_model: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=TREND_SCHEMA))
    """The same per UTC day and model (``trends(by="model")``): a run counts under each model that served it."""
    tree_rows: pl.DataFrame = field(default_factory=pl.DataFrame)
    """``run_trees`` of every session (what ``tree_timeline(..., trees=)`` takes)."""
    cost_basis: CostBasis = "cost"
    """What ``costliest`` and ``costliest_trees`` rank by: ``cost`` (the known part), or ``tokens`` when no
    session has a known cost above 0 (nothing is priced)."""
    notes: list[str] = field(default_factory=list)
    """What the figures leave out, one sentence each (unknown costs, unread usage, sums past 64 bits, the
    ranking by tokens); every view shows them."""

    def slowest_trees(self, n: int = TOP) -> pl.DataFrame:
        """The ``n`` trees with the most active time (summed over their sessions; ``wall_ms`` beside it)."""
        return self.trees.sort(["active_ms", "list_order"], descending=[True, False], nulls_last=True).head(n)

    def costliest_trees(self, n: int = TOP) -> pl.DataFrame:
        """The ``n`` trees that cost most by ``cost_basis``, none whose figure is 0 or unknown.

        By their known cost (a lower bound where ``cost_unknown`` is above 0), or by their tokens when
        nothing is priced.
        """
        return _costliest(self.trees, self.cost_basis, n)

    def listed_failures(self, cap: int, examples: int = 0) -> pl.DataFrame:
        """The failed runs a page lists, in ``failures`` order: each failed outcome's first ``cap`` runs.

        And the example run of each of the first ``examples`` error groups (so every example shown is a
        listed row). A long table reaches every outcome: 800 ``error`` runs never hide the ``aborted`` ones.

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> runs = run_summary(read_corpus("data/sample"))
            >>> runs.listed_failures(1)["outcome"].to_list()
            ['error', 'aborted', 'max-tokens', 'open', 'unreadable']
            >>> runs.listed_failures(1, examples=99).height == runs.failures.height   # every run is an example here
            True
        """
        wanted = self.error_groups["example_path"].head(examples)  # a log's path names its failure row
        first = pl.int_range(pl.len()).over("outcome") < cap
        return self.failures.filter(first | pl.col("path").is_in(wanted.implode()))


def _costliest(frame: pl.DataFrame | pl.LazyFrame, basis: CostBasis, n: int) -> pl.DataFrame:
    """The ``n`` rows with the largest known cost (or tokens), none whose figure is 0 or unknown; ties in list order."""
    key = "cost_usd_known" if basis == "cost" else "tokens"
    ranked = frame.lazy().filter(pl.col(key) > 0).sort([key, "list_order"], descending=[True, False]).head(n)
    return ranked.collect()


def _sum(frame: pl.DataFrame, name: str) -> int | None:
    """The column's exact sum (``None`` when no row has a value, or when it passes 64 bits: ``checked_sum``)."""
    column = frame[name]
    if column.null_count() == column.len():
        return None
    total = frame.select(checked_sum(name)).item()
    return None if total is None else int(total)


def _counts_by(frame: pl.DataFrame, key: str, present: list[str]) -> pl.DataFrame:
    return frame.group_by(key).agg(
        pl.len().cast(pl.Int64).alias("sessions"),
        pl.col("outcome").is_in(FAILED_OUTCOMES).sum().cast(pl.Int64).alias("failed"),
        *((pl.col("outcome") == name).sum().cast(pl.Int64).alias(name) for name in present),
    )


def run_tokens() -> pl.Expr:
    """A session's ``tokens``: input + cache read + cache write + output, as every run table shows it.

    Null when its usage could not be read (or a sum passes 64 bits); 0 when no own step reported usage
    (nothing billed: its cost is ``$0``, never shown beside unknown tokens).

    Examples:
        >>> frame = pl.DataFrame({"usage_steps": [2, 0, None], **dict.fromkeys(_TOKENS, [5, None, None])})
        >>> frame.select(run_tokens())["tokens"].to_list()
        [20, 0, None]
    """
    total = checked_total(*_TOKENS)
    return pl.when(pl.col("usage_steps") == 0).then(pl.lit(0)).otherwise(total).cast(pl.Int64).alias("tokens")


def session_runs(sessions: pl.DataFrame, *, prices: Prices | PriceTable | None = None) -> pl.DataFrame:
    """``sessions`` rows as ``RUN_COLUMNS`` (what the run tables show of a session).

    ``prices`` prices the known part of the sessions whose cost is unknown (``known_costs``).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> runs = session_runs(read_corpus("tests/data/run-facts").sessions)
        >>> runs.select("session_id", "outcome", "tokens").rows()
        [('child-1', 'open', 1419), ('parent-1', 'completed', 0)]
    """
    return sessions.with_columns(known_costs(sessions, prices=prices)).select(
        "list_order",
        "session_id",
        pl.col("identity_label").alias("label"),
        "name",
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
        run_tokens(),
        "cost_usd",
        "cost_usd_known",
        "path",
    )


def error_groups(source: Source, *, prices: Prices | PriceTable | None = None) -> pl.DataFrame:
    """The failed runs of a corpus or an archive grouped by error code and normalised message (``group_failures``).

    What ``run_summary(corpus).error_groups`` holds, without the rest of the summary; ``prices``
    prices the known part of the runs whose cost is unknown.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` keeps the unknown costs and times as missing
    values (not NaN or 0) and the date columns as timestamps.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> groups = error_groups(read_corpus("data/sample"))
        >>> groups.filter(pl.col("code") == "CONTEXT_LENGTH").select("runs", "example_session_id").row(0)
        (1, 'auth-refactor')
    """
    sessions = source.to_corpus().sessions
    return group_failures(session_runs(sessions.filter(pl.col("outcome").is_in(FAILED_OUTCOMES)), prices=prices))


def _trend_runs(sessions: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """``session_runs`` rows with what ``trend_rows`` bins by: the time that names the day, and failed or not."""
    when = sessions.select(pl.coalesce("created_at_ms", "run_first_ms", "first_event_ms").alias("created_ms"))
    return runs.with_columns(when["created_ms"], pl.col("outcome").is_in(FAILED_OUTCOMES).alias("failed"))


def trends(source: Source, *, by: TrendBy = "day", prices: Prices | PriceTable | None = None) -> pl.DataFrame:
    """Runs, failures, cost, tokens and active-time p50/p95 per UTC day, or per day and model (``TREND_SCHEMA``).

    What ``run_summary(corpus).trends`` (``by="day"``) and ``.trends_by_model`` (``by="model"``) hold,
    without the rest of the summary. A day's cost with runs of unknown cost is a lower bound: its
    ``cost_usd`` is null and ``cost_unknown`` counts them; the percentiles are over the runs whose active
    time is known (``active_unknown`` counts the others). ``prices`` prices the known part of the runs
    whose cost is unknown, and the per-model rows.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` keeps the unknown costs, tokens and times as
    missing values (not NaN or 0) and the days as dates.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> days = trends(read_corpus("data/sample"))
        >>> int(days["runs"].sum()) == read_corpus("data/sample").sessions.height
        True
        >>> days.columns[:6]
        ['day', 'bin', 'provider', 'model', 'runs', 'failed']
    """
    sessions = source.to_corpus().sessions
    rows = _trend_runs(sessions, session_runs(sessions, prices=prices))
    usage = usage_by_model(source, by="session", prices=prices) if by == "model" else None
    return trend_rows(rows, usage, by=by)


@source_reads
def run_summary(source: Source, *, prices: Prices | PriceTable | None = None, top: int = TOP) -> RunSummary:
    """How the runs of a corpus ended, which failed, what took long or cost most, per model and tool.

    Args:
        source: a read corpus or an archive (``Window.corpus`` gives one of a time window).
        prices: a price table for the per-model costs (default: genai-prices'; the sessions'
            ``cost_usd`` is what ``read_corpus`` priced).
        top: rows of the slowest and costliest tables (``bounds.COUNT``; a ``BoundError`` otherwise).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> runs = run_summary(read_corpus("data/sample"))
        >>> runs.outcomes["completed"], runs.failed, runs.failures["session_id"].to_list()[:2]
        (17, 7, ['auth-refactor', 'rs-01'])
    """
    COUNT.check("top", top)
    sessions = source.to_corpus().sessions
    runs = session_runs(sessions, prices=prices)
    counted = dict(sessions.group_by("outcome").len().iter_rows())
    outcomes: dict[str, int] = {str(name): int(counted[name]) for name in OUTCOMES if counted.get(name)}
    present = list(outcomes)
    rank = {name: i for i, name in enumerate(FAILED_OUTCOMES)}
    failures = (
        runs.filter(pl.col("outcome").is_in(FAILED_OUTCOMES))
        .with_columns(pl.col("outcome").replace_strict(rank, default=99).alias("_rank"))
        .sort("_rank", "start_ms", "list_order", nulls_last=True)
        .drop("_rank")
    )
    by_project = _counts_by(sessions, "project_dir", present).sort(
        ["failed", "sessions", "project_dir"], descending=[True, True, False], nulls_last=True
    )
    # Binned by text from exact milliseconds: a time no date names (past year 9999) is in the "out of range" bin.
    when = pl.coalesce("created_at_ms", "run_first_ms", "first_event_ms")
    bins = sessions.with_columns(calendar_day(when).fill_null(pl.lit(NO_TIME)).alias("bin"))
    by_day = (
        _counts_by(bins, "bin", present)
        .with_columns(pl.col("bin").str.to_date(strict=False).alias("day"))  # null for the two labelled bins
        .sort("day", pl.col("bin") == NO_TIME, nulls_last=True)
        .select("day", "bin", pl.exclude("day", "bin"))
    )
    # Only the top rows are kept: a lazy sort then head never holds a sorted copy of every session.
    slowest = (
        runs.lazy()
        .filter(pl.col("active_ms").is_not_null())
        .sort(["active_ms", "list_order"], descending=[True, False])
        .head(top)
        .collect()
    )
    known = runs["cost_usd_known"]
    basis: CostBasis = "cost" if known.len() and (known > 0).any() else "tokens"
    costliest = _costliest(runs, basis, top)
    trees = run_trees(source, prices=prices)
    failed_sum = pl.sum_horizontal(f"subtree_{name.replace('-', '_')}" for name in FAILED_OUTCOMES)
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
            subtree_tokens(),
            pl.col("subtree_cost_usd").alias("cost_usd"),
            pl.col("subtree_cost_usd_known").alias("cost_usd_known"),
            pl.col("subtree_cost_unknown").alias("cost_unknown"),
            pl.col("subtree_usage_unknown").alias("usage_unknown"),
        )
        .join(runs.select("list_order", "label", "name"), on="list_order", how="left")
        .sort(["sessions", "list_order"], descending=[True, False])
    )
    calls = tool_calls(source)
    tools = _tool_table(calls)
    models = usage_by_model(source, by="model", prices=prices)
    unpriced = unpriced_models(source, prices=prices)
    totals = _totals(sessions, runs, calls)
    trend_runs = _trend_runs(sessions, runs)
    per_session = usage_by_model(source, by="session", prices=prices)
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
        models=models,
        unpriced=unpriced,
        tools=tools,
        failing_calls=_failing_calls(calls, tools),
        error_groups=group_failures(failures),
        trends=trend_rows(trend_runs, None, by="day"),
        trends_by_model=trend_rows(trend_runs, per_session, by="model"),
        tree_rows=trees,
        cost_basis=basis,
        notes=_notes(totals, unpriced, basis, models),
    )


def _totals(sessions: pl.DataFrame, runs: pl.DataFrame, calls: pl.DataFrame) -> dict[str, Any]:
    """``RunSummary.totals`` (see there)."""
    unknown = sessions["cost_usd"].is_null()
    usage_unknown = sessions["usage_steps"].is_null()
    tokens = (*_TOKENS, "reasoning_tokens")
    sums = {name: _sum(sessions, name) for name in tokens}
    over = [name for name in tokens if sums[name] is None and sessions[name].null_count() < sessions.height]
    known = runs.select(pl.col("cost_usd_known").sort_by("list_order").cum_sum().last()).item()
    return {
        "wall_ms": _sum(sessions, "run_wall_ms"),
        "active_ms": _sum(sessions, "active_ms"),
        "llm_ms": _sum(sessions, "llm_ms"),
        "tool_ms": _sum(sessions, "tool_ms"),
        "tool_busy_ms": _sum(sessions, "tool_busy_ms"),
        **sums,
        "cost_usd": None if unknown.any() or not sessions.height else float(known),
        "cost_usd_known": float(known or 0.0),
        "cost_unknown": int(unknown.sum()),
        "unpriced_sessions": int((unknown & ~usage_unknown).sum()),
        "usage_unknown": int(usage_unknown.sum()),
        "overflow": over,
        "tool_calls": calls.filter(pl.col("status") != "no-call").height,
        "tool_calls_failed": calls.filter(pl.col("status") == "error").height,
    }


def _notes(totals: dict[str, Any], unpriced: pl.DataFrame, basis: CostBasis, models: pl.DataFrame) -> list[str]:
    """What the figures leave out, one sentence each (``RunSummary.notes``)."""
    notes = []
    if totals["cost_unknown"]:
        rows = unpriced.head(5).iter_rows(named=True)
        names = ", ".join(f"{r['provider'] or '?'}/{r['model'] or '?'} ({r['reason']})" for r in rows)
        parts = []
        if totals["unpriced_sessions"]:
            parts.append(f"{totals['unpriced_sessions']:,} unpriced: {names or 'no model named'}")
        if totals["usage_unknown"]:
            parts.append(f"{totals['usage_unknown']:,} whose usage could not be read")
        notes.append(
            f"cost: {plural(totals['cost_unknown'], 'session')} of unknown cost ({'; '.join(parts)}); "
            "a cost that includes one is shown as a lower bound (≥)"
        )
    if basis == "tokens" and totals["cost_unknown"]:
        notes.append("nothing is priced: the costliest runs and trees are ranked by tokens")
    if totals["usage_unknown"]:
        notes.append(
            f"tokens: {plural(totals['usage_unknown'], 'session')} whose usage could not be read; "
            "the token totals leave them out (≥)"
        )
    per_model = [f"{r['provider'] or '?'}/{r['model'] or '?'}" for r in models.filter("overflow").iter_rows(named=True)]
    named = [*totals["overflow"], *([f"per model {', '.join(per_model)}"] if per_model else [])]
    if named:
        notes.append(f"token sums past 2^63 - 1 are not shown (null, never wrapped): {'; '.join(named)}")
    return notes


def _failing_calls(calls: pl.DataFrame, tools: pl.DataFrame) -> pl.DataFrame:
    """``RunSummary.failing_calls``: the calls answered with an error, in the tool table's order."""
    rank = tools.select("name", pl.int_range(pl.len()).alias("_rank"))
    failing = calls.filter(pl.col("status") == "error").join(rank, on="name", how="left", nulls_equal=True)
    ordered = failing.sort("_rank", "list_order", "seq", nulls_last=True)
    return ordered.select("name", "list_order", "session_id", "turn", "step", "time_ms", "error_name", "error_code")


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
