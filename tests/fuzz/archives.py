"""The fuzz suite's **archive** tier: damaged, tampered and hostile Parquet archives.

Two base archives are exported once per run from a small synthetic zstd corpus (one
with the events table, one without). Each case copies one and applies one to three
seeded mutations from ``MUTATIONS``: bit flips (anywhere, or in the footer) and zeroed ranges in a part,
truncation, a changed footer length, row bombs (a part repeating one row up to
millions of times, the manifest left alone or edited to match), wrong schemas (a
column of another type, renamed or missing), time zones (``UTc``, ``Mars/Olympus``,
``+99:00``...), a part replaced by a FIFO, manifest row counts and file lists that
disagree with the files, sessions rows whose paths leave the corpus root, and a forged
schema byte (a field name in a part's stored Arrow schema made not UTF-8, the digest
recomputed: pyarrow reads the part, Polars does not).

A child interpreter then runs, on a batch of cases, every library call that reads an
archive (``open_archive``, ``Archive.check`` of every table, ``catalog``,
``catalog_descendants``, ``deviations``, ``list_children``, ``list_descendants`` and
``list_agents_text`` of several parents, ``to_corpus(events=True)``, ``transcript`` of
several sessions, ``compare`` with the archive as either side, ``run_trees``,
``usage_by_model``, ``tool_calls``, ``run_summary``, ``error_groups``, ``findings``,
``search_events`` with a limit) and every CLI command that reads an archive
(``COMMANDS``), in-process with its descriptor 2 captured: ``runs -t`` each table,
``compare`` with the archive as either side, ``sql`` over each table, ``findings``,
``report``, ``show``, ``search``, ``check``, ``list``, ``summary``, ``otel -o FILE``, then
an incremental ``export ROOT ARCHIVE``. The invariants:

* **typed error or correct result**: a call returns a frame of its declared schema or
  raises a ``SubagentCatalogError``, never another exception (a Rust panic, which is a
  ``BaseException``, included); a mutation that must be seen (``DETECTED``) makes
  ``Archive.check`` of the damaged table raise an ``ArchiveError`` naming the file;
* **one CLI line**: exit 0, or 1 with exactly one ``Error:`` line, the last one, no
  ``internal error``, and no ``Traceback`` and no ``panicked at`` on stderr;
* **no file outside the corpus root** is opened through the archive's paths (an audit
  hook watches a sentinel log outside the root);
* **bounded memory**: the child's peak RSS (``VmHWM``) stays under ``RSS_BOUND_MB``;
* **no hang**: the child finishes within ``TIMEOUT_S`` a case.

A manifest edited to match a row bomb declares a large archive: calls that collect a
whole table (``to_corpus``, ``catalog``) cost memory for its rows, as for a real archive
that size, so on such cases only the streaming readers run (``search``, ``export``,
``transcript``).

``python -m tests.fuzz.archives --cases N [--seed S]`` runs the long tier (``make
fuzz-archives N=...``: every command on every case); ``tests/test_fuzz_archives.py`` runs
every mutation once (every command) and a seeded sample (a seeded draw of the commands)
in ``make test``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz import case_seeds, tier_parser

REPO = Path(__file__).resolve().parents[2]
RSS_BOUND_MB = 700
TIMEOUT_S = 120.0
TABLES = ("sessions", "descriptors", "problems", "events", "facts")
TIME_ZONES = ("UTc", "utc", "Mars/Olympus", "+99:00", "Europe/Paris", "", "UTC\x00")
BOMB_ROWS = (200_000, 1_000_000, 3_000_000)
"""Rows of a row bomb in the fast tier."""
LONG_BOMB_ROWS = (*BOMB_ROWS, 30_000_000)
"""The long tier's: also the 30 M rows of the reported 2.3 MB archive."""


@dataclass
class Bases:
    """The two archives every case starts from, and the corpus root they were exported from."""

    work: Path
    root: Path
    with_events: Path
    without_events: Path
    sessions: list[str]
    parents: list[str]
    outside: Path  # a log outside the root, which no archive path may make the library open


CANONICAL_MTIME_NS = 1_780_000_000_000_000_000
"""The modification time every log of a canonical corpus is given (the sessions table records it)."""


def canonical_corpus(root: Path, *, sessions: int = 12) -> Path:
    """A small synthetic zstd corpus at ``root`` whose logs all have the same modification time.

    ``generate`` is a pure function of its seed; the logs' times are the only thing of this machine and
    moment that an export records in the sessions table, so they are set to ``CANONICAL_MTIME_NS``.
    """
    from subagent_catalog.synth.generate import generate

    generate(root, sessions=sessions, seed=29, compression="zstd", jobs=1)
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(CANONICAL_MTIME_NS, CANONICAL_MTIME_NS))
    return root


def canonical_export(work: Path, name: str, *, events: bool) -> Path:
    """Export ``work/corpus`` to ``work/name``: the same part bytes on every machine and in every directory.

    The export runs from inside ``work`` with the relative root ``corpus``, so no path of this machine is in
    the parts; the facts table's ``ctime_ns`` and ``inode`` (which nobody can choose) are then set to 0 and
    the rewritten parts' sizes and digests recorded, as a careful tamperer would (an incremental export into
    it reads every log again). Damage drawn from a seeded generator over these bytes is the same damage on
    every machine (``tests/test_archive_damage.py`` checks the bytes are the same wherever they are built).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from subagent_catalog.store.checksum import DIGEST_KEY, part_digest
    from subagent_catalog.store.export import encode_parquet, export_archive

    here = os.getcwd()
    os.chdir(work)
    try:
        export_archive("corpus", name, jobs=1, events=events)
    finally:
        os.chdir(here)
    out = work / name
    manifest = json.loads((out / "manifest.json").read_text())
    entry = manifest["fingerprints"]
    for index, part in enumerate(entry["files"]):
        table = pq.read_table(out / part)
        for column in ("ctime_ns", "inode"):
            position = table.schema.get_field_index(column)
            kind = table.schema.field(column).type
            table = table.set_column(position, column, pa.array([0] * table.num_rows, kind))
        data = encode_parquet(table)
        (out / part).write_bytes(data)
        entry["file_bytes"][index] = len(data)
        if DIGEST_KEY in entry:
            entry[DIGEST_KEY][index] = part_digest(data)
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def part_bytes(archive: Path) -> dict[str, bytes]:
    """Every data file an archive's manifest names, by name, with its bytes."""
    manifest = json.loads((archive / "manifest.json").read_text())
    names = [name for entry in (*manifest["tables"].values(), manifest["fingerprints"]) for name in entry["files"]]
    return {name: (archive / name).read_bytes() for name in names}


