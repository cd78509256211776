"""Issue 43 item 2: one naming function (label, else title, else first prompt; clipped, escaped), used by every view.

Each view is checked over a corpus whose ids are 36-character UUIDs and whose sessions have labels,
titles or prompts: the UUID is never the text a session is named by where a name exists; it appears
only as the short id beside the name (whole in the page and its tooltip).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from subagent_catalog.analysis.run_names import NAME_CLIP
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.synth.writer import EventLog, descriptor, header, write_session
from subagent_catalog.views.names import (
    SHORT_ID,
    name_html,
    names_by_id,
    session_name,
    short_id,
)

ROOT = "0c8f3a52-5d0e-4c11-9a6b-7e2f4d1c9b80"
TITLED = "1a2b3c4d-0000-4000-8000-00000000a001"
CHILDREN = [f"7d3b1e90-aaaa-4bbb-8ccc-00000000000{i}" for i in range(3)]
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """A root named by its first prompt, a root with a title, and three failing labelled children."""
    root = tmp_path_factory.mktemp("named")
    log = EventLog(ROOT)
    log.turn_start()
    log.user("Coordinate the <b>refactor</b>")
    log.turn_end()
    write_session(root, header(ROOT, created_at=1_000), log.events, "none")
    titled = EventLog(TITLED)
    titled.turn_start()
    titled.user("first words")
    titled.add("session/title", {"title": "Nightly triage"})
    titled.turn_end()
    write_session(root, header(TITLED, created_at=2_000), titled.events, "none")
    for index, sid in enumerate(CHILDREN):
        child = EventLog(sid)
        child.descriptor(descriptor("continuable", label=f"Port module {index}"))
        child.turn_start()
        child.user("go")
        child.add("turn/end", {"turn": child.turn, "reason": {"kind": "error", "error": {"message": "boom"}}})
        write_session(root, header(sid, created_at=3_000 + index, parent=ROOT, subagent=True), child.events, "none")
    return read_corpus(root, cache=False)


def test_the_label_comes_first_then_the_title_or_prompt() -> None:
    assert session_name("Port module", "Nightly triage") == "Port module"
    assert session_name(None, "Nightly triage") == "Nightly triage"
    assert session_name("   ", "Nightly triage") == "Nightly triage"  # a blank label is no name
    assert session_name(None, None) is None and session_name("", " \n ") is None


def test_a_name_is_folded_to_one_line_and_clipped() -> None:
    assert session_name("fix\n\n  the   test", None) == "fix the test"
    long = session_name("x" * 500, None)
    assert long is not None and len(long) == 60 and long.endswith("…")  # views.names.NAME_CLIP
    assert session_name("x" * 500, None, limit=10) == "x" * 9 + "…"


def test_name_html_escapes_the_name_and_keeps_the_whole_id() -> None:
    html = name_html(ROOT, label='<img src=x onerror="alert(1)">')
    assert "<img" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    # the whole id is the id element's text and tooltip; the style sheet shows its first characters
    assert f'<code class="nm-id nm-clip" title="{ROOT}">{ROOT}</code>' in html
    assert short_id(ROOT) == ROOT[:SHORT_ID] + "…"


def test_name_html_of_a_session_without_a_name_is_its_id_and_a_label_is_not_italic() -> None:
    only = f'<code class="nm-id nm-only nm-clip" title="{ROOT}">{ROOT}</code>'
    assert name_html(ROOT) == f'<span class="nm">{only}</span>'
    assert 'class="nm-t"' in name_html("s1", label="Port")
    assert 'class="nm-t nm-run"' in name_html("s1", name="a prompt")  # a title or prompt is marked
    assert name_html(None, label="x").endswith("x</bdi></span>")  # no id: no id element
    assert 'href="p.html"' in name_html("s1", label="x", href="p.html")


def test_names_by_id_gives_the_label_or_else_the_title_or_prompt(named: Corpus) -> None:
    found = names_by_id(named, [ROOT, TITLED, CHILDREN[0], "nowhere"])
    assert found[ROOT] == (None, "Coordinate the <b>refactor</b>")
    assert found[TITLED] == (None, "Nightly triage")
    assert found[CHILDREN[0]] == ("Port module 0", None)
    assert "nowhere" not in found
    assert NAME_CLIP >= 60


def _texts_named_by_uuid(html: str) -> list[str]:
    """UUIDs that are an element's whole text anywhere but in a ``nm-id`` element (the short id)."""
    found = []
    for match in re.finditer(r"<([a-z0-9]+)([^>]*)>\s*(" + UUID.pattern + r")\s*</\1>", html):
        if "nm-id" not in match[2]:
            found.append(match[3])
    return found


