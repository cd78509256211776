"""Warm vs cold ``read_corpus`` + ``catalog``, and the main process's peak RSS per session (issue 17).

For each corpus size (default 5,000 and 20,000 sessions, seed 1, zstd), each in a fresh subprocess
(``benchmarks/_measure.py``), side by side in one run:

- cold:     ``read_corpus(cache=False)`` + ``catalog``;
- populate: the same with an empty cache directory (facts cache, frames cache and catalog written);
- warm:     the same again over the unchanged corpus (the frames cache answers).

Prints the wall times, the cold/warm ratio (read + catalog, and with the imports), and the main
process's peak RSS (``VmHWM`` from ``/proc/self/status`` of the measured child, not ``ru_maxrss``)
with its growth per session between the smallest and largest corpus, beside the growth of what the
call returns (the frames and the catalog's rows, ``estimated_size``): the floor under it.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/warm_cache.py [--sessions 5000,20000] [--jobs 2]
        [--root 20000=/path/to/existing/corpus ...] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run import _corpus, _measure  # noqa: E402


def _one(root: str, jobs: int) -> dict[str, Any]:
    base = ["read", root, "--compression", "zstd", "--jobs", str(jobs), "--catalog"]
    cache = tempfile.mkdtemp(prefix="warm-cache-")
    env = {**os.environ, "SUBAGENT_CATALOG_CACHE": cache}
    try:
        cold = _measure([*base, "--cache", "none"])
        populate = _measure([*base, "--cache", "library"], env)
        warm = _measure([*base, "--cache", "library"], env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {"cold": cold, "populate": populate, "warm": warm}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", default="5000,20000")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--root", action="append", default=[], help="N=PATH: an existing corpus of N sessions")
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    args = parser.parse_args(argv)
    given = dict(item.split("=", 1) for item in args.root)
    results: dict[int, dict[str, Any]] = {}
    for n in sorted(int(x) for x in args.sessions.split(",")):
        root = given.get(str(n)) or _corpus(args.out, n, args.seed, "zstd", args.jobs)[0]
        print(f"{n} sessions: cold, populate, warm ...", file=sys.stderr, flush=True)
        results[n] = _one(root, args.jobs)
    print("| sessions | run | read s | catalog s | read+catalog s | with imports s | main peak RSS MB |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n, res in results.items():
        for name in ("cold", "populate", "warm"):
            m = res[name]
            work = m["read_s"] + m["catalog_s"]
            rss = m["vmhwm_main_kb"] / 1024 if m.get("vmhwm_main_kb") else float("nan")
            print(
                f"| {n} | {name} | {m['read_s']:.2f} | {m['catalog_s']:.3f} | {work:.2f} | {m['total_s']:.2f} "
                f"| {rss:.0f} |"
            )
        cold, warm = res["cold"], res["warm"]
        ratio = (cold["read_s"] + cold["catalog_s"]) / (warm["read_s"] + warm["catalog_s"])
        print(f"| {n} | **cold / warm** | | | **{ratio:.1f}x** | {cold['total_s'] / warm['total_s']:.1f}x | |")
    sizes = sorted(results)
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        for name in ("cold", "warm"):
            a, b = results[small][name]["vmhwm_main_kb"], results[large][name]["vmhwm_main_kb"]
            if a and b:
                per = (b - a) * 1024 / (large - small)
                print(f"main-process peak RSS growth, {name}, {small} -> {large} sessions: {per / 1024:.2f} KB/session")
        # what the call returns and keeps: the frames and the catalog's rows (``estimated_size``: text
        # views and buffers shared between columns not counted), the floor under the peak's growth
        out = [results[n]["cold"].get("frames_mb", 0) + results[n]["cold"].get("catalog_mb", 0) for n in (small, large)]
        per = (out[1] - out[0]) * 2**20 / (large - small)
        print(f"growth of the frames + the catalog's rows, {small} -> {large} sessions: {per / 1024:.2f} KB/session")
    with open(os.path.join(args.out, "warm-cache.json"), "w", encoding="utf-8") as handle:
        json.dump({str(k): v for k, v in results.items()}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
