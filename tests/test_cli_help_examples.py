"""Every example in every command's ``--help`` runs as written against ``data/sample``.

The examples are read from the help text itself (the lines under ``Examples:``) and run with
``bash -c`` in a fresh directory holding a copy of the repository's ``data/`` folder, the facts
cache off. What they need besides ``data/`` is prepared the way a reader would prepare it:

* ``out/sample-archive``, ``out/events-archive`` and ``pages`` are written by the ``export`` and
  ``show`` examples that make them (run first when another command's example names them);
* ``$GITHUB_STEP_SUMMARY`` names a file, as in a GitHub Actions job;
* ``s3://bucket/...`` is a local S3 server (moto) holding the bucket, its endpoint and test
  credentials given by the standard ``AWS_*`` environment variables;
* ``http://127.0.0.1:6006`` (Phoenix's port) is the one substitution: it becomes the address of a
  local OTLP collector on a free port, so that no test depends on a fixed port being free.

An example passes when it exits 0 (or 1 for a gate whose verdict is FAILED, which is what the
sample's damaged logs give, in any format, with no ``Error:`` line) and prints no traceback, usage
error, internal error or panic.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import click
import pytest

from subagent_catalog.cli import main
from tests.cli_in_process import run_in_process
from tests.s3 import S3Server

ROOT = Path(__file__).resolve().parent.parent
PHOENIX = "http://127.0.0.1:6006"
PLACEHOLDERS = re.compile(r"ROOT-ID|(?<![\w/])/archive\b|\.\.\.|0f2d0143|<[a-z-]+>|(?<![\w/])prices\.toml")
GATES = {"check", "compare"}  # commands whose exit status 1 is a verdict, not a failure
PREREQUISITES = {  # what an example names -> the example (of another command) that writes it
    "out/sample-archive": "subagent-catalog export data/sample out/sample-archive",
    "out/events-archive": "subagent-catalog export data/sample out/events-archive --events --engine dask",
    "--a-pages pages": "subagent-catalog show data/sample run-webapp-1 --tree -o pages/",
}


def help_text(name: str) -> str:
    """The ``--help`` text of one command, as click prints it."""
    command = main.commands[name]
    parent = click.Context(main, info_name="subagent-catalog")
    return command.get_help(click.Context(command, info_name=name, parent=parent))


def examples_of(name: str) -> list[str]:
    """The command lines under ``Examples:`` in a command's help, in order."""
    text = help_text(name)
    if "Examples:" not in text:
        return []
    block = text.split("Examples:", 1)[1].split("\n\n", 1)[0]
    lines: list[str] = []
    for line in (line.strip() for line in block.splitlines() if line.strip()):
        if lines and lines[-1].endswith("\\"):  # a continued line
            lines[-1] = lines[-1][:-1] + line
        else:
            lines.append(line)
    return lines


COMMANDS = sorted(main.commands)
ALL = {name: examples_of(name) for name in COMMANDS}


def test_every_command_but_conformance_has_examples_and_each_names_its_command() -> None:
    missing = [name for name, lines in ALL.items() if not lines and name != "conformance"]
    assert missing == []
    for name, lines in ALL.items():
        for line in lines:
            assert line.startswith(f"subagent-catalog {name} "), line


def test_no_example_has_a_placeholder() -> None:
    found = [line for lines in ALL.values() for line in lines if PLACEHOLDERS.search(line)]
    assert found == []


def test_the_placeholder_check_catches_the_old_examples() -> None:
    old = [
        "subagent-catalog list data/sample ROOT-ID --scope descendants --format json",
        "subagent-catalog check /archive --baseline previous.json",
        "subagent-catalog show /archive 0f2d0143-... --format md -o run.md",
        "subagent-catalog runs data/sample --table models --prices prices.toml",
    ]
    assert all(PLACEHOLDERS.search(line) for line in old)


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that accepts every export (and counts them)."""

    received: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.received.append(length)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def collector() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def s3_env() -> Iterator[dict[str, str]]:
    with S3Server() as server:
        from pyarrow import fs

        store = fs.S3FileSystem(
            access_key="testing",
            secret_key="testing",
            region="us-east-1",
            endpoint_override=server.endpoint,
            scheme="http",
            allow_bucket_creation=True,
        )
        store.create_dir("bucket")
        yield {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ENDPOINT_URL": server.endpoint,
            "AWS_ALLOW_HTTP": "true",
        }


def _run(line: str, cwd: Path, env: dict[str, str], collector: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line.replace(PHOENIX, collector)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _failure(name: str, line: str, code: int, stdout: str, stderr: str) -> str | None:
    output = stdout + stderr
    verdict = name in GATES and code == 1 and "Error:" not in stderr  # a gate's FAILED verdict
    bad = [word for word in ("Traceback", "internal error", "Usage:", "panicked") if word in output]
    if (code == 0 or verdict) and not bad:
        return None
    return f"{line}\n  exit {code}, {bad or 'no marker'}:\n{output[-2000:]}"


@pytest.mark.parametrize("name", [name for name in COMMANDS if ALL[name]])
def test_every_help_example_runs_as_written(
    name: str, tmp_path: Path, collector: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = ALL[name]
    s3_env = request.getfixturevalue("s3_env") if any("s3://" in line for line in lines) else {}
    shutil.copytree(ROOT / "data", tmp_path / "data")
    env = {
        **os.environ,
        **s3_env,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "SUBAGENT_CATALOG_CACHE": "off",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md"),
        "NO_COLOR": "1",
    }
    needed = [make for mark, make in PREREQUISITES.items() if any(mark in line for line in lines)]
    failures = []
    monkeypatch.chdir(tmp_path)
    for line in [make for make in needed if make not in lines] + lines:
        ran = run_in_process(line.replace(PHOENIX, collector), env)  # a pass here is a pass
        if ran is not None and _failure(name, line, ran.exit_code, ran.stdout, ran.stderr) is None:
            continue
        done = _run(line, tmp_path, env, collector)  # anything else runs as written, and that run decides
        failure = _failure(name, line, done.returncode, done.stdout, done.stderr)
        if failure is not None:
            failures.append(failure)
    assert failures == [], "\n".join(failures)
    if any("$GITHUB_STEP_SUMMARY" in line for line in lines):
        assert (tmp_path / "step-summary.md").stat().st_size > 0
    if any(PHOENIX in line for line in lines):
        assert _Collector.received, "the collector received no export"
