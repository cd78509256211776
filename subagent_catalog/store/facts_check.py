"""What stored facts must look like: only what the reader can produce.

``check_facts`` is run on every record ``store.codec`` writes and reads.
The typed decoding already fixes each field's type; this adds the rules
across fields and inside the headers: the header is exactly what upstream's
``fromHeaderLine`` keeps (keys, order and value kinds), exactly one
``list()`` outcome, a verdict and a cause that go together, non-negative
counts, 1-based lines, safe-integer times in order, no NaN. A record that
breaks one (run facts included: counts non-negative, failures within
results) raises ``FactsRecordError``, which callers treat as a miss.
"""

from __future__ import annotations

import math
import sys
from functools import lru_cache
from typing import Any

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.read.jsvalue import is_negative_zero, is_number, is_safe_integer, js_number
from subagent_catalog.read.logread import LogFacts
from subagent_catalog.read.run_facts import INT64_MAX, STATS_FIELDS, TEXT_FIELDS, TOKEN_COUNTS, TURN_KINDS, RunFacts
from subagent_catalog.read.run_records import ToolCallRecord, UsageSample

HEADER_KEYS = (
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "agentPreset",
)
_REQUIRED = ("version", "id", "createdAt", "delegationDepth")
_VERDICTS = ("ok", "torn-tail", "prefix", "failed")
_SEVERITIES = ("error", "warning", "info")
_STATUSES = ("valid", "malformed", "unknown-version")
_IDENTITY_CAUSES = ("no-descriptor", "unknown-descriptor-version", "malformed-descriptor")


class FactsRecordError(SubagentCatalogError, ValueError):
    """Stored facts that are not a record ``dump_facts`` writes for facts the reader derives."""


def _fail(message: str) -> None:
    raise FactsRecordError(message)


def _count(value: Any, name: str, *, least: int = 0, optional: bool = False) -> None:
    if value is None and optional:
        return
    if type(value) is not int or value < least:
        _fail(f"{name} is not an integer >= {least}: {value!r}")


