"""How every view names a session: its label, else its title, else its first prompt, with its short id beside it.

``session_name`` is the one rule, as plain text (``analysis.run_names``, where findings' messages name
sessions too): the descriptor label (a subagent's), else the run's name (the ``name`` column the read
gives: its last ``session/title``, else its first human prompt), whitespace folded and clipped; ``None``
when the session has neither (a view then shows its id). ``name_text`` is it with the short id beside
it, ``name (0c9b39da…)``, for text outputs.
``name_html`` is the same name as escaped HTML, bidi-isolated, with the session's short id beside
it: the whole id is in the page (a copy of the id copies all of it) and in its tooltip, the box
shows its first ``SHORT_ID`` characters (``NAME_CSS``). A 36-character UUID is never the title of a
row that has a name.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from subagent_catalog.analysis.run_names import SHORT_ID, SHOWN_CLIP, WHOLE_ID, name_text, session_name, short_id
from subagent_catalog.analysis.text import clip
from subagent_catalog.catalog.source import source_reads
from subagent_catalog.frames.display import escape
from subagent_catalog.frames.source import Source

__all__ = ["NAME_CLIP", "NAME_CSS", "SHORT_ID", "TIP_CLIP", "name_html", "name_text", "names_by_id", "session_name"]
__all__ += ["short_id"]

NAME_CLIP = SHOWN_CLIP
"""Characters of a name a table shows (the whole name, up to ``TIP_CLIP``, is in its tooltip)."""

TIP_CLIP = 300
"""Characters of a name or id a tooltip holds."""

NAME_CSS = (
    ".nm{display:inline-flex;align-items:baseline;gap:0 6px;max-width:100%;min-width:0;flex-wrap:wrap}"
    ".nm .nm-t{overflow-wrap:anywhere;min-width:0}"
    ".nm .nm-t.nm-run{font-style:italic}"
    ".nm code.nm-id,code.nm-id{display:inline-block;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;"
    "vertical-align:bottom;color:#656d76;font-size:11.5px;max-width:100%;user-select:all;cursor:text}"
    f".nm code.nm-id.nm-clip{{max-width:{SHORT_ID + 1}ch}}"
    ".nm code.nm-id.nm-only{color:inherit}.nm code.nm-id.nm-only.nm-clip{max-width:24ch}"
    ".tl-name .nm{flex-wrap:nowrap}.tl-name .nm>:first-child{overflow:hidden;text-overflow:ellipsis;"
    "white-space:nowrap;min-width:0}.tl-name .nm code.nm-id{flex:none}"
)
"""The styles of ``name_html`` (class-scoped under ``.nm``), for a page's ``<style>``."""


def name_html(
    session_id: str | None,
    *,
    label: str | None = None,
    name: str | None = None,
    limit: int = NAME_CLIP,
    href: str | None = None,
) -> str:
    """A session named in HTML: its escaped name (``session_name``), then its short id (the whole id on hover).

    The id element holds the whole id (a copy copies it); ``NAME_CSS`` shows its first
    ``SHORT_ID`` characters. A session without a name shows its id alone (wider); one
    without an id shows ``(no id)``. A name from the title or prompt (no label) is set in italics.

    Args:
        session_id: the session's id (``None``: the log has none).
        label: its descriptor label.
        name: its title or first prompt (the ``name`` column).
        limit: characters of the name shown.
        href: a link for the name (already checked: ``transcript_view.safe_href``).

    Examples:
        >>> name_html("b4a2c0de-1111-4222-8333-944455556666", label="<b>fix</b>")  # doctest: +NORMALIZE_WHITESPACE
        '<span class="nm"><bdi class="nm-t" title="&lt;b&gt;fix&lt;/b&gt;">&lt;b&gt;fix&lt;/b&gt;</bdi>
        <code class="nm-id nm-clip"
        title="b4a2c0de-1111-4222-8333-944455556666">b4a2c0de-1111-4222-8333-944455556666</code></span>'
        >>> name_html("s1")
        '<span class="nm"><code class="nm-id nm-only" title="s1">s1</code></span>'
    """
    text = session_name(label, name, limit=limit)
    whole_id = escape(clip(session_id, TIP_CLIP)) if session_id is not None else ""
    ident = escape(clip(session_id, 200)) if session_id is not None else "(no id)"
    clipped = " nm-clip" if session_id is not None and len(session_id) > WHOLE_ID else ""
    if text is None:
        inner = f'<code class="nm-id nm-only{clipped}" title="{whole_id}">{ident}</code>'
        if href is not None:
            inner = f'<a href="{escape(href)}">{inner}</a>'
        return f'<span class="nm">{inner}</span>'
    whole = session_name(label, name, limit=TIP_CLIP) or text
    kind = "nm-t" if session_name(label, None) is not None else "nm-t nm-run"
    shown = f'<bdi class="{kind}" title="{escape(whole)}">{escape(text)}</bdi>'
    if href is not None:
        shown = f'<a href="{escape(href)}">{shown}</a>'
    ident_html = f' <code class="nm-id{clipped}" title="{whole_id}">{ident}</code>' if session_id is not None else ""
    return f'<span class="nm">{shown}{ident_html}</span>'


@source_reads
def names_by_id(source: Source, ids: Iterable[str | None]) -> dict[str, tuple[str | None, str | None]]:
    """Each session id's label and name (its title or first prompt: the ``name`` column), for ``session_name``.

    No log is read. An id no log carries is left out (a view shows it bare); of several logs with
    one id the first listed names it.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> names_by_id(read_corpus("data/sample"), ["run-webapp-1", "nowhere"])
        {'run-webapp-1': (None, 'task 1 for run-webapp-1')}
    """
    wanted = sorted({sid for sid in ids if sid is not None})
    if not wanted:
        return {}
    rows = source.collect(
        source.table("sessions", ["list_order", "session_id", "identity_label", "name"])
        .filter(pl.col("session_id").is_in(wanted))
        .sort("list_order")
        .unique("session_id", keep="first", maintain_order=True)
        .select("session_id", "identity_label", "name")
    )
    return {sid: (label, name if label is None else None) for sid, label, name in rows.iter_rows()}
