"""The dashboard's way into the browser: a session of the table, revealed in a linked ``CatalogBrowser``.

``DiagnosticsDashboard.link_browser(browser)`` shows a picker of the table's sessions (each named as
the table names it: label, else id); picking one sets the dashboard's ``revealed`` trait, which
reveals that session in the browser (``CatalogBrowser.reveal``: its ancestors opened, scrolled to,
selected, its detail pane shown). Setting ``revealed`` from code does the same.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import polars as pl

from subagent_catalog.views.names import session_name, short_id
from subagent_catalog.views.widgets.dashboard_table import TABLE_ROWS

PICK = "reveal a session of the table in the browser…"
"""The picker's empty choice."""


def reveal_choices(frame: pl.DataFrame) -> list[tuple[str, str]]:
    """The picker's choices for the table's rows: (shown name, session id), the first ``TABLE_ROWS`` with an id.

    Examples:
        >>> frame = pl.DataFrame({"id": ["b4a2c0de-1111-4222-8333-944455556666", None], "label": ["fix", "x"]})
        >>> reveal_choices(frame)
        [('fix · b4a2c0de…', 'b4a2c0de-1111-4222-8333-944455556666')]
    """
    out = []
    for sid, label in frame.head(TABLE_ROWS).select("id", "label").iter_rows():
        if sid is None:
            continue
        name = session_name(label, None)
        out.append((f"{name} · {short_id(sid)}" if name else sid, sid))
    return out


def reveal_picker() -> widgets.Dropdown:
    """The (hidden until a browser is linked) picker of the table's sessions.

    Examples:
        >>> reveal_picker().layout.display
        'none'
    """
    return widgets.Dropdown(
        options=[(PICK, "")], value="", layout=widgets.Layout(width="min(100%, 520px)", display="none")
    )


def reveal_in(browser: Any, session_id: str | None) -> None:
    """Reveal a session in a linked browser (nothing without a browser or an id; an unknown id is ignored).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.views.widgets.browser import CatalogBrowser
        >>> browser = CatalogBrowser(read_corpus("data/sample"))
        >>> reveal_in(browser, "nowhere"); browser.selected is None
        True
        >>> reveal_in(browser, "auth-refactor"); browser.selected
        0
    """
    if browser is None or not session_id:
        return
    try:
        browser.reveal(session_id)
    except KeyError:  # not a session of the browser's corpus (the dashboard counts a live overlay too)
        return
