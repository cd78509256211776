"""Upstream's per-id ``findLog`` lookup, and which ids need it.

Upstream looks an id up in every project directory (its directory, or a
retired flat file ``<id>.jsonl[.zstd]``). For almost every listed id the
answer is its own directory: only a name that appears in several project
directories, or next to a flat file, or an id that does not name its own
directory, can make the lookup fail. ``NameIndex`` holds those names, so
the lookup runs only for the rows it cannot clear; ``holders`` answers
which directories hold some names (from a walk in memory, or from an
archive export's names table).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from subagent_catalog.frames.probes import FsProbes, ask
from subagent_catalog.read.paths import Compression, log_name

FLAT_SUFFIXES = (".jsonl.zstd", ".jsonl")
"""Names of upstream's retired flat-file layout, ``<id>.jsonl[.zstd]`` in a project directory."""

Holders = Callable[[set[str]], list[tuple[str, set[str]]]]
"""For some names: every project directory holding one of them, with those names, in byte order of the projects."""


def duplicate_message(session_id: str) -> str:
    """Upstream's message for an id listed from more than one project directory.

    Examples:
        >>> duplicate_message("a")
        'duplicate JSONL session id "a" appears in multiple project directories'
    """
    return f'duplicate JSONL session id "{session_id}" appears in multiple project directories'


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


def holders_in(project_names: Mapping[str, set[str]]) -> Holders:
    """``holders`` for ``apply_lookups`` over a walk's ``project_names`` (a scan of the projects per call).

    Examples:
        >>> holders_in({"q": {"a"}, "p": {"a", "b"}})({"a"})
        [('p', {'a'}), ('q', {'a'})]
    """
    projects = sorted(project_names, key=os.fsencode)

    def holders(names: set[str]) -> list[tuple[str, set[str]]]:
        return [(project, held) for project in projects if (held := names & project_names[project])]

    return holders
