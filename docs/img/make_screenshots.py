"""Re-make the widget screenshots in this directory (``make screenshots``; not run by the tests).

Each screenshot is a notebook run in a real JupyterLab (the harness of the
browser tests, ``tests/lab.py``: a local server, headless system Chromium,
nothing downloaded), with the widget's state set from a cell, then the
widget's output area captured.

Usage (from the repository root)::

    .venv/bin/python docs/img/make_screenshots.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.lab import Lab, chromium, errors_in, missing_lab, notebook, write_lab_corpus  # noqa: E402

SAMPLE = """\
from subagent_catalog.corpus import read_corpus
from subagent_catalog.widgets import CatalogBrowser, DiagnosticsDashboard
corpus = read_corpus("data/sample")
"""
FAILING = """\
import tempfile
from subagent_catalog.corpus import read_corpus
from subagent_catalog.widgets import CatalogBrowser
from subagent_catalog.synth.writer import descriptor, header, simple_child_events, write_session

root = tempfile.mkdtemp()
write_session(root, header("run-1", created_at=1_767_225_600_000, cwd="/home/dev/app"), [], "none")
for n, cwd in enumerate(["/home/dev/app", "/home/dev/other"]):
    head = header("helper", created_at=1_767_225_601_000 + n, cwd=cwd, parent="run-1", subagent=True)
    write_session(root, head, simple_child_events("helper", descriptor("continuable", label="Helper")), "none")
browser = CatalogBrowser(read_corpus(root))
browser.reveal("helper")
browser
"""
BIG = """\
from subagent_catalog.corpus import read_corpus
from subagent_catalog.widgets import CatalogBrowser
browser = CatalogBrowser(read_corpus("corpus", compression="none"))
"""
SHOTS: dict[str, tuple[int, list[str]]] = {
    # name: (viewport width, cells); 1,024 px is shot with JupyterLab's side bar open, as a laptop shows it
    "catalog-browser": (1400, [SAMPLE, 'browser = CatalogBrowser(corpus)\nbrowser.reveal("no-descriptor")\nbrowser']),
    "catalog-browser-1024": (
        1024,
        [SAMPLE, 'browser = CatalogBrowser(corpus)\nbrowser.reveal("garbage-line")\nbrowser'],
    ),
    "catalog-browser-800": (
        800,
        [SAMPLE, 'browser = CatalogBrowser(corpus)\nbrowser.reveal("auth-refactor", expand=True)\nbrowser'],
    ),
    "catalog-browser-runs": (
        1400,
        [
            SAMPLE,
            'browser = CatalogBrowser(corpus)\nbrowser.outcome = "failed (any)"\nbrowser.sort_by = "cost"\n'
            'browser.selected = browser.find("auth-refactor")\nbrowser',
        ],
    ),
    "catalog-browser-390": (390, [SAMPLE, 'browser = CatalogBrowser(corpus)\nbrowser.kind = "diagnostic"\nbrowser']),
    "catalog-browser-hub": (1400, [BIG, 'browser.reveal("hub-run", expand=True)\nbrowser']),
    "catalog-browser-search": (1400, [BIG, 'browser.search = "needle"\nbrowser.reveal("needle-0997")\nbrowser']),
    "catalog-browser-listing-fails": (1400, [FAILING]),
    "diagnostics-dashboard": (
        1400,
        [SAMPLE, 'board = DiagnosticsDashboard(corpus)\nboard.bar("corrupt · no-descriptor").click()\nboard'],
    ),
    "diagnostics-dashboard-runs": (
        1024,
        [
            SAMPLE,
            'board = DiagnosticsDashboard(corpus)\nboard.selected_dimension = "outcome"\n'
            'board.bar("error").click()\nboard',
        ],
    ),
    "diagnostics-dashboard-390": (
        390,
        [SAMPLE, 'board = DiagnosticsDashboard(corpus)\nboard.bar("corrupt · no-descriptor").click()\nboard'],
    ),
}


def capture(lab: Lab, name: str, width: int, out: Path) -> None:
    """Run the notebook ``name`` at ``width`` px and save its last output as ``out/name.png``.

    Below 1,000 px the side bar is closed and the window is shot (a narrow layout is read top to
    bottom); at 1,024 px the side bar is open; wider, the output alone is shot.
    """
    page = lab.notebook(f"{name}.ipynb", width=width, height=1100 if width > 500 else 844, sidebar=1000 < width < 1200)
    if errors := errors_in(page):
        raise RuntimeError(f"{name}: {errors}")
    if name.startswith("catalog-browser"):
        page.wait_for_selector(".sc-row .sc-label")
        page.wait_for_function("() => ![...document.querySelectorAll('.sc-label')].some(l => l.textContent === '…')")
        page.wait_for_function("() => !document.querySelector('.sc-detail.sc-loading')")
    else:
        page.wait_for_selector(".jp-OutputArea-output table", timeout=30_000)
    page.wait_for_timeout(800)
    output: Any = page.query_selector_all(".jp-OutputArea-output")[-1]
    if width < 1200:  # the window as the reader sees it, scrolled to the widget
        output.evaluate("o => o.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
        page.screenshot(path=str(out / f"{name}.png"))
    else:
        output.scroll_into_view_if_needed()
        output.screenshot(path=str(out / f"{name}.png"))
    print(f"wrote {out / name}.png")


def main(argv: list[str] | None = None) -> int:
    """Write every screenshot (or the named ones); returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    parser.add_argument("names", nargs="*", help=f"only these ({', '.join(SHOTS)})")
    args = parser.parse_args(argv)
    problem = missing_lab()
    found = chromium()
    if problem or found is None:
        print(problem or "no chromium (run `make browser-deps`)", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="sc-shots-"))
    try:
        (work / "data").symlink_to(REPO / "data")
        write_lab_corpus(work / "corpus")
        names = args.names or list(SHOTS)
        for name in names:
            notebook(work / f"{name}.ipynb", SHOTS[name][1])
        with Lab(work, chromium_path=found) as lab:
            for name in names:
                capture(lab, name, SHOTS[name][0], args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
