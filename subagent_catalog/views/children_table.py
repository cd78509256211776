"""A session page's children as a sortable table: name, outcome, error, active time, cost, tokens.

``children_rows`` reads what the table shows of each child from the ``sessions`` frame
(``analysis.run_summary.session_runs``: the run tables' figures); ``children_table`` draws them as
escaped HTML. Each number cell carries its sort value in ``data-v`` (text sorts by what it shows);
a cell whose value is unknown (a cost no price covers, tokens a log does not report) carries none,
shows ``unknown`` (never ``0``) and sorts last both ways. ``SORT_JS`` is the page's one inline
script (no network; the page's Content-Security-Policy allows it by its hash, ``SORT_JS_HASH``):
clicking a header sorts the rows.
Each outcome is a badge in its ``views.palette`` colour (the page includes ``palette.OUTCOME_BADGE_CSS``).
A page lists at most ``CHILDREN_PER_PAGE`` children; ``show --tree`` writes further pages of them.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from subagent_catalog.analysis.run_summary import session_runs
from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.units import human_count, human_duration
from subagent_catalog.views.names import name_html
from subagent_catalog.views.palette import outcome_badge
from subagent_catalog.views.run_format import run_cost, run_message
from subagent_catalog.views.site_links import no_page_mark

CHILDREN_PER_PAGE = 1_000
"""Children one page's table lists; the rest are on further pages (``show --tree``) or counted."""

SORT_JS = (
    "(function(){function v(c){return c.dataset.v!==undefined?c.dataset.v:c.textContent.trim()}"
    "document.querySelectorAll('table.kids').forEach(function(t){"
    "var b=t.tBodies[0];t.querySelectorAll('th button.sort').forEach(function(h){"
    "h.addEventListener('click',function(){var i=+h.dataset.col;var th=h.parentNode;"
    "var up=th.getAttribute('aria-sort')!=='ascending';"
    "t.querySelectorAll('th').forEach(function(o){o.removeAttribute('aria-sort')});"
    "th.setAttribute('aria-sort',up?'ascending':'descending');var num=h.dataset.kind==='num';"
    "var rows=Array.prototype.slice.call(b.rows);rows.forEach(function(r,n){r._n=n});"
    "rows.sort(function(x,y){var a=v(x.cells[i]),c=v(y.cells[i]);"
    "var ea=a==='',ec=c==='';if(ea||ec){return ea===ec?x._n-y._n:(ea?1:-1)}"
    "var d=num?(+a)-(+c):a.localeCompare(c);if(!up){d=-d}return d||x._n-y._n});"
    "rows.forEach(function(r){b.appendChild(r)})})})})})();"
)
"""Sorts a ``table.kids`` by a clicked header: numbers by their ``data-v``, text by locale; empty values last."""

SORT_JS_HASH = base64.b64encode(hashlib.sha256(SORT_JS.encode("utf-8")).digest()).decode("ascii")
"""The base64 SHA-256 of ``SORT_JS`` (the page's ``script-src 'sha256-…'``)."""

CHILDREN_CSS = (
    "table.kids{border-collapse:collapse;font-size:12px;margin:4px 0 10px;width:100%}"
    "table.kids th,table.kids td{padding:2px 8px 2px 0;text-align:left;border-bottom:1px solid #eaeef2;"
    "vertical-align:top}table.kids td.num,table.kids th.num{text-align:right;font-variant-numeric:tabular-nums}"
    "table.kids button.sort{font:inherit;font-weight:600;border:0;background:none;padding:0;cursor:pointer;"
    "color:#0969da}table.kids th[aria-sort=ascending] button.sort::after{content:' ▲'}"
    "table.kids th[aria-sort=descending] button.sort::after{content:' ▼'}"
    "table.kids td.err{overflow-wrap:anywhere;max-width:34em}.unknown{color:#953800}"
)
"""The children table's styles (for a page's ``<style>``)."""

_HEADS = (
    ("name", "name", "text"),
    ("outcome", "outcome", "text"),
    ("error", "error", "text"),
    ("active", "active time", "num"),
    ("cost", "cost", "num"),
    ("tokens", "tokens", "num"),
)


