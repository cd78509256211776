"""Issue 43 item 2: one naming function (label, else title, else first prompt; clipped, escaped), used by every view.

Each view is checked over a corpus whose ids are 36-character UUIDs and whose sessions have labels,
titles or prompts: the UUID is never the text a session is named by where a name exists; it appears
only as the short id beside the name (whole in the page and its tooltip).
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from subagent_catalog.analysis.run_names import NAME_CLIP
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.paths import Compression
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


def write_named(root: Path, compression: Compression = "none") -> None:
    """A root named by its first prompt, a root with a title, and three failing labelled children."""
    log = EventLog(ROOT)
    log.turn_start()
    log.user("Coordinate the <b>refactor</b>")
    log.turn_end()
    write_session(root, header(ROOT, created_at=1_000), log.events, compression)
    titled = EventLog(TITLED)
    titled.turn_start()
    titled.user("first words")
    titled.add("session/title", {"title": "Nightly triage"})
    titled.turn_end()
    write_session(root, header(TITLED, created_at=2_000), titled.events, compression)
    for index, sid in enumerate(CHILDREN):
        child = EventLog(sid)
        child.descriptor(descriptor("continuable", label=f"Port module {index}"))
        child.turn_start()
        child.user("go")
        child.add("turn/end", {"turn": child.turn, "reason": {"kind": "error", "error": {"message": "boom"}}})
        write_session(
            root, header(sid, created_at=3_000 + index, parent=ROOT, subagent=True), child.events, compression
        )


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("named")
    write_named(root)
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


# ---------------------------------------------------------------- the name column (issue 57, point 5)

NAMES = {ROOT: "Coordinate the <b>refactor</b>", TITLED: "Nightly triage", **dict.fromkeys(CHILDREN, "go")}
"""Each session's ``name``: the title, else the first own human prompt (the children have labels too)."""


def _names(frame: pl.DataFrame) -> dict[str, str | None]:
    return dict(frame.select("session_id", "name").iter_rows())


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_every_kind_of_source_gives_the_name_column_made_by_the_read(tmp_path: Path, compression: Compression) -> None:
    """A corpus (plain, zstd), an archive with and without events, its corpus, a window: one column, no log read."""
    from subagent_catalog.analysis.run_names import run_names
    from subagent_catalog.analysis.window import window_corpus
    from subagent_catalog.store.archive import open_archive
    from subagent_catalog.store.export import export_archive

    write_named(tmp_path / "root", compression)
    corpus = read_corpus(tmp_path / "root", compression=compression, cache=False)
    assert _names(corpus.sessions) == NAMES
    assert corpus.sessions.filter(pl.col("session_id") == TITLED)["prompt"].to_list() == ["first words"]
    for events in (True, False):
        out = tmp_path / f"archive-{events}"
        export_archive(tmp_path / "root", out, events=events, jobs=1, compression=compression)
        archive = open_archive(out)
        assert _names(archive.table("sessions", ["session_id", "name"]).collect()) == NAMES
        assert _names(archive.to_corpus().sessions) == NAMES
        assert names_by_id(archive, [ROOT]) == {ROOT: (None, NAMES[ROOT])}
        assert run_names(archive)["name"].to_list() == run_names(corpus)["name"].to_list()
    window = window_corpus(corpus, since="1970-01-01T00:00:01.500Z", until="1970-01-01T00:00:02.500Z")
    assert _names(window.sessions) == {TITLED: "Nightly triage"}


