"""The comparison page in headless Chromium: every table fits its box on a desktop, the page fits a phone.

Run with ``pytest -m browser tests/test_compare_browser.py``; needs Playwright and a Chromium
(``make browser-deps``). Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from subagent_catalog.analysis.compare import Comparison, compare
from subagent_catalog.corpus import read_corpus
from subagent_catalog.views.compare_html import compare_page
from tests.compare_corpora import runs_corpus

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
WAIT_MS = 30_000
"""The longest any state is waited for."""

TABLES = """() => Array.from(document.querySelectorAll('main table')).map(table => {
  const box = table.closest('.scroll-x');
  return {section: table.closest('section').id, table: Math.ceil(table.getBoundingClientRect().width),
          scroll: box.scrollWidth, client: box.clientWidth};
})"""
PAGE = "[document.documentElement.scrollWidth, window.innerWidth]"


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> Comparison:
    """Two small corpora of known rates paired by prompt: every table of the page has rows."""
    base = tmp_path_factory.mktemp("compare-browser")
    a = runs_corpus(base / "a", runs=60, seed=1, error_rate=0.1, tool_failure_rate=0.2)
    b = runs_corpus(base / "b", runs=60, seed=2, error_rate=0.3, tool_failure_rate=0.1, token_scale=1.3)
    return compare(
        read_corpus(a, cache=False, jobs=1), read_corpus(b, cache=False, jobs=1), match="prompt", resamples=200
    )


def _long(comparison: Comparison) -> Comparison:
    """The same comparison with the longest names and the widest figures a corpus can give the tables."""
    long = "x" * 200
    metrics = comparison.metrics.with_columns(
        pl.lit(123_456_789.0).alias("a_median"),
        pl.lit(987_654.321).alias("b_mean"),
        pl.lit(-0.99999).alias("median_change_low"),
        pl.lit(12_345.678).alias("median_change_high"),
        pl.lit("subagents are not independent of their root: " + long).alias("note"),
    )
    return dataclasses.replace(
        comparison,
        a_label=long,
        metrics=metrics,
        models=comparison.models.with_columns(pl.lit(long).alias("provider"), pl.lit(long).alias("model")),
        tools=comparison.tools.with_columns(
            pl.lit(long).alias("name"), pl.lit(f"{long} ×9").alias("b_top_error_codes")
        ),
        errors=comparison.errors.with_columns(
            pl.lit(long).alias("code"),
            pl.lit(" ".join([long] * 3)).alias("message"),
            pl.lit(long).alias("b_example_session"),
        ),
        health=comparison.health.with_columns(pl.lit(long).alias("value")),
        pairs=comparison.pairs.with_columns(pl.lit(long).alias("key"), pl.lit(long).alias("a_session"))
        if comparison.pairs is not None
        else None,
    )


def _open(browser: Any, path: Path, width: int) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(path.resolve().as_uri(), wait_until="load", timeout=WAIT_MS)
    page.locator("#health table").wait_for(state="visible", timeout=WAIT_MS)  # the last table is laid out
    return context, page


@pytest.mark.parametrize("width", [1024, 1400])
@pytest.mark.parametrize("kind", ["generated", "longest"])
def test_no_table_is_wider_than_its_box_on_a_desktop(
    chromium_browser: Any, comparison: Comparison, tmp_path: Path, width: int, kind: str
) -> None:
    path = tmp_path / "diff.html"
    path.write_text(compare_page(comparison if kind == "generated" else _long(comparison)), encoding="utf-8")
    context, page = _open(chromium_browser, path, width)
    try:
        tables = page.evaluate(TABLES)
        assert {t["section"] for t in tables} >= {"outcomes", "metrics", "errors", "pairs", "tools", "models", "health"}
        wider = [t for t in tables if t["scroll"] > t["client"] or t["table"] > t["client"]]
        assert wider == [], wider
        scroll_width, inner = page.evaluate(PAGE)
        assert scroll_width <= inner
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"compare-{kind}-{width}.png"), full_page=True)
    finally:
        context.close()


@pytest.mark.parametrize("kind", ["generated", "longest"])
def test_a_phone_scrolls_tables_in_labelled_boxes_not_the_page(
    chromium_browser: Any, comparison: Comparison, tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "diff.html"
    path.write_text(compare_page(comparison if kind == "generated" else _long(comparison)), encoding="utf-8")
    context, page = _open(chromium_browser, path, 390)
    try:
        scroll_width, inner = page.evaluate(PAGE)
        assert scroll_width <= inner
        boxes = page.locator("main .scroll-x")
        assert boxes.count() == page.locator("main table").count()
        for index in range(boxes.count()):
            box = boxes.nth(index)
            assert box.get_attribute("role") == "region" and box.get_attribute("tabindex") == "0"
            assert "scrolls sideways" in (box.get_attribute("aria-label") or "")
        # the metric, its change, the interval and the better side are in view before any scroll
        metrics = page.locator("#metrics .scroll-x")
        right = metrics.evaluate("box => box.getBoundingClientRect().right")
        heads = metrics.locator("thead th")
        assert [heads.nth(i).inner_text().split()[0] for i in range(4)] == ["metric", "median", "interval", "better"]
        edges = [heads.nth(i).evaluate("th => th.getBoundingClientRect().right") for i in range(4)]
        assert max(edges) <= right, (edges, right)
        assert page.locator(".scroll-note").first.is_visible()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"compare-{kind}-390.png"), full_page=True)
    finally:
        context.close()
