"""Finding one session's row by its id (and path): the lookup every one-session view starts from."""

from __future__ import annotations

from typing import Any

import polars as pl

from subagent_catalog.errors import SessionLookupError, UnknownSessionError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.nearest import unknown_id_hint

__all__ = ["find_session"]


def find_session(corpus: Corpus, session_id: str, *, path: str | None = None) -> dict[str, Any]:
    """The ``sessions`` row of the one log with this id (or at this ``path``).

    Raises:
        UnknownSessionError: no log has the id (the hint names the nearest ids, and says when it is a
            prefix too short to complete: ``frames.nearest.MIN_PREFIX``).
        SessionLookupError: several logs have it and ``path`` does not say
            which, or the id is only a ``parentSession`` other headers name.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import header, write_session
        >>> root = tempfile.mkdtemp()
        >>> _ = write_session(root, header("a317faa2", created_at=1), [], "none")
        >>> find_session(read_corpus(root), "a317faa2")["list_order"]
        0
        >>> find_session(read_corpus(root), "a317")
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.UnknownSessionError: no session log has id 'a317' (hint: did you mean a317faa2?)
        >>> find_session(read_corpus(root), "a31")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.UnknownSessionError: no ... 'a31' (hint: an id prefix needs at least 4 characters: ...)
    """
    sessions = corpus.sessions.filter(pl.col("session_id") == session_id)
    if path is not None:
        sessions = sessions.filter(pl.col("path") == path)
    if sessions.height == 1:
        return sessions.row(0, named=True)
    if sessions.height == 0:
        where = f" at {path!r}" if path is not None else ""
        naming = corpus.sessions.filter(pl.col("parent_session") == session_id).height
        if naming and path is None:
            raise SessionLookupError(
                f"session {session_id!r} has no log in the corpus ({naming} headers name it as their parent)",
                session_id=session_id,
                hint="its log is missing from this root: look for it in the archive it came from",
            )
        otherwise = "no id is close to it: check the root and --compression"
        near, hint = unknown_id_hint(session_id, corpus.sessions["session_id"].to_list(), otherwise=otherwise)
        message = f"no session log has id {session_id!r}{where}"
        raise UnknownSessionError(session_id, near, message=message, hint=hint)
    paths = sessions["path"].to_list()
    raise SessionLookupError(
        f"{len(paths)} logs have session id {session_id!r}: {', '.join(paths)}",
        session_id=session_id,
        hint="pass path= to say which",
    )
