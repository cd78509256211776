"""``subagent-catalog search``: find events by their text, in a corpus root or an archive."""

from __future__ import annotations

import click

from subagent_catalog.bounds import POSITIVE_COUNT
from subagent_catalog.cli.io import check_target, is_stdout, note, output_stream, translate_errors, write_rows
from subagent_catalog.cli.options import (
    bounded,
    data_output_option,
    format_option,
    load_source,
    note_archive,
    protected_paths,
    source_options,
)
from subagent_catalog.frames.units import plural
from subagent_catalog.views.text import terminal_safe


@click.command()
@source_options
@click.argument("pattern")
@click.option(
    "-E",
    "--regex",
    is_flag=True,
    help="PATTERN is a regular expression (Rust regex syntax: linear time, no look-around).",
)
@click.option("-i", "--ignore-case", is_flag=True, help="Match regardless of case.")
@click.option(
    "-t",
    "--type",
    "types",
    multiple=True,
    metavar="TYPE",
    help="Search only this event type (repeatable; default: messages, tool calls and results, turn ends, descriptors).",
)
@click.option("-n", "--limit", type=bounded(POSITIVE_COUNT), default=None, help="Stop after this many hits.")
@format_option(
    ("text", "json", "csv"), "text: hits grouped by session, one per line; json: one object per line; csv: the frame."
)
@data_output_option
@translate_errors
def search(
    root: str,
    quiet: bool,
    pattern: str,
    regex: bool,
    ignore_case: bool,
    types: tuple[str, ...],
    limit: int | None,
    fmt: str,
    output: str | None,
) -> None:
    """Find the events whose text holds PATTERN: user and assistant messages, tool calls and results, errors.

    ROOT is a corpus root, or an archive directory (one holding manifest.json)
    exported with --events, which is much faster. Matching is over the
    decoded text, never the JSON keys. The text format groups the hits by
    session: a line per session (id, project directory, hit count), then one
    line per hit (seq, event type, field and a snippet around the first
    match); a count goes to stderr.

    \b
    Examples:
        subagent-catalog search data/sample "Done with task"
        subagent-catalog search out/events-archive CONTEXT_LENGTH --type turn/end --format json
        subagent-catalog search data/sample "result \\d of turn 2" --regex --limit 5
    """
    from subagent_catalog.analysis.search import search_events

    check_target(output, [root])
    source = load_source(root, quiet=quiet)
    note_archive(root, source, verb="searching", quiet=quiet, events=True)
    check_target(output, protected_paths(root, source))
    hits = search_events(source, pattern, types=list(types) or None, regex=regex, ignore_case=ignore_case, limit=limit)
    to_terminal = is_stdout(output)
    with output_stream(output, protected=protected_paths(root, source)) as out:
        if fmt in ("csv", "json"):
            write_rows(out, hits, "csv" if fmt == "csv" else "json", to_terminal=to_terminal)
        else:
            counts = dict(hits.group_by("list_order").len().iter_rows())
            current: int | None = None
            for row in hits.iter_rows(named=True):  # a line per session (in list order), then its hits indented
                lines = [f"  seq {row['seq']}  {row['type']}  {row['field']}: {row['snippet']}"]
                if row["list_order"] != current or current is None:
                    current = row["list_order"]
                    lines.insert(0, f"{row['session_id']}  ({row['project_dir']})  {plural(counts[current], 'hit')}")
                out.write("".join((terminal_safe(line) if to_terminal else line) + "\n" for line in lines))
    sessions = hits["session_id"].n_unique() if hits.height else 0
    more = " (the limit)" if limit is not None and hits.height >= limit else ""
    note(f"{hits.height} hits{more} in {sessions} sessions", quiet=quiet)
