"""The per-file facts cache: hits, invalidation, bad cache files, never writing into a corpus."""

from __future__ import annotations

import os
import pickle
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from subagent_catalog.read.discover import SessionFile, discover
from subagent_catalog.read.logread import LogFacts, read_log_file
from subagent_catalog.read.paths import Compression
from subagent_catalog.store import cache as cache_module
from subagent_catalog.store import codec
from subagent_catalog.store.cache import FactsCache, cache_file, default_cache_dir
from subagent_catalog.store.codec import FactsRecordError, dump_facts, load_facts
from subagent_catalog.synth.generate import generate
from subagent_catalog.synth.writer import EventLog, descriptor, header, write_session


def _snapshot(root: Path) -> list[tuple[str, int, int]]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            info = os.lstat(os.path.join(dirpath, name))
            out.append((os.path.relpath(os.path.join(dirpath, name), root), info.st_size, info.st_mtime_ns))
    return sorted(out)


def _corpus(root: Path, compression: Compression = "none", *, label: str = "task") -> Path:
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
        child.descriptor(descriptor("continuable", label=f"{label} {i}"))
        child.tool_round(f"call-{i}", "x" * 2000)
        child.turn_end()
        head = header(f"c{i}", created_at=10 + i, cwd="/home/dev/projects/x", parent="P", subagent=True)
        write_session(root, head, child.events, compression)
    return root


def _plant(store: FactsCache, file: SessionFile, blob: bytes) -> None:
    """Write the cache file with one entry for ``file`` holding ``blob``, MAC'd with the directory's key.

    Only code running as the user can do this; it shows what the record checks do past the MAC.
    """
    entry = (file.size, file.mtime_ns, file.ctime_ns, file.inode, file.device, blob)
    key = cache_module.make_key(os.path.dirname(store.path))
    cache_module._write_cache_file(store.path, {store._key(file): entry}, store.root, store.compression, key)


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
    _plant(store, files[0], pickle.dumps(os.getcwd))
    tampered = FactsCache.load(root, "none")
    assert tampered.status == "loaded"
    assert tampered.get(files[0]) is None and tampered.rejected == 1


def test_nothing_is_written_under_the_corpus(tmp_path: Path, cache_dir: Path) -> None:
    root = tmp_path / "corpus"
    generate(root, sessions=30, seed=2, compression="zstd")
    before = _snapshot(root)
    files = discover(root, "zstd").files
    store = FactsCache.load(root, "zstd")
    facts = _read_all(store, files, "zstd")
    store.save()
    assert _snapshot(root) == before
    assert sorted(os.listdir(cache_dir)) == sorted([os.path.basename(cache_file(root, "zstd")), "facts.key"])
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


# --------------------------------------------------------------------------- hostile records (reliability item 4)


def _hostile_pickles(size: int) -> dict[str, bytes]:
    """What the restricted unpickler used to admit: cycles, shared structure, missing attributes."""
    head = {"version": 0, "id": "s", "createdAt": 1, "cwd": None, "delegationDepth": 0}
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    shared: list[Any] = ["x" * 64]
    for _ in range(64):
        shared = [shared, shared]  # 2**64 leaves once walked, a few hundred bytes pickled
    bare = LogFacts.__new__(LogFacts)
    bare.__dict__.update(size=size, verdict="ok")
    out = {
        "cyclic": pickle.dumps(LogFacts(size=size, list_meta={**head, "cwd": cyclic}, verdict="ok", read_meta=head)),
        "shared": pickle.dumps(LogFacts(size=size, list_meta={**head, "cwd": shared}, verdict="ok", read_meta=head)),
        "missing-attributes": pickle.dumps(bare),
        "forged-verdict-type": pickle.dumps(LogFacts(size=size, list_meta=head, verdict=["ok"], read_meta=head)),  # type: ignore[arg-type]
    }
    assert all(len(blob) < 4096 for blob in out.values())
    return out