def make_bases(work: Path, *, sessions: int = 12) -> Bases:
    """Export the base archives (and the sentinel outside the root) under ``work`` (``canonical_export``)."""
    import polars as pl

    from subagent_catalog.corpus import read_corpus

    root = canonical_corpus(work / "corpus", sessions=sessions)
    canonical_export(work, "base-events", events=True)
    canonical_export(work, "base-plain", events=False)
    frame = read_corpus(root, compression="zstd", cache=False, jobs=1).sessions
    ids = [value for value in frame["session_id"].to_list() if value is not None]
    parents = frame.filter(pl.col("parent_session").is_not_null())["parent_session"].unique(maintain_order=True)
    outside = work / "outside" / "p" / "s" / "session.jsonl.zstd"
    outside.parent.mkdir(parents=True)
    shutil.copyfile(next(root.rglob("session.jsonl.zstd")), outside)
    return Bases(work, root, work / "base-events", work / "base-plain", ids[:6], parents.to_list()[:4], outside)


# --- damage of a known class --------------------------------------------------------------------------

PROBE = r"""
import json, os, sys, tempfile
kind = sys.argv[1]
if kind == "footer":  # the footer calls of the archive check before the checksums (with footer_column_min's)
    import pyarrow.parquet as pq
    def probe(path):
        metadata = pq.read_metadata(path)
        metadata.serialized_size, metadata.num_rows
        metadata.schema.to_arrow_schema()
        for group in range(metadata.num_row_groups):
            rows = metadata.row_group(group)
            chunks = [rows.column(i) for i in range(rows.num_columns) if rows.column(i).path_in_schema == "list_order"]
            statistics = chunks[0].statistics if len(chunks) == 1 else None
            if statistics is not None and statistics.has_min_max:
                statistics.min
elif kind.startswith("column:"):  # one column: Polars and pyarrow (DuckDB's reader) must both refuse it
    import polars as pl
    import pyarrow.parquet as pq
    column = kind.split(":", 1)[1]
    def probe(path):
        refused = 0
        polars = lambda: pl.read_parquet(path, columns=[column])
        for read in (polars, lambda: pq.read_table(path, columns=[column])):
            try:
                read()
            except Exception:
                refused += 1
        if refused == 2:
            raise ValueError("both readers refuse it")
else:  # a Polars read of the whole part
    import polars as pl
    def probe(path):
        pl.read_parquet(path)
saved = os.dup(2)
with tempfile.TemporaryFile() as err:
    for line in sys.stdin:
        os.dup2(err.fileno(), 2)
        try:
            probe(line.strip())
            outcome = "ok"
        except BaseException as error:
            outcome = "error"
        os.dup2(saved, 2)
        err.seek(0)
        text = err.read()
        err.seek(0)
        err.truncate()
        print(json.dumps("panic" if b"panicked" in text else outcome), flush=True)
"""


class Probe:
    """A child interpreter that reads damaged parts as a reader of one kind would, and says what happened.

    ``footer``: pyarrow's footer accessors (every row group's column statistics), which abort the process on
    some damaged footers; ``pages``: a Polars read of the whole part, which panics on some damaged pages (the
    panic hook prints "panicked at" to stderr); ``column:NAME``: that column read by Polars and by pyarrow
    (``error`` only when both refuse it). A probe that aborts is started again.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.work = Path(tempfile.mkdtemp(prefix=f"probe-{kind}-"))
        self.child: subprocess.Popen[str] | None = None

    def __call__(self, data: bytes | bytearray) -> str:
        """``abort``, ``panic``, ``error`` or ``ok``: what reading these bytes as a part did."""
        if self.child is None or self.child.poll() is not None:
            self.child = subprocess.Popen(
                [sys.executable, "-c", PROBE, self.kind],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        assert self.child.stdin is not None and self.child.stdout is not None
        part = self.work / "part.parquet"
        part.write_bytes(data)
        self.child.stdin.write(f"{part}\n")
        self.child.stdin.flush()
        line = self.child.stdout.readline()
        if not line:  # the child died on these bytes
            self.child.wait(timeout=60)
            return "abort"
        return str(json.loads(line))

    def close(self) -> None:
        if self.child is not None and self.child.poll() is None:
            assert self.child.stdin is not None
            self.child.stdin.close()
            self.child.wait(timeout=60)
        shutil.rmtree(self.work, ignore_errors=True)


_PROBES: dict[str, Probe] = {}


def probe_damage(kind: str, data: bytes | bytearray) -> str:
    """What reading ``data`` as a part does to a reader of ``kind`` (``Probe``; one child per kind and process)."""
    if kind not in _PROBES:
        import atexit

        _PROBES[kind] = Probe(kind)
        atexit.register(_PROBES[kind].close)
    return _PROBES[kind](data)


def flipped(data: bytes | bytearray, flips: list[tuple[int, int]]) -> bytes:
    """``data`` with each ``(offset, bit)`` flipped."""
    out = bytearray(data)
    for at, bit in flips:
        out[at] ^= 1 << bit
    return bytes(out)


def find_damage(
    data: bytes | bytearray, rng: random.Random, *, region: str, want: str, flips: int, tries: int
) -> list[tuple[int, int]] | None:
    """The first of ``tries`` seeded sets of ``flips`` bit flips in ``region`` (``footer``, ``pages``, or one
    column's pages: ``column:NAME``) of a part that make its reader ``want`` (``abort``: pyarrow's footer
    accessors; ``panic``: a Polars read; ``error``: a reader's error: for a column, Polars' and pyarrow's
    both); None when none does. The same bytes and seed give the same flips on every machine."""
    start = footer_start(data)
    low, high = (start, len(data) - 8) if region == "footer" else (4, start)
    if region.startswith("column:"):
        low, high = column_pages(data, region.split(":", 1)[1])
    kind = "footer" if want == "abort" else (region if region.startswith("column:") else "pages")
    for _ in range(tries):
        chosen = [(rng.randrange(low, high), rng.randrange(8)) for _ in range(flips)]
        if probe_damage(kind, flipped(data, chosen)) == want:
            return chosen
    return None


def column_pages(data: bytes | bytearray, column: str) -> tuple[int, int]:
    """Where a column's pages lie in a healthy part's first row group: ``(start, end)`` byte offsets."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    group = pq.read_metadata(pa.BufferReader(bytes(data))).row_group(0)
    chunk = next(group.column(i) for i in range(group.num_columns) if group.column(i).path_in_schema == column)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    return start, start + chunk.total_compressed_size


