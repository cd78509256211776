"""The fuzz suite's **price-table** tier: hostile user price tables (TOML, CSV, mapping, not-a-file).

Each case is rebuilt from its seed (``make_case``): a table of random models whose entries hold
good and bad prices (negative, above ``MAX_PRICE``, ``inf``, ``nan``, ``1e300``, ``10**400``,
strings, booleans, arrays, dates, inline tables, missing and extra fields, duplicate keys and
columns, odd names) written as TOML (header tables, inline tables or dotted keys) or CSV, then
one ``HAZARDS`` edit: none, byte-level damage (flips, cuts, random bytes, a BOM, non-UTF-8 bytes,
NUL, a duplicated line), random bytes only, deep nesting (arrays, inline tables, dotted keys up to
``DEEP_MAX`` levels), a file over the size bound or of too many tables, a path that is not a
regular file (a FIFO, ``/dev/zero``, ``/dev/urandom``, ``/dev/null``, a directory, a link to a
FIFO, a missing path, a link loop), or a Python mapping of random structure (non-string keys,
``None``, ``Decimal``, nested lists...).

A worker interpreter (``python -m tests.fuzz.prices --worker``) checks a batch of cases with
``price_table`` and keeps these invariants:

* **typed error or correct result**: ``price_table`` returns a table equal, entry by entry, to
  what an independent reading of the case's rules expects (``expected``), or raises
  ``PricesError`` where it expects an error: never another exception; the error's message is one
  line, names the file (for a file) and has a hint;
* **costs are numbers or unpriced with a reason**: over a loaded table, every entry's sample
  cost (counts up to 2^53-1) is the price formula's finite value, never ``inf``/``nan``;
* **no hang**: a case ends within ``CASE_TIMEOUT_S`` (a ``SIGALRM`` interrupts a blocked read);
* **bounded memory**: the worker's peak RSS during a case (``VmHWM``, reset before each case
  through ``/proc/self/clear_refs``) stays under ``LIB_RSS_BOUND_MB``.

Every ``--cli-every``-th case also runs ``runs ROOT -t models -f csv --prices FILE`` in a child
interpreter and checks: the same verdict as the library (exit 0 when it loads, else 1, or 2 for
click's own refusal of a directory), exactly one ``Error:`` line, no ``Traceback``, no
``panicked at``, finite costs in the CSV, within ``CLI_TIMEOUT_S``, peak RSS under
``CLI_RSS_BOUND_MB``.

``python -m tests.fuzz.prices --cases N [--seed S]`` runs the long tier (``make fuzz-prices
N=...``); ``tests/test_fuzz_prices.py`` runs each hazard once and a seeded sample in ``make test``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LIB_RSS_BOUND_MB = 400
CLI_RSS_BOUND_MB = 600
CASE_TIMEOUT_S = 30
CLI_TIMEOUT_S = 120
DEEP_MAX = 60_000
FIELDS = ("input", "output", "cache_read", "cache_write")
MAX_COUNT = 2**53 - 1

HAZARDS = (
    "none",
    "damage",
    "random-bytes",
    "deep",
    "huge",
    "not-a-file",
    "mapping",
)
SPECIAL_PATHS = ("fifo", "dev-zero", "dev-urandom", "dev-null", "directory", "link-to-fifo", "missing", "link-loop")


class _Date:
    """A TOML local date value (written bare: ``1979-05-27``)."""

    def __repr__(self) -> str:
        return "1979-05-27"


# --------------------------------------------------------------------------- generation


def _name(rng: random.Random) -> Any:
    return rng.choice(
        [
            "m",
            "p/m",
            "deepseek-v4-flash",
            "deepseek-official/deepseek-v4-flash",
            "openrouter/deepseek/deepseek-v4.1",
            f"model-{rng.randrange(50)}",
            "a.b.c",
            "ünïcödé",
            "with space",
            " padded ",
            "",
            " ",
            "\x00nul",
            "new\nline",
            'quo"te',
            "comma,name",
            "#hash",
            "[brackets]",
            "=",
            "x" * rng.choice([100, 5000]),
            "\u202eevil",
        ]
    )


def _good_price(rng: random.Random) -> Any:
    return rng.choice([0, 0.0, -0.0, 0.28, 1, 2.5, 1e-9, 1_000_000, 999_999.999, round(rng.uniform(0, 100), 6)])


def _bad_price(rng: random.Random) -> Any:
    return rng.choice(
        [
            -1,
            -1e-9,
            1_000_000.5,
            1e300,
            10**400,
            2**63,
            math.inf,
            -math.inf,
            math.nan,
            "1",
            "cheap",
            True,
            False,
            [1],
            {"a": 1},
            _Date(),
            None,
        ]
    )


def _entry(rng: random.Random) -> dict[str, Any]:
    fields = ["input", "output"] + [f for f in ("cache_read", "cache_write") if rng.random() < 0.5]
    if rng.random() < 0.15:
        fields.remove(rng.choice(["input", "output"]))  # a required price missing
    entry = {f: (_bad_price(rng) if rng.random() < 0.12 else _good_price(rng)) for f in fields}
    if rng.random() < 0.08:
        entry[rng.choice(["fast", "Input", "cache", "", "model"])] = 1  # an extra field
    return entry


def _models(rng: random.Random) -> list[tuple[Any, dict[str, Any]]]:
    count = rng.choice([0, 1, 1, 2, 3, 5, 8])
    return [(_name(rng), _entry(rng)) for _ in range(count)]


def _toml_str(value: str) -> str:
    return json.dumps(value)  # ASCII escapes only: a valid TOML basic string


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_str(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    if value is None:
        return '""'  # TOML has no null: an empty string (not a price)
    return repr(value)


def to_toml(rng: random.Random, models: list[tuple[Any, dict[str, Any]]]) -> bytes:
    """The models as TOML, each entry as a header table, an inline table or dotted keys."""
    lines: list[str] = []
    if rng.random() < 0.3:
        lines.append(
            "# a price table . . . with a comment: 1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0"
        )
    style = rng.choice(["header", "inline", "dotted"])
    for name, entry in models:
        key = _toml_str(str(name))
        if style == "inline":
            lines.append(f"{key} = {_toml_value(entry)}")
        elif style == "dotted":
            lines += [f"{key}.{_toml_str(k)} = {_toml_value(v)}" for k, v in entry.items()]
        else:
            lines.append(f"[{key}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in entry.items()]
    if models and rng.random() < 0.1:
        name, entry = rng.choice(models)
        lines.append(f"[{_toml_str(str(name))}]")  # declared twice
    return ("\n".join(lines) + "\n").encode()


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return str(value)


def to_csv(rng: random.Random, models: list[tuple[Any, dict[str, Any]]]) -> bytes:
    """The models as CSV: a header of the fields used (maybe reordered, doubled or without ``model``)."""
    columns = ["model", *sorted({k for _, entry in models for k in entry} or {"input", "output"})]
    rng.shuffle(columns)
    if rng.random() < 0.05:
        columns.append(rng.choice(columns))  # a column twice
    if rng.random() < 0.05:
        columns.remove("model")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=rng.choice(["\n", "\r\n"]))
    writer.writerow([f" {c} " if rng.random() < 0.1 else c for c in columns])
    for name, entry in models:
        row = [str(name) if c == "model" else _csv_cell(entry.get(c)) for c in columns]
        if rng.random() < 0.05:
            row.append("9")  # an extra field
        elif rng.random() < 0.05:
            row = row[:-1]  # a missing one
        writer.writerow(row)
        if rng.random() < 0.05:
            writer.writerow([])  # a blank line
    if models and rng.random() < 0.05:
        writer.writerow(row)  # the last model again
    return out.getvalue().encode()


def _damage(rng: random.Random, data: bytes) -> bytes:
    buffer = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        kind = rng.choice(["flip", "cut", "insert", "bom", "latin1", "nul", "dup-line", "truncate"])
        at = rng.randrange(len(buffer) + 1)
        if kind == "flip" and buffer:
            buffer[min(at, len(buffer) - 1)] ^= 1 << rng.randrange(8)
        elif kind == "cut":
            del buffer[at : at + rng.randrange(1, 8)]
        elif kind == "insert":
            buffer[at:at] = rng.randbytes(rng.randrange(1, 8))
        elif kind == "bom":
            buffer[0:0] = b"\xef\xbb\xbf"
        elif kind == "latin1":
            buffer[at:at] = rng.choice([b"\xff", b"\xe9", b"\xc3", b"\xed\xa0\x80"])
        elif kind == "nul":
            buffer[at:at] = b"\x00"
        elif kind == "dup-line":
            lines = bytes(buffer).split(b"\n")
            line = rng.choice(lines)
            lines.insert(rng.randrange(len(lines) + 1), line)
            buffer = bytearray(b"\n".join(lines))
        else:
            del buffer[at:]
    return bytes(buffer)


def _deep(rng: random.Random, suffix: str) -> bytes:
    depth = rng.choice([10, 33, 500, 5_000, DEEP_MAX])
    if suffix == ".csv":
        return b"model,input,output\n" + b'"' + b"[" * depth + b'",1,2\n'
    kind = rng.choice(["array", "inline", "dotted", "header", "quoted-dots"])
    if kind == "array":
        return b"m = " + b"[" * depth + b"]" * depth + b"\n"
    if kind == "inline":
        return b"m = " + b"{a = " * depth + b"1" + b"}" * depth + b"\n"
    if kind == "dotted":
        return b"m" + b".a" * depth + b" = 1\n"
    if kind == "header":
        return b"[m" + b".a" * depth + b"]\ninput = 1\n"
    return b'["' + b"." * depth + b'"]\ninput = 1\noutput = 2\n'  # dots in quotes: a fine (long) name


def _huge(rng: random.Random, suffix: str, bound: int, models_bound: int) -> bytes:
    kind = rng.choice(["over", "tables", "rows", "line"])
    if kind == "over":
        return b"#" * (bound + rng.randrange(1, 3)) + b"\n"
    if kind == "tables" and suffix != ".csv":
        return b"".join(b"[m%d]\n" % i for i in range(models_bound + rng.randrange(0, 3)))
    if kind in ("tables", "rows"):
        count = models_bound + rng.randrange(-1, 3)
        head = b"model,input,output\n" if suffix == ".csv" else b""
        row = (lambda i: b"m%d,1,2\n" % i) if suffix == ".csv" else (lambda i: b'"m%d" = {input = 1, output = 2}\n' % i)
        return head + b"".join(row(i) for i in range(count))
    return b"m = " + b'"' + b"x" * (bound - 10) + b'"\n'  # one line just under the bound


def _number(value: Any) -> bool:
    return isinstance(value, float | int) and not isinstance(value, bool)


def _mapping(rng: random.Random, depth: int = 0) -> Any:
    """A random Python value for ``prices=``: mostly a mapping of models, sometimes anything."""
    if depth == 0 and rng.random() < 0.15:
        return rng.choice([["m"], 3, b"prices.toml", (("m", {}),), {"m"}, 1.5])
    models: dict[Any, Any] = {}
    for name, entry in _models(rng):
        value: Any = entry
        roll = rng.random()
        if roll < 0.08:
            value = rng.choice([None, 3, "1", [entry], {k: [v] for k, v in entry.items()}])
        elif roll < 0.15:
            value = {
                k: Decimal(str(v)) if isinstance(v, float | int) and not isinstance(v, bool) else v
                for k, v in entry.items()
            }
        elif roll < 0.2:
            value = {rng.choice([1, None, b"input"]): 1, **entry}
        models[name] = (
            {k: (None if isinstance(v, _Date) else v) for k, v in value.items()} if isinstance(value, dict) else value
        )
    if rng.random() < 0.1:
        models[rng.choice([1, None, ("a",), b"m"])] = {"input": 1, "output": 1}
    return models


@dataclass
class Case:
    """One hostile table: where it is (or the mapping itself) and how it was made."""

    seed: int
    hazard: str
    fmt: str  # "toml", "csv" or "mapping"
    path: str | None = None
    data: bytes | None = None
    value: Any = None
    special: str | None = None
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def prices(self) -> Any:
        return self.value if self.fmt == "mapping" else self.path

    def cleanup(self) -> None:
        for clean in reversed(self.cleanups):
            with contextlib.suppress(OSError):
                clean()


def make_case(seed: int, work: Path, *, hazard: str | None = None, special: str | None = None) -> Case:
    """Case ``seed`` (its files under ``work``), with ``hazard`` (and ``special`` path) or ones drawn from the seed."""
    from subagent_catalog.prices import MAX_TABLE_BYTES, MAX_TABLE_MODELS

    rng = random.Random(seed)
    chosen = hazard or rng.choices(HAZARDS, weights=[30, 30, 8, 8, 6, 6, 12])[0]
    if chosen == "mapping":
        return Case(seed, chosen, "mapping", value=_mapping(rng))
    fmt = rng.choice(["toml", "csv"])
    suffix = rng.choice([".toml", ".TOML", ".txt", ""]) if fmt == "toml" else rng.choice([".csv", ".CSV"])
    path = work / f"case-{seed}{suffix}"
    case = Case(seed, chosen, fmt, path=str(path))
    if chosen == "not-a-file":
        case.special = special or rng.choice(SPECIAL_PATHS)
        _special(case, path)
        return case
    if chosen == "random-bytes":
        data = rng.randbytes(rng.choice([0, 1, 10, 100, 4000]))
    elif chosen == "deep":
        data = _deep(rng, suffix.lower())
    elif chosen == "huge":
        data = _huge(rng, suffix.lower(), MAX_TABLE_BYTES, MAX_TABLE_MODELS)
    else:
        models = _models(rng)
        data = to_csv(rng, models) if fmt == "csv" else to_toml(rng, models)
        if chosen == "damage":
            data = _damage(rng, data)
    path.write_bytes(data)
    case.data = data
    case.cleanups.append(path.unlink)
    return case


def _special(case: Case, path: Path) -> None:
    kind = case.special
    if kind in ("fifo", "link-to-fifo"):
        fifo = path.with_name(path.name + ".fifo")
        os.mkfifo(fifo)
        case.cleanups.append(fifo.unlink)
        if kind == "fifo":
            case.path = str(fifo)
        else:
            path.symlink_to(fifo)
            case.cleanups.append(path.unlink)
    elif kind in ("dev-zero", "dev-urandom", "dev-null"):
        case.path = "/" + kind.replace("-", "/")
    elif kind == "directory":
        path.mkdir()
        case.cleanups.append(path.rmdir)
    elif kind == "link-loop":
        path.symlink_to(path)
        case.cleanups.append(path.unlink)
    # "missing": nothing there


# --------------------------------------------------------------------------- the expectation (not the library's)


def _check_entries(items: list[tuple[Any, Any]], limits: dict[str, Any]) -> dict[str, tuple[float | None, ...]] | None:
    """The entries the rules accept (name -> the four prices), or ``None`` when one breaks a rule."""
    out: dict[str, tuple[float | None, ...]] = {}
    for name, entry in items:
        if not isinstance(name, str) or not name.strip() or not isinstance(entry, Mapping):
            return None
        if set(entry) - set(FIELDS) or not {"input", "output"} <= set(entry):
            return None
        values: list[float | None] = []
        for key in FIELDS:
            if key not in entry:
                values.append(None)
                continue
            value = entry[key]
            if value is None and key.startswith("cache_"):
                values.append(None)  # a mapping's None: the price not given (the input price)
                continue
            if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
                return None
            if isinstance(value, int) and abs(value) > 2 * limits["price"]:
                return None
            number = float(value)
            if not math.isfinite(number) or not 0 <= number <= limits["price"]:
                return None
            values.append(number)
        out[name] = tuple(values)
    return out


def _lines_with_many_dots(text: str, limit: int) -> bool:
    return any(line.count(".") > limit for line in text.split("\n"))


def expected(case: Case, *, loaded: bool = False) -> tuple[str, dict[str, tuple[float | None, ...]] | None]:
    """("ok", entries), ("error", None), or ("either", None) where the rules alone do not decide.

    A TOML line of many dots (maybe in quotes or a comment) is "either"; once the library
    ``loaded`` it (no line over the bound outside quotes), the entries are expected anyway.
    """
    from subagent_catalog.prices import MAX_PRICE, MAX_TABLE_BYTES, MAX_TABLE_MODELS, MAX_TOML_LINE_DOTS

    limits = {"price": MAX_PRICE}
    if case.fmt == "mapping":
        if not isinstance(case.value, Mapping):
            return "error", None
        entries = _check_entries(list(case.value.items()), limits)
        return ("ok", entries) if entries is not None else ("error", None)
    if case.special is not None or case.data is None:
        return "error", None
    if len(case.data) > MAX_TABLE_BYTES:
        return "error", None
    try:
        text = case.data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return "error", None
    if case.path is not None and case.path.lower().endswith(".csv"):
        return _expected_csv(text, limits, MAX_TABLE_MODELS)
    if not loaded and _lines_with_many_dots(text, MAX_TOML_LINE_DOTS):
        return "either", None  # refused when the dots are outside quotes: the tier checks the error is typed
    if text.count("\n[") >= MAX_TABLE_MODELS:
        return "error", None
    try:
        table = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return "error", None
    if len(table) > MAX_TABLE_MODELS:
        return "error", None
    entries = _check_entries(list(table.items()), limits)
    return ("ok", entries) if entries is not None else ("error", None)


def _expected_csv(text: str, limits: dict[str, Any], models_bound: int) -> tuple[str, Any]:
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error:
        return "error", None
    if not rows or not [c.strip() for c in rows[0]]:
        return "ok", {}
    header = [c.strip() for c in rows[0]]
    if "model" not in header or set(header) - {"model", *FIELDS} or len(set(header)) != len(header):
        return "error", None
    items: list[tuple[Any, Any]] = []
    names: set[str] = set()
    for row in rows[1:]:
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            return "error", None
        cells = {k: v.strip() for k, v in zip(header, row, strict=True)}
        name = cells.pop("model")
        if name in names:
            return "error", None
        names.add(name)
        try:
            items.append((name, {k: float(v) for k, v in cells.items() if v}))
        except ValueError:
            return "error", None
        if len(items) > models_bound:
            return "error", None
    entries = _check_entries(items, limits)
    return ("ok", entries) if entries is not None else ("error", None)


# --------------------------------------------------------------------------- the checks


class _Timeout(BaseException):
    """A case ran past ``CASE_TIMEOUT_S``."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # resets VmHWM to the current RSS
        return True
    except OSError:
        return False


