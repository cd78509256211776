"""subagent_catalog: audit DeepSeek Harness subagent session logs with Polars.

The public API is re-exported here (and ``subagent_catalog.widgets``,
``subagent_catalog.archive`` for the widgets and archives). The package
is layered; a module imports only from its own package and from layers
below it (``tests/test_layout.py`` enforces this and the absence of import
cycles):

- layer 0: ``errors``, ``progress``, ``forking``, ``regular``: exceptions, the progress protocol, process pools,
  reading a file without blocking on a FIFO or reading a device.
- layer 1: ``read``: the dsh on-disk format, one log at a time; ``prices``: what tokens cost;
  ``outputs``: writing output files safely; ``bounds``: the range of every numeric parameter.
- layer 2: ``frames``: the corpus frames and their assembly; ``synth``: writing
  real-format corpora (fixtures, samples, benchmarks).
- layer 3: ``catalog``: upstream's listing over the frames.
- layer 4: ``store``: facts codec and cache, Parquet archives, distributed engines.
- layer 5: ``corpus``: ``read_corpus``, a root in, frames out (walk, cache, pool); ``open_source``,
  the input rule (an archive, or a corpus root read).
- layer 6: ``analysis``: counts, trees and verdicts (the gate's) derived from the corpus and its catalog.
- layer 7: ``views``: report, summary, the gate's text, notebook widgets; ``interop``: OpenTelemetry traces
  (``to_otlp``), SQL with DuckDB (``sql``).
- layer 8: ``cli`` (a package, one module per command family: ``reports`` (``summary``, ``report``,
  ``check``), ``listing`` (``list``, ``conformance``), ``show``, ``search``, ``runs``, ``export``,
  ``interop`` (``otel``, ``sql``); ``io``, ``options``, ``window`` and ``gate`` hold what they share) and the public
  facades (this module, ``widgets``, ``archive``).

Importing the package makes a read given no ``progress=`` show a bar in an interactive
notebook once it has run a second (``views.progress.notebook_progress``, loaded on the
first read; quiet in scripts, in CI and with ``SUBAGENT_CATALOG_PROGRESS=off``).
"""

from typing import TYPE_CHECKING, Any

from subagent_catalog.analysis.findings import FindingsError, Rule, findings, load_rules
from subagent_catalog.analysis.run_summary import RunSummary, error_groups, run_summary, trends
from subagent_catalog.analysis.runs import tool_calls, unpriced_models, usage_by_model, usage_samples
from subagent_catalog.analysis.search import SearchError, search_events, search_sessions
from subagent_catalog.analysis.step_text import transcript_text
from subagent_catalog.analysis.subset import SubsetError, project_subset, subset
from subagent_catalog.analysis.transcript import transcript
from subagent_catalog.analysis.trees import run_trees
from subagent_catalog.analysis.window import Window, WindowError, in_window, parse_instant, window_corpus
from subagent_catalog.catalog import (
    catalog,
    catalog_descendants,
    deviations,
    list_agents_text,
    list_children,
    list_descendants,
    require_session,
)
from subagent_catalog.corpus import open_source, read_corpus
from subagent_catalog.errors import (
    CatalogError,
    CorpusLevelError,
    CorpusRootError,
    EmptySourceError,
    PricesError,
    ResultTooLargeError,
    SessionLookupError,
    SubagentCatalogError,
    UnknownSessionError,
)
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import NOTEBOOK_HTML
from subagent_catalog.frames.events import scan_events
from subagent_catalog.prices import PriceTable, price_table
from subagent_catalog.progress import ClosableProgress, set_default_progress
from subagent_catalog.version import __version__


def _notebook_progress() -> ClosableProgress | None:
    """The default progress of a read: ``views.progress.notebook_progress``, imported at the first read."""
    from subagent_catalog.views.progress import notebook_progress

    return notebook_progress()


set_default_progress(_notebook_progress)


def _comparison_html(comparison: Any) -> str:
    """A ``Comparison`` in a notebook: ``views.compare_display.comparison_html``, imported at the first display."""
    from subagent_catalog.views.compare_display import comparison_html

    return comparison_html(comparison)


NOTEBOOK_HTML["Comparison"] = _comparison_html

if TYPE_CHECKING:
    from subagent_catalog.analysis.compare import Comparison, compare
    from subagent_catalog.interop import otlp_traces, send_otlp, sql, to_otlp, write_otlp_json

_INTEROP = ("otlp_traces", "send_otlp", "sql", "to_otlp", "write_otlp_json")
_COMPARE = ("Comparison", "compare")


def __getattr__(name: str) -> Any:
    """The interop functions and ``compare``, imported on first use (DuckDB, OpenTelemetry, SciPy load only then)."""
    if name in _INTEROP:
        from subagent_catalog import interop

        return getattr(interop, name)
    if name in _COMPARE:
        from subagent_catalog.analysis import compare

        return getattr(compare, name)
    raise AttributeError(f"module 'subagent_catalog' has no attribute {name!r}")


__all__ = [
    "CatalogError",
    "Comparison",
    "Corpus",
    "CorpusLevelError",
    "CorpusRootError",
    "EmptySourceError",
    "FindingsError",
    "PriceTable",
    "PricesError",
    "ResultTooLargeError",
    "Rule",
    "RunSummary",
    "SearchError",
    "SessionLookupError",
    "SubagentCatalogError",
    "SubsetError",
    "UnknownSessionError",
    "Window",
    "WindowError",
    "__version__",
    "catalog",
    "catalog_descendants",
    "compare",
    "deviations",
    "error_groups",
    "findings",
    "in_window",
    "list_agents_text",
    "list_children",
    "list_descendants",
    "load_rules",
    "open_source",
    "otlp_traces",
    "parse_instant",
    "price_table",
    "project_subset",
    "read_corpus",
    "require_session",
    "run_summary",
    "run_trees",
    "scan_events",
    "search_events",
    "search_sessions",
    "send_otlp",
    "sql",
    "subset",
    "to_otlp",
    "tool_calls",
    "transcript",
    "transcript_text",
    "trends",
    "unpriced_models",
    "usage_by_model",
    "usage_samples",
    "window_corpus",
    "write_otlp_json",
]
