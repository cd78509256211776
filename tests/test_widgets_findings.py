"""The browser's findings and labels (issue 40 items 4-5), driven by traits and messages, as a notebook does.

``data/findings`` plants one pathology per session (``data/make_findings.py``); the expected sessions
come from the library's own ``findings`` and ``Labels``, never from the widget.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from subagent_catalog.analysis.findings import findings
from subagent_catalog.archive import export_archive, open_archive
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.store.labels import Labels, LabelsError
from subagent_catalog.views.widgets import CatalogBrowser, finding_filter
from subagent_catalog.views.widgets.finding_filter import ANY_FINDING
from subagent_catalog.views.widgets.pane_findings import findings_badges_html

ROOT = "data/findings"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return read_corpus(ROOT)


@pytest.fixture(scope="module")
def found(corpus: Corpus) -> pl.DataFrame:
    return findings(corpus)


def _choices(browser: CatalogBrowser) -> dict[str, list[object]]:
    return {name: values for name, values in browser.choices}


def _keys_of(corpus: Corpus, orders: list[int]) -> list[int]:
    keys = corpus.sessions.with_row_index("key").filter(pl.col("list_order").is_in(orders))["key"]
    return sorted(int(key) for key in keys.to_list())


def test_construction_computes_no_finding(corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_args: object, **_kwargs: object) -> pl.DataFrame:
        raise AssertionError("findings computed at construction")

    monkeypatch.setattr(finding_filter, "findings", boom)
    browser = CatalogBrowser(corpus)
    assert not browser.findings_loaded and _choices(browser)["finding"] == []


def test_finding_filter_offers_the_kinds_found_most_runs_first(corpus: Corpus, found: pl.DataFrame) -> None:
    browser = CatalogBrowser(corpus)
    browser.load_findings()
    offered = _choices(browser)["finding"]
    assert offered[0] == ANY_FINDING and sorted(offered[1:]) == sorted(set(found["kind"].to_list()))
    runs = [found.filter(pl.col("kind") == kind)["list_order"].n_unique() for kind in offered[1:]]
    assert runs == sorted(runs, reverse=True)


def test_finding_filter_lists_the_planted_session(corpus: Corpus, found: pl.DataFrame) -> None:
    browser = CatalogBrowser(corpus)
    browser.finding = "tool-loop"  # the first use computes the findings
    assert browser.findings_loaded and browser.showing == "results"
    assert browser.results == [browser.find("loop-yes")]
    assert "finding=tool-loop" in browser.results_label
    browser.finding = ANY_FINDING
    assert sorted(browser.results) == _keys_of(corpus, found["list_order"].unique().to_list())
    browser.clear_filters()
    assert browser.finding is None and not browser.filtering


def test_the_front_ends_request_computes_the_findings(corpus: Corpus) -> None:
    browser = CatalogBrowser(corpus)
    browser._on_message(browser, {"type": "findings"}, [])
    assert browser.findings_loaded and "tool-loop" in _choices(browser)["finding"]


def test_rule_kinds_are_offered_and_filter(corpus: Corpus, tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(
        '[[rule]]\nname = "make-call"\npattern = "make \\\\d"\nregex = true\nin = "tool-call"\n\n'
        '[[rule]]\nname = "never-there"\npattern = "no such text in any log"\n',
        encoding="utf-8",
    )
    browser = CatalogBrowser(corpus, rules=rules)
    browser.finding = "make-call"
    expected = findings(corpus, rules=rules, detectors=[])
    assert sorted(browser.results) == _keys_of(corpus, expected["list_order"].to_list()) and browser.results
    assert "never-there" in _choices(browser)["finding"]  # a rule that found nothing is still offered
    browser.finding = "never-there"
    assert browser.results == []


def test_the_pane_shows_the_sessions_findings_linked_to_their_step(corpus: Corpus) -> None:
    browser = CatalogBrowser(corpus)
    browser.select_id("loop-yes")
    badges = re.findall(r'<a href="#([^"]+)" class="sc-finding" data-sc-finding="([^"]+)"', browser.detail)
    assert [kind for _, kind in badges] == ["tool-loop"]
    target = badges[0][0]
    assert f'id="{target}"' in browser.detail  # the link lands inside the pane
    assert not browser.findings_loaded  # only this session's findings were computed
    browser.select_id("loop-no")  # the near miss: no finding, no badge
    assert "sc-finding" not in browser.detail and "sc-labels-slot" in browser.detail


def test_a_whole_run_finding_has_a_badge_without_a_link(corpus: Corpus) -> None:
    browser = CatalogBrowser(corpus)
    browser.select_id("stalled-yes")
    assert re.search(r'<span class="sc-finding" data-sc-finding="stalled"', browser.detail)


def test_label_filter_offers_the_labels_of_a_corpus_read_with_labels(tmp_path: Path) -> None:
    store = Labels(tmp_path / "labels.sqlite")
    store.add("loop-yes", "confirmed")
    store.add("storm-yes", "confirmed")
    store.add("storm-yes", "needs-review")
    browser = CatalogBrowser(read_corpus(ROOT, labels=store.path))
    assert _choices(browser)["session_label"] == ["confirmed", "needs-review"]
    assert browser.labels_path == ""  # read-only: the browser has no store of its own
    browser.session_label = "confirmed"
    assert sorted(browser.results) == sorted([browser.find("loop-yes"), browser.find("storm-yes")])
    browser.select_id("storm-yes")
    assert [entry["label"] for entry in browser.selected_labels] == ["confirmed", "needs-review"]
    with pytest.raises(LabelsError, match="no label store"):
        browser.add_label("x")


def test_the_label_control_writes_the_store_and_the_filter_follows(corpus: Corpus, tmp_path: Path) -> None:
    path = tmp_path / "labels.sqlite"
    browser = CatalogBrowser(corpus, labels=path)
    assert _choices(browser)["session_label"] == [] and browser.labels_path == str(path)
    key = browser.find("loop-yes")
    browser.selected = key
    browser._on_message(browser, {"type": "label-add", "key": key, "label": " confirmed ", "note": "greps a.py"}, [])
    given = Labels(path).frame().select("session_id", "label", "note").rows()
    assert given == [("loop-yes", "confirmed", "greps a.py")]
    assert browser.selected_labels == [{"label": "confirmed", "note": "greps a.py", "author": None}]
    assert _choices(browser)["session_label"] == ["confirmed"] and browser.label_error == ""
    browser.session_label = "confirmed"
    assert browser.results == [key]
    browser._on_message(browser, {"type": "label-remove", "key": key, "label": "confirmed"}, [])
    assert Labels(path).frame().height == 0 and browser.selected_labels == []
    assert browser.results == [] and _choices(browser)["session_label"] == []  # the filter ran again


def test_a_label_for_another_session_than_the_selected_one(corpus: Corpus, tmp_path: Path) -> None:
    path = tmp_path / "labels.sqlite"
    browser = CatalogBrowser(corpus, labels=path)
    browser.select_id("loop-yes")
    browser.add_label("later", session=browser.find("storm-yes"))
    assert Labels(path).frame()["session_id"].to_list() == ["storm-yes"] and browser.selected_labels == []


def test_a_bad_label_is_refused_in_label_error_and_nothing_is_written(corpus: Corpus, tmp_path: Path) -> None:
    path = tmp_path / "labels.sqlite"
    browser = CatalogBrowser(corpus, labels=path)
    key = browser.find("loop-yes")
    browser._on_message(browser, {"type": "label-add", "key": key, "label": "   "}, [])
    assert "label must be a non-empty string" in browser.label_error and "hint:" in browser.label_error
    browser._on_message(browser, {"type": "label-add", "key": 10_000, "label": "x"}, [])
    assert "no session with key 10000" in browser.label_error
    assert Labels(path).frame().height == 0


def test_a_store_inside_the_corpus_is_refused(corpus: Corpus) -> None:
    inside = Path(ROOT) / "labels.sqlite"
    with pytest.raises(LabelsError, match=r"label store .* inside the corpus") as raised:
        CatalogBrowser(corpus, labels=inside)
    assert raised.value.hint and "outside the corpus" in raised.value.hint
    assert not inside.exists()


def test_over_an_archive_without_events_the_findings_are_a_lower_bound(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    shutil.copytree(ROOT, root)
    export_archive(root, tmp_path / "archive", events=False, jobs=1)
    shutil.rmtree(root)  # no events table, no root: no log can be read
    browser = CatalogBrowser(open_archive(str(tmp_path / "archive")))
    browser.finding = "stalled"  # a detector that reads no log still runs
    assert [browser.corpus.sessions["session_id"][key] for key in browser.results] == ["stalled-yes"]
    assert "lower bound" in browser.findings_note and "tool-loop" not in _choices(browser)["finding"]
    browser.select_id("stalled-yes")
    assert 'data-sc-finding="stalled"' in browser.detail


def test_a_finding_whose_step_the_pane_leaves_out_has_no_link() -> None:
    # a 400-step run: the pane shows the first and last 150 steps (pane_steps), not step 200
    steps = pl.DataFrame(
        {"seq": list(range(400)), "seqs": [[i] for i in range(400)], "kind": ["assistant"] * 400},
        schema_overrides={"seqs": pl.List(pl.Int64)},
    ).with_columns(is_error=pl.lit(False), in_seed=pl.lit(False))
    found = findings(read_corpus(ROOT), detectors=["tool-loop"])
    shown = found.with_columns(seq=pl.lit(10, pl.Int64))
    hidden = found.with_columns(seq=pl.lit(200, pl.Int64))
    assert '<a href="#seq-10" class="sc-finding"' in findings_badges_html(shown, steps)
    html = findings_badges_html(hidden, steps)
    assert '<span class="sc-finding"' in html and "its step is not in the pane" in html and "href" not in html


def test_the_browsers_labels_column_follows_the_writes(corpus: Corpus, tmp_path: Path) -> None:
    browser = CatalogBrowser(corpus, labels=tmp_path / "labels.sqlite")
    key = browser.find("storm-yes")
    assert browser.session_labels is not None and browser.session_labels[key].to_list() == []
    browser.add_label("needs-review", session=key)
    labels = browser.session_labels
    assert labels is not None and labels[key].to_list() == ["needs-review"]
    assert labels.list.len().sum() == 1 and labels.len() == corpus.sessions.height


def test_a_new_selection_clears_the_last_label_error(corpus: Corpus, tmp_path: Path) -> None:
    browser = CatalogBrowser(corpus, labels=tmp_path / "labels.sqlite")
    browser.select_id("loop-yes")
    browser._on_message(browser, {"type": "label-add", "key": browser.selected, "label": ""}, [])
    assert browser.label_error
    browser.select_id("storm-yes")
    assert browser.label_error == ""