def test_an_archive_written_before_names_reads_them_as_null_and_the_views_show_ids(tmp_path: Path) -> None:
    """Format 7 had no title, prompt or name: no error, the names are unknown (null), views fall back to ids."""
    import json
    import os

    import pyarrow.parquet as pq

    from subagent_catalog.store.archive import open_archive
    from subagent_catalog.store.checksum import part_digest
    from subagent_catalog.store.export import export_archive
    from subagent_catalog.store.layout import SESSIONS_SINCE_8
    from subagent_catalog.views.report import render_report

    write_named(tmp_path / "root")
    export_archive(tmp_path / "root", tmp_path / "a", events=True, jobs=1)
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    entry = manifest["tables"]["sessions"]
    for index, name in enumerate(entry["files"]):  # the sessions files as format 7 wrote them
        path = tmp_path / "a" / name
        pq.write_table(pq.read_table(path).drop_columns(list(SESSIONS_SINCE_8)), path, compression="zstd")
        entry["file_bytes"][index] = os.path.getsize(path)
        entry["file_blake2b"][index] = part_digest(path.read_bytes())
    manifest["format_version"] = 7
    (tmp_path / "a" / "manifest.json").write_text(json.dumps(manifest))
    old = open_archive(tmp_path / "a")
    sessions = old.to_corpus().sessions
    assert all(sessions[name].null_count() == sessions.height for name in SESSIONS_SINCE_8)
    assert names_by_id(old, [ROOT, CHILDREN[0]]) == {ROOT: (None, None), CHILDREN[0]: ("Port module 0", None)}
    page = render_report(old)
    assert f'<code class="nm-id nm-only nm-clip" title="{ROOT}">{ROOT}</code>' in page  # its id, as before


def test_a_frames_cache_from_before_the_name_column_is_not_used(tmp_path: Path) -> None:
    """A signed frames file whose sessions lack the name columns (an older version's) is a miss: the read names."""
    import hashlib
    import hmac

    from subagent_catalog.store import frames_cache
    from subagent_catalog.store.frames_cache import FramesCache, frames_file

    root, cache = tmp_path / "root", tmp_path / "cache"
    write_named(root)
    first = read_corpus(root, compression="none", cache=cache, jobs=1)
    store: FramesCache = first._derived  # type: ignore[attr-defined]
    old = {**store._frames, "sessions": first.sessions.drop("title", "prompt", "name")}
    key = (cache / "facts.key").read_bytes()
    body = frames_cache._pack({**store._head}, old)
    mac = hmac.new(key, frames_cache._MAGIC, hashlib.sha256)
    mac.update(body)
    Path(frames_file(root, "none", directory=str(cache))).write_bytes(frames_cache._MAGIC + mac.digest() + body)
    warm = read_corpus(root, compression="none", cache=cache, jobs=1)
    assert warm._derived.status == "ignored: the cached sessions frame has another schema"  # type: ignore[attr-defined]
    assert _names(warm.sessions) == NAMES


def test_summary_text_and_markdown_name_runs_and_trees(named: Corpus) -> None:
    from subagent_catalog.analysis.run_summary import run_summary
    from subagent_catalog.views.run_format import runs_lines, runs_markdown

    runs = run_summary(named)
    text = "\n".join(runs_lines(runs))
    shown = f"Coordinate the <b>refactor</b> ({ROOT[:8]}…)"
    assert f"largest tree {shown}: 4 sessions" in text
    assert f"slowest      {shown}" in text or f", {shown}" in text
    assert f"  error       Port module 0 ({CHILDREN[0][:8]}…)" in text
    assert _texts_named_by_uuid(text) == [] and ROOT not in text
    markdown = "\n".join(runs_markdown(runs))
    assert f"| Port module 0 ({CHILDREN[0][:8]}…) |" in markdown and ROOT not in markdown


RUNAWAY_ROOT, RUNAWAY_CHILD = "5f1c2d3e-0000-4000-8000-0000000000aa", "9a8b7c6d-0000-4000-8000-0000000000bb"


def _write_runaway(root: Path) -> Path:
    """A root named by its prompt that completed, and a labelled child still running hours after it."""
    log = EventLog(RUNAWAY_ROOT, time=1_000)
    log.turn_start()
    log.user("Ship the release")
    log.time = 5_000  # the root ends after its child started (a child created later is no runaway)
    log.turn_end()
    write_session(root, header(RUNAWAY_ROOT, created_at=1_000), log.events, "none")
    child = EventLog(RUNAWAY_CHILD, time=2_000)
    child.descriptor(descriptor("continuable", label="Watch the build"))
    child.turn_start()
    child.time = 10_000_000
    child.user("still going")
    write_session(
        root, header(RUNAWAY_CHILD, created_at=2_000, parent=RUNAWAY_ROOT, subagent=True), child.events, "none"
    )
    return root


