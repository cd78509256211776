"""Active time, tool-busy time and context size (issue 41): golden logs, every conformance corpus, upstream.

Expected figures are read off the golden logs by hand (``tests/golden_time.py`` says what each holds);
context sizes are compared with upstream's own ``contextPressure`` projection of a corpus its runtime
wrote. Each log is also read by both readers (the typed fast path and the full path must agree).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from subagent_catalog import read_corpus, run_summary
from subagent_catalog.store.manifest import FORMAT_VERSION
from tests.golden_time import SESSIONS, write_golden
from tests.test_fastpath import compare

GOLDEN = Path(__file__).parent / "data" / "active-time"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance"
REAL = SHARED / "cases" / "real-writer-rich-none"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/conformance is not present")

TIME_AND_CONTEXT = (
    "run_wall_ms",
    "active_ms",
    "llm_ms",
    "tool_ms",
    "tool_busy_ms",
    "last_context_tokens",
    "peak_context_tokens",
    "context_window",
    "peak_context_share",
)


def _rows() -> dict[str, dict[str, Any]]:
    return {row["session_id"]: row for row in read_corpus(GOLDEN, cache=False).sessions.iter_rows(named=True)}


def _figures(session_id: str) -> tuple[Any, ...]:
    row = _rows()[session_id]
    assert row["verdict"] == "ok"
    return tuple(row[name] for name in TIME_AND_CONTEXT)


def _log(session_id: str) -> bytes:
    return (GOLDEN / "--work-app--" / session_id / "session.jsonl").read_bytes()


def test_the_golden_logs_are_what_the_writer_writes(tmp_path: Path) -> None:
    written = write_golden(tmp_path)
    assert len(written) == len(SESSIONS)
    for path in written:
        relative = Path(path).relative_to(tmp_path)
        assert (GOLDEN / relative).read_bytes() == Path(path).read_bytes(), relative


@pytest.mark.parametrize("session_id", list(SESSIONS))
def test_both_readers_agree_on_each_golden_log(session_id: str) -> None:
    assert compare(_log(session_id), "none") is True  # the typed path answered, and equals the full path


def test_parallel_tool_calls_count_once_in_tool_busy_time() -> None:
    # Calls at +25, +26, +27 ms answered at +325, +225, +525: tool_ms sums 300 + 199 + 498; the union is 25..525.
    # Model time: step 1 +2 -> +21, step 2 +527 -> +560. Prompts: 1,000 + 2,000 cached, then 100 + 3,050.
    assert _figures("parallel-tools") == (570, 570, 19 + 33, 997, 500, 3_150, 3_150, 131_072, 3_150 / 131_072)


def test_an_idle_tail_is_not_active_time() -> None:
    # The turn errors at +245 ms; the session/title 8 s later extends the wall time only.
    wall, active, *_ = _figures("idle-tail")
    assert (wall, active) == (8_245, 245)


def test_a_run_with_an_idle_tail_is_not_among_the_slowest() -> None:
    corpus = read_corpus(GOLDEN, cache=False)
    by_wall = corpus.sessions.sort("run_wall_ms", descending=True)["session_id"].to_list()
    assert by_wall[:2] == ["crash-resumed", "idle-tail"]  # wall time would rank it second
    slowest = run_summary(corpus, top=2).slowest
    assert slowest["session_id"].to_list() == ["window-switch", "parallel-tools"]
    assert slowest.select("active_ms", "wall_ms").rows() == [(610, 610), (570, 570)]


def test_an_open_turn_counts_to_the_last_event_and_an_unanswered_call_adds_nothing() -> None:
    # Turn 1 0..100; idle 5 s; turn 2 from +5,100 to the last event, the call at +5,150 (killed: no result).
    wall, active, _llm, tool, busy, *_ = _figures("open-turn")
    assert (wall, active, tool, busy) == (5_150, 100 + 50, 0, 0)
    row = _rows()["open-turn"]
    assert (row["outcome"], row["last_turn_open"]) == ("open", True)


def test_a_turn_that_never_ended_stops_at_its_last_event_when_the_next_begins() -> None:
    # Turn 1 ran to its last event (+80: the process died); turn 2 ran +60,080..+60,180. The minute between is idle.
    wall, active, *_ = _figures("crash-resumed")
    assert (wall, active) == (60_180, 80 + 100)
    assert _rows()["crash-resumed"]["turns_open"] == 1


def test_the_peak_share_uses_the_window_in_effect_at_each_step() -> None:
    # 100,000 of 131,072 (0.763) then, after the switch, 20,000 of 65,536 (0.305): never 100,000 / 65,536 (1.53).
    *_, last, peak, window, share = _figures("window-switch")
    assert (last, peak, window) == (20_000, 100_000, 65_536)
    assert share == 100_000 / 131_072
    assert peak / window > 1  # the naive share, which the column never states


def test_runs_near_their_context_window_in_one_line() -> None:
    sessions = read_corpus(GOLDEN, cache=False).sessions
    assert sessions.filter(pl.col("peak_context_share") >= 0.9)["session_id"].to_list() == ["idle-tail"]


def _timed(sessions: pl.DataFrame) -> pl.DataFrame:
    return sessions.filter(pl.col("run_wall_ms").is_not_null())


@needs_shared
@pytest.mark.parametrize(
    "case", sorted(p for p in (SHARED / "cases").iterdir() if (p / "corpus").is_dir()), ids=lambda p: p.name
)
def test_busy_time_within_active_time_within_wall_time_on_every_conformance_corpus(case: Path) -> None:
    meta = json.loads((case / "meta.json").read_text())
    sessions = read_corpus(case / "corpus", compression=meta["compression"], cache=False).sessions
    timed = _timed(sessions)
    assert timed.filter(pl.col("active_ms").is_null() | pl.col("tool_busy_ms").is_null()).height == 0
    broken = timed.filter(
        (pl.col("tool_busy_ms") > pl.col("active_ms"))
        | (pl.col("active_ms") > pl.col("run_wall_ms"))
        | (pl.col("tool_busy_ms") > pl.col("tool_ms"))
        | (pl.col("tool_busy_ms") < 0)
    )
    assert broken.height == 0, broken.select("session_id", "run_wall_ms", "active_ms", "tool_ms", "tool_busy_ms")
    untimed = sessions.filter(pl.col("run_wall_ms").is_null())
    assert untimed.filter(pl.col("active_ms").is_not_null() | pl.col("tool_busy_ms").is_not_null()).height == 0


def _projections() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (REAL / "projections.jsonl").read_text().splitlines()]


@needs_shared
def test_context_size_equals_upstreams_context_pressure() -> None:
    """``last_context_tokens`` is upstream's ``pressureTokens`` over the own events; ``context_window`` its window.

    Differences of definition, each asserted: upstream folds the whole log, so a fork whose own events carry no
    usage sample shows its seed's last prompt there (null here); the window is the whole log's here too (a
    fork inherits its parent's), where upstream's fold of the own events alone may have none; upstream's
    ``projectedTokens`` (the sample moved by the surface since) has no column here.
    """
    sessions = read_corpus(REAL / "corpus", cache=False).sessions
    rows = {row["session_id"]: row for row in sessions.iter_rows(named=True)}
    projections = _projections()
    assert len(projections) == len(rows) == 277
    seeded_without_usage = inherited_window = 0
    for projection in projections:
        row = rows[projection["session_id"]]
        whole = projection["inspect"]["values"]["contextPressure"]
        own = (projection.get("own") or projection["inspect"])["values"]["contextPressure"]
        assert row["last_context_tokens"] == own.get("pressureTokens"), projection["session_id"]
        assert row["context_window"] == whole.get("contextWindow"), projection["session_id"]
        if row["usage_steps"]:
            assert row["last_context_tokens"] == whole["pressureTokens"]
        elif "pressureTokens" in whole:  # a fork without own usage: upstream shows its seed's last prompt
            assert projection["seed"]["values"]["contextPressure"]["pressureTokens"] == whole["pressureTokens"]
            seeded_without_usage += 1
        if own.get("contextWindow") != whole.get("contextWindow"):
            assert projection.get("own") is not None and "contextWindow" not in own
            inherited_window += 1
        assert row["peak_context_tokens"] is None or row["peak_context_tokens"] >= (row["last_context_tokens"] or 0)
        if row["peak_context_share"] is not None:
            assert 0 < row["peak_context_share"] <= 1
    assert seeded_without_usage == 5  # forks that made no request of their own (upstream: their seed's prompt)
    assert inherited_window > 0  # the corpus has forks that state no window of their own


def test_an_archive_before_format_7_reads_the_new_columns_as_unknown(tmp_path: Path) -> None:
    import os

    import pyarrow.parquet as pq

    from subagent_catalog.store.archive import open_archive
    from subagent_catalog.store.checksum import part_digest
    from subagent_catalog.store.export import export_archive
    from subagent_catalog.store.layout import SESSIONS_SINCE_7

    export_archive(GOLDEN, tmp_path / "a", jobs=1)
    current = open_archive(tmp_path / "a")
    assert current.manifest["format_version"] == FORMAT_VERSION
    assert (
        current.to_corpus()
        .sessions.select(list(SESSIONS_SINCE_7))
        .equals(read_corpus(GOLDEN, cache=False).sessions.select(list(SESSIONS_SINCE_7)))
    )
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    entry = manifest["tables"]["sessions"]
    for index, name in enumerate(entry["files"]):  # the sessions files as format 6 wrote them
        path = tmp_path / "a" / name
        pq.write_table(pq.read_table(path).drop_columns(list(SESSIONS_SINCE_7)), path, compression="zstd")
        entry["file_bytes"][index] = os.path.getsize(path)
        entry["file_blake2b"][index] = part_digest(path.read_bytes())  # the rewrite keeps its checksum honest
    manifest["format_version"] = 6
    (tmp_path / "a" / "manifest.json").write_text(json.dumps(manifest))
    old = open_archive(tmp_path / "a")
    sessions = old.to_corpus().sessions
    assert sessions.height == len(SESSIONS)
    assert all(sessions[name].null_count() == sessions.height for name in SESSIONS_SINCE_7)
    assert dict(old.sessions.select(list(SESSIONS_SINCE_7)).collect_schema()) == SESSIONS_SINCE_7
    assert run_summary(old.to_corpus()).slowest.height == 0  # no active time known: no ranking made up


def test_the_views_show_busy_inside_active_inside_wall_with_nothing_clamped() -> None:
    from subagent_catalog.views.report_runs import runs_section
    from subagent_catalog.views.run_format import runs_json, runs_lines, runs_markdown
    from subagent_catalog.views.transcript_markdown import transcript_markdown
    from subagent_catalog.views.widgets.run_facts import facts_text, run_facts_html

    corpus = read_corpus(GOLDEN, cache=False)
    runs = run_summary(corpus, top=2)
    slowest = runs_section(corpus, runs, None)["slowest"]
    assert [(r["id"], r["active"], r["wall"]) for r in slowest] == [
        ("window-switch", "610 ms", "610 ms"),
        ("parallel-tools", "570 ms", "570 ms"),
    ]
    assert slowest[1]["split"] == "active 570 ms, all of its wall time (model 52 ms, tools busy 500 ms); " + (
        "tool calls summed 997 ms"
    )
    line = next(line for line in runs_lines(runs) if line.startswith("slowest"))
    assert line == (
        "slowest      review the whole diff (window-switch) 610 ms (wall 610 ms), "
        "run the three test suites (parallel-tools) 570 ms (wall 570 ms)"
    )
    assert [r["active_ms"] for r in runs_json(runs)["slowest"]] == [610, 570]
    assert "| review the whole diff (window-switch) | completed | 610 ms | 610 ms |" in "\n".join(runs_markdown(runs))
    page = transcript_markdown(corpus, "parallel-tools")
    assert (
        "time: `active 570 ms, all of its wall time (model 52 ms, tools busy 500 ms); tool calls summed 997 ms`" in page
    )
    assert "other" not in page.split("## turn")[0]  # no remainder clamped to 0
    idle = corpus.sessions.filter(pl.col("session_id") == "idle-tail").row(0, named=True)
    assert "active 245 ms of 8.2 s wall (model 128 ms)" in run_facts_html(idle)
    assert "largest prompt 63.0 k tokens (96% of the window at most)" in run_facts_html(idle)
    assert facts_text({**idle, "tokens": None}) == "245 ms active of 8.2 s"
