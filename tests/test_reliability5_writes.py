"""Reliability round 5, items 1, 2 and 14: one ownership check for every file written, label stores included.

A label store (an SQLite file, and the ``-journal``/``-wal``/``-shm`` files SQLite makes next to it)
is checked by ``outputs.check_output`` at every door that takes its path: ``Labels``,
``read_corpus(labels=)``, ``filter_runs(label_store=)``, ``CatalogBrowser``, ``DiagnosticsDashboard``
and ``compare --labels``. The corpus is ``data/sample`` copied to ``tmp_path``; every test that
points a door at it checks that no byte, no entry and no mtime under it changed.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from subagent_catalog.analysis.run_filter import filter_runs
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.outputs import OutputError, check_output
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.store.labels import Labels, LabelsError
from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
EMPTY_LOG = Path("_no-cwd") / "empty-file" / "session.jsonl"  # listed as header-missing
SESSION = "run-webapp-1"

Snapshot = dict[str, tuple[int, int, bytes | None]]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    copy = tmp_path / "corpus"
    shutil.copytree(SAMPLE, copy)
    return copy


@pytest.fixture
def corpus(root: Path) -> Corpus:
    return read_corpus(root, cache=False)


def snapshot(root: Path) -> Snapshot:
    """Every entry under ``root`` (and the root): its mode, mtime and bytes (a file's)."""
    seen: Snapshot = {}
    for path in [root, *root.rglob("*")]:
        info = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        seen[str(path.relative_to(root))] = (info.st_mode, info.st_mtime_ns, data)
    return seen


def wal_store(path: Path) -> None:
    """A label store in WAL mode (as another SQLite tool may leave one), with one label."""
    Labels(path).add(SESSION, "bad")
    with sqlite3.connect(path) as connection:
        assert connection.execute("pragma journal_mode = wal").fetchone() == ("wal",)


def compare_labels(root: Path, store: Path) -> Result:
    args = ["compare", str(root), str(root), "--labels", str(store), "--label", "bad", "-q", "--format", "json"]
    return CliRunner().invoke(main, args)


def one_error_line(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("Error: ") and "(hint: " in result.stderr
    return result.stderr


# --- item 1: a hard link of a corpus log --------------------------------------------------------------


def test_label_store_hard_linked_to_a_corpus_log_is_refused_by_every_door(
    root: Path, corpus: Corpus, tmp_path: Path
) -> None:
    store = tmp_path / "labels.sqlite"
    os.link(root / EMPTY_LOG, store)
    before = snapshot(root)
    doors = {
        "Labels": lambda: Labels(store).add(SESSION, "bad"),
        "read_corpus": lambda: read_corpus(root, labels=store, cache=False),
        "filter_runs": lambda: filter_runs(corpus, label="bad", label_store=store),
        "CatalogBrowser": lambda: CatalogBrowser(corpus, labels=store).add_label("bad", session=0),
        "DiagnosticsDashboard": lambda: DiagnosticsDashboard(corpus, labels=store),
    }
    for door, call in doors.items():
        with pytest.raises(LabelsError, match="2 hard links") as raised:
            call()
        assert "label store" in str(raised.value), door
    assert "2 hard links" in one_error_line(compare_labels(root, store))
    assert snapshot(root) == before and (root / EMPTY_LOG).stat().st_size == 0


# --- item 2: a store inside the corpus, at every door; no SQLite side file there ------------------------


def test_label_store_inside_corpus_refused_by_compare(root: Path) -> None:
    store = root / "labels.sqlite"
    wal_store(store)  # put there before the snapshot: the test's own doing, not the command's
    before = snapshot(root)
    line = one_error_line(compare_labels(root, store))
    assert "label store" in line and "inside the corpus" in line
    assert snapshot(root) == before  # no -wal/-shm made and removed: the root's mtime is unchanged


def test_wal_label_store_creates_no_side_file_in_corpus(root: Path, corpus: Corpus) -> None:
    store = root / "labels.sqlite"
    wal_store(store)
    before = snapshot(root)
    doors = {
        "Labels": lambda: Labels(store, protected=[root]).frame(),
        "read_corpus": lambda: read_corpus(root, labels=store, cache=False),
        "filter_runs": lambda: filter_runs(corpus, label="bad", label_store=store),
        "CatalogBrowser": lambda: CatalogBrowser(corpus, labels=store),
        "DiagnosticsDashboard": lambda: DiagnosticsDashboard(corpus, labels=store),
    }
    for door, call in doors.items():
        with pytest.raises(LabelsError, match="inside the corpus") as raised:
            call()
        assert raised.value.hint and "outside the corpus" in raised.value.hint, door
    assert snapshot(root) == before


def test_label_store_inside_an_archives_recorded_root_is_refused(root: Path, tmp_path: Path) -> None:
    export_archive(root, tmp_path / "archive", jobs=1)
    archive = open_archive(tmp_path / "archive")
    before = snapshot(root)
    for store in (root / "labels.sqlite", root / "_no-cwd" / "labels.sqlite", tmp_path / "archive" / "l.sqlite"):
        with pytest.raises(LabelsError, match="inside the corpus"):
            CatalogBrowser(archive, labels=store)
        with pytest.raises(LabelsError, match="inside the corpus"):
            filter_runs(archive, label="bad", label_store=store)
        with pytest.raises(LabelsError, match="inside the corpus"):
            DiagnosticsDashboard(archive, labels=store)
    assert snapshot(root) == before


def test_a_wal_store_outside_the_corpus_keeps_no_side_file(corpus: Corpus, tmp_path: Path) -> None:
    store = tmp_path / "labels.sqlite"
    wal_store(store)
    kept = filter_runs(corpus, label="bad", label_store=store)
    assert kept.corpus.sessions["session_id"].to_list() == [SESSION]
    assert sorted(os.listdir(tmp_path)) == ["corpus", "labels.sqlite"]  # the read left no -wal/-shm
    Labels(store).add(SESSION, "seen")
    with sqlite3.connect(store) as connection:  # a write turned it back to a rollback journal
        assert connection.execute("pragma journal_mode").fetchone() == ("delete",)
    assert sorted(os.listdir(tmp_path)) == ["corpus", "labels.sqlite"]


def test_links_and_odd_files_as_store_or_side_file_are_refused(root: Path, corpus: Corpus, tmp_path: Path) -> None:
    before = snapshot(root)
    real = tmp_path / "real.sqlite"
    Labels(real).add(SESSION, "bad")
    link = tmp_path / "link.sqlite"
    link.symlink_to(real)
    with pytest.raises(LabelsError, match="symbolic link"):
        CatalogBrowser(corpus, labels=link)
    into = tmp_path / "into.sqlite"
    into.symlink_to(root / EMPTY_LOG)
    with pytest.raises(LabelsError, match="symbolic link"):
        Labels(into, protected=[root]).add(SESSION, "bad")
    planted = tmp_path / "planted.sqlite"  # a side file planted as a link into the corpus
    (tmp_path / "planted.sqlite-journal").symlink_to(root / EMPTY_LOG)
    with pytest.raises(LabelsError, match=r"side file .* symbolic link"):
        Labels(planted).add(SESSION, "bad")
    assert not planted.exists()
    fifo = tmp_path / "fifo.sqlite"
    os.mkfifo(fifo)
    with pytest.raises(LabelsError, match="not a regular file"):
        Labels(fifo)
    assert snapshot(root) == before


# --- item 14: a mistyped store path -----------------------------------------------------------------------


def test_missing_labels_file_is_an_error_not_zero_runs(root: Path, corpus: Corpus, tmp_path: Path) -> None:
    typo = tmp_path / "lables.sqlite"
    line = one_error_line(compare_labels(root, typo))
    assert f"no label store at {str(typo)!r}" in line and "check the path" in line
    for call in (
        lambda: filter_runs(corpus, label="bad", label_store=typo),
        lambda: DiagnosticsDashboard(corpus, labels=typo),
        lambda: read_corpus(root, labels=typo, cache=False),
    ):
        with pytest.raises(LabelsError, match="no label store at"):
            call()
    assert not typo.exists()


def test_a_store_in_a_missing_directory_is_refused_when_opened_for_writing(corpus: Corpus, tmp_path: Path) -> None:
    with pytest.raises(LabelsError, match="No such file or directory") as raised:
        CatalogBrowser(corpus, labels=tmp_path / "no-such-dir" / "labels.sqlite")
    assert raised.value.hint == "create the directory first, or choose another path"
    browser = CatalogBrowser(corpus, labels=tmp_path / "new.sqlite")  # a new name: made by the first label
    browser.add_label("bad", session=0)
    assert Labels(tmp_path / "new.sqlite").frame().height == 1


# --- the check itself -------------------------------------------------------------------------------------


def test_check_output_accepts_only_a_regular_file_or_a_new_name_unless_streaming(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    check_output(fifo)  # an output may go to a pipe, written in place
    with pytest.raises(OutputError, match=r"not a regular file \(a FIFO\)"):
        check_output(fifo, stream=False)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "sock"))
        with pytest.raises(OutputError, match=r"not a regular file \(a socket\)"):
            check_output(tmp_path / "sock")
    check_output(tmp_path / "new.html", stream=False)
