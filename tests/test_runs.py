"""Runs as data (issue 27): outcomes, the time split, usage by model, tool calls and run trees.

Expectations come from hand-made logs (``tests/data/outcomes``, ``tests/data/run-facts``), from
upstream's own projections of a corpus its runtime wrote (``projections.jsonl``), and from
independent computations over the events frame.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog import read_corpus
from subagent_catalog.analysis.runs import tool_calls, unpriced_models, usage_by_model, usage_samples
from subagent_catalog.analysis.transcript import transcript
from subagent_catalog.analysis.trees import run_trees
from subagent_catalog.catalog import catalog_descendants
from subagent_catalog.cli import main
from subagent_catalog.frames.outcome import OUTCOMES
from subagent_catalog.prices import PriceTable
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.synth.writer import header, write_session

DATA = Path(__file__).parent / "data"
REAL = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "cases" / "real-writer-rich-none"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/conformance is not present")

# Hand-derived from tests/data/outcomes: the precedence of frames/outcome.py applied to each log by reading it.
OUTCOME_EXPECTED = {
    "completed": ("completed", None),
    "error": ("error", "rate limit exceeded (RATE_LIMIT)"),
    "aborted-hook": ("aborted", "aborted by hook: token budget exceeded"),
    "aborted-legacy-disposed": ("aborted", "aborted (disposed)"),  # a legacy {"kind": "disposed"} turn end
    "max-tokens": ("max-tokens", "max-tokens: the model stopped at its output token limit"),
    "blocked": ("blocked", None),
    "interrupted": ("interrupted", None),
    "unknown-kind": ("other", "turn/end reason kind 'paused'"),
    "open-running": ("open", "the last turn never ended"),
    "open-killed": ("open", "the last turn never ended; the log ends in a torn record (killed mid-write)"),
    "resumed-after-crash": ("completed", None),  # turn 1 never ended, but the last turn did
    "no-turns": ("no-turns", None),
}


def test_every_outcome_from_a_hand_made_log() -> None:
    sessions = read_corpus(DATA / "outcomes", cache=False).sessions
    rows = {row["session_id"]: row for row in sessions.iter_rows(named=True)}
    for session_id, expected in OUTCOME_EXPECTED.items():
        assert (rows[session_id]["outcome"], rows[session_id]["outcome_detail"]) == expected, session_id
    unreadable = rows["unreadable"]  # an unparsable line before a turn/end: upstream's read fails
    assert unreadable["outcome"] == "unreadable"
    assert unreadable["outcome_detail"].startswith("unparsable-line-before-turn-end: ")
    skipped = sessions.filter(pl.col("session_id").is_null()).row(0, named=True)  # the empty file
    assert (skipped["outcome"], skipped["outcome_detail"]) == ("unreadable", "list() skips the file: empty file")
    assert set(sessions["outcome"]) <= set(OUTCOMES)
    assert set(OUTCOMES) - set(sessions["outcome"]) == set()


def test_a_killed_run_is_open_although_an_earlier_turn_completed() -> None:
    row = (
        read_corpus(DATA / "outcomes", cache=False)
        .sessions.filter(pl.col("session_id") == "open-killed")
        .row(0, named=True)
    )
    assert (row["last_turn_outcome"], row["outcome"], row["verdict"]) == ("completed", "open", "torn-tail")


def _projections() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (REAL / "projections.jsonl").read_text().splitlines()]


def _view(projection: dict[str, Any], part: str) -> dict[str, Any]:
    """upstream's values of a part: ``own``/``seed`` for forks, else ``stored`` where it differs, else ``inspect``."""
    chosen = projection.get(part) or projection.get("stored") or projection["inspect"]
    values: dict[str, Any] = chosen.get("values", chosen)
    return values


