"""``subagent_catalog.outputs``: output files are written whole, never into a corpus, never through a link."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
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


# ------------------------------------------------------------------- output sites: show --tree (issue 42 item 6)


def _run_tree(tmp_path: Path, extra: Sequence[tuple[str, str | None]] = ()) -> Path:
    """A corpus: the run ``run`` and children (id, parent) given, each with one user message naming it."""
    from subagent_catalog.synth.writer import EventLog, header, write_session

    root = tmp_path / "corpus"
    for index, (sid, parent) in enumerate([("run", None), ("child-a", "run"), *extra]):
        log = EventLog(sid)
        log.turn_start()
        log.user(f"message of {sid}")
        log.turn_end()
        head = header(sid, created_at=1 + index, parent=parent, subagent=parent is not None)
        write_session(root, head, log.events, "none")
    return root


def _show_tree(root: Path, out: Path, top: str = "run") -> tuple[int, str]:
    from click.testing import CliRunner

    from subagent_catalog.cli import main

    done = CliRunner().invoke(main, ["show", str(root), top, "--tree", "-o", str(out), "--no-cache"])
    return done.exit_code, done.output


def test_show_tree_never_replaces_a_users_index_html(tmp_path: Path) -> None:
    """Issue 42 item 6: a subagent log with id ``index`` claiming the run overwrote the user's DIR/index.html."""
    root = _run_tree(tmp_path, [("index", "run")])
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("the user's own index")
    code, output = _show_tree(root, out)
    assert code == 1, output
    assert [line for line in output.splitlines() if line.startswith("Error:")] == [output.strip().splitlines()[-1]]
    assert "non-empty directory without the manifest.json" in output and "hint:" in output
    assert (out / "index.html").read_text() == "the user's own index" and os.listdir(out) == ["index.html"]


def test_a_rerun_replaces_only_its_own_pages_and_removes_its_stale_ones(tmp_path: Path) -> None:
    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.views.transcript_tree import write_tree_pages

    root = _run_tree(tmp_path, [("child-b", "run"), ("grandchild", "child-b")])
    out = tmp_path / "site"
    first = write_tree_pages(read_corpus(root, cache=False), "run", out)
    assert sorted(p.name for p in first.pages) == ["child-a.html", "child-b.html", "grandchild.html", "run.html"]
    (out / "notes.txt").write_text("mine")  # the user's file beside the pages: kept, never named
    (out / "child-a.html").write_text("edited by the user")  # a page the user changed: no longer ours
    second = write_tree_pages(read_corpus(root, cache=False), "child-b", out)
    assert sorted(p.name for p in second.pages) == ["child-b.html", "grandchild.html"]
    assert sorted(second.removed) == ["run.html"]  # ours and unchanged: removed; the edited page is kept
    assert sorted(os.listdir(out)) == [
        "child-a.html",
        "child-b.html",
        "grandchild.html",
        "index.html",
        "manifest.json",
        "notes.txt",
    ]
    assert (out / "child-a.html").read_text() == "edited by the user" and (out / "notes.txt").read_text() == "mine"
    import json

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] is True and sorted(manifest["files"]) == [
        "child-b.html",
        "grandchild.html",
        "index.html",
    ]
    code, output = _show_tree(root, out)  # the run again: child-a.html is the user's now
    assert code == 1 and "refusing to replace" in output and "child-a.html" in output
    assert (out / "child-a.html").read_text() == "edited by the user"


def test_a_file_of_a_page_name_is_refused_even_in_a_directory_with_a_manifest(tmp_path: Path) -> None:
    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.views.transcript_tree import write_tree_pages

    root = _run_tree(tmp_path)
    out = tmp_path / "site"
    write_tree_pages(read_corpus(root, cache=False), "child-a", out)
    for planted in ("file", "symlink", "fifo", "hard link"):
        target = out / "run.html"
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        if planted == "file":
            target.write_text("user")
        elif planted == "symlink":
            os.symlink(root / "run" / "session.jsonl", target)
        elif planted == "fifo":
            os.mkfifo(target)
        else:
            os.link(next(root.rglob("session.jsonl")), target)
        before = target.lstat()
        with pytest.raises(OutputError, match="did not write it"):
            write_tree_pages(read_corpus(root, cache=False), "run", out)
        after = target.lstat()
        assert (after.st_ino, after.st_mode, after.st_size) == (before.st_ino, before.st_mode, before.st_size), planted
    assert sorted(os.listdir(out)) == ["child-a.html", "index.html", "manifest.json", "run.html"]


