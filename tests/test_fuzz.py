"""Fast fuzz tier: hostile corpora never crash the tool, lose a file, or get written to.

Fixed seeds (deterministic): seeded random cases in chunks (``tests.fuzz.mutations``, checked by
``tests.fuzz.invariants``), then named cases for what a random draw might miss: every truncation
byte class in both encodings, each hostile filesystem entry, huge lines, deep nesting, writers
appending while the reader runs, unreadable entries, inert HTML/CSV output, and a source scan.
The long tier is ``python -m tests.fuzz.runner --cases N`` (``make fuzz``).
"""

from __future__ import annotations

import ast
import csv
import io
import os
import random
import shutil
import stat
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import polars as pl
import pytest

from subagent_catalog.read.paths import Compression
from subagent_catalog.synth.writer import EventLog, descriptor, encode_log, header, log_path, write_file
from tests.fuzz import invariants as inv
from tests.fuzz.mutations import (
    FAST,
    HOSTILE_TEXT,
    IS_ROOT,
    Case,
    LiveWriterSpec,
    base_writer,
    byte_classes,
    fs_live_writer,
    fs_special,
    fs_symlink_inside,
    fs_symlink_loop,
    fs_symlink_outside,
    logs,
    make_case,
    txt_deep_nesting,
    txt_huge,
)

CHUNKS = 4
PER_CHUNK = 25  # 100 seeded cases (plus about 150 named cases below); `make fuzz` runs 10,000
REPORT_EVERY = 5  # the HTML report costs ~0.5 s a page: every 5th case here, every case in the long tier
PARITY_EVERY = 3  # a jobs=2 read starts a process pool: every 3rd case here, every case in the long tier
PACKAGE = Path(inv.PACKAGE_DIR)


def _failures(case: Case, outcome: inv.Outcome) -> list[str]:
    out = []
    for violation in outcome.violations:
        if violation.known is None:
            out.append(
                f"{violation.invariant} [{violation.where}] {violation.detail[:600]}\n    {case.describe()[:600]}\n"
                f"    reproduce: python -m tests.fuzz.runner --fast --case-seed {case.seed}"
            )
    return out


def _check(case: Case, **options: object) -> inv.Outcome:
    try:
        return inv.check_case(case, **options)  # type: ignore[arg-type]
    finally:
        case.cleanup()


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_seeded_hostile_corpora_keep_every_invariant(chunk: int) -> None:
    failures: list[str] = []
    mutated = 0
    for seed in range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK):
        case = make_case(seed, FAST)
        mutated += bool(case.steps)
        outcome = _check(
            case,
            report=seed % REPORT_EVERY == 0,
            parity=seed % PARITY_EVERY == 1,
            timeout=120.0 if case.huge else 60.0,
        )
        failures += _failures(case, outcome)
    assert mutated >= PER_CHUNK * 0.8  # a drawn mutation can find nothing to act on, rarely
    assert not failures, "\n".join(failures)


# --- named cases: a fresh writer tree, then one precise mutation --------------------------------


Builder = Callable[[int, Compression], Case]


@pytest.fixture
def fresh_case() -> Iterator[Builder]:
    """Cases whose base is a writer tree (seeded), cleaned up after the test."""
    made: list[Case] = []

    def build(seed: int, compression: Compression) -> Case:
        workdir = Path(tempfile.mkdtemp(prefix="scfz", dir=FAST.tmp_dir))
        case = Case(seed, workdir, workdir / "r", workdir / "o", compression)
        case.root.mkdir()
        case.outside.mkdir()
        case.base = base_writer(random.Random(seed), case)
        made.append(case)
        return case

    yield build
    for case in made:
        case.cleanup()


def _assert_clean(case: Case, outcome: inv.Outcome) -> None:
    failures = _failures(case, outcome)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_truncation_at_every_byte_class(fresh_case: Builder, compression: Compression) -> None:
    probe = fresh_case(7, compression)
    target = max(logs(probe), key=lambda p: p.stat().st_size)
    data = target.read_bytes()
    classes = byte_classes(data, compression)
    expected = (
        {"header", "at-newline", "event"}
        if compression == "none"
        else {"magic", "frame-header", "block-header", "block-body", "checksum", "frame-boundary", "first-frame"}
    )
    assert expected <= set(classes)
    rel = target.relative_to(probe.root)
    for kind in sorted(classes):
        for start, end in (classes[kind][0], classes[kind][-1]):
            for cut in sorted({start, end - 1}):
                case = fresh_case(7, compression)
                (case.root / rel).write_bytes(data[:cut])
                case.steps.append(f"truncate({rel}, {kind}@{cut})")
                _assert_clean(case, inv.check_case(case, report=False, parity=False))


