"""Untrusted text made safe for where it is printed: terminal lines, Markdown, JavaScript-style strings, CSV cells.

**The terminal rule.** Whatever reaches a terminal stream (stdout text, CSV
and JSON, every error and warning line on stderr) has these characters
escaped, so a corpus value can neither drive the terminal nor reorder or hide
the text around it:

* C0 controls (ESC, BEL, CR, backspace, ...; newline and tab too unless a
  caller keeps them), DEL and the C1 controls U+0080-U+009F (U+009B is a
  one-byte CSI on some terminals);
* the Unicode *format* characters (category Cf): the bidirectional
  embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069, the
  marks U+200E, U+200F, U+061C, the invisible U+200B (zero width space),
  U+2060-U+2064, U+FEFF, U+00AD, the tag characters U+E0000-U+E007F (invisible
  "ASCII smuggling") and the rest of the category;
* the line and paragraph separators U+2028, U+2029 and lone surrogates
  (which no UTF-8 stream can encode).

U+200C and U+200D (zero width non-joiner and joiner) are kept: emoji
sequences and Arabic and Indic scripts need them, and they can neither move
the cursor nor reorder text. Invisible *letters* (U+3164 and the like) and
look-alike characters are not escaped either: they are ordinary text.

An escape is ``\\xNN`` below U+0100, ``\\uNNNN`` in the BMP and
``\\UNNNNNNNN`` above (``\\n``, ``\\t`` for newline and tab); a backslash
already in the value is left alone. JSON output uses JSON's own ``\\uNNNN``
escapes instead, so it still parses to the exact values. Files written with
``-o`` are never escaped.
"""

from __future__ import annotations

import re

import polars as pl

TERMINAL_UNSAFE = (
    "\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f"
)
"""The characters the terminal rule escapes, as the body of a regular-expression class."""

_UNSAFE = re.compile(f"[{TERMINAL_UNSAFE}]")
_SHORT = {"\n": "\\n", "\t": "\\t"}


def _escape(char: str) -> str:
    code = ord(char)
    if char in _SHORT:
        return _SHORT[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def terminal_safe(text: str, *, keep: str = "") -> str:
    r"""``text`` with every character of the terminal rule escaped, except those in ``keep``.

    Args:
        text: the value.
        keep: characters to leave as they are (``"\n"`` for a block of lines).

    Examples:
        >>> terminal_safe("id\x1b]8;;http://evil\x07\u202eab\x9b2J")
        'id\\x1b]8;;http://evil\\x07\\u202eab\\x9b2J'
        >>> terminal_safe("a\nb\tc"), terminal_safe("a\nb", keep="\n")
        ('a\\nb\\tc', 'a\nb')
        >>> terminal_safe("tag\U000e0041 ok \u00e9\u200d")
        'tag\\U000e0041 ok é\u200d'
    """
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escape(m.group()), text)


def printable(text: object, *, limit: int = 300) -> str:
    r"""A value made safe for a terminal line: the terminal rule applied (newlines too), length bounded.

    Examples:
        >>> printable("a\x1b[31mb\nc")
        'a\\x1b[31mb\\nc'
        >>> printable("x" * 10, limit=4)
        'xxxx…'
        >>> printable(None)
        '-'
    """
    if text is None:
        return "-"
    value = terminal_safe(str(text))
    return value if len(value) <= limit else value[:limit] + "…"


_MARKDOWN_SPECIAL = re.compile(r"[\\`*_\[\]|~#]")
_LINE_START = re.compile(r"^(?:[-+](?=\s|$)|[-=]+\s*$|\d{1,9}[.)](?=\s|$))")
"""A list item's marker, a thematic break or a setext underline, at the start of a value."""


def _unmark(found: re.Match[str]) -> str:
    """The marker with its list punctuation (after the digits) or its first character escaped."""
    text = found[0]
    return f"{text[:-1]}\\{text[-1]}" if text[0].isdigit() else f"\\{text}"


