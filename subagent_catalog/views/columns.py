"""The ``sessions`` columns the summary and the report never read (the gate's: ``analysis.gate.READ_BY_GATE``).

Over an archive these views read the frames without them
(``store.source.source_frames``): the headers as JSON, the exact path bytes,
the identity and unit details the listing resolves from (the listing itself
is read out of core from the archive), the per-turn counters only transcripts
and widgets show. Over a corpus already in memory nothing is left out: the
frames are there already. A view that starts reading one of these columns
must take it out of its set (the differential test of archives,
``tests/test_archive_inputs.py``, fails on a column left out and then read).
"""

from __future__ import annotations

_UNREAD_BY_VIEWS: tuple[str, ...] = (
    "path_bytes",
    "session_dir",
    "mtime",
    "list_error",
    "cwd",
    "agent_preset",
    "read_header_json",
    "read_offset",
    "event_count",
    "first_event_at",
    "last_event_at",
    "closers",
    "descriptor_count",
    "valid_descriptor_count",
    "last_descriptor_seq",
    "last_descriptor_status",
    "identity_mode",
    "identity_seq",
    "identity_from_seed",
    "identity_cause",
    "identity_detail",
    "unit_failure",
    "unit_failure_live",
    "lookup_error",
    "turns",
    "turns_open",
    "last_turn_open",
    "turn_ms",
    "ttft_ms",
    "ttft_steps",
    "decode_ms",
    "decode_tokens",
    "turns_completed",
    "turns_error",
    "turns_aborted",
    "turns_max_tokens",
    "turns_blocked",
    "turns_interrupted",
    "turns_other",
    "last_turn_outcome",
    "last_abort_cause",
    "last_abort_reason",
    "tool_results",
    "tool_output_bytes",
    "list_skip",
    "version",
    "seed_length",
    "read_cause",
    "read_message",
    "read_line",
    "models",
    "providers",
    "steps",
    "tools",
    "last_context_tokens",
    "peak_context_tokens",
    "context_window",
    "title",
    "prompt",
)
"""What the summary and the report leave unread (the report's findings read some of them back: ``READ_BY_FINDINGS``)."""

READ_BY_FINDINGS: tuple[str, ...] = (
    "path_bytes",
    "event_count",
    "seed_length",
    "turns_error",
    "tools",
    "peak_context_tokens",
    "context_window",
    "read_cause",
    "read_message",
    "read_line",
)
"""The columns of ``_UNREAD_BY_VIEWS`` the report's Findings section reads (``analysis.findings``)."""

UNREAD_BY_REPORT: tuple[str, ...] = tuple(name for name in _UNREAD_BY_VIEWS if name not in READ_BY_FINDINGS)
"""What ``render_report`` leaves unread (the session forest reads ``header_json``)."""

UNREAD_BY_SUMMARY: tuple[str, ...] = (*_UNREAD_BY_VIEWS, "header_json")
"""What ``summary_text`` (and its JSON and Markdown) leaves unread."""
