"""Run every corpus-reading command over a corpus root and over its archive; list where the outputs differ.

``command_runs`` builds the invocations for one corpus (ids and parents picked from the corpus
itself); ``run_all`` runs them in-process (``CliRunner``) over one input and returns, per
invocation, its exit status, stdout, stderr and the output file's bytes, normalised:

* the archive's location is written as the corpus root (the notes that say "archive" are dropped);
* ``report``: the generation time is blanked (its data sections must be equal byte for byte);
* nothing else is touched: any other difference is a difference.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus

GENERATED = re.compile(r"(generated|Generated)( at)? [0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9:.]+( ?UTC|Z)?")
"""The report's generation time (the only timestamp that is not data)."""


@dataclass(frozen=True)
class Run:
    """One invocation: its name, its arguments (``{root}``, ``{out}``, ``{baseline}`` filled in per input)."""

    name: str
    args: tuple[str, ...]
    output: str | None = None  # the -o file's suffix, when the command writes one


def command_runs(root: Path, compression: str) -> list[Run]:
    """The invocations over one corpus: every command, with parents and ids taken from the corpus."""
    corpus = read_corpus(root, compression=compression, cache=False)  # type: ignore[arg-type]
    sessions = corpus.sessions.sort("list_order")
    ids = [i for i in sessions["session_id"].to_list() if isinstance(i, str)]
    parents = [p for p in sessions["parent_session"].drop_nulls().unique(maintain_order=True).to_list()]
    picked = list(dict.fromkeys([*parents[:1], *ids[:1], "no-such-session"]))
    shown = ids[:1]
    c = ("--compression", compression)
    # otel of a large corpus exports one root run's trace (every run's costs seconds a side)
    roots = sessions.filter(sessions["parent_session"].is_null())["session_id"].drop_nulls().to_list()
    otel_scope = ("--session", roots[0]) if sessions.height > LARGE and roots else ()
    runs = [
        Run("summary", ("summary", "{root}", *c, "-q")),
        Run("report", ("report", "{root}", *c, "-q", "-o", "{out}"), ".html"),
        Run("check", ("check", "{root}", *c, "-q", "--format", "json", "--fail-on", "all")),
        Run(
            "check-gate",  # thresholds and a baseline together, in the trace semantics
            (
                *("check", "{root}", *c, "-q", "--max", "corrupt=1", "--max-rate", "unavailable=0.5"),
                *("--baseline", "{baseline}", "--format", "markdown", "--limit", "0", "--since", "2020-01-01"),
            ),
        ),
        Run("conformance", ("conformance", "{root}", *c, "--all-parents", "--semantics", "trace")),
        Run("search", ("search", "{root}", *c, "-q", "e", "--format", "json", "--limit", "300")),
        Run("sql-catalog", ("sql", "{root}", *c, "-q", "select * from catalog", "--format", "json")),
        Run("sql-events", ("sql", "{root}", *c, "-q", "select type, count(*) n from events group by all order by 1")),
        Run("otel", ("otel", "{root}", *c, "-q", "-o", "{out}", *otel_scope), ".jsonl"),
    ]
    runs += [Run(f"runs-{t}", ("runs", "{root}", *c, "-q", "--table", t, "--format", "json")) for t in RUN_TABLES]
    for parent in picked:
        runs.append(Run(f"list-{parent}", ("list", "{root}", *c, "-q", "--", parent)))
    descendants = ("list", "{root}", *c, "-q", "--scope", "descendants", "-f", "csv", "--semantics", "trace")
    runs.append(Run(f"list-csv-{picked[0]}", (*descendants, "--", picked[0])))
    for session in [*shown, "no-such-session"]:
        runs.append(Run(f"show-md-{session}", ("show", "{root}", *c, "-q", "--", session)))
    for session in shown:
        runs.append(Run(f"show-html-{session}", ("show", "{root}", *c, "-q", "-o", "{out}", "--", session), ".html"))
    return runs


LARGE = 100
"""Sessions past which ``otel`` exports one root run only."""

RUN_TABLES = ("outcomes", "models", "tools", "trees", "sessions")
"""The ``runs`` command's tables."""


def _baseline(root: str, compression: str, where: Path) -> Path:
    """An earlier ``check --format json`` of the raw corpus (both inputs are judged against the same file)."""
    path = where / "baseline.json"
    if not path.exists():
        result = CliRunner().invoke(main, ["check", root, "--compression", compression, "-q", "--format", "json"])
        data = json.loads(result.stdout) if result.stdout.strip() else {}
        path.write_text(json.dumps(data) if data.get("checks") else json.dumps({}), encoding="utf-8")
    return path


def run_all(
    runs: list[Run], location: str, *, corpus_root: str, work: Path, baseline: Path, extra: tuple[str, ...] = ()
) -> dict[str, tuple[Any, ...]]:
    """Every run over one input (a corpus root, or an archive with ``extra`` options), normalised."""
    results: dict[str, tuple[Any, ...]] = {}
    runner = CliRunner()
    for number, run in enumerate(runs):
        out = work / f"out-{number}{run.output or ''}"
        args = [a.format(root=location, out=out, baseline=baseline) for a in run.args]
        result = runner.invoke(main, [args[0], *extra, *args[1:]])  # options before any "--"
        data = out.read_bytes() if run.output and out.exists() else None
        if data is not None:
            out.unlink()
            text = data.decode("utf-8", "replace").replace(location, corpus_root)
            data = GENERATED.sub("generated <time>", text) if run.output == ".html" else text
        stderr = "\n".join(
            line for line in result.stderr.replace(location, corpus_root).splitlines() if " the archive " not in line
        )
        internal = "internal error" in result.stderr
        results[run.name] = (result.exit_code, result.stdout.replace(location, corpus_root), stderr, data, internal)
    return results


def differences(raw: dict[str, tuple[Any, ...]], archived: dict[str, tuple[Any, ...]]) -> list[str]:
    """The runs whose normalised results differ (and any internal error on either side)."""
    found = []
    for name, left in raw.items():
        right = archived[name]
        if left[4] or right[4]:
            found.append(f"{name}: internal error: {left[2] or right[2]}")
        elif left[:4] != right[:4]:
            parts = ("exit status", "stdout", "stderr", "output file")
            which = [parts[i] for i in range(4) if left[i] != right[i]]
            first = next(i for i in range(4) if left[i] != right[i])
            a, b = str(left[first]), str(right[first])
            at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            near = f"{a[max(0, at - 80) : at + 80]!r} / {b[max(0, at - 80) : at + 80]!r}"
            found.append(f"{name}: {', '.join(which)} differ near {near}")
    return found


def baseline_for(root: str, compression: str, where: Path) -> Path:
    """The shared baseline file of one corpus (see ``_baseline``)."""
    return _baseline(root, compression, where)
