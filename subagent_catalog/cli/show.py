"""``subagent-catalog show``: one session's transcript as a page or as Markdown."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from subagent_catalog.analysis.text import utf8_length
from subagent_catalog.bounds import COUNT
from subagent_catalog.cli.io import check_target, echo, is_stdout, note, output_stream, translate_errors
from subagent_catalog.cli.options import bounded, format_option, load_frames, protected_paths, source_options
from subagent_catalog.frames.nearest import expand_id
from subagent_catalog.views.text import terminal_safe


@click.command()
@source_options
@click.argument("session_id", metavar="ID")
@click.option(
    "-o",
    "--output",
    default=None,
    type=click.Path(path_type=str),
    help="Write to this file instead of stdout ('-' for stdout); with --tree, the directory of the pages.",
)
@format_option(
    ("html", "md"),
    "html (a self-contained page) or md (Markdown). Default: md on stdout, html for an -o file "
    "(md when its name ends in .md).",
    default=None,
)
@click.option("--path", "log_path", default=None, help="Which log, when several files carry the same session id.")
@click.option(
    "--text",
    "text_seq",
    type=bounded(COUNT),
    default=None,
    metavar="SEQ",
    help="Write the whole text of the step whose seq is SEQ (a page clips texts past 100,000 characters).",
)
@click.option(
    "--tree",
    is_flag=True,
    help="Write a linked page for ID and for every session below it into the directory -o DIR "
    "(ID.html each; every link between them resolves). DIR must be new, empty, or written by an earlier "
    "--tree run (DIR/manifest.json): no file this command did not write is replaced.",
)
@translate_errors
def show(
    root: str,
    quiet: bool,
    session_id: str,
    output: str | None,
    fmt: str | None,
    log_path: str | None,
    text_seq: int | None,
    tree: bool,
) -> None:
    """Show one session's transcript: user messages, assistant text, reasoning, tool calls and results, turns.

    ROOT is a corpus root or an archive (a directory holding manifest.json,
    or an s3://, gs:// or file:// URL; see --input and --storage-option).

    Read from that session's own log (the rest of the corpus is read for
    its parent, its children and the timeline of the tree below it). The
    page's parts, in order: the way up (to the report and the parent, if any), run
    facts (outcome, time split, tokens with cache, cost), findings, waterfall
    (its turns and steps), children, timeline (of the tree below it), turns
    (a table), errors (each linked to its step), and the transcript. --tree
    -o DIR writes a page for ID and every session below it, linked to each
    other; a single page names other sessions without linking them. Texts
    from the log are escaped (html) or fenced (md); a log upstream cannot
    read shows its part before the damage. A page holds at
    most 100,000 characters of one text and 20,000,000 in all; where it
    clips, it says how many bytes are left out, and --text SEQ writes that
    step's whole text. ID may be a unique prefix of an id (at least 4
    characters; a prefix of several is an error listing them); an unknown ID
    is an error whose hint names the nearest ids.

    \b
    Examples:
        subagent-catalog show data/sample auth-refactor
        subagent-catalog show data/sample run-webapp-1 -o run-webapp-1.html
        subagent-catalog show out/sample-archive auth-refactor --format md -o run.md
        subagent-catalog show data/sample scan-tests --text 4 -o result.txt
        subagent-catalog show data/sample run-webapp-1 --tree -o pages/
    """
    from subagent_catalog.analysis.step_text import transcript_text
    from subagent_catalog.views.transcript_markdown import transcript_markdown
    from subagent_catalog.views.transcript_view import transcript_page

    to_stdout = is_stdout(output)

    def read() -> Any:
        nonlocal session_id
        corpus = load_frames(root, quiet=quiet)
        if not tree:
            check_target(output, protected_paths(root, corpus))
        session_id = expand_id(session_id, corpus.sessions["session_id"])  # a unique prefix names its session
        return corpus

    if tree:
        if to_stdout or text_seq is not None or fmt == "md":
            raise click.UsageError("--tree writes HTML pages into a directory: pass -o DIR (and no --text or -f md)")
        from subagent_catalog.views.output_site import check_site
        from subagent_catalog.views.transcript_tree import SITE_NAMES, write_tree_pages

        check_site(str(output), protected=[root], names=SITE_NAMES)  # refused before the corpus is read
        corpus = read()
        pages = write_tree_pages(
            corpus, session_id, str(output), path=log_path, protected=protected_paths(root, corpus)
        )
        skipped = f"; {len(pages.skipped)} without a page of their own" if pages.skipped else ""
        removed = f"; removed {len(pages.removed)} pages of the previous run" if pages.removed else ""
        note(f"wrote {len(pages.pages)} pages to {output}{skipped}{removed}; start at {pages.top}", quiet=quiet)
        return
    if output is not None and not to_stdout and os.path.isdir(output):
        raise click.UsageError(f"{output} is a directory: pass a file name, or --tree to write a page per session")
    if text_seq is not None:
        check_target(output, [root])
        corpus = read()
        whole = transcript_text(corpus, session_id, text_seq, path=log_path)
        if to_stdout:
            echo(terminal_safe(whole, keep="\n\t"))
            return
        with output_stream(output, protected=protected_paths(root, corpus)) as out:
            out.write(whole)
        note(f"wrote {output} ({utf8_length(whole):,} bytes)", quiet=quiet)
        return
    if fmt is None:
        fmt = "md" if to_stdout or str(output).lower().endswith((".md", ".markdown")) else "html"
    if fmt == "html" and to_stdout and sys.stdout.isatty():
        raise click.UsageError("refusing to print the HTML page to a terminal: redirect stdout or pass -o FILE")
    check_target(output, [root])
    corpus = read()
    if fmt == "html":
        from subagent_catalog.analysis.findings import findings

        text = transcript_page(corpus, session_id, path=log_path, found=findings(corpus, sessions=[session_id]))
    else:
        text = transcript_markdown(corpus, session_id, path=log_path)
    if to_stdout and fmt == "md":
        echo(terminal_safe(text, keep="\n"))
        return
    with output_stream(output, protected=protected_paths(root, corpus)) as out:
        out.write(text if text.endswith("\n") else text + "\n")
    if not to_stdout:
        note(f"wrote {output} ({len(text.encode('utf-8', 'replace')) // 1024} KiB)", quiet=quiet)
