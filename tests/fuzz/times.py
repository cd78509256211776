"""The time invariants of a fuzz case: a log's times are exact in the frames, and no view breaks on them.

A log may hold any safe integer as a time (``createdAt``, an event's ``time``), years past 9999 and
before year 1 included (``mutations.txt_times`` writes them). Checked on every case:

* **exact**: each ``*_at`` column equals its ``*_ms`` column inside years 1 to 9999 and is null outside
  them (the ``*_ms`` column is never altered); every such session has a ``time-out-of-range`` problem row;
* **convertible**: every ``Datetime`` cell of ``sessions`` reaches Python and the frame prints (Polars
  panics printing a time past about year 262,000; Python refuses one past 9999);

and, on cases that hold such a time (or when ``views`` asks), the views an auditor runs raise nothing:
``run_summary`` and its JSON, ``summary_json``, ``sql`` over ``sessions``, each such session's
transcript (Markdown and page) and its tree's timeline, and the browser's detail pane and the
dashboard for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
from polars.exceptions import PanicException

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.units import CALENDAR_MAX_MS, CALENDAR_MIN_MS

TIMES = (("created_at", "created_at_ms"), ("first_event_at", "first_event_ms"), ("last_event_at", "last_event_ms"))
"""Each ``sessions`` datetime column beside the exact column it shows."""

VIEWED = 3
"""Sessions with a time outside the calendar whose transcript, timeline and detail pane are drawn."""


def _outside(ms: pl.Expr) -> pl.Expr:
    return ms.is_not_null() & ~ms.is_between(CALENDAR_MIN_MS, CALENDAR_MAX_MS)


def hostile_rows(corpus: Corpus) -> pl.DataFrame:
    """The ``sessions`` rows (``row`` index, ``session_id``, ``path``) holding a time outside years 1 to 9999."""
    outside = pl.any_horizontal(_outside(pl.col(ms)) for _, ms in TIMES)
    return corpus.sessions.with_row_index("row").filter(outside).select("row", "session_id", "path")


def frame_violations(corpus: Corpus) -> list[tuple[str, str]]:
    """(invariant, detail) for the exact and convertible rules over the frames."""
    out: list[tuple[str, str]] = []
    sessions = corpus.sessions
    for at, ms in TIMES:
        inside = pl.col(ms).is_between(CALENDAR_MIN_MS, CALENDAR_MAX_MS)
        expected = pl.when(inside).then(pl.col(ms))
        wrong = sessions.filter(~pl.col(at).dt.epoch("ms").eq_missing(expected))
        if wrong.height:
            out.append(("time-exact", f"{at} differs from {ms} in the calendar rule: {wrong[ms].to_list()[:3]}"))
    try:
        sessions.select(pl.col(pl.Datetime)).rows()
        str(sessions.select(pl.col(pl.Datetime)))
    except (Exception, PanicException) as error:  # a Rust panic is a BaseException
        out.append(("time-convertible", f"{type(error).__name__}: {str(error)[:200]}"))
    flagged = set(corpus.problems.filter(pl.col("kind") == "time-out-of-range")["path"].to_list())
    missing = [path for path in hostile_rows(corpus)["path"].to_list() if path not in flagged]
    if missing:
        out.append(("time-flagged", f"no time-out-of-range problem row for {missing[:3]}"))
    return out


def _views(corpus: Corpus, rows: pl.DataFrame) -> list[tuple[str, Callable[[], Any]]]:
    from subagent_catalog.analysis.run_summary import run_summary
    from subagent_catalog.analysis.timeline import tree_timeline
    from subagent_catalog.interop.sql import sql
    from subagent_catalog.views.run_format import runs_json
    from subagent_catalog.views.summary_text import summary_json
    from subagent_catalog.views.transcript_markdown import transcript_markdown
    from subagent_catalog.views.transcript_view import transcript_page
    from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard

    views: list[tuple[str, Callable[[], Any]]] = [
        ("run_summary", lambda: runs_json(run_summary(corpus))),
        ("summary_json", lambda: summary_json(corpus)),
        ("sql", lambda: sql(corpus, "select * from sessions").rows()),
        ("dashboard", lambda: DiagnosticsDashboard(corpus).bars),
    ]
    browser: list[CatalogBrowser] = []
    for row, session_id, path in rows.head(VIEWED).iter_rows():
        if session_id is None:
            continue
        views += [
            ("transcript_markdown", lambda s=session_id, p=path: transcript_markdown(corpus, s, path=p)),
            ("transcript_page", lambda s=session_id, p=path: transcript_page(corpus, s, path=p)),
            ("tree_timeline", lambda s=session_id: tree_timeline(corpus, s)),
        ]

        def detail(key: int = row) -> str:
            if not browser:
                browser.append(CatalogBrowser(corpus))
            browser[0].selected = key
            return browser[0].detail

        views.append(("browser_detail", detail))
    return views


def view_violations(corpus: Corpus, *, always: bool = False) -> list[tuple[str, BaseException]]:
    """(view, error) for each view that raised something but a typed library error, over a corpus whose
    logs hold a time outside the calendar (every corpus with ``always``)."""
    rows = hostile_rows(corpus)
    if not (always or rows.height):
        return []
    out: list[tuple[str, BaseException]] = []
    for name, view in _views(corpus, rows):
        try:
            view()
        except SubagentCatalogError:
            continue  # a typed error (the listing fails, a duplicate id): what the views promise
        except (Exception, PanicException) as error:
            out.append((name, error))
    return out