def _peak_kib() -> int | None:
    with contextlib.suppress(OSError, StopIteration, ValueError), open("/proc/self/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
    return None


def _cost_violations(table: Any, names: list[str], seed: int) -> list[str]:
    """Each user entry's cost at the largest counts: its formula's finite value."""
    import polars as pl

    from subagent_catalog.prices import SAMPLE_COLUMNS, sample_costs

    rng = random.Random(seed)
    rows = []
    for name in names[:20]:
        counts = {c: rng.choice([0, 1, 10**6, MAX_COUNT]) for c in SAMPLE_COLUMNS[3:]}
        time_ms = rng.choice([None, 0, 1_750_000_000_000, MAX_COUNT, -MAX_COUNT])
        rows.append({"provider": "fuzz-provider", "model": name, "time_ms": time_ms, **counts})
    if not rows:
        return []
    schema = {c: pl.String if c in ("provider", "model") else pl.Int64 for c in SAMPLE_COLUMNS}
    costs = sample_costs(pl.LazyFrame(rows, schema=schema), table).collect()
    out = []
    for row, got, reason in zip(rows, costs["cost_usd"], costs["unpriced_reason"], strict=True):
        entry = table.user.get(f"fuzz-provider/{row['model']}") or table.user[row["model"]]
        read = entry.input if entry.cache_read is None else entry.cache_read
        write = entry.input if entry.cache_write is None else entry.cache_write
        want = (
            row["input_tokens"] * entry.input
            + row["cache_read_tokens"] * read
            + row["cache_write_tokens"] * write
            + row["output_tokens"] * entry.output
        ) / 1e6
        if got is None or reason is not None or not math.isfinite(got):
            out.append(f"cost of {row['model']!r}: {got} ({reason}), expected {want}")
        elif not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12):
            out.append(f"cost of {row['model']!r}: {got} != {want}")
    return out


