"""The notebook widgets in a real JupyterLab, driven by headless Chromium through Playwright.

Run with ``pytest -m browser tests/test_lab_browser.py``. Like
``tests/test_report_browser.py``, it is skipped when there is no Chromium
(``make browser-deps`` installs Debian's) or no Playwright; a missing
JupyterLab or anywidget is a failure (both are dev extras). Screenshots go to
tests/artifacts/.

Cost: one JupyterLab server and one page serve every test (``tests/lab.py``),
and every test after the example notebooks works on one notebook, ``checks``
(a 5,000-session corpus with a 1,000-child hub, the dashboard, a corpus whose
listing fails), run once: each test puts the widgets back in their first state
from the kernel instead of restarting it.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab import REPO, Lab, box, errors_in, missing_lab, notebook, settle, write_lab_corpus

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
EXAMPLES = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
CHECKS = [
    """\
from subagent_catalog.corpus import read_corpus
from subagent_catalog.widgets import CatalogBrowser, DiagnosticsDashboard
corpus = read_corpus("corpus", compression="none")
browser = CatalogBrowser(corpus)
browser""",
    """\
board = DiagnosticsDashboard(read_corpus("data/sample"))
board""",
    """\
failing = CatalogBrowser(read_corpus("failing", compression="none"))
failing""",
    """\
huge = CatalogBrowser(read_corpus("huge", compression="none"))
huge""",
    """\
runs = CatalogBrowser(read_corpus("data/sample"))
runs""",
]
RESET = (
    "browser.clear_filters(); browser.expanded = []; browser.selected = None; browser.tree_height = None; "
    "browser.tab = 'sessions'; board.clear_selection(); board.scope = 'all'; board.split_by = None; "
    "board.selected_dimension = 'reason_cause'; runs.clear_filters(); runs.selected = None"
)
BROWSER = "document.querySelector('.sc-browser')"  # the big browser: the first widget of the notebook


def write_failing_corpus(root: Path) -> None:
    """The same subagent id in two project directories: upstream's whole listing fails."""
    from subagent_catalog.synth.writer import descriptor, header, simple_child_events, write_session

    write_session(root, header("run-1", created_at=1_767_225_600_000, cwd="/home/dev/app"), [], "none")
    for n, cwd in enumerate(["/home/dev/app", "/home/dev/other"]):
        head = header("helper", created_at=1_767_225_601_000 + n, cwd=cwd, parent="run-1", subagent=True)
        write_session(root, head, simple_child_events("helper", descriptor("continuable", label="Helper")), "none")


HUGE_RESULT = 3 << 20
"""Characters of the one tool result of the ``huge`` corpus (markup: every character escaped in the pane)."""


