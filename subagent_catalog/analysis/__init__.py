"""Analyses over a corpus and its catalog (layer 6: imports every layer below ``views``).

Owns derived answers that are neither the upstream listing nor a view of it:
corpus counts (``summary``), session trees with subtree totals
(``forest``) and bounded display text (``text``). The run analytics
(durations, outcomes, tokens, transcripts) land here.
"""

from subagent_catalog.analysis.forest import Forest, build_forest
from subagent_catalog.analysis.summary import corpus_summary

__all__ = ["Forest", "build_forest", "corpus_summary"]
