"""The report's Errors and Trends sections in headless Chromium: the search by error, the links, the fit.

Run with ``pytest -m browser tests/test_report_trends_browser.py`` (Playwright and a Chromium, as
``tests/test_report_browser.py``). Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from subagent_catalog.analysis.run_summary import run_summary
from subagent_catalog.corpus import read_corpus
from subagent_catalog.views.report import write_report

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
REPO = Path(__file__).resolve().parent.parent
NO_OVERFLOW = "document.documentElement.scrollWidth <= window.innerWidth"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(read_corpus(REPO / "data" / "sample"), tmp_path_factory.mktemp("r") / "report.html")


def _page(browser: Any, path: Path, width: int) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.resolve().as_uri(), wait_until="load")
    return context, page, errors


def test_report_search_finds_a_failed_run_by_its_error_code_and_message(chromium_browser: Any, report: Path) -> None:
    failures = run_summary(read_corpus(REPO / "data" / "sample")).failures
    row = failures["error_code"].to_list().index("CONTEXT_LENGTH")
    context, page, errors = _page(chromium_browser, report, 1400)
    try:
        for query in ("context_length", "LENGTH EXCEEDED"):
            page.fill("#tree-query", query)
            page.click("#tree-search button[type=submit]")
            hit = page.locator("#search-results li.error-hit").first
            hit.wait_for(state="visible")
            assert "CONTEXT_LENGTH" in hit.inner_text()
        hit.locator("a", has_text="failed run").click()
        page.wait_for_function(f"() => location.hash === '#fail-{row}'")
        target = page.locator(f"#fail-{row}")
        assert failures["session_id"][row] in target.inner_text()
        box = target.bounding_box()
        assert box is not None and 0 <= box["y"] < 900  # scrolled into view
        hit.locator("button.reveal").click()  # and the tree opens down to it
        page.locator("#tree .row.hit").first.wait_for(state="visible")
        assert errors == []
    finally:
        context.close()


def test_report_tools_failed_count_scrolls_to_the_failing_calls(chromium_browser: Any, report: Path) -> None:
    context, page, errors = _page(chromium_browser, report, 1400)
    try:
        link = page.locator("#runs-tools a[href^='#tool-fails-']").first
        anchor = link.get_attribute("href")
        link.click()
        page.wait_for_function(f"() => location.hash === '{anchor}'")
        target = page.locator(str(anchor))
        assert "EXIT_NONZERO" in target.inner_text()
        box = target.bounding_box()
        assert box is not None and 0 <= box["y"] < 900
        assert errors == []
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1400])
def test_report_errors_and_trends_fit_their_box(chromium_browser: Any, report: Path, width: int) -> None:
    context, page, errors = _page(chromium_browser, report, width)
    try:
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert page.evaluate(NO_OVERFLOW), page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        charts = page.locator("#trends figure.chart")
        assert charts.count() == 5
        for i in range(charts.count()):
            figure, svg = charts.nth(i).bounding_box(), charts.nth(i).locator("svg").bounding_box()
            assert (
                figure and svg and svg["x"] >= figure["x"] and svg["x"] + svg["width"] <= figure["x"] + figure["width"]
            )
        example = page.locator("#error-groups a[href^='#fail-']").first
        example.click()
        page.wait_for_function("() => location.hash.startsWith('#fail-')")
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#trends").screenshot(path=str(ARTIFACTS / f"report-trends-{width}.png"))
        page.locator("#errors").screenshot(path=str(ARTIFACTS / f"report-errors-{width}.png"))
        assert errors == []
    finally:
        context.close()