def test_findings_text_names_the_session_and_the_root_in_its_message(tmp_path: Path) -> None:
    """A runaway child: its header line and the message name the sessions, not their 36-character ids."""
    from subagent_catalog.analysis.findings import findings
    from subagent_catalog.views.findings_text import findings_lines, findings_markdown

    root_id, child_id = RUNAWAY_ROOT, RUNAWAY_CHILD

    corpus = read_corpus(_write_runaway(tmp_path), cache=False)
    found = findings(corpus, detectors=["runaway-child"])
    assert found["message"].to_list() == [
        f"still running 2 h 46 min after its root Ship the release ({root_id[:8]}…) ended (completed)"
    ]
    names = names_by_id(corpus, found["session_id"])
    lines = list(findings_lines(found, names))
    assert lines[0].startswith(f"Watch the build ({child_id[:8]}…)  (")
    assert root_id not in "\n".join(lines) and child_id not in "\n".join(lines)
    assert f"| Watch the build ({child_id[:8]}…) |" in findings_markdown(found, names)


def test_the_report_names_the_largest_and_damaged_trees_and_the_diagnostics(named: Corpus) -> None:
    from subagent_catalog.views.report import render_report

    page = render_report(named)
    trees = page[page.index("Largest trees</h3>") :]
    trees = trees[: trees.index("</table>")]
    assert ">Coordinate the &lt;b&gt;refactor&lt;/b&gt;</bdi>" in trees and _texts_named_by_uuid(trees) == []


def test_diagnostic_rows_carry_the_names_of_the_session_and_its_parent(tmp_path: Path) -> None:
    from subagent_catalog import catalog
    from subagent_catalog.analysis.forest import forest_of_rows
    from subagent_catalog.views.report import _shown_names
    from subagent_catalog.views.report_data import diagnostic_rows

    write_named(tmp_path)
    orphan = EventLog("b1c2d3e4-0000-4000-8000-0000000000cc")
    orphan.turn_start()
    orphan.user("an unlabelled helper")
    orphan.turn_end()
    write_session(
        tmp_path, header(orphan.session_id, created_at=9_000, parent=ROOT, subagent=True), orphan.events, "none"
    )
    corpus = read_corpus(tmp_path, cache=False)
    rows = catalog(corpus)
    (row,) = diagnostic_rows(corpus, rows, forest_of_rows(corpus, rows), _shown_names(corpus, rows))
    assert (row["i"], row["n"], row["m"]) == (orphan.session_id, "an unlabelled helper", NAMES[ROOT])


def test_the_otel_agent_span_is_named_as_the_report_names_the_run(named: Corpus) -> None:
    from subagent_catalog.interop.otel import to_otlp

    agents = {
        span.attributes["dsh.session.id"]: span
        for span in to_otlp(named)
        if span.attributes["openinference.span.kind"] == "AGENT"
    }
    assert agents[ROOT].name == f"Coordinate the <b>refactor</b> ({ROOT[:8]}…)"
    assert agents[TITLED].name == f"Nightly triage ({TITLED[:8]}…)"
    assert agents[CHILDREN[0]].name == f"Port module 0 ({CHILDREN[0][:8]}…)"
    assert agents[ROOT].attributes["dsh.name"] == NAMES[ROOT]


def test_the_evidence_on_a_site_page_names_the_sessions(tmp_path: Path) -> None:
    """``report --site``: the runaway child's page states its finding with the root named, never a bare UUID."""
    from subagent_catalog.views.page_names import page_file
    from subagent_catalog.views.report_site import write_report_site

    corpus = read_corpus(_write_runaway(tmp_path / "root"), cache=False)
    write_report_site(corpus, tmp_path / "site")
    page = (tmp_path / "site" / page_file(RUNAWAY_CHILD)).read_text()
    assert f"after its root Ship the release ({RUNAWAY_ROOT[:8]}…) ended (completed)" in page
    assert _texts_named_by_uuid(page) == [] and RUNAWAY_ROOT + " ended" not in page