def _hostile_records(size: int) -> dict[str, bytes]:
    """Typed records that are malformed, forged or built to expand."""
    facts = read_log_file_bytes(b'{"type":"session","version":0,"id":"a","createdAt":1,"delegationDepth":0}\n')
    good = dump_facts(facts)
    assert good is not None
    fields = msgspec.msgpack.decode(good[5:])
    names = list(codec._FACTS_FIELDS)

    def forged(**changes: Any) -> bytes:
        copy = list(fields)
        for name, value in changes.items():
            copy[names.index(name)] = value
        return good[:5] + msgspec.msgpack.encode(copy)

    # a header tree that declares a container of 2**62 children, and an array header of 2**32 - 1 elements
    tree = msgspec.msgpack.encode(codec._Tree(b"D", [2**62], []))
    return {
        "missing-fields": good[:5] + msgspec.msgpack.encode(fields[:-3]),
        "forged-verdict-value": forged(size=size, verdict="excellent"),
        "forged-verdict-type": forged(size=size, verdict=1),
        "forged-verdict-combination": forged(size=size, read_cause="forged"),
        "other-size": forged(size=size + 1),
        "huge-count-tree": forged(size=size, list_meta=msgspec.Raw(tree)),
        "huge-array": good[:5] + b"\xdd\xff\xff\xff\xff" + b"\xc0" * 64,
        "over-the-cap": good + b"\0" * codec.MAX_FACTS_BYTES,
    }


def read_log_file_bytes(data: bytes) -> LogFacts:
    from subagent_catalog.read.logread import analyse_log

    return analyse_log(data, "none")


def test_hostile_archive_facts_blobs_raise_only_the_typed_error() -> None:
    for name, blob in {**_hostile_pickles(75), **_hostile_records(75)}.items():
        with pytest.raises(FactsRecordError):
            load_facts(blob, size=75)
        assert name


@pytest.mark.parametrize("name", [*_hostile_pickles(0), *_hostile_records(0)])
def test_hostile_cache_entries_are_misses(tmp_path: Path, cache_dir: Path, name: str) -> None:
    root = _corpus(tmp_path / "corpus")
    files = discover(root, "none").files
    store = FactsCache.load(root, "none")
    expected = _read_all(store, files, "none")
    store.save()
    blob = {**_hostile_pickles(files[0].size), **_hostile_records(files[0].size)}[name]
    _plant(store, files[0], blob)
    planted = FactsCache.load(root, "none")
    assert planted.status == "loaded" and len(planted) == 1
    assert planted.get(files[0]) is None  # never an exception, never believed
    assert planted.rejected == 1 and len(planted) == 0
    again = _read_all(planted, files, "none")
    assert again == expected
    assert planted.save() is not None and len(FactsCache.load(root, "none")) == 4


_MEASURE = """
import resource, sys, time
from subagent_catalog.store.codec import FactsRecordError, load_facts
blob = open(sys.argv[1], "rb").read()
before = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
start = time.perf_counter()
try:
    load_facts(blob, size=int(sys.argv[2]) if len(sys.argv) > 2 else None)
    outcome = "accepted"
except FactsRecordError:
    outcome = "refused"
elapsed = time.perf_counter() - start
print(outcome, elapsed, (int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) - before) * 1024)
"""


def _decode_in_child(tmp_path: Path, blob: bytes, *size: str) -> tuple[str, float, int]:
    path = tmp_path / "blob"
    path.write_bytes(blob)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), *size],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=True,
    )
    outcome, elapsed, grown = result.stdout.split()
    return outcome, float(elapsed), int(grown)


