"""The catalog over an archive, before (``to_corpus``: every table collected) and after (out of core).

For each size (default 20,000, 100,000 and 500,000 sessions of the ``small`` synthesis profile,
seed 1, zstd), the corpus is generated once (shared with ``benchmarks/export_scale.py``) and
exported once (``export_archive(root, out, jobs=2)``),
then each measurement runs in a fresh process (this file with ``--measure``), one after the other:

- ``catalog``:            ``catalog(archive)``
- ``catalog_descendants``: ``catalog_descendants(archive)``
- ``children-hub``:       ``list_children(archive, hub)`` for the parent with the most children
- ``children-leaf``:      ``list_children(archive, leaf)`` for a subagent with no children
- ``agents-text``:        ``list_agents_text(archive, hub)``

each ``before`` (``catalog(archive.to_corpus())``...) and ``after`` (``catalog(archive)``...).
Reported: wall and CPU seconds of the call (opening the archive included, imports excluded),
the measured process's own peak RSS (``VmHWM`` from ``/proc/self/status``) and the rows.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/catalog_archive.py [--sessions 20000,100000,500000]
        [--out benchmarks/out] [--calls catalog,children-hub,...] [--modes before,after]
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

CALLS = ["catalog", "catalog_descendants", "children-hub", "children-leaf", "agents-text"]


def _vmhwm_mb() -> float | None:
    kb = _vmhwm_kb()
    return None if kb is None else round(kb / 1024, 1)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _prepare(out: str, sessions: int, seed: int, jobs: int) -> tuple[str, str, dict[str, Any]]:
    """The corpus (``export_scale.py``'s, generated once) and its archive (exported once)."""
    from export_scale import _corpus

    from subagent_catalog.store.export import export_archive

    root = _corpus(out, sessions, seed, jobs)
    archive = root + ".archive"
    facts = os.path.join(out, f"small-{sessions}-s{seed}.json")
    if not os.path.isfile(facts):
        started = time.perf_counter()
        manifest = export_archive(root, archive, jobs=jobs)
        info = {
            "export_s": round(time.perf_counter() - started, 1),
            "files": manifest["row_counts"]["files"],
            "read_tasks": manifest["engine"]["read_tasks"],
        }
        with open(facts, "w", encoding="utf-8") as handle:
            json.dump(info, handle)
    with open(facts, encoding="utf-8") as handle:
        return root, archive, json.load(handle)


def _pick_parents(archive_path: str) -> tuple[str, str]:
    """The parent with the most subagent children and a subagent without children."""
    import polars as pl

    from subagent_catalog.store.archive import open_archive

    sessions = open_archive(archive_path).scan("sessions").filter(pl.col("listed"))
    subagents = sessions.filter(pl.col("origin") == "subagent")
    hub = (
        subagents.group_by("parent_session")
        .len()
        .sort(["len", "parent_session"], descending=[True, False])
        .first()
        .collect()["parent_session"][0]
    )
    parents = subagents.select("parent_session").unique().collect()["parent_session"]
    leaf = (
        subagents.filter(~pl.col("session_id").is_in(parents.implode()))
        .sort("list_order")
        .first()
        .collect()["session_id"][0]
    )
    return hub, leaf


def _measure(archive_path: str, call: str, mode: str, hub: str, leaf: str) -> dict[str, Any]:
    """One call in this (fresh) process."""
    from subagent_catalog import catalog, catalog_descendants, list_agents_text, list_children
    from subagent_catalog.store.archive import open_archive

    started, cpu = time.perf_counter(), _cpu()
    archive = open_archive(archive_path)
    source: Any = archive.to_corpus() if mode == "before" else archive
    result: Any
    if call == "catalog":
        result = catalog(source)
    elif call == "catalog_descendants":
        result = catalog_descendants(source)
    elif call == "children-hub":
        result = list_children(source, hub)
    elif call == "children-leaf":
        result = list_children(source, leaf)
    else:
        result = list_agents_text(source, hub)
    rows = result.height if hasattr(result, "height") else result.count("\n") + 1
    return {
        "wall_s": round(time.perf_counter() - started, 3),
        "cpu_s": round(_cpu() - cpu, 3),
        "vmhwm_mb": _vmhwm_mb(),
        "rows": rows,
    }


def _fresh(archive_path: str, call: str, mode: str, hub: str, leaf: str) -> dict[str, Any]:
    command = [sys.executable, __file__, "--measure", archive_path, call, mode, hub, leaf]
    env = {**os.environ, "PYTHONPATH": os.path.dirname(HERE)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--measure":
        print(json.dumps(_measure(*sys.argv[2:7])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", default="20000,100000,500000")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    parser.add_argument("--calls", default=",".join(CALLS))
    parser.add_argument("--modes", default="before,after")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    report: dict[str, Any] = {}
    for sessions in sorted(int(n) for n in args.sessions.split(",")):
        print(f"{sessions} sessions: generate and export (once) ...", file=sys.stderr, flush=True)
        _root, archive, info = _prepare(args.out, sessions, args.seed, args.jobs)
        hub, leaf = _pick_parents(archive)
        entry: dict[str, Any] = {"corpus": info, "hub": hub, "leaf": leaf}
        for call in args.calls.split(","):
            for mode in args.modes.split(","):
                entry[f"{call}/{mode}"] = measured = _fresh(archive, call, mode, hub, leaf)
                print(f"  {call:20} {mode:6} {measured}", file=sys.stderr, flush=True)
        report[str(sessions)] = entry
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
