"""Views that answer run questions: the report's Runs section, summary formats, the timeline, transcript pages."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES, run_summary
from subagent_catalog.analysis.runs import tool_calls
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.synth.writer import EventLog, header, write_session
from subagent_catalog.views.report import render_report
from subagent_catalog.views.timeline_view import MAX_LANES, _pack, timeline_html
from subagent_catalog.views.transcript_tree import write_tree_pages
from subagent_catalog.views.transcript_view import page_file, transcript_fragment, transcript_page

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"
RICH = REPO.parent / "shared" / "conformance" / "cases" / "real-writer-rich-none" / "corpus"


@pytest.fixture(scope="module")
def sample() -> Any:
    return read_corpus(SAMPLE, cache=False)


# --------------------------------------------------------------------------- run_summary


def test_run_summary_counts_every_session_and_lists_every_failed_one(sample: Any) -> None:
    runs = run_summary(sample)
    assert sum(runs.outcomes.values()) == sample.sessions.height
    failed = sample.sessions.filter(pl.col("outcome").is_in(FAILED_OUTCOMES))
    assert runs.failed == failed.height
    assert sorted(runs.failures["path"].to_list()) == sorted(failed["path"].to_list())
    # the log with no readable header (no session id) is a row, never dropped
    assert runs.failures.filter(pl.col("session_id").is_null()).height == 1


def test_run_summary_tool_table_matches_tool_calls(sample: Any) -> None:
    calls = tool_calls(sample)
    runs = run_summary(sample)
    for row in runs.tools.iter_rows(named=True):
        mine = calls.filter(pl.col("name") == row["name"])
        assert row["calls"] == mine.filter(pl.col("status") != "no-call").height
        assert row["failed"] == mine.filter(pl.col("status") == "error").height


def test_run_summary_by_project_and_day_add_up(sample: Any) -> None:
    runs = run_summary(sample)
    assert runs.by_project["sessions"].sum() == sample.sessions.height
    assert runs.by_day["sessions"].sum() == sample.sessions.height
    assert runs.by_day["failed"].sum() == runs.failed


# --------------------------------------------------------------------------- report


def test_report_leads_with_runs(sample: Any) -> None:
    page = render_report(sample)
    assert page.index('<section id="runs">') < page.index('<section id="summary">')
    runs = page[page.index('<section id="runs">') : page.index('<section id="summary">')]
    table = runs[runs.index('id="run-failures-table"') :]
    table = table[: table.index("</table>")]
    assert table.count('<tr class="run') == run_summary(sample).failed
    for session_id in ("auth-refactor", "torn-writer", "garbage-line", "rs-01"):
        assert session_id in table
    assert "empty-file/session.jsonl" in table  # the unreadable log without an id, by its path
    assert 'class="reveal" data-node=' in table
    assert "local-vllm/qwen3-coder" in re.sub(r"<[^>]+>", "", runs[runs.index('id="runs-unpriced"') :])
    assert "EXIT_NONZERO" in runs and 'id="runs-timelines"' in runs


def test_a_run_without_a_label_is_shown_by_its_name_in_the_run_tables(sample: Any, tmp_path: Path) -> None:
    import shutil

    from subagent_catalog.archive import open_archive
    from subagent_catalog.store.export import export_archive

    def slowest(corpus: Any) -> str:
        page = render_report(corpus)
        table = page[page.index('id="runs-slowest"') :]
        return table[: table.index("</table>")]

    table = slowest(sample)
    # run-webapp-1 is a root (no descriptor label): its first prompt, marked as a name, not a label
    assert '<bdi class="nm-t nm-run" title="task 1 for run-webapp-1">task 1 for run-webapp-1</bdi>' in table
    assert '<bdi class="nm-t" title="Refactor the auth module">Refactor the auth module</bdi>' in table  # a label
    # an archive without events whose root is gone still names runs: the name is a column of the read
    root = tmp_path / "sample"
    shutil.copytree("data/sample", root)
    export_archive(root, str(tmp_path / "archive"), events=False, jobs=1)
    shutil.rmtree(root)
    bare = slowest((open_archive(str(tmp_path / "archive"))).to_corpus())
    assert "task 1 for run-webapp-1</bdi>" in bare and "Refactor the auth module" in bare


def test_report_runs_escape_corpus_text(tmp_path: Path) -> None:
    log = EventLog("<b>x</b>")
    log.turn_start()
    log.user("hi")
    error = {"message": "<script>alert(1)</script>", "code": "<i>E</i>"}
    log.add("turn/end", {"turn": log.turn, "reason": {"kind": "error", "error": error}})
    write_session(tmp_path, header("<b>x</b>", created_at=1), log.events, "none")
    page = render_report(read_corpus(tmp_path, cache=False))
    runs = page[page.index('<section id="runs">') : page.index('<section id="summary">')]
    assert "<script>alert" not in runs and "&lt;script&gt;alert(1)&lt;/script&gt;" in runs
    assert "<b>x</b>" not in runs and "<i>E</i>" not in runs


def _failed_run(root: Path, sid: str, start: int, kind: str, code: str | None = None) -> None:
    """A one-turn run that ends ``kind`` (``open``: its turn never ends) at ``start`` ms."""
    log = EventLog(sid, time=start)
    log.turn_start()
    log.user(f"task {sid}")
    if kind == "error":
        log.add("turn/end", {"turn": log.turn, "reason": {"kind": "error", "error": {"message": "boom", "code": code}}})
    elif kind != "open":
        log.turn_end(kind)
    write_session(root, header(sid, created_at=start), log.events, "none")


def test_every_failed_outcome_is_listed_and_every_error_example_links_to_its_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 57 point 8: a cap per outcome (3 here): five error, five max-tokens and four open runs all reach the
    page, each outcome says how many more it has, and every error group's example is a link to a row of the page
    (the LATE group's one run starts after the first three errors)."""
    from subagent_catalog.views import report_runs

    monkeypatch.setattr(report_runs, "FAILURE_ROWS", 3)
    for i in range(4):
        _failed_run(tmp_path, f"err-{i}", 1_700_000_000_000 + i, "error", "EARLY")
    _failed_run(tmp_path, "err-late", 1_700_000_009_000, "error", "LATE")
    for i in range(5):
        _failed_run(tmp_path, f"max-{i}", 1_700_000_000_000 + i, "max-tokens")
    for i in range(4):
        _failed_run(tmp_path, f"open-{i}", 1_700_000_000_000 + i, "open")
    page = render_report(read_corpus(tmp_path, cache=False, jobs=1))
    table = page[page.index('id="run-failures-table"') :]
    table = table[: table.index("</table>")]
    listed = re.findall(r'<tr class="run o-row-([a-z-]+)"', table)
    assert {outcome: listed.count(outcome) for outcome in set(listed)} == {"error": 4, "max-tokens": 3, "open": 3}
    for outcome, total, more in (("error", 5, 1), ("max-tokens", 5, 2), ("open", 4, 1)):
        [head] = re.findall(rf'<tr class="og" id="fail-o-{outcome}">(.*?)</tr>', table, flags=re.S)
        assert f"{total} runs" in head and f"<b>{more} more</b>" in head and f"--outcome {outcome}" in head
        assert f'href="#fail-o-{outcome}"' in page  # the line above the table leads to each outcome
    errors = page[page.index('<table class="data small" id="error-groups">') :]
    errors = errors[errors.index("<tbody>") : errors.index("</table>")]
    rows = re.findall(r"<tr>.*?</tr>", errors, flags=re.S)
    assert len(rows) == 4  # EARLY, LATE, max-tokens and the open runs
    for row in rows:
        [target] = re.findall(r'c-example[^>]*>(?:<span[^>]*>)*<a href="#(fail-\d+)"', row)
        assert f'id="{target}"' in table
    [late] = [row for row in rows if "LATE" in row]
    [target] = re.findall(r'href="#(fail-\d+)"', late)
    assert re.search(rf'id="{target}">.*?err-late', table, flags=re.S)


