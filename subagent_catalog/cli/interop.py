"""``subagent-catalog otel`` and ``sql``: a corpus (or an archive) as OTLP traces, and SQL over its frames."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click
import polars as pl

from subagent_catalog.bounds import MEMORY_MB, REQUEST_BYTES, SECONDS, TEXT_CHARS, WORKERS
from subagent_catalog.cli.io import check_target, is_stdout, note, output_stream, translate_errors, write_rows
from subagent_catalog.cli.options import (
    bounded,
    data_output_option,
    format_option,
    load_source,
    note_archive,
    prices_option,
    protected_paths,
    source_options,
)
from subagent_catalog.views.text import csv_cells, json_terminal, terminal_frame

if TYPE_CHECKING:
    from subagent_catalog.frames.source import Source
    from subagent_catalog.interop.otlp_export import OtlpStats
    from subagent_catalog.interop.phoenix_check import Phoenix
    from subagent_catalog.prices import PriceTable


_PLAIN = (
    pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.Int128, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64,
    pl.Float32, pl.Float64, pl.Boolean, pl.String, pl.Categorical, pl.Enum, pl.Date, pl.Time,
    pl.Duration, pl.Decimal, pl.Null,
)  # fmt: skip
_DATETIME_BOUNDS = {"ns": (-(2**63) + 1, 2**63 - 1), "us": (-62_135_596_800_000_000, 253_402_300_799_999_999)}


def _plain(dtype: Any) -> bool:
    """A type Polars writes to CSV (flat) and JSON lines itself: numbers, text, dates, and lists and structs of them."""
    if isinstance(dtype, pl.List | pl.Array):
        return _plain(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return all(_plain(field.dtype) for field in dtype.fields)
    return isinstance(dtype, pl.Datetime) or any(dtype == plain or isinstance(dtype, plain) for plain in _PLAIN)


def _encode(value: object) -> object:
    return value.hex() if isinstance(value, bytes | bytearray) else str(value)


def _writable(frame: pl.DataFrame) -> pl.DataFrame:
    """The result with every cell CSV and JSON lines can hold.

    Bytes (a BLOB; a BIT in DuckDB's own encoding) as hex; a MAP with number
    keys, bytes inside a list or a struct, as JSON text; a timestamp past
    year 9999 as its count of units since 1970.

    Raises:
        OutputError: a column's values cannot be read back to be written as text.
    """
    import json

    from subagent_catalog.outputs import OutputError

    fixed = []
    for name, dtype in frame.schema.items():
        column = frame[name]
        if isinstance(dtype, pl.Datetime) and column.null_count() < len(column):
            low, high = _DATETIME_BOUNDS.get(dtype.time_unit or "us", _DATETIME_BOUNDS["us"])
            if dtype.time_unit == "ms":
                low, high = low // 1000, high // 1000
            physical = column.to_physical()
            if low <= (physical.min() or 0) and (physical.max() or 0) <= high:  # type: ignore[operator]
                continue
            fixed.append(physical.cast(pl.String) + f" {dtype.time_unit} since 1970-01-01")
            continue
        if _plain(dtype):
            continue
        try:
            values = column.to_list()
        except Exception as error:  # an extension type Polars cannot give back
            raise OutputError(
                f"the column {name!r} ({dtype}) cannot be written as text: {error}",
                hint="cast it in the query, e.g. to text with ::VARCHAR",
            ) from None
        text = [
            None if v is None else (_encode(v) if isinstance(v, bytes | bytearray) else json.dumps(v, default=_encode))
            for v in values
        ]
        fixed.append(pl.Series(name, text, dtype=pl.String))
    return frame.with_columns(fixed) if fixed else frame


TABLE_ROWS = 10_000
"""The table format shows at most this many rows (then a line says how many more): csv and json give all."""


def _source(root: str, *, quiet: bool) -> Source:
    """ROOT by the input rule: an archive (noted on stderr), or the corpus read from it."""
    source = load_source(root, quiet=quiet)
    note_archive(root, source, verb="reading", quiet=quiet)
    return source


def _headers(values: tuple[str, ...]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{value!r} is not NAME=VALUE", param_hint="--header")
        headers[name.strip()] = text
    return headers


@click.command()
@source_options
@click.option(
    "-s",
    "--session",
    "sessions",
    multiple=True,
    metavar="ID",
    help="Export only this session and its subagents (repeatable; default: every root run).",
)
@click.option(
    "-o",
    "--output",
    default=None,
    type=click.Path(dir_okay=False, path_type=str),
    help="Write OTLP JSON lines to this file ('-': stdout, escaped).",
)
@click.option("--endpoint", default=None, metavar="URL", help="Send over OTLP/HTTP (protobuf) to this collector URL.")
@click.option("--header", "headers", multiple=True, metavar="NAME=VALUE", help="An HTTP header for --endpoint.")
@click.option("--project", default="dsh", show_default=True, help="The Phoenix project (openinference.project.name).")
@click.option(
    "--conventions",
    type=click.Choice(["openinference+gen_ai", "openinference", "gen_ai"]),
    default="openinference+gen_ai",
    show_default=True,
    help="Which semantic conventions' attributes to write (dsh.* always).",
)
@click.option(
    "--max-text",
    type=bounded(TEXT_CHARS),
    default=4096,
    show_default=True,
    help="Clip message texts, tool arguments and results to this many characters.",
)
@click.option(
    "--timeout",
    type=bounded(SECONDS.narrow(0.1)),
    default=10.0,
    show_default=True,
    help="Seconds per attempt of a request to --endpoint, all of it (connect, send, reply).",
)
@click.option(
    "--retry-for",
    type=bounded(SECONDS),
    default=60.0,  # otlp_http.RETRY_FOR (not imported here: the interop package loads OpenTelemetry)
    show_default=True,
    metavar="SECONDS",
    help="How long a request is sent again when the collector seems busy (429/502/503/504, no reply in time).",
)
@click.option(
    "--max-request-bytes",
    type=bounded(REQUEST_BYTES.narrow(1024)),
    default=4 * 1024 * 1024,
    show_default=True,
    metavar="BYTES",
    help="Split requests to --endpoint larger than this (a trace may go in several requests).",
)
@click.option(
    "--verify",
    is_flag=True,
    help="Phoenix: ask which traces it holds before sending, count what it stored until stored = sent.",
)
@click.option(
    "--verify-timeout",
    type=bounded(SECONDS.narrow(1)),
    default=600.0,
    show_default=True,
    metavar="SECONDS",
    help="How long --verify waits for Phoenix to store every span sent.",
)
@click.option(
    "--register-prices",
    is_flag=True,
    help="Phoenix: write the exported models' prices (the price table) into its model table before sending.",
)
@click.option(
    "--run-id",
    default=None,
    metavar="ID",
    help="Derive trace and span ids from this id (and the project) instead of the export's content digest.",
)
@prices_option
@translate_errors
def otel(
    root: str,
    quiet: bool,
    sessions: tuple[str, ...],
    output: str | None,
    endpoint: str | None,
    headers: tuple[str, ...],
    project: str,
    conventions: str,
    max_text: int,
    timeout: float,
    retry_for: float,
    max_request_bytes: int,
    verify: bool,
    verify_timeout: float,
    register_prices: bool,
    run_id: str | None,
    prices: str | None,
) -> None:
    """Export the runs as OpenTelemetry traces (OpenInference and GenAI conventions): a file or a collector.

    One trace per root run: each session an AGENT span, its turns CHAIN
    spans, its model steps LLM spans, its tool calls TOOL spans, each
    subagent under the tool call that started it. ROOT is a corpus root or an
    archive directory. Nothing is sent anywhere but --endpoint.

    \b
    Examples:
        subagent-catalog otel data/sample -o sample.spans.jsonl
        subagent-catalog otel data/sample --endpoint http://127.0.0.1:6006
        subagent-catalog otel data/sample --session run-webapp-1 --endpoint http://127.0.0.1:6006
    """
    from subagent_catalog.interop.otel import otlp_parts, send_otlp, spawn_summary, write_otlp_json
    from subagent_catalog.interop.otlp_http import check_headers, parse_endpoint
    from subagent_catalog.prices import price_table

    if (output is None) == (endpoint is None):
        raise click.UsageError("give exactly one of -o FILE and --endpoint URL")
    if headers and endpoint is None:
        raise click.UsageError("--header goes with --endpoint")
    if (verify or register_prices) and endpoint is None:
        raise click.UsageError("--verify and --register-prices go with --endpoint (a Phoenix server)")
    header_map = _headers(headers)
    if endpoint is not None:  # a malformed URL or header is refused before the corpus is read
        parse_endpoint(endpoint)
        check_headers(header_map)
    table = price_table(prices)  # a bad price table fails before the corpus is read
    check_target(output, [root])
    source = _source(root, quiet=quiet)
    traces = otlp_parts(
        source,
        sessions=list(sessions) or None,
        conventions=conventions,  # type: ignore[arg-type]
        project=project,
        max_text=max_text,
        prices=table,
        run_id=run_id,
    )
    phoenix: Phoenix | None = None
    if endpoint is not None:
        from subagent_catalog.interop.phoenix_check import phoenix_presence

        phoenix = _phoenix(
            endpoint, header_map, source, table, verify=verify, register=register_prices, timeout=timeout, quiet=quiet
        )
        stats = send_otlp(
            traces,
            endpoint,
            headers=header_map or None,
            timeout=timeout,
            retry_for=retry_for,
            max_request_bytes=max_request_bytes,
            present=None if phoenix is None or not verify else phoenix_presence(phoenix, project),
        )
        where = f"sent to {endpoint}"
    elif output is not None and is_stdout(output):
        from subagent_catalog.interop.otel import OtlpStats, request_batches
        from subagent_catalog.interop.otlp_json import json_line

        stats = OtlpStats()
        with output_stream(None) as out:
            for batch in request_batches(traces, stats):
                out.write(json_terminal(json_line(batch).decode()))
        where = "written to stdout"
    else:
        assert output is not None
        stats = write_otlp_json(traces, output, protected=protected_paths(root, source))
        where = f"wrote {output}"
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(stats.kinds.items()))
    note(f"{where}: {stats.spans} spans ({kinds}) in {stats.traces} traces, {stats.requests} requests", quiet=quiet)
    note(f"export {traces.identity.name}; {spawn_summary(traces.spawn_links)}", quiet=quiet)
    if verify and phoenix is not None:
        _verify(phoenix, stats, project=project, deadline=verify_timeout, quiet=quiet)


def _phoenix(
    endpoint: str,
    headers: dict[str, str],
    source: Source,
    table: PriceTable,
    *,
    verify: bool,
    register: bool,
    timeout: float,
    quiet: bool,
) -> Phoenix | None:
    """Phoenix to ask (each request within ``timeout`` s) for --verify or --register-prices; prices written first."""
    if not (verify or register):
        return None
    from subagent_catalog.analysis.runs import usage_by_model
    from subagent_catalog.interop.phoenix_check import PRICE_RELOAD_S, phoenix_client, phoenix_url, register_prices

    phoenix = phoenix_client(phoenix_url(endpoint), headers=headers, timeout=timeout)
    if register:
        models = usage_by_model(source, prices=table, by="model").select("provider", "model").rows()
        for done in register_prices(phoenix, models, table):
            shown = ", ".join(f"{kind} ${price:g}" for kind, price in done.prices.items())
            what = f"{done.action}: {shown} per million tokens" if done.prices else "no price in the table, not written"
            note(f"Phoenix model {done.provider}/{done.model}: {what}", quiet=quiet)
        time.sleep(PRICE_RELOAD_S)  # Phoenix reloads its model table every 5 s, and prices a span as it stores it
    return phoenix


def _verify(phoenix: Phoenix, stats: OtlpStats, *, project: str, deadline: float, quiet: bool) -> None:
    """Count the spans Phoenix stored; one line of stored vs sent, an error (exit 1) naming the traces still short."""
    from subagent_catalog.interop.phoenix_check import PhoenixError, verify_phoenix

    traces = len(stats.trace_spans)
    present = len(stats.present)
    note(f"{traces - present} traces new, {present} already present in Phoenix (project {project})", quiet=quiet)
    check = verify_phoenix(phoenix, stats, project=project, deadline=deadline)
    line = f"Phoenix stored {check.stored} of {check.sent} spans sent ({check.traces} traces) in {check.seconds:.1f} s"
    if check.extra:
        line += f"; {len(check.extra)} traces hold more spans than sent (an earlier export under the same ids)"
    if check.short:
        shown = ", ".join(stats.label(trace) for trace in list(check.short)[:5])
        more = f" and {len(check.short) - 5} more" if len(check.short) > 5 else ""
        raise PhoenixError(
            f"{line}: {len(check.short)} traces short after {deadline:g} s: {shown}{more}",
            hint="Phoenix may still be ingesting: send again with --verify and a longer --verify-timeout "
            "(the spans it holds are kept, none is stored twice); or it already holds these span ids in "
            "another project (it keeps the first copy of a span id)",
        )
    note(line, quiet=quiet)


@click.command(name="sql")
@source_options
@click.argument("query")
@format_option(
    ("table", "csv", "json", "parquet"),
    "table: aligned text; csv; json: one object per line; parquet (needs -o).",
    default="table",
)
@data_output_option
@click.option(
    "--memory-limit",
    "memory_limit",
    type=bounded(MEMORY_MB),
    default=2048,
    show_default=True,
    metavar="MB",
    help="DuckDB's memory limit for the query (MiB; nothing spills to disk), and the largest result.",
)
@click.option(
    "--threads", type=bounded(WORKERS), default=None, help="DuckDB's threads (default: the cores, at most 4)."
)
@click.option(
    "--timeout",
    type=bounded(SECONDS.narrow(0.1)),
    default=300.0,
    show_default=True,
    help="Seconds the query may run before it is interrupted.",
)
@translate_errors
def sql_command(
    root: str,
    quiet: bool,
    query: str,
    fmt: str,
    output: str | None,
    memory_limit: int,
    threads: int | None,
    timeout: float,
) -> None:
    """Run one read-only SQL QUERY (DuckDB) over the tables of a corpus or an archive.

    The tables: sessions, descriptors, problems, events, catalog,
    usage_by_model, tool_calls, and run_trees (docs/sql.md). ROOT is a corpus
    root or an archive directory (its Parquet files are read directly). The
    query runs in a sandbox: one SELECT (WITH, FROM, VALUES, DESCRIBE,
    SUMMARIZE, SHOW) or EXPLAIN statement; it can read no file, write none,
    load no extension, change no setting.

    \b
    Examples:
        subagent-catalog sql data/sample "select verdict, count(*) from sessions group by all"
        subagent-catalog sql out/sample-archive "select * from problems" --format csv -o problems.csv
    """
    from subagent_catalog.interop.sql import THREADS, query_tables, sql

    if fmt == "parquet" and is_stdout(output):
        raise click.UsageError("--format parquet needs -o FILE")
    check_target(output, [root])
    query_tables(query)  # refuse a bad query before the corpus is read
    source = _source(root, quiet=quiet)
    frame = sql(source, query, memory_limit_mb=memory_limit, threads=threads or THREADS, timeout=timeout)
    to_terminal = is_stdout(output)
    if fmt == "parquet":
        with output_stream(output, protected=protected_paths(root, source), binary=True) as out:
            frame.write_parquet(out)
    else:
        with output_stream(output, protected=protected_paths(root, source)) as out:
            if fmt in ("csv", "json"):
                write_rows(out, _writable(frame), "csv" if fmt == "csv" else "json", to_terminal=to_terminal)
            else:
                head = frame.head(TABLE_ROWS)
                shown = terminal_frame(csv_cells(head)) if to_terminal else csv_cells(head)
                with pl.Config(
                    tbl_rows=-1,
                    tbl_cols=-1,
                    tbl_hide_dataframe_shape=True,
                    tbl_hide_column_data_types=True,
                    fmt_str_lengths=80,
                    tbl_width_chars=200,
                ):
                    out.write(str(shown) + "\n")
                if frame.height > TABLE_ROWS:
                    more = frame.height - TABLE_ROWS
                    out.write(f"… {more:,} more rows not shown (--format csv or json gives every row)\n")
    note(f"{frame.height} rows" + ("" if to_terminal else f", wrote {output}"), quiet=quiet)
