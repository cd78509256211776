"""The report in headless Chromium: loads offline, runs no injected script, and its tree expands.

Run with ``pytest -m browser tests/test_report_browser.py``; needs Playwright and a
Chromium (``make browser-deps`` installs Debian's). Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import os
import time
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


@pytest.fixture(scope="module")
def browser(chromium_browser: Any) -> Any:
    """The session's Chromium (tests/conftest.py), shared with the JupyterLab tests."""
    return chromium_browser


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
    charts = page.locator("#charts .view-linear svg")
    assert charts.count() == 6
    assert all(charts.nth(i).evaluate("e => e.getBoundingClientRect().width > 100") for i in range(charts.count()))
    _expand_first_root(page)
    # reveal a tree from the "largest trees" table: the root, and each diagnostic in it
    damaged = int(page.locator("#trees tbody tr").first.locator("td").nth(4).text_content())
    page.locator("#trees button.reveal").first.click()
    assert page.locator("#tree .row.hit").count() == 1 + damaged
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
    assert page.locator("#tree").get_by_text("<svg onload=alert(6)>", exact=True).is_visible()
    assert page.locator("#runs").get_by_text("<svg onload=alert(6)>", exact=True).count() >= 1  # as text there too
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


# --------------------------------------------------------------------------- diagnostics, filters, layout

LONG_ID = "session-" + "0123456789abcdef" * 8
LONG_LABEL = "Investigate why the nightly integration pipeline keeps timing out on the largest fixtures " * 3


def build_wide(root: Path) -> None:
    """A generated corpus (damaged sessions give corrupt and unavailable rows) plus long ids, labels and cwds."""
    from subagent_catalog.synth.generate import generate

    generate(root, sessions=70, seed=11, compression="none", damaged_fraction=0.2, jobs=1)
    cwd = "/home/someone/projects/" + "a-very-long-project-directory-name/" * 4
    _session(root, LONG_ID, cwd=cwd, created=T0)
    for i in range(3):
        _session(
            root,
            f"{LONG_ID}-child-{i}",
            parent=LONG_ID,
            cwd=cwd,
            created=T0 + 1 + i,
            payload=w.descriptor("continuable", label=LONG_LABEL),
        )
    _session(root, f"{LONG_ID}-broken", parent=LONG_ID, cwd=cwd, created=T0 + 9, payload={"version": 2, "mode": "x"})
    _session(root, "many", cwd="/home/dev/many", created=T0 + 10)
    for i in range(50):  # enough diagnostic rows for a second page of the table
        payload = {"version": 2, "mode": "bogus"} if i % 2 else MISSING
        _session(root, f"many-{i:02d}", parent="many", cwd="/home/dev/many", created=T0 + 11 + i, payload=payload)


@pytest.fixture(scope="module")
def wide_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    import json
    import re

    base = tmp_path_factory.mktemp("wide")
    build_wide(base / "corpus")
    path = write_report(read_corpus(base / "corpus", jobs=1), base / "wide.html")
    page = path.read_text(encoding="utf-8")
    blob = re.search(r'<script type="application/json" id="forest-data">(.*?)</script>', page, flags=re.S)
    assert blob is not None
    return path, json.loads(blob.group(1))["diagnostics"]


def _in_viewport(page: Any, locator: Any) -> None:
    box = locator.bounding_box()
    assert box is not None and box["height"] > 0 and box["width"] > 0
    size = page.viewport_size
    assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"], box


def test_diagnostics_table_reveals_a_row_in_the_tree(
    visit: Any, wide_report: tuple[Path, list[dict[str, Any]]]
) -> None:
    path, diagnostics = wide_report
    assert len(diagnostics) > 50
    seen = visit(path)
    page = seen.page
    rows = page.locator("#diag-body tr")
    assert rows.count() == 50
    assert page.locator("#diag-status").text_content() == f"{len(diagnostics)} rows"
    page.click("#diag-pager button:has-text('next')")
    assert rows.count() == len(diagnostics) - 50
    # reveal the last row of the table: the tree opens down to it, scrolls to it and highlights it
    last = rows.nth(rows.count() - 1)
    shown_id = last.locator("td").nth(1).text_content()
    last.locator("button.reveal").click()
    hit = page.locator("#tree .row.hit")
    assert hit.count() == 1
    assert hit.locator(".id").text_content() == shown_id[:48] + ("…" if len(shown_id) > 48 else "")
    _in_viewport(page, hit)
    # the long id: its row in the table holds it, and revealing it works too
    page.fill("#diag-query", "broken")
    assert rows.count() == 1
    rows.first.locator("button.reveal").click()
    assert page.locator("#tree .row.hit .id").text_content().startswith(LONG_ID[:40])
    _in_viewport(page, page.locator("#tree .row.hit"))
    seen.assert_clean()


