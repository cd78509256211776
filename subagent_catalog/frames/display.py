"""Rich HTML for notebooks: the ``Corpus`` summary and escaped tables of frames.

Everything here returns a self-contained HTML fragment (inline styles, no
scripts, nothing fetched) in which every value taken from a corpus is
HTML-escaped: session ids, labels, paths and messages are untrusted text.
``Corpus._repr_html_`` (in ``subagent_catalog.frames.corpus``) calls ``corpus_html``; the widgets use
``table_html`` and ``catalog_html`` for their tables.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from typing import Any, Protocol

import polars as pl

from subagent_catalog.frames.costs import known_costs
from subagent_catalog.frames.units import TOKEN_LABELS, human_count, human_duration, partial_cost
from subagent_catalog.read.jsvalue import frame_text

MAX_CELL_CHARS = 160
VERDICTS = ("ok", "torn-tail", "prefix", "failed", "skipped")

BOX = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.4"
"""The box every notebook display draws in (the font of JupyterLab's own HTML)."""
_TABLE = "border-collapse:collapse;margin:4px 0 8px 0;font-size:12px"
_TH = "text-align:left;padding:2px 8px;border-bottom:1px solid #999;background:#f2f2f2;white-space:nowrap"
_TD = "text-align:left;padding:2px 8px;border-bottom:1px solid #e2e2e2;vertical-align:top;font-family:monospace"
_BANNER = "border:2px solid #b00020;background:#fdecee;color:#5f0010;padding:6px 10px;margin:4px 0;border-radius:4px"
_DIAGNOSTIC_ROW = "background:#fff4e5"
_ERROR_ROW = "background:#fdecee"


class CorpusLike(Protocol):
    """What the corpus summary reads of a corpus (a ``Corpus``)."""

    @property
    def root(self) -> str:
        """The corpus's ``root``."""

    @property
    def compression(self) -> str:
        """The corpus's ``compression``."""

    @property
    def sessions(self) -> pl.DataFrame:
        """The corpus's ``sessions``."""

    @property
    def problems(self) -> pl.DataFrame:
        """The corpus's ``problems``."""

    @property
    def listing_error(self) -> str | None:
        """The corpus's ``listing_error``."""

    @property
    def listing_error_path(self) -> str | None:
        """The corpus's ``listing_error_path``."""


NOTEBOOK_HTML: dict[str, Callable[[Any], str]] = {}
"""The notebook display of a result type an upper layer formats (by class name): the package facade fills it
(``Comparison``: ``views.compare_display.comparison_html``), so ``analysis`` hands its result to ``views``
without importing them."""


def notebook_html(value: Any) -> str | None:
    """The notebook HTML of ``value`` from ``NOTEBOOK_HTML`` (``None``: no display registered; Jupyter shows its repr).

    Examples:
        >>> class Thing: ...
        >>> notebook_html(Thing()) is None
        True
    """
    show = NOTEBOOK_HTML.get(type(value).__name__)
    return None if show is None else show(value)


def escape(value: Any) -> str:
    """A value as escaped HTML text (``None`` shows as an empty string).

    Lone surrogates (possible in JavaScript strings) become U+FFFD so the
    result is always valid UTF-8.

    Examples:
        >>> escape('<b id="x">&</b>')
        '&lt;b id=&quot;x&quot;&gt;&amp;&lt;/b&gt;'
        >>> escape(None), escape(3)
        ('', '3')
    """
    if value is None:
        return ""
    text = value if isinstance(value, str) else _plain(value)
    return html.escape(frame_text(text) or "", quote=True)


def _plain(value: Any) -> str:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(item) for item in value)
    if isinstance(value, pl.Series):
        return ", ".join(_plain(item) for item in value.to_list())
    return str(value)


def _cell(value: Any) -> str:
    text = "" if value is None else value if isinstance(value, str) else _plain(value)
    if len(text) > MAX_CELL_CHARS:
        return f'<span title="{escape(text)}">{escape(text[: MAX_CELL_CHARS - 1])}…</span>'
    return escape(text)


def table_html(
    frame: pl.DataFrame,
    *,
    max_rows: int = 50,
    columns: Sequence[str] | None = None,
    caption: str | None = None,
    row_styles: Sequence[str] | None = None,
) -> str:
    """An escaped HTML table of a frame's first rows.

    Args:
        frame: any Polars frame.
        max_rows: rows shown; a note says how many more there are.
        columns: the columns to show (default: all).
        caption: a heading shown above the table (escaped).
        row_styles: a CSS ``style`` per shown row (optional).

    Examples:
        >>> html_text = table_html(pl.DataFrame({"id": ["<x>"], "n": [1]}))
        >>> "&lt;x&gt;" in html_text and "<x>" not in html_text
        True
        >>> "2 more rows" in table_html(pl.DataFrame({"n": [1, 2, 3]}), max_rows=1)
        True
    """
    names = list(columns) if columns is not None else frame.columns
    shown = frame.select(names).head(max_rows) if names else frame.head(0)
    parts = [f'<div style="{BOX}">']
    if caption is not None:
        parts.append(f'<div style="font-weight:600;margin-top:6px">{escape(caption)}</div>')
    if frame.height == 0:
        parts.append('<div style="color:#666;font-style:italic">(no rows)</div></div>')
        return "".join(parts)
    parts.append(f'<table style="{_TABLE}"><thead><tr>')
    parts.extend(f'<th style="{_TH}">{escape(name)}</th>' for name in names)
    parts.append("</tr></thead><tbody>")
    for index, row in enumerate(shown.iter_rows()):
        style = row_styles[index] if row_styles is not None and index < len(row_styles) else ""
        parts.append(f'<tr style="{escape(style)}">' if style else "<tr>")
        parts.extend(f'<td style="{_TD}">{_cell(value)}</td>' for value in row)
        parts.append("</tr>")
    parts.append("</tbody></table>")
    if frame.height > shown.height:
        parts.append(f'<div style="color:#666">… {frame.height - shown.height} more rows</div>')
    parts.append("</div>")
    return "".join(parts)


