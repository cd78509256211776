"""The assembled-frames cache: a warm read over an unchanged walk reuses the frames, anything else is a miss."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from subagent_catalog import CatalogError, catalog, read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.discover import discover
from subagent_catalog.store import codec, frames_cache
from subagent_catalog.store.frames_cache import FramesCache, frames_file
from tests.helpers import base_tree, header, healthy, tree_hash, write_session

LOG = Path("_no-cwd") / "c-x" / "session.jsonl"


def _frames_equal(a: Corpus, b: Corpus) -> None:
    assert a.sessions.equals(b.sessions)
    assert a.descriptors.equals(b.descriptors)
    assert a.problems.equals(b.problems)
    assert (a.listing_error, a.listing_error_path) == (b.listing_error, b.listing_error_path)
    assert a.log_sources() == b.log_sources()


def _decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count facts records decoded (a frames-cache hit decodes none)."""
    calls: list[int] = []
    original = codec.load_facts

    def spy(blob: bytes, *, size: int | None = None):  # type: ignore[no-untyped-def]
        calls.append(1)
        return original(blob, size=size)

    monkeypatch.setattr("subagent_catalog.store.cache.load_facts", spy)
    return calls


def _listing(corpus: Corpus) -> pl.DataFrame | str:
    """The catalog, or the message of the listing failure (a renamed log fails upstream's listing)."""
    try:
        return catalog(corpus)
    except CatalogError as error:
        return error.message


def _same_listing(a: Corpus, b: Corpus) -> bool:
    x, y = _listing(a), _listing(b)
    return x.equals(y) if isinstance(x, pl.DataFrame) and isinstance(y, pl.DataFrame) else x == y


def _warm(root: Path, cache: Path) -> Corpus:
    return read_corpus(root, compression="none", cache=cache, jobs=1)


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    root, cache = tmp_path / "corpus", tmp_path / "cache"
    base_tree(root, "none")
    return root, cache


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_warm_read_reuses_the_frames_and_the_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str
) -> None:
    root, cache = tmp_path / "corpus", tmp_path / "cache"
    base_tree(root, compression)  # type: ignore[arg-type]
    before = tree_hash(root)
    cold = read_corpus(root, compression=compression, cache=cache, jobs=1)  # type: ignore[arg-type]
    listing = catalog(cold)
    decodes = _decodes(monkeypatch)
    warm = read_corpus(root, compression=compression, cache=cache, jobs=1)  # type: ignore[arg-type]
    assert decodes == [] and warm._derived.status == "loaded"  # type: ignore[attr-defined]
    _frames_equal(warm, read_corpus(root, compression=compression, cache=False, jobs=1))  # type: ignore[arg-type]
    assert catalog(warm).equals(listing)
    assert tree_hash(root) == before
    assert os.path.exists(frames_file(root, compression, directory=str(cache)))  # type: ignore[arg-type]


def _touch(root: Path) -> None:
    info = os.stat(root / LOG)
    os.utime(root / LOG, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))


def _edit(root: Path) -> None:
    with open(root / LOG, "ab") as handle:
        handle.write(b"garbage without newline")


def _add(root: Path) -> None:
    write_session(root, header("new", created_at=9, parent="P", subagent=True), healthy("new"), "none")


def _remove(root: Path) -> None:
    shutil.rmtree(root / LOG.parent)


def _rename(root: Path) -> None:
    os.rename(root / LOG.parent, root / "_no-cwd" / "c-renamed")


def _same_size_edit_mtime_put_back(root: Path) -> None:
    path = root / LOG
    info = os.stat(path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"x"', b'"y"', 1))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


@pytest.mark.parametrize(
    "change", [_touch, _edit, _add, _remove, _rename, _same_size_edit_mtime_put_back], ids=lambda f: f.__name__[1:]
)
def test_any_change_to_one_log_is_a_miss_and_gives_a_fresh_read(
    corpus: tuple[Path, Path], change: Callable[[Path], None]
) -> None:
    root, cache = corpus
    catalog(_warm(root, cache))
    change(root)
    warm = _warm(root, cache)
    assert warm._derived.status == "stale"  # type: ignore[attr-defined]
    fresh = read_corpus(root, compression="none", cache=False, jobs=1)
    _frames_equal(warm, fresh)
    assert _same_listing(warm, fresh)
    again = _warm(root, cache)  # the new frames were cached
    assert again._derived.status == "loaded"  # type: ignore[attr-defined]
    _frames_equal(again, fresh)
    assert _same_listing(again, fresh)


def test_a_changed_project_listing_is_a_miss(corpus: tuple[Path, Path]) -> None:
    root, cache = corpus
    _warm(root, cache)
    (root / "_no-cwd" / "stray.txt").write_bytes(b"x")
    warm = _warm(root, cache)
    assert warm._derived.status == "stale"  # type: ignore[attr-defined]
    _frames_equal(warm, read_corpus(root, compression="none", cache=False, jobs=1))


def test_a_filesystem_answer_outside_the_walk_is_asked_again(tmp_path: Path, corpus: tuple[Path, Path]) -> None:
    """A symlinked directory named like a listed id: whether it holds a log is not in the walk."""
    root, cache = corpus
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "other-project").mkdir()
    os.symlink(outside, root / "other-project" / "c-ok")
    first = _warm(root, cache)
    assert first.sessions.filter(pl.col("session_id") == "c-ok")["lookup_error"].item() is None
    (outside / "session.jsonl").write_bytes(b"{}\n")
    warm = _warm(root, cache)
    assert warm._derived.status.startswith("stale")  # type: ignore[attr-defined]
    assert "duplicate" in warm.sessions.filter(pl.col("session_id") == "c-ok")["lookup_error"].item()
    _frames_equal(warm, read_corpus(root, compression="none", cache=False, jobs=1))


