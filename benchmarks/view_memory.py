"""Peak memory of the views over huge texts, each measured in a fresh child (never part of ``make test``).

Issue 29 reported two logs: a 6,995-byte zstd log holding one 200 MiB tool result (``show -o x.html``
peaked at 5.1 GB; the read bound for that log is 1.8 GB) and a 157 MB plain log of many large results
(3.9 GB, and 629 MB of HTML). Selecting the first in ``CatalogBrowser`` built a 600 MiB detail string.
This script rebuilds both logs (sizes can be scaled down), then runs, each in its own interpreter that
reports its own peak RSS (``VmHWM``):

- ``show`` to an HTML file, and to a Markdown file;
- the browser's detail pane of that session (``CatalogBrowser.selected = key``);
- reading the log alone (``read_corpus`` + ``log_events``), the floor the views add to.

and prints each peak beside the log's read bound (``read.limits.read_memory_bound``) and the size of
what was rendered.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/view_memory.py [--result-mib 200] [--plain-mb 157] [--only big,plain]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CHILD = r"""
import json, os, sys
what, root, session = sys.argv[1:4]
if what == "read":
    from subagent_catalog import read_corpus
    corpus = read_corpus(root, cache=False, jobs=1)
    size = corpus.log_events(0)["data"].str.len_bytes().sum()
elif what in ("html", "md"):
    from subagent_catalog.cli import main
    out = os.path.join(os.environ["VIEW_OUT"], "page." + what)
    try:
        main.main(["show", root, session, "-o", out, "--no-cache", "-q"], standalone_mode=False)
    except SystemExit:
        pass
    size = os.path.getsize(out)
else:
    from subagent_catalog import read_corpus
    from subagent_catalog.widgets import CatalogBrowser
    browser = CatalogBrowser(read_corpus(root, cache=False, jobs=1))
    browser.selected = browser.find(session)
    size = len(browser.detail.encode())
with open("/proc/self/status") as status:
    peak = int(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
print(json.dumps({"peak_mb": peak / 1024, "bytes": int(size)}))
"""


def _big_result_log(root: Path, mib: int) -> tuple[str, int, int]:
    """One session whose only tool result is ``mib`` MiB of markup characters (each escapes to 4-6 in HTML), zstd
    level 19 (a few KB on disk)."""
    import zstandard

    from subagent_catalog.synth.writer import EventLog, dumps, header, log_path, write_file

    log = EventLog("big")
    log.turn_start()
    log.user("read the file")
    log.tool_round("c1", ('<a href="x">&</a>\n' * ((mib << 20) // 18 + 1))[: mib << 20])
    log.turn_end()
    head = header("big", created_at=1)
    compressor = zstandard.ZstdCompressor(level=19, write_checksum=True)
    frames = [compressor.compress(dumps(head) + b"\n")]
    frames += [compressor.compress(dumps(event) + b"\n") for event in log.events]
    data = b"".join(frames)
    write_file(log_path(root, head, "zstd"), data)
    return "big", len(data), sum(len(dumps(e)) + 1 for e in log.events) + len(dumps(head)) + 1


def _plain_log(root: Path, mb: int) -> tuple[str, int, int]:
    """One plain session of ``mb`` MB: tool results of 150 KB each (the shape of the reported 157 MB log)."""
    from subagent_catalog.synth.writer import EventLog, header, write_session

    log = EventLog("plain")
    log.turn_start()
    log.user("go")
    block = ('<div class="row">a &amp; b</div> <span>"quoted"</span> ' * 3 + "\n") * 900  # about 150 KB of markup
    for index in range(max(1, mb * 1_000_000 // len(block))):
        log.tool_round(f"c{index}", block)
    log.turn_end()
    path = write_session(root, header("plain", created_at=1), log.events, "none")
    size = os.path.getsize(path)
    return "plain", size, size


def _run(what: str, root: Path, session: str, out: Path) -> dict[str, Any]:
    env = {**os.environ, "VIEW_OUT": str(out), "SUBAGENT_CATALOG_CACHE": "off"}
    command = [sys.executable, "-c", CHILD, what, str(root), session]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return {"error": done.stderr[-500:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--result-mib", type=int, default=200)
    parser.add_argument("--plain-mb", type=int, default=157)
    parser.add_argument("--only", default="big,plain")
    args = parser.parse_args(argv)
    from subagent_catalog.read.limits import read_memory_bound

    print("| log | what | peak RSS | read bound | rendered |")
    print("|---|---|---:|---:|---:|")
    for name in args.only.split(","):
        with tempfile.TemporaryDirectory(prefix="view-memory-") as work:
            root, out = Path(work) / "corpus", Path(work) / "out"
            out.mkdir()
            if name == "big":
                session, file_bytes, plain = _big_result_log(root, args.result_mib)
                label = f"{file_bytes:,}-byte zstd, one {args.result_mib} MiB result"
            else:
                session, file_bytes, plain = _plain_log(root, args.plain_mb)
                label = f"{file_bytes / 1e6:.0f} MB plain, 150 KB results"
            bound = read_memory_bound(file_bytes=file_bytes, plaintext_bytes=plain) / 2**20
            for what in ("read", "html", "md", "detail"):
                result = _run(what, root, session, out)
                if "error" in result:
                    print(f"| {label} | {what} | error: {result['error']!r} | | |")
                    continue
                print(
                    f"| {label} | {what} | {result['peak_mb']:,.0f} MiB | {bound:,.0f} MiB | "
                    f"{result['bytes'] / 2**20:,.1f} MiB |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
