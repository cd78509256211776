"""Issue 51, point 5: one source. Every public function and every command gives the same over every form of one
corpus, and over a damaged archive ends in one ``Error:`` line naming the damaged part, with no panic text.

The forms (``tests/one_source.py``): ``data/sample`` as plain logs (the reference), as zstd logs, as an archive
with events, as an archive without events whose corpus root is gone, and as windows of the archive (the whole,
a span around every session, one day), each held to the same window of the plain root. The normalisations are
listed in ``tests/one_source.py``; nothing else may differ.

* **Functions**: every public function of ``subagent_catalog`` that takes a source (``CALLS``: a table from name
  to call; a new one fails ``test_every_public_function_that_takes_a_source_is_called``) over every form: equal
  values (frames by ``.equals``), or over the archive without events the typed "holds no events table" error
  for the calls that read events.
* **Commands**: every command of the click group (``RUNS``: each ``runs --table`` and each ``sql`` table, as a
  table and as JSON, a few windows; a new command fails ``test_every_command_and_table_is_run``) over the zstd
  form and both archives, in this process: the same exit status, stdout and output file.
* **Damage**: ``DAMAGE_KINDS``: in each kind of part (sessions, descriptors, problems, events, facts) a seeded bit
  flip in one column's data pages that Polars and pyarrow both refuse, a forged byte in a sessions part's
  ``ARROW:schema`` field name, and a flip in an events part's pages that makes Polars panic (and pyarrow refuse);
  each with the part's ``file_blake2b`` recomputed in the manifest, so the checksum does not catch it. Each of
  ``DAMAGE_RUNS`` (26 command lines: every command, each ``runs`` and ``sql`` table, ``compare`` with the archive
  as either side, an incremental ``export`` into it) runs over each, one child interpreter a kind,
  ``RUST_BACKTRACE=1``, descriptors 1 and 2 captured: 7 x 26 = 182 runs in 7 children, and a run that ends
  without an ``Error:`` line once more over a healthy copy (its baseline). A run ends in exactly one last
  ``Error:`` line naming the damaged part's file, exit 1, or (a command that does not read that part) as over
  the healthy copy; never a traceback, "internal error" or panic text; ``MUST_SEE`` names the runs that read
  the part for sure.
* **Panic text** (``subagent_catalog.cli.panics``): the filter itself, and ``python -m subagent_catalog`` over
  the panicking archive with ``RUST_BACKTRACE`` unset, ``1`` and ``full`` (3 subprocesses, and one with
  ``SUBAGENT_CATALOG_TRACEBACK=1`` that shows the report, so the panic is real).
"""

from __future__ import annotations

import difflib
import inspect
import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import subagent_catalog
from subagent_catalog.cli import main
from subagent_catalog.cli.panics import PanicFilter
from subagent_catalog.store.layout import ArchiveError
from tests.one_source import (
    ARCHIVE,
    CALLS,
    CLI_FORMS,
    DAMAGE_KINDS,
    DAMAGE_RUNS,
    FUNCTION_FORMS,
    NOT_A_SOURCE,
    RUNS,
    SPAN,
    Call,
    Forms,
    Ran,
    Run,
    build_forms,
    damage,
    differences,
    fresh_facts,
    invoke,
    normalise_ran,
    normalise_zstd,
    plain_value,
    read_form,
    reference_source,
    run_damage,
    run_tables,
    sql_tables,
    takes_a_source,
)

REPO = Path(__file__).resolve().parents[1]
PANIC_TEXT = ("panicked at", "RUST_BACKTRACE", "stack backtrace", "Traceback", "internal error")


@pytest.fixture(scope="module")
def forms(tmp_path_factory: pytest.TempPathFactory) -> Forms:
    return build_forms(tmp_path_factory.mktemp("one-source"))


