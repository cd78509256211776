"""Reliability round 5, compare: unknown figures are never better and fail their gates closed, tree sums are
checked, one Markdown escaper for every Markdown writer, and ``-o -`` writes one document."""

from __future__ import annotations

import html
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog.analysis.compare import Comparison, compare
from subagent_catalog.analysis.compare_gate import evaluate, parse_condition
from subagent_catalog.analysis.compare_sides import read_side
from subagent_catalog.analysis.findings import findings
from subagent_catalog.analysis.gate import run_checks
from subagent_catalog.analysis.run_summary import run_summary
from subagent_catalog.analysis.runs import INT64_MAX
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.prices import price_table
from subagent_catalog.views.compare_text import compare_json, compare_markdown, compare_text
from subagent_catalog.views.findings_text import findings_markdown
from subagent_catalog.views.gate_format import format_markdown
from subagent_catalog.views.text import md_cell
from tests.partial_corpora import CHAT, UNKNOWN, _session

RUNS = 30
GARBAGE = b"#### not json ####\n" + b'{"type":"turn/end","seq":99,"time":1,"data":{"turn":1}}\n'


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A: 30 priced runs; B: the same tasks on a model no price table knows, with 1,000 times A's tokens;
    unreadable: the same tasks, every log unreadable; partial: every third run on the unpriced model."""
    base = tmp_path_factory.mktemp("reliability5-compare")
    for index in range(RUNS):
        tokens = (1_000 + index, 100)
        at = index * 1_000
        _session(base / "a", f"run-{index}", [(CHAT, tokens)], at=at)
        _session(base / "b", f"run-{index}", [(UNKNOWN, (tokens[0] * 1_000, tokens[1] * 1_000))], at=at)
        _session(base / "unreadable", f"run-{index}", [(CHAT, tokens)], at=at, tail=GARBAGE)
        _session(base / "partial", f"run-{index}", [(UNKNOWN if index % 3 == 0 else CHAT, tokens)], at=at)
    return {name: base / name for name in ("a", "b", "unreadable", "partial")}


def _compare(roots: dict[str, Path], b: str, **options: object) -> Comparison:
    a_side, b_side = (read_corpus(roots[name], cache=False, jobs=1) for name in ("a", b))
    return compare(a_side, b_side, resamples=100, **options)  # type: ignore[arg-type]


def _cost_rows(comparison: Comparison) -> list[dict[str, object]]:
    return comparison.metrics.filter(pl.col("metric") == "cost").to_dicts()


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "-q", "--no-cache"])
    return result.exit_code, result.stdout, result.stderr


def test_compare_all_unknown_cost_side_is_not_better(roots: dict[str, Path]) -> None:
    result = _compare(roots, "b", match="prompt")
    assert result.cost_unknown == (0, RUNS)
    for row in _cost_rows(result):  # B's cost: $0 known of runs that cost 1,000 times A's
        assert (row["b_n"], row["b_unknown"], row["a_unknown"]) == (0, RUNS, 0), row["level"]
        assert row["b_median"] is None and row["b_mean"] is None and row["b_p90"] is None
        assert row["better"] is None and row["significant"] is False and row["p_value"] is None
        assert row["median_change"] is None and row["median_change_low"] is None and row["b_greater"] is None
        assert str(row["note"]).startswith("not comparable: B's cost is unknown for 30 of 30")
    assert "cost" not in result.significant()["metrics"]["metric"].to_list()  # only tokens changed significantly
    data = json.loads(json.dumps(compare_json(result)))
    run = next(row for row in data["metrics"] if (row["metric"], row["level"]) == ("cost", "run"))
    assert (run["b_median"], run["significant"], run["better"]) == (None, False, None)
    text = next(line for line in compare_text(result).splitlines() if line.strip().startswith("cost"))
    assert "$0 " not in text + " " and "-100" not in text
    assert result.tasks is not None  # the pairs' cost is unknown on B: no paired cost test either
    paired = result.tasks.filter(pl.col("metric") == "cost").row(0, named=True)
    assert (paired["pairs"], paired["p_value"], paired["better"]) == (0, None, None)
    assert result.pairs is not None and result.pairs["b_cost"].null_count() == RUNS
    # tokens are known on both sides: still tested, B's 1,000 times as many
    tokens = result.metrics.filter((pl.col("metric") == "tokens") & (pl.col("level") == "run")).row(0, named=True)
    assert tokens["better"] == "a" and tokens["significant"]
    # some unknown: the figure over the known parts is a lower bound, shown as one, and not tested
    partial = _compare(roots, "partial")
    row = _cost_rows(partial)[0]
    assert (row["b_unknown"], row["b_n"], row["b_lower_bound"], row["a_lower_bound"]) == (RUNS // 3, RUNS, True, False)
    assert row["b_median"] is not None and row["p_value"] is None and row["better"] is None
    assert "≥ $" in next(line for line in compare_text(partial).splitlines() if line.strip().startswith("cost"))


CONDITIONS = ["cost_median>+10%", "cost_mean>+10%", "cost_p90>+10%", "tree_cost_median>+10%", "cost_median>0"]


@pytest.mark.parametrize("condition", CONDITIONS)
def test_fail_on_cost_gate_fails_closed_when_cost_unknown(roots: dict[str, Path], condition: str) -> None:
    unit = "trees" if condition.startswith("tree_") else "runs"
    code, out, err = _cli("compare", str(roots["a"]), str(roots["b"]), "--resamples", "100", "--fail-on", condition)
    assert code == 1, out + err
    said = f"fail-on: {condition}: not comparable: B's cost is unknown for {RUNS} of {RUNS} {unit}"
    assert said in err.splitlines()
    # known for some runs only: the figure is a lower bound, and the gate fails closed saying how many
    gate = evaluate(_compare(roots, "partial"), parse_condition(condition))
    assert gate.holds is None and gate.value is None
    assert f"B's cost is unknown for {RUNS // 3} of {RUNS} {unit} (its figure is a lower bound)" in gate.detail


def test_compare_unreadable_side_is_not_comparable(roots: dict[str, Path]) -> None:
    result = _compare(roots, "unreadable")
    assert result.cost_unknown == (0, RUNS)
    for row in _cost_rows(result):
        assert (row["b_n"], row["b_median"], row["better"], row["significant"]) == (0, None, None, False)
    for condition, figure in (("cost_median>+10%", "cost"), ("tokens_median>+10%", "tokens")):
        gate = evaluate(result, parse_condition(condition))
        said = f"not comparable: B's {figure} is unknown for {RUNS} of {RUNS} runs"
        assert gate.holds is None and said in gate.detail
    code, _, err = _cli("compare", str(roots["a"]), str(roots["unreadable"]), "--fail-on", "cost_mean<-50%")
    assert code == 1 and "not comparable: B's cost is unknown" in err


def test_compare_tree_tokens_do_not_wrap(tmp_path: Path) -> None:
    most = 2**53 - 1
    _session(tmp_path, "big-root", [(CHAT, (most, most))] * 2)
    for index in range(300):
        _session(tmp_path, f"sub-{index}", [(CHAT, (most, most))] * 2, parent="big-root", at=index + 1)
    _session(tmp_path, "small-root", [(CHAT, (10, 1))], at=10_000)
    _session(tmp_path, "small-child", [(CHAT, (20, 2))], parent="small-root", at=10_001)
    corpus = read_corpus(tmp_path, cache=False, jobs=1)
    # the exact sums, in Python integers: the big tree's passes 2^63 - 1 (a wrapped sum was -7.6e18)
    kinds = ["input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens"]
    own = {row["session_id"]: sum(row[k] or 0 for k in kinds) for row in corpus.sessions.iter_rows(named=True)}
    exact = {"big-root": own["big-root"] + sum(own[f"sub-{i}"] for i in range(300)), "small-root": 33}
    assert exact["big-root"] > INT64_MAX
    side = read_side(corpus, price_table())
    roots = side.runs.filter(pl.col("depth") == 0).select("session_id", pl.col("list_order").alias("root_list_order"))
    shown = dict(roots.join(side.trees, on="root_list_order").select("session_id", "tokens").iter_rows())
    tables = dict(run_summary(corpus).trees.select("session_id", "tokens").iter_rows())  # run_trees' roots
    assert shown == tables == {"big-root": None, "small-root": exact["small-root"]}
    tree = compare(corpus, corpus, resamples=100).metrics.filter(
        (pl.col("metric") == "tokens") & (pl.col("level") == "tree")
    )
    assert tree.select("a_n", "a_unknown", "a_median").row(0) == (1, 1, 33.0)  # never negative


HOSTILE = "x <img src=x onerror=alert(1)> ![](http://e.example/i.png) <!-- hidden | a\\b `c` *d*"


def test_findings_markdown_escapes_markup(tmp_path: Path) -> None:
    found = findings(read_corpus("data/findings", cache=False), detectors=["stalled"])
    found = found.with_columns(pl.lit(HOSTILE).alias("message"))
    markdown = findings_markdown(found)
    for live in ("<img", "![](", "<!--", "`c`", "*d*"):
        assert live not in markdown, live
    assert f"| {md_cell(HOSTILE)} |" in markdown
    # compare's and check's Markdown escape the same text the same way: one escaper
    corpus = read_corpus("data/sample", cache=False)
    compared = compare_markdown(compare(corpus, corpus, resamples=100, labels=("A", HOSTILE)))
    assert compared.splitlines()[0] == f"## Comparison: B = {md_cell(HOSTILE)} against A = A"
    root = tmp_path / HOSTILE.replace("/", "_")
    root.mkdir()
    checked = format_markdown(run_checks(read_corpus(root, cache=False), allow_empty=True))
    assert f"Root {md_cell(str(root), limit=400)}, semantics" in checked
    assert "<img" not in compared + checked and "<!--" not in compared + checked


def test_compare_json_to_stdout_is_only_json(roots: dict[str, Path], tmp_path: Path) -> None:
    sides = [str(roots["a"]), str(roots["partial"]), "--resamples", "100"]
    code, out, _ = _cli("compare", *sides, "-f", "json", "-o", "-")
    assert code == 0 and json.loads(out)["a"]["runs"] == RUNS  # one document: the page is not appended
    page = tmp_path / "diff.html"
    code, out, _ = _cli("compare", *sides, "-f", "json", "-o", "-", "--html", str(page))
    assert code == 0 and json.loads(out)["b"]["runs"] == RUNS
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    report = tmp_path / "report.json"
    code, out, _ = _cli("compare", *sides, "-f", "json", "-o", str(report), "--html", "-")
    assert code == 0 and out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert json.loads(report.read_text(encoding="utf-8"))["a"]["runs"] == RUNS
    for both in (["--html", "-"], ["--html", "-", "-o", "-"]):  # both documents to stdout: refused
        code, out, err = _cli("compare", *sides, "-f", "json", *both)
        assert code == 2 and "both go to stdout" in err and out == ""
    code, _, err = _cli("compare", *sides, "-o", str(tmp_path / "old.html"))  # -o was the page: say so
    assert code == 2 and "--html" in err and not (tmp_path / "old.html").exists()
    code, _, err = _cli("compare", *sides, "-o", str(report), "--html", str(report))
    assert code == 2 and "the same file" in err


def test_the_not_tested_note_stays_one_footnote_on_the_page(roots: dict[str, Path]) -> None:
    """The page splits a row's notes at "; ": the cost note must come through whole (it was cut in two)."""
    from subagent_catalog.views.compare_html import compare_page

    result = _compare(roots, "partial")
    for row in _cost_rows(result):
        for part in str(row["note"]).split("; "):
            assert part.count("(") == part.count(")"), part
    page = compare_page(result)
    note = next(part for part in str(_cost_rows(result)[0]["note"]).split("; ") if part.startswith("not comparable"))
    assert note in html.unescape(page)
