"""compare(a, b): known answers, figures checked against scipy.stats directly, archives equal to corpora."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats

from subagent_catalog.analysis.compare import Comparison, compare
from subagent_catalog.analysis.compare_stats import holm, newcomb_interval, paired_tests, relative_changes
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.prices import PriceTable
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from tests.compare_corpora import INJECTED, end_kind, runs_corpus, with_errors

N_CHANGED = 12
RUNS = 40
TABLES = ("outcomes", "metrics", "models", "tools", "errors", "health")


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """A: 40 runs that all complete (2 tool calls each, 10 % failing); B: a copy with 12 made errors."""
    base = tmp_path_factory.mktemp("compare")
    a = runs_corpus(base / "a", runs=RUNS, seed=5, tool_failure_rate=0.1)
    changed = with_errors(a, base / "b", N_CHANGED)
    return a, base / "b", changed


@pytest.fixture(scope="module")
def corpora(roots: tuple[Path, Path, list[str]]) -> tuple[Corpus, Corpus]:
    return read_corpus(roots[0], cache=False, jobs=1), read_corpus(roots[1], cache=False, jobs=1)


@pytest.fixture(scope="module")
def changed(corpora: tuple[Corpus, Corpus]) -> Comparison:
    return compare(*corpora, resamples=300)


def test_a_corpus_compared_with_itself_shows_no_difference() -> None:
    corpus = read_corpus("data/sample", cache=False)
    same = compare(corpus, corpus, resamples=200)
    assert same.significant() == {}
    for name in ("outcomes", "tools", "errors", "models"):
        frame = getattr(same, name)
        assert frame.height > 0
        assert frame["diff"].to_list() == [0.0] * frame.height, name
        assert frame["p_value"].to_list() == [1.0] * frame.height, name
        assert frame["better"].null_count() == frame.height
    assert (same.outcomes["a"] == same.outcomes["b"]).all()
    metrics = same.metrics
    for column in ("median_change", "mean_change"):
        assert set(metrics[column].drop_nulls().to_list()) == {0.0}
    # the sample has runs of unknown cost and trees with unreadable sessions: those figures are not tested
    whole = metrics.filter(pl.col("not_comparable").is_null())
    assert whole["p_value"].to_list() == [1.0] * whole.height and whole.height >= 5
    bounds = metrics.filter(pl.col("not_comparable").is_not_null())
    assert bounds["p_value"].null_count() == bounds.height and "cost" in bounds["metric"].to_list()
    assert set(same.errors["change"]) == {"both"}
    tested = same.health.filter(pl.col("p_value").is_not_null())
    assert tested["diff"].to_list() == [0.0] * tested.height


def test_exactly_n_runs_made_errors_show_plus_n_errors(
    roots: tuple[Path, Path, list[str]], changed: Comparison
) -> None:
    _, b_root, ids = roots
    assert len(ids) == N_CHANGED and all(end_kind(p) == "completed" for p in roots[0].glob("*/*/session.jsonl"))
    assert sum(end_kind(p) == "error" for p in b_root.glob("*/*/session.jsonl")) == N_CHANGED
    rows = {row["outcome"]: row for row in changed.outcomes.iter_rows(named=True)}
    assert set(rows) == {"completed", "error"}
    error = rows["error"]
    assert (error["a"], error["b"]) == (0, N_CHANGED)
    assert (rows["completed"]["a"], rows["completed"]["b"]) == (RUNS, RUNS - N_CHANGED)
    assert error["diff"] == pytest.approx(N_CHANGED / RUNS)
    assert 0 < error["diff_low"] < error["diff"] < error["diff_high"]
    assert error["significant"] and error["p_adjusted"] < 0.05
    assert error["better"] == "a" and rows["completed"]["better"] == "a"
    # the figures, from scipy.stats directly: Fisher's exact test, Holm over the table's two rows
    expected = stats.fisher_exact([[0, RUNS], [N_CHANGED, RUNS - N_CHANGED]]).pvalue
    assert error["p_value"] == pytest.approx(expected, rel=1e-12) and error["test"] == "fisher"
    assert error["p_adjusted"] == pytest.approx(min(1.0, 2 * expected), rel=1e-12)
    groups = changed.errors.filter(pl.col("code") == INJECTED["code"])
    assert groups.select("change", "a", "b", "message").row(0) == ("new", 0, N_CHANGED, "injected failure in run <n>")
    assert changed.errors.row(0, named=True)["change"] == "new"
    # nothing else changed: the same usage, the same tools
    cost = changed.metrics.filter((pl.col("metric") == "cost") & (pl.col("level") == "run")).row(0, named=True)
    assert (cost["median_change"], cost["mean_change"], cost["p_value"]) == (0.0, 0.0, 1.0)
    assert changed.tools["diff"].to_list() == [0.0]


def test_newcomb_interval_hand_checked() -> None:
    # Newcomb (1998), table II, 56/70 against 48/80 by the hybrid score method: 0.0524 to 0.3339
    diff, low, high = newcomb_interval(48, 80, 56, 70)
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339) and diff == pytest.approx(0.2)
    # the same from scipy's Wilson intervals and the method's formula
    wa = stats.binomtest(48, 80).proportion_ci(method="wilson")
    wb = stats.binomtest(56, 70).proportion_ci(method="wilson")
    pa, pb = 48 / 80, 56 / 70
    assert low == pytest.approx(pb - pa - math.hypot(pb - wb.low, wa.high - pa))
    assert high == pytest.approx(pb - pa + math.hypot(wb.high - pb, pa - wa.low))


def test_outcome_rows_equal_scipy_on_the_counts(changed: Comparison) -> None:
    for row in changed.outcomes.iter_rows(named=True):
        table = [[row["a"], RUNS - row["a"]], [row["b"], RUNS - row["b"]]]
        assert row["p_value"] == pytest.approx(stats.fisher_exact(table).pvalue, rel=1e-12)
    tool = changed.tools.row(0, named=True)
    table = [
        [tool["a_failed"], tool["a_calls"] - tool["a_failed"]],
        [tool["b_failed"], tool["b_calls"] - tool["b_failed"]],
    ]
    assert tool["p_value"] == pytest.approx(stats.fisher_exact(table).pvalue)


def test_metric_rows_equal_numpy_and_scipy(corpora: tuple[Corpus, Corpus]) -> None:
    a = read_corpus("data/sample", cache=False)
    b = corpora[0]
    result = compare(a, b, resamples=200)
    row = result.metrics.filter((pl.col("metric") == "active_time") & (pl.col("level") == "run")).row(0, named=True)
    va = a.sessions["active_ms"].drop_nulls().cast(pl.Float64).to_numpy()
    vb = b.sessions["active_ms"].drop_nulls().cast(pl.Float64).to_numpy()
    assert (row["a_n"], row["b_n"]) == (va.size, vb.size)
    assert row["a_median"] == np.median(va) and row["b_median"] == np.median(vb)
    assert row["a_p90"] == pytest.approx(np.percentile(va, 90)) and row["b_mean"] == pytest.approx(vb.mean())
    test = stats.mannwhitneyu(vb, va, alternative="two-sided")
    assert row["p_value"] == pytest.approx(test.pvalue, rel=1e-12)
    assert row["b_greater"] == pytest.approx(test.statistic / (va.size * vb.size))
    assert row["median_change"] == pytest.approx(np.median(vb) / np.median(va) - 1)
    assert row["significant"] and row["better"] == "a"  # runs of write_runs take seconds, the sample's milliseconds
    adjusted = holm(result.metrics["p_value"].to_list())
    assert result.metrics["p_adjusted"].to_list() == pytest.approx(adjusted, nan_ok=True)


def test_holm_matches_the_textbook_procedure() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, made monotone
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([]) == [] and holm([None]) == [None]


def test_bootstrap_interval_is_seeded_and_scipy_s() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.lognormal(0, 1, 60), rng.lognormal(0.5, 1, 70)
    first = relative_changes(a, b, seed=3, resamples=400)
    assert relative_changes(a, b, seed=3, resamples=400) == first
    assert relative_changes(a, b, seed=4, resamples=400) != first

    def mean_change(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return y.mean(axis=axis) / x.mean(axis=axis) - 1

    direct = stats.bootstrap(
        (a, b), mean_change, n_resamples=400, method="percentile", rng=np.random.default_rng(3)
    ).confidence_interval
    # the same resamples drawn: the mean's bounds equal scipy's own run of the one statistic
    assert (first["mean_change_low"], first["mean_change_high"]) == pytest.approx((direct.low, direct.high))


def test_paired_tests_equal_scipy() -> None:
    diffs = np.array([3.0, -1.0, 2.0, 0.0, 5.0, 4.0, -2.0, 6.0])
    out = paired_tests(diffs)
    assert (out["b_higher"], out["a_higher"]) == (5, 2)
    assert out["sign_p"] == pytest.approx(stats.binomtest(5, 7).pvalue)
    assert out["wilcoxon_p"] == pytest.approx(stats.wilcoxon(diffs[diffs != 0]).pvalue)


def test_an_empty_side_gives_unknown_rates_not_an_error(tmp_path: Path, corpora: tuple[Corpus, Corpus]) -> None:
    empty = read_corpus(tmp_path, cache=False)
    result = compare(empty, corpora[0], resamples=50)
    row = result.outcomes.row(0, named=True)
    assert (row["a"], row["b"], row["a_rate"], row["diff"], row["p_value"]) == (0, RUNS, None, None, None)
    assert result.metrics["a_n"].to_list() == [0] * result.metrics.height
    assert result.metrics["median_change"].null_count() == result.metrics.height
    assert result.significant() == {}


def test_unpriced_runs_are_counted_as_unknown_never_as_zero(corpora: tuple[Corpus, Corpus]) -> None:
    result = compare(*corpora, prices=PriceTable(genai=False), resamples=50)
    assert result.cost_unknown == (RUNS, RUNS)
    cost = result.metrics.filter((pl.col("metric") == "cost") & (pl.col("level") == "run")).row(0, named=True)
    assert (cost["a_unknown"], cost["b_unknown"]) == (RUNS, RUNS)
    assert cost["note"].startswith("not comparable: A's cost is unknown for 40 of 40 runs")
    assert any("unknown cost" in note for note in result.notes)
    models = result.models.row(0, named=True)
    assert models["a_unpriced_steps"] > 0


def test_match_by_prompt_pairs_runs_and_finds_the_broken_ones(
    corpora: tuple[Corpus, Corpus], roots: tuple[Path, Path, list[str]]
) -> None:
    result = compare(*corpora, match="prompt", resamples=50)
    assert result.pairs is not None and result.tasks is not None
    assert result.pairs.height == RUNS
    broke = result.pairs.filter(pl.col("change") == "broke")
    assert sorted(broke["b_session"]) == sorted(roots[2])
    assert result.pairs.head(N_CHANGED)["change"].to_list() == ["broke"] * N_CHANGED
    failed = result.tasks.row(0, named=True)
    assert (failed["metric"], failed["b_higher"], failed["a_higher"]) == ("failed", N_CHANGED, 0)
    assert failed["p_value"] == pytest.approx(stats.binomtest(N_CHANGED, N_CHANGED).pvalue)
    assert failed["better"] == "a"


def test_match_by_title_without_titles_pairs_nothing(corpora: tuple[Corpus, Corpus]) -> None:
    result = compare(*corpora, match="title", resamples=50)
    assert result.pairs is not None and result.pairs.height == 0
    assert result.tasks is not None and result.tasks["pairs"].to_list() == [0] * result.tasks.height


def test_compare_over_archives_equals_compare_over_corpora(
    tmp_path: Path, roots: tuple[Path, Path, list[str]], corpora: tuple[Corpus, Corpus]
) -> None:
    archives = []
    for name, root in (("a", roots[0]), ("b", roots[1])):
        export_archive(root, tmp_path / name, jobs=1)
        archives.append(open_archive(tmp_path / name))
    over_archives = compare(*archives, resamples=100)
    over_corpora = compare(*corpora, resamples=100)
    for name in TABLES:
        assert_frame_equal(getattr(over_archives, name), getattr(over_corpora, name), check_exact=True)
    assert over_archives.notes == over_corpora.notes
    assert (over_archives.runs, over_archives.cost_unknown) == (over_corpora.runs, over_corpora.cost_unknown)
    sample = read_corpus("data/sample", cache=False)
    export_archive("data/sample", tmp_path / "sample", jobs=1)
    archived = compare(open_archive(tmp_path / "sample"), corpora[0], resamples=100)
    read = compare(sample, corpora[0], resamples=100)
    for name in TABLES:
        assert_frame_equal(getattr(archived, name), getattr(read, name), check_exact=True)


def test_the_notebook_display_leads_with_what_changed(changed: Comparison) -> None:
    shown = changed._repr_html_()
    assert "Changed significantly" in shown and "error rate 0.0% → 30.0%" in shown
    assert "<script" not in shown
    assert "significant rows" in repr(changed)
