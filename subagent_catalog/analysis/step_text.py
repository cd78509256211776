"""``transcript_text``: the whole text of one transcript step, which the views clip."""

from __future__ import annotations

import polars as pl

from subagent_catalog.analysis.transcript import transcript
from subagent_catalog.errors import SessionLookupError
from subagent_catalog.frames.source import Source


def transcript_text(corpus: Source, session_id: str, seq: int, *, path: str | None = None) -> str:
    """The whole text of one transcript step (the row whose ``seq`` is ``seq``): what a view clipped.

    Raises:
        SessionLookupError: see ``find_session``; also when the session has no
            step with this ``seq``.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.synth.writer import EventLog, header, write_session
        >>> root = tempfile.mkdtemp()
        >>> log = EventLog("s1"); log.turn_start(); log.user("a long text"); log.turn_end()
        >>> _ = write_session(root, header("s1", created_at=1), log.events, "none")
        >>> transcript_text(read_corpus(root), "s1", 1)
        'a long text'
    """
    corpus = corpus.to_corpus()  # a corpus, or an archive's frames
    rows = transcript(corpus, session_id, path=path).filter(pl.col("seq") == seq)
    if rows.height == 0:
        raise SessionLookupError(
            f"session {session_id!r} has no transcript step with seq {seq}",
            session_id=session_id,
            hint="a step's seq is the one its page shows (seq N), the seq of its first event",
        )
    return str(rows["text"][0] or "")
