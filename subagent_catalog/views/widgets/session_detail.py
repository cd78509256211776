"""The browser's detail pane: what one selected session is and holds, as escaped HTML."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal

import polars as pl

from subagent_catalog.analysis.text import utf8_length
from subagent_catalog.analysis.transcript import session_transcript
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import catalog_html, escape, table_html, text_html
from subagent_catalog.frames.schemas import EVENT_SCHEMA
from subagent_catalog.frames.units import clock
from subagent_catalog.views.names import NAME_CLIP, TIP_CLIP, session_name, short_id
from subagent_catalog.views.transcript_parts import no_descriptor_expected
from subagent_catalog.views.transcript_view import session_links
from subagent_catalog.views.widgets.pane_findings import findings_badges_html
from subagent_catalog.views.widgets.pane_steps import pane_steps_html

Role = Literal["session", "fork", "subagent", "diagnostic", "unlisted"]
ROLES: tuple[Role, ...] = ("session", "fork", "subagent", "diagnostic", "unlisted")
EVENT_HEAD = 15

PANE_TEXT_CLIP = 20_000
"""Characters of one text the detail pane holds; past it a marker says how many bytes are left out and that
``transcript_text(corpus, id, seq)`` gives the whole text."""

PANE_TEXT = 1_000_000
"""Characters of text the detail pane holds in all (the transcript's, and each ``list_agents`` text's)."""


def _bounded(text: str) -> str:
    """A ``list_agents`` text cut to ``PANE_TEXT`` characters, with a marker of what is left out."""
    if len(text) <= PANE_TEXT:
        return text
    return (
        text[:PANE_TEXT] + f"\n… {utf8_length(text[PANE_TEXT:]):,} more bytes not shown (list_agents_text gives it all)"
    )


def session_role(row: dict[str, Any], cat: dict[str, Any] | None) -> Role:
    """The role a session plays in the tree (its catalog row ``cat`` when it is a listed subagent).

    Examples:
        >>> session_role({"listed": False, "session_id": "a"}, None)
        'unlisted'
    """
    if not (row["listed"] and row["session_id"] is not None):
        return "unlisted"
    if cat is not None:
        return "diagnostic" if cat["kind"] == "diagnostic" else "subagent"
    if row["origin"] == "subagent":
        return "subagent"
    return "fork" if row["parent_session"] is not None else "session"


def _when(ms: int | None) -> str | None:
    """A UTC time in epoch milliseconds as text with milliseconds and its zone (``None`` stays ``None``; any year)."""
    return clock(ms, precision="millisecond") if ms is not None else None


def _span(first: int | None, last: int | None) -> str | None:
    """The first and last event times of a log (epoch milliseconds) and the time between them."""
    if first is None or last is None:
        return None
    return f"{_when(first)} to {_when(last)} ({(last - first) / 1000:,.3f}\u00a0s)"


CHILDREN_SHOWN = 20
"""Child ids the detail pane names (the rest are counted)."""


def row_text(
    row: dict[str, Any],
    cat: dict[str, Any] | None,
    *,
    children: int,
    parent_found: bool,
    in_cycle: bool,
    context: bool = False,
    name: str | None = None,
) -> tuple[str, str, str]:
    """Label, tooltip and button style of one tree row (``cat``: its catalog row, for a subagent).

    A row leads with its name (``views.names.session_name``: a subagent's descriptor label, else the
    run's ``name``, its title or first prompt), its id shortened after it (``short_id``; the tooltip
    has the whole id).

    Examples:
        >>> row = {"session_id": "a", "listed": True, "list_skip": None, "list_error": None, "origin": None,
        ...        "parent_session": None, "verdict": "ok", "path": "/r/p/a/session.jsonl"}
        >>> row_text(row, None, children=2, parent_found=False, in_cycle=False)
        ('a  [session · 2 below]', '/r/p/a/session.jsonl', '')
        >>> row_text(dict(row, session_id="0f8e5c7a-1111-2222-3333-444455556666"), None, children=0,
        ...          parent_found=False, in_cycle=False, name="Fix the flaky test")[0]
        'Fix the flaky test  (0f8e5c7a…)  [session]'
        >>> cat = {"kind": "agent", "mode": "continuable", "label": "Lint the SQL"}
        >>> row_text(dict(row, session_id="0f8e5c7a-1111-2222-3333-444455556666", origin="subagent"), cat,
        ...          children=0, parent_found=True, in_cycle=False)[0]
        'Lint the SQL  (0f8e5c7a…)  [continuable]'
    """
    session_id = row["session_id"] if row["session_id"] is not None else "(no id)"
    style = ""
    label: str | None = None
    if row["list_error"] is not None:  # listed or not (a duplicate id is not listed), it breaks upstream's list()
        tag, style = "fails the listing", "danger"
        session_id = row["session_id"] or os.path.basename(os.path.dirname(row["path"]))
    elif not (row["listed"] and row["session_id"] is not None):
        tag = f"not listed: {row['list_skip'] or 'header skipped'}"
        session_id = row["session_id"] or os.path.basename(os.path.dirname(row["path"]))
    elif row["origin"] == "subagent":
        if cat is None:
            tag = f"subagent ({row['identity_mode'] or 'no identity'}, not resolved)"
        elif cat["kind"] == "diagnostic":
            tag, style = f"diagnostic: {cat['reason']} · {cat['cause'] or '?'}", "warning"
        else:
            label = cat["label"]
            tag = str(cat["mode"])
    elif row["parent_session"] is not None:
        tag = "fork (ordinary session)"
    else:
        tag = "session"
    if row["parent_session"] is not None and not parent_found and row["listed"]:
        tag += " · parent not found"
    if in_cycle:
        tag += " · parent cycle"
    if children:
        tag += f" · {children} below"
    if row["verdict"] not in ("ok", "skipped") and style == "":
        tag += f" · read {row['verdict']}"
    tip = f"{row['path']}"
    shown = session_name(label, name, limit=NAME_CLIP)
    if shown is not None and row["session_id"] is not None:
        tip = f"{session_name(label, name, limit=TIP_CLIP)}\n{session_id}\n{tip}"
        session_id = f"{shown}  ({short_id(session_id)})"
    text = f"{session_id}  [{tag}]"
    if context and row["parent_session"] is not None:
        text += f"  ← {row['parent_session']}"
    return text, tip, style


def session_info(
    corpus: Corpus,
    key: int,
    row: dict[str, Any],
    cat: dict[str, Any] | None,
    *,
    role: Role,
    agents_text: tuple[str, str],
    semantics: str,
    catalog_error: str | None,
    lead: Callable[[pl.DataFrame], str] | None = None,
    findings: pl.DataFrame | str | None = None,
) -> tuple[dict[str, Any], str]:
    """Facts about one session (the browser's ``selected_info``) and its detail pane.

    ``lead`` makes the HTML that follows the pane's title from the log's events (read once, here);
    ``findings`` are the session's (or why they are unknown), shown as badges linked to their steps.

    The events are read from that one log only (``corpus.events`` is never loaded).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import header, write_session
        >>> root = tempfile.mkdtemp()
        >>> _ = write_session(root, header("s1", created_at=1), [], "none")
        >>> corpus = read_corpus(root, cache=False)
        >>> info, pane = session_info(corpus, 0, corpus.sessions.row(0, named=True), None, role="session",
        ...                           agents_text=("", ""), semantics="projection", catalog_error=None)
        >>> info["session_id"], info["event_count"]
        ('s1', 0)
    """
    descriptors = corpus.descriptors.filter(pl.col("path") == row["path"])
    problems = corpus.problems.filter(pl.col("path") == row["path"])
    steps: pl.DataFrame | None = None
    events_error: str | None = None
    try:
        events = corpus.log_events(row["list_order"])
    except SubagentCatalogError as error:  # the log vanished, or an archive without events and root
        events, events_error = pl.DataFrame(schema=EVENT_SCHEMA), str(error)
    else:
        if row["verdict"] != "skipped":
            steps = session_transcript(corpus, row, events, clip=PANE_TEXT_CLIP)
    children = session_links(corpus, row).children
    info: dict[str, Any] = {
        "key": key,
        "children": children,
        "session_id": row["session_id"],
        "path": row["path"],
        "role": role,
        "kind": cat["kind"] if cat else None,
        "mode": cat["mode"] if cat else row["identity_mode"],
        "label": cat["label"] if cat else row["identity_label"],
        "reason": cat["reason"] if cat else None,
        "cause": cat["cause"] if cat else None,
        "cause_detail": cat["cause_detail"] if cat else None,
        "verdict": row["verdict"],
        "descriptor_count": descriptors.height,
        "problem_count": problems.height,
        "event_count": events.height,
        "events_shown": min(EVENT_HEAD, events.height),
        "list_agents_children": agents_text[0],
        "list_agents_descendants": agents_text[1],
        "transcript": steps,
        "events_error": events_error,
    }
    children = info.get("children") or []
    more = f" … and {len(children) - CHILDREN_SHOWN} more" if len(children) > CHILDREN_SHOWN else ""
    identity = " — ".join(str(v) for v in (row["identity_mode"], row["identity_label"]) if v is not None)
    facts = [
        ("id", row["session_id"]),
        ("role", info["role"]),
        ("path", row["path"]),
        ("project", row["project_dir"]),
        ("created", _when(row["created_at_ms"])),
        ("events from", _span(row.get("first_event_ms"), row.get("last_event_ms"))),
        ("parentSession", row["parent_session"]),
        ("children", f"{len(children)}: {', '.join(children[:CHILDREN_SHOWN])}{more}" if children else None),
        ("origin", row["origin"]),
        ("delegationDepth", row["delegation_depth"]),
        ("seedLength", row["seed_length"]),
        ("identity", identity or no_descriptor_expected(row)),  # or why a session not a subagent has none
        # A root or an ordinary fork has no descriptor by design: its cause is not shown as a fault.
        ("identity cause", row["identity_cause"] if row["origin"] == "subagent" else None),
        ("identity detail", row["identity_detail"]),
        ("listed", row["listed"] if row["list_skip"] is None else f"no ({row['list_skip']})"),
        ("list error", row["list_error"]),
        ("read verdict", row["verdict"]),
        ("read cause", row["read_cause"]),
        ("read message", row["read_message"]),
        ("events", row["event_count"]),
        ("bytes", row["bytes"]),
    ]
    cells = "".join(
        f'<tr><th style="text-align:left;padding:1px 8px 1px 0;white-space:nowrap;width:130px">{escape(name)}</th>'
        f'<td style="font-family:monospace;overflow-wrap:anywhere;line-height:1.3">{escape(value)}</td></tr>'
        for name, value in facts
        if value is not None
    )
    parts = [
        '<div style="font-family:system-ui,sans-serif;font-size:13px">',
        '<div style="font-size:15px;font-weight:700;word-break:break-all">'
        f"{escape(row['session_id'] or row['path'])}</div>",
        lead(events) if lead is not None else "",
        '<div class="sc-labels-slot"></div>',
        findings_badges_html(findings, info.get("transcript")) if findings is not None else "",
        f'<table style="font-size:12px;border-collapse:collapse;table-layout:fixed;width:100%">{cells}</table>',
    ]
    if cat is not None:
        if cat["kind"] == "diagnostic":
            parts.append(
                '<div style="border-left:4px solid #e65100;background:#fff4e5;padding:4px 8px;margin:6px 0">'
                f"<b>diagnostic: {escape(cat['reason'])}</b> — cause <code>{escape(cat['cause'])}</code>"
                f"<div style='font-family:monospace;font-size:12px'>{escape(cat['cause_detail'])}</div></div>"
            )
        frame = pl.DataFrame([cat]).select(
            [c for c in ("kind", "mode", "label", "activity", "hasChildren", "reason", "cause", "verdict") if c in cat]
        )
        parts.append(catalog_html(frame, caption=f"row under its parent ({semantics})"))
    elif catalog_error is not None and row["origin"] == "subagent":
        parts.append(text_html(catalog_error, caption="catalog unavailable"))
    parts.append(
        table_html(
            descriptors,
            columns=[
                "seq",
                "in_seed",
                "is_last",
                "status",
                "valid",
                "reason",
                "version",
                "mode",
                "provider",
                "label",
            ],
            caption=f"descriptors ({descriptors.height})",
            row_styles=["" if v else "background:#fdecee" for v in descriptors["valid"].to_list()],
        )
    )
    parts.append(text_html(_bounded(info["list_agents_children"]), caption="list_agents (children scope)"))
    parts.append(text_html(_bounded(info["list_agents_descendants"]), caption="list_agents (descendants scope)"))
    if problems.height:
        parts.append(
            table_html(
                problems, columns=["kind", "severity", "line", "message"], caption=f"problems ({problems.height})"
            )
        )
    steps = info.get("transcript")
    if isinstance(steps, pl.DataFrame):
        parts.append(
            f'<div style="font-weight:600;margin:10px 0 2px">transcript ({steps.height} steps, '
            "read from this file only)</div>"
        )

        def hint(seq: int | None) -> str:
            call = escape(f"transcript_text(corpus, {row['session_id']!r}, {seq})")
            return "" if seq is None or row["session_id"] is None else f" (<code>{call}</code> gives the whole text)"

        parts.append(pane_steps_html(steps, limit=600, budget=PANE_TEXT, hint=hint))
    elif info.get("events_error"):
        parts.append(text_html(str(info["events_error"]), caption="events unavailable"))
    head = events.head(EVENT_HEAD)
    times = [clock(ms, precision="millisecond").removesuffix(" UTC") or None for ms in head["time_ms"].to_list()]
    head = head.with_columns(pl.Series("time", times, dtype=pl.String), pl.col("data").str.slice(0, 100))
    parts.append(
        "<details><summary style='cursor:pointer;margin-top:8px'>raw events</summary>"
        + table_html(
            head,
            columns=["seq", "time", "type", "turn", "step", "data"],
            caption=f"events (first {head.height} of {events.height}, read from this file only)",
        )
        + "</details>"
    )
    parts.append("</div>")
    return info, "".join(parts)


PROBLEM_COLUMNS = ("kind", "severity", "session_id", "line", "message", "file")
PROBLEMS_SHOWN = 200
"""Problems the problems tab lists (its kind filter narrows them)."""


def problems_in_order(problems: pl.DataFrame, kind: str) -> pl.DataFrame:
    """The problems tab's rows: of one ``kind`` (or all for ``(any)``), listing-fatal first, then by severity.

    Examples:
        >>> frame = pl.DataFrame({"kind": ["a", "b"], "fails_listing": [False, True], "severity": ["info", "error"]})
        >>> problems_in_order(frame, "(any)")["kind"].to_list(), problems_in_order(frame, "a").height
        (['b', 'a'], 1)
    """
    if kind != "(any)":
        problems = problems.filter(pl.col("kind") == kind)
    return problems.sort(
        [
            pl.col("fails_listing"),
            pl.col("severity").replace_strict({"error": 0, "warning": 1, "info": 2}, default=3),
        ],
        descending=[True, False],
    )


def problems_table_html(problems: pl.DataFrame, *, root: str, total: int) -> str:
    """The problems tab: a table (cards in a narrow widget), listing-fatal rows marked, paths under ``root``.

    Args:
        problems: the rows to list, in order (the first ``PROBLEMS_SHOWN`` are shown).
        root: the corpus root (paths are shown relative to it).
        total: how many problems the corpus has (before the kind filter).

    Examples:
        >>> import polars as pl
        >>> frame = pl.DataFrame({"kind": ["torn-tail"], "severity": ["warning"], "session_id": ["<a>"], "line": [3],
        ...                       "message": ["cut"], "path": ["/r/p/a/session.jsonl"], "fails_listing": [False],
        ...                       "scope": ["file"]})
        >>> pane = problems_table_html(frame, root="/r", total=1)
        >>> 'data-label="file"' in pane and ">p/a/session.jsonl<" in pane and "&lt;a&gt;" in pane
        True
    """
    shown = problems.head(PROBLEMS_SHOWN)
    prefix = root.rstrip("/") + "/"
    caption = f"{problems.height:,} of {total:,} problems" if problems.height != total else f"{total:,} problems"
    if shown.height < problems.height:
        caption += f" (the first {shown.height} shown; choose a kind to narrow them)"
    parts = [f'<div style="font-weight:600;margin:6px 0 2px">{escape(caption)}</div>']
    if not problems.height:
        return parts[0] + '<div class="sc-placeholder">(no problems)</div>'
    parts.append('<table class="sc-ptable"><thead><tr>')
    parts.extend(f"<th>{name}</th>" for name in (*PROBLEM_COLUMNS, "fails listing"))
    parts.append("</tr></thead><tbody>")
    classes = {"kind": "sc-nowrap", "severity": "sc-nowrap", "line": "sc-nowrap", "session_id": "sc-code"}
    classes["file"] = "sc-code"
    for row in shown.iter_rows(named=True):
        path = row["path"] or ""
        values = dict(row, file=path[len(prefix) :] if path.startswith(prefix) else path)
        parts.append('<tr class="sc-fatal">' if row["fails_listing"] else "<tr>")
        for name in PROBLEM_COLUMNS:
            css = f' class="{classes[name]}"' if name in classes else ""
            parts.append(f'<td data-label="{name}"{css}>{escape(values[name])}</td>')
        parts.append(f'<td data-label="fails listing">{"yes" if row["fails_listing"] else ""}</td></tr>')
    parts.append("</tbody></table>")
    return "".join(parts)