def check_case(
    case: Case, *, table_fn: Callable[[Any], Any] | None = None, timeout: int = CASE_TIMEOUT_S
) -> dict[str, Any]:
    """Load the case's table in this process; what happened and the invariants it broke.

    (An alarm already set in this process, a test runner's timeout, is set again afterwards.)
    """
    from subagent_catalog.errors import PricesError
    from subagent_catalog.prices import price_table

    load = table_fn or price_table
    want, entries = expected(case)
    violations: list[str] = []
    outcome = "?"
    measured = _reset_peak()
    started = time.perf_counter()
    outer = signal.alarm(0)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        try:
            table = load(case.prices())
            outcome = "ok"
        except PricesError as error:
            outcome = "error"
            message = str(error)
            if "\n" in message or not error.hint:
                violations.append(f"error not one line with a hint: {message[:200]!r}")
            if (
                case.fmt != "mapping"
                and case.path is not None
                and not message.startswith((case.path, f"cannot read the price table {case.path!r}"))
            ):
                violations.append(f"error does not name the file: {message[:200]!r}")
        finally:
            signal.alarm(0)
        if outcome == "ok":
            got = {name: (e.input, e.output, e.cache_read, e.cache_write) for name, e in table.user.items()}
            if want == "either":
                want, entries = expected(case, loaded=True)
            if want == "error":
                violations.append("loaded a table the rules refuse")
            elif want == "ok" and got != entries:
                violations.append(f"entries differ from the expected ones: {str(got)[:200]} != {str(entries)[:200]}")
            violations += _cost_violations(table, list(got), case.seed)
        elif want == "ok":
            violations.append(f"refused a table the rules accept: {message[:200]!r}")
    except _Timeout:
        outcome = "timeout"
        violations.append(f"no answer within {timeout} s")
    except Exception as error:  # an untyped error: what the tier looks for
        outcome = "raw"
        violations.append(f"untyped error {type(error).__name__}: {str(error)[:200]}")
        violations.append(traceback.format_exc(limit=-3)[-600:])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.alarm(max(1, outer - int(time.perf_counter() - started)))
    peak = _peak_kib() if measured else None
    if peak is not None and peak / 1024 > LIB_RSS_BOUND_MB:
        violations.append(f"peak RSS {peak / 1024:.0f} MB > {LIB_RSS_BOUND_MB} MB")
    return {
        "seed": case.seed,
        "hazard": case.hazard,
        "format": case.fmt,
        "special": case.special,
        "expected": want,
        "outcome": outcome,
        "seconds": round(time.perf_counter() - started, 3),
        "peak_mb": None if peak is None else round(peak / 1024, 1),
        "violations": violations,
    }


