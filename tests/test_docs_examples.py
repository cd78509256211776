"""Every example in README.md and docs/**/*.md runs, and prints what the page says it prints.

Fenced blocks are collected from each page and run in order, sharing one globals dict per page:

* ```` ```python ```` blocks whose first line is a ``>>> `` prompt run as doctests;
* other ```` ```python ```` blocks are executed with ``exec`` and must not raise;
* ```` ```console ```` blocks hold ``$ `` commands, each followed by its expected combined
  stdout and stderr; a command is run with ``bash -c`` and its output compared with doctest's
  ``OutputChecker`` (``...`` matches anything, whitespace is normalised).

Other fences (``text``, ``sh``, ``toml``, ``json``, no language...) are not run. Every page runs in
a fresh temporary directory holding a copy of the repository's ``data/`` folder, with the facts
cache off.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from tests.cli_in_process import console_output

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
COMMAND_TIMEOUT = 120

FENCE = re.compile(
    r"^(?P<indent>[ ]*)(?P<fence>`{3,})[ ]*(?P<info>[^`\n]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ ]*$",
    re.M | re.S,
)
# Fences that are never executed: signatures, layouts, make commands, literal file contents.
INERT = {"", "text", "sh", "toml", "json", "yaml", "ini", "html", "markdown"}


@dataclass(frozen=True)
class Block:
    """One fenced code block: the page it is on, the line of its opening fence, language, body."""

    path: str
    line: int
    lang: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def blocks_of(text: str, path: str) -> list[Block]:
    """The fenced blocks of a Markdown text, in order (bodies dedented by the fence's indent)."""
    found = []
    for match in FENCE.finditer(text):
        indent = len(match.group("indent"))
        body = "".join(
            line[indent:] if line[:indent].isspace() else line for line in match.group("body").splitlines(True)
        )
        lang = match.group("info").strip().split(" ")[0].lower() if match.group("info").strip() else ""
        found.append(Block(path, text.count("\n", 0, match.start()) + 1, lang, body))
    return found


def classify(block: Block) -> str | None:
    """``doctest``, ``exec``, ``console`` or ``inert``; None for a block the runner cannot run."""
    first = next((line for line in block.body.splitlines() if line.strip()), "")
    if block.lang == "python":
        has_prompt = re.search(r"^>>> ", block.body, re.M) is not None
        if not first:
            return None
        if has_prompt:
            return "doctest" if first.startswith(">>> ") else None
        return "exec"
    if block.lang == "console":
        return "console" if first.startswith("$ ") else None
    if block.lang in INERT:
        return "inert"
    return None


def console_steps(body: str) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a console block; a trailing ``\\`` continues a command."""
    steps: list[tuple[str, str]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            i += 1
            continue
        command = line[2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        want = "\n".join(expected).strip("\n")
        steps.append((command, want + "\n" if want else ""))
    return steps


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["SUBAGENT_CATALOG_CACHE"] = "off"
    env["COLUMNS"] = "80"
    env.pop("FORCE_COLOR", None)
    return env


def run_page(text: str, path: str, workdir: Path) -> list[str]:
    """Run every executable block of a page in order in ``workdir``; return one message per failure."""
    failures: list[str] = []
    globs: dict[str, object] = {"__name__": "__docs__"}
    parser = doctest.DocTestParser()
    checker = doctest.OutputChecker()
    env = _environment()
    with pl.Config():  # a page may set display options; restore them afterwards
        for block in blocks_of(text, path):
            kind = classify(block)
            if kind == "doctest":
                test = parser.get_doctest(block.body, globs, block.where, path, block.line)
                test.globs = globs  # DocTest copies its globals; the page's blocks share one dict
                report: list[str] = []
                runner = doctest.DocTestRunner(checker=checker, optionflags=FLAGS)
                result = runner.run(test, out=report.append, clear_globs=False)
                if result.failed:
                    failures.append(f"{block.where}: doctest block failed\n{''.join(report)}")
            elif kind == "exec":
                try:
                    exec(compile(block.body, block.where, "exec"), globs)
                except BaseException:  # any error is the failure being reported
                    failures.append(f"{block.where}: python block raised\n{traceback.format_exc()}")
            elif kind == "console":
                for command, want in console_steps(block.body):
                    shown = console_output(command, env)  # a pass here is a pass; anything else runs as written
                    if shown is not None and checker.check_output(want, shown, FLAGS):
                        continue
                    try:
                        done = subprocess.run(
                            ["bash", "-c", command],
                            cwd=workdir,
                            env=env,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT,
                            text=True,
                            timeout=COMMAND_TIMEOUT,
                        )
                        got = done.stdout
                    except subprocess.TimeoutExpired:
                        failures.append(f"{block.where}: `{command}` timed out after {COMMAND_TIMEOUT} s")
                        continue
                    if not checker.check_output(want, got, FLAGS):
                        failures.append(
                            f"{block.where}: `$ {command}` printed something else\nexpected:\n{want}got:\n{got}"
                        )
            elif kind is None:
                failures.append(f"{block.where}: cannot classify a ```{block.lang} block")
    return failures


def _prepare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workdir = tmp_path / "work"
    shutil.copytree(ROOT / "data", workdir / "data", ignore=shutil.ignore_patterns("__pycache__"))
    golden = Path("tests", "data", "active-time")  # the golden logs docs/runs.md reads (as from the repository)
    shutil.copytree(ROOT / golden, workdir / golden)
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("SUBAGENT_CATALOG_CACHE", "off")
    return workdir


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


# Pages whose ``### `` sections are independent: each section runs alone, in its own copy of ``data/``,
# so the workers share a long page (docs/cli.md runs a hundred commands).
SPLIT_PAGES = {"docs/cli.md"}
SECTION = re.compile(r"^### ", re.M)


def page_parts(page: Path) -> list[tuple[str, str]]:
    """(test id, text) of each part of a page: the whole page, or one part per ``### `` section.

    A part keeps the page's line numbers: the lines before it are blank.
    """
    text = page.read_text(encoding="utf-8")
    name = _name(page)
    if name not in SPLIT_PAGES:
        return [(name, text)]
    starts = [0, *(match.start() for match in SECTION.finditer(text))]
    parts = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(text)
        title = text[start:end].split("\n", 1)[0].strip("# `") if index else "intro"
        parts.append((f"{name}#{title}", "\n" * text.count("\n", 0, start) + text[start:end]))
    return parts


PARTS = [part for page in PAGES for part in page_parts(page)]


@pytest.mark.parametrize(("name", "text"), PARTS, ids=[name for name, _text in PARTS])
def test_page_examples(name: str, text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workdir = _prepare(tmp_path, monkeypatch)
    failures = run_page(text, name.split("#", 1)[0], workdir)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


def test_split_pages_lose_no_block() -> None:
    for page in PAGES:
        whole = blocks_of(page.read_text(encoding="utf-8"), _name(page))
        split = [block for _name_, text in page_parts(page) for block in blocks_of(text, _name(page))]
        assert [(b.line, b.lang, b.body) for b in split] == [(b.line, b.lang, b.body) for b in whole]


def test_every_code_block_can_be_classified() -> None:
    unclassified = [
        f"{block.where}: ```{block.lang}"
        for page in PAGES
        for block in blocks_of(page.read_text(encoding="utf-8"), _name(page))
        if classify(block) is None
    ]
    assert unclassified == []


def test_the_docs_hold_examples() -> None:
    kinds = {classify(block) for page in PAGES for block in blocks_of(page.read_text(encoding="utf-8"), _name(page))}
    assert {"doctest", "exec", "console"} <= kinds


SYNTHETIC = """\
# A page

```python
>>> 1 + 1
3
```

```console
$ echo hello
goodbye
```

```python
raise ValueError("boom")
```

```python
x = 1
>>> x
1
```
"""


def test_the_runner_detects_wrong_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workdir = _prepare(tmp_path, monkeypatch)
    failures = run_page(SYNTHETIC, "synthetic.md", workdir)
    assert len(failures) == 4, failures
    assert failures[0].startswith("synthetic.md:3: doctest block failed")
    assert "Expected:\n    3\nGot:\n    2" in failures[0]
    assert failures[1].startswith("synthetic.md:8: `$ echo hello` printed something else")
    assert failures[2].startswith("synthetic.md:13: python block raised") and "ValueError: boom" in failures[2]
    assert failures[3].startswith("synthetic.md:17: cannot classify")


def test_the_runner_accepts_right_output_and_ellipsis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workdir = _prepare(tmp_path, monkeypatch)
    page = """\
```python
y = 20
```

```python
>>> y + 1
21
```

```console
$ echo one; echo two; echo three; ls data
one
...
three
findings
live.json
make_findings.py
make_sample.py
prices.toml
sample
$ false; echo "exit $?"
exit 1
$ echo a \\
    b
a b
$ true
```
"""
    assert run_page(page, "ok.md", workdir) == []
