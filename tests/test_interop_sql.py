"""``sql``: DuckDB over the frames and over an archive's Parquet, locked down; the audit queries agree both ways."""

from __future__ import annotations

import importlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from subagent_catalog import read_corpus
from subagent_catalog.archive import export_archive, open_archive
from subagent_catalog.errors import CatalogError, SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.interop import sql_process
from subagent_catalog.interop.errors import SqlError
from subagent_catalog.interop.sql import sql
from subagent_catalog.interop.sql_audit import AUDIT_QUERIES
from subagent_catalog.interop.sql_tables import SQL_TABLES, SqlTable
from tests.helpers import one_encoding

SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance"
CASES = (
    one_encoding(sorted(p for p in (SHARED / "cases").glob("*") if (p / "corpus").is_dir())) if SHARED.is_dir() else []
)
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


# --------------------------------------------------------------------------- the sandbox (issues 39 and 42)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME (where DuckDB would install extensions, ``~/.duckdb``) and the working directory, both empty."""
    home = tmp_path / "home"
    work = tmp_path / "cwd"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return home


def _nothing_created(home: Path) -> None:
    assert os.listdir(home) == [] and os.listdir(home.parent / "cwd") == []


def test_read_json_of_a_file_outside_is_refused_without_opening_it(sample: Corpus, tmp_path: Path, home: Path) -> None:
    malformed = tmp_path / "outside.json"
    malformed.write_text("not json at all\n")
    with pytest.raises(SqlError) as there:
        sql(sample, f"select * from read_json('{malformed}')")
    with pytest.raises(SqlError) as missing:
        sql(sample, f"select * from read_json('{tmp_path / 'no-such.json'}')")
    # the file was never parsed (no JSON position in the error) and a missing file looks the same (no oracle)
    assert "Malformed" not in str(there.value) and "No files found" not in str(missing.value)
    assert "file system operations are disabled" in str(there.value)
    missing_text = str(missing.value).replace(str(tmp_path / "no-such.json"), "P")
    assert str(there.value).replace(str(malformed), "P") == missing_text
    _nothing_created(home)


@pytest.mark.parametrize(
    "query",
    [
        "select * from read_json('https://example.invalid/x.json')",
        "select * from 'https://example.invalid/x.parquet'",
        "select * from read_parquet('s3://bucket/x.parquet')",
    ],
)
def test_a_url_is_refused_and_installs_no_extension(sample: Corpus, home: Path, query: str) -> None:
    with pytest.raises(SqlError, match="disabled by configuration"):
        sql(sample, query)
    _nothing_created(home)  # no ~/.duckdb/extensions/... (httpfs was never installed)


def test_export_database_into_the_corpus_is_refused_and_creates_nothing(tmp_path: Path, home: Path) -> None:
    from tests.fuzz.outputs import tree_state

    root = tmp_path / "corpus"
    shutil.copytree(SAMPLE, root)
    before = tree_state(root)
    log = next(root.rglob("session.jsonl*"))
    corpus = read_corpus(root, cache=False)
    for query in (f"export database '{log.parent / 'x' / log.name}'", f"export database '{root}'"):
        with pytest.raises(SqlError, match="EXPORT statements are refused") as refused:
            sql(corpus, query)
        assert refused.value.reason == "refused" and "\n" not in str(refused.value)
    assert tree_state(root) == before
    _nothing_created(home)


@pytest.mark.parametrize(
    ("query", "kind", "hint"),
    [
        ("copy sessions to '{out}'", "COPY", "-o FILE"),
        ("copy (select 1) to '{out}' (format parquet)", "COPY", "-o FILE"),
        ("export database '{dir}'", "EXPORT", "-o FILE"),
        ("attach '{out}' as other", "ATTACH", "no other database"),
        ("attach ':memory:' as other", "ATTACH", "no other database"),
        ("detach other", "DETACH", "no other database"),
        ("install httpfs", "LOAD", "extensions"),
        ("force install httpfs", "LOAD", "extensions"),
        ("load httpfs", "LOAD", "extensions"),
        ("load '{out}'", "LOAD", "extensions"),
        ("pragma version", "PRAGMA", "settings are fixed"),
        ("pragma enable_profiling='json'", "SET", "settings are fixed"),
        ("pragma memory_limit='100GB'", "SET", "settings are fixed"),
        ("import database '{dir}'", "PRAGMA", "settings are fixed"),
        ("set enable_external_access = true", "SET", "settings are fixed"),
        ("set memory_limit = '100GB'", "SET", "settings are fixed"),
        ("reset threads", "SET", "settings are fixed"),
        ("set variable v = 1", "SET", "settings are fixed"),
        ("call pragma_version()", "CALL", "read-only"),
        ("checkpoint", "CALL", "read-only"),
        ("create table t as select * from sessions", "CREATE", "read-only"),
        ("create secret (type s3, key_id 'k', secret 's')", "CREATE", "read-only"),
        ("insert into sessions select * from sessions", "INSERT", "read-only"),
        ("pivot sessions on verdict", "MULTI", "name them"),
        ("begin transaction", "TRANSACTION", "read-only"),
        ("vacuum", "VACUUM", "read-only"),
    ],
)
def test_every_statement_but_a_read_only_query_is_refused_before_duckdb_runs_it(
    sample: Corpus, tmp_path: Path, home: Path, query: str, kind: str, hint: str
) -> None:
    out = tmp_path / "out.db"
    with pytest.raises(SqlError) as refused:
        sql(sample, query.format(out=out, dir=tmp_path / "export"))
    assert refused.value.reason == "refused"
    assert str(refused.value).startswith(f"{kind.replace('_', ' ')} statements are refused: sql runs one read-only")
    assert hint in (refused.value.hint or "")
    assert sorted(os.listdir(tmp_path)) == ["cwd", "home"]
    _nothing_created(home)


