"""JavaScript value semantics for parsed JSON.

Upstream is TypeScript: it parses log lines with ``JSON.parse`` over UTF-8
decoded with replacement characters and checks numbers with
``Number.isSafeInteger``.  The helpers here give the same answers for the
Python values our parser produces, so every verdict matches upstream.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal, TypeGuard

import orjson

MAX_SAFE_INTEGER = 2**53 - 1


class JsonLineError(ValueError):
    """A line that ``JSON.parse`` would reject."""


def _reject_constant(name: str) -> Any:
    raise JsonLineError(f"{name} is not JSON")


def _keep_negative_zero(text: str) -> int | float:
    return -0.0 if text == "-0" else int(text)


def decode_utf8(raw: bytes) -> str:
    """Decode bytes as Node's ``Buffer.toString('utf8')`` does.

    Examples:
        >>> decode_utf8(b"a\\xffb")
        'a\\ufffdb'
    """
    return raw.decode("utf-8", errors="replace")


def parse_json(raw: bytes | str, *, keep_negative_zero: bool = False) -> Any:
    """Parse one JSON text with ``JSON.parse`` semantics.

    Invalid UTF-8 becomes U+FFFD before parsing (as Node does), ``NaN`` and
    ``Infinity`` are rejected and lone surrogate escapes are accepted. With
    ``keep_negative_zero`` a literal ``-0`` stays a negative zero (headers
    reject it; nothing else can tell it from ``0``).

    Raises:
        JsonLineError: when ``JSON.parse`` would throw.

    Examples:
        >>> parse_json(b'{"a": [1, 2.5]}')
        {'a': [1, 2.5]}
    """
    if not keep_negative_zero:
        try:
            return orjson.loads(raw)  # valid UTF-8 and no lone surrogates: the fast path
        except orjson.JSONDecodeError:
            pass
    text = decode_utf8(raw) if isinstance(raw, bytes) else raw
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    else:
        if not keep_negative_zero or "-0" not in text:
            return value
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_int=_keep_negative_zero)
    except RecursionError as error:
        raise JsonLineError("JSON nesting too deep for this reader") from error
    except ValueError as error:
        raise JsonLineError(str(error)) from error


def is_number(value: object) -> TypeGuard[int | float]:
    """Whether ``typeof value === 'number'``.

    Examples:
        >>> is_number(1), is_number(True), is_number("1")
        (True, False, False)
    """
    kind = type(value)
    if kind is int or kind is float:
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def js_number(value: int | float) -> float:
    """The double JavaScript holds for a parsed JSON number.

    Examples:
        >>> js_number(10**400)
        inf
    """
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def is_safe_integer(value: object) -> TypeGuard[int | float]:
    """``Number.isSafeInteger(value)``.

    Examples:
        >>> is_safe_integer(3), is_safe_integer(3.0), is_safe_integer(2**53)
        (True, True, False)
    """
    if type(value) is int:
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    if not is_number(value):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_SAFE_INTEGER
    assert isinstance(value, float)
    return math.isfinite(value) and value.is_integer() and abs(value) <= MAX_SAFE_INTEGER


def is_negative_zero(value: object) -> bool:
    """``Object.is(value, -0)``.

    Examples:
        >>> is_negative_zero(-0.0), is_negative_zero(0)
        (True, False)
    """
    return isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0


def is_record(value: object) -> bool:
    """``typeof value === 'object' && value !== null`` (arrays included).

    Examples:
        >>> is_record({}), is_record([]), is_record(None)
        (True, True, False)
    """
    return isinstance(value, (dict, list))


def js_strict_equal(a: object, b: object) -> bool:
    """``a === b`` for two independently parsed JSON values.

    Objects and arrays from two parses are never identical.

    Examples:
        >>> js_strict_equal(1, 1.0), js_strict_equal({}, {}), js_strict_equal(True, 1)
        (True, False, False)
    """
    if type(a) is int and type(b) is int and -MAX_SAFE_INTEGER <= b <= MAX_SAFE_INTEGER:
        return a == b
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    if is_number(a) and is_number(b):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float))
        return js_number(a) == js_number(b)
    if is_number(a) or is_number(b):
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return type(a) is type(b) and a == b


def js_string(value: object) -> str:
    """``String(value)`` for a parsed JSON value.

    Examples:
        >>> js_string(None), js_string(5), js_string(2.5), js_string(True)
        ('null', '5', '2.5', 'true')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        number = js_number(value)
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        if number.is_integer() and abs(number) < 1e21:
            return str(int(number))
        return repr(number)
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    return "[object Object]"


