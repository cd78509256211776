"""subagent-catalog compare: the formats, the HTML page, and --fail-on exiting 1 exactly when its condition holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from subagent_catalog.analysis.compare import compare
from subagent_catalog.analysis.compare_gate import CompareGateError, evaluate, parse_condition
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from tests.compare_corpora import runs_corpus, with_errors

RUNS, CHANGED = 40, 12  # B's error rate is A's + 30 pp exactly


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    base = tmp_path_factory.mktemp("compare-cli")
    a = runs_corpus(base / "a", runs=RUNS, seed=9)
    with_errors(a, base / "b", CHANGED)
    return str(a), str(base / "b")


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["compare", *args, "-q", "--no-cache", "--resamples", "200"])
    return result.exit_code, result.output


CONDITIONS = [
    ("error_rate>+29pp", True),
    ("error_rate>+30pp", False),  # 12/40 is +30 pp: not above it
    ("error_rate>=+30pp", True),
    ("error_rate<0pp", False),
    ("completed_rate<-29.9pp", True),
    ("failed_rate>0.31", False),  # no unit: the difference as a share
    ("cost_median>+10%", False),  # the same usage on both sides: +0 %
    ("cost_median>=0%", True),
    ("error_rate.low>0pp", True),  # the whole interval is above 0
]


@pytest.mark.parametrize(("condition", "holds"), [CONDITIONS[0], CONDITIONS[1], CONDITIONS[2], CONDITIONS[6]])
def test_fail_on_exits_1_exactly_when_its_condition_holds(roots: tuple[str, str], condition: str, holds: bool) -> None:
    code, output = _run(*roots, "--fail-on", condition)
    assert code == (1 if holds else 0), output
    assert f"{condition}: " in output and ("(holds)" in output) == holds


def test_each_condition_holds_exactly_when_its_figure_satisfies_it(roots: tuple[str, str]) -> None:
    result = compare(read_corpus(roots[0], cache=False), read_corpus(roots[1], cache=False), resamples=200)
    for condition, holds in CONDITIONS:
        assert evaluate(result, parse_condition(condition)).holds is holds, condition


def test_every_condition_must_hold_none_to_pass(roots: tuple[str, str]) -> None:
    code, output = _run(*roots, "--fail-on", "error_rate>+50pp", "--fail-on", "error_rate>+1pp")
    assert code == 1 and "fail-on: error_rate>+1pp" in output and "fail-on: error_rate>+50pp" not in output


def test_a_condition_outside_the_grammar_is_a_usage_error(roots: tuple[str, str]) -> None:
    for bad in ("error_rate>>2pp", "errors>2pp", "cost_median>2pp", "error_rate>2%", "cost_p90.low>0%"):
        code, output = _run(*roots, "--fail-on", bad)
        assert code == 2 and "--fail-on" in output, bad
        with pytest.raises(CompareGateError):
            parse_condition(bad)


def test_an_unknown_figure_fails_the_gate(tmp_path: Path) -> None:
    empty = read_corpus(tmp_path, cache=False)
    result = evaluate(compare(empty, empty, resamples=100), parse_condition("error_rate>+2pp"))
    assert (result.value, result.holds) == (None, None) and "unknown" in result.detail


def test_text_leads_with_what_changed(roots: tuple[str, str]) -> None:
    code, output = _run(*roots)
    assert code == 0
    lines = output.splitlines()
    assert lines[0].startswith("compare: B = b against A = a")
    assert lines[3] == "Changed significantly (Holm-adjusted p < 0.05):"
    assert "error rate 0.0% → 30.0% (+30.0 pp" in lines[5]


def test_json_holds_every_frame_and_the_gates(roots: tuple[str, str]) -> None:
    code, output = _run(*roots, "--format", "json", "--fail-on", "error_rate>+2pp")
    assert code == 1
    data = json.loads(output[: output.rindex("}") + 1])
    error = next(row for row in data["outcomes"] if row["outcome"] == "error")
    assert (error["a"], error["b"]) == (0, CHANGED)
    assert data["gates"][0]["holds"] is True and data["gates"][0]["value"] == pytest.approx(30.0)
    assert {"metrics", "models", "tools", "errors", "health", "notes"} <= set(data)


def test_markdown_and_the_html_page(roots: tuple[str, str], tmp_path: Path) -> None:
    page = tmp_path / "diff.html"
    code, output = _run(*roots, "--format", "md", "--html", str(page), "--match", "prompt")
    assert code == 0, output
    assert output.startswith("## Comparison: B = b against A = a") and "| error | 0 | 12 |" in output
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http" not in html.split("<body>")[1]
    assert "Pairs whose outcome changed" in html and html.count(">broke<") == CHANGED


def test_the_page_is_never_written_into_a_side(roots: tuple[str, str]) -> None:
    code, output = _run(*roots, "--html", str(Path(roots[1]) / "diff.html"))
    assert code == 1 and "diff.html" in output
    assert not (Path(roots[1]) / "diff.html").exists()
