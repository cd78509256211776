"""Cold ``read_corpus`` + ``catalog`` against the two-process floors, side by side (never part of ``make test``).

The targets of issue 17: on 20,000 generated sessions (both encodings, cache
off, ``--jobs 2``), cold ``read_corpus`` + ``catalog`` at most 8x the
two-process ``zstd -dcq`` (``cat``) floor and at most 2x the two-process
decompress + ``orjson.loads``-every-line floor. Each round measures, each in a
fresh process and one after the other:

- floor-cli:    ``zstd -dcq`` (plain: ``cat``) of every log to /dev/null, 2 processes (``xargs -P``);
- floor-parse:  read + decompress + ``orjson.loads`` of every line in Python, 2 processes;
- cold read:    ``read_corpus(cache=False)`` + ``catalog`` per reader: ``typed`` (the default: typed
                fast path for healthy logs), ``packed`` (the ``orjson`` fast path for facts, as before
                the typed path), ``exact`` (``SUBAGENT_CATALOG_EXACT_READ=1``, the full path only).

A ratio is taken within a round (the read's wall time over the floor's of the
same round), and the table shows the median over rounds with the best and
worst beside it, wall and CPU seconds (process tree, from ``wait4``). On a
shared machine, rounds taken while other work runs are slower for every
measurement alike; the ratios are steadier than the seconds.

Usage:
    .venv/bin/python benchmarks/cold_read.py [--sessions 20000] [--rounds 3] [--jobs 2]
        [--encodings zstd,none] [--readers typed,packed,exact]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run import _corpus, _floor_cli, _measure  # noqa: E402 (the sibling benchmark's helpers)

READERS = ("typed", "packed", "exact")


def _cold(root: str, compression: str, jobs: int, reader: str) -> dict[str, Any]:
    env = {**os.environ, "SUBAGENT_CATALOG_CACHE": "off", "SUBAGENT_CATALOG_EXACT_READ": "0"}
    if reader == "exact":
        env["SUBAGENT_CATALOG_EXACT_READ"] = "1"
    args = ["read", root, "--compression", compression, "--jobs", str(jobs), "--catalog"]
    if reader == "packed":
        args += ["--fast-path", "packed"]
    result = _measure(args, env)
    result["read_catalog_s"] = result["read_s"] + result["catalog_s"]
    return result


def _round(root: str, compression: str, jobs: int, readers: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"floor_cli": _floor_cli(root, compression, jobs)}
    out["floor_parse"] = _measure(["floor-parse", root, "--compression", compression, "--jobs", str(jobs)])
    for reader in readers:
        out[reader] = _cold(root, compression, jobs, reader)
    out["load"] = os.getloadavg()[0]
    return out


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def _table(results: dict[str, list[dict[str, Any]]], readers: list[str]) -> list[str]:
    lines = [
        "| encoding | measurement | wall s | CPU s | vs floor-cli | vs floor-parse |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for compression, rounds in results.items():
        cli = "zstd -dcq" if compression == "zstd" else "cat"
        cli_wall = [r["floor_cli"]["wall_s"] for r in rounds]
        parse_wall = [r["floor_parse"]["total_s"] for r in rounds]
        lines.append(
            f"| {compression} | floor: `{cli}` of every log, 2 processes | {_summary(cli_wall)} | "
            f"{_summary([r['floor_cli']['cpu_s'] for r in rounds])} | | |"
        )
        lines.append(
            f"| {compression} | floor: read + decompress + `orjson` per line, 2 processes | {_summary(parse_wall)} | "
            f"{_summary([r['floor_parse']['cpu_s'] for r in rounds])} | | |"
        )
        for reader in readers:
            wall = [r[reader]["read_catalog_s"] for r in rounds]
            vs_cli = [w / c for w, c in zip(wall, cli_wall, strict=True)]
            vs_parse = [w / p for w, p in zip(wall, parse_wall, strict=True)]
            lines.append(
                f"| {compression} | cold `read_corpus` + `catalog`, {reader} | {_summary(wall)} | "
                f"{_summary([r[reader]['cpu_s'] for r in rounds])} | {_summary(vs_cli)}x | {_summary(vs_parse)}x |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--encodings", default="zstd,none")
    parser.add_argument("--readers", default="typed,packed,exact")
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    args = parser.parse_args(argv)
    readers = [r for r in args.readers.split(",") if r]
    if not set(readers) <= set(READERS):
        parser.error(f"readers are {', '.join(READERS)}")
    os.makedirs(args.out, exist_ok=True)
    roots = {c: _corpus(args.out, args.sessions, args.seed, c, args.jobs)[0] for c in args.encodings.split(",")}
    results: dict[str, list[dict[str, Any]]] = {c: [] for c in roots}
    for number in range(args.rounds):
        for compression, root in roots.items():
            print(f"round {number + 1}/{args.rounds}: {compression} ...", file=sys.stderr, flush=True)
            _floor_cli(root, compression, args.jobs)  # the page cache holds the corpus for every measurement
            results[compression].append(_round(root, compression, args.jobs, readers))
    loads = ", ".join(f"{r['load']:.1f}" for rounds in results.values() for r in rounds)
    head = (
        f"# {args.sessions} sessions, seed {args.seed}, jobs {args.jobs}, {args.rounds} rounds, "
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores; "
        f"1-minute load average after each round: {loads}"
    )
    table = "\n".join([head, "", *_table(results, readers)])
    print(table)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(args.out, f"cold-read-{args.sessions}-{stamp}.json"), "w", encoding="utf-8") as handle:
        json.dump({"args": vars(args), "results": results, "table": table}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
