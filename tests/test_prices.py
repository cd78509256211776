"""Token prices: user tables (mapping, TOML, CSV), genai-prices lookups, and costs equal to genai-prices' own."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from genai_prices import Usage, data_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from subagent_catalog.errors import PricesError
from subagent_catalog.prices import PROVIDER_ALIASES, PriceTable, price_table, sample_costs

DAY_MS = 86_400_000


def _costs(table: PriceTable, rows: list[dict[str, object]]) -> list[float | None]:
    frame = pl.LazyFrame(
        rows,
        schema={
            "provider": pl.String,
            "model": pl.String,
            "time_ms": pl.Int64,
            "input_tokens": pl.Int64,
            "output_tokens": pl.Int64,
            "cache_read_tokens": pl.Int64,
            "cache_write_tokens": pl.Int64,
            "reasoning_tokens": pl.Int64,
        },
    )
    return list(sample_costs(frame, table).collect()["cost_usd"])


def _genai(provider: str, model: str, time_ms: int, counts: dict[str, int]) -> float:
    """genai-prices' own price of one request with dsh's counts (input is uncached: genai's input is the total)."""
    _, info = data_snapshot.get_snapshot().find_provider_model(
        model, None, PROVIDER_ALIASES.get(provider, provider), None
    )
    price = info.get_prices(datetime.fromtimestamp(time_ms / 1000, tz=UTC))
    usage = Usage(
        input_tokens=counts["input_tokens"] + counts["cache_read_tokens"] + counts["cache_write_tokens"],
        cache_read_tokens=counts["cache_read_tokens"],
        cache_write_tokens=counts["cache_write_tokens"],
        output_tokens=counts["output_tokens"],
        output_reasoning_tokens=min(counts["reasoning_tokens"], counts["output_tokens"]),
    )
    return float(price.calc_price(usage)["total_price"])


MODELS = [
    ("deepseek-official", "deepseek-v4-flash"),  # dsh's route id, dated and time-of-day prices
    ("deepseek-official", "deepseek-v4-pro"),
    ("deepseek", "deepseek-chat"),
    ("anthropic", "claude-sonnet-4-5"),  # tiered by request size: priced request by request
    ("perplexity", "sonar"),  # a price per request as well as per token
]


@settings(max_examples=150, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    time_ms=st.integers(1_700_000_000_000, 1_800_000_000_000),
    counts=st.fixed_dictionaries(
        {
            name: st.integers(0, 400_000)
            for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
        }
    ),
)
def test_costs_equal_genai_prices_own_calculation(model: tuple[str, str], time_ms: int, counts: dict[str, int]) -> None:
    provider, name = model
    (cost,) = _costs(PriceTable(), [{"provider": provider, "model": name, "time_ms": time_ms, **counts}])
    assert cost == pytest.approx(_genai(provider, name, time_ms, counts), rel=1e-9, abs=1e-12)


def test_deepseek_peak_hours_cost_more_than_off_peak() -> None:
    day = datetime(2026, 11, 2, tzinfo=UTC).timestamp() * 1000  # a Monday
    counts = {"input_tokens": 10**6, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}
    off, peak = _costs(
        PriceTable(),
        [
            {
                "provider": "deepseek-official",
                "model": "deepseek-v4-flash",
                "time_ms": int(day + h * 3_600_000),
                **counts,
            }
            for h in (12, 2)  # 12:00 UTC off-peak, 02:00 UTC in the 01:00-04:00 peak window
        ],
    )
    assert off is not None and peak is not None and peak > off


def test_unknown_providers_and_models_have_no_price() -> None:
    table = PriceTable()
    assert table.rates("mock", "mock", 0) is None
    assert table.rates("deepseek-official", "no-such-model", 0) is None
    assert table.rates(None, "deepseek-chat", 0) is None  # no route: never guessed
    assert table.rates("deepseek-official", None, 0) is None
    assert _costs(table, [{"provider": "mock", "model": "m", "time_ms": 0, "input_tokens": 5}]) == [None]


def test_a_user_table_overrides_and_extends(tmp_path: Path) -> None:
    table = price_table(
        {"deepseek-official/deepseek-v4-flash": {"input": 1, "output": 3}, "mock": {"input": 0, "output": 0}}
    )
    counts = {"input_tokens": 2_000_000, "output_tokens": 1_000_000, "cache_read_tokens": 1_000_000}
    flash, mock = _costs(
        table,
        [
            {"provider": "deepseek-official", "model": "deepseek-v4-flash", "time_ms": 0, **counts},
            {"provider": "mock", "model": "mock", "time_ms": 0, **counts},
        ],
    )
    assert flash == pytest.approx(2 + 1 + 3)  # a missing cache price is the input price
    assert mock == 0.0  # priced at zero by the user: a real $0, not an unknown


def test_toml_and_csv_tables(tmp_path: Path) -> None:
    toml = tmp_path / "p.toml"
    toml.write_text('["openrouter/deepseek/deepseek-v4-flash"]\ninput = 0.2\noutput = 0.4\ncache_read = 0.01\n')
    rates = price_table(toml).rates("openrouter", "deepseek/deepseek-v4-flash", 0)
    assert rates is not None and rates.cache_read == pytest.approx(0.01e-6)
    csv = tmp_path / "p.csv"
    csv.write_text("model,input,output,cache_read,cache_write\nmock/mock,1,2,,0.5\n")
    rates = price_table(csv).rates("mock", "mock", 0)
    assert rates is not None and (rates.cache_read, rates.cache_write) == pytest.approx((1e-6, 0.5e-6))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("p.toml", "not = [toml", "not TOML"),
        ("p.toml", '["m"]\ninput = 1\n', "output: Field required"),
        ("p.toml", '["m"]\ninput = 1\noutput = 1\nfast = 2\n', "fast: Extra inputs are not permitted"),
        ("p.toml", '["m"]\ninput = -1\noutput = 1\n', "greater than or equal to 0"),
        ("p.toml", "m = 3\n", "is not a table of prices"),
        ("p.csv", "name,input\nm,1\n", "no 'model' column"),
        ("p.csv", "model,input,output\nm,cheap,1\n", "is not a number"),
    ],
)
def test_bad_tables_fail_with_the_entry_named(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PricesError, match=message):
        price_table(path)


