"""Trends per UTC day and per day and model (analysis.trends, run_summary.trends)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import polars as pl
import pytest

import subagent_catalog
from subagent_catalog import read_corpus, run_summary, trends, usage_by_model
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES, session_runs
from subagent_catalog.analysis.trends import TREND_SCHEMA, percentile, trend_rows
from subagent_catalog.frames.corpus import Corpus


@pytest.fixture(scope="module")
def sample() -> Corpus:
    return read_corpus("data/sample")


def _nearest_rank(values: list[int], q: float) -> int | None:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else None


def _day(ms: int | None) -> str:
    return "no time" if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d")


def test_trends_is_public_and_returns_the_schema(sample: Corpus) -> None:
    assert "trends" in subagent_catalog.__all__
    frame = trends(sample)
    assert frame.schema == pl.Schema(TREND_SCHEMA)
    assert trends(sample, by="model").schema == pl.Schema(TREND_SCHEMA)


def test_trends_by_day_counts_every_run_and_failure(sample: Corpus) -> None:
    days = trends(sample)
    sessions = sample.sessions
    assert int(days["runs"].sum()) == sessions.height
    assert int(days["failed"].sum()) == sessions.filter(pl.col("outcome").is_in(FAILED_OUTCOMES)).height
    assert days.equals(run_summary(sample).trends)


def test_trends_percentiles_match_an_independent_nearest_rank(sample: Corpus) -> None:
    sessions = sample.sessions.select(
        pl.coalesce("created_at_ms", "run_first_ms", "first_event_ms").alias("when"), "active_ms"
    )
    expected: dict[str, list[int]] = {}
    unknown: dict[str, int] = {}
    for when, active in sessions.iter_rows():
        key = _day(when)
        expected.setdefault(key, [])
        if active is None:
            unknown[key] = unknown.get(key, 0) + 1
        else:
            expected[key].append(active)
    for row in trends(sample).iter_rows(named=True):
        values = expected[row["bin"]]
        assert row["active_p50_ms"] == _nearest_rank(values, 0.5), row["bin"]
        assert row["active_p95_ms"] == _nearest_rank(values, 0.95), row["bin"]
        assert row["active_unknown"] == unknown.get(row["bin"], 0)


def test_trends_unknown_cost_is_a_lower_bound_never_zero(sample: Corpus) -> None:
    runs = session_runs(sample.sessions)
    days = trends(sample)
    assert int(days["cost_unknown"].sum()) == runs["cost_usd"].null_count()
    assert days["cost_usd_known"].sum() == pytest.approx(runs["cost_usd_known"].sum())
    with_unknown = days.filter(pl.col("cost_unknown") > 0)
    assert with_unknown.height > 0, "the sample has runs of unknown cost"
    assert with_unknown["cost_usd"].null_count() == with_unknown.height
    known = days.filter(pl.col("cost_unknown") == 0)
    assert (known["cost_usd"] == known["cost_usd_known"]).all()


def test_trends_by_model_splits_cost_and_tokens_by_the_model_that_served(sample: Corpus) -> None:
    models = trends(sample, by="model")
    usage = usage_by_model(sample, by="session")
    served = models.filter(pl.col("model").is_not_null())
    for row in usage.group_by("provider", "model").agg(pl.col("session_id").n_unique()).iter_rows():
        provider, model, sessions = row
        mine = served.filter((pl.col("provider") == provider) & (pl.col("model") == model))
        assert int(mine["runs"].sum()) == sessions
    assert served["cost_usd_known"].sum() == pytest.approx(usage["cost_usd_known"].sum())
    unserved = sample.sessions.height - usage["list_order"].n_unique()
    assert int(models.filter(pl.col("model").is_null())["runs"].sum()) == unserved


def test_trends_a_run_with_two_models_counts_under_each() -> None:
    runs = pl.DataFrame(
        {
            "list_order": [0],
            "created_ms": [0],
            "failed": [True],
            "active_ms": [5],
            "tokens": [30],
            "cost_usd": [None],
            "cost_usd_known": [0.5],
        },
        schema_overrides={"cost_usd": pl.Float64},
    )
    usage = pl.DataFrame(
        {
            "list_order": [0, 0],
            "provider": ["p", "p"],
            "model": ["a", "b"],
            "cost_usd": [0.5, None],
            "cost_usd_known": [0.5, 0.0],
            "input_tokens": [10, 20],
            "cache_read_tokens": [None, None],
            "cache_write_tokens": [None, None],
            "output_tokens": [None, None],
        },
        schema_overrides={"cache_read_tokens": pl.Int64, "cache_write_tokens": pl.Int64, "output_tokens": pl.Int64},
    )
    rows = trend_rows(runs, usage, by="model").select("model", "runs", "failed", "cost_usd", "cost_unknown", "tokens")
    assert rows.rows() == [("a", 1, 1, 0.5, 0, 10), ("b", 1, 1, None, 1, 20)]


def test_trends_hostile_times_go_to_labelled_bins_in_order() -> None:
    year1 = int((datetime(1, 1, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000)
    year9999 = int(
        (datetime(9999, 12, 31, 23, 0, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000
    )
    runs = pl.DataFrame(
        {
            "list_order": [0, 1, 2, 3, 4],
            "created_ms": [None, 2**62, year9999, year1, -(2**62)],
            "failed": [False] * 5,
            "active_ms": [None] * 5,
            "tokens": [None] * 5,
            "cost_usd": [None] * 5,
            "cost_usd_known": [0.0] * 5,
        },
        schema_overrides={"active_ms": pl.Int64, "tokens": pl.Int64, "cost_usd": pl.Float64},
    )
    days = trend_rows(runs, None)
    assert days["bin"].to_list() == ["0001-01-01", "9999-12-31", "out of range", "no time"]
    assert days["runs"].to_list() == [1, 1, 2, 1]
    assert days["active_p50_ms"].null_count() == 4 and days["active_unknown"].to_list() == [1, 1, 2, 1]
    assert days["tokens"].null_count() == 4 and days["tokens_unknown"].to_list() == [1, 1, 2, 1]
    assert days["cost_usd"].null_count() == 4 and days["cost_unknown"].to_list() == [1, 1, 2, 1]


def test_trends_token_sum_past_64_bits_is_null_never_wrapped() -> None:
    runs = pl.DataFrame(
        {
            "list_order": [0, 1],
            "created_ms": [0, 0],
            "failed": [False, False],
            "active_ms": [1, 2],
            "tokens": [2**62, 2**62],
            "cost_usd": [0.0, 0.0],
            "cost_usd_known": [0.0, 0.0],
        }
    )
    assert trend_rows(runs, None)["tokens"].to_list() == [None]


def test_trends_of_an_empty_corpus_is_empty(tmp_path: object) -> None:
    empty = read_corpus(str(tmp_path))
    assert trends(empty).is_empty() and trends(empty, by="model").is_empty()
    assert run_summary(empty).trends.schema == pl.Schema(TREND_SCHEMA)


def test_percentile_is_a_value_the_column_holds() -> None:
    frame = pl.DataFrame({"ms": list(range(1, 21))})
    assert frame.select(percentile("ms", 0.95)).item() == 19 == _nearest_rank(list(range(1, 21)), 0.95)
    assert frame.select(percentile("ms", 0.5)).item() == 10
