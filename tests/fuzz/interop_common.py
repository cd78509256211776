"""What the SQL and OTLP fuzz tiers share: the CLI run in-process with descriptors 1 and 2 captured, the one-line
rule, tree digests, the child's peak RSS, and a sandbox of directories the cases must leave as they found them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz.outputs import tree_state

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
SANDBOX_DIRS = ("work", "corpus", "home", "cwd", "tmp", "outside", "scratch")
SECRET = "FUZZ-SECRET-7f3a9c"  # in files outside the corpus: it must never reach a result or a message


def hwm_kb() -> int:
    """This process's own peak RSS (``VmHWM``, KiB)."""
    with open("/proc/self/status", encoding="ascii") as status:
        return int(next(line.split()[1] for line in status if line.startswith("VmHWM:")))


def children_hwm_kb() -> int:
    """The largest peak RSS of this process's reaped children (KiB): the queries' own processes.

    A forked child starts with its parent's pages resident, so this is the parent's size plus what the
    query added.
    """
    import resource

    return int(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def run_cli(args: list[str], scratch: str) -> dict[str, Any]:
    """The CLI in this process, descriptors 1 and 2 captured (under ``scratch``); code, stdout, stderr, seconds."""
    from subagent_catalog.cli import main

    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    started = time.monotonic()
    with tempfile.TemporaryFile(dir=scratch) as out, tempfile.TemporaryFile(dir=scratch) as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            try:
                main.main(args=args, prog_name="subagent-catalog", standalone_mode=True)
                code: Any = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException as error:  # a violation to report, not to raise
                code = f"raised {type(error).__name__}: {str(error)[:300]}"
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        out.seek(0)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
        lines = stderr.strip().splitlines()
        errors = [line for line in lines if line.startswith("Error:")]
        return {
            "code": code,
            "stdout": out.read(2_000_000).decode("utf-8", "replace"),
            "stderr": stderr[:2000] + ("\n[...]\n" + stderr[-2000:] if len(stderr) > 4000 else stderr[2000:4000]),
            "stderr_lines": len(lines),
            "error_lines": len(errors),
            "last_is_error": bool(lines) and bool(errors) and lines[-1] == errors[-1],
            "traceback": "Traceback" in stderr or "panicked" in stderr,
            "internal": "internal error" in stderr,
            "longest_line": max((len(line) for line in lines), default=0),
            "seconds": round(time.monotonic() - started, 2),
        }


def line_violations(run: dict[str, Any]) -> list[str]:
    """The one-line rule: exit 0, 1 or 2; on 1 and 2 exactly one ``Error:`` line, the last; no traceback anywhere."""
    code = run["code"]
    out: list[str] = []
    if not isinstance(code, int) or code not in (0, 1, 2):
        out.append(f"exit {code}")
    if run["traceback"]:
        out.append("traceback or panic on stderr")
    if run["internal"]:
        out.append("internal error")
    if code in (1, 2) and (run["error_lines"] != 1 or not run["last_is_error"]):
        out.append(f"{run['error_lines']} Error: lines, {run['stderr_lines']} lines in all")
    if run["longest_line"] > 4000:
        out.append(f"a stderr line of {run['longest_line']} characters")
    return out


@dataclass
class Sandbox:
    """The directories a case may read and must not change: the corpus, HOME, the working directory, TMPDIR,
    and a directory outside holding the secret."""

    work: Path
    corpus: Path
    home: Path
    cwd: Path
    tmp: Path
    outside: Path
    scratch: Path
    states: dict[str, str] = field(default_factory=dict)

    @classmethod
    def make(cls, work: Path) -> Sandbox:
        """Copy ``data/sample`` in; plant the secret outside as JSON, CSV, text and a fake Parquet name."""
        box = cls(work, work / "corpus", work / "home", work / "cwd", work / "tmp", work / "outside", work / "scratch")
        shutil.copytree(SAMPLE, box.corpus)
        for folder in (box.home, box.cwd, box.tmp, box.outside, box.scratch):
            folder.mkdir(parents=True, exist_ok=True)
        (box.outside / "secret.json").write_text(json.dumps({"secret": SECRET}) + "\n")
        (box.outside / "secret.csv").write_text(f"secret\n{SECRET}\n")
        (box.outside / "secret.txt").write_text(SECRET + "\n")
        box.states = box.snapshot()
        return box

    def env(self) -> dict[str, str]:
        """The child's environment: HOME and TMPDIR inside the sandbox, the facts cache off."""
        return {
            **os.environ,
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "PYTHONPATH": str(REPO),
            "SUBAGENT_CATALOG_CACHE": str(self.scratch / "cache"),
            "FUZZ_REPO": str(REPO),
        }

    def snapshot(self) -> dict[str, str]:
        """Digests of every directory that must not change."""
        return {name: tree_state(getattr(self, name)) for name in ("corpus", "home", "cwd", "tmp", "outside")}

    def changed(self) -> list[str]:
        """The directories that changed since ``make`` (each a violation)."""
        now = self.snapshot()
        return [f"{name} changed" for name, state in now.items() if state != self.states[name]]


def run_child(module: str, spec: dict[str, Any], box: Sandbox, *, timeout: float) -> tuple[list[dict[str, Any]], str]:
    """Run ``module``'s ``child_main`` on ``spec`` in a fresh interpreter; its JSON lines and its stderr's tail.

    A child that passes ``timeout`` is killed: the cases it finished are returned, and the tail says so.
    """
    spec_file = box.scratch / f"spec-{time.monotonic_ns()}.json"
    spec_file.write_text(json.dumps(spec))
    code = f"import sys; sys.path.insert(0, {str(REPO)!r}); from {module} import child_main; child_main()"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(spec_file)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=box.env(),
            cwd=str(box.cwd),
            check=False,
        )
        stdout, tail = done.stdout, f"exit {done.returncode}: {done.stderr[-800:]}"
    except subprocess.TimeoutExpired as expired:
        raw = expired.stdout or b""
        stdout = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        tail = f"the child did not finish within {timeout:.0f} s"
    results = []
    for line in stdout.splitlines():
        if line.startswith("{"):
            results.append(json.loads(line))
    return results, tail
