"""``subagent_catalog.outputs``: output files are written whole, never into a corpus, never through a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from subagent_catalog.outputs import OutputError, check_output, inside, open_output, write_output


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "proj" / "s1").mkdir(parents=True)
    (root / "proj" / "s1" / "session.jsonl").write_bytes(b"log bytes\n")
    return root


def test_inside_sees_through_symlinks_and_dotdot(corpus: Path, tmp_path: Path) -> None:
    os.symlink(corpus, tmp_path / "alias")
    assert inside(tmp_path / "alias" / "new" / "x.html", corpus)
    assert inside(corpus / "proj" / ".." / "x.html", corpus)
    assert not inside(tmp_path / "elsewhere" / "x.html", corpus)
    assert not inside(tmp_path, corpus)


def test_a_symlink_into_the_corpus_is_refused_without_suggesting_its_target(corpus: Path, tmp_path: Path) -> None:
    link = tmp_path / "out.csv"
    os.symlink(corpus / "proj" / "s1" / "session.jsonl", link)
    with pytest.raises(OutputError, match="symbolic link into the corpus") as caught:
        check_output(link, protected=[corpus])
    assert "session.jsonl" not in (caught.value.hint or "")


def test_a_symlink_elsewhere_is_refused_and_names_its_target(tmp_path: Path) -> None:
    (tmp_path / "real.html").write_text("old")
    os.symlink(tmp_path / "real.html", tmp_path / "link.html")
    with pytest.raises(OutputError, match="is a symbolic link") as caught:
        write_output(tmp_path / "link.html", "new")
    assert "real.html" in (caught.value.hint or "")
    assert (tmp_path / "real.html").read_text() == "old"


def test_a_dangling_symlink_is_refused(tmp_path: Path) -> None:
    os.symlink(tmp_path / "missing", tmp_path / "link.html")
    with pytest.raises(OutputError, match="dangling"):
        write_output(tmp_path / "link.html", "x")
    assert not (tmp_path / "missing").exists()


def test_a_hard_linked_file_is_refused_and_its_twin_kept(corpus: Path, tmp_path: Path) -> None:
    log = corpus / "proj" / "s1" / "session.jsonl"
    os.link(log, tmp_path / "report.html")
    with pytest.raises(OutputError, match="2 hard links"):
        write_output(tmp_path / "report.html", "<html>", protected=[corpus])
    assert log.read_bytes() == b"log bytes\n"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="is a directory"):
        write_output(tmp_path, "x")


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("previous")
    with pytest.raises(RuntimeError), open_output(target) as handle:
        handle.write("half")
        raise RuntimeError("renderer crashed")
    assert target.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_a_planted_temporary_name_is_never_opened(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    for name in (".report.html.tmp", "report.html.tmp"):
        os.symlink(victim, tmp_path / name)
    write_output(tmp_path / "report.html", "new")
    assert victim.read_text() == "keep" and (tmp_path / "report.html").read_text() == "new"


def test_the_new_file_has_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_output(tmp_path / "r.html", "x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "r.html").stat().st_mode) == 0o644


def test_a_character_device_is_written_in_place() -> None:
    write_output("/dev/null", b"discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_full_device_is_one_line() -> None:
    with pytest.raises(OutputError, match="No space left on device") as caught:
        write_output("/dev/full", "x" * 100_000)
    assert "\n" not in str(caught.value)


def test_a_missing_directory_is_one_line_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="No such file or directory") as caught:
        write_output(tmp_path / "no" / "x.html", "x")
    assert caught.value.hint and "create the directory" in caught.value.hint


def test_a_missing_directory_is_refused_by_the_check_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="No such file or directory"):
        check_output(tmp_path / "no" / "x.html")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="Not a directory"):
        check_output(tmp_path / "file" / "x.html")