# --------------------------------------------------------------------------- summary formats


def test_summary_json_and_md_carry_the_run_facts(sample: Any) -> None:
    runner = CliRunner()
    done = runner.invoke(main, ["summary", str(SAMPLE), "-q", "--format", "json"], catch_exceptions=False)
    facts = json.loads(done.output)
    failed = sample.sessions.filter(pl.col("outcome").is_in(FAILED_OUTCOMES))
    assert facts["runs"]["failed"] == failed.height == len(facts["runs"]["failures"])
    assert facts["corpus"]["files"] == sample.sessions.height
    md = runner.invoke(main, ["summary", str(SAMPLE), "-q", "-f", "md", "--limit", "2"], catch_exceptions=False)
    assert "| outcome | session | error |" in md.output and f"… and {failed.height - 2} more." in md.output
    text = runner.invoke(main, ["summary", str(SAMPLE), "-q"], catch_exceptions=False).output
    assert f"failed       {failed.height} runs" in text and "auth-refactor" in text


# --------------------------------------------------------------------------- timeline


def _hub(children: int) -> pl.DataFrame:
    rows = [{"session_id": "hub", "label": None, "depth": 0, "outcome": "completed", "start_ms": 0, "end_ms": 10**6}]
    for i in range(children):
        start = (i * 7919) % 900_000
        rows.append(
            {
                "session_id": f"c{i}",
                "label": f"child {i}",
                "depth": 1,
                "outcome": "error" if i % 10 == 0 else "completed",
                "start_ms": start,
                "end_ms": start + 30_000 + (i % 50) * 1000,
            }
        )
    rows.append(
        {"session_id": "never", "label": None, "depth": 1, "outcome": "no-turns", "start_ms": None, "end_ms": None}
    )
    return pl.DataFrame(rows)


