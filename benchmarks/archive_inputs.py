"""``report``, ``check`` and ``summary`` over an archive: the commands as a CI job runs them after a nightly export.

For each size (default 500,000 sessions of the ``small`` synthesis profile, seed 1, zstd: the corpus
and archive of ``benchmarks/catalog_archive.py``, generated and exported once), each command runs
in a fresh process, one after the other::

    subagent-catalog summary ARCHIVE -q
    subagent-catalog report ARCHIVE -q -o OUT/report.html
    subagent-catalog check ARCHIVE -q --format json

Reported per command: wall seconds, CPU seconds (user + sys, from ``wait4``), the process's peak
RSS (``ru_maxrss``: the client is the only process, an archive is read without workers), the exit
status and the output's size. The archive is exported without events: none of these commands
reads one.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/archive_inputs.py [--sessions 500000] [--out benchmarks/out]
        [--commands summary,report,check]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

COMMANDS = {
    "summary": ["summary", "{archive}", "-q"],
    "report": ["report", "{archive}", "-q", "-o", "{out}/report-{sessions}.html"],
    "check": ["check", "{archive}", "-q", "--format", "json"],
}


def measure(args: list[str]) -> dict[str, Any]:
    """Run one command in a fresh process: wall and CPU seconds, peak RSS, exit status, output bytes."""
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "subagent_catalog", *args], stdout=subprocess.PIPE, stderr=sink)
        assert proc.stdout is not None
        size = 0
        while chunk := proc.stdout.read(1 << 20):
            size += len(chunk)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "exit": proc.returncode,
        "stdout_bytes": size,
    }


def main() -> None:
    """Measure the commands over each size's archive and print one JSON line per run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="500000")
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--jobs", type=int, default=2)
    options = parser.parse_args()
    from catalog_archive import _prepare

    for sessions in [int(s) for s in options.sessions.split(",")]:
        _, archive, _info = _prepare(options.out, sessions, 1, options.jobs)
        for name in options.commands.split(","):
            args = [a.format(archive=archive, out=options.out, sessions=sessions) for a in COMMANDS[name]]
            result = {"sessions": sessions, "command": name, **measure(args)}
            if name == "report":
                result["report_kib"] = os.path.getsize(args[-1]) // 1024
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