FS_MUTATIONS = {
    "symlink-loop": fs_symlink_loop,
    "symlink-outside": fs_symlink_outside,
    "symlink-inside": fs_symlink_inside,
    "special": fs_special,
}


@pytest.mark.parametrize("name", sorted(FS_MUTATIONS))
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_hostile_filesystem_entries(fresh_case: Builder, name: str, compression: Compression) -> None:
    applied = 0
    for seed in range(6):
        case = fresh_case(100 + seed, compression)
        step = FS_MUTATIONS[name](random.Random(seed), case)
        if step is None:
            continue
        applied += 1
        case.steps.append(step)
        _assert_clean(case, inv.check_case(case, report=False, parity=False))
    assert applied >= 3


@pytest.mark.parametrize(
    "kind",
    ["fifo", "socket", "directory", "directory-with-content", "device", "self-loop", "outside", "to-session-dir"],
)
def test_each_odd_entry_named_like_a_log_is_reported_not_read(fresh_case: Builder, kind: str) -> None:
    case = fresh_case(3, "none")
    target = logs(case)[-1]
    os.unlink(target)
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        import socket

        short = case.workdir / "s"
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(short))
        os.rename(short, target)
    elif kind.startswith("directory"):
        target.mkdir()
        if kind == "directory-with-content":
            (target / "session.jsonl").write_bytes(header_bytes("inner"))
    elif kind == "device":
        if not IS_ROOT:
            pytest.skip("device nodes need root")
        os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero: endless if ever read
    elif kind == "self-loop":
        os.symlink(target.name, target)
    elif kind == "outside":
        outside_log = case.outside / "session.jsonl"
        outside_log.write_bytes(header_bytes("elsewhere"))
        os.symlink(outside_log, target)
    else:
        os.symlink(target.parent, target)
    outcome = inv.check_case(case, report=False, parity=False, timeout=30.0)
    _assert_clean(case, outcome)
    corpus = inv.read_fresh(case.root, jobs=1)
    rows = corpus.problems.filter(pl.col("path") == str(target))
    assert rows.height >= 1, corpus.problems
    assert str(target) not in corpus.sessions["path"].to_list()


def header_bytes(session_id: str) -> bytes:
    return encode_log(header(session_id, created_at=1), [], "none")


# Found while running the long tier: the harness itself raised ZstdError when a frame mutation
# re-decoded a frame that an earlier mutation had damaged (fixed in the harness: the step is skipped).
def test_frame_mutations_on_already_damaged_frames_do_not_raise(fresh_case: Builder) -> None:
    from tests.fuzz.mutations import mut_zstd_frames, zstd_anatomy

    case = fresh_case(11, "zstd")
    for path in logs(case):
        data = bytearray(path.read_bytes())
        for _start, end in zstd_anatomy(bytes(data)).frames:
            data[end - 1] ^= 0xFF  # every frame's checksum is wrong: structure intact, decoding fails
        path.write_bytes(bytes(data))
    steps = [mut_zstd_frames(random.Random(seed), case) for seed in range(80)]
    assert any(step is None for step in steps) and any(step is not None for step in steps)


# --- huge lines, deep nesting --------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_huge_single_lines_become_rows_not_failures(fresh_case: Builder, compression: Compression) -> None:
    from tests.fuzz.mutations import _text_mutation

    modes = Counter()
    for seed in range(6):
        case = fresh_case(200 + seed, compression)
        step = _text_mutation("huge-line", txt_huge(FAST.huge_bytes))(random.Random(seed), case)
        assert step is not None
        modes[step.split(", ", 1)[1].split(" ")[0]] += 1
        case.steps.append(step)
        outcome = inv.check_case(case, report=seed == 0, parity=seed == 1)
        _assert_clean(case, outcome)
        assert outcome.stats["listing-ok"] + outcome.stats["listing-fails"] == 1
    assert len(modes) >= 3


