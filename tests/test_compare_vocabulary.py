"""compare speaks the report's vocabulary (issue 57): its error groups, its unknowns, its colours, its words.

Each test reads small corpora written in a temporary directory (``write_runs`` runs, changed line by line)
or ``data/sample``, and parses what the commands print: JSON, text, Markdown, the HTML pages' CSS.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from subagent_catalog.cli import main
from subagent_catalog.frames.outcome import OUTCOMES
from tests.compare_corpora import recovered, renamed_model, runs_corpus, with_errors

SAMPLE = "data/sample"
UNPRICED = "no-price-model-x"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [*args, "-q", "--no-cache"])
    return result.exit_code, result.stdout, result.stderr


def _compare(*args: str) -> tuple[int, str, str]:
    return _run("compare", *args, "--resamples", "100")


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A: 8 runs, 2 of them errors and 1 completed after an earlier error; B: the sample (every kind of failure)."""
    base = tmp_path_factory.mktemp("vocabulary")
    with_errors(runs_corpus(base / "plain", runs=8, seed=3), base / "a", 2)
    completed = [log for log in sorted((base / "a").glob("*/*/session.jsonl")) if "INJECTED" not in log.read_text()]
    recovered(completed[0])
    return str(base / "a"), SAMPLE


def _report_groups(root: str) -> dict[tuple[str | None, str | None], int]:
    code, out, err = _run("summary", root, "--format", "json")
    assert code == 0, err
    return {(g["code"], g["message"]): g["runs"] for g in json.loads(out)["runs"]["error_groups"]}


def test_compare_error_groups_are_the_report_s_groups_of_failed_runs(failing: tuple[str, str]) -> None:
    a, b = failing
    code, out, err = _compare(a, b, "--format", "json")
    assert code == 0, err
    rows = json.loads(out)["errors"]
    for side, root in (("a", a), ("b", b)):
        groups = {(row["code"], row["message"]): row[side] for row in rows if row[side]}
        assert groups == _report_groups(root), side
    # the run that completed after an error is no failure; the failures without a code are groups
    assert not [row for row in rows if row["code"] == "RECOVERED"]
    assert {row["message"] for row in rows if row["code"] is None} >= {
        "max-tokens: the model stopped at its output token limit",
        "aborted by parent",
    }
    same = json.loads(_compare(b, b, "--format", "json")[1])["errors"]
    assert [(row["a"], row["b"]) for row in same] == [(1, 1)] * len(_report_groups(b)) == [(1, 1)] * 7


