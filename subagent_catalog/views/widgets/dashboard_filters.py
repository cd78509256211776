"""The dashboard's label and finding filters: the session files kept by ``with:X`` or ``without:X``.

A filter value is ``"with:NAME"`` or ``"without:NAME"`` (``None``: no filter). Labels are a label store's
(``store.labels.Labels``: an existing store outside the corpus, refused otherwise) or the ``labels`` column
of a corpus read with ``labels=``; they are read when the dashboard is built (one small SQLite read).
Findings are computed on first use of the finding filter, once, with every built-in detector
(``findings``, with its cache); a source whose logs cannot be read (an archive without events whose
root is gone) gets the detectors that read no log (``FACTS_ONLY``), and ``note`` says the filter then
works on a lower bound.
"""

from __future__ import annotations

import os
from typing import Any

import ipywidgets as widgets
import polars as pl

from subagent_catalog.analysis.findings import DETECTORS, FACTS_ONLY, findings
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.store.labels import Labels, session_labels
from subagent_catalog.views.widgets.finding_filter import label_choices

__all__ = ["RunFilters", "filter_dropdowns", "filter_options", "parse_filter"]

ANY = ""
"""The dropdowns' value for no filter."""


def parse_filter(value: str | None) -> tuple[bool, str] | None:
    """``(keep those with it, name)`` of a filter value, or ``None`` for no filter.

    Raises:
        ValueError: a value that is not ``with:NAME`` or ``without:NAME``.

    Examples:
        >>> parse_filter("with:bad"), parse_filter("without:tool-loop"), parse_filter(None)
        ((True, 'bad'), (False, 'tool-loop'), None)
        >>> parse_filter("bad")
        Traceback (most recent call last):
        ...
        ValueError: a filter is 'with:NAME' or 'without:NAME', not 'bad'
    """
    if value is None or value == ANY:
        return None
    mode, _, name = value.partition(":")
    if mode not in ("with", "without") or not name:
        raise ValueError(f"a filter is 'with:NAME' or 'without:NAME', not {value!r}")
    return mode == "with", name


def filter_options(names: list[str], noun: str) -> list[tuple[str, str]]:
    """A dropdown's options: no filter, then with and without each name.

    Examples:
        >>> filter_options(["bad"], "label")
        [('(any label)', ''), ('with bad', 'with:bad'), ('without bad', 'without:bad')]
    """
    options = [(f"(any {noun})", ANY)]
    for name in names:
        options += [(f"with {name}", f"with:{name}"), (f"without {name}", f"without:{name}")]
    return options


class RunFilters:
    """The session files a label filter and a finding filter keep (by ``path``).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> runs = RunFilters(read_corpus("data/findings"), None)
        >>> runs.found is None, runs.labels
        (True, [])
        >>> sorted(runs.paths(None, "with:tool-loop"))[0].endswith("loop-yes/session.jsonl")
        True
    """

    def __init__(self, corpus: Corpus, store: str | os.PathLike[str] | None) -> None:
        self.corpus = corpus
        sessions = corpus.sessions.select("path", "session_id", *(["labels"] if "labels" in corpus.sessions else []))
        if store is not None:
            labels = Labels(store, protected=corpus.protected_roots(), must_exist=True)  # only read: it must exist
            sessions = session_labels(sessions.drop("labels", strict=False), labels)
        self.labelled: pl.DataFrame | None = sessions if "labels" in sessions.columns else None
        self.labels = label_choices(self.labelled["labels"] if self.labelled is not None else None)
        self.kinds: list[str] = list(DETECTORS)
        self.found: pl.DataFrame | None = None
        self.note: str | None = None

    def findings(self) -> pl.DataFrame:
        """Every built-in detector's findings, computed on first use."""
        if self.found is None:
            try:
                self.found = findings(self.corpus)
            except SubagentCatalogError as error:
                self.found = findings(self.corpus, detectors=list(FACTS_ONLY))
                self.note = (
                    f"findings of the detectors that read logs are unknown ({error}): "
                    "the finding filter works on a lower bound"
                )
        return self.found

    def paths(self, label: str | None, finding: str | None) -> set[str] | None:
        """The paths the two filters keep (``None``: no filter given).

        Raises:
            ValueError: a filter value that is not one, a label filter without labels, an unknown kind.
        """
        keep = pl.lit(True)
        frame = self.corpus.sessions.select("path", "list_order")
        label_filter, finding_filter = parse_filter(label), parse_filter(finding)
        if label_filter is None and finding_filter is None:
            return None
        if label_filter is not None:
            if self.labelled is None:
                raise ValueError("this dashboard has no labels: build it with labels=PATH (a label store)")
            wanted, name = label_filter
            if name not in self.labels:
                raise ValueError(
                    f"no session has the label {name!r}; the labels are {', '.join(self.labels) or 'none'}"
                )
            frame = frame.with_columns(self.labelled["labels"])
            has = pl.col("labels").list.contains(name).fill_null(False)
            keep &= has if wanted else ~has
        if finding_filter is not None:
            wanted, kind = finding_filter
            if kind not in DETECTORS:
                raise ValueError(f"unknown finding kind {kind!r}; choose one of {', '.join(DETECTORS)}")
            orders = self.findings().filter(pl.col("kind") == kind)["list_order"].unique().implode()
            has = pl.col("list_order").is_in(orders)
            keep &= has if wanted else ~has
        return set(frame.filter(keep)["path"].to_list())


def filter_dropdowns(runs: RunFilters) -> tuple[Any, Any]:
    """The label and finding dropdowns (their values: ``""`` or a filter value).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> label, finding = filter_dropdowns(RunFilters(read_corpus("data/findings"), None))
        >>> label.disabled, finding.options[1]
        (True, ('with tool-loop', 'with:tool-loop'))
    """
    label = widgets.Dropdown(
        options=filter_options(runs.labels, "label"),
        value=ANY,
        description="label",
        disabled=not runs.labels,
        layout=widgets.Layout(width="220px"),
    )
    finding = widgets.Dropdown(
        options=filter_options(runs.kinds, "finding"),
        value=ANY,
        description="finding",
        layout=widgets.Layout(width="260px"),
    )
    return label, finding
