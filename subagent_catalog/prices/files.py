"""Reading a user's price table: a mapping, or a TOML or CSV file, checked before any cost is computed.

See the package docstring for the rules; every breach is a ``PricesError`` naming the file and
line (or the mapping's entry), with a hint.
"""

from __future__ import annotations

import csv
import io
import os
import tomllib
from collections.abc import Mapping
from typing import Any

from subagent_catalog.errors import PricesError
from subagent_catalog.prices.table import _HINT, PriceTable, _entries, _shown
from subagent_catalog.regular import read_regular

MAX_TABLE_BYTES = 1 << 20
"""The largest price table file read (1 MiB: some 10,000 models; a larger file is refused unread)."""

MAX_TABLE_MODELS = 10_000
"""The most models a price table file may hold."""

MAX_TOML_LINE_DOTS = 32
"""The most dots (outside quotes and comments) a line of a TOML price table may hold. A price table's
keys are at most ``model.field``; Python's TOML parser takes memory quadratic in a dotted key's depth
(a 40 KB line of ``a.a.a...`` takes 1.5 GB), so a deeper line is refused before parsing."""

Prices = Mapping[str, Mapping[str, float | None]] | str | os.PathLike[str]
"""A user price table: a mapping, or the path of a TOML or CSV file (see the module docstring)."""


def price_table(prices: Prices | PriceTable | None = None) -> PriceTable:
    """The price table ``prices`` names: ``None`` for ``genai-prices`` alone, a mapping or a file to extend it.

    Raises:
        PricesError: the file is missing, unreadable, not a regular file, too large or malformed, or an
            entry is malformed (the message names the file and line, or the mapping's entry).

    Examples:
        >>> table = price_table({"deepseek-v4-flash": {"input": 0.5, "output": 1.0}})
        >>> table.rates("deepseek-official", "deepseek-v4-flash", 0).source
        'user table: deepseek-v4-flash'
        >>> price_table({"m": {"input": -1, "output": 1}})
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.PricesError: the price mapping: price of 'm': input: Input should be greater ...
    """
    if isinstance(prices, PriceTable):
        return prices
    if prices is None:
        return PriceTable()
    if isinstance(prices, (str, os.PathLike)):
        where = os.fspath(prices)  # a file: see the module docstring for its rules
        try:
            data = read_regular(where, limit=MAX_TABLE_BYTES + 1)  # a FIFO never blocks, a device is never read
        except OSError as error:
            raise PricesError(
                f"cannot read the price table {where!r}: {error.strerror or error}", hint=_FILE_HINT
            ) from None
        if len(data) > MAX_TABLE_BYTES:
            raise PricesError(f"{where}: larger than {MAX_TABLE_BYTES >> 20} MiB, not a price table", hint=_FILE_HINT)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            line = data[: error.start].count(b"\n") + 1
            raise PricesError(
                f"{where}, line {line}: not UTF-8 (byte {error.start})", hint="save it as UTF-8"
            ) from None
        if os.path.splitext(where)[1].lower() == ".csv":
            return PriceTable(_entries(_csv_items(text, where), where))
        # a TOML table: a malformed line is named
        for number, row in enumerate(text.split("\n"), 1):
            if row.count(".") > MAX_TOML_LINE_DOTS and _bare_dots(row) > MAX_TOML_LINE_DOTS:
                raise PricesError(
                    f"{where}, line {number}: more than {MAX_TOML_LINE_DOTS} dots outside quotes",
                    hint="a price table's keys are at most model.field: quote a model name that holds dots",
                )
        if text.count("\n[") >= MAX_TABLE_MODELS:  # a table per model at most: refused before parsing
            raise PricesError(f"{where}: more than {MAX_TABLE_MODELS:,} tables", hint=_FILE_HINT)
        try:
            table = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise PricesError(f"{where}: not TOML ({error})", hint=_TOML_HINT) from None
        except RecursionError:
            raise PricesError(f"{where}: not a price table (nested too deeply)", hint=_TOML_HINT) from None
        if len(table) > MAX_TABLE_MODELS:
            raise PricesError(f"{where}: more than {MAX_TABLE_MODELS:,} models", hint=_FILE_HINT)
        items = [(name, entry, None) for name, entry in table.items()]
        return PriceTable(_entries(items, where, lambda name: _toml_line(text, name)))
    if not isinstance(prices, Mapping):
        raise PricesError(
            f"a price table is a mapping or the path of a TOML or CSV file, not {type(prices).__name__}", hint=_HINT
        )
    return PriceTable(_entries(((name, entry, None) for name, entry in prices.items()), "the price mapping"))