# --------------------------------------------------------------------------- the CLI

CHILD = r"""
import os, runpy, sys, atexit
def _rss():
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(os.environ["FUZZ_RSS_FILE"], "w") as handle:
        handle.write(peak)
atexit.register(_rss)
sys.argv = ["subagent-catalog", *sys.argv[1:]]
runpy.run_module("subagent_catalog", run_name="__main__")
"""


def make_corpus(root: Path) -> None:
    """A small corpus whose steps name the models the cases price (``m``, ``deepseek-v4-flash``...)."""
    from subagent_catalog.synth.writer import header, write_session

    for index, model in enumerate(["m", "deepseek-v4-flash", "model-1", "a.b.c"]):
        provider = "p" if model == "m" else "deepseek-official"
        events: list[dict[str, Any]] = [
            {"type": "turn/start", "seq": 0, "time": 1_750_000_000_000, "data": {"turn": 1}},
            {
                "type": "assistant/message",
                "seq": 1,
                "time": 1_750_000_000_000,
                "data": {
                    "turn": 1,
                    "step": 1,
                    "message": {
                        "id": f"m{index}",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "ok"}],
                        "source": {"kind": "model", "provider": provider, "model": model},
                    },
                    "usage": {"inputTokens": MAX_COUNT, "outputTokens": MAX_COUNT},
                },
                "surfaceOp": "append",
            },
            {
                "type": "turn/end",
                "seq": 2,
                "time": 1_750_000_000_001,
                "data": {"turn": 1, "reason": {"kind": "completed"}},
            },
        ]
        write_session(root, header(f"s{index}", created_at=1_750_000_000_000, cwd="/w"), events, "none")


