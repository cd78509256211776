"""What the part checksums cost a reader: ``Archive.check`` of every table, with and without them.

For each size (default 500,000 sessions of the ``small`` synthesis profile, seed 1, zstd: the corpus and
archive of ``benchmarks/catalog_archive.py``, generated and exported once), a second archive directory is
made beside it whose parts are hard links to the first's and whose manifest has no ``file_blake2b`` (an
archive as exported before the checksums: footers checked, parts not hashed). Then, alternately and each
in a fresh process, ``Archive.check`` of every table of each, and ``summary ARCHIVE -q`` of each.

Reported per run: wall and CPU seconds (``wait4``), the process's peak RSS, and the size of the parts.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/archive_checksums.py [--sessions 500000] [--runs 2]
        [--out benchmarks/out] [--commands check,summary]
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

CHECK = """
import sys
from subagent_catalog.store.archive import open_archive
archive = open_archive(sys.argv[1])
for table in ("sessions", "descriptors", "problems", "facts", *(("events",) if archive.has_events else ())):
    archive.check(table)
"""


def _manifest(archive: str) -> dict[str, Any]:
    with open(os.path.join(archive, "manifest.json"), encoding="utf-8") as handle:
        manifest: dict[str, Any] = json.load(handle)
    return manifest


def without_checksums(archive: str) -> str:
    """A sibling archive: the same parts (hard links), a manifest without digests."""
    plain = archive + ".no-checksums"
    manifest = _manifest(archive)
    if not os.path.isdir(plain):
        for entry in (*manifest["tables"].values(), manifest["fingerprints"]):
            for name in entry["files"]:
                target = os.path.join(plain, *name.split("/"))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.link(os.path.join(archive, *name.split("/")), target)
    for entry in (*manifest["tables"].values(), manifest["fingerprints"]):
        entry.pop("file_blake2b", None)
    with open(os.path.join(plain, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle)
    return plain


def measure(args: list[str]) -> dict[str, Any]:
    """Run ``python ARGS`` in a fresh process: wall and CPU seconds, peak RSS, exit status."""
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen([sys.executable, *args], stdout=sink, stderr=sink)
        _, status, usage = os.wait4(proc.pid, 0)
    return {
        "wall_s": round(time.perf_counter() - started, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "exit": os.waitstatus_to_exitcode(status),
    }


def part_bytes(archive: str) -> int:
    """The bytes of every part the manifest names."""
    manifest = _manifest(archive)
    names = [name for entry in (*manifest["tables"].values(), manifest["fingerprints"]) for name in entry["files"]]
    return sum(os.path.getsize(os.path.join(archive, *name.split("/"))) for name in names)


def main() -> None:
    """Measure the check and the summary with and without checksums; one JSON line per run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="500000")
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--commands", default="check,summary")
    options = parser.parse_args()
    from catalog_archive import _prepare

    for sessions in [int(s) for s in options.sessions.split(",")]:
        _, archive, _info = _prepare(options.out, sessions, 1, options.jobs)
        archives = {"checksums": archive, "no checksums": without_checksums(archive)}
        size = part_bytes(archive)
        for _ in range(options.runs):
            for command in options.commands.split(","):
                for mode, path in archives.items():
                    summary = ["-m", "subagent_catalog", "summary", path, "-q"]
                    args = ["-c", CHECK, path] if command == "check" else summary
                    result = {"sessions": sessions, "parts_mb": round(size / 2**20, 1), "command": command}
                    print(json.dumps({**result, "mode": mode, **measure(args)}), flush=True)


if __name__ == "__main__":
    main()
