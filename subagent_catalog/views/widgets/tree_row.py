"""Small pieces of the browser's view: a tree row widget and the filters' "(any)" choice."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

ANY = "(any)"


class _AnyValue:
    """The dropdowns' "(any)" choice (a dropdown whose value is ``None`` shows no selection)."""

    def __repr__(self) -> str:
        return ANY


ANY_VALUE = _AnyValue()


class TreeRow(widgets.HBox):  # type: ignore[misc]
    """One rendered tree or result row: an expand toggle and a select button.

    Attributes:
        position: the node's tree position (``"3/17/40"``: session keys from the root).
        key: the session's row index in ``corpus.sessions``.
        toggle_button: expands or collapses the node (disabled for leaves).
        select_button: selects the session.
    """

    def __init__(self, position: str, key: int, toggle: widgets.Button, select: widgets.Button, layout: Any) -> None:
        super().__init__([toggle, select], layout=layout)
        self.position = position
        self.key = key
        self.toggle_button = toggle
        self.select_button = select
