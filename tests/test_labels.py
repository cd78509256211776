"""The label store: a researcher's verdicts per session, safe with concurrent writers and killed ones."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from subagent_catalog.corpus import read_corpus
from subagent_catalog.store.labels import LABEL_SCHEMA, Labels, LabelsError

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "findings"


def test_add_replace_remove_and_frame(tmp_path: Path) -> None:
    store = Labels(tmp_path / "labels.sqlite")
    assert store.frame().height == 0 and store.remove("x") == 0  # no file yet: no label, nothing created
    assert not (tmp_path / "labels.sqlite").exists()
    store.add("a", "needs-review", note="loops", author="ana", time_ms=10)
    store.add("a", "bad-run", time_ms=20)
    store.add("b", "good-run", time_ms=15)
    store.add("a", "needs-review", note="loops on grep", author="bo", time_ms=30)  # given again: replaced
    frame = store.frame()
    assert frame.schema == pl.Schema(LABEL_SCHEMA)
    assert frame.select("session_id", "label", "note", "author").rows() == [
        ("b", "good-run", None, None),
        ("a", "bad-run", None, None),
        ("a", "needs-review", "loops on grep", "bo"),
    ]
    assert str(frame["time"][0]) == "1970-01-01 00:00:00.015000+00:00"
    assert store.remove("a", "bad-run") == 1
    assert store.remove("a") == 1
    assert store.frame()["session_id"].to_list() == ["b"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("a", ""), "label must be a non-empty string"),
        (("", "x"), "session_id must be a non-empty string"),
        (("a", "x" * 201), "longer than 200"),
        (("a", 5), "label must be a non-empty string"),
    ],
)
def test_a_label_that_is_not_one_is_refused(tmp_path: Path, args: tuple[object, object], message: str) -> None:
    with pytest.raises(LabelsError, match=message):
        Labels(tmp_path / "l.sqlite").add(*args)  # type: ignore[arg-type]


def test_a_file_that_is_not_a_store_is_refused_and_left_alone(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database, just notes\n" * 20)
    with pytest.raises(LabelsError, match="label store"):
        Labels(text).add("a", "x")
    with pytest.raises(LabelsError, match="label store"):
        Labels(text).frame()
    assert text.read_text() == "not a database, just notes\n" * 20
    with pytest.raises(LabelsError, match="not a regular file"):
        Labels(tmp_path).frame()


def _writer(path: str, worker: int, count: int) -> None:
    store = Labels(path)
    for n in range(count):
        store.add(f"s{worker}-{n}", "seen", author=f"w{worker}")


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "labels.sqlite")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(path, w, 60)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
        assert worker.exitcode == 0
    frame = Labels(path).frame()
    assert frame.height == 240 and frame["session_id"].n_unique() == 240


def _endless(path: str, ready: multiprocessing.synchronize.Event) -> None:
    store = Labels(path)
    n = 0
    while True:
        store.add(f"s{n}", "seen", note="x" * 5000)
        n += 1
        if n == 20:
            ready.set()


def test_a_writer_killed_mid_write_leaves_a_whole_store(tmp_path: Path) -> None:
    path = str(tmp_path / "labels.sqlite")
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    writer = context.Process(target=_endless, args=(path, ready))
    writer.start()
    assert ready.wait(timeout=120)
    os.kill(writer.pid, signal.SIGKILL)  # type: ignore[arg-type]
    writer.join(timeout=60)
    frame = Labels(path).frame()
    assert frame.height >= 20
    assert frame["note"].str.len_chars().unique().to_list() == [5000]  # every row whole
    with sqlite3.connect(path) as connection:
        assert connection.execute("pragma integrity_check").fetchone() == ("ok",)
    Labels(path).add("after", "x")  # the next writer goes on
    assert Labels(path).frame().height == frame.height + 1


def test_read_corpus_joins_the_labels_by_session_id(tmp_path: Path) -> None:
    store = Labels(tmp_path / "labels.sqlite")
    store.add("loop-yes", "needs-review", time_ms=1)
    store.add("loop-yes", "tool-loop-confirmed", time_ms=2)
    store.add("no-such-session", "x", time_ms=3)
    sessions = read_corpus(SAMPLE, labels=store.path).sessions
    labelled = dict(sessions.select("session_id", "labels").iter_rows())
    assert labelled["loop-yes"] == ["needs-review", "tool-loop-confirmed"]
    assert labelled["loop-no"] == []
    assert "labels" not in read_corpus(SAMPLE).sessions.columns  # without a store: no column


def test_a_label_store_inside_the_corpus_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LabelsError, match=r"label store .* inside the corpus"):
        read_corpus(SAMPLE, labels=SAMPLE / "labels.sqlite")
    assert not (SAMPLE / "labels.sqlite").exists()
