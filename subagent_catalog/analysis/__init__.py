"""Analyses over a corpus and its catalog (layer 6: imports every layer below ``views``).

Owns derived answers that are neither the upstream listing nor a view of it:
corpus counts (:mod:`.summary`), session trees with subtree totals
(:mod:`.forest`) and bounded display text (:mod:`.text`). The run analytics
(durations, outcomes, tokens, transcripts) land here.
"""

from subagent_catalog.analysis.forest import Forest, build_forest
from subagent_catalog.analysis.summary import corpus_summary

__all__ = ["Forest", "build_forest", "corpus_summary"]
