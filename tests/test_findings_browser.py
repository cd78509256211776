"""Issue 40 items 4-5 in headless Chromium: the browser's finding badges, its label control, its finding filter.

The widget is drawn by its own front-end module (``static/browser.js``) over a stand-in for the anywidget
model, bridged to the Python ``CatalogBrowser``: what the front end saves or sends is handed to the widget
(its traits set, its message handler called), and the traits it changes and the messages it sends go back
to the page, as a kernel would. Every wait is for a state (an element, an outbox entry), never for time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.store.labels import Labels
from subagent_catalog.views.widgets.browser import STATIC, CatalogBrowser

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
EXPORT = "export default { render };"
WAIT_MS = 60_000

# A stand-in for the anywidget model whose saves and sends go to an outbox the test hands to Python;
# window.scApply sets the traits Python changed (firing their change listeners) and delivers its messages.
MOUNT = """([state]) => {
  const decode = (value) => value && value.__bytes__ ? new DataView(new Uint8Array(value.__bytes__).buffer) : value;
  const values = new Map(Object.entries(state).map(([key, value]) => [key, decode(value)]));
  const listeners = new Map();
  const dirty = new Set();
  window.scOutbox = [];
  const fire = (name, arg) => (listeners.get(name) || []).forEach((fn) => fn(arg));
  const model = {
    get: (key) => values.get(key),
    set: (key, value) => { values.set(key, value); dirty.add(key); },
    save_changes: () => {
      window.scOutbox.push({ kind: "save", changes: Object.fromEntries([...dirty].map((k) => [k, values.get(k)])) });
      dirty.clear();
    },
    send: (content) => window.scOutbox.push({ kind: "msg", content }),
    on: (names, fn) => names.split(" ").forEach((n) => listeners.set(n, [...(listeners.get(n) || []), fn])),
    off: () => {},
  };
  window.scApply = (changes, messages) => {
    for (const [key, value] of Object.entries(changes)) values.set(key, decode(value));
    for (const key of Object.keys(changes)) fire(`change:${key}`);
    for (const message of messages) fire("msg:custom", message);
  };
  const el = document.createElement("div");
  document.body.append(el);
  window.scRender({ model, el });
}"""


def _state(browser: CatalogBrowser) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for key, value in browser.get_state().items():
        if key in ("_esm", "_css"):
            continue
        state[key] = {"__bytes__": list(bytes(value))} if isinstance(value, (bytes, memoryview)) else value
    return state


class Bridge:
    """The page and the Python widget, kept in step by ``until``."""

    def __init__(self, page: Any, browser: CatalogBrowser) -> None:
        self.page, self.browser = page, browser
        self.messages: list[Any] = []
        browser.send = lambda content, buffers=None: self.messages.append(content)  # type: ignore[method-assign]
        self.shown = _state(browser)

    def pump(self) -> None:
        for item in self.page.evaluate("window.scOutbox.splice(0)"):
            if item["kind"] == "save":
                for name, value in item["changes"].items():
                    setattr(self.browser, name, value)
            else:
                self.browser._on_message(self.browser, item["content"], [])
        now = _state(self.browser)
        changes = {key: value for key, value in now.items() if self.shown.get(key) != value}
        self.shown = now
        messages, self.messages = self.messages, []
        if changes or messages:
            self.page.evaluate("([c, m]) => window.scApply(c, m)", [changes, messages])

    def until(self, condition: str) -> None:
        """Hand the page's saves and sends to Python and back until ``condition`` (JS) holds."""
        for _ in range(50):
            self.pump()
            if self.page.evaluate(f"() => Boolean({condition})"):
                return
            self.page.wait_for_function(f"() => window.scOutbox.length > 0 || ({condition})", timeout=WAIT_MS)
        raise AssertionError(f"never: {condition}")


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return read_corpus("data/findings")


