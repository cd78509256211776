"""Issue 43 items 1 and 2 in headless Chromium: every table fits its box, the ranked column leads, names show.

The report and a ``show`` page, over ``data/sample`` and a generated corpus with long values added (a
1,000-character label, a long error message, 36-character ids): at 1,024 and 1,400 px no visible
table is wider than its box; at 390 px the failed runs are cards and a failed run's error is inside
the viewport. Every wait is for a state (the page loaded, the diagnostics table drawn), never for time.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from subagent_catalog.corpus import read_corpus
from subagent_catalog.synth import writer as w
from subagent_catalog.synth.generate import generate
from subagent_catalog.views.report import write_report
from subagent_catalog.views.transcript_tree import write_tree_pages
from tests.lab import settle

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
LONG_LABEL = "Refactor " + "the extremely long-winded module name " * 26  # over 1,000 characters
LONG_ERROR = "upstream said: " + "a very long error message that goes on " * 30
HUB = "0c8f3a52-5d0e-4c11-9a6b-7e2f4d1c9b80"

# Each visible table wider than the element that holds it, with both widths.
OVERFLOWING = """() => Array.from(document.querySelectorAll('table')).filter(t => t.offsetParent !== null).map(t => {
  const box = t.parentElement;
  return [t.id || t.className, t.getBoundingClientRect().width, box.getBoundingClientRect().width,
          box.scrollWidth, box.clientWidth];
}).filter(([, table, box, scroll, client]) => table > box + 0.5 || scroll > client + 0.5)"""


def _add_long_runs(root: Path) -> None:
    """A hub with a long-labelled failing child, and a failed root whose error is very long."""
    head = w.header(HUB, created_at=1_700_000_000_000, cwd="/work/long")
    log = w.EventLog(HUB)
    log.turn_start()
    log.user("Coordinate the long refactor")
    log.turn_end()
    w.write_session(root, head, log.events, "none")
    for index in range(3):
        sid = f"7d3b1e90-aaaa-4bbb-8ccc-00000000000{index}"
        child = w.EventLog(sid)
        child.descriptor(w.descriptor("continuable", label=f"{LONG_LABEL} {index}"))
        child.turn_start()
        child.user("do the long part")
        child.add("turn/end", {"turn": child.turn, "reason": {"kind": "error", "error": {"message": LONG_ERROR}}})
        created = 1_700_000_000_100 + index
        w.write_session(root, w.header(sid, created_at=created, parent=HUB, subagent=True), child.events, "none")


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("tables")
    sample = base / "sample"
    shutil.copytree(REPO / "data" / "sample", sample)
    _add_long_runs(sample)
    synth = base / "synth"
    generate(synth, sessions=300, seed=43, compression="none", jobs=1)
    _add_long_runs(synth)
    return {"sample": sample, "synth": synth}


@pytest.fixture(scope="module")
def pages(corpora: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pages")
    found: dict[str, Path] = {}
    for name, root in corpora.items():
        corpus = read_corpus(root, cache=False, jobs=1)
        found[f"report-{name}"] = write_report(corpus, out / f"{name}.html")
        found[f"show-{name}"] = write_tree_pages(corpus, HUB, out / f"show-{name}").top
    return found


def _open(browser: Any, path: Path, width: int, *, settles: bool = False) -> tuple[Any, Any, list[str]]:
    """The page at ``width`` px, loaded; ``settles``: ``lab.settle`` may wait on it (its probe is evaluated, which
    the report's Content-Security-Policy forbids: bypassed for that test alone)."""
    context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=settles)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.resolve().as_uri(), wait_until="load")
    if page.locator("#diag-body").count():  # the report's diagnostics table is drawn by its script
        page.wait_for_function("!document.querySelector('#diag-body').textContent.includes('loading')")
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    return context, page, errors


@pytest.mark.parametrize("width", [1024, 1400])
@pytest.mark.parametrize("which", ["report-sample", "report-synth", "show-sample", "show-synth"])
def test_no_table_is_wider_than_its_box(chromium_browser: Any, pages: dict[str, Path], which: str, width: int) -> None:
    context, page, errors = _open(chromium_browser, pages[which], width)
    try:
        assert page.locator("table").count() > 0
        assert page.evaluate(OVERFLOWING) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"tables-{which}-{width}.png"))
        assert errors == []
    finally:
        context.close()


@pytest.mark.parametrize("width", [1024, 1400])
def test_the_ranked_column_and_the_error_come_first(chromium_browser: Any, pages: dict[str, Path], width: int) -> None:
    context, page, _ = _open(chromium_browser, pages["report-synth"], width)
    try:

        def first_heading(table: str) -> str:
            return str(page.locator(f"#{table} thead th:visible").nth(1).text_content()).strip()

        assert first_heading("run-failures-table") == "error or detail"
        assert first_heading("runs-slowest") == "active"
        assert first_heading("runs-costliest") in ("cost", "tokens")
        assert first_heading("trees-slowest").startswith("active")
        assert first_heading("trees-costliest") in ("cost", "tokens")
        # the ranked figure is inside the viewport on every row of the costliest trees
        cells = page.locator("#trees-costliest tbody td.c-cost")
        assert cells.count() > 0
        for index in range(cells.count()):
            box = cells.nth(index).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    finally:
        context.close()


