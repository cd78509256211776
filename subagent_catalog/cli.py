"""The ``subagent-catalog`` command line: a thin translator over the library.

Every command reads a corpus with ``read_corpus``
and hands it to a library function; this module only parses options and
formats results. Errors the library raises on purpose
(``SubagentCatalogError``: a missing root, a
listing that fails as a whole, an output that cannot be written) and
``OSError`` become one-line messages ending with a hint and exit status 1;
usage errors (unknown option, bad value) exit with 2.
``check`` exits with 1 when a selected check fails. Streams, output files and
error lines are handled by ``subagent_catalog.cli_io``: what is printed to a
terminal stream is escaped, files written with ``-o`` keep the exact data.
"""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, cast

import click

from subagent_catalog.analysis.window import Window
from subagent_catalog.catalog.conformance import conformance_lines, json_text
from subagent_catalog.catalog.parents import require_session
from subagent_catalog.cli_gate import gate_options
from subagent_catalog.cli_interop import otel, sql_command
from subagent_catalog.cli_io import CatalogGroup, check_target, echo, is_stdout, note, output_stream, translate_errors
from subagent_catalog.cli_options import corpus_options, load, semantics_option
from subagent_catalog.cli_runs import runs
from subagent_catalog.cli_search import search
from subagent_catalog.cli_show import show
from subagent_catalog.cli_window import window_options
from subagent_catalog.corpus import read_corpus
from subagent_catalog.outputs import OutputError, inside
from subagent_catalog.read.jsvalue import js_text
from subagent_catalog.views.text import csv_cells, csv_safe, json_terminal, terminal_frame, terminal_safe

__all__ = ["main", "translate_errors"]


@click.group(cls=CatalogGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="subagent-catalog", prog_name="subagent-catalog")
def main() -> None:
    """Audit DeepSeek Harness session corpora."""


# --------------------------------------------------------------------------- shared plumbing


def refuse_inside(out_dir: str, root: str) -> None:
    """Refuse an output directory inside the corpus root (by device and inode: links and bind mounts seen through).

    Raises:
        OutputError: the directory is the root or lies below it.

    Examples:
        >>> import tempfile
        >>> refuse_inside(tempfile.mkdtemp(), tempfile.mkdtemp())
    """
    if inside(out_dir, root):
        raise OutputError(
            f"refusing to write {out_dir!r}: it is inside the corpus {root!r}",
            hint="corpora are read-only: write outputs outside the corpus root",
        )


# --------------------------------------------------------------------------- conformance


@main.command()
@click.argument("root", type=click.Path(file_okay=False))
@click.option("--compression", type=click.Choice(["zstd", "none", "auto"]), default="auto")
@click.option("--semantics", type=click.Choice(["projection", "trace"]), default="projection")
@click.option("--all-parents", is_flag=True)
@click.option("--parents", default=None)
@translate_errors
def conformance(root: str, compression: str, semantics: str, all_parents: bool, parents: str | None) -> None:
    """Print upstream-shaped listing lines for conformance checks."""
    corpus = read_corpus(root, compression=compression, cache=False)  # type: ignore[arg-type]
    chosen = None if all_parents or parents is None else list(parents.split(","))
    out = sys.stdout
    for line in conformance_lines(corpus, chosen, semantics=semantics):  # type: ignore[arg-type]
        out.write(json_terminal(line) + "\n")  # the same JSON values, no raw control or bidi character


# --------------------------------------------------------------------------- summary


@main.command()
@corpus_options
@semantics_option
@window_options
@translate_errors
def summary(root: str, compression: str, jobs: int | None, quiet: bool, semantics: str, window: Window) -> None:
    """Print a short summary of a corpus: sessions, verdicts, bytes, time span, problems.

    With --since/--until the counts are those of the sessions created in the
    window (the listing is still computed over the whole corpus).

    \b
    Examples:
        subagent-catalog summary data/sample
        subagent-catalog summary /archive/sessions --compression zstd --quiet
        subagent-catalog summary /archive/sessions --since "7 days"
    """
    from subagent_catalog.views.summary_text import summary_text

    corpus = load(root, compression=compression, jobs=jobs, quiet=quiet)
    text = summary_text(corpus, semantics=semantics, window=window)  # type: ignore[arg-type]
    echo(terminal_safe(text, keep="\n"))


