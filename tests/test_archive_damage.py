"""Reliability round 4 (issue 42), archives: no damaged part aborts the process or prints a Rust panic.

Each part's BLAKE2b digest is recorded at export and checked before any reader touches the part
(``store.checksum``, ``store.archive_check``). The damage here is found, not hoped for: seeded bit flips
over a canonical archive (the same bytes on every machine, ``tests.fuzz.archives.canonical_export``) are
tried on a child reader until one makes pyarrow's footer accessors abort the process, or Polars panic, as
reported; then every command must print one ``Error:`` line with a hint, and nothing else. Commands and
aborting probes run in child processes, so the test process survives the code from before the fix.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from subagent_catalog import catalog
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.checksum import DIGEST_KEY
from subagent_catalog.store.export import export_archive
from subagent_catalog.store.layout import ArchiveError
from tests.fuzz.archives import (
    canonical_corpus,
    canonical_export,
    find_damage,
    flipped,
    footer_start,
    part_bytes,
    probe_damage,
)

TRIES = 3_000
"""Seeded flips tried before a test gives up finding damage of the reported class (about 1 in 130 footer
flips aborts pyarrow, about 1 in 150 page flips makes Polars panic)."""


@pytest.fixture(scope="module")
def canonical(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The canonical archive with events (copied by each test before it is damaged)."""
    work = tmp_path_factory.mktemp("canonical")
    canonical_corpus(work / "corpus")
    return canonical_export(work, "archive", events=True)


