"""Benchmarks of the reader over synthetic corpora (``make bench``; never part of ``make test``).

Generates (or reuses) synthetic corpora under benchmarks/out/ with
``subagent_catalog.synth.generate`` and measures, each in a fresh subprocess:

- floor-cli:    ``zstd -dc`` (or ``cat``) of every log to /dev/null, ``--jobs`` processes;
- floor-read:   read + decompress every log in Python (python-zstandard), ``--jobs`` processes;
- floor-parse:  the same + ``orjson.loads`` of every line (no rules);
- cold:         ``read_corpus`` + ``catalog`` in a new process without a facts cache;
- events:       ``read_corpus(events=True)`` (events frame), on ``--events-sessions`` sessions;
- warm:         a second read with the facts cache (``read_corpus(cache=True)``), and,
                for reference, a second read without any cache.

Wall times depend on what else runs on the machine; CPU seconds (user + sys of
the process and its workers, from ``wait4``) are reported beside them.

Usage:
    .venv/bin/python benchmarks/run.py [--sessions 20000 | --quick] [--jobs 2] [--encodings zstd,none]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
MEASURE = os.path.join(HERE, "_measure.py")


def _corpus(out: str, sessions: int, seed: int, compression: str, jobs: int) -> tuple[str, dict[str, Any]]:
    """A synthetic corpus (reused when a finished one exists)."""
    from subagent_catalog.synth.generate import generate

    root = os.path.join(out, f"synth-{sessions}-s{seed}-{compression}")
    marker = root + ".json"
    if os.path.exists(marker) and os.path.isdir(root):
        with open(marker, encoding="utf-8") as handle:
            return root, json.load(handle)
    if os.path.exists(root):  # an interrupted generation of ours
        shutil.rmtree(root)
    print(f"generating {sessions} sessions ({compression}) in {root} ...", file=sys.stderr, flush=True)
    stats = generate(root, sessions=sessions, seed=seed, compression=compression, jobs=jobs).to_json()  # type: ignore[arg-type]
    stats["damaged"] = len(stats["damaged"])
    with open(marker, "w", encoding="utf-8") as handle:
        json.dump(stats, handle)
    return root, stats


def _wait(proc: subprocess.Popen[bytes]) -> tuple[bytes, float, int]:
    """Stdout, CPU seconds (process tree) and peak RSS (largest process) of a child."""
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
    return out, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def _measure(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, MEASURE, *args], stdout=subprocess.PIPE, env=env)
    out, cpu, rss = _wait(proc)
    result: dict[str, Any] = json.loads(out)
    result["wall_s"] = time.perf_counter() - started
    result["cpu_s"] = cpu
    result["rss_tree_max_kb"] = rss
    return result


def _log_files(root: str, compression: str) -> list[str]:
    name = "session.jsonl.zstd" if compression == "zstd" else "session.jsonl"
    return sorted(os.path.join(d, name) for d, _, files in os.walk(root) if name in files)


def _floor_cli(root: str, compression: str, jobs: int) -> dict[str, Any]:
    """``zstd -dc`` / ``cat`` of all logs to /dev/null in ``jobs`` parallel processes."""
    files = _log_files(root, compression)
    if compression == "zstd":
        if shutil.which("zstd") is None:
            return {"skipped": "zstd not installed (apt-get install zstd)"}
        command = ["xargs", "-0", "-P", str(jobs), "-n", "256", "zstd", "-dcq"]
    else:
        command = ["xargs", "-0", "-P", str(jobs), "-n", "256", "cat"]
    best: dict[str, Any] = {}
    for _ in range(2):
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert proc.stdin is not None
        proc.stdin.write(b"\0".join(os.fsencode(f) for f in files))
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        if not best or wall < best["wall_s"]:
            best = {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_tree_max_kb": usage.ru_maxrss}
    best["files"] = len(files)
    return best


def _bench_encoding(args: argparse.Namespace, compression: str) -> dict[str, Any]:
    root, stats = _corpus(args.out, args.sessions, args.seed, compression, args.jobs)
    jobs = ["--jobs", str(args.jobs)]
    base = [root, "--compression", compression, *jobs]
    res: dict[str, Any] = {"corpus": stats, "root": root}
    print(f"[{compression}] floors ...", file=sys.stderr, flush=True)
    _floor_cli(root, compression, args.jobs)  # warm the page cache for everything below
    res["floor_cli"] = _floor_cli(root, compression, args.jobs)
    res["floor_read"] = _measure(["floor-read", *base])
    res["floor_parse"] = _measure(["floor-parse", *base])
    print(f"[{compression}] cold read_corpus + catalog ...", file=sys.stderr, flush=True)
    res["cold"] = _measure(["read", *base, "--catalog"])
    if args.events_sessions:
        events_root, _ = _corpus(args.out, args.events_sessions, args.seed, compression, args.jobs)
        print(
            f"[{compression}] read_corpus(events=True) on {args.events_sessions} sessions ...",
            file=sys.stderr,
            flush=True,
        )
        res["events"] = _measure(["read", events_root, "--compression", compression, *jobs, "--events"])
        res["events"]["sessions"] = args.events_sessions
        if args.events_sessions != args.sessions:
            res["events_cold_same_corpus"] = _measure(["read", events_root, "--compression", compression, *jobs])
    cache_dir = os.path.join(args.out, "cache")
    env = {**os.environ, "SUBAGENT_CATALOG_CACHE": cache_dir}
    how = "library"
    from subagent_catalog.store.cache import cache_file

    with_cache = cache_file(root, compression, directory=cache_dir)  # type: ignore[arg-type]
    if os.path.exists(with_cache):
        os.unlink(with_cache)
    print(f"[{compression}] cache ({how}): populate, then warm ...", file=sys.stderr, flush=True)
    res["cache_mode"] = how
    res["populate"] = _measure(["read", *base, "--catalog", "--cache", how], env)
    res["warm"] = _measure(["read", *base, "--catalog", "--cache", how], env)
    res["warm"]["cache_file_bytes"] = os.path.getsize(with_cache) if os.path.exists(with_cache) else None
    res["rerun_no_cache"] = _measure(["read", *base, "--catalog"])
    return res


def _mb(kb: int | None) -> str:
    return "-" if kb is None else f"{kb / 1024:.0f}"


class _Rows:
    """Markdown table rows of one encoding, with ratios against its floors."""

    def __init__(self, lines: list[str], compression: str, floor_cli: float | None, floor_parse: float) -> None:
        self.lines = lines
        self.compression = compression
        self.floor_cli = floor_cli
        self.floor_parse = floor_parse

    def add(self, name: str, m: dict[str, Any], wall: float, *, ratios: bool = True, phase: bool = False) -> None:
        """One row; a ``phase`` (part of a process) shows no process-wide CPU or RSS."""
        vs_cli = f"{wall / self.floor_cli:.1f}x" if ratios and self.floor_cli else "-"
        vs_parse = f"{wall / self.floor_parse:.1f}x" if ratios else "-"
        usage = (
            " | | |"
            if phase
            else (f" {m.get('cpu_s', 0):.1f} | {_mb(m.get('rss_main_kb'))} | {_mb(m.get('rss_workers_kb'))} |")
        )
        self.lines.append(f"| {self.compression} | {name} | {wall:.2f} |{usage} {vs_cli} | {vs_parse} |")


def _table(results: dict[str, Any], args: argparse.Namespace) -> str:
    head = [
        f"# {args.sessions} sessions, seed {args.seed}, jobs {args.jobs}, {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} cores"
    ]
    lines = [
        "",
        "| encoding | measurement | wall s | CPU s | main RSS MB | worker RSS MB | vs floor-cli | vs floor-parse |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for compression, res in results.items():
        corpus = res["corpus"]
        head.append(
            f"# {compression}: {corpus['sessions']} logs, {corpus['events']:,} events, "
            f"{corpus['bytes'] / 2**20:,.0f} MiB on disk, largest log {corpus['largest_events']:,} events"
        )
        rows = _Rows(lines, compression, res["floor_cli"].get("wall_s"), res["floor_parse"]["total_s"])
        fc = res["floor_cli"]
        if "wall_s" in fc:
            rows.add(
                "floor-cli (zstd -dc / cat)", {**fc, "rss_main_kb": fc["rss_tree_max_kb"]}, fc["wall_s"], ratios=False
            )
        rows.add(
            "floor-read (python read + zstd, no parse)", res["floor_read"], res["floor_read"]["total_s"], ratios=False
        )
        rows.add("floor-parse (+ orjson per line)", res["floor_parse"], res["floor_parse"]["total_s"], ratios=False)
        cold = res["cold"]
        rows.add("cold read_corpus", cold, cold["read_s"])
        rows.add("cold catalog()", cold, cold["catalog_s"], ratios=False, phase=True)
        if "events" in res:
            ev = res["events"]
            label = f"read_corpus(events=True) [{ev['sessions']} sessions, {ev['events']:,} events]"
            rows.add(label, ev, ev["read_s"], ratios=ev["sessions"] == args.sessions)
            same = res.get("events_cold_same_corpus")
            if same is not None:
                rows.add(f"same {ev['sessions']} sessions without events", same, same["read_s"], ratios=False)
        rows.add(f"cache populate ({res['cache_mode']})", res["populate"], res["populate"]["read_s"])
        warm = res["warm"]
        rows.add(f"warm read ({res['cache_mode']} cache)", warm, warm["read_s"])
        rows.add("warm catalog()", warm, warm["catalog_s"], ratios=False, phase=True)
        rows.add("re-run without cache", res["rerun_no_cache"], res["rerun_no_cache"]["read_s"])
        speed = cold["read_s"] / warm["read_s"] if warm["read_s"] else float("inf")
        whole = cold["total_s"] / warm["total_s"] if warm["total_s"] else float("inf")
        lines.append(
            f"| {compression} | warm speed-up: read {speed:.0f}x, import+read+catalog {whole:.0f}x | | | | | | |"
        )
    return "\n".join(head + lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="2,000 sessions")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--encodings", default="zstd,none")
    parser.add_argument(
        "--events-sessions",
        type=int,
        default=None,
        help="corpus size for the events-frame measurement (default: min(sessions, 2000); 0 skips it; "
        "the events frame holds every payload in memory, about 1.5 GB per 1,000,000 events at peak)",
    )
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    args = parser.parse_args(argv)
    if args.quick:
        args.sessions = 2_000
    if args.events_sessions is None:
        args.events_sessions = min(args.sessions, 2_000)
    os.makedirs(args.out, exist_ok=True)
    results = {}
    for compression in args.encodings.split(","):
        results[compression] = _bench_encoding(args, compression)
    table = _table(results, args)
    print(table)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with open(os.path.join(args.out, f"results-{args.sessions}-{stamp}.json"), "w", encoding="utf-8") as handle:
        json.dump({"args": vars(args), "results": results, "table": table}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
