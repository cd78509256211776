"""Upstream's corpus-wide listing rules, applied to frames built file by file.

A file's own rows are decided alone (``frames.rows``); these rules need the
whole corpus: an id listed from two project directories (the later file in
list order is a duplicate), upstream's per-id ``findLog`` lookup (which looks
for the id's directory in every project, and for flat files), and the one
message the whole listing fails with. They work over columns and touch only
the rows they change, so their cost follows the number of suspicious rows,
not the corpus size.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from subagent_catalog.frames.probes import FsProbes, ask
from subagent_catalog.frames.rows import GROUP_FILE, duplicate_message, problem_row
from subagent_catalog.read.jsvalue import frame_text, parse_json
from subagent_catalog.read.paths import Compression, encode_segment, log_name

SAFE_ID = r"^[A-Za-z0-9._-]+$"
"""Ids ``encode_segment`` leaves as they are (but ``.`` and ``..``)."""

FLAT_SUFFIXES = (".jsonl.zstd", ".jsonl")
"""Names of upstream's retired flat-file layout, ``<id>.jsonl[.zstd]`` in a project directory."""


@dataclass
class NameIndex:
    """Which names under the project directories can make an id's lookup differ from its own directory.

    ``shared`` holds the names found in more than one project directory;
    ``flat`` the ids that have a flat file (``<id>.jsonl[.zstd]``) somewhere.
    An id outside both whose directory is its own has exactly one match.

    Examples:
        >>> index = NameIndex.build({"p": {"a", "b"}, "q": {"a", "c.jsonl"}})
        >>> sorted(index.shared), sorted(index.flat)
        (['a'], ['c'])
    """

    shared: set[str] = field(default_factory=set)
    flat: set[str] = field(default_factory=set)

    @classmethod
    def build(cls, project_names: Mapping[str, Iterable[str]]) -> NameIndex:
        """The index of a walk's ``project_names``."""
        seen: set[str] = set()
        index = cls()
        for names in project_names.values():
            for name in names:
                if name in seen:
                    index.shared.add(name)
                else:
                    seen.add(name)
                for suffix in FLAT_SUFFIXES:
                    if name.endswith(suffix):
                        index.flat.add(name[: -len(suffix)])
        return index

    def plain(self, encoded: str, session_dir: str) -> bool:
        """Whether the lookup of this encoded id from its own directory finds exactly that directory.

        Examples:
            >>> NameIndex(shared={"a"}).plain("a", "a"), NameIndex().plain("a", "a"), NameIndex().plain("a", "b")
            (False, True, False)
        """
        return encoded == session_dir and encoded not in self.shared and encoded not in self.flat


def lookup_candidates(encoded: str) -> tuple[str, str, str]:
    """The names a project directory may hold for an encoded id: its directory and its flat files.

    Examples:
        >>> lookup_candidates("a")
        ('a', 'a.jsonl.zstd', 'a.jsonl')
    """
    return (encoded, encoded + FLAT_SUFFIXES[0], encoded + FLAT_SUFFIXES[1])


def lookup_error(
    root: str,
    compression: Compression,
    row_project: str,
    row_session_dir: str,
    encoded: str,
    session_id: str,
    holders: Iterable[tuple[str, set[str]]],
    probes: FsProbes | None = None,
) -> str | None:
    """Upstream's per-id ``findLog`` for a listed id: the message when it throws, else ``None``.

    Args:
        root: the corpus root.
        compression: the encoding the root is read as.
        row_project: the project directory of the listed row.
        row_session_dir: its session directory.
        encoded: ``encode_segment(session_id)``.
        session_id: the listed id.
        holders: every project directory holding one of ``lookup_candidates(encoded)``, with those of its
            names, in byte order of the project names (directories holding none do not change the result).
        probes: records the filesystem questions asked.

    Examples:
        >>> lookup_error("/r", "none", "p", "a", "a", "a", [("p", {"a"})]) is None
        True
        >>> print(lookup_error("/r", "none", "p", "a", "a", "a", [("p", {"a", "a.jsonl"})]))
        session artifact '/r/p/a.jsonl' uses the unsupported flat-file layout
    """
    own = log_name(compression)
    error: str | None = None
    matches = 0
    for project, names in holders:
        for suffix in FLAT_SUFFIXES:
            if encoded + suffix in names:
                flat = os.path.join(root, project, encoded + suffix)
                error = f"session artifact {flat!r} uses the unsupported flat-file layout"
        if encoded in names:
            own_dir = project == row_project and encoded == row_session_dir
            entry = os.path.join(root, project, encoded)
            if not own_dir and ask(probes, "lexists", entry) and not ask(probes, "isdir", entry):
                # upstream opens <entry>/session.jsonl: ENOTDIR is not "absent", the lookup throws
                error = f"{entry!r} is not a directory (ENOTDIR while looking up the log)"
            elif own_dir or ask(probes, "exists", os.path.join(entry, own)):
                matches += 1
    if error is None and matches > 1:
        error = duplicate_message(session_id)
    return error


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


def find_duplicates(candidates: pl.DataFrame) -> Duplicates:
    """The duplicates among listed rows, given every listed row that shares its shown id with another.

    ``candidates`` holds ``list_order``, ``session_id``, ``header_json`` and
    ``path_bytes`` of listed rows (a superset of the true duplicates is fine:
    ids are compared exactly here).

    Examples:
        >>> rows = pl.DataFrame({"list_order": [3, 1], "session_id": ["a", "a"], "header_json": ["{}", "{}"],
        ...                      "path_bytes": [b"/r/q/a", b"/r/p/a"]})
        >>> find_duplicates(rows).orders
        [3]
    """
    ordered = candidates.sort("list_order")
    seen: set[str] = set()
    found = Duplicates([], [], [])
    rows = ordered.select("list_order", "path_bytes").iter_rows()
    for (order, raw), exact in zip(rows, exact_ids(ordered), strict=True):
        if exact is None:
            continue
        if exact in seen:
            found.orders.append(order)
            found.ids.append(exact)
            found.paths.append(raw)
        else:
            seen.add(exact)
    return found


