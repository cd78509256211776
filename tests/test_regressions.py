"""One named test per crash or invariant violation the fuzz suite found (minimal reproducers).

Tests without a mark guard bugs that are fixed (the commit is named above each group). A test
marked ``xfail(strict=True)`` documents a bug that is reported but not fixed yet: it fails today,
and it starts to pass (so ``strict`` turns it red) once the fix lands, which is the signal to drop
its mark and the matching entry of ``tests.fuzz.invariants.KNOWN_ISSUES``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

from subagent_catalog import Corpus, catalog, list_children, read_corpus, scan_events
from subagent_catalog.errors import CatalogError
from tests.fuzz import invariants as inv


def header_line(session_id: str = "x", **extra: object) -> bytes:
    head = {"type": "session", "version": 0, "id": session_id, "createdAt": 1, "delegationDepth": 0, **extra}
    return orjson.dumps(head)


def put(root: Path, rel: str, *lines: bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# --- crashes ----------------------------------------------------------------------------------------
# Found by the fuzz suite; fixed in 52460dd (total JSON encoder, typed-safe event types and times).


# Found by the fuzz suite (PathIdentityError from corpus._lookup_errors); fixed in fe39f2f.
def test_empty_header_id_fails_the_listing_instead_of_crashing(tmp_path: Path) -> None:
    put(tmp_path, "_no-cwd/x/session.jsonl", header_line(""))
    corpus = read_corpus(tmp_path, compression="none", jobs=1)
    assert corpus.listing_error is not None  # SPEC §7: an empty id fails upstream's whole listing
    with pytest.raises(CatalogError) as raised:
        catalog(corpus)
    assert raised.value.code == "PERSISTENCE_LIST_FAILED"


def test_event_type_that_is_an_object_is_unknown_not_a_crash(tmp_path: Path) -> None:
    put(tmp_path, "_no-cwd/x/session.jsonl", header_line(), b'{"type":{},"seq":0,"time":1,"data":{}}')
    row = read_corpus(tmp_path, compression="none", jobs=1).sessions.row(0, named=True)
    assert (row["verdict"], row["read_cause"]) == ("failed", "unknown-event-type")


def test_descriptor_nested_1000_deep_is_read_not_a_crash(tmp_path: Path) -> None:
    put(
        tmp_path,
        "_no-cwd/x/session.jsonl",
        header_line(),
        b'{"type":"subagent/descriptor","seq":0,"time":1,"data":' + nested(1000) + b"}",
    )
    corpus = read_corpus(tmp_path, compression="none", jobs=1)
    assert corpus.descriptors["payload"].to_list() == [nested(1000).decode()]
    assert corpus.sessions["identity_cause"].to_list() == ["malformed-descriptor"]


def test_event_data_nested_1000_deep_loads_into_the_events_frame(tmp_path: Path) -> None:
    put(
        tmp_path,
        "_no-cwd/x/session.jsonl",
        header_line(),
        b'{"type":"turn/start","seq":0,"time":1,"data":' + nested(1000) + b"}",
    )
    corpus = read_corpus(tmp_path, compression="none", jobs=1, events=True)
    assert corpus.events["data"].to_list() == [nested(1000).decode()]


def test_header_field_nested_1000_deep_is_read_not_a_crash(tmp_path: Path) -> None:
    head = header_line()[:-1] + b',"parentSession":' + nested(1000) + b"}"
    put(tmp_path, "_no-cwd/x/session.jsonl", head)
    corpus = read_corpus(tmp_path, compression="none", jobs=1)
    assert orjson.loads(corpus.sessions["header_json"][0].encode())["id"] == "x"
    assert corpus.sessions["listed"].to_list() == [True]


def test_infinite_header_number_beside_a_big_integer_keeps_the_catalog_working(tmp_path: Path) -> None:
    # 1e400 parses to infinity; a >64-bit integer makes orjson give up, and json.dumps writes `Infinity`.
    head = header_line()[:-1] + b',"version":1e400,"seedLength":100000000000000000000000}'
    put(tmp_path, "_no-cwd/x/session.jsonl", head)
    corpus = read_corpus(tmp_path, compression="none", jobs=1)
    assert corpus.listing_error is None
    assert catalog(corpus).height == 0
    assert "Infinity" not in corpus.sessions["header_json"][0]


@pytest.mark.parametrize("time", [b'"5"', b"null", b"[]", b"{}"])
def test_non_number_event_time_in_the_timing_view_is_not_a_crash(tmp_path: Path, time: bytes) -> None:
    put(tmp_path, "_no-cwd/P/session.jsonl", header_line("P"))
    put(
        tmp_path,
        "_no-cwd/c/session.jsonl",
        header_line("c", parentSession="P", origin="subagent"),
        b'{"type":"subagent/descriptor","seq":0,"time":1,"data":{"version":2,"mode":"one-shot","provider":"spawn"}}',
        b'{"type":"turn/start","seq":1,"time":1,"data":{"turn":1}}',
        b'{"type":"turn/end","seq":2,"time":' + time + b',"data":{"turn":1,"reason":{"kind":"completed"}}}',
    )
    corpus = read_corpus(tmp_path, compression="none", jobs=1)
    row = corpus.sessions.filter(pl.col("session_id") == "c").row(0, named=True)
    assert row["verdict"] == "failed"  # a non-integer time fails upstream's envelope check
    assert list_children(corpus, "P")["reason"].to_list() == ["unavailable"]


# --- file names that are not UTF-8 (fixed in 52460dd: path_bytes, escaped display) ------------

TURN = b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}'


def test_events_of_a_log_in_a_non_utf8_directory_load_lazily_too(tmp_path: Path) -> None:
    put(tmp_path, "_no-cwd/x/session.jsonl", header_line("x"), TURN)
    put(tmp_path, os.path.join("_no-cwd", os.fsdecode(b"bad\x80name"), "session.jsonl"), header_line("y"), TURN)
    eager = read_corpus(tmp_path, compression="none", jobs=1, events=True)
    assert eager.events.height == 2
    lazy = read_corpus(tmp_path, compression="none", jobs=1)
    assert lazy.events.height == 2
    assert scan_events(lazy).collect().height == 2


def test_entries_with_undecodable_names_keep_distinct_paths(tmp_path: Path) -> None:
    put(tmp_path, "_no-cwd/x/session.jsonl", header_line("x"))
    for raw in (b"a\x80", b"a\x81"):
        (tmp_path / os.fsdecode(raw)).write_bytes(b"stray")
    corpus = read_corpus(tmp_path, compression="none", jobs=1)
    stray = [p for p in corpus.problems["path"].to_list() if os.path.basename(p).startswith("a")]
    assert len(stray) == 2
    assert len(set(stray)) == 2, stray


# --- a log replaced between the walk and the read (fixed in 52460dd: O_NOFOLLOW | O_NONBLOCK) ----


def three_sessions(root: Path) -> Path:
    for i in range(3):
        put(root, f"_no-cwd/s{i}/session.jsonl", header_line(f"s{i}"), TURN)
    return root / "_no-cwd" / "s2" / "session.jsonl"


def test_a_log_swapped_for_a_symlink_out_of_the_root_after_the_walk_is_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "r", tmp_path / "o"
    victim = three_sessions(root)
    put(outside, "session.jsonl", header_line("s2"), TURN)

    def swap(done: int, total: int) -> None:
        if done == 1:  # s0 is read; s1 and s2 were already found by the walk
            with inv.exempt_thread():
                victim.unlink()
                victim.symlink_to(outside / "session.jsonl")

    with inv.guarded([root], [outside]) as hits:
        try:
            corpus = read_corpus(root, compression="none", jobs=1, progress=swap)
        except inv.ForbiddenAccess:
            corpus = None
    assert hits == []
    assert corpus is not None and corpus.sessions.height == 3


def test_a_log_swapped_for_a_fifo_after_the_walk_does_not_hang(tmp_path: Path) -> None:
    victim = three_sessions(tmp_path)
    result: dict[str, object] = {}

    def swap(done: int, total: int) -> None:
        if done == 1:
            victim.unlink()
            os.mkfifo(victim)

    def read() -> None:
        try:
            result["corpus"] = read_corpus(tmp_path, compression="none", jobs=1, progress=swap)
        except Exception as error:
            result["error"] = error

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    hung = reader.is_alive()
    if hung:  # release the reader: a writer opens and closes the FIFO, the blocked open returns
        os.close(os.open(victim, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert not hung, "read_corpus blocked opening a FIFO"
    assert "error" not in result
    corpus = result["corpus"]
    assert isinstance(corpus, Corpus)
    row = corpus.sessions.filter(pl.col("path") == str(victim)).row(0, named=True)
    assert row["read_cause"] == "io-error"  # as for any log that cannot be read


# --- found after 52460dd ---------------------------------------------------------------------------


# Found by the fuzz suite: the read opened the full path (O_NOFOLLOW guards only the last
# component) and refused only afterwards; now the path is walked component by component.
def test_a_session_directory_swapped_for_a_symlink_after_the_walk_is_not_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "r", tmp_path / "o"
    victim = three_sessions(root).parent
    put(outside, "s2/session.jsonl", header_line("s2"), TURN)

    def swap(done: int, total: int) -> None:
        if done == 1:
            with inv.exempt_thread():
                (victim / "session.jsonl").unlink()
                victim.rmdir()
                victim.symlink_to(outside / "s2")

    with inv.guarded([root], [outside]) as hits:
        try:
            corpus = read_corpus(root, compression="none", jobs=1, progress=swap)
        except inv.ForbiddenAccess:
            corpus = None
    assert hits == [], hits
    assert corpus is not None
    row = corpus.sessions.filter(pl.col("path") == str(victim / "session.jsonl")).row(0, named=True)
    assert row["read_cause"] == "io-error"  # the walk found a log there; the read refuses the swap


# Found by the fuzz suite; fixed in f6ceb0b.
def test_the_problem_row_of_an_unreadable_log_says_it_fails_the_listing(tmp_path: Path) -> None:
    victim = three_sessions(tmp_path)

    def remove(done: int, total: int) -> None:
        if done == 1:
            victim.unlink()  # the walk found it; the read cannot open it

    corpus = read_corpus(tmp_path, compression="none", jobs=1, progress=remove)
    assert corpus.listing_error is not None and str(victim) in corpus.listing_error
    rows = corpus.problems.filter(pl.col("kind") == "io-error")
    assert rows["fails_listing"].to_list() == [True]
    assert rows["scope"].to_list() == ["corpus"]


# Found by the fuzz suite; fixed in f6ceb0b.
def test_a_header_nested_1000_deep_is_cached_or_skipped_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "r"
    put(root, "_no-cwd/x/session.jsonl", header_line()[:-1] + b',"parentSession":' + nested(1000) + b"}")
    fresh = read_corpus(root, compression="none", jobs=1, cache=False)
    for _ in range(2):  # the read that fills the cache, then the one it serves
        cached = read_corpus(root, compression="none", jobs=1, cache=tmp_path / "cache")
        assert cached.sessions.equals(fresh.sessions)


# --- the process pool ------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]


def many_sessions(root: Path, count: int = 70) -> Path:
    for i in range(count):  # more than PARALLEL_THRESHOLD: the read uses the process pool
        put(root, f"_no-cwd/s{i:03d}/session.jsonl", header_line(f"s{i:03d}"), TURN)
    return root


def run_script(tmp_path: Path, code: str, *args: str, timeout: float = 120.0) -> tuple[int | None, str]:
    """Run ``code`` as a plain script file; (exit code, output), exit code None when it hung."""
    script = tmp_path / "script.py"
    script.write_text(code)
    env = {**os.environ, "SUBAGENT_CATALOG_CACHE": "off", "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # the script and its pool workers
        output, _ = child.communicate()
        return None, output
    return child.returncode, output


# Found by the fuzz suite (92ab947: workers built Polars frames; a forked worker of a process that had
# run Polars deadlocked); fixed in f6ceb0b ("spawn" pool), then in 5e64eef (fork pool, workers build
# the events with pyarrow). Guards any later change of the pool.
def test_parallel_events_after_polars_was_used_do_not_hang(tmp_path: Path) -> None:
    many_sessions(tmp_path / "root")
    code = (
        "import sys\n"
        "from subagent_catalog import read_corpus\n"
        "if __name__ == '__main__':\n"
        "    corpus = read_corpus(sys.argv[1], jobs=2)\n"  # Polars has run in this process now
        "    print(corpus.events.height, read_corpus(sys.argv[1], jobs=2, events=True).events.height)\n"
    )
    status, output = run_script(tmp_path, code, str(tmp_path / "root"), timeout=180)
    assert status is not None, "read_corpus hung in the process pool"
    assert (status, output.split()[-2:]) == (0, ["70", "70"]), output


# Found while checking the f6ceb0b fix (a "spawn" pool re-runs an unguarded caller script in every
# worker: BrokenProcessPool); fixed in 5e64eef (fork pool again).
def test_a_plain_script_without_a_main_guard_can_read_a_large_root(tmp_path: Path) -> None:
    many_sessions(tmp_path / "root")
    code = (
        "import sys\n"
        "from subagent_catalog import read_corpus\n"
        "corpus = read_corpus(sys.argv[1], jobs=2)\n"  # no `if __name__ == '__main__':`, as in the README
        "print('sessions', corpus.sessions.height)\n"
    )
    status, output = run_script(tmp_path, code, str(tmp_path / "root"), timeout=180)
    assert status == 0, output[-2000:]
    assert output.split()[-2:] == ["sessions", "70"]


# --- found by the 10,000-case run on 7b46beb and before --------------------------------------------


# Found by the fuzz suite: catalog._seed_length converted seedLength 1e400 (Infinity) with int().
def test_an_infinite_seed_length_does_not_break_the_catalog(tmp_path: Path) -> None:
    put(tmp_path, "_no-cwd/P/session.jsonl", header_line("P"))
    child = header_line("c", parentSession="P", origin="subagent")[:-1] + b',"seedLength":1e400}'
    put(tmp_path, "_no-cwd/c/session.jsonl", child, TURN)
    corpus = read_corpus(tmp_path, compression="none", jobs=1)
    assert corpus.listing_error is None
    rows = list_children(corpus, "P")
    assert rows["reason"].to_list() == ["unavailable"]  # a non-integer seedLength fails the cold read
    assert list_children(corpus, "P", semantics="trace").height == 1
    assert catalog(corpus).height == 1


# Found by the fuzz suite: discover._session_dir skipped an other-encoding name that does not exist
# (a dangling or looping symlink), so the entry was in neither frame.
@pytest.mark.parametrize("target", ["session.jsonl", "nowhere"])
def test_a_dangling_symlink_named_like_the_other_encoding_is_accounted_for(tmp_path: Path, target: str) -> None:
    log = put(tmp_path, "_no-cwd/x/session.jsonl", header_line("x"), TURN)
    other = log.parent / "session.jsonl.zstd"
    other.symlink_to(other.name if target == "session.jsonl" else target)  # a loop, or a link to nothing
    corpus = read_corpus(tmp_path, compression="none", jobs=1)
    assert corpus.sessions["path"].to_list() == [str(log)]
    assert str(other) in corpus.problems["path"].to_list()


# Found by the 10,000-case run on 7b46beb (twice, ~1 case in 4,000): a provider or version string
# holding a character XML 1.0 forbids (NUL, other C0 controls, U+FFFE) reached the chart renderer,
# whose Rust SVG parser panicked and aborted the whole process: no exception, no report, and the
# fuzz worker died with it. Run in a child interpreter so an abort fails this test, not the session.
_RENDER_HOSTILE_CHARTS = """
import sys
from subagent_catalog.synth import writer as w
from subagent_catalog.corpus import read_corpus
from subagent_catalog.views.report import render_report
root = sys.argv[1]
w.write_session(root, w.header("P", created_at=1), [], "none")
odd = ["\\x00", "\\x01", "\\x0b", "\\x1f", "\\x7f", "\\ufffe", "\\uffff", "\\ud800"]
for i, char in enumerate(odd):
    payload = {"version": 2, "mode": "one-shot" + char, "provider": "spawn" + char, "label": "x" + char}
    head = w.header(f"c{i}", created_at=2 + i, parent="P", subagent=True, delegation_depth=1)
    w.write_session(root, head, w.simple_child_events(f"c{i}", payload), "none")
