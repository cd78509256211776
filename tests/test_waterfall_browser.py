"""Issue 43 item 5 in headless Chromium: a click on a waterfall bar shows its step; the pane jumps to the last error.

A generated 75-turn run (``tests/waterfall_runs.py``: parallel tool calls, every seventh failing, the
last turn ending in an error). The ``show`` page is opened from its file; the browser widget is
rendered from its own front-end module (``static/browser.js``, the anywidget ESM) over a stand-in
for the widget model holding the Python widget's state, so the pane is exactly what the notebook
shows. Every wait is for a state (an element, a hash, a class), never for time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from subagent_catalog.analysis.transcript import transcript
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.views.transcript_parts import anchor
from subagent_catalog.views.transcript_view import transcript_page
from subagent_catalog.views.widgets.browser import STATIC, CatalogBrowser
from tests.waterfall_runs import long_run

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
EXPORT = "export default { render };"

# A stand-in for the anywidget model: get/set/on/off/send/save_changes over the widget's state.
MOUNT = """([state]) => {
  const values = new Map();
  for (const [key, value] of Object.entries(state))
    values.set(key, value && value.__bytes__ ? new DataView(new Uint8Array(value.__bytes__).buffer) : value);
  const listeners = new Map();
  const model = {
    get: (key) => values.get(key),
    set: (key, value) => values.set(key, value),
    save_changes: () => {},
    send: () => {},
    on: (names, fn) => names.split(" ").forEach((n) => listeners.set(n, [...(listeners.get(n) || []), fn])),
    off: () => {},
  };
  const el = document.createElement("div");
  document.body.append(el);
  window.scRender({ model, el });
}"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("waterfall-browser")
    long_run(root, "run75", 75)
    return read_corpus(root, cache=False)


def _errors(corpus: Corpus) -> list[str]:
    return [anchor(row) for row in transcript(corpus, "run75").to_dicts() if row["is_error"]]


def test_a_click_on_a_waterfall_bar_shows_its_step(chromium_browser: Any, corpus: Corpus, tmp_path: Path) -> None:
    path = tmp_path / "run75.html"
    path.write_text(transcript_page(corpus, "run75"), encoding="utf-8")
    context = chromium_browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.resolve().as_uri(), wait_until="load")
        bars = page.locator("figure.sc-wf a.sc-wf-bar")
        titles = bars.locator("title").all_text_contents()
        assert len(titles) == bars.count() > 300
        # the last failed tool call: its step is far down the page
        index = max(i for i, title in enumerate(titles) if title.startswith("tool ") and "failed" in title)
        bar = bars.nth(index)
        href = str(bar.get_attribute("href"))
        assert page.evaluate(f"document.getElementById({href[1:]!r}).getBoundingClientRect().top") > 800
        bar.click()
        page.wait_for_function(f"location.hash === {href!r}")
        assert page.evaluate("document.querySelector(':target').id") == href[1:]
        top = page.evaluate("document.querySelector(':target').getBoundingClientRect().top")
        assert 0 <= top < 800  # the step is in view
        shown = str(page.locator(":target").text_content())
        assert f"seq {href.removeprefix('#seq-')}" in shown and "call shell" in shown  # the bar's own step
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "waterfall-show-click.png"))
        assert errors == []
    finally:
        context.close()


def _state(browser: CatalogBrowser) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for key, value in browser.get_state().items():
        if key in ("_esm", "_css"):
            continue
        state[key] = {"__bytes__": list(bytes(value))} if isinstance(value, (bytes, memoryview)) else value
    return state


