"""The dashboard's way into the browser: a session of the table, revealed in a linked ``CatalogBrowser``.

``DiagnosticsDashboard.link_browser(browser)`` makes the table's rows clickable (``dashboard_rows``); a
click on a row sets the dashboard's ``revealed`` trait, which reveals that session in the browser
(``CatalogBrowser.reveal``: its ancestors opened, scrolled to, selected, its detail pane shown).
Setting ``revealed`` from code does the same.
"""

from __future__ import annotations

from typing import Any


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


def row_clicked(board: Any, session_id: str | None) -> None:
    """A click on a row of a dashboard's table (its ``table.clicked``): reveal the row's session.

    Sets the dashboard's ``revealed`` (or reveals it again when it is already ``revealed``: the browser
    may have moved on since) and clears ``clicked``, so a second click on the same row counts too. Nothing
    happens without a linked browser.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.views.widgets.browser import CatalogBrowser
        >>> from subagent_catalog.views.widgets.dashboard import DiagnosticsDashboard
        >>> corpus = read_corpus("data/sample")
        >>> board, browser = DiagnosticsDashboard(corpus), CatalogBrowser(corpus)
        >>> board.link_browser(browser)
        >>> row_clicked(board, "scan-tests"); board.revealed, board.table.clicked
        ('scan-tests', None)
    """
    if not session_id:
        return
    board.table.clicked = None
    if board.browser is None:
        return
    if board.revealed == session_id:
        reveal_in(board.browser, session_id)
    else:
        board.revealed = session_id
