"""read_corpus with the facts cache: warm runs read no log bytes; changed files are re-read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from subagent_catalog import read_corpus
from subagent_catalog.read import pool as corpus_module
from tests.helpers import base_tree, header, healthy, tree_hash, write_session


def counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    original = corpus_module.read_log_file

    def spy(path: str, compression: str, **options):  # type: ignore[no-untyped-def]
        calls.append(path)
        return original(path, compression, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(corpus_module, "read_log_file", spy)
    return calls


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_warm_run_reads_no_log_and_gives_identical_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str
) -> None:
    root, cache = tmp_path / "corpus", tmp_path / "cache"
    base_tree(root, compression)  # type: ignore[arg-type]
    before = tree_hash(root)
    cold = read_corpus(root, compression=compression, cache=cache, jobs=1)  # type: ignore[arg-type]
    calls = counting(monkeypatch)
    warm = read_corpus(root, compression=compression, cache=cache, jobs=1)  # type: ignore[arg-type]
    assert calls == []
    assert warm.sessions.equals(cold.sessions)
    assert warm.descriptors.equals(cold.descriptors)
    assert warm.problems.equals(cold.problems)
    assert tree_hash(root) == before  # the cache lives outside the corpus
    assert any(name.startswith("facts-") for name in os.listdir(cache))


def test_a_changed_file_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, cache = tmp_path / "corpus", tmp_path / "cache"
    base_tree(root, "none")
    read_corpus(root, compression="none", cache=cache, jobs=1)
    changed = root / "_no-cwd" / "c-x" / "session.jsonl"
    with open(changed, "ab") as handle:
        handle.write(b"garbage without newline")
    write_session(root, header("new", created_at=9, parent="P", subagent=True), healthy("new"), "none")
    calls = counting(monkeypatch)
    warm = read_corpus(root, compression="none", cache=cache, jobs=1)
    assert sorted(os.path.basename(os.path.dirname(p)) for p in calls) == ["c-x", "new"]
    assert warm.sessions.filter(warm.sessions["session_id"] == "c-x")["verdict"].item() == "torn-tail"


def test_cache_off_and_events_read_every_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, cache = tmp_path / "corpus", tmp_path / "cache"
    base_tree(root, "none")
    read_corpus(root, compression="none", cache=cache, jobs=1)
    calls = counting(monkeypatch)
    read_corpus(root, compression="none", cache=False, jobs=1)
    assert len(calls) == 4
    calls.clear()
    with_events = read_corpus(root, compression="none", cache=cache, events=True, jobs=1)
    assert len(calls) == 4 and with_events.events.height > 0
