"""Time ``search_events`` over a 20,000-session archive and over a 2,000-session raw corpus.

Usage:
    .venv/bin/python benchmarks/search_events.py [--sessions 20000] [--raw-sessions 2000] [--seed 1]
        [--jobs 1] [--repeats 2]

The corpora are the synthetic ones ``benchmarks/run.py`` uses (generated
with ``subagent_catalog.synth.generate``, zstd, under ``benchmarks/out/``,
reused when present): ``--sessions`` logs of the realistic size mix
(6.8 M events for 20,000 sessions of seed 1). The large one is exported with
``events=True`` into ``benchmarks/out/archive-synth-N-sS-zstd`` (an
unchanged re-run re-reads no log) and searched there; the raw-corpus
searches read a separately generated ``--raw-sessions`` corpus of the same
seed, log by log, as ``search_events(read_corpus(root), ...)`` does.

Each query is timed ``--repeats`` times in this process (the best wall and
CPU time are printed, with the number of rows); the page cache is warm after
the first repeat. Never part of ``make test``.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))

QUERIES: list[tuple[str, str, dict[str, Any]]] = [
    ("absent literal", "xylophone", {}),
    ("rare literal", "CONTEXT_LENGTH_EXCEEDED", {}),
    ("common literal", "timeout", {}),
    ("common literal, limit=20", "timeout", {"limit": 20}),
    ("common literal, ignore_case", "TIMEOUT", {"ignore_case": True}),
    ("regex", r"queue depth 18\d\d", {"regex": True}),
]


def _timed(call: Any, repeats: int) -> tuple[float, float, Any]:
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = call()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), result


def _archive(root: str, out: str, jobs: int) -> tuple[str, float]:
    from subagent_catalog.store.export import export_archive

    target = os.path.join(out, "archive-" + os.path.basename(root))
    started = time.perf_counter()
    print(f"exporting {root} with events into {target} ...", file=sys.stderr, flush=True)
    export_archive(root, target, events=True, jobs=jobs)
    return target, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--raw-sessions", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    args = parser.parse_args(argv)
    os.environ["SUBAGENT_CATALOG_CACHE"] = "off"
    sys.path.insert(0, HERE)
    from run import _corpus

    from subagent_catalog import read_corpus, search_events
    from subagent_catalog.store.archive import open_archive

    root, stats = _corpus(args.out, args.sessions, args.seed, "zstd", args.jobs)
    target, export_s = _archive(root, args.out, args.jobs)
    archive = open_archive(target)
    files = archive.manifest["tables"]["events"]["files"]
    size = sum(os.path.getsize(os.path.join(target, name)) for name in files)
    lines = [
        f"search_events, {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores, best of {args.repeats}",
        f"archive: {args.sessions} sessions (seed {args.seed}), {archive.manifest['row_counts']['events']:,} events "
        f"in {len(files)} Parquet files, {size / 2**20:.0f} MiB (export or reuse: {export_s:.1f} s)",
        "",
        "| source | query | pattern | wall s | CPU s | rows | events |",
        "|---|---|---|---:|---:|---:|---:|",
    ]

    def row(source: str, name: str, pattern: str, wall: float, cpu: float, found: Any) -> None:
        events = found.select("session_id", "seq").n_unique() if found.height else 0
        lines.append(f"| {source} | {name} | `{pattern}` | {wall:.2f} | {cpu:.2f} | {found.height:,} | {events:,} |")
        print(lines[-1], file=sys.stderr, flush=True)

    for name, pattern, options in QUERIES:
        wall, cpu, found = _timed(lambda p=pattern, o=options: search_events(archive, p, **o), args.repeats)
        row(f"archive, {args.sessions:,}", name, pattern, wall, cpu, found)

    raw_root, raw_stats = _corpus(args.out, args.raw_sessions, args.seed, "zstd", args.jobs)
    read_wall, _, corpus = _timed(lambda: read_corpus(raw_root, jobs=args.jobs, cache=False), 1)
    for name, pattern, options in QUERIES:
        wall, cpu, found = _timed(lambda p=pattern, o=options: search_events(corpus, p, **o), args.repeats)
        row(f"raw corpus, {args.raw_sessions:,}", name, pattern, wall, cpu, found)
    lines.append("")
    lines.append(
        f"raw corpus: {args.raw_sessions} sessions (seed {args.seed}), {raw_stats['events']:,} events, "
        f"read_corpus {read_wall:.1f} s (not included above); peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )
    del stats
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
