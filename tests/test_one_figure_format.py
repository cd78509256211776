"""Issue 57, points 3, 4 and 9: one format per figure, one label per token quantity, no ``$0`` beside unknown tokens.

Each test builds a small corpus in ``tmp_path`` (or reads ``data/sample``) and reads a view's output as a
user would: the figure and its label must be the one ``frames.units`` gives, wherever it is shown.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from subagent_catalog.analysis.run_summary import run_summary, session_runs
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.units import TOKEN_LABELS, human_count, token_label
from subagent_catalog.synth import writer as w
from subagent_catalog.views.children_table import children_rows, children_table
from subagent_catalog.views.run_format import runs_lines, runs_markdown
from subagent_catalog.views.summary_text import summary_text
from subagent_catalog.views.transcript_view import transcript_page

T0 = 1_767_225_600_000
SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"


def _stepped_without_usage(root: Path) -> None:
    """A parent and its child whose only step failed before the model reported any usage (a fetch that failed)."""
    parent = w.EventLog("parent-0001", time=T0)
    parent.turn_start()
    parent.user("delegate it")
    parent.assistant("on it")
    parent.turn_end()
    w.write_session(root, w.header("parent-0001", created_at=T0, cwd="/p"), parent.events, "none")
    child = w.EventLog("child-0001", time=T0 + 10)
    child.turn_start()
    child.user("fetch the page")
    child.add("step/start", {"turn": 1, "step": 1})
    child.add("step/end", {"turn": 1, "step": 1})
    child.add(
        "turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": "fetch failed", "code": "UNKNOWN"}}}
    )
    head = w.header("child-0001", created_at=T0 + 10, cwd="/p", parent="parent-0001", subagent=True)
    w.write_session(root, head, child.events, "none")


def test_a_run_costing_0_shows_0_tokens_not_unknown(tmp_path: Path) -> None:
    """Point 3: a run whose log was read and whose steps reported no usage costs $0 and used 0 tokens.

    Today its tokens are unknown (null, shown ``–`` or ``unknown``) beside a known ``$0``: the failed runs
    table and a hub page's children table said both at once.
    """
    _stepped_without_usage(tmp_path)
    corpus = read_corpus(tmp_path, cache=False)
    child = session_runs(corpus.sessions).filter(pl.col("session_id") == "child-0001").row(0, named=True)
    assert child["outcome"] == "error" and child["cost_usd"] == 0.0
    assert child["tokens"] == 0
    failed = run_summary(corpus).failures.row(0, named=True)
    assert (failed["tokens"], failed["cost_usd"]) == (0, 0.0)
    table = children_table(children_rows(corpus, ["child-0001"]), names={}, href=lambda sid: None)
    assert ">unknown<" not in table and 'data-v="0">0<' in table and ">$0<" in table


def test_an_unreadable_run_stays_unknown() -> None:
    """The other side of point 3: a log whose usage could not be read has unknown tokens and cost, never 0."""
    runs = session_runs(read_corpus(SAMPLE, cache=False).sessions)
    unreadable = runs.filter(pl.col("outcome") == "unreadable")
    assert unreadable.height and unreadable.filter(pl.col("cost_usd").is_null()).height
    assert unreadable.filter(pl.col("cost_usd").is_null() & (pl.col("tokens") == 0)).is_empty()


def test_summary_names_each_token_quantity_as_the_report_does() -> None:
    """Point 4: ``in`` meant input + cache in summary's per-model lines and input alone in the report's table.

    Every view labels a token count with ``TOKEN_LABELS``: the per-model lines and Markdown table show the
    same four quantities, with the same labels, as the total line and the report's per-model table.
    """
    runs = run_summary(read_corpus(SAMPLE))
    lines = runs_lines(runs)
    chat = runs.models.filter(pl.col("model") == "deepseek-chat").row(0, named=True)
    line = next(line for line in lines if line.startswith("  deepseek/deepseek-chat:"))
    assert " in, " not in line and " out, " not in line
    keys = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    assert all(f"{TOKEN_LABELS[key]} {human_count(chat[key])}" in line for key in keys), line
    markdown = "\n".join(runs_markdown(runs))
    assert "input (billed)" not in markdown
    assert "| model | steps | input | cache read | cache write | output | cost |" in markdown
    from subagent_catalog.views.table_columns import TABLES

    headings = {column.key: column.heading for column in TABLES["models"]}
    assert [headings[k] for k in ("input", "cache_read", "cache_write", "output")] == [
        TOKEN_LABELS[k] for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    ]


def test_show_pages_label_step_tokens_not_with_upstream_keys() -> None:
    """Point 9: a step's tokens read ``cache read 2,044``, not upstream's ``cacheRead 2,044``."""
    page = transcript_page(read_corpus(SAMPLE), "auth-refactor")
    feet = re.findall(r"step tokens: ([^<]*)<", page)
    assert feet and all("cacheRead" not in foot and "Tokens" not in foot for foot in feet)
    assert any("cache read " in foot for foot in feet)
    assert token_label("cacheWriteTokens") == "cache write" == token_label("cache_write_tokens")


def test_abort_and_max_tokens_runs_say_what_happened() -> None:
    """Point 9: an abort group reads ``aborted by parent`` (not ``parent``), a max-tokens run has a detail."""
    runs = run_summary(read_corpus(SAMPLE))
    groups = runs.error_groups["message"].to_list()
    assert "aborted by parent" in groups and "parent" not in groups and "max-tokens" not in groups
    details = dict(runs.failures.select("session_id", "outcome_detail").iter_rows())
    assert details["rs-03"] and "output token limit" in details["rs-03"]
    text = "\n".join(runs_lines(runs))
    assert "aborted     Summarise results (rs-01)  aborted by parent" in text


def test_the_summary_counts_files_with_a_thousands_separator(tmp_path: Path) -> None:
    """``sessions 5000 files`` read beside ``4,125``: every count of things has its separator."""
    for n in range(1_234):
        w.write_session(tmp_path, w.header(f"s-{n:05d}", created_at=T0 + n, cwd="/p"), [], "none")
    lines = summary_text(read_corpus(tmp_path, cache=False)).splitlines()
    first = next(line for line in lines if line.startswith("sessions "))
    assert first.startswith("sessions     1,234 files, ")


def test_a_show_page_and_the_browser_state_a_partial_cost_as_its_lower_bound() -> None:
    """A run with priced and unpriced steps: the show page said ``unknown`` where the browser said ``≥ $0.50``.

    Both now state the run's facts once (``transcript_parts.run_facts``): the known part as a lower bound.
    """
    from subagent_catalog.views.transcript_parts import run_facts
    from subagent_catalog.views.widgets.run_facts import run_facts_html

    row = {"outcome": "completed", "cost_usd": None, "cost_usd_known": 0.5, "usage_steps": 2, "input_tokens": 10}
    cost = dict((label, text) for label, text, _ in run_facts(row))["cost"]
    assert cost.startswith("≥ $0.50, the rest unknown")
    assert "≥ $0.50, the rest unknown" in run_facts_html(row)
