"""The browser's error-group filter and its search by error code and message (issue 43 item 3), driven by traits."""

from __future__ import annotations

import polars as pl
import pytest

from subagent_catalog import error_groups
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.views.widgets import CatalogBrowser


@pytest.fixture(scope="module")
def sample() -> Corpus:
    return read_corpus("data/sample")


@pytest.fixture
def browser(sample: Corpus) -> CatalogBrowser:
    return CatalogBrowser(sample)


def _choices(browser: CatalogBrowser) -> dict[str, list[object]]:
    return {name: values for name, values in browser.choices}


def _keys_where(sample: Corpus, condition: pl.Expr) -> list[int]:
    return sample.sessions.with_row_index("key").filter(condition)["key"].cast(pl.Int64).to_list()


def test_browser_offers_one_error_group_per_group_of_the_library(browser: CatalogBrowser, sample: Corpus) -> None:
    offered = _choices(browser)["error_group"]
    groups = error_groups(sample)
    assert len(offered) == groups.height
    coded = groups.filter(pl.col("code").is_not_null()).row(0, named=True)
    assert f"{coded['code']} · {coded['message']}" in offered


def test_browser_error_group_filter_lists_that_groups_failed_runs(browser: CatalogBrowser, sample: Corpus) -> None:
    browser.error_group = "CONTEXT_LENGTH · context length exceeded"
    expected = _keys_where(sample, pl.col("last_error_code") == "CONTEXT_LENGTH")
    assert sorted(browser.results) == sorted(expected) and expected
    assert browser.showing == "results" and "error_group=CONTEXT_LENGTH" in browser.results_label
    browser.clear_filters()
    assert browser.error_group is None and not browser.filtering


def test_browser_every_failed_run_is_in_exactly_one_error_group(browser: CatalogBrowser, sample: Corpus) -> None:
    seen: list[int] = []
    for group in _choices(browser)["error_group"]:
        browser.error_group = str(group)
        seen += browser.results
    assert sorted(seen) == sorted(_keys_where(sample, pl.col("outcome").is_in(FAILED_OUTCOMES)))


def test_browser_search_matches_error_codes_and_messages(browser: CatalogBrowser, sample: Corpus) -> None:
    browser.search = "context_length"  # a code, in any case
    assert browser.results == _keys_where(sample, pl.col("last_error_code") == "CONTEXT_LENGTH")
    browser.search = "TORN RECORD"  # words of a message (here the outcome's detail: the run has no error event)
    message = pl.coalesce("last_error_message", "outcome_detail").str.to_lowercase()
    torn = _keys_where(sample, message.str.contains("torn record"))
    assert torn and browser.results == torn
    browser.search = "context length exceeded"
    assert browser.results == _keys_where(sample, pl.col("last_error_code") == "CONTEXT_LENGTH")
    browser.search = "no such words anywhere"
    assert browser.results == []
