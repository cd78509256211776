"""Peak memory of ``otel -o`` over ONE run tree of N subagents (issue 42, item 11), in a fresh process.

Generates (once, reused from ``--out``) a corpus holding a single root run, ``hub``, with N subagents:
all started by the root's log (a star: N tool calls, each returning ``started subagent c<i>``), or,
with ``--fanout F``, a tree where each log starts at most F children (breadth first). Each child log
is about 1.5 KB (plain JSON lines: a turn with a prompt, a descriptor, a tool round, and a tool call
per child it starts). Then runs ``subagent-catalog otel ROOT -o spans.jsonl -q`` in a child
interpreter per N and prints its wall time, its own peak RSS (``VmHWM``), its reading workers' peak,
the spans and lines written and the largest line.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/otel_tree_memory.py --children 2000 20000 [--fanout 400] [--jobs 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

CHILD = r"""
import os, resource, runpy, sys, atexit
def _rss():
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(os.environ["BENCH_RSS_FILE"], "w") as handle:
        handle.write(f"{peak} {workers}")
atexit.register(_rss)
sys.argv = ["subagent-catalog", *sys.argv[1:]]
runpy.run_module("subagent_catalog", run_name="__main__")
"""


def _parent_of(index: int, fanout: int | None) -> str:
    """The parent of child ``c<index>``: the hub for a star; breadth first, ``fanout`` children each, for a tree."""
    if fanout is None or index < fanout:
        return "hub"
    return f"c{(index - fanout) // fanout}"


def hub_corpus(out: str, children: int, fanout: int | None = None) -> str:
    """A corpus with one root run of ``children`` subagents (made once): a star, or a tree of bounded fan-out."""
    from subagent_catalog.synth.writer import EventLog, descriptor, header, write_session

    shape = "star" if fanout is None else f"fanout{fanout}"
    root = os.path.join(out, f"otel-{shape}-{children}")
    marker = root + ".done"
    if os.path.exists(marker):
        return root
    print(f"writing a run of {children} subagents ({shape}) in {root} ...", file=sys.stderr, flush=True)
    started: dict[str, list[int]] = {}
    for index in range(children):
        started.setdefault(_parent_of(index, fanout), []).append(index)
    start_ms = 1_700_000_000_000

    def write(session_id: str, created: int, prompt: str, parent: str | None) -> None:
        log = EventLog(session_id, time=created)
        log.turn_start()
        log.user(prompt)
        if parent is not None:
            log.descriptor(descriptor("continuable", label=f"worker {session_id}"))
        kids = started.get(session_id, [])
        for step, index in enumerate(kids, start=1):
            log.tool_round(f"call-{index}", f"started subagent c{index}", step=step)
        log.tool_round(f"r-{session_id}", f"contents of file {session_id}", step=len(kids) + 1)
        log.turn_end()
        head = header(session_id, created_at=created, parent=parent, subagent=parent is not None)
        write_session(root, head, log.events, "none")

    write("hub", start_ms, "split the work", None)
    for index in range(children):
        write(f"c{index}", start_ms + 10 + index, f"task {index}: read the module", _parent_of(index, fanout))
    with open(marker, "w", encoding="utf-8") as handle:
        handle.write("ok\n")
    return root


def measure(root: str, jobs: int | None, *, cache: bool = True) -> dict[str, object]:
    """Run ``otel ROOT -o FILE`` in a fresh interpreter; its time, peak RSS and output."""
    with tempfile.TemporaryDirectory(prefix="otel-tree-") as work:
        target = os.path.join(work, "spans.jsonl")
        rss_file = os.path.join(work, "rss")
        env = {**os.environ, "BENCH_RSS_FILE": rss_file, "PYTHONPATH": REPO, "SUBAGENT_CATALOG_CACHE": work}
        started = time.perf_counter()
        done = subprocess.run(
            [
                *(sys.executable, "-c", CHILD, "otel", root, "-o", target),
                *(["--jobs", str(jobs)] if jobs else []),
                *([] if cache else ["--no-cache"]),
            ],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        with open(rss_file, encoding="ascii") as handle:
            peak_kb, workers_kb = (int(value) for value in handle.read().split())
        lines = longest = 0
        with open(target, "rb") as handle:
            for line in handle:
                lines += 1
                longest = max(longest, len(line))
    said = done.stderr.strip().splitlines()[-1]  # "wrote FILE: N spans (...) in T traces, R requests"
    return {
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(peak_kb / 1024),
        "workers_peak_rss_mb": round(workers_kb / 1024),
        "spans": int(said.split(": ", 1)[1].split()[0]),
        "lines": lines,
        "largest_line_mb": round(longest / 1e6, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--children", type=int, nargs="+", default=[2_000, 10_000, 20_000])
    parser.add_argument("--fanout", type=int, default=None, help="children per parent (default: all under the root)")
    parser.add_argument("--jobs", type=int, default=None, help="--jobs for the CLI (default: its own)")
    parser.add_argument("--no-cache", action="store_true", help="pass --no-cache (default: a cold facts cache)")
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    args = parser.parse_args(argv)
    sys.path.insert(0, REPO)
    for children in args.children:
        root = hub_corpus(args.out, children, args.fanout)
        result = {"children": children, "fanout": args.fanout, "jobs": args.jobs, "cache": not args.no_cache}
        result |= measure(root, args.jobs, cache=not args.no_cache)
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
