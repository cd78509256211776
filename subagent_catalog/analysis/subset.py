"""Filtered frames of one corpus: the sessions a condition keeps, with their descriptors, problems and events.

``subset(corpus, where)`` keeps the ``sessions`` rows a Polars expression holds for, and what belongs
to them: ``descriptors`` of the kept session files (by ``path``), ``problems`` but those of the files
left out (corpus-level problems stay: they belong to no file), loaded ``events`` of the kept sessions
(an id shared with a file left out is read again, from the kept logs only), and a kept log's exact
source path. ``project_subset(corpus, projects)`` keeps the sessions of named project directories;
``Window.corpus`` (``analysis.window``) keeps a time window. ``compare`` takes any of them, so two
projects, two days or two models of one corpus compare like two corpora.

What the whole root's read decided stays: a session's facts, ``list_order``, a duplicate id found
across projects, and ``listing_error`` (upstream's listing of the root fails as a whole). A listing
computed from a subset is that of a root holding its logs only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import polars as pl

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.source import Source

__all__ = ["SubsetError", "project_subset", "subset"]


class SubsetError(SubagentCatalogError, ValueError):
    """A condition that cannot select sessions, or a project the corpus does not have."""


def subset(source: Source, where: pl.Expr) -> Corpus:
    """The corpus restricted to the sessions whose ``sessions`` row ``where`` holds for (null: left out).

    Args:
        source: a read corpus or an opened archive (its frames are collected; events left out).
        where: a boolean expression over the ``sessions`` columns, e.g. ``pl.col("project_dir") == "p"``.

    Raises:
        SubsetError: ``where`` names a column ``sessions`` lacks or is not a condition.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/sample")
        >>> webapp = subset(corpus, pl.col("project_dir") == "--home-dev-projects-webapp--")
        >>> webapp.sessions.height < corpus.sessions.height, webapp.sessions["project_dir"].unique().to_list()
        (True, ['--home-dev-projects-webapp--'])
        >>> set(webapp.descriptors["path"]) <= set(webapp.sessions["path"])
        True
        >>> subset(corpus, pl.col("no_such_column") == 1)
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.subset.SubsetError: cannot select sessions by ... (hint: ...)
    """
    corpus = source.to_corpus()
    indexed = corpus.sessions.with_row_index("_subset_row")
    try:
        kept = indexed.filter(where)
    except (pl.exceptions.PolarsError, TypeError, ValueError) as error:
        message = " ".join(str(error).split())[:200]
        raise SubsetError(
            f"cannot select sessions by {where}: {type(error).__name__}: {message}",
            hint="give a boolean expression over corpus.sessions columns, e.g. pl.col('project_dir') == 'name'",
        ) from None
    return keep_sessions(corpus, indexed, kept)


def keep_sessions(corpus: Corpus, indexed: pl.DataFrame, kept: pl.DataFrame) -> Corpus:
    """The corpus holding the ``kept`` rows of ``indexed`` (its sessions with a ``_subset_row`` index) only.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> empty = read_corpus(tempfile.mkdtemp())
        >>> indexed = empty.sessions.with_row_index("_subset_row")
        >>> keep_sessions(empty, indexed, indexed).sessions.height
        0
    """
    outside = indexed.join(kept.select("_subset_row"), on="_subset_row", how="anti")
    rows = kept["_subset_row"].to_list()
    events = corpus._events
    if events is not None:
        ids = kept["session_id"].drop_nulls()
        if ids.is_in(outside["session_id"].drop_nulls().implode()).any():
            events = None  # events carry only the session id: an id shared with a log outside is read again
        else:
            events = events.filter(pl.col("session_id").is_in(ids.implode()))
    narrowed = dataclasses.replace(
        corpus,
        sessions=kept.drop("_subset_row"),
        descriptors=corpus.descriptors.filter(pl.col("path").is_in(kept["path"].implode())),
        problems=corpus.problems.filter(~pl.col("path").is_in(outside["path"].implode()).fill_null(False)),
        _events=events,
        _sources=None if corpus._sources is None else corpus._sources.gather(rows),
    )
    narrowed.windowed(corpus, kept, events_loaded=events is not None)  # an archive's: events from its files
    return narrowed


def project_subset(source: Source, projects: Sequence[str]) -> Corpus:
    """The corpus restricted to the sessions of the named project directories (``project_dir``).

    Raises:
        SubsetError: no project is named, or a name is not a project directory of the corpus (the hint
            lists some that are).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/sample")
        >>> project_subset(corpus, ["--srv-research-agents--"]).sessions["project_dir"].unique().to_list()
        ['--srv-research-agents--']
        >>> project_subset(corpus, ["webapp"])
        Traceback (most recent call last):
        ...
        subagent_catalog.analysis.subset.SubsetError: no project directory 'webapp' in data/sample (hint: ...)
    """
    corpus = source.to_corpus()
    names = list(dict.fromkeys(projects))
    if not names:
        raise SubsetError("no project named", hint="name one or more project directories of the corpus")
    present = set(corpus.sessions["project_dir"].drop_nulls().to_list())
    for name in names:
        if name not in present:
            known = ", ".join(repr(p) for p in sorted(present)[:8]) or "none"
            raise SubsetError(
                f"no project directory {name!r} in {corpus.root}",
                hint=f"name a directory under the root that holds session logs: {known}",
            )
    return subset(corpus, pl.col("project_dir").is_in(names))
