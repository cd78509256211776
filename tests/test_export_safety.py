"""Archive export never destroys data: hostile targets, planted files and links, tampered manifests, races.

Each test names the finding it guards (reliability round 2, items 1, 2, 4, 5
and 7). The invariant throughout: no corpus byte and no foreign byte changes,
and a refused export is one ``SubagentCatalogError`` line.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.outputs import OutputError
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.store.layout import ArchiveError
from subagent_catalog.store.location import Location
from tests.helpers import base_tree, tree_hash


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    base_tree(root, "none")
    return root


def _manifest_files(out: Path) -> list[str]:
    manifest = json.loads((out / "manifest.json").read_text())
    tables = manifest["tables"]
    return [name for entry in (*tables.values(), manifest["fingerprints"]) for name in entry["files"]]


def _sessions(out: Path) -> list[str]:
    return sorted(open_archive(out).to_corpus().sessions["session_id"].to_list())


# --------------------------------------------------------------------------- item 1: data loss


def test_corpus_root_inside_the_output_is_refused_and_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    root = out / "gen-000001"  # the corpus root looks like an old generation of an archive
    base_tree(root, "none")
    before = tree_hash(root)
    with pytest.raises(ArchiveError, match="lies inside the archive target"):
        export_archive(root, out, jobs=1)
    assert tree_hash(root) == before
    result = CliRunner().invoke(main, ["export", str(root), str(out)])
    assert result.exit_code == 1 and "lies inside the archive target" in result.output
    assert tree_hash(root) == before


def test_corpus_root_equal_to_the_output_is_refused(corpus: Path) -> None:
    before = tree_hash(corpus)
    with pytest.raises(ArchiveError):
        export_archive(corpus, corpus, jobs=1)
    assert tree_hash(corpus) == before and sorted(os.listdir(corpus)) == sorted(os.listdir(corpus))


def test_a_directory_of_generation_names_without_manifest_is_foreign(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "gen-000001").mkdir(parents=True)
    (out / "gen-000001" / "thesis.tex").write_text("years of work")
    with pytest.raises(ArchiveError, match="without an archive manifest"):
        export_archive(corpus, out, jobs=1)
    assert (out / "gen-000001" / "thesis.tex").read_text() == "years of work"
    assert sorted(os.listdir(out)) == ["gen-000001"]  # not even a lock file was created


def test_foreign_data_in_a_generation_named_directory_survives_exports(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_archive(corpus, out, jobs=1)
    (out / "gen-000007").mkdir()
    (out / "gen-000007" / "notes.txt").write_text("keep")
    (out / "gen-000001" / "mine.txt").write_text("also keep")  # foreign file inside our own generation
    second = export_archive(corpus, out, jobs=1)
    third = export_archive(corpus, out, jobs=1)
    assert (second["generation"], third["generation"]) == (8, 9)  # never reuses an existing directory name
    assert (out / "gen-000007" / "notes.txt").read_text() == "keep"
    assert (out / "gen-000001" / "mine.txt").read_text() == "also keep"
    assert sorted(p.name for p in (out / "gen-000001").iterdir()) == ["mine.txt"]  # our files went, theirs stayed
    assert not (out / "gen-000008").exists()
    assert all((out / name).is_file() for name in _manifest_files(out))


def test_an_interrupted_export_leaves_only_marked_staging_which_is_never_deleted(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = (
        "import os, sys\n"
        "from subagent_catalog.store import export\n"
        "real = export._export\n"
        "def dying(*args, **kwargs):\n"
        "    real(*args, **kwargs)\n"
        "    os._exit(9)  # killed after writing parts, before the manifest\n"
        "export._export = dying\n"
        f"export.export_archive({str(corpus)!r}, {str(out)!r}, jobs=1)\n"
    )
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert killed.returncode == 9
    assert not (out / "manifest.json").exists()  # nothing looks complete
    assert (out / "gen-000001" / ".staging").is_file()
    manifest = export_archive(corpus, out, jobs=1)  # a staging directory of ours is not foreign
    assert manifest["generation"] == 2 and manifest["update"]["stale_staging"] == ["gen-000001"]
    assert (out / "gen-000001").is_dir() and _sessions(out) == ["P", "c-ok", "c-x", "g-below-x"]
    assert not (out / "gen-000002" / ".staging").exists()


# --------------------------------------------------------------------------- item 2: writes through links


def test_a_planted_manifest_temp_symlink_is_never_written_through(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_archive(corpus, out, jobs=1)
    victim = next(corpus.rglob("session.jsonl"))
    before = tree_hash(corpus)
    os.symlink(victim, out / "manifest.json.tmp")
    export_archive(corpus, out, jobs=1, incremental=False)
    assert tree_hash(corpus) == before
    assert os.path.islink(out / "manifest.json.tmp")  # a file we did not create is left alone


def test_a_manifest_hard_linked_to_a_corpus_log_is_refused(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    log = next(corpus.rglob("session.jsonl"))
    os.link(log, out / "manifest.json")
    before = tree_hash(corpus)
    with pytest.raises(ArchiveError, match=r"not valid JSON|not a subagent_catalog"):
        export_archive(corpus, out, jobs=1)
    assert tree_hash(corpus) == before


def test_a_planted_lock_symlink_is_refused(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_archive(corpus, out, jobs=1)
    (out / ".lock").unlink()
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("untouched")
    os.symlink(elsewhere, out / ".lock")
    with pytest.raises(OutputError, match="cannot create the archive"):
        export_archive(corpus, out, jobs=1)
    assert elsewhere.read_text() == "untouched" and _sessions(out) == ["P", "c-ok", "c-x", "g-below-x"]


def test_an_output_inside_the_corpus_through_a_symlink_is_refused(corpus: Path, tmp_path: Path) -> None:
    os.symlink(corpus, tmp_path / "alias")
    before = tree_hash(corpus)
    with pytest.raises(ArchiveError, match="inside the corpus root"):
        export_archive(corpus, tmp_path / "alias" / "archive", jobs=1)
    assert tree_hash(corpus) == before and not (corpus / "archive").exists()


@contextlib.contextmanager
def _bind_mount(source: Path, target: Path) -> Iterator[bool]:
    target.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", str(target)], check=True)


def test_an_output_inside_the_corpus_through_a_bind_mount_is_refused(corpus: Path, tmp_path: Path) -> None:
    with _bind_mount(corpus, tmp_path / "mnt") as mounted:
        if not mounted:  # not root: the same device+inode rule is checked through a symlink above
            pytest.skip("bind mounts need CAP_SYS_ADMIN")
        before = tree_hash(corpus)
        with pytest.raises(ArchiveError, match="inside the corpus root"):
            export_archive(corpus, tmp_path / "mnt" / "archive", jobs=1)
        result = CliRunner().invoke(
            main, ["list", str(corpus), "P", "--format", "csv", "-o", str(tmp_path / "mnt/x.csv")]
        )
        assert result.exit_code == 1 and "inside the corpus" in result.output
        assert tree_hash(corpus) == before


# --------------------------------------------------------------------------- items 4 and 5: tampering, races, keys


def _tamper(out: Path, edit: object) -> None:
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    assert callable(edit)
    edit(manifest)
    path.write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("name", "edit", "message"),
    [
        ("dotdot", lambda m: m["tables"]["sessions"]["files"].append("../other/x.parquet"), "not a sessions file"),
        ("glob", lambda m: m["tables"]["sessions"]["files"].__setitem__(0, "gen-000001/**"), "not a sessions file"),
        ("absolute", lambda m: m["fingerprints"]["files"].append("/etc/passwd"), "not a facts file"),
        (
            "other-gen",
            lambda m: m["tables"]["problems"]["files"].append("gen-000002/problems/project_dir=x/part-000000.parquet"),
            "not a problems file",
        ),
        ("ill-typed", lambda m: m.__setitem__("generation", "1"), "generation"),
        ("missing", lambda m: m.pop("tables"), "tables"),
        ("bad-data-dir", lambda m: m.__setitem__("data_dir", "../x"), "generation directory"),
    ],
)
def test_a_tampered_manifest_is_one_archive_error(
    corpus: Path, tmp_path: Path, name: str, edit: object, message: str
) -> None:
    out = tmp_path / "out"
    export_archive(corpus, out, jobs=1)
    _tamper(out, edit)
    outside = tmp_path / "other"
    outside.mkdir()
    (outside / "x.parquet").write_bytes(b"keep")
    with pytest.raises(ArchiveError, match=message):
        open_archive(out)
    with pytest.raises(ArchiveError, match=message):
        export_archive(corpus, out, jobs=1)
    assert (outside / "x.parquet").read_bytes() == b"keep" and (out / "gen-000001").is_dir()


def test_a_truncated_manifest_is_one_line_from_open_and_the_cli(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_archive(corpus, out, jobs=1)
    text = (out / "manifest.json").read_text()
    (out / "manifest.json").write_text(text[: len(text) // 2])
    with pytest.raises(ArchiveError, match="not valid JSON"):
        open_archive(out)
    result = CliRunner().invoke(main, ["export", str(corpus), str(out)])
    assert result.exit_code == 1 and "not valid JSON" in result.output and "Traceback" not in result.output


def test_a_damaged_data_file_is_one_archive_error(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_archive(corpus, out, jobs=1)
    part = out / json.loads((out / "manifest.json").read_text())["tables"]["sessions"]["files"][0]
    part.write_bytes(b"PAR1 not really")
    with pytest.raises(ArchiveError, match=r"archive data file .* is 15 bytes, its manifest says") as raised:
        open_archive(out).to_corpus()
    assert str(part) in str(raised.value)  # the file is named
    manifest = json.loads((out / "manifest.json").read_text())  # as an export before the per-file sizes wrote it
    for entry in manifest["tables"].values():
        entry.pop("file_bytes", None)
        entry.pop("file_blake2b", None)
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArchiveError, match="is not a readable Parquet file") as raised:
        open_archive(out).to_corpus()
    assert str(part) in str(raised.value)


def test_archive_paths_with_glob_characters_are_literal(corpus: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    base_tree(other, "zstd")
    (other / "extra").mkdir()
    export_archive(corpus, tmp_path / "arch1", jobs=1)
    export_archive(other, tmp_path / "arch[1]", jobs=1)
    assert open_archive(tmp_path / "arch[1]").root == str(other)
    assert open_archive(tmp_path / "arch[1]").to_corpus().compression == "zstd"
    assert open_archive(tmp_path / "arch[1]").to_corpus().sessions["path"].str.contains("/other/").all()
    export_archive(other, tmp_path / "arch[1]", jobs=1)  # incremental re-export reads its own facts
    assert open_archive(tmp_path / "arch[1]").manifest["update"]["files_read"] == 0


def test_overlapping_exports_take_turns(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_archive(corpus, out, jobs=1)
    with open(out / ".lock", "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        with pytest.raises(ArchiveError, match="another export is writing"):
            export_archive(corpus, out, jobs=1)
    script = (
        "from subagent_catalog.store.export import export_archive\n"
        f"export_archive({str(corpus)!r}, {str(out)!r}, jobs=1, incremental=False)"
    )
    runs = [subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outcomes = [(run.wait(timeout=120), run.stderr.read() if run.stderr else "") for run in runs]
    assert all(code == 0 or "another export is writing" in err for code, err in outcomes), outcomes
    assert any(code == 0 for code, _ in outcomes)
    assert all((out / name).is_file() for name in _manifest_files(out))  # the manifest names only live files
    assert _sessions(out) == ["P", "c-ok", "c-x", "g-below-x"]


def test_a_same_size_edit_with_the_mtime_restored_is_read_again(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_archive(corpus, out, jobs=1)
    log = corpus / next(p for p in os.listdir(corpus)) / "c-ok" / "session.jsonl"
    data = log.read_bytes()
    info = log.stat()
    edited = data.replace(b'"ok"', b'"OK"')
    assert edited != data and len(edited) == len(data)
    log.write_bytes(edited)
    os.utime(log, ns=(info.st_atime_ns, info.st_mtime_ns))  # touch -r
    manifest = export_archive(corpus, out, jobs=1)
    assert manifest["update"]["files_read"] == 1
    labels = open_archive(out).to_corpus().descriptors["label"].to_list()
    assert "OK" in labels and labels == read_corpus(corpus, cache=False).descriptors["label"].to_list()
    copy = tmp_path / "copy.jsonl"
    shutil.copy2(log, copy)  # cp -p of an edited file over the log keeps the mtime, not the inode
    log.write_bytes(data)
    os.utime(log, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert export_archive(corpus, out, jobs=1)["update"]["files_read"] == 1
    assert "ok" in open_archive(out).to_corpus().descriptors["label"].to_list()


def test_a_tampered_facts_record_is_a_miss(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_archive(corpus, out, jobs=1)
    manifest = json.loads((out / "manifest.json").read_text())
    for name in manifest["fingerprints"]["files"]:
        frame = pl.read_parquet(out / name)
        frame.with_columns(pl.lit(b"\x80\x05garbage").alias("facts")).write_parquet(out / name)
    del manifest["fingerprints"]["file_bytes"]  # the sizes and digests a tamperer would also fix, or an older
    del manifest["fingerprints"]["file_blake2b"]  # export's
    (out / "manifest.json").write_text(json.dumps(manifest))
    manifest = export_archive(corpus, out, jobs=1)
    assert manifest["update"]["files_read"] == 4 and manifest["update"]["damaged_facts"] == 4
    assert _sessions(out) == ["P", "c-ok", "c-x", "g-below-x"]


def test_an_old_generation_behind_a_symlink_is_not_deleted_through(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_archive(corpus, out, jobs=1)
    decoy = tmp_path / "decoy"
    shutil.copytree(out / "gen-000001", decoy)
    shutil.rmtree(out / "gen-000001")
    os.symlink(decoy, out / "gen-000001")
    before = tree_hash(decoy)
    export_archive(corpus, out, jobs=1)
    assert tree_hash(decoy) == before


def test_an_unreachable_object_store_is_one_line_and_nothing_is_written_locally(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    options = {"aws_endpoint_url": "http://127.0.0.1:9", "aws_region": "us-east-1"}  # nothing listens on port 9
    options |= {"aws_access_key_id": "k", "aws_secret_access_key": "s"}
    with pytest.raises(ArchiveError, match=r"^cannot read 's3://bucket/x/manifest.json': .* \(hint: ") as caught:
        export_archive(corpus, "s3://bucket/x", jobs=1, storage_options=options)
    assert "\n" not in str(caught.value)
    assert sorted(os.listdir(tmp_path)) == before  # never a local 's3:' directory


def test_unknown_storage_options_are_refused_before_any_work(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="storage option 'aws_endpoint_uri' is not one this package understands"):
        export_archive(corpus, "s3://bucket/x", storage_options={"aws_endpoint_uri": "http://127.0.0.1:9"})


# --------------------------------------------------------------------------- item 7: output failures are one line


def test_export_into_proc_is_one_line(corpus: Path) -> None:
    result = CliRunner().invoke(main, ["export", str(corpus), "/proc/subagent-catalog-test/archive"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "cannot create the archive" in result.output


@contextlib.contextmanager
def _small_filesystem(path: Path, size: str) -> Iterator[bool]:
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", str(path)], check=True)


def test_a_full_disk_during_export_keeps_the_previous_generation(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _small_filesystem(tmp_path / "small", "256k") as mounted:
        out = tmp_path / "small" / "out"
        export_archive(corpus, out, jobs=1)
        if mounted:
            filler = tmp_path / "small" / "filler"
            with contextlib.suppress(OSError), open(filler, "wb") as handle:
                while True:
                    handle.write(b"\0" * 4096)
                    handle.flush()
        else:  # without mount rights the full disk is simulated where the parts are written

            def full(self: Location, *args: object, **kwargs: object) -> None:
                raise OSError(errno.ENOSPC, "No space left on device")

            monkeypatch.setattr(Location, "write_new", full)
        before = sorted(os.listdir(out))
        with pytest.raises(OutputError, match="No space left on device") as caught:
            export_archive(corpus, out, jobs=1, incremental=False)
        assert "\n" not in str(caught.value)
        assert sorted(os.listdir(out)) == before  # no new generation visible, the old one kept
        assert _sessions(out) == ["P", "c-ok", "c-x", "g-below-x"]
