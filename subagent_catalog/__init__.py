"""subagent_catalog: audit DeepSeek Harness subagent session logs with Polars."""

from subagent_catalog.catalog import (
    catalog,
    catalog_descendants,
    deviations,
    list_agents_text,
    list_children,
    list_descendants,
)
from subagent_catalog.corpus import Corpus, read_corpus
from subagent_catalog.errors import CatalogError, CorpusRootError, SubagentCatalogError
from subagent_catalog.events import scan_events

__version__ = "0.1.0"

__all__ = [
    "CatalogError",
    "Corpus",
    "CorpusRootError",
    "SubagentCatalogError",
    "__version__",
    "catalog",
    "catalog_descendants",
    "deviations",
    "list_agents_text",
    "list_children",
    "list_descendants",
    "read_corpus",
    "scan_events",
]
