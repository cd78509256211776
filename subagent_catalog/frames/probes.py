"""The filesystem questions assembly asks beyond the walk, and upstream's stored-identity check.

``identity_error`` is upstream's ``assertStoredIdentity`` for one listed
header: the log must live where its header's id and cwd say it does (or be
that very file). ``FsProbes`` records every question asked and its answer,
so that a cache can ask them again before it reuses frames built on them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from subagent_catalog.read.paths import (
    MISSING,
    Compression,
    PathIdentityError,
    encode_segment,
    log_name,
    project_dir_name,
)

_PROBES: dict[str, Callable[[str], Any]] = {
    "exists": os.path.exists,
    "lexists": os.path.lexists,
    "isdir": os.path.isdir,
    "realpath": os.path.realpath,
}


class FsProbes:
    """The filesystem questions assembly asks beyond the walk, with their answers (to ask again later).

    Examples:
        >>> probes = FsProbes()
        >>> probes.ask("exists", "/nonexistent/x"), probes.unchanged()
        (False, True)
        >>> FsProbes.from_json(probes.to_json()).unchanged()
        True
    """

    def __init__(self, asked: list[tuple[str, str, Any]] | None = None) -> None:
        self.asked = asked if asked is not None else []

    def ask(self, kind: str, path: str) -> Any:
        """The answer of ``os.path.<kind>(path)`` (an ``OSError`` re-raised), recorded.

        Examples:
            >>> FsProbes().ask("isdir", "/")
            True
        """
        try:
            answer = _PROBES[kind](path)
        except OSError:
            self.asked.append((kind, path, None))
            raise
        self.asked.append((kind, path, answer))
        return answer

    def unchanged(self) -> bool:
        """Whether every question gets the answer it got (``None``: raised ``OSError``).

        Examples:
            >>> FsProbes([("exists", "/", False)]).unchanged()
            False
        """
        for kind, path, answer in self.asked:
            try:
                now = _PROBES[kind](path)
            except OSError:
                now = None
            if now != answer or type(now) is not type(answer):
                return False
        return True

    def to_json(self) -> list[list[Any]]:
        """The questions and answers as JSON values (paths as the hex of their bytes).

        Examples:
            >>> FsProbes([("realpath", "/a", "/b")]).to_json()
            [['realpath', '2f61', '2f62']]
        """
        return [
            [kind, os.fsencode(path).hex(), os.fsencode(answer).hex() if isinstance(answer, str) else answer]
            for kind, path, answer in self.asked
        ]

    @classmethod
    def from_json(cls, value: Any) -> FsProbes | None:
        """The probes of ``to_json`` output, or ``None`` when it is not such output.

        Examples:
            >>> FsProbes.from_json([["rm", "2f", True]]) is None
            True
        """
        asked: list[tuple[str, str, Any]] = []
        if not isinstance(value, list):
            return None
        for item in value:
            if not (isinstance(item, list) and len(item) == 3 and item[0] in _PROBES and isinstance(item[1], str)):
                return None
            kind, path, answer = item
            try:
                decoded = os.fsdecode(bytes.fromhex(path))
                if kind == "realpath":
                    answer = None if answer is None else os.fsdecode(bytes.fromhex(answer))
                elif answer is not None and not isinstance(answer, bool):
                    return None
            except (TypeError, ValueError):
                return None
            asked.append((kind, decoded, answer))
        return cls(asked)


class RebasedProbes(FsProbes):
    """Probes that ask about paths under ``shown`` (the root as given) through ``actual`` (where it resolves here).

    A worker whose working directory is not the caller's checks identities of
    paths shown relative to the caller through the absolute root.

    Examples:
        >>> RebasedProbes("rel", "/").ask("isdir", "rel")
        True
    """

    def __init__(self, shown: str, actual: str) -> None:
        super().__init__()
        self.shown = shown
        self.actual = actual

    def ask(self, kind: str, path: str) -> Any:
        """The answer of ``os.path.<kind>`` for ``path`` with its root prefix replaced."""
        if path == self.shown:
            path = self.actual
        elif path.startswith(os.path.join(self.shown, "")):
            path = os.path.join(self.actual, path[len(os.path.join(self.shown, "")) :])
        return super().ask(kind, path)


def ask(probes: FsProbes | None, kind: str, path: str) -> Any:
    """``os.path.<kind>(path)``, recorded in ``probes`` when given.

    Examples:
        >>> ask(None, "isdir", "/")
        True
    """
    return _PROBES[kind](path) if probes is None else probes.ask(kind, path)


def _same_file(a: str, b: str, probes: FsProbes | None = None) -> bool:
    try:
        return bool(ask(probes, "exists", b)) and ask(probes, "realpath", a) == ask(probes, "realpath", b)
    except OSError:
        return False


def identity_error(
    root: str, path: str, meta: dict[str, Any], compression: Compression, probes: FsProbes | None = None
) -> str | None:
    """Upstream's ``assertStoredIdentity`` for a listed header, as a message.

    Examples:
        >>> identity_error("/r", "/r/_no-cwd/a/session.jsonl", {"id": "a"}, "none") is None
        True
        >>> identity_error("/r", "/r/_no-cwd/a/session.jsonl", {"id": "b"}, "none")
        'corrupt session log "/r/_no-cwd/a/session.jsonl": header id "b" and cwd identify "/r/_no-cwd/b/session.jsonl"'
    """
    try:
        project = project_dir_name(meta.get("cwd", MISSING))
        expected = os.path.join(root, project, encode_segment(meta["id"]), log_name(compression))
    except (PathIdentityError, TypeError) as error:
        return f'corrupt session log "{path}": header id cannot name a storage path ({error})'
    if path == expected or _same_file(path, expected, probes):
        return None
    return f'corrupt session log "{path}": header id "{meta["id"]}" and cwd identify "{expected}"'
