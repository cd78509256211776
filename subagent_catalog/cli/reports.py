"""``summary``, ``report`` and ``check``: a corpus's summary, its offline HTML report, its data-quality gate."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from subagent_catalog.analysis.window import Window
from subagent_catalog.bounds import COUNT
from subagent_catalog.catalog.parents import require_session
from subagent_catalog.cli.gate import gate_options
from subagent_catalog.cli.io import check_target, echo, is_stdout, note, output_stream, translate_errors
from subagent_catalog.cli.options import (
    bounded,
    format_option,
    load_source,
    protected_paths,
    semantics_option,
    source_options,
    summary_format_option,
)
from subagent_catalog.cli.window import window_options
from subagent_catalog.frames.nearest import expand_id
from subagent_catalog.views.text import json_terminal, terminal_safe

# --------------------------------------------------------------------------- summary


@click.command()
@source_options
@semantics_option
@window_options
@summary_format_option
@click.option(
    "--limit",
    type=bounded(COUNT),
    default=10,
    show_default=True,
    help="Failed runs named in text and md (0: all; json always has all).",
)
@translate_errors
def summary(
    root: str,
    quiet: bool,
    semantics: str,
    window: Window,
    fmt: str,
    limit: int,
) -> None:
    """Print a short summary of a corpus: its files, how they read, its problems, then its runs.

    ROOT is a corpus root or an archive (a directory holding manifest.json,
    or an s3://, gs:// or file:// URL; see --input and --storage-option).

    One line each: corpus (the root, its encoding), sessions, subagents,
    verdicts, encodings, bytes, time span, descriptors, listing, problems
    (each kind below it); then the runs: runs (their outcomes), failed (each
    failed run: id, outcome, error message and code), by error (the error
    groups), run time, tokens, cost (per model below it; unpriced models
    named), tools (calls and failures per tool), the slowest and costliest
    runs, the largest tree, and a note on each total with an unknown part.
    With --since/--until the counts are those of the sessions created in the
    window (the listing is still computed over the whole corpus).

    \b
    Examples:
        subagent-catalog summary data/sample
        subagent-catalog summary data/sample --compression zstd --quiet
        subagent-catalog summary data/sample --since 2026-01-01 --until "2026-01-01 12:00"
        subagent-catalog summary out/sample-archive --format md >> "$GITHUB_STEP_SUMMARY"
    """
    from subagent_catalog.views.summary_text import summary_json, summary_markdown, summary_text

    corpus = load_source(root, quiet=quiet)
    sem: Any = semantics
    if fmt == "json":
        facts = summary_json(corpus, semantics=sem, window=window)
        echo(json_terminal(json.dumps(facts, ensure_ascii=False, indent=2, default=str, allow_nan=False)))
    elif fmt == "md":
        echo(terminal_safe(summary_markdown(corpus, semantics=sem, window=window, limit=limit), keep="\n"))
    else:
        echo(terminal_safe(summary_text(corpus, semantics=sem, window=window, limit=limit), keep="\n"))


# --------------------------------------------------------------------------- report


@click.command()
@source_options
@click.option(
    "-o",
    "--output",
    default="report.html",
    show_default=True,
    type=click.Path(dir_okay=False, path_type=str),
    help="Where to write the HTML file ('-' for stdout when it is not a terminal); not with --site.",
)
@click.option(
    "--site",
    "site",
    default=None,
    type=click.Path(file_okay=False, path_type=str),
    metavar="DIR",
    help="Write a linked site instead of one file: DIR/index.html (the report) and a transcript page per "
    "session the report names (at most 2,000; a name without a page says why), every name linked to its "
    "page. DIR must be new, empty, or written by an earlier run (DIR/manifest.json). Not with -o.",
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
@click.pass_context
@translate_errors
def report(
    ctx: click.Context,
    root: str,
    quiet: bool,
    output: str,
    site: str | None,
    parents: tuple[str, ...],
    title: str | None,
    semantics: str,
    window: Window,
) -> None:
    """Write a self-contained offline HTML report of a corpus.

    ROOT is a corpus root or an archive (a directory holding manifest.json,
    or an s3://, gs:// or file:// URL; see --input and --storage-option).

    The file inlines everything it needs (no network at view time). Its
    sections, in order: Runs (outcomes by project and by day, the failed runs,
    the slowest and costliest runs and trees, tokens and cost by model, tools,
    timelines of the largest trees), Errors (the failed runs grouped by error,
    an example of each), Findings (by kind, project and run; docs/findings.md),
    Trends (by day), Summary (the corpus, read verdicts, listing rows,
    descriptors), Diagnostics, Problems, Session tree, Distributions, Largest
    and most damaged trees, and list_agents text (of the chosen parents).
    When upstream's listing fails as a whole the report still renders the
    summary and the problems under a banner. With --since/--until the page
    shows the sessions created in the window (the listing is still computed
    over the whole corpus). --site DIR writes the report as DIR/index.html
    with a linked transcript page for each session it names.

    \b
    Examples:
        subagent-catalog report data/sample -o report.html
        subagent-catalog report data/sample --site site/
        subagent-catalog report out/sample-archive --since 2026-01-01 --until 2026-01-02 -o january.html
        subagent-catalog report data/sample --parent run-webapp-1 --semantics trace -o trace.html
    """
    from subagent_catalog.views.columns import UNREAD_BY_REPORT
    from subagent_catalog.views.report import report_stream

    if site is not None and ctx.get_parameter_source("output") != click.core.ParameterSource.DEFAULT:
        raise click.UsageError("pass -o FILE (one file) or --site DIR (a linked site), not both")
    if site is None and is_stdout(output) and sys.stdout.isatty():
        raise click.UsageError("refusing to print the HTML page to a terminal: redirect stdout or pass -o FILE")
    if site is not None:
        from subagent_catalog.views.output_site import check_site
        from subagent_catalog.views.transcript_tree import SITE_NAMES

        check_site(site, protected=[root], names=SITE_NAMES)  # refused before the corpus is read
    else:
        check_target(output, [root])
    corpus = load_source(root, quiet=quiet)
    check_target(output, protected_paths(root, corpus))  # an archive's corpus root is protected too
    if parents:
        frames = corpus.frames(without=UNREAD_BY_REPORT)  # what the report reads anyway
        ids = frames.sessions["session_id"]
        parents = tuple(expand_id(parent, ids, also=frames.sessions["parent_session"]) for parent in parents)
        del frames, ids  # the report lets its frames go as it goes
    for parent in parents:  # a mistyped id is an error naming the nearest ids, not an empty listing
        require_session(corpus, parent)
    chosen = list(parents) if parents else None
    sem: Any = semantics
    if site is not None:
        from subagent_catalog.views.report_site import write_report_site

        written = write_report_site(
            corpus,
            site,
            parents=chosen,
            semantics=sem,
            title=title,
            window=window,
            protected=protected_paths(root, corpus),
        )
        if corpus.listing_error is not None:
            note(f"warning: upstream's listing fails: {corpus.listing_error}")
        refused = f"; {written.refused:,} sessions named without a page (the cap)" if written.refused else ""
        note(f"wrote {written.index} and {len(written.pages):,} session pages{refused}", quiet=quiet)
        return
    pieces = report_stream(corpus, parents=chosen, semantics=sem, title=title, window=window)
    size = 0
    with output_stream(output, protected=protected_paths(root, corpus)) as out:
        for piece in pieces:  # the page is rendered as it is written, never held whole
            out.write(piece)
            size += len(piece.encode("utf-8", "replace"))
    if corpus.listing_error is not None:
        note(f"warning: upstream's listing fails: {corpus.listing_error}")
    if not is_stdout(output):
        note(f"wrote {output} ({size // 1024} KiB)", quiet=quiet)


# --------------------------------------------------------------------------- check


def _fail_on(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    from subagent_catalog.analysis.gate_checks import parse_fail_on

    try:
        return parse_fail_on(value)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from error


def _check_help() -> str:
    from subagent_catalog.analysis.gate_checks import CHECKS

    return (
        "Checks that fail the gate (comma-separated; 'all', 'default' or 'none'). Checks: "
        + ", ".join(f"{c.name}{'*' if c.default else ''}" for c in CHECKS)
        + " (* = default)."
    )


@click.command()
@source_options
@click.option(
    "--fail-on", default="default", show_default=True, metavar="CHECK[,CHECK...]", callback=_fail_on, help=_check_help()
)
@format_option(
    ("text", "json", "markdown"), "Output format: text for terminals, json for machines, markdown for CI job summaries."
)
@click.option(
    "--limit",
    type=bounded(COUNT),
    default=20,
    show_default=True,
    help="Offenders shown per check in text and markdown (0: all; json always has all).",
)
@click.option(
    "--fail-on-finding",
    "fail_on_finding",
    multiple=True,
    metavar="KIND[:SEVERITY]",
    help="Also fail on findings of this kind (a detector or a --rules rule), at SEVERITY or worse (repeatable).",
)
@click.option(
    "--rules", "finding_rules", default=None, metavar="FILE", help="A TOML rules file --fail-on-finding may name."
)
@semantics_option
@window_options
@gate_options
@translate_errors
def check(
    root: str,
    quiet: bool,
    fail_on: tuple[str, ...],
    fmt: str,
    limit: int,
    fail_on_finding: tuple[str, ...],
    finding_rules: str | None,
    semantics: str,
    window: Window,
    gate: dict[str, Any],
) -> None:
    """Data-quality gate: count problems per check; exit 1 when a selected check fails.

    ROOT is a corpus root or an archive (a directory holding manifest.json,
    or an s3://, gs:// or file:// URL; see --input and --storage-option).

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
    window without sessions passes. --fail-on-finding KIND[:SEVERITY] adds a
    selected check per finding kind (docs/findings.md): it fails on any such
    finding (of that severity or worse).

    \b
    Examples:
        subagent-catalog check data/sample
        subagent-catalog check data/sample --fail-on corpus-error,unsupported-version,malformed-descriptor
        subagent-catalog check data/sample --max corrupt=5 --max-rate unavailable=0.5
        subagent-catalog check data/sample --fail-on none --fail-on-finding context-growth:error
        subagent-catalog check out/sample-archive --format json > previous.json  # later:
        subagent-catalog check out/sample-archive --baseline previous.json
        subagent-catalog check out/sample-archive --format markdown >> "$GITHUB_STEP_SUMMARY"
    """
    from subagent_catalog.analysis.gate import run_checks
    from subagent_catalog.store.source import inputs_below
    from subagent_catalog.views.gate_format import format_json, format_markdown, format_text

    corpus = load_source(root, quiet=quiet, allow_empty=True)  # the gate judges it
    above = None if gate["allow_empty"] or corpus.session_count() else inputs_below(root)
    if above is not None:  # a folder above corpus roots is no empty corpus to judge: name them
        raise above
    result = run_checks(
        corpus,
        fail_on=fail_on,
        semantics=semantics,  # type: ignore[arg-type]
        window=window,
        fail_on_finding=fail_on_finding,
        finding_rules=finding_rules,
        **gate,
    )
    if fmt == "json":
        echo(json_terminal(format_json(result)))
    elif fmt == "markdown":
        echo(terminal_safe(format_markdown(result, limit=limit), keep="\n"))
    else:
        echo(terminal_safe(format_text(result, limit=limit), keep="\n"))
    if result.failed:
        raise SystemExit(1)
