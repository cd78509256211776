"""Issue 57, point 9: no word of a report table breaks mid-word while the table has room (Chromium, 1,400 px).

``overflow-wrap: anywhere`` on every cell let the table layout squeeze a short column down to a letter:
the failed runs' error code read ``CONTE/XT_/LENGT/H`` at 1,400 px while the neighbouring columns had
room. A code, outcome or kind now breaks only where it cannot fit (``table_columns.WHOLE_WORDS``; free
text, names and paths may still break anywhere, so no table scrolls sideways). Run with ``pytest -m browser``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from subagent_catalog.corpus import read_corpus
from subagent_catalog.views.report import write_report
from subagent_catalog.views.table_columns import WHOLE_WORDS

pytestmark = pytest.mark.browser

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"

BROKEN_WORDS = """(selector) => {
  const broken = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const cell = node.parentElement.closest(selector);
    if (!cell || cell.offsetParent === null) continue;
    const text = node.textContent;
    let top = null;
    for (let i = 0; i < text.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rect = range.getBoundingClientRect();
      if (!rect.height) continue;
      if (top !== null && rect.top > top + 2 && /\\w/.test(text[i]) && /\\w/.test(text[i - 1])) {
        broken.push(cell.closest('table').id + ': ' + text);
        break;
      }
      top = rect.top;
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("width", [1400, 1024])
def test_no_table_word_breaks_mid_word(chromium_browser: Any, tmp_path: Path, width: int) -> None:
    report = tmp_path / "report.html"
    write_report(read_corpus(SAMPLE), str(report))
    context = chromium_browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(report.resolve().as_uri())
        page.wait_for_selector("#run-failures-table")
        cells = ",".join(f".fit td.c-{key}" for key in WHOLE_WORDS)
        assert page.evaluate(BROKEN_WORDS, cells) == []
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # nothing scrolls sideways
    finally:
        context.close()