def check_cli(case: Case, corpus: Path, work: Path, library_outcome: str) -> dict[str, Any]:
    """``runs CORPUS -t models -f csv --prices FILE`` in a child: its exit, lines, costs, time and memory."""
    rss_file = work / f"rss-{case.seed}"
    env = {**os.environ, "FUZZ_RSS_FILE": str(rss_file), "PYTHONPATH": str(REPO)}
    env["SUBAGENT_CATALOG_CACHE"] = str(work / "cache")
    argv = ["runs", str(corpus), "-t", "models", "-f", "csv", "-q", "--prices", str(case.path)]
    violations: list[str] = []
    code: int | None = None
    stderr = ""
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, *argv],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=CLI_TIMEOUT_S,
            env=env,
            cwd=str(work),
            check=False,
        )
        code, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired:
        violations.append(f"CLI: no answer within {CLI_TIMEOUT_S} s")
    rss: int | None = None
    with contextlib.suppress(OSError, ValueError):
        rss = int(rss_file.read_text())
        rss_file.unlink()
    if code is not None:
        if "Traceback" in stderr or "panicked at" in stderr:
            violations.append("CLI: traceback or panic text")
        if code == 0:
            if library_outcome != "ok":
                violations.append(f"CLI: exit 0 where the library said {library_outcome}")
            costs = [row["cost_usd"] for row in csv.DictReader(io.StringIO(done.stdout))]
            if any(cell and not math.isfinite(float(cell)) for cell in costs):
                violations.append(f"CLI: a cost that is not a number: {costs}")
        elif code in (1, 2):
            errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
            if len(errors) != 1:
                violations.append(f"CLI: {len(errors)} Error: lines")
            if "internal error" in stderr:
                violations.append("CLI: internal error")
            if library_outcome == "ok":
                violations.append("CLI: an error where the library loaded the table")
            if code == 2 and case.special != "directory":
                violations.append("CLI: a usage error (2) for a file click does not refuse")
        else:
            violations.append(f"CLI: exit status {code}")
    if rss is not None and rss / 1024 > CLI_RSS_BOUND_MB:
        violations.append(f"CLI: peak RSS {rss / 1024:.0f} MB > {CLI_RSS_BOUND_MB} MB")
    return {
        "cli_code": code,
        "cli_seconds": round(time.perf_counter() - started, 2),
        "cli_peak_mb": None if rss is None else round(rss / 1024, 1),
        "cli_violations": violations,
        "cli_stderr": stderr[-400:],
    }


