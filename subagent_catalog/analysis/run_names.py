"""A readable name for each run: its session title, or its first human prompt, one line and clipped.

dsh names a session with ``session/title`` events (``data.title``; the last one wins, as upstream's
title projection folds them). A log without one is named by its first own ``user/message`` written
by a human (``data.source.kind`` ``user``, or no source at all, as older logs have): subagent
notices, runtime-context snapshots and coordinator relays are not names. Whitespace is folded to
single spaces and the text is clipped to ``clip`` characters with an ellipsis. The name is plain
text: a view escapes it (a title may hold markup).

The names come from the events, so each log asked for is read once (a corpus reads the file: a log
the read found healthy by its title and user-message lines alone, ``read.name_scan``, any other
with the reader; an archive with events reads its events table); ask for the sessions you show
(``list_orders``), not all of a large corpus.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

import polars as pl

from subagent_catalog.catalog.source import source_reads
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.source import Source
from subagent_catalog.read.jsvalue import frame_text
from subagent_catalog.read.name_scan import name_records

NameSource = Literal["title", "first-message"]
"""Where a run's name came from: the last ``session/title`` event, or the first human ``user/message``."""

NAME_CLIP = 80
"""Characters a name keeps by default (the rest becomes ``…``)."""

NAME_SCHEMA: dict[str, pl.DataType] = {"list_order": pl.Int64(), "name": pl.String(), "name_source": pl.String()}
"""``run_names``' columns (``name`` and ``name_source`` null when the log has neither a title nor a prompt)."""

_TYPES = ("session/title", "user/message")


def clip_name(text: str, clip: int = NAME_CLIP) -> str | None:
    """Whitespace folded to single spaces and clipped to ``clip`` characters (``None`` when nothing is left).

    A lone surrogate (a JavaScript string may hold one) becomes U+FFFD, as in every text column.

    Examples:
        >>> clip_name("  Fix the\\n\\nflaky   test  ")
        'Fix the flaky test'
        >>> clip_name("a" * 10, clip=5)
        'aaaa…'
        >>> clip_name(" \\n ") is None
        True
        >>> clip_name("bad \\udc00 title")
        'bad \\ufffd title'
    """
    folded = " ".join(text.split())
    if not folded:
        return None
    return frame_text(folded if len(folded) <= clip else folded[: max(clip - 1, 0)] + "…")


def _data(raw: Any) -> Any:
    if not isinstance(raw, str):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return " ".join(
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )


def name_from_events(
    events: pl.DataFrame, *, seed_length: int | None = None, clip: int = NAME_CLIP
) -> tuple[str | None, NameSource | None]:
    """The name of one log from its events (``type``, ``seq``, ``data`` columns), and where it came from.

    Args:
        events: the log's events, in seq order (``corpus.log_events``' rows).
        seed_length: a fork's inherited events; its first prompt is looked for after them.
        clip: characters the name keeps.

    Examples:
        >>> import json
        >>> events = pl.DataFrame({"type": ["user/message", "session/title", "session/title"], "seq": [0, 1, 2],
        ...     "data": [json.dumps({"content": [{"type": "text", "text": "hello there"}],
        ...                          "source": {"kind": "user"}}),
        ...              json.dumps({"title": "First"}), json.dumps({"title": "Renamed"})]})
        >>> name_from_events(events)
        ('Renamed', 'title')
        >>> name_from_events(events.head(1))
        ('hello there', 'first-message')
    """
    wanted = events.filter(pl.col("type").is_in(_TYPES)).select("type", "seq", "data")
    for kind, _seq, raw in reversed(wanted.rows()):
        if kind == "session/title":
            data = _data(raw)
            title = data.get("title") if isinstance(data, dict) else None
            name = clip_name(title, clip) if isinstance(title, str) else None
            if name is not None:
                return name, "title"
    start = seed_length or 0
    for kind, seq, raw in wanted.rows():
        if kind != "user/message" or seq is None or seq < start:
            continue
        data = _data(raw)
        if not isinstance(data, dict):
            continue
        source = data.get("source")
        if isinstance(source, dict) and source.get("kind") not in (None, "user"):
            continue
        name = clip_name(_text(data.get("content")), clip)
        if name is not None:
            return name, "first-message"
    return None, None