def catalog_html(frame: pl.DataFrame, *, max_rows: int = 50, caption: str | None = None) -> str:
    """A catalog-style frame (``kind`` column) as a table with diagnostics highlighted.

    Works for the frames of ``list_children``, ``list_descendants``,
    ``catalog`` and ``catalog_descendants``: upstream's columns come first,
    then the audit columns ``cause``/``cause_detail``/``verdict``.

    Examples:
        >>> frame = pl.DataFrame({"kind": ["child", "diagnostic"], "id": ["a", "b"], "reason": [None, "corrupt"]})
        >>> "#fff4e5" in catalog_html(frame)
        True
    """
    preferred = [
        "parent",
        "root",
        "kind",
        "id",
        "mode",
        "label",
        "activity",
        "hasChildren",
        "reason",
        "parentId",
        "depth",
        "cause",
        "cause_detail",
        "verdict",
    ]
    columns = [name for name in preferred if name in frame.columns] or frame.columns
    kinds = frame["kind"].head(max_rows).to_list() if "kind" in frame.columns else []
    styles = [_DIAGNOSTIC_ROW if kind == "diagnostic" else _ERROR_ROW if kind == "error" else "" for kind in kinds]
    return table_html(frame, max_rows=max_rows, columns=columns, caption=caption, row_styles=styles)


def listing_error_html(corpus: CorpusLike) -> str:
    """A prominent banner for a corpus whose whole upstream listing fails ("" when it does not).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> listing_error_html(read_corpus(tempfile.mkdtemp()))
        ''
    """
    if corpus.listing_error is None:
        return ""
    where = (
        f'<div style="font-family:monospace;font-size:12px">file: {escape(corpus.listing_error_path)}</div>'
        if corpus.listing_error_path
        else ""
    )
    return (
        f'<div style="{BOX};{_BANNER}" role="alert">'
        '<div style="font-weight:700">Upstream listing fails for this corpus (PERSISTENCE_LIST_FAILED)</div>'
        f'<div style="font-family:monospace;font-size:12px;margin:2px 0">{escape(corpus.listing_error)}</div>'
        f"{where}"
        '<div style="font-size:12px">upstream lists nothing from this root; the files, their read verdicts and '
        "<code>corpus.problems</code> can still be browsed (see the problems with <code>fails_listing</code>).</div>"
        "</div>"
    )


