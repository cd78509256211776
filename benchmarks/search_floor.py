"""Issue 30's targets side by side: search against the ``zstd -dcq | grep -F`` floor, archives, the text column.

Usage:
    .venv/bin/python benchmarks/search_floor.py [--sessions 20000] [--small 2000] [--seed 1]
        [--rounds 2] [--jobs 2] [--skip raw,archive,text] [--root DIR] [--archive DIR]

Three parts, each measurement in a fresh process (CPU of the process tree from
``wait4``, peak RSS of the largest process), in one run:

* ``raw``: over the ``--sessions`` zstd corpus (``benchmarks/run.py``'s, under
  ``benchmarks/out``), per round, the floor (two ``zstd -dcq | grep -F -c``
  pipelines side by side, each over half the logs: two processes each, as
  many pipelines as cores) and cold ``read_corpus(cache=False, jobs=2)`` +
  ``search_events`` for an absent literal and a common word, the read and
  the search timed apart inside the child. Ratios are taken within a round.
* ``archive``: that corpus exported with events (reused when present), and
  each query of ``QUERIES`` in a fresh process (``open_archive`` +
  ``search_events``, then the same search again in that process): wall
  and CPU of each, peak RSS.
* ``text``: the cost of the text column, on the ``--small`` corpus: cold
  ``read_corpus(cache=False, events=True, jobs=2)`` with this code and with
  the code before it (``git archive BASE``), alternating, CPU of the process
  tree; the same without events; the events frame's ``estimated_size()``
  against its Arrow size, with and without the two text columns.

Never part of ``make test``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PYTHON = sys.executable
BASE = "f81d42e"  # the commit before the text column

ABSENT = "xylophone"
COMMON = "timeout"
QUERIES: list[tuple[str, str, dict[str, Any]]] = [
    ("absent literal", ABSENT, {}),
    ("rare literal", "CONTEXT_LENGTH_EXCEEDED", {}),
    ("common literal", COMMON, {}),
    ("common literal, limit=20", COMMON, {"limit": 20}),
    ("common literal, ignore_case", "TIMEOUT", {"ignore_case": True}),
    ("regex", r"queue depth 18\d\d", {"regex": True}),
    ("regex, common", r"time(out|d)", {"regex": True}),
]


def _run(command: list[str] | str, *, env: dict[str, str] | None = None, shell: bool = False) -> dict[str, Any]:
    """Run a child; its stdout (JSON when it parses), wall, CPU of its tree and peak RSS."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, shell=shell)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {command}")
    text = out.decode()
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text.strip()
    return {"out": parsed, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}


def _child(code: str) -> list[str]:
    return [PYTHON, "-c", code]


def _env(pythonpath: str = REPO) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": pythonpath, "SUBAGENT_CATALOG_CACHE": "off"}


RAW_CHILD = """
import json, time
from subagent_catalog import read_corpus, search_events
t0 = time.perf_counter(); corpus = read_corpus({root!r}, cache=False, jobs={jobs}); t1 = time.perf_counter()
hits = search_events(corpus, {pattern!r}); t2 = time.perf_counter()
print(json.dumps({{"read": t1 - t0, "search": t2 - t1, "rows": hits.height}}))
"""

ARCHIVE_CHILD = """
import json, time
from subagent_catalog import search_events
from subagent_catalog.store.archive import open_archive
archive = open_archive({target!r})
t0, c0 = time.perf_counter(), time.process_time()
hits = search_events(archive, {pattern!r}, **{options!r})
t1, c1 = time.perf_counter(), time.process_time()
again = search_events(archive, {pattern!r}, **{options!r})
t2, c2 = time.perf_counter(), time.process_time()
assert again.equals(hits)
print(json.dumps({{"search": t1 - t0, "search_cpu": c1 - c0, "again": t2 - t1, "again_cpu": c2 - c1,
                  "rows": hits.height}}))
"""

TEXT_CHILD = """
import json
from subagent_catalog import read_corpus
corpus = read_corpus({root!r}, cache=False, jobs={jobs}, events={events})
out = {{"sessions": corpus.sessions.height}}
if {events}:
    events = corpus.events
    plain = events.drop([c for c in ("text", "text_fields") if c in events.columns])
    out.update(rows=events.height, estimated_mb=events.estimated_size() / 2**20,
               arrow_mb=events.to_arrow().nbytes / 2**20, without_text_mb=plain.estimated_size() / 2**20)
print(json.dumps(out))
"""


def _floor(lists: list[str], pattern: str) -> dict[str, Any]:
    pipelines = " & ".join(
        f"(xargs -0 -a {path} zstd -dcq -- 2> /dev/null | LC_ALL=C grep -F -c -- {pattern!r} > /dev/null)"
        for path in lists
    )
    return _run(f"{pipelines}; wait", shell=True)


