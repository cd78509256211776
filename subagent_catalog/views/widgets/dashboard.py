"""``DiagnosticsDashboard``: bar charts over a corpus's sessions; click a bar to list them.

The population is every session file, one row each: a subagent the catalog lists is its catalog row
(child or diagnostic, under its parent), any other session is a ``root`` (no ``parentSession``), a
``fork`` or an ``unlisted`` file; each row carries its file's facts (project, header
``delegationDepth``, creation day, read verdict, run outcome and facts) and its last descriptor
(version, mode, provider). ``scope`` counts all of them, only the listed subagents, or only the roots.
A dimension picks what the bars count (reason × cause, descriptor version, mode, provider, the run's
outcome, or the distribution of duration, events, bytes or tokens in decade bins); an optional split
draws one group of bars per value of a second dimension, every group in the same bar order. Bar
lengths are true to the counts (or to their logarithm with ``log_scale``); each bar is labelled with
its count and its share of the group. Clicking a bar's count sets ``selected_value`` (and
``selected_split``) and fills the table with the affected sessions (``dashboard_table``); with a
linked browser (``link_browser``) a click on a row of the table reveals its session there (``revealed``).

When upstream's listing fails for the corpus there are no catalog rows: the dashboard then counts the
session files themselves (outcome = read verdict, cause = read or identity cause) under a banner.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any, Literal

import ipywidgets as widgets
import polars as pl
import traitlets

from subagent_catalog.analysis.bins import BINS, binned, total_tokens
from subagent_catalog.analysis.run_names import session_name
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.analysis.tallies import split_tally
from subagent_catalog.catalog.model import Semantics
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import escape, listing_error_html
from subagent_catalog.frames.source import Source
from subagent_catalog.frames.units import MISSING, calendar_day, plural, share
from subagent_catalog.views import palette
from subagent_catalog.views.widgets.dashboard_filters import RunFilters, filter_dropdowns
from subagent_catalog.views.widgets.dashboard_reveal import reveal_in, row_clicked
from subagent_catalog.views.widgets.dashboard_rows import DashboardRows
from subagent_catalog.views.widgets.dashboard_table import TABLE_ROWS, affected_table_html
from subagent_catalog.views.widgets.session_tree import known_cost_column as _known

NONE = "(none)"
DIMENSIONS: dict[str, str] = {
    "reason_cause": "reason × cause",
    "reason": "listing outcome",
    "cause": "cause",
    "version": "descriptor version",
    "mode": "mode",
    "provider": "provider",
    "depth": "depth",
    "project": "project",
    "day": "day",
    "verdict": "read verdict",
    "outcome": "run outcome",
    "duration": "active time",
    "events": "events",
    "bytes": "bytes",
    "tokens": "tokens",
}
ORDERED_BY_VALUE = frozenset({"depth", "day", "version"})
BINNED = frozenset(BINS)
MAX_BARS = 40
LABEL_PIXELS = 300
DASHBOARD_STYLE = """<style>
.sc-dashboard { container-type: inline-size; }
.sc-dashboard .sc-table { background: #fff; color: #222; color-scheme: light; }
.sc-dashboard .sc-bar-label .widget-html-content { width: 100%; min-width: 0; overflow: hidden; }
.sc-dashboard .sc-bar-label .widget-html-content > div { text-align: right; }
@container (max-width: 520px) {
  .sc-dashboard .sc-bar-row { flex-wrap: wrap; }
  .sc-dashboard .sc-bar-label { flex: 1 1 100% !important; max-width: none !important; margin: 4px 0 0 !important; }
  .sc-dashboard .sc-bar-label .widget-html-content > div {
    text-align: left; white-space: normal !important; overflow-wrap: anywhere;
  }
  .sc-dashboard .sc-bar-track { flex-basis: 120px !important; }
}
</style>"""
"""The table stays light in a dark theme (its rows have light backgrounds); a bar's label is as wide as its box
and ends in an ellipsis when cut (its tooltip has it whole); below 520 px of dashboard width a bar's label
goes on its own line above the bar (a container query)."""
Scope = Literal["all", "subagents", "roots"]
SCOPES: dict[Scope, str] = {"all": "all sessions", "subagents": "listed subagents", "roots": "roots"}


def population(
    corpus: Corpus, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> tuple[pl.DataFrame, str | None]:
    """The dashboard's rows: one per session file, every dimension as a string column.

    ``kind`` is ``child`` or ``diagnostic`` for a subagent the catalog lists (its catalog row), else
    ``root``, ``fork`` or ``unlisted``; ``scope`` says which of ``subagents``/``roots`` it belongs to
    (``other`` for neither). Returns the frame and, when upstream's listing fails, the error message
    (the rows are then the session files, with ``kind`` = ``file``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> frame, error = population(read_corpus(tempfile.mkdtemp()))
        >>> frame.height, error, all(name in frame.columns for name in DIMENSIONS)
        (0, None, True)
    """
    sessions = corpus.sessions.select(
        "path",
        pl.col("session_id").alias("file_id"),
        pl.col("parent_session").alias("file_parent"),
        pl.col("identity_label").alias("file_label"),
        "name",
        "origin",
        pl.col("listed").fill_null(False).alias("file_listed"),
        "list_skip",
        pl.col("project_dir").alias("project"),
        pl.col("delegation_depth").cast(pl.String).fill_null("(unknown)").alias("depth"),
        calendar_day(pl.col("created_at_ms")).fill_null("(unknown)").alias("day"),  # "out of range" past year 9999
        "verdict",
        "read_cause",
        "identity_cause",
        pl.col("outcome").fill_null(NONE).alias("outcome"),
        "outcome_detail",
        "last_error_message",
        "last_error_code",
        "cost_usd",
        _known(corpus.sessions),
        "tool_results_failed",
        binned(pl.col("active_ms"), "duration").alias("duration"),  # idle time is not duration
        binned(
            pl.when(pl.col("verdict").is_in(["skipped", "failed"])).then(None).otherwise(pl.col("event_count")),
            "events",
        ).alias("events"),
        binned(pl.col("bytes"), "bytes").alias("bytes"),
        pl.col("run_wall_ms").alias("wall_ms"),
        "active_ms",
        "event_count",
        pl.col("bytes").alias("bytes_read"),
        total_tokens().alias("tokens_total"),
    ).with_columns(binned(pl.col("tokens_total"), "tokens").alias("tokens"))
    last = (
        corpus.descriptors.filter(pl.col("is_last"))
        .select(
            "path",
            pl.col("version").alias("last_version"),
            pl.col("mode").alias("last_mode"),
            pl.col("provider").alias("last_provider"),
        )
        .unique("path", keep="last")
    )
    error: str | None = None
    try:
        rows = catalog(corpus, semantics=semantics, live=live).filter(pl.col("kind").is_in(["child", "diagnostic"]))
    except CatalogError as failure:
        error = str(failure)
        base = sessions.with_columns(
            pl.col("file_id").alias("id"),
            pl.col("file_parent").alias("parent"),
            pl.lit("file").alias("kind"),
            pl.lit(None, pl.String).alias("mode"),
            pl.col("file_label").alias("label"),
            pl.col("verdict").alias("reason"),
            pl.coalesce("read_cause", "identity_cause").fill_null("—").alias("cause"),
            pl.lit(None, pl.String).alias("cause_detail"),
            pl.when(pl.col("origin") == "subagent").then(pl.lit("subagents")).otherwise(pl.lit("other")).alias("scope"),
        )
    else:
        listed = rows.select("path", "id", "parent", "kind", "mode", "label", "reason", "cause", "cause_detail").join(
            sessions, on="path", how="left"
        )
        listed = listed.with_columns(
            pl.when(pl.col("kind") == "child").then(pl.lit("child")).otherwise(pl.col("reason")).alias("reason"),
            pl.when(pl.col("kind") == "child")
            .then(pl.lit("—"))
            .otherwise(pl.col("cause").fill_null("?"))
            .alias("cause"),
            pl.lit("subagents").alias("scope"),
        )
        others = sessions.join(rows.select("path").unique(), on="path", how="anti")
        kind = (
            pl.when(~pl.col("file_listed") | pl.col("file_id").is_null())
            .then(pl.lit("unlisted"))
            .when(pl.col("file_parent").is_null())
            .then(pl.lit("root"))
            .otherwise(pl.lit("fork"))
        )
        others = others.with_columns(kind.alias("kind")).with_columns(
            pl.col("file_id").alias("id"),
            pl.col("file_parent").alias("parent"),
            pl.lit(None, pl.String).alias("mode"),
            pl.col("file_label").alias("label"),
            pl.col("kind").alias("reason"),
            pl.when(pl.col("kind") == "unlisted")
            .then(pl.coalesce("list_skip", "read_cause", "identity_cause").fill_null("?"))
            .otherwise(pl.lit("—"))
            .alias("cause"),
            pl.lit(None, pl.String).alias("cause_detail"),
            pl.lit("other").alias("scope"),
        )
        base = pl.concat([listed, others.select(listed.columns)], how="vertical_relaxed")
    base = base.with_columns(
        pl.when(pl.col("file_parent").is_null() & (pl.col("scope") == "other"))
        .then(pl.lit("roots"))
        .otherwise(pl.col("scope"))
        .alias("scope")
    )
    frame = base.join(last, on="path", how="left").with_columns(
        pl.when(pl.col("kind").is_in(["child", "root", "fork"]))
        .then(pl.col("kind"))
        .otherwise(pl.col("reason") + pl.lit(" · ") + pl.col("cause"))
        .alias("reason_cause"),
        pl.col("last_version").fill_null(NONE).alias("version"),
        pl.coalesce("mode", "last_mode").fill_null(NONE).alias("mode"),
        pl.col("last_provider").fill_null(NONE).alias("provider"),
        pl.col("project").fill_null(NONE),
        pl.col("verdict").fill_null(NONE),
    )
    numbers = (
        "wall_ms",
        "active_ms",
        "event_count",
        "bytes_read",
        "tokens_total",
        "cost_usd",
        "cost_usd_known",
        "tool_results_failed",
    )
    facts = ("outcome_detail", "last_error_message", "last_error_code")
    return frame.select(
        "id", "parent", "kind", "scope", "label", "name", "cause_detail", "path", *DIMENSIONS, *facts, *numbers
    ), error


def bar_share(count: int, peak: int, *, log_scale: bool = False) -> float:
    """A bar's length as a percentage of its track: ``count / peak`` (or ``log(1 + count) / log(1 + peak)``).

    The track stretches with the widget; a bar that is not 0 is drawn at least 1 px wide.

    Examples:
        >>> [bar_share(n, 36) for n in (0, 1, 2, 36)]
        [0.0, 2.778, 5.556, 100.0]
        >>> bar_share(1, 10_000), bar_share(1, 10_000, log_scale=True)
        (0.01, 7.526)
    """
    if count <= 0 or peak <= 0:
        return 0.0
    scaled = math.log1p(count) / math.log1p(peak) if log_scale else count / peak
    return round(100 * scaled, 3)


HEALTHY = frozenset({"child", "root", "fork", "—", "ok", "ok · —"})
"""Bar values that are not diagnostics (a healthy child; a file read ``ok`` with no cause when the listing fails)."""


class DiagnosticsDashboard(widgets.VBox):  # type: ignore[misc]
    """Interactive bar charts of diagnostics, descriptor versions and modes; a bar click lists its sessions.

    Args:
        corpus: a read corpus or an opened archive (``store.source.Source``).
        semantics: the listing semantics of the catalog rows.
        live: an optional live overlay, as for the catalog.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> board = DiagnosticsDashboard(read_corpus(tempfile.mkdtemp()))
        >>> board.selected_dimension, board.affected_ids
        ('reason_cause', [])
    """

    scope = traitlets.Enum(list(SCOPES), "all", help="the sessions counted: all, listed subagents, or roots")
    selected_dimension = traitlets.Unicode("reason_cause", help="what the bars count: " + ", ".join(DIMENSIONS))
    split_by = traitlets.Unicode(None, allow_none=True, help="draw one group of bars per value of this dimension")
    diagnostics_only = traitlets.Bool(False, help="count diagnostics only (not healthy children)")
    log_scale = traitlets.Bool(False, help="bar lengths proportional to log(1 + count), so rare values show")
    selected_value = traitlets.Unicode(None, allow_none=True, help="the clicked bar's value")
    selected_split = traitlets.Unicode(None, allow_none=True, help="the clicked bar's split value")
    affected_ids = traitlets.List(traitlets.Unicode(allow_none=True), help="ids of the sessions the table lists")
    bars = traitlets.List(traitlets.Tuple(), help="(split value, value, count) of each drawn bar")
    revealed = traitlets.Unicode(None, allow_none=True, help="a session of the table, revealed in the linked browser")
    label_filter = traitlets.Unicode(None, allow_none=True, help="count only 'with:LABEL' or 'without:LABEL' sessions")
    finding_filter = traitlets.Unicode(None, allow_none=True, help="count only 'with:KIND' or 'without:KIND' sessions")

    def __init__(
        self,
        corpus: Source,
        *,
        semantics: Semantics = "projection",
        live: Mapping[str, str] | None = None,
        labels: str | os.PathLike[str] | None = None,
    ) -> None:
        corpus = corpus.to_corpus()  # a corpus, or an archive's frames
        super().__init__(layout=widgets.Layout(width="100%"))
        self.add_class("sc-dashboard")
        self.corpus = corpus
        self.data, self.error = population(corpus, semantics=semantics, live=live)
        self.runs = RunFilters(corpus, labels)  # findings are computed on first use of the finding filter
        self._kept: set[str] | None = None
        self.label_dropdown, self.finding_dropdown = filter_dropdowns(self.runs)
        self.label_dropdown.observe(lambda c: setattr(self, "label_filter", c["new"] or None), names="value")
        self.finding_dropdown.observe(lambda c: setattr(self, "finding_filter", c["new"] or None), names="value")
        self._bar_buttons: dict[tuple[str | None, str], widgets.Button] = {}
        options = [(label, name) for name, label in DIMENSIONS.items()]
        self.dimension_buttons = widgets.ToggleButtons(
            options=options, value=self.selected_dimension, description="count by", style={"button_width": "auto"}
        )
        self.split_dropdown = widgets.Dropdown(
            options=[("(no split)", ""), *options],
            value="",
            description="split by",
            layout=widgets.Layout(width="260px"),
        )
        self.scope_buttons = widgets.ToggleButtons(
            options=[(label, name) for name, label in SCOPES.items()],
            value=self.scope,
            description="count",
            style={"button_width": "auto"},
        )
        self.scope_buttons.observe(lambda c: setattr(self, "scope", c["new"]), names="value")
        self.diagnostics_box = widgets.Checkbox(
            value=False, description="diagnostics only", indent=False, layout=widgets.Layout(width="auto")
        )
        self.log_box = widgets.Checkbox(
            value=False, description="log scale", indent=False, layout=widgets.Layout(width="auto")
        )
        self.clear_button = widgets.Button(description="clear selection", layout=widgets.Layout(width="auto"))
        self.clear_button.on_click(lambda _button: self.clear_selection())
        self.dimension_buttons.observe(lambda c: setattr(self, "selected_dimension", c["new"]), names="value")
        self.split_dropdown.observe(lambda c: setattr(self, "split_by", c["new"] or None), names="value")
        self.diagnostics_box.observe(lambda c: setattr(self, "diagnostics_only", c["new"]), names="value")
        self.log_box.observe(lambda c: setattr(self, "log_scale", c["new"]), names="value")
        self.chart = widgets.VBox(layout=widgets.Layout(width="100%"))
        self.table = DashboardRows(layout=widgets.Layout(width="100%", overflow="auto"))
        self.table.add_class("sc-table")
        self.table.observe(lambda c: row_clicked(self, c["new"]), names="clicked")
        self.browser: Any = None
        self.observe(lambda c: reveal_in(self.browser, c["new"]), names=["revealed"])
        self._semantics = semantics
        self.header = widgets.HTML()
        self._render_header()
        self.children = [
            self.header,
            self.scope_buttons,
            self.dimension_buttons,
            widgets.HBox(
                [self.split_dropdown, self.diagnostics_box, self.log_box, self.clear_button],
                layout=widgets.Layout(flex_flow="row wrap", align_items="center"),
            ),
            widgets.HBox([self.label_dropdown, self.finding_dropdown], layout=widgets.Layout(flex_flow="row wrap")),
            self.chart,
            self.table,
        ]
        self.observe(
            self._on_view_change,
            names=["scope", "selected_dimension", "split_by", "diagnostics_only", "label_filter", "finding_filter"],
        )
        self.observe(lambda _change: self._on_scale(), names=["log_scale"])
        self.observe(lambda _change: self._render_table(), names=["selected_value", "selected_split"])
        self._render_chart()
        self._render_table()

    def _render_header(self) -> None:
        counted = self._scope()
        if self.error is not None:
            what = f"{counted.height:,} session files (the listing fails, so there are no catalog rows)"
        else:
            what = {
                "all": f"all {plural(counted.height, 'session')} (listed subagents as the catalog lists them, "
                f"{self._semantics} semantics)",
                "subagents": f"{counted.height:,} listed subagents ({self._semantics} semantics)",
                "roots": f"{counted.height:,} roots (sessions without a parentSession)",
            }[self.scope]
        chosen = [value.replace(":", " ") for value in (self.label_filter, self.finding_filter) if value]
        if chosen:
            what += f"; only those {' and '.join(chosen)}"
        if self.finding_filter and self.runs.note:
            what += f" ({self.runs.note})"
        self.header.value = (
            DASHBOARD_STYLE
            + listing_error_html(self.corpus)
            + f'<div style="font-size:13px;margin:2px 0">counting {escape(what)}</div>'
        )

    def _scope(self) -> pl.DataFrame:
        frame = self.data if self.scope == "all" else self.data.filter(pl.col("scope") == self.scope)
        if self._kept is not None:
            frame = frame.filter(pl.col("path").is_in(list(self._kept)))
        return frame.filter(~pl.col("reason_cause").is_in(list(HEALTHY))) if self.diagnostics_only else frame

    def _on_view_change(self, change: dict[str, Any]) -> None:
        name = change["name"]
        if name in ("selected_dimension", "split_by") and change["new"] is not None and change["new"] not in DIMENSIONS:
            setattr(self, name, change["old"])
            raise traitlets.TraitError(f"unknown dimension {change['new']!r}; choose one of {', '.join(DIMENSIONS)}")
        if name in ("label_filter", "finding_filter"):
            try:
                self._kept = self.runs.paths(self.label_filter, self.finding_filter)
            except ValueError as error:
                setattr(self, name, change["old"])
                raise traitlets.TraitError(str(error)) from None
            self.label_dropdown.value = self.label_filter or ""
            self.finding_dropdown.value = self.finding_filter or ""
        self.scope_buttons.value = self.scope
        self.dimension_buttons.value = self.selected_dimension
        self.split_dropdown.value = self.split_by or ""
        self.diagnostics_box.value = self.diagnostics_only
        self.clear_selection()
        self._render_header()
        self._render_chart()
        self._render_table()

    def _on_scale(self) -> None:
        self.log_box.value = self.log_scale
        self._render_chart()
        self._render_table()

    def _counts(self) -> pl.DataFrame:
        dimension = self.selected_dimension
        split = self.split_by if self.split_by != dimension else None
        # one bar order for every group: the bins' order, the values' order, or the largest overall first
        order = BINS[dimension].order if dimension in BINNED else "value" if dimension in ORDERED_BY_VALUE else "count"
        return split_tally(self._scope(), dimension, split=split, order=order)

    def _render_chart(self) -> None:
        counts = self._counts()
        dimension = self.selected_dimension
        self._bar_buttons = {}
        drawn: list[tuple[str | None, str, int]] = []
        items: list[widgets.Widget] = []
        peak = max([1, *counts["count"].to_list()])
        groups = counts.partition_by("split", maintain_order=True) if counts.height else []
        for group in groups:
            split_value, total = group["split"][0], int(group["total"][0])
            if self.split_by is not None and self.split_by != dimension:
                items.append(
                    widgets.HTML(
                        f'<div style="font-weight:600;margin-top:6px">{escape(DIMENSIONS[self.split_by])} = '
                        f"{escape(split_value)} ({total})</div>"
                    )
                )
            for value, count in group.select(dimension, "count").head(MAX_BARS).iter_rows():
                items.append(self._bar(split_value, value, int(count), peak, total))
                drawn.append((split_value, value, int(count)))
            if group.height > MAX_BARS:
                items.append(widgets.HTML(f'<div style="color:#666">… {group.height - MAX_BARS} more values</div>'))
        if not items:
            items.append(widgets.HTML('<div style="color:#666;font-style:italic">(nothing to count)</div>'))
        self.chart.children = items
        self.bars = drawn

    def _bar(self, split_value: str | None, value: str, count: int, peak: int, total: int) -> widgets.HBox:
        # label | track (stretches with the widget; the bar is a share of it) | count button (never shrinks)
        share_of_peak = bar_share(count, peak, log_scale=self.log_scale)
        diagnostic = (value not in HEALTHY and self.selected_dimension in ("reason_cause", "reason", "cause")) or (
            self.selected_dimension == "outcome" and value in FAILED_OUTCOMES
        )
        if self.selected_dimension == "outcome":
            colour = palette.outcome_colour(value)
        elif self.selected_dimension == "reason":
            colour = palette.LISTING_COLOURS.get(value, palette.GREY)
        else:
            colour = palette.OKABE_ITO["orange" if diagnostic else "blue"]
        part = share(count / total) if total else MISSING
        track = widgets.HTML(
            '<div style="width:100%;height:18px;background:#f6f8fa;border-radius:2px">'
            f'<div style="width:{share_of_peak}%;min-width:{1 if count else 0}px;height:18px;background:{colour};'
            'border-radius:2px"></div></div>',
            layout=widgets.Layout(flex="1 1 360px", min_width="120px", max_width="480px", margin="0 6px 0 0"),
        )
        button = widgets.Button(
            description=f"{count:,} · {part}",
            tooltip=f"{value}: {plural(count, 'session')}, {part} of {total:,} (click to list them)",
            button_style="warning" if diagnostic else "",
            layout=widgets.Layout(width="auto", height="24px", min_width="96px", flex="0 0 auto"),
        )
        button.on_click(lambda _button: self.pick(value, split=split_value))
        self._bar_buttons[(split_value, value)] = button
        label = widgets.HTML(
            f'<div style="font-family:monospace;font-size:12px;overflow:hidden;'
            f'text-overflow:ellipsis;white-space:nowrap;width:100%" title="{escape(value)}">'
            f"{escape(value)}</div>",
            layout=widgets.Layout(
                flex=f"0 1 {LABEL_PIXELS}px",
                min_width="72px",
                max_width=f"{LABEL_PIXELS}px",
                margin="0 8px 0 0",
                overflow="hidden",
            ),
        )
        label.add_class("sc-bar-label")
        track.add_class("sc-bar-track")
        row = widgets.HBox([label, track, button], layout=widgets.Layout(align_items="center", width="100%"))
        row.add_class("sc-bar-row")
        return row

    def bar(self, value: str, *, split: str | None = None) -> widgets.Button:
        """The button drawn for a bar (to click it from code).

        Raises:
            KeyError: no such bar is drawn.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> DiagnosticsDashboard(read_corpus(tempfile.mkdtemp())).bar("child")
            Traceback (most recent call last):
            ...
            KeyError: "no bar for ('child', None)"
        """
        try:
            return self._bar_buttons[(split, value)]
        except KeyError:
            raise KeyError(f"no bar for {(value, split)!r}") from None

    def pick(self, value: str, *, split: str | None = None) -> None:
        """Select a bar (the bars' click handler); picking the selected bar again clears it.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> board = DiagnosticsDashboard(read_corpus(tempfile.mkdtemp()))
            >>> board.pick("child"); board.selected_value
            'child'
        """
        again = self.selected_value == value and self.selected_split == split
        with self.hold_trait_notifications():
            self.selected_value, self.selected_split = (None, None) if again else (value, split)

    def link_browser(self, browser: Any) -> None:
        """Let a click on a row of the table reveal its session in a ``CatalogBrowser`` (``revealed``).

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> from subagent_catalog.views.widgets.browser import CatalogBrowser
            >>> corpus = read_corpus("data/sample")
            >>> board, browser = DiagnosticsDashboard(corpus), CatalogBrowser(corpus)
            >>> board.link_browser(browser)
            >>> board.revealed = "scan-tests"
            >>> browser.corpus.sessions["session_id"][browser.selected]
            'scan-tests'
        """
        self.browser = browser
        self.table.clickable = True

    def clear_selection(self) -> None:
        """Clear the selected bar (the table lists nothing).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> board = DiagnosticsDashboard(read_corpus(tempfile.mkdtemp()))
            >>> board.pick("x"); board.clear_selection(); board.selected_value is None
            True
        """
        with self.hold_trait_notifications():
            self.selected_value = self.selected_split = None

    def affected(self) -> pl.DataFrame:
        """The sessions behind the selected bar (empty when nothing is selected).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> DiagnosticsDashboard(read_corpus(tempfile.mkdtemp())).affected().height
            0
        """
        if self.selected_value is None:
            return self.data.head(0)
        frame = self._scope().filter(pl.col(self.selected_dimension) == self.selected_value)
        if self.split_by is not None and self.split_by != self.selected_dimension and self.selected_split is not None:
            frame = frame.filter(pl.col(self.split_by) == self.selected_split)
        return frame

    def _render_table(self) -> None:
        for (split_value, value), button in self._bar_buttons.items():
            chosen = value == self.selected_value and split_value == self.selected_split
            button.style.font_weight = "bold" if chosen else ""
            button.icon = "check" if chosen else ""
        frame = self.affected()
        self.affected_ids = frame["id"].to_list()
        if self.selected_value is None:
            self.table.value = (
                '<div style="color:#666;font-style:italic;font-size:13px">'
                "click a bar to list the affected sessions</div>"
            )
            return
        where = f"{DIMENSIONS[self.selected_dimension]} = {self.selected_value}"
        if self.selected_split is not None and self.split_by is not None:
            where += f", {DIMENSIONS[self.split_by]} = {self.selected_split}"
        parents = frame["parent"].head(TABLE_ROWS).drop_nulls().unique()
        named = self.data.filter(pl.col("id").is_in(parents.implode())).unique("id", keep="first")
        labels = {
            sid: text
            for sid, label, name in named.select("id", "label", "name").iter_rows()
            if (text := session_name(label, name)) is not None
        }
        self.table.value = affected_table_html(
            frame, caption=f"{plural(frame.height, 'session')} with {where}", labels=labels
        )
