"""docs/cli.md documents every command, argument and option the CLI has (and no command it lacks)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from subagent_catalog.cli import main

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
HEADING = re.compile(r"^### `subagent-catalog (?P<name>[a-z-]+)`\s*$", re.M)


def _sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")  # the page is all CLI: one section per command heading
    marks = list(HEADING.finditer(text))
    sections = {}
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end() : end]
        sections[mark.group("name")] = re.split(r"^#{1,3} ", body, flags=re.M)[0]
    return sections


def _documented_names(param: click.Parameter) -> list[str]:
    if isinstance(param, click.Argument):
        return [param.human_readable_name]
    return [*param.opts, *param.secondary_opts]


def test_every_command_has_a_section_and_no_section_is_stale() -> None:
    assert set(_sections()) == set(main.commands)


@pytest.mark.parametrize("name", sorted(main.commands))
def test_every_argument_and_option_is_documented(name: str) -> None:
    section = _sections()[name]
    command = main.commands[name]
    assert f"subagent-catalog {name} [OPTIONS]" in section, "usage line"
    missing = [
        spelled
        for param in command.params
        for spelled in _documented_names(param)
        if not re.search(rf"(?<![\w-]){re.escape(spelled)}(?![\w-])", section)
    ]
    assert missing == [], f"{name}: undocumented {missing}"
    assert "```console" in section, f"{name}: no example"
    assert f"$ subagent-catalog {name} " in section, f"{name}: no example invocation"


def _shared_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"^### Options shared by.*?(?=^### )", text, re.M | re.S)
    assert found is not None
    return found.group(0)


def test_choices_are_documented() -> None:
    sections, shared = _sections(), _shared_section()
    for name, command in main.commands.items():
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, click.Choice):
                for choice in param.type.choices:
                    row = f"`{param.opts[-1]} " if param.name in ("compression", "semantics", "input_kind") else ""
                    in_shared = bool(row) and str(choice) in shared and row in shared
                    assert str(choice) in sections[name] or in_shared, f"{name} {param.opts[0]}: choice {choice!r}"


def test_group_options_are_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for param in main.params:
        for spelled in _documented_names(param):
            assert spelled in text
    assert "-h" in text and "--help" in text


def test_check_names_are_documented() -> None:
    from subagent_catalog.analysis.gate_checks import CHECKS

    section = _sections()["check"]
    for check in CHECKS:
        row = re.search(rf"^\| `{re.escape(check.name)}` \| (yes|no) \|", section, re.M)
        assert row is not None, check.name
        assert (row.group(1) == "yes") == check.default, check.name