@pytest.mark.parametrize(
    "damage",
    ["truncated", "not ours", "a path", "a foreign name", "a bad digest", "a symlink", "a fifo", "a directory", "huge"],
)
def test_a_damaged_or_forged_pages_manifest_is_refused_and_nothing_is_touched(tmp_path: Path, damage: str) -> None:
    import json

    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.views import output_site
    from subagent_catalog.views.transcript_tree import write_tree_pages

    root = _run_tree(tmp_path)
    out = tmp_path / "site"
    write_tree_pages(read_corpus(root, cache=False), "run", out)
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    (tmp_path / "keep.txt").write_text("foreign")
    if damage == "truncated":
        path.write_text(path.read_text()[:40])
    elif damage == "not ours":
        path.write_text(json.dumps({"format": "an archive", "files": {}}))
    elif damage in ("a path", "a foreign name", "a bad digest"):
        name = {"a path": "../keep.txt", "a foreign name": "keep.txt", "a bad digest": "run.html"}[damage]
        manifest["files"][name] = "x" * 64
        path.write_text(json.dumps(manifest))
    elif damage == "a symlink":
        path.unlink()
        os.symlink(tmp_path / "keep.txt", path)
    elif damage == "a fifo":
        path.unlink()
        os.mkfifo(path)
    elif damage == "a directory":
        path.unlink()
        path.mkdir()
    else:
        path.write_text(" " * (output_site.MAX_SITE_MANIFEST + 1))
    before = {name: (out / name).lstat().st_ino for name in os.listdir(out)}
    code, output = _show_tree(root, out)
    assert code == 1 and "Traceback" not in output and output.count("Error:") == 1, output
    assert "hint:" in output
    assert {name: (out / name).lstat().st_ino for name in os.listdir(out)} == before
    assert (tmp_path / "keep.txt").read_text() == "foreign"


def test_runs_into_one_directory_take_turns(tmp_path: Path) -> None:
    import fcntl

    root = _run_tree(tmp_path)
    out = tmp_path / "site"
    assert _show_tree(root, out)[0] == 0
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another run holds the directory
        code, output = _show_tree(root, out)
        assert code == 1 and "another run is writing into" in output
    finally:
        os.close(fd)
    assert _show_tree(root, out)[0] == 0


def test_an_interrupted_tree_run_can_be_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run killed after some pages leaves them named as pending: the next run replaces them (each carries
    the pages' marker), and a user's file planted under a pending name is still refused."""
    import json

    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.views import transcript_tree

    root = _run_tree(tmp_path, [("child-b", "run")])
    out = tmp_path / "site"
    real = transcript_tree.transcript_page
    calls = []

    def dies_on_the_third(*args: object, **kwargs: object) -> str:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(transcript_tree, "transcript_page", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        transcript_tree.write_tree_pages(read_corpus(root, cache=False), "run", out)
    monkeypatch.setattr(transcript_tree, "transcript_page", real)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] is False and set(manifest["files"].values()) == {None}
    assert len([name for name in os.listdir(out) if name.endswith(".html")]) == 2
    (out / "child-b.html").write_text("the user's, under a pending name")
    with pytest.raises(OutputError, match="did not write it"):
        transcript_tree.write_tree_pages(read_corpus(root, cache=False), "run", out)
    (out / "child-b.html").unlink()
    pages = transcript_tree.write_tree_pages(read_corpus(root, cache=False), "run", out)
    assert len(pages.pages) == 3
    assert json.loads((out / "manifest.json").read_text())["complete"] is True


def test_a_new_name_is_never_put_over_a_file_created_meanwhile(tmp_path: Path) -> None:
    from subagent_catalog import outputs

    target = tmp_path / "page.html"
    with pytest.raises(OutputError, match="refusing to replace"), open_output(target, replace=False) as handle:
        handle.write("ours")
        target.write_text("someone else's")  # created while the page was written
    assert target.read_text() == "someone else's"
    assert os.listdir(tmp_path) == ["page.html"]  # no temporary file left
    with pytest.raises(OutputError, match="did not write it"):
        write_output(target, "ours", replace=False)
    (tmp_path / "tmp").write_text("ours")  # the last step alone: a name taken after the last check
    with pytest.raises(OutputError, match="appeared while"):
        outputs._put_new(str(tmp_path / "tmp"), str(target))
    assert target.read_text() == "someone else's"