def write_huge_corpus(root: Path) -> None:
    """One session whose tool result is 3 MiB: the pane holds its first 20,000 characters and says so."""
    from subagent_catalog.synth.writer import EventLog, header, write_session

    log = EventLog("huge")
    log.turn_start()
    log.user("read the big file")
    log.tool_round("c1", ('<a href="x">&</a>\n' * (HUGE_RESULT // 18 + 1))[:HUGE_RESULT])
    log.turn_end()
    write_session(root, header("huge", created_at=1_767_225_600_000), log.events, "none")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(REPO / "notebooks", root / "notebooks")  # run copies: autosave never touches the repo
    (root / "data").symlink_to(REPO / "data")
    ids = write_lab_corpus(root / "corpus")
    write_failing_corpus(root / "failing")
    write_huge_corpus(root / "huge")
    notebook(root / "checks.ipynb", CHECKS)
    return {"root": root, "ids": ids}


@pytest.fixture(scope="module")
def lab(workspace: dict[str, Any], chromium_browser: Any) -> Iterator[Lab]:
    problem = missing_lab()
    if problem is not None:
        pytest.fail(problem)
    with Lab(workspace["root"], browser=chromium_browser) as running:
        yield running


@pytest.fixture
def checks(lab: Lab) -> Any:
    """The checks notebook (run once), its widgets back in their first state, at 1,400 x 1,000 px."""
    page = lab.notebook("checks.ipynb")
    assert errors_in(page) == []
    lab.run(RESET)
    page.wait_for_function(f"() => {BROWSER}.querySelector('.sc-listtext').textContent === '4,000 rows'")
    page.evaluate(
        f"""() => {{
            document.activeElement && document.activeElement.blur();
            {BROWSER}.querySelector('.sc-scroll').scrollTop = 0;
            document.querySelector('.jp-WindowedPanel-outer').scrollTop = 0;
        }}"""
    )
    page.wait_for_selector(".sc-row .sc-label:not(:empty)")
    return page


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


def detail_shows(page: Any, text: str) -> None:
    """Wait until the big browser's detail pane describes a session whose id contains ``text``."""
    page.wait_for_function(
        f"""text => {{ const d = {BROWSER}.querySelector('.sc-detail');
            return !d.classList.contains('sc-loading') && d.textContent.includes(text); }}""",
        arg=text,
        timeout=30_000,
    )


def _kernel_sees(lab: Lab, expression: str, expected: str, timeout: float = 15) -> bool:
    """Whether the kernel's ``expression`` prints ``expected`` within ``timeout`` (a change made in the page
    reaches the kernel asynchronously: on a loaded machine, after the page shows it)."""
    deadline = time.monotonic() + timeout
    while True:
        seen = lab.run(f"print({expression})").strip()
        if seen == expected or time.monotonic() > deadline:
            return seen == expected
        time.sleep(0.2)


def row_box(page: Any, text: str, selector: str = ".sc-row.sc-selected") -> dict[str, float]:
    """The box of the drawn row holding ``text``, measured in one turn of the page's event loop.

    The list redraws its rows (a new element each time) whenever labels arrive or it scrolls, so a
    locator found in one step may be detached by the next; measuring inside the page cannot race a draw.
    """
    found = page.wait_for_function(
        """([sel, text]) => {
            const row = [...document.querySelectorAll(sel)].find(r => r.textContent.includes(text));
            if (!row) return null;
            const r = row.getBoundingClientRect();
            return r.width > 0 && r.height > 0 ? {x: r.x, y: r.y, width: r.width, height: r.height} : null;
        }""",
        arg=[selector, text],
        timeout=20_000,
    )
    return dict(found.json_value())


def inside(inner: dict[str, float], outer: dict[str, float], slack: float = 1) -> bool:
    return (
        outer["y"] - slack <= inner["y"]
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack
        and outer["x"] - slack <= inner["x"]
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
    )


# ------------------------------------------------------------------ the example notebooks


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_notebook_renders_its_widgets(lab: Lab, name: str) -> None:
    # what tests/test_notebooks.py checks with nbclient (conftest runs each notebook once), and more
    page = lab.notebook(f"notebooks/{name}", sidebar=True)
    assert errors_in(page) == []
    cells = page.eval_on_selector_all(".jp-Notebook .jp-CodeCell .jp-InputPrompt", "ps => ps.map(p => p.textContent)")
    assert cells and all(c.strip("[]: ").isdigit() for c in cells), cells  # every code cell ran
    page.wait_for_selector(".jp-OutputArea-output .widget-box, .jp-OutputArea-output .sc-browser", timeout=30_000)
    widgets = page.query_selector_all(".jp-OutputArea-output > .widget-box")
    widgets += page.query_selector_all(".jp-OutputArea-output .sc-browser")
    assert widgets, f"{name} shows no widget"
    for widget in widgets:
        widget.scroll_into_view_if_needed()
        size = box(widget)
        assert size["width"] > 200 and size["height"] > 50, f"{name}: a widget is drawn {size}"
    for browser in page.query_selector_all(".sc-browser"):
        browser.scroll_into_view_if_needed()
        assert box(browser.query_selector(".sc-scroll"))["height"] >= 200  # at least 8 rows' worth
        page.wait_for_selector(".sc-row .sc-label:not(:empty)")
        # a row not yet named reads "…" until the kernel answers (later on a loaded machine): wait for the first three
        page.wait_for_function(
            """() => { const t = [...document.querySelectorAll('.sc-row .sc-label')].slice(0, 3)
                .map(r => r.textContent); return t.length > 0 && t.every(x => x && x !== '…'); }""",
            timeout=60_000,
        )
        assert not any(t == "…" for t in row_texts(page)[:3]), "row labels never arrived"
    shot(page, name.removesuffix(".ipynb"))


# ------------------------------------------------------------------ the browser at scale


def test_browser_scales_to_the_last_root_a_hub_and_a_search(lab: Lab, checks: Any, workspace: dict[str, Any]) -> None:
    ids = workspace["ids"]
    page = checks
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
    detail_shows(page, ids["last_root"])
    page.keyboard.press("ArrowUp")  # keyboard navigation selects the row above
    detail_shows(page, "run-03997")

    # a 1,000-child hub: search it, expand it from the result (reveal in tree + expand)
    page.fill(".sc-search", "hub-run")
    page.keyboard.press("Enter")
    result = wait_for_row(page, "hub-run  [session · 1000 below]")
    assert page.inner_text(".sc-listtext").startswith("1 matching session ")
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
    assert inside(row_box(page, ids["needle"]), box(scroll))
    detail_shows(page, ids["needle"])
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
    settle(page)
    tree, detail = box(scroll), box(page.query_selector(".sc-detail"))
    assert detail["y"] >= tree["y"] + tree["height"] - 1
    filters = box(page.query_selector(".sc-filters"))
    body = box(page.query_selector(".sc-browser"))
    assert filters["x"] + filters["width"] <= body["x"] + body["width"] + 1  # the filter grid wraps
    shot(page, "browser-800")


# ------------------------------------------------------------------ state set from Python


def test_state_set_from_python_shows_in_the_browser(lab: Lab, checks: Any) -> None:
    page = checks
    listtext = f"{BROWSER}.querySelector('.sc-listtext').textContent"
    kind = f"{BROWSER}.querySelector('.sc-select[data-filter=kind]')"

    # a search and a filter set in a kernel cell: the list, the box and the dropdown show them
    lab.run('browser.kind = "subagent"; browser.search = "needle"')
    page.wait_for_function(f"() => {listtext}.startsWith('1 matching session (search \"needle\", kind=subagent)')")
    assert page.evaluate(f"() => {kind}.selectedOptions[0].textContent") == "subagent"
    assert page.evaluate(f"() => {BROWSER}.querySelector('.sc-search').value") == "needle"
    wait_for_row(page, "the needle  (needle-0997)  [one-shot]  ← hub-run")  # named (views.names), id beside
    lab.run("browser.clear_filters()")
    page.wait_for_function(f"() => {listtext} === '4,000 rows'")
    assert page.evaluate(f"() => [{kind}.value, {BROWSER}.querySelector('.sc-search').value]") == ["", ""]

    # a value the dropdown does not offer is shown, not dropped; no match says so
    lab.run("browser.depth = 7")
    page.wait_for_function(f"() => {listtext}.startsWith('0 matching sessions (depth=7)')")
    assert page.evaluate(f"() => {BROWSER}.querySelector('[data-filter=depth]').selectedOptions[0].textContent") == "7"
    assert page.locator(".sc-empty").first.is_visible()
    lab.run("browser.depth = None")
    page.wait_for_function(f"() => {listtext} === '4,000 rows'")

    # a selection from Python: the detail shows it, and its row is scrolled into view
    lab.run('browser.selected = browser.find("run-03000")')
    detail_shows(page, "run-03000")
    assert inside(row_box(page, "run-03000"), box(page.query_selector(".sc-scroll")))
    y = row_box(page, "run-03000")["y"]

    # a hub opened above it from Python: the rows in view and the keyboard cursor stay on their sessions
    lab.run('browser.expand(str(browser.find("hub-run")))')
    page.wait_for_function(f"() => {listtext} === '5,000 rows'")
    assert abs(row_box(page, "run-03000")["y"] - y) <= 1
    page.focus(".sc-scroll")
    page.keyboard.press("ArrowDown")
    detail_shows(page, "run-03001")

    # collapsing it from Python keeps them too; then the tab
    lab.run("browser.expanded = []")
    page.wait_for_function(f"() => {listtext} === '4,000 rows'")
    page.locator(".sc-row.sc-selected", has_text="run-03001").wait_for(state="visible")
    lab.run('browser.tab = "problems"')
    page.wait_for_function(f"() => {BROWSER}.querySelector('.sc-sessions').hidden")
    assert page.locator(".sc-problems").first.is_visible()
    lab.run('browser.tab = "sessions"')
    page.wait_for_function(f"() => !{BROWSER}.querySelector('.sc-sessions').hidden")
    shot(page, "python-state")


# ------------------------------------------------------------------ the list's height


def test_the_list_fits_the_room_and_resizes(lab: Lab, checks: Any) -> None:
    page = checks
    widget = page.query_selector(".sc-browser")
    widget.evaluate("w => w.scrollIntoView({block: 'start'})")
    settle(page)
    panel = box(page.query_selector(".jp-WindowedPanel-outer"))
    scroll = page.query_selector(".sc-scroll")
    grip = page.query_selector(".sc-grip")
    fitted = box(scroll)["height"]

    # scrolled to its top, the whole browser is in view and the list takes the room the panel has
    assert inside(box(widget), panel, slack=2)
    assert fitted > 0.6 * panel["height"]
    drawn = "() => document.querySelector('.sc-scroll').querySelectorAll('.sc-row').length"
    assert page.evaluate(drawn) < 100  # 4,000 rows, still only the ones in view are drawn

    # drag the grip 200 px up: the list follows and Python knows its height
    handle = box(grip)
    x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x, y - 200, steps=8)
    page.mouse.up()
    page.wait_for_function("h => document.querySelector('.sc-scroll').offsetHeight < h - 150", arg=fitted)
    dragged = round(box(scroll)["height"])
    assert abs(dragged - (fitted - 200)) <= 2
    page.wait_for_function(f"() => {BROWSER}.querySelector('.sc-grip').getAttribute('aria-valuenow') == {dragged}")
    assert _kernel_sees(lab, "browser.tree_height", str(dragged))

    # set from Python: 1,500 px (taller than the window), still virtualized
    lab.run("browser.tree_height = 1500")
    page.wait_for_function("() => document.querySelector('.sc-scroll').offsetHeight === 1500")
    assert page.evaluate(drawn) < 100
    # the keyboard on the grip: ↑ takes two rows off
    page.focus(".sc-grip")
    page.keyboard.press("ArrowUp")
    page.wait_for_function("() => document.querySelector('.sc-scroll').offsetHeight === 1448")
    page.wait_for_function(f"() => {BROWSER}.querySelector('.sc-grip').getAttribute('aria-valuenow') == 1448")
    assert _kernel_sees(lab, "browser.tree_height", "1448")
    # a double click fits it to the room again
    page.dblclick(".sc-grip")
    page.wait_for_function("h => document.querySelector('.sc-scroll').offsetHeight === h", arg=round(fitted))
    assert _kernel_sees(lab, "browser.tree_height", "None")

    # a short list (3 rows) is 8 rows tall, not a fixed 600 px
    small = page.locator(".sc-browser").nth(1).locator(".sc-scroll")
    small.scroll_into_view_if_needed()
    assert 200 <= box(small.element_handle())["height"] <= 220

    # stacked at 800 px: the list takes about half the room, so the detail pane starts in view
    page.set_viewport_size({"width": 800, "height": 1000})
    widget.evaluate("w => w.scrollIntoView({block: 'start'})")
    settle(page)
    panel = box(page.query_selector(".jp-WindowedPanel-outer"))
    tree, detail = box(scroll), box(page.query_selector(".sc-detail"))
    assert detail["y"] >= tree["y"] + tree["height"] - 1  # below the list
    assert detail["y"] + 100 <= panel["y"] + panel["height"]  # and its first lines are in view
    shot(page, "list-stacked-800")


# ------------------------------------------------------------------ keyboard


def test_keys_typed_in_the_widget_stay_in_it(lab: Lab, checks: Any) -> None:
    page = checks
    cells = "() => document.querySelectorAll('.jp-Notebook .jp-Cell').length"
    before = page.evaluate(cells)
    page.click(".sc-row >> nth=2")
    for key in ["d", "d", "a", "b", "m", "x", "Shift+M", "Shift+ArrowDown"]:  # JupyterLab command-mode keys
        page.keyboard.press(key)
    settle(page)
    assert page.evaluate(cells) == before  # d d did not delete the widget's cell, a/b inserted none
    assert page.locator(".sc-browser").count() == 4  # the checks notebook's four browsers, none removed
    assert page.evaluate("() => document.activeElement.classList.contains('sc-scroll')")  # focus stayed

    # from the search box: ↓ goes to the results, Enter reveals the result in the tree
    page.fill(".sc-search", "needle")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("() => document.activeElement.classList.contains('sc-scroll')")
    page.wait_for_function("() => document.querySelector('.sc-listtext').textContent.startsWith('1 matching')")
    page.keyboard.press("Enter")
    page.locator(".sc-row.sc-selected", has_text="needle-0997").wait_for(state="visible", timeout=20_000)
    page.keyboard.press("ArrowLeft")  # to its parent, the hub
    detail_shows(page, "hub-run")


# ------------------------------------------------------------------ a failing listing


def test_failing_listing_marks_the_breaking_file(lab: Lab, checks: Any) -> None:
    page = checks
    failing = page.locator(".sc-browser").nth(1)
    failing.scroll_into_view_if_needed()
    assert "Upstream listing fails" in failing.locator(".sc-banner").inner_text()
    breaking = failing.locator(".sc-row.sc-danger")
    breaking.wait_for(state="visible")
    assert breaking.count() == 1 and "helper  [fails the listing]" in (breaking.text_content() or "")
    breaking.click()
    page.wait_for_function(
        "() => document.querySelectorAll('.sc-browser')[1].querySelector('.sc-detail').textContent"
        ".includes('duplicate JSONL session id')"
    )
    failing.locator(".sc-tab", has_text="Problems").click()
    fatal = failing.locator(".sc-ptable tr.sc-fatal")
    assert fatal.count() == 1 and "duplicate-id" in fatal.inner_text()
    shot(page, "listing-fails")


# ------------------------------------------------------------------ a huge text in the detail pane


def test_the_detail_pane_clips_a_huge_tool_result_with_a_visible_marker(lab: Lab, checks: Any) -> None:
    page = checks
    huge = page.locator(".sc-browser").nth(2)
    huge.scroll_into_view_if_needed()
    huge.locator(".sc-row", has_text="huge").first.click()
    page.wait_for_function(
        """() => { const d = document.querySelectorAll('.sc-browser')[2].querySelector('.sc-detail');
            return !d.classList.contains('sc-loading') && d.textContent.includes('more bytes not shown'); }""",
        timeout=30_000,
    )
    marker = huge.locator(".sc-detail .sc-clipped").first
    marker.scroll_into_view_if_needed()
    assert marker.is_visible()
    left = HUGE_RESULT - 20_000  # the pane's clip (PANE_TEXT_CLIP), all ASCII
    assert marker.inner_text().startswith(f"… {left:,} more bytes not shown")
    assert "transcript_text(corpus, 'huge', " in marker.inner_text()
    detail = page.evaluate("() => document.querySelectorAll('.sc-browser')[2].querySelector('.sc-detail').innerHTML")
    assert len(detail) < 400_000  # 3 MiB of markup was 18 MB of escaped text in the pane
    shot(page, "detail-clip")


# ------------------------------------------------------------------ a dark theme


CONTRAST = """selectors => {
    const channel = v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    const lum = c => {
        const [r, g, b] = c.match(/[\\d.]+/g).slice(0, 3).map(Number).map(channel);
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const contrast = el => {
        let node = el, bg = 'rgba(0, 0, 0, 0)';
        while (node && /rgba\\(0, 0, 0, 0\\)|transparent/.test(bg)) {
            bg = getComputedStyle(node).backgroundColor;
            node = node.parentElement;
        }
        const [a, b] = [lum(getComputedStyle(el).color), lum(bg)].sort((x, y) => y - x);
        return (a + 0.05) / (b + 0.05);
    };
    const elements = selectors.map(s => document.querySelector(s));
    return elements.every(e => e && e.isConnected) ? elements.map(contrast) : null;
}"""
"""The contrast of each selector's first element with the background it is drawn on; null while one is missing
(a widget being drawn again: a detached element has no computed colours)."""


THEME = "theme => { window.jupyterapp.commands.execute('apputils:change-theme', {theme}); }"
"""Switch JupyterLab's theme without awaiting the command (``evaluate`` has no timeout): the wait after it does."""


def test_readable_in_a_dark_theme(lab: Lab, checks: Any) -> None:
    # the rows, the pane and the dashboard's table have light backgrounds: the widgets stay light
    page = checks
    lab.run('browser.reveal("needle-0997"); board.pick("corrupt · no-descriptor")')
    page.evaluate(THEME, "JupyterLab Dark")
    try:
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
        detail_shows(page, "needle-0997")
        selectors = [".sc-row.sc-selected .sc-label", ".sc-detail pre", ".sc-tab.sc-active", ".sc-table td"]
        probe = f"""() => {{ const contrasts = ({CONTRAST})({json.dumps(selectors)});
            return contrasts && [getComputedStyle(document.body).backgroundColor, contrasts]; }}"""
        _, contrasts = settle(page, probe)  # the dark theme's colours are applied and every widget is drawn
        for selector, contrast in zip(selectors, contrasts, strict=True):
            assert contrast >= 4.5, selector
        shot(page, "dark-theme")
    finally:
        page.evaluate(THEME, "JupyterLab Light")
        page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=30_000)


# ------------------------------------------------------------------ the dashboard


def test_dashboard_bar_click_lists_the_sessions(lab: Lab, checks: Any) -> None:
    page = checks
    bar = page.wait_for_selector('button[title^="corrupt · no-descriptor:"]', timeout=30_000)
    bar.scroll_into_view_if_needed()
    assert box(bar)["height"] > 10
    bar.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output table')]"
        ".some(t => t.textContent.includes('header-only'))"
    )
    shot(page, "dashboard-bar")
    # no bar's count is cut off, at 1,024 px with the side bar open nor at 390 px
    clipped = """() => {
        const out = [...document.querySelectorAll('.jp-OutputArea-output')]
            .find(o => o.querySelector('button[title^="child:"]'));
        const right = out.getBoundingClientRect().right;
        return [...out.querySelectorAll('button[title*="sessions, "]')]
            .filter(b => b.scrollWidth > b.clientWidth || b.getBoundingClientRect().right > right + 1)
            .map(b => b.textContent);
    }"""
    labels_cut = """() => [...document.querySelectorAll('.sc-dashboard .sc-bar-label .widget-html-content > div')]
        .filter(d => d.scrollWidth > d.clientWidth + 1).map(d => d.textContent)"""
    for width, sidebar in ((1024, True), (390, False)):
        lab.page(width=width, height=800, sidebar=sidebar)
        bar.scroll_into_view_if_needed()
        settle(page)
        assert page.evaluate(clipped) == [], width
        shot(page, f"dashboard-{width}")
    assert page.evaluate(labels_cut) == []  # at 390 px each label has a line of its own, wrapped