def test_timeline_of_a_thousand_children_is_a_few_nodes() -> None:
    page = timeline_html(_hub(1000))
    assert page.count("<path") <= 1 + 10  # the curve and one path per outcome
    assert "tl-bar" not in page and "1,001 sessions packed" in page
    assert "never" in page  # the session without a span is named, not dropped
    assert len(page) < 400_000


def test_timeline_of_a_small_tree_has_one_bar_each_and_escapes() -> None:
    rows = _hub(3).with_columns(pl.col("label").fill_null("<img src=x onerror=alert(1)>"))
    page = timeline_html(rows)
    assert page.count('class="tl-bar"') == 4
    assert "<img" not in page and "&lt;img" in page


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 300)), max_size=80))
def test_packed_lanes_never_overlap_below_the_cap(spans: list[tuple[int, int]]) -> None:
    ordered = sorted((start, start + length) for start, length in spans)
    lanes = _pack(ordered)
    if len(set(lanes)) < MAX_LANES:
        for lane in set(lanes):
            mine = [span for span, at in zip(ordered, lanes, strict=True) if at == lane]
            assert all(a[1] < b[0] for a, b in itertools.pairwise(mine))


# --------------------------------------------------------------------------- transcript pages


def test_human_durations_on_tool_results() -> None:
    from subagent_catalog.analysis.transcript import TRANSCRIPT_SCHEMA

    row = {"seq": 1, "seqs": [1], "time_ms": 0, "kind": "tool-result", "text": "ok", "partial": False,
           "in_seed": False, "is_error": False, "name": "shell", "detail": '{"duration_ms": 5524119}'}  # fmt: skip
    page = transcript_fragment(pl.DataFrame([row], schema=TRANSCRIPT_SCHEMA))
    assert "1 h 32 min" in page and "5,524,119" not in page


def test_a_root_without_a_descriptor_is_no_error_and_a_subagent_without_one_is_marked(sample: Any) -> None:
    root = transcript_page(sample, "run-webapp-1")
    identity = re.search(r"<tr><th>identity</th><td style=\"([^\"]*)\">([^<]*)</td>", root)
    assert identity is not None and identity.group(1) == "" and "a root session" in identity.group(2)
    assert "identity cause" not in root and "without a usable descriptor" not in root
    child = transcript_page(sample, "no-descriptor")
    marked = re.search(r"<tr><th>identity</th><td style=\"([^\"]*)\">([^<]*)</td>", child)
    assert marked is not None and "953800" in marked.group(1) and "no-descriptor" in marked.group(2)


def test_the_readable_part_of_a_failed_log_is_shown(sample: Any) -> None:
    page = transcript_page(sample, "garbage-line")
    assert "task 1 for garbage-line" in page
    assert page.index("task 1 for garbage-line") < page.index("upstream cannot read this log")
    assert 'id="read-problem"' in page and 'href="#read-problem"' in page


def test_turn_table_and_error_list_link_to_their_steps(sample: Any) -> None:
    page = transcript_page(sample, "auth-refactor")
    ids = set(re.findall(r'id="([^"]+)"', page))
    jumps = re.findall(r'href="#([^"]+)"', page)
    assert jumps and all(target in ids for target in jumps)
    assert "1 error</b>" in page and "cache read" in page and "$0.0013" in page


