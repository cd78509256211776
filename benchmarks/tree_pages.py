"""Size and time of ``show --tree`` over trees of extreme shapes (never part of ``make test``).

Issue 42 (item 10) reported that the pages of a run grew with the square of its depth: every page
drew the timeline of its whole subtree (a 1,000-deep chain wrote 32 MB in 70 s, a 3,000-deep one
228 MB in 579 s). This script writes the trees' logs with ``synth.writer`` (each session one turn
with a user message, a tool call and its result; a chain's sessions nest in time, a hub's children
run side by side) and times ``write_tree_pages`` on each, printing the pages' total and largest
size (bytes) and the seconds it took, as one JSON line per shape.

Usage:
    PYTHONPATH=. .venv/bin/python benchmarks/tree_pages.py [--shapes chain:1000,chain:3000,hub:1000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from subagent_catalog.synth.writer import EventLog, header, write_session


def _events(session_id: str, start: int, length: int) -> list[dict[str, object]]:
    log = EventLog(session_id)
    log.time = start
    log.turn_start()
    log.user(f"task for {session_id}")
    log.tool_round(f"call-{session_id}", "ok")
    log.assistant("done")
    last = log.events[-1]["time"]
    log.turn_end()
    log.events[-1]["time"] = max(start + length, int(str(last)) + 1)
    return log.events


def write_shape(root: Path, shape: str, size: int) -> str:
    """Write a ``chain`` (each session the only child of the one before) or a ``hub`` (one root, ``size``
    children); return the top's id."""
    base = 1_760_000_000_000
    if shape == "chain":
        for depth in range(size):
            sid = f"chain-{depth:05d}"
            parent = f"chain-{depth - 1:05d}" if depth else None
            head = header(sid, created_at=base + depth, parent=parent, subagent=parent is not None)
            write_session(root, head, _events(sid, base + 10 * depth, 10 * (2 * size - 2 * depth)), "none")
        return "chain-00000"
    write_session(root, header("hub", created_at=base), _events("hub", base, 10 * size + 1_000), "none")
    for index in range(size):
        sid = f"hub-child-{index:05d}"
        head = header(sid, created_at=base + 1 + index, parent="hub", subagent=True)
        write_session(root, head, _events(sid, base + 10 * index, 500 + 7 * (index % 13)), "none")
    return "hub"


def measure(shape: str, size: int) -> dict[str, object]:
    """Write the shape's logs, then its pages; their sizes and the seconds ``write_tree_pages`` took."""
    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.views.transcript_tree import write_tree_pages

    with tempfile.TemporaryDirectory(prefix="tree-pages-") as work:
        root = Path(work) / "corpus"
        top = write_shape(root, shape, size)
        corpus = read_corpus(root, cache=False, jobs=1)
        started = time.perf_counter()
        pages = write_tree_pages(corpus, top, Path(work) / "pages")
        seconds = time.perf_counter() - started
        sizes = [os.path.getsize(page) for page in pages.pages]
    return {
        "shape": shape,
        "sessions": size + (shape == "hub"),
        "pages": len(sizes),
        "total_bytes": sum(sizes),
        "largest_page_bytes": max(sizes),
        "seconds": round(seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Measure each ``--shapes`` entry (``chain:N`` or ``hub:N``) and print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="chain:1000,chain:3000,hub:1000")
    args = parser.parse_args(argv)
    for entry in args.shapes.split(","):
        shape, _, size = entry.partition(":")
        print(json.dumps(measure(shape, int(size))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
