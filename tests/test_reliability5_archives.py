"""Reliability round 5, item 5: damaged archive data is one ``Error:`` line naming the part, in every command.

Reported: one forged schema byte (a field name in a sessions part's ``ARROW:schema`` made not UTF-8, its
``file_blake2b`` recomputed in the manifest), or seeded bit flips in data pages with the digest recomputed, gave
"internal error" in ``compare``, ``runs -t sessions|models|trees|tools`` and ``sql "... from run_trees"``: they
collected the archive's scans outside its guard (``Archive.reading``). Now every read of an archive runs in that
one guard (``catalog.source.source_reads`` where a source enters, DuckDB's errors in ``sql``), and a forged stored
schema is refused by the footer check.

Three damaged archives are built once from the canonical archive (``tests.fuzz.archives``): a forged byte in a
sessions, a descriptors and an events part (pyarrow, so DuckDB, reads such a part; Polars does not); the same
without the manifest's checksums (an archive exported before them); and seeded bit flips in one column's pages of
the same parts, digests recomputed, which only the readers meet: chosen so that Polars and pyarrow (DuckDB's reader)
both refuse them (a flip that makes Polars panic still prints its panic text before the one error line: the panic
hook writes to stderr directly, as for an archive without checksums). Every command that reads an archive runs
over each in one child interpreter (``tests.fuzz.archives``' ``COMMANDS`` but ``export``, which reads a corpus
root and only the facts table of the archive it writes).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from subagent_catalog import error_groups, findings, run_summary, run_trees, tool_calls, usage_by_model
from subagent_catalog.analysis.compare import compare
from subagent_catalog.corpus import read_corpus
from subagent_catalog.interop.sql import sql
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.checksum import DIGEST_KEY, part_digest
from subagent_catalog.store.layout import ArchiveError
from tests.fuzz.archives import (
    COMMANDS,
    REPO,
    canonical_corpus,
    canonical_export,
    find_damage,
    flipped,
    forged_schema_byte,
)

DAMAGED_TABLES = {"sessions": "session_id", "descriptors": "session_id", "events": "list_order"}
"""The tables whose first part is damaged (every command reads one of them), and the field forged or flipped."""
FLIP_COLUMNS = {"sessions": "list_order", "descriptors": "session_id", "events": "session_id"}
"""The column whose pages the bit flips hit, per table: one every reader of the table reads."""
KINDS = ("forged", "forged-no-checksums", "bit-flips")

CHILD = """
import json, sys
from tests.fuzz.archives import _cli, cli_args
spec = json.loads(sys.argv[1])
print(json.dumps({name: _cli(cli_args(name, spec)) for name in spec["commands"]}))
"""


def _replace_part(archive: Path, table: str, index: int, data: bytes) -> str:
    """Write a part's new bytes and record their size and digest in the manifest (a careful forger); its name."""
    manifest = json.loads((archive / "manifest.json").read_text())
    entry = manifest["tables"][table]
    name = entry["files"][index]
    (archive / name).write_bytes(data)
    entry["file_bytes"][index] = len(data)
    entry[DIGEST_KEY][index] = part_digest(data)
    (archive / "manifest.json").write_text(json.dumps(manifest))
    return name.split("/")[-1]


def _strip_checksums(archive: Path) -> None:
    manifest = json.loads((archive / "manifest.json").read_text())
    for entry in (*manifest["tables"].values(), manifest["fingerprints"]):
        entry.pop(DIGEST_KEY)
    (archive / "manifest.json").write_text(json.dumps(manifest))