@source_reads
def run_names(
    source: Source, *, list_orders: Iterable[int] | None = None, clip: int = NAME_CLIP, titles: bool = True
) -> pl.DataFrame:
    """A readable name for each session: its last ``session/title``, else its first human prompt.

    Args:
        source: a read corpus, or an opened archive (its events table names it; without one, its root's logs).
        list_orders: only these sessions (``None``: every session; each log is read, one at a time).
        clip: characters a name keeps.
        titles: ``False``: name every log by its first human prompt, even one that has a title.

    Returns:
        ``NAME_SCHEMA`` rows, one per session asked for (in the order asked, or list order), ``name``
        and ``name_source`` null for a log with neither (a header-only log, one whose read fails).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> run_names(read_corpus("data/sample"), list_orders=[0]).columns
        ['list_order', 'name', 'name_source']
    """
    frame = source.table("sessions", ["list_order", "seed_length"])
    asked = None if list_orders is None else [int(order) for order in list_orders]
    if asked is not None:  # only their seeds, not a dict of every session's
        frame = frame.filter(pl.col("list_order").is_in(asked))
    seeds: dict[int, int | None] = dict(frame.collect().rows())
    orders = list(seeds) if asked is None else asked
    stored = _stored_events(source, orders)
    corpus = source.to_corpus() if stored is None else None  # no events files: the logs are read
    healthy = _healthy_logs(corpus, orders) if corpus is not None else {}
    rows: list[tuple[int, str | None, str | None]] = []
    for order in orders:
        if order not in seeds:
            rows.append((order, None, None))
            continue
        records = name_records(healthy[order], source.compression) if order in healthy else None
        if records is not None:
            events = pl.DataFrame(records, schema=_RECORD_SCHEMA, orient="row")
        elif stored is not None:
            events = stored.filter(pl.col("list_order") == order)
        else:
            assert corpus is not None  # no events files: the logs are read
            try:
                events = corpus.log_events(order)
            except SubagentCatalogError:  # the log vanished since the read (an archive's root is gone): no name
                rows.append((order, None, None))
                continue
        if not titles:
            events = events.filter(pl.col("type") != "session/title")
        name, where = name_from_events(events.sort("seq"), seed_length=seeds[order], clip=clip)
        rows.append((order, name, where))
    return pl.DataFrame(rows, schema=NAME_SCHEMA, orient="row")


_RECORD_SCHEMA = {"type": pl.String(), "seq": pl.Int64(), "data": pl.String()}


def _healthy_logs(corpus: Corpus, orders: list[int]) -> dict[int, str]:
    """The exact paths of the asked logs the read found healthy (their lines can be read as bytes)."""
    if corpus._events is not None:
        return {}
    wanted = corpus.sessions.filter(pl.col("list_order").is_in(orders) & (pl.col("verdict") == "ok"))
    ids = wanted["session_id"].drop_nulls().unique().to_list()
    if not ids:
        return {}
    # log_sources gives, in list order, the path of every non-skipped row holding one of these ids
    rows = corpus.sessions.filter((pl.col("verdict") != "skipped") & pl.col("session_id").is_in(ids))
    rows = rows.sort("list_order").select("list_order", "verdict")
    try:
        paths = corpus.log_sources(sessions=ids)
    except SubagentCatalogError:  # an archive naming a path outside its root: each log says so below
        return {}
    asked = set(orders)
    return {
        order: path
        for (order, verdict), path in zip(rows.rows(), paths, strict=True)
        if verdict == "ok" and order in asked
    }


def _stored_events(source: Source, orders: list[int]) -> pl.DataFrame | None:
    """The title and message events of these sessions from the files the source stores events in (``None``: none)."""
    scan = source.stored_events()
    if scan is None or "list_order" not in scan.collect_schema():
        return None
    wanted = scan.filter(pl.col("list_order").is_in(orders) & pl.col("type").is_in(_TYPES))
    return source.collect(wanted.select("list_order", "type", "seq", "data"))