def test_diagnostics_table_filters_and_sorts(visit: Any, wide_report: tuple[Path, list[dict[str, Any]]]) -> None:
    path, diagnostics = wide_report
    page = visit(path).page
    causes = sorted({d["u"] for d in diagnostics})
    cause = max(causes, key=lambda c: sum(d["u"] == c for d in diagnostics))
    page.select_option("#diag-cause", cause)
    expected = sum(d["u"] == cause for d in diagnostics)
    assert page.locator("#diag-body tr").count() == min(50, expected)
    assert set(page.locator("#diag-body td:nth-child(5)").all_text_contents()) == {cause}
    page.select_option("#diag-cause", "")
    page.select_option("#diag-reason", "unavailable")
    reasons = set(page.locator("#diag-body td:nth-child(4)").all_text_contents())
    assert reasons == {"unavailable"}
    page.select_option("#diag-reason", "")
    page.click("#diag-table button.sort[data-key=i]")
    ids = page.locator("#diag-body td:nth-child(2)").evaluate_all(  # the id beside a name: its code element
        "tds => tds.map(td => { const c = td.querySelector('code'); return c.title || c.textContent; })"
    )
    assert ids == sorted(ids) and len(ids) > 1


def test_tree_filters_and_search(visit: Any, wide_report: tuple[Path, list[dict[str, Any]]]) -> None:
    path, diagnostics = wide_report
    seen = visit(path)
    page = seen.page
    cause = diagnostics[0]["u"]
    expected = sum(d["u"] == cause for d in diagnostics)
    page.select_option("#tree-cause", cause)
    hits = page.locator("#tree .row.hit")
    assert hits.count() == expected
    assert set(hits.locator(".cause").all_text_contents()) == {cause}
    assert all(hits.nth(i).is_visible() for i in range(hits.count()))
    assert page.locator("#filter-status").text_content().startswith(f"{expected} diagnostic row")
    page.click("#tree-clear")
    page.check("#tree-damaged")
    assert page.locator("#tree .row.hit").count() == len(diagnostics)
    page.uncheck("#tree-damaged")
    # the project filter keeps the trees of one project only
    page.select_option("#tree-project", index=1)
    project = page.locator("#tree-project option:checked").text_content().rsplit(" (", 1)[0]
    metas = page.locator("#tree > li.node > .row .meta").all_text_contents()
    assert metas and page.locator("#tree > li.node").count() <= len(metas)
    assert page.locator("#tree > li.node").count() > 0 and project
    page.click("#tree-clear")
    # search matches causes and paths, not only ids and labels
    for query in (cause, diagnostics[0]["f"]):
        page.fill("#tree-query", query)
        page.click("#tree-search button[type=submit]")
        assert page.locator("#search-status").text_content() != "no match"
    page.locator("#search-results button.reveal").first.click()
    _in_viewport(page, page.locator("#tree .row.hit"))
    seen.assert_clean()


def test_show_opens_a_damaged_tree_down_to_every_diagnostic(visit: Any, wide_report: tuple[Path, Any]) -> None:
    path, _ = wide_report
    page = visit(path).page
    table = page.locator("#trees .grid2 > div").nth(1)
    expected = int(table.locator("tbody tr").first.locator("td").nth(4).text_content())
    table.locator("button.reveal").first.click()
    hits = page.locator("#tree .row.hit")
    assert hits.count() == expected + 1  # the root and each diagnostic
    assert hits.locator(".badge.r-corrupt, .badge.r-unavailable, .badge.r-unsupported").count() == expected
    assert all(hits.nth(i).is_visible() for i in range(hits.count()))
    _in_viewport(page, page.locator("#tree .row.hit:has(.badge.r-corrupt, .badge.r-unavailable)").first)


def test_chart_log_scale_toggle(visit: Any, wide_report: tuple[Path, Any]) -> None:
    path, _ = wide_report
    page = visit(path).page
    figure = page.locator("figure.chart:has(button.scale)").first
    figure.locator("button[data-scale=log]").click()
    assert figure.locator(".view-log").is_visible() and not figure.locator(".view-linear").is_visible()
    figure.locator("button[data-scale=linear]").click()
    assert figure.locator(".view-linear").is_visible()


@pytest.mark.parametrize("width", [390, 1400])
def test_no_horizontal_overflow(browser: Any, wide_report: tuple[Path, Any], width: int) -> None:
    path, _ = wide_report
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(path.resolve().as_uri(), wait_until="load")
        overflow = "document.documentElement.scrollWidth <= window.innerWidth"
        assert page.evaluate(overflow)
        # open everything a reader can open: details, the long-id tree, a damaged tree
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        page.locator("#trees button.reveal").first.click()
        page.fill("#tree-query", LONG_ID)
        page.click("#tree-search button[type=submit]")
        page.locator("#search-results button.reveal").first.click()
        assert page.evaluate(overflow), page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"report-wide-{width}.png"), full_page=True)
    finally:
        context.close()


