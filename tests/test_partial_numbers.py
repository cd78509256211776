"""Honest numbers on partial data (issue 41 items 1, 2, 5; issue 42 item 4).

A sum that meets unknown parts (a session of an unpriced model, a log whose usage cannot be read) keeps
its strict figure (null), gives its known part and counts what it leaves out; rankings rank by the known
part, show a partial figure as a lower bound (``≥``) and never list a $0 run; when nothing is priced they
rank by tokens and say so. Token sums past 2^63 - 1 are null with a stated reason, never wrapped. Every
view shows the library's figure (``run_summary``): checked here over the golden partial tree
(``tests/data/partial-tree``, written by ``tests/partial_corpora.py``), a corpus of unpriced models, an
overflowing corpus and a generated corpus with unreadable logs inside its trees and an unpriced model.
"""

from __future__ import annotations

import filecmp
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog.analysis.run_summary import RunSummary, run_summary
from subagent_catalog.analysis.runs import usage_by_model
from subagent_catalog.analysis.trees import run_trees
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.costs import known_costs
from subagent_catalog.frames.units import human_count, partial_cost
from subagent_catalog.synth.generate import generate
from subagent_catalog.views.names import name_text
from subagent_catalog.views.report import render_report
from subagent_catalog.views.run_format import costliest_text, run_cost, runs_json, runs_lines, total_cost
from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard
from subagent_catalog.views.widgets.run_facts import facts_text
from tests.partial_corpora import write_overflow, write_partial_tree, write_unpriced

GOLDEN = Path(__file__).parent / "data" / "partial-tree"
INT64_MAX = (1 << 63) - 1


@pytest.fixture(scope="module")
def partial() -> Corpus:
    return read_corpus(GOLDEN, cache=False, events=True)


@pytest.fixture(scope="module")
def unpriced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("unpriced") / "corpus"
    write_unpriced(root)
    return root