# --------------------------------------------------------------------------- workers and the long run


def _stall(prices: Any) -> Any:
    time.sleep(10**6)  # a loader that never answers: what the timeout must catch


def worker(specs: list[str], *, results: Path, corpus: Path | None, cli_every: int, options: dict[str, Any]) -> None:
    """Run cases in this interpreter; one JSON line per case to ``results`` (flushed: a dead worker keeps them).

    A spec is ``SEED``, ``SEED:HAZARD`` or ``SEED:HAZARD:SPECIAL`` (an empty part: drawn from the seed).
    """
    import subagent_catalog.prices  # noqa: F401 - imports done before the first case's memory is measured

    with tempfile.TemporaryDirectory(prefix="fuzz-prices-") as work_dir, open(results, "a") as out:
        work = Path(work_dir)
        for index, spec in enumerate(specs):
            seed_text, hazard, special = [*spec.split(":"), "", ""][:3]
            seed = int(seed_text)
            out.write(json.dumps({"started": seed}) + "\n")
            out.flush()
            case = make_case(seed, work, hazard=hazard or options["hazard"], special=special or None)
            stall = seed == options["stall_on_seed"]
            try:
                result = check_case(case, table_fn=_stall if stall else None, timeout=options["case_timeout"])
                if corpus is not None and case.fmt != "mapping" and cli_every and index % cli_every == 0:
                    result.update(check_cli(case, corpus, work, result["outcome"]))
                    result["violations"] += result.pop("cli_violations")
            finally:
                case.cleanup()
            out.write(json.dumps(result, default=str) + "\n")
            out.flush()