def forged_schema_byte(data: bytes | bytearray, field: str, byte: int = 0xFF) -> bytes:
    """A part whose stored Arrow schema (``ARROW:schema``, base64 in the footer) has the last byte of ``field``'s
    name replaced by ``byte`` (not UTF-8): one forged byte, the footer's length unchanged. Polars, which reads the
    names from there, refuses the part; pyarrow, which reads them from the Parquet schema, does not."""
    import base64

    import pyarrow as pa
    import pyarrow.parquet as pq

    stored = pq.read_metadata(pa.BufferReader(bytes(data))).metadata[b"ARROW:schema"]
    schema = base64.b64decode(stored)
    name = field.encode()
    at = schema.index(name) + len(name) - 1
    forged = base64.b64encode(schema[:at] + bytes([byte]) + schema[at + 1 :])
    where = bytes(data).index(stored, footer_start(data))
    return bytes(data[:where]) + forged + bytes(data[where + len(stored) :])


# --- mutations -------------------------------------------------------------------------------------


@dataclass
class Case:
    """One archive to read, and what its mutations promise."""

    seed: int
    path: Path
    root: Path
    manifest: dict[str, Any]
    rng: random.Random
    bases: Bases
    mutations: list[str] = field(default_factory=list)
    detected: list[tuple[str, str]] = field(default_factory=list)  # (table, file name) Archive.check must refuse
    changed: list[tuple[str, str]] = field(default_factory=list)  # parts whose bytes changed: refused by checksum
    checksums: bool = True  # False: the manifest's digests removed ("no-checksums": an export before them)
    touched: set[str] = field(default_factory=set)  # every part a mutation changed (any may be the one named)
    collect: bool = True  # False: a consistent row bomb (only the streaming readers run)
    bomb_rows: tuple[int, ...] = BOMB_ROWS

    def entry(self, table: str) -> dict[str, Any]:
        return dict(self.manifest["fingerprints"] if table == "facts" else self.manifest["tables"][table])

    def set_entry(self, table: str, entry: dict[str, Any]) -> None:
        if table == "facts":
            self.manifest["fingerprints"] = entry
        else:
            self.manifest["tables"][table] = entry

    def pick(self, tables: tuple[str, ...] = TABLES) -> tuple[str, int, str] | None:
        """A random (table, index, file name) among the tables that have files (remembered as touched)."""
        found = [
            (t, i, n) for t in tables for i, n in enumerate(self.entry(t)["files"]) if os.path.isfile(self.path / n)
        ]
        picked = self.rng.choice(found) if found else None
        if picked is not None:
            self.touched.add(picked[2].split("/")[-1])
        return picked

    def save(self) -> None:
        (self.path / "manifest.json").write_text(json.dumps(self.manifest))

    def restat(self, table: str, index: int) -> None:
        """Record a rewritten part's size and rows in the manifest (what a careful tamperer does)."""
        import pyarrow.parquet as pq

        from subagent_catalog.store.checksum import DIGEST_KEY, part_digest

        entry = self.entry(table)
        name = entry["files"][index]
        rows = pq.read_metadata(self.path / name).num_rows
        if "file_bytes" in entry:
            entry["file_bytes"] = [*entry["file_bytes"]]
            entry["file_bytes"][index] = (self.path / name).stat().st_size
        if DIGEST_KEY in entry:
            entry[DIGEST_KEY] = [*entry[DIGEST_KEY]]
            entry[DIGEST_KEY][index] = part_digest((self.path / name).read_bytes())
        if "file_rows" in entry:
            entry["file_rows"] = [*entry["file_rows"]]
            entry["file_rows"][index] = rows
        self.set_entry(table, entry)
        self.changed = [(t, n) for t, n in self.changed if n != name]  # the manifest now records these bytes
        if "file_rows" not in entry or entry["rows"] == sum(entry["file_rows"]):  # an earlier manifest-rows undone
            self.detected = [(t, n) for t, n in self.detected if n != name]


Mutation = Callable[[Case], None]


def _bytes_of(case: Case, name: str) -> bytearray:
    return bytearray((case.path / name).read_bytes())


def _changed(case: Case, table: str, name: str, before: bytes | bytearray, data: bytes | bytearray) -> None:
    """Write a part's new bytes; a part whose bytes changed must be refused by its checksum."""
    (case.path / name).write_bytes(data)
    if bytes(data) != bytes(before):
        case.changed.append((table, name))