# ------------------------------------------------------------------ run questions (issue 28)

RUNS = "document.querySelectorAll('.sc-browser')[3]"  # the browser of data/sample
FAILED = ("error", "aborted", "max-tokens", "blocked", "interrupted", "open", "unreadable")


def test_filter_the_browser_to_failed_runs_and_sort_by_cost(lab: Lab, checks: Any) -> None:
    page = checks
    runs = page.locator(".sc-browser").nth(3)
    runs.scroll_into_view_if_needed()
    runs.locator(".sc-select[data-filter=outcome]").select_option(label="failed (any)")
    runs.locator(".sc-sort-by").select_option("cost")
    page.wait_for_function(
        f"() => {RUNS}.querySelector('.sc-listtext').textContent.includes('outcome=failed (any), sorted by cost ↓')"
    )
    assert _kernel_sees(lab, "(runs.outcome, runs.sort_by)", "('failed (any)', 'cost')")
    # the expected order, derived in the kernel from the sessions frame, not from the widget
    code = (
        "import json, polars as pl\n"
        f"s = runs.corpus.sessions.with_row_index('k').filter(pl.col('outcome').is_in({list(FAILED)!r}))\n"
        "print(json.dumps(s.sort(['cost_usd', 'created_at_ms', 'k'], descending=[True, False, False],"
        " nulls_last=True)['session_id'].to_list()))"
    )
    ids = json.loads(lab.run(code))
    page.wait_for_function(
        f"n => {RUNS}.querySelectorAll('.sc-row .sc-badge').length === n", arg=len(ids), timeout=20_000
    )
    rows = runs.locator(".sc-row")
    texts = rows.evaluate_all("rs => rs.map(r => r.querySelector('.sc-label').textContent)")
    badges = rows.evaluate_all("rs => rs.map(r => r.querySelector('.sc-badge').textContent)")
    assert len(texts) == len(ids) >= 5
    assert all(badge in FAILED for badge in badges), badges
    for text, sid in zip(texts, ids, strict=True):
        assert sid is None or sid[:8] in text, (text, sid)
    facts = rows.evaluate_all("rs => rs.map(r => (r.querySelector('.sc-facts') || {}).textContent || '')")
    assert "$" in facts[0]  # the costliest failed run shows its cost first
    shot(page, "runs-failed-by-cost")
    # the direction button: smallest first
    runs.locator(".sc-sort-dir").click()
    page.wait_for_function(f"() => {RUNS}.querySelector('.sc-listtext').textContent.includes('sorted by cost ↑')")
    assert _kernel_sees(lab, "runs.sort_descending", "False")


