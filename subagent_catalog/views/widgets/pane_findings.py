"""The detail pane's findings: a badge per finding of the session, each jumping to its step in the pane.

A badge links to ``#<id>`` of the pane row holding the evidence's first event (``seq``: the row's own
event, or one of the events it holds, such as a tool call in an assistant step); the browser's front end
scrolls the pane to it as it does for the jump-to-error control (``pane_steps``). A finding about the
whole run, or whose step the pane does not show (a long run shows its first and last steps), has no
link and says so.
"""

from __future__ import annotations

import polars as pl

from subagent_catalog.analysis.text import clip
from subagent_catalog.frames.display import escape
from subagent_catalog.views.findings_text import position
from subagent_catalog.views.transcript_parts import anchor
from subagent_catalog.views.widgets.pane_steps import shown_steps

__all__ = ["findings_badges_html", "pane_targets"]

SEVERITY_STYLE = {
    "error": "background:#ffebe9;color:#b62324;border-color:#ff8182",
    "warn": "background:#fff1e5;color:#953800;border-color:#ffb77c",
    "info": "background:#ddf4ff;color:#0969da;border-color:#80ccff",
}


def pane_targets(steps: pl.DataFrame | None) -> dict[int, str]:
    """The pane's row id of each event ``seq`` it shows (a row's own ``seq``, then the events it holds).

    Examples:
        >>> steps = pl.DataFrame({"seq": [2, 4], "seqs": [[2], [4, 5]], "kind": ["user", "assistant"],
        ...                       "is_error": [False, False], "in_seed": [False, False]})
        >>> pane_targets(steps)
        {2: 'seq-2', 4: 'seq-4', 5: 'seq-4'}
    """
    if steps is None or steps.height == 0:
        return {}
    columns = ["seq", "kind", *(["seqs"] if "seqs" in steps.columns else [])]
    rows = steps[shown_steps(steps)].select(columns).to_dicts()
    targets: dict[int, str] = {}
    for row in rows:
        if row["seq"] is not None:
            targets.setdefault(row["seq"], anchor(row))
    for row in rows:
        for seq in row.get("seqs") or []:
            targets.setdefault(seq, anchor(row))
    return targets


def findings_badges_html(found: pl.DataFrame | str, steps: pl.DataFrame | None) -> str:
    """The pane's findings section: a badge per finding (severity, kind, where), linked to its step; ``""``: none.

    ``found`` is the session's findings (``FINDING_SCHEMA``), or why they could not be computed.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.findings import findings
        >>> from subagent_catalog.analysis.transcript import transcript
        >>> corpus = read_corpus("data/findings")
        >>> html = findings_badges_html(findings(corpus, sessions=["loop-yes"]), transcript(corpus, "loop-yes"))
        >>> 'data-sc-finding="tool-loop"' in html and 'href="#seq-3"' in html  # the row holding the call (seq 4)
        True
    """
    if isinstance(found, str):
        return f'<div class="sc-findings sc-findings-error">findings unavailable: {escape(found)}</div>'
    if found.height == 0:
        return ""
    targets = pane_targets(steps)
    badges = []
    for row in found.iter_rows(named=True):
        where = position(row)
        target = targets.get(row["seq"]) if row["seq"] is not None else None
        tip = row["message"] + (f"\n{clip(row['evidence'], 300)}" if row["evidence"] else "")
        if target is None and row["seq"] is not None:
            tip += "\n(its step is not in the pane: transcript(corpus, id) has every step)"
        text = f"{escape(row['severity'])} · {escape(row['kind'])} · {escape(where)}"
        style = f'style="{SEVERITY_STYLE.get(row["severity"], "")}"'
        attrs = f'class="sc-finding" data-sc-finding="{escape(row["kind"])}" {style} title="{escape(tip)}"'
        badges.append(f'<a href="#{escape(target)}" {attrs}>{text}</a>' if target else f"<span {attrs}>{text}</span>")
    count = found.height
    return (
        f'<div class="sc-findings"><b>{count} finding{"s" if count != 1 else ""}</b> '
        '<span class="sc-findings-doc">(docs/findings.md)</span> ' + " ".join(badges) + "</div>"
    )