# --------------------------------------------------------------------------- report


@main.command()
@corpus_options
@click.option(
    "-o",
    "--output",
    default="report.html",
    show_default=True,
    type=click.Path(dir_okay=False, path_type=str),
    help="Where to write the HTML file ('-' for stdout when it is not a terminal).",
)
@click.option(
    "-p",
    "--parent",
    "parents",
    multiple=True,
    metavar="ID",
    help="A session whose list_agents text the report shows (repeatable; default: up to 20 root sessions).",
)
@click.option("--title", default=None, help="Page title (default: from the root's directory name).")
@semantics_option
@window_options
@translate_errors
def report(
    root: str,
    compression: str,
    jobs: int | None,
    quiet: bool,
    output: str,
    parents: tuple[str, ...],
    title: str | None,
    semantics: str,
    window: Window,
) -> None:
    """Write a self-contained offline HTML report of a corpus.

    The file inlines everything it needs (no network at view time): the
    summary, the problems, the session tree, distribution charts, the largest
    and most damaged trees, and the list_agents text of the chosen parents.
    When upstream's listing fails as a whole the report still renders the
    summary and the problems under a banner. With --since/--until the page
    shows the sessions created in the window (the listing is still computed
    over the whole corpus).

    \b
    Examples:
        subagent-catalog report data/sample -o report.html
        subagent-catalog report /archive --since 2026-11-01 --until 2026-12-01 -o november.html
        subagent-catalog report /archive --parent 0f2d0143-... --semantics trace -o trace.html
    """
    from subagent_catalog.views.report import render_report

    if is_stdout(output) and sys.stdout.isatty():
        raise click.UsageError("refusing to print the HTML page to a terminal: redirect stdout or pass -o FILE")
    check_target(output, [root])
    corpus = load(root, compression=compression, jobs=jobs, quiet=quiet)
    for parent in parents:  # a mistyped id is an error naming the nearest ids, not an empty listing
        require_session(corpus, parent)
    chosen = list(parents) if parents else None
    sem: Any = semantics
    page = render_report(corpus, parents=chosen, semantics=sem, title=title, window=window)
    with output_stream(output, protected=[root, corpus.root]) as out:
        out.write(page)
    if corpus.listing_error is not None:
        note(f"warning: upstream's listing fails: {corpus.listing_error}")
    if not is_stdout(output):
        note(f"wrote {output} ({len(page.encode('utf-8', 'replace')) // 1024} KiB)", quiet=quiet)


# --------------------------------------------------------------------------- check