@pytest.fixture(scope="module")
def unpriced(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """A: 30 priced runs; B: the same runs on a model without a price; C: 10 of the 30 on it."""
    base = tmp_path_factory.mktemp("unpriced")
    a = runs_corpus(base / "a", runs=30, seed=4)
    for name, count in (("b", None), ("c", 10)):
        shutil.copytree(a, base / name)
        renamed_model(base / name, UNPRICED, count)
    return str(a), str(base / "b"), str(base / "c")


def _cost_row(data: dict[str, object], level: str = "run") -> dict[str, object]:
    rows = data["metrics"]
    assert isinstance(rows, list)
    return next(row for row in rows if row["metric"] == "cost" and row["level"] == level)


@pytest.mark.parametrize("gate", ["cost_median>+10%", "cost_mean>+10%", "cost_p90>+10%", "tree_cost_median>+10%"])
def test_a_cost_unknown_for_every_run_of_b_is_not_compared_and_its_gate_fails_closed(
    unpriced: tuple[str, str, str], gate: str
) -> None:
    a, b, _ = unpriced
    code, out, err = _compare(a, b, "--format", "json", "--fail-on", gate)
    unit = "trees" if gate.startswith("tree_") else "runs"
    said = f"not comparable: B's cost is unknown for 30 of 30 {unit}"
    assert code == 1 and f"fail-on: {gate}: {said}" in err
    row = _cost_row(json.loads(out), "tree" if unit == "trees" else "run")
    assert str(row["note"]).startswith(said)
    assert [row[key] for key in ("median_change", "median_change_low", "p_value", "better", "b_median")] == [None] * 5


def test_unknown_parts_are_marked_as_lower_bounds_and_said(unpriced: tuple[str, str, str]) -> None:
    a, b, c = unpriced
    code, text, _ = _compare(a, c, "--fail-on", "cost_median>+10%")
    assert code == 1
    cost = next(line for line in text.splitlines() if line.strip().startswith("cost") and " run " in line)
    assert "≥ $" in cost and "B's cost is unknown for 10 of 30 runs (its figure is a lower bound)" in cost
    models = {line.split()[0]: line for line in _compare(a, b)[1].splitlines() if UNPRICED in line}
    assert "unpriced" in models[f"deepseek-official/{UNPRICED}"].split("b only")[1] and "$0" not in str(models)
    # a tree with an unreadable session: its sums are not whole, left out and said so
    trees = [line for line in _compare(SAMPLE, SAMPLE)[1].splitlines() if re.match(r"\s+tokens\s+tree\s", line)]
    assert len(trees) == 1 and trees[0].rstrip().endswith("3 / 3 trees without a whole value, left out")


def _badge_colours(page: str) -> dict[str, str]:
    """``.badge.<class>`` rules of a page's style: the class and its background."""
    return dict(re.findall(r"\.badge\.([\w-]+)\{background:(#[0-9A-Fa-f]{6})", page))


def test_compare_pills_carry_the_report_s_outcome_colours(failing: tuple[str, str], tmp_path: Path) -> None:
    a, b = failing
    page, report = tmp_path / "compare.html", tmp_path / "report.html"
    assert _compare(a, b, "--html", str(page), "-o", str(tmp_path / "out.txt"))[0] == 0
    assert _run("report", b, "-o", str(report))[0] == 0
    shown, colours = page.read_text(encoding="utf-8"), _badge_colours(page.read_text(encoding="utf-8"))
    wanted = _badge_colours(report.read_text(encoding="utf-8"))
    pills = set(re.findall(r'class="badge o-([\w-]+)"', shown))
    assert pills >= {"completed", "error", "unreadable"}
    assert {outcome: colours.get(f"o-{outcome}") for outcome in pills} == {o: wanted[f"o-{o}"] for o in pills}
    # "A better" and "B better" in two colours of their own, apart from every outcome's
    assert re.search(r'class="badge better-(a">A|b">B) better<', shown) and 'class="badge better-a">new<' in shown
    direction = {colours["better-a"], colours["better-b"]}
    assert len(direction) == 2 and not direction & {wanted[f"o-{outcome}"] for outcome in OUTCOMES}


def test_words_intervals_unadjusted_thresholds_in_range_labels_that_exist(
    failing: tuple[str, str], tmp_path: Path
) -> None:
    a, b = failing
    line = "The per-row intervals are not adjusted for the table's other rows; only p adj. is (Holm's method)."
    page = tmp_path / "c.html"
    for fmt in ("text", "md"):
        code, out, _ = _compare(a, b, "--format", fmt, "--html", str(page), "-o", str(tmp_path / f"c.{fmt}"))
        assert code == 0 and line in (tmp_path / f"c.{fmt}").read_text(encoding="utf-8")
        assert line in html.unescape(page.read_text(encoding="utf-8"))
    for never in ("error_rate>2", "failed_rate<-1.5", "error_rate>+101pp", "cost_median<-150%"):
        code, out, err = _compare(a, b, "--fail-on", never)
        assert code == 2 and "can never decide" in err and out == "", never
    code, out, err = _compare(a, b, "--labels", str(tmp_path / "no-such-labels"), "--label", "x")
    assert code == 1 and out == "" and err.startswith("Error: no label store") and err.count("\n") == 1


def test_shares_and_p_adj_are_written_as_the_report_writes_them(failing: tuple[str, str], tmp_path: Path) -> None:
    a, b = failing
    page = tmp_path / "c.html"
    text = _compare(a, b)[1]
    markdown = _compare(a, b, "--format", "md", "--html", str(page), "-o", str(tmp_path / "c.md"))[1]
    markdown = (tmp_path / "c.md").read_text(encoding="utf-8")
    page_text = page.read_text(encoding="utf-8")
    for out in (text, markdown, page_text):
        assert not re.search(r"\d %", out.replace("\u00a0", " ")) and re.search(r"\d\.\d%", out)
        assert "p_adj" not in out.replace("p_adjusted", "")
    assert "p adj." in text and "| p adj. |" in markdown and "p\u00a0adj." in page_text