def test_filter_the_browser_by_error_group_and_search_by_error_code(lab: Lab, checks: Any) -> None:
    page = checks
    runs = page.locator(".sc-browser").nth(3)
    runs.scroll_into_view_if_needed()
    group = "CONTEXT_LENGTH · context length exceeded"
    runs.locator(".sc-select[data-filter=error_group]").select_option(label=group)
    page.wait_for_function(f"() => {RUNS}.querySelector('.sc-listtext').textContent.includes('error_group={group}')")
    assert _kernel_sees(lab, "runs.error_group", group)
    code = (
        "import json, polars as pl\n"
        "s = runs.corpus.sessions.filter(pl.col('last_error_code') == 'CONTEXT_LENGTH')\n"
        "print(json.dumps(s['session_id'].to_list()))"
    )
    ids = json.loads(lab.run(code))
    page.wait_for_function(f"n => {RUNS}.querySelectorAll('.sc-row .sc-badge').length === n", arg=len(ids))
    texts = runs.locator(".sc-row").evaluate_all("rs => rs.map(r => r.querySelector('.sc-label').textContent)")
    assert len(texts) == len(ids) >= 1 and all(sid[:8] in text for sid, text in zip(ids, texts, strict=True))
    shot(page, "runs-error-group")
    lab.run("runs.clear_filters()")
    runs.locator(".sc-search").fill("context_length")
    page.wait_for_function(
        f"() => {RUNS}.querySelector('.sc-listtext').textContent.includes('search \"context_length\"')"
    )
    page.wait_for_function(f"n => {RUNS}.querySelectorAll('.sc-row .sc-badge').length === n", arg=len(ids))
    lab.run("runs.clear_filters()")