def utf16_units(text: str) -> list[int]:
    """The UTF-16 code units of ``text`` (lone surrogates kept).

    Examples:
        >>> utf16_units("a\\U0001F600")
        [97, 55357, 56832]
    """
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]


def frame_text(value: str | None) -> str | None:
    """A string as it can live in a Polars (UTF-8) column.

    JavaScript strings may hold lone surrogates (from ``\\ud83d`` escapes);
    UTF-8 cannot. Those code units become U+FFFD here; exact values stay in
    the ``*_json`` columns and in the catalog's own rows.

    Examples:
        >>> frame_text("a\\ud83db"), frame_text("ok")
        ('a\\ufffdb', 'ok')
    """
    if value is None or value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return value


def clean_row(row: dict[str, Any]) -> dict[str, Any]:
    """Apply ``frame_text`` to every string value (and string list) of a row.

    Examples:
        >>> clean_row({"a": "x\\udc00", "b": 1, "c": ["\\ud800"]})
        {'a': 'x\\ufffd', 'b': 1, 'c': ['\\ufffd']}
    """
    return {key: frame_value(value) for key, value in row.items()}


def frame_value(value: Any) -> Any:
    """A row value as it can live in a Polars column: its strings made ``frame_text``.

    A string, each item of a string list, or each string of each record (tuple) of a list of records.

    Examples:
        >>> frame_value("x\\udc00"), frame_value(["\\ud800", "a"]), frame_value(3)
        ('x\\ufffd', ['\\ufffd', 'a'], 3)
        >>> frame_value([(1, "\\ud800"), (2, None)])
        [(1, '\\ufffd'), (2, None)]
    """
    if isinstance(value, str):
        return frame_text(value)
    if isinstance(value, list) and value:
        if isinstance(value[0], str):
            return [frame_text(v) for v in value]
        if isinstance(value[0], tuple):
            return [tuple(frame_text(v) if isinstance(v, str) else v for v in record) for record in value]
    return value


def _scalar_text(value: Any, ascii_only: bool, roundtrip: bool) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "null"
        if math.isinf(value):
            if not roundtrip:
                return "null"
            return "1e999" if value > 0 else "-1e999"  # parses back to the same infinity
        return repr(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=ascii_only)
        if not ascii_only:
            text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
        return text
    raise TypeError(f"not a JSON value: {type(value).__name__}")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(value: Any, *, nonfinite: Literal["null", "roundtrip"] = "null", ascii_only: bool = False) -> str:
    """Compact JSON text of a parsed value, for any value our parser produces.

    Like ``JSON.stringify`` (compact, UTF-8 text, lone surrogates escaped,
    infinities written ``null``), and total: integers beyond 64 bits and
    nesting of any depth (no recursion) are fine. ``nonfinite="roundtrip"``
    writes infinities as ``1e999`` so the text parses back to the same value.

    Examples:
        >>> json_text({"a": [1, "\\ud800", 10**30, float("inf")]})
        '{"a":[1,"\\\\ud800",1000000000000000000000000000000,null]}'
        >>> json_text([float("-inf")], nonfinite="roundtrip")
        '[-1e999]'
        >>> deep: list = []
        >>> for _ in range(5000):
        ...     deep = [deep]
        >>> len(json_text(deep))
        10002
    """
    if not ascii_only:
        try:
            text = orjson.dumps(value).decode()
        except (orjson.JSONEncodeError, TypeError):
            pass
        else:
            if nonfinite == "null" or "null" not in text:
                return text  # orjson writes infinities as null: exact unless a null might be one
    roundtrip = nonfinite == "roundtrip"
    parts: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Token):
            parts.append(item.text)
        elif isinstance(item, dict):
            parts.append("{")
            stack.append(_Token("}"))
            entries = list(item.items())
            for index in range(len(entries) - 1, -1, -1):
                key, child = entries[index]
                stack.append(child)
                stack.append(_Token(("," if index else "") + _scalar_text(str(key), ascii_only, roundtrip) + ":"))
        elif isinstance(item, list):
            parts.append("[")
            stack.append(_Token("]"))
            for index in range(len(item) - 1, -1, -1):
                stack.append(item[index])
                if index:
                    stack.append(_Token(","))
        else:
            parts.append(_scalar_text(item, ascii_only, roundtrip))
    return "".join(parts)


class _Token:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def js_text(text: str) -> str:
    """Text as Node prints it: lone surrogates become U+FFFD.

    Examples:
        >>> js_text("a\\ud800b")
        'a\\ufffdb'
    """
    return _LONE_SURROGATE.sub("\ufffd", text)