def test_a_huge_line_costs_memory_in_proportion_not_out_of_memory(tmp_path: Path) -> None:
    from tests.fuzz.runner import _probe_corpus

    size = 24 * 1024 * 1024
    empty = tmp_path / "empty"
    empty.mkdir()
    baseline = inv.peak_rss(empty)
    for compression in ("none", "zstd"):
        measured = inv.peak_rss(_probe_corpus(tmp_path, compression, "huge-label", size))
        assert "peak_kib" in measured, measured
        assert measured["verdicts"] == {"ok": 2}, measured
        over = (measured["peak_kib"] - baseline["peak_kib"]) * 1024
        assert over < 16 * size, f"{compression}: {over / size:.1f}x the line size"  # measured: ~10x


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_deep_json_nesting_never_crashes(fresh_case: Builder, compression: Compression) -> None:
    from tests.fuzz.mutations import _text_mutation

    for seed in range(10):
        case = fresh_case(300 + seed, compression)
        step = _text_mutation("deep-nesting", txt_deep_nesting)(random.Random(seed), case)
        if step is None:
            continue
        case.steps.append(step)
        _assert_clean(case, inv.check_case(case, report=False, parity=False))


# --- times no date names (issue 42, item 3) ------------------------------------------------------

OUTSIDE_TIMES = (2**53 - 1, -(2**53 - 1), 253_402_300_800_000, -62_135_596_800_001)
"""2^53 - 1 ms (a Polars panic when printed), its negative, year 10000 and year 0 (``mutations.HOSTILE_TIMES``)."""


