"""The comparison page: links into each side's `show --tree` pages (never a dead one) and figures formatted alike."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog.analysis.compare import Comparison, compare
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.views.compare_html import compare_page
from subagent_catalog.views.compare_links import PagesError, side_pages
from subagent_catalog.views.compare_text import compare_text
from subagent_catalog.views.page_names import page_file
from subagent_catalog.views.transcript_tree import write_tree_pages
from tests.compare_corpora import INJECTED, runs_corpus, with_errors

BROKEN = 5


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """A: 30 runs; B: a copy with 5 made errors (5 pairs broke); the ids of B's changed runs."""
    base = tmp_path_factory.mktemp("compare-pages")
    a = runs_corpus(base / "a", runs=30, seed=8, tool_failure_rate=0.2)
    changed = with_errors(a, base / "b", BROKEN)
    return a, base / "b", changed


@pytest.fixture(scope="module")
def corpora(sides: tuple[Path, Path, list[str]]) -> tuple[Corpus, Corpus]:
    return read_corpus(sides[0], cache=False, jobs=1), read_corpus(sides[1], cache=False, jobs=1)


@pytest.fixture(scope="module")
def paired(corpora: tuple[Corpus, Corpus]) -> Comparison:
    return compare(*corpora, match="prompt", resamples=200)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href") is not None:
            self.hrefs.append(str(found["href"]))
        if found.get("id"):
            self.ids.add(str(found["id"]))


def _links(page: Path) -> tuple[list[str], set[str]]:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.hrefs, parser.ids


def _assert_every_link_resolves(page: Path) -> list[Path]:
    """Every link of the page opens an existing file (relative to the page) or an anchor of the page itself."""
    hrefs, ids = _links(page)
    files = []
    for href in hrefs:
        parts = urlsplit(href)
        assert parts.scheme == "" and parts.netloc == "", href  # relative links only
        if not parts.path:
            assert parts.fragment in ids, href
            continue
        target = (page.parent / unquote(parts.path)).resolve()
        assert target.is_file(), href
        files.append(target)
    return files


def test_every_link_in_the_page_resolves_to_an_existing_file(
    sides: tuple[Path, Path, list[str]], corpora: tuple[Corpus, Corpus], paired: Comparison, tmp_path: Path
) -> None:
    broke = paired.pairs.filter(pl.col("change") == "broke") if paired.pairs is not None else None
    assert broke is not None and broke.height == BROKEN
    a_run, b_run = broke["a_session"][0], broke["b_session"][1]
    unlinked = broke["a_session"][2]
    site_a, site_b = tmp_path / "site a", tmp_path / "site-b"
    write_tree_pages(corpora[0], a_run, site_a)
    write_tree_pages(corpora[1], b_run, site_b)
    page = tmp_path / "out" / "nested" / "diff.html"
    page.parent.mkdir(parents=True)
    page.write_text(compare_page(paired, a_pages=site_a, b_pages=site_b, page_dir=page.parent), encoding="utf-8")
    opened = _assert_every_link_resolves(page)
    assert set(opened) == {(site_a / page_file(a_run)).resolve(), (site_b / page_file(b_run)).resolve()}
    hrefs, _ = _links(page)
    assert f"../../site%20a/{page_file(a_run)}" in hrefs  # relative to the page, percent-encoded
    text = page.read_text(encoding="utf-8")
    assert f">{unlinked}</code>" in text and page_file(unlinked) not in text  # shown, not linked: no page


def test_an_error_group_names_its_first_run_on_each_side_and_links_it(
    sides: tuple[Path, Path, list[str]], corpora: tuple[Corpus, Corpus], paired: Comparison, tmp_path: Path
) -> None:
    injected = paired.errors.filter(pl.col("code") == INJECTED["code"]).row(0, named=True)
    first = corpora[1].sessions.filter(pl.col("session_id").is_in(sides[2])).sort("list_order")["session_id"][0]
    assert (injected["a_example_session"], injected["b_example_session"]) == (None, first)
    write_tree_pages(corpora[1], first, tmp_path / "b")
    page = tmp_path / "diff.html"
    page.write_text(compare_page(paired, b_pages=tmp_path / "b", page_dir=tmp_path), encoding="utf-8")
    assert _assert_every_link_resolves(page) == [(tmp_path / "b" / page_file(first)).resolve()] * 2  # pair, group


