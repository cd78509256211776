"""Notebook widgets: the public name of ``subagent_catalog.views.widgets``.

Examples:
    >>> from subagent_catalog.views.widgets.browser import CatalogBrowser
    >>> from subagent_catalog.views.widgets.dashboard import DiagnosticsDashboard
    >>> CatalogBrowser.__module__
    'subagent_catalog.views.widgets.browser'
"""

from subagent_catalog.progress import set_default_progress
from subagent_catalog.views.progress import notebook_progress
from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard

set_default_progress(notebook_progress)  # in a notebook, a read given no progress shows a bar after a second

__all__ = ["CatalogBrowser", "DiagnosticsDashboard"]