payload = {"version": "2\\x00", "mode": "one-shot", "provider": "spawn"}
head = w.header("v", created_at=20, parent="P", subagent=True, delegation_depth=1)
w.write_session(root, head, w.simple_child_events("v", payload), "none")
page = render_report(read_corpus(root, jobs=1))
print(page.count('<div class="plot view-linear"><svg'), "spawn\u2400" in page, "2\u2400" in page)
"""


def test_chart_labels_xml_forbids_do_not_abort_the_report(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _RENDER_HOSTILE_CHARTS, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    charts, provider, version = done.stdout.split()
    assert int(charts) >= 5 and provider == version == "True"  # drawn, with NUL shown as U+2400


# Found while probing the chart renderer for the bug above with every code point: Vega cut a label
# past its pixel limit by UTF-16 unit, splitting an emoji's surrogate pair, and vl-convert failed
# the chart with ValueError, which render_report raised. Labels are now cut by code point only.
def test_wide_astral_chart_labels_do_not_fail_the_report(tmp_path: Path) -> None:
    from subagent_catalog.synth import writer as w
    from subagent_catalog.views.report import render_report

    w.write_session(tmp_path, w.header("P", created_at=1), [], "none")
    for i, text in enumerate(["\U0001f600" * 40, "\U00010900" * 60, "\u4e2d" * 60]):
        payload = {"version": 2, "mode": "one-shot", "provider": text, "label": "x"}
        head = w.header(f"c{i}", created_at=2 + i, parent="P", subagent=True, delegation_depth=1)
        w.write_session(tmp_path, head, w.simple_child_events(f"c{i}", payload), "none")
        payload = {"version": text, "mode": "one-shot", "provider": "spawn"}
        head = w.header(f"v{i}", created_at=9 + i, parent="P", subagent=True, delegation_depth=1)
        w.write_session(tmp_path, head, w.simple_child_events(f"v{i}", payload), "none")
    page = render_report(read_corpus(tmp_path, jobs=1))
    assert "could not be drawn" not in page
    # the six distribution charts (the Trends section's charts are figures of their own, ids trend-*)
    assert page.count('<figure class="chart" id="chart-') == page.count('<div class="plot view-linear"><svg') == 6


# Found by the 10,000-case run on 1d1e489 (the kernel's OOM killer ended a worker at 24 GiB; seed
# 1008729: a 400-session chain closed into a cycle, one label of 100 MiB): catalog_descendants
# built one frame row per (root, descendant) from Python values, so each of the label's 400
# ancestors got its own 100 MiB copy. Rows are now built once and gathered (shared buffers).
_DESCENDANTS_MEMORY = """
import resource, sys
from subagent_catalog.synth import writer as w
from subagent_catalog.catalog.tables import catalog_descendants
from subagent_catalog.corpus import read_corpus
root, depth, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
w.write_session(root, w.header("s0", created_at=1), [], "none")
for i in range(1, depth):
    head = w.header(f"s{i}", created_at=1 + i, parent=f"s{i - 1}", subagent=True, delegation_depth=i)
    label = "L" * size if i == depth - 1 else "x"
    w.write_session(root, head, w.simple_child_events(f"s{i}", w.descriptor("one-shot", label=label)), "none")
