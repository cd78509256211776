"""``compare`` over two archives: wall and CPU time, and the measuring process's peak RSS.

Two corpora of the ``small`` synthesis profile (seeds 1 and 2, zstd, ``--sessions`` each, default
20,000) are generated and exported once under ``--out``; then, each in a fresh process (this file with
``--measure``), ``compare(open_archive(a), open_archive(b))`` (``after``: the archives read through their
lazy tables) and ``compare(a.to_corpus(), b.to_corpus())`` (``before``: both archives collected whole
first), with ``--resamples`` bootstrap resamples. Reported: seconds (imports excluded), CPU seconds, the
process's own peak RSS (``VmHWM``) and the frames' sizes.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/compare_archives.py [--sessions 20000] [--out benchmarks/out]
        [--modes after,before] [--resamples 2000]
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
sys.path.insert(0, HERE)

from _measure import _vmhwm_kb  # noqa: E402 (the sibling benchmark's helper)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _prepare(out: str, sessions: int, seed: int) -> str:
    from subagent_catalog.store.export import export_archive
    from subagent_catalog.synth.generate import generate

    root = os.path.join(out, f"compare-small-{sessions}-s{seed}")
    archive = root + ".archive"
    if not os.path.isdir(root):
        generate(root, sessions=sessions, seed=seed, profile="small", jobs=2)
    if not os.path.isfile(os.path.join(archive, "manifest.json")):
        export_archive(root, archive, jobs=2)
    return archive


def _measure(a: str, b: str, mode: str, resamples: int) -> dict[str, Any]:
    from subagent_catalog.analysis.compare import compare
    from subagent_catalog.store.archive import open_archive

    started, cpu = time.perf_counter(), _cpu()
    left, right = open_archive(a), open_archive(b)
    sides: Any = (left, right) if mode == "after" else (left.to_corpus(), right.to_corpus())
    result = compare(*sides, resamples=resamples)
    return {
        "mode": mode,
        "seconds": round(time.perf_counter() - started, 2),
        "cpu_seconds": round(_cpu() - cpu, 2),
        "peak_rss_mb": round((_vmhwm_kb() or 0) / 1024, 1),
        "runs": result.runs,
        "trees": result.trees,
        "significant_rows": sum(frame.height for frame in result.significant().values()),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    parser.add_argument("--modes", default="after,before")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--measure", nargs=3, metavar=("A", "B", "MODE"))
    args = parser.parse_args()
    if args.measure:
        a, b, mode = args.measure
        print(json.dumps(_measure(a, b, mode, args.resamples)))
        return 0
    os.makedirs(args.out, exist_ok=True)
    archives = [_prepare(args.out, args.sessions, seed) for seed in (1, 2)]
    for mode in args.modes.split(","):
        command = [sys.executable, __file__, "--resamples", str(args.resamples), "--measure", *archives, mode]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        print(json.dumps({"sessions": args.sessions, **json.loads(done.stdout.strip().splitlines()[-1])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