def children_rows(corpus: Corpus, children: list[str]) -> list[dict[str, Any]]:
    """What the children table shows of each child (its first log when several carry its id), in ``children``' order.

    Keys: ``id``, ``label``, ``outcome``, ``error``, ``active_ms``, ``cost_usd`` (``None``: unknown),
    ``cost`` (the text: ``run_cost``), ``tokens`` (``None``: unknown). A child no log carries gets
    ``None`` for each figure.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> rows = children_rows(read_corpus("data/sample"), ["scan-tests", "nowhere"])
        >>> rows[0]["id"], rows[0]["outcome"], rows[1]["outcome"]
        ('scan-tests', 'completed', None)
    """
    if not children:
        return []
    found = (
        session_runs(corpus.sessions.filter(pl.col("session_id").is_in(children)))
        .sort("list_order")
        .unique("session_id", keep="first", maintain_order=True)
    )
    by_id = {row["session_id"]: row for row in found.iter_rows(named=True)}
    out = []
    for child in children:
        row = by_id.get(child)
        if row is None:
            out.append({"id": child, "label": None, "outcome": None, "error": None, "active_ms": None,
                        "cost_usd": None, "cost": "unknown", "tokens": None})  # fmt: skip
            continue
        cost = run_cost(row)
        out.append(
            {
                "id": child,
                "label": row["label"],
                "outcome": row["outcome"],
                "error": run_message(row, 300) or None,
                "active_ms": row["active_ms"],
                "cost_usd": row["cost_usd"],
                "cost": "unknown" if cost == "–" else cost,
                "tokens": row["tokens"],
            }
        )
    return out


def children_table(
    rows: list[dict[str, Any]],
    *,
    names: Mapping[str, tuple[str | None, str | None]],
    href: Callable[[str], str | None],
    first: int = 1,
    marked: bool = False,
) -> str:
    """The children as an escaped, sortable ``<table class="kids">`` (``SORT_JS`` sorts it by a clicked header).

    Args:
        rows: ``children_rows``.
        names: each child's label and name (``views.names.names_by_id``).
        href: a child's page, or ``None`` when it has none (named, not linked).
        first: the number of the first row (a further page of children starts past the first).
        marked: a site's page: a child without a page is marked "(no page)" (``site_links.no_page_mark``).

    Examples:
        >>> rows = [{"id": "c1", "label": "<fix>", "outcome": "error", "error": "boom", "active_ms": 1500,
        ...          "cost_usd": None, "cost": "unknown", "tokens": None}]
        >>> html = children_table(rows, names={}, href=lambda sid: sid + ".html")
        >>> '<a href="c1.html">' in html, "&lt;fix&gt;" in html, 'data-v="1500"' in html, ">unknown<" in html
        (True, True, True, True)
    """
    head = "".join(
        f'<th class="{"num" if kind == "num" else ""}"><button type="button" class="sort" data-col="{n + 1}" '
        f'data-kind="{kind}">{escape(text)}</button></th>'
        for n, (_, text, kind) in enumerate(_HEADS)
    )
    body = []
    for at, row in enumerate(rows, start=first):
        sid = row["id"]
        label, name = names.get(sid, (row["label"], None))
        target = href(sid)
        named = name_html(sid, label=label or row["label"], name=name, href=target)
        named += f" {no_page_mark()}" if marked and target is None else ""
        error = clip(row["error"], 300) if row["error"] else ""
        active, cost, tokens = row["active_ms"], row["cost_usd"], row["tokens"]
        cost_cell = f'<span class="unknown">{escape(row["cost"])}</span>' if cost is None else escape(row["cost"])
        token_cell = escape(human_count(tokens)) if tokens is not None else '<span class="unknown">unknown</span>'
        cells = [
            f'<td class="num" data-v="{at}">{at:,}</td>',
            f"<td>{named}</td>",
            f"<td>{outcome_badge(row['outcome'])}</td>",
            f'<td class="err">{escape(error)}</td>',
            f'<td class="num" data-v="{"" if active is None else active}">{escape(human_duration(active))}</td>',
            f'<td class="num" data-v="{"" if cost is None else repr(float(cost))}">{cost_cell}</td>',
            f'<td class="num" data-v="{"" if tokens is None else tokens}">{token_cell}</td>',
        ]
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        '<div class="scroll"><table class="kids" id="children-table"><thead><tr><th class="num">#</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )
