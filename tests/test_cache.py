"""The per-file facts cache: hits, invalidation, bad cache files, never writing into a corpus."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import pytest

from subagent_catalog.read.discover import SessionFile, discover
from subagent_catalog.read.logread import LogFacts, read_log_file
from subagent_catalog.read.paths import Compression
from subagent_catalog.store import cache as cache_module
from subagent_catalog.store.cache import FactsCache, cache_file, default_cache_dir
from subagent_catalog.synth.generate import generate
from subagent_catalog.synth.writer import EventLog, descriptor, header, write_session


def _snapshot(root: Path) -> list[tuple[str, int, int]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            info = os.lstat(os.path.join(dirpath, name))
            out.append((os.path.relpath(os.path.join(dirpath, name), root), info.st_size, info.st_mtime_ns))
    return sorted(out)


def _corpus(root: Path, compression: Compression = "none") -> Path:
    parent = header("P", created_at=1, cwd="/home/dev/projects/x")
    log = EventLog("P")
    log.turn_start()
    log.user("hi")
    log.assistant("hello there", chunks=4)
    log.turn_end()
    write_session(root, parent, log.events, compression)
    for i in range(3):
        child = EventLog(f"c{i}")
        child.turn_start()
        child.descriptor(descriptor("continuable", label=f"task {i}"))
        child.tool_round(f"call-{i}", "x" * 2000)
        child.turn_end()
        head = header(f"c{i}", created_at=10 + i, cwd="/home/dev/projects/x", parent="P", subagent=True)
        write_session(root, head, child.events, compression)
    return root


def _read_all(store: FactsCache, files: list[SessionFile], compression: Compression) -> list[LogFacts]:
    out = []
    for file in files:
        facts = store.get(file)
        if facts is None:
            facts = read_log_file(file.path, compression)
            store.put(file, facts)
        out.append(facts)
    return out


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("SUBAGENT_CATALOG_CACHE", str(directory))
    return directory


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_hit_after_save_and_reload(tmp_path: Path, cache_dir: Path, compression: Compression) -> None:
    root = _corpus(tmp_path / "corpus", compression)
    files = discover(root, compression).files
    first = FactsCache.load(root, compression)
    assert first.status == "new"
    fresh = _read_all(first, files, compression)
    assert first.misses == len(files) == 4
    written = first.save()
    assert written is not None and Path(written).parent == cache_dir
    second = FactsCache.load(root, compression)
    assert second.status == "loaded" and len(second) == 4
    again = _read_all(second, files, compression)
    assert second.hits == 4 and second.misses == 0
    assert again == fresh
    assert [f.identity_label for f in again] == [None, "task 0", "task 1", "task 2"]
    assert second.save() is None  # nothing changed: no rewrite


def test_same_root_spelled_differently_shares_the_cache(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _corpus(tmp_path / "corpus")
    store = FactsCache.load(root, "none")
    _read_all(store, discover(root, "none").files, "none")
    store.save()
    monkeypatch.chdir(tmp_path)
    other = FactsCache.load("corpus/", "none")
    _read_all(other, discover("corpus/", "none").files, "none")
    assert other.hits == 4
    assert FactsCache.load(root, "zstd").status == "new"  # the other encoding has its own cache


def test_changed_files_miss(tmp_path: Path, cache_dir: Path) -> None:
    root = _corpus(tmp_path / "corpus")
    store = FactsCache.load(root, "none")
    _read_all(store, discover(root, "none").files, "none")
    store.save()
    files = {Path(f.path).parent.name: f for f in discover(root, "none").files}
    # mtime only
    info = os.stat(files["c0"].path)
    os.utime(files["c0"].path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    # appended bytes (a torn tail now)
    with open(files["c1"].path, "ab") as handle:
        handle.write(b'{"type":"turn/start"')
    # same size and mtime, new inode
    replacement = files["c2"].path + ".new"
    shutil.copyfile(files["c2"].path, replacement)
    info = os.stat(files["c2"].path)
    os.replace(replacement, files["c2"].path)
    os.utime(files["c2"].path, ns=(info.st_atime_ns, info.st_mtime_ns))
    now = {Path(f.path).parent.name: f for f in discover(root, "none").files}
    assert now["c2"].inode != files["c2"].inode and now["c2"].size == files["c2"].size
    store = FactsCache.load(root, "none")
    assert store.get(now["P"]) is not None
    assert store.get(now["c0"]) is None
    assert store.get(now["c1"]) is None
    assert store.get(now["c2"]) is None
    facts = read_log_file(now["c1"].path, "none")
    store.put(now["c1"], facts)
    assert store.get(now["c1"]) is not None and store.get(now["c1"]).verdict == "torn-tail"  # type: ignore[union-attr]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_corrupt_cache_file_is_ignored(tmp_path: Path, cache_dir: Path, damage: str) -> None:
    root = _corpus(tmp_path / "corpus")
    files = discover(root, "none").files
    store = FactsCache.load(root, "none")
    _read_all(store, files, "none")
    path = Path(store.save() or "")
    data = path.read_bytes()
    path.write_bytes(
        {"garbage": b"\x00not an arrow file" * 10, "truncated": data[: len(data) // 2], "empty": b""}[damage]
    )
    broken = FactsCache.load(root, "none")
    assert broken.status.startswith("ignored")
    assert all(broken.get(f) is None for f in files)
    _read_all(broken, files, "none")
    assert broken.save() == str(path)
    assert FactsCache.load(root, "none").status == "loaded"


def test_foreign_reader_version_is_ignored(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _corpus(tmp_path / "corpus")
    store = FactsCache.load(root, "none")
    _read_all(store, discover(root, "none").files, "none")
    store.save()
    monkeypatch.setattr(cache_module, "reader_fingerprint", lambda: "another-reader")
    stale = FactsCache.load(root, "none")
    assert stale.status == "ignored: fingerprint differs" and len(stale) == 0


def test_tampered_entry_cannot_run_code(tmp_path: Path, cache_dir: Path) -> None:
    root = _corpus(tmp_path / "corpus")
    files = discover(root, "none").files
    store = FactsCache.load(root, "none")
    _read_all(store, files, "none")
    store.save()
    key = os.path.relpath(files[0].path, root)
    entries = {key: (files[0].size, files[0].mtime_ns, files[0].inode, pickle.dumps(os.getcwd))}
    cache_module._write_cache_file(store.path, entries, str(root), "none")
    tampered = FactsCache.load(root, "none")
    assert tampered.status == "loaded"
    assert tampered.get(files[0]) is None


def test_nothing_is_written_under_the_corpus(tmp_path: Path, cache_dir: Path) -> None:
    root = tmp_path / "corpus"
    generate(root, sessions=30, seed=2, compression="zstd")
    before = _snapshot(root)
    files = discover(root, "zstd").files
    store = FactsCache.load(root, "zstd")
    facts = _read_all(store, files, "zstd")
    store.save()
    assert _snapshot(root) == before
    assert sorted(os.listdir(cache_dir)) == [os.path.basename(cache_file(root, "zstd"))]
    warm = FactsCache.load(root, "zstd")
    assert _read_all(warm, files, "zstd") == facts and warm.hits == 30


def test_cache_directory_inside_the_corpus_is_refused(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "corpus")
    before = _snapshot(root)
    store = FactsCache.load(root, "none", directory=str(root / ".cache"))
    assert not store.writable
    _read_all(store, discover(root, "none").files, "none")
    assert store.save() is None
    assert _snapshot(root) == before


def test_events_and_unstable_reads_are_not_kept(tmp_path: Path, cache_dir: Path) -> None:
    root = _corpus(tmp_path / "corpus")
    files = discover(root, "none").files
    store = FactsCache.load(root, "none")
    with_events = read_log_file(files[0].path, "none", want_events=True)
    assert with_events.events
    store.put(files[0], with_events)
    cached = store.get(files[0])
    assert cached is not None and cached.events is None and cached.event_count == with_events.event_count
    store.put(files[1], LogFacts(size=files[1].size + 7))  # the file grew while it was read
    assert store.get(files[1]) is None
    store.put(files[2], read_log_file(str(tmp_path / "missing"), "none"))  # io-error
    assert store.get(files[2]) is None


def test_files_that_left_the_corpus_leave_the_cache(tmp_path: Path, cache_dir: Path) -> None:
    root = _corpus(tmp_path / "corpus")
    store = FactsCache.load(root, "none")
    _read_all(store, discover(root, "none").files, "none")
    store.save()
    shutil.rmtree(root / "--home-dev-projects-x--" / "c0")
    store = FactsCache.load(root, "none")
    _read_all(store, discover(root, "none").files, "none")
    assert store.save() is not None
    assert len(FactsCache.load(root, "none")) == 3


def test_default_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SUBAGENT_CATALOG_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == str(tmp_path / "xdg" / "subagent_catalog")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == str(tmp_path / "home" / ".cache" / "subagent_catalog")
    monkeypatch.setenv("SUBAGENT_CATALOG_CACHE", str(tmp_path / "explicit"))
    assert default_cache_dir() == str(tmp_path / "explicit")


def test_unwritable_cache_directory_does_not_fail(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "corpus")
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache directory should be")
    store = FactsCache.load(root, "none", directory=str(blocker / "sub"))
    _read_all(store, discover(root, "none").files, "none")
    assert store.save() is None
    assert store.status.startswith("not saved")