@pytest.mark.parametrize(
    "query",
    [
        "select * from glob('/etc/*')",
        "select * from read_text('/etc/hostname')",
        "select * from read_blob('/etc/hostname')",
        "select * from sniff_csv('/etc/passwd')",
        "select * from parquet_metadata('/x.parquet')",
        "select * from duckdb_extensions()",
        "select * from (select 1) where exists (select * from read_csv('/etc/passwd'))",
    ],
)
def test_table_functions_over_files_are_refused_by_the_connection(sample: Corpus, home: Path, query: str) -> None:
    with pytest.raises(SqlError, match="disabled by configuration") as refused:
        sql(sample, query)
    assert refused.value.reason == "query"
    _nothing_created(home)


@pytest.mark.parametrize(
    "query",
    [
        "select 1 as x",
        "with s as (select * from sessions) select count(*) as x from s",
        "from sessions select count(*) as x",
        "values (1)",
        "table problems",
        "describe sessions",
        "summarize problems",
        "show sessions",
        "explain select * from sessions",
        "explain analyze select count(*) from events",
        "select 1 as x;",
        "select * from (pivot sessions on verdict in ('ok', 'failed') using count(*) group by origin)",
    ],
)
def test_read_only_queries_run(sample: Corpus, home: Path, query: str) -> None:
    assert sql(sample, query).height >= 1
    _nothing_created(home)


@pytest.mark.parametrize(
    ("query", "reason", "message"),
    [
        ("select 1; select 2", "refused", "holds 2 statements"),
        ("", "syntax", "no statement"),
        ("  -- nothing\n;", "syntax", "no statement"),
        ("select '\udcff'", "encoding", "not valid UTF-8"),
        ("select 1\x00", "syntax", "NUL"),
        ("select " + "1+" * 60_000 + "1", "too-long", "at most 100,000"),
        ("select " + "(" * 5000 + "1" + ")" * 5000, "too-long", "nests 5,000 brackets deep"),
        ("select " + "(" * 1000 + "1" + ")" * 1000, "syntax", "Max expression depth"),
        ("update extensions", "refused", "unknown type"),
    ],
)
def test_malformed_queries_are_one_typed_line(sample: Corpus, query: str, reason: str, message: str) -> None:
    with pytest.raises(SqlError, match=message) as failed:
        sql(sample, query)
    assert failed.value.reason == reason and "\n" not in str(failed.value) and failed.value.hint


def test_a_query_over_the_memory_limit_fails_cleanly_and_spills_nothing(sample: Corpus, home: Path) -> None:
    with pytest.raises(SqlError, match="memory limit of 64 MiB") as failed:
        sql(sample, "select * from range(20000000) order by random()", memory_limit_mb=64)
    assert failed.value.reason == "memory" and "--memory-limit" in (failed.value.hint or "")
    _nothing_created(home)  # no .tmp spill directory in the working directory


def test_a_result_larger_than_the_memory_limit_is_refused_while_it_streams(sample: Corpus) -> None:
    with pytest.raises(SqlError, match="result is larger than the memory limit of 32 MiB") as failed:
        sql(sample, "select range as a, range as b from range(100000000)", memory_limit_mb=32)
    assert failed.value.reason == "result-too-large"


def test_the_limits_are_the_connections_settings(sample: Corpus) -> None:
    query = (
        "select current_setting('threads') as threads, current_setting('memory_limit') as memory,"
        " current_setting('temp_directory') as temp, current_setting('enable_external_access') as external,"
        " current_setting('lock_configuration') as locked, current_setting('autoinstall_known_extensions') as install"
    )
    row = sql(sample, query, threads=1, memory_limit_mb=100).row(0, named=True)
    assert row["threads"] == 1 and row["memory"].startswith("95.3 MiB") and row["temp"] == ""
    assert (row["external"], row["locked"], row["install"]) == (False, True, False)


