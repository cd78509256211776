"""Runs as tables: token usage and cost per model, tool calls one row each, from a corpus or an archive.

Both read the nested records the single read keeps per session (``sessions.usage_samples``,
``sessions.tool_call_records``), so nothing is read again from the logs, and over an archive they
stay lazy until the result (a 500,000-session archive is never loaded whole). ``part`` picks the
session's own events (the default: a fork's inherited seed is its parent's history, counted
there), the seed alone, or both (``in_seed`` tells them apart).
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from subagent_catalog.catalog.source import source_reads
from subagent_catalog.frames.costs import ordered_sum, own_samples
from subagent_catalog.frames.source import Source
from subagent_catalog.prices import SAMPLE_COLUMNS, Prices, PriceTable, price_table, sample_costs

Part = Literal["own", "seed", "all"]
"""Which events of a session count: its own (``seq >= seedLength``), a fork's seed, or both."""


TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


@source_reads
def usage_samples(source: Source, *, part: Part = "own", prices: Prices | PriceTable | None = None) -> pl.DataFrame:
    """One row per model step that reported usage, with the model that served it and what it cost.

    Columns: ``list_order``, ``session_id``, ``seq`` (the event whose sample counts), ``time_ms``,
    ``turn``, ``step``, ``in_seed``, ``provider``, ``model``, the five token counts (``input_tokens``
    is uncached input), ``price_source``, ``cost_usd`` (``null``: unpriced) and ``unpriced_reason``
    (why, ``prices.UNPRICED_REASONS``: an unknown model, a time that is missing or not a date while
    the model's price changes with time, a cost out of range). Rows are in list order, then seq order.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> usage_samples(read_corpus("tests/data/run-facts")).select("session_id", "seq", "model").rows()
        [('child-1', 11, 'deepseek-v4-flash'), ('child-1', 21, 'deepseek-v4-flash'), ('child-1', 40, 'deepseek-v4-pro')]
    """
    frame = own_samples(source.table("sessions", ["list_order", "session_id", "usage_samples"]), part=part)
    priced = sample_costs(frame, price_table(prices))
    return source.collect(priced.sort("list_order", "seq"))


INT64_MAX = (1 << 63) - 1
"""The largest value of a 64-bit column: a token sum past it is ``null`` (with an ``overflow`` flag), never wrapped."""


def checked_sum(name: str) -> pl.Expr:
    """The integer column's exact sum: added in 128 bits, ``null`` when it does not fit 64 (never wrapped).

    Polars adds 64-bit integers modulo 2^64: 1,100 samples of 2^53 - 1 tokens would sum to a negative
    count. Each value is at most 2^63 - 1, so 128 bits hold the sum of any column Polars can hold.

    Examples:
        >>> frame = pl.DataFrame({"n": [2**53 - 1] * 1100})
        >>> frame.select(pl.col("n").sum()).item() < 0, frame.select(checked_sum("n")).item()
        (True, None)
        >>> frame.head(3).select(checked_sum("n")).item() == 3 * (2**53 - 1)
        True
    """
    return pl.col(name).cast(pl.Int128).sum().cast(pl.Int64, strict=False)


def checked_total(*names: str) -> pl.Expr:
    """The row's sum of integer columns (nulls left out; null when all are), checked as ``checked_sum``.

    Examples:
        >>> frame = pl.DataFrame({"a": [2**62, None, 1], "b": [2**62, None, None]})
        >>> frame.select(checked_total("a", "b"))["a"].to_list()
        [None, None, 1]
    """
    total = pl.sum_horizontal(pl.col(name).cast(pl.Int128) for name in names).cast(pl.Int64, strict=False)
    return pl.when(pl.any_horizontal(pl.col(name).is_not_null() for name in names)).then(total)


