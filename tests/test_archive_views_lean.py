"""The summary, the report and the gate over an archive read only what they need.

Their output over an archive equals their output over the raw corpus (``tests/test_archive_inputs.py``);
these tests pin how they get there: the archive is never collected whole (``Archive.to_corpus``), the
frames they read lack the columns ``views.columns`` and ``analysis.gate`` name, and the listing is read
from the archive.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from subagent_catalog.analysis.gate import READ_BY_GATE, UNREAD_BY_GATE, run_checks
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.schemas import SESSION_SCHEMA
from subagent_catalog.store.archive import Archive, open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.views.columns import UNREAD_BY_REPORT, UNREAD_BY_SUMMARY
from subagent_catalog.views.gate_format import format_json
from subagent_catalog.views.report import render_report
from subagent_catalog.views.summary_text import summary_json, summary_markdown, summary_text


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """``data/sample`` copied, and its archive (without events: none of these views reads one)."""
    base = tmp_path_factory.mktemp("lean")
    root = str(base / "corpus")
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "sample", root)
    export_archive(root, str(base / "archive"), jobs=1)
    return root, str(base / "archive")


def _spy(archive: Archive, monkeypatch: pytest.MonkeyPatch) -> list[frozenset[str]]:
    """Record the sessions columns each collection of the archive's frames leaves out."""
    seen: list[frozenset[str]] = []
    collect = archive._collect

    def recording(without: frozenset[str]) -> object:
        seen.append(without)
        return collect(without)

    monkeypatch.setattr(archive, "_collect", recording)
    return seen


@pytest.mark.parametrize(
    ("view", "unread"),
    [
        (lambda a: summary_text(a), UNREAD_BY_SUMMARY),
        (lambda a: summary_json(a), UNREAD_BY_SUMMARY),
        (lambda a: summary_markdown(a), UNREAD_BY_SUMMARY),
        (lambda a: render_report(a), UNREAD_BY_REPORT),
        (lambda a: format_json(run_checks(a)), UNREAD_BY_GATE),
    ],
    ids=["summary_text", "summary_json", "summary_markdown", "render_report", "run_checks"],
)
def test_a_view_over_an_archive_collects_only_its_columns_once(
    view: object, unread: tuple[str, ...], sample: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = open_archive(sample[1])
    seen = _spy(archive, monkeypatch)
    view(archive)  # type: ignore[operator]
    assert seen == [frozenset(unread)]
    assert archive._corpus is None  # never collected whole


def test_the_gate_reads_its_few_columns_and_still_prices_sessions(sample: tuple[str, str]) -> None:
    frames = (open_archive(sample[1])).frames(without=UNREAD_BY_GATE)
    assert frames.sessions.columns == [*(n for n in SESSION_SCHEMA if n in READ_BY_GATE), "cost_usd"]
    raw = read_corpus(sample[0], cache=False).sessions
    assert_frame_equal(frames.sessions, raw.select(frames.sessions.columns))


def test_frames_equal_the_whole_corpus_in_the_columns_they_keep(sample: tuple[str, str]) -> None:
    archive = open_archive(sample[1])
    lean = archive.frames(without=UNREAD_BY_REPORT)
    assert archive.frames(without=reversed(UNREAD_BY_REPORT)) is lean  # the same projection is kept
    whole = open_archive(sample[1]).to_corpus()
    assert_frame_equal(lean.sessions, whole.sessions.select(lean.sessions.columns))
    assert_frame_equal(lean.descriptors, whole.descriptors)
    assert_frame_equal(lean.problems, whole.problems)
    assert not set(UNREAD_BY_REPORT) & set(lean.sessions.columns)


def test_frames_give_the_whole_corpus_once_it_is_collected(sample: tuple[str, str]) -> None:
    archive = open_archive(sample[1])
    whole = archive.to_corpus()
    assert archive.frames(without=UNREAD_BY_SUMMARY) is whole
    assert archive.frames() is whole


def test_unknown_columns_are_ignored_and_none_left_out_is_the_whole_corpus(sample: tuple[str, str]) -> None:
    archive = open_archive(sample[1])
    assert archive.frames(without=["no-such-column"]) is archive.to_corpus()


def test_the_listing_is_read_from_the_archive_and_gives_the_same_rows(sample: tuple[str, str]) -> None:
    archive = open_archive(sample[1])
    raw = read_corpus(sample[0], cache=False)
    assert_frame_equal(catalog(archive), catalog(raw))
    assert_frame_equal(catalog(archive.to_corpus()), catalog(raw))


def test_a_corpus_is_its_own_frames(sample: tuple[str, str]) -> None:
    raw = read_corpus(sample[0], cache=False)
    assert raw.frames(without=UNREAD_BY_GATE) is raw


def test_views_columns_name_only_sessions_columns() -> None:
    for names in (UNREAD_BY_REPORT, UNREAD_BY_SUMMARY, READ_BY_GATE, UNREAD_BY_GATE):
        assert set(names) <= set(SESSION_SCHEMA)
    assert set(READ_BY_GATE) | set(UNREAD_BY_GATE) == set(SESSION_SCHEMA)
    assert "header_json" not in UNREAD_BY_REPORT and "header_json" in UNREAD_BY_SUMMARY
