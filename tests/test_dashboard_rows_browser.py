"""Issue 43 item 4 in headless Chromium: a click (or Enter) on a dashboard table row reveals its session.

The table is drawn by its own front-end module (``static/dashboard_rows.js``) over a stand-in for the
anywidget model, bridged to the Python ``DashboardRows`` of a ``DiagnosticsDashboard`` with a linked
``CatalogBrowser``: what the front end saves is set on the widget, and the traits Python changes go back
to the page, as a kernel would. Every wait is for a state (an element, an outbox entry), never for time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.views.widgets.browser import CatalogBrowser
from subagent_catalog.views.widgets.dashboard import DiagnosticsDashboard
from subagent_catalog.views.widgets.dashboard_rows import STATIC, DashboardRows

pytestmark = pytest.mark.browser

EXPORT = "export default { render };"
WAIT_MS = 60_000

# A stand-in for the anywidget model whose saves go to an outbox the test hands to Python;
# window.scApply sets the traits Python changed (firing their change listeners).
MOUNT = """([state]) => {
  const values = new Map(Object.entries(state));
  const listeners = new Map();
  const dirty = new Set();
  window.scOutbox = [];
  const model = {
    get: (key) => values.get(key),
    set: (key, value) => { values.set(key, value); dirty.add(key); },
    save_changes: () => {
      window.scOutbox.push(Object.fromEntries([...dirty].map((k) => [k, values.get(k)])));
      dirty.clear();
    },
    send: () => {},
    on: (names, fn) => names.split(" ").forEach((n) => listeners.set(n, [...(listeners.get(n) || []), fn])),
    off: () => {},
  };
  window.scApply = (changes) => {
    for (const [key, value] of Object.entries(changes)) values.set(key, value);
    for (const key of Object.keys(changes)) (listeners.get(`change:${key}`) || []).forEach((fn) => fn());
  };
  const el = document.createElement("div");
  document.body.append(el);
  window.scRender({ model, el });
}"""
SYNCED = ("value", "clickable", "clicked")


class Bridge:
    """The page and the Python table widget, kept in step by ``until``."""

    def __init__(self, page: Any, rows: DashboardRows) -> None:
        self.page, self.rows = page, rows
        self.shown = {name: getattr(rows, name) for name in SYNCED}

    def pump(self) -> None:
        for changes in self.page.evaluate("window.scOutbox.splice(0)"):
            for name, value in changes.items():
                setattr(self.rows, name, value)
        now = {name: getattr(self.rows, name) for name in SYNCED}
        changes = {key: value for key, value in now.items() if self.shown.get(key) != value}
        self.shown = now
        if changes:
            self.page.evaluate("(c) => window.scApply(c)", changes)

    def until(self, condition: str) -> None:
        """Hand the page's saves to Python and back until ``condition`` (JS) holds."""
        for _ in range(50):
            self.pump()
            if self.page.evaluate(f"() => Boolean({condition})"):
                return
            self.page.wait_for_function(f"() => window.scOutbox.length > 0 || ({condition})", timeout=WAIT_MS)
        raise AssertionError(f"never: {condition}")


@pytest.fixture(scope="module")
def sample() -> Corpus:
    return read_corpus("data/sample")


@pytest.fixture
def mount(chromium_browser: Any) -> Iterator[Any]:
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 700})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    def start(rows: DashboardRows) -> Bridge:
        source = (STATIC / "dashboard_rows.js").read_text(encoding="utf-8")
        assert source.rstrip().endswith(EXPORT)
        page.set_content("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body></body></html>")
        page.add_style_tag(content=str(rows._css))
        page.add_script_tag(content=source.replace(EXPORT, "window.scRender = render;"), type="module")
        page.wait_for_function("typeof window.scRender === 'function'")
        page.evaluate(MOUNT, [{name: getattr(rows, name) for name in SYNCED}])
        return Bridge(page, rows)

    try:
        yield start
        assert errors == []
    finally:
        context.close()


def _selected_id(browser: CatalogBrowser, corpus: Corpus) -> str | None:
    return None if browser.selected is None else str(corpus.sessions["session_id"][browser.selected])


def test_a_click_on_a_row_reveals_its_session_in_the_linked_browser(mount: Any, sample: Corpus) -> None:
    board, browser = DiagnosticsDashboard(sample), CatalogBrowser(sample)
    board.pick("child")
    bridge = mount(board.table)
    page = bridge.page
    listed = [sid for sid in board.affected_ids if sid is not None]
    first, last = listed[0], listed[-1]
    assert first != last
    row = page.locator(f"tr[data-sid='{last}']")
    row.wait_for(state="visible")
    assert row.evaluate("r => getComputedStyle(r).cursor") != "pointer"  # no browser: not clickable
    assert row.get_attribute("tabindex") is None
    board.link_browser(browser)
    bridge.until(f"document.querySelector(\"tr[data-sid='{last}']\")?.getAttribute('role') === 'button'")
    assert row.evaluate("r => getComputedStyle(r).cursor") == "pointer"
    row.locator("td").nth(1).click()
    page.wait_for_function("window.scOutbox.length > 0", timeout=WAIT_MS)
    bridge.pump()
    assert board.revealed == last and _selected_id(browser, sample) == last
    # the keyboard: Enter on a focused row
    other = page.locator(f"tr[data-sid='{first}']")
    other.focus()
    other.press("Enter")
    page.wait_for_function("window.scOutbox.length > 0", timeout=WAIT_MS)
    bridge.pump()
    assert board.revealed == first and _selected_id(browser, sample) == first
    # and the same row again after the browser moved on (Space this time)
    browser.select_id(last)
    other.press(" ")
    page.wait_for_function("window.scOutbox.length > 0", timeout=WAIT_MS)
    bridge.pump()
    assert _selected_id(browser, sample) == first
