"""``subagent-catalog otel`` and ``sql`` through click's CliRunner: outputs, formats, refusals."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog.archive import export_archive
from subagent_catalog.cli import main
from subagent_catalog.interop.otlp_json import parse_line
from subagent_catalog.synth.writer import EventLog, header, write_session

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def _run(*args: object) -> object:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_otel_writes_otlp_json_lines_and_says_what(tmp_path: Path) -> None:
    out = tmp_path / "spans.jsonl"
    result = _run("otel", SAMPLE, "-o", out, "-q")
    assert result.exit_code == 0, result.output
    spans = [
        s
        for line in out.read_bytes().splitlines()
        for r in parse_line(line).resource_spans
        for sc in r.scope_spans
        for s in sc.spans
    ]
    assert len(spans) > 100
    loud = _run("otel", SAMPLE, "-o", tmp_path / "again.jsonl")
    assert f"{len(spans)} spans (AGENT 25," in loud.stderr
    assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()  # the same ids and times again


def test_otel_selects_sessions_and_reads_an_archive(tmp_path: Path) -> None:
    export_archive(SAMPLE, tmp_path / "a", events=True, jobs=1)
    for root in (SAMPLE, tmp_path / "a"):
        out = tmp_path / f"{Path(root).name}.jsonl"
        assert _run("otel", root, "--session", "auth-refactor", "-o", out, "-q").exit_code == 0
        (line,) = out.read_bytes().splitlines()
        names = {s.name for s in parse_line(line).resource_spans[0].scope_spans[0].spans}
        assert "Refactor the auth module (auth-refactor)" in names  # named as the report names the run
    assert (tmp_path / "sample.jsonl").read_bytes() == (tmp_path / "a.jsonl").read_bytes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "exactly one of -o FILE and --endpoint URL"),
        (("-o", "x.jsonl", "--endpoint", "http://127.0.0.1:9"), "exactly one of"),
        (("-o", "x.jsonl", "--header", "k=v"), "--header goes with --endpoint"),
        (("--endpoint", "http://127.0.0.1:9", "--header", "novalue"), "is not NAME=VALUE"),
    ],
)
def test_otel_usage_errors(args: tuple[str, ...], message: str) -> None:
    result = _run("otel", SAMPLE, *args)
    assert result.exit_code == 2 and message in result.output


def test_otel_refuses_an_output_inside_the_corpus_and_an_unreachable_endpoint(tmp_path: Path) -> None:
    log = EventLog("s1")
    log.turn_start()
    log.user("hi")
    write_session(tmp_path / "root", header("s1", created_at=1), log.events, "none")
    inside = _run("otel", tmp_path / "root", "-o", tmp_path / "root" / "spans.jsonl", "-q")
    assert inside.exit_code == 1 and "inside" in inside.output
    refused = _run("otel", tmp_path / "root", "--endpoint", "http://127.0.0.1:9", "--timeout", "1", "-q")
    assert refused.exit_code == 1 and "did not accept" in refused.output and "hint:" in refused.output


def test_sql_formats(tmp_path: Path) -> None:
    query = "select session_id, verdict, models from sessions where verdict <> 'ok' order by session_id"
    table = _run("sql", SAMPLE, query, "-q")
    assert table.exit_code == 0 and "garbage-line" in table.stdout and "┆" in table.stdout
    json_out = _run("sql", SAMPLE, query, "--format", "json", "-q")
    assert [line.startswith('{"session_id"') for line in json_out.stdout.splitlines()] == [True] * 4
    assert _run("sql", SAMPLE, query, "--format", "parquet", "-o", tmp_path / "r.parquet", "-q").exit_code == 0
    assert pl.read_parquet(tmp_path / "r.parquet")["session_id"].to_list()[0] == "garbage-line"
    assert _run("sql", SAMPLE, query, "--format", "parquet").exit_code == 2


def test_sql_csv_cells_are_neutralised(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    result = _run("sql", SAMPLE, "select '=HYPERLINK(1)' as x, ['a', 'b'] as l", "--format", "csv", "-o", out, "-q")
    assert result.exit_code == 0
    assert out.read_text().splitlines() == ["x,l", '\'=HYPERLINK(1),"[""a"",""b""]"']


def test_sql_errors_are_one_line_with_the_tables(tmp_path: Path) -> None:
    result = _run("sql", SAMPLE, "select * from nothing_here", "-q")
    assert result.exit_code == 1
    assert "Error: Catalog Error" in result.output and "the tables are sessions" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("query", "start"),
    [
        ("export database 'data/sample/copy'", "Error: EXPORT statements are refused"),
        ("copy sessions to 'x.csv'", "Error: COPY statements are refused"),
        ("install httpfs", "Error: LOAD statements are refused"),
        ("select 1; select 2", "Error: the query holds 2 statements"),
        ("select '\udcff'", "Error: the query is not valid UTF-8"),
        ("select * from read_text('/etc/hostname')", "Error: Permission Error"),
    ],
)
def test_sql_refusals_are_one_line_with_a_hint(query: str, start: str) -> None:
    result = _run("sql", SAMPLE, query, "-q")
    assert result.exit_code == 1 and result.output.startswith(start)
    assert len(result.output.strip().splitlines()) == 1 and "(hint: " in result.output


def test_a_refused_statement_is_refused_before_the_corpus_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    import subagent_catalog.cli.interop as command

    def no_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("the corpus was read")

    monkeypatch.setattr(command, "_source", no_read)
    result = _run("sql", SAMPLE, "attach 'x.db'", "-q")
    assert result.exit_code == 1 and result.output.startswith("Error: ATTACH statements are refused")


def test_sql_limits_options() -> None:
    query = "select current_setting('threads') as t, current_setting('memory_limit') as m"
    result = _run("sql", SAMPLE, query, "--threads", "1", "--memory-limit", "100", "--format", "csv", "-q")
    assert result.exit_code == 0 and result.stdout.splitlines()[1].startswith("1,95.3 MiB")
    slow = _run("sql", SAMPLE, "select count(*) from range(1000000000) a, range(1000000) b", "--timeout", "0.2", "-q")
    assert slow.exit_code == 1 and "ran longer than 0.2 s and was stopped" in slow.output
    assert _run("sql", SAMPLE, "select 1", "--memory-limit", "1").exit_code == 2


def test_the_table_format_shows_at_most_ten_thousand_rows_and_says_how_many_more() -> None:
    from subagent_catalog.cli.interop import TABLE_ROWS

    result = _run("sql", SAMPLE, "select range as n from range(25000)", "-q")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[-1] == "… 15,000 more rows not shown (--format csv or json gives every row)"
    assert "│ 9999 " in result.stdout and "│ 10000 " not in result.stdout and TABLE_ROWS == 10_000
    every = _run("sql", SAMPLE, "select range as n from range(25000)", "--format", "csv", "-q")
    assert len(every.stdout.splitlines()) == 25_001


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_sql_writes_every_cell_csv_and_json_can_hold(fmt: str, tmp_path: Path) -> None:
    query = (
        "select path_bytes, 'x'::blob as b, map([1], ['v']) as m, {'k': 'y'::blob} as s, ['z'::blob] as l,"
        " timestamp '294247-01-10 04:00:54' as far, timestamp '2020-01-10 04:00:54' as near"
        " from sessions where session_id = 'auth-refactor'"
    )
    result = _run("sql", SAMPLE, query, "--format", fmt, "-o", tmp_path / "out", "-q")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "out").read_text()
    assert b"data/sample".hex() in text and "78" in text and "7a" in text
    assert "2020-01-10" in text
    assert "9223372036854000000 us since 1970-01-01" in text


def test_sql_refuses_a_bignum_column_in_one_line() -> None:
    result = _run("sql", SAMPLE, "select 12345678901234567890123::varint as big", "-q")
    assert result.exit_code == 1 and "DuckDB's type bignum" in result.output and "::VARCHAR" in result.output