_FILE_HINT = "give a TOML file (a table per model) or a .csv file (columns model,input,output,cache_read,cache_write)"


_CSV_COLUMNS = ("model", "input", "output", "cache_read", "cache_write")
_CSV_HINT = (
    "a header line model,input,output,cache_read,cache_write (model, input and output required), then a row per model"
)


def _csv_items(text: str, where: str) -> list[tuple[Any, Any, int | None]]:
    """(model, prices, line) of each row of a CSV table; ``PricesError`` naming the line of a malformed one."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    items: list[tuple[Any, Any, int | None]] = []
    seen: dict[str, int] = {}
    try:
        header = [cell.strip() for cell in next(reader, [])]
        if not header:
            return items
        unknown = [cell for cell in header if cell not in _CSV_COLUMNS]
        if "model" not in header or unknown or len(set(header)) != len(header):
            problem = (
                "no 'model' column"
                if "model" not in header
                else f"an unknown column {_shown(unknown[0])}"
                if unknown
                else "a column twice"
            )
            raise PricesError(f"{where}, line 1: {problem}", hint=_CSV_HINT)
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue  # a blank line
            if len(row) != len(header):
                raise PricesError(
                    f"{where}, line {line}: {len(row)} fields where the header has {len(header)}", hint=_CSV_HINT
                )
            cells = dict(zip(header, (cell.strip() for cell in row), strict=True))
            name = cells.pop("model")
            if name in seen:
                raise PricesError(
                    f"{where}, line {line}: {_shown(name)} again (first on line {seen[name]})", hint=_CSV_HINT
                )
            seen[name] = line
            prices: dict[str, float] = {}
            for column, cell in cells.items():
                if cell:
                    try:
                        prices[column] = float(cell)
                    except ValueError:
                        raise PricesError(
                            f"{where}, line {line}: the {column} price of {_shown(name)} is not a number: "
                            f"{_shown(cell)}",
                            hint=_HINT,
                        ) from None
            items.append((name, prices, line))
            if len(items) > MAX_TABLE_MODELS:
                raise PricesError(f"{where}, line {line}: more than {MAX_TABLE_MODELS:,} models", hint=_FILE_HINT)
    except csv.Error as error:
        raise PricesError(f"{where}, line {reader.line_num}: not CSV ({error})", hint=_CSV_HINT) from None
    return items


_TOML_HINT = 'a TOML table per model: ["provider/model"] then input = 0.2, output = 0.4 (or a .csv file)'


def _bare_dots(line: str) -> int:
    """The dots of a TOML line outside quoted strings and its comment."""
    count, quote, escaped = 0, "", False
    for char in line:
        if quote:
            if escaped:
                escaped = False
            elif char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            break
        elif char == ".":
            count += 1
    return count


def _toml_line(text: str, name: str) -> int | None:
    """The line of a TOML table that declares the top-level key ``name`` (for a message), if one is found."""
    header_seen = False
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        is_header = stripped.startswith("[")
        if not stripped or stripped.startswith("#") or (header_seen and not is_header):
            continue
        header_seen = header_seen or is_header
        try:
            keys = tomllib.loads(stripped)
        except (tomllib.TOMLDecodeError, RecursionError):
            continue
        if name in keys:
            return number
    return None
