"""Decade bins for run sizes (duration, events, bytes, tokens), as ordered labels for bar charts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from subagent_catalog.analysis.runs import checked_total

BinnedMetric = Literal["duration", "events", "bytes", "tokens"]


@dataclass(frozen=True)
class Bins:
    """Left-closed bins: ``labels[i]`` holds ``edges[i-1] <= value < edges[i]``; ``missing`` labels nulls."""

    edges: tuple[int, ...]
    labels: tuple[str, ...]
    missing: str

    @property
    def order(self) -> tuple[str, ...]:
        """Every label in ascending order, the missing label last."""
        return (*self.labels, self.missing)


BINS: dict[BinnedMetric, Bins] = {
    "duration": Bins(
        (1_000, 10_000, 60_000, 600_000, 3_600_000),
        ("< 1 s", "1–10 s", "10 s–1 min", "1–10 min", "10 min–1 h", "≥ 1 h"),
        "(no own events)",
    ),
    "events": Bins((1, 10, 100, 1_000, 10_000), ("0", "1–9", "10–99", "100–999", "1k–10k", "≥ 10k"), "(not read)"),
    "bytes": Bins(
        (1 << 10, 10 << 10, 100 << 10, 1 << 20, 10 << 20),
        ("< 1 KiB", "1–10 KiB", "10–100 KiB", "100 KiB–1 MiB", "1–10 MiB", "≥ 10 MiB"),
        "(unknown)",
    ),
    "tokens": Bins(
        (1, 1_000, 10_000, 100_000, 1_000_000), ("0", "1–999", "1k–10k", "10k–100k", "100k–1M", "≥ 1M"), "(no usage)"
    ),
}
"""The bins of each metric (``tokens``: input + cache reads + cache writes + output, per session)."""


def binned(values: pl.Expr, metric: BinnedMetric) -> pl.Expr:
    """The bin label of each value (a string column; nulls get the metric's missing label).

    Examples:
        >>> frame = pl.DataFrame({"ms": [0, 999, 1_000, 7_200_000, None]})
        >>> frame.select(binned(pl.col("ms"), "duration")).to_series().to_list()
        ['< 1 s', '< 1 s', '1–10 s', '≥ 1 h', '(no own events)']
    """
    bins = BINS[metric]
    expr: Any = pl.when(values.is_null()).then(pl.lit(bins.missing))
    for edge, label in zip(bins.edges, bins.labels, strict=False):
        expr = expr.when(values < edge).then(pl.lit(label))
    result: pl.Expr = expr.otherwise(pl.lit(bins.labels[-1]))
    return result


def total_tokens() -> pl.Expr:
    """Input + cache reads + cache writes + output tokens of a session (null when it reported no usage).

    The sum is exact (``checked_total``: null past 2^63 - 1, never wrapped), as the run tables' ``tokens``.

    Examples:
        >>> frame = pl.DataFrame({"input_tokens": [10, None, 2**62], "output_tokens": [5, None, 2**62],
        ...                       "cache_read_tokens": [None, None, 0], "cache_write_tokens": [1, None, 0]})
        >>> frame.select(total_tokens())["tokens"].to_list()
        [16, None, None]
    """
    return checked_total("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens").alias("tokens")
