"""A linked site in headless Chromium (issue 43 item 4): every link resolves, a hub's children sort by cost.

Run with ``pytest -m browser tests/test_site_browser.py``; needs Playwright and a Chromium
(``make browser-deps`` installs Debian's).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from subagent_catalog.corpus import read_corpus
from subagent_catalog.views.report_site import write_report_site
from tests.site_check import hub_child_cost_known, write_hub

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
HUB_CHILDREN = 150


@pytest.fixture(scope="module")
def browser(chromium_browser: Any) -> Any:
    """The session's Chromium (tests/conftest.py)."""
    return chromium_browser


@pytest.fixture(scope="module")
def hub_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("hub-site")
    write_hub(work / "corpus", HUB_CHILDREN)
    write_report_site(read_corpus(work / "corpus", cache=False), work / "site")
    return work / "site"


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page that may load files only: a request to anything else fails the test; console errors are kept."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.errors = []
    tab.foreign = []

    def route(request_route: Any) -> None:
        if request_route.request.url.startswith(("file://", "data:")):
            request_route.continue_()
        else:
            tab.foreign.append(request_route.request.url)
            request_route.abort()

    context.route("**/*", route)
    tab.on("console", lambda message: tab.errors.append(message.text) if message.type == "error" else None)
    tab.on("pageerror", lambda error: tab.errors.append(str(error)))
    yield tab
    context.close()


def _follow_every_link(page: Any, site: Path) -> int:
    """Load every page of the site; check each ``<a href>`` names a file of the site and an id on it."""
    found: dict[str, tuple[list[str], set[str]]] = {}
    for path in sorted(site.glob("*.html")):
        page.goto(path.resolve().as_uri(), wait_until="load")
        # an SVG <a> (a waterfall bar) has no string .href: resolve its attribute against the page
        hrefs = page.eval_on_selector_all(
            "a[href]", "links => links.map(a => new URL(a.getAttribute('href'), document.baseURI).href)"
        )
        ids = set(page.eval_on_selector_all("[id]", "nodes => nodes.map(n => n.getAttribute('id'))"))
        found[path.name] = (hrefs, ids)
    followed = 0
    for name, (hrefs, _) in found.items():
        for href in hrefs:
            parts = urllib.parse.urlsplit(href)
            assert parts.scheme == "file", (name, href)
            target = Path(urllib.parse.unquote(parts.path))
            assert target.parent == site.resolve() and target.name in found, (name, href)
            fragment = urllib.parse.unquote(parts.fragment)
            assert not fragment or fragment in found[target.name][1], (name, href)
            followed += 1
    assert page.errors == [] and page.foreign == []  # no CSP violation, no script error, nothing fetched
    return followed


def test_every_link_of_the_sample_site_resolves_in_the_browser(page: Any, tmp_path: Path) -> None:
    write_report_site(read_corpus(REPO / "data" / "sample", cache=False), tmp_path / "site")
    assert _follow_every_link(page, tmp_path / "site") > 50


def test_every_link_of_a_hubs_site_resolves_in_the_browser(page: Any, hub_site: Path) -> None:
    assert (hub_site / "hub.html").is_file() and len(list(hub_site.glob("*.html"))) > 30  # the sessions it names
    assert _follow_every_link(page, hub_site) > HUB_CHILDREN  # the hub's children table links those with a page


def test_a_hubs_children_table_sorts_by_cost_with_unknown_costs_last(page: Any, hub_site: Path) -> None:
    page.goto((hub_site / "hub.html").resolve().as_uri(), wait_until="load")
    ids = "t => Array.from(t.tBodies[0].rows).map(r => r.cells[1].querySelector('code.nm-id').title)"
    assert page.eval_on_selector("#children-table", ids) == [f"hub-child-{i:05d}" for i in range(HUB_CHILDREN)]
    # Cost grows with the input tokens ``write_hub`` reports: 1,000 + 37 * ((i * 53) % n), one price for all.
    known = [i for i in range(HUB_CHILDREN) if hub_child_cost_known(i)]
    unknown = [f"hub-child-{i:05d}" for i in range(HUB_CHILDREN) if not hub_child_cost_known(i)]
    cheapest_first = [f"hub-child-{i:05d}" for i in sorted(known, key=lambda i: (i * 53) % HUB_CHILDREN)]
    cost = page.locator("#children-table th button.sort", has_text="cost")
    cost.click()
    page.wait_for_selector("#children-table th[aria-sort=ascending] button:text-is('cost')")
    assert page.eval_on_selector("#children-table", ids) == cheapest_first + unknown
    cost.click()
    page.wait_for_selector("#children-table th[aria-sort=descending] button:text-is('cost')")
    assert page.eval_on_selector("#children-table", ids) == cheapest_first[::-1] + unknown
    cells = page.eval_on_selector_all(
        "#children-table tbody tr td:nth-child(6)", "cells => cells.map(c => c.textContent)"
    )
    assert cells[-len(unknown) :] == ["unknown"] * len(unknown) and "$0" not in "".join(cells[-len(unknown) :])
    assert page.errors == [] and page.foreign == []
