"""Time ``findings`` on a large corpus against a cold ``summary`` of the same corpus (never part of ``make test``).

Issue 40's target: on 20,000 generated sessions, findings in under twice the time of a cold
``summary``. Each round runs, in fresh processes one after the other, with the facts cache off
(``SUBAGENT_CATALOG_CACHE=off``: every log read):

- ``summary``: ``subagent-catalog summary ROOT -q`` (read every log, list, summarise);
- ``findings``: ``subagent-catalog findings ROOT -q --format csv -o FILE`` (read every log, then every
  default detector: the facts, then the logs the log-reading detectors need, byte-scanned);
- ``warm``: ``findings`` again with a cache directory of the benchmark's own (``SUBAGENT_CATALOG_CACHE``)
  that a first run filled: the facts cache and the findings cache both warm.

The ratio findings / summary is taken within a round; the table shows each round and the median.
On a shared machine the seconds are the machine's; the ratios are steadier.

Usage:
    .venv/bin/python benchmarks/findings_scale.py [--sessions 20000] [--rounds 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import _corpus  # noqa: E402 (the sibling benchmark's helpers)

CLI = str(Path(sys.executable).parent / "subagent-catalog")


def _timed(args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one command (it must succeed)."""
    started = time.perf_counter()
    done = subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "subagent-catalog-bench"))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    root, _stats = _corpus(args.out, args.sessions, 1, "zstd", 2)
    with tempfile.TemporaryDirectory() as scratch:
        cold = {**os.environ, "SUBAGENT_CATALOG_CACHE": "off"}
        warm = {**os.environ, "SUBAGENT_CATALOG_CACHE": os.path.join(scratch, "cache")}
        summary = [CLI, "summary", root, "-q"]
        found = [CLI, "findings", root, "-q", "--format", "csv", "-o", os.path.join(scratch, "findings.csv")]
        _timed(found, warm)  # fills the facts and findings caches of the benchmark's own
        print(f"{args.sessions:,} sessions (zstd, seed 1): {root}")
        print(f"{'round':>5}  {'summary s':>9}  {'findings s':>10}  {'ratio':>5}  {'warm s':>6}  load")
        ratios = []
        for n in range(1, args.rounds + 1):
            s_wall = _timed(summary, cold)
            f_wall = _timed(found, cold)
            w_wall = _timed(found, warm)
            ratios.append(f_wall / s_wall)
            load = " ".join(f"{value:.1f}" for value in os.getloadavg())
            print(f"{n:>5}  {s_wall:>9.2f}  {f_wall:>10.2f}  {ratios[-1]:>5.2f}  {w_wall:>6.2f}  {load}", flush=True)
        median = statistics.median(ratios)
        print(f"median findings / summary: {median:.2f} (target: under 2.00) -> {'met' if median < 2 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