def _fail_on(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    from subagent_catalog.views.gate_checks import parse_fail_on

    try:
        return parse_fail_on(value)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from error


def _check_help() -> str:
    from subagent_catalog.views.gate_checks import CHECKS

    return (
        "Checks that fail the gate (comma-separated; 'all', 'default' or 'none'). Checks: "
        + ", ".join(f"{c.name}{'*' if c.default else ''}" for c in CHECKS)
        + " (* = default)."
    )


@main.command()
@corpus_options
@click.option(
    "--fail-on", default="default", show_default=True, metavar="CHECK[,CHECK...]", callback=_fail_on, help=_check_help()
)
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="Output format: text for terminals, json for machines, markdown for CI job summaries.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Offenders shown per check in text and markdown (0: all; json always has all).",
)
@semantics_option
@window_options
@gate_options
@translate_errors
def check(
    root: str,
    compression: str,
    jobs: int | None,
    quiet: bool,
    fail_on: tuple[str, ...],
    fmt: str,
    limit: int,
    semantics: str,
    window: Window,
    gate: dict[str, Any],
) -> None:
    """Data-quality gate: count problems per check; exit 1 when a selected check fails.

    Prints each check's count and the offending sessions (id, path, cause).
    Exit status: 0 when no check in --fail-on finds more than it tolerates,
    1 otherwise (also when a selected check cannot run because the listing
    fails, and when the corpus has no listed session: no session file, a
    wrong mount or --compression, unless --allow-empty). --max CHECK=N and
    --max-rate CHECK=R (a share of the session files) tolerate some
    offenders and select their check; --baseline FILE (an earlier --format
    json output) counts only offenders it does not hold. With --since/--until
    only the offenders of sessions created in the window count (entries that
    are no session file, such as corpus-level problems, always count); a
    window without sessions passes.

    \b
    Examples:
        subagent-catalog check data/sample
        subagent-catalog check /archive --fail-on corpus-error,unsupported-version,malformed-descriptor
        subagent-catalog check /archive --max corrupt=5 --max-rate unavailable=0.01
        subagent-catalog check /archive --format json > previous.json  # later:
        subagent-catalog check /archive --baseline previous.json
        subagent-catalog check /archive --format markdown >> "$GITHUB_STEP_SUMMARY"
    """
    from subagent_catalog.views.gate import run_checks
    from subagent_catalog.views.gate_format import format_json, format_markdown, format_text

    corpus = load(root, compression=compression, jobs=jobs, quiet=quiet)
    result = run_checks(corpus, fail_on=fail_on, semantics=semantics, window=window, **gate)  # type: ignore[arg-type]
    if fmt == "json":
        echo(json_terminal(format_json(result)))
    elif fmt == "markdown":
        echo(terminal_safe(format_markdown(result, limit=limit), keep="\n"))
    else:
        echo(terminal_safe(format_text(result, limit=limit), keep="\n"))
    if result.failed:
        raise SystemExit(1)


# --------------------------------------------------------------------------- list


LIVE_BYTES = 64 * 2**20
"""The largest ``--live`` file read (a registry snapshot is a few kilobytes)."""


def _live(ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, str] | None:
    if value is None:
        return None
    try:
        with open(value, "rb") as handle:
            raw = handle.read(LIVE_BYTES + 1)
        if len(raw) > LIVE_BYTES:
            raise ValueError(f"larger than {LIVE_BYTES // 2**20} MiB")
        data = json.loads(raw)
    except RecursionError as error:
        raise click.BadParameter(f"cannot read {value!r} as JSON: nested too deeply", ctx=ctx, param=param) from error
    except (OSError, ValueError) as error:
        raise click.BadParameter(f"cannot read {value!r} as JSON: {error}", ctx=ctx, param=param) from error
    if not isinstance(data, dict) or not all(isinstance(k, str) and v in ("running", "idle") for k, v in data.items()):
        raise click.BadParameter(
            'expected a JSON object {"<session id>": "running" | "idle", ...}', ctx=ctx, param=param
        )
    return cast(dict[str, str], data)


