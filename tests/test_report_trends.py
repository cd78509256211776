"""The report's Errors and Trends sections, and the Tools table's links to the failing calls."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from subagent_catalog.analysis.run_summary import RunSummary, run_summary
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.views.report import render_report
from subagent_catalog.views.report_trends import trends_section
from subagent_catalog.views.svg_charts import Line, line_chart
from tests.test_report import _session


@pytest.fixture(scope="module")
def sample() -> Corpus:
    return read_corpus("data/sample")


@pytest.fixture(scope="module")
def summary(sample: Corpus) -> RunSummary:
    return run_summary(sample)


@pytest.fixture(scope="module")
def page(sample: Corpus) -> str:
    # an error code may break after an underscore (``CONTEXT_<wbr>LENGTH``): the tests read it whole
    return render_report(sample).replace("<wbr>", "")


def _section(page: str, name: str) -> str:
    [body] = re.findall(rf'<section id="{name}">(.*?)</section>', page, flags=re.S)
    return body


def _table_rows(section: str, table_id: str) -> list[str]:
    [body] = re.findall(rf'<table[^>]*id="{table_id}">.*?<tbody>(.*?)</tbody>', section, flags=re.S)
    return re.findall(r"<tr[ >].*?</tr>", body, flags=re.S)


def test_report_errors_lists_every_group_with_its_example_linked(page: str, summary: RunSummary) -> None:
    rows = _table_rows(_section(page, "errors"), "error-groups")
    assert len(rows) == summary.error_groups.height
    targets = re.findall(r'href="#(fail-\d+)"', "".join(rows))
    assert len(targets) == summary.error_groups.height  # every example is in the Failed runs table here
    for target in targets:
        assert f'id="{target}"' in page
    coded = summary.error_groups.filter(pl.col("code") == "CONTEXT_LENGTH").row(0, named=True)
    [row] = [r for r in rows if "CONTEXT_LENGTH" in r]
    index = summary.failures["session_id"].to_list().index(coded["example_session_id"])
    assert f'href="#fail-{index}"' in row
    assert re.search(rf'<tr class="run[^"]*" id="fail-{index}">.*?{coded["example_session_id"]}', page, flags=re.S)


def test_report_errors_unknown_cost_is_never_shown_as_zero(page: str, summary: RunSummary) -> None:
    rows = _table_rows(_section(page, "errors"), "error-groups")
    unknown = summary.error_groups.filter(pl.col("cost_unknown") > 0)
    assert unknown.height > 0
    for group in unknown.iter_rows(named=True):
        [row] = [r for r in rows if group["message"][:30] in html.unescape(r)]
        assert "of unknown cost" in row and "$0.00" not in row


def test_report_tools_failed_count_leads_to_the_failing_calls(page: str, summary: RunSummary) -> None:
    tool = summary.tools.filter(pl.col("failed") > 0).row(0, named=True)
    [tools_row] = [r for r in _table_rows(page, "runs-tools") if tool["name"] in r]
    [anchor] = re.findall(r'href="#(tool-fails-\d+)"', tools_row)
    [listed] = re.findall(rf'<tr id="{anchor}">(.*?)</tr>', page, flags=re.S)
    call = summary.failing_calls.filter(pl.col("name") == tool["name"]).row(0, named=True)
    assert call["session_id"] in listed and call["error_code"] in listed


def test_report_trends_table_and_charts_follow_the_trends(page: str, summary: RunSummary) -> None:
    section = _section(page, "trends")
    rows = _table_rows(section, "trend-days")
    assert len(rows) == summary.trends.height
    for row, day in zip(rows, summary.trends.iter_rows(named=True), strict=True):
        if day["cost_unknown"]:
            assert "of unknown cost" in row and "$0.00" not in row
        if day["active_unknown"]:
            assert f"({day['active_unknown']} run" in row
    svgs = re.findall(r"<svg .*?</svg>", section, flags=re.S)
    assert len(svgs) == 5 and "<script" not in section
    dated = summary.trends.filter(pl.col("day").is_not_null())
    runs_chart = svgs[0]
    assert runs_chart.count("<circle") == 2 * dated.height  # a point per day for runs and for failed
    lower = int((dated["cost_unknown"] > 0).sum())
    assert svgs[1].count('fill="#ffffff"') == lower + 1  # hollow points, and the legend's hollow key


def test_line_chart_draws_no_point_for_an_unknown_and_breaks_at_a_gap() -> None:
    days = [datetime(2026, 1, d, tzinfo=UTC).date().toordinal() for d in (1, 2, 3, 5, 6)]
    svg = line_chart(
        days,
        [Line("v", [1.0, 2.0, None, 4.0, 5.0], [False] * 5)],
        colours={"v": "#0072B2"},
        value_title="v",
        fmt=str,
    )
    assert svg.count("<circle") == 4
    assert svg.count("<polyline") == 2  # 1 to 2, then 5 to 6: never across the unknown or the empty day


def test_report_trends_of_hostile_times_put_them_in_labelled_rows(tmp_path: Path) -> None:
    year1 = int((datetime(1, 1, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000)
    year9999 = int((datetime(9999, 12, 31, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000)
    _session(tmp_path, "first", created=year1)
    _session(tmp_path, "last", created=year9999)
    _session(tmp_path, "past", created=2**53 - 1)
    corpus = read_corpus(tmp_path, jobs=1, cache=False)
    section = trends_section(run_summary(corpus))
    days = [row["day"] for row in section["days"]]
    # A negative createdAt makes the header unreadable (upstream's rule): that run has no time.
    assert days == ["9999-12-31", "(out of range)", "(no time)"]
    page = render_report(corpus)
    assert "9999-12-31" in _section(page, "trends") and "(out of range)" in _section(page, "trends")
    assert any("out of range" in note for note in section["notes"])
