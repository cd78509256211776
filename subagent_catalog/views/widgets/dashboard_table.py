"""The dashboard's table of the sessions behind a bar: what each run is, how it ended and why, time and cost.

Escaped HTML (the table keeps a light background in a dark theme). Each session and parent is named
by ``views.names.name_html``: its label, then its id, shortened on screen and whole in the page (the
id's tooltip; one click selects it whole for a copy: the shortening is the style sheet's ellipsis,
not cut text). Each row with a session id carries it as ``data-sid`` (``dashboard_rows`` makes such a row
reveal its session in a linked browser on a click).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.frames.display import breakable, escape
from subagent_catalog.frames.units import human_count, human_duration, partial_cost
from subagent_catalog.views.names import NAME_CSS, name_html
from subagent_catalog.views.table_columns import FIT_CSS, TABLES

TABLE_ROWS = 200
"""Rows the table lists (the caption says how many more there are)."""

TABLE_STYLE = (
    """<style>
.sc-atable { border-collapse: collapse; font-size: 12px; line-height: 1.35; width: 100%; }
.sc-atable th {
  text-align: left; padding: 2px 6px; border-bottom: 1px solid #bbb; background: #f4f4f4; white-space: nowrap;
}
.sc-atable td { padding: 2px 6px; border-bottom: 1px solid #eee; vertical-align: top; }
.sc-atable tr.sc-diag { background: #fff4e5; }
.sc-atable tr.sc-failed { background: #fdecee; }
.sc-atable .sc-nowrap { white-space: nowrap; }
.sc-atable .sc-num { white-space: nowrap; text-align: right; }
.sc-atable .sc-text { min-width: 14ch; max-width: 40ch; overflow-wrap: anywhere; }
.sc-atable .sc-code { max-width: 30ch; overflow-wrap: anywhere; }
"""
    + FIT_CSS.replace("}", "}\n")
    + NAME_CSS.replace("}", "}\n")
    + """</style>"""
)
"""The table's style, with ``views.names.NAME_CSS`` (``user-select: all``: one click selects a whole id) and the
column-priority rule of the report (``views.table_columns``: a narrow output area hides the least needed columns
and, narrower still, makes each row a card; the table never scrolls sideways)."""


def error_of(row: dict[str, Any]) -> tuple[str | None, str | None]:
    """The error message and code of a row: the run's, else a diagnostic's cause detail.

    An ``error`` run gives its last error's message and code; another failed outcome its detail.

    Examples:
        >>> error_of({"outcome": "error", "last_error_message": "context length exceeded",
        ...           "last_error_code": "CONTEXT_LENGTH", "outcome_detail": "x", "cause_detail": None})
        ('context length exceeded', 'CONTEXT_LENGTH')
        >>> error_of({"outcome": "open", "last_error_message": None, "last_error_code": None,
        ...           "outcome_detail": "killed", "cause_detail": None})
        ('killed', None)
    """
    outcome = row.get("outcome")
    if outcome == "error" and (row.get("last_error_message") or row.get("last_error_code")):
        return row.get("last_error_message"), row.get("last_error_code")
    if outcome in FAILED_OUTCOMES and row.get("outcome_detail"):
        return row["outcome_detail"], None
    return row.get("cause_detail"), None


def affected_table_html(frame: pl.DataFrame, *, caption: str, labels: Mapping[str, str] | None = None) -> str:
    """The sessions behind a bar: each named, outcome, error message and code, active time, cost, tokens, place.

    A session is named by ``views.names.name_html`` (its label, its short id beside it, the whole id
    on hover and in a copy); the place is the kind, reason and cause, the parent (named the same way,
    by ``labels``) and project (the path is the project's tooltip).

    Args:
        frame: ``population`` rows.
        caption: what the rows are.
        labels: the names of the parents by id (label, else title or first prompt: ``session_name``).

    Examples:
        >>> frame = pl.DataFrame({"id": ["0f8e5c7a-1111-2222-3333-444455556666"], "label": ["<b>x</b>"],
        ...     "outcome": ["error"], "outcome_detail": ["boom (E1)"], "last_error_message": ["boom"],
        ...     "last_error_code": ["E1"], "cause_detail": [None], "wall_ms": [5_500], "cost_usd": [0.01],
        ...     "tokens_total": [1200], "kind": ["child"], "reason_cause": ["child"], "parent": ["p"],
        ...     "project": ["--r--"], "path": ["/r/s.jsonl"]})
        >>> html = affected_table_html(frame, caption="1 session")
        >>> 'title="0f8e5c7a-1111-2222-3333-444455556666"' in html, "&lt;b&gt;x" in html, ">E1<" in html
        (True, True, True)
        >>> 'data-sid="0f8e5c7a-1111-2222-3333-444455556666"><td' in html
        True
    """
    shown = frame.head(TABLE_ROWS)
    more = f" (the first {shown.height} shown)" if shown.height < frame.height else ""
    table = TABLES["dashboard"]
    parts = [
        TABLE_STYLE,
        f'<div style="font-weight:600;margin:6px 0 2px">{escape(caption + more)}</div>',
        '<div class="fit"><table class="sc-atable"><thead><tr>',
        *(
            f'<th class="{column.classes}"'
            + (f' title="{escape(column.tip)}"' if column.tip else "")
            + f">{escape(column.heading)}</th>"
            for column in table
        ),
        "</tr></thead><tbody>",
    ]
    for row in shown.iter_rows(named=True):
        message, code = error_of(row)
        outcome = row.get("outcome")
        css = (
            " class='sc-failed'"
            if outcome in FAILED_OUTCOMES
            else " class='sc-diag'"
            if row.get("kind") == "diagnostic"
            else ""
        )
        tokens, parent = row.get("tokens_total"), row.get("parent")
        texts = [
            ("sc-text", name_html(row["id"], label=row.get("label"), name=row.get("name")), ""),
            ("sc-nowrap", escape(outcome), ""),
            ("sc-text", escape(message), ""),
            ("sc-code", breakable(code or ""), ""),
            (
                "sc-num",
                escape(human_duration(row.get("active_ms", row.get("wall_ms")))),
                f' title="{escape(human_duration(row.get("wall_ms")))} first to last event"',
            ),
            (
                "sc-num",
                "" if tokens is None else escape(partial_cost(row.get("cost_usd"), row.get("cost_usd_known"))),
                "",
            ),
            ("sc-num", "" if tokens is None else human_count(tokens), ""),
            ("sc-nowrap", escape(row.get("kind")), ""),
            ("sc-nowrap", escape(row.get("reason_cause")), ""),
            ("sc-text", "" if parent is None else name_html(str(parent), label=(labels or {}).get(parent)), ""),
            ("sc-nowrap", escape(row.get("project")), f' title="{escape(row.get("path"))}"'),
        ]
        cells = [
            f'<td class="{style} {column.classes}" data-h="{escape(column.heading)}"{extra}>{text}</td>'
            for column, (style, text, extra) in zip(table, texts, strict=True)
        ]
        sid = "" if row.get("id") is None else f' data-sid="{escape(row["id"])}"'
        parts.append(f"<tr{css}{sid}>{''.join(cells)}</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)
