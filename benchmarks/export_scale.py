"""Export at scale: the client's peak memory and time, 20k to 500k sessions, local engine and Dask.

For each size (default 20,000, 100,000 and 500,000 sessions of the ``small``
synthesis profile, seed 1, zstd; generated once under ``--out`` and shared
with ``benchmarks/catalog_archive.py``), each measurement runs in a fresh
process (this file with ``--measure``), one after the other:

- ``local``:       ``export_archive(root, new_dir, jobs=2)`` (a local process pool)
- ``dask``:        ``export_archive(root, new_dir, engine="dask", jobs=2)`` (a two-process ``LocalCluster``)
- ``reexport``:    the local export again into the archive it wrote (nothing changed: no log read)

Reported: wall seconds, the client process's CPU seconds and its own peak RSS
(``VmHWM`` from ``/proc/self/status``: the workers' memory is theirs, not the
client's), the workers' CPU seconds where the OS reports them (reaped local
pool processes), and the manifest's task counts.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/export_scale.py [--sessions 20000,100000,500000]
        [--modes local,dask,reexport] [--out benchmarks/out] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _measure import _vmhwm_kb  # noqa: E402 (the sibling benchmark's helper)

MODES = ["local", "dask", "reexport"]


def _vmhwm_mb() -> float | None:
    kb = _vmhwm_kb()
    return None if kb is None else round(kb / 1024, 1)


def _corpus(out: str, sessions: int, seed: int, jobs: int) -> str:
    """A small-profile corpus (reused when a finished one exists)."""
    from subagent_catalog.synth.generate import generate

    root = os.path.join(out, f"small-{sessions}-s{seed}")
    marker = os.path.join(out, f"small-{sessions}-s{seed}.generated")
    if not os.path.isfile(marker):
        if os.path.exists(root):
            shutil.rmtree(root)
        print(f"generating {sessions} small sessions in {root} ...", file=sys.stderr, flush=True)
        generate(root, sessions=sessions, seed=seed, compression="zstd", jobs=jobs, profile="small")
        with open(marker, "w", encoding="utf-8") as handle:
            handle.write("done\n")
    return root


def _measure(mode: str, root: str, target: str, jobs: int) -> dict[str, Any]:
    from subagent_catalog.store.export import export_archive

    started, cpu = time.perf_counter(), time.process_time()
    if mode == "dask":
        manifest = export_archive(root, target, engine="dask", jobs=jobs)
    else:
        manifest = export_archive(root, target, jobs=jobs)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "wall_s": round(time.perf_counter() - started, 2),
        "client_cpu_s": round(time.process_time() - cpu, 2),
        "worker_cpu_s": round(children.ru_utime + children.ru_stime, 2) if mode != "dask" else None,
        "client_peak_mb": _vmhwm_mb(),
        "files": manifest["row_counts"]["files"],
        "files_read": manifest["update"]["files_read"],
        "walk_tasks": manifest["engine"].get("walk_tasks"),
        "read_tasks": manifest["engine"].get("read_tasks"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", default="20000,100000,500000")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--measure", nargs=3, metavar=("MODE", "ROOT", "TARGET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        mode, root, target = args.measure
        print(json.dumps(_measure(mode, root, target, args.jobs)))
        return
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for sessions in [int(n) for n in args.sessions.split(",")]:
        root = _corpus(args.out, sessions, args.seed, args.jobs)
        archive = os.path.join(args.out, f"export-{sessions}")
        for mode in args.modes.split(","):
            target = archive + ("-dask" if mode == "dask" else "")
            if mode != "reexport" and os.path.exists(target):
                shutil.rmtree(target)
            command = [sys.executable, __file__, "--jobs", str(args.jobs), "--measure", mode, root, target]
            done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": "."})
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"{mode} at {sessions} failed")
            row = {"sessions": sessions, "mode": mode, **json.loads(done.stdout.strip().splitlines()[-1])}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n| sessions | run | wall s | client CPU s | worker CPU s | client peak RSS MB | read tasks |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for row in rows:
        workers = "" if row["worker_cpu_s"] is None else row["worker_cpu_s"]
        print(
            f"| {row['sessions']:,} | {row['mode']} | {row['wall_s']} | {row['client_cpu_s']} | {workers} | "
            f"{row['client_peak_mb']} | {row['read_tasks']} |"
        )


if __name__ == "__main__":
    main()
