"""What tokens cost: a price table, and the cost of usage samples, computed over whole columns.

The default table is ``genai-prices``' (its data ships inside the package; nothing is fetched),
looked up by provider id (dsh's route ids are mapped by ``PROVIDER_ALIASES``) and model name, at
the UTC minute of each sample, so a provider's dated and time-of-day prices (DeepSeek's off-peak
hours, for one) apply as the provider bills them. A user table extends or overrides it: a mapping
(or a TOML or CSV file) from ``"provider/model"`` or ``"model"`` to USD per million tokens
``{"input", "output", "cache_read", "cache_write"}``; a missing cache price is the input price.

Counts follow dsh's ``TokenUsage``: ``input_tokens`` is uncached input only, cache reads and writes are
billed input of their own (billed input = input + cache read + cache write), reasoning tokens are part of
the output (priced apart only where the provider prices them apart). A sample whose model no table
knows has no cost (``null``), never a cost of $0: ``unpriced`` lists such models.
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from subagent_catalog.errors import PricesError

PROVIDER_ALIASES: dict[str, str] = {"deepseek-official": "deepseek"}
"""dsh provider route ids whose ``genai-prices`` provider id differs."""

_MILLION = 1_000_000
_MINUTE_MS = 60_000


class ModelPrice(BaseModel):
    """One model's prices in USD per million tokens (a user table's entry)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)
    cache_read: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False)


@dataclass(frozen=True)
class Rates:
    """A linear price: USD per request plus USD per token of each kind (``source`` says where it comes from)."""

    request: float
    input: float
    cache_read: float
    cache_write: float
    output: float
    reasoning: float
    source: str


Prices = Mapping[str, Mapping[str, float | None]] | str | os.PathLike[str]
"""A user price table: a mapping, or the path of a TOML or CSV file (see the module docstring)."""


@dataclass
class PriceTable:
    """Where prices come from: a user table first, then ``genai-prices`` (unless ``genai`` is off).

    Examples:
        >>> table = PriceTable({"mock/mock": ModelPrice(input=1.0, output=2.0)})
        >>> table.rates("mock", "mock", 0).output * 1_000_000
        2.0
        >>> table.rates("mock", "other", 0) is None
        True
        >>> round(PriceTable().rates("deepseek-official", "deepseek-v4-flash", 0).output * 1_000_000, 4)
        0.28
    """

    user: Mapping[str, ModelPrice] = field(default_factory=dict)
    genai: bool = True
    _cache: dict[tuple[str | None, str | None, int], tuple[Rates | None, Any]] = field(default_factory=dict, repr=False)
    _models: dict[tuple[str, str], tuple[str, Any] | None] = field(default_factory=dict, repr=False)
    _periods: dict[int, tuple[Any, Rates, Any]] = field(default_factory=dict, repr=False)

    def digest(self) -> str:
        """What the costs depend on: the user table's entries and the ``genai-prices`` version in use.

        Examples:
            >>> PriceTable().digest() == PriceTable().digest() != PriceTable(genai=False).digest()
            True
        """
        from genai_prices import __version__

        parts = [f"genai={__version__ if self.genai else '-'}"]
        parts += [f"{name}={entry.model_dump_json()}" for name, entry in sorted(self.user.items())]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def rates(self, provider: str | None, model: str | None, minute: int) -> Rates | None:
        """The rates of ``provider``/``model`` at UTC minute ``minute`` (ms since the epoch // 60,000), or ``None``."""
        return self._lookup(provider, model, minute)[0]

    def tiered(self, provider: str | None, model: str | None, minute: int) -> Any:
        """The ``genai-prices`` model price when its price depends on the request's size (tiers), else ``None``."""
        return self._lookup(provider, model, minute)[1]

    def _lookup(self, provider: str | None, model: str | None, minute: int) -> tuple[Rates | None, Any]:
        """(rates, the price itself when it has tiers) of a model at a minute, found once."""
        key = (provider, model, minute)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._find(provider, model, minute)
        return found

    def _find(self, provider: str | None, model: str | None, minute: int) -> tuple[Rates | None, Any]:
        if model is None:
            return None, None
        if self.user:
            for name in (f"{provider}/{model}", model):
                entry = self.user.get(name)
                if entry is not None:
                    return _user_rates(entry, f"user table: {name}"), None
        if not self.genai or provider is None:
            return None, None
        located = self._genai_model(PROVIDER_ALIASES.get(provider, provider), model)
        if located is None:
            return None, None
        name, info = located
        # one of the model's few price periods (a fixed price needs no time at all)
        price = info.prices if _fixed(info) else info.get_prices(datetime.fromtimestamp(minute * 60, tz=UTC))
        period = self._periods.get(id(price))
        if period is None:
            period = self._periods[id(price)] = (price, _genai_rates(price, name), _tiers(price))
        return period[1], period[2]

    def period(self, provider: str | None, model: str | None) -> int:
        """Minutes over which the model's price cannot change (``FOREVER`` for a fixed price, 1 when unsure).

        Examples:
            >>> PriceTable().period("deepseek-official", "deepseek-v4-flash")  # its peak hours start on the hour
            60
            >>> PriceTable().period("deepseek", "deepseek-chat")  # its off-peak hours start at 16:30
            30
            >>> PriceTable().period("mock", "mock") == FOREVER
            True
        """
        if (
            model is None
            or provider is None
            or not self.genai
            or (self.user and (f"{provider}/{model}" in self.user or model in self.user))
        ):
            return FOREVER
        located = self._genai_model(PROVIDER_ALIASES.get(provider, provider), model)
        return FOREVER if located is None or _fixed(located[1]) else _period(located[1])

    def _genai_model(self, provider: str, model: str) -> tuple[str, Any] | None:
        """(source name, ``genai-prices`` model info) of a provider's model, looked up once."""
        key = (provider, model)
        if key not in self._models:
            self._models[key] = _genai_model(provider, model)
        return self._models[key]


