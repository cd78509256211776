"""A price table: a user's entries first, then ``genai-prices``' (dated and time-of-day prices), looked up per minute.

``PriceTable`` finds the rates of a provider's model at a UTC minute, or why it has none
(``UnpricedReason``); ``ModelPrice`` is a user entry, checked (finite, from 0 to ``MAX_PRICE``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from subagent_catalog.errors import PricesError

PROVIDER_ALIASES: dict[str, str] = {"deepseek-official": "deepseek"}
"""dsh provider route ids whose ``genai-prices`` provider id differs."""

_MILLION = 1_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

MAX_PRICE = 1_000_000.0
"""The highest price a user table may give, USD per million tokens ($1 a token, far above any model's):
with it, the cost of any sample (counts below 2^53) is a finite number."""

UnpricedReason = Literal["unknown model", "no time", "time out of range", "cost out of range"]
"""Why a sample has no cost (``unpriced_reason``, ``unpriced_models``' ``reason``)."""

UNPRICED_REASONS: dict[UnpricedReason, str] = {
    "unknown model": "no price table knows its provider and model (or it has none)",
    "no time": "its model's price changes with time (dated, or by the time of day) and the sample has no time",
    "time out of range": "its model's price changes with time and the sample's time is not a date "
    "(before year 1 or after year 9999 UTC)",
    "cost out of range": "its cost is not a finite number",
}
"""What each ``UnpricedReason`` means."""

_HINT = (
    f"prices are USD per million tokens, numbers from 0 to {MAX_PRICE:,.0f}: "
    "input and output (required), cache_read, cache_write"
)


class ModelPrice(BaseModel):
    """One model's prices in USD per million tokens (a user table's entry): finite numbers from 0 to ``MAX_PRICE``.

    A string or a boolean is not a price (``"1"``, ``true``: refused, never converted).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, revalidate_instances="always", defer_build=True)

    input: float = Field(ge=0, le=MAX_PRICE, allow_inf_nan=False)
    output: float = Field(ge=0, le=MAX_PRICE, allow_inf_nan=False)
    cache_read: float | None = Field(default=None, ge=0, le=MAX_PRICE, allow_inf_nan=False)
    cache_write: float | None = Field(default=None, ge=0, le=MAX_PRICE, allow_inf_nan=False)


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


_Found = tuple[Rates | None, Any, UnpricedReason | None]
"""(rates, the price itself when it has tiers, why there is no price)."""


@dataclass
class PriceTable:
    """Where prices come from: a user table first, then ``genai-prices`` (unless ``genai`` is off).

    The user entries are checked when the table is made (``PricesError``), also ``ModelPrice``
    instances (one made by ``model_construct`` included).

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
    _cache: dict[tuple[str | None, str | None, int | None], _Found] = field(default_factory=dict, repr=False)
    _models: dict[tuple[str, str], tuple[str, Any] | None] = field(default_factory=dict, repr=False)
    _periods: dict[int, tuple[Any, Rates, Any]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.user:
            self.user = _entries(((name, entry, None) for name, entry in self.user.items()), "the price table")

    def digest(self) -> str:
        """What the costs depend on: the user table's entries and the ``genai-prices`` version in use.

        Examples:
            >>> PriceTable().digest() == PriceTable().digest() != PriceTable(genai=False).digest()
            True
        """
        parts = [f"genai={_genai_version() if self.genai else '-'}"]
        parts += [f"{name}={entry.model_dump_json()}" for name, entry in sorted(self.user.items())]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def rates(self, provider: str | None, model: str | None, minute: int | None) -> Rates | None:
        """The rates of ``provider``/``model`` at UTC minute ``minute`` (ms since the epoch // 60,000), or ``None``."""
        return self._lookup(provider, model, minute)[0]

    def tiered(self, provider: str | None, model: str | None, minute: int | None) -> Any:
        """The ``genai-prices`` model price when its price depends on the request's size (tiers), else ``None``."""
        return self._lookup(provider, model, minute)[1]

    def unpriced(self, provider: str | None, model: str | None, minute: int | None) -> UnpricedReason | None:
        """Why ``provider``/``model`` has no price at UTC minute ``minute`` (``None``: it has one).

        Examples:
            >>> table = PriceTable()
            >>> table.unpriced("deepseek-official", "deepseek-v4-flash", 5_000_000_000) is None  # 11476
            False
            >>> table.unpriced("deepseek-official", "deepseek-v4-flash", 5_000_000_000)
            'time out of range'
            >>> table.unpriced("mock", "mock", 0), table.unpriced("deepseek-official", "deepseek-v4-flash", None)
            ('unknown model', 'no time')
        """
        return self._lookup(provider, model, minute)[2]

    def _lookup(self, provider: str | None, model: str | None, minute: int | None) -> _Found:
        """(rates, the price itself when it has tiers, why there is none) of a model at a minute, found once."""
        key = (provider, model, minute)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._find(provider, model, minute)
        return found

    def _find(self, provider: str | None, model: str | None, minute: int | None) -> _Found:
        if model is None:
            return None, None, "unknown model"
        if self.user:
            for name in (f"{provider}/{model}", model):
                entry = self.user.get(name)
                if entry is not None:
                    return _user_rates(entry, f"user table: {name}"), None, None
        if not self.genai or provider is None:
            return None, None, "unknown model"
        located = self._genai_model(PROVIDER_ALIASES.get(provider, provider), model)
        if located is None:
            return None, None, "unknown model"
        name, info = located
        # one of the model's few price periods (a fixed price needs no time at all)
        if _fixed(info):
            price = info.prices
        elif minute is None:
            return None, None, "no time"
        else:
            try:
                moment = _EPOCH + timedelta(minutes=minute)  # years 1 to 9999 only
            except OverflowError:
                return None, None, "time out of range"
            price = info.get_prices(moment)
        period = self._periods.get(id(price))
        if period is None:
            from genai_prices.types import TieredPrices

            tiered = any(isinstance(value, TieredPrices) for value in vars(price).values())  # by request size
            period = self._periods[id(price)] = (price, _genai_rates(price, name), price if tiered else None)
        return period[1], period[2], None

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
        if located is None or _fixed(located[1]):
            return FOREVER
        from genai_prices.types import StartDateConstraint, TimeOfDateConstraint

        # the largest number of minutes dividing every UTC boundary of its dated and daily prices (1 if unsure)
        step = 1440  # a date changes at UTC midnight
        for conditional in located[1].prices:
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

    def _genai_model(self, provider: str, model: str) -> tuple[str, Any] | None:
        """(``genai-prices <version>: provider/model``, its model info) of a model, found once (``None``: unknown)."""
        key = (provider, model)
        if key not in self._models:
            from genai_prices import __version__, data_snapshot

            try:
                _, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider, None)
                self._models[key] = f"genai-prices {__version__}: {provider}/{info.id}", info
            except LookupError:
                self._models[key] = None
        return self._models[key]


FOREVER = 1 << 40
"""A period no price changes within (minutes): a fixed price, or no price at all."""


def _fixed(info: Any) -> bool:
    """Whether a ``genai-prices`` model has one price at every time (no dated or daily periods).

    (Its price variants apply only to a request context, which costs here never have.)
    """
    from genai_prices.types import ModelPrice as GenaiPrice

    return isinstance(info.prices, GenaiPrice)


def _user_rates(entry: ModelPrice, source: str) -> Rates:
    per = 1 / _MILLION
    cache_read = entry.input if entry.cache_read is None else entry.cache_read
    cache_write = entry.input if entry.cache_write is None else entry.cache_write
    return Rates(
        0.0, entry.input * per, cache_read * per, cache_write * per, entry.output * per, entry.output * per, source
    )


def _genai_version() -> str:
    """The installed ``genai-prices`` version, read from its metadata (importing the package costs 0.1 s).

    Its price data ships inside the package and this tool never updates it at run time, so the
    version names the data.

    Examples:
        >>> from genai_prices import __version__
        >>> _genai_version() == __version__
        True
    """
    from importlib.metadata import version

    return version("genai-prices")


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


def _shown(value: Any) -> str:
    """``repr`` of a value a message names, clipped (a model name may be a megabyte long)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _entries(
    items: Iterable[tuple[Any, Any, int | None]], where: str, locate: Callable[[str], int | None] | None = None
) -> dict[str, ModelPrice]:
    """Checked entries from (name, entry, line) triples; ``locate(name)`` finds a line only for an error message."""
    out: dict[str, ModelPrice] = {}
    for name, entry, line in items:
        problem = None
        if not isinstance(name, str) or not name.strip():
            problem = f"a model name must be a non-empty string, not {_shown(name)}"
        elif not isinstance(entry, Mapping | ModelPrice):
            problem = f"the price of {_shown(name)} is not a table of prices"
        else:
            try:
                out[name] = ModelPrice.model_validate(entry if isinstance(entry, ModelPrice) else dict(entry))
            except ValidationError as error:
                first = error.errors()[0]
                location = ".".join(str(part) for part in first["loc"]) or "entry"
                problem = f"price of {_shown(name)}: {_shown(location)[1:-1]}: {first['msg']}"
        if problem is not None:
            if line is None and locate is not None and isinstance(name, str):
                line = locate(name)
            raise PricesError(f"{where}, line {line}: {problem}" if line else f"{where}: {problem}", hint=_HINT)
    return out
