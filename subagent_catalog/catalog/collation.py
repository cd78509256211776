"""Sibling order: ``createdAt``, then JavaScript ``localeCompare`` (ICU, en-US).

Upstream breaks ``createdAt`` ties with ``a.id.localeCompare(b.id)``: a
Unicode collation (``"a" < "A" < "b"``), not code-unit order. The Unicode
Collation Algorithm with the default table (``pyuca``) gives the same order
on every tie in the conformance corpora; equal keys keep listing order, as
upstream's stable sort does. Ties on ``createdAt`` are rare, so
``sort_siblings`` computes collation keys only inside a tie, and ``pyuca``
(and its table) is loaded only when a key is first needed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import pyuca

_COLLATOR: pyuca.Collator | None = None

T = TypeVar("T")


def _collator() -> pyuca.Collator:
    global _COLLATOR
    if _COLLATOR is None:
        import pyuca

        _COLLATOR = pyuca.Collator()
    return _COLLATOR


_PLAIN_PRIMARY = dict(
    zip(
        "-0123456789abcdefghijklmnopqrstuvwxyz",
        (525, *range(7229, 7240), 7264, 7290, 7311, 7338, 7397, 7412, 7448, 7474, 7500, 7525, 7543, 7594, 7609,
         7645, 7692, 7713, 7731, 7793, 7829, 7861, 7907, 7925, 7935, 7947, 7969),
        strict=True,
    )
)  # fmt: skip
"""The default table's primary weight of each character of lowercase ids (UUIDs): one collation
element each, secondary 32 and tertiary 2 (a test checks these against ``pyuca``)."""


def _plain_key(text: str) -> tuple[int, ...] | None:
    """``pyuca``'s sort key of a string of ``_PLAIN_PRIMARY`` characters, without loading its table."""
    try:
        primaries = [_PLAIN_PRIMARY[ch] for ch in text]
    except KeyError:
        return None
    return (*primaries, 0, *(32,) * len(text), 0, *(2,) * len(text), 0)


@lru_cache(maxsize=65536)
def collation_key(text: str) -> tuple[int, ...]:
    """A sort key with ``localeCompare`` order.

    Lowercase ids (``-``, digits, ``a``-``z``: UUIDs) get their key without
    loading ``pyuca``'s table (about 0.25 s).

    Examples:
        >>> sorted(["B", "a", "c-x", "A", "E"], key=collation_key)
        ['a', 'A', 'B', 'c-x', 'E']
    """
    plain = _plain_key(text)
    if plain is not None:
        return plain
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


def sort_siblings(items: list[T], created: Callable[[T], float], ident: Callable[[T], str]) -> None:
    """Sort ``items`` in place by ``created``, then by ``localeCompare`` of ``ident`` among ties only.

    The same order as a stable sort on ``(created(x), collation_key(ident(x)))``
    (``created`` must never be NaN), but collation keys are computed only for
    items that share their ``created`` with another.

    Examples:
        >>> rows = [(2.0, "b"), (1.0, "B"), (1.0, "a"), (0.0, "z")]
        >>> sort_siblings(rows, lambda r: r[0], lambda r: r[1])
        >>> rows
        [(0.0, 'z'), (1.0, 'a'), (1.0, 'B'), (2.0, 'b')]
    """
    items.sort(key=created)
    start, total = 0, len(items)
    while start < total:
        stamp = created(items[start])
        end = start + 1
        while end < total and created(items[end]) == stamp:
            end += 1
        if end - start > 1:
            items[start:end] = sorted(items[start:end], key=lambda item: collation_key(ident(item)))
        start = end