def test_the_report_names_runs_trees_parents_and_timelines(named: Corpus) -> None:
    from subagent_catalog.views.report import render_report

    page = render_report(named)
    runs = page[page.index('<section id="runs">') : page.index('<section id="summary">')]
    assert _texts_named_by_uuid(runs) == []
    failures = runs[runs.index('id="run-failures-table"') :]
    failures = failures[: failures.index("</table>")]
    for index in range(3):
        assert f">Port module {index}</bdi>" in failures
    assert failures.count(">Coordinate the &lt;b&gt;refactor&lt;/b&gt;</bdi>") == 3  # each run's parent, named
    assert "Coordinate the &lt;b&gt;refactor&lt;/b&gt; · 4 sessions" in runs  # the timeline's title
    trees = runs[runs.index('id="trees-slowest"') :]
    assert ">Coordinate the &lt;b&gt;refactor&lt;/b&gt;</bdi>" in trees[: trees.index("</table>")]


def test_the_show_page_and_markdown_name_the_session_its_parent_and_children(named: Corpus) -> None:
    from subagent_catalog.views.transcript_markdown import transcript_markdown
    from subagent_catalog.views.transcript_view import transcript_page

    page = transcript_page(named, ROOT)
    assert "<title>Coordinate the &lt;b&gt;refactor&lt;/b&gt; · 0c8f3a52…</title>" in page
    assert _texts_named_by_uuid(page) == []
    assert all(f">Port module {i}</bdi>" in page for i in range(3))  # children and timeline rows
    child = transcript_page(named, CHILDREN[1])
    assert "<title>Port module 1 · 7d3b1e90…</title>" in child
    assert 'parent: <span class="nm"><bdi class="nm-t nm-run"' in child
    text = transcript_markdown(named, ROOT)
    assert text.startswith(f"# `Coordinate the <b>refactor</b>` (`{ROOT}`)")
    assert f"`Port module 0` (`{CHILDREN[0]}`)" in text


def test_the_browser_and_the_dashboard_lead_with_the_label(named: Corpus) -> None:
    from subagent_catalog.views.widgets.browser import CatalogBrowser
    from subagent_catalog.views.widgets.dashboard import DiagnosticsDashboard

    browser = CatalogBrowser(named)
    text = browser.label(browser.find(CHILDREN[2]))["text"]
    assert text.startswith("Port module 2  (7d3b1e90…)") and CHILDREN[2] not in text
    board = DiagnosticsDashboard(named)
    board.selected_dimension = "outcome"
    board.pick("error")
    table = board.table.value
    assert _texts_named_by_uuid(table) == []
    assert all(f">Port module {i}</bdi>" in table for i in range(3))
    assert pl.Series(UUID.findall(table)).is_in([ROOT, *CHILDREN]).all()


def test_names_read_for_many_rows_are_kept_with_the_frames_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report names up to 1,000 roots: a warm run takes their names from the frames cache, reading no log;
    a changed log is named anew; a few names (a click) are not written."""
    import subagent_catalog.views.names as names_module
    from subagent_catalog.views.names import KEEP_NAMES_FROM, run_row_names

    root, cache = tmp_path / "root", tmp_path / "cache"
    count = KEEP_NAMES_FROM + 5
    for index in range(count):
        log = EventLog(f"run-{index:03d}")
        log.turn_start()
        log.user(f"task number {index}")
        log.turn_end()
        write_session(root, header(f"run-{index:03d}", created_at=1_000 + index), log.events, "none")

    def rows(corpus: Corpus) -> pl.DataFrame:
        return corpus.sessions.select("list_order", pl.col("identity_label").alias("label"))

    first = read_corpus(root, cache=str(cache))
    expected = run_row_names(first, [rows(first)])
    assert len(expected) == count and expected[0] == "task number 0"

    def no_read(*args: Any, **kwargs: Any) -> pl.DataFrame:
        raise AssertionError("a log was read for its name")

    monkeypatch.setattr(names_module, "run_names", no_read)
    warm = read_corpus(root, cache=str(cache))
    assert warm is not first and run_row_names(warm, [rows(warm)]) == expected  # no log read

    monkeypatch.undo()
    next(root.rglob("run-000/session.jsonl")).unlink()
    changed = EventLog("run-000")
    changed.turn_start()
    changed.user("a new first prompt")
    changed.turn_end()
    write_session(root, header("run-000", created_at=1_000), changed.events, "none")
    again = read_corpus(root, cache=str(cache))
    assert run_row_names(again, [rows(again)])[0] == "a new first prompt"

    few = tmp_path / "few"
    write_session(few, header("solo", created_at=1), EventLog("solo").events, "none")
    small = read_corpus(few, cache=str(cache))
    run_row_names(small, [rows(small)])
    assert small._derived.get("run_names", {"list_order": pl.Int64, "name": pl.String}, small) is None