def _timeline_shows(page: Any, session: str, rows: int) -> None:
    page.wait_for_function(
        f"""([session, rows]) => {{ const c = {BROWSER}.querySelector('.sc-detail .sc-tl-canvas');
            return c && c.dataset.session === session && c.dataset.rows === String(rows); }}""",
        arg=[session, rows],
        timeout=30_000,
    )


def test_reveal_a_child_from_the_timeline(lab: Lab, checks: Any) -> None:
    page = checks
    lab.run('browser.selected = browser.find("hub-run")')
    detail_shows(page, "hub-run")
    _timeline_shows(page, "hub-run", 1000)
    timeline = page.locator(".sc-browser").first.locator(".sc-timeline")
    # 1,000 bars, a handful of nodes: the rows in view are drawn on one canvas
    assert timeline.evaluate("t => t.querySelectorAll('*').length") < 40
    assert "1,000 with own events" in timeline.locator(".sc-tl-head").inner_text()
    index = int(lab.run('print([r[5] for r in browser.timeline["rows"]].index("needle-0997"))').strip())
    scroller = timeline.locator(".sc-tl-scroll")
    scroller.evaluate("(s, top) => { s.scrollTop = top; }", index * 14 - 28)
    page.wait_for_function(
        f"""i => {{ const c = {BROWSER}.querySelector('.sc-tl-canvas');
            return Number(c.dataset.first) <= i && i < Number(c.dataset.last); }}""",
        arg=index,
    )
    canvas = box(timeline.locator(".sc-tl-canvas").element_handle())
    top = scroller.evaluate("s => s.scrollTop")
    page.mouse.move(canvas["x"] + 40, canvas["y"] + index * 14 - top + 7)
    page.wait_for_function(
        f"() => {BROWSER}.querySelector('.sc-tl-canvas').title.startsWith('the needle — needle-0997')"
    )
    page.mouse.click(canvas["x"] + 40, canvas["y"] + index * 14 - top + 7)
    detail_shows(page, "needle-0997")
    assert inside(row_box(page, "needle-0997"), box(page.query_selector(".sc-scroll")))
    page.wait_for_function(f"() => {BROWSER}.querySelector('.sc-listtext').textContent === '5,000 rows'")
    assert _kernel_sees(lab, "browser._tree.ids[browser.selected]", "needle-0997")
    shot(page, "timeline-revealed")