def _bitflip(case: Case) -> None:
    picked = case.pick()
    if picked is None:
        return
    table, _, name = picked
    data = _bytes_of(case, name)
    before = bytes(data)
    for _ in range(case.rng.randint(1, 3)):
        at = case.rng.randrange(len(data))
        data[at] ^= 1 << case.rng.randrange(8)
    _changed(case, table, name, before, data)


def footer_start(data: bytes | bytearray) -> int:
    """Where a Parquet part's footer begins (its length is in the 4 bytes before the closing magic)."""
    length = int.from_bytes(data[-8:-4], "little")
    return max(0, len(data) - 8 - min(length, len(data)))


def _footer_bitflip(case: Case) -> None:
    """Bits flipped inside a part's footer (its schema, row counts, column offsets, page locations)."""
    picked = case.pick()
    if picked is None:
        return
    table, _, name = picked
    data = _bytes_of(case, name)
    before = bytes(data)
    start = footer_start(data)
    for _ in range(case.rng.randint(1, 3)):
        at = case.rng.randrange(start, len(data) - 8) if len(data) - 8 > start else case.rng.randrange(len(data))
        data[at] ^= 1 << case.rng.randrange(8)
    _changed(case, table, name, before, data)


ABORT_TRIES = 3_000
"""Seeded footer flips tried on a part before ``footer-abort`` gives up (about 1 in 130 aborts pyarrow)."""


def _footer_abort(case: Case) -> None:
    """Three bits flipped in a part's footer, drawn until pyarrow's footer accessors abort on them (the class
    of damage that terminated the process: ``probe_damage``); plain footer flips when no draw aborts."""
    picked = case.pick()
    if picked is None:
        return
    table, _, name = picked
    before = bytes(_bytes_of(case, name))
    flips = find_damage(before, case.rng, region="footer", want="abort", flips=3, tries=ABORT_TRIES)
    if flips is None:
        case.mutations.append("footer-abort: none found")
        flips = [(case.rng.randrange(footer_start(before), len(before)), case.rng.randrange(8)) for _ in range(3)]
    _changed(case, table, name, before, flipped(before, flips))


def _forged_schema_byte(case: Case) -> None:
    """One byte of a field name in a part's stored Arrow schema made not UTF-8, the manifest's digest, size and
    rows recomputed (a careful forger): the checksum passes, pyarrow reads the part, Polars refuses it; the
    footer check, which compares the stored names with the Parquet schema's, must refuse it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    picked = case.pick()
    if picked is None:
        return
    table, index, name = picked
    data = _bytes_of(case, name)
    try:
        field = case.rng.choice(pq.read_schema(pa.BufferReader(bytes(data))).names)
        forged = forged_schema_byte(data, field, case.rng.choice([0x80, 0xBF, 0xC0, 0xFE, 0xFF]))
    except Exception:  # an earlier mutation left it unreadable, or it stores no Arrow schema (a row bomb)
        return
    (case.path / name).write_bytes(forged)
    case.restat(table, index)
    case.detected.append((table, name))


def _no_checksums(case: Case) -> None:
    """The manifest's part digests removed: an archive exported before the checksums (format 6 had none)."""
    case.checksums = False


def _zero(case: Case) -> None:
    picked = case.pick()
    if picked is None:
        return
    table, _, name = picked
    data = _bytes_of(case, name)
    before = bytes(data)
    at = case.rng.randrange(len(data))
    size = case.rng.choice([1, 4, 64, 4096])
    data[at : at + size] = bytes(len(data[at : at + size]))
    _changed(case, table, name, before, data)


def _truncate(case: Case) -> None:
    picked = case.pick()
    if picked is None:
        return
    table, _, name = picked
    data = _bytes_of(case, name)
    (case.path / name).write_bytes(data[: case.rng.randrange(len(data))])
    case.detected.append((table, name))  # the recorded size differs


def _footer_length(case: Case) -> None:
    picked = case.pick()
    if picked is None:
        return
    table, _, name = picked
    data = _bytes_of(case, name)
    length = int.from_bytes(data[-8:-4], "little")
    choices = [0, 1, length - 1, length + 1, length * 2, len(data), 2**31 - 1, 2**32 - 1]
    data[-8:-4] = (case.rng.choice([c for c in choices if c != length]) % 2**32).to_bytes(4, "little")
    (case.path / name).write_bytes(data)
    case.detected.append((table, name))


def _rewrite(case: Case, table: str, index: int, change: Callable[[Any], Any], **write: Any) -> bool:
    """Rewrite one part through ``change``; ``False`` (nothing done) when an earlier mutation left it unreadable."""
    import pyarrow.parquet as pq

    name = case.entry(table)["files"][index]
    try:
        data = change(pq.read_table(case.path / name))
    except Exception:
        return False
    (case.path / name).unlink()
    pq.write_table(data, case.path / name, compression="zstd", **write)
    return True


BOMB_CHUNK = 1_000_000
"""Rows built in memory at a time while a bomb is written (one row group each)."""


def _bomb_table(table: Any, rows: int) -> Any:
    """``table``'s first row ``rows`` times, its text and binary columns dictionary-encoded."""
    import pyarrow as pa

    first = table.slice(0, 1)
    indices = pa.repeat(pa.scalar(0, pa.int32()), rows)
    columns = []
    for column in first.columns:
        chunk = column.combine_chunks()
        if chunk.null_count:
            columns.append(pa.nulls(rows, chunk.type))
        elif pa.types.is_large_string(chunk.type) or pa.types.is_string(chunk.type):
            columns.append(pa.DictionaryArray.from_arrays(indices, chunk.cast(pa.string())))
        elif pa.types.is_large_binary(chunk.type) or pa.types.is_binary(chunk.type):
            columns.append(pa.DictionaryArray.from_arrays(indices, chunk.cast(pa.binary())))
        else:
            columns.append(chunk.take(indices))
    return pa.table(columns, names=first.column_names)


