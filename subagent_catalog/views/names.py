"""How every view names a session: its label, else its title, else its first prompt, with its short id beside it.

``session_name`` is the one rule, as plain text: the descriptor label (a subagent's), else the
run's name (``analysis.run_names``: its last ``session/title``, else its first human prompt),
whitespace folded and clipped; ``None`` when the session has neither (a view then shows its id).
``name_html`` is the same name as escaped HTML, bidi-isolated, with the session's short id beside
it: the whole id is in the page (a copy of the id copies all of it) and in its tooltip, the box
shows its first ``SHORT_ID`` characters (``NAME_CSS``). A 36-character UUID is never the title of a
row that has a name.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

import polars as pl

from subagent_catalog.analysis.run_names import clip_name, run_names
from subagent_catalog.analysis.text import clip
from subagent_catalog.catalog.tables import derived_store
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import escape

NAME_CLIP = 60
"""Characters of a name a table shows (the whole name, up to ``TIP_CLIP``, is in its tooltip)."""

TIP_CLIP = 300
"""Characters of a name or id a tooltip holds."""

SHORT_ID = 8
"""Characters of a long session id shown beside its name (the rest is in the page, clipped by CSS)."""

WHOLE_ID = 14
"""An id up to this long is shown whole (``run-webapp-1``); a longer one (a 36-character UUID) is shortened."""

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


def session_name(label: str | None, name: str | None, *, limit: int = NAME_CLIP) -> str | None:
    """A session's name as plain text: its label, else its title or first prompt (``name``), clipped.

    Args:
        label: the descriptor identity's label (``identity_label``; ``None`` for a root or a fork).
        name: the run's name from ``analysis.run_names`` (its title, else its first human prompt).
        limit: characters kept (the rest becomes ``…``).

    Returns:
        The name, or ``None`` when both are missing or blank (the caller shows the id).

    Examples:
        >>> session_name("fix the tests", "Fix CI")
        'fix the tests'
        >>> session_name(None, "Fix   the\\nflaky test")
        'Fix the flaky test'
        >>> session_name("  ", None) is None
        True
        >>> session_name(None, "x" * 100, limit=10)
        'xxxxxxxxx…'
    """
    for text in (label, name):
        if text is not None:
            found = clip_name(text, limit)
            if found is not None:
                return found
    return None


def short_id(session_id: str) -> str:
    """An id as shown beside a name: whole up to ``WHOLE_ID`` characters, else its first ``SHORT_ID`` and ``…``.

    Examples:
        >>> short_id("b4a2c0de-1111-4222-8333-944455556666")
        'b4a2c0de…'
        >>> short_id("run-webapp-1")
        'run-webapp-1'
    """
    return session_id if len(session_id) <= WHOLE_ID else session_id[:SHORT_ID] + "…"


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
        name: its title or first prompt (``analysis.run_names``).
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


def run_row_names(corpus: Corpus, tables: Iterable[pl.DataFrame]) -> dict[int, str]:
    """The names (title or first prompt) of the rows of run tables that have no label, by list order.

    Only those rows' logs are read (over an archive, its events table; without one, its root's logs).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> corpus = read_corpus("data/sample")
        >>> names = run_row_names(corpus, [run_summary(corpus).slowest])
        >>> names[8]  # run-webapp-1, a root: its first prompt
        'task 1 for run-webapp-1'
    """
    wanted = sorted(
        {
            order
            for table in tables
            for order, label in table.select("list_order", "label").iter_rows()
            if label is None and order is not None
        }
    )
    if not wanted or not corpus.events_available():
        return {}
    memo = _names_read(corpus)
    missing = [order for order in wanted if order not in memo]
    if missing:
        found = run_names(corpus, list_orders=missing)  # an archive's (or a window's): from its events files
        memo.update(zip(found["list_order"].to_list(), found["name"].to_list(), strict=True))
        if len(missing) >= KEEP_NAMES_FROM:
            _keep_names(corpus, memo)
    return {order: name for order in wanted if (name := memo.get(order)) is not None}


KEEP_NAMES_FROM = 50
"""Names read in one call from which every name read so far is kept with the corpus's frames cache (the report's
tree names up to 1,000 roots: a warm report reads none of their logs again). Fewer are not written: rewriting
the cache file for a few names (a click in a notebook) would cost more than reading them."""

_NAMES_FRAME = "run_names"
_NAMES_SCHEMA: dict[str, pl.DataType] = {"list_order": pl.Int64(), "name": pl.String()}

_NAMES_READ: dict[int, dict[int, str | None]] = {}


def _kept_names(corpus: Corpus) -> dict[int, str | None]:
    """The names a frames cache keeps for this corpus (``_keep_names``), by list order; none without one."""
    store = derived_store(corpus)
    frame = store.get(_NAMES_FRAME, _NAMES_SCHEMA, corpus) if store is not None else None
    return {} if frame is None else dict(frame.iter_rows())


def _keep_names(corpus: Corpus, memo: dict[int, str | None]) -> None:
    """Keep ``memo`` (list order -> name, or ``None``: the log has none) with the corpus's frames cache, if any.

    The frames cache keeps a derived frame only for the very frames it holds (the logs' fingerprints
    and the code's digest): a changed log or another version of the package reads the names anew.
    """
    store = derived_store(corpus)
    if store is not None:
        store.put(_NAMES_FRAME, pl.DataFrame(sorted(memo.items()), schema=_NAMES_SCHEMA, orient="row"), corpus)


def _names_read(corpus: Corpus) -> dict[int, str | None]:
    """The names already read from this corpus object's logs, by list order (a corpus is a snapshot).

    ``show --tree`` names every page's ancestors: without this, a chain 400 deep read each log
    400 times (the pages' time grew with the depth squared).
    """
    key = id(corpus)
    memo = _NAMES_READ.get(key)
    if memo is None:
        memo = _NAMES_READ[key] = _kept_names(corpus)
        weakref.finalize(corpus, _NAMES_READ.pop, key, None)
    return memo


def names_by_id(corpus: Corpus, ids: Iterable[str]) -> dict[str, tuple[str | None, str | None]]:
    """Each session id's label and name (title or first prompt: ``run_row_names``), for ``views.names``.

    An id no log carries is left out (a view shows it bare); of several logs with one id the first
    listed names it.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> names_by_id(read_corpus("data/sample"), ["run-webapp-1", "nowhere"])
        {'run-webapp-1': (None, 'task 1 for run-webapp-1')}
    """
    wanted = sorted({sid for sid in ids if sid is not None})
    if not wanted:
        return {}
    rows = (
        corpus.sessions.lazy()
        .filter(pl.col("session_id").is_in(wanted))
        .select("list_order", "session_id", pl.col("identity_label").alias("label"))
        .sort("list_order")
        .unique("session_id", keep="first", maintain_order=True)
        .collect()
    )
    names = run_row_names(corpus, [rows])
    return {sid: (label, names.get(order) if label is None else None) for order, sid, label in rows.iter_rows()}
