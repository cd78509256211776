"""``run_trees`` against a naive reference: every subtree walked node by node, on generated forests.

The roll-up (``analysis.trees``) makes every figure in one pass per column over compact arrays;
this reference recomputes each from the definitions in ``run_trees``'s docstring, quadratically:
a parent id names the first log carrying it, a node on a cycle of links heads its own tree, a
subtree is the session and the counted sessions below it (an uncounted session is walked through),
and a sum is null when no counted session of the subtree has the value. The generated forests hold
cycles, self-links, dangling parents, repeated ids, nulls and both scopes.
"""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from subagent_catalog.analysis.trees import run_trees
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.outcome import OUTCOMES
from subagent_catalog.frames.schemas import DESCRIPTOR_SCHEMA, PROBLEM_SCHEMA, USAGE_SAMPLE_TYPE

SUMS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "tool_calls",
    "tool_results_failed",
    "active_ms",  # subtree_active_ms: the sessions' active times summed
)

INT64_MAX = (1 << 63) - 1
PRICES = {"p/m": {"input": 1_000_000, "output": 0}}
"""A price of $1 a token: a priced sample costs its input tokens in dollars, a float sum exact in any order."""

_ids = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h"])
_maybe_int = st.one_of(st.none(), st.integers(0, 10**12))
_maybe_tokens = st.one_of(_maybe_int, st.just(2**62), st.just(INT64_MAX))
_usage = st.sampled_from(["none", "priced", "unpriced", "mixed", "unreadable"])
"""A session's samples: none (cost 0), priced, unpriced, both, or an unreadable log (no samples known)."""
_session = st.fixed_dictionaries(
    {
        "session_id": st.one_of(st.none(), _ids),
        "parent_session": st.one_of(st.none(), _ids, st.just("nobody")),
        "origin": st.sampled_from([None, "subagent", "user"]),
        "listed": st.one_of(st.none(), st.booleans()),
        "outcome": st.one_of(st.none(), st.sampled_from(OUTCOMES)),
        "run_first_ms": _maybe_int,
        "span_ms": st.one_of(st.none(), st.integers(0, 50)),
        "usage": _usage,
        "spent": st.integers(1, 1000),
        **{name: _maybe_tokens if name in SUMS[:5] else _maybe_int for name in SUMS},
    }
)


def _sample(model: str, tokens: int) -> dict[str, Any]:
    return {
        "seq": 5,
        "time_ms": 1_767_225_600_000,
        "turn": 1,
        "step": 1,
        "in_seed": False,
        "provider": "p",
        "model": model,
        "input_tokens": tokens,
        "output_tokens": 0,
        "cache_read_tokens": None,
        "cache_write_tokens": None,
        "reasoning_tokens": None,
    }


def _samples(usage: str, spent: int) -> list[dict[str, Any]] | None:
    return {
        "none": [],
        "priced": [_sample("m", spent)],
        "unpriced": [_sample("unknown-model", spent)],
        "mixed": [_sample("m", spent), _sample("unknown-model", 7)],
        "unreadable": None,
    }[usage]


def _corpus(drawn: list[dict[str, Any]]) -> Corpus:
    sessions = [
        {
            "list_order": order,
            **{key: value for key, value in row.items() if key not in ("span_ms", "usage", "spent")},
            "run_first_ms": None if row["run_first_ms"] is None else row["run_first_ms"] % 100,
            "run_last_ms": None
            if row["run_first_ms"] is None or row["span_ms"] is None
            else row["run_first_ms"] % 100 + row["span_ms"],
            "usage_steps": None if row["usage"] == "unreadable" else len(_samples(row["usage"], 0) or []),
            "usage_samples": _samples(row["usage"], row["spent"]),
        }
        for order, row in enumerate(drawn)
    ]
    strings = ("session_id", "parent_session", "origin", "outcome")
    schema = {
        "list_order": pl.Int64,
        **{name: pl.String for name in strings},
        "listed": pl.Boolean,
        **{name: pl.Int64 for name in ("run_first_ms", "run_last_ms", "usage_steps", *SUMS)},
        "usage_samples": pl.List(USAGE_SAMPLE_TYPE),
    }
    frame = pl.DataFrame(sessions, schema=schema)
    return Corpus(
        root="/nowhere",
        compression="none",
        sessions=frame,
        descriptors=pl.DataFrame(schema=DESCRIPTOR_SCHEMA),
        problems=pl.DataFrame(schema=PROBLEM_SCHEMA),
    )


