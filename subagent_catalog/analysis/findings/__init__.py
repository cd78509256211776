"""Findings: what went wrong on the way, found exactly and offline by detectors and by a researcher's rules.

Part of ``analysis`` (layer 6: imports ``store``, ``catalog``, ``frames``, ``read`` and the base
modules). ``findings(source)`` runs the built-in detectors (``DETECTORS``; docs/findings.md defines each rule)
and any user rules (``rules.load_rules``) over a corpus or an archive and returns one row per
finding (``FINDING_SCHEMA``). Detectors start from the facts the single read keeps; a detector that
needs event text reads only the logs it must.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

import orjson
import polars as pl

from subagent_catalog.analysis.findings.cache import Parts, log_fingerprints, open_cache, rules_digest, scanner_identity
from subagent_catalog.analysis.findings.detect_calls import loop_suspects, tool_error_storm, tool_loop
from subagent_catalog.analysis.findings.detect_children import (
    duplicate_task,
    fan_out,
    parent_spawns,
    runaway_child,
    spawn_parents,
    unread_child,
)
from subagent_catalog.analysis.findings.detect_runs import cost_outlier, stalled, unexamined
from subagent_catalog.analysis.findings.detect_steps import RETRY, TURN_END, context_growth, retry_storm
from subagent_catalog.analysis.findings.log_events import read_wanted
from subagent_catalog.analysis.findings.options import FindingOptions, FindingsError
from subagent_catalog.analysis.findings.rules import Rule, load_rules, rule_findings
from subagent_catalog.analysis.findings.scanners import Scanner, scanner_findings
from subagent_catalog.analysis.findings.schema import FINDING_SCHEMA, SEVERITIES, Finding, Severity, finding_frame
from subagent_catalog.analysis.findings.spawns import SPAWN_EVENT_TYPES
from subagent_catalog.analysis.subset import subset
from subagent_catalog.bounds import POSITIVE_SECONDS
from subagent_catalog.frames.source import Source

__all__ = [
    "DETECTORS",
    "FACTS_ONLY",
    "FINDING_SCHEMA",
    "SEVERITIES",
    "FindingOptions",
    "FindingsError",
    "Rule",
    "Scanner",
    "Severity",
    "findings",
    "load_rules",
]

DETECTORS: tuple[str, ...] = (
    "tool-loop",
    "tool-error-storm",
    "retry-storm",
    "context-growth",
    "fan-out",
    "duplicate-task",
    "unread-child",
    "runaway-child",
    "stalled",
    "cost-outlier",
    "unexamined",
)
"""The built-in detectors, in the order docs/findings.md defines them."""

_CHILD_DETECTORS = frozenset({"fan-out", "duplicate-task", "unread-child"})

FACTS_ONLY: tuple[str, ...] = ("tool-error-storm", "runaway-child", "stalled", "cost-outlier", "unexamined")
"""The detectors that read no log: all that run over an archive without events whose corpus root is gone."""

ROW_COLUMNS = (
    "list_order",
    "session_id",
    "project_dir",
    "parent_session",
    "origin",
    "verdict",
    "event_count",
    "seed_length",
    "outcome",
    "outcome_detail",
    "created_at_ms",
    "last_event_ms",
    "run_wall_ms",
    "cost_usd",
    "tools",
    "tool_calls",
    "tool_results_failed",
    "turns_error",
    "peak_context_share",
    "peak_context_tokens",
    "context_window",
    "read_cause",
    "read_message",
    "read_line",
    "identity_label",
    "name",
)
"""The ``sessions`` columns every detector may read, for every session (the nested records are read
only for the sessions whose counts make them candidates)."""


def findings(
    source: Source,
    *,
    rules: str | os.PathLike[str] | Sequence[Rule] | None = None,
    detectors: Literal["default"] | Sequence[str] = "default",
    scanners: Sequence[Scanner] = (),
    scanner_timeout_s: float = 30.0,
    sessions: Sequence[str] | None = None,
    tool_loop_calls: int = 3,
    error_storm_failures: int = 5,
    retry_storm_retries: int = 3,
    context_share: float = 0.9,
    fan_out_children: int = 10,
    runaway_after_ms: int = 60_000,
    runaway_share: float = 0.25,
    stalled_after_ms: int = 3_600_000,
    cost_outlier_factor: float = 3.0,
    cost_outlier_min_runs: int = 20,
    cache: bool | str | os.PathLike[str] = True,
) -> pl.DataFrame:
    """The findings of a corpus or an archive: one row per pathology a detector or a user rule found.

    Args:
        source: a read corpus or an opened archive.
        rules: user rules: a TOML rules file's path, or ``Rule`` objects (docs/findings.md).
        detectors: the built-in detectors to run: ``"default"`` (all of ``DETECTORS``), or some of
            their names (``[]``: only the rules and scanners).
        scanners: Python scanners (``scanners.Scanner``: module-level functions over one session's
            transcript), run in worker processes.
        scanner_timeout_s: the time a scanner may take on one session (past it: a ``scanner-timeout``
            finding for that session).
        sessions: only the findings of these session ids (the others still count where a rule
            needs them: a root's end, the corpus's last event, a project's costs); the detectors
            read only these sessions' logs.
        tool_loop_calls: ``tool-loop``: consecutive calls of one tool with byte-identical arguments.
        error_storm_failures: ``tool-error-storm``: failed tool results in one turn.
        retry_storm_retries: ``retry-storm``: model-call retries in one turn.
        context_share: ``context-growth``: a prompt's share of its context window.
        fan_out_children: ``fan-out``: subagents started in one turn.
        runaway_after_ms: ``runaway-child``: how long a subagent works on after its root's end, at least.
        runaway_share: ``runaway-child``: that time as a share of the root's wall time, at least.
        stalled_after_ms: ``stalled``: an open run's silence before the corpus's last event.
        cost_outlier_factor: ``cost-outlier``: times the project's p95 of known costs.
        cost_outlier_min_runs: ``cost-outlier``: runs of known cost a project's p95 needs.
        cache: the findings cache of the log-reading detectors, the rules and the scanners
            (``cache``: per session, by the log's fingerprint, the thresholds, the rules' digest and the
            scanners' identities): ``True`` uses the cache directory the corpus was read with (none
            when it was read with ``cache=False``; never for an archive), a path names the directory,
            ``False`` computes everything.

    Returns:
        ``FINDING_SCHEMA`` rows, by session (``list_order``), then the evidence's position.

    Raises:
        FindingsError: an unknown detector, a threshold out of range, a malformed rules file.
        SearchError: a user rule's pattern the search engine refuses.
        ArchiveError: an archive's data cannot be read.

    pandas: ``.to_pandas(types_mapper=pd.ArrowDtype)`` keeps the unknown positions as missing values.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> found = findings(read_corpus("data/findings"))
        >>> found.group_by("kind").len().sort("kind").rows()[:3]
        [('context-growth', 2), ('cost-outlier', 1), ('duplicate-task', 1)]
        >>> findings(read_corpus("data/findings"), detectors=["tool-loop"])["session_id"].to_list()
        ['loop-yes']
    """
    options = FindingOptions(
        tool_loop_calls=tool_loop_calls,
        error_storm_failures=error_storm_failures,
        retry_storm_retries=retry_storm_retries,
        context_share=context_share,
        fan_out_children=fan_out_children,
        runaway_after_ms=runaway_after_ms,
        runaway_share=runaway_share,
        stalled_after_ms=stalled_after_ms,
        cost_outlier_factor=cost_outlier_factor,
        cost_outlier_min_runs=cost_outlier_min_runs,
    )
    if scanners:  # refused before any work, as the thresholds are
        POSITIVE_SECONDS.check("scanner_timeout_s", scanner_timeout_s, error=FindingsError)
    chosen = (
        list(DETECTORS)
        if detectors == "default"
        else list(dict.fromkeys([detectors] if isinstance(detectors, str) else detectors))
    )
    unknown = [name for name in chosen if name not in DETECTORS]
    if unknown:
        raise FindingsError(
            f"unknown detector {unknown[0]!r}", hint=f"the detectors are {', '.join(DETECTORS)} (or 'default': all)"
        )
    user_rules = load_rules(rules) if isinstance(rules, str | os.PathLike) else list(rules or [])
    clash = [rule.name for rule in user_rules if rule.name in DETECTORS]
    if clash:
        raise FindingsError(f"rule {clash[0]!r} has a built-in detector's name", hint="rename the rule")
    corpus = source.to_corpus()
    frame = corpus.sessions
    rows: list[dict[str, Any]] = frame.select(ROW_COLUMNS).to_dicts()
    by_order = {row["list_order"]: row for row in rows}
    only = None if sessions is None else set(sessions)
    mine = pl.lit(True) if only is None else pl.col("session_id").is_in(list(only))
    own_rows = rows if only is None else [row for row in rows if row["session_id"] in only]
    store = open_cache(corpus, cache)
    parts = Parts(store, log_fingerprints(corpus) if store is not None else {})

    def candidates(where: pl.Expr, nested: str) -> list[dict[str, Any]]:
        return frame.filter((where & mine).fill_null(False)).select(*ROW_COLUMNS, nested).to_dicts()

    # What the cache holds is not computed again; every log still needed is read once, for the union
    # of the event types the detectors need from it.
    found: list[Finding] = []
    loops: list[dict[str, Any]] = []
    loop_keys: dict[int, str] = {}
    if "tool-loop" in chosen:
        hits, loops, loop_keys = parts.split(
            candidates(pl.col("tool_calls") >= tool_loop_calls, "tool_call_records"), "tool-loop", tool_loop_calls
        )
        found += hits
    suspects = loop_suspects(loops, tool_loop_calls)
    contexts: list[dict[str, Any]] = []
    context_keys: dict[int, str] = {}
    if "context-growth" in chosen:
        near = (pl.col("peak_context_share") >= context_share) | (pl.col("turns_error") > 0)
        hits, contexts, context_keys = parts.split(candidates(near, "usage_samples"), "context-growth", context_share)
        found += hits
    retries: list[dict[str, Any]] = []
    retry_keys: dict[int, str] = {}
    if "retry-storm" in chosen:
        readable = [row for row in own_rows if (row.get("event_count") or 0) > 0]
        hits, retries, retry_keys = parts.split(readable, "retry-storm", retry_storm_retries)
        found += hits
    child_detectors = sorted(_CHILD_DETECTORS.intersection(chosen))
    parents: list[dict[str, Any]] = []
    parent_keys: dict[int, str] = {}
    if child_detectors:
        all_parents, children = spawn_parents(rows, only=only)

        def kids(row: dict[str, Any]) -> str | None:
            prints = [(c["session_id"], parts.prints.get(c["list_order"])) for c in children.get(row["session_id"], [])]
            return None if any(p is None for _, p in prints) else orjson.dumps(prints).decode()

        hits, parents, parent_keys = parts.split(all_parents, "subagents", child_detectors, fan_out_children, more=kids)
        found += hits
    wants: dict[int, tuple[dict[str, Any], set[str]]] = {}

    def want(row: dict[str, Any], kinds: frozenset[str]) -> None:
        wants.setdefault(row["list_order"], (row, set()))[1].update(kinds)

    for row, _runs in suspects:
        want(row, frozenset({"tool/call"}))
    for row in retries:
        want(row, RETRY)
    for row in contexts:
        if row.get("turns_error"):
            want(row, TURN_END)
    for row in parents:
        want(row, SPAWN_EVENT_TYPES)
    events = read_wanted(corpus, [(row, frozenset(kinds)) for row, kinds in wants.values()])

    if "tool-loop" in chosen:
        found += parts.keep(loop_keys, tool_loop(corpus, loops, options, events))
    if "tool-error-storm" in chosen:
        storms = candidates(pl.col("tool_results_failed") >= error_storm_failures, "tool_call_records")
        found += tool_error_storm(storms, options)
    if "retry-storm" in chosen:
        found += parts.keep(retry_keys, retry_storm(corpus, retries, options, events))
    if "context-growth" in chosen:
        found += parts.keep(context_keys, context_growth(corpus, contexts, options, events))
    if parents:
        missed = {row["list_order"] for row in parents}
        spawns = parent_spawns(corpus, rows, only={row["session_id"] for row in parents}, events=events)
        spawns = {order: spawn for order, spawn in spawns.items() if order in missed}
        fresh = []
        if "fan-out" in chosen:
            fresh += fan_out(by_order, spawns, options)
        if "duplicate-task" in chosen:
            fresh += duplicate_task(by_order, spawns)
        if "unread-child" in chosen:
            fresh += unread_child(by_order, spawns)
        found += parts.keep(parent_keys, fresh)
    if "runaway-child" in chosen:
        found += runaway_child(by_order, options)
    if "stalled" in chosen:
        found += stalled(rows, options)
    if "cost-outlier" in chosen:
        found += cost_outlier(rows, options)
    if "unexamined" in chosen:
        found += unexamined(rows)
    scannable = [row for row in own_rows if row.get("verdict") != "skipped"]
    if user_rules:
        hits, missed_rows, rule_keys = parts.split(scannable, "rules", rules_digest(user_rules))
        found += hits
        if missed_rows:
            if len(missed_rows) < len(scannable):  # only the logs the cache did not answer are searched
                orders = [row["list_order"] for row in missed_rows]
                narrow = subset(corpus, pl.col("list_order").is_in(orders))
                fresh = rule_findings(narrow, narrow, user_rules)
            else:
                fresh = rule_findings(source, corpus, user_rules)
            found += parts.keep(rule_keys, fresh)
    if scanners:
        reserved = {*DETECTORS, *(rule.name for rule in user_rules), "scanner-error", "scanner-timeout"}
        identities = [scanner_identity(scanner) if callable(scanner) else None for scanner in scanners]
        cacheable = store is not None and all(identities)
        hits, missed_rows, scan_keys = (
            parts.split(scannable, "scanners", identities, sorted(reserved)) if cacheable else ([], scannable, {})
        )
        found += hits
        if missed_rows or not scannable:
            ids = {row["session_id"] for row in missed_rows}
            scanned = {row["list_order"] for row in missed_rows}
            fresh = scanner_findings(
                corpus,
                scanners,
                reserved=reserved,
                timeout_s=scanner_timeout_s,
                only=ids if (len(missed_rows) < len(scannable) or only is not None) else None,
            )
            fresh = [f for f in fresh if f.list_order in scanned]
            found += parts.keep(scan_keys, fresh, unless=frozenset({"scanner-timeout"}))
    if store is not None:
        store.save()
    if only is not None:
        found = [f for f in found if f.session_id in only]
    return finding_frame(found)
