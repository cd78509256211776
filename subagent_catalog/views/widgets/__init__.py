"""Notebook widgets (layer 7, in `views`): a session-tree browser and a diagnostics dashboard.

Import this package explicitly; ``import subagent_catalog`` never loads
ipywidgets. Every widget keeps its state in traitlets traits, so it can be
driven from code (set a trait, call a handler) as well as by clicking.

Examples:
    >>> from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard
    >>> CatalogBrowser.__name__, DiagnosticsDashboard.__name__
    ('CatalogBrowser', 'DiagnosticsDashboard')
"""

from subagent_catalog.views.widgets.browser import CatalogBrowser
from subagent_catalog.views.widgets.dashboard import DiagnosticsDashboard

__all__ = ["CatalogBrowser", "DiagnosticsDashboard"]
