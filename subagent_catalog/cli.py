"""The ``subagent-catalog`` command line: a thin translator over the library.

Every command reads a corpus with ``read_corpus``
and hands it to a library function; this module only parses options and
formats results. Errors the library raises on purpose
(``SubagentCatalogError``: a missing root, a
listing that fails as a whole) become one-line messages ending with a hint
and exit status 1; usage errors (unknown option, bad value) exit with 2.
``check`` exits with 1 when a selected check fails.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar, cast

import click

from subagent_catalog.catalog.conformance import conformance_lines, json_text
from subagent_catalog.corpus import read_corpus
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.jsvalue import js_text
from subagent_catalog.views.text import csv_safe

F = TypeVar("F", bound=Callable[..., Any])

COMPRESSION = click.Choice(["auto", "zstd", "none"])
SEMANTICS = click.Choice(["projection", "trace"])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="subagent-catalog", prog_name="subagent-catalog")
def main() -> None:
    """Audit DeepSeek Harness session corpora."""


# --------------------------------------------------------------------------- shared plumbing


def translate_errors(func: F) -> F:
    """Turn the library's deliberate errors into click errors (exit status 1).

    Examples:
        >>> from subagent_catalog.errors import CorpusRootError
        >>> @translate_errors
        ... def boom() -> None:
        ...     raise CorpusRootError("no root", hint="check the path")
        >>> try:
        ...     boom()
        ... except click.ClickException as error:
        ...     print(error.message, error.exit_code)
        no root (hint: check the path) 1
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except SubagentCatalogError as error:
            raise click.ClickException(str(error)) from error

    return cast(F, wrapper)


def _remember_no_cache(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    ctx.meta["subagent_catalog.no_cache"] = value
    return value


def corpus_options(func: F) -> F:
    """Add the ``ROOT`` argument and ``--compression``, ``--jobs``, ``--quiet`` and ``--no-cache``.

    Examples:
        >>> [p.name for p in corpus_options(lambda **kw: None).__click_params__]
        ['no_cache', 'quiet', 'jobs', 'compression', 'root']
    """
    func = click.option(
        "--no-cache",
        is_flag=True,
        expose_value=False,
        callback=_remember_no_cache,
        help="Read every log; neither use nor update the facts cache (kept outside the root).",
    )(func)
    func = click.option(
        "-q", "--quiet", is_flag=True, help="No progress bar (it is drawn on stderr, only on a terminal)."
    )(func)
    func = click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        default=None,
        help="Worker processes for reading logs (default: all cores; 1 reads in-process).",
    )(func)
    func = click.option(
        "--compression",
        type=COMPRESSION,
        default="auto",
        show_default=True,
        help="Encoding to read the root as: zstd (session.jsonl.zstd), none (session.jsonl) or auto (detect).",
    )(func)
    return click.argument("root", type=click.Path(file_okay=True, dir_okay=True, path_type=str))(func)


def semantics_option(func: F) -> F:
    """Add ``--semantics projection|trace``.

    Examples:
        >>> [p.name for p in semantics_option(lambda **kw: None).__click_params__]
        ['semantics']
    """
    return click.option(
        "--semantics",
        type=SEMANTICS,
        default="projection",
        show_default=True,
        help="Listing semantics: projection (upstream today) or trace (the superseded read path).",
    )(func)


def load(root: str, *, compression: str, jobs: int | None, quiet: bool) -> Corpus:
    """Read a corpus with a progress bar on stderr (unless quiet or not a terminal).

    Raises:
        CorpusRootError: the root is missing or unreadable.

    Examples:
        >>> import tempfile
        >>> load(tempfile.mkdtemp(), compression="auto", jobs=1, quiet=True).sessions.height
        0
    """
    from subagent_catalog.views.progress import progress_bar

    context = click.get_current_context(silent=True)
    use_cache = not (context is not None and context.meta.get("subagent_catalog.no_cache", False))
    with progress_bar(quiet=quiet, desc="reading logs") as progress:
        return read_corpus(
            root,
            compression=compression,  # type: ignore[arg-type]
            jobs=jobs,
            progress=progress,
            cache=use_cache,
        )


def inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``root`` or lies under it (after resolving links).

    Examples:
        >>> inside("/data/corpus/out.html", "/data/corpus"), inside("/data/out.html", "/data/corpus")
        (True, False)
    """
    target, base = Path(path).resolve(), Path(root).resolve()
    return target == base or base in target.parents


def refuse_inside(path: str | os.PathLike[str], root: str) -> None:
    """Fail (exit 1) when an output path lies inside the corpus root: corpora are read-only.

    Raises:
        click.ClickException: the path is inside the root.

    Examples:
        >>> refuse_inside("/tmp/elsewhere.html", "/data/corpus")
    """
    if inside(path, root):
        raise click.ClickException(
            f"refusing to write {os.fspath(path)!r} inside the corpus root {root!r} "
            "(hint: corpora are read-only; write the output somewhere else)"
        )


@contextmanager
def output_stream(path: str | None) -> Iterator[IO[str]]:
    """Yield stdout (``None`` or ``-``) or the file opened for UTF-8 text.

    Examples:
        >>> with output_stream(None) as out:
        ...     out is sys.stdout
        True
    """
    if path is None or path == "-":
        yield sys.stdout
        return
    with open(path, "w", encoding="utf-8", newline="") as handle:
        yield handle


def _note(message: str, *, quiet: bool) -> None:
    if not quiet:
        click.echo(message, err=True)


# --------------------------------------------------------------------------- conformance (kept as is)


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
        out.write(line + "\n")


# --------------------------------------------------------------------------- summary


@main.command()
@corpus_options
@semantics_option
@translate_errors
def summary(root: str, compression: str, jobs: int | None, quiet: bool, semantics: str) -> None:
    """Print a short summary of a corpus: sessions, verdicts, bytes, time span, problems.

    \b
    Examples:
        subagent-catalog summary data/sample
        subagent-catalog summary /archive/sessions --compression zstd --quiet
    """
    from subagent_catalog.views.summary_text import summary_text

    corpus = load(root, compression=compression, jobs=jobs, quiet=quiet)
    click.echo(summary_text(corpus, semantics=semantics))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- report


@main.command()
@corpus_options
@click.option(
    "-o",
    "--output",
    default="report.html",
    show_default=True,
    type=click.Path(dir_okay=False, path_type=str),
    help="Where to write the HTML file ('-' for stdout).",
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
) -> None:
    """Write a self-contained offline HTML report of a corpus.

    The file inlines everything it needs (no network at view time): the
    summary, the problems, the session tree, distribution charts, the largest
    and most damaged trees, and the list_agents text of the chosen parents.
    When upstream's listing fails as a whole the report still renders the
    summary and the problems under a banner.

    \b
    Examples:
        subagent-catalog report data/sample -o report.html
        subagent-catalog report /archive --parent 0f2d0143-... --semantics trace -o trace.html
    """
    from subagent_catalog.views.report import render_report

    corpus = load(root, compression=compression, jobs=jobs, quiet=quiet)
    chosen = list(parents) if parents else None
    kwargs: dict[str, Any] = {"parents": chosen, "semantics": semantics, "title": title}
    if output == "-":
        click.echo(render_report(corpus, **kwargs), nl=False)
        return
    refuse_inside(output, corpus.root)
    page = render_report(corpus, **kwargs)
    Path(output).write_text(page, encoding="utf-8", errors="replace")
    if corpus.listing_error is not None:
        _note(f"warning: upstream's listing fails: {corpus.listing_error}", quiet=False)
    _note(f"wrote {output} ({len(page.encode('utf-8', 'replace')) // 1024} KiB)", quiet=quiet)


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
) -> None:
    """Data-quality gate: count problems per check; exit 1 when a selected check fails.

    Prints each check's count and the offending sessions (id, path, cause).
    Exit status: 0 when no check in --fail-on finds anything, 1 otherwise
    (also when a selected check cannot run because the listing fails).

    \b
    Examples:
        subagent-catalog check data/sample
        subagent-catalog check /archive --fail-on corpus-error,unsupported-version,malformed-descriptor
        subagent-catalog check /archive --format markdown >> "$GITHUB_STEP_SUMMARY"
    """
    from subagent_catalog.views.gate import run_checks
    from subagent_catalog.views.gate_format import format_json, format_markdown, format_text

    corpus = load(root, compression=compression, jobs=jobs, quiet=quiet)
    result = run_checks(corpus, fail_on=fail_on, semantics=semantics)  # type: ignore[arg-type]
    if fmt == "json":
        click.echo(format_json(result))
    elif fmt == "markdown":
        click.echo(format_markdown(result, limit=limit))
    else:
        click.echo(format_text(result, limit=limit))
    if result.failed:
        raise SystemExit(1)


# --------------------------------------------------------------------------- list


def _live(ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, str] | None:
    if value is None:
        return None
    try:
        with open(value, encoding="utf-8") as handle:
            data = json.load(handle)
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
    help="Write here instead of stdout (required for parquet).",
)
@semantics_option
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
) -> None:
    """List PARENT's subagents exactly as upstream does.

    The text format is the list_agents tool's text byte for byte; json is
    the array of upstream row objects; csv and parquet hold the whole frame
    with the audit columns. CSV cells that start with =, +, -, @, a tab or a
    carriage return get a leading apostrophe so spreadsheets do not run them
    as formulas.

    \b
    Examples:
        subagent-catalog list data/sample 0f2d0143-c8a9-4b36-8965-eb626eeee2cc
        subagent-catalog list data/sample ROOT-ID --scope descendants --format json
        subagent-catalog list data/sample ROOT-ID --format csv -o children.csv
        subagent-catalog list data/sample ROOT-ID --live live.json
    """
    from subagent_catalog.catalog.listing import children_rows, descendant_rows, list_children, list_descendants
    from subagent_catalog.catalog.listing import list_agents_text as agents_text

    if fmt == "parquet" and (output is None or output == "-"):
        raise click.UsageError("--format parquet needs --output FILE")
    corpus = load(root, compression=compression, jobs=jobs, quiet=quiet)
    if output is not None and output != "-":
        refuse_inside(output, corpus.root)
    sem: Any = semantics
    if fmt == "text":
        text = agents_text(corpus, parent, scope=scope, semantics=sem, live=live)  # type: ignore[arg-type]
        with output_stream(output) as out:
            out.write(js_text(text) + "\n")
    elif fmt == "json":
        rows = (children_rows if scope == "children" else descendant_rows)(corpus, parent, semantics=sem, live=live)
        lines = [json_text(row.upstream()) for row in rows]
        with output_stream(output) as out:
            out.write("[\n" + ",\n".join("  " + line for line in lines) + "\n]\n" if lines else "[]\n")
    else:
        frame = (list_children if scope == "children" else list_descendants)(corpus, parent, semantics=sem, live=live)
        if fmt == "csv":
            with output_stream(output) as out:
                out.write(csv_safe(frame).write_csv())
        else:
            assert output is not None
            frame.write_parquet(output)
            _note(f"wrote {output} ({frame.height} rows)", quiet=quiet)


# --------------------------------------------------------------------------- export


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
    help="Re-read only files whose path, size or mtime changed since the archive's last export, or read all.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=None,
    help="Most files per task (default 256).",
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
) -> None:
    """Write the corpus's frames to OUT_DIR as a partitioned Parquet archive plus manifest.json.

    Tables: sessions, descriptors, problems (and events with --events),
    partitioned by project directory; manifest.json records the package and
    Polars versions, the root, the compression, row counts and the creation
    time. Exporting again into the same directory updates it.

    \b
    Examples:
        subagent-catalog export data/sample out/sample-archive
        subagent-catalog export /archive out/archive --events --engine dask --scheduler tcp://10.0.0.5:8786
    """
    from subagent_catalog.store.export import export_archive
    from subagent_catalog.views.progress import progress_bar

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
        )
    counts = manifest.get("row_counts", {})
    shown = ", ".join(
        f"{name} {counts[name]}"
        for name in ("sessions", "descriptors", "problems", "events")
        if counts.get(name) is not None
    )
    update = manifest.get("update", {})
    click.echo(f"exported {root} to {out_dir}: {shown}")
    if update:
        click.echo(f"files read {update.get('files_read')}, reused {update.get('files_reused')}")
    if manifest.get("listing_error"):
        _note(f"warning: upstream's listing fails: {manifest['listing_error']}", quiet=False)