class _Tables(HTMLParser):
    """The text of every cell of every ``<table id=...>`` of a page, row by row, and each element's text by id."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.keyed: dict[str, list[dict[str, str]]] = {}
        """Each fitted table's rows by column key (its cells' ``c-KEY`` class); ``id``: the named session's id."""
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._key: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "table" and found.get("id"):
            self._table = found["id"]
            self.tables[self._table] = []
            self.keyed[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
            self.keyed[self._table].append({})
        elif tag == "td" and self._table is not None:
            self._cell = []
            keys = [c[2:] for c in (found.get("class") or "").split() if c.startswith("c-")]
            self._key = keys[0] if keys else None
        elif tag == "code" and self._table is not None and "nm-id" in (found.get("class") or "").split():
            self.keyed[self._table][-1].setdefault("id", found.get("title") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._table is not None and self._cell is not None:
            text = " ".join("".join(self._cell).split())
            self.tables[self._table][-1].append(text)
            if self._key is not None:
                self.keyed[self._table][-1][self._key] = text
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _tables(page: str) -> dict[str, list[list[str]]]:
    parser = _Tables()
    parser.feed(page)
    return {name: [row for row in rows if row] for name, rows in parser.tables.items()}


def _keyed(page: str) -> dict[str, list[dict[str, str]]]:
    """The fitted tables' rows by column key (their order on the page follows the ranked column)."""
    parser = _Tables()
    parser.feed(page)
    return {name: [row for row in rows if row] for name, rows in parser.keyed.items()}


def _card(page: str, card_id: str) -> str:
    found = re.search(rf'id="{card_id}"><div class="big">(.*?)</div><div class="lbl">(.*?)</div></div>', page)
    assert found is not None, card_id
    return re.sub(r"<[^>]+>", "", found[1] + " | " + found[2])


def test_the_golden_partial_tree_is_what_its_writer_writes(tmp_path: Path) -> None:
    write_partial_tree(tmp_path / "again")
    compared = filecmp.dircmp(GOLDEN, tmp_path / "again")
    assert not compared.left_only and not compared.right_only and not compared.diff_files
    for name, sub in compared.subdirs.items():
        assert not sub.diff_files and not sub.left_only and not sub.right_only, name
        for child in sub.subdirs.values():
            assert not child.diff_files and not child.left_only and not child.right_only


def test_a_tree_with_an_unreadable_session_and_an_unpriced_model_rolls_up_its_known_cost(partial: Corpus) -> None:
    sessions = partial.sessions
    by_id = {row["session_id"]: row for row in sessions.iter_rows(named=True)}
    assert by_id["unreadable-child"]["outcome"] == "unreadable"
    assert by_id["unreadable-child"]["usage_samples"] is None  # nothing of its usage can be read
    assert by_id["mixed-child"]["cost_usd"] is None  # one of its two steps is of an unpriced model
    assert by_id["idle-child"]["cost_usd"] == 0.0  # no model usage: a known 0
    # The known part, from the per-session rows: the priced steps of the tree's four sessions.
    per_model = usage_by_model(partial).filter(pl.col("session_id").is_in(["lab-root", "priced-child", "mixed-child"]))
    known = sum(cost for cost in per_model["cost_usd"].to_list() if cost is not None)
    trees = run_trees(partial)
    top = trees.filter(pl.col("session_id") == "lab-root").row(0, named=True)
    assert top["subtree_sessions"] == 4
    assert top["subtree_cost_usd"] is None  # the strict figure: some part is unknown
    assert top["subtree_cost_usd_known"] == pytest.approx(known)
    assert top["subtree_cost_unknown"] == 2  # the mixed child (unpriced model) and the unreadable one
    assert top["subtree_usage_unknown"] == 1
    small = trees.filter(pl.col("session_id") == "small-root").row(0, named=True)
    assert small["subtree_cost_unknown"] == 0 and small["subtree_cost_usd"] == small["subtree_cost_usd_known"]
    assert small["subtree_cost_usd"] == pytest.approx(by_id["small-root"]["cost_usd"])  # its idle child adds 0
    assert small["subtree_cost_usd_known"] < top["subtree_cost_usd_known"]
    # usage_by_model(by="model") likewise: the unpriced model's steps are counted, not priced as $0.
    models = usage_by_model(partial, by="model")
    qwen = models.filter(pl.col("model") == "qwen3-coder").row(0, named=True)
    assert (qwen["cost_usd"], qwen["cost_usd_known"], qwen["unpriced_steps"]) == (None, 0.0, 1)
    priced = models.filter(pl.col("cost_usd").is_not_null())
    assert (priced["cost_usd"] == priced["cost_usd_known"]).all() and (priced["unpriced_steps"] == 0).all()


def test_run_summary_ranks_the_partial_tree_by_its_known_cost(partial: Corpus) -> None:
    runs = run_summary(partial)
    trees = runs.costliest_trees()
    assert trees["session_id"].to_list() == ["lab-root", "small-root"]  # the strict cost would put it last
    top = trees.row(0, named=True)
    assert top["cost_usd"] is None and top["cost_unknown"] == 2 and top["usage_unknown"] == 1
    assert (
        top["cost_usd_known"] == runs.tree_rows.filter(pl.col("session_id") == "lab-root")["subtree_cost_usd_known"][0]
    )
    totals = runs.totals
    assert totals["cost_usd"] is None
    assert totals["cost_usd_known"] == pytest.approx(sum(known_costs(partial.sessions).to_list()))
    assert (totals["cost_unknown"], totals["unpriced_sessions"], totals["usage_unknown"]) == (2, 1, 1)
    # The costliest runs: by known cost, the mixed child's as a lower bound, never a run at $0.
    costliest = runs.costliest
    assert costliest["session_id"].to_list() == ["lab-root", "priced-child", "mixed-child", "small-root"]
    assert (costliest["cost_usd_known"] > 0).all()
    assert costliest["cost_usd_known"].is_sorted(descending=True)
    assert any("2 sessions of unknown cost" in note for note in runs.notes)


def test_summary_shows_the_partial_tree_as_a_lower_bound_with_its_unknown_count(partial: Corpus) -> None:
    runs = run_summary(partial)
    top = runs.trees.filter(pl.col("session_id") == "lab-root").row(0, named=True)
    bound = partial_cost(None, top["cost_usd_known"])
    assert bound.startswith("≥ $")
    result = CliRunner().invoke(main, ["summary", str(GOLDEN), "-q"])
    assert result.exit_code == 0, result.output
    tree_line = next(line for line in result.output.splitlines() if line.startswith("largest tree"))
    assert f"{bound} (2 sessions of unknown cost)" in tree_line and "–" not in tree_line
    cost_line = next(line for line in result.output.splitlines() if line.startswith("cost "))
    assert total_cost(runs) in cost_line and "$0 " not in cost_line
    facts = json.loads(CliRunner().invoke(main, ["summary", str(GOLDEN), "-q", "--format", "json"]).output)["runs"]
    first = facts["costliest_trees"][0]
    assert (first["session_id"], first["cost_usd"], first["cost_unknown"]) == ("lab-root", None, 2)
    assert first["cost_usd_known"] == top["cost_usd_known"] and facts["cost_basis"] == "cost"
    markdown = CliRunner().invoke(main, ["summary", str(GOLDEN), "-q", "--format", "md"]).output
    assert f" (lab-root) | 4 | {human_count(top['tokens'])} | {bound} (2 sessions of unknown cost) |" in markdown


def test_report_shows_the_partial_tree_as_a_lower_bound_with_its_unknown_count(partial: Corpus) -> None:
    runs = run_summary(partial)
    tables = _keyed(render_report(partial))
    trees = tables["trees-costliest"]
    assert [row["id"] for row in trees] == ["lab-root", "small-root"]
    assert trees[0]["cost"] == run_cost(runs.costliest_trees().row(0, named=True))
    assert trees[0]["cost"].startswith("≥ $") and trees[0]["cost"].endswith("(2 sessions of unknown cost)")
    assert [row["id"] for row in tables["runs-costliest"]] == runs.costliest["session_id"].to_list()
    assert tables["runs-costliest"][2]["cost"].startswith("≥ $")  # the mixed child: part of it unpriced


def test_browser_sorts_by_known_cost_and_shows_a_partial_cost_as_a_lower_bound(partial: Corpus) -> None:
    browser = CatalogBrowser(partial)
    browser.sort_by = "cost"
    ids = [partial.sessions["session_id"][key] for key in browser.results]
    assert ids[:4] == ["lab-root", "priced-child", "mixed-child", "small-root"]
    assert set(ids[4:]) == {"idle-child", "unreadable-child"}  # a known 0 and an unknown cost come last
    assert browser.results_label.endswith("sorted by cost ↓)")
    browser.outcome = "unreadable"  # nothing priced among these matches, but the corpus has prices: still by cost
    assert browser.results_label.endswith("sorted by cost ↓)")
    browser.outcome = None
    mixed = partial.sessions["session_id"].to_list().index("mixed-child")
    facts = browser.label(mixed)["facts"]
    known = run_summary(partial).costliest.filter(pl.col("session_id") == "mixed-child")["cost_usd_known"][0]
    assert partial_cost(None, known) in facts and "≥ $" in facts
    browser.selected = mixed
    assert "≥ $" in browser.detail


def test_dashboard_table_shows_a_partial_cost_as_a_lower_bound(partial: Corpus) -> None:
    board = DiagnosticsDashboard(partial)
    board.selected_dimension = "outcome"
    board.pick("completed")
    html = f'<table id="t">{board.table.value.split("<table", 1)[1]}'
    # each row names its session (label, then the id): the id is the name's whole-id element
    rows = {ids["id"]: row for ids, row in zip(_keyed(html)["t"], _tables(html)["t"], strict=True)}
    known = known_costs(partial.sessions).to_list()[partial.sessions["session_id"].to_list().index("mixed-child")]
    assert rows["mixed-child"][5] == partial_cost(None, known)
    assert rows["mixed-child"][5].startswith("≥ $") and rows["lab-root"][5] == "$0.065"


def test_a_corpus_whose_models_are_all_unpriced_ranks_by_tokens_and_shows_no_zero_cost(unpriced: Path) -> None:
    corpus = read_corpus(unpriced, cache=False)
    runs = run_summary(corpus)
    assert runs.cost_basis == "tokens"
    costliest = runs.costliest
    assert "no-usage" not in costliest["session_id"].to_list()  # a known $0: never listed
    assert costliest["tokens"].is_sorted(descending=True) and (costliest["tokens"] > 0).all()
    assert costliest["session_id"].to_list()[0] == "big-run"
    assert [row["session_id"] for row in runs.costliest_trees().iter_rows(named=True)] == ["big-run"]
    assert any("nothing is priced" in note for note in runs.notes)
    text = CliRunner().invoke(main, ["summary", str(unpriced), "-q"]).output
    lines = {line[:12].strip(): line[13:] for line in text.splitlines() if line[:1] != " "}
    assert "$0" not in lines["costliest"] and lines["costliest"].endswith("(by tokens: nothing is priced)")
    assert "$0" not in lines["cost"] and "nothing priced" in lines["cost"]
    expected = ", ".join(
        f"{name_text(r['session_id'], label=r['label'], name=r['name'])} {costliest_text(runs, r)}"
        for r in costliest.head(3).iter_rows(named=True)
    )
    assert lines["costliest"].startswith(expected)
    page = render_report(corpus)
    tables = _keyed(page)
    assert all("$0" not in row["cost"] for row in tables["runs-costliest"])
    assert [row["id"] for row in tables["runs-costliest"]] == costliest["session_id"].to_list()
    assert 'Costliest runs <span class="muted">(by tokens: nothing is priced)</span>' in page
    card = _card(page, "card-cost")
    assert "$0" not in card and "nothing is priced" in card
    browser = CatalogBrowser(corpus)
    browser.sort_by = "cost"
    ids = [corpus.sessions["session_id"][key] for key in browser.results]
    assert ids[0] == "big-run" and ids[-1] == "no-usage"
    assert "nothing is priced, by tokens" in browser.results_label


def test_token_sums_past_64_bits_are_null_with_a_reason_never_wrapped(tmp_path: Path) -> None:
    root = tmp_path / "overflow"
    exact = write_overflow(root)
    assert exact["input_tokens"] > INT64_MAX
    corpus = read_corpus(root, cache=False)
    assert corpus.sessions["input_tokens"].max() == 2**53 - 1  # every session's own count is exact
    models = usage_by_model(corpus, by="model").row(0, named=True)
    assert models["input_tokens"] is None and models["billed_input_tokens"] is None and models["overflow"]
    assert models["output_tokens"] == exact["output_tokens"]
    trees = run_trees(corpus)  # raised a bare OverflowError
    top = trees.filter(pl.col("session_id") == "ov-0").row(0, named=True)
    assert top["subtree_input_tokens"] is None and top["subtree_tokens_overflow"]
    assert top["subtree_output_tokens"] == exact["output_tokens"] and top["subtree_sessions"] == len(corpus.sessions)
    leaf = trees.filter(pl.col("session_id") == "ov-1").row(0, named=True)
    assert leaf["subtree_input_tokens"] == 2**53 - 1 and not leaf["subtree_tokens_overflow"]
    runs = run_summary(corpus)
    assert runs.totals["input_tokens"] is None and "input_tokens" in runs.totals["overflow"]
    assert runs.totals["output_tokens"] == exact["output_tokens"]
    assert any("past 2^63 - 1" in note and "input_tokens" in note for note in runs.notes)
    assert all(value is None or value >= 0 for value in runs.trees["tokens"].to_list())
    csv = CliRunner().invoke(main, ["runs", str(root), "-t", "models", "-f", "csv", "-q"])
    assert csv.exit_code == 0 and "-" not in csv.output.splitlines()[1].split(",")[4], csv.output
    for command in (["summary", str(root), "-q"], ["report", str(root), "-o", str(tmp_path / "r.html"), "-q"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 0, result.output


def test_a_session_whose_token_count_passes_64_bits_is_null_with_a_problem_row(tmp_path: Path) -> None:
    from tests.partial_corpora import CHAT, _session

    _session(tmp_path, "huge", [(CHAT, (2**53 - 1, 1))] * 1_100)
    corpus = read_corpus(tmp_path, cache=False)
    row = corpus.sessions.row(0, named=True)
    assert row["input_tokens"] is None and row["output_tokens"] == 1_100 and row["usage_steps"] == 1_100
    problems = corpus.problems.filter(pl.col("kind") == "token-sum-overflow")
    assert problems.height == 1 and "input_tokens" in problems["message"][0]


def _shown_figures_equal_the_library(corpus: Corpus, runs: RunSummary) -> None:
    """Every cost and token figure the report, ``summary`` and the browser show is the library's."""
    page = render_report(corpus)
    tables = _tables(page)
    keyed = _keyed(page)
    for table, frame in (("runs-costliest", runs.costliest), ("trees-costliest", runs.costliest_trees())):
        shown = [(row.get("id", ""), row["cost"]) for row in keyed.get(table, [])]
        expected = [(r["session_id"], run_cost(r)) for r in frame.iter_rows(named=True)]
        assert len(shown) == len(expected), table
        assert all(
            sid.startswith(cut) and cost == want for (cut, cost), (sid, want) in zip(shown, expected, strict=True)
        ), table
    for row in tables["runs-models"]:
        model = runs.models.filter(pl.col("model") == row[1].removesuffix(" unpriced").strip()).row(0, named=True)
        assert row[-1] == (run_cost({**model, "cost_unknown": None}) if model["cost_usd_known"] else "unpriced")
    card = _card(page, "card-cost")
    assert card.startswith(partial_cost(runs.totals["cost_usd"], runs.totals["cost_usd_known"]))
    assert f"{runs.totals['cost_unknown']:,} session" in card or not runs.totals["cost_unknown"]
    lines = runs_lines(runs)
    text = summary_lines(corpus)
    assert [line for line in text if line.startswith(("cost ", "costliest", "largest tree", "tokens "))] == [
        line for line in lines if line.startswith(("cost ", "costliest", "largest tree", "tokens "))
    ]
    assert (
        json.loads(json.dumps(runs_json(runs), default=str))["totals"]["cost_usd_known"]
        == runs.totals["cost_usd_known"]
    )
    browser = CatalogBrowser(corpus)
    keys = dict(zip(corpus.sessions["list_order"].to_list(), range(corpus.sessions.height), strict=True))
    for row in runs.costliest.iter_rows(named=True):
        facts = facts_text({**browser._tree.nodes.row(keys[row["list_order"]], named=True)})
        assert partial_cost(row["cost_usd"], row["cost_usd_known"]) in facts.split(" · "), (row["session_id"], facts)


def summary_lines(corpus: Corpus) -> list[str]:
    """The ``summary`` command's lines over a read corpus (the CLI's own rendering)."""
    from subagent_catalog.views.summary_text import summary_text

    return summary_text(corpus).splitlines()


def test_every_shown_cost_is_the_librarys_over_a_generated_corpus_with_hidden_shapes(tmp_path: Path) -> None:
    root = tmp_path / "generated"
    stats = generate(root, sessions=120, seed=3, compression="none", jobs=1, damaged_fraction=0.1)
    # An unpriced model in some logs: rename one route's model in every third log that uses it.
    renamed = 0
    for index, path in enumerate(sorted(root.rglob("session.jsonl"))):
        data = path.read_bytes()
        if index % 3 == 0 and b'"deepseek-v4-pro"' in data:
            path.write_bytes(data.replace(b'"deepseek-v4-pro"', b'"mystery-pro"'))
            renamed += 1
    corpus = read_corpus(root, cache=False, events=True)
    runs = run_summary(corpus)
    # The hidden shapes are there: unreadable logs inside trees of many sessions, an unpriced model.
    assert stats.damaged and renamed and runs.unpriced.height
    partial_trees = runs.trees.filter(pl.col("cost_unknown") > 0)
    assert partial_trees.height and partial_trees["usage_unknown"].sum() > 0
    assert runs.totals["cost_usd"] is None and runs.totals["cost_unknown"] > 0
    _shown_figures_equal_the_library(corpus, runs)
    _shown_figures_equal_the_library(read_corpus(GOLDEN, cache=False, events=True), run_summary(read_corpus(GOLDEN)))
