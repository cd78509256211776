"""A researcher's verdicts on sessions, kept in one SQLite file outside the corpus (``Labels``).

A label is a short verdict (``"false-positive"``, ``"needs-review"``, ``"good-run"``) a person gives
a session, with an optional note, its author and when it was given. The store is one SQLite file:
each write is one transaction (a crash mid-write leaves the file as it was before it: SQLite's
journal), concurrent writers wait for each other (``busy_timeout``) instead of failing, and readers
never see half a write. The file lives outside the corpus: corpora are read-only.

Every door that takes a store path (``read_corpus(root, labels=...)``, ``filter_runs(label_store=...)``,
``compare --labels``, ``CatalogBrowser``, ``DiagnosticsDashboard``) makes a ``Labels`` with the
directories it protects (``store.source.protected_roots``), and the store and its SQLite side files
(``-journal``, ``-wal``, ``-shm``, made next to it) pass the ownership check of every written file
(``outputs.check_output``) then and before each connection: not inside a corpus root or an archive's
recorded root, not a symbolic link, not a hard link of another file (a corpus log), a regular file or a
new name. A write turns a WAL store back to a rollback journal (no side file stays); a read never
creates the store (SQLite ``mode=rw``). A door that only reads (a filter) refuses a store that does not
exist (``must_exist``) rather than finding no label.
"""

from __future__ import annotations

import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager, suppress

import polars as pl

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.outputs import OutputError, check_output, inside

__all__ = ["LABEL_SCHEMA", "Labels", "LabelsError", "session_labels"]

LABEL_SCHEMA: dict[str, pl.DataType] = {
    "session_id": pl.String(),
    "label": pl.String(),
    "note": pl.String(),
    "author": pl.String(),
    "time_ms": pl.Int64(),
    "time": pl.Datetime("ms", "UTC"),
}
"""The columns of ``Labels.frame``: the session, the label, its note and author (null when not
given), when it was given (epoch milliseconds, and as a UTC datetime)."""

MAX_LABEL = 200
"""Characters of a label (a verdict, not a note)."""
MAX_NOTE = 20_000
"""Characters of a note."""
BUSY_MS = 30_000
"""How long a write waits for another writer before it fails."""
SIDE_FILES = ("-journal", "-wal", "-shm")
"""The suffixes of the files SQLite makes next to a store while it is open."""

_SCHEMA = """
create table if not exists labels (
    id integer primary key,
    session_id text not null,
    label text not null,
    note text,
    author text,
    time_ms integer not null,
    unique (session_id, label)
)
"""


class LabelsError(SubagentCatalogError, ValueError):
    """A label store that cannot be used (not a store, locked too long), or a label that is not one."""


