"""The browser's findings and labels: the ``finding`` and ``session_label`` filters, the pane's label control.

``CatalogBrowser`` takes this mixin. The findings (``analysis.findings.findings``, over the whole corpus)
are computed on the first use of the ``finding`` filter (setting it, or opening the filters in the front
end), never at construction, and kept on the browser; the pane of one session computes only that
session's (``findings(..., sessions=[id])``: its own log is read). The filter's values are the kinds found
(``ANY_FINDING`` first: a run with any finding), then the user rules' kinds that found nothing.

The labels are a ``store.labels.Labels`` store: ``CatalogBrowser(corpus, labels=path)`` reads it (a store
under the corpus root or an archive's recorded root, a link or a hard link of another file, or in a
directory that does not exist, is refused: ``outputs.check_output``) and the pane's label control writes to it
(``add_label``, ``remove_label``: the selected session); the ``session_label`` filter offers every label
given. Without ``labels=``, a corpus read with ``read_corpus(root, labels=path)`` shows its ``labels``
column, read-only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import polars as pl
import traitlets

from subagent_catalog.analysis.findings import FACTS_ONLY, FINDING_SCHEMA, Rule, findings, load_rules
from subagent_catalog.analysis.findings.schema import finding_counts
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.store.labels import Labels, LabelsError, session_labels

__all__ = ["ANY_FINDING", "FindingLabelFilters", "Rule", "finding_choices", "label_choices"]

ANY_FINDING = "(any finding)"
"""The ``finding`` filter's value for a run with at least one finding (no kind has spaces or brackets)."""


def finding_choices(found: pl.DataFrame, rule_names: Sequence[str] = ()) -> list[str]:
    """The ``finding`` filter's values: ``ANY_FINDING``, the kinds found (most runs first), the rules that found none.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.findings import findings
        >>> found = findings(read_corpus("data/findings"), detectors=["tool-loop", "stalled"])
        >>> finding_choices(found, ["aws-key"])
        ['(any finding)', 'stalled', 'tool-loop', 'aws-key']
    """
    runs = finding_counts(found, "kind").sort(["runs", "kind"], descending=[True, False])
    kinds = [str(kind) for kind in runs["kind"].to_list()]
    return [ANY_FINDING, *kinds, *(name for name in rule_names if name not in kinds)]


def label_choices(labels: pl.Series | None) -> list[str]:
    """The ``session_label`` filter's values: every label given to a session, sorted.

    Examples:
        >>> label_choices(pl.Series([["b", "a"], [], None, ["a"]]))
        ['a', 'b']
    """
    return [] if labels is None else sorted({str(value) for value in labels.explode().drop_nulls().to_list()})