@main.command(name="list")
@corpus_options
@click.argument("parent")
@click.option(
    "--scope",
    type=click.Choice(["children", "descendants"]),
    default="children",
    show_default=True,
    help="Direct children, or every subagent below PARENT (pre-order, with parentId and depth).",
)
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "csv", "parquet"]),
    default="text",
    show_default=True,
    help="text: list_agents text; json: upstream row objects; csv/parquet: the full frame with audit columns.",
)
@click.option(
    "--live",
    type=click.Path(exists=True, dir_okay=False, path_type=str),
    default=None,
    callback=_live,
    metavar="FILE",
    help='JSON file {"<id>": "running"|"idle"} of live sessions (the offline live overlay).',
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Write the exact data here instead of stdout ('-'), which is escaped (required for parquet).",
)
@semantics_option
@window_options
@translate_errors
def list_command(
    root: str,
    compression: str,
    jobs: int | None,
    quiet: bool,
    parent: str,
    scope: str,
    fmt: str,
    live: dict[str, str] | None,
    output: str | None,
    semantics: str,
    window: Window,
) -> None:
    """List PARENT's subagents exactly as upstream does.

    The text format is the list_agents tool's text; json is the array of
    upstream row objects; csv and parquet hold the whole frame with the audit
    columns. On stdout, control, bidi and other invisible format characters
    in ids and labels are escaped (\\x1b, \\u202e; JSON uses its own \\u
    escapes); -o FILE writes the exact data (the text byte for byte). CSV
    cells that start with =, +, -, @, a tab or a carriage return get a leading
    apostrophe so spreadsheets do not run them as formulas. --since/--until
    keep the rows of subagents created in the window; each kept row is
    upstream's row as it is (the listing is computed over the whole corpus).

    \b
    Examples:
        subagent-catalog list data/sample 0f2d0143-c8a9-4b36-8965-eb626eeee2cc
        subagent-catalog list data/sample ROOT-ID --scope descendants --format json
        subagent-catalog list data/sample ROOT-ID --format csv -o children.csv
        subagent-catalog list data/sample ROOT-ID --live live.json
        subagent-catalog list data/sample ROOT-ID --scope descendants --since 2026-01-02
    """
    from subagent_catalog.catalog.listing import children_rows, descendant_rows, list_children, list_descendants

    if fmt == "parquet" and is_stdout(output):
        raise click.UsageError("--format parquet needs --output FILE")
    check_target(output, [root])
    corpus = load(root, compression=compression, jobs=jobs, quiet=quiet)
    corpus.require_listing()  # a failing listing is the error to report, before any id
    if semantics == "projection":  # trace refuses an unknown parent itself (SUBAGENT_PARENT_NOT_FOUND)
        require_session(corpus, parent)  # an id naming no session is an error; a session without subagents is not
    protected = [root, corpus.root]
    sem: Any = semantics
    to_terminal = is_stdout(output)
    if fmt in ("text", "json"):
        rows = (children_rows if scope == "children" else descendant_rows)(corpus, parent, semantics=sem, live=live)
        rows = [row for row in rows if window.contains_ms(row.created_at_ms)]
        if fmt == "text":
            text = _agents_text(rows, scope=scope, live=live, escaped=to_terminal)
        else:
            lines = [json_text(row.upstream()) for row in rows]
            text = "[\n" + ",\n".join("  " + line for line in lines) + "\n]\n" if lines else "[]\n"
            text = json_terminal(text) if to_terminal else text
        with output_stream(output, protected=protected) as out:
            out.write(text)
        return
    frame = (list_children if scope == "children" else list_descendants)(corpus, parent, semantics=sem, live=live)
    frame = window.frame(frame)
    if fmt == "csv":
        with output_stream(output, protected=protected) as out:
            flat = csv_cells(frame)
            out.write(csv_safe(terminal_frame(flat) if to_terminal else flat).write_csv())
        return
    assert output is not None
    buffer = io.BytesIO()  # written whole, so a full disk is the OSError open_output reports
    frame.write_parquet(buffer)
    with output_stream(output, protected=protected, binary=True) as handle:
        handle.write(buffer.getvalue())
    note(f"wrote {output} ({frame.height} rows)", quiet=quiet)


def _agents_text(rows: Sequence[Any], *, scope: str, live: Mapping[str, str] | None, escaped: bool) -> str:
    """The list_agents text of listing rows; for a terminal, every value escaped (a label cannot fake a line)."""
    from subagent_catalog.catalog.listing import render_list_agents

    if escaped:
        rows = [
            dataclasses.replace(
                row,
                id=terminal_safe(js_text(row.id)),
                label=None if row.label is None else terminal_safe(js_text(row.label)),
                parent=terminal_safe(js_text(row.parent)) if isinstance(row.parent, str) else row.parent,
            )
            for row in rows
        ]
        live = {terminal_safe(js_text(key)): value for key, value in (live or {}).items()}
    text = js_text(render_list_agents(list(rows), scope=scope, statuses=live))  # type: ignore[arg-type]
    return (terminal_safe(text, keep="\n") if escaped else text) + "\n"


