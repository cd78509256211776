"""A session page's findings: a badge per finding, each linked to the step its evidence starts at."""

from __future__ import annotations

from html import escape

import polars as pl

from subagent_catalog.analysis.text import clip
from subagent_catalog.views.findings_text import position

__all__ = ["FINDINGS_BOX_CSS", "findings_box"]

FINDINGS_BOX_CSS = """
.findings-box { margin: 10px 0; padding: 8px 10px; border: 1px solid #d8dee4; border-radius: 6px; background: #f6f8fa; }
.findings-box h2 { font-size: 14px; margin: 0 0 6px; }
.findings-box ul { margin: 0; padding-left: 18px; }
.findings-box li { margin: 3px 0; overflow-wrap: anywhere; }
.fsev { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 11.5px; line-height: 18px; }
.fsev-error { background: #ffebe9; color: #b62324; }
.fsev-warn { background: #fff1e5; color: #953800; }
.fsev-info { background: #ddf4ff; color: #0969da; }
.findings-box .ev { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 11.5px; color: #57606a; }
"""


def _anchor(rows: pl.DataFrame, seq: int | None) -> str | None:
    """``seq-N`` when the page has that id (a row's anchor, or an alias of a row holding the event)."""
    if seq is None or rows.height == 0 or "anchor" not in rows.columns:
        return None
    name = f"seq-{seq}"
    if name in rows["anchor"].to_list():
        return name
    aliases = rows["aliases"].explode().drop_nulls().to_list() if "aliases" in rows.columns else []
    return name if seq in aliases else None


def findings_box(found: pl.DataFrame, rows: pl.DataFrame) -> str:
    """The findings of one session (``findings``' rows) as an HTML list; ``""`` when it has none.

    ``rows`` are the page's transcript rows with their ``anchor`` column: a finding links to the row
    holding its first event.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.findings import findings
        >>> from subagent_catalog.analysis.transcript import transcript
        >>> from subagent_catalog.views.transcript_parts import unique_anchors
        >>> corpus = read_corpus("data/findings")
        >>> found = findings(corpus, detectors=["tool-loop"])
        >>> html = findings_box(found, unique_anchors(transcript(corpus, "loop-yes")))
        >>> 'href="#seq-4"' in html and "tool-loop" in html
        True
    """
    if found.height == 0:
        return ""
    items = []
    for row in found.iter_rows(named=True):
        target = _anchor(rows, row["seq"])
        where = escape(position(row))
        place = f'<a href="#{escape(target)}">{where}</a>' if target else where
        evidence = f'<br><span class="ev">{escape(clip(row["evidence"], 300))}</span>' if row["evidence"] else ""
        items.append(
            f'<li><span class="fsev fsev-{escape(row["severity"])}">{escape(row["severity"])}</span> '
            f"<code>{escape(row['kind'])}</code> {place}: {escape(clip(row['message'], 300))}{evidence}</li>"
        )
    count = found.height
    return (
        f'<section class="findings-box" id="findings"><h2>{count} finding{"s" if count != 1 else ""} '
        '<span style="font-weight:normal;color:#57606a">(docs/findings.md)</span></h2><ul>'
        + "".join(items)
        + "</ul></section>"
    )
