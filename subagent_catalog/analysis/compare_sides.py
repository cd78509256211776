"""One side of a comparison: the few columns and counts ``compare`` reads of a corpus or an archive.

Each side is read through the lazy session table (``session_table``): an archive's Parquet files are
scanned for the columns named here and aggregated before anything is collected, so a side holds one
small row per session (a dozen numbers), one per tree, and counts per model, tool, error group and
health value, never the events, headers or nested records of the whole archive. A corpus and the
archive exported from it give equal sides (the same expressions over the same columns).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.analysis.runs import checked_sum, checked_total, usage_by_model
from subagent_catalog.analysis.trees import run_trees, subtree_tokens
from subagent_catalog.catalog.source import source_reads
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.costs import session_costs
from subagent_catalog.frames.source import Source
from subagent_catalog.prices import PriceTable

RUN_METRICS: dict[str, str] = {
    "cost": "cost_usd_known",
    "tokens": "tokens",
    "active_time": "active_ms",
    "steps": "steps",
    "tool_calls": "tool_calls",
    "failed_tool_results": "tool_results_failed",
}
"""The metrics ``compare`` measures per run and per tree, by name, and the column of a side's rows holding each."""

_TOKENS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")


@dataclass
class Side:
    """What ``compare`` reads of one corpus or archive (``read_side``)."""

    runs: pl.DataFrame
    """One row per session: ``list_order``, ``session_id``, ``label`` and ``name`` (``sessions.name``),
    ``root_list_order``, ``depth``, ``outcome``, and
    what ``group_failures`` reads (``outcome_detail``, ``error_code``, ``error_message``, ``start_ms``,
    ``wall_ms``; ``path`` null), ``cost_usd`` (null: unknown), ``cost_usd_known`` (its known part), ``tokens``
    (billed: input + cache read + cache write + output; null when the usage could not be read), ``active_ms``,
    ``steps``, ``tool_calls``, ``tool_results_failed``, in list order."""
    trees: pl.DataFrame
    """One row per tree (a session without a resolved parent, and every session below it): ``root_list_order``,
    ``sessions``, ``failed`` (sessions of a failed outcome), the ``RUN_METRICS`` columns summed exactly (null past
    2^63 - 1, never wrapped: ``checked_sum``; ``tokens`` is the run tables' ``subtree_tokens``; ``cost_usd_known``
    the known part; ``cost_unknown`` counts the sessions of unknown cost, ``<column>_unknown`` those without
    a value of each other column (the tree's sum is then a lower bound); a sum is null when no session has a
    value)."""
    models: pl.DataFrame
    """``usage_by_model(by="model")`` of the session's own steps."""
    tools: pl.DataFrame
    """Per tool name: ``calls``, ``failed``, ``codes`` (a list of ``{code, count}``, most first)."""
    health: pl.DataFrame
    """``aspect``, ``value``, ``count``, ``total`` (what the share is of)."""
    listing_error: str | None


def _runs(source: Source, table: PriceTable) -> pl.DataFrame:
    columns = [
        "list_order",
        "session_id",
        "identity_label",
        "name",
        "outcome",
        "outcome_detail",
        "last_error_code",
        "last_error_message",
        "run_first_ms",
        "created_at_ms",
        "run_wall_ms",
        "active_ms",
        "steps",
        "usage_steps",
        "tool_calls",
        "tool_results_failed",
        *_TOKENS,
    ]
    frame = source.table("sessions", [*columns, "usage_samples"])
    costs = session_costs(frame, table, known=True)
    runs = (
        frame.select(columns)
        .join(costs, on="list_order", how="left")
        .select(
            "list_order",
            "session_id",
            pl.col("identity_label").alias("label"),
            "name",
            "outcome",
            "outcome_detail",
            pl.col("last_error_code").alias("error_code"),
            pl.col("last_error_message").alias("error_message"),
            pl.coalesce("run_first_ms", "created_at_ms").alias("start_ms"),
            pl.col("run_wall_ms").alias("wall_ms"),
            pl.lit(None, pl.String).alias("path"),  # an example's path is not shown: no path column is scanned
            "cost_usd",
            "cost_usd_known",
            pl.when(pl.col("usage_steps").is_not_null()).then(checked_total(*_TOKENS)).cast(pl.Int64).alias("tokens"),
            "active_ms",
            "steps",
            "tool_calls",
            "tool_results_failed",
        )
        .sort("list_order")
    )
    return source.collect(runs)


def _tools(source: Source) -> pl.DataFrame:
    calls = (
        source.table("sessions", ["list_order", "tool_call_records"])
        .explode("tool_call_records")
        .filter(pl.col("tool_call_records").is_not_null())
        .unnest("tool_call_records")
        .filter(~pl.col("in_seed") & pl.col("seq").is_not_null())  # own calls (a result without a call is no call)
        .select(
            "name",
            (pl.col("result_seq").is_not_null() & pl.col("is_error").fill_null(False)).alias("failed"),
            "error_code",
        )
    )
    counted = calls.group_by("name").agg(
        pl.len().cast(pl.Int64).alias("calls"), pl.col("failed").sum().cast(pl.Int64).alias("failed")
    )
    codes = (
        calls.filter("failed")
        .group_by("name", pl.col("error_code").fill_null("(no code)").alias("code"))
        .agg(pl.len().cast(pl.Int64).alias("count"))
        .sort(["count", "code"], descending=[True, False])
        .group_by("name", maintain_order=True)
        .agg(pl.struct("code", "count").alias("codes"))
    )
    joined = counted.join(codes, on="name", how="left", nulls_equal=True).sort("name", nulls_last=True)
    return source.collect(joined)


