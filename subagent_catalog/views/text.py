"""Untrusted text made safe for where it is printed: terminal lines, JavaScript-style strings, CSV cells."""

from __future__ import annotations

import re

import polars as pl

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: object, *, limit: int = 300) -> str:
    """A value made safe for a terminal line: control characters escaped, length bounded.

    Examples:
        >>> printable("a\\x1b[31mb\\nc")
        'a\\\\x1b[31mb\\\\nc'
        >>> printable("x" * 10, limit=4)
        'xxxx…'
        >>> printable(None)
        '-'
    """
    if text is None:
        return "-"
    value = str(text).replace("\n", "\\n").replace("\t", "\\t")
    value = _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", value
    )
    return value if len(value) <= limit else value[:limit] + "…"


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """Neutralise spreadsheet formulas: a text cell starting with ``= + - @``, tab or CR gets a leading ``'``.

    Examples:
        >>> csv_safe(pl.DataFrame({"label": ["=SUM(A1)", "-x", "ok", None]}))["label"].to_list()
        ["'=SUM(A1)", "'-x", 'ok', None]
    """
    pattern = "^[" + "".join("\\" + ch if ch in "-+" else ch for ch in FORMULA_PREFIXES) + "]"
    pattern = pattern.replace("\t", "\\t").replace("\r", "\\r")
    exprs = [
        pl.when(pl.col(name).str.contains(pattern)).then(pl.lit("'") + pl.col(name)).otherwise(pl.col(name)).alias(name)
        for name, dtype in frame.schema.items()
        if dtype == pl.String
    ]
    return frame.with_columns(exprs) if exprs else frame
