"""Format 6: the events files keep the text of types outside ``TEXT_TYPES`` in ``data_text``.

Readers never see the split: ``Archive.events``, ``search_events`` (every
``types=`` choice, with and without a limit) and SQL give what they give over
the corpus, and an archive of format 5 (one ``text`` column) still reads the same.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from subagent_catalog import search_events
from subagent_catalog.analysis.search import DEFAULT_TYPES
from subagent_catalog.corpus import read_corpus
from subagent_catalog.interop.sql import sql
from subagent_catalog.read.event_text import TEXT_TYPES, event_parts
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.store.layout import DATA_TEXT

from .helpers import EventLog, header, write_session

DATA_TYPES = ["request/header", "request/context"]


def _corpus(root: Path) -> None:
    for index in range(3):
        log = EventLog(f"s{index}")
        log.turn_start()
        log.add("request/header", {"header": {"system": f"needle system prompt {index}"}, "reason": "turn-start"})
        log.add("request/context", {"provider": "needle-provider", "contextWindow": 1000})
        log.user(f"please find the needle {index}")
        log.tool_round(f"c{index}", f"the needle was in tool output {index}")
        log.turn_end()
        write_session(root, header(f"s{index}", created_at=index, cwd=f"/p/{index % 2}"), log.events, "none")


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("split")
    root = base / "corpus"
    _corpus(root)
    export_archive(root, base / "v6", events=True, jobs=1)
    _as_format_5(base / "v6", base / "v5")
    return {"root": root, "v6": base / "v6", "v5": base / "v5"}


def _as_format_5(source: Path, target: Path) -> None:
    """The same archive as format 5 wrote it: the events files' text in one column."""
    manifest = json.loads((source / "manifest.json").read_text())
    for directory, _, files in os.walk(source):
        for name in files:
            path = Path(directory) / name
            copy = target / path.relative_to(source)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(path.read_bytes())
    entry = manifest["tables"]["events"]
    for index, name in enumerate(entry["files"]):
        table = pq.read_table(target / name)
        joined = pa.compute.coalesce(table.column("text"), table.column(DATA_TEXT))
        table = table.set_column(table.schema.get_field_index("text"), "text", joined).drop_columns([DATA_TEXT])
        pq.write_table(table, target / name, compression="zstd")
        entry["file_bytes"][index] = os.path.getsize(target / name)
    for table in (*manifest["tables"].values(), manifest["fingerprints"]):
        table.pop("file_blake2b", None)  # format 5 was written before the part checksums
    manifest["format_version"] = 5
    (target / "manifest.json").write_text(json.dumps(manifest))


def test_text_types_name_their_fields_and_every_other_type_has_data_text() -> None:
    """What the split rests on: only types outside ``TEXT_TYPES`` (the default search) give ``data`` parts."""
    value = {"content": [{"type": "text", "text": "t"}], "message": {"content": "m"}, "name": "n", "arguments": "a",
             "error": "e", "reason": {"error": "r"}, "label": "l", "persona": "p", "other": "o"}  # fmt: skip
    for kind in DEFAULT_TYPES:
        assert all(field != "data" for field, _ in event_parts(kind, value)), kind
    for kind in ("request/header", "request/context", "agent/inbox/spliced", "turn/start"):
        parts = event_parts(kind, value)
        assert parts and {field for field, _ in parts} == {"data"}, kind


def test_events_files_keep_data_text_apart(archives: dict[str, Any]) -> None:
    archive = open_archive(archives["v6"])
    assert archive.manifest["format_version"] >= 7 and archive.splits_text  # format 7 split the text
    files = pl.concat(
        [pl.read_parquet(archives["v6"] / name) for name in archive.manifest["tables"]["events"]["files"]]
    )
    text_rows = files.filter(pl.col("type").is_in(sorted(TEXT_TYPES)))
    data_rows = files.filter(~pl.col("type").is_in(sorted(TEXT_TYPES)))
    assert text_rows[DATA_TEXT].null_count() == text_rows.height
    assert data_rows["text"].null_count() == data_rows.height
    assert data_rows[DATA_TEXT].str.contains("needle").sum() == 6  # three headers, three contexts
    assert text_rows["text"].str.contains("needle").sum() == 6  # three user messages, three tool results


@pytest.mark.parametrize("version", ["v6", "v5"])
def test_archive_events_are_the_corpus_events(archives: dict[str, Any], version: str) -> None:
    corpus = read_corpus(archives["root"])
    archive = open_archive(archives[version])
    events = archive.to_corpus(events=True).events
    assert DATA_TEXT not in archive.events.collect_schema()
    assert events.equals(corpus.events)


@pytest.mark.parametrize("version", ["v6", "v5"])
@pytest.mark.parametrize("types", [None, DATA_TYPES, ["request/header", "user/message"], ["tool/result"]])
@pytest.mark.parametrize("limit", [None, 2])
def test_archive_search_of_any_types_is_the_corpus_search(
    archives: dict[str, Any], version: str, types: list[str] | None, limit: int | None
) -> None:
    expected = search_events(read_corpus(archives["root"]), "needle", types=types, limit=limit)
    found = search_events(open_archive(archives[version]), "needle", types=types, limit=limit)
    assert found.equals(expected)
    whole = 3 if types == ["tool/result"] else 6  # three logs, one or two of the chosen types holding the needle
    assert found.height == (whole if limit is None else limit)
    if types == DATA_TYPES and limit is None:
        assert found["type"].value_counts().sort("type").rows() == [("request/context", 3), ("request/header", 3)]


@pytest.mark.parametrize("version", ["v6", "v5"])
def test_sql_over_archive_events_shows_every_text(archives: dict[str, Any], version: str) -> None:
    query = "select session_id, seq, type, text from events where text like '%needle%' order by session_id, seq"
    expected = sql(read_corpus(archives["root"]), query)
    found = sql(open_archive(archives[version]), query)
    assert found.equals(expected) and found.height == 12
    assert DATA_TEXT not in sql(open_archive(archives[version]), "select * from events limit 1").columns