@pytest.mark.parametrize("which", ["report-sample", "report-synth"])
def test_a_failed_runs_error_is_inside_the_viewport_at_390(
    chromium_browser: Any, pages: dict[str, Path], which: str
) -> None:
    context, page, errors = _open(chromium_browser, pages[which], 390)
    try:
        row = page.locator("#run-failures-table tbody tr.run", has_text="a very long error message").first
        row.wait_for(state="visible")
        assert row.evaluate("r => getComputedStyle(r).display") == "flex"  # a card, not a table row
        error = row.locator("td.c-message")
        error.scroll_into_view_if_needed()
        box = error.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["height"] > 0
        # the card names the run by its label; its outcome heads its group (issue 57 point 8)
        assert row.locator("td.c-name .nm-t").is_visible() and page.locator("#fail-o-error .badge").is_visible()
        assert "Refactor the extremely" in str(row.locator("td.c-name").text_content())
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#run-failures-table").screenshot(path=str(ARTIFACTS / f"tables-{which}-failures-390.png"))
        assert errors == []
    finally:
        context.close()


RANKINGS = ("runs-slowest", "runs-costliest", "trees-slowest", "trees-costliest", "runs-models")
"""The report's rankings: every column shows on a desktop (issue 57 point 7)."""

# Per ranking: its headings hidden, and the "+N columns" control's text when it shows (else null).
COLUMNS = """() => RANKINGS.map(id => {
  const table = document.getElementById(id);
  const hidden = [...table.querySelectorAll(':scope > thead th')].filter(th => getComputedStyle(th).display === 'none');
  const control = table.querySelector(':scope > caption.cols');
  const shown = control && getComputedStyle(control).display !== 'none' ? control.innerText.trim() : null;
  return [id, hidden.map(th => th.textContent.trim()), shown];
})""".replace("RANKINGS", json.dumps(RANKINGS))


@pytest.mark.parametrize("width", [1024, 1400])
def test_every_ranking_column_shows_on_a_desktop(chromium_browser: Any, pages: dict[str, Path], width: int) -> None:
    context, page, errors = _open(chromium_browser, pages["report-synth"], width, settles=True)
    try:
        assert settle(page, COLUMNS) == [[table, [], None] for table in RANKINGS]
        for table in RANKINGS:  # each heading inside the viewport, the tree rankings full width
            for box in page.locator(f"#{table} thead th").evaluate_all("t => t.map(h => h.getBoundingClientRect())"):
                assert box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= width
        assert page.evaluate(OVERFLOWING) == [] and page.evaluate("document.documentElement.scrollWidth") <= width
        assert errors == []
    finally:
        context.close()


def test_hidden_columns_are_counted_and_revealed_at_390(chromium_browser: Any, pages: dict[str, Path]) -> None:
    context, page, errors = _open(chromium_browser, pages["report-synth"], 390, settles=True)
    try:
        for table, hidden, control in settle(page, COLUMNS):
            assert hidden and control == f"+{len(hidden)} columns", table  # the control says how many are hidden
            page.locator(f"#{table} caption.cols label").click()
            cells = f"""() => {{
              const row = document.querySelector('#{table} tbody tr');
              return [[...row.children].filter(td => td.textContent.trim() && getComputedStyle(td).display === 'none')
                        .length, document.querySelector('#{table} caption.cols').innerText.trim()];
            }}"""
            assert settle(page, cells) == [0, "every column shown"], table  # every cell of the card shows
            assert page.evaluate("document.documentElement.scrollWidth") <= 390
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#trees-slowest").screenshot(path=str(ARTIFACTS / "tables-trees-slowest-all-390.png"))
        assert errors == []
    finally:
        context.close()


def test_the_show_page_names_the_hub_and_its_children(chromium_browser: Any, pages: dict[str, Path]) -> None:
    context, page, _ = _open(chromium_browser, pages["show-synth"], 1400)
    try:
        assert page.title().startswith("Coordinate the long refactor")
        heading = page.locator("h1 .nm")
        assert "Coordinate the long refactor" in str(heading.locator(".nm-t").text_content())
        assert heading.locator("code.nm-id").get_attribute("title") == HUB
        children = page.locator("#children-table tbody .nm")  # the children table (issue 43 item 4)
        assert children.count() == 3
        # a child's label is its name; the id beside it shows its first characters, holds all of it
        first = children.first
        assert str(first.locator(".nm-t").text_content()).startswith("Refactor the extremely")
        ident = first.locator("code.nm-id")
        assert ident.text_content() == "7d3b1e90-aaaa-4bbb-8ccc-000000000000"
        assert ident.evaluate("e => e.scrollWidth > e.clientWidth")  # clipped on screen
    finally:
        context.close()
