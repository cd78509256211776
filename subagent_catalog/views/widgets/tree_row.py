"""Small pieces of the browser: the filters' "(any)" choice and the shape of a row's facts."""

from __future__ import annotations

from typing import Any

ANY = "(any)"

RowInfo = dict[str, Any]
"""One tree or result row: ``key``, ``text``, ``tooltip``, ``style`` (``""``, ``"warning"``, ``"danger"``),
``children`` (how many sessions name it as parent); for a drawn tree row also ``position``,
``expandable`` and ``expanded``."""