@needs_real
def test_run_columns_equal_upstreams_own_projections() -> None:
    """Every session written by upstream's runtime: tokens, steps and the time split equal upstream's figures."""
    corpus = read_corpus(REAL / "corpus", cache=False)
    rows = {row["session_id"]: row for row in corpus.sessions.iter_rows(named=True)}
    projections = _projections()
    assert len(projections) == len(rows) == 277
    compared = 0
    for projection in projections:
        row = rows[projection["session_id"]]
        values = _view(projection, "own")
        stats, tokens = values["sessionStats"], values["tokenUsage"]
        assert row["steps"] == stats["steps"]
        assert (row["llm_ms"], row["tool_ms"], row["ttft_ms"]) == (stats["llmMs"], stats["toolMs"], stats["ttftMs"])
        assert (row["ttft_steps"], row["decode_ms"]) == (stats["ttftSteps"], stats["decodeMs"])
        assert row["decode_tokens"] == stats["decodeTokens"]
        # A count no sample carries is null here and 0 upstream (a difference of definition).
        for ours, theirs in (
            ("input_tokens", "uncachedInputTokens"),
            ("output_tokens", "outputTokens"),
            ("cache_read_tokens", "cacheReadTokens"),
            ("cache_write_tokens", "cacheWriteTokens"),
        ):
            assert (row[ours] if row[ours] is not None else 0) == tokens[theirs], (projection["session_id"], ours)
            assert row[ours] is not None or not row["usage_steps"] or tokens[theirs] == 0
        compared += 1
    assert compared == 277


@needs_real
def test_turn_counts_differ_from_upstream_by_definition() -> None:
    """``turns`` counts turn/start events; upstream's sessionStats counts distinct turns with a closed step."""
    corpus = read_corpus(REAL / "corpus", cache=False, events=True)
    closed = (
        corpus.events.filter((pl.col("type") == "step/end") & ~pl.col("in_seed"))
        .group_by("session_id")
        .agg(pl.col("turn").n_unique().alias("closed"))
    )
    stepped = dict(closed.iter_rows())
    for projection in _projections():
        row = corpus.sessions.filter(pl.col("session_id") == projection["session_id"]).row(0, named=True)
        theirs = _view(projection, "own")["sessionStats"]["turns"]
        assert theirs == stepped.get(projection["session_id"], 0)  # upstream's definition, computed here
        assert row["turns"] >= theirs  # here every turn of this corpus has a step: the two agree
    golden = read_corpus(DATA / "run-facts", cache=False, events=True)
    child = golden.events.filter((pl.col("session_id") == "child-1") & ~pl.col("in_seed"))
    with_steps = child.filter(pl.col("type") == "step/end")["turn"].n_unique()
    turns = golden.sessions.filter(pl.col("session_id") == "child-1")["turns"][0]
    assert (turns, with_steps) == (5, 2)  # turns 4, 5 and 6 close no step: upstream would count 2


@needs_real
def test_whole_log_token_usage_is_own_plus_seed() -> None:
    """Upstream's whole-log tokenUsage (inspect) = the own rows + the seed rows of usage_by_model(part="all")."""
    corpus = read_corpus(REAL / "corpus", cache=False)
    rows = usage_by_model(corpus, part="all")
    totals = rows.group_by("session_id").agg(
        pl.col(name).fill_null(0).sum()
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    )
    ours = {row[0]: row[1:] for row in totals.iter_rows()}
    forks = 0
    for projection in _projections():
        whole = projection["inspect"]["values"]["tokenUsage"]
        expected = (
            whole["uncachedInputTokens"],
            whole["outputTokens"],
            whole["cacheReadTokens"],
            whole["cacheWriteTokens"],
        )
        assert ours.get(projection["session_id"], (0, 0, 0, 0)) == expected, projection["session_id"]
        forks += "seed" in projection
    assert forks == 38 and rows.filter(pl.col("in_seed")).height > 0


@needs_real
def test_turn_ms_equals_settled_ms_when_the_descriptor_precedes_the_first_own_turn_end() -> None:
    """turn_ms sums the own paired turns; upstream's subagentTiming restarts at every descriptor."""
    corpus = read_corpus(REAL / "corpus", cache=False, events=True)
    events = corpus.events.filter(~pl.col("in_seed"))
    last_descriptor = dict(
        events.filter(pl.col("type") == "subagent/descriptor").group_by("session_id").agg(pl.col("seq").max()).rows()
    )
    first_end = dict(events.filter(pl.col("type") == "turn/end").group_by("session_id").agg(pl.col("seq").min()).rows())
    checked = 0
    for projection in _projections():
        session_id = projection["session_id"]
        if projection["origin"] != "subagent" or session_id not in last_descriptor:
            continue
        row = corpus.sessions.filter(pl.col("session_id") == session_id).row(0, named=True)
        settled = projection["inspect"]["values"]["subagentTiming"]["settledMs"]
        if last_descriptor[session_id] < first_end.get(session_id, 1 << 62):
            assert (row["turn_ms"] or 0) == settled, session_id
            checked += 1
    assert checked > 200


