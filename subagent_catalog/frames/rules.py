"""Upstream's corpus-wide listing rules that need every file's header: duplicate ids and the listing error.

A file's own rows are decided alone (``frames.rows``, with the per-id lookup
of ``frames.lookup``); an id listed from two project directories is known
only once every header is read: the later file in list order is a
duplicate, unlisted, with a problem row and a listing error. These work over
columns (a frame, or an archive's Parquet parts scanned lazily) and touch only
the rows they change.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import polars as pl

from subagent_catalog.frames.lookup import duplicate_message
from subagent_catalog.frames.rows import GROUP_FILE, problem_row
from subagent_catalog.read.jsvalue import frame_text, parse_json


def exact_ids(frame: pl.DataFrame) -> list[str | None]:
    """The exact listed ids of some ``sessions`` rows (``session_id`` shows lone surrogates as U+FFFD).

    Examples:
        >>> exact_ids(pl.DataFrame({"session_id": ["a", "\\ufffd"], "header_json": ['{}', '{"id":"\\\\ud800"}']}))
        ['a', '\\ud800']
    """
    out: list[str | None] = []
    for session_id, header in frame.select("session_id", "header_json").iter_rows():
        if session_id is not None and "\ufffd" not in session_id:
            out.append(session_id)
            continue
        value = parse_json(header).get("id") if header is not None else None
        out.append(value if isinstance(value, str) else None)
    return out


@dataclass
class Duplicates:
    """Listed rows whose id an earlier file in list order already lists (found by ``find_duplicates``)."""

    orders: list[int]
    ids: list[str]
    paths: list[bytes]
    projects: list[str | None]


def find_duplicates(candidates: pl.DataFrame) -> Duplicates:
    """The duplicates among listed rows, given every listed row that shares its shown id with another.

    ``candidates`` holds ``list_order``, ``session_id``, ``header_json``,
    ``path_bytes`` and ``project_dir`` of listed rows (a superset of the true duplicates is fine:
    ids are compared exactly here).

    Examples:
        >>> rows = pl.DataFrame({"list_order": [3, 1], "session_id": ["a", "a"], "header_json": ["{}", "{}"],
        ...                      "path_bytes": [b"/r/q/a", b"/r/p/a"], "project_dir": ["q", "p"]})
        >>> find_duplicates(rows).orders
        [3]
    """
    ordered = candidates.sort("list_order")
    seen: set[str] = set()
    found = Duplicates([], [], [], [])
    rows = ordered.select("list_order", "path_bytes", "project_dir").iter_rows()
    for (order, raw, project), exact in zip(rows, exact_ids(ordered), strict=True):
        if exact is None:
            continue
        if exact in seen:
            found.orders.append(order)
            found.ids.append(exact)
            found.paths.append(raw)
            found.projects.append(project)
        else:
            seen.add(exact)
    return found


def duplicate_candidates(sessions: pl.LazyFrame | pl.DataFrame) -> pl.LazyFrame:
    """Listed rows whose shown id another listed row shows too (the input of ``find_duplicates``).

    Examples:
        >>> frame = pl.DataFrame({"list_order": [0, 1, 2], "session_id": ["a", "b", "a"], "listed": [True] * 3,
        ...                       "header_json": ["{}"] * 3, "path_bytes": [b"x", b"y", b"z"], "project_dir": "p"})
        >>> duplicate_candidates(frame).collect()["list_order"].to_list()
        [0, 2]
    """
    listed = sessions.lazy().filter(pl.col("listed") & pl.col("session_id").is_not_null())
    return listed.filter(pl.col("session_id").is_duplicated()).select(
        "list_order", "session_id", "header_json", "path_bytes", "project_dir"
    )


def mark_duplicates(sessions: pl.DataFrame, found: Duplicates) -> pl.DataFrame:
    """``sessions`` with the duplicates unlisted, their ``list_error`` set and their lookup cleared.

    Examples:
        >>> frame = pl.DataFrame({"list_order": [0, 1], "listed": [True, True], "list_error": [None, None],
        ...                       "lookup_error": [None, "x"]}, schema_overrides={"list_error": pl.String})
        >>> marked = mark_duplicates(frame, Duplicates([1], ["a"], [b"p"], ["q"]))
        >>> marked["listed"].to_list(), marked["list_error"][1][:30], marked["lookup_error"].to_list()
        ([True, False], 'duplicate JSONL session id "a"', [None, None])
    """
    if not found.orders:
        return sessions
    fix = pl.DataFrame(
        {"list_order": found.orders, "_message": [frame_text(duplicate_message(i)) for i in found.ids]},
        schema={"list_order": pl.Int64, "_message": pl.String},
    )
    joined = sessions.join(fix, on="list_order", how="left", maintain_order="left")
    hit = pl.col("_message").is_not_null()
    return joined.with_columns(
        pl.when(hit).then(False).otherwise(pl.col("listed")).alias("listed"),
        pl.when(hit).then(pl.col("_message")).otherwise(pl.col("list_error")).alias("list_error"),
        pl.when(hit).then(None).otherwise(pl.col("lookup_error")).alias("lookup_error"),
    ).drop("_message")


def duplicate_problems(found: Duplicates) -> list[dict[str, Any]]:
    """The ``problems`` rows of the duplicates (with their sort keys: before the file's own problems).

    Examples:
        >>> [row["kind"] for row in duplicate_problems(Duplicates([1], ["a"], [b"/r/p/a/session.jsonl"], ["p"]))]
        ['duplicate-id']
    """
    rows = []
    for order, session_id, raw, project in zip(found.orders, found.ids, found.paths, found.projects, strict=True):
        message = duplicate_message(session_id)
        row = problem_row("corpus", "duplicate-id", "error", True, os.fsdecode(raw), session_id, message, 1)
        row.update(project_dir=project, archive_group=GROUP_FILE, archive_order=order, archive_sub=0)
        rows.append(row)
    return rows


def first_listing_error(*candidates: tuple[int, str, str] | None) -> tuple[int, str, str] | None:
    """The file-level listing error that comes first in list order: (list order, exact message, exact path).

    Examples:
        >>> first_listing_error(None, (4, "b", "/b"), (2, "a", "/a"))
        (2, 'a', '/a')
    """
    present = [item for item in candidates if item is not None]
    return min(present, key=lambda item: item[0]) if present else None


def duplicates_error(found: Duplicates) -> tuple[int, str, str] | None:
    """The first duplicate as a listing error (list order, exact message, exact path).

    Examples:
        >>> duplicates_error(Duplicates([3], ["a"], [b"/r/q/a/session.jsonl"], ["q"]))[0]
        3
    """
    if not found.orders:
        return None
    return found.orders[0], duplicate_message(found.ids[0]), os.fsdecode(found.paths[0])
