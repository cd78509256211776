"""The parts of a transcript page above and around its steps: run facts, turns, errors, user-message blocks.

``run_facts`` gives the header (outcome, identity, time split, tokens with cache, cost), each
fact with a tone, so a root without a descriptor reads as what it is (a root) and only a failed
run or a subagent's missing identity is marked. ``turn_table`` summarises each turn with a link
to it; ``error_list`` links every error row. ``user_body`` draws a user message's blocks apart,
its source named and reasoning folded. Every text from the log is escaped here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import orjson
import polars as pl

from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.analysis.text import clip
from subagent_catalog.analysis.transcript import turn_summary
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.outcome import outcome_text
from subagent_catalog.frames.units import (
    MISSING,
    TOKEN_LABELS,
    clock,
    context_text,
    human_count,
    human_duration,
    partial_cost,
    plural,
    time_split,
)
from subagent_catalog.views.palette import outcome_badge
from subagent_catalog.views.run_format import TOKENS
from subagent_catalog.views.table_columns import columns, fit_caption

Tone = Literal["", "ok", "warn", "bad"]
"""How a header fact is marked: plain, good, a warning, a failure."""

TONE_STYLES = {"": "", "ok": "color:#116329", "warn": "color:#953800", "bad": "color:#b62324;font-weight:600"}


def no_descriptor_expected(session: dict[str, Any]) -> str | None:
    """Why a session that is not a subagent has no descriptor (``None`` for a subagent).

    Examples:
        >>> no_descriptor_expected({"origin": "root", "parent_session": None})
        'a root session: not a subagent, so no descriptor is expected'
        >>> no_descriptor_expected({"origin": "subagent", "parent_session": "p"}) is None
        True
    """
    if session.get("origin") == "subagent":
        return None
    kind = "a root session" if session.get("parent_session") is None else "an ordinary fork"
    return f"{kind}: not a subagent, so no descriptor is expected"


def _identity(session: dict[str, Any]) -> tuple[str, Tone]:
    cause = session.get("identity_cause")
    if session.get("identity_label") is not None or session.get("identity_mode") is not None:
        mode = session.get("identity_mode") or "no mode"
        return f"{session.get('identity_label') or '(no label)'} ({mode})", ""
    expected = no_descriptor_expected(session)
    if expected is not None:
        return expected, ""
    return f"a subagent without a usable descriptor ({cause or 'unknown'})", "warn"


def run_facts(session: dict[str, Any]) -> list[tuple[str, str, Tone]]:
    """The header facts of one ``sessions`` row: (label, text, tone), unknown figures left out.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> rows = read_corpus("data/sample").sessions
        >>> root = rows.filter(pl.col("session_id") == "run-webapp-1").row(0, named=True)
        >>> [(label, tone) for label, _, tone in run_facts(root)][:4]
        [('outcome', 'ok'), ('identity', ''), ('time', ''), ('context', '')]
        >>> failed = rows.filter(pl.col("session_id") == "auth-refactor").row(0, named=True)
        >>> run_facts(failed)[0]
        ('outcome', 'error: context length exceeded (CONTEXT_LENGTH)', 'bad')
    """
    outcome = session.get("outcome") or "?"
    detail = session.get("outcome_detail")
    tone: Tone = "bad" if outcome in FAILED_OUTCOMES else "ok" if outcome == "completed" else ""
    facts: list[tuple[str, str, Tone]] = [("outcome", outcome_text(outcome, detail), tone)]
    facts.append(("identity", *_identity(session)))
    if session.get("run_wall_ms") is not None:
        facts.append(("time", time_split(session), ""))
    if session.get("peak_context_tokens") is not None:
        facts.append(
            ("context", context_text(session), "warn" if (session.get("peak_context_share") or 0) >= 0.9 else "")
        )
    if session.get("turns"):
        ended = [
            f"{name} {session.get(f'turns_{name}')}"
            for name in ("completed", "error", "aborted", "max_tokens", "blocked", "interrupted", "other")
            if session.get(f"turns_{name}")
        ]
        open_turns = session.get("turns_open") or 0
        text = f"{session['turns']:,}" + (f" ({', '.join(ended)}" + (f", open {open_turns})" if open_turns else ")"))
        facts.append(("turns", text.replace("max_tokens", "max-tokens"), ""))
    if session.get("models"):
        facts.append(("models", ", ".join(str(m) for m in session["models"]), ""))
    counts = [(TOKEN_LABELS[column], session.get(column)) for column in (*TOKENS, "reasoning_tokens")]
    if any(value is not None for _, value in counts):
        facts.append(("tokens", ", ".join(f"{name} {human_count(value)}" for name, value in counts), ""))
    elif session.get("usage_steps") == 0 and session.get("steps"):
        facts.append(("tokens", f"none reported ({plural(session['steps'], 'step')}, none with usage)", ""))
    cost = partial_cost(session.get("cost_usd"), session.get("cost_usd_known"))
    if session.get("cost_usd") is not None:
        facts.append(("cost", cost, ""))
    elif session.get("usage_steps"):
        why = "a model has no price (unpriced_models names it; --prices adds one)"
        facts.append(("cost", f"{cost}, the rest unknown: {why}" if cost != MISSING else f"unknown: {why}", "warn"))
    if session.get("tool_calls") is not None:
        failed = session.get("tool_results_failed") or 0
        facts.append(("tool calls", f"{session['tool_calls']:,}, {failed:,} failed", "warn" if failed else ""))
    return facts


def anchor(row: dict[str, Any]) -> str:
    """A row's anchor id on a page: ``seq-N``, ``read-problem`` for the row that says where the read stopped.

    Examples:
        >>> anchor({"seq": 4, "kind": "user"}), anchor({"seq": None, "kind": "read-problem"})
        ('seq-4', 'read-problem')
    """
    if row.get("anchor"):  # ``unique_anchors``' column, when the rows carry it
        return str(row["anchor"])
    if row["seq"] is None:
        return "read-problem" if row["kind"] == "read-problem" else "step"
    return f"seq-{row['seq']}"


def unique_anchors(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows with an ``anchor`` column: ``anchor``'s id, made unique on the page (``seq-4``, ``seq-4-2``...).

    An assistant step gives several rows one ``seq`` (its text, its reasoning, its tool calls): the
    first keeps ``seq-N`` (what a link to the step names), the next are ``seq-N-2``, ``seq-N-3``.
    ``aliases`` lists the other events a row holds (its ``seqs``: a tool call's ``tool/call``) whose
    ``seq-N`` no row takes: the page gives them ids too, so a link to any event lands on its row.

    Examples:
        >>> rows = pl.DataFrame({"seq": [4, 4, 5, None, None], "kind": ["a", "b", "c", "d", "d"]})
        >>> unique_anchors(rows)["anchor"].to_list()
        ['seq-4', 'seq-4-2', 'seq-5', 'step', 'step-2']
    """
    seen: dict[str, int] = {}
    taken: set[str] = set()
    out = []
    for seq, kind in zip(rows["seq"].to_list(), rows["kind"].to_list(), strict=True):
        base = anchor({"seq": seq, "kind": kind})
        count = seen.get(base, 0) + 1
        name = base if count == 1 else f"{base}-{count}"
        while name in taken:  # a base that itself looks like ``seq-N-2`` (never made by ``anchor``, but be sure)
            count += 1
            name = f"{base}-{count}"
        seen[base] = count
        taken.add(name)
        out.append(name)
    aliases: list[list[int]] = []
    for seqs in rows["seqs"].to_list() if "seqs" in rows.columns else [None] * rows.height:
        extra = [s for s in seqs or [] if s is not None and f"seq-{s}" not in taken]
        taken.update(f"seq-{s}" for s in extra)
        aliases.append(extra)
    return rows.with_columns(
        pl.Series("anchor", out, dtype=pl.String), pl.Series("aliases", aliases, dtype=pl.List(pl.Int64))
    )


