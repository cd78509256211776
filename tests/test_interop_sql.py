"""``sql``: DuckDB over the frames and over an archive's Parquet, locked down; the audit queries agree both ways."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from subagent_catalog import read_corpus
from subagent_catalog.archive import export_archive, open_archive
from subagent_catalog.errors import CatalogError, SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.interop.errors import SqlError
from subagent_catalog.interop.sql import sql
from subagent_catalog.interop.sql_audit import AUDIT_QUERIES
from subagent_catalog.interop.sql_tables import SQL_TABLES, SqlTable

SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance"
CASES = sorted(p for p in (SHARED / "cases").glob("*") if (p / "corpus").is_dir()) if SHARED.is_dir() else []
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def _outcome(source: Any, query: str) -> pl.DataFrame | str:
    try:
        return sql(source, query)
    except SubagentCatalogError as error:
        return type(error).__name__


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/conformance is not present")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_audit_queries_agree_over_a_corpus_and_its_archive(case: Path, tmp_path: Path) -> None:
    compression = json.loads((case / "meta.json").read_text())["compression"]
    corpus = read_corpus(case / "corpus", compression=compression, cache=False)
    export_archive(case / "corpus", tmp_path / "a", events=True, compression=compression, jobs=1)
    archive = open_archive(tmp_path / "a")
    for name, query in AUDIT_QUERIES.items():
        here, there = _outcome(corpus, query), _outcome(archive, query)
        if isinstance(here, str) or isinstance(there, str):
            assert here == there == "CatalogError", (name, here, there)  # a root whose listing fails
            assert corpus.listing_error is not None and name == "catalog-diagnostics"
        else:
            assert here.equals(there), name


@pytest.fixture(scope="module")
def sample() -> Corpus:
    return read_corpus(SAMPLE, cache=False)


def test_every_audit_query_finds_rows_in_the_sample(sample: Corpus) -> None:
    heights = {name: sql(sample, query).height for name, query in AUDIT_QUERIES.items()}
    assert all(heights.values()), heights


def test_results_equal_the_same_question_asked_of_polars(sample: Corpus) -> None:
    got = sql(sample, "select project_dir, count(*) as n, sum(turns) as turns from sessions group by all order by 1")
    expected = (
        sample.sessions.group_by("project_dir")
        .agg(n=pl.len(), turns=pl.col("turns").sum())
        .sort("project_dir")
        .with_columns(pl.col("n").cast(pl.Int64), pl.col("turns").cast(pl.Int128))
    )
    assert got.rows() == expected.rows()


def test_only_the_named_tables_are_registered(sample: Corpus) -> None:
    corpus = read_corpus(SAMPLE, cache=False)
    sql(corpus, "select count(*) from sessions")
    assert corpus._events is None  # the events were never read
    assert sql(corpus, "select count(*) as n from events")["n"][0] == corpus.events.height > 0


@pytest.mark.parametrize(
    "query",
    [
        "copy sessions to '{out}'",
        "select * from read_csv('{out}')",
        "attach '{out}' as other",
        "install httpfs",
        "set enable_external_access = true",
        "select * from read_text('/etc/hostname')",
    ],
)
def test_a_query_can_read_or_write_no_file(sample: Corpus, tmp_path: Path, query: str) -> None:
    out = tmp_path / "out.csv"
    with pytest.raises(SqlError):
        sql(sample, query.format(out=out))
    assert not out.exists() and os.listdir(tmp_path) == []


def test_errors_name_the_tables(sample: Corpus) -> None:
    with pytest.raises(SqlError, match="the tables are sessions, descriptors, problems, events, catalog"):
        sql(sample, "select * from session")
    with pytest.raises(SqlError, match="syntax"):
        sql(sample, "selec 1")


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/conformance is not present")
def test_the_catalog_of_a_root_whose_listing_fails_is_the_listing_error() -> None:
    case = next(c for c in CASES if c.name.startswith("S07"))
    corpus = read_corpus(case / "corpus", compression="none", cache=False)
    with pytest.raises(CatalogError):
        sql(corpus, "select * from catalog")
    assert sql(corpus, "select count(*) as n from sessions")["n"][0] == corpus.sessions.height


def test_an_archive_is_read_from_its_parquet_and_without_events_from_its_root(tmp_path: Path) -> None:
    export_archive(SAMPLE, tmp_path / "a", jobs=1)
    archive = open_archive(tmp_path / "a")
    query = "select session_id, verdict, created_at, models from sessions order by list_order"
    corpus = read_corpus(SAMPLE, cache=False)
    assert sql(archive, query).equals(sql(corpus, query))
    assert sql(archive, "select count(*) as n from events")["n"][0] == corpus.events.height  # the root's events


def test_a_new_table_is_one_mapping_entry(sample: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    table = SqlTable("roots", lambda source: source.sessions.filter(pl.col("parent_session").is_null()))  # type: ignore[union-attr]
    monkeypatch.setitem(SQL_TABLES, "roots", table)
    assert sql(sample, "select count(*) as n from roots")["n"][0] == sample.sessions["parent_session"].null_count()


def test_to_pandas_gives_arrow_backed_columns(sample: Corpus) -> None:
    pd = pytest.importorskip("pandas")
    frame = sql(sample, "select session_id, turns, created_at, models from sessions").to_pandas(
        types_mapper=pd.ArrowDtype
    )
    assert all(isinstance(dtype, pd.ArrowDtype) for dtype in frame.dtypes)
    assert str(frame.dtypes["created_at"]).startswith("timestamp[")


def test_every_frame_returning_public_function_documents_to_pandas() -> None:
    import inspect

    import subagent_catalog

    returning = []
    for name in subagent_catalog.__all__:
        obj = getattr(subagent_catalog, name)
        if inspect.isfunction(obj) and str(inspect.signature(obj).return_annotation).startswith("pl."):
            returning.append(name)
            assert "to_pandas(types_mapper=pd.ArrowDtype)" in (obj.__doc__ or ""), name
    assert {"catalog", "list_children", "scan_events", "sql", "transcript"} <= set(returning)


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/conformance is not present")
def test_the_failing_tools_query_counts_what_the_run_facts_count() -> None:
    corpus = read_corpus(SHARED / "cases" / "real-writer-rich-none" / "corpus", cache=False)
    tools = sql(corpus, AUDIT_QUERIES["failing-tools"])
    assert tools["calls"].sum() == corpus.sessions["tool_calls"].sum() > 0  # a fork's seed is not counted again
    assert tools["failed"].sum() == corpus.sessions["tool_results_failed"].sum() > 0
