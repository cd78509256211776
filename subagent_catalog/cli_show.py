"""``subagent-catalog show``: one session's transcript as a page or as Markdown."""

from __future__ import annotations

import sys

import click

from subagent_catalog.cli_io import check_target, echo, is_stdout, note, output_stream, translate_errors
from subagent_catalog.cli_options import corpus_options, load
from subagent_catalog.views.text import terminal_safe


@click.command()
@corpus_options
@click.argument("session_id", metavar="ID")
@click.option(
    "-o",
    "--output",
    default=None,
    type=click.Path(dir_okay=False, path_type=str),
    help="Write to this file instead of stdout ('-' for stdout).",
)
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(["html", "md"]),
    default=None,
    help="html (a self-contained page) or md (Markdown). Default: md on stdout, html for an -o file "
    "(md when its name ends in .md).",
)
@click.option("--path", "log_path", default=None, help="Which log, when several files carry the same session id.")
@translate_errors
def show(
    root: str,
    compression: str,
    jobs: int | None,
    quiet: bool,
    session_id: str,
    output: str | None,
    fmt: str | None,
    log_path: str | None,
) -> None:
    """Show one session's transcript: user messages, assistant text, reasoning, tool calls and results, turns.

    Read from that session's own log (the rest of the corpus is read for
    its parent and children, which the page links as ID.html next to it).
    Texts from the log are escaped (html) or fenced (md). An unknown ID is
    an error whose hint names the nearest ids.

    \b
    Examples:
        subagent-catalog show data/sample auth-refactor
        subagent-catalog show data/sample run-webapp-1 -o run-webapp-1.html
        subagent-catalog show /archive 0f2d0143-... --format md -o run.md
    """
    from subagent_catalog.views.transcript_view import transcript_markdown, transcript_page

    to_stdout = is_stdout(output)
    if fmt is None:
        fmt = "md" if to_stdout or str(output).lower().endswith((".md", ".markdown")) else "html"
    if fmt == "html" and to_stdout and sys.stdout.isatty():
        raise click.UsageError("refusing to print the HTML page to a terminal: redirect stdout or pass -o FILE")
    check_target(output, [root])
    corpus = load(root, compression=compression, jobs=jobs, quiet=quiet)
    if fmt == "html":
        text = transcript_page(corpus, session_id, path=log_path)
    else:
        text = transcript_markdown(corpus, session_id, path=log_path)
    if to_stdout and fmt == "md":
        echo(terminal_safe(text, keep="\n"))
        return
    with output_stream(output, protected=[root, corpus.root]) as out:
        out.write(text if text.endswith("\n") else text + "\n")
    if not to_stdout:
        note(f"wrote {output} ({len(text.encode('utf-8', 'replace')) // 1024} KiB)", quiet=quiet)
