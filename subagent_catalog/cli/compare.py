"""``subagent-catalog compare A B``: what changed from A to B, with the uncertainty said; ``--fail-on`` gates."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from subagent_catalog.bounds import RESAMPLES, SEED
from subagent_catalog.cli.io import check_target, echo, is_stdout, note, output_stream, translate_errors
from subagent_catalog.cli.options import (
    bounded,
    load_source,
    prices_option,
    protected_paths,
    source_options,
    summary_format_option,
)
from subagent_catalog.frames.source import Source
from subagent_catalog.views.text import json_terminal, terminal_safe


def _conditions(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[object, ...]:
    from subagent_catalog.analysis.compare_gate import CompareGateError, parse_condition

    try:
        return tuple(parse_condition(value) for value in values)
    except CompareGateError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None


def _label(path: str) -> str:
    return os.path.basename(os.path.normpath(path)) or path


@click.command("compare")
@source_options
@click.argument("b", metavar="B", type=click.Path(file_okay=True, dir_okay=True, path_type=str))
@click.option(
    "-o",
    "--output",
    default=None,
    type=click.Path(dir_okay=False, path_type=str),
    help="Write the comparison in --format here instead of stdout ('-': stdout).",
)
@click.option(
    "--html",
    default=None,
    type=click.Path(dir_okay=False, path_type=str),
    help="Also write the comparison as a self-contained HTML page here ('-': stdout, when -o names a file).",
)
@summary_format_option
@click.option(
    "--match",
    type=click.Choice(["none", "title", "prompt"]),
    default="none",
    show_default=True,
    help="Pair the root runs of A and B by title or first human prompt: paired tests and the pairs that changed.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="CONDITION",
    callback=_conditions,
    help="Exit 1 when the condition holds of B against A, e.g. 'error_rate>+2pp', 'cost_median>+10%' "
    "(repeatable; the grammar is in docs/compare.md). An unknown figure fails too.",
)
@prices_option
@click.option("--seed", type=bounded(SEED), default=0, show_default=True, help="Seed of the bootstrap intervals.")
@click.option(
    "--resamples", type=bounded(RESAMPLES.narrow(100)), default=2000, show_default=True, help="Bootstrap resamples."
)
@click.option("--label-a", default=None, help="A's name in the output (default: its projects or directory name).")
@click.option("--label-b", default=None, help="B's name in the output (default: its projects or directory name).")
@click.option(
    "--a-project",
    "a_projects",
    multiple=True,
    metavar="NAME",
    help="Compare only these project directories of A (repeatable): two projects of one corpus are "
    "`compare ROOT ROOT --a-project X --b-project Y`.",
)
@click.option("--b-project", "b_projects", multiple=True, metavar="NAME", help="The same for B.")
@click.option(
    "--a-pages",
    default=None,
    type=click.Path(file_okay=False, dir_okay=True, path_type=str),
    help="With --html: link the A runs the page names to their pages in this directory, written by "
    "`show --tree ID -o DIR` from A (only pages its manifest lists).",
)
@click.option(
    "--b-pages",
    default=None,
    type=click.Path(file_okay=False, dir_okay=True, path_type=str),
    help="The same for B's runs.",
)
@click.option(
    "--label", "label", default=None, metavar="LABEL", help="Compare only the runs with this label (both sides)."
)
@click.option("--without-label", default=None, metavar="LABEL", help="Compare only the runs without this label.")
@click.option(
    "--finding",
    default=None,
    metavar="KIND",
    help="Compare only the runs with a finding of this kind (a detector, or a rule of --rules).",
)
@click.option("--without-finding", default=None, metavar="KIND", help="Compare only the runs without such a finding.")
@click.option(
    "--labels",
    "label_store",
    default=None,
    type=click.Path(dir_okay=False, path_type=str),
    help="The label store --label and --without-label read (an existing Labels file, outside the corpus).",
)
@click.option("--rules", default=None, metavar="FILE", help="A rules file whose rules --finding may name.")
@translate_errors
def compare_command(
    root: str,
    b: str,
    quiet: bool,
    output: str | None,
    html: str | None,
    fmt: str,
    match: str,
    fail_on: tuple[object, ...],
    prices: str | None,
    seed: int,
    resamples: int,
    label_a: str | None,
    label_b: str | None,
    a_projects: tuple[str, ...],
    b_projects: tuple[str, ...],
    a_pages: str | None,
    b_pages: str | None,
    label: str | None,
    without_label: str | None,
    finding: str | None,
    without_finding: str | None,
    label_store: str | None,
    rules: str | None,
) -> None:
    """Compare two corpora or archives: did B's runs fail less, cost less, finish sooner than A's?

    A (ROOT) and B are each a corpus root or an archive, read by the same input
    rule and options. Prints what changed significantly (Holm-adjusted p < 0.05)
    first, then outcome rates with Newcomb intervals and Fisher's exact test,
    cost, tokens, active time, steps and tool calls per run and per tree with
    bootstrap intervals of their change and Mann-Whitney tests (the intervals
    are not adjusted, the p-values are), the failed runs' error groups as the
    report groups them, tools, models and the data-quality health of both sides.

    --a-project and --b-project compare project directories of a corpus (A and
    B may be one root, read once). --label, --without-label (labels of the
    --labels store), --finding and --without-finding (a detector's or a --rules
    rule's kind) keep only such runs on both sides; the notes say how many each
    side left out. -o writes the --format report to a file; --html also
    writes the HTML page. --a-pages and --b-pages link the runs the
    HTML page names to each side's transcript pages (show --tree -o DIR).

    Exit status: 1 when a --fail-on condition holds (or its figure is unknown,
    or not known whole: a cost while a side has runs of unknown cost), else 0;
    2 for a condition whose threshold the figure can never reach (error_rate>2).

    \b
    Examples:
        subagent-catalog compare data/sample out/sample-archive   # before, after
        subagent-catalog compare data/sample out/sample-archive --html diff.html --match prompt
        subagent-catalog compare data/sample out/sample-archive --format md >> "$GITHUB_STEP_SUMMARY"
        subagent-catalog compare data/sample out/sample-archive --fail-on 'error_rate>+2pp' --fail-on 'cost_median>+10%'
        subagent-catalog compare data/sample data/sample --a-project=--srv-research-agents-- \\
            --b-project=--home-dev-projects-webapp--   # two projects of one corpus
        subagent-catalog compare data/sample out/sample-archive --html diff.html --a-pages pages --b-pages pages
        subagent-catalog compare data/sample out/sample-archive --without-finding tool-loop
    """
    from subagent_catalog.analysis.compare import compare
    from subagent_catalog.analysis.compare_gate import Condition, evaluate
    from subagent_catalog.analysis.subset import project_subset
    from subagent_catalog.prices import price_table
    from subagent_catalog.views.compare_text import compare_json, compare_markdown, compare_text

    table = price_table(prices)
    if (label is not None or without_label is not None) and label_store is None:
        raise click.UsageError("--label and --without-label read a label store: give --labels FILE too")
    if label_store is not None:  # a missing or refused store fails before any read (filter_runs checks it again)
        from subagent_catalog.store.labels import Labels

        Labels(label_store, protected=[root, b], must_exist=True)
    if (a_pages is not None or b_pages is not None) and html is None:
        raise click.UsageError("--a-pages and --b-pages link from the HTML page: give --html FILE too")
    if html is not None and is_stdout(html) and is_stdout(output):
        raise click.UsageError("--html - and the --format report would both go to stdout: give -o FILE too")
    if not is_stdout(html) and not is_stdout(output) and os.path.abspath(str(html)) == os.path.abspath(str(output)):
        raise click.UsageError("-o and --html name the same file: give each its own")
    if html is None and output is not None and output.lower().endswith((".html", ".htm")):
        raise click.UsageError(f"-o writes the --format {fmt} report, not the HTML page: give --html {output}")
    page_dir = os.getcwd() if is_stdout(html) else os.path.dirname(os.path.abspath(str(html)))
    check_target(output, [root, b])
    if html is not None:
        from subagent_catalog.views.compare_links import side_pages

        check_target(html, [root, b])
        for pages in (a_pages, b_pages):
            if pages is not None:
                side_pages(pages, page_dir=page_dir)  # a directory that is no site is refused before any read
    a_source = load_source(root, quiet=quiet)
    same = os.path.realpath(root) == os.path.realpath(b)
    b_source = a_source if same else load_source(b, quiet=quiet)
    protected = [*protected_paths(root, a_source), *protected_paths(b, b_source)]
    for target in (output, html):
        check_target(target, protected)
    labels = (
        label_a or (", ".join(a_projects) if a_projects else _label(root)),
        label_b or (", ".join(b_projects) if b_projects else _label(b)),
    )
    a_side: Source = project_subset(a_source, a_projects) if a_projects else a_source
    b_side: Source = project_subset(b_source, b_projects) if b_projects else b_source
    how: Any = match  # one of the click.Choice values: a Match
    comparison = compare(
        a_side,
        b_side,
        match=how,
        prices=table,
        seed=seed,
        resamples=resamples,
        labels=labels,
        label=label,
        without_label=without_label,
        finding=finding,
        without_finding=without_finding,
        label_store=label_store,
        rules=rules,
    )
    gates = [evaluate(comparison, condition) for condition in fail_on if isinstance(condition, Condition)]
    if fmt == "json":
        text = json.dumps(compare_json(comparison, gates=gates), ensure_ascii=False, indent=2, allow_nan=False)
        shown = json_terminal(text)
    else:
        text = (compare_markdown if fmt == "md" else compare_text)(comparison, gates=gates)
        shown = terminal_safe(text, keep="\n")
    if is_stdout(output):
        echo(shown)  # one document on stdout: the HTML page goes there only when -o names a file
    else:
        with output_stream(output, protected=protected) as out:
            out.write(text.rstrip("\n") + "\n")
    if html is not None:
        from subagent_catalog.views.compare_html import compare_page

        page = compare_page(comparison, a_pages=a_pages, b_pages=b_pages, page_dir=page_dir)
        with output_stream(html, protected=protected) as out:
            out.write(page)
        if not is_stdout(html):
            note(f"wrote {html} ({len(page.encode('utf-8')) // 1024} KiB)", quiet=quiet)
    failing = [gate for gate in gates if gate.holds is not False]
    if failing:
        for gate in failing:
            note(f"fail-on: {gate.detail}")
        raise SystemExit(1)
