"""README.md stays a short front page: under 200 lines, the quickstart says to activate the venv, and its
examples write only under ``out/`` (which git ignores), so running them leaves the checkout clean."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list[list[str]]:
    found = []
    for line in README.splitlines():
        if line.startswith("$ subagent-catalog "):
            found.append(shlex.split(line[2:], comments=True))
    return found


def _targets(args: list[str]) -> list[str]:
    """What a command line writes: its -o/--output value, and export's OUT_DIR."""
    targets = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg in ("-o", "--output")]
    if args[1] == "export":
        targets.append([arg for arg in args[2:] if not arg.startswith("-")][1])
    return targets


def test_readme_is_under_200_lines() -> None:
    assert len(README.splitlines()) < 200


def test_the_quickstart_says_to_activate_the_venv() -> None:
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^\. \.venv/bin/activate|^source \.venv/bin/activate", quickstart, re.M)
    assert "make demo" in quickstart and "make test" in quickstart


def test_readme_examples_write_only_under_out_which_git_ignores() -> None:
    targets = [target for args in _commands() for target in _targets(args)]
    assert len(targets) >= 5, targets  # report, show, otel, export, the archive's report
    assert [target for target in targets if not target.startswith("out/")] == []
    assert "out/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_the_target_rule_sees_an_output_outside_out() -> None:
    assert _targets(shlex.split("subagent-catalog report data/sample -o nightly.html")) == ["nightly.html"]
    assert _targets(shlex.split("subagent-catalog export data/sample --events archive")) == ["archive"]
