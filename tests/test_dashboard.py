"""DiagnosticsDashboard (issue 16 item 2): true-proportion bars, log scale, shares, run-size distributions."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from subagent_catalog.analysis.bins import BINS, binned
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.units import human_duration
from subagent_catalog.synth.generate import generate
from subagent_catalog.synth.writer import EventLog, descriptor, header, simple_child_events, write_session
from subagent_catalog.views.widgets import DiagnosticsDashboard
from subagent_catalog.views.widgets.dashboard import bar_share


@pytest.fixture(scope="module")
def skewed(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """36 healthy children, 2 without a descriptor, 1 with an unknown descriptor version."""
    root = tmp_path_factory.mktemp("skewed")
    write_session(root, header("run", created_at=1_000), [], "none")
    for n in range(36):
        sid = f"ok-{n:02d}"
        head = header(sid, created_at=2_000 + n, parent="run", subagent=True)
        write_session(root, head, simple_child_events(sid, descriptor("one-shot", label="fine")), "none")
    for n in range(2):
        sid = f"nodesc-{n}"
        log = EventLog(sid)
        log.turn_start()
        log.turn_end()
        write_session(root, header(sid, created_at=3_000 + n, parent="run", subagent=True), log.events, "none")
    sid = "v3"
    head = header(sid, created_at=4_000, parent="run", subagent=True)
    write_session(root, head, simple_child_events(sid, {"version": 3, "mode": "one-shot"}), "none")
    return read_corpus(root, cache=False)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("gen") / "c"
    generate(root, sessions=120, seed=3, compression="zstd", damaged_fraction=0.05, jobs=1)
    return read_corpus(root, cache=False)


def _bar_share(board: DiagnosticsDashboard, value: str) -> float:
    """The drawn bar's length, in percent of its track."""
    for row in board.chart.children:
        children = getattr(row, "children", ())
        if len(children) == 3 and children[2] is board.bar(value):
            bar = r'<div style="width:([\d.]+)%;min-width:(\d)px;height:18px;background:#'
            shares = re.findall(bar, children[1].value)
            assert len(shares) == 1 and shares[0][1] == "1"  # a bar that is not 0 keeps at least 1 px
            return float(shares[0][0])
    raise AssertionError(f"no bar row for {value}")


def test_bar_share_is_proportional() -> None:
    assert [bar_share(n, 36) for n in (1, 2, 36)] == [round(100 / 36, 3), round(200 / 36, 3), 100.0]
    assert bar_share(0, 36) == 0 and 0 < bar_share(1, 100_000) < 0.01  # drawn at least 1 px wide (min-width)


def test_bars_are_true_to_the_counts_with_shares(skewed: Corpus) -> None:
    board = DiagnosticsDashboard(skewed)
    board.scope = "subagents"
    counts = {value: count for _s, value, count in board.bars}
    assert counts == {"child": 36, "corrupt · no-descriptor": 2, "corrupt · unknown-descriptor-version": 1}
    shares = {value: _bar_share(board, value) for value in counts}
    assert shares["child"] == 100
    assert shares["corrupt · no-descriptor"] == pytest.approx(100 * 2 / 36, abs=1e-3)
    assert shares["corrupt · unknown-descriptor-version"] == pytest.approx(100 / 36, abs=1e-3)
    assert board.bar("child").description == "36 · 92.3%"
    assert board.bar("corrupt · no-descriptor").description == "2 · 5.1%"


def test_log_scale_makes_rare_values_visible(skewed: Corpus) -> None:
    board = DiagnosticsDashboard(skewed)
    linear = _bar_share(board, "corrupt · unknown-descriptor-version")
    board.log_box.value = True
    assert board.log_scale
    logged = _bar_share(board, "corrupt · unknown-descriptor-version")
    assert logged > 2 * linear
    assert _bar_share(board, "child") == 100
    assert _bar_share(board, "corrupt · no-descriptor") > logged  # order is kept


def test_distribution_dimensions_are_ordered_bins(generated: Corpus) -> None:
    board = DiagnosticsDashboard(generated)
    population = board.data.height
    for dimension in BINS:
        board.selected_dimension = dimension
        values = [value for _s, value, _n in board.bars]
        order = list(BINS[dimension].order)  # type: ignore[index]
        assert values == sorted(values, key=order.index), dimension
        assert sum(count for _s, _v, count in board.bars) == population


def test_picking_a_duration_bin_lists_its_sessions(generated: Corpus) -> None:
    board = DiagnosticsDashboard(generated)
    board.selected_dimension = "duration"
    value, count = max(((v, n) for _s, v, n in board.bars), key=lambda pair: pair[1])
    board.bar(value).click()
    affected = board.affected()
    assert affected.height == count == len(board.affected_ids)
    expected = affected.select(binned(pl.col("active_ms"), "duration")).to_series().unique().to_list()
    assert expected == [value]  # the bins count active time (idle time is not duration)
    assert "active" in re.findall(r"<th[^>]*>([^<]*)</th>", board.table.value)
    durations = affected["active_ms"].drop_nulls().head(5).to_list()
    assert all(f">{human_duration(ms)}<" in board.table.value for ms in durations)


def test_tokens_bins_use_the_run_facts(generated: Corpus) -> None:
    board = DiagnosticsDashboard(generated)
    board.selected_dimension = "tokens"
    bars = {value: count for _s, value, count in board.bars}
    sessions = generated.sessions.select("path", "input_tokens").join(board.data.select("path"), on="path")
    assert bars.get("(no usage)", 0) == sessions["input_tokens"].null_count()
    assert sum(bars.values()) == board.data.height


def test_outcome_dimension(generated: Corpus) -> None:
    board = DiagnosticsDashboard(generated)
    board.selected_dimension = "outcome"
    bars = {value: count for _s, value, count in board.bars}
    # the run's outcome (docs/runs.md), over every session by default
    assert bars == dict(generated.sessions.group_by("outcome").len().rows())
    board.scope = "subagents"
    bars = {value: count for _s, value, count in board.bars}
    joined = generated.sessions.select("path", "outcome").join(
        board.data.filter(pl.col("scope") == "subagents"), on="path"
    )
    assert bars == dict(joined.group_by("outcome").len().rows())


def test_dashboard_on_an_empty_corpus(tmp_path: Path) -> None:
    board = DiagnosticsDashboard(read_corpus(tmp_path, cache=False))
    board.selected_dimension = "duration"
    assert board.bars == [] and "nothing to count" in board.chart.children[0].value


def test_the_affected_table_names_a_session_without_a_label_by_its_title_or_prompt() -> None:
    """Issue 57, point 5: a root (no descriptor label) is named by its first prompt, not shown as a bare id."""
    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.views.widgets.dashboard import population
    from subagent_catalog.views.widgets.dashboard_table import affected_table_html

    frame, _ = population(read_corpus("data/sample"))
    roots = frame.filter(pl.col("id") == "run-webapp-1")
    assert roots.height == 1 and roots["label"][0] is None
    html = affected_table_html(roots, caption="1 session")
    assert "task 1 for run-webapp-1</bdi>" in html and 'title="run-webapp-1"' in html