# --------------------------------------------------------------------------- export


def storage_options(pairs: tuple[str, ...]) -> dict[str, str] | None:
    """``--storage-option KEY=VALUE`` pairs as a dict (``None`` when there are none).

    Raises:
        click.BadParameter: a pair without ``=``.

    Examples:
        >>> storage_options(("aws_region=eu-west-1", "aws_endpoint_url=http://h:9000"))
        {'aws_region': 'eu-west-1', 'aws_endpoint_url': 'http://h:9000'}
    """
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--storage-option")
        out[key.strip()] = value
    return out or None


@main.command()
@corpus_options
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=str))
@click.option("--events", is_flag=True, help="Also write the events table (every event of every readable log).")
@click.option(
    "--engine",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="Where logs are read: this machine (a process pool) or a Dask cluster.",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="Dask scheduler address (tcp://host:8786); with --engine dask and none, a local cluster runs.",
)
@click.option(
    "--incremental/--full",
    default=True,
    show_default=True,
    help="Re-read only files whose path, size, mtime, ctime or inode changed since the last export, or read all.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=None,
    help="Most files per read task (default 64 to 256; larger past 131,072 files, so at most 512 tasks).",
)
@click.option(
    "--storage-option",
    "storage_option",
    multiple=True,
    metavar="KEY=VALUE",
    help="For an object-store OUT_DIR (s3://...): a storage option such as aws_endpoint_url=http://host:9000 "
    "or aws_region=eu-west-1 (repeatable; credentials may also come from the environment).",
)
@translate_errors
def export(
    root: str,
    compression: str,
    jobs: int | None,
    quiet: bool,
    out_dir: str,
    events: bool,
    engine: str,
    scheduler: str | None,
    incremental: bool,
    batch_size: int | None,
    storage_option: tuple[str, ...],
) -> None:
    """Write the corpus's frames to OUT_DIR as a partitioned Parquet archive plus manifest.json.

    Tables: sessions, descriptors, problems (and events with --events),
    partitioned by project directory; manifest.json records the package and
    Polars versions, the root, the compression, row counts and the creation
    time. Exporting again into the same directory updates it. OUT_DIR may be
    an object-store URL (s3://bucket/prefix, gs://..., file://...): workers
    write their parts there directly.

    \b
    Examples:
        subagent-catalog export data/sample out/sample-archive
        subagent-catalog export /archive out/archive --events --engine dask --scheduler tcp://10.0.0.5:8786
        subagent-catalog export /archive s3://bucket/archive --storage-option aws_region=eu-west-1
    """
    from subagent_catalog.store.export import export_archive
    from subagent_catalog.store.layout import is_url
    from subagent_catalog.views.progress import progress_bar

    options = storage_options(storage_option)
    if not is_url(out_dir):
        refuse_inside(out_dir, root)
    with progress_bar(quiet=quiet, desc="reading logs") as progress:
        manifest = export_archive(
            root,
            out_dir,
            events=events,
            engine=engine,  # type: ignore[arg-type]
            scheduler=scheduler,
            incremental=incremental,
            compression=compression,  # type: ignore[arg-type]
            jobs=jobs,
            batch_size=batch_size,
            progress=progress,
            storage_options=options,
        )
    counts = manifest.get("row_counts", {})
    shown = ", ".join(
        f"{name} {counts[name]}"
        for name in ("sessions", "descriptors", "problems", "events")
        if counts.get(name) is not None
    )
    update = manifest.get("update", {})
    echo(terminal_safe(f"exported {root} to {out_dir}: {shown}"))
    if update:
        echo(f"files read {update.get('files_read')}, reused {update.get('files_reused')}")
    if manifest.get("listing_error"):
        note(f"warning: upstream's listing fails: {manifest['listing_error']}")


main.add_command(search)
main.add_command(otel)
main.add_command(sql_command)
main.add_command(show)
main.add_command(runs)