def test_the_detail_pane_scrolls_inside_its_box_at_1024(lab: Lab, checks: Any) -> None:
    # the huge session's pane holds 20,000 characters of one tool result: tens of screens of text
    page = lab.page(width=1024, height=800, sidebar=True)
    widget = page.locator(".sc-browser").nth(2)
    lab.run("huge.selected = 0")
    page.wait_for_function(
        """() => { const d = document.querySelectorAll('.sc-browser')[2].querySelector('.sc-detail');
            return !d.classList.contains('sc-loading') && d.textContent.includes('more bytes not shown'); }""",
        timeout=30_000,
    )
    widget.evaluate("w => w.scrollIntoView({block: 'start'})")
    settle(page)
    panel = box(page.query_selector(".jp-WindowedPanel-outer"))
    detail = widget.locator(".sc-detail")
    detail.evaluate("d => d.querySelectorAll('details').forEach(x => { x.open = true; })")  # unfold every text
    page.wait_for_function(
        "() => { const d = document.querySelectorAll('.sc-browser')[2].querySelector('.sc-detail');"
        " return d.scrollHeight > d.clientHeight + 2000; }"
    )
    client, content, height = detail.evaluate("d => [d.clientHeight, d.scrollHeight, d.getBoundingClientRect().height]")
    assert content > client + 2000, (client, content)  # it scrolls, it does not grow
    assert height <= panel["height"], (height, panel)
    assert box(widget.element_handle())["height"] < 2 * panel["height"]  # the cell stays about a screen tall
    detail.evaluate("d => { d.scrollTop = 3000; }")
    assert detail.evaluate("d => d.scrollTop") > 0
    shot(page, "detail-1024")
    lab.run("huge.selected = None")
    lab.page(width=1400, height=1000, sidebar=False)


