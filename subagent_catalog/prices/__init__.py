"""What tokens cost: a price table, and the cost of usage samples, computed over whole columns (layer 1).

The default table is ``genai-prices``' (its data ships inside the package; nothing is fetched),
looked up by provider id (dsh's route ids are mapped by ``PROVIDER_ALIASES``) and model name, at
the UTC minute of each sample, so a provider's dated and time-of-day prices (DeepSeek's off-peak
hours, for one) apply as the provider bills them. A user table extends or overrides it: a mapping
(or a TOML or CSV file) from ``"provider/model"`` or ``"model"`` to USD per million tokens
``{"input", "output", "cache_read", "cache_write"}``; a missing cache price is the input price.

Counts follow dsh's ``TokenUsage``: ``input_tokens`` is uncached input only, cache reads and writes are
billed input of their own (billed input = input + cache read + cache write), reasoning tokens are part of
the output (priced apart only where the provider prices them apart).

A sample that cannot be priced has no cost (``null``), never a cost of $0, and says why in its
``unpriced_reason`` (``UNPRICED_REASONS``): no table knows its model, its time is missing or not a
date (years 1 to 9999 UTC) while its model's price changes with time, or its cost is not a finite
number. ``unpriced_models`` lists such models with the reason.

A user table is checked when it is loaded (``PricesError`` naming the file and line, with a hint):
a file is a regular file of at most ``MAX_TABLE_BYTES`` (a FIFO or a device is refused unread),
UTF-8 (a BOM allowed), of at most ``MAX_TABLE_MODELS`` models; a price is a number (not a string or
a boolean), finite, from 0 to ``MAX_PRICE`` USD per million tokens.

Its parts: ``table`` (``PriceTable``: user entries, ``genai-prices`` lookups, price periods),
``files`` (``price_table``: a mapping, or a TOML or CSV file read safely and checked) and
``samples`` (``sample_costs``, ``request_cost``). It imports only the base modules (``errors``,
``regular``), beside ``read`` in layer 1.
"""

from __future__ import annotations

from subagent_catalog.prices.files import MAX_TABLE_BYTES, MAX_TABLE_MODELS, MAX_TOML_LINE_DOTS, Prices, price_table
from subagent_catalog.prices.samples import SAMPLE_COLUMNS, request_cost, sample_costs
from subagent_catalog.prices.table import (
    FOREVER,
    MAX_PRICE,
    PROVIDER_ALIASES,
    UNPRICED_REASONS,
    ModelPrice,
    PriceTable,
    Rates,
    UnpricedReason,
)

__all__ = [
    "FOREVER",
    "MAX_PRICE",
    "MAX_TABLE_BYTES",
    "MAX_TABLE_MODELS",
    "MAX_TOML_LINE_DOTS",
    "PROVIDER_ALIASES",
    "SAMPLE_COLUMNS",
    "UNPRICED_REASONS",
    "ModelPrice",
    "PriceTable",
    "Prices",
    "Rates",
    "UnpricedReason",
    "price_table",
    "request_cost",
    "sample_costs",
]
