"""Re-make the widget screenshots in this directory (a maintainer tool, not run by the tests).

Each screenshot is a notebook executed with nbclient (widget state stored in
the notebook), exported to a page that holds that widget state and renders
it with the ``@jupyter-widgets/html-manager`` embed script served from a
local directory (no CDN), then captured by headless Chromium.

Usage (from the repository root)::

    npm install --prefix /tmp/wm @jupyter-widgets/html-manager@1.0.15
    .venv/bin/python docs/img/make_screenshots.py \\
        --html-manager /tmp/wm/node_modules/@jupyter-widgets/html-manager/dist
"""

from __future__ import annotations

import argparse
import html
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import nbclient
import nbformat

REPO = Path(__file__).resolve().parents[2]
FAILING_SOURCE = """\
import tempfile
from subagent_catalog import read_corpus
from subagent_catalog.views.widgets import CatalogBrowser
from subagent_catalog.synth.writer import descriptor, header, simple_child_events, write_session

root = tempfile.mkdtemp()
write_session(root, header("run-1", created_at=1_767_225_600_000, cwd="/home/dev/app"), [], "none")
for n, cwd in enumerate(["/home/dev/app", "/home/dev/other"]):
    head = header("helper", created_at=1_767_225_601_000 + n, cwd=cwd, parent="run-1", subagent=True)
    write_session(root, head, simple_child_events("helper", descriptor("continuable", label="Helper")), "none")
corpus = read_corpus(root)
browser = CatalogBrowser(corpus)
browser.expand(browser.visible[0])
browser.selected = browser.row(browser.visible[2]).key
browser.tabs.selected_index = 0
browser
"""
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--virtual-time-budget=15000",
]


def _executed(book: Any, cwd: Path) -> Any:
    """Execute a notebook in ``cwd`` with its widget state stored in the metadata."""
    nbclient.NotebookClient(
        book, kernel_name="python3", store_widget_state=True, timeout=300, resources={"metadata": {"path": str(cwd)}}
    ).execute()
    return book


def _widget_page(book: Any, index: int, title: str) -> str:
    """A page rendering the ``index``-th widget view of an executed notebook from its stored state."""
    state = book.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]
    views = [
        out["data"]["application/vnd.jupyter.widget-view+json"]
        for cell in book.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
    ]
    state_json = json.dumps(state).replace("</", "<\\/")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">'
        f"<title>{html.escape(title)}</title>"
        "<style>body { margin: 12px; background: #fff; font-family: system-ui, sans-serif; }</style>"
        '<script src="embed.js"></script></head><body>'
        f'<script type="application/vnd.jupyter.widget-state+json">{state_json}</script>'
        f'<script type="application/vnd.jupyter.widget-view+json">{json.dumps(views[index])}</script>'
        "</body></html>"
    )


def _shoot(chromium: str, page: Path, png: Path, size: str) -> None:
    """Capture a page with headless Chromium."""
    subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--window-size={size}", f"--screenshot={png}", page.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
    )


def main(argv: list[str] | None = None) -> int:
    """Make every screenshot.

    Examples:
        >>> main.__name__
        'main'
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html-manager", required=True, type=Path, help="the html-manager package's dist directory")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args(argv)
    notebooks = REPO / "notebooks"
    failing = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    failing.cells = [nbformat.v4.new_code_cell(FAILING_SOURCE)]
    shots = [
        ("catalog-browser.png", nbformat.read(notebooks / "02-audit-a-run.ipynb", as_version=4), "1500,780"),
        (
            "diagnostics-dashboard.png",
            nbformat.read(notebooks / "03-descriptor-quality.ipynb", as_version=4),
            "1500,520",
        ),
        ("catalog-browser-listing-fails.png", failing, "1500,700"),
    ]
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for item in args.html_manager.iterdir():
            if item.is_file() and not item.name.endswith(".map"):
                shutil.copy(item, work / item.name)
        for name, book, size in shots:
            page = work / (name + ".html")
            page.write_text(_widget_page(_executed(book, notebooks), 0, name), encoding="utf-8")
            _shoot(args.chromium, page, args.out / name, size)
            print(args.out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
