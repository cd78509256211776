"""Inputs at the wrong place: ``file://`` archives and corpora, and folders at the wrong level of a corpus.

* A ``file:///path`` URL names a local directory: ``export`` writes an archive there (new or
  empty directory alike, with the local target's lock and corpus-root checks) and every reading
  command takes the URL as it takes the path.
* A project folder (``<root>/<project>``) or a session folder (``<root>/<project>/<session>``)
  given as the root is refused by the library (``CorpusLevelError`` naming the root that was
  meant) and by every command that reads a corpus, in one line, before any output is written.
* An empty folder, or one without a session log, is an empty corpus: ``read_corpus`` says so in
  ``problems`` (``empty-root``), and the commands refuse it (``EmptySourceError``), ``export``
  included unless ``--allow-empty``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner, Result
from polars.testing import assert_frame_equal

from subagent_catalog import errors
from subagent_catalog.cli import main
from subagent_catalog.corpus import open_source, read_corpus
from subagent_catalog.store import export as export_module
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.store.layout import ArchiveError
from subagent_catalog.synth import writer as w
from tests.test_cli import build_healthy

PROJECT = "--proj--"
"""The project directory ``build_healthy`` writes (the header's cwd is ``/proj``)."""


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUBAGENT_CATALOG_CACHE", str(tmp_path / "cache"))


def _invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _commands(root: Path, out: Path) -> dict[str, list[object]]:
    """Every command that reads a corpus, with the arguments that make it read ``root`` (outputs under ``out``)."""
    return {
        "summary": ["summary", root, "-q"],
        "report": ["report", root, "-o", out / "report.html", "-q"],
        "check": ["check", root, "-q"],
        "list": ["list", root, "P", "-q"],
        "show": ["show", root, "P", "-o", out / "show.html", "-q"],
        "search": ["search", root, "Done", "-q"],
        "runs": ["runs", root, "-q"],
        "export": ["export", root, out / "archive", "-q"],
        "sql": ["sql", root, "select count(*) from sessions", "-q"],
        "otel": ["otel", root, "-o", out / "spans.jsonl", "-q"],
        "conformance": ["conformance", root],
    }


COMMANDS = list(_commands(Path("r"), Path("o")))


def _one_error_line(result: Result) -> str:
    lines = result.output.splitlines()
    assert result.exit_code == 1, result.output
    assert len(lines) == 1 and lines[0].startswith("Error: ") and lines[0].endswith(")"), result.output
    return lines[0]


# --------------------------------------------------------------------------- file:// (item 16)


@pytest.mark.parametrize("exists", [False, True], ids=["new-directory", "empty-directory"])
def test_export_to_a_file_url_writes_the_archive_in_the_directory_it_names(tmp_path: Path, exists: bool) -> None:
    root = build_healthy(tmp_path / "corpus")
    target = tmp_path / "archive"
    if exists:
        target.mkdir()
    done = _invoke("export", root, f"file://{target}", "-q")
    assert done.exit_code == 0, done.output
    assert done.output.startswith(f"exported {root} to file://{target}: sessions 3")
    assert json.loads((target / "manifest.json").read_text())["row_counts"]["sessions"] == 3
    assert (target / ".lock").exists()  # the local target's lock: overlapping exports take turns
    again = _invoke("export", root, f"file://{target}", "-q")  # incremental, through the same URL
    assert again.exit_code == 0 and "files read 0, reused 3" in again.output


def test_a_file_url_archive_reads_as_its_directory_in_every_command(tmp_path: Path) -> None:
    root = build_healthy(tmp_path / "corpus")
    archive = tmp_path / "archive"
    export_archive(root, archive, events=True, jobs=1)
    for name, args in _commands(archive, tmp_path / "by-path").items():
        if name == "export":
            continue
        (tmp_path / "by-path").mkdir(exist_ok=True)
        (tmp_path / "by-url").mkdir(exist_ok=True)
        by_path = _invoke(*args)
        url_args = [f"file://{archive}" if a == archive else a for a in _commands(archive, tmp_path / "by-url")[name]]
        by_url = _invoke(*url_args)
        assert by_url.exit_code == by_path.exit_code, (name, by_url.output)
        assert by_url.output == by_path.output, name
    assert (tmp_path / "by-url" / "report.html").stat().st_size > 10_000
    assert (tmp_path / "by-url" / "spans.jsonl").read_bytes() == (tmp_path / "by-path" / "spans.jsonl").read_bytes()


def test_a_file_url_corpus_root_reads_as_the_local_path(tmp_path: Path) -> None:
    root = build_healthy(tmp_path / "corpus")
    assert _invoke("summary", f"file://{root}", "-q").output == _invoke("summary", root, "-q").output
    source = open_source(f"file://{root}", cache=False)
    assert source.root == str(root) and source.sessions.height == 3


def test_a_file_url_inside_the_corpus_is_refused_as_the_path_is(tmp_path: Path) -> None:
    root = build_healthy(tmp_path / "corpus")
    line = _one_error_line(_invoke("export", root, f"file://{root}/{PROJECT}/out", "-q"))
    assert "inside the corpus" in line
    with pytest.raises(ArchiveError, match="inside the corpus root"):
        export_archive(root, f"file://{root}/out", jobs=1)
    assert sorted(os.listdir(root)) == [PROJECT]


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("file://server/share/a", None, "names the host 'server'"),
        ("file:///tmp/a?x=1", None, "is not a plain absolute path"),
        ("file:///tmp/a", {"aws_region": "x"}, "takes no storage options"),
    ],
)
def test_a_file_url_that_is_no_plain_local_path_is_refused(
    tmp_path: Path, url: str, options: dict[str, str] | None, message: str
) -> None:
    root = build_healthy(tmp_path / "corpus")
    with pytest.raises(ArchiveError, match=message):
        export_archive(root, url, jobs=1, storage_options=options)
    with pytest.raises(ArchiveError, match=message):
        open_archive(url, storage_options=options)
    flags = [f"--storage-option={k}={v}" for k, v in (options or {}).items()]
    assert message in _one_error_line(_invoke("summary", url, "-q", *flags))