@source_reads
def usage_by_model(
    source: Source,
    *,
    part: Part = "own",
    prices: Prices | PriceTable | None = None,
    by: Literal["session", "model"] = "session",
) -> pl.DataFrame:
    """Token usage and cost per session and model: one row per (session, provider, model, ``in_seed``).

    With ``by="model"``, one row per (provider, model, ``in_seed``) over the whole source, with the
    number of ``sessions`` it served instead of the session columns.

    ``steps`` counts the steps the model served that reported usage (one sample per step, the
    last one of the step: upstream's ``tokenUsage`` rule); the token columns are their sums
    (``null`` when no sample carries the count); ``billed_input_tokens`` is input + cache read +
    cache write; ``cost_usd`` is ``null`` when the model has no price (``unpriced_models`` lists
    them), never $0; ``cost_usd_known`` sums the steps that have a price (equal to ``cost_usd`` when
    every step has one, a lower bound otherwise, 0 when none has) and ``unpriced_steps`` counts the
    others. A token sum that passes 2^63 - 1 is ``null``, never wrapped, and ``overflow`` says so.
    With ``part="all"`` a fork's rows of its seed (``in_seed``) come beside its own: their sum is
    upstream's whole-log ``tokenUsage``.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> rows = usage_by_model(read_corpus("tests/data/run-facts"))
        >>> rows.select("session_id", "model", "steps", "input_tokens", "cache_read_tokens").rows()
        [('child-1', 'deepseek-v4-flash', 2, 310, 50), ('child-1', 'deepseek-v4-pro', 1, 1000, None)]
        >>> usage_by_model(read_corpus("tests/data/run-facts"), by="model").select("model", "sessions").rows()
        [('deepseek-v4-flash', 1), ('deepseek-v4-pro', 1)]
    """
    frame = own_samples(source.table("sessions", ["list_order", "session_id", "usage_samples"]), part=part)
    priced = sample_costs(frame, price_table(prices))
    keys = ["list_order", "session_id"] if by == "session" else []
    grouped = priced.group_by(*keys, "provider", "model", "in_seed").agg(
        *([] if keys else [pl.col("list_order").n_unique().cast(pl.Int64).alias("sessions")]),
        pl.len().cast(pl.Int64).alias("steps"),
        pl.col("time_ms").min().alias("first_ms"),
        pl.col("time_ms").max().alias("last_ms"),
        # a count no sample reported is unknown (null), not 0; a sum past 64 bits is null, flagged in _over
        *(pl.when(pl.col(name).is_not_null().any()).then(checked_sum(name)).alias(name) for name in TOKEN_COLUMNS),
        pl.when(pl.col("cost_usd").is_not_null().all())
        .then(ordered_sum("cost_usd", "list_order", "seq"))
        .alias("cost_usd"),
        ordered_sum("cost_usd", "list_order", "seq", fill=0.0).alias("cost_usd_known"),
        pl.col("cost_usd").is_null().sum().cast(pl.Int64).alias("unpriced_steps"),
        pl.col("price_source").drop_nulls().first().alias("price_source"),
        pl.any_horizontal(pl.col(n).is_not_null().any() & checked_sum(n).is_null() for n in TOKEN_COLUMNS).alias(
            "_over"
        ),
    )
    parts = ("input_tokens", "cache_read_tokens", "cache_write_tokens")
    billed = checked_total(*parts)
    reported = pl.any_horizontal(pl.col(name).is_not_null() for name in parts)
    grouped = grouped.with_columns(
        billed.alias("billed_input_tokens"), (pl.col("_over") | (reported & billed.is_null())).alias("overflow")
    )
    if keys:
        ordered = grouped.sort("list_order", "in_seed", "first_ms", "provider", "model", nulls_last=True)
    else:
        ordered = grouped.sort("in_seed", "provider", "model", nulls_last=True)
    return source.collect(ordered).select(
        *(keys or ["sessions"]),
        "provider",
        "model",
        "in_seed",
        "steps",
        *TOKEN_COLUMNS,
        "billed_input_tokens",
        "cost_usd",
        "cost_usd_known",
        "unpriced_steps",
        "price_source",
        "first_ms",
        "last_ms",
        "overflow",
    )