def test_a_missing_table_file_fails() -> None:
    with pytest.raises(PricesError, match="cannot read the price table"):
        price_table("/nonexistent/prices.toml")


def test_a_read_with_a_bad_table_fails_before_reading(tmp_path: Path) -> None:
    from subagent_catalog import read_corpus

    with pytest.raises(PricesError):
        read_corpus(tmp_path / "missing-root", prices={"m": {"input": "x", "output": 1}})


def test_genai_prices_knows_deepseeks_cache_hit_price() -> None:
    """DeepSeek bills a cache hit (cache read) far below a miss (uncached input); the table must say so."""
    table = PriceTable()
    for model in ("deepseek-v4-flash", "deepseek-v4-pro", "deepseek-chat", "deepseek-reasoner"):
        rates = table.rates("deepseek-official", model, 29_000_000)  # 2025-02-20, off-peak
        assert rates is not None, model
        assert 0 < rates.cache_read < rates.input / 2, model
        assert rates.output > rates.input, model


@pytest.mark.parametrize(("model", "hour", "minute"), [("deepseek-chat", 16, 30), ("deepseek-v4-flash", 1, 0)])
def test_a_price_period_boundary_splits_the_minutes_on_each_side(model: str, hour: int, minute: int) -> None:
    """Costs are looked up per price period, not per minute: the minutes either side of a boundary still differ."""
    at = int(datetime(2026, 11, 3, hour, minute, tzinfo=UTC).timestamp() * 1000)
    counts = {"input_tokens": 10**6, "output_tokens": 10**6, "cache_read_tokens": 0, "cache_write_tokens": 0}
    rows = [{"provider": "deepseek", "model": model, "time_ms": at + dt, **counts} for dt in (-60_000, -1, 0, 59_999)]
    costs = _costs(PriceTable(), rows)
    expected = [_genai("deepseek", model, row["time_ms"], {**counts, "reasoning_tokens": 0}) for row in rows]
    assert costs == pytest.approx(expected)
    assert costs[1] != costs[2]  # the price changes at the boundary