def md_cell(value: object, *, limit: int = 200) -> str:
    r"""A value as Markdown text that renders as itself: the one escaper of every Markdown writer.

    For a table cell, a list item or a line of a CI job summary: whitespace (newlines too) folded to
    one space, the terminal rule applied (``printable``, at most ``limit`` characters), ``&``, ``<``
    and ``>`` as HTML entities (no tag, comment or entity of the value is live), and the characters
    that make inline markup backslash-escaped (emphasis, code, links and images, pipes, headings,
    strikethrough), as is a list or heading marker the value starts with. ``None`` is ``–``.

    Examples:
        >>> print(md_cell("a|b <img src=x> ![](http://x) <!-- c\nd"))
        a\|b &lt;img src=x&gt; !\[\](http://x) &lt;!-- c d
        >>> print(md_cell("- 1 * 2 = $2"), md_cell("3. x"), md_cell("-5.0 %"), md_cell(None), md_cell("x" * 9, limit=3))
        \- 1 \* 2 = $2 3\. x -5.0 % – xxx…
    """
    if value is None:
        return "–"
    text = printable(" ".join(str(value).split()), limit=limit)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _LINE_START.sub(_unmark, _MARKDOWN_SPECIAL.sub(r"\\\g<0>", text))


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_terminal(text: str) -> str:
    r"""JSON text with the terminal rule applied as JSON escapes: it parses to the same value.

    The characters the rule escapes can only stand inside JSON strings, so
    each is replaced by its ``\\uNNNN`` escape (a surrogate pair above the
    BMP); newlines between values are kept.

    Examples:
        >>> import json
        >>> text = json.dumps({"label": "a\u202eb\x9b\U000e0041"}, ensure_ascii=False)
        >>> json_terminal(text)
        '{"label": "a\\u202eb\\u009b\\udb40\\udc41"}'
        >>> json.loads(json_terminal(text)) == json.loads(text)
        True
    """
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: m.group() if m.group() == "\n" else _json_escape(m.group()), text)


def terminal_frame(frame: pl.DataFrame) -> pl.DataFrame:
    r"""The frame with the terminal rule applied to every text cell (newlines and tabs too).

    For CSV printed to a terminal: one record per line, no control or bidi
    character left. A file written with ``-o`` keeps the exact values.

    Examples:
        >>> terminal_frame(pl.DataFrame({"label": ["a\x1b[2Jb", "ok", None], "n": [1, 2, 3]})).to_dicts()[0]
        {'label': 'a\\x1b[2Jb', 'n': 1}
    """
    columns = [
        pl.Series(name, [None if v is None else terminal_safe(v) for v in frame[name].to_list()], dtype=pl.String)
        for name, dtype in frame.schema.items()
        if dtype == pl.String
    ]
    return frame.with_columns(columns) if columns else frame


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_cells(frame: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists, arrays, structs) as JSON text, which CSV can hold; the rest unchanged.

    Examples:
        >>> csv_cells(pl.DataFrame({"tools": [["grep", "shell"], None, []]}))["tools"].to_list()
        ['["grep","shell"]', None, '[]']
    """
    import json

    def encode(value: object) -> str | None:
        return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)

    nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
    if not nested:
        return frame
    return frame.with_columns(
        pl.Series(name, [encode(value) for value in frame[name].to_list()], dtype=pl.String) for name in nested
    )


def csv_safe(frame: pl.DataFrame) -> pl.DataFrame:
    """Neutralise spreadsheet formulas in every text cell.

    A cell starting with ``= + - @``, tab or CR gets a leading ``'``; so does
    every ``= + - @`` after a ``;`` or a tab (and any spaces) inside a cell: a
    spreadsheet whose list separator is ``;`` splits the cell there (quoting
    does not stop it), and the piece after it would start a formula.

    Examples:
        >>> csv_safe(pl.DataFrame({"label": ["=SUM(A1)", "-x", "ok", None]}))["label"].to_list()
        ["'=SUM(A1)", "'-x", 'ok', None]
        >>> csv_safe(pl.DataFrame({"label": ["x;=cmd|' /C calc'!A0", "a; -b"]}))["label"].to_list()
        ["x;'=cmd|' /C calc'!A0", "a; '-b"]
    """
    pattern = "^[" + "".join("\\" + ch if ch in "-+" else ch for ch in FORMULA_PREFIXES) + "]"
    pattern = pattern.replace("\t", "\\t").replace("\r", "\\r")
    inner = "([;\\t] *)([=+\\-@])"
    exprs = [
        pl.when(pl.col(name).str.contains(pattern))
        .then(pl.lit("'") + pl.col(name))
        .otherwise(pl.col(name))
        .str.replace_all(inner, "${1}'${2}")
        .alias(name)
        for name, dtype in frame.schema.items()
        if dtype == pl.String
    ]
    return frame.with_columns(exprs) if exprs else frame
