"""Upstream's subagent listing over corpus frames (layer 3: imports ``frames``, ``read``, base).

Owns the listing semantics: the model of nodes by parent (``model``),
how one child resolves (``resolve``, projection and trace semantics),
one parent's rows and the ``list_agents`` text (``listing``), every
parent at once (``tables``), where the semantics differ
(``deviations``), ``localeCompare`` collation (``collation``) and
the conformance output format (``conformance``), and which ids name a
session at all (``parents``). Everything here is
pure: frames in, frames out, row order by explicit sorts.
"""

from subagent_catalog.catalog.deviations import deviations
from subagent_catalog.catalog.listing import (
    children_rows,
    descendant_rows,
    list_agents_text,
    list_children,
    list_descendants,
)
from subagent_catalog.catalog.parents import known_session_ids, require_session
from subagent_catalog.catalog.tables import catalog, catalog_descendants

__all__ = [
    "catalog",
    "catalog_descendants",
    "children_rows",
    "descendant_rows",
    "deviations",
    "known_session_ids",
    "list_agents_text",
    "list_children",
    "list_descendants",
    "require_session",
]
