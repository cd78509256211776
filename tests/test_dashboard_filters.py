"""DiagnosticsDashboard's label and finding filters, the anywidget way: build it, set the trait, read the rows.

``data/findings`` plants one pathology per session (``data/make_findings.py``): ``loop-yes`` alone has a
tool loop. The labels are written here, so what each filter keeps is known from them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import traitlets

from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.store.labels import Labels
from subagent_catalog.views.widgets import DiagnosticsDashboard, dashboard_filters

GOLDEN = Path(__file__).parent.parent / "data" / "findings"
BAD = ["loop-yes", "storm-yes"]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return read_corpus(GOLDEN, cache=False)


@pytest.fixture
def store(tmp_path: Path) -> Labels:
    labels = Labels(tmp_path / "labels.sqlite")
    for session in BAD:
        labels.add(session, "bad")
    return labels


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    real = dashboard_filters.findings

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(dashboard_filters, "findings", counted)
    return seen


def _counted_ids(board: DiagnosticsDashboard) -> list[str]:
    """The ids of every session the bars count (each bar picked in turn)."""
    ids: list[str] = []
    for split, value, _count in board.bars:
        board.pick(value, split=split)
        ids += board.affected_ids
    board.clear_selection()
    return sorted(ids)


def test_construction_computes_no_findings(corpus: Corpus, calls: list[int]) -> None:
    board = DiagnosticsDashboard(corpus)
    assert calls == [] and board.runs.found is None
    assert sum(count for _s, _v, count in board.bars) == corpus.sessions.height


def test_finding_filter_keeps_the_sessions_with_one(corpus: Corpus, calls: list[int]) -> None:
    board = DiagnosticsDashboard(corpus)
    board.finding_filter = "with:tool-loop"
    assert calls == [1]
    assert _counted_ids(board) == ["loop-yes"]
    assert "only those with tool-loop" in board.header.value
    board.finding_filter = "without:tool-loop"
    ids = _counted_ids(board)
    assert len(ids) == corpus.sessions.height - 1 and "loop-yes" not in ids
    board.finding_filter = "with:fan-out"
    assert calls == [1]  # computed once, on first use
    board.finding_filter = None
    assert sum(count for _s, _v, count in board.bars) == corpus.sessions.height


def test_label_filter(corpus: Corpus, store: Labels, calls: list[int]) -> None:
    board = DiagnosticsDashboard(corpus, labels=store.path)
    assert [value for _label, value in board.label_dropdown.options] == ["", "with:bad", "without:bad"]
    board.label_dropdown.value = "with:bad"  # the dropdown sets the trait
    assert board.label_filter == "with:bad"
    assert _counted_ids(board) == sorted(BAD)
    board.label_filter = "without:bad"
    assert len(_counted_ids(board)) == corpus.sessions.height - len(BAD)
    assert calls == []  # a label filter computes no findings


def test_filters_combine(corpus: Corpus, store: Labels) -> None:
    board = DiagnosticsDashboard(corpus, labels=store.path)
    board.label_filter = "with:bad"
    board.finding_filter = "without:tool-loop"
    assert board.finding_dropdown.value == "without:tool-loop"
    assert _counted_ids(board) == ["storm-yes"]


def test_bad_filter_values_are_refused(corpus: Corpus) -> None:
    board = DiagnosticsDashboard(corpus)
    with pytest.raises(traitlets.TraitError, match="has no labels"):
        board.label_filter = "with:bad"
    assert board.label_filter is None
    with pytest.raises(traitlets.TraitError, match="unknown finding kind"):
        board.finding_filter = "with:nope"
    with pytest.raises(traitlets.TraitError, match="with:NAME"):
        board.finding_filter = "tool-loop"
    assert board.finding_filter is None
    assert sum(count for _s, _v, count in board.bars) == corpus.sessions.height
