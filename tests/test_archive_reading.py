"""Reliability round 3 (issue 29), archives: row bombs, raw Polars errors and panics, paths leaving the root.

Each test rebuilds a reported failure at its reported size and checks what happens now: the
manifest's row counts and sizes are checked against each part's Parquet footer before a part is
read, readers stream in bounded batches, every read error is an ``ArchiveError`` naming the file
(the CLI: one line), and a sessions row's path is only opened inside the manifest's corpus root.
Memory is measured in a child process (its own peak RSS, ``VmHWM``).
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest

from subagent_catalog import catalog, list_children, search_events
from subagent_catalog.corpus import read_corpus
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.checksum import DIGEST_KEY, part_digest
from subagent_catalog.store.export import export_archive
from subagent_catalog.store.layout import ArchiveError
from subagent_catalog.synth.generate import generate
from subagent_catalog.synth.writer import EventLog, header, write_session
from tests.fuzz.archives import canonical_corpus, canonical_export, find_damage, flipped, write_bomb

BOMB_PEAK_MB = 400
"""The bound on a command's peak RSS over a row-bombed archive (Python, Polars and pyarrow are about 170 MB)."""


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small zstd corpus and its archive with events (copied by each test before it is damaged)."""
    work = tmp_path_factory.mktemp("archive-reading")
    root = work / "corpus"
    generate(root, sessions=12, seed=29, compression="zstd", jobs=1)
    export_archive(root, work / "archive", jobs=1, events=True)
    return root, work / "archive"


def _copy(source: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, dict[str, Any]]:
    root, archive = source
    out = tmp_path / "archive"
    shutil.copytree(archive, out)
    return root, out, json.loads((out / "manifest.json").read_text())


PEAK_CHILD = """
import atexit, os, runpy, sys
def _peak():  # VmHWM: this interpreter's own peak (a forked child's ru_maxrss starts at its parent's RSS)
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(os.environ["PEAK_FILE"], "w") as handle:
        handle.write(peak)
atexit.register(_peak)
sys.argv = ["subagent-catalog", *sys.argv[1:]]
runpy.run_module("subagent_catalog", run_name="__main__")
"""


def _measured(*args: str) -> tuple[int, str, float]:
    """Run the CLI in a child; its exit status, stderr and its own peak RSS in MB."""
    peak_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"peak-{os.getpid()}-{random.random()}"
    env = {**os.environ, "PEAK_FILE": str(peak_file)}
    done = subprocess.run([sys.executable, "-c", PEAK_CHILD, *args], capture_output=True, text=True, env=env)
    peak = int(peak_file.read_text()) / 1024
    peak_file.unlink()
    return done.returncode, done.stderr, peak


def _one_error_line(stderr: str, *needles: str) -> str:
    lines = stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr[-3000:]
    assert "Traceback" not in stderr and "panicked" not in stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def _forget_file_stats(out: Path) -> None:
    manifest = json.loads((out / "manifest.json").read_text())
    for entry in (*manifest["tables"].values(), manifest["fingerprints"]):
        entry.pop("file_rows", None)
        entry.pop("file_bytes", None)
        entry.pop(DIGEST_KEY, None)
    (out / "manifest.json").write_text(json.dumps(manifest))


def _restat(entry: dict[str, Any], index: int, path: Path) -> None:
    """Record a rewritten part's size and digest in its manifest entry (what a careful tamperer does)."""
    entry["file_bytes"][index] = path.stat().st_size
    entry[DIGEST_KEY][index] = part_digest(path.read_bytes())


def _bomb(out: Path, name: str, rows: int) -> None:
    table = pq.read_table(out / name).slice(0, 1)
    (out / name).unlink()
    write_bomb(table, rows, out / name)


# --- item 3: row bombs ---------------------------------------------------------------------------