def duplicate_candidates(sessions: pl.LazyFrame | pl.DataFrame) -> pl.LazyFrame:
    """Listed rows whose shown id another listed row shows too (the input of ``find_duplicates``).

    Examples:
        >>> frame = pl.DataFrame({"list_order": [0, 1, 2], "session_id": ["a", "b", "a"], "listed": [True] * 3,
        ...                       "header_json": ["{}"] * 3, "path_bytes": [b"x", b"y", b"z"]})
        >>> duplicate_candidates(frame).collect()["list_order"].to_list()
        [0, 2]
    """
    listed = sessions.lazy().filter(pl.col("listed") & pl.col("session_id").is_not_null())
    return listed.filter(pl.col("session_id").is_duplicated()).select(
        "list_order", "session_id", "header_json", "path_bytes"
    )


def mark_duplicates(sessions: pl.DataFrame, found: Duplicates) -> pl.DataFrame:
    """``sessions`` with the duplicates unlisted, their ``list_error`` set and their lookup cleared.

    Examples:
        >>> frame = pl.DataFrame({"list_order": [0, 1], "listed": [True, True], "list_error": [None, None],
        ...                       "lookup_error": [None, "x"]}, schema_overrides={"list_error": pl.String})
        >>> marked = mark_duplicates(frame, Duplicates([1], ["a"], [b"p"]))
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
        >>> [row["kind"] for row in duplicate_problems(Duplicates([1], ["a"], [b"/r/p/a/session.jsonl"]))]
        ['duplicate-id']
    """
    rows = []
    for order, session_id, raw in zip(found.orders, found.ids, found.paths, strict=True):
        message = duplicate_message(session_id)
        row = problem_row("corpus", "duplicate-id", "error", True, os.fsdecode(raw), session_id, message, 1)
        row.update(archive_group=GROUP_FILE, archive_order=order, archive_sub=0)
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
        >>> duplicates_error(Duplicates([3], ["a"], [b"/r/q/a/session.jsonl"]))[0]
        3
    """
    if not found.orders:
        return None
    return found.orders[0], duplicate_message(found.ids[0]), os.fsdecode(found.paths[0])


def apply_lookups(
    sessions: pl.DataFrame,
    *,
    root: str,
    compression: Compression,
    index: NameIndex,
    holders: Any,
    probes: FsProbes | None = None,
) -> pl.DataFrame:
    """``sessions`` with upstream's per-id lookup failures of listed rows in ``lookup_error``.

    ``holders(names)`` returns, for a set of names, every project directory
    holding one of them, with those names, in byte order of the projects.
    Only rows ``index`` cannot clear are looked up.

    Examples:
        >>> frame = pl.DataFrame({"list_order": [0], "listed": [True], "session_id": ["a"], "header_json": ["{}"],
        ...     "project_dir": ["p"], "session_dir": ["a"], "lookup_error": [None]},
        ...     schema_overrides={"lookup_error": pl.String})
        >>> index = NameIndex(shared={"a"})
        >>> out = apply_lookups(frame, root="/r", compression="none", index=index, holders=lambda names: [])
        >>> out["lookup_error"].to_list()
        [None]
    """
    suspicious = index.shared | index.flat
    # An id of safe characters encodes to itself: when it names its own directory and no other
    # directory or flat file bears the name, the lookup finds exactly its own log.
    plain = (
        (pl.col("session_dir") == pl.col("session_id"))
        & pl.col("session_id").str.contains(SAFE_ID)
        & ~pl.col("session_id").is_in([".", "..", *suspicious])
    )
    listed = sessions.filter(pl.col("listed") & pl.col("session_id").is_not_null() & ~plain)
    listed = listed.select("list_order", "session_id", "header_json", "project_dir", "session_dir")
    orders: list[int] = []
    errors: list[str] = []
    rows = listed.select("list_order", "project_dir", "session_dir").iter_rows()
    for (order, project, session_dir), exact in zip(rows, exact_ids(listed), strict=True):
        if exact is None:
            continue
        encoded = encode_segment(exact)
        if index.plain(encoded, session_dir):
            continue
        found = holders(set(lookup_candidates(encoded)))
        error = lookup_error(root, compression, project, session_dir, encoded, exact, found, probes)
        if error is not None:
            orders.append(order)
            errors.append(frame_text(error) or "")
    if not orders:
        return sessions
    fix = pl.DataFrame({"list_order": orders, "_lookup": errors}, schema={"list_order": pl.Int64, "_lookup": pl.String})
    joined = sessions.join(fix, on="list_order", how="left", maintain_order="left")
    return joined.with_columns(pl.coalesce("_lookup", "lookup_error").alias("lookup_error")).drop("_lookup")


def holders_in(project_names: Mapping[str, set[str]]) -> Any:
    """``holders`` for ``apply_lookups`` over a walk's ``project_names`` (a scan of the projects per call).

    Examples:
        >>> holders_in({"q": {"a"}, "p": {"a", "b"}})({"a"})
        [('p', {'a'}), ('q', {'a'})]
    """
    projects = sorted(project_names, key=os.fsencode)

    def holders(names: set[str]) -> list[tuple[str, set[str]]]:
        out = []
        for project in projects:
            held = names & project_names[project]
            if held:
                out.append((project, held))
        return out

    return holders
