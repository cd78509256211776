"""The counts views show come from ``analysis`` (issue 51: views format, analysis counts): edge cases."""

from __future__ import annotations

import polars as pl

from subagent_catalog.analysis.chart_counts import folded_tally
from subagent_catalog.analysis.findings.schema import project_counts, worst_runs
from subagent_catalog.analysis.tallies import problem_tables, split_tally, tally, worst_problem_lines
from subagent_catalog.analysis.transcript import turn_summary


def test_tally_puts_ties_in_key_order_and_nulls_last() -> None:
    rows = pl.DataFrame({"k": [None, "b", "a", None, "b", "a"]})
    assert tally(rows, "k").rows() == [("a", 2), ("b", 2), (None, 2)]


def test_tally_of_no_rows_is_an_empty_count() -> None:
    assert tally(pl.DataFrame({"k": []}, schema={"k": pl.String}), "k").height == 0


def test_split_tally_orders_every_split_alike_and_totals_each() -> None:
    rows = pl.DataFrame({"d": ["x", "y", "y", "z", "x"], "s": ["1", "1", "2", "2", "2"]})
    counted = split_tally(rows, "d", split="s", order=["z", "y"])
    assert counted.rows() == [("1", "y", 1, 2), ("1", "x", 1, 2), ("2", "z", 1, 3), ("2", "y", 1, 3), ("2", "x", 1, 3)]
    assert split_tally(rows, "d", order="value")["d"].to_list() == ["x", "y", "z"]


def _problems() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "severity": ["info", "error", "warning", "error", "error"],
            "kind": ["k1", "k2", "k3", "k2", "k4"],
            "scope": ["file", "file", "file", "file", "corpus"],
            "fails_listing": [False, False, False, False, True],
            "path": ["a", "a", "b", "a", None],
            "line": [1, 7, 2, 3, None],
        }
    )


def test_problem_tables_put_errors_that_fail_the_listing_first() -> None:
    counts, ordered = problem_tables(_problems())
    assert counts.select("severity", "kind", "count").rows() == [
        ("error", "k4", 1),
        ("error", "k2", 2),
        ("warning", "k3", 1),
        ("info", "k1", 1),
    ]
    assert ordered["kind"].to_list() == ["k4", "k2", "k2", "k3", "k1"]
    assert ordered["line"].to_list()[1:3] == [7, 3]  # the problems' own order within a rank


def test_worst_problem_line_is_the_most_severe_then_the_earliest() -> None:
    assert sorted(worst_problem_lines(_problems()).rows()) == [("a", 3, "k2"), ("b", 2, "k3")]


def test_folded_tally_folds_the_least_frequent_and_names_null_none() -> None:
    rows = pl.DataFrame({"c": ["a", "a", "b", "c", None, None, None], "o": ["x"] * 7})
    folded = folded_tally(rows, "c", "o", limit=2)
    assert folded.select("category", "count").rows() == [("(none)", 3), ("(other)", 2), ("a", 2)]  # ties by name


def test_folded_tally_counts_names_the_label_makes_one_as_one_bar() -> None:
    rows = pl.DataFrame({"c": ["long-name-1", "long-name-2"], "o": ["x", "x"]})
    assert folded_tally(rows, "c", "o", label=lambda v: v[:4] + "…").rows() == [("long…", "x", 2, 2)]


def _findings() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "list_order": [0, 0, 1, 2, 2, 2],
            "session_id": ["s0", "s0", "s1", "s2", "s2", "s2"],
            "project_dir": ["p", "p", "q", "p", "p", "p"],
            "kind": ["a", "b", "a", "c", "c", "b"],
            "severity": ["info", "warn", "error", "info", "info", "info"],
        }
    )


def test_worst_runs_rank_severity_before_count() -> None:
    assert worst_runs(_findings()).select("list_order", "worst", "findings").rows() == [
        (1, "error", 1),
        (0, "warn", 2),
        (2, "info", 3),
    ]


def test_project_counts_name_each_projects_most_frequent_kinds() -> None:
    counted = project_counts(_findings(), kinds=2)
    assert counted.select("project_dir", "findings", "runs").rows() == [("p", 5, 2), ("q", 1, 1)]
    assert counted["top_kinds"].to_list()[0] == [{"kind": "b", "findings": 2}, {"kind": "c", "findings": 2}]


def _transcript(**columns: list[object]) -> pl.DataFrame:
    base: dict[str, list[object]] = {
        "in_seed": [False, False, False, False],
        "turn": [1, 1, 2, 2],
        "kind": ["user", "tool-call", "turn-end", "user"],
        "name": [None, "read", "", None],
        "step": [None, 1, None, None],
        "time_ms": [10, 20, 30, None],
        "last_time_ms": [10, 25, 30, None],
        "is_error": [None, True, None, None],
    }
    base.update(columns)
    return pl.DataFrame(base)


def test_turn_summary_marks_an_unnamed_end_and_a_turn_that_never_ended() -> None:
    rows = _transcript(turn=[1, 1, 1, 2])
    summary = turn_summary(rows).select("turn", "row", "took", "steps", "calls", "failed", "ended").rows()
    assert summary == [(1, 0, 20, 1, 1, 1, "?"), (2, 3, None, 0, 0, 0, "open")]


def test_turn_summary_leaves_seed_rows_out() -> None:
    rows = _transcript(in_seed=[True, True, False, False])
    assert turn_summary(rows)["turn"].to_list() == [2]
