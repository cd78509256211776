"""Issue 43 item 4: the dashboard's table rows reveal their session in a linked browser on a click.

The front end's click sets the table widget's ``clicked`` trait; here it is set as the JS would.
"""

from __future__ import annotations

import pytest

from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.views.widgets.browser import CatalogBrowser
from subagent_catalog.views.widgets.dashboard import DiagnosticsDashboard
from subagent_catalog.views.widgets.dashboard_rows import DashboardRows


@pytest.fixture(scope="module")
def sample() -> Corpus:
    return read_corpus("data/sample")


def _listed(board: DiagnosticsDashboard) -> list[str]:
    return [sid for sid in board.affected_ids if sid is not None]


def _selected_id(browser: CatalogBrowser, corpus: Corpus) -> str | None:
    return None if browser.selected is None else str(corpus.sessions["session_id"][browser.selected])


def test_the_table_is_a_rows_widget_with_a_session_id_on_each_row(sample: Corpus) -> None:
    board = DiagnosticsDashboard(sample)
    assert isinstance(board.table, DashboardRows)
    board.pick("child")
    listed = _listed(board)
    assert listed
    assert board.table.value.count(" data-sid=") == len(listed)
    assert all(f'data-sid="{sid}"' in board.table.value for sid in listed)


def test_a_row_click_reveals_its_session_in_the_linked_browser(sample: Corpus) -> None:
    board, browser = DiagnosticsDashboard(sample), CatalogBrowser(sample)
    board.link_browser(browser)
    board.pick("child")
    first, last = _listed(board)[0], _listed(board)[-1]
    assert first != last
    board.table.clicked = last
    assert board.revealed == last and _selected_id(browser, sample) == last
    board.table.clicked = first
    assert board.revealed == first and _selected_id(browser, sample) == first


def test_a_second_click_on_the_same_row_reveals_it_again(sample: Corpus) -> None:
    board, browser = DiagnosticsDashboard(sample), CatalogBrowser(sample)
    board.link_browser(browser)
    board.pick("child")
    sid = _listed(board)[0]
    board.table.clicked = sid
    assert board.table.clicked is None  # cleared, so the same id counts as a new click
    browser.select_id("scan-tests" if sid != "scan-tests" else "auth-refactor")  # the user moves on
    board.table.clicked = sid
    assert _selected_id(browser, sample) == sid


def test_without_a_linked_browser_rows_are_not_clickable_and_a_click_reveals_nothing(sample: Corpus) -> None:
    board = DiagnosticsDashboard(sample)
    board.pick("child")
    assert not board.table.clickable
    board.table.clicked = _listed(board)[0]
    assert board.revealed is None and board.table.clicked is None


def test_linking_a_browser_makes_the_rows_clickable(sample: Corpus) -> None:
    board = DiagnosticsDashboard(sample)
    board.link_browser(CatalogBrowser(sample))
    assert board.table.clickable


def test_a_click_on_an_id_the_browser_does_not_know_changes_nothing(sample: Corpus) -> None:
    board, browser = DiagnosticsDashboard(sample), CatalogBrowser(sample)
    board.link_browser(browser)
    board.table.clicked = "auth-refactor"
    board.table.clicked = "no-such-session"
    assert _selected_id(browser, sample) == "auth-refactor"


def test_a_row_without_a_session_id_carries_no_data_sid() -> None:
    import polars as pl

    from subagent_catalog.views.widgets.dashboard_table import affected_table_html

    frame = pl.DataFrame({"id": [None, "s1"], "label": ["x", "y"], "kind": ["unlisted", "child"]})
    html = affected_table_html(frame, caption="2 sessions")
    assert html.count("data-sid=") == 1 and 'data-sid="s1"' in html
