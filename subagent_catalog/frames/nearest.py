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


MIN_PREFIX = 4
"""The shortest id prefix ``expand_id`` completes (a shorter one is taken as a whole id)."""


def unknown_id_hint(wanted: str, known: Iterable[str | None], *, otherwise: str) -> tuple[list[str], str]:
    """The ids nearest an unknown ``wanted`` (``nearest_ids``) and the error hint naming them (else ``otherwise``).

    A ``wanted`` shorter than ``MIN_PREFIX`` that starts some ids is a prefix too short to complete: the
    hint says so.

    Examples:
        >>> unknown_id_hint("0c9", ["0c9b39da", "77"], otherwise="check the id")
        (['0c9b39da'], 'an id prefix needs at least 4 characters: did you mean 0c9b39da?')
        >>> unknown_id_hint("0c9b39db", ["0c9b39da"], otherwise="check the id")[1]
        'did you mean 0c9b39da?'
        >>> unknown_id_hint("zz", ["0c9b39da"], otherwise="check the id")[1]
        'check the id'
    """
    near = nearest_ids(wanted, known)
    hint = f"did you mean {', '.join(near)}?" if near else otherwise
    if len(wanted) < MIN_PREFIX and any(value.startswith(wanted) for value in near):
        hint = f"an id prefix needs at least {MIN_PREFIX} characters: {hint}"
    return near, hint


def expand_id(wanted: str, known: Iterable[str | None], *, also: Iterable[str | None] = ()) -> str:
    """The id ``wanted`` names: itself when it is an id, else the one id it is a prefix of.

    A prefix of at least ``MIN_PREFIX`` characters that starts exactly one id completes to it
    (``also``: more ids that count as known, such as ``parentSession`` values, matched the same
    way); a prefix of several ids is an error listing them; anything else comes back as it is,
    for the caller's "no such id" error with its nearest ids.

    Raises:
        SessionLookupError: the prefix starts more than one id (the message lists up to ten).

    Examples:
        >>> expand_id("a317", ["a317faa2", "b2"]), expand_id("b2", ["a317faa2", "b2"]), expand_id("zz", ["a"])
        ('a317faa2', 'b2', 'zz')
        >>> expand_id("a317", ["a317faa2", "a3170000"])
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.SessionLookupError: id prefix 'a317' is ambiguous: 2 ids start with it: ...
    """
    from subagent_catalog.errors import SessionLookupError

    pool = {value for value in known if value} | {value for value in also if value}
    if wanted in pool or len(wanted) < MIN_PREFIX:
        return wanted
    found = sorted(value for value in pool if value.startswith(wanted))
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        shown = ", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")
        raise SessionLookupError(
            f"id prefix {wanted!r} is ambiguous: {len(found)} ids start with it: {shown}",
            session_id=wanted,
            hint="type more of the id",
        )
    return wanted
