"""Assembly of the corpus frames from a walk and per-file facts (no log I/O).

``assemble`` streams one ``LogFacts`` per file (in list order) into columns
(``frames.rows``: each file's own rows and its stored-identity check), drops
each file's facts once its rows are built, then applies upstream's
corpus-wide rules over the frames (``frames.rules``: duplicate ids, per-id
lookups, the whole-listing error, mixed encodings), and says when a root
holds nothing at all (``empty_root_row``).
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from subagent_catalog.frames.corpus import Corpus, facts_events, source_column
from subagent_catalog.frames.lookup import NameIndex, holders_in
from subagent_catalog.frames.probes import FsProbes, identity_error
from subagent_catalog.frames.rows import (
    DESCRIPTOR_KEYS,
    GROUP_ROOT,
    PROBLEM_KEYS,
    FrameChunks,
    display_path,
    problem_row,
    run_columns,
)
from subagent_catalog.frames.rules import (
    duplicate_candidates,
    duplicate_problems,
    duplicates_error,
    find_duplicates,
    first_listing_error,
    mark_duplicates,
)
from subagent_catalog.frames.schemas import DESCRIPTOR_SCHEMA, EVENT_SCHEMA, PROBLEM_SCHEMA
from subagent_catalog.read.discover import Discovery
from subagent_catalog.read.logread import LogFacts

__all__ = ["FsProbes", "assemble", "display_path", "identity_error", "run_columns"]

MIXED_ENCODINGS = "the root holds logs of both encodings; upstream refuses it in either mode"


def mixed_encodings_row(root: str) -> dict[str, object]:
    """The ``problems`` row of a root holding logs of both encodings (sorted after every file's).

    Examples:
        >>> mixed_encodings_row("/r")["kind"], mixed_encodings_row("/r")["archive_group"]
        ('mixed-encodings', 2)
    """
    row = problem_row("corpus", "mixed-encodings", "error", True, root, None, MIXED_ENCODINGS, None)
    row.update(project_dir=None, archive_group=GROUP_ROOT, archive_order=0, archive_sub=0)
    return row


def empty_root_row(root: str) -> dict[str, object]:
    """The ``problems`` row of a root that holds no session log and no listing failure: an empty corpus.

    Examples:
        >>> row = empty_root_row("/r")
        >>> row["kind"], row["severity"], row["scope"], row["archive_group"]
        ('empty-root', 'warning', 'corpus', 2)
    """
    message = f"no session log under {root!r}: the corpus is empty (a root holds <project>/<session>/session.jsonl)"
    row = problem_row("corpus", "empty-root", "warning", False, root, None, message, None)
    row.update(project_dir=None, archive_group=GROUP_ROOT, archive_order=0, archive_sub=0)
    return row


def sorted_by(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """``frame`` stably sorted by integer ``keys``: as it is when already in that order.

    Rows are built in key order but for a few added afterwards; sorting anyway
    would copy every column (and leave the chunks' memory behind, unreturned).

    Examples:
        >>> frame = pl.DataFrame({"a": [0, 1, 1], "b": [5, 0, 0], "x": ["p", "q", "r"]})
        >>> sorted_by(frame, ["a", "b"]) is frame, sorted_by(frame, ["b"])["x"].to_list()
        (True, ['q', 'r', 'p'])
    """
    ordered = pl.col(keys[-1]).diff() >= 0  # lexicographic: (k0, k1, ...) never decreases row to row
    for key in reversed(keys[:-1]):
        step = pl.col(key).diff()
        ordered = (step > 0) | ((step == 0) & ordered)
    if frame.height < 2 or frame.select(ordered.fill_null(True).all()).item():
        return frame
    return frame.sort(keys, maintain_order=True)


def assemble(
    found: Discovery,
    facts_list: Iterable[LogFacts],
    *,
    jobs: int | None = None,
    want_events: bool = False,
    probes: FsProbes | None = None,
) -> Corpus:
    """Build the corpus frames from a walk and per-file facts (no log I/O).

    ``facts_list`` is consumed once, in list order; each file's facts are
    dropped as soon as its rows are built. ``probes`` records the filesystem
    questions asked beyond the walk (the frames cache asks them again before
    it reuses the frames).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.read.discover import discover
        >>> assemble(discover(tempfile.mkdtemp(), "none"), []).listing_error is None
        True
    """
    chunks = FrameChunks(
        found.root,
        found.compression,
        probes=probes,
        index=NameIndex.build(found.project_names),
        holders=holders_in(found.project_names),
        polars=True,
    )
    chunks.add_entries((0, index, entry, None) for index, entry in enumerate(found.entries))
    events: list[pl.DataFrame] = []
    for order, (file, facts) in enumerate(zip(found.files, facts_list, strict=True)):
        chunks.add(order, file, facts)
        if want_events:
            events.append(facts_events(facts))
            facts.events_ipc = facts.events = None  # one copy of the events at a time
    sessions, descriptors, problems = chunks.frames()

    duplicates = find_duplicates(duplicate_candidates(sessions).collect())
    sessions = mark_duplicates(sessions, duplicates)
    extra = duplicate_problems(duplicates)
    if any(entry.kind == "encoding-mismatch" for entry in found.entries) and found.files:
        extra.append(mixed_encodings_row(found.root))
    entry_error = next((entry for entry in found.entries if entry.fails_listing), None)
    if not found.files and entry_error is None:
        extra.append(empty_root_row(found.root))  # nothing to list, and nothing fails: said, never silent
    if extra:
        problems = pl.concat([problems, pl.DataFrame(extra, schema=problems.schema)])

    file_error = first_listing_error(chunks.first_error, duplicates_error(duplicates))
    error = (entry_error.message, entry_error.path) if entry_error else (file_error[1:] if file_error else None)
    events_frame = None
    if want_events:
        events_frame = pl.concat(events, rechunk=False) if events else pl.DataFrame(schema=EVENT_SCHEMA)
    return Corpus(
        root=found.root,
        compression=found.compression,
        sessions=sessions,
        descriptors=sorted_by(descriptors, list(DESCRIPTOR_KEYS)).select(list(DESCRIPTOR_SCHEMA)),
        problems=sorted_by(problems, list(PROBLEM_KEYS)).select(list(PROBLEM_SCHEMA)),
        listing_error=error[0] if error else None,
        listing_error_path=error[1] if error else None,
        _events=events_frame,
        _jobs=jobs,
        _sources=source_column(found.files),
    )
