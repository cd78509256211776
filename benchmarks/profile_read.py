"""Profile ``read_corpus`` over a corpus and print the top functions.

Usage:
    .venv/bin/python benchmarks/profile_read.py ROOT [--compression auto|zstd|none] [--events]
        [--top 30] [--sort tottime|cumulative] [--tool cprofile|pyinstrument] [--catalog]

The read runs in this process with ``jobs=1`` so the profiler sees every
function (with a process pool it would only see the parent waiting).
pyinstrument is used when asked for and installed; cProfile otherwise.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from typing import Any


def _run(root: str, compression: str, events: bool, with_catalog: bool) -> Any:
    from subagent_catalog.catalog.tables import catalog
    from subagent_catalog.corpus import read_corpus

    corpus = read_corpus(root, compression=compression, events=events, jobs=1)  # type: ignore[arg-type]
    if with_catalog:
        catalog(corpus)
    return corpus


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root")
    parser.add_argument("--compression", default="auto", choices=["auto", "zstd", "none"])
    parser.add_argument("--events", action="store_true", help="also build the events frame")
    parser.add_argument("--catalog", action="store_true", help="also run catalog() on the result")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    parser.add_argument("--tool", default="cprofile", choices=["cprofile", "pyinstrument"])
    args = parser.parse_args(argv)
    if not os.path.isdir(args.root):
        parser.error(f"{args.root!r} is not a directory")
    # Import outside the measured region.
    import subagent_catalog.catalog.listing
    import subagent_catalog.corpus  # noqa: F401

    if args.tool == "pyinstrument":
        try:
            from pyinstrument import Profiler
        except ImportError:
            print("pyinstrument is not installed; using cProfile", file=sys.stderr)
        else:
            profiler = Profiler()
            profiler.start()
            _run(args.root, args.compression, args.events, args.catalog)
            profiler.stop()
            print(profiler.output_text(unicode=True, color=False, show_all=False))
            return 0
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    corpus = _run(args.root, args.compression, args.events, args.catalog)
    profile.disable()
    wall = time.perf_counter() - started
    print(f"# {args.root}: {corpus.sessions.height} files, {wall:.2f} s under the profiler (jobs=1)")
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.strip_dirs().sort_stats(args.sort).print_stats(args.top)
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
