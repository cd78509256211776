"""Each command's help describes what exists (issue 57, point 11): ``report --help`` described the report
of two waves ago.

The help is compared with what the command produces on ``data/sample``: the report's sections (its
``<h2>`` headings, in order), ``summary``'s lines (their labels), the tables ``sql`` serves, and every
output format and table a help lists, each of which must work.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from subagent_catalog.cli import main

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"


def _help(*command: str) -> str:
    """The help text of ``command``, its lines joined (words wrapped across lines are one text)."""
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def _run(*args: object) -> str:
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exit_code == 0, (args, result.output)
    return result.output


def _named_list(text: str, lead: str) -> list[str]:
    """The items of the list that follows ``lead`` up to its full stop, their parenthesised notes left out.

    Items are separated by commas, the last by ", and" (an item may hold "and": "Largest and most damaged trees").
    """
    start = text.index(lead) + len(lead)
    depth, end = 0, start
    while end < len(text) and not (depth == 0 and text[end] == "."):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        end += 1
    plain = re.sub(r"\s*\([^()]*\)", "", re.sub(r"\([^()]*\([^()]*\)[^()]*\)", "", text[start:end]))
    return [item.strip() for item in re.split(r",\s*(?:and\s+)?", plain) if item.strip()]


def test_the_report_help_names_the_sections_the_page_has_in_their_order(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    _run("report", SAMPLE, "-o", page, "-q")
    html = page.read_text(encoding="utf-8")
    headings = [re.sub(r"<[^>]+>", "", heading) for heading in re.findall(r"<h2[^>]*>(.*?)</h2>", html, re.S)]
    sections = [re.sub(r"\s*\(.*", "", " ".join(heading.split())) for heading in headings]
    assert _named_list(_help("report"), "Its sections, in order: ") == sections


def test_the_summary_help_names_every_line_the_summary_prints() -> None:
    text = _help("summary")
    labels = {
        match.group(1)
        for line in _run("summary", SAMPLE, "-q").splitlines()
        if (match := re.match(r"([a-z][a-z ]*?)\s{2,}\S", line))
    }
    assert labels  # corpus, sessions, ... note
    missing = sorted(label for label in labels if not re.search(rf"\b{label}\b", text))
    assert missing == [], f"summary prints lines its help does not name: {missing}"


def test_the_sql_help_names_every_table_and_only_those() -> None:
    from subagent_catalog.interop.sql_tables import SQL_TABLES

    named = _named_list(_help("sql"), "The tables: ")
    assert named == list(SQL_TABLES)
    for table in named:
        assert _run("sql", SAMPLE, f"select count(*) as n from {table}", "-f", "csv", "-q").startswith("n\n")


SHOW_PARTS = {
    "the way up": '<nav id="up">',
    "run facts": "<th>outcome</th>",
    "findings": 'id="findings"',
    "waterfall": ">Waterfall:",
    "children": 'id="children"',
    "timeline": '<div class="tl-axis"',
    "turns": 'class="turns"',
    "errors": 'id="errors"',
    "the transcript": 'id="seq-0"',
}
"""Where each part ``show --help`` names begins on a page (a part renamed or gone fails the test below)."""


def test_the_show_help_names_the_parts_of_a_page_in_their_order(tmp_path: Path) -> None:
    page = tmp_path / "auth-refactor.html"
    _run("show", SAMPLE, "auth-refactor", "-o", page, "-q")
    html = page.read_text(encoding="utf-8")
    named = _named_list(_help("show"), "The page's parts, in order: ")
    assert named == list(SHOW_PARTS)
    at = [html.find(SHOW_PARTS[part]) for part in named]
    assert -1 not in at and at == sorted(at), dict(zip(named, at, strict=True))


COMMANDS = {
    "summary": ["summary", SAMPLE],
    "check": ["check", SAMPLE, "--fail-on", "none"],
    "runs": ["runs", SAMPLE],
    "findings": ["findings", SAMPLE],
    "search": ["search", SAMPLE, "auth"],
    "list": ["list", SAMPLE, "run-webapp-1"],
    "show": ["show", SAMPLE, "auth-refactor"],
    "sql": ["sql", SAMPLE, "select session_id from sessions"],
}
"""Each command with a ``--format``, with the arguments it needs on the sample (compare: test_compare_cli)."""


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_format_a_help_lists_works(tmp_path: Path, command: str) -> None:
    listed = re.search(r"-f, --format \[([a-z|]+)\]", _help(command))
    assert listed is not None, f"{command} --help lists no format"
    to_file = "-o, --output" in _help(command)
    for fmt in listed.group(1).split("|"):
        out = tmp_path / f"{command}.{fmt}"
        printed = _run(*COMMANDS[command], "-f", fmt, *(["-o", out] if to_file else []), "-q")
        assert (out.stat().st_size if to_file else len(printed)) > 0, (command, fmt)


def test_every_table_the_runs_help_lists_works() -> None:
    listed = re.search(r"--table \[([a-z|-]+)\]", _help("runs"))
    assert listed is not None
    for table in listed.group(1).split("|"):
        assert _run("runs", SAMPLE, "--table", table, "-q").strip(), table