@pytest.mark.skipif(not RICH.is_dir(), reason="the shared conformance corpus is not available")
def test_upstream_user_messages_keep_blocks_apart_and_name_their_source() -> None:
    corpus = read_corpus(RICH, cache=False)
    with_notice = None
    kinds: set[str] = set()
    for session in corpus.sessions.filter(pl.col("verdict") == "ok").head(40).iter_rows(named=True):
        page = transcript_page(corpus, session["session_id"], path=session["path"])
        for name in ("human prompt", "subagent notice", "runtime-context snapshot", "coordinator relay"):
            if f">{name}" in page:
                kinds.add(name)
        if with_notice is None and "Its closing message:" in page and "reasoning · " in page:
            with_notice = page
    assert {"human prompt", "subagent notice", "runtime-context snapshot"} <= kinds
    assert with_notice is not None
    assert "send it more.Its closing message:" not in with_notice and "finished.Its closing" not in with_notice
    notice = with_notice[with_notice.index("Its closing message:") - 2000 :]
    assert '<details class="blk"><summary' in notice  # the reasoning block, folded
    assert notice.count('class="blk"') >= 3


def test_show_tree_writes_pages_whose_links_all_resolve(sample: Any, tmp_path: Path) -> None:
    pages = write_tree_pages(sample, "run-webapp-1", tmp_path / "pages")
    assert pages.top == tmp_path / "pages" / "run-webapp-1.html"
    run_tree_size = len(pages.pages) + len(pages.skipped)
    assert run_tree_size == 16  # run_trees: run-webapp-1's subtree_sessions
    checked = 0
    for page_path in pages.pages:
        text = page_path.read_text(encoding="utf-8")
        ids = set(re.findall(r'id="([^"]+)"', text))
        for href in re.findall(r'href="([^"]+)"', text):
            checked += 1
            if href.startswith("#"):
                assert href[1:] in ids, (page_path.name, href)
            else:
                assert (page_path.parent / urllib.parse.unquote(href)).is_file(), (page_path.name, href)
    assert checked > 30
    root = pages.top.read_text(encoding="utf-8")
    assert '<a href="auth-refactor.html">' in root and "tl-bar" in root


def test_show_tree_names_pages_of_hostile_ids_safely(tmp_path: Path) -> None:
    corpus_root = tmp_path / "c"
    write_session(corpus_root, header("P", created_at=1), [], "none")
    hostile = ["..", "a b?c#d", "é" * 20 + "x" * 90]
    for index, child in enumerate(hostile):
        write_session(corpus_root, header(child, created_at=2 + index, parent="P", subagent=True), [], "none")
    pages = write_tree_pages(read_corpus(corpus_root, cache=False), "P", tmp_path / "out")
    names = sorted(p.name for p in pages.pages)
    assert names == sorted(page_file(h) for h in ["P", *hostile])
    assert all(p.parent == tmp_path / "out" and p.is_file() for p in pages.pages)
    top = pages.top.read_text(encoding="utf-8")
    for child in hostile:
        assert f'href="{page_file(child)}"' in top


def test_show_tree_cli_and_its_usage_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(main, ["show", str(SAMPLE), "auth-refactor", "--tree", "-o", str(tmp_path / "p")])
    assert done.exit_code == 0, done.output
    assert "wrote 4 pages" in done.output and (tmp_path / "p" / "auth-refactor.html").is_file()
    refused = runner.invoke(main, ["show", str(SAMPLE), "auth-refactor", "--tree"])
    assert refused.exit_code == 2 and "-o DIR" in refused.output
    inside = runner.invoke(main, ["show", str(SAMPLE), "auth-refactor", "--tree", "-o", str(SAMPLE / "pages")])
    assert inside.exit_code == 1 and "inside the corpus" in inside.output
    assert not (SAMPLE / "pages").exists()


# --------------------------------------------------------------------------- id prefixes


