"""The reader's fast path against the full path, on one generated corpus (never part of ``make test``).

Measures, each path in a fresh subprocess (``SUBAGENT_CATALOG_EXACT_READ=1`` for the full path):

- facts:      ``analyse_log`` of every log, bytes already in memory (CPU seconds, one process);
- read:       cold ``read_corpus(cache=False)`` + ``catalog`` (wall and CPU seconds, ``--jobs`` processes);

and prints the share of logs the fast path answers. Wall times depend on what else runs on the
machine; CPU seconds are the steadier figures.

Usage:
    .venv/bin/python benchmarks/fast_path.py [--sessions 2000] [--seed 1] [--compression zstd|none]
        [--jobs 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _logs(root: str) -> list[tuple[bytes, str]]:
    found = []
    for directory, _, names in os.walk(root):
        for name in sorted(names):
            if name in ("session.jsonl", "session.jsonl.zstd"):
                with open(os.path.join(directory, name), "rb") as handle:
                    found.append((handle.read(), "zstd" if name.endswith(".zstd") else "none"))
    return found


def _child(mode: str, root: str, jobs: int) -> dict[str, Any]:
    """Run in the subprocess: one measurement, as JSON."""
    if mode == "facts":
        from subagent_catalog.read.logread import analyse_log, analyse_log_fast

        logs = _logs(root)
        started = time.process_time()
        for data, compression in logs:
            analyse_log(data, compression)  # type: ignore[arg-type]
        cpu = time.process_time() - started
        fast = sum(analyse_log_fast(data, compression) is not None for data, compression in logs)  # type: ignore[arg-type]
        return {"cpu_s": cpu, "logs": len(logs), "fast": fast}
    from subagent_catalog.catalog.tables import catalog
    from subagent_catalog.corpus import read_corpus

    started, cpu0 = time.perf_counter(), time.process_time()
    corpus = read_corpus(root, cache=False, jobs=jobs)
    catalog(corpus)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - cpu0 + children.ru_utime + children.ru_stime
    return {"wall_s": time.perf_counter() - started, "cpu_s": cpu, "sessions": corpus.sessions.height}


def _measure(mode: str, root: str, jobs: int, exact: bool) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")])}
    env["SUBAGENT_CATALOG_EXACT_READ"] = "1" if exact else "0"
    command = [sys.executable, __file__, "--child", mode, "--root", root, "--jobs", str(jobs)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compression", default="zstd", choices=["zstd", "none"])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs per path")
    parser.add_argument("--child", choices=["facts", "read"], help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.root, args.jobs)))
        return 0
    root = os.path.join(HERE, "out", f"fast-{args.compression}-{args.sessions}-{args.seed}")
    if not os.path.isdir(root):
        from subagent_catalog.synth.generate import generate

        generate(root, sessions=args.sessions, seed=args.seed, compression=args.compression, jobs=args.jobs)
    print(f"# {root}: {args.sessions} sessions, seed {args.seed}, {args.compression}, jobs={args.jobs}")
    for mode in ("facts", "read"):
        best: dict[bool, dict[str, Any]] = {}
        for _ in range(args.repeat):
            for exact in (True, False):
                result = _measure(mode, root, args.jobs, exact)
                if exact not in best or result["cpu_s"] < best[exact]["cpu_s"]:
                    best[exact] = result
        full, fast = best[True], best[False]
        line = f"{mode}: full path {full['cpu_s']:.2f} CPU s, fast path {fast['cpu_s']:.2f} CPU s"
        line += f" ({full['cpu_s'] / fast['cpu_s']:.2f}x)"
        if mode == "read":
            line += f"; wall {full['wall_s']:.2f} s vs {fast['wall_s']:.2f} s"
        else:
            line += f"; {fast['fast']} of {fast['logs']} logs on the fast path"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
