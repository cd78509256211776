"""Which ids name a session of a corpus, and a typed error for one that does not.

Upstream's ``listChildren(parent)`` of an id nobody uses returns no rows,
exactly like a session without subagents; the listing functions keep that.
``require_session`` tells the two apart for callers that want to (the CLI's
``list PARENT`` and ``report --parent``): an id is *known* when it is the
id of a session file or the ``parentSession`` a header names.
"""

from __future__ import annotations

import polars as pl

from subagent_catalog.catalog.model import CorpusSource, as_corpus
from subagent_catalog.catalog.source import is_table_source, source_reads
from subagent_catalog.errors import UnknownSessionError
from subagent_catalog.frames.nearest import unknown_id_hint
from subagent_catalog.read.jsvalue import frame_text

__all__ = ["known_session_ids", "require_session"]

SHOWN_ID = 200
"""The most characters of an unknown id an error message quotes."""


@source_reads
def known_session_ids(corpus: CorpusSource) -> set[str]:
    """Every id that names a session: the ids of session files and the ``parentSession`` values headers name.

    Files upstream's listing skips count when their header gives an id;
    the listing need not succeed.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth import writer as w
        >>> root = Path(tempfile.mkdtemp())
        >>> _ = w.write_session(root, w.header("kid", created_at=1, parent="P", subagent=True),
        ...                     w.simple_child_events("kid", w.descriptor("one-shot")), "none")
        >>> sorted(known_session_ids(read_corpus(root, cache=False)))
        ['P', 'kid']
    """
    if is_table_source(corpus):
        frame = corpus.scan("sessions").select("session_id", "parent_session").collect()
    else:
        frame = as_corpus(corpus).sessions
    return set(pl.concat([frame["session_id"], frame["parent_session"]]).drop_nulls().unique().to_list())


def _names_session(corpus: CorpusSource, session_id: str) -> bool:
    if is_table_source(corpus):  # out of core: one predicate over two columns, no set of every id
        if frame_text(session_id) != session_id:  # the columns hold frame text: such an id is never in them
            return False
        named = (pl.col("session_id") == session_id) | (pl.col("parent_session") == session_id)
        found: int = corpus.scan("sessions").filter(named).select(pl.len()).collect().item()
        return found > 0
    return session_id in known_session_ids(corpus)


@source_reads
def require_session(corpus: CorpusSource, session_id: str) -> None:
    """Raise ``UnknownSessionError`` when ``session_id`` names no session of the corpus.

    A known session without subagents passes: its listing is legitimately
    empty. The error's hint names the nearest known ids (``unknown_id_hint``).

    Raises:
        UnknownSessionError: the id is neither a session file's id nor a
            header's ``parentSession``.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth import writer as w
        >>> root = Path(tempfile.mkdtemp())
        >>> from subagent_catalog.read.paths import MISSING
        >>> events = w.simple_child_events("alpha-1", MISSING)
        >>> _ = w.write_session(root, w.header("alpha-1", created_at=1), events, "none")
        >>> corpus = read_corpus(root, cache=False)
        >>> require_session(corpus, "alpha-1")
        >>> require_session(corpus, "alpha-2")
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.UnknownSessionError: no session 'alpha-2' in the corpus (hint: did you mean alpha-1?)
    """
    if _names_session(corpus, session_id):
        return
    known = known_session_ids(corpus)
    otherwise = (
        f"none of the corpus's {len(known)} session ids is close to it: check the id and the root"
        if known
        else "the corpus holds no session at all: check the root"
    )
    nearest, hint = unknown_id_hint(session_id, known, otherwise=otherwise)
    shown = repr(session_id if len(session_id) <= SHOWN_ID else session_id[:SHOWN_ID] + "…")
    raise UnknownSessionError(session_id, nearest, message=f"no session {shown} in the corpus", hint=hint)
