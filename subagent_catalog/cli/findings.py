"""``subagent-catalog findings``: the pathologies detectors and user rules find, in a corpus root or an archive."""

from __future__ import annotations

from typing import Any

import click

from subagent_catalog.analysis.findings.options import THRESHOLD_BOUNDS
from subagent_catalog.bounds import POSITIVE_SECONDS
from subagent_catalog.cli.io import check_target, is_stdout, note, output_stream, translate_errors, write_rows
from subagent_catalog.cli.options import (
    bounded,
    data_output_option,
    format_option,
    load_source,
    protected_paths,
    source_options,
)
from subagent_catalog.views.text import terminal_safe

__all__ = ["findings_command"]

_THRESHOLDS: dict[str, tuple[float, str]] = {
    "tool_loop_calls": (3, "tool-loop: consecutive identical calls."),
    "error_storm_failures": (5, "tool-error-storm: failed results in a turn."),
    "retry_storm_retries": (3, "retry-storm: model retries in one turn."),
    "context_share": (0.9, "context-growth: a prompt's share of its window."),
    "fan_out_children": (10, "fan-out: subagents started in one turn."),
    "runaway_after_s": (60.0, "runaway-child: seconds a subagent works on after its root ended..."),
    "runaway_share": (0.25, "runaway-child: ...and that time's share of the root's wall time."),
    "stalled_after_s": (3600.0, "stalled: seconds an open run is silent."),
    "cost_outlier_factor": (3.0, "cost-outlier: times the project's p95."),
}
"""Each threshold option's default and help, by its parameter (``--tool-loop-calls``...; ``--stalled-after``,
``--runaway-after`` in s)."""


def _threshold_options(func: Any) -> Any:
    for name, (default, text) in reversed(_THRESHOLDS.items()):
        flag = "--" + name.removesuffix("_s").replace("_", "-")
        kind = THRESHOLD_BOUNDS.get(name, POSITIVE_SECONDS)
        func = click.option(flag, name, type=bounded(kind), default=default, show_default=True, help=text)(func)
    return func


@click.command("findings")
@source_options
@click.option("--rules", "rules", default=None, metavar="FILE", help="A TOML file of user rules (docs/findings.md).")
@click.option(
    "-d",
    "--detector",
    "detectors",
    multiple=True,
    metavar="NAME",
    help="Run only this built-in detector (repeatable; default: all). 'none': only the --rules.",
)
@click.option(
    "--min-severity",
    type=click.Choice(["info", "warn", "error"]),
    default="info",
    show_default=True,
    help="Show only findings of this severity or worse.",
)
@_threshold_options
@format_option(
    ("text", "json", "csv", "md"),
    "text: findings grouped by session; json: one object per line; csv: the frame; md: a Markdown table.",
)
@data_output_option
@translate_errors
def findings_command(
    root: str,
    quiet: bool,
    rules: str | None,
    detectors: tuple[str, ...],
    min_severity: str,
    fmt: str,
    output: str | None,
    **thresholds: Any,
) -> None:
    """Find what went wrong on the way: tool loops, error and retry storms, context growth, subagent trouble.

    ROOT is a corpus root or an archive. The built-in detectors (docs/findings.md
    defines each rule and threshold) run on the facts of the single read and read
    only the logs they must; --rules adds a researcher's own patterns. The text
    format groups the findings by session: a line per session, then one line per
    finding (severity, kind, where, what) and its evidence; a tally goes to stderr.

    \b
    Examples:
        subagent-catalog findings data/sample
        subagent-catalog findings data/sample --detector tool-error-storm --error-storm-failures 2
        subagent-catalog findings data/sample --min-severity warn --format md
        subagent-catalog findings data/sample --format csv -o "$(mktemp -d)/findings.csv"
    """
    import polars as pl

    from subagent_catalog.analysis.findings import SEVERITIES, findings
    from subagent_catalog.views.findings_text import findings_lines, findings_markdown, findings_tally
    from subagent_catalog.views.names import names_by_id

    check_target(output, [root])
    source = load_source(root, quiet=quiet)
    check_target(output, protected_paths(root, source))
    seconds = {name: thresholds.pop(name) for name in ("runaway_after_s", "stalled_after_s")}
    chosen: Any = "default" if not detectors else [] if detectors == ("none",) else list(detectors)
    found = findings(
        source,
        rules=rules,
        detectors=chosen,
        runaway_after_ms=round(seconds["runaway_after_s"] * 1000),
        stalled_after_ms=max(1, round(seconds["stalled_after_s"] * 1000)),
        **thresholds,
    )
    found = found.filter(pl.col("severity").is_in(list(SEVERITIES[SEVERITIES.index(min_severity) :])))
    to_terminal = is_stdout(output)
    names = names_by_id(source, found["session_id"]) if fmt in ("md", "text") else None
    with output_stream(output, protected=protected_paths(root, source)) as out:
        if fmt in ("csv", "json"):
            write_rows(out, found, "csv" if fmt == "csv" else "json", to_terminal=to_terminal)
        elif fmt == "md":
            text = findings_markdown(found, names) + "\n"
            out.write(terminal_safe(text, keep="\n") if to_terminal else text)
        else:
            for line in findings_lines(found, names):
                out.write((terminal_safe(line) if to_terminal else line) + "\n")
    note(findings_tally(found), quiet=quiet)
