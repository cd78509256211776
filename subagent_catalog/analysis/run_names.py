"""A readable name for each run: its session title, or its first human prompt, one line and clipped.

The read names every session once (``read.run_facts``: the ``title``, ``prompt`` and ``name``
columns of ``sessions``): dsh names a session with ``session/title`` events (``data.title``; the
last one wins, as upstream's title projection folds them); a log without one is named by its first
own ``user/message`` written by a human (``data.source.kind`` ``user``, or no source at all, as
older logs have): subagent notices, runtime-context snapshots and coordinator relays are not
names. Whitespace is folded to single spaces and the text clipped (``read.run_facts.NAME_CLIP``).
The name is plain text: a view escapes it (a title may hold markup). No log is read again; an
archive written before format 8 has no names (null). ``session_name`` is how every view and message
names a session (its label, else that name) and ``name_text`` with its short id, ``name (0c9b39da…)``
(``views.names`` adds the HTML).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import polars as pl

from subagent_catalog.catalog.source import source_reads
from subagent_catalog.frames.source import Source
from subagent_catalog.read.run_facts import NAME_CLIP, clip_name

__all__ = ["NAME_CLIP", "NAME_SCHEMA", "NameSource", "clip_name", "name_text", "run_names", "session_name", "short_id"]

NameSource = Literal["title", "first-message"]
"""Where a run's name came from: the last ``session/title`` event, or the first human ``user/message``."""

NAME_SCHEMA: dict[str, pl.DataType] = {"list_order": pl.Int64(), "name": pl.String(), "name_source": pl.String()}
"""``run_names``' columns (``name`` and ``name_source`` null when the log has neither a title nor a prompt)."""


SHOWN_CLIP = 60
"""Characters of a name a view shows (``session_name``'s default)."""

SHORT_ID = 8
"""Characters of a long session id shown beside its name."""

WHOLE_ID = 14
"""An id up to this long is shown whole (``run-webapp-1``); a longer one (a 36-character UUID) is shortened."""


def session_name(label: str | None, name: str | None, *, limit: int = SHOWN_CLIP) -> str | None:
    """A session's name as plain text: its label, else its title or first prompt (``name``), clipped.

    Args:
        label: the descriptor identity's label (``identity_label``; ``None`` for a root or a fork).
        name: the run's name (the ``name`` column: its title, else its first human prompt).
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


def name_text(
    session_id: str | None, *, label: str | None = None, name: str | None = None, path: str | None = None
) -> str:
    """A session named in plain text: its name (``session_name``) and its short id, ``name (short id)``.

    A session without a name (or named by its id) shows its whole id; one without an id ``(no id)`` and its
    ``path``.

    Examples:
        >>> name_text("b4a2c0de-1111-4222-8333-944455556666", name="Fix the  flaky test")
        'Fix the flaky test (b4a2c0de…)'
        >>> name_text("run-webapp-1"), name_text(None, path="p/session.jsonl")
        ('run-webapp-1', '(no id) p/session.jsonl')
    """
    text = session_name(label, name)
    if session_id is None:
        bare = "(no id)" if path is None else f"(no id) {path}"
        return bare if text is None else f"{text} {bare}"
    return session_id if text is None or text == session_id else f"{text} ({short_id(session_id)})"


@source_reads
def run_names(source: Source, *, list_orders: Iterable[int] | None = None) -> pl.DataFrame:
    """A readable name for each session: its last ``session/title``, else its first human prompt.

    Args:
        source: a read corpus, or an opened archive.
        list_orders: only these sessions (``None``: every session).

    Returns:
        ``NAME_SCHEMA`` rows, one per session asked for (in the order asked, or list order), ``name``
        and ``name_source`` null for a log with neither (a header-only log, one whose read fails).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> run_names(read_corpus("data/sample"), list_orders=[8]).rows()
        [(8, 'task 1 for run-webapp-1', 'first-message')]
    """
    frame = source.table("sessions", ["list_order", "title", "name"])
    if list_orders is not None:
        asked = pl.LazyFrame({"list_order": [int(order) for order in list_orders]}, schema={"list_order": pl.Int64})
        frame = asked.join(frame, on="list_order", how="left", maintain_order="left")
    where = pl.when(pl.col("name").is_null()).then(None).when(pl.col("title").is_not_null())
    kind = where.then(pl.lit("title")).otherwise(pl.lit("first-message")).alias("name_source")
    return source.collect(frame.select("list_order", "name", kind)).cast(NAME_SCHEMA)  # type: ignore[arg-type]