def _labels_fit_or_ellipsize(page: Any) -> None:
    """Every bar label fits its box or ends in an ellipsis, with the whole value as its tooltip."""
    labels = page.evaluate(
        """() => [...document.querySelectorAll('.sc-dashboard .sc-bar-label')].map(l => {
            const d = l.querySelector('.widget-html-content > div');
            const clipped = d.scrollWidth > d.clientWidth + 1;
            const inside = d.getBoundingClientRect().right <= l.getBoundingClientRect().right + 1;
            return [d.textContent, clipped, getComputedStyle(d).textOverflow, inside, d.title];
        })"""
    )
    assert labels
    for text, clipped, overflow, inside_box, title in labels:
        assert inside_box and title == text, (text, inside_box)
        assert not clipped or overflow == "ellipsis", text


FIRST_LETTERS = """() => [...document.querySelectorAll('.sc-dashboard .sc-bar-label .widget-html-content > div')]
    .map(d => {
        const text = d.firstChild;
        if (!text || !text.length) { return null; }
        const range = document.createRange();
        range.setStart(text, 0);
        range.setEnd(text, 1);
        const first = range.getBoundingClientRect();
        const label = d.closest('.sc-bar-label').getBoundingClientRect();
        const board = d.closest('.sc-dashboard').getBoundingClientRect();
        const inside = first.left >= Math.max(0, label.left, board.left) - 0.5
            && first.right <= Math.min(window.innerWidth, label.right, board.right) + 0.5;
        return inside ? null : [d.textContent, first.left, label.left, board.left];
    }).filter(x => x !== null)"""