def write_bomb(table: Any, rows: int, path: Path) -> None:
    """Write ``table``'s first row ``rows`` times as a Parquet part (a few MB for millions of rows).

    Built ``BOMB_CHUNK`` rows at a time, so the harness stays small whatever ``rows`` is; the schema is
    not stored (``store_schema=False``), so the dictionary columns read back as plain strings and the
    part still has its table's schema.
    """
    import pyarrow.parquet as pq

    chunk = _bomb_table(table, min(rows, BOMB_CHUNK))
    with pq.ParquetWriter(path, chunk.schema, compression="zstd", store_schema=False, use_dictionary=True) as out:
        left = rows
        while left > 0:
            out.write_table(chunk.slice(0, min(left, chunk.num_rows)))
            left -= chunk.num_rows


def _row_bomb(case: Case, *, consistent: bool) -> None:
    import pyarrow.parquet as pq

    picked = case.pick(("sessions", "events", "facts", "descriptors"))
    if picked is None:
        return
    table, index, name = picked
    rows = case.rng.choice(case.bomb_rows)
    if table in ("sessions", "descriptors"):  # wide tables: 30 M rows take a minute to write; the report's are events
        rows = min(rows, 3_000_000)  # and facts bombs
    try:
        before = pq.read_metadata(case.path / name).num_rows
    except Exception:
        return
    try:
        first = pq.read_table(case.path / name).slice(0, 1)
    except Exception:
        return
    (case.path / name).unlink()
    write_bomb(first, rows, case.path / name)
    if consistent:  # the manifest edited to match: a large archive, as far as anything can tell
        case.detected = [(t, n) for t, n in case.detected if n != name]  # its earlier damage is overwritten
        case.restat(table, index)
        entry = case.entry(table)
        entry["rows"] = entry["rows"] - before + rows
        case.set_entry(table, entry)
        case.collect = False
    else:
        case.detected.append((table, name))


def _wrong_schema(case: Case) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    picked = case.pick()
    if picked is None:
        return
    table, index, name = picked
    how = case.rng.choice(["cast", "rename", "drop", "list"])

    def change(data: Any) -> Any:
        names = [n for n in data.column_names if n not in ("project_dir",)]
        target = case.rng.choice(names)
        position = data.column_names.index(target)
        column = data.column(target)
        if how == "rename":
            return data.rename_columns([n + "_x" if n == target else n for n in data.column_names])
        if how == "drop":
            return data.remove_column(position)
        if how == "list":
            return data.set_column(position, target, pa.array([[v] for v in column.to_pylist()]))
        if pa.types.is_integer(column.type) or pa.types.is_boolean(column.type):
            return data.set_column(position, target, pc.cast(column, pa.string()))
        if pa.types.is_timestamp(column.type):
            return data.set_column(position, target, pc.cast(column, pa.int64()))
        return data.set_column(position, target, pa.array([1] * data.num_rows, pa.int32()))

    if _rewrite(case, table, index, change):
        case.restat(table, index)
        case.detected.append((table, name))


def _time_zone(case: Case) -> None:
    import pyarrow as pa

    picked = case.pick(("sessions",))
    if picked is None:
        return
    table, index, name = picked
    zone = case.rng.choice(TIME_ZONES)

    def change(data: Any) -> Any:
        for position, column in enumerate(data.columns):
            if pa.types.is_timestamp(column.type):
                kind = pa.timestamp(column.type.unit, tz=zone or None)
                data = data.set_column(position, data.column_names[position], column.cast(pa.int64()).cast(kind))
        return data

    if _rewrite(case, table, index, change):
        case.restat(table, index)
        case.detected.append((table, name))


def _fifo(case: Case) -> None:
    picked = case.pick()
    if picked is None:
        return
    table, _, name = picked
    (case.path / name).unlink()
    os.mkfifo(case.path / name)
    case.detected.append((table, name))


def _manifest_rows(case: Case) -> None:
    picked = case.pick()
    if picked is None:
        return
    table, index, name = picked
    entry = case.entry(table)
    if "file_rows" in entry and case.rng.random() < 0.5:
        entry["file_rows"] = [*entry["file_rows"]]
        entry["file_rows"][index] += case.rng.choice([-1, 1, 1000])
        entry["file_rows"][index] = max(entry["file_rows"][index], 0) if entry["file_rows"][index] >= 0 else 1
    else:
        entry["rows"] = max(0, entry["rows"] + case.rng.choice([-1, 1, 10**9]))
    case.set_entry(table, entry)
    case.detected.append((table, name))


def _duplicate_file(case: Case) -> None:
    picked = case.pick()
    if picked is None:
        return
    table, index, name = picked
    entry = case.entry(table)
    entry["files"] = [*entry["files"], name]
    for key in ("file_rows", "file_bytes", "file_blake2b"):
        if key in entry:
            entry[key] = [*entry[key], entry[key][index]]
    case.set_entry(table, entry)
    case.detected.append((table, name))


def _path_escape(case: Case) -> None:
    import pyarrow as pa

    picked = case.pick(("sessions",))
    if picked is None:
        return
    table, index, _ = picked
    outside = str(case.bases.outside)
    root = str(case.root)
    target = case.rng.choice([outside, root + "/../outside/p/s/session.jsonl.zstd", outside.replace(".zstd", "")])

    def change(data: Any) -> Any:
        for column in ("path", "path_bytes"):
            position = data.column_names.index(column)
            value = target if column == "path" else os.fsencode(target)
            kind = data.schema.field(column).type
            data = data.set_column(position, column, pa.array([value] * data.num_rows, kind))
        return data

    if _rewrite(case, table, index, change):
        case.restat(table, index)