def turn_table(rows: pl.DataFrame) -> list[dict[str, Any]]:
    """One entry per own turn, with what the page's turn table shows.

    Keys: ``turn``, ``anchor``, ``start_ms``, ``took`` (ms), ``steps``, ``calls``, ``failed`` (error
    rows), ``ended`` (the turn's end kind, ``open`` when it never ended).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.transcript import transcript
        >>> turns = turn_table(transcript(read_corpus("data/sample"), "auth-refactor"))
        >>> [(t["turn"], t["ended"], t["calls"]) for t in turns]
        [(1, 'completed', 1), (2, 'error', 1)]
    """
    turns = turn_summary(rows).to_dicts()
    for turn in turns:
        turn["anchor"] = anchor(rows.row(turn.pop("row"), named=True))
    return turns


def error_list(rows: pl.DataFrame) -> list[dict[str, Any]]:
    """Every error row (a failed tool result, a retried model call, an error turn end, the read problem).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.transcript import transcript
        >>> [e["what"] for e in error_list(transcript(read_corpus("data/sample"), "auth-refactor"))]
        ['turn ended: error: context length exceeded']
    """
    out = []
    for row in rows.filter(pl.col("is_error").fill_null(False)).iter_rows(named=True):
        kind = row["kind"]
        what = {
            "tool-result": f"tool {row['name'] or '?'} failed",
            "turn-end": "turn ended",
            "retry": "model call retried",
            "read-problem": "read stopped",
        }.get(kind, kind)
        code = (orjson.loads(row["detail"] or "{}").get("error") or {}) if kind == "tool-result" else {}
        code_text = code.get("code") if isinstance(code, dict) else None
        text = " ".join(clip(row["text"] or "", 160).split())
        out.append(
            {
                "anchor": anchor(row),
                "turn": row["turn"],
                "what": f"{what}{f' ({code_text})' if code_text else ''}: {text}" if text else what,
            }
        )
    return out


