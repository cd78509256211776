"""The fuzz suite's **options** tier (a): hostile numbers and paths for the options of every command.

Each case draws one command of the ``subagent-catalog`` group and one to three of its numeric or
path parameters, found in the click command tree (``numeric_parameters``, ``path_parameters``: a
new option is fuzzed with no change here), and gives each a hostile value:

* numbers: ``inf``, ``nan``, ``-1``, ``2**63``, ``1e400``, ``2**64``, 5,000 digits, ``-0``,
  ``1e-300``, ``0x10``, `` 7 ``, ``1_000``, ``2.5``, an empty string, Arabic-Indic digits, and
  each range's own edges and one past them (``Bound.low``, ``Bound.high``);
* paths: a FIFO (a reader drains it: a pipe is written in place by design, and one without a reader
  blocks a writer as it blocks ``cat > fifo``), a directory, a dangling link, a corpus log, the
  corpus root, a new name inside the corpus, a 300-character name, a 5,000-character path, a name
  with a newline, a missing directory, ``/dev/null``, ``/dev/full``, ``-``.

The command (its other arguments the ``base_argv`` that works) runs in a child interpreter on a
small corpus, and the case checks (``exit_violations``, ``run_case``):

* it exits 0, 1 or 2; with 1 or 2 it prints exactly one ``Error:`` line (a usage error's
  ``Usage:`` lines above it are click's); never a traceback, never an ``internal error``;
* no byte, name or link of the corpus changed;
* it ends within ``TIMEOUT_S``.

``python -m tests.fuzz.options --cases N [--seed S]`` runs the long tier (``make fuzz-options``),
``--case-seed S`` one case again; ``tests/test_reliability5_options.py`` runs the fast sample in
``make test`` (every numeric option with each of ``FAST_NUMBERS``, in-process, and a few seeded cases).
"""

from __future__ import annotations

import json
import math
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import click

from tests.fuzz import case_seeds, tier_parser
from tests.fuzz.outputs import tree_state

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 90.0

FAST_NUMBERS = ("inf", "nan", "-1", "9223372036854775808", "1e400")
"""The hostile numbers of the fast sample: each numeric option gets each."""
NUMBERS = (
    *FAST_NUMBERS,
    "-inf",
    "18446744073709551616",
    "9" * 5000,
    "-0",
    "0",
    "1e-300",
    "0x10",
    " 7 ",
    "1_000",
    "2.5",
    "",
    "\u0661\u0662",
)
PATHS = (
    "fifo",
    "directory",
    "dangling-link",
    "corpus-log",
    "corpus-root",
    "inside-corpus",
    "long-name",
    "long-path",
    "newline",
    "missing-directory",
    "dev-null",
    "dev-full",
    "dash",
)
ARGUMENTS = {"parent": "P", "session_id": "P", "pattern": "work", "query": "select 1"}
"""The value of each non-path positional argument in ``base_argv``."""


def _commands() -> dict[str, click.Command]:
    from subagent_catalog.cli import main

    return dict(sorted(main.commands.items()))


def numeric_parameters() -> list[tuple[str, click.Parameter]]:
    """Every ``(command, parameter)`` whose type is a number (click's ``INT``, ``FLOAT`` or a range of them)."""
    return [
        (name, param)
        for name, command in _commands().items()
        for param in command.params
        if isinstance(param.type, click.types.IntParamType | click.types.FloatParamType)
    ]


def path_parameters() -> list[tuple[str, click.Parameter]]:
    """Every ``(command, parameter)`` naming a file or directory (a ``click.Path``, a ``FILE`` or ``DIR`` metavar)."""
    return [
        (name, param)
        for name, command in _commands().items()
        for param in command.params
        if isinstance(param.type, click.Path) or getattr(param, "metavar", None) in ("FILE", "DIR")
    ]


def flag(param: click.Parameter) -> str:
    """The option's longest spelling (``--jobs`` for ``-j/--jobs``)."""
    return max(param.opts, key=len)


def base_argv(command: str, corpus: str, work: str) -> list[str]:
    """A command line of ``command`` that works on ``corpus`` (outputs under ``work``), quiet and in one process."""
    params = _commands()[command].params
    argv = [command]
    for param in params:
        if isinstance(param, click.Argument):
            if param.name == "out_dir":
                argv.append(os.path.join(work, "archive"))
            elif isinstance(param.type, click.Path):
                argv.append(corpus)
            else:
                argv.append(ARGUMENTS[str(param.name)])
    names = {param.name for param in params}
    if command in ("otel", "report"):
        argv += ["-o", os.path.join(work, f"{command}.out")]
    argv += ["-q"] if "quiet" in names else []
    argv += ["--jobs", "1"] if "jobs" in names else []
    return argv


def with_value(argv: list[str], command: str, param: click.Parameter, value: str) -> list[str]:
    """``argv`` with ``param`` set to ``value`` (a positional argument replaced, an option appended: the last wins)."""
    if isinstance(param, click.Argument):
        arguments = [p for p in _commands()[command].params if isinstance(p, click.Argument)]
        out = list(argv)
        out[1 + arguments.index(param)] = value
        return out
    return [*argv, flag(param), value]


def exit_violations(code: int | None, stdout: str, stderr: str) -> list[str]:
    """What is wrong with a command's exit: its status, its ``Error:`` lines, a traceback."""
    out: list[str] = []
    if code not in (0, 1, 2):
        out.append(f"exit status {code}")
    if "Traceback" in stderr or "Traceback" in stdout:
        out.append("traceback")
    if "internal error" in stderr:
        out.append("internal error")
    if code in (1, 2):
        errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
        if len(errors) != 1 and not (code == 1 and not errors and _verdict(stdout, stderr)):
            out.append(f"{len(errors)} Error: lines")
    return out