@pytest.mark.parametrize("isolate", [True, False], ids=["own-process", "in-process"])
def test_a_long_query_is_stopped_at_its_deadline(
    sample: Corpus, monkeypatch: pytest.MonkeyPatch, isolate: bool
) -> None:
    module = importlib.import_module("subagent_catalog.interop.sql")

    monkeypatch.setattr(module, "ISOLATE", isolate)
    query = "select count(*) from range(1000000000) a, range(1000000) b where a.range + b.range = 3"
    with pytest.raises(SqlError, match=r"ran longer than 0\.5 s and was stopped") as stopped:
        sql(sample, query, timeout=0.5)
    assert stopped.value.reason == "timeout" and "--timeout" in (stopped.value.hint or "")
    assert sql(sample, "select count(*) as n from sessions")["n"][0] == sample.sessions.height  # still usable


def _resident_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        return int(next(line.split()[1] for line in status if line.startswith("VmRSS:"))) / 1024


@pytest.mark.skipif(not sql_process.available(), reason="queries run in their own process on Linux only")
@pytest.mark.parametrize(
    "query",
    [
        "select range(60000000) as l",  # one list value of 480 MB: DuckDB's limit does not count it
        "select length(repeat('x', 700000000)) as n",  # one string of 700 MB
    ],
)
def test_a_value_built_by_one_call_is_stopped_at_the_memory_bound(sample: Corpus, query: str) -> None:
    before = _resident_mb()
    with pytest.raises(SqlError, match="memory limit of 64 MiB") as stopped:
        sql(sample, query, memory_limit_mb=64, timeout=120)
    assert stopped.value.reason == "memory" and "grew past 320 MiB" in str(stopped.value)
    assert _resident_mb() - before < 200  # the caller never held it


@pytest.mark.skipif(not sql_process.available(), reason="queries run in their own process on Linux only")
def test_a_crash_of_the_query_process_is_a_sql_error(sample: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal

    def crash(*args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGSEGV)

    monkeypatch.setattr(sql_process, "locked", crash)  # runs in the forked child only
    with pytest.raises(SqlError, match=r"ended without a result \(signal 11\)") as died:
        sql(sample, "select 1")
    assert died.value.reason == "query"
    monkeypatch.undo()
    assert sql(sample, "select 1 as x")["x"][0] == 1


def test_in_process_the_result_bound_and_duckdbs_errors_are_the_same(
    sample: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = importlib.import_module("subagent_catalog.interop.sql")

    monkeypatch.setattr(module, "ISOLATE", False)
    with pytest.raises(SqlError, match="result is larger than the memory limit of 32 MiB"):
        sql(sample, "select range as a, range as b from range(100000000)", memory_limit_mb=32)
    with pytest.raises(SqlError, match="memory limit of 64 MiB") as memory:
        sql(sample, "select * from range(20000000) order by random()", memory_limit_mb=64)
    assert memory.value.reason == "memory"
    assert sql(sample, "select count(*) as n from sessions")["n"][0] == sample.sessions.height


def test_limits_must_be_positive(sample: Corpus) -> None:
    for bad in ({"memory_limit_mb": 0}, {"threads": 0}, {"timeout": 0}):
        with pytest.raises(ValueError, match="must be"):
            sql(sample, "select 1", **bad)  # type: ignore[arg-type]


def test_duplicate_and_unusual_result_columns(sample: Corpus) -> None:
    assert sql(sample, "select 1 as a, 2 as a, 3 as A").columns == ["a", "a_1", "A_2"]
    with pytest.raises(SqlError, match="Polars cannot hold") as odd:
        sql(sample, "select interval 1 day as i")
    assert odd.value.reason == "result-type" and "::VARCHAR" in (odd.value.hint or "")
    assert sql(sample, "select (interval 1 day)::varchar as i")["i"][0] == "1 day"


def test_only_the_tables_the_parse_tree_names_are_made(sample: Corpus) -> None:
    corpus = read_corpus(SAMPLE, cache=False)
    sql(corpus, "select count(*) as events, 'catalog' as c from sessions -- events")
    assert corpus._events is None  # a column called events is not the table
    explained = sql(corpus, "explain select count(*) from Events")
    assert explained.height >= 1 and corpus._events is not None


def test_the_default_duckdb_connection_is_never_used(sample: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    import duckdb

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the shared default connection was used")

    for name in ("get_table_names", "extract_statements", "sql", "execute", "query", "default_connection"):
        monkeypatch.setattr(duckdb, name, refuse)
    assert sql(sample, "select count(*) as n from sessions join problems using (path)").height == 1


def test_a_query_nested_deeper_than_duckdb_accepts_is_refused_before_its_parser_runs(sample: Corpus) -> None:
    deep = "select " + "(" * 10_000 + "1;" + ")" * 9_999  # DuckDB's parser: 13 s and 1.8 GB over twice this
    with pytest.raises(SqlError, match="nests 10,000 brackets deep; at most 1,000") as refused:
        sql(sample, deep)
    assert refused.value.reason == "too-long"
    quoted = "select '" + "(" * 5000 + "' as x -- " + "[" * 5000
    assert sql(sample, quoted)["x"][0] == "(" * 5000  # brackets in a string or a comment do not count
