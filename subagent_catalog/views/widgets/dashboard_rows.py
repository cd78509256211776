"""The dashboard's table of affected sessions, whose rows reveal their session in a linked browser on a click.

``DashboardRows`` is a small `anywidget <https://anywidget.dev>`_ (``static/dashboard_rows.js`` and
``static/dashboard_rows.css``, shipped in this package): it shows the HTML of its ``value`` trait (the
``dashboard_table.affected_table_html`` output, a ``data-sid`` attribute on each row with a session id).
When ``clickable`` (the dashboard has a linked browser) such a row is a button (a pointer cursor, focusable,
``role="button"``): a click, or Enter or Space on the focused row, sets ``clicked`` to its session id. The
dashboard observes ``clicked``, sets its ``revealed`` trait and clears ``clicked`` again, so a second click
on the same row reveals it again. Without a linked browser the rows are plain table rows.
"""

from __future__ import annotations

from pathlib import Path

import anywidget
import traitlets

STATIC = Path(__file__).resolve().parent / "static"


class DashboardRows(anywidget.AnyWidget):
    """An HTML table whose rows (``tr[data-sid]``) set ``clicked`` to their session id when ``clickable``.

    Examples:
        >>> rows = DashboardRows(value='<table><tr data-sid="a"><td>a</td></tr></table>')
        >>> rows.clickable, rows.clicked
        (False, None)
        >>> rows.clicked = "a"  # what a click on the row does in the front end
        >>> rows.clicked
        'a'
    """

    _esm = (STATIC / "dashboard_rows.js").read_text(encoding="utf-8")
    _css = (STATIC / "dashboard_rows.css").read_text(encoding="utf-8")

    value = traitlets.Unicode("", help="the table's HTML (rows with a session carry data-sid)").tag(sync=True)
    clickable = traitlets.Bool(False, help="rows reveal their session on a click (a browser is linked)").tag(sync=True)
    clicked = traitlets.Unicode(None, allow_none=True, help="the session id of the row clicked last").tag(sync=True)
