"""Time the notebook widgets on a large corpus (not run by the tests).

Usage:
    .venv/bin/python benchmarks/bench_widgets.py [ROOT] [--sessions 20000] [--seed 7]

Without ROOT a corpus of ``--sessions`` logs is generated in a temporary
directory (with ``subagent_catalog.synth.generate`` when it is available, else with
the writer: runs of ten small sessions) and removed afterwards. Prints the
seconds each step takes: opening ``CatalogBrowser`` (which must not depend on
the corpus size beyond one Polars index pass), the first expansion (which
computes the catalog rows once), a second expansion, a selection, a search,
and opening ``DiagnosticsDashboard``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any


def generate(out: str, sessions: int, seed: int) -> str:
    """Write a corpus of about ``sessions`` logs under ``out``; returns how it was made."""
    try:
        from subagent_catalog.synth.generate import generate as synth_generate
    except ImportError:
        synth_generate = None
    if synth_generate is not None:
        synth_generate(out, sessions=sessions, seed=seed, compression="none")
        return "subagent_catalog.synth.generate"
    from subagent_catalog.synth.writer import descriptor, header, simple_child_events, write_session

    base = 1_780_000_000_000
    for r in range(max(1, sessions // 10)):
        rid, cwd, start = f"root-{r:05d}", f"/home/dev/project-{r % 7}", base + r * 1000
        write_session(out, header(rid, created_at=start, cwd=cwd), [], "none")
        for c in range(3):
            cid = f"{rid}-c{c}"
            head = header(cid, created_at=start + c + 1, cwd=cwd, parent=rid, subagent=True, delegation_depth=1)
            write_session(out, head, simple_child_events(cid, descriptor("continuable", label=f"task {c}")), "none")
            sub = header(f"{cid}-g0", created_at=start + 10, cwd=cwd, parent=cid, subagent=True, delegation_depth=2)
            write_session(out, sub, simple_child_events(f"{cid}-g0", descriptor("one-shot")), "none")
            write_session(out, header(f"{cid}-g1", created_at=start + 11, cwd=cwd, parent=cid), [], "none")
    return "subagent_catalog.synth.writer"


def timed(label: str, action: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = action()
    print(f"{label:<40} {time.perf_counter() - started:8.3f} s")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?")
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard

    scratch = None
    root = args.root
    if root is None:
        scratch = tempfile.mkdtemp(prefix="bench-widgets-")
        root = os.path.join(scratch, "corpus")
        how = timed(f"generate {args.sessions} sessions", lambda: generate(root, args.sessions, args.seed))
        print(f"  (written with {how})")
    try:
        corpus = timed("read_corpus", lambda: read_corpus(root))
        print(f"  {corpus!r}")
        browser = timed("CatalogBrowser(corpus)  [open]", lambda: CatalogBrowser(corpus))
        print(f"  drawn rows: {len(browser.visible)} (labels made: {browser.built_nodes})")
        expandable = [p for p in browser.visible[:50] if browser.row(p)["expandable"]]
        if expandable:
            timed("first expansion (computes the catalog)", lambda: browser.expand(expandable[0]))
        if len(expandable) > 1:
            timed("second expansion", lambda: browser.expand(expandable[1]))
        timed("select a session", lambda: setattr(browser, "selected", browser.row(browser.visible[0])["key"]))
        timed("search (first: builds the filter table)", lambda: setattr(browser, "search", "a"))
        timed("search again", lambda: setattr(browser, "search", "b"))
        print(f"  labels made: {browser.built_nodes}")
        timed("DiagnosticsDashboard(corpus)", lambda: DiagnosticsDashboard(corpus))
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
