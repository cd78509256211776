"""A plain ``subagent-catalog ARGS`` command line run inside the test's process (click's ``CliRunner``).

The documentation and ``--help`` example tests run a few hundred command lines; as a ``bash -c``
child each one starts Python and imports the package again (about a second of CPU each on CI's
two cores). A line that needs no shell (no pipe, redirection, variable, glob or environment
prefix, and no worker cluster) is first run through the command group's own entry point here, with
the same arguments, working directory and environment. Its result only ever *passes* a check: a
line whose in-process output or exit status the check refuses is run again as written with
``bash -c``, and that run decides. So a difference between the two ways of running (a display
option a page set in this process, a module-level memo) can cost time, never a verdict.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from click.testing import CliRunner

from subagent_catalog.cli import main

SHELL = re.compile(r"[|&;<>()$`*?~#!{}\[\]\\]")
"""Characters that make a line the shell's business (pipes, redirections, variables, globs, escapes)."""

COMMENT = re.compile(r"\s+#\s[^'\"]*$")
"""A trailing comment (``  # before, after``), which the shell drops."""

OWN_PROCESS = ("--engine dask", "--scanner")
"""Lines that start worker clusters or load user code: always run as written."""


@dataclass(frozen=True)
class Ran:
    """What a command line printed and how it exited."""

    exit_code: int
    stdout: str
    stderr: str
    output: str  # stdout and stderr interleaved, as a terminal shows them


def plain_arguments(line: str) -> list[str] | None:
    """The arguments of a plain ``subagent-catalog`` line, or ``None`` when it needs a shell.

    Examples:
        >>> plain_arguments("subagent-catalog summary data/sample --format json")
        ['summary', 'data/sample', '--format', 'json']
        >>> plain_arguments("subagent-catalog compare data/sample data/sample   # before, after")
        ['compare', 'data/sample', 'data/sample']
        >>> plain_arguments("subagent-catalog summary data/sample | head") is None
        True
    """
    line = COMMENT.sub("", line)
    if SHELL.search(line) or any(mark in line for mark in OWN_PROCESS):
        return None
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    if len(words) < 2 or words[0] != "subagent-catalog":
        return None
    return words[1:]


def run_in_process(line: str, env: Mapping[str, str]) -> Ran | None:
    """Run a plain line in this process (``None``: not plain, or it raised past the command group).

    The caller's working directory is the command's; ``env`` is set for the run and restored after.
    """
    arguments = plain_arguments(line)
    if arguments is None:
        return None
    result = CliRunner().invoke(main, arguments, prog_name="subagent-catalog", env=dict(env), catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return None
    return Ran(result.exit_code, result.stdout, result.stderr, result.output)


EXIT_ECHO = re.compile(r"\s*;\s*echo \"exit \$\?\"$")
TO_NULL = re.compile(r"\s*>\s*/dev/null$")
HEAD = re.compile(r"\s*\|\s*head -(?:n\s*)?(\d+)$")


def console_output(line: str, env: Mapping[str, str]) -> str | None:
    """What a console line prints, run in this process (``None``: it needs the shell).

    Besides a plain line, three endings the documentation uses are followed: ``; echo "exit $?"``
    (the exit status printed after), ``> /dev/null`` (stdout dropped) and ``| head -N`` (the first
    ``N`` lines of stdout, for a run that wrote nothing to stderr).

    Examples:
        >>> console_output('subagent-catalog summary data/nowhere; echo "exit $?"', {}).splitlines()[-1]
        'exit 1'
    """
    echo = EXIT_ECHO.search(line)
    line = line[: echo.start()] if echo else line
    to_null, head = TO_NULL.search(line), HEAD.search(line)
    line = line[: to_null.start()] if to_null else line[: head.start()] if head else line
    ran = run_in_process(line, env)
    if ran is None:
        return None
    if to_null:
        text = ran.stderr
    elif head:
        if ran.stderr:
            return None  # the terminal interleaves what bypasses the pipe: let the shell show it
        text = "".join(ran.stdout.splitlines(keepends=True)[: int(head.group(1))])
    else:
        text = ran.output
    if echo:
        text += ("" if not text or text.endswith("\n") else "\n") + f"exit {ran.exit_code}\n"
    return text
