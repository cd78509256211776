"""``nearest_ids``: the known ids closest to one that is not known, for error hints."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def nearest_ids(wanted: str, known: Iterable[str | None], *, n: int = 3) -> list[str]:
    """The known ids a mistyped or shortened ``wanted`` most likely meant, best first.

    Ids that start with ``wanted`` come first (a pasted prefix of a UUID), in
    sorted order; then ids similar to it by ``difflib``'s ratio (at least 0.6).
    Each id appears once; ``None`` values are ignored.

    Args:
        wanted: the id that was asked for.
        known: the ids that exist.
        n: at most this many ids.

    Examples:
        >>> nearest_ids("a31", ["b2", "a317faa2", "a3170000"])
        ['a3170000', 'a317faa2']
        >>> nearest_ids("a317faa3", ["a317faa2", "zzz"])
        ['a317faa2']
        >>> nearest_ids("", ["x"])
        []
    """
    if not wanted or n <= 0:
        return []
    pool = sorted({value for value in known if value})
    found = [value for value in pool if value.startswith(wanted) and value != wanted][:n]
    if len(found) < n:
        rest = [value for value in pool if value not in found and value != wanted]
        found += difflib.get_close_matches(wanted, rest, n=n - len(found), cutoff=0.6)
    return found