def test_a_percent_encoded_file_url_names_the_decoded_path(tmp_path: Path) -> None:
    root = build_healthy(tmp_path / "corpus")
    target = tmp_path / "my archive"
    export_archive(root, f"file://{str(target).replace(' ', '%20')}", jobs=1)
    assert (target / "manifest.json").is_file()
    assert open_archive(f"file://{str(target).replace(' ', '%20')}").path == str(target)


# --------------------------------------------------------------------------- the wrong level (item 17)


def _session_folder(root: Path) -> Path:
    return root / PROJECT / "P"


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_read_corpus_of_a_session_folder_names_the_root_two_levels_up(tmp_path: Path, compression: str) -> None:
    root = tmp_path / "corpus"
    w.write_session(root, w.header("P", created_at=1, cwd="/proj"), [], compression)  # type: ignore[arg-type]
    with pytest.raises(errors.CorpusRootError) as raised:
        read_corpus(_session_folder(root), cache=False)
    error = raised.value
    assert isinstance(error, errors.CorpusLevelError)
    assert (error.level, error.corpus_root) == ("session", str(root))
    assert f"the corpus root is two levels up: '{root}'" in str(error)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_read_corpus_of_a_project_folder_names_its_parent(tmp_path: Path, compression: str) -> None:
    root = tmp_path / "corpus"
    w.write_session(root, w.header("P", created_at=1, cwd="/proj"), [], compression)  # type: ignore[arg-type]
    with pytest.raises(errors.CorpusRootError) as raised:
        read_corpus(root / PROJECT, cache=False)
    error = raised.value
    assert isinstance(error, errors.CorpusLevelError)
    assert (error.level, error.corpus_root) == ("project", str(root))
    assert f"the corpus root is its parent: '{root}'" in str(error)


def test_an_empty_folder_named_as_a_project_directory_is_a_project_folder(tmp_path: Path) -> None:
    (tmp_path / "--home-dev-app--").mkdir()
    with pytest.raises(errors.CorpusRootError, match="looks like a project folder") as raised:
        read_corpus(tmp_path / "--home-dev-app--", cache=False)
    assert getattr(raised.value, "corpus_root", None) == str(tmp_path)


def test_a_root_with_a_stray_session_log_on_top_is_still_a_root(tmp_path: Path) -> None:
    root = build_healthy(tmp_path / "corpus")
    (root / "session.jsonl").write_bytes(b"{}\n")
    corpus = read_corpus(root, cache=False)
    assert corpus.sessions.height == 3 and "ignored-root-file" in corpus.problems["kind"].to_list()


@pytest.mark.parametrize("shape", ["empty", "empty-projects", "files-only"])
def test_a_folder_without_session_logs_is_an_empty_corpus_that_says_so(tmp_path: Path, shape: str) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    if shape == "empty-projects":
        (root / "--a--").mkdir()
        (root / "--b--" / "s").mkdir(parents=True)
    elif shape == "files-only":
        (root / "notes.txt").write_text("x")
    corpus = read_corpus(root, cache=False)
    assert corpus.sessions.height == 0 and corpus.listing_error is None
    warning = corpus.problems.filter(pl.col("kind") == "empty-root")
    assert warning.select("scope", "severity", "fails_listing", "path").rows() == [
        ("corpus", "warning", False, str(root))
    ]
    assert f"no session log under '{root}'" in warning["message"][0]
    with pytest.raises(errors.EmptySourceError):
        open_source(root, cache=False)


def test_a_root_whose_logs_use_the_other_encoding_is_not_empty(tmp_path: Path) -> None:
    root = build_healthy(tmp_path / "corpus")
    corpus = read_corpus(root, compression="zstd", cache=False)
    assert corpus.listing_error is not None and "empty-root" not in corpus.problems["kind"].to_list()