def _verdict(stdout: str, stderr: str) -> bool:
    """A gate's failing verdict, which exits 1 without an error: ``check: FAILED``, a ``compare --fail-on`` line."""
    return stdout.startswith("check: FAILED") or any(line.startswith("fail-on: ") for line in stderr.splitlines())


def _numbers(param: click.Parameter, rng: random.Random) -> str:
    bound = getattr(param.type, "bound", None)
    edges: list[str] = []
    if bound is not None and bound.integer:
        edges = [str(int(v)) for v in (bound.low, bound.high, bound.low - 1, bound.high + 1)]
    elif bound is not None:
        below, above = math.nextafter(bound.low, -math.inf), math.nextafter(bound.high, math.inf)
        edges = [repr(float(v)) for v in (bound.low, bound.high, below, above)]
    return rng.choice([*NUMBERS, *edges])


class _Drain:
    """A reader of a FIFO for the length of a case (so that a write to it ends), never blocking itself."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready and not os.read(self.fd, 1 << 16):
                time.sleep(0.01)  # no writer (EOF): wait for one

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        os.close(self.fd)


def hostile_path(kind: str, work: Path, corpus: Path) -> str:
    """A path of ``kind`` (``PATHS``), made under ``work`` (or naming the corpus)."""
    if kind == "fifo":
        fifo = work / "fifo"
        if not fifo.exists():
            os.mkfifo(fifo)
        return str(fifo)
    if kind == "directory":
        (work / "directory").mkdir(exist_ok=True)
        return str(work / "directory")
    if kind == "dangling-link":
        link = work / "dangling"
        if not os.path.lexists(link):
            link.symlink_to(work / "nowhere")
        return str(link)
    if kind == "corpus-log":
        return str(sorted(corpus.rglob("session.jsonl*"))[0])
    if kind == "corpus-root":
        return str(corpus)
    if kind == "inside-corpus":
        return str(corpus / "written-here.out")
    if kind == "long-name":
        return str(work / ("n" * 300))
    if kind == "long-path":
        return str(work / "/".join(["d" * 200] * 25))
    if kind == "newline":
        return str(work / "a\nb.out")
    if kind == "missing-directory":
        return str(work / "missing" / "x.out")
    fixed = {"dev-null": "/dev/null", "dev-full": "/dev/full", "dash": "-"}
    return fixed[kind]


def make_corpus(root: Path) -> None:
    """The small corpus every case reads: P with children c-ok and c-x, g-below-x under c-x."""
    from tests.helpers import base_tree

    base_tree(root, "none")


@dataclass
class Result:
    """One case: its command line and which invariants failed."""

    seed: int
    argv: list[str]
    code: int | None
    seconds: float
    violations: list[str]
    stderr: str


def draw(seed: int, corpus: Path, work: Path) -> list[str]:
    """The command line of case ``seed`` (its hostile paths made under ``work``)."""
    rng = random.Random(seed)
    numeric = numeric_parameters()
    fuzzed = [*numeric, *path_parameters()]
    command = rng.choice(sorted({name for name, _ in fuzzed}))
    params = [param for name, param in fuzzed if name == command]
    argv = base_argv(command, str(corpus), str(work))
    for param in rng.sample(params, k=min(len(params), rng.randint(1, 3))):
        if any(param is number for _, number in numeric):
            value = _numbers(param, rng)
        else:
            value = hostile_path(rng.choice(PATHS), work, corpus)
        argv = with_value(argv, command, param, value)
    return argv


def run_case(seed: int, corpus: Path) -> Result:
    """Run case ``seed`` on ``corpus`` in a child interpreter (its own empty working directory) and check it."""
    before = tree_state(corpus)
    with tempfile.TemporaryDirectory(prefix="fuzz-options-") as scratch:
        work = Path(scratch)
        argv = draw(seed, corpus, work)
        drain = _Drain(work / "fifo") if (work / "fifo").exists() else None
        env = {**os.environ, "PYTHONPATH": str(REPO), "SUBAGENT_CATALOG_CACHE": str(work / "cache")}
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "subagent_catalog", *argv],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=TIMEOUT_S,
                env=env,
                cwd=work,
                check=False,
            )
            code, stdout, stderr = done.returncode, done.stdout, done.stderr
            violations = exit_violations(code, stdout, stderr)
        except subprocess.TimeoutExpired:
            code, stderr, violations = None, "", [f"no end within {TIMEOUT_S:.0f} s"]
        finally:
            if drain is not None:
                drain.close()
        seconds = time.perf_counter() - started
    if tree_state(corpus) != before:
        violations.append("the corpus changed")
    return Result(seed, argv, code, round(seconds, 2), violations, stderr[-600:])


def main(argv: list[str] | None = None) -> int:
    """Run ``--cases`` seeded cases; print a summary; exit 1 on any violation."""
    parser = tier_parser("tests.fuzz.options", __doc__)
    args = parser.parse_args(argv)
    seeds = case_seeds(args)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-options-corpus-") as scratch:
        corpus = Path(scratch) / "corpus"
        make_corpus(corpus)
        results = [run_case(seed, corpus) for seed in seeds]
        shutil.rmtree(corpus)
    bad = [result for result in results if result.violations]
    summary = {
        "cases": len(results),
        "seconds": round(time.perf_counter() - started, 1),
        "exit_status": dict(Counter(str(result.code) for result in results)),
        "violations": [asdict(result) for result in bad],
    }
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "fuzz-options.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({key: value for key, value in summary.items() if key != "violations"}))
    for result in bad:
        print(f"seed {result.seed}: {result.violations}: {result.argv!r}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