# --------------------------------------------------------------------------- runs and show --tree pages

NO_OVERFLOW = "document.documentElement.scrollWidth <= window.innerWidth"


@pytest.mark.parametrize("width", [390, 1400])
def test_runs_section_fits_and_reveals_a_failed_run(browser: Any, tmp_path: Path, width: int) -> None:
    from subagent_catalog.analysis.run_summary import run_summary

    corpus = read_corpus(_sample_root())
    path = write_report(corpus, tmp_path / "runs.html")
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.resolve().as_uri(), wait_until="load")
        runs = page.locator("#runs")
        runs.wait_for(state="visible")
        assert page.evaluate("document.querySelector('main section').id") == "runs"  # before the damage
        failures = page.locator("#run-failures-table tbody tr.run")
        assert failures.count() == min(run_summary(corpus).failed, 200)
        assert page.locator("#runs-models tbody tr").count() >= 1
        assert page.evaluate(NO_OVERFLOW), page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        # reveal the first failed run that the tree holds: its row in the tree is marked and shown
        button = page.locator("#run-failures-table button.reveal").first
        wanted = button.locator("xpath=ancestor::tr//code[contains(@class,'nm-id')]").first.get_attribute("title")
        button.click()
        hit = page.locator("#tree .row.hit").first
        hit.wait_for(state="visible")
        assert hit.locator(".id").first.text_content() == wanted
        # a timeline's label reveals its session too
        label = page.locator("#runs-timelines button.reveal").nth(1)
        name = label.get_attribute("title")
        label.click()
        page.locator("#tree .row.hit").first.wait_for(state="visible")
        assert name is not None and page.locator("#tree .row.hit .id").first.text_content() in name
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert page.evaluate(NO_OVERFLOW), page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        ARTIFACTS.mkdir(exist_ok=True)
        runs.screenshot(path=str(ARTIFACTS / f"report-runs-{width}.png"))
        assert errors == []
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1400])
def test_show_tree_pages_fit_and_every_link_opens_a_page(browser: Any, tmp_path: Path, width: int) -> None:
    from subagent_catalog.views.transcript_tree import write_tree_pages

    corpus = read_corpus(_sample_root())
    top = corpus.sessions.filter(
        corpus.sessions["parent_session"].is_null() & corpus.sessions["session_id"].is_not_null()
    )
    trees = [
        (sid, corpus.sessions.filter(corpus.sessions["parent_session"] == sid).height) for sid in top["session_id"]
    ]
    root = max(trees, key=lambda pair: pair[1])[0]
    pages = write_tree_pages(corpus, root, tmp_path / "pages")
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        for written in pages.pages:
            page.goto(written.resolve().as_uri(), wait_until="load")
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            assert page.evaluate(NO_OVERFLOW), (written.name, page.evaluate("document.documentElement.scrollWidth"))
        # from the top page: follow a child link of the timeline, then a jump link inside that page
        page.goto(pages.top.resolve().as_uri(), wait_until="load")
        assert page.locator(".tl .tl-bar").count() >= 2
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"show-tree-{width}.png"), full_page=True)
        link = page.locator(".tl .tl-name a").first
        target = link.get_attribute("href")
        link.click()
        page.wait_for_url(f"**/{target}")
        # the page is the linked session's, named in its heading (views.names), its whole id beside the name
        assert target == f"{page.locator('h1 code.nm-id').get_attribute('title')}.html"
        jump = page.locator("details.turns a, .errors a").first
        anchor = jump.get_attribute("href")
        jump.click()
        page.wait_for_url(f"**{anchor}")
        assert page.locator(anchor).is_visible()
        in_view = page.evaluate(
            "sel => { const r = document.querySelector(sel).getBoundingClientRect();"
            " return r.top >= 0 && r.top < window.innerHeight; }",
            anchor,
        )
        assert in_view
        assert errors == []
    finally:
        context.close()


def test_a_page_script_that_never_settles_fails_within_its_bound(browser: Any) -> None:
    """Playwright's ``evaluate`` waits for ever on a script that never settles (the JupyterLab helpers await
    commands and kernel replies): ``tests.lab.evaluate_within`` fails instead, after its bound."""
    from tests.lab import evaluate_within

    context = browser.new_context()
    try:
        page = context.new_page()
        assert evaluate_within(page, "async (x) => x + 1", 41) == 42
        started = time.monotonic()
        with pytest.raises(Exception, match="page script did not settle in 300 ms"):
            evaluate_within(page, "() => new Promise(() => {})", ms=300)
        assert time.monotonic() - started < 60
    finally:
        context.close()