MUTATIONS: dict[str, Mutation] = {
    "bitflip": _bitflip,
    "footer-bitflip": _footer_bitflip,
    "footer-abort": _footer_abort,
    "forged-schema-byte": _forged_schema_byte,
    "no-checksums": _no_checksums,
    "zero": _zero,
    "truncate": _truncate,
    "footer-length": _footer_length,
    "row-bomb": lambda case: _row_bomb(case, consistent=False),
    "row-bomb-consistent": lambda case: _row_bomb(case, consistent=True),
    "wrong-schema": _wrong_schema,
    "time-zone": _time_zone,
    "fifo": _fifo,
    "manifest-rows": _manifest_rows,
    "duplicate-file": _duplicate_file,
    "path-escape": _path_escape,
}
PLAIN_ONLY = {"path-escape"}  # applied to the archive without events (its transcripts read the root)


def make_case(
    seed: int, bases: Bases, *, mutations: list[str] | None = None, bomb_rows: tuple[int, ...] = BOMB_ROWS
) -> Case:
    """Copy a base archive and apply the seeded mutations (``mutations`` names them, else they are drawn)."""
    rng = random.Random(seed)
    chosen = mutations or rng.sample(sorted(MUTATIONS), rng.choice([1, 1, 2, 3]))
    base = bases.without_events if (set(chosen) & PLAIN_ONLY or rng.random() < 0.2) else bases.with_events
    path = bases.work / f"case-{seed}"
    if path.exists():
        shutil.rmtree(path)
    shutil.copytree(base, path)
    manifest = json.loads((path / "manifest.json").read_text())
    case = Case(seed, path, bases.root, manifest, rng, bases, bomb_rows=bomb_rows)
    for name in chosen:
        MUTATIONS[name](case)
        case.mutations.append(name)
    if case.checksums:
        case.detected += case.changed  # any byte changed in a part fails its checksum
    else:
        for entry in (*case.manifest["tables"].values(), case.manifest["fingerprints"]):
            entry.pop("file_blake2b", None)
    case.save()
    return case


def discard(case: Case) -> None:
    shutil.rmtree(case.path, ignore_errors=True)


# --- the child -----------------------------------------------------------------------------------

CHILD = r"""
import io, json, os, sys, tempfile, time, traceback
sys.path.insert(0, os.environ["FUZZ_REPO"])
from tests.fuzz.archives import child_main
child_main()
"""


