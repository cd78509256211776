"""The notebook widgets in a real JupyterLab, driven by headless Chromium through Playwright.

Run with ``pytest -m browser tests/test_lab_browser.py``. Like
``tests/test_report_browser.py``, it is skipped when there is no Chromium
(``make browser-deps`` installs Debian's) or no Playwright; a missing
JupyterLab or anywidget is a failure (both are dev extras). Screenshots go to
tests/artifacts/.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab import REPO, Lab, box, chromium, errors_in, missing_lab, notebook, write_lab_corpus

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
EXAMPLES = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
BROWSE = """\
from subagent_catalog.corpus import read_corpus
from subagent_catalog.widgets import CatalogBrowser
corpus = read_corpus("corpus", compression="none")
browser = CatalogBrowser(corpus)
browser"""
DASHBOARD = """\
from subagent_catalog.corpus import read_corpus
from subagent_catalog.widgets import DiagnosticsDashboard
board = DiagnosticsDashboard(read_corpus("data/sample"))
board"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(REPO / "notebooks", root / "notebooks")  # run copies: autosave never touches the repo
    (root / "data").symlink_to(REPO / "data")
    ids = write_lab_corpus(root / "corpus")
    notebook(root / "browse.ipynb", [BROWSE])
    notebook(root / "dashboard.ipynb", [DASHBOARD])
    return {"root": root, "ids": ids}


@pytest.fixture(scope="module")
def lab(workspace: dict[str, Any]) -> Iterator[Lab]:
    pytest.importorskip("playwright.sync_api")
    found = chromium()
    if found is None:
        pytest.skip("no chromium (run `make browser-deps`)")
    problem = missing_lab()
    if problem is not None:
        pytest.fail(problem)
    with Lab(workspace["root"], chromium_path=found) as running:
        yield running


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"lab-{name}.png"))


def row_texts(page: Any) -> list[str]:
    return [str(t) for t in page.eval_on_selector_all(".sc-row .sc-label", "rows => rows.map(r => r.textContent)")]


def wait_for_row(page: Any, text: str, selector: str = ".sc-row") -> Any:
    page.wait_for_function(
        "([sel, text]) => [...document.querySelectorAll(sel)].some(r => r.textContent.includes(text))",
        arg=[selector, text],
        timeout=20_000,
    )
    return page.locator(selector, has_text=text).first


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_notebook_renders_its_widgets(lab: Lab, name: str) -> None:
    page = lab.notebook(f"notebooks/{name}")
    try:
        assert errors_in(page) == []
        page.wait_for_selector(".jp-OutputArea-output .widget-box, .jp-OutputArea-output .sc-browser", timeout=30_000)
        widgets = page.query_selector_all(".jp-OutputArea-output > .sc-browser, .jp-OutputArea-output > .widget-box")
        widgets += page.query_selector_all(".jp-OutputArea-output .sc-browser")
        assert widgets, f"{name} shows no widget"
        for widget in widgets:
            widget.scroll_into_view_if_needed()
            size = box(widget)
            assert size["width"] > 200 and size["height"] > 50, f"{name}: a widget is drawn {size}"
        for browser in page.query_selector_all(".sc-browser"):
            browser.scroll_into_view_if_needed()
            assert box(browser.query_selector(".sc-scroll"))["height"] > 200
            page.wait_for_selector(".sc-row .sc-label:not(:empty)")
            assert not any(t == "…" for t in row_texts(page)[:3]), "row labels never arrived"
        shot(page, name.removesuffix(".ipynb"))
    finally:
        page.close()