def test_a_page_the_manifest_does_not_hold_or_that_is_gone_gets_no_link(
    corpora: tuple[Corpus, Corpus], paired: Comparison, tmp_path: Path
) -> None:
    broke = paired.pairs.filter(pl.col("change") == "broke") if paired.pairs is not None else None
    assert broke is not None
    first, second = broke["a_session"][0], broke["a_session"][1]
    site = tmp_path / "site"
    write_tree_pages(corpora[0], first, site)
    (site / page_file(first)).unlink()  # listed as written, then removed
    manifest = json.loads((site / "manifest.json").read_text())
    manifest["files"][page_file(second)] = None  # named as pending by an interrupted run, never written
    (site / "manifest.json").write_text(json.dumps(manifest))
    pages = side_pages(site, page_dir=tmp_path)
    assert (pages.href(first), pages.href(second), pages.href(None)) == (None, None, None)
    page = tmp_path / "diff.html"
    page.write_text(compare_page(paired, a_pages=site, page_dir=tmp_path), encoding="utf-8")
    assert _assert_every_link_resolves(page) == []


def test_a_directory_that_show_did_not_write_is_refused(tmp_path: Path, paired: Comparison) -> None:
    with pytest.raises(PagesError, match=r"no manifest\.json"):
        compare_page(paired, a_pages=tmp_path)
    with pytest.raises(PagesError, match="not a directory of pages"):
        side_pages(tmp_path / "missing", page_dir=tmp_path)


def test_the_cli_links_both_sides_and_refuses_pages_without_a_page(
    sides: tuple[Path, Path, list[str]], corpora: tuple[Corpus, Corpus], paired: Comparison, tmp_path: Path
) -> None:
    a, b, changed = sides
    write_tree_pages(corpora[0], changed[0], tmp_path / "pa")
    write_tree_pages(corpora[1], changed[0], tmp_path / "pb")
    page = tmp_path / "out" / "diff.html"
    page.parent.mkdir()
    options = ["-q", "--no-cache", "--resamples", "200", "--match", "prompt"]
    args = ["compare", str(a), str(b), *options, "--html", str(page), "--a-pages", str(tmp_path / "pa")]
    result = CliRunner().invoke(main, [*args, "--b-pages", str(tmp_path / "pb")])
    assert result.exit_code == 0, result.output
    opened = _assert_every_link_resolves(page)
    assert {p.parent.name for p in opened} == {"pa", "pb"}
    result = CliRunner().invoke(main, ["compare", str(a), str(b), *options, "--a-pages", str(tmp_path / "pa")])
    assert result.exit_code == 2 and "give --html FILE" in result.output
    result = CliRunner().invoke(main, [*args[:-1], str(tmp_path / "out")])
    assert result.exit_code == 1 and "no manifest.json" in result.output


_MONEY = re.compile(r"\$([0-9][0-9,]*\.[0-9]+)")


def test_costs_on_both_sides_have_the_same_significant_digits(tmp_path: Path) -> None:
    """Costs below $1 show two significant digits, trailing zeros kept ($0.0050, never $0.005); above, cents."""
    a = read_corpus(runs_corpus(tmp_path / "a", runs=40, seed=1), cache=False, jobs=1)
    b = read_corpus(runs_corpus(tmp_path / "b", runs=40, seed=2, token_scale=1.3), cache=False, jobs=1)
    result = compare(a, b, resamples=100)
    costs = result.metrics.filter(pl.col("metric") == "cost")
    text, page = compare_text(result), compare_page(result)
    for output in (text, page):
        shown = _MONEY.findall(output)
        assert len(shown) >= 4 * costs.height  # medians and means of both sides
        for figure in shown:
            if float(figure.replace(",", "")) < 1:
                assert len(figure.replace(".", "").lstrip("0")) == 2, figure
            else:
                assert re.fullmatch(r"[0-9,]+\.[0-9]{2}", figure), figure
    for value in (*costs["a_median"], *costs["b_median"], *costs["a_mean"], *costs["b_mean"]):
        assert 1e-4 <= value < 1
        assert f"${value:#.2g}" in text and f"${value:#.2g}" in page