def _reference(rows: list[dict[str, Any]], scope: str) -> list[dict[str, Any]]:
    """Every figure of every session, from the definitions, one subtree walk per session."""
    size = len(rows)
    first_of: dict[str, int] = {}
    for index, row in enumerate(rows):
        if row["session_id"] is not None:
            first_of.setdefault(row["session_id"], index)
    link = [first_of.get(row["parent_session"], -1) if row["parent_session"] is not None else -1 for row in rows]

    def on_cycle(node: int) -> bool:
        seen, at = set(), link[node]
        while at != -1 and at not in seen:
            if at == node:
                return True
            seen.add(at)
            at = link[at]
        return False

    cycle = [on_cycle(node) for node in range(size)]
    parent = [-1 if cycle[node] else link[node] for node in range(size)]

    def ancestors(node: int) -> list[int]:
        chain, at = [], parent[node]
        while at != -1:
            chain.append(at)
            at = parent[at]
        return chain

    chains = [ancestors(node) for node in range(size)]
    subagent = [row["origin"] == "subagent" for row in rows]
    counted = [True] * size if scope == "lineage" else [subagent[i] and rows[i]["listed"] is True for i in range(size)]
    samples = [row["usage_samples"] for row in rows]
    priced = [[s["input_tokens"] for s in found or [] if s["model"] == "m"] for found in samples]
    known = [float(sum(spent)) for spent in priced]
    cost = [
        known[i] if found is not None and all(s["model"] == "m" for s in found) else None
        for i, found in enumerate(samples)
    ]
    out = []
    for node in range(size):
        below = [other for other in range(size) if node in chains[other] and counted[other]]
        members = [node, *below]

        def total(values: list[Any], members: list[int] = members) -> Any:
            present = [values[i] for i in members if values[i] is not None]
            return sum(present) if present else None

        def fits(value: int | None) -> int | None:
            return value if value is None or value <= INT64_MAX else None

        firsts = [rows[i]["run_first_ms"] for i in members if rows[i]["run_first_ms"] is not None]
        lasts = [rows[i]["run_last_ms"] for i in members if rows[i]["run_last_ms"] is not None]
        first, last = (min(firsts) if firsts else None), (max(lasts) if lasts else None)
        kids = [other for other in range(size) if parent[other] == node and counted[other]]
        spans = [
            (rows[k]["run_first_ms"], rows[k]["run_last_ms"])
            for k in kids
            if rows[k]["run_first_ms"] is not None and rows[k]["run_last_ms"] is not None
        ]
        peak = max((sum(1 for s, e in spans if s <= t <= e) for t, _ in spans), default=0)
        top = chains[node][-1] if chains[node] else node
        costs = [cost[i] for i in members]
        figures = {
            "list_order": node,
            "session_id": rows[node]["session_id"],
            "parent_list_order": None if parent[node] == -1 else parent[node],
            "root_list_order": top,
            "root_session_id": rows[top]["session_id"],
            "depth": len(chains[node]),
            "in_cycle": cycle[node],
            "children": len(kids),
            "peak_children_running": peak,
            "subtree_sessions": len(members),
            "subtree_subagents": sum(subagent[i] for i in below),
            "subtree_forks": 0 if scope == "subagents" else sum(not subagent[i] for i in below),
            "subtree_max_depth": max((len(chains[i]) - len(chains[node]) for i in below), default=0),
            "subtree_first_ms": first,
            "subtree_last_ms": last,
            "subtree_wall_ms": None if first is None or last is None else last - first,
            **{f"subtree_{name}": fits(total([row[name] for row in rows])) for name in SUMS},
            "subtree_tokens_overflow": any((total([row[name] for row in rows]) or 0) > INT64_MAX for name in SUMS[:5]),
            "subtree_usage_unknown": sum(samples[i] is None for i in members),
            "subtree_cost_usd": None if any(value is None for value in costs) else sum(costs),
            "subtree_cost_usd_known": sum(known[i] for i in members),
            "subtree_cost_unknown": sum(value is None for value in costs),
            **{
                f"subtree_{kind.replace('-', '_')}": sum(rows[i]["outcome"] == kind for i in members)
                for kind in OUTCOMES
            },
        }
        out.append(figures)
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(_session, max_size=14), st.sampled_from(["lineage", "subagents"]))
def test_run_trees_equal_the_subtrees_walked_one_by_one(drawn: list[dict[str, Any]], scope: Any) -> None:
    corpus = _corpus(drawn)
    made = run_trees(corpus, scope=scope, prices=PRICES)
    expected = _reference(corpus.sessions.to_dicts(), scope)
    assert made.to_dicts() == [{name: row[name] for name in made.columns} for row in expected]
    assert all(dtype != pl.Null for dtype in made.schema.values())  # an all-null sum is still an integer column


def test_a_subtree_without_any_token_count_is_a_null_integer_column() -> None:
    drawn = [
        {"session_id": "a", "parent_session": None, "origin": None, "listed": True, "outcome": None},
        {"session_id": "b", "parent_session": "a", "origin": "subagent", "listed": True, "outcome": "completed"},
    ]
    filled = [
        {"run_first_ms": None, "span_ms": None, "usage": "none", "spent": 1, **{n: None for n in SUMS}, **row}
        for row in drawn
    ]
    made = run_trees(_corpus(filled))
    assert made.schema["subtree_input_tokens"] == pl.Int64
    assert made["subtree_input_tokens"].to_list() == [None, None]
    assert made["subtree_sessions"].to_list() == [2, 1]
