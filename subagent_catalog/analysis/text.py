"""Bounded display text: values cut to a length with an ellipsis, lone surrogates replaced; UTF-8 lengths."""

from __future__ import annotations

from subagent_catalog.read.jsvalue import js_text

LABEL_BOUND = 1000
"""Longest text kept for a tooltip (labels, ids, messages); the rest is cut."""


def clip(value: object, limit: int = LABEL_BOUND) -> str:
    """A value as bounded display text: lone surrogates replaced, long text cut with an ellipsis.

    Examples:
        >>> clip("abcdef", 3)
        'abc…'
        >>> clip(None)
        ''
    """
    if value is None:
        return ""
    text = js_text(str(value))
    return text if len(text) <= limit else text[:limit] + "…"


def utf8_length(text: str) -> int:
    """The length of ``text`` in UTF-8 bytes, without encoding it whole (a few MB at a time; lone surrogates 3).

    Examples:
        >>> utf8_length("abc"), utf8_length("é€😀"), utf8_length(chr(0xD800))
        (3, 9, 3)
    """
    if text.isascii():
        return len(text)
    piece = 1 << 22
    return sum(len(text[at : at + piece].encode("utf-8", "surrogatepass")) for at in range(0, len(text), piece))


def clip_strings(value: object, limit: int) -> object:
    """A JSON value with every string longer than ``limit`` characters cut to ``limit`` (and ``…``).

    Examples:
        >>> clip_strings({"a": ["xyz", "ok"], "b": 1}, 2)
        {'a': ['xy…', 'ok'], 'b': 1}
    """
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    if isinstance(value, dict):
        return {key: clip_strings(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [clip_strings(item, limit) for item in value]
    return value
