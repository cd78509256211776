"""Analyses over a corpus and its catalog (layer 6: imports every layer below ``views``).

Owns derived answers that are neither the upstream listing nor a view of it:
corpus counts (``summary``), session trees with subtree totals
(``forest``), bounded display text (``text``), time windows over
session creation times (``window``), searching event text (``search``) and
one session's log as readable steps (``transcript``), runs as tables
(``runs``: usage and cost per model, tool calls), whole trees of runs with
subtree totals (``trees``), a tree over time (``timeline``) and a readable name
for each run (``run_names``: its title or first human prompt), the gate's checks, limits and verdict
(``gate``, ``gate_checks``, ``gate_policy``, ``gate_findings``). The run facts themselves (durations, outcomes,
tokens, the per-step usage and per-call records) are folded by ``read.run_facts`` in the single read of each log.
"""

from subagent_catalog.analysis.forest import Forest, build_forest
from subagent_catalog.analysis.runs import tool_calls, unpriced_models, usage_by_model, usage_samples
from subagent_catalog.analysis.search import SearchError, search_events, search_sessions
from subagent_catalog.analysis.summary import corpus_summary
from subagent_catalog.analysis.transcript import transcript
from subagent_catalog.analysis.trees import run_trees
from subagent_catalog.analysis.window import Window, WindowError, in_window, parse_instant, window_corpus

__all__ = [
    "Forest",
    "SearchError",
    "Window",
    "WindowError",
    "build_forest",
    "corpus_summary",
    "in_window",
    "parse_instant",
    "run_trees",
    "search_events",
    "search_sessions",
    "tool_calls",
    "transcript",
    "unpriced_models",
    "usage_by_model",
    "usage_samples",
    "window_corpus",
]
