"""Bounded display text: values cut to a length with an ellipsis, lone surrogates replaced."""

from __future__ import annotations

import re

LABEL_BOUND = 1000
"""Longest text kept for a tooltip (labels, ids, messages); the rest is cut."""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


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
    text = _LONE_SURROGATE.sub("\ufffd", str(value))
    return text if len(text) <= limit else text[:limit] + "…"
