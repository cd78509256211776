"""Bounded display text: values cut to a length with an ellipsis, lone surrogates replaced."""

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
