"""Archives are inputs like corpus roots: every command, view and function gives the same over either.

The differential test runs every command that reads a corpus (``tests/inputs_diff.py``: summary,
report, check with thresholds and a baseline, list, show, search, conformance, runs, sql, otel)
over each conformance corpus and over its archive, locally and (for a set of cases covering
each kind of damage) on an S3-compatible store, and requires the same exit status, stdout,
stderr and output file (the report's generation time and the input's location aside). The
other tests pin the input rule itself and the library's ``Source`` protocol.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

from subagent_catalog import catalog, usage_by_model
from subagent_catalog.analysis.step_text import transcript_text
from subagent_catalog.analysis.transcript import transcript
from subagent_catalog.analysis.window import Window, window_corpus
from subagent_catalog.cli import main
from subagent_catalog.corpus import open_source, read_corpus
from subagent_catalog.errors import CorpusRootError, EmptySourceError
from subagent_catalog.frames.source import Source
from subagent_catalog.store.archive import Archive, open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.store.source import input_kind
from subagent_catalog.views.report import render_report
from subagent_catalog.views.summary_text import summary_text
from tests.helpers import FULL_SWEEP, scenario_share
from tests.inputs_diff import baseline_for, command_runs, differences, run_all
from tests.s3 import S3Server

SHARED = (Path(__file__).resolve().parents[2] / "shared" / "conformance").resolve()  # canonical, through a link
ALL_CASES = sorted(p for p in (SHARED / "cases").iterdir() if (p / "corpus").is_dir()) if SHARED.is_dir() else []
CASES = scenario_share(ALL_CASES, 5)
"""``make test``: every case but the scenario cases (S..), of which every fifth, and a large corpus in one
encoding (``tests.helpers.scenario_share``: CI's time); ``make test-sweep`` (``SUBAGENT_CATALOG_FULL_SWEEP=1``):
all of them."""
S3_CASES = (
    [
        "S00-baseline-zstd",
        "S07-duplicate-id-none",
        "S09-legacy-flat-file-zstd",
        "fault-opposite-encoding-zstd",
        "real-writer-rich-none",
    ]
    if FULL_SWEEP
    else ["S00-baseline-zstd", "S07-duplicate-id-none"]
)
"""The cases run over an S3 archive too: a zstd baseline and a duplicate id (``make test``); ``make test-sweep``
adds a failing listing, the opposite encoding and a rich real-writer corpus (every event type), which
``make test`` runs over a local archive."""


@pytest.fixture(autouse=True)
def _frames_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeated reads of the raw corpus reuse its frames (a cache of this test's own, outside the root)."""
    monkeypatch.setenv("SUBAGENT_CATALOG_CACHE", str(tmp_path / "cache"))


def _meta(case: Path) -> dict[str, str]:
    return json.loads((case / "meta.json").read_text(encoding="utf-8"))


def _differential(case: Path, archive: str, work: Path, *, extra: tuple[str, ...] = ()) -> list[str]:
    root, compression = str((case / "corpus").resolve()), _meta(case)["compression"]
    runs = command_runs(Path(root), compression)
    baseline = baseline_for(root, compression, work)
    raw = run_all(runs, root, corpus_root=root, work=work, baseline=baseline)
    assert any(result[0] == 0 for result in raw.values()), "no command succeeded over the raw corpus"
    archived = run_all(runs, archive, corpus_root=root, work=work, baseline=baseline, extra=extra)
    return differences(raw, archived)


@pytest.mark.skipif(not CASES, reason="../shared/conformance is not present")
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_every_command_gives_the_same_over_the_archive(case: Path, tmp_path: Path) -> None:
    archive = str(tmp_path / "archive")
    export_archive(case / "corpus", archive, events=True, jobs=1, compression=_meta(case)["compression"])
    # the archive is read as one whatever the corpus root's fate: the manifest records its absolute path
    assert _differential(case, archive, tmp_path) == []


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with S3Server() as server:
        yield server


@pytest.mark.skipif(not CASES, reason="../shared/conformance is not present")
@pytest.mark.parametrize("name", S3_CASES)
def test_every_command_gives_the_same_over_an_s3_archive(
    name: str, tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in [v for v in os.environ if v.startswith("AWS_")]:
        monkeypatch.delenv(variable)  # the endpoint and credentials come from --storage-option only
    case = SHARED / "cases" / name
    url = s3.bucket() + "/archive"
    export_archive(
        case / "corpus", url, events=True, jobs=1, compression=_meta(case)["compression"], storage_options=s3.options
    )
    extra = tuple(arg for key, value in s3.options.items() for arg in ("--storage-option", f"{key}={value}"))
    assert _differential(case, url, tmp_path, extra=extra) == []


# --------------------------------------------------------------------------- the input rule


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """``data/sample`` copied, and its archive with events."""
    base = tmp_path_factory.mktemp("sample")
    root = str(base / "corpus")
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "sample", root)
    export_archive(root, str(base / "archive"), events=True, jobs=1)
    return root, str(base / "archive")


COMMANDS = [
    ["summary", "{root}"],
    ["report", "{root}", "-o", "{out}"],
    ["list", "{root}", "P"],
    ["show", "{root}", "P"],
    ["search", "{root}", "x"],
    ["runs", "{root}"],
    ["sql", "{root}", "select 1"],
    ["otel", "{root}", "-o", "{out}"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_a_directory_with_neither_logs_nor_manifest_is_an_error_with_a_hint(args: list[str], tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    out = tmp_path / "out.file"
    result = CliRunner().invoke(main, [a.format(root=root, out=out) for a in args])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"Error: no session log under {str(root)!r} and no archive manifest")
    assert "(hint: check the path (is it mounted?) and --compression" in result.stderr
    assert not out.exists()  # never an empty report


def test_check_of_an_empty_directory_is_the_gates_empty_corpus_and_allow_empty_passes(tmp_path: Path) -> None:
    failed = CliRunner().invoke(main, ["check", str(tmp_path)])
    assert failed.exit_code == 1 and "FAILED: empty corpus" in failed.output
    assert CliRunner().invoke(main, ["check", str(tmp_path), "--allow-empty"]).exit_code == 0


def test_conformance_of_an_empty_directory_lists_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["conformance", str(tmp_path), "--all-parents"])
    assert result.exit_code == 0 and result.stdout == ""


def test_a_root_read_with_the_other_encoding_is_not_empty_its_listing_fails(sample: tuple[str, str]) -> None:
    result = CliRunner().invoke(main, ["summary", sample[0], "--compression", "zstd", "-q"])
    assert result.exit_code == 0 and "listing      FAILS: session artifact uses .jsonl" in result.stdout


def test_a_missing_root_is_an_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["summary", str(tmp_path / "nowhere")])
    assert result.exit_code == 1 and result.stderr.startswith("Error: ") and "(hint: " in result.stderr


def test_an_archive_of_an_empty_corpus_is_an_error_too(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    export_archive(tmp_path / "root", tmp_path / "a", jobs=1)
    result = CliRunner().invoke(main, ["report", str(tmp_path / "a"), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 1 and "holds no session (it was exported from" in result.stderr
    assert "(hint: re-export it from the corpus root that holds the logs)" in result.stderr
    assert not (tmp_path / "r.html").exists()
    with pytest.raises(EmptySourceError):
        open_source(tmp_path / "a")
    assert isinstance(open_source(tmp_path / "a", allow_empty=True), Archive)


def test_input_forces_the_reading(sample: tuple[str, str], tmp_path: Path) -> None:
    root, archive = sample
    runner = CliRunner()
    as_archive = runner.invoke(main, ["summary", root, "--input", "archive"])
    assert as_archive.exit_code == 1 and "no archive manifest at" in as_archive.stderr
    as_corpus = runner.invoke(main, ["summary", archive, "--input", "corpus"])  # no log under an archive directory
    assert as_corpus.exit_code == 1 and "no session log under" in as_corpus.stderr
    url = runner.invoke(main, ["summary", "s3://bucket/x", "--input", "corpus"])
    assert url.exit_code == 1 and "a corpus root is a local directory" in url.stderr
    with pytest.raises(CorpusRootError, match="a corpus root is a local directory"):
        open_source("s3://bucket/x", input="corpus")
    auto = runner.invoke(main, ["summary", archive, "--input", "auto", "-q"])
    assert auto.exit_code == 0 and auto.stdout == runner.invoke(main, ["summary", root, "-q"]).stdout


def test_a_malformed_storage_option_is_a_usage_error(sample: tuple[str, str]) -> None:
    result = CliRunner().invoke(main, ["summary", sample[1], "--storage-option", "novalue"])
    assert result.exit_code == 2 and "'novalue' is not KEY=VALUE" in result.output


def test_input_kind_is_the_rule(sample: tuple[str, str], tmp_path: Path) -> None:
    root, archive = sample
    assert [input_kind(root), input_kind(archive)] == ["corpus", "archive"]
    assert [input_kind("s3://b/a"), input_kind("gs://b/a")] == ["archive"] * 2
    assert [input_kind(f"file://{root}"), input_kind(f"file://{archive}")] == ["corpus", "archive"]  # a local path
    (tmp_path / "manifest.json").mkdir()  # whatever it is, opening it says what is wrong
    assert input_kind(tmp_path) == "archive"
    result = CliRunner().invoke(main, ["summary", str(tmp_path)])
    assert result.exit_code == 1 and "manifest" in result.stderr and "Traceback" not in result.stderr


def test_outputs_stay_out_of_the_corpus_behind_an_archive(sample: tuple[str, str]) -> None:
    root, archive = sample
    target = os.path.join(root, "r.html")
    result = CliRunner().invoke(main, ["report", archive, "-o", target])
    assert result.exit_code == 1 and "it is inside the corpus" in result.stderr and not os.path.exists(target)


# --------------------------------------------------------------------------- archives without events


@pytest.fixture()
def no_events(tmp_path: Path) -> tuple[str, str]:
    root = str(tmp_path / "corpus")
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "sample", root)
    export_archive(root, str(tmp_path / "archive"), jobs=1)
    return root, str(tmp_path / "archive")


def test_without_events_the_recorded_root_gives_them(no_events: tuple[str, str]) -> None:
    root, archive = no_events
    runner = CliRunner()
    for args in (
        ["show", "{}", "scan-tests"],
        ["search", "{}", "Done", "-q"],
        ["sql", "{}", "select count(*) from events"],
    ):
        over_root = runner.invoke(main, [a.format(root) for a in args])
        over_archive = runner.invoke(main, [a.format(archive) for a in args])
        assert over_root.exit_code == 0 and (over_archive.exit_code, over_archive.stdout) == (0, over_root.stdout)
    assert (open_archive(archive)).events_available()


def test_without_events_and_without_the_root_events_are_an_error_naming_both(no_events: tuple[str, str]) -> None:
    root, archive = no_events
    shutil.rmtree(root)
    assert not (open_archive(archive)).events_available()
    runner = CliRunner()
    summary = runner.invoke(main, ["summary", archive, "-q"])
    assert summary.exit_code == 0  # what needs no event still works
    show = runner.invoke(main, ["show", archive, "scan-tests"])
    assert show.exit_code == 1
    assert f"the archive {archive!r} holds no events table and its corpus root {root!r} is not here" in show.stderr
    assert "(hint: re-export with events" in show.stderr
    search = runner.invoke(main, ["search", archive, "Done"])
    assert search.exit_code == 1 and "holds no events table" in search.stderr and "(hint: re-export" in search.stderr
    otel = runner.invoke(main, ["otel", archive, "-o", str(Path(archive).parent / "s.jsonl")])
    assert otel.exit_code == 1 and "holds no events table" in otel.stderr


# --------------------------------------------------------------------------- the library's Source protocol


def test_to_corpus_collects_an_archive_once_without_events(sample: tuple[str, str]) -> None:
    archive = open_archive(sample[1])
    corpus = archive.to_corpus()
    assert corpus is archive.to_corpus() and corpus._events is None
    assert corpus.stored_events() is not None and archive.stored_events() is not None  # events stay in the files
    raw = read_corpus(sample[0], cache=False)
    assert raw.to_corpus() is raw and raw.stored_events() is None
    for source in (archive, corpus, raw):
        assert isinstance(source, Source)


def test_a_function_given_no_source_says_how_to_get_one() -> None:
    with pytest.raises(TypeError, match=r"expected a Corpus or an Archive, not str \(read one with read_corpus"):
        catalog("data/sample")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a Corpus or an Archive, not str"):
        usage_by_model("data/sample")  # type: ignore[arg-type]


def test_functions_and_views_take_an_archive(sample: tuple[str, str]) -> None:
    root, path = sample
    raw, archive = read_corpus(root, cache=False), open_archive(path)
    assert_frame_equal(transcript(archive, "scan-tests"), transcript(raw, "scan-tests"))
    assert transcript_text(archive, "scan-tests", 4) == transcript_text(raw, "scan-tests", 4)
    assert summary_text(archive) == summary_text(raw)
    windowed = window_corpus(archive, since="2026-01-02")
    assert windowed.sessions.height == window_corpus(raw, since="2026-01-02").sessions.height > 0


@pytest.mark.parametrize("events", [True, False], ids=["with-events", "without-events"])
def test_a_report_of_a_window_of_an_archive_names_its_runs_as_the_whole_archives_report(
    events: bool, sample: tuple[str, str], tmp_path: Path
) -> None:
    # a window of an archive holds no archive of its own: the report once read it as a corpus of logs
    # and failed on a column the archive's report frames leave out ("internal error: seed_length")
    path = sample[1]
    if not events:
        path = str(tmp_path / "archive")
        export_archive(sample[0], path, jobs=1)
    archive = open_archive(path)
    window = Window.of("2026-01-01", "2026-01-02")  # 16 of the sample's 26 sessions, run-webapp-1 among them
    windowed = window.corpus(archive.to_corpus())
    assert windowed.protected_roots() == archive.protected_roots()  # the archive it was cut from
    assert "run-webapp-1" in windowed.sessions["session_id"].to_list()
    html, whole = render_report(archive, window=window), render_report(archive)
    named = "task 1 for run-webapp-1"  # a root without a title: named by its first prompt, from the events
    assert named in html and named in whole  # without an events table, from the logs of its root (here)


def test_the_widgets_take_an_archive(sample: tuple[str, str]) -> None:
    from subagent_catalog.widgets import CatalogBrowser, DiagnosticsDashboard

    root, path = sample
    raw, archive = read_corpus(root, cache=False), open_archive(path)
    browser, over_raw = CatalogBrowser(archive), CatalogBrowser(raw)
    assert browser.summary == over_raw.summary and browser.tree_keys == over_raw.tree_keys
    browser.select_id("scan-tests")
    over_raw.select_id("scan-tests")
    assert browser.detail == over_raw.detail and "scan-tests" in browser.detail  # its events from the archive
    board, board_raw = DiagnosticsDashboard(archive), DiagnosticsDashboard(raw)
    assert board.bars == board_raw.bars and board.bars