@needs_real
def test_per_step_times_of_the_transcript_add_up_to_the_session() -> None:
    corpus = read_corpus(REAL / "corpus", cache=False)
    for row in corpus.sessions.head(40).iter_rows(named=True):
        steps = transcript(corpus, row["session_id"])
        assert (steps["llm_ms"].sum() or 0) == row["llm_ms"], row["session_id"]
        assert (steps["ttft_ms"].sum() or 0) == row["ttft_ms"], row["session_id"]
        assert steps["llm_ms"].count() == steps.filter(pl.col("llm_ms").is_not_null()).height


@needs_real
def test_tool_calls_agree_with_the_session_counts_and_never_count_the_seed_twice() -> None:
    corpus = read_corpus(REAL / "corpus", cache=False)
    calls = tool_calls(corpus)
    per = calls.group_by("session_id").agg(
        (pl.col("seq").is_not_null()).sum().alias("calls"),
        (pl.col("status") == "error").sum().alias("failed"),
    )
    counts = dict(corpus.sessions.select("session_id", "tool_calls").rows())
    failed = dict(corpus.sessions.select("session_id", "tool_results_failed").rows())
    for session_id, n_calls, n_failed in per.iter_rows():
        assert n_calls == counts[session_id]
        assert n_failed <= failed[session_id]
    seeds = tool_calls(corpus, part="seed")
    assert seeds.height > 0 and seeds["in_seed"].all() and not calls["in_seed"].any()
    both = tool_calls(corpus, part="all")
    assert both.height == calls.height + seeds.height
    assert set(calls["status"]) <= {"ok", "error", "no-result", "no-call"}
    assert (calls.filter(pl.col("status") == "error")["error_code"].drop_nulls().len()) > 0


def test_tool_call_rows_of_the_golden_child() -> None:
    calls = tool_calls(read_corpus(DATA / "run-facts", cache=False))
    assert calls.select("session_id", "seq", "name", "duration_ms", "status").rows() == [
        ("child-1", 12, "shell", 10, "error"),
        ("child-1", 28, "read_file", 10, "ok"),
        ("child-1", 30, "shell", 9, "error"),
        ("parent-1", 2, "grep", None, "no-result"),
    ]
    seed = tool_calls(read_corpus(DATA / "run-facts", cache=False), part="seed")
    assert seed.select("session_id", "seq", "in_seed").rows() == [("child-1", 2, True)]


