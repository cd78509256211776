"""A session's transcript as Markdown: its run facts, then every step, each text from the log fenced.

The Markdown counterpart of ``transcript_view.transcript_page`` (``show --format md``).
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import polars as pl

from subagent_catalog.frames.source import Source
from subagent_catalog.frames.units import human_duration
from subagent_catalog.views.names import names_by_id, session_name
from subagent_catalog.views.transcript_parts import error_list, run_facts, turn_table
from subagent_catalog.views.transcript_view import (
    MAX_CHILD_LINKS,
    PAGE_TEXT,
    TEXT_HEAD,
    TextRoom,
    _clock,
    _load,
    _offset,
    _pretty,
    _shown,
    _title,
)


def _md(text: object) -> str:
    """A value from the log as a Markdown code span (literal: nothing in it is markup)."""
    value = " ".join(str(text).splitlines())
    longest = max((len(m) for m in re.findall(r"`+", value)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    return f"{ticks}{pad}{value}{pad}{ticks}"


def _md_title(row: dict[str, Any], detail: dict[str, Any]) -> str:
    kind, name = row["kind"], row["name"]
    if kind == "tool-call":
        return f"**→ call** {_md(name or '?')}"
    if kind == "tool-result":
        parts = [f"**← result of** {_md(name or '?')}"]
        if "duration_ms" in detail:
            parts.append(human_duration(detail["duration_ms"]))
        error = detail.get("error")
        if row["is_error"]:
            code = error.get("code") if isinstance(error, dict) else None
            parts.append(f"**failed** {_md(code)}" if code else "**failed**")
        if detail.get("repeat"):
            parts.append("a second result for this call")
        return " · ".join(parts)
    if kind == "user" and detail.get("source_name"):
        sender = (detail.get("source") or {}).get("sender")
        return f"**user** · {detail['source_name']}" + (f" from {_md(sender)}" if sender else "")
    if kind == "assistant" and detail.get("model"):
        return f"**assistant** · {_md(detail['model'])}"
    if kind == "descriptor":
        return f"**descriptor** · {_md(name or 'no mode')}"
    return f"**{_title(row, detail)}**"


def transcript_markdown(corpus: Source, session_id: str, *, path: str | None = None) -> str:
    """One session's transcript as Markdown; every text from the log is in a fenced block.

    Raises:
        SessionLookupError: no log (or several logs) with this id.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1"); log.turn_start(); log.user("hi"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> print(transcript_markdown(read_corpus(root), "s1").split("## ")[1])
        turn 1 · +0.000 s
        <BLANKLINE>
        **user** · human prompt (seq 1, +0.001 s)
        <BLANKLINE>
        ```text
        hi
        ```
        <BLANKLINE>
        *turn ended:* `completed` (seq 2, +0.002 s)
        <BLANKLINE>
    """
    corpus = corpus.to_corpus()  # a corpus, or an archive's frames
    session, rows, links = _load(corpus, session_id, path)
    sid = session["session_id"]
    named = names_by_id(corpus, [s for s in (sid, links.parent, *links.children[:MAX_CHILD_LINKS]) if s is not None])

    def md_name(other: str) -> str:
        """A session by its name (``views.names.session_name``), its id after it."""
        text = session_name(*named.get(other, (None, None)))
        return f"{_md(text)} ({_md(other)})" if text else _md(other)

    own = session_name(*named.get(sid, (None, None))) if sid is not None else None
    lines = [f"# {md_name(sid)}" if own and sid is not None else f"# Session {_md(sid)}", ""]
    where = [
        ("project", session["project_dir"]),
        ("path", session["path"]),
        ("created", _clock(session["created_at_ms"])),
    ]
    lines += [f"- {label}: {_md(text)}" for label, text in where if text]
    lines += [
        f"- {label}: {'**failed** ' if tone == 'bad' else ''}{_md(text)}" for label, text, tone in run_facts(session)
    ]
    if links.parent is not None:
        lines.append(
            f"- parent: {md_name(links.parent)}{'' if links.parent_found else ' (its log is not in the corpus)'}"
        )
    if links.children:
        lines.append(f"- children ({len(links.children)}): {', '.join(md_name(c) for c in links.children)}")
    lines.append("")
    start_value = rows.filter(~pl.col("in_seed"))["time_ms"].min() if rows.height else None
    start = start_value if isinstance(start_value, int) else None
    turns = turn_table(rows)
    if len(turns) > 1:
        lines += ["| turn | starts | took | steps | tool calls | errors | ended |", "|---|---|---|---|---|---|---|"]
        lines += [
            f"| {t['turn']} | {_offset(t['start_ms'], start)} | {human_duration(t['took'])} | {t['steps']} | "
            f"{t['calls']} | {t['failed']} | {t['ended']} |"
            for t in turns
        ]
        lines.append("")
    errors = error_list(rows)
    if errors:
        lines += [f"**{len(errors):,} error{'s' if len(errors) != 1 else ''}:**", ""]
        lines += [
            f"- {'turn ' + str(e['turn']) + ': ' if e['turn'] is not None else ''}{_md(e['what'])}" for e in errors
        ]
        lines.append("")
    seed = rows.filter(pl.col("in_seed")).height
    if seed:
        lines += [f"*{seed:,} steps inherited from the parent (the fork's seed) are not shown.*", ""]
    room = TextRoom(PAGE_TEXT)
    for row in rows.filter(~pl.col("in_seed")).to_dicts():
        detail: dict[str, Any] = orjson.loads(row["detail"]) if row["detail"] else {}
        stamp = ", ".join(
            v for v in (f"seq {row['seq']}" if row["seq"] is not None else "", _offset(row["time_ms"], start)) if v
        )
        kind = row["kind"]
        text = row["text"] or ""
        if kind == "turn-start":
            heading = text if re.fullmatch(r"turn -?\d+", text) else _md(text)
            lines += [f"## {heading} · {_offset(row['time_ms'], start)}", ""]
        elif kind == "turn-end":
            lines += [f"*turn ended:* {_md(text)} ({stamp})", ""]
        elif kind == "event":
            short = text if len(text) <= 200 else text[:200] + "…"
            lines += [f"{_md(row['event_type'])} ({stamp}): {_md(short)}", ""]
        else:
            title = _md_title(row, detail)
            if row["partial"]:
                title += f" · partial: {detail.get('partial', 'no assistant/message')}"
            shown, more = _shown(row, detail, room, TEXT_HEAD)
            body = _pretty(shown) if kind == "tool-call" and not more else shown
            fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", body)), default=0))
            lines += [f"{title} ({stamp})" if stamp else title, "", f"{fence}text\n{body}\n{fence}", ""]
            if more:
                command = f"subagent-catalog show {corpus.root} {session['session_id']} --text {row['seq']} -o FILE"
                lines += [f"*… {more:,} more bytes not shown ({_md(command)} writes the whole text).*", ""]
    return "\n".join(lines)
