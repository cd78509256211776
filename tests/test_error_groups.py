"""Failed runs grouped by error (issue 43 item 3): ``group_failures``, ``error_groups``, ``summary``, ``runs``.

The pure grouping is checked on hand-built failure rows (what varies between runs made alike, runs
without a message, costs with unknown parts, times past 64 bits); the corpus-level views against the
sample's failed runs, which ``run_summary`` lists independently.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog import error_groups, read_corpus, run_summary
from subagent_catalog.analysis.error_groups import ERROR_GROUP_SCHEMA, group_failures
from subagent_catalog.cli import main
from subagent_catalog.views.run_format import runs_json, runs_lines, runs_markdown

SAMPLE = "data/sample"


def _failure(order: int, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "list_order": order,
        "session_id": f"s{order}",
        "label": None,
        "name": f"run {order}",
        "outcome": "error",
        "outcome_detail": None,
        "error_message": None,
        "error_code": None,
        "start_ms": 1_000 * order,
        "wall_ms": 10,
        "cost_usd": 0.5,
        "cost_usd_known": 0.5,
        "path": f"p/s{order}/session.jsonl",
    }
    row.update(values)
    return row


def _failures(*rows: dict[str, Any]) -> pl.DataFrame:
    schema = {
        "list_order": pl.Int64,
        "session_id": pl.String,
        "label": pl.String,
        "name": pl.String,
        "outcome": pl.String,
        "outcome_detail": pl.String,
        "error_message": pl.String,
        "error_code": pl.String,
        "start_ms": pl.Int64,
        "wall_ms": pl.Int64,
        "cost_usd": pl.Float64,
        "cost_usd_known": pl.Float64,
        "path": pl.String,
    }
    return pl.DataFrame(list(rows), schema=schema)


def test_messages_that_differ_in_ids_paths_and_numbers_are_one_group() -> None:
    first = "timeout after 30000 ms (req 5f0c9e0a-1b2c-4d5e-8f90-123456789abc)"
    second = "timeout after 12 ms (req 00000000-1b2c-4d5e-8f90-1234567890ab)"
    groups = group_failures(
        _failures(
            _failure(0, error_code="NETWORK", error_message=first),
            _failure(1, error_code="NETWORK", error_message=second),
            _failure(2, error_code="NETWORK", error_message="ENOENT: /home/a/b.ts"),
        )
    )
    assert groups.select("code", "message", "runs").rows() == [
        ("NETWORK", "timeout after <n> ms (req <id>)", 2),
        ("NETWORK", "ENOENT: <path>", 1),
    ]
    assert groups["example_session_id"].to_list() == ["s0", "s2"]  # the first run in list order
    assert groups["example_message"][0] == first


def test_one_message_with_two_codes_is_two_groups() -> None:
    groups = group_failures(
        _failures(_failure(0, error_code="A", error_message="boom"), _failure(1, error_code="B", error_message="boom"))
    )
    assert sorted(groups.select("code", "runs").rows()) == [("A", 1), ("B", 1)]


def test_a_run_without_a_message_is_grouped_by_its_detail_then_its_outcome() -> None:
    groups = group_failures(
        _failures(
            _failure(0, outcome="aborted", outcome_detail="parent"),
            _failure(1, outcome="aborted", outcome_detail="parent"),
            _failure(2, outcome="max-tokens"),
            _failure(3, outcome="open", outcome_detail=None),
        )
    )
    assert groups.select("message", "runs", "outcomes").rows() == [
        ("parent", 2, "aborted ×2"),
        ("open", 1, "open ×1"),  # seen later than max-tokens: the latest first among equals
        ("max-tokens", 1, "max-tokens ×1"),
    ]


def test_outcomes_are_counted_most_first() -> None:
    rows = [_failure(i, error_message="x", outcome="error") for i in range(2)]
    rows.append(_failure(2, error_message="x", outcome="open"))
    groups = group_failures(_failures(*rows))
    assert groups.select("runs", "outcomes").rows() == [(3, "error ×2, open ×1")]


def test_a_group_with_runs_of_unknown_cost_gives_its_known_part_and_counts_them() -> None:
    groups = group_failures(
        _failures(
            _failure(0, error_message="x", cost_usd=None, cost_usd_known=0.25),
            _failure(1, error_message="x", cost_usd=None, cost_usd_known=None),
            _failure(2, error_message="x"),
        )
    )
    assert groups.select("cost_usd_known", "cost_unknown").rows() == [(0.75, 2)]


def test_first_and_last_seen_are_the_earliest_and_latest_run_ends() -> None:
    groups = group_failures(
        _failures(
            _failure(0, error_message="x", start_ms=5_000, wall_ms=100),
            _failure(1, error_message="x", start_ms=1_000, wall_ms=None),
            _failure(2, error_message="x", start_ms=None, wall_ms=None),
        )
    )
    assert groups.select("first_seen_ms", "last_seen_ms").rows() == [(1_000, 5_100)]


def test_a_run_end_past_64_bits_is_no_time_not_a_wrapped_one() -> None:
    groups = group_failures(_failures(_failure(0, error_message="x", start_ms=2**63 - 5, wall_ms=10)))
    assert groups.select("first_seen_ms", "last_seen_ms").rows() == [(None, None)]


def test_no_failures_is_an_empty_frame_of_the_schema() -> None:
    groups = group_failures(_failures())
    assert groups.is_empty() and groups.schema == pl.Schema(ERROR_GROUP_SCHEMA)


def test_every_failed_run_of_the_sample_is_in_exactly_one_group() -> None:
    corpus = read_corpus(SAMPLE, cache=False)
    runs = run_summary(corpus)
    groups = runs.error_groups
    assert int(groups["runs"].sum()) == runs.failed == 7
    assert groups.schema == pl.Schema(ERROR_GROUP_SCHEMA)
    examples = set(groups["example_path"].to_list())
    assert examples <= set(runs.failures["path"].to_list())
    assert error_groups(corpus).equals(groups)


def test_summary_shows_the_groups_in_text_json_and_markdown() -> None:
    runs = run_summary(read_corpus(SAMPLE, cache=False))
    lines = runs_lines(runs)
    assert any(line.startswith("by error     7 groups of 7 failed runs") for line in lines)
    assert not any("CONTEXT_LENGTH context length exceeded" in line for line in lines)  # 5 of 7 shown
    assert any("2 more groups" in line for line in lines)
    assert any("CONTEXT_LENGTH context length exceeded" in line for line in runs_lines(runs, limit=0))
    facts = runs_json(runs)
    assert [g["code"] for g in facts["error_groups"]].count("CONTEXT_LENGTH") == 1
    json.dumps(facts)  # plain JSON values
    text = "\n".join(runs_markdown(runs, limit=0))
    assert "### Failed runs by error (7 groups)" in text and "| 1 | CONTEXT\\_LENGTH |" in text


def test_runs_table_errors_is_the_library_frame() -> None:
    result = CliRunner().invoke(main, ["runs", SAMPLE, "--table", "errors", "--format", "json", "-q"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    expected = error_groups(read_corpus(SAMPLE, cache=False))
    assert [(r["code"], r["message"], r["runs"]) for r in rows] == expected.select("code", "message", "runs").rows()


def test_runs_sessions_outcome_failed_lists_exactly_the_failed_runs_with_their_cost() -> None:
    result = CliRunner().invoke(
        main, ["runs", SAMPLE, "--table", "sessions", "--outcome", "failed", "--format", "json", "-q"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    failures = run_summary(read_corpus(SAMPLE, cache=False)).failures
    assert sorted(r["path"] for r in rows) == sorted(failures["path"].to_list())
    assert {"cost_usd", "last_error_code", "active_ms", "run_wall_ms"} <= set(rows[0])


@pytest.mark.parametrize("outcome", ["error", "completed"])
def test_runs_sessions_outcome_keeps_one_outcome(outcome: str) -> None:
    result = CliRunner().invoke(
        main, ["runs", SAMPLE, "--table", "sessions", "--outcome", outcome, "--format", "json", "-q"]
    )
    rows = [json.loads(line) for line in result.output.splitlines()]
    expected = read_corpus(SAMPLE, cache=False).sessions.filter(pl.col("outcome") == outcome).height
    assert len(rows) == expected > 0 and {r["outcome"] for r in rows} == {outcome}


def test_outcome_with_another_table_is_a_usage_error_with_a_hint() -> None:
    result = CliRunner().invoke(main, ["runs", SAMPLE, "--table", "tools", "--outcome", "failed"])
    assert result.exit_code == 2
    assert "--outcome applies to --table sessions" in result.output and "hint:" in result.output
