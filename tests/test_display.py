"""Rich HTML reprs: what the corpus summary counts, and that corpus text is always escaped."""

from __future__ import annotations

import html
import re
from pathlib import Path

import polars as pl
import pytest

from subagent_catalog import catalog, read_corpus
from subagent_catalog.frames.display import catalog_html, corpus_html, escape, listing_error_html, table_html, text_html
from subagent_catalog.synth.writer import descriptor, header, simple_child_events, write_file, write_session

T0 = 1_780_000_000_000
NASTY = '<script>alert("x")</script>&'


def text_of(fragment: str) -> str:
    """The visible text of an HTML fragment (tags dropped, entities decoded, spaces collapsed)."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment)))


@pytest.fixture()
def mixed(tmp_path: Path) -> Path:
    """Root P (2 children: one healthy, one torn), a skipped file, a directory without a log."""
    root = tmp_path / NASTY
    write_session(root, header("P", created_at=T0), [], "none")
    child = header("c1", created_at=T0 + 1, parent="P", subagent=True)
    write_session(root, child, simple_child_events("c1", descriptor("continuable", label="a")), "none")
    torn = header("c2", created_at=T0 + 2, parent="P", subagent=True)
    write_session(root, torn, simple_child_events("c2", descriptor("one-shot")), "none", tail=b'{"type":"tu')
    write_file(root / "_no-cwd" / "junk" / "session.jsonl", b"garbage\n")
    (root / "_no-cwd" / "empty-dir").mkdir()
    return root


def test_corpus_html_counts(mixed: Path) -> None:
    corpus = read_corpus(mixed, compression="none")
    text = text_of(corpus_html(corpus))
    assert "4 session files: 3 listed, 2 with origin subagent" in text
    verdicts = dict(corpus.sessions.group_by("verdict").len().iter_rows())
    assert verdicts == {"ok": 2, "torn-tail": 1, "skipped": 1}
    assert "read verdicts: ok 2 , torn-tail 1 , skipped 1" in text
    assert f"{corpus.problems.height} problems" in text
    for kind in corpus.problems["kind"].unique().to_list():
        assert kind in text
    assert "listing ok" in text
    assert "Upstream listing fails" not in text


def test_corpus_repr_html_uses_display(mixed: Path) -> None:
    corpus = read_corpus(mixed, compression="none")
    assert corpus._repr_html_() == corpus_html(corpus)


def test_corpus_html_escapes_the_root(mixed: Path) -> None:
    html_text = corpus_html(read_corpus(mixed, compression="none"))
    assert "<script>" not in html_text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in html_text


def test_listing_error_banner(tmp_path: Path) -> None:
    root = tmp_path / "<b>root"
    write_session(root, header("same", created_at=T0, cwd="/a"), [], "none")
    write_session(root, header("same", created_at=T0, cwd="/b"), [], "none")
    corpus = read_corpus(root, compression="none")
    assert corpus.listing_error is not None
    banner = listing_error_html(corpus)
    assert 'role="alert"' in banner
    assert escape(corpus.listing_error) in banner
    assert "<b>root" not in banner and "&lt;b&gt;root" in banner
    summary = corpus_html(corpus)
    assert banner in summary
    assert "listing fails" in text_of(summary)
    assert "duplicate-id" in summary


def test_empty_corpus(tmp_path: Path) -> None:
    text = text_of(corpus_html(read_corpus(tmp_path)))
    assert "0 session files: 0 listed" in text
    assert "empty-root warning 1" in text  # an empty root says so (docs/reading.md)
    assert "(zstd)" not in text and "(none)" not in text  # no encoding: no log was read


def test_table_html_escapes_truncates_and_pages() -> None:
    frame = pl.DataFrame({"id": [NASTY, "b" * 500, "c"], "n": [1, None, 3]})
    html_text = table_html(frame, max_rows=2, caption="<cap>")
    assert "<script>" not in html_text and "&lt;cap&gt;" in html_text
    assert "b" * 500 not in html_text.split('title="')[0]
    assert 'title="' + "b" * 500 + '"' in html_text
    assert "1 more rows" in html_text
    assert html_text.count("<tr") == 3
    assert "(no rows)" in table_html(frame.head(0))


def test_table_html_lone_surrogates_become_replacement() -> None:
    html_text = table_html(pl.DataFrame({"a": ["x"]}), caption="bad \ud800 caption")
    assert "\ufffd" in html_text
    html_text.encode("utf-8")


def test_catalog_html_marks_diagnostics(tmp_path: Path) -> None:
    write_session(tmp_path, header("P", created_at=T0), [], "none")
    write_session(
        tmp_path,
        header("ok", created_at=T0 + 1, parent="P", subagent=True),
        simple_child_events("ok", descriptor("continuable", label=NASTY)),
        "none",
    )
    write_session(tmp_path, header("bad", created_at=T0 + 2, parent="P", subagent=True), [], "none")
    frame = catalog(read_corpus(tmp_path, compression="none"))
    html_text = catalog_html(frame)
    rows = html_text.split("<tr")[2:]
    assert len(rows) == 2
    assert "background:#fff4e5" not in rows[0] and "background:#fff4e5" in rows[1]
    header_cells = re.findall(r"<th[^>]*>([^<]*)</th>", html_text)
    assert header_cells[:4] == ["parent", "kind", "id", "mode"]
    assert "<script>" not in html_text


def test_text_html() -> None:
    assert text_html("a\n<b>", caption="x&y").count("&lt;b&gt;") == 1
    assert "x&amp;y" in text_html("", caption="x&y")