@pytest.mark.parametrize("mode", ["created", "one", "all", "packed"])
def test_hostile_times_keep_every_invariant(fresh_case: Builder, mode: str) -> None:
    """Each way a log carries a time outside years 1 to 9999: exact frames, a problem row, every view draws."""
    from functools import partial

    from tests.fuzz.mutations import _text_mutation, txt_times

    tried = flagged = 0
    for k, base in enumerate(OUTSIDE_TIMES):
        if mode == "created" and base < 0:
            continue  # upstream skips a negative createdAt (not a non-negative safe integer)
        if mode == "packed":
            base = min(base, 2**53 - 1 - 10**6)  # member times past 2^53 - 1 make a corrupt row (not this rule)
        mutation = _text_mutation("times", partial(txt_times, mode=mode, base=base))
        case, step = None, None
        for attempt in range(40):  # a case whose picked log has a packed chunk row (or a header) to change
            if attempt % 10 == 0:
                case = fresh_case(500 + 10 * k + attempt // 10, "zstd" if k % 2 else "none")
            assert case is not None
            step = mutation(random.Random(attempt), case)
            if step is not None:
                break
        assert case is not None and step is not None
        case.steps.append(step)
        outcome = inv.check_case(case, report=k == 0, parity=k == 1)
        _assert_clean(case, outcome)
        tried += 1
        flagged += outcome.stats["times:out-of-range"] >= 1
    assert tried >= 2 and flagged == tried


# --- a writer appends while the reader runs ------------------------------------------------------


def _live_log(root: Path, compression: Compression, events: int = 6000) -> LiveWriterSpec:
    head = header("live", created_at=5)
    log = EventLog("live")
    for _ in range(events // 2):
        log.turn_start()
        log.turn_end()
    path = write_file(log_path(root, head, compression), encode_log(head, log.events, compression, batch=64))
    return LiveWriterSpec(path, "whole", compression, "live", len(log.events), log.time + 1)


@pytest.mark.parametrize("kind", ["whole", "partial"])
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_log_appended_to_while_read_is_a_prefix_or_unstable(
    tmp_path: Path, kind: Literal["whole", "partial"], compression: Compression
) -> None:
    spec = _live_log(tmp_path, compression)
    spec.kind = kind
    writer = inv.LiveWriter(spec)
    spec_start, most = spec.next_seq, 0
    stats: Counter[str] = Counter()
    failures: list[inv.Violation | None] = []
    writer.start()
    try:
        with inv.guarded([tmp_path], []):
            for _ in range(12):
                corpus = inv.read_fresh(tmp_path, compression=compression, jobs=1, events=True)
                reads = corpus.sessions.filter(pl.col("path") == spec.path)
                assert reads.height == 1
                row = reads.row(0, named=True)
                if row["read_cause"] == "unstable-file":
                    stats["unstable-file"] += 1
                    continue
                stats[row["verdict"]] += 1
                assert row["verdict"] in ("ok", "torn-tail"), row
                got = corpus.events.filter(pl.col("session_id") == "live")
                prefix_events = got.height
                most = max(most, prefix_events)
                assert prefix_events == row["event_count"]
                failures.append(_prefix_check(spec, got, prefix_events))
    finally:
        writer.finish()
    assert writer.error is None and writer.appended > 0
    assert sum(stats.values()) == 12
    assert most > spec_start, "no read saw a record appended while the reader ran"
    assert not [f for f in failures if f is not None]


def _prefix_check(spec: LiveWriterSpec, got: pl.DataFrame, count: int) -> inv.Violation | None:
    import orjson

    with inv.exempt_thread():
        expected = inv.written_events(spec.path, spec.compression)
    if count > len(expected):
        return inv.Violation("live", f"{count} events read, {len(expected)} written")
    for (seq, kind, data), want in zip(got.select("seq", "type", "data").iter_rows(), expected, strict=False):
        if (seq, kind, orjson.loads(data)) != (want["seq"], want["type"], want["data"]):
            return inv.Violation("live", f"seq {seq} differs from the record written there")
    return None


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_live_writer_cases_check_the_prefix_invariant(fresh_case: Builder, compression: Compression) -> None:
    # The seeded draw includes live writers now and then; this pins the wiring every run.
    for seed in range(2):
        case = fresh_case(400 + seed, compression)
        step = fs_live_writer(random.Random(seed), case)
        assert step is not None
        case.steps.append(step)
        outcome = inv.check_case(case, report=False)
        _assert_clean(case, outcome)
        assert sum(n for key, n in outcome.stats.items() if key.startswith("live:")) == 1, outcome.stats


def test_a_log_deleted_after_discovery_is_an_io_error_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "r"
    for i in range(3):
        head = header(f"s{i}", created_at=i)
        write_file(log_path(root, head, "none"), encode_log(head, [], "none"))
    victim = log_path(root, header("s2", created_at=2), "none")

    def progress(done: int, total: int) -> None:
        if done == 1:
            with inv.exempt_thread():
                os.unlink(victim)

    with inv.guarded([root], []):
        corpus = inv.read_fresh(root, compression="none", jobs=1, progress=progress)
    row = corpus.sessions.filter(pl.col("path") == victim).row(0, named=True)
    assert row["read_cause"] == "io-error" and corpus.listing_error is not None


# --- unreadable entries ---------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["log", "session-dir", "project-dir", "root"])
def test_unreadable_entries_are_reported_not_raised(what: str) -> None:
    top = Path(tempfile.mkdtemp(prefix="scfz", dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        root = top / "r"
        for i in range(3):
            head = header(f"s{i}", created_at=i, cwd="/p" if i else None)
            write_file(log_path(root, head, "none"), encode_log(head, [], "none"))
        for dirpath, dirnames, filenames in os.walk(top):
            for name in dirnames:
                os.chmod(os.path.join(dirpath, name), 0o755)
            for name in filenames:
                os.chmod(os.path.join(dirpath, name), 0o644)
        victim = {
            "log": Path(log_path(root, header("s1", created_at=1, cwd="/p"), "none")),
            "session-dir": Path(log_path(root, header("s1", created_at=1, cwd="/p"), "none")).parent,
            "project-dir": Path(log_path(root, header("s1", created_at=1, cwd="/p"), "none")).parent.parent,
            "root": root,
        }[what]
        os.chmod(victim, 0)
        result = inv.unreadable_summary_without_privilege(root)
        if result is None:
            pytest.skip("running as root and cannot drop CAP_DAC_OVERRIDE here (no setpriv)")
        if what == "root":
            assert result.get("error") == "CorpusRootError", result
            return
        assert "error" not in result, result
        assert result["violations"] == [], result
        assert result["unaccounted"] == [], result
        assert result["listing_error"] is True, result  # upstream's listing fails on what it cannot read
        if what == "log":
            assert result["causes"][str(victim)] == "io-error", result
        else:
            assert "unreadable-directory" in result["kinds"], result
    finally:
        for dirpath, dirnames, _ in os.walk(top):
            for name in dirnames:
                os.chmod(os.path.join(dirpath, name), 0o755)
        os.chmod(top / "r", 0o755)
        shutil.rmtree(top, ignore_errors=True)


# --- inert outputs --------------------------------------------------------------------------------


HOSTILE_PARENT = "<script>alert(1)</script>"


def _hostile_corpus(top: Path, compression: Compression = "none") -> Path:
    root = top / "<script>alert('root')"
    parent = header(HOSTILE_PARENT, created_at=1, cwd="/tmp/<img src=x onerror=alert(1)>")
    write_file(log_path(root, parent, compression), encode_log(parent, [], compression))
    for i, text in enumerate(HOSTILE_TEXT):
        head = header(f"c{i}-{text[:20]}", created_at=2 + i % 3, parent=parent["id"], cwd=parent["cwd"], subagent=True)
        log = EventLog(head["id"])
        log.turn_start()
        log.user(text)
        log.descriptor(descriptor("continuable", label=text) if i % 4 else {"version": 2, "label": text})
        log.turn_end()
        write_file(log_path(root, head, compression), encode_log(head, log.events, compression))
    (root / "<img src=x onerror=alert(2)>").write_bytes(b"stray root file")
    return root


def test_report_html_keeps_data_inert(tmp_path: Path) -> None:
    from subagent_catalog.views.report import render_report

    corpus = inv.read_fresh(_hostile_corpus(tmp_path), jobs=1)
    assert corpus.listing_error is None
    page = render_report(corpus)
    assert "alert(1)" in page  # the data is there, escaped
    assert inv.markup_violations(page, expected_scripts=inv._baseline_scripts(render_report), what="report") == []
    for raw in ("<img src=x onerror", "<svg/onload", "<SCRIPT>alert(3)", "</style><script>", "<!--"):
        assert raw not in page.replace("<!--[if", ""), raw


def test_notebook_html_keeps_data_inert(tmp_path: Path) -> None:
    from subagent_catalog.frames.display import corpus_html

    corpus = inv.read_fresh(_hostile_corpus(tmp_path), jobs=1)
    html = str(corpus_html(corpus))
    assert inv.markup_violations(html, expected_scripts=0, what="notebook") == []
    assert "<img src=x onerror" not in html and "<script>alert" not in html


def _widget_markup(widget: object) -> list[str]:
    """Every string a widget tree renders as HTML (HTML values), and whether any other text allows HTML."""
    import ipywidgets as widgets

    from subagent_catalog.views.widgets.dashboard_rows import DashboardRows

    out: list[str] = []
    stack = [widget]
    while stack:
        item = stack.pop()
        if isinstance(item, (widgets.HTML, widgets.HTMLMath, DashboardRows)):  # the dashboard's table is HTML too
            out.append(item.value)
        style = getattr(item, "description_allow_html", False)
        assert not style, f"{type(item).__name__} renders its description as HTML"
        stack += list(getattr(item, "children", ()))
    return out


def test_widgets_keep_data_inert(tmp_path: Path) -> None:
    from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard
    from subagent_catalog.views.widgets.dashboard import DIMENSIONS

    corpus = inv.read_fresh(_hostile_corpus(tmp_path), jobs=1)
    browser = CatalogBrowser(corpus)
    pages: list[str] = []
    for session_id in corpus.sessions["session_id"].drop_nulls().to_list():
        browser.select_id(session_id)  # the detail pane of every session, hostile ids and labels included
        pages += _widget_markup(browser)
    board = DiagnosticsDashboard(corpus)
    for dimension in DIMENSIONS:
        board.selected_dimension = dimension
        board.split_by = "project" if dimension != "project" else "verdict"
        for split, value, _count in board.bars:
            board.pick(value, split=split)  # the table of the sessions behind each bar
            pages += _widget_markup(board)
    joined = "\n".join(pages)
    assert "alert(1)" in joined  # the hostile text is shown, as text
    assert inv.markup_violations(joined, expected_scripts=0, what="widgets") == []
    for raw in ("<img src=x onerror", "<svg/onload", "<SCRIPT>alert(3)", "</style><script>"):
        assert raw not in joined, raw


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def test_csv_exports_neutralise_formulas(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from subagent_catalog.cli import main

    root = _hostile_corpus(tmp_path)
    rows: list[list[str]] = []
    for scope in ("children", "descendants"):
        args = ["list", str(root), HOSTILE_PARENT, "--format", "csv", "--quiet", "--no-cache", "--scope", scope]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        rows += list(csv.reader(io.StringIO(result.stdout)))[1:]
    cells = [cell for row in rows for cell in row]
    assert len(rows) >= len(HOSTILE_TEXT)
    assert "'=1+2" in cells and "'-2+3" in cells and "'+cmd|' /C calc'!A0" in cells  # there, neutralised
    for cell in cells:
        if cell.startswith(FORMULA_START):
            try:
                float(cell)
            except ValueError:
                pytest.fail(f"formula-like cell not neutralised: {cell!r}")


BANNED_CALLS = {"eval", "exec"}
BANNED_ATTRIBUTES = {
    ("pickle", "load"),
    ("pickle", "loads"),
    ("marshal", "load"),
    ("marshal", "loads"),
    ("yaml", "load"),
}


def _aliases(tree: ast.Module) -> set[str]:
    """Local names bound to a banned function by ``from pickle import loads [as x]``."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if (node.module, alias.name) in BANNED_ATTRIBUTES
    }


def _banned(call: ast.Call, aliases: set[str]) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id in BANNED_CALLS:
        return f"{func.id}("
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}(" if (func.value.id, func.attr) in BANNED_ATTRIBUTES else None
    if isinstance(func, ast.Name) and func.id in aliases:
        return f"{func.id}( (imported from pickle/marshal/yaml)"
    return None


def _unrestricted_unpicklers(tree: ast.Module) -> list[str]:
    """``pickle.Unpickler`` subclasses without a ``find_class`` allow-list, and bare ``Unpickler(...)`` calls."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base).endswith("Unpickler") for base in node.bases):
            methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
            if "find_class" not in methods:
                found.append(f"class {node.name} (no find_class)")
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("pickle.Unpickler", "Unpickler"):
            found.append(f"{ast.unparse(node.func)}(")
    return found


def test_the_package_never_evaluates_or_unpickles_anything() -> None:
    found = []
    sources = sorted(PACKAGE.rglob("*.py"))
    for path in sources:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        aliases = _aliases(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (what := _banned(node, aliases)) is not None:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {what}")
        found += [f"{path.relative_to(PACKAGE)}: {what}" for what in _unrestricted_unpicklers(tree)]
    assert found == []
    assert len(sources) > 10  # the scan saw the package


def test_the_source_scan_would_see_a_banned_call() -> None:
    tree = ast.parse(
        "import pickle\nfrom marshal import loads as l\npickle.load(f)\neval(x)\nl(b)\n"
        "class U(pickle.Unpickler):\n    pass\n"
    )
    aliases = _aliases(tree)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert sorted(filter(None, (_banned(call, aliases) for call in calls))) == [
        "eval(",
        "l( (imported from pickle/marshal/yaml)",
        "pickle.load(",
    ]
    assert _unrestricted_unpicklers(tree) == ["class U (no find_class)"]


# --- the long runner ------------------------------------------------------------------------------


def test_the_long_runner_records_a_case_that_kills_its_interpreter_and_goes_on(tmp_path: Path) -> None:
    """A native abort (the first long run met one in the chart renderer) ends only that case."""
    import json
    import subprocess
    import sys

    from tests.fuzz.mutations import REPO
    from tests.fuzz.runner import case_seed

    doomed = case_seed(7, 2)
    command = [sys.executable, "-m", "tests.fuzz.runner", "--fast", "--seed", "7", "--cases", "6", "--workers", "2"]
    command += ["--no-memory-probe", "--no-parity", "--report-every", "1000", "--out", str(tmp_path)]
    command += ["--abort-on-seed", str(doomed)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]  # an unreported violation
    [written] = tmp_path.glob("fuzz-*-seed7.json")
    summary = json.loads(written.read_text())
    assert summary["cases_run"] == 5  # every case but the one that aborted, the rest of its shard included
    [(signature, entry)] = summary["violations"].items()
    assert entry["invariant"] == "no-crash" and "(-6)" in signature  # SIGABRT
    assert [example["seed"] for example in entry["examples"]] == [doomed]
    assert f"--case-seed {doomed}" in entry["examples"][0]["detail"]