def test_an_events_part_repeating_one_row_30_million_times_is_refused_before_search_reads_it(
    source: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out, manifest = _copy(source, tmp_path)
    name = manifest["tables"]["events"]["files"][0]
    _bomb(out, name, 30_000_000)
    assert (out / name).stat().st_size < 3 << 20  # a few MB on disk, as reported (2.3 MB)
    code, stderr, peak = _measured("search", str(out), "e", "--limit", "5")
    assert code == 1
    _one_error_line(stderr, name.split("/")[-1], "bytes, its manifest says")  # the recorded size
    assert peak < BOMB_PEAK_MB, peak  # reported: past 6 GB in 3 s
    _forget_file_stats(out)  # as exported before this check: the row counts tell
    code, stderr, peak = _measured("search", str(out), "e", "--limit", "5")
    assert code == 1
    _one_error_line(stderr, name.split("/")[-1], "holds 30000000")
    assert peak < BOMB_PEAK_MB, peak


def test_a_row_bomb_the_manifest_agrees_with_is_searched_in_bounded_batches(
    source: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out, manifest = _copy(source, tmp_path)
    entry = manifest["tables"]["events"]
    _bomb(out, entry["files"][0], 5_000_000)
    entry["rows"] += 5_000_000 - entry["file_rows"][0]
    entry["file_rows"][0] = 5_000_000
    _restat(entry, 0, out / entry["files"][0])
    (out / "manifest.json").write_text(json.dumps(manifest))
    code, stderr, peak = _measured("search", str(out), "no such text anywhere", "--limit", "5")
    assert code == 0, stderr  # every row read, a batch at a time
    assert peak < BOMB_PEAK_MB, peak


def test_a_facts_part_of_20_million_copies_does_not_blow_up_an_incremental_export(
    source: tuple[Path, Path], tmp_path: Path
) -> None:
    root, out, manifest = _copy(source, tmp_path)
    name = manifest["fingerprints"]["files"][0]
    _bomb(out, name, 20_000_000)
    _forget_file_stats(out)  # as exported before this check: the row counts tell
    code, stderr, peak = _measured("export", str(root), str(out), "--jobs", "1")
    assert code == 0, stderr
    update = json.loads((out / "manifest.json").read_text())["update"]
    assert "the facts files hold 20000" in update["full_read_reason"]  # read again, not reused
    assert peak < BOMB_PEAK_MB, peak  # reported: past 5 GB


def test_a_facts_bomb_the_manifest_agrees_with_keeps_one_record_per_file(
    source: tuple[Path, Path], tmp_path: Path
) -> None:
    root, out, manifest = _copy(source, tmp_path)
    entry = manifest["fingerprints"]
    _bomb(out, entry["files"][0], 2_000_000)
    entry["rows"] += 2_000_000 - entry["file_rows"][0]
    entry["file_rows"][0] = 2_000_000
    _restat(entry, 0, out / entry["files"][0])
    (out / "manifest.json").write_text(json.dumps(manifest))
    code, stderr, peak = _measured("export", str(root), str(out), "--jobs", "1")
    assert code == 0, stderr
    assert json.loads((out / "manifest.json").read_text())["update"]["files_reused"] > 0  # read page by page
    assert peak < BOMB_PEAK_MB, peak


# --- item 4: raw Polars errors, panics and time zones ---------------------------------------------


def test_a_flipped_bit_that_makes_utc_utc_is_an_archive_error_not_a_panic(
    source: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out, manifest = _copy(source, tmp_path)
    name = manifest["tables"]["sessions"]["files"][0]
    data = (out / name).read_bytes()
    stored = pq.read_metadata(out / name).metadata[b"ARROW:schema"]  # base64 of the Arrow schema
    schema = bytearray(base64.b64decode(stored))
    schema[schema.find(b"UTC") + 2] ^= 0x20  # one bit turns C into c
    flipped = base64.b64encode(bytes(schema))
    assert len(flipped) == len(stored) and data.count(stored) == 1
    (out / name).write_bytes(data.replace(stored, flipped))
    with pytest.raises(ArchiveError, match="does not match its checksum"):  # the bit is seen at once
        catalog(open_archive(out))
    _restat(manifest["tables"]["sessions"], 0, out / name)  # a careful tamperer: then the schema check sees it
    (out / "manifest.json").write_text(json.dumps(manifest))
    for call in (lambda: catalog(open_archive(out)), lambda: open_archive(out).to_corpus()):
        with pytest.raises(ArchiveError, match="'UTC'") as raised:
            call()
        assert name.split("/")[-1] in str(raised.value) and "UTc" in str(raised.value)


@pytest.mark.parametrize("zone", ["UTc", "Mars/Olympus", "Europe/Paris"])
def test_a_timestamp_column_in_another_time_zone_is_an_archive_error(
    source: tuple[Path, Path], tmp_path: Path, zone: str
) -> None:
    import pyarrow as pa

    _, out, manifest = _copy(source, tmp_path)
    name = manifest["tables"]["sessions"]["files"][0]
    table = pq.read_table(out / name)
    position = table.column_names.index("created_at")
    changed = table.column(position).cast(pa.int64()).cast(pa.timestamp("ms", tz=zone))
    pq.write_table(table.set_column(position, "created_at", changed), out / name)
    _restat(manifest["tables"]["sessions"], 0, out / name)  # a careful tamperer
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArchiveError, match="column 'created_at' has type") as raised:
        list_children(open_archive(out), "x")
    assert name.split("/")[-1] in str(raised.value)


def _damage(data: bytearray, rng: random.Random) -> bytearray:
    kind = rng.choice(["flip", "flip", "truncate", "zero", "footer"])
    if kind == "flip":
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        del data[rng.randrange(len(data)) :]
    elif kind == "zero":
        at = rng.randrange(len(data))
        data[at : at + 64] = bytes(len(data[at : at + 64]))
    else:
        data[-8:-4] = rng.randrange(2**32).to_bytes(4, "little")
    return data


@pytest.fixture(scope="module")
def canonical(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The canonical archive with events: the same bytes on every machine (``canonical_export``)."""
    work = tmp_path_factory.mktemp("canonical")
    canonical_corpus(work / "corpus")
    return canonical_export(work, "archive", events=True)


DAMAGE_CHILD = """
import json, sys
from subagent_catalog import catalog, list_children, transcript
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.store.archive import open_archive
cases, parent, session = json.loads(sys.argv[1])
for out in cases:
    calls = {
        "catalog": lambda: catalog(open_archive(out)),
        "list_children": lambda: list_children(open_archive(out), parent),
        "to_corpus": lambda: open_archive(out).to_corpus(events=True),
        "transcript": lambda: transcript(open_archive(out).to_corpus(), session),
    }
    for name, call in calls.items():
        try:
            call()
            outcome = "ok"
        except SubagentCatalogError:
            outcome = "typed"
        except BaseException as error:  # PanicException included: what the reader must never raise
            outcome = f"raw {type(error).__name__}: {str(error)[:160]}"
        print(json.dumps([out, name, outcome]), flush=True)
"""


def test_damaged_archives_give_archive_errors_from_every_reader(canonical: Path, tmp_path: Path) -> None:
    """The reported sweep, smaller: 161 of 300 damaged-archive cases raised raw Polars errors or panics; and one
    in about 400 damaged parts aborted the process (a pytest worker died, then ``make test`` hung).

    The damage is drawn by a seeded generator over the canonical archive's bytes, so it is the same on every
    machine; four more cases have footer flips that abort pyarrow's footer accessors (found by a probe). The
    readers run in a child process: an abort is a failed assertion here, not a dead test process.
    """
    rng = random.Random(29)
    manifest = json.loads((canonical / "manifest.json").read_text())
    names = [n for entry in (*manifest["tables"].values(), manifest["fingerprints"]) for n in entry["files"]]
    sessions = pl.read_parquet(canonical / manifest["tables"]["sessions"]["files"][0])["session_id"].drop_nulls()
    parent, session = str(sessions[0]), str(sessions[-1])
    cases: dict[str, str] = {}
    for case in range(44):
        out = tmp_path / f"case-{case}"
        shutil.copytree(canonical, out)
        name = rng.choice(names) if case < 40 else sorted(names)[case - 40]
        data = bytearray((out / name).read_bytes())
        if case < 40:
            (out / name).write_bytes(_damage(data, rng))
        else:
            flips = find_damage(data, rng, region="footer", want="abort", flips=3, tries=3_000)
            assert flips is not None, f"no footer flip of {name} aborts pyarrow's footer accessors any more"
            (out / name).write_bytes(flipped(data, flips))
        cases[str(out)] = name
    done = subprocess.run(
        [sys.executable, "-c", DAMAGE_CHILD, json.dumps([list(cases), parent, session])],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])  # no abort (it was -6, SIGABRT)
    outcomes = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(outcomes) == 4 * len(cases)
    raw = [f"{call} on {cases[out]}: {outcome}" for out, call, outcome in outcomes if outcome.startswith("raw")]
    assert raw == []
    typed = sum(1 for _, _, outcome in outcomes if outcome == "typed")
    assert typed > 40  # most damage is seen (a damaged facts part is read by exports only)


def test_the_cli_prints_one_line_for_a_damaged_events_part(source: tuple[Path, Path], tmp_path: Path) -> None:
    _, out, manifest = _copy(source, tmp_path)
    name = manifest["tables"]["events"]["files"][0]
    data = bytearray((out / name).read_bytes())
    data[len(data) // 3 : len(data) // 3 + 64] = bytes(64)  # inside the pages: the footer is fine
    (out / name).write_bytes(data)
    code, stderr, _ = _measured("search", str(out), "e")
    assert code in (0, 1), stderr
    if code == 1:
        _one_error_line(stderr, name.split("/")[-1])


# --- item 10: archive paths are data ---------------------------------------------------------------

AUDIT_CHILD = """
import os, sys
from subagent_catalog import transcript
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.checksum import DIGEST_KEY, part_digest
outside = os.path.realpath(sys.argv[2])
opened = []
sys.addaudithook(lambda event, args: opened.append(os.path.realpath(os.fsdecode(args[0])))
                 if event == "open" and args and isinstance(args[0], (str, bytes)) else None)
try:
    transcript(open_archive(sys.argv[1]).to_corpus(), sys.argv[3])
    print("read")
except SubagentCatalogError as error:
    print(type(error).__name__, error)
print("opened outside" if any(p.startswith(outside) for p in opened) else "nothing outside")
"""


@pytest.mark.parametrize("where", ["absolute", "dotdot", "etc-passwd"])
def test_a_tampered_path_in_an_events_less_archive_is_never_opened(
    source: tuple[Path, Path], tmp_path: Path, where: str
) -> None:
    import pyarrow as pa

    root, _ = source
    out = tmp_path / "plain"
    export_archive(root, out, jobs=1)
    manifest = json.loads((out / "manifest.json").read_text())
    outside = tmp_path / "outside"
    log = outside / "p" / "s" / "session.jsonl.zstd"
    log.parent.mkdir(parents=True)
    shutil.copyfile(next(root.rglob("session.jsonl.zstd")), log)
    target = {
        "absolute": log,
        "dotdot": Path(f"{root}/{os.path.relpath(log, root)}"),  # root/../../...: lexically below the root
        "etc-passwd": Path("/etc/passwd"),
    }[where]
    name = manifest["tables"]["sessions"]["files"][0]
    table = pq.read_table(out / name)
    session = table.column("session_id")[0].as_py()
    for column, value in (("path", str(target)), ("path_bytes", os.fsencode(str(target)))):
        position = table.column_names.index(column)
        table = table.set_column(position, column, pa.array([value] * table.num_rows, table.schema.field(column).type))
    pq.write_table(table, out / name)
    _restat(manifest["tables"]["sessions"], 0, out / name)
    (out / "manifest.json").write_text(json.dumps(manifest))
    watched = "/etc/passwd" if where == "etc-passwd" else str(outside)
    done = subprocess.run(
        [sys.executable, "-c", AUDIT_CHILD, str(out), watched, session], capture_output=True, text=True, timeout=120
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[-1] == "nothing outside", done.stdout + done.stderr
    assert lines[0].startswith("ArchiveError") and "inside its corpus root" in lines[0], lines[0]


@pytest.mark.parametrize("limit", [5, None])  # bounded batches (pyarrow), and the Polars scan of each file
def test_invalid_utf8_in_an_events_part_is_an_archive_error_not_a_panic(
    source: tuple[Path, Path], tmp_path: Path, limit: int | None
) -> None:
    """Found by the long archive tier (seed 1000301): pyarrow reads invalid text as it is, and Polars panicked
    ("PyObject pointer is null") turning it into Python strings during the search."""
    import pyarrow as pa

    _, out, manifest = _copy(source, tmp_path)
    name = manifest["tables"]["events"]["files"][0]
    table = pq.read_table(out / name)
    position = table.column_names.index("text")  # the column the search reads
    data = table.column(position).combine_chunks().cast(pa.large_string())
    validity, offsets, values = data.buffers()[0], data.buffers()[1], bytearray(data.buffers()[2].to_pybytes())
    values[0] = 0xFF  # not UTF-8, inside the first text
    broken = pa.Array.from_buffers(pa.large_string(), len(data), [validity, offsets, pa.py_buffer(bytes(values))])
    pq.write_table(table.set_column(position, "text", broken), out / name)
    _restat(manifest["tables"]["events"], 0, out / name)
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArchiveError, match=r"(?i)invalid UTF-?8") as raised:
        search_events(open_archive(out), "e", types=None, limit=limit)
    assert name.split("/")[-1] in str(raised.value)


def _relative_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A corpus exported without events as ``export logs arch`` run in ``tmp_path/work``."""
    work = tmp_path / "work"
    root = work / "logs"
    for index in range(3):
        log = EventLog(f"s{index}")
        log.turn_start()
        log.user(f"find the needle {index}")
        log.turn_end()
        write_session(root, header(f"s{index}", created_at=index, cwd=f"/p/{index % 2}"), log.events, "none")
    monkeypatch.chdir(work)
    export_archive("logs", "arch", jobs=1)
    return root, work / "arch"


def test_relative_root_is_read_at_root_abs_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, path = _relative_export(tmp_path, monkeypatch)
    expected = read_corpus(root)
    monkeypatch.chdir(tmp_path)  # "logs" names nothing here
    archive = open_archive(path)
    assert archive.root == "logs" and archive.log_root == str(root)
    corpus = archive.to_corpus()
    assert corpus.sessions["path"].str.starts_with("logs/").all()  # the frames keep the paths as exported
    assert corpus.events.equals(expected.events)
    assert corpus.log_events(1).equals(expected.log_events(1))
    assert (
        search_events(archive, "needle")
        .drop("project_dir")
        .equals(search_events(expected, "needle").drop("project_dir"))
    )
    assert archive.events_available()


def test_relative_root_from_the_export_directory_reads_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, path = _relative_export(tmp_path, monkeypatch)
    archive = open_archive(path)  # still in the directory the export ran in
    assert archive.log_root == "logs"
    assert archive.to_corpus().events.equals(read_corpus(root).events)


def test_relative_root_whose_recorded_directory_is_gone_reads_the_relative_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, path = _relative_export(tmp_path, monkeypatch)
    moved = tmp_path / "elsewhere"
    (moved / "logs").parent.mkdir()
    root.rename(moved / "logs")  # a CI checkout in another place, the same layout below it
    monkeypatch.chdir(moved)
    archive = open_archive(path)
    assert archive.log_root == "logs"
    assert archive.to_corpus().events.equals(read_corpus(moved / "logs").events)


def test_relative_root_gone_everywhere_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, path = _relative_export(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    root.rename(tmp_path / "gone")
    archive = open_archive(path)
    assert not archive.events_available()
    with pytest.raises(ArchiveError, match="holds no events table and its corpus root 'logs' is not here"):
        _ = archive.to_corpus().events


def test_a_window_of_an_archive_reads_its_events_from_the_table(tmp_path: Path) -> None:
    """A window's copy of an archive's corpus used to read its events from the root: none once it was gone."""
    from subagent_catalog import window_corpus

    root = tmp_path / "sample"
    shutil.copytree(Path(__file__).parent.parent / "data" / "sample", root)
    export_archive(root, tmp_path / "arch", events=True, jobs=1)
    expected = window_corpus(read_corpus(root), since="2026-01-01 00:00:03")
    events, first = expected.events, int(expected.sessions["list_order"][0])
    one = expected.log_events(first)
    assert 0 < expected.sessions.height < read_corpus(root).sessions.height and events.height > 0
    shutil.rmtree(root)  # the logs are gone: only the archive's events table can give them
    windowed = window_corpus(open_archive(tmp_path / "arch"), since="2026-01-01 00:00:03")
    assert windowed.sessions.equals(expected.sessions)
    assert windowed.log_events(first).equals(one)
    assert windowed.events.equals(events)
    again = window_corpus(windowed, since="2026-01-01 00:00:04")  # a window of the window
    assert again.events.equals(events.filter(pl.col("session_id").is_in(again.sessions["session_id"].implode())))


def test_frames_read_the_files_in_order_without_a_sort(source: tuple[Path, Path], monkeypatch: Any) -> None:
    """An export's files, read in the order of their first rows, are already in list order: no sort is made."""
    from subagent_catalog.store import archive as archive_module

    root, out = source
    archive = open_archive(out)
    assert len(archive.manifest["tables"]["sessions"]["files"]) > 1  # several files, so their order matters
    sorts: list[list[str]] = []
    real = archive_module._in_order

    def counted(frame: Any, by: list[str], *args: Any, **kwargs: Any) -> Any:
        sorts.append(by)
        return real(frame, by, *args, **kwargs)

    monkeypatch.setattr(archive_module, "_in_order", counted)
    frames = archive.frames(without=["header_json"])
    assert ["list_order"] not in sorts  # the sessions were not sorted (the small tables still are)
    expected = read_corpus(root, cache=False).sessions.drop("header_json")
    assert frames.sessions.equals(expected)


def test_frames_are_sorted_when_the_files_are_out_of_order(source: tuple[Path, Path], monkeypatch: Any) -> None:
    """Files whose first rows do not give the order (here the footers' minimums reversed) are read, then sorted."""
    root, out = source
    archive = open_archive(out)
    smallest = archive.first_orders("sessions")
    backwards = {name: -1 * (value or 0) for name, value in smallest.items()}
    monkeypatch.setattr(type(archive), "first_orders", lambda self, table: backwards)
    frames = archive.frames(without=["header_json"])
    assert frames.sessions["list_order"].to_list() == sorted(frames.sessions["list_order"].to_list())
    assert frames.sessions.equals(read_corpus(root, cache=False).sessions.drop("header_json"))


def test_session_count_of_an_archive_is_its_manifests(source: tuple[Path, Path]) -> None:

    root, out = source
    assert (open_archive(out)).session_count() == (read_corpus(root, cache=False)).session_count() == 12
