"""Re-make the HTML report screenshots in this directory (``make screenshots``; not run by the tests).

A generated corpus (damaged sessions give corrupt and unavailable rows) and
a corpus whose listing fails are reported with ``write_report``, opened in
headless Chromium through Playwright (the system ``chromium``, as the
browser tests use), put in each state and captured:

- ``report-diagnostics.png``: the diagnostics table at 1,400 px, filtered to the unavailable rows;
- ``report-tree-filter.png``: the tree filtered by one cause, opened down to each match;
- ``report-390.png``: the summary and the diagnostics table at 390 px;
- ``report-listing-fails.png``: the banner and summary of a failing listing;
- ``report-runs.png`` and ``report-runs-390.png``: the Runs section at 1,400 and 390 px;
- ``report-rankings-1024.png``: the slowest and costliest runs and trees at 1,024 px, every column shown;
- ``show-tree.png``: the ``show --tree`` page of the largest tree (run facts, timeline, turns);
- ``show-tree-1024.png`` and ``show-tree-390.png``: a page of a child of it at 1,024 and 390 px, at its
  way back (to the tree's top and its parent) and its waterfall.

Usage (from the repository root)::

    .venv/bin/python docs/img/make_report_screenshots.py [--out docs/img] [--chromium PATH]

The widget screenshots have their own script, ``make_screenshots.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
T0 = 1_767_225_600_000


def _failing_corpus(root: Path) -> None:
    from subagent_catalog.synth import writer as w

    w.write_session(root, w.header("run-1", created_at=T0, cwd="/home/dev/app"), [], "none")
    head = w.header("helper", created_at=T0 + 1, cwd="/home/dev/app", parent="run-1", subagent=True)
    w.write_session(root, head, w.simple_child_events("helper", w.descriptor("continuable", label="Helper")), "none")
    w.write_file(os.path.join(root, "--home-dev-app--", "legacy.jsonl"), b"{}\n")


def _reports(work: Path) -> tuple[Path, Path]:
    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.synth.generate import generate
    from subagent_catalog.views.report import write_report

    generate(work / "nightly", sessions=400, seed=7, compression="zstd", damaged_fraction=0.08, jobs=1)
    healthy = write_report(read_corpus(work / "nightly", jobs=1, cache=False), work / "nightly.html")
    _failing_corpus(work / "legacy")
    failing = write_report(read_corpus(work / "legacy", jobs=1, cache=False), work / "legacy.html")
    return healthy, failing


def _tree_pages(work: Path) -> Path:
    from subagent_catalog.analysis.run_summary import run_summary
    from subagent_catalog.corpus import read_corpus
    from subagent_catalog.views.transcript_tree import write_tree_pages

    corpus = read_corpus(work / "nightly", jobs=1, cache=False)
    largest = run_summary(corpus).trees["session_id"][0]
    return write_tree_pages(corpus, largest, work / "pages").top


def _child_page(top: Path) -> Path:
    """A page of the tree other than the top's: the first that links up to a parent."""
    for page in sorted(top.parent.glob("*.html")):
        if page.name not in ("index.html", top.name) and "the top of this tree" in page.read_text(encoding="utf-8"):
            return page
    return top


def _top(page: Any) -> None:
    page.evaluate("window.scrollTo(0, 0)")


def _shoot(browser: Any, url: str, png: Path, width: int, height: int, steps: Any) -> None:
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        steps(page)
        page.screenshot(path=str(png))
        print(png)
    finally:
        context.close()


def _diagnostics(page: Any) -> None:
    page.select_option("#diag-reason", "unavailable")
    page.evaluate("document.getElementById('diagnostics').scrollIntoView()")


def _filter_tree(page: Any) -> None:
    cause = page.locator("#tree-cause option").nth(1).get_attribute("value")
    page.select_option("#tree-cause", cause)
    page.evaluate("document.getElementById('forest').scrollIntoView()")
    page.evaluate("document.getElementById('tree').scrollTop = 0")


def _runs(page: Any) -> None:
    page.evaluate("document.getElementById('runs').scrollIntoView()")


def _rankings(page: Any) -> None:
    page.evaluate("document.getElementById('runs-slowest').scrollIntoView(); window.scrollBy(0, -90)")


def _phone(page: Any) -> None:
    page.evaluate("document.getElementById('summary').scrollIntoView()")


def main(argv: list[str] | None = None) -> int:
    """Make every report screenshot.

    Examples:
        >>> main.__name__
        'main'
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as scratch, sync_playwright() as playwright:
        healthy, failing = _reports(Path(scratch))
        browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        try:
            url = healthy.resolve().as_uri()
            _shoot(browser, url, args.out / "report-diagnostics.png", 1400, 900, _diagnostics)
            _shoot(browser, url, args.out / "report-tree-filter.png", 1400, 900, _filter_tree)
            _shoot(browser, url, args.out / "report-390.png", 390, 1400, _phone)
            _shoot(
                browser, failing.resolve().as_uri(), args.out / "report-listing-fails.png", 1400, 760, lambda p: None
            )
            _shoot(browser, url, args.out / "report-runs.png", 1400, 1500, _runs)
            _shoot(browser, url, args.out / "report-runs-390.png", 390, 1600, _runs)
            _shoot(browser, url, args.out / "report-rankings-1024.png", 1024, 1500, _rankings)
            top = _tree_pages(Path(scratch))
            _shoot(browser, top.resolve().as_uri(), args.out / "show-tree.png", 1100, 1400, _top)
            child = _child_page(top).resolve().as_uri()
            _shoot(browser, child, args.out / "show-tree-1024.png", 1024, 1000, _top)
            _shoot(browser, child, args.out / "show-tree-390.png", 390, 1000, _top)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