def test_the_detail_pane_jumps_to_the_last_error_of_a_75_turn_run(chromium_browser: Any, corpus: Corpus) -> None:
    browser = CatalogBrowser(corpus)
    browser.selected = browser.find("run75")
    failed = _errors(corpus)
    source = (STATIC / "browser.js").read_text(encoding="utf-8")
    assert source.rstrip().endswith(EXPORT)
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body></body></html>")
        page.add_style_tag(content=str(browser._css))
        page.add_script_tag(content=source.replace(EXPORT, "window.scRender = render;"), type="module")
        page.wait_for_function("typeof window.scRender === 'function'")
        page.evaluate(MOUNT, [_state(browser)])
        pane = page.locator(".sc-detail")
        pane.locator(".sc-jump").wait_for(state="visible")
        assert pane.locator("figure.sc-wf svg").is_visible()

        def target() -> tuple[str, bool]:
            page.wait_for_function("document.querySelectorAll('.sc-detail .sc-target').length === 1")
            marked = pane.locator(".sc-target")
            inside = page.evaluate(
                """() => { const p = document.querySelector('.sc-detail').getBoundingClientRect();
                           const t = document.querySelector('.sc-detail .sc-target').getBoundingClientRect();
                           return t.top >= p.top - 1 && t.top < p.bottom; }"""
            )
            return str(marked.get_attribute("id")), bool(inside)

        pane.locator(".sc-jump a", has_text="last").click()
        assert target() == (failed[-1], True)  # the turn that ended the run in an error, in view
        assert "the last turn failed" in str(pane.locator(".sc-target").text_content())
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "waterfall-pane-last-error.png"))
        pane.locator(".sc-jump [data-sc-jump='next']").click()  # after the last: back to the first
        page.wait_for_function(f"document.querySelector('.sc-detail .sc-target').id === {failed[0]!r}")
        assert target() == (failed[0], True)
        pane.locator(".sc-jump [data-sc-jump='next']").click()
        page.wait_for_function(f"document.querySelector('.sc-detail .sc-target').id === {failed[1]!r}")
        # a bar of the pane's waterfall scrolls the pane to its step (the last linked one: among the last steps)
        bar = pane.locator("figure.sc-wf a.sc-wf-bar").last
        href = str(bar.get_attribute("href"))
        bar.click()
        page.wait_for_function(f"document.querySelector('.sc-detail .sc-target').id === {href[1:]!r}")
        assert target() == (href[1:], True)
        assert page.evaluate("location.hash") == ""  # the notebook's page is left alone
        assert errors == []
    finally:
        context.close()


# Issue 57, point 10: each axis and track label of the waterfall as drawn (CSS px), and where it ends
# against the drawing's box; null until the figure has a width.
LABELS = """() => {
    const svg = document.querySelector('figure.sc-wf svg');
    if (!svg) return null;
    const box = svg.getBoundingClientRect();
    if (!box.width) return null;
    const scale = box.width / svg.viewBox.baseVal.width;
    const scroll = svg.parentElement;
    return {
        width: Math.round(box.width), scrolls: scroll.scrollWidth > scroll.clientWidth,
        labels: [...svg.querySelectorAll('text')].map(t => {
            const r = t.getBoundingClientRect();
            return {text: t.textContent, px: +t.getAttribute('font-size') * scale,
                    left: r.left - box.left, right: box.right - r.right};
        }),
    };
}"""


@pytest.mark.parametrize("width", [390, 1024, 1400])
def test_the_waterfalls_labels_are_readable_and_whole_at_every_width(
    chromium_browser: Any, corpus: Corpus, tmp_path: Path, width: int
) -> None:
    """Today at 390 px the labels are about 3 px high and the last tick label is cut (``+1 mi``)."""
    from tests.lab import settle

    path = tmp_path / "run75.html"
    path.write_text(transcript_page(corpus, "run75"), encoding="utf-8")
    # settle evaluates its probe: the page's Content-Security-Policy (no eval) is bypassed for the test's scripts
    context = chromium_browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = context.new_page()
    try:
        page.goto(path.resolve().as_uri(), wait_until="load")
        drawn = settle(page, LABELS)
        assert drawn["labels"] and min(label["px"] for label in drawn["labels"]) >= 9, drawn
        ticks = [label for label in drawn["labels"] if label["text"].startswith("+")]
        assert len(ticks) >= 3 and all(t["left"] >= -0.5 and t["right"] >= -0.5 for t in ticks), ticks
        assert drawn["scrolls"] == (width == 390)  # a phone scrolls the drawing sideways; a desktop shows it whole
        ARTIFACTS.mkdir(exist_ok=True)
        page.evaluate("document.querySelector('figure.sc-wf').scrollIntoView()")
        page.screenshot(path=str(ARTIFACTS / f"waterfall-{width}.png"))
    finally:
        context.close()