def _text(value: Any, name: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if type(value) is not str:
        _fail(f"{name} is not a string: {type(value).__name__}")


@lru_cache(maxsize=1)
def _big_limit() -> int | None:
    digits = sys.get_int_max_str_digits()
    return 10**digits if digits else None


def check_header(meta: Any, name: str = "header", *, full_read: bool = False) -> None:
    """Check a header as upstream's ``fromHeaderLine`` keeps it.

    Args:
        meta: the header.
        name: what to call it in the error.
        full_read: the header of a full read, which also has format version 0.

    Raises:
        FactsRecordError: the header is not one the reader keeps.

    Examples:
        >>> check_header({"version": 0, "id": "a", "createdAt": 1, "delegationDepth": 0})
        >>> check_header({"id": "a", "version": 0, "createdAt": 1, "delegationDepth": 0})
        Traceback (most recent call last):
        ...
        subagent_catalog.store.facts_check.FactsRecordError: header keys are not a session header's: id, version, ...
    """
    if type(meta) is not dict:
        _fail(f"{name} is not an object")
    keys = list(meta)
    expected = [key for key in HEADER_KEYS if key in meta]
    if keys != expected or any(key not in meta for key in _REQUIRED):
        _fail(f"{name} keys are not a session header's: {', '.join(map(str, keys[:2]))}, ...")
    if not is_number(meta["version"]) or (full_read and js_number(meta["version"]) != 0):
        _fail(f"{name} version is not a number the reader accepts")
    if type(meta["id"]) is not str:
        _fail(f"{name} id is not a string")
    for key in ("createdAt", "delegationDepth"):
        number = meta[key]
        if not is_safe_integer(number) or number < 0 or is_negative_zero(number):
            _fail(f"{name} {key} is not a non-negative safe integer")
    if "origin" in meta and meta["origin"] != "subagent":
        _fail(f"{name} origin is not subagent")
    if "agentPreset" in meta and type(meta["agentPreset"]) is not str:
        _fail(f"{name} agentPreset is not a string")
    limit = _big_limit()  # every value below is a JSON value the parser yields (no NaN, no over-long integer)
    stack = [meta]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is float:
            if math.isnan(item):
                _fail(f"{name} holds NaN, which JSON cannot")
        elif kind is int:
            if limit is not None and not -limit < item < limit:
                _fail(f"{name} holds an integer longer than the parser reads")
        elif item is not None and kind is not bool and kind is not str:
            _fail(f"{name} holds a {kind.__name__}")


_RUN_COUNTS = (
    "turns",
    "turns_open",
    *(f"turns_{kind.replace('-', '_')}" for kind in TURN_KINDS),
    "turns_other",
    "steps",
    "usage_steps",
    "tool_calls",
    "tool_results",
    "tool_results_failed",
    "tool_output_bytes",
)
_RUN_OPTIONAL = (
    "turn_ms",
    *TOKEN_COUNTS,
    *STATS_FIELDS,
    "active_ms",
    "tool_busy_ms",
    "last_context_tokens",
    "peak_context_tokens",
)
_CALL_INTS = ("time", "turn", "step", "result_time")


def _strings(value: Any, name: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if type(value) is not list or any(type(item) is not str for item in value) or len(set(value)) != len(value):
        _fail(f"{name} is not a list of distinct strings")


def _check_run(facts: LogFacts) -> None:
    run = facts.run
    if run is None:
        return
    if type(run) is not RunFacts:
        _fail(f"run facts are not RunFacts: {type(run).__name__}")
    if facts.read_meta is None:
        _fail("run facts without a scanned header")
    for name in _RUN_COUNTS:
        _count(getattr(run, name), f"run {name}")
    for name in _RUN_OPTIONAL:
        _count(getattr(run, name), f"run {name}", optional=True)
    for name in TEXT_FIELDS:
        _text(getattr(run, name), f"run {name}", optional=True)
    if type(run.last_turn_open) is not bool or (run.last_turn_open and not run.turns_open):
        _fail("the last turn is open without an open turn")
    if run.last_abort_reason is not None and not run.turns_aborted:
        _fail("an abort reason without an aborted turn")
    if (run.first_ms is None) != (run.last_ms is None):
        _fail("only one of the run's first and last times")
    if run.first_ms is not None and not (
        type(run.first_ms) is int
        and type(run.last_ms) is int
        and is_safe_integer(run.first_ms)
        and is_safe_integer(run.last_ms)
        and run.first_ms <= run.last_ms
    ):
        _fail("the run's times are not safe integers in order")
    ends = sum(getattr(run, f"turns_{kind.replace('-', '_')}") for kind in TURN_KINDS) + run.turns_other
    if run.turns > facts.event_count or ends > facts.event_count or run.steps > facts.event_count:
        _fail("more turns or steps than events")
    if (run.last_turn_outcome is not None and not ends) or (run.turn_ms is not None and not run.turns):
        _fail("a turn outcome or turn time without turns")
    if run.tool_results_failed > run.tool_results or run.tool_results + run.tool_calls > facts.event_count:
        _fail("more failed tool results than results, or more tool events than events")
    if run.last_error_message is not None and not run.turns_error:
        _fail("an error message without an error turn")
    if run.last_abort_cause is not None and not run.turns_aborted:
        _fail("an abort cause without an aborted turn")
    if not run.usage_steps and any(getattr(run, name) is not None for name in TOKEN_COUNTS):
        _fail("token counts without a usage sample")
    _strings(run.models, "run models", optional=True)
    _strings(run.providers, "run providers", optional=True)
    if (run.models is None) != (run.providers is None):
        _fail("only one of the run's models and providers")
    _strings(run.tools, "run tools")
    if run.tools != sorted(run.tools) or len(run.tools) > run.tool_calls:
        _fail("run tools are not sorted, or more tools than tool calls")
    # Active and tool-busy time: unions inside the run's span (``read.run_time``); the context sizes.
    if (run.active_ms is None) != (run.first_ms is None) or (run.tool_busy_ms is None) != (run.first_ms is None):
        _fail("active or tool-busy time without the run's times, or times without them")
    if run.first_ms is not None and not (
        run.tool_busy_ms <= run.active_ms <= run.last_ms - run.first_ms  # type: ignore[operator]
        and run.tool_busy_ms <= (run.tool_ms if run.tool_ms is not None else run.tool_busy_ms)  # type: ignore[operator]
    ):
        _fail("tool-busy time over active time, active time over wall time, or busy time over tool time")
    _count(run.context_window, "run context_window", least=1, optional=True)
    share = run.peak_context_share
    if share is not None and (type(share) is not float or not share >= 0 or run.peak_context_tokens is None):
        _fail(f"run peak_context_share is not a share of a known peak: {share!r}")
    if (run.peak_context_tokens is None and run.last_context_tokens is not None) or (
        run.peak_context_tokens is not None
        and (not run.usage_steps or (run.last_context_tokens or 0) > run.peak_context_tokens)
    ):
        _fail("a context size without a usage sample, or a last size over the peak")
    # Usage samples: one per step, in seq order inside the events, own ones counted by ``usage_steps``.
    samples = run.usage_samples
    if type(samples) is not list or len(samples) > facts.event_count:
        _fail("usage samples are not a list, or more samples than events")
    previous = -1
    own = 0
    named = []
    for raw in samples:
        if type(raw) is not tuple or len(raw) != len(UsageSample._fields):
            _fail(f"a usage sample is not a tuple of UsageSample's fields: {type(raw).__name__}")
        sample = UsageSample._make(raw)
        named.append(sample)
        _count(sample.seq, "usage sample seq")
        if sample.seq <= previous or sample.seq >= facts.event_count:
            _fail("usage samples are not in seq order inside the events")
        previous = sample.seq
        if type(sample.in_seed) is not bool:
            _fail("a usage sample's in_seed is not a boolean")
        own += not sample.in_seed
        for name in ("time", "turn", "step"):
            _safe(getattr(sample, name), f"usage sample {name}")
        for name in TOKEN_COUNTS:
            _count(getattr(sample, name), f"usage sample {name}", optional=True)
        _text(sample.provider, "usage sample provider", optional=True)
        _text(sample.model, "usage sample model", optional=True)
    if own != run.usage_steps:
        _fail("the own usage samples are not the usage steps")
    for name in TOKEN_COUNTS:
        values = [getattr(sample, name) for sample in named if not sample.in_seed]
        present = [value for value in values if value is not None]
        total = sum(present) if present else None
        if total is not None and total > INT64_MAX:  # past 64 bits the count is null (``run_facts._token_sum``)
            total = None
        if getattr(run, name) != total:
            _fail(f"run {name} is not the sum of the own usage samples")
    # Tool call records: each a call, a result or both, inside the events, own calls counted by ``tool_calls``.
    records = run.tool_call_records
    if type(records) is not list or len(records) > facts.event_count:
        _fail("tool call records are not a list, or more records than events")
    own = 0
    for raw in records:
        if type(raw) is not tuple or len(raw) != len(ToolCallRecord._fields):
            _fail(f"a tool call record is not a tuple of ToolCallRecord's fields: {type(raw).__name__}")
        record = ToolCallRecord._make(raw)
        _count(record.seq, "tool call seq", optional=True)
        _count(record.result_seq, "tool result seq", optional=True)
        if record.seq is None and record.result_seq is None:
            _fail("a tool call record with neither a call nor a result")
        if any(seq is not None and seq >= facts.event_count for seq in (record.seq, record.result_seq)):
            _fail("a tool call record outside the events")
        if type(record.in_seed) is not bool:
            _fail("a tool call record's in_seed is not a boolean")
        own += record.seq is not None and not record.in_seed
        for name in _CALL_INTS:
            _safe(getattr(record, name), f"tool call {name}")
        for name in ("argument_bytes", "result_bytes"):
            _count(getattr(record, name), f"tool call {name}", optional=True)
        for name in ("call_id", "name", "error_name", "error_code"):
            _text(getattr(record, name), f"tool call {name}", optional=True)
        if (record.is_error is None) != (record.result_seq is None) or record.is_error not in (None, True, False):
            _fail("a tool call record's is_error does not match its result")
    if own != run.tool_calls:
        _fail("the own tool call records are not the tool calls")


def _safe(value: Any, name: str) -> None:
    if value is not None and not (type(value) is int and is_safe_integer(value)):
        _fail(f"{name} is not a safe integer: {value!r}")


def check_facts(facts: LogFacts, *, size: int | None = None) -> None:
    """Check that ``facts`` are facts the reader can derive (of a file of ``size`` bytes, when given).

    Raises:
        FactsRecordError: the first rule the facts break.

    Examples:
        >>> from subagent_catalog.read.logread import analyse_log
        >>> facts = analyse_log(b"not a header\\n", "none")
        >>> check_facts(facts, size=13)
        >>> facts.verdict = "ok"
        >>> check_facts(facts)
        Traceback (most recent call last):
        ...
        subagent_catalog.store.facts_check.FactsRecordError: a 'ok' read with a failure cause, or without a header
    """
    if not isinstance(facts, LogFacts):
        _fail(f"not LogFacts: {type(facts).__name__}")
    _count(facts.size, "size")
    if size is not None and facts.size != size:
        _fail(f"facts of a {facts.size}-byte file, not of {size} bytes")
    if facts.events is not None or facts.events_ipc is not None:
        _fail("stored facts hold events")
    outcomes = [facts.list_meta is not None, facts.list_skip is not None, facts.list_error is not None]
    if outcomes.count(True) != 1:
        _fail("not exactly one list() outcome (header, skip reason or listing error)")
    if facts.list_meta is not None:
        check_header(facts.list_meta, "list_meta")
    _text(facts.list_skip, "list_skip", optional=True)
    _text(facts.list_error, "list_error", optional=True)
    # the read's verdict, failure, header, counts and times
    if facts.verdict not in _VERDICTS:
        _fail(f"verdict {facts.verdict!r} is not one the reader gives")
    _text(facts.read_cause, "read_cause", optional=True)
    _text(facts.read_message, "read_message", optional=True)
    _count(facts.read_line, "read_line", least=1, optional=True)
    _count(facts.read_offset, "read_offset", optional=True)
    if facts.verdict == "failed":
        if not facts.read_cause or facts.read_message is None:
            _fail("a failed read without a cause and message")
    elif facts.read_meta is None or facts.read_cause is not None or facts.read_message is not None:
        _fail(f"a {facts.verdict!r} read with a failure cause, or without a header")
    elif facts.read_line is not None or facts.read_offset is not None:
        _fail(f"a {facts.verdict!r} read with a failure position")
    if facts.read_meta is not None:
        check_header(facts.read_meta, "read_meta", full_read=True)
    _count(facts.event_count, "event_count")
    _count(facts.closers, "closers")
    if (facts.first_time is None) != (facts.last_time is None):
        _fail("only one of first_time and last_time")
    if facts.first_time is not None:
        if not (is_safe_integer(facts.first_time) and is_safe_integer(facts.last_time)):
            _fail("event times are not safe integers")
        if type(facts.first_time) is not int or type(facts.last_time) is not int or facts.first_time > facts.last_time:
            _fail("first_time is after last_time")
    for name in ("identity_mode", "identity_label", "identity_detail", "unit_failure", "unit_failure_live"):
        _text(getattr(facts, name), name, optional=True)
    _count(facts.identity_seq, "identity_seq", optional=True)
    if facts.identity_cause is not None:
        if facts.identity_cause not in _IDENTITY_CAUSES:
            _fail(f"identity cause {facts.identity_cause!r} is not one the reader gives")
        if facts.identity_detail is None or facts.identity_seq is not None or facts.identity_mode is not None:
            _fail("an identity cause with an identity, or without a detail")
    elif facts.identity_detail is not None:
        _fail("an identity detail without a cause")
    # the descriptor and problem records
    if type(facts.descriptors) is not list or type(facts.problems) is not list:
        _fail("descriptors and problems are not lists")
    if len(facts.descriptors) > facts.event_count:
        _fail("more descriptors than events")
    for record in facts.descriptors:
        _count(record.seq, "descriptor seq")
        if record.time is not None and not (type(record.time) is int and is_safe_integer(record.time)):
            _fail("a descriptor time is not a safe integer")
        if record.status not in _STATUSES or (record.status == "valid") != (record.reason is None):
            _fail(f"descriptor status {record.status!r} with reason {record.reason!r}")
        _text(record.payload, "descriptor payload")
        for name in ("reason", "version", "mode", "provider", "label", "agent_provider", "agent_model", "persona"):
            _text(getattr(record, name), f"descriptor {name}", optional=True)
        for tools in (record.tool_allow, record.tool_deny):
            if tools is not None and (type(tools) is not list or any(type(tool) is not str for tool in tools)):
                _fail("descriptor tools are not a list of strings")
    for problem in facts.problems:
        _text(problem.kind, "problem kind")
        _text(problem.message, "problem message")
        _count(problem.line, "problem line", least=1, optional=True)
        _count(problem.offset, "problem offset", optional=True)
        if problem.severity not in _SEVERITIES:
            _fail(f"problem severity {problem.severity!r}")
    _check_run(facts)