def run_cases(
    seeds: list[int | str],
    *,
    corpus: Path | None,
    cli_every: int = 0,
    hazard: str | None = None,
    batch: int = 100,
    case_timeout: int = CASE_TIMEOUT_S,
    stall_on_seed: int | None = None,
) -> list[dict[str, Any]]:
    """Run cases (seeds or ``worker`` specs) in worker interpreters of ``batch`` cases.

    A worker that dies or hangs is a violation of the case it had started; the rest of its batch runs again.
    """
    outcomes: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fuzz-prices-run-") as run_dir:
        pending = [str(seed) for seed in seeds]
        while pending:
            chunk, pending = pending[:batch], pending[batch:]
            results = Path(run_dir) / f"results-{chunk[0].replace(':', '-')}.jsonl"
            argv = [sys.executable, "-m", "tests.fuzz.prices", "--worker", "--results", str(results)]
            argv += ["--seeds", ",".join(map(str, chunk)), "--cli-every", str(cli_every)]
            argv += ["--corpus", str(corpus)] if corpus is not None else []
            argv += ["--hazard", hazard] if hazard else []
            argv += ["--case-timeout", str(case_timeout)]
            argv += ["--stall-on-seed", str(stall_on_seed)] if stall_on_seed is not None else []
            limit = len(chunk) * (case_timeout + 5) + (len(chunk) // max(cli_every, 1) + 1) * CLI_TIMEOUT_S
            env = {**os.environ, "PYTHONPATH": str(REPO)}
            try:
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=limit, env=env, cwd=REPO, check=False
                )
                failure = None if done.returncode == 0 else f"worker exit {done.returncode}: {done.stderr[-600:]}"
            except subprocess.TimeoutExpired:
                failure = f"worker did not finish within {limit} s"
            lines = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
            finished = [line for line in lines if "started" not in line]
            outcomes += finished
            if failure is not None:
                seen = {line["seed"] for line in finished}
                started = [line["started"] for line in lines if "started" in line]
                dead = started[-1] if started and started[-1] not in seen else int(chunk[0].split(":")[0])
                outcomes.append({"seed": dead, "hazard": "?", "outcome": "dead", "violations": [failure]})
                rest = [spec for spec in chunk if int(spec.split(":")[0]) not in seen | {dead}]
                pending = rest + pending
    return outcomes


