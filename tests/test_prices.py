"""Token prices: user tables (mapping, TOML, CSV), genai-prices lookups, and costs equal to genai-prices' own."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from genai_prices import Usage, data_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from subagent_catalog import read_corpus, unpriced_models, usage_by_model, usage_samples
from subagent_catalog.cli import main as cli_main
from subagent_catalog.errors import PricesError
from subagent_catalog.prices import (
    PROVIDER_ALIASES,
    SAMPLE_COLUMNS,
    ModelPrice,
    PriceTable,
    price_table,
    request_cost,
    sample_costs,
)
from subagent_catalog.synth.writer import header, write_session

DAY_MS = 86_400_000
TOKEN_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


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


# --------------------------------------------------------------------------- times a price table cannot date (#42.3)

YEAR_10000_MS = int((datetime(9999, 12, 31, 23, 59, tzinfo=UTC).timestamp() + 60) * 1000)  # 10000-01-01T00:00Z
DATED = ("deepseek-official", "deepseek-v4-flash")  # dated prices and peak hours: its price changes with time


def _usage_log(root: Path, session_id: str, time_ms: int, model: tuple[str, str] = DATED, tokens: int = 1000) -> None:
    """A one-step session whose step (served by ``model``) reported ``tokens`` in and out at ``time_ms``."""
    provider, name = model
    source = {"kind": "model", "provider": provider, "model": name}
    message = {"id": f"m-{session_id}", "role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    events: list[dict[str, Any]] = [
        {"type": "turn/start", "seq": 0, "time": time_ms, "data": {"turn": 1}},
        {"type": "step/start", "seq": 1, "time": time_ms, "data": {"turn": 1, "step": 1}},
        {
            "type": "assistant/message",
            "seq": 2,
            "time": time_ms,
            "data": {
                "turn": 1,
                "step": 1,
                "message": {**message, "source": source},
                "usage": {"inputTokens": tokens, "outputTokens": tokens},
            },
            "surfaceOp": "append",
        },
        {"type": "step/end", "seq": 3, "time": time_ms, "data": {"turn": 1, "step": 1}},
        {"type": "turn/end", "seq": 4, "time": time_ms, "data": {"turn": 1, "reason": {"kind": "completed"}}},
    ]
    write_session(root, header(session_id, created_at=1_750_000_000_000, cwd="/w"), events, "none")


def _sample_frame(rows: list[dict[str, Any]]) -> pl.LazyFrame:
    return pl.LazyFrame(
        [{"cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0, **row} for row in rows],
        schema={name: pl.String if name in ("provider", "model") else pl.Int64 for name in SAMPLE_COLUMNS},
    )


def test_a_sample_dated_year_10000_is_unpriced_with_a_reason_and_the_rest_of_the_corpus_is_priced(
    tmp_path: Path,
) -> None:
    _usage_log(tmp_path, "today", 1_750_000_000_000)
    _usage_log(tmp_path, "far-future", YEAR_10000_MS)
    corpus = read_corpus(tmp_path, cache=False)  # raised "ValueError: year 10000 is out of range"
    costs = dict(corpus.sessions.select("session_id", "cost_usd").rows())
    expected = _genai(
        *DATED, 1_750_000_000_000, {**dict.fromkeys(TOKEN_COUNTS, 0), "input_tokens": 1000, "output_tokens": 1000}
    )
    assert costs["today"] == pytest.approx(expected) and costs["far-future"] is None
    samples = usage_samples(corpus).select("session_id", "cost_usd", "unpriced_reason").sort("session_id")
    assert samples.rows() == [("far-future", None, "time out of range"), ("today", costs["today"], None)]
    assert unpriced_models(corpus).rows() == [(*DATED, 1, 1, "time out of range")]
    assert dict(usage_by_model(corpus).select("session_id", "cost_usd").rows()) == costs


@pytest.mark.parametrize(
    ("time_ms", "reason"),
    [
        (YEAR_10000_MS, "time out of range"),
        (YEAR_10000_MS - 60_000, None),  # 9999-12-31T23:59Z: the last minute a table can date
        (int(datetime(1, 1, 1, tzinfo=UTC).timestamp() * 1000), None),  # the first one
        (int(datetime(1, 1, 1, tzinfo=UTC).timestamp() * 1000) - 1, "time out of range"),
        (2**53 - 1, "time out of range"),  # the largest safe integer a log may hold
        (-(2**53 - 1), "time out of range"),
        (-1, None),  # 1969-12-31T23:59:59.999Z: a date
        (None, "no time"),  # a sample without a time, whose price depends on it
    ],
)
def test_times_a_dated_price_cannot_date_are_unpriced_with_a_reason(time_ms: int | None, reason: str | None) -> None:
    table = PriceTable()
    costs = sample_costs(
        _sample_frame([{"provider": DATED[0], "model": DATED[1], "time_ms": time_ms, "input_tokens": 1000}]), table
    )
    cost, why = costs.select("cost_usd", "unpriced_reason").collect().row(0)
    assert why == reason
    assert (cost is None) == (reason is not None)
    counts = {"input_tokens": 1000}
    assert request_cost(table, *DATED, time_ms, counts) == cost  # one request's cost: the same answer


@pytest.mark.parametrize("time_ms", [YEAR_10000_MS, 2**53 - 1, -(2**53 - 1), None])
def test_a_price_that_never_changes_needs_no_date(time_ms: int | None) -> None:
    """A user's price and a fixed genai-prices price apply at any time, a missing one included."""
    rows = [
        {"provider": "mock", "model": "m", "time_ms": time_ms, "input_tokens": 10**6},
        {"provider": "anthropic", "model": "claude-sonnet-4-5", "time_ms": time_ms, "input_tokens": 10**6},
    ]
    costs = sample_costs(_sample_frame(rows), price_table({"mock/m": {"input": 3, "output": 1}})).collect()
    assert costs["cost_usd"][0] == 3.0 and costs["cost_usd"][1] is not None
    assert costs["unpriced_reason"].to_list() == [None, None]


