"""Time CatalogBrowser on 20,000 top-level rows and a 1,000-child hub, in Python and in a real JupyterLab.

Usage:
    .venv/bin/python benchmarks/bench_browser.py [--roots 20000] [--hub 1000] [--no-lab]

Writes a corpus of ``--roots`` runs and one hub with ``--hub`` children
(``tests/lab.py``'s ``write_lab_corpus``), then prints:

* in this process: ``read_corpus``, opening the widget (index pass, the drawn
  tree's buffers), one screenful of labels, expanding the hub, revealing a hub
  child;
* in JupyterLab + headless Chromium (the browser tests' harness): the widget's
  open time in the kernel, time from the cell's output to the first labelled
  rows, End (scroll to the last root, labelled), expanding the hub from a search
  result, searching a hub child and revealing it, and the mean frame time while
  scrolling through the whole tree.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.lab import Lab, chromium, missing_lab, notebook, write_lab_corpus  # noqa: E402

CELL = """\
import time
from subagent_catalog.corpus import read_corpus
from subagent_catalog.widgets import CatalogBrowser
corpus = read_corpus("corpus", compression="none")
started = time.perf_counter()
browser = CatalogBrowser(corpus)
print(f"open {time.perf_counter() - started:.3f}")
browser"""


def timed(label: str, action: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = action()
    print(f"{label:<52} {time.perf_counter() - started:8.3f} s", flush=True)
    return result


def until(page: Any, script: str, arg: Any = None) -> None:
    page.wait_for_function(script, arg=arg, timeout=60_000, polling="raf")


def has_row(text: str) -> str:
    return f"() => [...document.querySelectorAll('.sc-row')].some(r => r.textContent.includes({text!r}))"


def in_lab(work: Path, ids: dict[str, str]) -> None:
    found = chromium()
    problem = missing_lab()
    if problem or found is None:
        print(f"(no lab figures: {problem or 'no chromium'})")
        return
    notebook(work / "bench.ipynb", [CELL])
    with Lab(work, chromium_path=found) as lab:
        page = timed("JupyterLab: open the notebook and run it", lambda: lab.notebook("bench.ipynb"))
        print(f"  kernel: {page.inner_text('.jp-OutputArea-output pre').strip()} s (CatalogBrowser(corpus))")
        timed("first labelled rows drawn", lambda: until(page, has_row("run-00000  [")))
        page.click(".sc-row >> nth=0")
        timed(
            "End: the last root drawn and labelled",
            lambda: (page.keyboard.press("End"), until(page, has_row(ids["last_root"] + "  ["))),
        )

        def expand_hub() -> None:
            page.fill(".sc-search", "hub-run")
            page.keyboard.press("Enter")
            until(page, has_row("hub-run  ["))
            page.locator(".sc-row", has_text="hub-run").locator(".sc-toggle").click()
            until(page, has_row("hub-child-0000  ["))

        timed("search the hub, expand it from its result", expand_hub)

        def reveal() -> None:
            page.fill(".sc-search", "needle")
            page.keyboard.press("Enter")
            until(page, has_row(ids["needle"] + "  ["))
            page.locator(".sc-row", has_text=ids["needle"]).locator(".sc-reveal").click()
            until(page, f"() => document.querySelector('.sc-row.sc-selected')?.textContent.includes({ids['needle']!r})")

        timed("search a hub child and reveal it in the tree", reveal)
        frame = page.evaluate(
            """async () => {
                const s = document.querySelector('.sc-scroll');
                const steps = 200, span = s.scrollHeight - s.clientHeight;
                const t0 = performance.now();
                for (let i = 0; i <= steps; i++) {
                    s.scrollTop = span * i / steps;
                    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
                }
                return (performance.now() - t0) / steps;
            }"""
        )
        print(f"{'scroll through the tree: mean time per jump (2 frames)':<52} {frame / 1000:8.3f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", type=int, default=20_000)
    parser.add_argument("--hub", type=int, default=1_000)
    parser.add_argument("--no-lab", action="store_true")
    args = parser.parse_args(argv)

    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.views.widgets import CatalogBrowser

    work = Path(tempfile.mkdtemp(prefix="bench-browser-"))
    try:
        ids = timed(
            f"write {args.roots} runs + a {args.hub}-child hub",
            lambda: write_lab_corpus(work / "corpus", roots=args.roots, hub_children=args.hub),
        )
        corpus = timed("read_corpus", lambda: read_corpus(work / "corpus", compression="none"))
        browser = timed("CatalogBrowser(corpus)  [open]", lambda: CatalogBrowser(corpus))
        print(f"  drawn rows: {len(browser.visible)}, tree buffers: {len(browser.tree_keys) * 9 // 4:,} bytes")
        keys = list(memoryview(browser.tree_keys).cast("i"))[-40:]
        timed("labels of the last 40 rows", lambda: [browser.label(k) for k in keys])
        hub = browser.find(ids["hub"])
        assert hub is not None
        timed("expand the hub", lambda: browser.reveal(hub, expand=True))
        timed("reveal a hub child", lambda: browser.reveal(ids["needle"]))
        if not args.no_lab:
            in_lab(work, ids)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