def _damage(path: str, how: str) -> None:
    data = Path(path).read_bytes()
    if how == "flip":
        data = data[:-100] + bytes([data[-100] ^ 1]) + data[-99:]
    elif how == "truncate":
        data = data[: len(data) // 2]
    elif how == "magic":
        data = b"X" + data[1:]
    elif how == "empty":
        data = b""
    with open(path, "wb") as handle:
        handle.write(data)


@pytest.mark.parametrize("how", ["flip", "truncate", "magic", "empty"])
def test_a_damaged_frames_file_is_a_miss(corpus: tuple[Path, Path], how: str) -> None:
    root, cache = corpus
    _warm(root, cache)
    _damage(frames_file(root, "none", directory=str(cache)), how)
    warm = _warm(root, cache)
    assert warm._derived.status.startswith("ignored")  # type: ignore[attr-defined]
    _frames_equal(warm, read_corpus(root, compression="none", cache=False, jobs=1))
    assert _warm(root, cache)._derived.status == "loaded"  # type: ignore[attr-defined]  # replaced


def test_a_frames_file_from_another_cache_directory_or_without_the_key_is_ignored(
    tmp_path: Path, corpus: tuple[Path, Path]
) -> None:
    root, cache = corpus
    other = tmp_path / "other-cache"
    _warm(root, other)
    _warm(root, cache)
    shutil.copy(frames_file(root, "none", directory=str(other)), frames_file(root, "none", directory=str(cache)))
    assert _warm(root, cache)._derived.status.endswith("does not match this directory's key")  # type: ignore[attr-defined]
    os.unlink(cache / "facts.key")
    assert _warm(root, cache)._derived.status == "ignored: no cache key in this directory"  # type: ignore[attr-defined]


def test_a_facts_cache_file_planted_as_the_frames_file_is_ignored(corpus: tuple[Path, Path]) -> None:
    root, cache = corpus
    _warm(root, cache)
    facts = [name for name in os.listdir(cache) if name.startswith("facts-")]
    shutil.copy(cache / facts[0], frames_file(root, "none", directory=str(cache)))
    assert _warm(root, cache)._derived.status.startswith("ignored")  # type: ignore[attr-defined]


def _resign(path: str, key: bytes, body: bytes) -> None:
    mac = hmac.new(key, frames_cache._MAGIC, hashlib.sha256)
    mac.update(body)
    with open(path, "wb") as handle:
        handle.write(frames_cache._MAGIC + mac.digest() + body)


def test_a_signed_file_with_another_schema_or_bad_header_is_a_miss(corpus: tuple[Path, Path]) -> None:
    """Even a file with a valid MAC (written by this user's code) is checked before it is used."""
    root, cache = corpus
    first = _warm(root, cache)
    path = frames_file(root, "none", directory=str(cache))
    key = (cache / "facts.key").read_bytes()
    store: FramesCache = first._derived  # type: ignore[attr-defined]
    head = {**store._head}
    frames = {**store._frames, "sessions": first.sessions.with_columns(pl.col("bytes").cast(pl.Float64))}
    _resign(path, key, frames_cache._pack(head, frames))
    assert _warm(root, cache)._derived.status == "ignored: the cached sessions frame has another schema"  # type: ignore[attr-defined]
    _resign(path, key, frames_cache._pack({**head, "listing_error": 5}, store._frames))
    assert _warm(root, cache)._derived.status.startswith("ignored: unreadable")  # type: ignore[attr-defined]
    _resign(path, key, b"\xff" * 8 + b"{}")
    assert _warm(root, cache)._derived.status.startswith("ignored: unreadable")  # type: ignore[attr-defined]
    _frames_equal(_warm(root, cache), read_corpus(root, compression="none", cache=False, jobs=1))


def test_the_frames_file_is_size_capped(corpus: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, cache = corpus
    _warm(root, cache)
    monkeypatch.setattr(frames_cache, "MAX_FRAMES_FILE_BYTES", 1000)
    store = FramesCache(discover(root, "none"), directory=str(cache))
    assert store.load() is None and store.status.startswith("ignored: the frames cache is larger")
    os.unlink(frames_file(root, "none", directory=str(cache)))
    assert _warm(root, cache)._derived.status.startswith("not saved")  # type: ignore[attr-defined]
    assert not os.path.exists(frames_file(root, "none", directory=str(cache)))


def test_never_written_inside_the_corpus(corpus: tuple[Path, Path]) -> None:
    root, _ = corpus
    before = tree_hash(root)
    inside = root / "_no-cwd" / "c-x" / "cache"
    first = read_corpus(root, compression="none", cache=inside, jobs=1)
    assert not hasattr(first, "_derived")
    assert FramesCache(discover(root, "none"), directory=str(inside)).status.endswith("inside the corpus")
    catalog(first)
    assert not inside.exists() and tree_hash(root) == before


def test_the_catalog_is_not_reused_for_other_frames_or_a_live_map(corpus: tuple[Path, Path]) -> None:
    root, cache = corpus
    warm = _warm(root, cache)
    full = catalog(warm)
    catalog(_warm(root, cache))
    warm = _warm(root, cache)
    warm.sessions = warm.sessions.filter(pl.col("session_id") != "c-ok")
    assert catalog(warm).height == full.height - 1
    live = {"c-ok": "running"}
    assert catalog(_warm(root, cache), live=live).equals(catalog(read_corpus(root, cache=False), live=live))
    assert catalog(_warm(root, cache), semantics="trace").equals(
        catalog(read_corpus(root, compression="none", cache=False, jobs=1), semantics="trace")
    )


def test_a_root_spelled_differently_gets_its_own_paths(corpus: tuple[Path, Path]) -> None:
    root, cache = corpus
    _warm(root, cache)
    spelled = Path(str(root) + "/")
    warm = read_corpus(spelled, compression="none", cache=cache, jobs=1)
    _frames_equal(warm, read_corpus(spelled, compression="none", cache=False, jobs=1))


def test_events_reads_still_read_the_logs(corpus: tuple[Path, Path]) -> None:
    root, cache = corpus
    _warm(root, cache)
    with_events = read_corpus(root, compression="none", cache=cache, events=True, jobs=1)
    assert with_events._events is not None and with_events._events.height > 0
    _frames_equal(with_events, _warm(root, cache))


def test_the_fingerprint_covers_the_walk(corpus: tuple[Path, Path]) -> None:
    root, _ = corpus
    a = FramesCache(discover(root, "none"), directory="/nonexistent").fingerprint
    _touch(root)
    assert FramesCache(discover(root, "none"), directory="/nonexistent").fingerprint != a


def test_the_file_is_written_a_slice_at_a_time_and_holds_the_same_frames(
    corpus: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42 item 11: neither the body nor a frame's IPC bytes are held whole (a 20,000-session
    corpus's sessions frame is 30 MB; the body was copied four times, about 200 MB at once)."""
    root, cache = corpus
    monkeypatch.setattr(frames_cache, "_ipc", lambda frame: pytest.fail("a frame's IPC bytes held whole"))
    monkeypatch.setattr(frames_cache, "_pack", lambda head, frames: pytest.fail("the body held whole"))
    monkeypatch.setattr(frames_cache, "SLICE_ROWS", 2)
    first = _warm(root, cache)
    listing = catalog(first)  # a derived frame: the file is written again with it
    monkeypatch.undo()
    data = Path(frames_file(root, "none", directory=str(cache))).read_bytes()
    body = memoryview(data)[len(frames_cache._MAGIC) + frames_cache._MAC_BYTES :]
    (length,) = struct.unpack_from("<Q", body)
    offset, batches = 8 + length, {}
    for name, size in json.loads(bytes(body[8:offset]))["frames"]:
        batches[name] = pa.ipc.open_file(pa.py_buffer(body[offset : offset + size])).num_record_batches
        offset += size
    assert offset == len(body)
    assert batches["sessions"] == -(-first.sessions.height // 2) > 1  # written two rows at a time
    assert set(batches) == {"sessions", "descriptors", "problems", "catalog:projection"}
    warm = _warm(root, cache)
    assert warm._derived.status == "loaded"  # type: ignore[attr-defined]
    _frames_equal(warm, first)
    _frames_equal(warm, read_corpus(root, compression="none", cache=False, jobs=1))
    loaded = warm._derived.get("catalog:projection", dict(listing.schema), warm)  # type: ignore[attr-defined]
    assert loaded is not None and loaded.equals(listing)


def test_a_frame_whose_size_changes_between_the_two_writes_is_not_saved(
    corpus: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, cache = corpus
    put = frames_cache._IpcSink.put
    calls: list[int] = []

    def drifting(self: frames_cache._IpcSink, frame: pl.DataFrame) -> int:
        calls.append(1)
        return put(self, frame) + (len(calls) > 3)  # the second write of the first frame differs

    monkeypatch.setattr(frames_cache._IpcSink, "put", drifting)
    first = _warm(root, cache)
    assert first._derived.status == "not saved: the sessions frame's IPC size changed between two writes"  # type: ignore[attr-defined]
    assert not os.path.exists(frames_file(root, "none", directory=str(cache)))
    assert not [name for name in os.listdir(cache) if name.startswith(".frames-")]  # no temp file left