def facts_html(session: dict[str, Any]) -> str:
    """The header facts as an escaped table (each fact in its tone).

    Examples:
        >>> "<table" in facts_html({"outcome": "completed", "origin": None, "parent_session": None})
        True
    """
    outcome = session.get("outcome")

    def cell(label: str, text: str, tone: Tone) -> str:
        if label == "outcome":  # a badge in the outcome's colour (``views.palette``), then why
            why = text.removeprefix(outcome or "?").removeprefix(": ")
            return f"<td>{outcome_badge(outcome)}{escape(why)}</td>"
        return f'<td style="{TONE_STYLES[tone]}">{escape(text)}</td>'

    cells = "".join(f"<tr><th>{escape(fact[0])}</th>{cell(*fact)}</tr>" for fact in run_facts(session))
    return f'<table class="facts">{cells}</table>'


def turns_html(rows: pl.DataFrame, start: int | None) -> str:
    """The per-turn summary table with a jump link per turn, and the list of error rows with theirs.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.transcript import transcript
        >>> page = turns_html(transcript(read_corpus("data/sample"), "auth-refactor"), None)
        >>> 'href="#seq-' in page and "1 error" in page
        True
    """
    turns = turn_table(rows)
    errors = error_list(rows)
    parts = []
    if turns:
        cols = columns("turns")

        def cells(t: dict[str, Any]) -> dict[str, str]:
            return {
                "turn": f'<a href="#{t["anchor"]}">turn {escape(t["turn"])}</a>',
                "starts": escape(_offset(t["start_ms"], start)),
                "took": escape(human_duration(t["took"])),
                "steps": str(t["steps"]),
                "calls": str(t["calls"]),
                "errors": f'<span class="{"bad" if t["failed"] else ""}">{t["failed"]}</span>',
                "ended": outcome_badge(t["ended"], t["ended"]),
            }

        body = "".join(
            "<tr>"
            + "".join(
                f'<td class="{c.classes}" data-h="{escape(c.heading)}">{text}</td>'
                for c, text in zip(cols, [cells(t)[c.key] for c in cols], strict=True)
            )
            + "</tr>"
            for t in turns
        )
        head = "".join(f'<th class="{c.classes}">{escape(c.heading)}</th>' for c in cols)
        parts.append(
            f'<details class="turns" open><summary>{len(turns):,} turn{"s" if len(turns) != 1 else ""}</summary>'
            f'<div class="fit"><table class="turns">{fit_caption(cols)}<thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div></details>"
        )
    if errors:
        items = "".join(
            f'<li><a href="#{e["anchor"]}">{"turn " + escape(e["turn"]) + ": " if e["turn"] is not None else ""}'
            f"{escape(e['what'])}</a></li>"
            for e in errors
        )
        parts.append(
            f'<div class="errors" id="errors"><b>{len(errors):,} error{"s" if len(errors) != 1 else ""}</b> '
            f"(jump to each):<ol>{items}</ol></div>"
        )
    return "".join(parts)


def _offset(ms: int | None, start: int | None) -> str:
    if ms is None or start is None:
        return clock(ms)
    return "+" + human_duration(ms - start) if ms >= start else "-" + human_duration(start - ms)


def user_body(detail: dict[str, Any], fold: Callable[[str, bool], str]) -> tuple[str, str]:
    """A user message's source badge and its blocks drawn apart (reasoning and tool calls folded).

    Args:
        detail: the row's ``detail``.
        fold: draws one text block (``text``, whether monospace) as escaped HTML.

    Returns:
        (badge HTML, body HTML); the body is empty when the message has a single text block
        (the caller draws the row's text as usual).

    Examples:
        >>> badge, body = user_body({"source_name": "subagent notice", "source": {"sender": "c1"},
        ...     "blocks": [{"type": "text", "text": "a"}, {"type": "reasoning", "text": "<r>"}]},
        ...     lambda text, mono: text)
        >>> "subagent notice" in badge and "from c1" in badge, "<details" in body and "<r>" in body
        (True, True)
    """
    badge = ""
    if detail.get("source_name"):
        sender = (detail.get("source") or {}).get("sender")
        extra = f" from {clip(sender, 60)}" if sender else ""
        colour = {"human prompt": "#ddf4ff"}.get(detail["source_name"], "#eaeef2")
        badge = (
            f' <span class="src" style="background:{colour};border-radius:4px;padding:0 5px;font-size:11px">'
            f"{escape(detail['source_name'])}{escape(extra)}</span>"
        )
    blocks = detail.get("blocks")
    if not isinstance(blocks, list):
        return badge, ""
    parts = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else "block"
        text = block.get("text", "") if isinstance(block, dict) else ""
        if kind == "text":
            parts.append(f'<div class="blk">{fold(text, False)}</div>')
        else:
            name = f" {block.get('name')}" if kind == "tool-call" and block.get("name") else ""
            parts.append(
                f'<details class="blk"><summary style="cursor:pointer;color:#656d76">{escape(kind)}{escape(name)} · '
                f"{len(text):,} characters</summary>{fold(text, kind == 'tool-call')}</details>"
            )
    return badge, "".join(parts)