def test_browser_scales_to_the_last_root_a_hub_and_a_search(lab: Lab, workspace: dict[str, Any]) -> None:
    ids = workspace["ids"]
    page = lab.notebook("browse.ipynb")
    try:
        assert errors_in(page) == []
        scroll = page.wait_for_selector(".sc-scroll")
        assert box(scroll)["height"] > 200
        wait_for_row(page, "run-00000")
        assert page.inner_text(".sc-listtext") == "4,000 rows"

        # the last of 4,000 roots: End in the focused list, then its label arrives
        started = time.perf_counter()
        page.click(".sc-row >> nth=0")
        page.keyboard.press("End")
        last = wait_for_row(page, ids["last_root"])
        assert time.perf_counter() - started < 10
        assert last.is_visible()
        page.wait_for_function(
            "id => document.querySelector('.sc-detail').textContent.includes(id)", arg=ids["last_root"]
        )
        page.keyboard.press("ArrowUp")  # keyboard navigation selects the row above
        page.wait_for_function("() => document.querySelector('.sc-detail').textContent.includes('run-03997')")

        # a 1,000-child hub: search it, expand it from the result (reveal in tree + expand)
        page.fill(".sc-search", "hub-run")
        page.keyboard.press("Enter")
        result = wait_for_row(page, "hub-run  [session · 1000 below]")
        assert "1 matching" in page.inner_text(".sc-listtext")
        result.locator(".sc-toggle").click()
        page.wait_for_function("() => document.querySelector('.sc-listtext').textContent === '5,000 rows'")
        wait_for_row(page, "hub-child-0000")
        assert page.locator(".sc-row.sc-selected", has_text="hub-run").is_visible()
        page.keyboard.press("ArrowDown")
        page.keyboard.press("PageDown")
        shot(page, "hub")

        # search and reveal a child deep in the hub
        page.fill(".sc-search", "needle")
        page.keyboard.press("Enter")
        wait_for_row(page, ids["needle"]).locator(".sc-reveal").click()
        selected = page.locator(".sc-row.sc-selected", has_text=ids["needle"])
        selected.wait_for(state="visible", timeout=20_000)
        inside, view = box(selected), box(scroll)
        assert view["y"] <= inside["y"] and inside["y"] + inside["height"] <= view["y"] + view["height"]
        page.wait_for_function("id => document.querySelector('.sc-detail').textContent.includes(id)", arg=ids["needle"])
        assert "back to the results (1)" in page.inner_text(".sc-listbar")
        shot(page, "search-revealed")

        # the detail pane is not clipped: nothing overflows it (texts wrap, wide tables scroll in their own box)
        overflow = page.eval_on_selector(
            ".sc-detail",
            """d => [d.scrollWidth - d.clientWidth,
                ...[...d.querySelectorAll('pre')].map(p => p.scrollWidth - p.clientWidth),
                ...[...d.querySelectorAll('table')].map(t => t.getBoundingClientRect().right
                                                         - d.getBoundingClientRect().right)]""",
        )
        assert max(overflow) <= 1, overflow

        # at 800 px the detail pane goes below the tree
        page.set_viewport_size({"width": 800, "height": 1000})
        page.wait_for_timeout(300)
        tree, detail = box(scroll), box(page.query_selector(".sc-detail"))
        assert detail["y"] >= tree["y"] + tree["height"] - 1
        filters = box(page.query_selector(".sc-filters"))
        body = box(page.query_selector(".sc-browser"))
        assert filters["x"] + filters["width"] <= body["x"] + body["width"] + 1  # the filter grid wraps
        shot(page, "browser-800")
    finally:
        page.close()


def test_dashboard_bar_click_lists_the_sessions(lab: Lab) -> None:
    page = lab.notebook("dashboard.ipynb")
    try:
        assert errors_in(page) == []
        bar = page.wait_for_selector('button[title^="corrupt · no-descriptor:"]', timeout=30_000)
        assert box(bar)["height"] > 10
        bar.click()
        page.wait_for_function(
            "() => [...document.querySelectorAll('.jp-OutputArea-output table')]"
            ".some(t => t.textContent.includes('header-only'))"
        )
        shot(page, "dashboard-bar")
    finally:
        page.close()
