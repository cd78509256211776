"""The CPU cost of the run facts on a cold read, against an earlier revision, side by side.

Usage:
    .venv/bin/python benchmarks/run_facts_cost.py [ROOT] --baseline REV [--sessions 2000] [--seed 7]
        [--compression zstd|none] [--rounds 5]

Without ROOT a corpus is generated into a temporary directory (by this
revision's synthesizer, so both revisions read the same bytes). ``REV`` (a
commit, e.g. the one before the run facts grew) is checked out into a
temporary git worktree. Each round reads the corpus once with each revision,
alternating, each in a fresh child process (``read_corpus(jobs=1,
cache=False)`` and the catalog; the child reports the CPU time,
``time.process_time``, of that work alone, imports and the one-time load of
genai-prices' data excluded). The medians
and their ratio are printed; the goal (issue 27) is at most 10 % more CPU.

CPU seconds on a loaded machine are noisy; ``--callgrind`` counts instructions
instead (``valgrind --tool=callgrind``, one round, deterministic): each revision
runs the read under valgrind and, apart, only its imports, with
``POLARS_MAX_THREADS=1`` (idle worker threads spin, and their instructions would
depend on the load) and ``PYTHONHASHSEED=0``; the read's instructions are the
difference.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

CHILD = """
import os, sys, time
os.environ["SUBAGENT_CATALOG_CACHE"] = "off"
from subagent_catalog.corpus import read_corpus
from subagent_catalog.catalog import catalog
import polars, pyarrow, zstandard, msgspec, orjson
try:  # the price data: loaded once per process on first use (a fixed cost, not the read's)
    from genai_prices import data_snapshot
    data_snapshot.get_snapshot()
except ImportError:
    pass
if len(sys.argv) > 3 and sys.argv[3] == "imports":
    raise SystemExit(0)
start = time.process_time()
corpus = read_corpus(sys.argv[1], compression=sys.argv[2], jobs=1, cache=False)
catalog(corpus)
import subagent_catalog
assert subagent_catalog.__file__.startswith(os.getcwd()), subagent_catalog.__file__
print(time.process_time() - start, corpus.sessions.height, len(corpus.sessions.columns))
"""


def _cpu(tree: Path, root: str, compression: str) -> tuple[float, int, int]:
    env = {**os.environ, "PYTHONPATH": str(tree), "SUBAGENT_CATALOG_CACHE": "off"}
    done = subprocess.run(  # run from the tree itself: ``-c`` puts the working directory first on sys.path
        [sys.executable, "-c", CHILD, root, compression], env=env, cwd=tree, check=True, capture_output=True, text=True
    )
    seconds, sessions, columns = done.stdout.split()
    return float(seconds), int(sessions), int(columns)


def _instructions(tree: Path, root: str, compression: str, scratch: str) -> int:
    """Instructions of the read alone: a valgrind run of the read less one of the imports."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "SUBAGENT_CATALOG_CACHE": "off",
        "POLARS_MAX_THREADS": "1",
        "RAYON_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
    }
    counts = []
    for mode in ("read", "imports"):
        out = os.path.join(scratch, f"callgrind.{tree.name}.{mode}")
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", CHILD]
        subprocess.run(
            [*command, root, compression, mode],
            env=env,
            cwd=tree,
            check=True,
            capture_output=True,
        )
        with open(out, encoding="utf-8") as handle:
            counts.append(next(int(line.split()[1]) for line in handle if line.startswith("summary:")))
    return counts[0] - counts[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?")
    parser.add_argument("--baseline", required=True, help="the revision to compare with (a commit or a ref)")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--compression", default="zstd", choices=["none", "zstd"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--callgrind", action="store_true", help="count instructions under valgrind (one round)")
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="run-facts-cost-")
    root = args.root
    if root is None:
        sys.path.insert(0, str(HERE))
        from subagent_catalog.synth.generate import generate

        root = os.path.join(scratch, "corpus")
        generate(root, sessions=args.sessions, seed=args.seed, compression=args.compression, jobs=1)
    baseline = Path(scratch) / "baseline"
    subprocess.run(
        ["git", "-C", str(HERE), "worktree", "add", "--detach", str(baseline), args.baseline],
        check=True,
        capture_output=True,
    )
    try:
        trees = {"baseline": baseline, "this": HERE}
        if args.callgrind:
            for tree in trees.values():  # compile both trees' bytecode first: a fresh worktree's first read
                _cpu(tree, root, args.compression)  # would count compiling every module it imports
            counted = {name: _instructions(tree, root, args.compression, scratch) for name, tree in trees.items()}
            print(f"corpus {root} ({args.compression}), instructions of read_corpus + catalog (imports excluded)")
            for name, count in counted.items():
                print(f"{name:9} {count / 1e9:.3f} G instructions")
            ratio = counted["this"] / counted["baseline"]
            print(f"ratio this / baseline: {ratio:.3f} ({(ratio - 1) * 100:+.1f} % instructions)")
            return 0
        times: dict[str, list[float]] = {name: [] for name in trees}
        shape: dict[str, tuple[int, int]] = {}
        for tree in trees.values():  # warm the page cache and the bytecode of both trees
            _cpu(tree, root, args.compression)
        for _ in range(args.rounds):
            for name, tree in trees.items():
                seconds, sessions, columns = _cpu(tree, root, args.compression)
                times[name].append(seconds)
                shape[name] = (sessions, columns)
        base, this = statistics.median(times["baseline"]), statistics.median(times["this"])
        print(f"corpus {root} ({args.compression}), {shape['this'][0]} sessions, rounds {args.rounds}")
        for name in trees:
            print(
                f"{name:9} CPU median {statistics.median(times[name]):.3f} s  {shape[name][1]} session columns  "
                f"runs {', '.join(f'{t:.3f}' for t in times[name])}"
            )
        print(f"ratio this / baseline: {this / base:.3f} ({(this / base - 1) * 100:+.1f} % CPU)")
    finally:
        subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(baseline)], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
