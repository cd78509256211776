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
from tree_pages import write_shape  # the tree benchmark's shapes
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


# --------------------------------------------------------------------------- tree pages (issue 42 item 10)

CHILD_ROW_BOUND = 400
"""Bytes a row of a page's children table holds at most (a short name, its figures: ``views.children_table``)."""

PAGE_BOUND = 48_000
"""Bytes a tree page of a small session holds at most, whatever its tree's shape: the template and the
session's own transcript (about 7 KB here), at most 60 labelled rows or 1,000 packed bars, a curve of at
most 200 slices and 100 child links."""


def _tree_rows(shape: str, size: int) -> pl.DataFrame:
    """``tree_timeline`` rows of a chain (each session the only child of the one before, nested in time)
    or a hub (one top, ``size`` children side by side); the top is ``s0``."""
    from subagent_catalog.analysis.timeline import TIMELINE_SCHEMA

    t0 = 1_700_000_000_000
    rows = []
    for i in range(size + 1):
        chain = shape == "chain"
        start, end = (t0 + 10 * i, t0 + 20 * size - 10 * i) if chain or i == 0 else (t0 + 7 * i, t0 + 7 * i + 500)
        rows.append(
            {
                "list_order": i,
                "session_id": f"s{i}",
                "parent_list_order": (i - 1 if chain else 0) if i else None,
                "depth": i if chain else min(i, 1),
                "origin": "subagent",
                "label": None,
                "outcome": "error" if i % 7 == 0 else "completed",
                "outcome_detail": None,
                "start_ms": start,
                "end_ms": end,
                "duration_ms": end - start,
                "subtree_sessions": size + 1 - i if chain else 1,
            }
        )
    return pl.DataFrame(rows, schema=TIMELINE_SCHEMA)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from subagent_catalog.synth.writer import EventLog, header, write_session

    root = tmp_path_factory.mktemp("tree-bounds") / "corpus"
    for sid, parent in (("s0", None), ("s1", "s0")):
        log = EventLog(sid)
        log.turn_start()
        log.user(f"task of {sid}")
        log.turn_end()
        write_session(root, header(sid, created_at=1, parent=parent, subagent=parent is not None), log.events, "none")
    return read_corpus(root, cache=False)


@pytest.mark.parametrize("shape", ["chain", "hub"])
def test_a_tree_page_is_bounded_in_bytes_whatever_the_trees_depth_or_width(small_run: Any, shape: str) -> None:
    """Issue 42 item 10: a page drew the timeline of its whole subtree (lanes and curve), so the pages of a
    1,000-deep chain held 32 MB and of a 3,000-deep one 228 MB. Now a page's bytes do not grow with its tree."""
    from subagent_catalog.views.transcript_view import transcript_page

    sizes = {}
    for size in (100, 1_000, 8_000):
        page = transcript_page(small_run, "s0", link=lambda other: f"{other}.html", tree=_tree_rows(shape, size))
        sizes[size] = len(page.encode())
        assert f"the {size:,} below it" in page
    assert max(sizes.values()) <= PAGE_BOUND, sizes
    assert sizes[8_000] <= sizes[1_000] + 200, sizes  # not growing: only the counts' digits differ


def test_the_pages_of_a_chain_grow_with_its_sessions_not_its_depth_squared(tmp_path: Path) -> None:
    """Bytes per session do not grow with a chain's depth (they did: 15.7 KB at 100 deep, 19.6 KB at 400)."""
    from subagent_catalog.views.transcript_tree import write_tree_pages

    per_session = {}
    for depth in (60, 240):
        root = tmp_path / f"chain-{depth}"
        top = write_shape(root, "chain", depth)
        pages = write_tree_pages(read_corpus(root, cache=False), top, tmp_path / f"pages-{depth}")
        sizes = [page.stat().st_size for page in pages.pages]
        assert len(sizes) == depth and max(sizes) <= PAGE_BOUND, max(sizes)
        per_session[depth] = sum(sizes) / depth
    assert per_session[240] <= 1.1 * per_session[60], per_session


def test_a_hub_lists_its_children_a_page_at_a_time_and_every_link_resolves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re
    import urllib.parse

    from subagent_catalog.views import transcript_tree, transcript_view
    from subagent_catalog.views.transcript_tree import write_tree_pages

    MAX_CHILD_LINKS = 100  # a page holds 1,000 (``CHILDREN_PER_PAGE``): 100 here keeps the test small
    monkeypatch.setattr(transcript_view, "MAX_CHILD_LINKS", MAX_CHILD_LINKS)
    monkeypatch.setattr(transcript_tree, "MAX_CHILD_LINKS", MAX_CHILD_LINKS)
    children = 2 * MAX_CHILD_LINKS + 30
    root = tmp_path / "hub"
    write_shape(root, "hub", children)
    pages = write_tree_pages(read_corpus(root, cache=False), "hub", tmp_path / "pages")
    reached: set[str] = set()
    todo = [pages.top.name]
    while todo:  # every page is reached from the top by links, and every link resolves
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        text = (tmp_path / "pages" / name).read_text(encoding="utf-8")
        assert len(text.encode()) <= PAGE_BOUND + MAX_CHILD_LINKS * CHILD_ROW_BOUND, name
        for href in re.findall(r'href="([^"#]+)"', text):
            target = urllib.parse.unquote(href)
            assert (tmp_path / "pages" / target).is_file(), (name, href)
            todo.append(target)
    assert reached == {page.name for page in pages.pages} and len(reached) == 1 + children + 2
    top = pages.top.read_text(encoding="utf-8")
    assert top.count('href="hub-child-') == MAX_CHILD_LINKS and f"the other {children - MAX_CHILD_LINKS}</a>" in top