def _expanding_records() -> dict[str, bytes]:
    """Well-formed records at the size caps built for the most objects per byte (the decoder's worst case)."""
    facts = read_log_file_bytes(b"junk\n")
    good = dump_facts(facts)
    assert good is not None
    fields = msgspec.msgpack.decode(good[5:])
    names = list(codec._FACTS_FIELDS)
    problems = list(fields)
    problems[names.index("problems")] = [["", "", None, None, "error"]] * ((codec.MAX_FACTS_BYTES - 256) // 11)
    nodes = codec.MAX_HEADER_BYTES // 2 - 64
    kinds = b"D" + b"SS" * 3 + b"S" + b"L" + b"L" * nodes + b"SS"  # cwd: a list of empty lists
    values = [5, "version", 0, "id", "s", "createdAt", 1, "cwd", nodes, *[0] * nodes, "delegationDepth", 0]
    header = msgspec.msgpack.encode(codec._Tree(kinds, values, []))
    assert codec.MAX_HEADER_BYTES * 0.9 < len(header) <= codec.MAX_HEADER_BYTES
    tree = list(fields)
    tree[names.index("list_meta")] = msgspec.Raw(header)
    tree[names.index("list_skip")] = None
    out = {name: good[:5] + msgspec.msgpack.encode(value) for name, value in (("problems", problems), ("tree", tree))}
    assert codec.MAX_FACTS_BYTES * 0.9 < len(out["problems"]) <= codec.MAX_FACTS_BYTES
    return out


def test_decoding_hostile_blobs_is_bounded_in_time_and_memory(tmp_path: Path) -> None:
    """Peak RSS and time of decoding each hostile blob, measured in a fresh child process."""
    for name, blob in {**_hostile_pickles(5), **_hostile_records(5)}.items():
        outcome, elapsed, grown = _decode_in_child(tmp_path, blob, "5")
        assert outcome == "refused", name
        assert elapsed < 1.0 and grown < 16 << 20, (name, elapsed, grown)
    for name, blob in _expanding_records().items():
        outcome, elapsed, grown = _decode_in_child(tmp_path, blob)
        assert outcome == "accepted", name  # legal records: the bound is what the caps allow
        assert elapsed < 15.0 and grown < 40 * codec.MAX_FACTS_BYTES, (name, elapsed, grown)


# --------------------------------------------------------------------------- keys that see in-place edits (item 5)


def _rewrite_same_size(path: str, old: bytes, new: bytes) -> None:
    """Edit ``path`` in place (same inode, same size) and put its mtime back, as ``touch -r`` would."""
    info = os.stat(path)
    data = Path(path).read_bytes()
    assert len(old) == len(new) and old in data and old != new
    deadline = time.monotonic() + 3
    while os.stat(path).st_ctime_ns == info.st_ctime_ns and time.monotonic() < deadline:
        time.sleep(0.01)
        with open(path, "r+b") as handle:  # same inode
            handle.write(data.replace(old, new))
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (info.st_size, info.st_mtime_ns, info.st_ino)
    assert after.st_ctime_ns != info.st_ctime_ns


def test_same_size_edit_with_the_mtime_put_back_is_read_again(tmp_path: Path, cache_dir: Path) -> None:
    compression: Compression = "none"
    root = _corpus(tmp_path / "corpus", compression)
    store = FactsCache.load(root, compression)
    _read_all(store, discover(root, compression).files, compression)
    store.save()
    target = next(f for f in discover(root, compression).files if f.session_dir == "c1")
    # the same log with the label "Task 1" (the same size)
    donor_root = _corpus(tmp_path / "donor", compression, label="Task")
    donor = next(f for f in discover(donor_root, compression).files if f.session_dir == "c1")
    _rewrite_same_size(target.path, Path(target.path).read_bytes(), Path(donor.path).read_bytes())
    now = next(f for f in discover(root, compression).files if f.session_dir == "c1")
    warm = FactsCache.load(root, compression)
    facts = _read_all(warm, [now], compression)[0]
    assert warm.misses == 1 and facts.identity_label == "Task 1"


def test_cp_p_over_a_cached_log_is_read_again(tmp_path: Path, cache_dir: Path) -> None:
    root = _corpus(tmp_path / "corpus")
    store = FactsCache.load(root, "none")
    _read_all(store, discover(root, "none").files, "none")
    store.save()
    target = next(f for f in discover(root, "none").files if f.session_dir == "c2")
    source = tmp_path / "elsewhere.jsonl"
    source.write_bytes(Path(target.path).read_bytes().replace(b"task 2", b"task Y"))
    os.utime(source, ns=(target.mtime_ns, target.mtime_ns))  # the copy's mtime equals the cached one
    time.sleep(0.02)
    shutil.copy2(source, target.path)  # cp -p: same inode (truncated and rewritten), mtime copied
    now = next(f for f in discover(root, "none").files if f.session_dir == "c2")
    assert (now.size, now.mtime_ns, now.inode) == (target.size, target.mtime_ns, target.inode)
    assert now.ctime_ns != target.ctime_ns
    warm = FactsCache.load(root, "none")
    facts = _read_all(warm, [now], "none")[0]
    assert warm.misses == 1 and facts.identity_label == "task Y"


# --------------------------------------------------------------------------- the MAC (a forged but well-typed verdict)


def _forged_ok(blob: bytes, size: int) -> bytes:
    """A well-typed record claiming a healthy read of a log the reader refused."""
    facts = load_facts(blob, size=size)
    facts.verdict, facts.read_cause, facts.read_message, facts.read_line = "ok", None, None, None
    forged = dump_facts(facts)
    assert forged is not None and load_facts(forged).verdict == "ok"
    return forged


def test_a_cache_file_without_the_key_is_ignored(tmp_path: Path, cache_dir: Path) -> None:
    root = tmp_path / "corpus"
    write_session(root, header("bad", created_at=1), [{"seq": 0, "type": "no/such-event", "time": 1}], "none")
    files = discover(root, "none").files
    store = FactsCache.load(root, "none")
    (fresh,) = _read_all(store, files, "none")
    assert fresh.verdict == "failed"
    store.save()
    entry = store._entries[store._key(files[0])]
    forged = (*entry[:5], _forged_ok(entry[5], files[0].size))
    for key in (b"\0" * 32, os.urandom(32)):  # an attacker without the key
        cache_module._write_cache_file(store.path, {store._key(files[0]): forged}, str(root), "none", key)
        tampered = FactsCache.load(root, "none")
        assert tampered.status == "ignored: the cache file's MAC does not match this directory's key"
        assert _read_all(tampered, files, "none") == [fresh]
    # a byte flipped anywhere after the magic
    store.save()
    data = bytearray(Path(store.path).read_bytes())
    data[-10] ^= 1
    Path(store.path).write_bytes(bytes(data))
    assert FactsCache.load(root, "none").status.startswith("ignored: the cache file's MAC")


def test_a_cache_file_copied_from_another_cache_directory_is_ignored(tmp_path: Path, cache_dir: Path) -> None:
    root = _corpus(tmp_path / "corpus")
    files = discover(root, "none").files
    elsewhere = tmp_path / "other-cache"
    theirs = FactsCache.load(root, "none", directory=str(elsewhere))
    _read_all(theirs, files, "none")
    copied = theirs.save()
    assert copied is not None
    mine = FactsCache.load(root, "none")
    _read_all(mine, files, "none")
    mine.save()  # this directory now has its own key
    shutil.copy2(copied, mine.path)
    assert FactsCache.load(root, "none").status.startswith("ignored: the cache file's MAC")
    assert (elsewhere / "facts.key").read_bytes() != (cache_dir / "facts.key").read_bytes()


def test_an_untrustworthy_key_file_disables_the_cache(tmp_path: Path, cache_dir: Path) -> None:
    root = _corpus(tmp_path / "corpus")
    files = discover(root, "none").files
    store = FactsCache.load(root, "none")
    _read_all(store, files, "none")
    store.save()
    key = cache_dir / "facts.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    key.chmod(0o644)
    loose = FactsCache.load(root, "none")
    assert loose.status == "ignored: the cache key is readable or writable by others" and not loose.writable
    assert _read_all(loose, files, "none") and loose.save() is None
    key.chmod(0o600)
    key.write_bytes(b"short")
    assert FactsCache.load(root, "none").status == "ignored: the cache key file does not hold one key"
    key.unlink()
    os.symlink(tmp_path / "somewhere", key)
    assert FactsCache.load(root, "none").status.startswith("ignored: the cache key cannot be opened")
    key.unlink()
    assert FactsCache.load(root, "none").status == "ignored: no cache key in this directory"


def test_cache_entries_are_bounded(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _corpus(tmp_path / "corpus")
    files = discover(root, "none").files
    store = FactsCache.load(root, "none")
    _read_all(store, files, "none")
    monkeypatch.setattr(cache_module, "MAX_CACHE_ENTRIES", 3)
    store.save()
    assert len(FactsCache.load(root, "none")) == 3  # the rest are misses next time
    monkeypatch.setattr(cache_module, "MAX_CACHE_ENTRIES", 2)
    assert FactsCache.load(root, "none").status == "ignored: more than 2 entries"
    monkeypatch.setattr(cache_module, "MAX_CACHE_FILE_BYTES", 100)
    assert FactsCache.load(root, "none").status == "ignored: the cache file is larger than 100 bytes"


def test_the_file_is_written_a_batch_of_records_at_a_time(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42 item 11: each batch's columns are built and compressed alone (never a copy of every record)."""
    import pyarrow as pa

    root = _corpus(tmp_path / "corpus")
    files = discover(root, "none").files
    store = FactsCache.load(root, "none")
    fresh = _read_all(store, files, "none")
    monkeypatch.setattr(cache_module, "WRITE_BATCH", 3)
    written = store.save()
    assert written is not None
    body = memoryview(Path(written).read_bytes())[len(cache_module._MAGIC) + cache_module._MAC_BYTES :]
    assert pa.ipc.open_file(pa.py_buffer(body)).num_record_batches == 2  # 4 records, 3 a batch
    again = FactsCache.load(root, "none")
    assert again.status == "loaded" and len(again) == 4
    assert _read_all(again, files, "none") == fresh and again.hits == 4