def _counts(items: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{escape(name)}&nbsp;<b>{count}</b>" for name, count in items) or "none"


def corpus_html(corpus: CorpusLike) -> str:
    """The notebook summary of a corpus: counts, read verdicts, problems by kind, listing status.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> text = corpus_html(read_corpus(tempfile.mkdtemp()))
        >>> "0 session files" in text and "listing ok" in text
        True
    """
    sessions = corpus.sessions
    listed = int(sessions["listed"].sum()) if sessions.height else 0
    subagents = int((sessions["origin"] == "subagent").sum()) if sessions.height else 0
    verdicts = dict(sessions.group_by("verdict").len().iter_rows()) if sessions.height else {}
    verdict_items = [(name, int(verdicts[name])) for name in VERDICTS if verdicts.get(name)]
    verdict_items += [(str(name), int(n)) for name, n in verdicts.items() if name not in VERDICTS]
    problems = corpus.problems
    status = (
        '<span style="color:#b00020;font-weight:700">listing fails</span>'
        if corpus.listing_error is not None
        else '<span style="color:#1b5e20">listing ok</span>'
    )
    parts = [
        f'<div style="{BOX}">',
        f"<div><b>Corpus</b> <code>{escape(corpus.root)}</code>"
        + (f" ({escape(corpus.compression)})" if sessions.height else "")  # the encoding of logs read, if any
        + f" — {status}</div>",
        listing_error_html(corpus),
        f"<div>{sessions.height} session files: {listed} listed, {subagents} with origin <code>subagent</code></div>",
        f"<div>read verdicts: {_counts(verdict_items)}</div>",
    ]
    if problems.height:
        by_kind = (
            problems.group_by("kind", "severity")
            .len()
            .sort(["len", "kind", "severity"], descending=[True, False, False])
            .rename({"len": "count"})
        )
        severities = dict(problems.group_by("severity").len().iter_rows())
        order = [(name, int(severities[name])) for name in ("error", "warning", "info") if severities.get(name)]
        parts.append(f"<div>{problems.height} problems: {_counts(order)}</div>")
        parts.append(table_html(by_kind, max_rows=30, caption="problems by kind"))
    else:
        parts.append("<div>no problems</div>")
    parts += [runs_html(sessions), "</div>"]
    return "".join(parts)


FAILED = ("error", "aborted", "max-tokens", "blocked", "interrupted", "other", "open", "unreadable")
"""The outcomes that count as a failed run (``analysis.run_summary.FAILED_OUTCOMES``)."""

RUN_ORDER = ("completed", *FAILED[:-2], "open", "no-turns", "unreadable")


def _total(sessions: pl.DataFrame, name: str) -> int | None:
    column = sessions[name]
    return int(column.sum()) if column.null_count() < column.len() else None


def runs_html(sessions: pl.DataFrame, *, failures: int = 5) -> str:
    """The run facts of a corpus's ``sessions`` in a few lines: outcomes, time, tokens, cost, the failed runs.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> text = runs_html(read_corpus("data/sample").sessions)
        >>> "7 failed" in text and "auth-refactor" in text and "2 unpriced" in text and "cost ≥ $0.015" in text
        True
    """
    if "outcome" not in sessions.columns or sessions.height == 0:
        return ""
    counted = dict(sessions.group_by("outcome").len().iter_rows())
    items = [(name, int(counted[name])) for name in RUN_ORDER if counted.get(name)]
    items += [(str(name), int(n)) for name, n in counted.items() if name not in RUN_ORDER]
    failed = sessions.filter(pl.col("outcome").is_in(FAILED))
    costs = sessions["cost_usd"]
    known = known_costs(sessions) if "usage_samples" in sessions.columns else costs.fill_null(0.0)
    cost = partial_cost(None if costs.null_count() else float(costs.sum()), float(known.sum()))
    unpriced = sessions.filter((pl.col("usage_steps").fill_null(0) > 0) & pl.col("cost_usd").is_null()).height
    unread = costs.null_count() - unpriced
    names = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    tokens = ", ".join(
        f"{TOKEN_LABELS[name]} {human_count(_total(sessions, name), lower=unread > 0)}" for name in names
    )
    colour = "#b00020" if failed.height else "#1b5e20"
    parts = [
        '<div style="margin-top:6px"><b>Runs</b>: '
        f'<span style="color:{colour};font-weight:700">{failed.height} failed</span> — {_counts(items)}</div>',
        f"<div>active {escape(human_duration(_total(sessions, 'active_ms')))} of "
        f"{escape(human_duration(_total(sessions, 'run_wall_ms')))} wall (model "
        f"{escape(human_duration(_total(sessions, 'llm_ms')))}, tools busy "
        f"{escape(human_duration(_total(sessions, 'tool_busy_ms')))}); tokens {escape(tokens)}; cost {escape(cost)}"
        + (f" ({unpriced} unpriced: see <code>unpriced_models(corpus)</code>)" if unpriced else "")
        + (f" ({unread} whose usage could not be read)" if unread else "")
        + "</div>",
    ]
    if failed.height:
        shown = failed.head(failures).select(
            "session_id",
            pl.col("identity_label").alias("label"),
            "outcome",
            pl.coalesce("last_error_message", "outcome_detail").alias("error"),
            pl.col("last_error_code").alias("code"),
            pl.col("active_ms").map_elements(human_duration, return_dtype=pl.String).alias("active"),
            pl.col("run_wall_ms").map_elements(human_duration, return_dtype=pl.String).alias("wall"),
        )
        caption = "failed runs" + (f" (first {shown.height} of {failed.height})" if failed.height > failures else "")
        parts.append(table_html(shown, max_rows=failures, caption=caption))
    return "".join(parts)


def text_html(text: str, *, caption: str | None = None) -> str:
    """Preformatted, escaped text (e.g. ``list_agents`` output) under an optional caption.

    Examples:
        >>> text_html("a [ready] \\u2014 <x>").endswith('>a [ready] — &lt;x&gt;</pre>')
        True
    """
    head = f'<div style="font-weight:600;margin-top:6px">{escape(caption)}</div>' if caption is not None else ""
    return (
        f"{head}"
        '<pre style="margin:2px 0 8px 0;padding:4px 6px;background:#f7f7f7;border:1px solid #ddd;'
        'white-space:pre-wrap;overflow-wrap:anywhere">'
        f"{escape(text)}</pre>"
    )


def breakable(text: str) -> str:
    """``text`` as escaped HTML that may break after each ``_`` (an error code, a metric name), and nowhere else.

    Examples:
        >>> breakable("CONTEXT_LENGTH<x>")
        'CONTEXT_<wbr>LENGTH&lt;x&gt;'
    """
    return escape(text).replace("_", "_<wbr>")
