"""The runs of a corpus with or without a label, or with or without a finding of one kind.

Researchers ask "how did the runs labelled ``bad`` differ from the rest" or "compare only the runs
without a tool loop". ``filter_runs`` narrows a corpus (or an archive) to such runs with
``analysis.subset`` (what the whole read decided stays: ``list_order``, a session's facts) and says how
many it left out; ``compare`` applies it to each side and says so in its notes.

A label is a researcher's verdict (``store.labels``): the ``labels`` column of a corpus read with
``read_corpus(..., labels=PATH)``, or a label store given here. A finding kind is a built-in detector's
name (``findings.DETECTORS``) or a user rule's (``rules=``: a rules file); the findings are those
``findings`` computes (with its cache). A session without a session id carries no label: it has none of
them (it is kept by ``without_label``).
"""

from __future__ import annotations

import os
from typing import NamedTuple

import polars as pl

from subagent_catalog.analysis.findings import DETECTORS, FindingsError, findings, load_rules
from subagent_catalog.analysis.subset import SubsetError, subset
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.source import Source
from subagent_catalog.store.labels import Labels, session_labels

__all__ = ["Filtered", "describe_filter", "filter_runs"]


class Filtered(NamedTuple):
    """A narrowed corpus, how many sessions it had and how many the filter left out."""

    corpus: Corpus
    total: int
    left_out: int


def describe_filter(
    *,
    label: str | None = None,
    without_label: str | None = None,
    finding: str | None = None,
    without_finding: str | None = None,
) -> str | None:
    """The filter in words (``None``: no filter).

    Examples:
        >>> describe_filter(label="bad", without_finding="tool-loop")
        "label 'bad', no tool-loop finding"
        >>> describe_filter() is None
        True
    """
    parts = []
    if label is not None:
        parts.append(f"label {label!r}")
    if without_label is not None:
        parts.append(f"without label {without_label!r}")
    if finding is not None:
        parts.append(f"a {finding} finding")
    if without_finding is not None:
        parts.append(f"no {without_finding} finding")
    return ", ".join(parts) or None


def _kind_orders(source: Source, kind: str, rules: str | os.PathLike[str] | None) -> list[int]:
    """The ``list_order`` of every session with a finding of this kind."""
    if kind in DETECTORS:
        found = findings(source, detectors=[kind])
    else:
        chosen = [rule for rule in load_rules(rules) if rule.name == kind] if rules is not None else []
        if not chosen:
            raise FindingsError(
                f"unknown finding kind {kind!r}",
                hint=f"give a detector ({', '.join(DETECTORS)}) or the name of a rule of the rules file",
            )
        found = findings(source, detectors=[], rules=chosen)
    return found["list_order"].unique().to_list()


def filter_runs(
    source: Source,
    *,
    label: str | None = None,
    without_label: str | None = None,
    finding: str | None = None,
    without_finding: str | None = None,
    label_store: str | os.PathLike[str] | None = None,
    rules: str | os.PathLike[str] | None = None,
) -> Filtered:
    """The sessions of ``source`` with (or without) a label, with (or without) a finding of a kind; all given must hold.

    Args:
        source: a read corpus or an opened archive.
        label: keep the sessions with this label.
        without_label: keep the sessions without this label.
        finding: keep the sessions with a finding of this kind.
        without_finding: keep the sessions without a finding of this kind.
        label_store: the label store (``Labels``' file: existing, outside the source's corpus root and an
            archive's recorded root); default: the ``labels`` column of a corpus read with ``labels=``.
        rules: a rules file whose rules' names ``finding`` and ``without_finding`` may give.

    Returns:
        The narrowed corpus, its session count before, and how many sessions the filter left out.

    Raises:
        SubsetError: a label filter over sessions without labels and no ``label_store``.
        LabelsError: a ``label_store`` that does not exist or fails the ownership check (``Labels``).
        FindingsError: a finding kind that is neither a detector nor a rule of ``rules``.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/findings")
        >>> kept = filter_runs(corpus, finding="tool-loop")
        >>> kept.corpus.sessions["session_id"].to_list(), kept.left_out == kept.total - 1
        (['loop-yes'], True)
        >>> filter_runs(corpus, without_finding="tool-loop").left_out
        1
    """
    corpus = source.to_corpus()
    sessions = corpus.sessions
    where = pl.lit(True)
    if label is not None or without_label is not None:
        if label_store is not None:
            store = Labels(label_store, protected=source.protected_roots(), must_exist=True)
            sessions = session_labels(sessions.drop("labels", strict=False), store)
        elif "labels" not in sessions.columns:
            raise SubsetError(
                "these sessions carry no labels to filter by",
                hint="read the corpus with read_corpus(root, labels=PATH), or give label_store=PATH (CLI: --labels)",
            )
        has = pl.col("labels").list.contains
        if label is not None:
            where &= has(label).fill_null(False)
        if without_label is not None:
            where &= ~has(without_label).fill_null(False)
    if finding is not None:
        where &= pl.col("list_order").is_in(_kind_orders(source, finding, rules))
    if without_finding is not None:
        where &= ~pl.col("list_order").is_in(_kind_orders(source, without_finding, rules))
    kept = sessions.filter(where)["list_order"].to_list()
    narrowed = subset(corpus, pl.col("list_order").is_in(kept))
    return Filtered(narrowed, sessions.height, sessions.height - narrowed.sessions.height)
