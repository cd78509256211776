"""Reliability round 3 (issue 29, item 2): what ``show`` and the browser's detail pane render is bounded.

A page holds at most ``TEXT_CLIP`` characters of one text and ``PAGE_TEXT`` in all, the pane
``PANE_TEXT_CLIP`` and ``PANE_TEXT``; a clipped text says how many bytes it leaves out and how to get
it whole (``transcript_text``, ``show --text SEQ``). Memory is measured in child interpreters (their
own ``VmHWM``): rendering a log with one huge tool result costs about what reading it costs. The
full-size logs of the report are in ``benchmarks/view_memory.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog import read_corpus, transcript, transcript_text
from subagent_catalog.analysis.transcript import TRANSCRIPT_SCHEMA
from subagent_catalog.cli import main
from subagent_catalog.views.transcript_view import PAGE_TEXT, TEXT_CLIP, transcript_fragment
from subagent_catalog.views.widgets.session_detail import PANE_TEXT_CLIP

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from view_memory import CHILD, _big_result_log  # the benchmark's builder and child

RESULT_MIB = 40
MARGIN_MB = 96
"""What a view may add to reading the log (the page's text is bounded; the interpreter's own noise)."""


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """A zstd log of a few KB whose one tool result is 40 MiB of markup (the report: 200 MiB in 6,995 bytes)."""
    root = tmp_path_factory.mktemp("view-bounds") / "corpus"
    _, file_bytes, plain = _big_result_log(root, RESULT_MIB)
    return root, file_bytes, plain


def _child(what: str, root: Path, out: Path) -> dict[str, Any]:
    env = {**os.environ, "VIEW_OUT": str(out), "SUBAGENT_CATALOG_CACHE": "off"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, what, str(root), "big"], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_show_and_the_detail_pane_of_a_huge_tool_result_cost_about_what_reading_it_costs(
    big: tuple[Path, int, int], tmp_path: Path
) -> None:
    root, file_bytes, _ = big
    assert file_bytes < 64 << 10  # a few KB on disk
    read = _child("read", root, tmp_path)
    for what in ("html", "md", "detail"):
        result = _child(what, root, tmp_path)
        assert result["peak_mb"] < read["peak_mb"] + MARGIN_MB, (what, result, read)  # was + 4-8 copies of it
        assert result["bytes"] < 2 << 20, (what, result)  # was the whole text, escaped (200 MiB -> 489 MiB)


def test_a_clipped_text_says_how_many_bytes_are_left_out_and_show_text_writes_it_whole(
    big: tuple[Path, int, int], tmp_path: Path
) -> None:
    root, _, _ = big
    rows = transcript(read_corpus(root), "big")
    result = rows.filter(pl.col("kind") == "tool-result").row(0, named=True)
    whole = len(result["text"].encode())
    assert whole == RESULT_MIB << 20
    page = tmp_path / "big.html"
    done = CliRunner().invoke(main, ["show", str(root), "big", "-o", str(page), "--no-cache", "-q"])
    assert done.exit_code == 0, done.output
    left = whole - len(result["text"][:TEXT_CLIP].encode())
    html = page.read_text()
    assert f"… {left:,} more bytes not shown" in html
    assert f"--text {result['seq']} -o FILE" in html
    out = tmp_path / "result.txt"
    done = CliRunner().invoke(main, ["show", str(root), "big", "--text", str(result["seq"]), "-o", str(out), "-q"])
    assert done.exit_code == 0, done.output
    assert out.read_bytes() == result["text"].encode()
    assert transcript_text(read_corpus(root), "big", result["seq"]) == result["text"]
    markdown = tmp_path / "big.md"
    assert CliRunner().invoke(main, ["show", str(root), "big", "-o", str(markdown), "-q"]).exit_code == 0
    assert f"… {left:,} more bytes not shown" in markdown.read_text()


def test_the_detail_pane_clips_at_its_own_bound(big: tuple[Path, int, int]) -> None:
    from subagent_catalog.widgets import CatalogBrowser

    root, _, _ = big
    browser = CatalogBrowser(read_corpus(root))
    browser.selected = browser.find("big")
    left = (RESULT_MIB << 20) - PANE_TEXT_CLIP
    assert f"… {left:,} more bytes not shown" in browser.detail
    assert "transcript_text(corpus, &#x27;big&#x27;, " in browser.detail or "transcript_text(corpus, 'big', " in (
        browser.detail
    )
    assert len(browser.detail) < 200_000


def _row(seq: int, text: str) -> dict[str, Any]:
    return {"seq": seq, "seqs": [seq], "time_ms": seq, "kind": "tool-result", "text": text, "in_seed": False}


def test_a_page_spends_its_text_budget_then_keeps_each_texts_head() -> None:
    rows = pl.DataFrame([_row(i, "y" * 1_000) for i in range(50)], schema=TRANSCRIPT_SCHEMA)
    html = transcript_fragment(rows, budget=10_000, limit=100, hint=lambda seq: f" [seq {seq}]")
    assert html.count("y") < 10_000 + 45 * 100 + 100  # the budget, then the heads
    assert html.count("more bytes not shown") >= 40 and "… 900 more bytes not shown [seq 49]" in html
    assert PAGE_TEXT >= 100 * TEXT_CLIP  # a page shows many whole clipped texts before its budget runs out