@pytest.fixture
def mount(chromium_browser: Any) -> Iterator[Any]:
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 560})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    def start(browser: CatalogBrowser) -> Bridge:
        source = (STATIC / "browser.js").read_text(encoding="utf-8")
        assert source.rstrip().endswith(EXPORT)
        page.set_content("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body></body></html>")
        page.add_style_tag(content=str(browser._css))
        page.add_script_tag(content=source.replace(EXPORT, "window.scRender = render;"), type="module")
        page.wait_for_function("typeof window.scRender === 'function'")
        page.evaluate(MOUNT, [_state(browser)])
        return Bridge(page, browser)

    try:
        yield start
        assert errors == []
    finally:
        context.close()


PANE_VIEW = """(selector) => { const p = document.querySelector('.sc-detail').getBoundingClientRect();
  const t = document.querySelector(selector).getBoundingClientRect(); return [t.top >= p.top - 1 && t.top < p.bottom,
  t.top > p.bottom]; }"""


def test_a_click_on_a_finding_badge_scrolls_the_pane_to_its_step(mount: Any, corpus: Corpus) -> None:
    browser = CatalogBrowser(corpus)
    browser.select_id("loop-yes")
    bridge = mount(browser)
    page = bridge.page
    badge = page.locator(".sc-detail a.sc-finding[data-sc-finding='tool-loop']")
    badge.wait_for(state="visible")
    target = str(badge.get_attribute("href"))[1:]
    selector = f".sc-detail [id='{target}']"
    assert page.evaluate(PANE_VIEW, selector) == [False, True]  # below the pane's fold before the click
    badge.click()
    page.wait_for_function(f"document.querySelector('.sc-detail .sc-target')?.id === {target!r}")
    assert page.evaluate(PANE_VIEW, selector) == [True, False]  # in view now
    assert "read_file" in str(page.locator(".sc-detail .sc-target").text_content())  # the repeated call's step
    assert page.evaluate("location.hash") == ""  # the notebook's page is left alone
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "findings-pane-badge.png"))


def test_a_label_added_in_the_pane_is_written_to_the_store(mount: Any, corpus: Corpus, tmp_path: Path) -> None:
    path = tmp_path / "labels.sqlite"
    browser = CatalogBrowser(corpus, labels=path)
    browser.select_id("loop-yes")
    bridge = mount(browser)
    page = bridge.page
    page.locator(".sc-labelbox .sc-label-input").wait_for(state="visible")
    page.locator(".sc-label-input").fill("confirmed")
    page.locator(".sc-label-note").fill("greps a.py four times")
    page.locator(".sc-label-input").press("Enter")
    bridge.until("document.querySelector(\".sc-label-chip[data-sc-label='confirmed']\")")
    rows = Labels(path).frame().select("session_id", "label", "note").rows()
    assert rows == [("loop-yes", "confirmed", "greps a.py four times")]
    # the label filter offers it now
    bridge.until(
        "[...document.querySelectorAll('select[data-filter=session_label] option')].some(o => o.text === 'confirmed')"
    )
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "findings-pane-label.png"))
    page.locator(".sc-label-chip[data-sc-label='confirmed'] .sc-label-remove").click()
    bridge.until("!document.querySelector('.sc-label-chip[data-sc-label]')")
    assert Labels(path).frame().height == 0


def test_the_finding_filter_lists_the_planted_session(mount: Any, corpus: Corpus) -> None:
    browser = CatalogBrowser(corpus)
    bridge = mount(browser)
    page = bridge.page
    control = page.locator("select[data-filter=finding]")
    control.wait_for(state="visible")
    assert not browser.findings_loaded
    control.focus()  # the first use computes the findings
    bridge.until(
        "[...document.querySelectorAll('select[data-filter=finding] option')].some(o => o.text === 'tool-loop')"
    )
    assert browser.findings_loaded
    page.locator("select[data-filter=finding]").select_option(label="tool-loop")
    bridge.until("[...document.querySelectorAll('.sc-row .sc-label')].some(n => n.textContent.includes('loop-yes'))")
    assert browser.results == [browser.find("loop-yes")]
    assert page.locator(".sc-row").count() == 1
    assert "finding=tool-loop" in str(page.locator(".sc-listtext").text_content())