def test_a_unique_id_prefix_names_its_session_and_an_ambiguous_one_lists_them(tmp_path: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(main, ["show", str(SAMPLE), "auth-ref", "-q"])
    assert shown.exit_code == 0 and shown.output.startswith("# `Refactor the auth module` (`auth-refactor`)")
    listed = runner.invoke(main, ["list", str(SAMPLE), "run-web", "-q"])
    whole = runner.invoke(main, ["list", str(SAMPLE), "run-webapp-1", "-q"])
    assert listed.exit_code == 0 and listed.output == whole.output
    ambiguous = runner.invoke(main, ["show", str(SAMPLE), "run-", "-q"])
    assert ambiguous.exit_code == 1
    assert (
        "ambiguous" in ambiguous.output and "run-research-7" in ambiguous.output and "run-webapp-1" in ambiguous.output
    )
    short = runner.invoke(main, ["show", str(SAMPLE), "aut", "-q"])  # under 4 characters: an id, not a prefix
    assert short.exit_code == 1 and "did you mean auth-refactor" in short.output
    report = runner.invoke(main, ["report", str(SAMPLE), "-q", "-p", "run-res", "-o", str(tmp_path / "r.html")])
    assert report.exit_code == 0 and "run-research-7" in (tmp_path / "r.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "args",
    [
        ["show", "aut"],
        ["show", "aut", "--tree", "-o", "{out}"],
        ["list", "aut"],
        ["report", "-p", "aut", "-o", "{out}"],
    ],
    ids=["show", "show-tree", "list", "report"],
)
def test_an_id_prefix_under_four_characters_says_a_prefix_needs_four(tmp_path: Path, args: list[str]) -> None:
    """Issue 57, point 11: ``show ROOT 0c9`` named the ids it might mean but not why it did not take it."""
    argv = [args[0], str(SAMPLE), *(a.replace("{out}", str(tmp_path / "out")) for a in args[1:]), "-q"]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 1 and len(result.output.splitlines()) == 1, result.output
    assert "'aut'" in result.output
    assert "(hint: an id prefix needs at least 4 characters: did you mean auth-refactor?)" in result.output
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- friction: progress, project folders


def test_a_read_given_no_progress_reports_to_the_default_and_closes_it(tmp_path: Path) -> None:
    from subagent_catalog import progress as core
    from subagent_catalog.progress import default_progress, set_default_progress

    before = core._default

    calls: list[tuple[int, int]] = []
    closed: list[bool] = []

    class Recorder:
        def __call__(self, done: int, total: int) -> None:
            calls.append((done, total))

        def close(self) -> None:
            closed.append(True)

    write_session(tmp_path, header("s1", created_at=1), [], "none")
    set_default_progress(Recorder)
    try:
        read_corpus(tmp_path, cache=False, jobs=1)
        given: list[int] = []
        read_corpus(tmp_path, cache=False, jobs=1, progress=lambda done, total: given.append(done))
    finally:
        set_default_progress(before)
    assert calls and calls[-1] == (1, 1) and closed == [True]  # the explicit progress= bypasses the default
    assert given == [1]
    assert default_progress() is None  # under pytest: not a notebook, so quiet


def test_importing_the_package_alone_gives_notebook_reads_a_bar() -> None:
    """No ``import subagent_catalog.widgets`` needed: ``read_corpus`` in a notebook shows progress."""
    code = (
        "import sys, subagent_catalog\n"
        "from subagent_catalog.progress import default_progress\n"
        "import subagent_catalog.views.progress as views\n"
        "print(default_progress() is None)\n"
        "views.in_notebook = lambda: True\n"
        "bar = default_progress()\n"
        "print(type(bar).__name__, bar.delay == views.NOTEBOOK_DELAY)\n"
        "print(sorted(m for m in ('tqdm', 'ipywidgets') if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "SUBAGENT_CATALOG_PROGRESS")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split("\n")[:3] == ["True", "TqdmProgress True", "[]"]


def test_notebook_progress_is_quiet_outside_notebooks_and_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    import subagent_catalog.views.progress as progress

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(progress.PROGRESS_VARIABLE, raising=False)
    assert progress.notebook_progress() is None
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    bar = progress.notebook_progress()
    assert bar is not None and bar.delay == progress.NOTEBOOK_DELAY
    monkeypatch.setenv("CI", "true")
    assert progress.notebook_progress() is None
    monkeypatch.setenv(progress.PROGRESS_VARIABLE, "on")
    assert progress.notebook_progress() is not None
    monkeypatch.setenv(progress.PROGRESS_VARIABLE, "off")
    monkeypatch.delenv("CI")
    assert progress.notebook_progress() is None


def test_a_project_folder_given_as_the_root_gets_a_hint_naming_its_parent() -> None:
    runner = CliRunner()
    folder = SAMPLE / "--home-dev-projects-webapp--"
    done = runner.invoke(main, ["summary", str(folder), "-q"])
    assert done.exit_code == 1  # an error naming the root, never an empty summary (tests/test_input_levels.py)
    assert f"the corpus root is its parent: '{SAMPLE}'" in done.output
    assert "hint" not in runner.invoke(main, ["summary", str(SAMPLE), "-q"]).output.split("runs ")[0]