def _counts(frame: pl.LazyFrame, aspect: str, column: str, total: pl.Expr | None = None) -> pl.LazyFrame:
    """``aspect``, ``value`` (the column as text, ``(none)`` for null), ``count``, ``total`` (all rows or ``total``)."""
    return (
        frame.select(pl.col(column).cast(pl.String).fill_null("(none)").alias("value"))
        .group_by("value")
        .agg(pl.len().cast(pl.Int64).alias("count"))
        .with_columns(pl.lit(aspect).alias("aspect"))
        .with_columns((pl.col("count").sum() if total is None else total).cast(pl.Int64).alias("total"))
        .select("aspect", "value", "count", "total")
    )


def _health(source: Source, listing_error: str | None) -> pl.DataFrame:
    sessions = source.table("sessions", ["verdict"])
    descriptors, problems = source.table("descriptors"), source.table("problems")
    files = source.table("sessions", ["list_order"]).select(pl.len()).collect().item()
    parts = [
        source.collect(_counts(sessions, "verdict", "verdict")),
        source.collect(_counts(descriptors, "descriptor status", "status")),
        source.collect(_counts(descriptors, "descriptor version", "version")),
        source.collect(_counts(problems, "problem", "kind", pl.lit(files))),
    ]
    if listing_error is None:
        try:
            rows = catalog(source)
        except CatalogError:  # pragma: no cover - listing_error said so
            rows = None
        if rows is not None:
            kept = rows.lazy().filter(pl.col("kind") != "error")
            shown = pl.when(pl.col("kind") == "child").then(pl.lit("child")).otherwise(pl.col("reason"))
            parts.append(_counts(kept.with_columns(shown.alias("_row")), "listing row", "_row").collect())
    else:
        parts.append(pl.DataFrame({"aspect": ["listing"], "value": ["fails"], "count": [1], "total": [1]}))
    return pl.concat(parts).cast({"count": pl.Int64, "total": pl.Int64}).sort("aspect", "value")


def _tree_rows(source: Source, runs: pl.DataFrame, table: PriceTable) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The runs with their tree position, and one row per tree: every count added exactly (``checked_sum``).

    A tree's tokens are the run tables' own figure (``subtree_tokens`` of its root's ``run_trees`` row).
    """
    links = run_trees(source, prices=table)
    position = links.select("list_order", "root_list_order", "depth")
    runs = runs.join(position, on="list_order", how="left", maintain_order="left")
    tokens = links.filter(pl.col("depth") == 0).select(pl.col("list_order").alias("root_list_order"), subtree_tokens())
    summed = [column for column in RUN_METRICS.values() if column not in ("cost_usd_known", "tokens")]
    trees = (
        runs.group_by("root_list_order")
        .agg(
            pl.len().cast(pl.Int64).alias("sessions"),
            pl.col("outcome").is_in(FAILED_OUTCOMES).sum().cast(pl.Int64).alias("failed"),
            pl.col("cost_usd").is_null().sum().cast(pl.Int64).alias("cost_unknown"),
            pl.col("cost_usd_known").sort_by("list_order").cum_sum().last().alias("cost_usd_known"),
            *(pl.when(pl.col(column).is_not_null().any()).then(checked_sum(column)).alias(column) for column in summed),
            *(pl.col(name).is_null().sum().cast(pl.Int64).alias(f"{name}_unknown") for name in [*summed, "tokens"]),
        )
        .join(tokens, on="root_list_order", how="left")
        .sort("root_list_order")
    )
    return runs, trees


@source_reads
def read_side(source: Source, table: PriceTable) -> Side:
    """The columns and counts of one side of a comparison (``Side``), priced by ``table``.

    Raises:
        TypeError: neither a ``Corpus`` nor an ``Archive``.
        ArchiveError: an archive's data file fails its checks or cannot be read.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.prices import price_table
        >>> side = read_side(read_corpus("tests/data/run-facts"), price_table())
        >>> side.runs.select("session_id", "outcome", "root_list_order").rows()
        [('child-1', 'open', 1), ('parent-1', 'completed', 1)]
        >>> side.trees.select("root_list_order", "sessions", "failed").rows()
        [(1, 2, 1)]
    """
    listing_error = source.listing_error
    runs = _runs(source, table)
    runs, trees = _tree_rows(source, runs, table)
    models = usage_by_model(source, by="model", prices=table)
    return Side(runs, trees, models, _tools(source), _health(source, listing_error), listing_error)
