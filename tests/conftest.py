"""Shared pytest configuration."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

# Tests read fresh corpora and compare reads with each other: the facts cache stays off unless a
# test turns it on with an explicit directory (tests/test_cache.py).
os.environ["SUBAGENT_CATALOG_CACHE"] = "off"

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
settings.register_profile(
    "long",
    deadline=None,
    max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# ----------------------------------------------------------------- the browser tests

BROWSER_FILES = (
    "test_report_browser.py",
    "test_lab_browser.py",
    "test_compare_browser.py",
    "test_tables_browser.py",
    "test_waterfall_browser.py",
    "test_site_browser.py",
    "test_report_trends_browser.py",
    "test_findings_browser.py",
    "test_dashboard_rows_browser.py",
)
"""The modules that drive Chromium (the report, the comparison page, JupyterLab): under xdist one worker runs them
all, so one Chromium and one JupyterLab start per run and they do not compete with each other for the CPU (two labs
starting side by side on a busy 2-core machine was what made their first notebooks time out)."""


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n N`` (load balancing) with the browser modules kept together on one worker.

    xdist's own ``--dist loadgroup`` cannot do it under pytest 9 (it renames ``item._nodeid``, which no
    longer names the item), so the grouping is made here: every test of ``BROWSER_FILES`` is one work unit
    (the largest, so it is handed out first); every other test is a unit of its own, as with ``load``.
    """
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BrowserTestsTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "browser" if os.path.basename(path) in BROWSER_FILES else nodeid

    return BrowserTestsTogether(config, log)


@pytest.fixture(scope="session")
def chromium_browser() -> Iterator[Any]:
    """A headless system Chromium driven by Playwright, shared by the report and JupyterLab tests."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from tests.lab import CHROMIUM_ARGS, chromium

    path = chromium()
    if path is None:
        pytest.skip("no chromium (run `make browser-deps`)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run each example notebook once: in JupyterLab when the lab tests run it, else with nbclient.

    ``tests/test_lab_browser.py`` runs every cell of each example notebook in a real JupyterLab and checks
    what ``tests/test_notebooks.py`` checks (every cell ran, no error output, a widget is shown) and more
    (the widgets are drawn). When both are selected and the lab can run here, the nbclient run of the
    same notebook is deselected.
    """
    from tests.lab import lab_runs_here

    def notebook_of(item: pytest.Item, module: str, test: str) -> str | None:
        if item.path.name != module or getattr(item, "originalname", None) != test:
            return None
        return str(item.callspec.params["name"]) if hasattr(item, "callspec") else None

    in_lab = {notebook_of(item, "test_lab_browser.py", "test_example_notebook_renders_its_widgets") for item in items}
    in_lab.discard(None)
    if not in_lab or not lab_runs_here():
        return
    kept, dropped = [], []
    for item in items:
        name = notebook_of(item, "test_notebooks.py", "test_notebook_runs")
        (dropped if name in in_lab else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