class FindingLabelFilters(traitlets.HasTraits):
    """The traits and state ``CatalogBrowser`` takes from here (its ``finding`` and ``session_label`` filters)."""

    finding = traitlets.Unicode(
        None, allow_none=True, help=f"runs with a finding of this kind ({ANY_FINDING}: any); computes the findings"
    ).tag(sync=True)
    session_label = traitlets.Unicode(None, allow_none=True, help="runs given this label").tag(sync=True)
    labels_path = traitlets.Unicode("", help="the label store the pane writes to ('': none, labels read-only)").tag(
        sync=True
    )
    selected_labels = traitlets.List(traitlets.Dict(), help="the selected session's labels: label, note, author").tag(
        sync=True
    )
    label_error = traitlets.Unicode("", help="why the last label write failed ('': it did not)").tag(sync=True)
    findings_loaded = traitlets.Bool(False, help="whether the corpus's findings have been computed").tag(sync=True)
    findings_note = traitlets.Unicode("", help="what the findings leave out ('': nothing)").tag(sync=True)

    corpus: Corpus
    choices: Any
    selected: Any
    _key_of_order: dict[int, int]

    def _init_findings(
        self, *, labels: str | os.PathLike[str] | None, rules: str | os.PathLike[str] | Sequence[Rule] | None
    ) -> None:
        """Check the label store and the rules (before anything is shown), read the labels."""
        self._rules: list[Rule] = load_rules(rules) if isinstance(rules, str | os.PathLike) else list(rules or [])
        self._store = Labels(labels, protected=self.corpus.protected_roots()) if labels is not None else None
        self._found: pl.DataFrame | None = None
        self._pane_found: dict[int, pl.DataFrame] = {}
        self._label_lists: pl.Series | None = None
        self._kinds_column: pl.Series | None = None
        if self._store is not None:
            self.labels_path = self._store.path
        self._set_choice("finding", [])  # its values once the findings are computed (load_findings)
        self._read_labels()
        self.observe(self._on_new_selection, names=["selected"])

    def _on_new_selection(self, _change: dict[str, Any]) -> None:
        self.label_error = ""  # the last write's error was about the session selected before
        self._show_labels()

    # ------------------------------------------------------------- findings

    def load_findings(self) -> pl.DataFrame:
        """The corpus's findings (``FINDING_SCHEMA``), computed on first use and kept; the filter's values follow.

        Over an archive without events whose root is gone, only the detectors that read no log run
        (``FACTS_ONLY``) and ``findings_note`` says the findings are a lower bound.

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> from subagent_catalog.views.widgets import CatalogBrowser
            >>> browser = CatalogBrowser(read_corpus("data/findings"))
            >>> browser.findings_loaded, browser.load_findings().height, browser.findings_loaded
            (False, 11, True)
        """
        if self._found is None:
            if self.corpus.events_available():
                found = findings(self.corpus, rules=self._rules)
            else:
                found = findings(self.corpus, detectors=FACTS_ONLY)
                self.findings_note = (
                    "a lower bound: only " + ", ".join(FACTS_ONLY) + " ran (no events table, and the corpus root "
                    "is not here)"
                )
            self._found = found
            kinds: list[list[str]] = [[] for _ in range(self.corpus.sessions.height)]  # by key; [] for none
            for order, kind in zip(found["list_order"].to_list(), found["kind"].to_list(), strict=True):
                key = self._key_of_order.get(order)
                if key is not None and kind not in kinds[key]:
                    kinds[key].append(kind)
            self._kinds_column = pl.Series("finding_kinds", kinds, dtype=pl.List(pl.String))
            self._set_choice("finding", finding_choices(found, [rule.name for rule in self._rules]))
            self.findings_loaded = True
        return self._found

    def session_findings(self, key: int) -> pl.DataFrame:
        """One session's findings (the kept corpus's, else computed for it alone: only its log is read).

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> from subagent_catalog.views.widgets import CatalogBrowser
            >>> browser = CatalogBrowser(read_corpus("data/findings"))
            >>> browser.session_findings(browser.find("loop-yes"))["kind"].to_list(), browser.findings_loaded
            (['tool-loop'], False)
        """
        order = self.corpus.sessions["list_order"][key]
        if self._found is not None:
            return self._found.filter(pl.col("list_order") == order)
        cached = self._pane_found.get(key)
        if cached is None:
            session_id = self.corpus.sessions["session_id"][key]
            if session_id is None or not self.corpus.events_available():
                cached = pl.DataFrame(schema=FINDING_SCHEMA) if session_id is None else self.load_findings()
            else:
                cached = findings(self.corpus, rules=self._rules, sessions=[session_id])
            cached = cached.filter(pl.col("list_order") == order)
            self._pane_found[key] = cached
        return cached

    def _pane_findings(self, key: int) -> pl.DataFrame | str:
        """The pane's findings of a session, or why they are unknown (the pane is shown either way)."""
        try:
            return self.session_findings(key)
        except SubagentCatalogError as error:
            return str(error)

    # --------------------------------------------------------------- labels

    def _read_labels(self) -> None:
        sessions = self.corpus.sessions
        if self._store is not None:
            self._label_lists = session_labels(sessions.select("session_id"), self._store)["labels"]
        elif "labels" in sessions.columns:
            self._label_lists = sessions["labels"]
        self._set_choice("session_label", label_choices(self._label_lists))
        self._show_labels()

    @property
    def session_labels(self) -> pl.Series | None:
        """Each session's labels (a row of ``corpus.sessions`` each), as the store holds them now; ``None``: no labels.

        Examples:
            >>> import os, tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> from subagent_catalog.views.widgets import CatalogBrowser
            >>> browser = CatalogBrowser(read_corpus("data/findings"), labels=os.path.join(tempfile.mkdtemp(), "l.db"))
            >>> browser.add_label("x", session=browser.find("loop-yes"))
            >>> key = browser.find("loop-yes")
            >>> browser.session_labels[key].to_list(), CatalogBrowser(browser.corpus).session_labels
            (['x'], None)
        """
        return self._label_lists

    def _show_labels(self) -> None:
        key = self.selected
        if key is None or self._label_lists is None:
            self.selected_labels = []
            return
        value = self._label_lists[key]
        names = [] if value is None else list(value)
        if self._store is None or not names:
            self.selected_labels = [{"label": str(name), "note": None, "author": None} for name in names]
            return
        given = self._store.frame().filter(pl.col("session_id") == self.corpus.sessions["session_id"][key])
        self.selected_labels = given.select("label", "note", "author").to_dicts()

    def _labelled(self, session: int | None) -> tuple[Labels, str]:
        key = self.selected if session is None else session
        if self._store is None:
            raise LabelsError("this browser has no label store", hint="CatalogBrowser(corpus, labels='labels.sqlite')")
        if key is None:
            raise LabelsError("no session is selected", hint="select a session, or pass session=")
        session_id = self.corpus.sessions["session_id"][int(key)]
        if session_id is None:
            raise LabelsError("the session has no readable id", hint="labels are kept by session id")
        return self._store, str(session_id)

    def add_label(
        self, label: str, *, note: str | None = None, author: str | None = None, session: int | None = None
    ) -> None:
        """Give the selected session (or the one keyed ``session``) a label, in the store; the filter follows.

        Raises:
            LabelsError: no store (``CatalogBrowser(corpus, labels=path)``), no session, an empty label.

        Examples:
            >>> import os, tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> from subagent_catalog.views.widgets import CatalogBrowser
            >>> path = os.path.join(tempfile.mkdtemp(), "labels.sqlite")
            >>> browser = CatalogBrowser(read_corpus("data/findings"), labels=path)
            >>> browser.select_id("loop-yes"); browser.add_label("confirmed", note="same grep")
            >>> from subagent_catalog.store.labels import Labels
            >>> Labels(path).frame()["label"].to_list(), browser.selected_labels[0]["note"]
            (['confirmed'], 'same grep')
        """
        store, session_id = self._labelled(session)
        store.add(session_id, label, note=note, author=author)
        self._labels_changed()

    def remove_label(self, label: str, *, session: int | None = None) -> int:
        """Take a label off the selected session (or the one keyed ``session``); returns how many were removed.

        Examples:
            >>> import os, tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> from subagent_catalog.views.widgets import CatalogBrowser
            >>> browser = CatalogBrowser(read_corpus("data/findings"), labels=os.path.join(tempfile.mkdtemp(), "l.db"))
            >>> browser.select_id("loop-yes"); browser.add_label("x")
            >>> browser.remove_label("x"), browser.selected_labels
            (1, [])
        """
        store, session_id = self._labelled(session)
        removed = store.remove(session_id, label)
        self._labels_changed()
        return removed

    def _labels_changed(self) -> None:
        self.label_error = ""
        self._read_labels()
        if self.session_label is not None:
            self._on_filter_change({})

    def _on_filter_change(self, _change: dict[str, Any]) -> None:
        """Run the search and filters again (``CatalogBrowser``'s)."""

    # ------------------------------------------------------------ the hooks

    def _set_choice(self, name: str, values: list[str]) -> None:
        """Set one filter's values in ``choices`` (added at the end when it has none yet)."""
        kept = [[n, values if n == name else v] for n, v in self.choices]
        self.choices = kept if any(n == name for n, _ in kept) else [*kept, [name, values]]

    def _with_finding_columns(self, frame: pl.DataFrame, filters: dict[str, Any]) -> pl.DataFrame:
        """The nodes table with the ``finding_kinds`` (computed when the filter is set) and ``labels`` columns."""
        if "finding" in filters:
            try:
                self.load_findings()
            except SubagentCatalogError as error:  # no run is said to have a finding: the note says why
                self.findings_note = f"findings unavailable: {error}"
        columns: list[pl.Series | pl.Expr] = []
        if self._kinds_column is not None:
            columns.append(self._kinds_column)
        elif "finding" in filters:
            columns.append(pl.lit([], dtype=pl.List(pl.String)).alias("finding_kinds"))
        if self._label_lists is not None:
            columns.append(self._label_lists.alias("labels"))
        return frame.with_columns(columns) if columns else frame

    def _findings_message(self, content: dict[str, Any]) -> bool:
        """Handle the front end's ``findings``, ``label-add`` and ``label-remove`` requests (``False``: not one)."""
        kind = content.get("type")
        if kind == "findings":
            try:
                self.load_findings()
            except SubagentCatalogError as error:
                self.findings_note = f"findings unavailable: {error}"
            return True
        if kind not in ("label-add", "label-remove"):
            return False
        key = content.get("key")
        try:
            if not isinstance(key, int) or not 0 <= key < self.corpus.sessions.height:
                raise LabelsError(f"no session with key {key!r}", hint="select a session")
            if kind == "label-add":
                note = content.get("note") or None
                self.add_label(str(content.get("label", "")).strip(), note=note, session=key)
            else:
                self.remove_label(str(content.get("label", "")), session=key)
        except LabelsError as error:
            self.label_error = str(error)
        return True