def test_runs_and_sql_over_a_corpus_with_a_year_10000_log(tmp_path: Path) -> None:
    """The commands the error took down: the priced session keeps its cost, the other one is unpriced."""
    _usage_log(tmp_path, "today", 1_750_000_000_000)
    _usage_log(tmp_path, "far-future", YEAR_10000_MS)
    runner = CliRunner()
    for args in (["runs", str(tmp_path), "-q"], ["runs", str(tmp_path), "-q", "-t", "models", "-f", "csv"]):
        done = runner.invoke(cli_main, args)
        assert done.exit_code == 0, done.output
    query = "select session_id, cost_usd from usage_by_model order by session_id"
    done = runner.invoke(cli_main, ["sql", str(tmp_path), query, "-q", "-f", "csv"])
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[1:] == ["far-future,", f"today,{_first_cost(tmp_path)!r}"]


def _first_cost(root: Path) -> float:
    return float(read_corpus(root, cache=False).sessions.filter(pl.col("session_id") == "today")["cost_usd"][0])


# --------------------------------------------------------------------------- price files that are not files (#42.8)

REPO = Path(__file__).resolve().parents[1]


def _cli_child(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a child interpreter (a read that blocks or eats memory cannot take the test run down)."""
    return subprocess.run(
        [sys.executable, "-m", "subagent_catalog", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), "SUBAGENT_CATALOG_CACHE": str(cwd / "cache")},
        check=False,
    )


def _one_error_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert done.returncode in (1, 2) and len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert all(needle in errors[0] for needle in needles), errors[0]
    return errors[0]


def test_a_price_table_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "prices.toml"
    os.mkfifo(fifo)
    with pytest.raises(PricesError, match=r"not a regular file \(a FIFO\)"):
        price_table(fifo)  # opened without blocking: never waits for a writer


def test_a_price_table_that_is_a_device_is_refused_unread() -> None:
    with pytest.raises(PricesError, match=r"not a regular file \(a character device\)"):
        price_table("/dev/zero")  # read until MemoryError


def test_a_price_table_over_the_size_bound_is_refused(tmp_path: Path) -> None:
    from subagent_catalog.prices import MAX_TABLE_BYTES

    path = tmp_path / "p.toml"
    path.write_bytes(b"# padding\n" * (MAX_TABLE_BYTES // 10) + b'["m"]\ninput = 1\noutput = 1\n')
    with pytest.raises(PricesError, match="larger than 1 MiB"):
        price_table(path)
    path.write_bytes(b"#" * (MAX_TABLE_BYTES - 30) + b'\n["m"]\ninput = 1\noutput = 1\n')  # just under: read
    assert price_table(path).user["m"].input == 1


@pytest.mark.parametrize(
    ("option", "needle"),
    [
        (["runs", "{root}", "--prices", "{path}"], "cannot read the price table"),
        (["otel", "{root}", "-o", "{out}", "--prices", "{path}"], "cannot read the price table"),
        (["list", "{root}", "P", "--live", "{path}"], "cannot read"),
        (["check", "{root}", "--baseline", "{path}"], "cannot read baseline"),
    ],
)
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_every_user_given_input_file_is_checked_before_it_is_read(
    tmp_path: Path, option: list[str], needle: str, kind: str
) -> None:
    """A FIFO hung the command forever and /dev/zero was read until MemoryError: now one error line each."""
    _usage_log(tmp_path / "corpus", "P", 1_750_000_000_000)
    path = tmp_path / "input.toml"
    if kind == "fifo":
        os.mkfifo(path)
    args = [
        part.format(root=tmp_path / "corpus", path=path if kind == "fifo" else "/dev/zero", out=tmp_path / "o.jsonl")
        for part in option
    ]
    done = _cli_child([*args, "-q"], tmp_path)
    _one_error_line(done, needle, "not a regular file", "FIFO" if kind == "fifo" else "character device")


# --------------------------------------------------------------------------- malformed tables (#42.12)


@pytest.mark.parametrize(
    ("name", "data", "where"),
    [
        ("p.csv", b"model,input,output\nm,1,2,3\n", "line 2: 4 fields where the header has 3"),  # was a TypeError
        ("p.csv", b"model,input,output\nm,1\n", "line 2: 2 fields where the header has 3"),
        ("p.csv", b"model,input,output\nm,1,2\nn\xff,1,2\n", "line 3: not UTF-8"),  # was a UnicodeDecodeError
        ("p.toml", b'["m"]\ninput = 1\noutput = 1\n\n["n\xc3"]\n', "line 5: not UTF-8"),
        ("p.csv", b"model,input,output\nm,1,2\nm,3,4\n", "line 3: 'm' again (first on line 2)"),
        ("p.csv", b"model,input,input\nm,1,2\n", "line 1: a column twice"),
        ("p.csv", b"model,input,output,fast\nm,1,2,3\n", "line 1: an unknown column 'fast'"),
        ("p.csv", b'model,input,output\n"m,1,2\n', "not CSV"),  # an unterminated quote
        ("p.csv", b"model,input,output\nm,1," + b"9" * 200_000 + b"\n", "line 2: not CSV (field larger than"),
        ("p.csv", b"model,input,output\n,1,2\n", "line 2: a model name must be a non-empty string"),
        ("p.csv", b"model,input,output\nm,1,nan\n", "line 2: price of 'm': output: Input should be a finite number"),
        ("p.csv", b"model,input,output\nm,1,0x10\n", "line 2: the output price of 'm' is not a number: '0x10'"),
        ("p.toml", b'[m]\ninput = 1\noutput = 1\n\n["n"]\ninput = "1"\noutput = 2\n', "line 5: price of 'n': input: "),
        ("p.toml", b"m.input = 1\nm.output = true\n", "line 1: price of 'm': output: Input should be a valid number"),
        ("p.toml", b'["m"]\ninput = 1\noutput = 1\n[n]\ninput = 1\n', "line 4: price of 'n': output: Field required"),
        ("p.toml", b"m = [1, 2]\n", "line 1: the price of 'm' is not a table of prices"),
        ("p.toml", b"[m]\ninput = 1\n[m]\noutput = 1\n", "not TOML (Cannot declare ('m',) twice (at line 3"),
        ("p.toml", b"a" + b".a" * 40_000 + b" = 1\n", "line 1: more than 32 dots outside quotes"),  # 1.5 GB to parse
        ("p.toml", b"a = " + b"[" * 100_000 + b"\n", "not"),  # nested too deeply, or not TOML
        ("p.toml", b"x = 1\x00\n", "not TOML"),
    ],
)
def test_every_malformed_table_is_a_prices_error_naming_the_file_and_line(
    tmp_path: Path, name: str, data: bytes, where: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(PricesError) as caught:
        price_table(path)
    assert str(caught.value).startswith(str(path)) and where in str(caught.value)
    assert caught.value.hint


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        ({1: {"input": 1, "output": 1}}, "a model name must be a non-empty string, not 1"),
        ({" ": {"input": 1, "output": 1}}, "a model name must be a non-empty string"),
        ({"m": 3}, "the price of 'm' is not a table of prices"),
        ({"m": {"input": "1", "output": 1}}, "input: Input should be a valid number"),  # a string is not a price
        ({"m": {"input": True, "output": 1}}, "input: Input should be a valid number"),
        ({"m": {"input": 10**400, "output": 1}}, "input: "),
        (["m"], "a price table is a mapping or the path of a TOML or CSV file, not list"),
        (b"prices.toml", "not bytes"),
    ],
)
def test_a_malformed_mapping_is_a_prices_error_naming_the_entry(prices: Any, message: str) -> None:
    with pytest.raises(PricesError, match=re.escape(message)) as caught:
        price_table(prices)
    assert caught.value.hint


def test_a_byte_order_mark_and_blank_lines_are_read(tmp_path: Path) -> None:
    csv = tmp_path / "p.csv"
    csv.write_bytes(b"\xef\xbb\xbf model , input, output\r\n\r\n m ,1, 2\r\n")
    toml = tmp_path / "p.toml"
    toml.write_bytes(b'\xef\xbb\xbf["m"]\ninput = 1\noutput = 2\n')
    for path in (csv, toml):
        assert price_table(path).user["m"] == ModelPrice(input=1, output=2)


def test_the_cli_names_the_line_of_a_malformed_csv(tmp_path: Path) -> None:
    _usage_log(tmp_path / "corpus", "P", 1_750_000_000_000)
    path = tmp_path / "p.csv"
    path.write_bytes(b"model,input,output\nm,1,2,3\n")
    done = CliRunner().invoke(cli_main, ["runs", str(tmp_path / "corpus"), "--prices", str(path), "-q"])
    assert done.exit_code == 1 and "internal error" not in done.output
    assert f"Error: {path}, line 2: 4 fields where the header has 3 (hint: " in done.output


# --------------------------------------------------------------------------- prices that overflow a cost (#42.13)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("input = 1e300\noutput = 1", "input: Input should be less than or equal to 1000000"),
        ("input = inf\noutput = 1", "input: Input should be a finite number"),
        ("input = nan\noutput = 1", "input: Input should be a finite number"),
        ("input = 1\noutput = -inf", "output: Input should be "),
        ("input = 1\noutput = 1\ncache_read = 1_000_001", "cache_read: Input should be less than or equal to 1000000"),
    ],
)
def test_a_price_that_is_not_finite_or_absurd_is_refused_at_load(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "p.toml"
    path.write_text(f'["m"]\n{text}\n')
    with pytest.raises(PricesError, match=re.escape(message)):
        price_table(path)


def test_the_largest_price_times_the_largest_count_is_a_finite_cost() -> None:
    from subagent_catalog.prices import MAX_PRICE

    counts = dict.fromkeys(TOKEN_COUNTS, 2**53 - 1)
    table = price_table({"p/m": dict.fromkeys(("input", "output", "cache_read", "cache_write"), MAX_PRICE)})
    costs = sample_costs(_sample_frame([{"provider": "p", "model": "m", "time_ms": 0, **counts}]), table).collect()
    assert costs["cost_usd"][0] == pytest.approx(4 * (2**53 - 1) * MAX_PRICE / 1e6)  # reasoning is in output
    assert costs["unpriced_reason"][0] is None


def _overflowing_table() -> PriceTable:
    """A table whose entry overflows a cost: only by editing a checked table after it was made."""
    table = price_table({"deepseek-official/deepseek-v4-flash": {"input": 1, "output": 1}})
    table.user["deepseek-official/deepseek-v4-flash"] = ModelPrice.model_construct(  # type: ignore[index]
        input=1e300, output=1.0, cache_read=None, cache_write=None
    )
    return table


def test_a_made_table_is_checked_too() -> None:
    with pytest.raises(PricesError, match="less than or equal to 1000000"):
        PriceTable({"m": ModelPrice.model_construct(input=1e300, output=1.0, cache_read=None, cache_write=None)})


def test_a_cost_that_is_not_finite_is_unpriced_with_a_reason_in_every_output(tmp_path: Path) -> None:
    """inf was shown in the API, text and CSV, but null in JSON: now null everywhere, with its reason."""
    from subagent_catalog.analysis.run_summary import run_summary
    from subagent_catalog.views.run_format import runs_json, runs_lines

    _usage_log(tmp_path, "today", 1_750_000_000_000, tokens=2**53 - 1)
    table = _overflowing_table()
    corpus = read_corpus(tmp_path, cache=False, prices=table)
    assert corpus.sessions["cost_usd"].to_list() == [None]
    samples = usage_samples(corpus, prices=table)
    assert samples.select("cost_usd", "price_source", "unpriced_reason").row(0) == (
        None,
        "user table: deepseek-official/deepseek-v4-flash",
        "cost out of range",
    )
    assert unpriced_models(corpus, prices=table)["reason"].to_list() == ["cost out of range"]
    models = usage_by_model(corpus, prices=table, by="model")
    assert models["cost_usd"].to_list() == [None]
    head, row = models.write_csv().splitlines()
    assert dict(zip(head.split(","), row.split(","), strict=True))["cost_usd"] == ""  # an empty cell, never inf
    assert request_cost(table, *DATED, 1_750_000_000_000, dict.fromkeys(TOKEN_COUNTS, 2**53 - 1)) is None
    runs = run_summary(corpus, prices=table)
    text = "\n".join(runs_lines(runs))
    assert "inf" not in text and "deepseek-official/deepseek-v4-flash (cost out of range)" in text
    facts = json.loads(json.dumps(runs_json(runs), default=str, allow_nan=False))
    assert facts["unpriced_models"][0]["reason"] == "cost out of range"
    assert facts["totals"]["cost_usd"] is None or math.isfinite(facts["totals"]["cost_usd"])
