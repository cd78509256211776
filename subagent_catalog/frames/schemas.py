"""The columns and types of the corpus frames (``sessions``, ``descriptors``, ``problems``, ``events``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import polars as pl

# Per-file problems that make upstream's whole listing fail (list() reads the header of every log).
LISTING_FATAL_KINDS = frozenset({"zstd-header-frame", "retired-header-fields", "io-error", "header-too-long"})


SESSION_SCHEMA: dict[str, Any] = {
    "list_order": pl.Int64,
    "session_id": pl.String,
    "path": pl.String,
    "path_bytes": pl.Binary,
    "project_dir": pl.String,
    "session_dir": pl.String,
    "encoding": pl.String,
    "bytes": pl.Int64,
    "mtime": pl.Datetime("ns", "UTC"),
    "listed": pl.Boolean,
    "list_skip": pl.String,
    "list_error": pl.String,
    "version": pl.Float64,
    "created_at_ms": pl.Int64,
    "created_at": pl.Datetime("ms", "UTC"),
    "cwd": pl.String,
    "parent_session": pl.String,
    "origin": pl.String,
    "seed_length": pl.Int64,
    "delegation_depth": pl.Int64,
    "agent_preset": pl.String,
    "header_json": pl.String,
    "verdict": pl.String,
    "read_cause": pl.String,
    "read_message": pl.String,
    "read_line": pl.Int64,
    "read_offset": pl.Int64,
    "read_header_json": pl.String,
    "event_count": pl.Int64,
    "first_event_ms": pl.Int64,
    "last_event_ms": pl.Int64,
    "first_event_at": pl.Datetime("ms", "UTC"),
    "last_event_at": pl.Datetime("ms", "UTC"),
    "closers": pl.Int64,
    "descriptor_count": pl.Int64,
    "valid_descriptor_count": pl.Int64,
    "last_descriptor_seq": pl.Int64,
    "last_descriptor_status": pl.String,
    "identity_mode": pl.String,
    "identity_label": pl.String,
    "identity_seq": pl.Int64,
    "identity_from_seed": pl.Boolean,
    "identity_cause": pl.String,
    "identity_detail": pl.String,
    "unit_failure": pl.String,
    "unit_failure_live": pl.String,
    "lookup_error": pl.String,
}


OUTCOME_SCHEMA: dict[str, Any] = {"outcome": pl.String, "outcome_detail": pl.String}
"""How each run ended (``frames.outcome``): one value per session, and what it was."""

# Run facts of a session's own events (``seq >= seedLength``); docs/frames.md names each one's source.
RUN_SCHEMA: dict[str, Any] = {
    "run_first_ms": pl.Int64,
    "run_last_ms": pl.Int64,
    "run_wall_ms": pl.Int64,
    "active_ms": pl.Int64,
    "turns": pl.Int64,
    "turns_open": pl.Int64,
    "last_turn_open": pl.Boolean,
    "turn_ms": pl.Int64,
    "llm_ms": pl.Int64,
    "tool_ms": pl.Int64,
    "tool_busy_ms": pl.Int64,
    "ttft_ms": pl.Int64,
    "ttft_steps": pl.Int64,
    "decode_ms": pl.Int64,
    "decode_tokens": pl.Int64,
    "turns_completed": pl.Int64,
    "turns_error": pl.Int64,
    "turns_aborted": pl.Int64,
    "turns_max_tokens": pl.Int64,
    "turns_blocked": pl.Int64,
    "turns_interrupted": pl.Int64,
    "turns_other": pl.Int64,
    "last_turn_outcome": pl.String,
    "last_abort_cause": pl.String,
    "last_abort_reason": pl.String,
    "last_error_message": pl.String,
    "last_error_code": pl.String,
    "models": pl.List(pl.String),
    "providers": pl.List(pl.String),
    "steps": pl.Int64,
    "usage_steps": pl.Int64,
    "input_tokens": pl.Int64,
    "output_tokens": pl.Int64,
    "cache_read_tokens": pl.Int64,
    "cache_write_tokens": pl.Int64,
    "reasoning_tokens": pl.Int64,
    "last_context_tokens": pl.Int64,
    "peak_context_tokens": pl.Int64,
    "context_window": pl.Int64,
    "peak_context_share": pl.Float64,
    "tool_calls": pl.Int64,
    "tools": pl.List(pl.String),
    "tool_results": pl.Int64,
    "tool_results_failed": pl.Int64,
    "tool_output_bytes": pl.Int64,
    "title": pl.String,
    "prompt": pl.String,
    "name": pl.String,
}

USAGE_SAMPLE_TYPE = pl.Struct(
    {
        "seq": pl.Int64,
        "time_ms": pl.Int64,
        "turn": pl.Int64,
        "step": pl.Int64,
        "in_seed": pl.Boolean,
        "provider": pl.String,
        "model": pl.String,
        "input_tokens": pl.Int64,
        "output_tokens": pl.Int64,
        "cache_read_tokens": pl.Int64,
        "cache_write_tokens": pl.Int64,
        "reasoning_tokens": pl.Int64,
    }
)
"""One step's usage sample and the model it is attributed to (``read.run_records.UsageSample``)."""