"""Bar labels whose first letter is outside its label's box, the dashboard or the viewport (cut off on the left)."""


def test_dashboard_labels_keep_their_first_letter_at_390_px(lab: Lab, checks: Any) -> None:
    page = lab.page(width=390, height=800, sidebar=False)
    try:
        for dimension in ("reason × cause", "run outcome", "project"):
            dashboard = page.locator(".sc-dashboard")
            dashboard.locator("button", has_text=dimension).first.click()
            page.wait_for_selector(".sc-dashboard .sc-bar-label")
            dashboard.scroll_into_view_if_needed()
            page.wait_for_function(f"() => ({FIRST_LETTERS})().length === 0", timeout=10_000)
            shot(page, f"dashboard-390-{dimension.split()[0]}")
    finally:
        lab.run("board.selected_dimension = 'reason_cause'")
        lab.page(width=1400, height=1000, sidebar=False)


TABLE_INSIDE = """t => {
  const area = t.closest('.jp-OutputArea-output').getBoundingClientRect();
  return Math.max(...[...t.querySelectorAll('th')].filter(h => h.offsetParent !== null)
    .map(h => h.getBoundingClientRect().right)) <= area.right + 1;
}"""
"""Whether every shown heading of a dashboard table ends inside its output area."""


def test_dashboard_bar_click_shows_labels_and_error_messages(lab: Lab, checks: Any) -> None:
    page = lab.page(width=1024, height=800, sidebar=True)
    dashboard = page.locator(".sc-dashboard")
    dashboard.scroll_into_view_if_needed()
    assert "counting all 26 sessions" in dashboard.inner_text()
    _labels_fit_or_ellipsize(page)  # reason × cause: the longest labels
    dashboard.locator("button", has_text="run outcome").click()
    bar = page.wait_for_selector('.sc-dashboard button[title^="error:"]', timeout=20_000)
    bar.click()
    table = dashboard.locator(".sc-atable")
    table.wait_for(state="visible")
    expected = lab.run(
        "import polars as pl\n"
        "r = board.corpus.sessions.filter(pl.col('outcome') == 'error').row(0, named=True)\n"
        "print(r['session_id']); print(r['identity_label']); print(r['last_error_message']); "
        "print(r['last_error_code'])"
    ).split("\n")
    sid, label, message, code = expected[:4]
    text = table.inner_text()
    for part in (label, message, code):
        assert part in text, (part, text)
    ident = table.locator(".nm-id").first  # views.names: the whole id in the page, clipped by CSS
    assert ident.get_attribute("title") == sid and ident.text_content() == sid  # whole in the page
    assert box(ident.element_handle())["height"] < 24  # one line (12 px text), not an id wrapped to four
    shot(page, "dashboard-error-bar")
    # the table fits its output area (the report's column-priority rule): no column past its right edge
    assert table.evaluate(TABLE_INSIDE), table.evaluate(TABLE_INSIDE.replace("<= area.right + 1", "- area.right"))
    assert table.locator("th.c-tokens").is_visible() and table.locator("th.c-cost").is_visible()
    # the roots scope: the bars count only sessions without a parent
    dashboard.locator("button", has_text="roots").click()
    page.wait_for_function("() => document.querySelector('.sc-dashboard').textContent.includes('counting 4 roots')")
    _labels_fit_or_ellipsize(page)
    lab.page(width=1400, height=1000, sidebar=False)