def _hwm_kb() -> int:
    with open("/proc/self/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith("VmHWM:")))


def _cli(args: list[str], *, keep_stdout: bool = False) -> dict[str, Any]:
    """Run the CLI in this process with descriptors 1 and 2 captured (a Rust panic writes to 2 directly);
    ``keep_stdout`` returns what it printed on stdout too."""
    from subagent_catalog.cli import main

    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            try:
                main.main(args=args, prog_name="subagent-catalog", standalone_mode=True)
                code: Any = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException as error:
                code = f"raised {type(error).__name__}: {str(error)[:200]}"
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        err.seek(0)
        result = {"code": code, "stderr": err.read().decode("utf-8", "replace")[-4000:]}
        if keep_stdout:
            out.seek(0)
            result["stdout"] = out.read().decode("utf-8", "replace")
        return result


def _outcome(call: Callable[[], Any], schema: Any = None) -> list[Any]:
    from subagent_catalog.errors import SubagentCatalogError

    try:
        value = call()
    except SubagentCatalogError as error:
        return ["error", type(error).__name__, str(error)[:600]]
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        return ["raw", type(error).__name__, "".join(traceback.format_exception(error))[-1500:]]
    if schema is not None and getattr(value, "schema", schema) != schema:
        return ["raw", "schema", f"{value.schema} != {schema}"]
    return ["ok"]


RUN_TABLES = ("outcomes", "sessions", "models", "trees", "tools", "errors")
"""``runs -t`` tables."""
SQL_TABLES = ("sessions", "descriptors", "problems", "events", "catalog", "usage_by_model", "tool_calls", "run_trees")
"""The tables ``sql`` offers, each queried whole."""
COMMANDS = (
    *(f"runs -t {table}" for table in RUN_TABLES),
    "compare A",
    "compare B",
    *(f"sql {table}" for table in SQL_TABLES),
    "findings",
    "report",
    "show",
    "search",
    "check",
    "list",
    "summary",
    "otel",
    "export",
)
"""Every command that reads an archive (``compare A``: the damaged archive as side A; ``export``: an incremental
export into it, which reads its facts table), in the order the child runs them (``export`` last: it rewrites it)."""
STREAMING = ("search", "export")
"""The commands that read in bounded batches: the only ones run on a consistent row bomb."""


def cli_args(name: str, spec: dict[str, Any]) -> list[str]:
    """The command line of one of ``COMMANDS`` over the case's archive (outputs under ``spec["out"]``)."""
    path, base, out = spec["path"], spec["base"], spec["out"]
    if name.startswith("runs -t "):
        return ["runs", path, "-t", name.split()[-1]]
    if name.startswith("sql "):
        return ["sql", path, f"select * from {name.split()[-1]}"]
    return {
        "compare A": ["compare", path, base],
        "compare B": ["compare", base, path],
        "findings": ["findings", path],
        "report": ["report", path, "-q", "-o", os.path.join(out, "report.html")],
        "show": ["show", path, spec["sessions"][0]],
        "search": ["search", path, "e", "--limit", "5"],
        "check": ["check", path, "-q"],
        "list": ["list", path, spec["parents"][0]],
        "summary": ["summary", path, "-q"],
        "otel": ["otel", path, "-o", os.path.join(out, "otel.json")],
        "export": ["export", spec["root"], path, "--quiet", "--jobs", "1"],
    }[name]


def run_calls(spec: dict[str, Any]) -> dict[str, Any]:
    """Every archive-reading call on one case (in the child), then the commands it names (``spec["commands"]``)."""
    import polars as pl

    from subagent_catalog import (
        catalog,
        catalog_descendants,
        deviations,
        error_groups,
        findings,
        list_agents_text,
        list_children,
        list_descendants,
        run_summary,
        run_trees,
        search_events,
        tool_calls,
        transcript,
        usage_by_model,
    )
    from subagent_catalog.analysis.compare import compare
    from subagent_catalog.analysis.search import SEARCH_SCHEMA
    from subagent_catalog.catalog.schemas import CATALOG_EXTRA, ROW_SCHEMA
    from subagent_catalog.store.archive import open_archive

    path = spec["path"]
    out: dict[str, Any] = {}
    out["open"] = _outcome(lambda: open_archive(path))
    if out["open"][0] == "ok":
        archive = open_archive(path)
        for table in TABLES:
            out[f"check {table}"] = _outcome(lambda t=table: archive.check(t))  # type: ignore[misc]
        rows = pl.Schema({**CATALOG_EXTRA, **ROW_SCHEMA})
        if spec["collect"]:
            out["catalog"] = _outcome(lambda: catalog(open_archive(path)), rows)
            out["catalog_descendants"] = _outcome(lambda: catalog_descendants(open_archive(path)))
            out["deviations"] = _outcome(lambda: deviations(open_archive(path)))
            for parent in spec["parents"]:
                out[f"list_children {parent}"] = _outcome(lambda p=parent: list_children(open_archive(path), p))
                out[f"list_descendants {parent}"] = _outcome(lambda p=parent: list_descendants(open_archive(path), p))
                out[f"list_agents_text {parent}"] = _outcome(lambda p=parent: list_agents_text(open_archive(path), p))
            out["to_corpus"] = _outcome(lambda: open_archive(path).to_corpus(events=True))
            for session in spec["sessions"]:
                out[f"transcript {session}"] = _outcome(lambda s=session: transcript(open_archive(path).to_corpus(), s))
            for name, call in {  # the run tables and compare, which collected scans outside the guard
                "compare a": lambda: compare(open_archive(path), open_archive(spec["base"]), resamples=50),
                "compare b": lambda: compare(open_archive(spec["base"]), open_archive(path), resamples=50),
                "run_trees": lambda: run_trees(open_archive(path)),
                "usage_by_model": lambda: usage_by_model(open_archive(path)),
                "tool_calls": lambda: tool_calls(open_archive(path)),
                "run_summary": lambda: run_summary(open_archive(path).to_corpus()),
                "error_groups": lambda: error_groups(open_archive(path)),
                "findings": lambda: findings(open_archive(path)),
            }.items():
                out[name] = _outcome(call)
        out["search"] = _outcome(lambda: search_events(open_archive(path), "e", limit=5), pl.Schema(SEARCH_SCHEMA))
    os.makedirs(spec["out"], exist_ok=True)
    for name in spec["commands"]:
        if spec["collect"] or name in STREAMING:
            out[f"cli {name}"] = _cli(cli_args(name, spec))
    return out


def child_main() -> None:
    """Read the cases from argv[1] (JSON), run each, print one JSON line per case."""
    import json

    outside = os.path.join(os.environ["FUZZ_OUTSIDE"], "")
    opened: list[str] = []

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and args and isinstance(args[0], (str, bytes)):
            name = os.fsdecode(args[0])
            if "outside" in name and os.path.realpath(name).startswith(outside):
                opened.append(name)

    sys.addaudithook(hook)
    for spec in json.loads(Path(sys.argv[1]).read_text()):
        started = time.perf_counter()
        result = run_calls(spec)
        result["_seconds"] = time.perf_counter() - started
        result["_hwm_kb"] = _hwm_kb()
        result["_opened_outside"] = sorted(set(opened))
        opened.clear()
        print(json.dumps({"seed": spec["seed"], "result": result}), flush=True)


# --- the parent ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One case: its mutations and the invariants it broke."""

    seed: int
    mutations: list[str]
    violations: list[str]
    hwm_mb: float | None = None
    seconds: float | None = None
    result: dict[str, Any] = field(default_factory=dict)


def _cli_violations(name: str, run: dict[str, Any], *, checksums: bool = True) -> list[str]:
    """The CLI invariants; without checksums (an archive exported before them) a damaged page may still make
    Polars print its panic before the one error line (nothing sees the damage before Polars reads it)."""
    code, stderr = run["code"], run["stderr"]
    out: list[str] = []
    if not isinstance(code, int) or code not in (0, 1):
        out.append(f"{name}: exit {code}")
    if "Traceback" in stderr or ("panicked" in stderr and checksums):
        out.append(f"{name}: traceback or panic on stderr")
    if "internal error" in stderr:
        out.append(f"{name}: internal error")
    if code == 1:
        lines = stderr.strip().splitlines()
        errors = [line for line in lines if line.startswith("Error:")]
        if len(errors) != 1 or lines[-1] != errors[0]:
            out.append(f"{name}: {len(errors)} Error: lines, {len(lines)} lines in all")
    return out


def check(case: Case, result: dict[str, Any]) -> list[str]:
    """The violated invariants of one case's child result."""
    violations: list[str] = []
    for name, outcome in result.items():
        if name.startswith("_"):
            continue
        if name.startswith("cli "):
            violations += _cli_violations(name, outcome, checksums=case.checksums)
        elif outcome[0] == "raw":
            violations.append(f"{name}: raw {outcome[1]}")
    damaged: dict[str, list[str]] = {}
    for table, file_name in case.detected:
        damaged.setdefault(table, []).append(file_name.split("/")[-1])
    for table, names in damaged.items():
        outcome = result.get(f"check {table}") or result.get("open")
        if outcome is None or outcome[0] != "error" or outcome[1] != "ArchiveError":
            violations.append(f"check {table}: the damaged {', '.join(names)} was not refused")
        elif not any(name in outcome[2] for name in case.touched) and "its manifest says" not in outcome[2]:
            violations.append(f"check {table}: the error names none of {', '.join(names)}")
    if result.get("_opened_outside"):
        violations.append(f"opened outside the root: {result['_opened_outside']}")
    if result.get("_hwm_kb", 0) / 1024 > RSS_BOUND_MB:
        violations.append(f"peak RSS {result['_hwm_kb'] / 1024:.0f} MB > {RSS_BOUND_MB} MB")
    return violations


def case_commands(seed: int, commands: int | None) -> list[str]:
    """The ``COMMANDS`` a case runs: all (``None``), or a seeded sample of ``commands`` of them and the streaming
    ones, in ``COMMANDS`` order (the fast tier's: the long one runs every command on every case)."""
    if commands is None:
        return list(COMMANDS)
    chosen = {*random.Random(seed).sample(COMMANDS, min(commands, len(COMMANDS))), *STREAMING}
    return [name for name in COMMANDS if name in chosen]


def run_batch(cases: list[Case], bases: Bases, *, commands: int | None = None) -> list[Outcome]:
    """Run the calls of several cases in one child interpreter; the outcome of each."""
    specs = [
        {
            "seed": case.seed,
            "path": str(case.path),
            "root": str(case.root),
            "base": str(bases.with_events),  # the other side of compare: an archive nothing damaged
            "out": str(bases.work / f"out-{case.seed}"),
            "collect": case.collect,
            "sessions": bases.sessions[:3],
            "parents": bases.parents[:3],
            "commands": case_commands(case.seed, commands),
        }
        for case in cases
    ]
    spec_file = bases.work / f"spec-{cases[0].seed}.json"
    spec_file.write_text(json.dumps(specs))
    env = {
        **os.environ,
        "FUZZ_REPO": str(REPO),
        "FUZZ_OUTSIDE": str(bases.outside.parents[2]),
        "SUBAGENT_CATALOG_CACHE": "off",
        "PYTHONPATH": str(REPO),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(spec_file)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TIMEOUT_S * len(cases),
            env=env,
            cwd=str(bases.work),
            check=False,
        )
        stdout, tail = done.stdout, f"exit {done.returncode}: {done.stderr[-800:]}"
    except subprocess.TimeoutExpired as expired:
        stdout = (expired.stdout or b"").decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        tail = f"timeout after {TIMEOUT_S * len(cases):.0f} s"
    results = {}
    for line in stdout.splitlines():
        if line.startswith('{"seed"'):
            record = json.loads(line)
            results[record["seed"]] = record["result"]
    outcomes = []
    for case in cases:
        result = results.get(case.seed)
        if result is None:
            outcomes.append(Outcome(case.seed, case.mutations, [f"no result from the child ({tail})"]))
            continue
        outcomes.append(
            Outcome(
                case.seed,
                case.mutations,
                check(case, result),
                result["_hwm_kb"] / 1024,
                result["_seconds"],
                result,
            )
        )
    return outcomes


def run_cases(
    seeds: list[int],
    bases: Bases,
    *,
    batch: int = 6,
    mutations: list[str] | None = None,
    bomb_rows: tuple[int, ...] = BOMB_ROWS,
    commands: int | None = None,
) -> list[Outcome]:
    """Build and run cases a batch at a time (each batch in one child; ``commands``: ``case_commands``)."""
    outcomes: list[Outcome] = []
    for start in range(0, len(seeds), batch):
        cases = [
            make_case(seed, bases, mutations=mutations, bomb_rows=bomb_rows) for seed in seeds[start : start + batch]
        ]
        try:
            outcomes += run_batch(cases, bases, commands=commands)
        finally:
            for case in cases:
                discard(case)
                shutil.rmtree(bases.work / f"out-{case.seed}", ignore_errors=True)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    """Run ``--cases`` seeded cases; print a summary; exit 1 on any violation."""
    parser = tier_parser("tests.fuzz.archives", __doc__)
    parser.add_argument("--batch", type=int, default=6, help="cases per child interpreter")
    parser.add_argument("--long", action="store_true", help=f"row bombs up to {LONG_BOMB_ROWS[-1]:,} rows")
    args = parser.parse_args(argv)
    seeds = case_seeds(args)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-archives-") as work:
        bases = make_bases(Path(work))
        outcomes: list[Outcome] = []
        for start in range(0, len(seeds), args.batch * 10):
            bombs = LONG_BOMB_ROWS if args.long else BOMB_ROWS
            fresh = run_cases(seeds[start : start + args.batch * 10], bases, batch=args.batch, bomb_rows=bombs)
            for outcome in fresh:
                if outcome.violations:  # at once: a long run that dies later keeps its findings
                    print(f"violation: seed {outcome.seed} {outcome.mutations}: {outcome.violations}", flush=True)
            outcomes += fresh
            done = len(outcomes)
            bad = sum(1 for o in outcomes if o.violations)
            print(
                f"{done}/{len(seeds)} cases, {bad} with violations, {time.perf_counter() - started:.0f} s", flush=True
            )
    drawn = Counter(name for outcome in outcomes for name in outcome.mutations)
    errors = Counter(
        value[1]
        for outcome in outcomes
        for name, value in outcome.result.items()
        if not name.startswith("_") and isinstance(value, list) and value and value[0] != "ok"
    )
    peaks = [o.hwm_mb for o in outcomes if o.hwm_mb is not None]
    summary = {
        "cases": len(outcomes),
        "seconds": round(time.perf_counter() - started, 1),
        "violations": [
            {"seed": o.seed, "mutations": o.mutations, "violations": o.violations} for o in outcomes if o.violations
        ],
        "mutations": dict(drawn.most_common()),
        "typed_errors": dict(errors.most_common()),
        "peak_rss_mb_max": max(peaks) if peaks else None,
        "rss_bound_mb": RSS_BOUND_MB,
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "fuzz-archives.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1)
    print(json.dumps({k: v for k, v in summary.items() if k != "violations"}, indent=1))
    for violation in summary["violations"][:50]:
        print(violation)
    return 1 if summary["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