TOOL_CALL_TYPE = pl.Struct(
    {
        "seq": pl.Int64,
        "time_ms": pl.Int64,
        "turn": pl.Int64,
        "step": pl.Int64,
        "call_id": pl.String,
        "name": pl.String,
        "argument_bytes": pl.Int64,
        "in_seed": pl.Boolean,
        "result_seq": pl.Int64,
        "result_time_ms": pl.Int64,
        "is_error": pl.Boolean,
        "error_name": pl.String,
        "error_code": pl.String,
        "result_bytes": pl.Int64,
    }
)
"""One tool call and the result answering it (``read.run_records.ToolCallRecord``)."""

RUN_DETAIL_SCHEMA: dict[str, Any] = {
    "usage_samples": pl.List(USAGE_SAMPLE_TYPE),
    "tool_call_records": pl.List(TOOL_CALL_TYPE),
}
"""Nested per-step and per-call records of the whole log (seed ones flagged ``in_seed``): ``usage_by_model``,
``tool_calls`` and the cost read them."""

SESSION_SCHEMA.update(OUTCOME_SCHEMA)
SESSION_SCHEMA.update(RUN_SCHEMA)
SESSION_SCHEMA.update(RUN_DETAIL_SCHEMA)

COST_SCHEMA: dict[str, Any] = {"cost_usd": pl.Float64}
"""The column a read adds to the stored ``sessions`` columns: the session's own usage priced (``frames.costs``)."""

CORPUS_SESSION_SCHEMA: dict[str, Any] = {**SESSION_SCHEMA, **COST_SCHEMA}
"""A ``Corpus``'s ``sessions``: the columns archives and caches store, then ``cost_usd`` (computed at read, with
the read's price table)."""


DESCRIPTOR_SCHEMA: dict[str, Any] = {
    "session_id": pl.String,
    "path": pl.String,
    "seq": pl.Int64,
    "time_ms": pl.Int64,
    "in_seed": pl.Boolean,
    "is_last": pl.Boolean,
    "payload": pl.String,
    "valid": pl.Boolean,
    "status": pl.String,
    "reason": pl.String,
    "version": pl.String,
    "mode": pl.String,
    "provider": pl.String,
    "label": pl.String,
    "agent_provider": pl.String,
    "agent_model": pl.String,
    "persona": pl.String,
    "tool_allow": pl.List(pl.String),
    "tool_deny": pl.List(pl.String),
}


PROBLEM_SCHEMA: dict[str, Any] = {
    "scope": pl.String,
    "kind": pl.String,
    "severity": pl.String,
    "fails_listing": pl.Boolean,
    "path": pl.String,
    "path_bytes": pl.Binary,
    "session_id": pl.String,
    "line": pl.Int64,
    "offset": pl.Int64,
    "message": pl.String,
}


EVENT_SCHEMA: dict[str, Any] = {
    "session_id": pl.String,
    "seq": pl.Int64,
    "time_ms": pl.Int64,
    "type": pl.String,
    "turn": pl.Int64,
    "step": pl.Int64,
    "ignorable": pl.Boolean,
    "in_seed": pl.Boolean,
    "data": pl.String,
    "text": pl.String,
    "text_fields": pl.String,
}


FrameName = Literal["sessions", "descriptors", "problems"]
"""The frames every source has (``frames.source.Source.table``)."""

EventFrames = Iterator[tuple[pl.DataFrame, int | None]]
"""Candidate event rows, a frame at a time, each with the smallest ``list_order`` a later frame may hold (``None``:
any): a search with a limit stops once its rows come before every later one (``frames.source.Source.event_frames``)."""
