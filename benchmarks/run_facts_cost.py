"""The CPU cost of the run facts on a cold read: ``read_corpus`` with and without the fold.

Usage:
    .venv/bin/python benchmarks/run_facts_cost.py [ROOT] [--sessions 300] [--seed 7] [--compression none|zstd]
        [--repeats 5]

Without ROOT a corpus is generated into a temporary directory. Each repeat
reads the corpus in this process (``jobs=1``, cache off) once with the fold
and once with ``fold_run`` replaced by a stub that returns ``None`` (the
run-fact columns are then null), alternating; the best CPU time
(``time.process_time``) of each is reported with their ratio. The goal
(issue 15) is under 10 % extra CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any


def _read(root: str, compression: str) -> float:
    from subagent_catalog.corpus import read_corpus

    start = time.process_time()
    read_corpus(root, compression=compression, jobs=1)  # type: ignore[arg-type]
    return time.process_time() - start


def _no_fold(events: Any, seed_length: int = 0, **_: Any) -> None:
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?")
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--compression", default="none", choices=["none", "zstd"])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    os.environ["SUBAGENT_CATALOG_CACHE"] = "off"
    from subagent_catalog.read import logread
    from subagent_catalog.synth.generate import generate

    root = args.root
    if root is None:
        root = os.path.join(tempfile.mkdtemp(prefix="run-facts-cost-"), "corpus")
        generate(root, sessions=args.sessions, seed=args.seed, compression=args.compression, jobs=1)
    fold = logread.fold_run
    with_fold, without = [], []
    _read(root, args.compression)  # warm the page cache and imports
    for _ in range(args.repeats):
        logread.fold_run = fold
        with_fold.append(_read(root, args.compression))
        logread.fold_run = _no_fold  # type: ignore[assignment]
        without.append(_read(root, args.compression))
    logread.fold_run = fold
    best, base = min(with_fold), min(without)
    print(f"corpus: {root}")
    print(f"cold read CPU without run facts: {base:.3f} s (best of {args.repeats})")
    print(f"cold read CPU with run facts:    {best:.3f} s (best of {args.repeats})")
    print(f"extra CPU: {100 * (best / base - 1):+.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