def _copy(canonical: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    out = tmp_path / "archive"
    shutil.copytree(canonical, out)
    return out, json.loads((out / "manifest.json").read_text())


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "subagent_catalog", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def _one_error_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 1 and exactly one ``Error:`` line on stderr, the last, with a hint; no traceback, panic or abort."""
    stderr = done.stderr
    assert done.returncode == 1, (done.returncode, stderr[-3000:])
    lines = stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr[-3000:]
    assert "(hint: " in errors[0], errors[0]
    for text in ("Traceback", "panicked", "terminate called", "stack backtrace"):
        assert text not in stderr, stderr[-3000:]
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def _strip_checksums(out: Path) -> None:
    """The manifest as an export before the checksums wrote it (format 6 archives have no digests)."""
    manifest = json.loads((out / "manifest.json").read_text())
    for entry in (*manifest["tables"].values(), manifest["fingerprints"]):
        entry.pop(DIGEST_KEY)
    (out / "manifest.json").write_text(json.dumps(manifest))


# --- item 15: the same damage on every machine ------------------------------------------------------


def test_the_damage_tests_archive_is_the_same_bytes_wherever_it_is_built(tmp_path: Path) -> None:
    built = []
    for work in (tmp_path / "a", tmp_path / "a much longer" / "and deeper" / "checkout path"):
        work.mkdir(parents=True)
        canonical_corpus(work / "corpus")
        built.append(part_bytes(canonical_export(work, "archive", events=True)))
    tables = {name.split("/")[1] for name in built[0]}
    assert tables == {"sessions", "descriptors", "events", "facts"}  # this corpus has no problems rows
    assert built[0] == built[1]


# --- item 1: a footer that aborts pyarrow -------------------------------------------------------------


def _aborting_footer(canonical: Path, tmp_path: Path) -> tuple[Path, str]:
    """A copy of the canonical archive whose first sessions part has 3 flipped footer bits that abort pyarrow."""
    out, manifest = _copy(canonical, tmp_path)
    name = manifest["tables"]["sessions"]["files"][0]
    data = (out / name).read_bytes()
    flips = find_damage(data, random.Random(42), region="footer", want="abort", flips=3, tries=TRIES)
    assert flips is not None, f"none of {TRIES} footer flips aborts pyarrow's footer accessors any more"
    assert all(at >= footer_start(data) for at, _ in flips)
    (out / name).write_bytes(flipped(data, flips))
    assert (out / name).stat().st_size == manifest["tables"]["sessions"]["file_bytes"][0]  # the size still matches
    return out, name


def test_a_footer_that_aborts_pyarrow_is_one_error_line_from_summary_check_and_report(
    canonical: Path, tmp_path: Path
) -> None:
    """Reported: exit 134, "terminate called after throwing an instance of 'parquet::ParquetException'"."""
    out, name = _aborting_footer(canonical, tmp_path)
    report = tmp_path / "report.html"
    for command in (
        ["summary", str(out), "-q"],
        ["check", str(out), "-q", "--format", "json"],
        ["report", str(out), "-q", "-o", str(report)],
    ):
        _one_error_line(_run(*command), name.split("/")[-1], "does not match its checksum")
    assert not report.exists()


def test_that_footer_in_an_archive_exported_before_the_checksums_never_aborts(canonical: Path, tmp_path: Path) -> None:
    """Without digests the footer is read only through pyarrow calls that raise (no per-column statistics)."""
    out, _ = _aborting_footer(canonical, tmp_path)
    _strip_checksums(out)
    for command in (["summary", str(out), "-q"], ["check", str(out), "-q", "--format", "json"]):
        done = _run(*command)
        assert done.returncode in (0, 1), (done.returncode, done.stderr[-3000:])  # never 134 (SIGABRT)
        assert "terminate called" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
        if done.returncode == 1:
            assert done.stderr.strip().splitlines()[-1].startswith("Error: "), done.stderr[-3000:]


# --- item 2: a page that makes Polars panic -----------------------------------------------------------


def test_a_flipped_bit_that_makes_polars_panic_prints_one_error_line_and_no_panic(
    canonical: Path, tmp_path: Path
) -> None:
    """Reported: a clean ``Error:`` line, after 8 lines of "thread 'async-executor-N' panicked at" (28 with
    ``RUST_BACKTRACE=1``)."""
    out, manifest = _copy(canonical, tmp_path)
    name = manifest["tables"]["events"]["files"][0]
    data = (out / name).read_bytes()
    flips = find_damage(data, random.Random(42), region="pages", want="panic", flips=1, tries=TRIES)
    assert flips is not None, f"none of {TRIES} page flips makes Polars panic any more"
    (out / name).write_bytes(flipped(data, flips))
    assert probe_damage("pages", (out / name).read_bytes()) == "panic"  # Polars, reading it, prints a panic
    session = str(open_archive(canonical).sessions.select("session_id").head(1).collect().item())
    for command in (["search", str(out), "e"], ["show", str(out), session]):
        _one_error_line(_run(*command, env={"RUST_BACKTRACE": "1"}), name.split("/")[-1], "checksum")


# --- the checksums themselves --------------------------------------------------------------------------


def test_export_records_the_blake2b_of_every_part(canonical: Path, tmp_path: Path) -> None:
    manifest = json.loads((canonical / "manifest.json").read_text())
    for entry in (*manifest["tables"].values(), manifest["fingerprints"]):
        files = [(canonical / name).read_bytes() for name in entry["files"]]
        assert entry[DIGEST_KEY] == [hashlib.blake2b(data, digest_size=16).hexdigest() for data in files]
    out, _ = _copy(canonical, tmp_path)
    again = export_archive(canonical.parent / "corpus", out, jobs=1, events=True)  # a new generation
    for entry in (*again["tables"].values(), again["fingerprints"]):
        assert entry[DIGEST_KEY] == [
            hashlib.blake2b((out / name).read_bytes(), digest_size=16).hexdigest() for name in entry["files"]
        ]


def test_any_changed_byte_of_any_part_is_refused_before_it_is_read(canonical: Path, tmp_path: Path) -> None:
    out, manifest = _copy(canonical, tmp_path)
    rng = random.Random(15)
    tables = {**manifest["tables"], "facts": manifest["fingerprints"]}
    for table, entry in tables.items():
        for name in entry["files"]:
            clean = (out / name).read_bytes()
            start = footer_start(clean)
            for at in (0, rng.randrange(4, start), rng.randrange(start, len(clean) - 8), len(clean) - 1):
                (out / name).write_bytes(flipped(clean, [(at, rng.randrange(8))]))
                with pytest.raises(ArchiveError, match="does not match its checksum") as raised:
                    open_archive(out).check(table)
                assert name.split("/")[-1] in str(raised.value)
            (out / name).write_bytes(clean)
    open_archive(out).to_corpus(events=True)  # every part restored: it reads


@pytest.mark.parametrize("digest", ["0" * 31, "G" * 32, 7])
def test_a_manifest_digest_of_the_wrong_shape_is_refused(canonical: Path, tmp_path: Path, digest: Any) -> None:
    out, manifest = _copy(canonical, tmp_path)
    manifest["tables"]["sessions"][DIGEST_KEY][0] = digest
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArchiveError, match=r"not a valid archive manifest: tables\.sessions\.file_blake2b"):
        open_archive(out)


def test_a_manifest_with_a_digest_too_few_is_refused(canonical: Path, tmp_path: Path) -> None:
    out, manifest = _copy(canonical, tmp_path)
    manifest["fingerprints"][DIGEST_KEY].pop()
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArchiveError, match=r"fingerprints\.file_blake2b has 1 values for 2 files"):
        open_archive(out)


def test_an_archive_exported_before_the_checksums_reads_as_before(canonical: Path, tmp_path: Path) -> None:
    out, _ = _copy(canonical, tmp_path)
    _strip_checksums(out)
    old = open_archive(out)
    assert set(old.first_orders("sessions").values()) == {None}  # no statistics read from an unchecked footer
    assert catalog(old).equals(catalog(open_archive(canonical)))
    assert old.to_corpus(events=True).events.equals(open_archive(canonical).to_corpus(events=True).events)
    assert old.to_corpus().sessions.equals(open_archive(canonical).to_corpus().sessions)


def test_sql_over_a_damaged_archive_is_an_archive_error(canonical: Path, tmp_path: Path) -> None:
    """DuckDB reads an archive's parts through pyarrow datasets: they are checked first, as for every reader."""
    from subagent_catalog.interop.sql import sql

    out, manifest = _copy(canonical, tmp_path)
    name = manifest["tables"]["sessions"]["files"][0]
    data = (out / name).read_bytes()
    (out / name).write_bytes(flipped(data, [(footer_start(data) + 10, 3)]))
    with pytest.raises(ArchiveError, match="does not match its checksum") as raised:
        sql(open_archive(out), "select count(*) from sessions")
    assert name.split("/")[-1] in str(raised.value)
    assert sql(open_archive(canonical), "select count(*) as n from sessions")["n"].item() == 12