@source_reads
def unpriced_models(source: Source, *, prices: Prices | PriceTable | None = None) -> pl.DataFrame:
    """The models of the samples no price table prices: ``provider``, ``model``, ``sessions``, ``steps`` and ``reason``.

    One row per model and reason (``prices.UNPRICED_REASONS``): ``unknown model`` (no table knows it:
    add its price with ``prices=`` or ``--prices``), ``no time`` or ``time out of range`` (its price
    changes with time and the sample's time is missing or not a date, years 1 to 9999 UTC), ``cost
    out of range`` (not a finite number). Their sessions' ``cost_usd`` is ``null``, never $0.
    ``sessions`` and ``steps`` count own events.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> unpriced_models(read_corpus("tests/data/run-facts")).height
        0
        >>> unpriced_models(read_corpus("tests/data/run-facts"), prices=__import__("subagent_catalog.prices",
        ...     fromlist=["PriceTable"]).PriceTable(genai=False)).rows()[0]
        ('deepseek-official', 'deepseek-v4-flash', 1, 2, 'unknown model')
    """
    frame = own_samples(source.table("sessions", ["list_order", "session_id", "usage_samples"]))
    priced = sample_costs(frame.select("list_order", *SAMPLE_COLUMNS), price_table(prices))
    missing = (
        priced.filter(pl.col("cost_usd").is_null())
        .group_by("provider", "model", pl.col("unpriced_reason").alias("reason"))
        .agg(pl.col("list_order").n_unique().alias("sessions"), pl.len().alias("steps"))
        .sort("provider", "model", "reason", nulls_last=True)
        .select("provider", "model", "sessions", "steps", "reason")
    )
    return source.collect(missing).cast({"sessions": pl.Int64, "steps": pl.Int64})


CALL_STATUS = ("ok", "error", "no-result", "no-call")
"""A tool call row's ``status``: answered, answered with ``isError``, never answered, a result without a call."""


@source_reads
def tool_calls(source: Source, *, part: Part = "own") -> pl.DataFrame:
    """One row per tool call, with the result that answered it.

    Columns: ``list_order``, ``session_id``, ``seq`` (the ``tool/call``), ``turn``, ``step``,
    ``call_id``, ``name``, ``argument_bytes``, ``in_seed``, ``time_ms`` (called), ``result_seq``,
    ``result_time_ms``, ``duration_ms`` (result time - call time, at least 0, as upstream's tool
    time), ``is_error``, ``error_name``, ``error_code`` (``data.error`` of the result),
    ``result_bytes`` (UTF-8 bytes of its text; null in a fork's seed rows: its parent's results, measured
    there) and ``status`` (``CALL_STATUS``). A result that answers no call of the log is a row of its own
    (``status`` ``no-call``, the call's columns null).

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` gives
    pandas with Arrow-backed columns (nulls, lists and UTC times kept; docs/pandas.md).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> calls = tool_calls(read_corpus("tests/data/run-facts"))
        >>> calls.select("session_id", "name", "duration_ms", "status", "error_code").rows()[:2]
        [('child-1', 'shell', 10, 'error', 'EXIT_NONZERO'), ('child-1', 'read_file', 10, 'ok', None)]
    """
    frame = (
        source.table("sessions", ["list_order", "session_id", "tool_call_records"])
        .explode("tool_call_records")
        .filter(pl.col("tool_call_records").is_not_null())
        .unnest("tool_call_records")
    )
    if part == "own":
        frame = frame.filter(~pl.col("in_seed"))
    elif part == "seed":
        frame = frame.filter(pl.col("in_seed"))
    took = pl.max_horizontal(pl.col("result_time_ms") - pl.col("time_ms"), pl.lit(0))
    frame = frame.with_columns(
        pl.when(pl.col("result_time_ms").is_not_null()).then(took).alias("duration_ms"),  # no result: null, not 0
        pl.when(pl.col("seq").is_null())
        .then(pl.lit("no-call"))
        .when(pl.col("result_seq").is_null())
        .then(pl.lit("no-result"))
        .when(pl.col("is_error"))
        .then(pl.lit("error"))
        .otherwise(pl.lit("ok"))
        .alias("status"),
    )
    ordered = frame.sort("list_order", pl.coalesce("seq", "result_seq"))
    return source.collect(ordered).select(
        "list_order",
        "session_id",
        "seq",
        "turn",
        "step",
        "call_id",
        "name",
        "argument_bytes",
        "in_seed",
        "time_ms",
        "result_seq",
        "result_time_ms",
        "duration_ms",
        "is_error",
        "error_name",
        "error_code",
        "result_bytes",
        "status",
    )
