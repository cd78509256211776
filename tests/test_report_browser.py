"""The report in headless Chromium: loads offline, runs no injected script, and its tree expands.

Run with ``pytest -m browser tests/test_report_browser.py``; needs Playwright and a
Chromium (``make browser-deps`` installs Debian's). Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from subagent_catalog.corpus import read_corpus
from subagent_catalog.read.paths import MISSING
from subagent_catalog.synth import writer as w
from subagent_catalog.views.report import write_report

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
SHARED = Path(os.environ.get("SUBAGENT_CATALOG_SHARED", REPO.parent / "shared"))
T0 = 1_700_000_000_000
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TRAP = """
window.__alerts = [];
window.__pwned = 0;
window.alert = function (m) { window.__alerts.push(String(m)); };
window.confirm = window.prompt = window.alert;
"""
HOSTILE_LABELS = [
    "<script>alert(1)</script>",
    "\"'><img src=x onerror=alert(1)>",
    "مرحبا بالعالم \u202eevil\u202c RTL",
    "first line\nsecond line\r\nthird",
    "</script><script>window.__pwned=1</script>",
    "L" * 1_000_000,
]


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.path.exists("/usr/bin/chromium"):
        return "/usr/bin/chromium"
    pytest.skip("no chromium (run `make browser-deps`)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@dataclass
class Visit:
    page: Any
    url: str
    console_errors: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.console_errors == []
        assert self.foreign_requests == []
        assert self.dialogs == []
        assert self.page.evaluate("window.__alerts") == []
        assert self.page.evaluate("window.__pwned") == 0


@pytest.fixture
def visit(browser: Any) -> Iterator[Any]:
    contexts = []

    def open_report(path: Path) -> Visit:
        context = browser.new_context(viewport={"width": 1320, "height": 1000}, java_script_enabled=True)
        contexts.append(context)
        url = path.resolve().as_uri()
        page = context.new_page()
        visit = Visit(page, url)

        def route(request_route: Any) -> None:
            request = request_route.request
            if request.url == url:
                request_route.continue_()
            else:
                visit.foreign_requests.append(request.url)
                request_route.abort()

        context.route("**/*", route)
        page.on(
            "request",
            lambda r: None if r.url == url or r.url.startswith("data:") else visit.foreign_requests.append(r.url),
        )
        page.on("console", lambda m: visit.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: visit.console_errors.append(str(e)))

        def dialog(d: Any) -> None:
            visit.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        page.add_init_script(TRAP)
        page.goto(url, wait_until="load")
        return visit

    yield open_report
    for context in contexts:
        context.close()


def _session(
    root: Path, sid: str, *, parent: str | None = None, payload: object = MISSING, created: int = T0, cwd: str = "/proj"
) -> None:
    head = w.header(
        sid,
        created_at=created,
        cwd=cwd,
        parent=parent,
        subagent=parent is not None,
        delegation_depth=1 if parent else 0,
    )
    w.write_session(root, head, w.simple_child_events(sid, payload), "none")


def build_hostile(root: Path) -> str:
    cwd = "/w/<img src=x onerror=alert(2)>"
    parent = "R<script>alert(3)</script>"
    _session(root, parent, cwd=cwd)
    for i, label in enumerate(HOSTILE_LABELS):
        _session(
            root,
            f"h{i}",
            parent=parent,
            cwd=cwd,
            created=T0 + 1 + i,
            payload=w.descriptor("continuable", label=label, provider="<img src=x onerror=alert(4)>"),
        )
    _session(
        root,
        'h-bad"><script>alert(5)</script>',
        parent=parent,
        cwd=cwd,
        created=T0 + 20,
        payload={"version": 2, "mode": "continuable", "provider": "p", "label": "x", "evil</script>": 1},
    )
    _session(
        root,
        "grandchild",
        parent="h0",
        cwd=cwd,
        created=T0 + 21,
        payload=w.descriptor("one-shot", label="<svg onload=alert(6)>"),
    )
    return parent


def _sample_root() -> Path:
    for candidate in (REPO / "data" / "sample", SHARED / "conformance" / "cases" / "edge-s1-none" / "corpus"):
        if candidate.is_dir():
            return candidate
    pytest.skip("neither data/sample nor the shared edge corpus is available")


def _expand_first_root(page: Any) -> None:
    toggle = page.locator("#tree > li.node > .row > button.tog:not(.leaf)").first
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    child = page.locator("#tree > li.node > ul > li.node").first
    child.wait_for(state="visible")
    assert child.is_visible()


def test_sample_report_loads_offline_and_expands(visit: Any, tmp_path: Path) -> None:
    corpus = read_corpus(_sample_root())
    path = write_report(corpus, tmp_path / "sample.html")
    seen = visit(path)
    page = seen.page
    assert page.locator("#summary .card").count() >= 5
    assert page.locator("#charts img").count() == 6
    assert all(page.locator("#charts img").nth(i).evaluate("e => e.naturalWidth > 0") for i in range(6))
    _expand_first_root(page)
    # reveal a tree from the "largest trees" table
    page.locator("#trees button.reveal").first.click()
    assert page.locator("#tree .row.hit").count() == 1
    # search finds a session and reveals it
    some_child = page.locator("#tree > li.node > ul > li.node .id").first.text_content()
    page.fill("#tree-query", some_child)
    page.click("#tree-search button[type=submit]")
    page.locator("#search-results button.reveal").first.click()
    assert page.locator("#tree .row.hit .id").first.text_content() == some_child
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-sample.png"), full_page=True)
    seen.assert_clean()


def test_hostile_labels_stay_text(visit: Any, tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    parent = build_hostile(root)
    path = write_report(read_corpus(root, jobs=1), tmp_path / "hostile.html")
    seen = visit(path)
    page = seen.page
    # no element the corpus could have injected
    assert page.locator("script").count() == 2
    assert page.locator("img[src=x], svg[onload], [onerror]").count() == 0
    _expand_first_root(page)
    rows = page.locator("#tree > li.node > ul > li.node > .row")
    labels = rows.locator(".lbl")
    shown = [labels.nth(i).text_content() for i in range(labels.count())]
    assert "<script>alert(1)</script>" in shown
    assert "\"'><img src=x onerror=alert(1)>" in shown
    assert "first line ⏎ second line ⏎ third" in shown
    long_label = next(i for i, text in enumerate(shown) if text.startswith("LLLL"))
    assert len(shown[long_label]) == 97 and shown[long_label].endswith("…")
    assert len(labels.nth(long_label).get_attribute("title")) == 1001
    # the root id is shown as text, the grandchild expands under h0
    assert page.locator("#tree > li.node > .row .id").first.text_content() == parent
    page.locator("#tree > li.node > ul > li.node > .row > button.tog:not(.leaf)").first.click()
    assert page.get_by_text("<svg onload=alert(6)>", exact=True).is_visible()
    # list_agents text in a <pre>, as text
    assert "h0 [ready] — <script>alert(1)</script>" in page.locator("#listings pre.agents").first.text_content()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-hostile.png"), full_page=False)
    seen.assert_clean()


def test_listing_failure_report_shows_banner(visit: Any, tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    _session(root, "P", cwd="/p")
    _session(root, "k1", parent="P", cwd="/p", created=T0 + 1, payload=w.descriptor("continuable", label="one"))
    w.write_file(os.path.join(root, "--p--", "legacy.jsonl"), b"{}\n")
    path = write_report(read_corpus(root, jobs=1), tmp_path / "failing.html")
    seen = visit(path)
    page = seen.page
    banner = page.locator("#listing-error")
    assert banner.is_visible() and "flat-file layout" in banner.text_content()
    assert page.locator("#problems").is_visible() and page.locator("#forest").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-listing-failure.png"), full_page=False)
    seen.assert_clean()