@pytest.fixture(autouse=True)
def _in_work(forms: Forms, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(forms.work)  # every form is read through its relative location


# --------------------------------------------------------------------------- coverage


def _public_functions() -> dict[str, Any]:
    return {
        name: getattr(subagent_catalog, name)
        for name in subagent_catalog.__all__
        if inspect.isfunction(getattr(subagent_catalog, name))
    }


def test_every_public_function_that_takes_a_source_is_called() -> None:
    functions = _public_functions()
    sources = {name for name, function in functions.items() if takes_a_source(function)}
    assert sources == {call.function for call in CALLS}, "add the new function to tests.one_source.CALLS"
    assert set(functions) - sources == set(NOT_A_SOURCE), "say what the new function takes in NOT_A_SOURCE"


def test_every_command_and_table_is_run() -> None:
    commands = set(main.commands)
    assert {run.command for run in RUNS if run.forms} == commands, "add the new command to tests.one_source.RUNS"
    assert {run.command for run in DAMAGE_RUNS} == commands
    damaged = {run.name for run in DAMAGE_RUNS}
    assert {f"runs-{table}" for table in run_tables()} | {f"sql-{table}" for table in sql_tables()} <= damaged
    names = {run.name for run in RUNS}
    assert {f"runs-{table}-json" for table in run_tables()} | {f"sql-{table}-json" for table in sql_tables()} <= names


# --------------------------------------------------------------------------- functions


def _marks(reason: str | None) -> list[Any]:
    """A strict xfail for a known library bug (issue 51; the lead removes it with the fix)."""
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


FUNCTION_XFAILS: dict[tuple[str, str], str] = {}
"""Known library bugs by (function, form): none left (issue 51 fixed those this suite found)."""


def _call_id(call: Call) -> str:
    same = [c for c in CALLS if c.function == call.function]
    return call.function + (f"-{same.index(call)}" if len(same) > 1 else "")


def _function_cases() -> list[Any]:
    cases = []
    for call in CALLS:
        for form in FUNCTION_FORMS:
            marks = _marks(FUNCTION_XFAILS.get((call.function, form)))
            cases.append(pytest.param(call, form, marks=marks, id=f"{_call_id(call)}-{form}"))
    return cases


@pytest.mark.parametrize(("call", "form"), _function_cases())
def test_a_function_gives_the_same_over_every_form(forms: Forms, call: Call, form: str) -> None:
    events = form != "archive-no-events"  # its corpora's events are the error below, not compared
    expected = forms.reference(
        (_call_id(call), form), lambda: plain_value(call.run(reference_source(form)), events=events)
    )
    with forms.at(form):
        source = read_form(form)
        if call.events and not events:
            with pytest.raises(ArchiveError, match="holds no events table"):
                plain_value(call.run(source))
            return
        got = plain_value(call.run(source), events=events)
    if form == "zstd":
        expected, got = normalise_zstd(expected), normalise_zstd(got)
    assert differences(expected, got, call.function) == []


def test_a_window_around_every_session_keeps_each_one_that_has_a_creation_time(forms: Forms) -> None:
    """``window-span`` is held to the same window of the plain root; here, that it is the whole but the timeless."""
    import polars as pl

    from subagent_catalog.analysis.window import Window

    with forms.at("archive"):
        whole = plain_value(read_form("window-all").sessions)
        span = plain_value(read_form("window-span").sessions)
    timed = whole.filter(pl.col("created_at_ms").is_not_null())
    assert span.equals(timed) and 0 < Window.of(*SPAN).without_time(whole) == whole.height - span.height


# --------------------------------------------------------------------------- commands

CLI_XFAILS: dict[tuple[str, str], str] = {}
"""Known library bugs by (command line, form): none left."""


def _cli_cases() -> list[Any]:
    cases = []
    for run in RUNS:
        for form in CLI_FORMS:
            if not run.forms or (run.table and form == "zstd"):
                continue
            marks = _marks(CLI_XFAILS.get((run.name, form)))
            cases.append(pytest.param(run, form, marks=marks, id=f"{run.name}-{form}"))
    return cases


def _clean(ran: Ran) -> None:
    """No traceback, internal error or panic text; a failure is one last ``Error:`` line (``check``: its verdict)."""
    for text in PANIC_TEXT:
        assert text not in ran.stderr, ran.stderr[-3000:]
    if ran.code == 1 and ran.stderr.strip():
        lines = ran.stderr.strip().splitlines()
        assert [line for line in lines if line.startswith("Error: ")] == lines[-1:], ran.stderr[-3000:]


def _explain(expected: list[Any], got: list[Any]) -> str:
    parts = ("exit status", "stdout", "output")
    for part, a, b in zip(parts, expected, got, strict=True):
        if differences(a, b):
            if isinstance(a, str) and isinstance(b, str):
                diff = difflib.unified_diff(a.splitlines(), b.splitlines(), "plain", "form", lineterm="", n=1)
                return f"{part} differs:\n" + "\n".join(list(diff)[:40])
            return f"{part} differs:\n" + "\n".join(differences(a, b, part)[:20])
    return ""


@pytest.mark.parametrize(("run", "form"), _cli_cases())
def test_a_command_gives_the_same_over_every_form(forms: Forms, run: Run, form: str) -> None:
    expected = forms.reference(("run", run.name), lambda: invoke(run, "plain", forms.work))
    _clean(expected)
    with forms.at(form):
        ran = invoke(run, form, forms.work)
    _clean(ran)
    if run.corpus_only and form != "zstd":
        assert ran.code == 1 and ran.stderr.startswith("Error: no session log under"), ran.stderr
        return
    if run.events and form == "archive-no-events":
        assert ran.code == 1 and "holds no events table" in ran.stderr, (ran.code, ran.stderr)
        return
    if run.named and form == "archive-no-events":  # its runs are named by id: the output differs
        assert ran.code == expected.code == 0, (ran.code, ran.stderr)
        return
    want, got = normalise_ran(expected, form), normalise_ran(ran, form)
    assert differences(want, got, "") == [], _explain(want, got)


# --------------------------------------------------------------------------- damaged archives

DAMAGE_XFAILS: dict[str, str] = {}
"""Known library bugs by damage kind: none left."""
MUST_SEE = {
    "sessions": {"sql-sessions", "summary", "list"},
    "descriptors": {"sql-descriptors"},
    "problems": {"sql-problems"},
    "events": {"sql-events", "search"},
    "facts": {"export-into"},
    "forged-schema": {"sql-sessions", "summary", "list"},
    "events-panic": {"sql-events", "search"},
}
"""Per kind, the runs that read the damaged part for sure: each must end in the one ``Error:`` line."""


def _damaged(forms: Forms, kind: str) -> tuple[str, str]:
    """The location (six characters, under ``WORK``) of the archive damaged as ``kind`` (kept as it was made:
    the runs use a copy), and its damaged part's file name; made on first use (``tests.one_source.damage``)."""
    key = ("damaged", kind)
    if key not in forms.memo:
        location = f"dm{DAMAGE_KINDS.index(kind):04d}"
        forms.memo[key] = (location, damage(_fresh(forms), forms.work / location, kind))
    return forms.memo[key]  # type: ignore[no-any-return]


def _fresh(forms: Forms) -> Path:
    """The archive with events, its facts made this machine's (``fresh_facts``): every damaged archive's base."""
    fresh = forms.work / "arc-fr"
    if not fresh.exists():
        shutil.copytree(forms.work / ARCHIVE, fresh)
        fresh_facts(fresh, forms.work / "keep" / "plain")
    return fresh


@pytest.mark.parametrize("kind", [pytest.param(k, marks=_marks(DAMAGE_XFAILS.get(k))) for k in DAMAGE_KINDS])
def test_every_command_over_a_damaged_archive_is_one_error_line_naming_the_part(forms: Forms, kind: str) -> None:
    location, part = _damaged(forms, kind)
    copy, healthy = "dr" + location[2:], "ok" + location[2:]  # export-into rewrites what it runs over
    shutil.copytree(forms.work / location, forms.work / copy)
    shutil.copytree(_fresh(forms), forms.work / healthy)
    baselines = forms.memo.setdefault("healthy", {})  # by run: its exit status and stdout over a healthy copy
    with forms.at("plain"):  # export-into reads the root
        results = run_damage(forms.work, copy, healthy, sorted(baselines), {"RUST_BACKTRACE": "1"})
    problems, seen = [], []
    for name, result in results.items():
        code, stderr = result["code"], result["stderr"]
        lines = stderr.strip().splitlines()
        errors = [line for line in lines if line.startswith("Error: ")]
        if "healthy" in result:
            baselines[name] = (result["healthy"]["code"], result["healthy"]["stdout"].replace(healthy, "<in>"))
        same = (code, result["stdout"].replace(copy, "<in>")) == baselines.get(name)
        if any(text in stderr for text in PANIC_TEXT):
            problems.append(f"{name}: exit {code}, stderr: {stderr[-1500:]}")
        elif code == 1 and errors == lines[-1:] != [] and part in errors[0] and "(hint: " in errors[0]:
            seen.append(name)
        elif not same:  # else: the command does not read that part (check's verdict on the sample: exit 1)
            problems.append(f"{name}: exit {code}, stderr: {stderr[-1500:]}")
    assert problems == []
    missed = {name: (results[name]["code"], results[name]["stderr"][-300:]) for name in MUST_SEE[kind] - set(seen)}
    assert not missed, missed


# --------------------------------------------------------------------------- panic text

REPORT = (
    b"\nthread 'async-executor-0' (11) panicked at crates/polars-arrow/src/array/mod.rs:38:9:\n"
    b"assertion failed: self.check_bound(offset)\n"
)
NOTE = b"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
BACKTRACE = (
    b"stack backtrace:\n   0: __rustc::rust_begin_unwind\n   1: core::panicking::panic_fmt\n"
    b"   2:     0x7f0c0bd01979 - <std::sys::backtrace::BacktraceLock>::print\n"
    b"                               at ./nptl/pthread_create.c:442:8\n"
)
OMITTED = b"note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n"
LATER = (
    b"\nthread 'async-executor-1' (12) panicked at crates/polars-stream/src/nodes/io_sources/parquet/mod.rs:476:30:\n"
    b'called `Result::unwrap()` on an `Err` value: JoinError::Panic(Id(11), "assertion failed", ...)\n'
)


def _filtered(data: bytes, chunks: list[int] | None = None) -> bytes:
    out: list[bytes] = []
    keep = PanicFilter(out.append)
    at = 0
    for size in chunks or [len(data)]:
        keep.feed(data[at : at + size])
        at += size
    keep.feed(data[at:])
    keep.close()
    return b"".join(out)


@pytest.mark.parametrize(
    ("stream", "kept"),
    [
        (
            b"searching x\n" + REPORT + NOTE + LATER + b"Error: damaged (hint: h)\n",
            b"searching x\nError: damaged (hint: h)\n",
        ),
        (REPORT + BACKTRACE + OMITTED + LATER + BACKTRACE + OMITTED + b"Error: e\n", b"Error: e\n"),
        (REPORT + BACKTRACE + LATER + BACKTRACE + b"Error: e\n", b"Error: e\n"),  # RUST_BACKTRACE=full: no note
        (b"a\n\nb\n\n\nc", b"a\n\nb\n\n\nc"),  # blank lines kept
        (b"\r 10%|#\r 50%|##" + REPORT + NOTE + b"\r100%\n", b"\r 10%|#\r 50%|##\n\r100%\n"),
        (
            b"thread 'main' is not a report\nnote: an ordinary note\n   indented\n",
            b"thread 'main' is not a report\nnote: an ordinary note\n   indented\n",
        ),
        (b"x\n" + REPORT + b"stack backtrace:\n   0: f\nnot a frame\n", b"x\nnot a frame\n"),
    ],
    ids=[
        "note-then-later-panic",
        "short-backtraces",
        "full-backtraces",
        "blank-lines",
        "progress-bar",
        "look-alikes",
        "frames-end",
    ],
)
def test_the_panic_filter_drops_reports_and_passes_every_other_byte(stream: bytes, kept: bytes) -> None:
    assert _filtered(stream) == kept
    rng = random.Random(7)
    for _ in range(40):  # fed in any pieces, the same bytes pass
        cuts = [rng.randint(0, 9) for _ in range(len(stream))]
        assert _filtered(stream, cuts) == kept


def test_a_report_is_dropped_whole_when_each_piece_is_one_write() -> None:
    """A packet pipe (Linux): the message is the rest of the header's write, whatever its lines."""
    writes = [
        b"searching\n",
        b"\nthread 'a' (1) panicked at x.rs:1:1:\nassertion `left == right` failed\n  left: 113\n right: 114\n",
        NOTE,
        *(b"\nthread '", b"b", b"' (", b"2", b") panicked at ", b"y.rs:2:2", b":\n", b"a long\nmessage", b"\n"),
        b"\nthread 'c' (3) panicked at z.rs:3:3:\nno note after a later panic\n",
        b"Error: e (hint: h)\n",
        b"  left: is text here\n",
    ]
    out: list[bytes] = []
    keep = PanicFilter(out.append, writes=True)
    for write in writes:
        keep.feed(write)
    keep.close()
    assert b"".join(out) == b"searching\nError: e (hint: h)\n  left: is text here\n"


def test_an_unfinished_line_passes_at_once_unless_it_may_begin_a_report() -> None:
    out: list[bytes] = []
    keep = PanicFilter(out.append)
    keep.feed(b"\r 40%|####")
    assert out == [b"\r 40%|####"]
    keep.feed(b"\n\nthre")
    assert b"".join(out) == b"\r 40%|####\n"  # the blank line and "thre" may begin a report: held
    keep.feed(b"ad is here\n")
    assert b"".join(out) == b"\r 40%|####\n\nthread is here\n"


QUIET = textwrap.dedent(
    """
    import os, sys
    from subagent_catalog.cli.panics import quiet_panics
    before, stream = os.fstat(2), sys.stderr
    wrote, release = os.pipe(), os.pipe()
    with quiet_panics():
        os.write(2, b"one\\n")
        print("two", file=sys.stderr)
        os.write(2, REPORT)
        print("three", file=sys.stderr, end="")
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # a child that still holds the pipe when the block ends
            os.write(2, b" and a half\\nfrom the child\\n")
            os.write(wrote[1], b"x")
            os.read(release[0], 1)
            os._exit(0)
        os.read(wrote[0], 1)  # the child has written
    after = os.fstat(2)
    assert (after.st_ino, after.st_dev) == (before.st_ino, before.st_dev) and sys.stderr is stream
    print("after", file=sys.stderr, flush=True)
    os.write(release[1], b"x")
    os.waitpid(pid, 0)
    print("done", flush=True)
    """
)


def test_quiet_panics_keeps_the_order_restores_descriptor_2_and_never_waits_for_a_child() -> None:
    script = QUIET.replace("REPORT", repr(REPORT + NOTE))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"done\n"
    assert done.stderr == b"one\ntwo\nthree and a half\nfrom the child\nafter\n"


def test_quiet_panics_answers_isatty_as_the_real_stderr() -> None:
    import pty

    leader, follower = pty.openpty()
    try:
        code = "import sys, subagent_catalog.cli.panics as p\nwith p.quiet_panics(): print(sys.stderr.isatty())"
        done = subprocess.run(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=follower, timeout=120, cwd=REPO, check=False
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 0 and done.stdout == b"True\n"


def _search_panicking(forms: Forms, **env: str) -> tuple[str, subprocess.CompletedProcess[str]]:
    """``search`` over the archive whose events page makes Polars panic, in a child with ``env``; and its part."""
    location, part = _damaged(forms, "events-panic")
    done = subprocess.run(
        [sys.executable, "-m", "subagent_catalog", "search", location, "e", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=forms.work,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        check=False,
    )
    return part, done


@pytest.mark.parametrize("backtrace", ["0", "1", "full"])
def test_a_polars_panic_reading_a_damaged_page_prints_no_panic_text(forms: Forms, backtrace: str) -> None:
    part, done = _search_panicking(forms, RUST_BACKTRACE=backtrace)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and lines[0].startswith("Error: "), done.stderr[-3000:]
    assert part in lines[0] and "(hint: " in lines[0]


def test_the_panic_is_real_its_report_shows_with_the_traceback_variable(forms: Forms) -> None:
    _, done = _search_panicking(forms, RUST_BACKTRACE="0", SUBAGENT_CATALOG_TRACEBACK="1")
    assert done.returncode == 1 and "panicked at" in done.stderr, done.stderr[-3000:]
