"""compare by label and by finding: each side narrowed to the runs with or without one, the notes say how many left.

``data/findings`` plants one pathology per session (``data/make_findings.py``): ``loop-yes`` alone has a
tool loop, ``storm-yes`` and ``storm-no`` alone call ``make``. Labels are written to a store in a
temporary directory, so what each filter keeps is known from the labels given.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from subagent_catalog.analysis.compare import compare
from subagent_catalog.analysis.findings import FindingsError
from subagent_catalog.analysis.run_filter import filter_runs
from subagent_catalog.analysis.subset import SubsetError
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.store.labels import Labels

GOLDEN = Path(__file__).parent.parent / "data" / "findings"
BAD = ("loop-yes", "storm-yes")


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return read_corpus(GOLDEN, cache=False)


@pytest.fixture
def store(tmp_path: Path) -> Labels:
    labels = Labels(tmp_path / "labels.sqlite")
    for session in BAD:
        labels.add(session, "bad")
    labels.add("retry-yes", "good")
    return labels


def _filter_note(notes: list[str]) -> list[str]:
    return [note for note in notes if note.startswith("filter")]


def test_label_keeps_the_labelled_runs(corpus: Corpus, store: Labels) -> None:
    total = corpus.sessions.height
    kept = filter_runs(corpus, label="bad", label_store=store.path)
    assert sorted(kept.corpus.sessions["session_id"]) == sorted(BAD)
    assert (kept.total, kept.left_out) == (total, total - len(BAD))
    result = compare(corpus, corpus, label="bad", label_store=store.path)
    assert result.runs == (len(BAD), len(BAD))
    assert _filter_note(result.notes) == [
        f"filter (label 'bad'): left out {total - 2} of {total} runs of A and {total - 2} of {total} of B"
    ]


def test_without_label_keeps_the_rest(corpus: Corpus, store: Labels) -> None:
    kept = filter_runs(corpus, without_label="bad", label_store=store.path)
    assert kept.left_out == len(BAD)
    assert not set(BAD) & set(kept.corpus.sessions["session_id"])


def test_label_column_of_a_corpus_read_with_labels(store: Labels) -> None:
    labelled = read_corpus(GOLDEN, cache=False, labels=store.path)
    assert sorted(filter_runs(labelled, label="good").corpus.sessions["session_id"]) == ["retry-yes"]


def test_label_filter_without_labels_is_a_clear_error(corpus: Corpus) -> None:
    with pytest.raises(SubsetError, match="no labels"):
        filter_runs(corpus, label="bad")


def test_finding_keeps_the_runs_with_one(corpus: Corpus) -> None:
    total = corpus.sessions.height
    result = compare(corpus, corpus, finding="tool-loop")
    assert result.runs == (1, 1)
    assert filter_runs(corpus, finding="tool-loop").corpus.sessions["session_id"].to_list() == ["loop-yes"]
    without = compare(corpus, corpus, without_finding="tool-loop")
    assert without.runs == (total - 1, total - 1)
    assert _filter_note(without.notes) == [
        f"filter (no tool-loop finding): left out 1 of {total} runs of A and 1 of {total} of B"
    ]


def test_finding_of_a_rule(corpus: Corpus, tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nname = "make"\npattern = "make"\nin = "tool-call"\n')
    kept = filter_runs(corpus, finding="make", rules=rules)
    assert sorted(kept.corpus.sessions["session_id"]) == ["storm-no", "storm-yes"]


def test_unknown_finding_kind(corpus: Corpus) -> None:
    with pytest.raises(FindingsError, match="unknown finding kind 'nope'"):
        filter_runs(corpus, finding="nope")


def test_filters_combine_and_sides_differ(corpus: Corpus, store: Labels) -> None:
    bad = filter_runs(corpus, label="bad", without_finding="tool-loop", label_store=store.path)
    assert bad.corpus.sessions["session_id"].to_list() == ["storm-yes"]
    rest = filter_runs(corpus, without_label="bad", label_store=store.path).corpus
    result = compare(rest, corpus, label="bad", label_store=store.path)
    assert result.runs == (0, len(BAD))
    total = corpus.sessions.height
    assert _filter_note(result.notes) == [
        f"filter (label 'bad'): left out {total - 2} of {total - 2} runs of A and {total - 2} of {total} of B"
    ]


def test_cli_options(store: Labels) -> None:
    runner = CliRunner()
    root = str(GOLDEN)
    total = read_corpus(GOLDEN, cache=False).sessions.height
    out = runner.invoke(
        main, ["compare", root, root, "--label", "bad", "--labels", str(store.path), "--format", "json", "-q"]
    )
    assert out.exit_code == 0, out.output
    notes = json.loads(out.stdout)["notes"]
    assert f"filter (label 'bad'): left out {total - 2} of {total} runs of A and {total - 2} of {total} of B" in notes
    out = runner.invoke(main, ["compare", root, root, "--without-finding", "tool-loop", "-q"])
    assert out.exit_code == 0, out.output
    assert f"left out 1 of {total} runs of A and 1 of {total} of B" in out.stdout
    out = runner.invoke(main, ["compare", root, root, "--label", "bad"])
    assert out.exit_code == 2 and "--labels FILE" in out.output
    out = runner.invoke(main, ["compare", root, root, "--finding", "nope"])
    assert out.exit_code != 0 and "unknown finding kind 'nope'" in out.output