def _damaged(base: Path, out: Path, kind: str) -> list[str]:
    """A copy of ``base`` at ``out`` with the first part of each ``DAMAGED_TABLES`` table damaged; their names."""
    shutil.copytree(base, out)
    manifest = json.loads((out / "manifest.json").read_text())
    names = []
    for table, field in DAMAGED_TABLES.items():
        data = (out / manifest["tables"][table]["files"][0]).read_bytes()
        if kind == "bit-flips":
            region = f"column:{FLIP_COLUMNS[table]}"
            flips = find_damage(data, random.Random(5), region=region, want="error", flips=1, tries=500)
            assert flips is not None, f"no flip in {table}'s {FLIP_COLUMNS[table]} pages makes both readers refuse it"
            names.append(_replace_part(out, table, 0, flipped(data, flips)))
        else:
            names.append(_replace_part(out, table, 0, forged_schema_byte(data, field)))
    if kind == "forged-no-checksums":
        _strip_checksums(out)
    return names


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The canonical archive, its corpus, and the three damaged copies with the names of their damaged parts."""
    work = tmp_path_factory.mktemp("reliability5-archives")
    root = canonical_corpus(work / "corpus")
    base = canonical_export(work, "base", events=True)
    sessions = read_corpus(root, compression="zstd", cache=False, jobs=1).sessions
    built: dict[str, Any] = {
        "work": work,
        "root": root,
        "base": base,
        "session": sessions["session_id"].drop_nulls()[0],
        "parent": sessions["parent_session"].drop_nulls()[0],
    }
    for kind in KINDS:
        built[kind] = (work / kind, _damaged(base, work / kind, kind))
    return built


def _commands(archives: dict[str, Any], kind: str, commands: list[str]) -> dict[str, dict[str, Any]]:
    """Run ``commands`` over a damaged archive in one child interpreter (``tests.fuzz.archives._cli``)."""
    path, _ = archives[kind]
    spec = {
        "path": str(path),
        "base": str(archives["base"]),
        "root": str(archives["root"]),
        "out": str(archives["work"] / f"out-{kind}"),
        "sessions": [archives["session"]],
        "parents": [archives["parent"]],
        "commands": commands,
    }
    os.makedirs(spec["out"], exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "SUBAGENT_CATALOG_CACHE": "off", "RUST_BACKTRACE": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("kind", KINDS)
def test_every_command_over_a_damaged_archive_prints_one_error_line_naming_the_part(
    archives: dict[str, Any], kind: str
) -> None:
    _, damaged = archives[kind]
    commands = [name for name in COMMANDS if name != "export"]
    results = _commands(archives, kind, commands)
    for name in commands:
        code, stderr = results[name]["code"], results[name]["stderr"]
        for text in ("Traceback", "panicked at", "internal error"):
            assert text not in stderr, (name, stderr[-3000:])
        if name == "sql problems":  # this corpus has no problems rows: the table has no part to damage
            assert code == 0, (name, stderr[-3000:])
            continue
        lines = stderr.strip().splitlines()
        errors = [line for line in lines if line.startswith("Error: ")]
        assert code == 1 and len(errors) == 1 and lines[-1] == errors[0], (name, code, stderr[-3000:])
        assert any(part in errors[0] for part in damaged), (name, errors[0])
        assert "(hint: " in errors[0] and "re-export" in errors[0], (name, errors[0])


@pytest.mark.parametrize("kind", KINDS)
def test_the_run_tables_compare_and_findings_over_a_damaged_archive_raise_archive_error(
    archives: dict[str, Any], kind: str
) -> None:
    path, damaged = archives[kind]
    base = archives["base"]
    calls = {
        "compare a": lambda: compare(open_archive(path), open_archive(base), resamples=50),
        "compare b": lambda: compare(open_archive(base), open_archive(path), resamples=50),
        "run_trees": lambda: run_trees(open_archive(path)),
        "usage_by_model": lambda: usage_by_model(open_archive(path)),
        "tool_calls": lambda: tool_calls(open_archive(path)),
        "run_summary": lambda: run_summary(open_archive(path).to_corpus()),
        "error_groups": lambda: error_groups(open_archive(path)),
        "findings": lambda: findings(open_archive(path)),
        "sql run_trees": lambda: sql(open_archive(path), "select * from run_trees"),
        "sql sessions": lambda: sql(open_archive(path), "select * from sessions"),
    }
    for name, call in calls.items():
        with pytest.raises(ArchiveError) as raised:
            call()
        assert any(part in str(raised.value) for part in damaged), (name, str(raised.value))


def test_duckdb_reading_a_damaged_part_names_it(archives: dict[str, Any]) -> None:
    """``sql`` over an archive's own tables: DuckDB reads the parts itself, and its error is traced to the part."""
    path, damaged = archives["bit-flips"]
    for table in ("sessions", "descriptors", "events"):
        with pytest.raises(ArchiveError, match="is damaged") as raised:
            sql(open_archive(path), f"select * from {table}")
        assert damaged[list(DAMAGED_TABLES).index(table)] in str(raised.value)
    assert sql(open_archive(path), "select count(*) as n from problems")["n"].item() == 0


def test_a_bug_met_inside_the_guard_is_not_relabelled_archive_damage(
    archives: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No part of a healthy archive is damaged: an error inside the guard passes as it is, never as damage."""
    from subagent_catalog.analysis import runs

    def bug(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("a bug")

    monkeypatch.setattr(runs, "sample_costs", bug)
    with pytest.raises(KeyError, match="a bug"):
        usage_by_model(open_archive(archives["base"]))
    archive = open_archive(archives["base"])
    with pytest.raises(pl.exceptions.ComputeError, match="not the archive's"), archive.reading():
        assert archive.sessions.collect().height == 12  # its parts are read (and probed after the error)
        raise pl.exceptions.ComputeError("not the archive's")


def test_a_forged_stored_schema_is_refused_by_the_footer_check(archives: dict[str, Any]) -> None:
    path, damaged = archives["forged"]
    archive = open_archive(path)
    for table, name in zip(DAMAGED_TABLES, damaged, strict=True):
        with pytest.raises(ArchiveError, match="is not a readable Parquet file") as raised:
            archive.check(table)  # type: ignore[arg-type]
        assert name in str(raised.value)
    open_archive(archives["base"]).check("sessions")  # the healthy footers pass