def test_a_result_without_a_call_is_a_row_of_its_own(tmp_path: Path) -> None:
    result = {
        "turn": 1,
        "step": 1,
        "message": {
            "id": "r",
            "role": "user",
            "source": {"kind": "tool", "callId": "nobody"},
            "content": [{"type": "tool-result", "toolCallId": "nobody", "content": [], "isError": True}],
        },
    }
    events = [
        {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
        {"type": "tool/result", "seq": 1, "time": 2, "data": result, "surfaceOp": "append"},
    ]
    write_session(tmp_path, header("s", created_at=1), events, "none")
    calls = tool_calls(read_corpus(tmp_path, cache=False))
    assert calls.select("seq", "call_id", "result_seq", "status").rows() == [(None, "nobody", 1, "no-call")]


def test_usage_by_model_splits_a_two_model_session_without_double_counting() -> None:
    corpus = read_corpus(DATA / "run-facts", cache=False)
    rows = usage_by_model(corpus, prices={"deepseek-v4-flash": {"input": 1, "output": 2, "cache_read": 0.5}})
    assert rows.select("model", "steps", "input_tokens", "output_tokens", "billed_input_tokens").rows() == [
        ("deepseek-v4-flash", 2, 310, 51, 367),  # 100 + 210 input, 50 cache read, 7 cache write
        ("deepseek-v4-pro", 1, 1000, 1, 1000),
    ]
    session = corpus.sessions.filter(pl.col("session_id") == "child-1").row(0, named=True)
    assert rows["input_tokens"].sum() == session["input_tokens"]
    assert rows["output_tokens"].sum() == session["output_tokens"]
    # the user table prices v4-flash: (310 * 1 + 50 * 0.5 + 7 * 1 + 51 * 2) / 1e6; v4-pro is genai-prices'
    assert rows["cost_usd"][0] == pytest.approx((310 + 25 + 7 + 102) / 1e6)
    assert rows["price_source"][0] == "user table: deepseek-v4-flash"
    assert rows["price_source"][1].startswith("genai-prices ")


def test_an_unpriced_model_is_listed_and_never_costs_zero(tmp_path: Path) -> None:
    corpus = read_corpus(DATA / "run-facts", cache=False)
    nothing = PriceTable(genai=False)
    assert usage_by_model(corpus, prices=nothing)["cost_usd"].null_count() == 2
    assert unpriced_models(corpus, prices=nothing).select("model", "sessions", "steps").rows() == [
        ("deepseek-v4-flash", 1, 2),
        ("deepseek-v4-pro", 1, 1),
    ]
    costs = read_corpus(DATA / "run-facts", cache=False, prices=nothing).sessions.select("session_id", "cost_usd")
    assert dict(costs.rows()) == {"parent-1": 0.0, "child-1": None}  # the parent made no priced request
    assert usage_samples(corpus, prices=nothing)["cost_usd"].null_count() == 3


def test_session_cost_is_the_sum_of_its_models() -> None:
    corpus = read_corpus(DATA / "run-facts", cache=False)
    session = corpus.sessions.filter(pl.col("session_id") == "child-1")["cost_usd"][0]
    assert session is not None and session > 0
    assert usage_by_model(corpus)["cost_usd"].sum() == pytest.approx(session)


def _tree_corpus(root: Path) -> Any:
    """root -> a (subagent) -> b (ordinary fork) -> c (subagent); x names itself; y <-> z; w below y."""
    links = {
        "root": (None, None),
        "a": ("root", "subagent"),
        "b": ("a", None),
        "c": ("b", "subagent"),
        "x": ("x", "subagent"),
        "y": ("z", "subagent"),
        "z": ("y", "subagent"),
        "w": ("y", "subagent"),
    }
    for index, (session_id, (parent, origin)) in enumerate(links.items()):
        events = [
            {"type": "turn/start", "seq": 0, "time": 100 + index, "data": {"turn": 1}},
            {"type": "turn/end", "seq": 1, "time": 200 + index, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ]
        made = header(session_id, created_at=index + 1, parent=parent, subagent=origin == "subagent")
        write_session(root, made, events, "none")
    return read_corpus(root, cache=False)


def test_run_trees_roll_up_lineage_and_cut_cycles(tmp_path: Path) -> None:
    trees = run_trees(_tree_corpus(tmp_path))
    rows = {row["session_id"]: row for row in trees.iter_rows(named=True)}
    assert (rows["root"]["subtree_sessions"], rows["root"]["subtree_subagents"], rows["root"]["subtree_forks"]) == (
        4,
        2,
        1,
    )
    assert (rows["root"]["subtree_max_depth"], rows["c"]["depth"], rows["c"]["root_session_id"]) == (3, 3, "root")
    assert rows["root"]["subtree_completed"] == 4 and rows["root"]["subtree_wall_ms"] == 203 - 100
    assert rows["x"]["in_cycle"] and rows["x"]["subtree_sessions"] == 1 and rows["x"]["depth"] == 0
    assert rows["y"]["in_cycle"] and rows["z"]["in_cycle"] and not rows["w"]["in_cycle"]
    assert (rows["y"]["subtree_sessions"], rows["z"]["subtree_sessions"]) == (2, 1)  # w hangs below y
    assert (rows["w"]["root_session_id"], rows["w"]["depth"]) == ("y", 1)
    assert trees["list_order"].to_list() == sorted(trees["list_order"].to_list())


def test_run_trees_subagent_scope_counts_what_the_listing_shows(tmp_path: Path) -> None:
    corpus = _tree_corpus(tmp_path)
    trees = run_trees(corpus, scope="subagents")
    root = trees.filter(pl.col("session_id") == "root").row(0, named=True)
    shown = catalog_descendants(corpus).filter(pl.col("root") == "root")
    assert root["subtree_subagents"] == shown.height == 2  # a and c, found through the ordinary fork b
    assert (root["subtree_sessions"], root["subtree_forks"], root["subtree_max_depth"]) == (3, 0, 3)


@needs_real
def test_run_trees_agree_with_the_descendants_listing_and_the_session_sums() -> None:
    corpus = read_corpus(REAL / "corpus", cache=False)
    shown = catalog_descendants(corpus).group_by("root").agg(pl.len().alias("rows"))
    trees = run_trees(corpus, scope="subagents")
    counts = dict(trees.select("session_id", "subtree_subagents").rows())
    for root, rows in shown.iter_rows():
        assert counts[root] == rows, root
    lineage = run_trees(corpus)
    roots = lineage.filter(pl.col("depth") == 0)
    assert roots["subtree_sessions"].sum() == corpus.sessions.height
    assert roots["subtree_input_tokens"].sum() == corpus.sessions["input_tokens"].sum()
    assert roots["subtree_tool_calls"].sum() == corpus.sessions["tool_calls"].sum()
    assert lineage["peak_children_running"].max() >= 2


def test_a_deep_chain_rolls_up_in_one_pass(tmp_path: Path) -> None:
    depth = 3000
    for index in range(depth):
        parent = f"s{index - 1}" if index else None
        write_session(
            tmp_path, header(f"s{index}", created_at=index + 1, parent=parent, subagent=bool(index)), [], "none"
        )
    trees = run_trees(read_corpus(tmp_path, cache=False))
    top = trees.filter(pl.col("session_id") == "s0").row(0, named=True)
    assert (top["subtree_sessions"], top["subtree_max_depth"]) == (depth, depth - 1)
    assert trees["depth"].max() == depth - 1


def test_archive_tables_equal_the_corpus_tables(tmp_path: Path) -> None:
    corpus = read_corpus(DATA / "run-facts", cache=False)
    export_archive(DATA / "run-facts", tmp_path / "a", jobs=1)
    archive = open_archive(tmp_path / "a")
    assert usage_by_model(archive).equals(usage_by_model(corpus))
    assert usage_by_model(archive, by="model").equals(usage_by_model(corpus, by="model"))
    assert tool_calls(archive, part="all").equals(tool_calls(corpus, part="all"))
    assert run_trees(archive).equals(run_trees(corpus))
    assert archive.to_corpus().sessions.equals(corpus.sessions)


def test_the_runs_command_prints_each_table_and_takes_prices(tmp_path: Path) -> None:
    runner = CliRunner()
    prices = tmp_path / "prices.toml"
    prices.write_text('["deepseek-v4-pro"]\ninput = 2.0\noutput = 8.0\n')
    for table in ("outcomes", "models", "tools", "trees", "sessions"):
        result = runner.invoke(main, ["runs", str(DATA / "run-facts"), "-t", table, "-q", "--prices", str(prices)])
        assert result.exit_code == 0, result.output
    models = runner.invoke(main, ["runs", str(DATA / "run-facts"), "-t", "models", "-q", "-f", "json"])
    lines = [json.loads(line) for line in models.output.splitlines()]
    assert [line["model"] for line in lines] == ["deepseek-v4-flash", "deepseek-v4-pro"]
    bad = tmp_path / "bad.toml"
    bad.write_text('["m"]\ninput = "cheap"\noutput = 1\n')
    result = runner.invoke(main, ["runs", str(DATA / "run-facts"), "-t", "models", "--prices", str(bad)])
    assert result.exit_code != 0 and "price of 'm'" in result.output and "hint:" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_fork_costs_its_own_usage_not_its_seed() -> None:
    corpus = read_corpus(Path(__file__).parents[1] / "data" / "sample", cache=False)
    costs = dict(corpus.sessions.select("session_id", "cost_usd").rows())
    seed = usage_by_model(corpus, part="seed").filter(pl.col("session_id") == "fork-webapp-1")
    assert seed["steps"].sum() > 0 and seed["cost_usd"].sum() > 0  # its seed reported usage (the parent's)
    assert costs["fork-webapp-1"] == 0.0  # but the fork's own events made no model request
    assert costs["scratch"] is None  # a self-hosted model no table prices: unknown, not $0
    assert costs["garbage-line"] is None  # upstream cannot read it: its events are not the session's facts


def test_session_costs_are_the_same_float_however_the_frame_is_chunked() -> None:
    """Costs are summed in seq order: equal data gives the very same floats (an archive's read equals the corpus')."""
    from subagent_catalog.frames.costs import with_costs
    from subagent_catalog.prices import price_table

    sessions = read_corpus(DATA.parent.parent / "data" / "sample", cache=False).sessions
    table = price_table()
    expected = with_costs(sessions, table)["cost_usd"].to_list()
    assert sum(cost is not None and cost > 0 for cost in expected) > 10
    for size in (1, 2, 3, 7):  # the same rows in chunks of other sizes
        chunked = pl.concat([sessions.slice(i, size) for i in range(0, sessions.height, size)], rechunk=False)
        for _ in range(3):
            assert with_costs(chunked, table)["cost_usd"].to_list() == expected