def summarize(outcomes: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    peaks = [o["peak_mb"] for o in outcomes if o.get("peak_mb") is not None]
    cli_peaks = [o["cli_peak_mb"] for o in outcomes if o.get("cli_peak_mb") is not None]
    cli_seconds = [o["cli_seconds"] for o in outcomes if o.get("cli_seconds") is not None]
    return {
        "cases": len(outcomes),
        "cli_cases": len(cli_peaks),
        "seconds": round(seconds, 1),
        "lib_peak_rss_mb": max(peaks, default=None),
        "lib_rss_bound_mb": LIB_RSS_BOUND_MB,
        "cli_peak_rss_mb": max(cli_peaks, default=None),
        "cli_rss_bound_mb": CLI_RSS_BOUND_MB,
        "slowest_case_s": max((o.get("seconds", 0) for o in outcomes), default=0),
        "slowest_cli_s": max(cli_seconds, default=None),
        "by_hazard": dict(Counter(o["hazard"] for o in outcomes)),
        "by_outcome": dict(Counter(f"{o.get('expected', '?')}->{o['outcome']}" for o in outcomes)),
        "cli_exits": dict(Counter(str(o["cli_code"]) for o in outcomes if "cli_code" in o)),
        "violations": [o for o in outcomes if o["violations"]],
    }


def main(argv: list[str] | None = None) -> int:
    """Run ``--cases`` seeded cases (or, with ``--worker``, a batch of them); exit 1 on any violation."""
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.prices", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--case-seed", type=int, default=None, help="run exactly this case seed again")
    parser.add_argument("--cli-every", type=int, default=10, help="run the CLI on every K-th file case (0: never)")
    parser.add_argument("--batch", type=int, default=200, help="cases per worker interpreter")
    parser.add_argument("--hazard", choices=HAZARDS, default=None)
    parser.add_argument("--out", default=str(REPO / "tests" / "artifacts"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seeds", default="", help=argparse.SUPPRESS)
    parser.add_argument("--results", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--case-timeout", type=int, default=CASE_TIMEOUT_S, help=argparse.SUPPRESS)
    parser.add_argument("--stall-on-seed", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        specs = [s for s in args.seeds.split(",") if s]
        corpus = Path(args.corpus) if args.corpus else None
        options = {"hazard": args.hazard, "case_timeout": args.case_timeout, "stall_on_seed": args.stall_on_seed}
        worker(specs, results=Path(args.results), corpus=corpus, cli_every=args.cli_every, options=options)
        return 0
    seeds: list[int | str] = [args.seed * 1_000_000 + i for i in range(args.cases)]
    if args.case_seed is not None:
        seeds = [args.case_seed]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-prices-corpus-") as corpus_dir:
        corpus = Path(corpus_dir) / "corpus"
        make_corpus(corpus)
        outcomes = run_cases(seeds, corpus=corpus, cli_every=args.cli_every, hazard=args.hazard, batch=args.batch)
    summary = summarize(outcomes, time.perf_counter() - started)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "fuzz-prices.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "violations"}, default=str))
    for outcome in summary["violations"]:
        print(f"seed {outcome['seed']} {outcome['hazard']}: {outcome['violations']}")
    return 1 if summary["violations"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