FOREVER = 1 << 40
"""A period no price changes within (minutes): a fixed price, or no price at all."""


def _period(info: Any) -> int:
    """The largest number of minutes dividing every UTC boundary of a model's dated and daily prices (1 if unsure)."""
    from genai_prices.types import StartDateConstraint, TimeOfDateConstraint

    step = 1440  # a date changes at UTC midnight
    for conditional in info.prices:
        constraint = conditional.constraint
        if constraint is None or isinstance(constraint, StartDateConstraint):
            continue
        if not isinstance(constraint, TimeOfDateConstraint):
            return 1  # a kind of period this code does not know: price every minute
        for moment in (constraint.start_time, constraint.end_time):
            offset = moment.utcoffset()
            seconds = moment.hour * 3600 + moment.minute * 60 + moment.second
            seconds -= int(offset.total_seconds()) if offset is not None else 0
            if seconds % 60 or moment.microsecond:
                return 1
            step = math.gcd(step, (seconds // 60) % 1440)
    return step or 1


def _fixed(info: Any) -> bool:
    """Whether a ``genai-prices`` model has one price at every time (no dated or daily periods).

    (Its price variants apply only to a request context, which costs here never have.)
    """
    from genai_prices.types import ModelPrice as GenaiPrice

    return isinstance(info.prices, GenaiPrice)


def _tiers(price: Any) -> Any:
    """The price when any of its units has tiers by request size, else ``None``."""
    from genai_prices.types import TieredPrices

    return price if any(isinstance(value, TieredPrices) for value in vars(price).values()) else None


def _user_rates(entry: ModelPrice, source: str) -> Rates:
    per = 1 / _MILLION
    cache_read = entry.input if entry.cache_read is None else entry.cache_read
    cache_write = entry.input if entry.cache_write is None else entry.cache_write
    return Rates(
        0.0, entry.input * per, cache_read * per, cache_write * per, entry.output * per, entry.output * per, source
    )


def _genai_model(provider: str, model: str) -> tuple[str, Any] | None:
    """(``genai-prices <version>: provider/model``, its model info), or ``None`` when it does not know the model."""
    from genai_prices import __version__, data_snapshot

    try:
        _, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
    except LookupError:
        return None
    return f"genai-prices {__version__}: {provider}/{info.id}", info


def _genai_rates(price: Any, source: str) -> Rates:
    """A ``genai-prices`` model price (without tiers) as a linear one, read off its own calculation."""
    from genai_prices import Usage

    def total(**counts: int) -> float:
        return float(price.calc_price(Usage(**counts))["total_price"])

    base = total()
    unit = _MILLION

    def rate(**counts: int) -> float:
        return (total(**counts) - base) / unit

    return Rates(
        base,
        rate(input_tokens=unit),
        rate(input_tokens=unit, cache_read_tokens=unit),
        rate(input_tokens=unit, cache_write_tokens=unit),
        rate(output_tokens=unit),
        rate(output_tokens=unit, output_reasoning_tokens=unit),
        source,
    )


def price_table(prices: Prices | PriceTable | None = None) -> PriceTable:
    """The price table ``prices`` names: ``None`` for ``genai-prices`` alone, a mapping or a file to extend it.

    Raises:
        PricesError: the file is missing or unreadable, or an entry is malformed.

    Examples:
        >>> table = price_table({"deepseek-v4-flash": {"input": 0.5, "output": 1.0}})
        >>> table.rates("deepseek-official", "deepseek-v4-flash", 0).source
        'user table: deepseek-v4-flash'
        >>> price_table({"m": {"input": -1, "output": 1}})
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.PricesError: price of 'm': input: Input should be greater than or equal to 0 (hint: ...)
    """
    if isinstance(prices, PriceTable):
        return prices
    if prices is None:
        return PriceTable()
    if isinstance(prices, (str, os.PathLike)):
        return PriceTable(_read_file(Path(prices)))
    return PriceTable(_entries(prices.items(), "the price mapping"))


def _entries(items: Any, where: str) -> dict[str, ModelPrice]:
    out: dict[str, ModelPrice] = {}
    for name, entry in items:
        if not isinstance(name, str) or not name:
            raise PricesError(f"{where}: a model name must be a non-empty string, not {name!r}")
        if not isinstance(entry, Mapping):
            raise PricesError(f"{where}: the price of {name!r} is not a table of prices")
        try:
            out[name] = ModelPrice.model_validate(dict(entry))
        except ValidationError as error:
            first = error.errors()[0]
            location = ".".join(str(part) for part in first["loc"])
            raise PricesError(
                f"price of {name!r}: {location}: {first['msg']}",
                hint="prices are USD per million tokens: input and output (required), cache_read, cache_write",
            ) from None
    return out


def _read_file(path: Path) -> dict[str, ModelPrice]:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PricesError(f"cannot read the price table {path}: {error.strerror}") from None
    if path.suffix.lower() == ".csv":
        rows = list(csv.DictReader(data.decode("utf-8-sig").splitlines()))
        if rows and "model" not in rows[0]:
            raise PricesError(f"{path}: no 'model' column", hint="columns: model,input,output,cache_read,cache_write")
        items = []
        for row in rows:
            name = row.pop("model")
            try:
                items.append((name, {key: float(value) for key, value in row.items() if value not in ("", None)}))
            except ValueError as error:
                raise PricesError(f"{path}: the price of {name!r} is not a number ({error})") from None
        return _entries(items, str(path))
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise PricesError(f"{path}: not TOML ({error})", hint="a TOML table per model, or a .csv file") from None
    return _entries(table.items(), str(path))


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
    """``samples`` with ``cost_usd`` (``null`` where no table prices the model) and ``price_source``.

    Each sample's counts are one request's (one model step). Prices are looked up once per
    provider, model and price period (``PriceTable.period``: a fixed price once, DeepSeek's every
    half hour; only the distinct keys are collected); a price that depends on the request's size
    (tiers) is computed request by request by ``genai-prices``.

    Examples:
        >>> samples = pl.LazyFrame({"provider": ["p", "p"], "model": ["m", "x"], "time_ms": [0, 0],
        ...     "input_tokens": [1_000_000, 5], "output_tokens": [0, 5], "cache_read_tokens": [None, None],
        ...     "cache_write_tokens": [None, None], "reasoning_tokens": [None, None]})
        >>> sample_costs(samples, price_table({"p/m": {"input": 2, "output": 4}})).collect()["cost_usd"].to_list()
        [2.0, None]
    """
    models = samples.select("provider", "model").unique().collect()
    spans = models.with_columns(pl.Series("_span", [table.period(p, m) for p, m in models.iter_rows()], dtype=pl.Int64))
    frame = samples.join(spans.lazy(), on=["provider", "model"], how="left", nulls_equal=True, maintain_order="left")
    minute = pl.col("time_ms").fill_null(0) // _MINUTE_MS
    frame = frame.with_columns((minute // pl.col("_span") * pl.col("_span")).alias("_minute"))  # a period's start
    keys = frame.select("provider", "model", "_minute").unique().collect()
    found = [(rates, tiered is not None) for rates, tiered in map(table._lookup, *keys.get_columns())]
    looked = keys.with_columns(
        pl.Series("_request", [r.request if r else None for r, _ in found], dtype=pl.Float64),
        *(
            pl.Series(f"_rate_{name}", [getattr(r, name) if r else None for r, _ in found], dtype=pl.Float64)
            for name in ("input", "cache_read", "cache_write", "output", "reasoning")
        ),
        pl.Series("price_source", [r.source if r else None for r, _ in found], dtype=pl.String),
        pl.Series("_tiered", [tiered for _, tiered in found], dtype=pl.Boolean),
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
    return frame.with_columns(cost.alias("cost_usd")).select(pl.exclude("^_.*$"))


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
    """One request's cost, the same float ``sample_costs`` gives its row (``None``: no table prices the model).

    ``counts`` holds the ``SAMPLE_COLUMNS`` counts (``input_tokens`` ... ``reasoning_tokens``; a
    missing one is 0). For a single request outside a frame (a trace's LLM span, for one).

    Examples:
        >>> table = price_table({"p/m": {"input": 2, "output": 4}})
        >>> request_cost(table, "p", "m", 0, {"input_tokens": 1_000_000, "output_tokens": 0})
        2.0
        >>> request_cost(table, "p", "x", 0, {"input_tokens": 5}) is None
        True
    """
    span = table.period(provider, model)
    minute = ((time_ms or 0) // _MINUTE_MS) // span * span
    rates, tiered = table._lookup(provider, model, minute)
    if rates is None:
        return None
    uncached, out, read, write, thought = (counts.get(name) or 0 for name in _COUNTS)
    if tiered is not None:
        row = dict(zip(_COUNTS, (uncached, out, read, write, thought), strict=True))
        return _tiered_cost({"_tiered": True, "provider": provider, "model": model, "_minute": minute, **row}, table)
    reasoning = min(thought, out)
    return (
        rates.request
        + uncached * rates.input
        + read * rates.cache_read
        + write * rates.cache_write
        + (out - reasoning) * rates.output
        + reasoning * rates.reasoning
    )
