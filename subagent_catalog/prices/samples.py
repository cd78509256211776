"""The cost of usage samples, computed over whole columns (and of one request, for a trace's span)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import polars as pl

from subagent_catalog.prices.table import FOREVER, PriceTable, UnpricedReason

_MINUTE_MS = 60_000
OUT_OF_RANGE: UnpricedReason = "cost out of range"

SAMPLE_COLUMNS = (
    "provider",
    "model",
    "time_ms",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
"""The columns ``sample_costs`` reads: one model request's usage each."""

_COUNTS = SAMPLE_COLUMNS[3:]


def sample_costs(samples: pl.LazyFrame, table: PriceTable) -> pl.LazyFrame:
    """``samples`` with ``price_source``, ``cost_usd`` and ``unpriced_reason`` (why ``cost_usd`` is ``null``).

    Each sample's counts are one request's (one model step). Prices are looked up once per
    provider, model and price period (``PriceTable.period``: a fixed price once, DeepSeek's every
    half hour; only the distinct keys are collected); a price that depends on the request's size
    (tiers) is computed request by request by ``genai-prices``. A sample without a price, or whose
    cost is not a finite number, has a ``null`` cost and its ``UnpricedReason``; ``price_source``
    names the entry that was used (also for a cost out of range), ``null`` when there is none.

    Examples:
        >>> from subagent_catalog.prices import price_table
        >>> samples = pl.LazyFrame({"provider": ["p", "p"], "model": ["m", "x"], "time_ms": [0, 0],
        ...     "input_tokens": [1_000_000, 5], "output_tokens": [0, 5], "cache_read_tokens": [None, None],
        ...     "cache_write_tokens": [None, None], "reasoning_tokens": [None, None]})
        >>> costs = sample_costs(samples, price_table({"p/m": {"input": 2, "output": 4}})).collect()
        >>> costs.select("cost_usd", "unpriced_reason").rows()
        [(2.0, None), (None, 'unknown model')]
    """
    models = samples.select("provider", "model").unique().collect()
    spans = models.with_columns(pl.Series("_span", [table.period(p, m) for p, m in models.iter_rows()], dtype=pl.Int64))
    frame = samples.join(spans.lazy(), on=["provider", "model"], how="left", nulls_equal=True, maintain_order="left")
    minute = pl.col("time_ms") // _MINUTE_MS  # null without a time: priced only where the price never changes
    span = pl.col("_span")
    frame = frame.with_columns(pl.when(span == FOREVER).then(0).otherwise(minute // span * span).alias("_minute"))
    keys = frame.select("provider", "model", "_minute").unique().collect()
    found = list(map(table._lookup, *keys.get_columns()))
    looked = keys.with_columns(
        pl.Series("_request", [r.request if r else None for r, _, _ in found], dtype=pl.Float64),
        *(
            pl.Series(f"_rate_{name}", [getattr(r, name) if r else None for r, _, _ in found], dtype=pl.Float64)
            for name in ("input", "cache_read", "cache_write", "output", "reasoning")
        ),
        pl.Series("price_source", [r.source if r else None for r, _, _ in found], dtype=pl.String),
        pl.Series("_tiered", [tiered is not None for _, tiered, _ in found], dtype=pl.Boolean),
        pl.Series("_reason", [reason for _, _, reason in found], dtype=pl.String),
    )
    count = {name: pl.col(name).fill_null(0) for name in _COUNTS}
    reasoning = pl.min_horizontal(count["reasoning_tokens"], count["output_tokens"])
    cost = (
        pl.col("_request")
        + count["input_tokens"] * pl.col("_rate_input")
        + count["cache_read_tokens"] * pl.col("_rate_cache_read")
        + count["cache_write_tokens"] * pl.col("_rate_cache_write")
        + (count["output_tokens"] - reasoning) * pl.col("_rate_output")
        + reasoning * pl.col("_rate_reasoning")
    )
    if looked["_tiered"].any():
        tiered = pl.struct("_tiered", "provider", "model", "_minute", *_COUNTS).map_elements(
            lambda row: _tiered_cost(row, table), return_dtype=pl.Float64
        )
        cost = pl.when(pl.col("_tiered")).then(tiered).otherwise(cost)
    frame = frame.join(
        looked.lazy(), on=["provider", "model", "_minute"], how="left", nulls_equal=True, maintain_order="left"
    )
    finite = pl.col("_cost").is_finite()  # null where there is no price: then the lookup's reason
    return (
        frame.with_columns(cost.alias("_cost"))
        .with_columns(
            pl.when(finite).then(pl.col("_cost")).alias("cost_usd"),
            pl.when(finite).then(None).otherwise(pl.col("_reason").fill_null(OUT_OF_RANGE)).alias("unpriced_reason"),
        )
        .select(pl.exclude("^_.*$"))
    )


def _tiered_cost(row: dict[str, Any], table: PriceTable) -> float | None:
    """One request's cost by ``genai-prices`` itself (a price with tiers by request size)."""
    from genai_prices import Usage

    if not row["_tiered"]:
        return None
    price = table.tiered(row["provider"], row["model"], row["_minute"])
    uncached, out, read, write, thought = (row[name] or 0 for name in _COUNTS)
    usage = Usage(
        input_tokens=uncached + read + write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=out,
        output_reasoning_tokens=min(thought, out),
    )
    return float(price.calc_price(usage)["total_price"])


def request_cost(
    table: PriceTable,
    provider: str | None,
    model: str | None,
    time_ms: int | None,
    counts: Mapping[str, int | None],
) -> float | None:
    """One request's cost, the same float ``sample_costs`` gives its row (``None``: unpriced, for any reason).

    ``counts`` holds the ``SAMPLE_COLUMNS`` counts (``input_tokens`` ... ``reasoning_tokens``; a
    missing one is 0). For a single request outside a frame (a trace's LLM span, for one).

    Examples:
        >>> from subagent_catalog.prices import price_table
        >>> table = price_table({"p/m": {"input": 2, "output": 4}})
        >>> request_cost(table, "p", "m", 0, {"input_tokens": 1_000_000, "output_tokens": 0})
        2.0
        >>> request_cost(table, "p", "x", 0, {"input_tokens": 5}) is None
        True
        >>> request_cost(table, "p", "m", None, {"input_tokens": 5}) * 10**6  # a fixed price needs no time
        10.0
    """
    span = table.period(provider, model)
    minute = 0 if span == FOREVER else None if time_ms is None else (time_ms // _MINUTE_MS) // span * span
    rates, tiered, _ = table._lookup(provider, model, minute)
    if rates is None:
        return None
    uncached, out, read, write, thought = (counts.get(name) or 0 for name in _COUNTS)
    if tiered is not None:
        row = dict(zip(_COUNTS, (uncached, out, read, write, thought), strict=True))
        cost = _tiered_cost({"_tiered": True, "provider": provider, "model": model, "_minute": minute, **row}, table)
    else:
        reasoning = min(thought, out)
        cost = (
            rates.request
            + uncached * rates.input
            + read * rates.cache_read
            + write * rates.cache_write
            + (out - reasoning) * rates.output
            + reasoning * rates.reasoning
        )
    return cost if cost is not None and math.isfinite(cost) else None