def test_an_archive_of_an_empty_root_holds_the_same_problems_as_the_corpus(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    (root / "--a--").mkdir(parents=True)
    export_archive(root, tmp_path / "archive", jobs=1)
    archived = open_archive(tmp_path / "archive").to_corpus()
    assert_frame_equal(archived.problems, read_corpus(root, cache=False).problems)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("level", ["project", "session"])
def test_every_command_refuses_a_folder_at_the_wrong_level_in_one_line(
    tmp_path: Path, command: str, level: str
) -> None:
    root = build_healthy(tmp_path / "corpus")
    folder = root / PROJECT if level == "project" else _session_folder(root)
    out = tmp_path / "out"
    out.mkdir()
    line = _one_error_line(_invoke(*_commands(folder, out)[command]))
    meant = "its parent" if level == "project" else "two levels up"
    assert line.count(f"the corpus root is {meant}: '{root}'") == 1, line
    assert os.listdir(out) == []  # no empty report, no archive


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_a_session_log_naming_its_corpus_root_in_one_line(tmp_path: Path, command: str) -> None:
    """Issue 57, point 11: a ``session.jsonl`` path said only "is not a directory" (conformance: a usage error)."""
    root = build_healthy(tmp_path / "corpus")
    log = _session_folder(root) / "session.jsonl"
    out = tmp_path / "out"
    out.mkdir()
    line = _one_error_line(_invoke(*_commands(log, out)[command]))
    assert f"'{log}' is a session log, not a corpus root" in line
    assert f"pass its corpus root, three levels up: '{root}'" in line
    assert os.listdir(out) == []
    with pytest.raises(errors.CorpusLevelError) as raised:
        read_corpus(log, cache=False)
    assert (raised.value.level, raised.value.corpus_root) == ("log", str(root))


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "conformance"])  # upstream's lists nothing
def test_every_command_names_the_corpus_roots_below_a_folder(tmp_path: Path, command: str) -> None:
    """Issue 57, point 11: a folder one level above two corpus roots said only "no session log under" it."""
    above = tmp_path / "runs"
    build_healthy(above / "monday")
    build_healthy(above / "tuesday")
    export_archive(above / "monday", above / "archived", jobs=1)
    (above / "notes").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    line = _one_error_line(_invoke(*_commands(above, out)[command]))
    assert f"'{above}': it holds 2 corpus roots and 1 archive: monday/, tuesday/, archived/ (hint: " in line
    assert line.endswith(f"(hint: pass one of them as ROOT, such as '{above / 'monday'}')"), line
    assert not (out / "report.html").exists() and not (out / "archive" / "manifest.json").exists()


@pytest.mark.parametrize("command", [c for c in COMMANDS if c not in ("check", "conformance")])
def test_every_command_refuses_an_empty_folder_in_one_line(tmp_path: Path, command: str) -> None:
    empty, out = tmp_path / "empty", tmp_path / "out"
    empty.mkdir()
    out.mkdir()
    line = _one_error_line(_invoke(*_commands(empty, out)[command]))
    assert f"no session log under '{empty}'" in line
    assert not (out / "report.html").exists() and not (out / "archive" / "manifest.json").exists()


def test_an_export_of_an_empty_root_leaves_the_previous_archive_as_it_was(tmp_path: Path) -> None:
    root, empty, archive = build_healthy(tmp_path / "corpus"), tmp_path / "unmounted", tmp_path / "archive"
    empty.mkdir()
    assert _invoke("export", root, archive, "-q").exit_code == 0
    manifest = (archive / "manifest.json").read_bytes()
    line = _one_error_line(_invoke("export", empty, archive, "-q"))
    assert "refusing to export an empty corpus" in line and "--allow-empty" in line
    assert (archive / "manifest.json").read_bytes() == manifest
    assert sorted(p.name for p in archive.iterdir() if p.name.startswith("gen-")) == ["gen-000001"]
    allowed = _invoke("export", empty, archive, "-q", "--allow-empty")
    assert allowed.exit_code == 0 and "sessions 0, descriptors 0, problems 1" in allowed.output


def test_an_archive_exported_from_a_project_folder_before_the_check_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = build_healthy(tmp_path / "corpus")
    monkeypatch.setattr(export_module, "check_level", lambda root, top: None)  # as exports did before
    export_archive(root / PROJECT, tmp_path / "archive", jobs=1)
    with pytest.raises(errors.CorpusRootError) as raised:
        open_source(tmp_path / "archive")
    assert getattr(raised.value, "corpus_root", None) == str(root)
    line = _one_error_line(_invoke("summary", tmp_path / "archive", "-q"))
    assert f"re-export it from the corpus root, its parent: '{root}'" in line


def test_the_summary_names_the_encoding_only_of_logs_it_read(tmp_path: Path) -> None:
    from subagent_catalog.views.summary_text import summary_json, summary_text

    (tmp_path / "empty").mkdir()
    empty = read_corpus(tmp_path / "empty", cache=False)
    assert summary_text(empty).splitlines()[0] == f"corpus       {tmp_path / 'empty'}"
    assert summary_json(empty)["corpus"]["compression"] is None
    root = build_healthy(tmp_path / "corpus")
    assert summary_text(read_corpus(root, cache=False)).splitlines()[0] == f"corpus       {root} (none)"
