"""Detectors over a session's tool calls: ``tool-loop`` and ``tool-error-storm``.

Both start from the tool-call records the single read keeps (``sessions.tool_call_records``); only
``tool-loop`` reads a log, and only when its records hold a run of calls that could be a loop (the
same tool, arguments of the same size): the arguments' bytes decide.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson

from subagent_catalog.analysis.findings.log_events import Events, events_for
from subagent_catalog.analysis.findings.options import FindingOptions
from subagent_catalog.analysis.findings.schema import Finding
from subagent_catalog.frames.corpus import Corpus

__all__ = ["loop_suspects", "own_calls", "tool_error_storm", "tool_loop"]


def own_calls(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A session row's own tool calls (not a fork's seed, not a result without its call), by position.

    Examples:
        >>> own_calls({"tool_call_records": [{"seq": 5, "in_seed": False}, {"seq": None, "in_seed": False},
        ...                                  {"seq": 2, "in_seed": True}]})
        [{'seq': 5, 'in_seed': False}]
    """
    records = row.get("tool_call_records") or []
    return sorted((r for r in records if r.get("seq") is not None and not r.get("in_seed")), key=lambda r: r["seq"])


def _runs(calls: list[dict[str, Any]], key: Any, least: int) -> list[list[dict[str, Any]]]:
    """The maximal runs of consecutive calls with the same ``key(call)`` that are at least ``least`` long."""
    out: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    for call in calls:
        if current and key(call) == key(current[-1]):
            current.append(call)
            continue
        if len(current) >= least:
            out.append(current)
        current = [call]
    if len(current) >= least:
        out.append(current)
    return out


def _argument_text(data: Any) -> str | None:
    if not isinstance(data, dict) or "arguments" not in data:
        return None
    value = data["arguments"]
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def loop_suspects(rows: list[dict[str, Any]], least: int) -> list[tuple[dict[str, Any], list[list[dict[str, Any]]]]]:
    """The rows whose records hold ``least`` or more consecutive calls of one tool with arguments of one size.

    Examples:
        >>> calls = [{"seq": n, "name": "grep", "argument_bytes": 9} for n in range(3)]
        >>> [row["id"] for row, _ in loop_suspects([{"id": "a", "tool_call_records": calls}], 3)]
        ['a']
    """
    suspected: list[tuple[dict[str, Any], list[list[dict[str, Any]]]]] = []
    for row in rows:
        calls = own_calls(row)
        if len(calls) < least:
            continue
        same_size = _runs(calls, lambda c: (c.get("name"), c.get("argument_bytes")), least)
        suspects = [run for run in same_size if run[0].get("argument_bytes") is not None]
        if suspects:
            suspected.append((row, suspects))
    return suspected


def tool_loop(
    corpus: Corpus, rows: list[dict[str, Any]], options: FindingOptions, events: Events | None = None
) -> list[Finding]:
    """``tool-loop``: ``tool_loop_calls`` or more consecutive calls of one tool with byte-identical arguments.

    Consecutive means no other call of the session between them (across steps and turns); calls
    without arguments never loop. One finding per maximal run. ``events``: the suspects' ``tool/call``
    events already read (``findings`` reads every log it needs once); otherwise they are read here.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> rows = list(corpus.sessions.iter_rows(named=True))
        >>> [f.message for f in tool_loop(corpus, rows, FindingOptions())]
        ['read_file called 4 times in a row with the same arguments (16 bytes)']
    """
    found: list[Finding] = []
    least = options.tool_loop_calls
    suspected = loop_suspects(rows, least)
    logs = events_for(corpus, [row for row, _ in suspected], frozenset({"tool/call"}), events)
    for row, suspects in suspected:
        arguments = {e.seq: _argument_text(e.data) for e in logs[row["list_order"]]}
        for suspect in suspects:
            for run in _runs(suspect, lambda c, known=arguments: known.get(c["seq"]), least):
                text = arguments.get(run[0]["seq"])
                if text is None:
                    continue
                first, last = run[0], run[-1]
                name = first.get("name") or "a tool without a name"
                found.append(
                    Finding.about(
                        row,
                        "tool-loop",
                        "warn",
                        f"{name} called {len(run)} times in a row with the same arguments "
                        f"({first['argument_bytes']:,} bytes)",
                        f"{name}({text})",
                        turn=first.get("turn"),
                        step=first.get("step"),
                        seq=first["seq"],
                        seq_end=last.get("result_seq") or last["seq"],
                    )
                )
    return found


def _counts(values: list[str]) -> str:
    return ", ".join(f"{value} ×{count}" for value, count in Counter(values).most_common())


def tool_error_storm(rows: list[dict[str, Any]], options: FindingOptions) -> list[Finding]:
    """``tool-error-storm``: ``error_storm_failures`` or more failed tool results in one turn.

    A failed result is one whose block says ``isError: true``; calls without a turn are not grouped.
    One finding per turn, from the first failed call to the last failed result.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> rows = list(read_corpus("data/findings").sessions.iter_rows(named=True))
        >>> [(f.session_id, f.message) for f in tool_error_storm(rows, FindingOptions())]
        [('storm-yes', '5 of 5 tool calls failed in turn 1: shell ×5')]
    """
    found: list[Finding] = []
    for row in rows:
        by_turn: dict[int, list[dict[str, Any]]] = {}
        for call in own_calls(row):
            if call.get("turn") is not None:
                by_turn.setdefault(call["turn"], []).append(call)
        for turn, calls in sorted(by_turn.items()):
            failed = [c for c in calls if c.get("is_error") is True]
            if len(failed) < options.error_storm_failures:
                continue
            names = [c.get("name") or "?" for c in failed]
            codes = [c.get("error_code") or c.get("error_name") for c in failed]
            named = [code for code in codes if code is not None]
            coded = f"error codes: {_counts(named)}" if named else "no result names an error code"
            if named and len(named) < len(codes):
                coded += f"; {len(codes) - len(named)} without one"
            found.append(
                Finding.about(
                    row,
                    "tool-error-storm",
                    "warn",
                    f"{len(failed)} of {len(calls)} tool calls failed in turn {turn}: {_counts(names)}",
                    coded,
                    turn=turn,
                    step=failed[0].get("step"),
                    seq=failed[0]["seq"],
                    seq_end=max(c.get("result_seq") or c["seq"] for c in failed),
                )
            )
    return found