def _text(value: object, name: str, limit: int, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise LabelsError(f"{name} must be a non-empty string, not {value!r}", hint="labels are short verdicts")
    if len(value) > limit:
        raise LabelsError(f"{name} is longer than {limit:,} characters", hint="put the detail in a note")
    return value


class Labels:
    """A label store: one SQLite file, created on first write.

    Args:
        path: the store's file.
        protected: directories the store must lie outside (corpus roots, an archive's recorded root).
        must_exist: refuse a store that does not exist (a door that only reads from it: a filter).

    Raises:
        LabelsError: the store fails the ownership check (``check``), or is missing and ``must_exist``.

    Examples:
        >>> import os, tempfile
        >>> store = Labels(os.path.join(tempfile.mkdtemp(), "labels.sqlite"))
        >>> store.add("s1", "needs-review", note="loops on grep", author="ana", time_ms=1_700_000_000_000)
        >>> store.add("s2", "good-run", time_ms=1_700_000_000_001)
        >>> store.frame().select("session_id", "label", "author").rows()
        [('s1', 'needs-review', 'ana'), ('s2', 'good-run', None)]
        >>> store.remove("s1", "needs-review")
        1
        >>> store.frame()["session_id"].to_list()
        ['s2']
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        protected: Sequence[str | os.PathLike[str]] = (),
        must_exist: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self.protected = [os.fspath(root) for root in protected]
        missing = must_exist and not os.path.lexists(self.path)
        if missing and not any(inside(self.path, root) for root in self.protected):  # else: refused as inside
            raise LabelsError(
                f"no label store at {self.path!r}",
                hint="check the path; a store is made by the first label given "
                "(CatalogBrowser(corpus, labels=PATH).add_label, Labels(PATH).add)",
            )
        self.check()

    def __repr__(self) -> str:
        return f"Labels({self.path!r})"

    def check(self) -> None:
        """Refuse a store, or a side file of it, that this package must not write (``outputs.check_output``).

        Raises:
            LabelsError: inside a protected directory, its directory missing, a symbolic link, a hard
                link of another file, or not a regular file.

        Examples:
            >>> import tempfile
            >>> corpus = tempfile.mkdtemp()
            >>> Labels(corpus + "/labels.sqlite", protected=[corpus])
            Traceback (most recent call last):
            ...
            subagent_catalog.store.labels.LabelsError: refusing to write the label store ...inside the corpus ...
        """
        try:
            check_output(self.path, protected=self.protected, stream=False, role="the label store")
            for suffix in SIDE_FILES:  # in the store's directory, checked above
                check_output(self.path + suffix, stream=False, role="the label store's side file")
        except OutputError as error:
            raise LabelsError(str(error.args[0]), hint=error.hint) from None

    @contextmanager
    def _connect(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        self.check()
        if not write and not os.path.exists(self.path):
            raise FileNotFoundError(self.path)
        uri = f"file:{urllib.parse.quote(os.fsencode(os.path.abspath(self.path)))}?mode={'rwc' if write else 'rw'}"
        try:
            with closing(sqlite3.connect(uri, uri=True, timeout=BUSY_MS / 1000, isolation_level=None)) as connection:
                if write:  # a WAL store goes back to a rollback journal (no side file stays); in use: it stays
                    connection.execute("pragma busy_timeout = 0")
                    with suppress(sqlite3.OperationalError):
                        connection.execute("pragma journal_mode = delete")
                connection.execute(f"pragma busy_timeout = {BUSY_MS}")
                if write:
                    connection.execute("begin immediate")
                    connection.execute(_SCHEMA)
                try:
                    yield connection
                except BaseException:
                    if write:
                        connection.execute("rollback")
                    raise
                if write:
                    connection.execute("commit")
        except sqlite3.DatabaseError as error:
            raise LabelsError(
                f"label store {self.path!r}: {error}",
                hint="is it a label store written by subagent_catalog (an SQLite file)? is another writer stuck?",
            ) from None

    def add(
        self,
        session_id: str,
        label: str,
        *,
        note: str | None = None,
        author: str | None = None,
        time_ms: int | None = None,
    ) -> None:
        """Give a session a label (giving it again replaces its note, author and time).

        Raises:
            LabelsError: an empty or overlong label, note or author; a store that is not one.
        """
        session = _text(session_id, "session_id", 1_000, required=True)
        name = _text(label, "label", MAX_LABEL, required=True)
        text = _text(note, "note", MAX_NOTE, required=False)
        who = _text(author, "author", MAX_LABEL, required=False)
        when = int(time.time() * 1000) if time_ms is None else time_ms
        if isinstance(when, bool) or not isinstance(when, int):
            raise LabelsError(f"time_ms must be epoch milliseconds, not {time_ms!r}")
        with self._connect(write=True) as connection:
            connection.execute(
                "insert into labels (session_id, label, note, author, time_ms) values (?, ?, ?, ?, ?) "
                "on conflict (session_id, label) do update set note = excluded.note, "
                "author = excluded.author, time_ms = excluded.time_ms",
                (session, name, text, who, when),
            )

    def remove(self, session_id: str, label: str | None = None) -> int:
        """Take a label off a session (``label=None``: every label of it); returns how many were removed."""
        if not os.path.exists(self.path):
            return 0
        where, values = ("", (session_id,)) if label is None else (" and label = ?", (session_id, label))
        with self._connect(write=True) as connection:
            return connection.execute(f"delete from labels where session_id = ?{where}", values).rowcount

    def frame(self) -> pl.DataFrame:
        """Every label, in the order they were given (``LABEL_SCHEMA``); an absent store has none.

        Raises:
            LabelsError: the file is not a label store.
        """
        try:
            with self._connect(write=False) as connection:
                try:
                    rows = connection.execute(
                        "select session_id, label, note, author, time_ms from labels order by time_ms, id"
                    ).fetchall()
                except sqlite3.OperationalError as error:
                    if "no such table" in str(error):
                        rows = []
                    else:
                        raise
        except FileNotFoundError:
            rows = []
        frame = pl.DataFrame(rows, schema=list(LABEL_SCHEMA)[:5], orient="row")
        frame = frame.cast({name: LABEL_SCHEMA[name] for name in frame.columns})
        return frame.with_columns(pl.col("time_ms").cast(pl.Datetime("ms")).dt.replace_time_zone("UTC").alias("time"))


def session_labels(sessions: pl.DataFrame, labels: Labels) -> pl.DataFrame:
    """``sessions`` with a ``labels`` column: each session's labels (by its id), in the order given.

    A session no label names has an empty list; a log without a session id has null.

    Examples:
        >>> import os, tempfile
        >>> store = Labels(os.path.join(tempfile.mkdtemp(), "l.sqlite"))
        >>> store.add("a", "x", time_ms=1)
        >>> session_labels(pl.DataFrame({"session_id": ["a", "b", None]}), store)["labels"].to_list()
        [['x'], [], None]
    """
    given = labels.frame().group_by("session_id", maintain_order=True).agg(pl.col("label").alias("labels"))
    joined = sessions.join(given, on="session_id", how="left", maintain_order="left")
    return joined.with_columns(
        pl.when(pl.col("session_id").is_null())
        .then(None)
        .otherwise(pl.col("labels").fill_null(pl.lit([], dtype=pl.List(pl.String))))
        .alias("labels")
    )
