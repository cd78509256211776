"""``subagent-catalog runs``: how runs ended, what they used and cost, which tools failed, one table at a time."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
import polars as pl

from subagent_catalog.bounds import POSITIVE_COUNT
from subagent_catalog.catalog.source import source_reads
from subagent_catalog.cli.io import check_target, is_stdout, note, output_stream, translate_errors, write_rows
from subagent_catalog.cli.options import (
    bounded,
    data_output_option,
    format_option,
    load_source,
    prices_option,
    protected_paths,
    source_options,
)
from subagent_catalog.frames.outcome import OUTCOMES
from subagent_catalog.views.text import terminal_frame, terminal_safe

if TYPE_CHECKING:
    from subagent_catalog.frames.source import Source
    from subagent_catalog.prices import PriceTable

TABLES = ("outcomes", "models", "tools", "trees", "sessions", "errors")

OUTCOME_CHOICES = ("failed", *OUTCOMES)
"""``--outcome`` values: ``failed`` (any of ``FAILED_OUTCOMES``) or one outcome."""


@source_reads
def runs_table(source: Source, table: str, prices: PriceTable, *, outcome: str | None = None) -> pl.DataFrame:
    """One of the ``runs`` command's tables (``TABLES``) over a corpus or an archive.

    ``outcome`` keeps the sessions of that outcome (``failed``: any failed one) in the ``sessions`` table.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.prices import price_table
        >>> runs_table(read_corpus("tests/data/run-facts"), "outcomes", price_table()).rows()
        [('completed', 1, 1, 0), ('open', 1, 0, 1)]
        >>> failed = runs_table(read_corpus("data/sample"), "sessions", price_table(), outcome="failed")
        >>> failed.select("session_id", "outcome", "last_error_code").row(0)
        ('auth-refactor', 'error', 'CONTEXT_LENGTH')
    """
    from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES, error_groups
    from subagent_catalog.analysis.runs import tool_calls, usage_by_model
    from subagent_catalog.analysis.trees import run_trees
    from subagent_catalog.frames.costs import session_costs

    if table == "errors":
        return error_groups(source, prices=prices)
    if table == "models":
        return usage_by_model(source, by="model", prices=prices).drop("in_seed", "first_ms", "last_ms")
    if table == "tools":
        calls = tool_calls(source)
        return (
            calls.group_by("name")
            .agg(
                pl.len().alias("calls"),
                (pl.col("status") == "error").sum().alias("failed"),
                (pl.col("status") == "no-result").sum().alias("no_result"),
                pl.col("duration_ms").median().alias("median_ms"),
                pl.col("error_code").drop_nulls().mode().sort().first().alias("top_error_code"),
            )
            .with_columns((pl.col("failed") / pl.col("calls")).round(4).alias("failure_rate"))
            .sort(["calls", "name"], descending=[True, False], nulls_last=True)
        )
    if table == "trees":
        trees = run_trees(source, prices=prices).filter(pl.col("depth") == 0)
        # Costliest first by the known part (a strict cost is null as soon as one session's is unknown).
        trees = trees.sort(["subtree_cost_usd_known", "subtree_sessions"], descending=True, nulls_last=True)
        return trees.select(
            "session_id",
            "subtree_sessions",
            "subtree_subagents",
            "subtree_max_depth",
            "subtree_wall_ms",
            "subtree_input_tokens",
            "subtree_output_tokens",
            "subtree_cost_usd",
            "subtree_cost_usd_known",
            "subtree_cost_unknown",
            "subtree_error",
            "subtree_open",
            "peak_children_running",
        )
    columns = ["list_order", "session_id", "parent_session", "origin", "outcome", "outcome_detail"]
    columns += ["last_error_code", "run_wall_ms", "active_ms", "path"] if table == "sessions" else ["run_wall_ms"]
    frame = source.table("sessions", [*columns, "input_tokens", "output_tokens", "usage_samples"])
    if table == "sessions" and outcome is not None:
        kept = list(FAILED_OUTCOMES) if outcome == "failed" else [outcome]
        frame = frame.filter(pl.col("outcome").is_in(kept))
    frame = frame.join(session_costs(frame, prices), on="list_order", how="left").drop("usage_samples")
    data = frame.sort("list_order").collect()
    if table == "sessions":
        return data.drop("list_order")
    return (
        data.group_by("outcome")
        .agg(
            pl.len().alias("sessions"),
            pl.col("parent_session").is_null().sum().alias("roots"),
            (pl.col("origin") == "subagent").sum().alias("subagents"),
        )
        .sort("outcome")
    )


@click.command()
@source_options
@click.option(
    "-t",
    "--table",
    type=click.Choice(TABLES),
    default="outcomes",
    show_default=True,
    help="outcomes: sessions per outcome; models: tokens and cost per model; tools: calls and failures per tool; "
    "trees: each root run's subtree totals; sessions: one row per session; errors: the failed runs grouped by "
    "error code and message.",
)
@click.option(
    "--outcome",
    type=click.Choice(OUTCOME_CHOICES),
    default=None,
    help="With --table sessions: only the sessions of this outcome (failed: any failed one).",
)
@prices_option
@click.option("-n", "--limit", type=bounded(POSITIVE_COUNT), default=None, help="Show at most this many rows.")
@format_option(("text", "json", "csv"), "text: an aligned table; json: one object per line; csv: the frame.")
@data_output_option
@translate_errors
def runs(
    root: str,
    quiet: bool,
    table: str,
    outcome: str | None,
    prices: str | None,
    limit: int | None,
    fmt: str,
    output: str | None,
) -> None:
    """How the runs of ROOT ended, what they used and cost, and which tools failed.

    ROOT is a corpus root or an archive directory (one holding manifest.json).
    Each table counts a session's own events once (a fork's inherited seed is
    its parent's); a model no price table knows has no cost (empty), never $0.

    --table errors groups the failed runs by error code and normalised
    message (ids, paths, numbers made alike): runs, outcomes, first and last
    seen, what they cost (a lower bound beside the runs of unknown cost), an
    example. --outcome failed --table sessions lists the failed runs with
    their error code, times and cost.

    \b
    Examples:
        subagent-catalog runs data/sample
        subagent-catalog runs data/sample --table errors
        subagent-catalog runs data/sample --table sessions --outcome failed
        subagent-catalog runs data/sample --table models --prices data/prices.toml
        subagent-catalog runs data/sample --table tools --format csv -o tools.csv
    """
    from subagent_catalog.prices import price_table

    if outcome is not None and table != "sessions":
        raise click.UsageError(
            f"--outcome applies to --table sessions, not {table} (hint: --table sessions --outcome {outcome}; "
            "--table errors groups every failed run)"
        )
    table_prices = price_table(prices)
    check_target(output, [root])
    source = load_source(root, quiet=quiet)
    check_target(output, protected_paths(root, source))
    frame = runs_table(source, table, table_prices, outcome=outcome)
    shown = frame.head(limit) if limit is not None else frame
    to_terminal = is_stdout(output)
    with output_stream(output, protected=protected_paths(root, source)) as out:
        if fmt in ("csv", "json"):
            write_rows(out, shown, "csv" if fmt == "csv" else "json", to_terminal=to_terminal)
        else:
            with pl.Config(
                tbl_rows=-1,
                tbl_cols=-1,
                tbl_hide_dataframe_shape=True,
                tbl_hide_column_data_types=True,
                tbl_width_chars=160,
                fmt_str_lengths=60,
            ):
                text = str(terminal_frame(shown) if to_terminal else shown)
            out.write("".join((terminal_safe(line) if to_terminal else line) + "\n" for line in text.split("\n")))
    if limit is not None and frame.height > limit:
        note(f"{limit} of {frame.height} rows", quiet=quiet)
