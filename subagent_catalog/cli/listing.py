"""``list`` and ``conformance``: a parent's subagents as upstream lists them, and upstream-shaped lines."""

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
from subagent_catalog.cli.io import check_target, is_stdout, note, output_stream, translate_errors, write_rows
from subagent_catalog.cli.options import format_option, load_frames, protected_paths, semantics_option, source_options
from subagent_catalog.cli.window import window_options
from subagent_catalog.corpus import open_source
from subagent_catalog.frames.nearest import expand_id
from subagent_catalog.read.jsvalue import js_text
from subagent_catalog.regular import read_regular
from subagent_catalog.views.text import json_terminal, terminal_safe

# --------------------------------------------------------------------------- conformance


@click.command()
@click.argument("root", type=click.Path())
@click.option("--compression", type=click.Choice(["zstd", "none", "auto"]), default="auto")
@click.option("--semantics", type=click.Choice(["projection", "trace"]), default="projection")
@click.option("--all-parents", is_flag=True)
@click.option("--parents", default=None)
@click.option("--input", "input_kind", type=click.Choice(["auto", "corpus", "archive"]), default="auto")
@click.option("--storage-option", "storage_option", multiple=True, metavar="KEY=VALUE")
@translate_errors
def conformance(
    root: str,
    compression: str,
    semantics: str,
    all_parents: bool,
    parents: str | None,
    input_kind: str,
    storage_option: tuple[str, ...],
) -> None:
    """Print upstream-shaped listing lines for conformance checks.

    ROOT is a corpus root or an archive (see --input and --storage-option); an
    empty root prints nothing.
    """
    from subagent_catalog.cli.options import storage_options

    source = open_source(
        root,
        input=input_kind,  # type: ignore[arg-type]
        storage_options=storage_options(storage_option),
        compression=compression,  # type: ignore[arg-type]
        cache=False,
        allow_empty=True,  # an empty root lists nothing: upstream's answer, not a usage error
    )
    corpus = source.to_corpus()
    chosen = None if all_parents or parents is None else list(parents.split(","))
    out = sys.stdout
    for line in conformance_lines(corpus, chosen, semantics=semantics):  # type: ignore[arg-type]
        out.write(json_terminal(line) + "\n")  # the same JSON values, no raw control or bidi character


# --------------------------------------------------------------------------- list


LIVE_BYTES = 64 * 2**20
"""The largest ``--live`` file read (a registry snapshot is a few kilobytes)."""


def _live(ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, str] | None:
    if value is None:
        return None
    try:
        raw = read_regular(value, limit=LIVE_BYTES + 1)  # a FIFO never blocks, a device is never read
        if len(raw) > LIVE_BYTES:
            raise ValueError(f"larger than {LIVE_BYTES // 2**20} MiB")
        data = json.loads(raw)
    except RecursionError as error:
        raise click.BadParameter(f"cannot read {value!r} as JSON: nested too deeply", ctx=ctx, param=param) from error
    except OSError as error:
        raise click.BadParameter(f"cannot read {value!r}: {error.strerror or error}", ctx=ctx, param=param) from error
    except ValueError as error:
        raise click.BadParameter(f"cannot read {value!r} as JSON: {error}", ctx=ctx, param=param) from error
    if not isinstance(data, dict) or not all(isinstance(k, str) and v in ("running", "idle") for k, v in data.items()):
        raise click.BadParameter(
            'expected a JSON object {"<session id>": "running" | "idle", ...}', ctx=ctx, param=param
        )
    return cast(dict[str, str], data)


@click.command(name="list")
@source_options
@click.argument("parent")
@click.option(
    "--scope",
    type=click.Choice(["children", "descendants"]),
    default="children",
    show_default=True,
    help="Direct children, or every subagent below PARENT (pre-order, with parentId and depth).",
)
@format_option(
    ("text", "json", "csv", "parquet"),
    "text: list_agents text; json: upstream row objects; csv/parquet: the full frame with audit columns.",
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

    ROOT is a corpus root or an archive (a directory holding manifest.json,
    or an s3://, gs:// or file:// URL; see --input and --storage-option).

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
        subagent-catalog list data/sample run-webapp-1
        subagent-catalog list data/sample run-webapp-1 --scope descendants --format json
        subagent-catalog list data/sample run-webapp-1 --format csv -o children.csv
        subagent-catalog list data/sample run-webapp-1 --live data/live.json
        subagent-catalog list data/sample run-webapp-1 --scope descendants --since 2026-01-01T00:00:02
    """
    from subagent_catalog.catalog.listing import children_rows, descendant_rows, list_children, list_descendants

    if fmt == "parquet" and is_stdout(output):
        raise click.UsageError("--format parquet needs --output FILE")
    check_target(output, [root])
    corpus = load_frames(root, quiet=quiet)
    check_target(output, protected_paths(root, corpus))
    corpus.require_listing()  # a failing listing is the error to report, before any id
    parent = expand_id(parent, corpus.sessions["session_id"], also=corpus.sessions["parent_session"])
    if semantics == "projection":  # trace refuses an unknown parent itself (SUBAGENT_PARENT_NOT_FOUND)
        require_session(corpus, parent)  # an id naming no session is an error; a session without subagents is not
    protected = protected_paths(root, corpus)
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
            write_rows(out, frame, "csv", to_terminal=to_terminal)
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
