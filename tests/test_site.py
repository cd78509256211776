"""Issue 43 item 4, "a site, linked": ``report --site DIR``, ``show --tree``'s index.html, the children table,
links from a transcript to its children, unique ids on every page."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.outputs import OutputError
from subagent_catalog.synth.writer import EventLog, header, write_session
from subagent_catalog.views.children_table import children_rows, children_table
from subagent_catalog.views.report_site import write_report_site
from subagent_catalog.views.transcript_parts import unique_anchors
from subagent_catalog.views.transcript_tree import children_page, write_tree_pages
from subagent_catalog.views.transcript_view import transcript_page
from tests.site_check import broken_links, duplicate_ids, hub_child_cost_known, parse_page, write_hub

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


@pytest.fixture(scope="module")
def sample() -> Any:
    return read_corpus(SAMPLE, cache=False)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hub") / "corpus"
    write_hub(root, 40)
    return root


@pytest.fixture(scope="module")
def sample_site(sample: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    write_report_site(sample, out)
    return out


def test_report_site_writes_the_report_as_index_and_a_page_per_session_it_names(sample_site: Path) -> None:
    index = (sample_site / "index.html").read_text(encoding="utf-8")
    linked = set(re.findall(r'href="([^"#]+\.html)"', index))
    pages = {path.name for path in sample_site.glob("*.html")} - {"index.html"}
    assert linked == pages and "auth-refactor.html" in pages  # every page is named by the report, and linked
    manifest = json.loads((sample_site / "manifest.json").read_text())
    assert sorted(manifest["files"]) == sorted([*pages, "index.html"]) and manifest["complete"] is True
    assert "a name opens its transcript page" in index and "subagent-catalog show ROOT ID</code> writes" not in index


def test_every_failed_run_row_of_a_site_links_its_session(sample_site: Path) -> None:
    index = (sample_site / "index.html").read_text(encoding="utf-8")
    table = index[
        index.index('id="run-failures-table"') : index.index("</table>", index.index('id="run-failures-table"'))
    ]
    rows = re.findall(r'<tr class="run.*?</tr>', table, flags=re.S)
    assert rows and all('<a href="' in row or 'class="nopage" title="no page: ' in row for row in rows)
    assert any('<a href="' in row for row in rows)


def test_every_link_of_a_report_site_resolves_and_no_page_repeats_an_id(sample_site: Path) -> None:
    assert broken_links(sample_site) == []
    assert {path.name: duplicate_ids(path) for path in sample_site.glob("*.html") if duplicate_ids(path)} == {}


def test_a_site_past_its_page_cap_names_the_rest_and_says_why(sample: Any, tmp_path: Path) -> None:
    site = write_report_site(sample, tmp_path / "site", max_pages=2)
    assert len(site.pages) == 2 and site.refused > 0
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert index.count("the site holds at most 2 session pages") >= site.refused  # each unlinked name says why
    assert f"{site.refused:,} more sessions named here have none" in index  # and the report counts them
    assert broken_links(tmp_path / "site") == []


def test_report_site_refuses_a_directory_it_did_not_write_and_one_inside_the_corpus(
    sample: Any, tmp_path: Path
) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "index.html").write_text("the user's")
    with pytest.raises(OutputError, match="non-empty directory"):
        write_report_site(sample, mine)
    assert (mine / "index.html").read_text() == "the user's"
    with pytest.raises(OutputError, match="inside the corpus"):
        write_report_site(sample, SAMPLE / "site")


def test_report_site_runs_again_into_its_own_directory(sample: Any, tmp_path: Path) -> None:
    first = write_report_site(sample, tmp_path / "site")
    second = write_report_site(sample, tmp_path / "site")
    assert sorted(p.name for p in first.pages) == sorted(p.name for p in second.pages) and second.removed == []


def test_report_cli_site_and_output_are_mutually_exclusive(tmp_path: Path) -> None:
    runner = CliRunner()
    both = runner.invoke(main, ["report", str(SAMPLE), "--site", str(tmp_path / "s"), "-o", str(tmp_path / "r.html")])
    assert both.exit_code == 2 and "not both" in both.output and not (tmp_path / "s").exists()
    done = runner.invoke(main, ["report", str(SAMPLE), "--site", str(tmp_path / "s")])
    assert done.exit_code == 0, done.output
    assert "session pages" in done.output and (tmp_path / "s" / "index.html").is_file()
    single = runner.invoke(main, ["report", str(SAMPLE), "-o", str(tmp_path / "r.html")])  # -o alone: one file
    assert single.exit_code == 0 and (tmp_path / "r.html").is_file()


def test_show_tree_writes_index_html_as_the_tops_page(sample: Any, tmp_path: Path) -> None:
    pages = write_tree_pages(sample, "auth-refactor", tmp_path / "pages")
    assert pages.index is not None and pages.index.read_bytes() == pages.top.read_bytes()
    assert broken_links(tmp_path / "pages") == []


def test_a_hubs_children_are_a_table_of_names_outcomes_errors_times_costs_and_tokens(hub: Path) -> None:
    corpus = read_corpus(hub, cache=False)
    page = transcript_page(corpus, "hub", link=lambda sid: f"{sid}.html")
    table = page[page.index('id="children-table"') : page.index("</table>", page.index('id="children-table"'))]
    heads = re.findall(r'<button type="button" class="sort"[^>]*>([^<]+)</button>', table)
    assert heads == ["name", "outcome", "error", "active time", "cost", "tokens"]
    assert "child task 7" in table and 'href="hub-child-00007.html"' in table  # named by its label, linked
    assert table.count("<tr>") == 1 + 40 and ">boom<" in table and ">error<" in table


def test_an_unknown_cost_reads_unknown_never_zero_and_carries_no_sort_value(hub: Path) -> None:
    corpus = read_corpus(hub, cache=False)
    rows = children_rows(corpus, ["hub-child-00003", "hub-child-00004"])
    assert not hub_child_cost_known(3) and rows[0]["cost_usd"] is None and rows[0]["cost"] == "unknown"
    html = children_table(rows, names={}, href=lambda sid: None)
    cells = re.findall(r'<td class="num" data-v="([^"]*)">(.*?)</td>', html)
    cost_cells = [cell for cell in cells if "$" in cell[1] or "unknown" in cell[1]]
    assert cost_cells[0] == ("", '<span class="unknown">unknown</span>')
    assert cost_cells[1][0] != "" and float(cost_cells[1][0]) > 0


def test_a_child_without_a_log_is_named_with_unknown_figures(hub: Path) -> None:
    rows = children_rows(read_corpus(hub, cache=False), ["gone"])
    html = children_table(rows, names={}, href=lambda sid: None)
    assert rows[0]["outcome"] is None and "gone" in html and html.count(">unknown<") == 2


def test_further_pages_of_children_name_each_child_not_just_its_id(hub: Path) -> None:
    corpus = read_corpus(hub, cache=False)
    kids = [f"filler-{i}" for i in range(1_000)] + ["hub-child-00001", "hub-child-00002"]
    page = children_page(corpus, "hub", kids, 2, link={"hub-child-00001": "hub-child-00001.html"})
    assert "child task 1" in page and "child task 2" in page and 'href="hub-child-00001.html"' in page
    assert "children 1,001–1,002 of 1,002" in page and duplicate_ids_in(page) == {}


def duplicate_ids_in(text: str) -> dict[str, int]:
    ids = re.findall(r'\sid="([^"]*)"', text)
    return {name: ids.count(name) for name in set(ids) if ids.count(name) > 1}


def test_started_subagent_and_notices_link_the_child_when_the_site_has_its_page(hub: Path, tmp_path: Path) -> None:
    corpus = read_corpus(hub, cache=False)
    linked = transcript_page(corpus, "hub", link=lambda sid: f"{sid}.html")
    mentions = re.findall(r'<span class="mention"[^>]*>(started|from) (.*?)</span></span>', linked)
    assert [what for what, _ in mentions] == ["started", "started", "started", "from"]
    assert all("child task" in html and '<a href="hub-child-0000' in html for _, html in mentions)
    alone = transcript_page(corpus, "hub")  # no site: the child's name and its id, no link
    mentions = re.findall(r'<span class="mention"[^>]*>(started|from) (.*?)</span></span>', alone)
    assert len(mentions) == 4 and all("<a " not in html and "hub-child-0000" in html for _, html in mentions)


def _step_with_many_rows(root: Path) -> None:
    log = EventLog("s1")
    log.turn_start()
    log.user("go")
    content = [
        {"type": "reasoning", "text": "think"},
        {"type": "text", "text": "say"},
        {"type": "tool-call", "id": "c1", "name": "read_file", "arguments": "{}"},
        {"type": "tool-call", "id": "c2", "name": "read_file", "arguments": "{}"},
    ]
    message = {"id": "m1", "role": "assistant", "content": content, "source": {"kind": "model", "provider": "p"}}
    log.add("step/start", {"turn": 1, "step": 1})
    log.add("assistant/message", {"turn": 1, "step": 1, "message": message}, surfaceOp="append")
    log.add("step/end", {"turn": 1, "step": 1})
    log.turn_end()
    write_session(root, header("s1", created_at=1), log.events, "none")


def test_rows_of_one_step_get_unique_ids_and_the_step_link_names_the_first(tmp_path: Path) -> None:
    """Issue 43: ``seq-46`` could repeat five times on a show page (an assistant step's rows share a seq)."""
    _step_with_many_rows(tmp_path / "c")
    page = transcript_page(read_corpus(tmp_path / "c", cache=False), "s1")
    (tmp_path / "p.html").write_text(page, encoding="utf-8")
    ids = parse_page(tmp_path / "p.html")[0]
    steps = [name for name in ids if name.startswith("seq-")]
    assert len(steps) >= 4 and duplicate_ids(tmp_path / "p.html") == {}
    repeated = unique_anchors(pl.DataFrame({"seq": [3, 3, 3], "kind": ["a", "b", "c"]}))["anchor"].to_list()
    assert repeated == ["seq-3", "seq-3-2", "seq-3-3"]


def test_every_page_of_a_hubs_tree_has_unique_ids_and_resolving_links(hub: Path, tmp_path: Path) -> None:
    write_tree_pages(read_corpus(hub, cache=False), "hub", tmp_path / "pages")
    assert broken_links(tmp_path / "pages") == []
    assert [path.name for path in (tmp_path / "pages").glob("*.html") if duplicate_ids(path)] == []


def test_a_dashboard_row_reveals_its_session_in_a_linked_browser(sample: Any) -> None:
    from subagent_catalog.views.widgets.browser import CatalogBrowser
    from subagent_catalog.views.widgets.dashboard import DiagnosticsDashboard

    board, browser = DiagnosticsDashboard(sample), CatalogBrowser(sample)
    assert not board.table.clickable  # no browser: the rows are not clickable
    board.revealed = "auth-refactor"  # and setting the trait reveals nothing
    assert browser.selected is None
    board.revealed = None
    board.link_browser(browser)
    assert board.table.clickable
    board.selected_dimension = "outcome"
    board.pick("error")
    listed = [sid for sid in board.affected_ids if sid is not None]
    assert listed and f'data-sid="{listed[-1]}"' in board.table.value
    board.table.clicked = listed[-1]  # what a click on the row does in the front end
    assert board.revealed == listed[-1] and board.table.clicked is None
    assert sample.sessions["session_id"][browser.selected] == listed[-1] and browser.showing == "tree"
    board.revealed = "no-such-session"  # an id the browser does not know changes nothing
    assert sample.sessions["session_id"][browser.selected] == listed[-1]


def test_report_site_of_an_archive_links_pages_made_from_its_tables(tmp_path: Path) -> None:
    from subagent_catalog.store.archive import open_archive
    from subagent_catalog.store.export import export_archive

    export_archive(SAMPLE, tmp_path / "archive", jobs=1)
    site = write_report_site(open_archive(tmp_path / "archive"), tmp_path / "site")
    assert "auth-refactor.html" in {page.name for page in site.pages} and broken_links(tmp_path / "site") == []
    page = (tmp_path / "site" / "auth-refactor.html").read_text(encoding="utf-8")
    assert 'id="children-table"' in page and "context length exceeded" in page


# ------------------------------------------------------------------ issue 57, point 10: the site is no set of dead ends


def _nav(path: Path) -> str:
    page = path.read_text(encoding="utf-8")
    return page[page.index('<nav id="up">') : page.index("</nav>", page.index('<nav id="up">'))]


def _session_pages(directory: Path, corpus: Any) -> dict[str, Path]:
    from subagent_catalog.views.page_names import page_file

    ids = corpus.sessions["session_id"].drop_nulls().unique().to_list()
    return {sid: directory / page_file(sid) for sid in ids if (directory / page_file(sid)).is_file()}


def test_every_page_of_a_report_site_links_back_to_the_report_and_up_to_its_parent(
    sample: Any, sample_site: Path
) -> None:
    """Today none of a site's session pages links to the report, and a parent without a page is a dead end."""
    from subagent_catalog.views.page_names import page_file

    parents = dict(sample.sessions.select("session_id", "parent_session").iter_rows())
    pages = _session_pages(sample_site, sample)
    assert len(pages) == len(list(sample_site.glob("*.html"))) - 1  # every page but the report is a session's
    for sid, path in pages.items():
        nav = _nav(path)
        assert '<a href="index.html">← the report</a>' in nav, sid
        parent = parents[sid]
        if parent is not None and parent in parents:  # a parent a log carries: its page is in the site too
            assert f'<a href="{page_file(parent)}">' in nav.split("parent:")[1], sid
    assert broken_links(sample_site) == []


def test_a_site_grants_a_page_with_its_ancestors_pages_within_the_cap() -> None:
    from subagent_catalog.views.site_links import SiteLinks

    links = SiteLinks.of(["root", "mid", "leaf"], cap=2, parents={"leaf": "mid", "mid": "root"})
    assert links.href("leaf") is None and links.refused == 1  # three pages do not fit in two
    assert links.href("mid") == "mid.html" and list(links.granted) == ["mid", "root"]
    assert links.href("leaf") is None and links.why("leaf") == "no page: the site holds at most 2 session pages"


def test_a_child_without_a_page_is_marked_no_page(sample: Any, sample_site: Path, tmp_path: Path) -> None:
    """Today a child without a page is named as if it were a page's whole story: no mark."""
    page = (sample_site / "seed-source.html").read_text(encoding="utf-8")  # its child stillborn-fork has no page
    assert not (sample_site / "stillborn-fork.html").exists()
    table = page[page.index('id="children-table"') : page.index("</table>", page.index('id="children-table"'))]
    row = next(row for row in table.split("<tr>") if "stillborn-fork" in row)
    assert 'class="nopage"' in row and "(no page)" in row
    linked = next(
        row for row in (sample_site / "run-webapp-1.html").read_text().split("<tr>") if "auth-refactor" in row
    )
    assert "(no page)" not in linked and 'href="auth-refactor.html"' in linked
    # show --tree: the top's parent has no page in the directory; every other page links the top and its parent
    write_tree_pages(sample, "auth-refactor", tmp_path / "pages")
    top = _nav(tmp_path / "pages" / "auth-refactor.html")
    assert "run-webapp-1" in top and "(no page)" in top and "the top of this tree" not in top
    for name in ("scan-tests.html", "write-migration.html", "check-sql.html"):
        nav = _nav(tmp_path / "pages" / name)
        assert '<a href="auth-refactor.html">← the top of this tree</a>' in nav and "(no page)" not in nav
    assert '<a href="write-migration.html">' in _nav(tmp_path / "pages" / "check-sql.html")


def test_the_children_caption_sits_with_its_table(sample_site: Path) -> None:
    """Today the caption ("children (3): click a header to sort") is above the waterfall, the table below it."""
    page = (sample_site / "auth-refactor.html").read_text(encoding="utf-8")
    caption = page.index("children (2): click a header to sort")
    between = page[caption : page.index('id="children-table"')]
    assert "<figure" not in between and len(between) < 300