def raw_part(root: str, rounds: int, jobs: int) -> None:
    logs = sorted(
        os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names if name.endswith(".zstd")
    )
    lists = []
    for half in (logs[0::2], logs[1::2]):
        handle = tempfile.NamedTemporaryFile("w", suffix=".lst", delete=False)  # noqa: SIM115
        handle.write("\0".join(half))
        handle.close()
        lists.append(handle.name)
    print(f"\n## raw corpus: {root} ({len(logs)} logs), {rounds} rounds", flush=True)
    print("| round | pattern | floor wall s | floor CPU s | read s | search s | read+search s | child CPU s | ratio |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    ratios: dict[str, list[float]] = {ABSENT: [], COMMON: []}
    for round_ in range(1, rounds + 1):
        for pattern in (ABSENT, COMMON):
            floor = _floor(lists, pattern)
            got = _run(_child(RAW_CHILD.format(root=root, jobs=jobs, pattern=pattern)), env=_env())
            total = got["out"]["read"] + got["out"]["search"]
            ratio = total / floor["wall"]
            ratios[pattern].append(ratio)
            print(
                f"| {round_} | `{pattern}` | {floor['wall']:.2f} | {floor['cpu']:.2f} | {got['out']['read']:.2f} | "
                f"{got['out']['search']:.2f} | {total:.2f} | {got['cpu']:.2f} | {ratio:.2f}x |",
                flush=True,
            )
    for pattern, values in ratios.items():
        print(f"median ratio `{pattern}`: {statistics.median(values):.2f}x (read + search against the floor)")
    for path in lists:
        os.unlink(path)


def archive_part(root: str, out: str, jobs: int, archive: str | None = None) -> None:
    target = archive or os.path.join(out, "archive-text-" + os.path.basename(root))
    if not os.path.exists(os.path.join(target, "manifest.json")):
        code = (
            "from subagent_catalog.store.export import export_archive; "
            f"export_archive({root!r}, {target!r}, events=True, jobs={jobs})"
        )
        made = _run(_child(code), env=_env())
        print(f"\nexported {root} with events to {target}: {made['wall']:.1f} s, peak RSS {made['rss_mb']:.0f} MB")
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(target) for n in names)
    print(f"\n## archive: {target} ({size / 2**20:.0f} MiB)")
    print(
        "| query | rows | search s | search CPU s | again s | again CPU s | process wall s | process CPU s |"
        " peak RSS MB | load |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, pattern, options in QUERIES:
        got = _run(_child(ARCHIVE_CHILD.format(target=target, pattern=pattern, options=options)), env=_env())
        print(
            f"| {name} (`{pattern}`) | {got['out']['rows']} | {got['out']['search']:.2f} | "
            f"{got['out']['search_cpu']:.2f} | {got['out']['again']:.2f} | {got['out']['again_cpu']:.2f} | "
            f"{got['wall']:.2f} | {got['cpu']:.2f} | {got['rss_mb']:.0f} | {os.getloadavg()[0]:.1f} |",
            flush=True,
        )


def text_part(root: str, out: str, rounds: int, jobs: int) -> None:
    base = os.path.join(out, f"base-src-{BASE}")
    if not os.path.isdir(base):
        os.makedirs(base)
        archive = subprocess.run(
            ["git", "-C", REPO, "archive", BASE, "subagent_catalog"], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", base], input=archive.stdout, check=True)
    print(f"\n## the text column: {root}, this code against {BASE}, alternating, {rounds} rounds")
    print("| events | code | CPU s (median) | wall s (median) | peak RSS MB (median) |")
    print("|---|---|---:|---:|---:|")
    for events in (True, False):
        runs: dict[str, list[dict[str, Any]]] = {"this": [], BASE: []}
        for _ in range(rounds):
            for label, path in (("this", REPO), (BASE, base)):
                code = TEXT_CHILD.format(root=root, jobs=jobs, events=events)
                runs[label].append(_run(_child(code), env=_env(path)))
        cpu = {label: statistics.median(r["cpu"] for r in got) for label, got in runs.items()}
        for label, got in runs.items():
            print(
                f"| {events} | {label} | {cpu[label]:.2f} | {statistics.median(r['wall'] for r in got):.2f} | "
                f"{statistics.median(r['rss_mb'] for r in got):.0f} |"
            )
        print(f"CPU growth with events={events}: {100 * (cpu['this'] / cpu[BASE] - 1):+.1f} %")
        if events:
            print(f"events frame: {json.dumps(runs['this'][0]['out'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--small", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--skip", default="")
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    parser.add_argument("--root", help="an existing --sessions corpus to use instead of generating one")
    parser.add_argument("--archive", help="an existing archive of --root exported with events")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    sys.path.insert(0, HERE)
    from run import _corpus

    print(f"{time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    root = args.root or _corpus(args.out, args.sessions, args.seed, "zstd", args.jobs)[0]
    if "raw" not in skip:
        raw_part(root, args.rounds, args.jobs)
    if "archive" not in skip:
        archive_part(root, args.out, args.jobs, args.archive)
    if "text" not in skip:
        small, _ = _corpus(args.out, args.small, args.seed, "zstd", args.jobs)
        text_part(small, args.out, args.rounds, args.jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
