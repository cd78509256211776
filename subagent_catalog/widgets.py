"""Notebook widgets: the public name of ``subagent_catalog.views.widgets``.

Examples:
    >>> from subagent_catalog.views.widgets.browser import CatalogBrowser
    >>> from subagent_catalog.views.widgets.dashboard import DiagnosticsDashboard
    >>> CatalogBrowser.__module__
    'subagent_catalog.views.widgets.browser'
"""

from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard

__all__ = ["CatalogBrowser", "DiagnosticsDashboard"]
