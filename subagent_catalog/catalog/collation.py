"""Sibling order: ``createdAt``, then JavaScript ``localeCompare`` (ICU, en-US).

Upstream breaks ``createdAt`` ties with ``a.id.localeCompare(b.id)``: a
Unicode collation (``"a" < "A" < "b"``), not code-unit order. The Unicode
Collation Algorithm with the default table (``pyuca``) gives the same order
on every tie in the conformance corpora; equal keys keep listing order, as
upstream's stable sort does.
"""

from __future__ import annotations

from functools import lru_cache

import pyuca

_COLLATOR: pyuca.Collator | None = None


def _collator() -> pyuca.Collator:
    global _COLLATOR
    if _COLLATOR is None:
        _COLLATOR = pyuca.Collator()
    return _COLLATOR


@lru_cache(maxsize=65536)
def collation_key(text: str) -> tuple[int, ...]:
    """A sort key with ``localeCompare`` order.

    Examples:
        >>> sorted(["B", "a", "c-x", "A", "E"], key=collation_key)
        ['a', 'A', 'B', 'c-x', 'E']
    """
    try:
        return tuple(_collator().sort_key(text))
    except (KeyError, ValueError, IndexError):
        # Unassigned or malformed code points: fall back to code-unit order after all real keys.
        return (0xFFFF, *(ord(ch) for ch in text))


def locale_compare(a: str, b: str) -> int:
    """``a.localeCompare(b)`` as -1, 0 or 1.

    Examples:
        >>> locale_compare("a", "A"), locale_compare("\\u00e9", "e\\u0301")
        (-1, 0)
    """
    ka, kb = collation_key(a), collation_key(b)
    return (ka > kb) - (ka < kb)
