"""A session's transcript as escaped HTML (a page, or a fragment for the widget) and as Markdown.

The rows come from ``analysis.transcript``; every text from the log is
escaped (HTML) or fenced (Markdown), so a log cannot inject markup. Rows of
a fork's seed (its parent's history) are collapsed into one block.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl

from subagent_catalog.analysis.find_session import find_session
from subagent_catalog.analysis.text import utf8_length
from subagent_catalog.analysis.transcript import transcript
from subagent_catalog.analysis.waterfall import waterfall
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.source import Source
from subagent_catalog.frames.units import clock, human_count, human_duration, token_label
from subagent_catalog.views.children_table import (
    CHILDREN_CSS,
    CHILDREN_PER_PAGE,
    SORT_JS,
    SORT_JS_HASH,
    children_rows,
    children_table,
)
from subagent_catalog.views.findings_box import FINDINGS_BOX_CSS, findings_box
from subagent_catalog.views.names import NAME_CSS, name_html, names_by_id, session_name, short_id
from subagent_catalog.views.page_names import page_file as page_file
from subagent_catalog.views.page_names import page_link as page_link
from subagent_catalog.views.page_names import safe_href
from subagent_catalog.views.palette import OUTCOME_BADGE_CSS, outcome_colour
from subagent_catalog.views.site_links import NO_PAGE_CSS, no_page_mark
from subagent_catalog.views.table_columns import FIT_CSS
from subagent_catalog.views.transcript_parts import anchor, facts_html, turns_html, unique_anchors, user_body

TEXT_HEAD = 1_200
"""Characters of a long text shown before the rest is folded away."""

TEXT_LINES = 24
"""Lines of a long text shown before the rest is folded away."""

TEXT_CLIP = 100_000
"""Characters of one text a page holds (shown and folded); past it, a marker says how many bytes are left out
and how to get the whole text as a file (``transcript_text``, ``subagent-catalog show ... --text SEQ``)."""

PAGE_TEXT = 20_000_000
"""Characters of text one page holds in all: once spent, each further text keeps its first ``TEXT_HEAD``."""

MAX_CHILD_LINKS = CHILDREN_PER_PAGE
"""Children a page's table lists (``views.children_table``); the rest are counted, and listed on further
pages by ``show --tree``."""

NAMED_ROWS = 400
"""Sessions without a label in a page's timeline whose logs are read for a name (the rest show their id)."""

TREE_DEPTH_DRAWN = 2
"""Levels below a page's session whose bars its timeline draws once its tree has more than ``MAX_BARS``
sessions (each page draws its own), so the pages of a run grow with its sessions, not its depth squared."""

TREE_MAX_DRAWN = 1_000
"""Bars a page's timeline draws at most (the nearest levels first); the curve and the counts cover all."""


class TextRoom:
    """What is left of a page's text budget (characters), spent as texts are rendered.

    Examples:
        >>> room = TextRoom(10)
        >>> room.take("abcdefghijkl", 4), room.left
        (10, 0)
    """

    def __init__(self, left: int) -> None:
        self.left = left

    def take(self, text: str, head: int) -> int:
        """How many characters of ``text`` to render (at least ``head``), and spend them."""
        size = min(len(text), max(head, self.left))
        self.left = max(0, self.left - size)
        return size


@dataclass
class SessionLinks:
    """Who a session's parent and children are (ids, and whether the parent's log is in the corpus)."""

    parent: str | None = None
    parent_found: bool = False
    children: list[str] = field(default_factory=list)


def session_links(corpus: Corpus, session: dict[str, Any]) -> SessionLinks:
    """The parent and the children (logs naming it as ``parentSession``, in list order) of a session.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import header, write_session
        >>> root = tempfile.mkdtemp()
        >>> _ = write_session(root, header("p", created_at=1), [], "none")
        >>> _ = write_session(root, header("c", created_at=2, parent="p", subagent=True), [], "none")
        >>> corpus = read_corpus(root)
        >>> parent = corpus.sessions.filter(pl.col("session_id") == "p").row(0, named=True)
        >>> session_links(corpus, parent).children
        ['c']
    """
    sessions = corpus.sessions
    parent = session["parent_session"]
    found = parent is not None and sessions.filter(pl.col("session_id") == parent).height > 0
    children: list[str] = []
    if session["session_id"] is not None:
        rows = sessions.filter(pl.col("parent_session") == session["session_id"]).sort("list_order")
        children = [value for value in rows["session_id"].to_list() if value is not None]
    return SessionLinks(parent, found, children)


