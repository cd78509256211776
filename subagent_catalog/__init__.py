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

__version__ = "0.1.0"

__all__ = [
    "CatalogError",
    "catalog",
    "catalog_descendants",
    "deviations",
    "Corpus",
    "CorpusRootError",
    "SubagentCatalogError",
    "list_agents_text",
    "list_children",
    "list_descendants",
    "read_corpus",
    "__version__",
]