corpus = read_corpus(root, jobs=1)
before = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
frame = catalog_descendants(corpus)
after = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
labels = frame.filter(frame["id"] == f"s{depth - 1}")["label"]
print(frame.height, labels.len(), labels.str.len_bytes().min(), (after - before) * 1024)
"""


def test_a_huge_label_deep_in_a_chain_is_not_copied_per_ancestor(tmp_path: Path) -> None:
    depth, size = 300, 8 * 1024 * 1024  # old cost: 299 copies, ~2.4 GB; a shared buffer costs ~nothing
    done = subprocess.run(
        [sys.executable, "-c", _DESCENDANTS_MEMORY, str(tmp_path), str(depth), str(size)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    height, copies, shortest, grown = (int(v) for v in done.stdout.split())
    assert height == depth * (depth - 1) // 2 and copies == depth - 1 and shortest == size  # every row is there
    assert grown < 20 * size, f"catalog_descendants grew the peak by {grown / size:.0f}x the label"


# --- the Dask engine: one line, never a hang ---------------------------------------------------------
# Found in review (reliability issue item 7): a KilledWorker or a worker-side I/O error came out as a
# traceback, and an export whose every worker was lost waited forever.


def test_a_killed_worker_or_a_worker_io_error_is_an_engine_error() -> None:
    from distributed import KilledWorker

    from subagent_catalog.store.distributed import EngineError, RootNotVisibleError, task_failure
    from subagent_catalog.store.location import Location
    from subagent_catalog.store.tasks import Job, ReadTask, Slice

    job = Job("/corpus", "/corpus", "none", Location("/archive"), "gen-000001", False)
    task = ReadTask(job, 3, [Slice(0, "p", 0, 2, 0)], [], None, [], None)
    killed = task_failure(KilledWorker("read_task-1f2e", None, 3), task.describe())
    assert isinstance(killed, EngineError)
    assert str(killed).startswith("a Dask worker died while reading 2 file(s) from '/corpus/p' (hint:")
    io_error = task_failure(PermissionError(13, "Permission denied"), task.describe())
    assert isinstance(io_error, EngineError) and "failed while reading 2 file(s)" in str(io_error)
    invisible = RootNotVisibleError("corpus root '/corpus' is not a directory on worker w1")
    assert task_failure(invisible, task.describe()) is invisible  # export_archive gives it its own hint
    bug = ZeroDivisionError("x")
    assert task_failure(bug, task.describe()) is bug


def test_an_export_whose_every_worker_is_lost_gives_up_with_an_engine_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    from distributed import Client, LocalCluster

    from subagent_catalog.store import distributed as engine
    from subagent_catalog.store.export import export_archive
    from subagent_catalog.synth.writer import header, write_session

    for index in range(3):
        write_session(tmp_path / "corpus", header(f"s{index}", created_at=index + 1), [], "none")
    previous = export_archive(tmp_path / "corpus", tmp_path / "out", jobs=1)
    monkeypatch.setattr(engine, "WORKER_LOST_SECONDS", 1.0)
    monkeypatch.setattr(engine, "WORKER_CHECK_SECONDS", 0.2)
    with (
        LocalCluster(
            n_workers=1, processes=False, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR
        ) as cluster,
        Client(cluster, set_as_default=False) as admin,
    ):
        real = engine.run_dask

        def losing_every_worker(*args: Any, **kwargs: Any) -> Any:
            admin.retire_workers(list(admin.scheduler_info(n_workers=-1)["workers"]), close_workers=True)
            return real(*args, **kwargs)

        monkeypatch.setattr("subagent_catalog.store.export.run_dask", losing_every_worker)
        raised: list[BaseException] = []

        def export() -> None:
            try:
                export_archive(
                    tmp_path / "corpus", tmp_path / "out", engine="dask", scheduler=cluster.scheduler_address
                )
            except BaseException as error:  # handed to the test thread
                raised.append(error)

        worker = threading.Thread(target=export, daemon=True)  # before the fix it waited forever
        worker.start()
        worker.join(timeout=60)
        assert not worker.is_alive(), "the export still waits for a worker after 60 s"
    assert len(raised) == 1 and isinstance(raised[0], engine.EngineError), raised
    assert re.match(r"no Dask worker .* has been alive for 1 s while 1 task\(s\) wait \(hint: ", str(raised[0]))
    # the previous generation is intact and nothing new is visible
    assert json.loads((tmp_path / "out" / "manifest.json").read_text()) == previous
    assert sorted(os.listdir(tmp_path / "out")) == [".lock", "gen-000001", "manifest.json"]


@pytest.mark.parametrize("exact", [False, True])
def test_a_last_event_without_time_in_an_open_turn_is_a_failed_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exact: bool
) -> None:
    # Upstream's closers copy the last event's time (undefined here); the read then fails on that
    # event's envelope. Before, the closers raised KeyError and read_corpus crashed.
    from subagent_catalog.read import fastpath
    from subagent_catalog.read.logread import analyse_log

    monkeypatch.setattr(fastpath, "ENABLED", not exact)
    lines = [
        {"type": "session", "version": 0, "id": "s", "createdAt": 1, "cwd": "/w", "delegationDepth": 0},
        {"type": "turn/start", "seq": 0, "time": 5, "data": {"turn": 1}},
        {"type": "step/start", "seq": 1, "data": {"turn": 1, "step": 1}},
    ]
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    facts = analyse_log(data, "none")
    assert (facts.verdict, facts.read_cause) == ("failed", "envelope")
    assert "(time)" in (facts.read_message or "")
    path = tmp_path / "--w" / "s" / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    corpus = read_corpus(tmp_path, cache=False)
    assert corpus.sessions["verdict"].to_list() == ["failed"]