def _clock(ms: int | None) -> str:
    return clock(ms, precision="millisecond")


def _offset(ms: int | None, start: int | None) -> str:
    if ms is None or start is None:
        return ""
    seconds = (ms - start) / 1000
    sign = "-" if seconds < 0 else "+"
    seconds = abs(seconds)
    minutes, rest = divmod(seconds, 60)
    return f"{sign}{int(minutes)}:{rest:06.3f}" if minutes else f"{sign}{rest:.3f} s"


def _pretty(text: str | None) -> str:
    """JSON arguments indented when they parse; any other text as it is."""
    if not text:
        return text or ""
    try:
        return orjson.dumps(orjson.loads(text), option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONDecodeError:
        return text


def _folded(text: str, *, limit: int, mono: bool, more: int = 0, marker: str = "") -> str:
    """A text's first ``limit`` characters (or ``TEXT_LINES`` lines), the rest folded, and a clip marker.

    ``more`` is how many UTF-8 bytes of the text are not in ``text`` at all;
    ``marker`` says how to get them (escaped HTML).
    """
    font = "font-family:ui-monospace,monospace;font-size:12px;" if mono else ""
    style = f"white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0 0;{font}"
    clipped = (
        f'<div class="sc-clipped" style="color:#9a6700;font-size:12px;margin:2px 0">… {more:,} more bytes not shown'
        f"{marker}</div>"
        if more > 0
        else ""
    )
    cut = min(len(text), limit)
    lines_end = -1
    for _ in range(TEXT_LINES):
        lines_end = text.find("\n", lines_end + 1)
        if lines_end < 0:
            break
    if 0 <= lines_end < cut:
        cut = lines_end
    if cut >= len(text):
        return f'<div style="{style}">{escape(text)}</div>{clipped}'
    return (
        f'<div style="{style}">{escape(text[:cut])}</div><details><summary style="cursor:pointer;color:#656d76">'
        f"{len(text) - cut:,} more characters</summary>"
        f'<div style="{style}">{escape(text[cut:])}</div></details>{clipped}'
    )


def _shown(row: dict[str, Any], detail: dict[str, Any], room: TextRoom | None, head: int) -> tuple[str, int]:
    """The part of a row's text a page renders, and how many bytes of the whole text it leaves out."""
    text = row["text"] or ""
    size = room.take(text, head) if room is not None else len(text)
    whole = detail.get("text_bytes")
    if size >= len(text) and not isinstance(whole, int):
        return text, 0
    shown = text[:size]
    total = whole if isinstance(whole, int) else utf8_length(text)
    return shown, max(0, total - utf8_length(shown))


_COLOURS = {
    "user": ("#0969da", "#f3f8ff"),
    "assistant": ("#2da44e", "#f6fff8"),
    "reasoning": ("#8c959f", "#fafbfc"),
    "tool-call": ("#bf8700", "#fffbf0"),
    "tool-result": ("#bf8700", "#ffffff"),
    "descriptor": ("#8250df", "#fbf8ff"),
    "retry": ("#cf222e", "#fff5f5"),
    "read-problem": ("#cf222e", "#fff5f5"),
}


def _title(row: dict[str, Any], detail: dict[str, Any]) -> str:
    kind = row["kind"]
    name = row["name"]
    if kind == "tool-call":
        return f"→ call {name or '?'}"
    if kind == "tool-result":
        parts = [f"← result of {name or '?'}"]
        if "duration_ms" in detail:
            parts.append(human_duration(detail["duration_ms"]))
        if row["is_error"]:
            code = (detail.get("error") or {}).get("code") if isinstance(detail.get("error"), dict) else None
            parts.append(f"failed{f' ({code})' if code else ''}")
        if detail.get("repeat"):
            parts.append("a second result for this call")
        return " · ".join(parts)
    if kind == "assistant":
        model = detail.get("model")
        return f"assistant{f' · {model}' if model else ''}"
    if kind == "descriptor":
        return f"descriptor · {name or 'no mode'}"
    if kind == "retry":
        return "model call failed, retried"
    if kind == "read-problem":
        verdict = detail.get("verdict")
        if verdict == "torn-tail":
            return "the last line is torn (a cut-off write): it is not shown"
        if verdict == "prefix":
            return "the log is read up to a damaged line: the rest is not shown"
        return "upstream cannot read this log"
    return str(kind)


_STARTED = re.compile(r"started subagent (\S+)\s*\Z")
"""A background start's tool result: ``started subagent <id>`` (``interop.otel_session`` reads it too)."""


def _child_named(kind: str, text: str | None, detail: dict[str, Any]) -> str | None:
    """The child a row names: a start's (``started subagent <id>``), or a subagent notice's sender."""
    if kind == "tool-result" and text:
        found = _STARTED.search(text[-2_000:])
        return found.group(1) if found else None
    sender = (detail.get("source") or {}).get("sender") if detail.get("source_name") == "subagent notice" else None
    return sender if kind == "user" and isinstance(sender, str) and sender else None


def _mentioned(row: dict[str, Any], detail: dict[str, Any], mention: Callable[[str], str]) -> str:
    """The child a row names, as ``mention`` draws it: a start's child, or a notice's sender."""
    child = _child_named(row["kind"], row["text"], detail)
    if child is None:
        return ""
    what = "started" if row["kind"] == "tool-result" else "from"
    return f' <span class="mention" style="font-size:12px">{what} {mention(child)}</span>'


def _row_html(row: dict[str, Any], **options: Any) -> str:
    """A row's HTML, after an empty element per alias id (``unique_anchors``' ``aliases``) when it has anchors."""
    aliases = row.get("aliases") if options.get("anchors") else None
    ids = "".join(f'<span id="seq-{int(s)}" class="alias"></span>' for s in aliases or [])
    return ids + _row_body(row, **options)


def _row_body(
    row: dict[str, Any],
    *,
    start: int | None,
    limit: int,
    room: TextRoom | None = None,
    hint: Callable[[int | None], str] | None = None,
    anchors: bool = False,
    mention: Callable[[str], str] | None = None,
) -> str:
    detail: dict[str, Any] = orjson.loads(row["detail"]) if row["detail"] else {}
    when = f'<span title="{escape(_clock(row["time_ms"]))}">{escape(_offset(row["time_ms"], start))}</span>'
    where = f"seq {row['seq']}" if row["seq"] is not None else ""
    meta = f'<span style="color:#656d76;font-size:11px;float:right">{when} {escape(where)}</span>'
    ident = f' id="{anchor(row)}"' if anchors else ""
    kind = row["kind"]
    if kind == "turn-start":
        return (
            f'<div{ident} style="margin:14px 0 4px;border-bottom:2px solid #d8dee4;font-weight:600;font-size:13px">'
            f"{escape(row['text'])} {meta}</div>"
        )
    if kind in ("turn-end", "event"):
        colour = "#cf222e" if row["is_error"] else "#656d76"
        label = "turn ended: " if kind == "turn-end" else f"{row['event_type']}: "
        text = row["text"] or ""
        short = text if len(text) <= 200 else text[:200] + "…"
        weight = ";font-weight:600;background:#fff5f5" if row["is_error"] else ""
        if kind == "turn-end" and row["name"]:  # a turn's end in its outcome's colour (an edge, as the steps')
            colour, weight = "#1f2328", f";border-left:4px solid {outcome_colour(row['name'])};padding-left:6px"
            weight += ";font-weight:600" if row["is_error"] else ""
        return (
            f'<div{ident} style="color:{colour};font-size:12px;margin:3px 0;overflow-wrap:anywhere{weight}">{meta}'
            f'{escape(label)}<span style="font-family:ui-monospace,monospace">{escape(short)}</span></div>'
        )
    edge, fill = _COLOURS.get(kind, ("#8c959f", "#ffffff"))
    if row["is_error"]:
        edge, fill = "#cf222e", "#fff5f5"
    badges = []
    if row["partial"]:
        badges.append(f"partial: {detail.get('partial', 'no assistant/message')}")
    if detail.get("interrupted"):
        badges.append("interrupted")
    if kind == "tool-call" and "started_ms" not in detail:
        badges.append("requested, never started")
    badge = "".join(
        f' <span style="background:#fff8c5;border-radius:4px;padding:0 4px;font-size:11px">{escape(b)}</span>'
        for b in badges
    )
    text, more = _shown(row, detail, room, limit)
    mono = kind in ("tool-call", "tool-result", "read-problem")
    marker = hint(row["seq"]) if hint is not None and more else ""
    body = _folded(
        _pretty(text) if kind == "tool-call" and not more else text, limit=limit, mono=mono, more=more, marker=marker
    )
    if kind == "user":
        source, blocks = user_body(
            detail,
            lambda part, fixed: _folded(part[: room.take(part, limit)] if room else part, limit=limit, mono=fixed),
        )
        badge += source
        if blocks:
            body = blocks + (_folded("", limit=limit, mono=False, more=more, marker=marker) if more else "")
    if kind == "reasoning":
        body = f"<details><summary style='cursor:pointer'>{len(text):,} characters</summary>{body}</details>"
    if mention is not None:
        badge += _mentioned(row, detail, mention)
    usage = detail.get("usage")
    foot = ""
    if isinstance(usage, dict):
        counts = ", ".join(f"{token_label(k)} {human_count(v)}" for k, v in usage.items() if type(v) is int)
        foot = f'<div style="color:#656d76;font-size:11px">step tokens: {escape(counts)}</div>'
    return (
        f'<div{ident} style="border-left:4px solid {edge};background:{fill};padding:4px 8px;margin:4px 0;'
        f'border-radius:0 6px 6px 0">{meta}<b style="font-size:12px">{escape(_title(row, detail))}</b>{badge}'
        f"{body}{foot}</div>"
    )


def transcript_fragment(
    rows: pl.DataFrame,
    *,
    max_rows: int | None = None,
    limit: int = TEXT_HEAD,
    budget: int = PAGE_TEXT,
    hint: Callable[[int | None], str] | None = None,
    anchors: bool = False,
    start: int | None = None,
    mention: Callable[[str], str] | None = None,
) -> str:
    """The transcript rows as one escaped HTML ``<div>`` with inline styles (for a widget or a page).

    Args:
        rows: ``transcript`` rows (clipped with ``transcript(..., clip=...)`` to bound the work).
        max_rows: show at most this many rows (a note says how many more there are).
        limit: characters of a long text shown before the rest is folded away.
        budget: characters of text in all; past it, each text keeps its first ``limit``.
        hint: the escaped HTML telling how to get a step's whole text (by its ``seq``),
            shown after "… N more bytes not shown" where a text is clipped.
        anchors: give each row an ``id`` (``seq-N``; ``transcript_parts.anchor``; unique when the rows
            carry ``transcript_parts.unique_anchors``' column) for jump links (a page: one transcript;
            a notebook may show several).
        start: the time (ms) offsets are counted from (default the rows' first own time; give the
            whole transcript's when ``rows`` are a part of it).
        mention: draws a child session a row names (``started subagent <id>``, a subagent notice's
            sender) as escaped HTML, linked to its page when there is one.

    Examples:
        >>> from subagent_catalog.analysis.transcript import TRANSCRIPT_SCHEMA
        >>> rows = pl.DataFrame([{"seq": 1, "seqs": [1], "time_ms": 5, "kind": "user", "text": "<hi>",
        ...                       "partial": False, "in_seed": False}], schema=TRANSCRIPT_SCHEMA)
        >>> "&lt;hi&gt;" in transcript_fragment(rows)
        True
    """
    if start is None:
        start = rows.filter(~pl.col("in_seed"))["time_ms"].min() if rows.height else None  # type: ignore[assignment]
    shown = rows if max_rows is None else rows.head(max_rows)
    records = shown.to_dicts()
    seed = [r for r in records if r["in_seed"]]
    own = [r for r in records if not r["in_seed"]]
    parts = ['<div style="font-family:system-ui,sans-serif;font-size:13px;line-height:1.4">']
    first = start if isinstance(start, int) else None
    row = functools.partial(
        _row_html, start=first, limit=limit, room=TextRoom(budget), hint=hint, anchors=anchors, mention=mention
    )
    if seed:
        parts.append(
            '<details style="margin:4px 0;color:#57606a"><summary style="cursor:pointer">'
            f"{len(seed):,} steps inherited from the parent (the fork's seed)</summary>"
            f"{''.join(map(row, seed))}</details>"
        )
    parts.extend(map(row, own))
    if not records:
        parts.append('<div style="color:#656d76">(no events)</div>')
    if max_rows is not None and rows.height > max_rows:
        parts.append(
            f'<div style="color:#656d76;margin-top:6px">{rows.height - max_rows:,} more steps not shown '
            "(all of them: transcript(corpus, id) or subagent-catalog show)</div>"
        )
    parts.append("</div>")
    return "".join(parts)


def _mentioned_ids(rows: pl.DataFrame) -> list[str]:
    """The children a transcript's rows name (``started subagent <id>`` results, subagent notices' senders)."""
    found = (
        _child_named(kind, text, orjson.loads(detail) if kind == "user" else {})
        for kind, text, detail in rows.select("kind", "text", "detail").iter_rows()
        if (kind == "tool-result" and text and "started subagent" in text)
        or (kind == "user" and detail and "subagent notice" in detail)
    )
    return [child for child in found if child is not None]


def _load(corpus: Corpus, session_id: str, path: str | None) -> tuple[dict[str, Any], pl.DataFrame, SessionLinks]:
    session = find_session(corpus, session_id, path=path)
    rows = transcript(corpus, session_id, path=session["path"], clip=TEXT_CLIP)
    return session, rows, session_links(corpus, session)


def show_hint(root: str, session_id: str) -> Callable[[int | None], str]:
    """The clip marker's advice on a page: the command that writes one step's whole text to a file.

    Examples:
        >>> print(show_hint("/r", "s1")(42))
         (<code>subagent-catalog show /r s1 --text 42 -o FILE</code> writes the whole text)
    """

    def hint(seq: int | None) -> str:
        if seq is None:
            return ""
        command = f"subagent-catalog show {shlex.quote(root)} {shlex.quote(session_id)} --text {seq} -o FILE"
        return f" (<code>{escape(command)}</code> writes the whole text)"

    return hint


@functools.cache
def page_template(name: str) -> Any:
    """A template of ``views/templates`` (the environment is made once: autoescaped, undefined names an error).

    Examples:
        >>> page_template("transcript.html.j2").name
        'transcript.html.j2'
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("subagent_catalog.views", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template(name)


def transcript_page(
    corpus: Source,
    session_id: str,
    *,
    path: str | None = None,
    link: Callable[[str], str | None] | None = None,
    tree: pl.DataFrame | None = None,
    more_children: str | None = None,
    found: pl.DataFrame | None = None,
    home: tuple[str, str] | None = None,
) -> str:
    """A self-contained HTML page of one session's transcript: run facts, turns, errors, timeline, steps.

    The header gives the run facts (outcome, identity, time split, tokens with cache, cost), a
    table of turns and a list of the error rows, each linked to its step; a session with
    children gets the timeline of its tree (``views.timeline_view``). A log upstream cannot
    read shows the part before the damage, then where and why the read stopped.

    Args:
        corpus: a read corpus or an opened archive (``store.source.Source``).
        session_id: the session to show.
        path: which log, when several files carry the same session id.
        link: the ``href`` of another session's page (``page_link`` gives ``ID.html``), or
            ``None`` when it has none: give it when those pages exist (``show --tree`` writes
            them); by default other sessions are named, not linked. An ``href`` with a scheme
            other than ``http``, ``https`` or ``file`` (``javascript:``...) is not linked.
        tree: the ``tree_timeline`` rows of the tree below this session (default: computed
            when the session has children). Its timeline draws at most ``TREE_MAX_DRAWN``
            bars, and only those ``TREE_DEPTH_DRAWN`` levels down past ``MAX_BARS`` sessions.
        more_children: the ``href`` of the page listing the children past the first
            ``MAX_CHILD_LINKS`` (``show --tree`` writes it); without it they are counted.
        found: the corpus's findings (``analysis.findings.findings``): this session's are listed
            under its facts, each linked to its step; ``None`` lists none.
        home: the ``href`` and name of the site's start page the page links back to (``report --site``:
            ``("index.html", "the report")``); with ``link``, a parent or child without a page is
            marked "(no page)".

    Raises:
        SessionLookupError: no log (or several logs) with this id.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1"); log.turn_start(); log.user("<script>"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> page = transcript_page(read_corpus(root), "s1")
        >>> "&lt;script&gt;" in page and "<script>" not in page
        True
    """
    corpus = corpus.to_corpus()  # a corpus, or an archive's frames
    from markupsafe import Markup

    from subagent_catalog.analysis.timeline import tree_timeline
    from subagent_catalog.views.timeline_view import TIMELINE_CSS, timeline_html
    from subagent_catalog.views.waterfall_view import WATERFALL_CSS, waterfall_html

    session, rows, links = _load(corpus, session_id, path)
    rows = unique_anchors(rows)  # one id per row: an assistant step's rows share a seq

    def href(other: str) -> str | None:
        target = link(other) if link is not None else None
        return safe_href(target) if target else None

    listed = links.children[:MAX_CHILD_LINKS]
    timeline = ""
    unlabelled: list[str] = []
    if links.children and session["session_id"] is not None:
        if tree is None:
            tree = tree_timeline(corpus, session["session_id"])
        unlabelled = tree.filter(pl.col("label").is_null())["session_id"].drop_nulls().head(NAMED_ROWS).to_list()
    sid = session["session_id"]
    mentioned = _mentioned_ids(rows)
    named = names_by_id(corpus, [s for s in (sid, links.parent, *listed, *unlabelled, *mentioned) if s is not None])

    def named_html(other: str | None, target: str | None = None, *, mark: bool = False) -> str:
        label, name = named.get(other, (None, None)) if other is not None else (None, None)
        shown = name_html(other, label=label, name=name, href=target)
        return f"{shown} {no_page_mark()}" if mark and link is not None and target is None else shown

    if tree is not None and links.children and sid is not None:

        def label(row: dict[str, Any]) -> str:
            other = row.get("session_id")
            target = href(other) if other is not None and row.get("depth") else None
            known = named.get(other, (None, None)) if other is not None else (None, None)
            return name_html(other, label=row.get("label") or known[0], name=known[1], href=target)

        caption = f"this session and the {tree.height - 1:,} below it"
        timeline = timeline_html(
            tree, label=label, caption=caption, depth_drawn=TREE_DEPTH_DRAWN, max_drawn=TREE_MAX_DRAWN
        )
    start_value = rows.filter(~pl.col("in_seed"))["time_ms"].min() if rows.height else None
    start = start_value if isinstance(start_value, int) else None
    where = [
        ("project", session["project_dir"]),
        ("path", session["path"]),
        ("created", _clock(session["created_at_ms"])),
    ]
    parent_href = href(links.parent) if links.parent is not None and links.parent_found else None
    own_label, own_name = named.get(sid, (session["identity_label"], None)) if sid is not None else (None, None)
    title = session_name(own_label, own_name)
    page: str = page_template("transcript.html.j2").render(
        session_id=sid or "(no id)",
        title=(f"{title} · {short_id(sid)}" if sid is not None else title) if title else f"Session {sid or '(no id)'}",
        heading=Markup(named_html(sid)) if title else None,
        label=session["identity_label"] if title is None else None,
        fit_css=Markup(
            FIT_CSS + NAME_CSS + CHILDREN_CSS + FINDINGS_BOX_CSS + OUTCOME_BADGE_CSS + NO_PAGE_CSS + WATERFALL_CSS
        ),
        parent_html=Markup(named_html(links.parent, parent_href, mark=links.parent_found)),
        home=(safe_href(home[0]), home[1]) if home is not None else None,
        where=[(name, text) for name, text in where if text],
        facts=Markup(facts_html(session)),
        findings=Markup(
            findings_box(found.filter(pl.col("list_order") == session["list_order"]), rows) if found is not None else ""
        ),
        timeline_css=Markup(TIMELINE_CSS),
        linked=link is not None,
        root=corpus.root,
        parent=links.parent,
        parent_href=parent_href,
        parent_found=links.parent_found,
        children=Markup(children_table(children_rows(corpus, listed), names=named, href=href, marked=link is not None))
        if listed
        else "",
        children_shown=len(listed),
        sort_js=Markup(SORT_JS),
        script_hash=SORT_JS_HASH,
        children_total=len(links.children),
        more_children=safe_href(more_children) if more_children else None,
        timeline=Markup(timeline),
        waterfall=Markup(waterfall_html(waterfall(rows), start=start)),
        turns=Markup(turns_html(rows, start)),
        steps=rows.height,
        body=Markup(
            transcript_fragment(
                rows,
                hint=show_hint(corpus.root, session["session_id"]),
                anchors=True,
                mention=lambda child: named_html(child, href(child)),
            )
        ),
    )
    return page
