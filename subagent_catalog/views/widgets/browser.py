"""``CatalogBrowser``: a lazily expanded tree of a corpus's sessions.

The tree shows root sessions, then (on expansion) every session whose header
names the node as ``parentSession``: subagents with their mode and label,
diagnostics with upstream's reason and the toolkit's cause, ordinary forks
marked as forks. Only the visible level is built: opening the browser on a
20,000-session corpus builds one page of root rows, and expanding a node
builds exactly its children. The parent-to-children index is computed once,
with Polars, when the browser opens; the catalog rows (kind, mode, reason,
cause of each child) are computed once, on the first expansion, search or
filter that needs them.

Selecting a session shows its header, descriptors (with validity), the
diagnostic cause, the ``list_agents`` text of the session as a parent (both
scopes) and the head of its events, read from that one file only (the
corpus-wide ``corpus.events`` frame is never loaded).

All state lives in traitlets traits (``search``, the filters, ``expanded``,
``selected``...): set them from code, or call ``CatalogBrowser.expand``
and friends, and the view follows.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Literal

import ipywidgets as widgets
import polars as pl
import traitlets

from subagent_catalog.catalog.listing import list_agents_text
from subagent_catalog.catalog.model import Semantics
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import escape, listing_error_html, table_html
from subagent_catalog.read.jsvalue import parse_json
from subagent_catalog.views.widgets.session_detail import ROLES, row_text, session_info, session_role
from subagent_catalog.views.widgets.session_tree import SessionTree, filter_choices, filter_keys, nodes_table
from subagent_catalog.views.widgets.tree_row import ANY, ANY_VALUE, TreeRow


class CatalogBrowser(widgets.VBox):  # type: ignore[misc]
    """Browse a corpus's session tree, search and filter it, inspect one session.

    Args:
        corpus: a read corpus.
        semantics: the listing semantics of the rows and ``list_agents`` texts.
        live: an optional live overlay (``{id: "running"|"idle"}``), as for the catalog.
        page_size: rows built per page (roots, children of one node, results).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> browser = CatalogBrowser(read_corpus(tempfile.mkdtemp()))
        >>> browser.built_nodes, browser.catalog_loaded
        (0, False)
    """

    search = traitlets.Unicode("", help="case-insensitive substring of session id or label")
    kind = traitlets.Unicode(None, allow_none=True, help="role filter: " + ", ".join(ROLES))
    mode = traitlets.Unicode(None, allow_none=True, help="identity mode filter")
    activity = traitlets.Unicode(None, allow_none=True, help="catalog activity filter")
    reason = traitlets.Unicode(None, allow_none=True, help="diagnostic reason filter")
    cause = traitlets.Unicode(None, allow_none=True, help="diagnostic cause filter")
    depth = traitlets.Int(None, allow_none=True, help="header delegationDepth filter")
    provider = traitlets.Unicode(None, allow_none=True, help="last descriptor's provider filter")
    project = traitlets.Unicode(None, allow_none=True, help="project directory filter")
    expanded = traitlets.List(traitlets.Unicode(), help="expanded tree positions")
    selected = traitlets.Int(None, allow_none=True, help="selected session (row index in corpus.sessions)")
    page_size = traitlets.Int(50, help="rows built per page")
    roots_shown = traitlets.Int(0, help="root rows currently shown")
    results_shown = traitlets.Int(0, help="result rows currently shown")
    visible = traitlets.List(traitlets.Unicode(), help="tree positions currently rendered, in order")
    results = traitlets.List(traitlets.Int(), help="sessions matching the search and filters")
    filtering = traitlets.Bool(False, help="a search or filter is active (results list instead of tree)")
    built_nodes = traitlets.Int(0, help="tree rows materialised so far")
    catalog_loaded = traitlets.Bool(False, help="whether the catalog rows have been computed")
    selected_info = traitlets.Dict(help="facts about the selected session (see select)")

    def __init__(
        self,
        corpus: Corpus,
        *,
        semantics: Semantics = "projection",
        live: Mapping[str, str] | None = None,
        page_size: int = 50,
    ) -> None:
        super().__init__(layout=widgets.Layout(width="100%"))
        self.corpus = corpus
        self.semantics: Semantics = semantics
        self.live = dict(live) if live else None
        self._built: dict[str, TreeRow] = {}
        self._result_rows: dict[int, TreeRow] = {}
        self._child_pages: dict[str, int] = {}
        self._more_buttons: dict[str, widgets.Button] = {}
        self._by_path: dict[str, dict[str, Any]] = {}
        self._catalog_error: str | None = None
        self._nodes_frame: pl.DataFrame | None = None
        self._layouts: dict[str, widgets.Layout] = {
            "toggle": widgets.Layout(width="28px", min_width="28px"),
            "leaf": widgets.Layout(width="28px", min_width="28px", visibility="hidden"),
            "select": widgets.Layout(width="auto"),
        }
        self._index()
        self._build_view()
        with self.hold_trait_notifications():
            self.page_size = page_size
            self.roots_shown = min(page_size, len(self._tree.roots))
        self._render_tree()
        self.observe(self._on_tree_change, names=["expanded", "roots_shown"])
        self.observe(self._on_filter_change, names=[*self._filter_names(), "search"])
        self.observe(self._on_results_shown, names=["results_shown"])
        self.observe(self._on_selected, names=["selected"])
        self._render_problems()

    # ----------------------------------------------------------------- index

    def _index(self) -> None:
        self._tree = SessionTree(self.corpus)

    def children_of(self, key: int) -> list[int]:
        """The session keys whose header names this session as parent, in upstream's sibling order.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> CatalogBrowser(read_corpus(tempfile.mkdtemp())).children_of(0)
            []
        """
        return self._tree.children_of(key)

    def _unsorted_children(self, key: int) -> list[int]:
        return self._tree.unsorted_children(key)

    def _listed(self, key: int) -> bool:
        return self._tree.listed(key)

    def _ensure_catalog(self) -> None:
        if self.catalog_loaded:
            return
        try:
            frame = catalog(self.corpus, semantics=self.semantics, live=self.live)
        except CatalogError as error:
            self._catalog_error = str(error)
            frame = None
        if frame is not None:
            rows = frame.filter(pl.col("kind").is_in(["child", "diagnostic"])).unique("path", keep="first")
            self._by_path = {row["path"]: row for row in rows.iter_rows(named=True)}
        self.catalog_loaded = True

    def _nodes_table(self) -> pl.DataFrame:
        """Every session with its role and catalog columns (built once, for search and filters)."""
        if self._nodes_frame is None:
            self._ensure_catalog()
            self._nodes_frame = nodes_table(self._tree.nodes, list(self._by_path.values()), self.corpus.descriptors)
        return self._nodes_frame

    # ------------------------------------------------------------------ view

    def _build_view(self) -> None:
        corpus = self.corpus
        listed = int(corpus.sessions["listed"].sum()) if corpus.sessions.height else 0
        self.banner = widgets.HTML(listing_error_html(corpus))
        self.summary = widgets.HTML(
            f'<div style="font-size:13px">{corpus.sessions.height} session files · {listed} listed · '
            f"{len(self._tree.roots)} top-level rows · {corpus.problems.height} problems · "
            f"<code>{escape(corpus.root)}</code></div>"
        )
        self.search_box = widgets.Text(
            placeholder="search id or label (Enter)",
            continuous_update=False,
            layout=widgets.Layout(width="260px"),
        )
        self.search_box.observe(self._from_search_box, names="value")
        choices = filter_choices(corpus)
        self.controls: dict[str, widgets.Dropdown] = {
            name: self._dropdown(name, values) for name, values in choices.items()
        }
        clear = widgets.Button(
            description="clear", tooltip="clear search and filters", layout=widgets.Layout(width="70px")
        )
        clear.on_click(lambda _button: self.clear_filters())
        filters = widgets.GridBox(
            list(self.controls.values()),
            layout=widgets.Layout(grid_template_columns="repeat(4, 235px)", grid_gap="2px 8px"),
        )
        self.tree_box = widgets.VBox(layout=widgets.Layout(width="100%"))
        self.more_roots = widgets.Button(description="show more", layout=widgets.Layout(width="auto"))
        self.more_roots.on_click(lambda _button: self.show_more())
        self.results_box = widgets.VBox(layout=widgets.Layout(width="100%"))
        self.results_label = widgets.HTML("")
        self.more_results = widgets.Button(description="more results", layout=widgets.Layout(width="auto"))
        self.more_results.on_click(lambda _button: self.show_more())
        self.left = widgets.VBox(
            [self.tree_box],
            layout=widgets.Layout(
                width="52%", max_height="560px", overflow="auto", border="1px solid #ddd", padding="4px"
            ),
        )
        self.detail = widgets.HTML(
            '<div style="color:#666;font-style:italic">select a session to see its header, descriptors, '
            "list_agents text and events</div>",
            layout=widgets.Layout(width="48%", max_height="560px", overflow="auto", padding="0 8px"),
        )
        self.problem_kind = widgets.Dropdown(
            options=[ANY, *sorted(set(corpus.problems["kind"].to_list()))] if corpus.problems.height else [ANY],
            value=ANY,
            description="kind",
            layout=widgets.Layout(width="320px"),
        )
        self.problem_kind.observe(lambda _change: self._render_problems(), names="value")
        self.problems_html = widgets.HTML("")
        sessions_pane = widgets.VBox(
            [widgets.HBox([self.search_box, clear]), filters, widgets.HBox([self.left, self.detail])]
        )
        self.tabs = widgets.Tab(
            children=[sessions_pane, widgets.VBox([self.problem_kind, self.problems_html])],
            titles=("Sessions", f"Problems ({corpus.problems.height})"),
        )
        self.children = [self.banner, self.summary, self.tabs]

    def _dropdown(self, name: str, values: list[Any]) -> widgets.Dropdown:
        control = widgets.Dropdown(
            options=[(ANY, ANY_VALUE), *[(str(v), v) for v in values]],
            value=ANY_VALUE,
            description=name,
            layout=widgets.Layout(width="235px"),
            style={"description_width": "60px"},
        )

        def push(change: dict[str, Any]) -> None:
            setattr(self, name, None if change["new"] is ANY_VALUE else change["new"])

        control.observe(push, names="value")
        return control

    @staticmethod
    def _filter_names() -> list[str]:
        return ["kind", "mode", "activity", "reason", "cause", "depth", "provider", "project"]

    # ------------------------------------------------------------------ tree

    def _row_text(self, key: int, *, context: bool = False) -> tuple[str, str, str]:
        """Label, tooltip and button style of one session row."""
        row = self._tree.nodes.row(key, named=True)
        cat = None
        if (
            row["listed"]
            and row["session_id"] is not None
            and row["list_error"] is None
            and row["origin"] == "subagent"
        ):
            self._ensure_catalog()
            cat = self._by_path.get(row["path"])
        return row_text(
            row,
            cat,
            children=len(self._unsorted_children(key)),
            parent_found=row["parent_session"] in self._tree.present,
            in_cycle=key in self._tree.cycle_roots,
            context=context,
        )

    def _make_row(self, position: str, key: int, indent: int, *, leaf: bool, context: bool = False) -> TreeRow:
        text, tip, style = self._row_text(key, context=context)
        toggle = widgets.Button(
            description="" if leaf else "▸",
            disabled=leaf,
            layout=self._layouts["leaf" if leaf else "toggle"],
            tooltip="" if leaf else "expand",
        )
        select = widgets.Button(description=text, tooltip=tip, button_style=style, layout=self._layouts["select"])
        row = TreeRow(position, key, toggle, select, self._row_layout(indent))
        toggle.on_click(lambda _button: self.toggle(position))
        select.on_click(lambda _button: self._select_key(key))
        if key == self.selected:
            select.style.font_weight = "bold"
        return row

    def _row_layout(self, indent: int) -> widgets.Layout:
        """One shared layout per indentation level (layouts are widgets: sharing keeps rows cheap)."""
        name = f"row{indent}"
        if name not in self._layouts:
            self._layouts[name] = widgets.Layout(min_height="30px", overflow="visible", margin=f"0 0 0 {18 * indent}px")
        return self._layouts[name]

    def _tree_row(self, position: str) -> TreeRow:
        row = self._built.get(position)
        if row is None:
            keys = [int(part) for part in position.split("/")]
            key = keys[-1]
            leaf = not self._expandable(keys)
            row = self._make_row(position, key, len(keys) - 1, leaf=leaf)
            self._built[position] = row
            self.built_nodes = len(self._built)
        return row

    def _expandable(self, path: list[int]) -> bool:
        return any(child not in path for child in self._unsorted_children(path[-1]))

    def _child_positions(self, position: str) -> list[str]:
        path = [int(part) for part in position.split("/")]
        return [f"{position}/{child}" for child in self.children_of(path[-1]) if child not in path]

    def _render_tree(self) -> None:
        expanded = set(self.expanded)
        shown: list[str] = []
        items: list[widgets.Widget] = []
        stack: list[str] = [str(key) for key in reversed(self._tree.roots[: self.roots_shown])]
        while stack:
            position = stack.pop()
            if position.startswith("+"):
                items.append(self._more_children_button(position[1:]))
                continue
            row = self._tree_row(position)
            shown.append(position)
            items.append(row)
            is_open = position in expanded and not row.toggle_button.disabled
            row.toggle_button.description = "" if row.toggle_button.disabled else ("▾" if is_open else "▸")
            if is_open:
                children = self._child_positions(position)
                limit = self._child_pages.get(position, self.page_size)
                if len(children) > limit:
                    stack.append("+" + position)
                stack.extend(reversed(children[:limit]))
        if self.roots_shown < len(self._tree.roots):
            self.more_roots.description = f"show more ({len(self._tree.roots) - self.roots_shown} more top-level rows)"
            items.append(self.more_roots)
        if not items:
            items.append(widgets.HTML('<div style="color:#666;font-style:italic">(no sessions)</div>'))
        self.tree_box.children = items
        self.visible = shown

    def _more_children_button(self, position: str) -> widgets.Button:
        total = len(self._child_positions(position))
        limit = self._child_pages.get(position, self.page_size)
        button = self._more_buttons.get(position)
        if button is None:
            depth = position.count("/") + 1
            button = widgets.Button(layout=widgets.Layout(width="auto", margin=f"0 0 0 {18 * depth + 28}px"))
            button.on_click(lambda _button: self.show_more_children(position))
            self._more_buttons[position] = button
        button.description = f"show more ({total - limit} more)"
        return button

    def _on_tree_change(self, _change: dict[str, Any]) -> None:
        if not self.filtering:
            self._render_tree()

    def expand(self, position: str) -> None:
        """Expand a tree node (its children are built on first expansion).

        Args:
            position: a position from ``visible`` (``"key"`` or ``"key/key/..."``).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus(tempfile.mkdtemp()))
            >>> browser.expand("0"); browser.expanded
            ['0']
        """
        if position not in self.expanded:
            self.expanded = [*self.expanded, position]

    def collapse(self, position: str) -> None:
        """Collapse a tree node (its built rows are kept for the next expansion).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus(tempfile.mkdtemp()))
            >>> browser.expand("0"); browser.collapse("0"); browser.expanded
            []
        """
        self.expanded = [p for p in self.expanded if p != position]

    def toggle(self, position: str) -> None:
        """Expand a collapsed node or collapse an expanded one (the ▸/▾ button's handler).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus(tempfile.mkdtemp()))
            >>> browser.toggle("0"); browser.expanded
            ['0']
        """
        if position in self.expanded:
            self.collapse(position)
        else:
            self.expand(position)

    def show_more(self) -> None:
        """Show the next page of top-level rows (or of results while filtering).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus(tempfile.mkdtemp()))
            >>> browser.show_more(); browser.roots_shown
            0
        """
        if self.filtering:
            self.results_shown = min(len(self.results), self.results_shown + self.page_size)
        else:
            self.roots_shown = min(len(self._tree.roots), self.roots_shown + self.page_size)

    def show_more_children(self, position: str) -> None:
        """Show the next page of an expanded node's children.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> CatalogBrowser(read_corpus(tempfile.mkdtemp())).show_more_children("0")
        """
        self._child_pages[position] = self._child_pages.get(position, self.page_size) + self.page_size
        self._render_tree()

    def row(self, position: str) -> TreeRow:
        """The rendered row at a tree position (built if needed), e.g. to click its buttons.

        Raises:
            KeyError: the position is not a node of this tree.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> CatalogBrowser(read_corpus(tempfile.mkdtemp())).row("0")
            Traceback (most recent call last):
            ...
            KeyError: 'no tree node at position 0'
        """
        if position in self._built:
            return self._built[position]
        keys = [int(part) for part in position.split("/")] if position else []
        valid = bool(keys) and keys[0] in self._tree.roots
        for parent, child in itertools.pairwise(keys):
            valid = valid and child in self._unsorted_children(parent)
        if not valid:
            raise KeyError(f"no tree node at position {position}")
        return self._tree_row(position)

    def find(self, session_id: str) -> int | None:
        """The key (row index in ``corpus.sessions``) of a session id, or ``None``.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> CatalogBrowser(read_corpus(tempfile.mkdtemp())).find("x") is None
            True
        """
        try:
            return self._tree.ids.index(session_id)
        except ValueError:
            return None

    # --------------------------------------------------------------- filters

    def _from_search_box(self, change: dict[str, Any]) -> None:
        self.search = change["new"]

    def clear_filters(self) -> None:
        """Clear the search and every filter (back to the tree).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus(tempfile.mkdtemp()))
            >>> browser.search = "abc"; browser.clear_filters(); browser.filtering
            False
        """
        with self.hold_trait_notifications():
            self.search = ""
            for name in self._filter_names():
                setattr(self, name, None)

    def _active_filters(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._filter_names() if getattr(self, name) is not None}

    def _on_filter_change(self, change: dict[str, Any]) -> None:
        name = change["name"]
        if name == "search":
            if self.search_box.value != self.search:
                self.search_box.value = self.search
        elif name in self.controls:
            control = self.controls[name]
            wanted = ANY_VALUE if change["new"] is None else change["new"]
            if wanted not in [value for _label, value in control.options]:
                control.options = [*control.options, (str(wanted), wanted)]
            if control.value is not wanted and control.value != wanted:
                control.value = wanted
        self._apply_filters()

    def _apply_filters(self) -> None:
        filters = self._active_filters()
        query = self.search.strip().lower()
        active = bool(filters) or bool(query)
        if not active:
            self.filtering = False
            self.results = []
            self.left.children = [self.tree_box]
            self._render_tree()
            return
        frame = self._nodes_table()
        keys = filter_keys(frame, filters, query)
        with self.hold_trait_notifications():
            self.filtering = True
            self.results = keys
            self.results_shown = min(self.page_size, len(keys))
        self._render_results()

    def _on_results_shown(self, _change: dict[str, Any]) -> None:
        if self.filtering:
            self._render_results()

    def _render_results(self) -> None:
        shown = self.results[: self.results_shown]
        rows: list[widgets.Widget] = []
        for key in shown:
            row = self._result_rows.get(key)
            if row is None:
                row = self._make_row(f"r{key}", key, 0, leaf=True, context=True)
                self._result_rows[key] = row
            rows.append(row)
        described = ", ".join(f"{name}={value}" for name, value in self._active_filters().items())
        search = f'search "{self.search.strip()}"' if self.search.strip() else ""
        self.results_label.value = (
            f'<div style="font-size:13px;margin-bottom:4px"><b>{len(self.results)}</b> matching sessions '
            f"({escape(', '.join(p for p in (search, described) if p))}); "
            f"showing {len(shown)} — clear the search and filters to return to the tree</div>"
        )
        items: list[widgets.Widget] = [self.results_label, *rows]
        if self.results_shown < len(self.results):
            self.more_results.description = f"more results ({len(self.results) - self.results_shown} more)"
            items.append(self.more_results)
        self.results_box.children = items
        self.left.children = [self.results_box]

    # ------------------------------------------------------------- selection

    @traitlets.validate("selected")
    def _valid_selection(self, proposal: dict[str, Any]) -> int | None:
        value = proposal["value"]
        if value is not None and not 0 <= value < self.corpus.sessions.height:
            raise traitlets.TraitError(
                f"selected must be a row index of corpus.sessions (0..{self.corpus.sessions.height - 1}), not {value}"
            )
        return value if value is None else int(value)

    def _select_key(self, key: int) -> None:
        self.selected = key

    def select_id(self, session_id: str) -> None:
        """Select a session by id.

        Raises:
            KeyError: no session file has this id.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> CatalogBrowser(read_corpus(tempfile.mkdtemp())).select_id("x")
            Traceback (most recent call last):
            ...
            KeyError: 'no session with id x'
        """
        key = self.find(session_id)
        if key is None:
            raise KeyError(f"no session with id {session_id}")
        self.selected = key

    def _mark(self, key: int | None, bold: bool) -> None:
        if key is None:
            return
        for row in [*self._built.values(), *self._result_rows.values()]:
            if row.key == key:
                row.select_button.style.font_weight = "bold" if bold else ""

    def _on_selected(self, change: dict[str, Any]) -> None:
        self._mark(change["old"], False)
        self._mark(change["new"], True)
        if change["new"] is None:
            self.selected_info = {}
            self.detail.value = ""
            return
        info, text = self._describe(int(change["new"]))
        self.selected_info = info
        self.detail.value = text

    def _agents_text(self, session_id: Any, scope: Literal["children", "descendants"]) -> str:
        try:
            return list_agents_text(self.corpus, session_id, scope=scope, semantics=self.semantics, live=self.live)
        except CatalogError as error:
            return f"(list_agents fails: {error})"

    def _describe(self, key: int) -> tuple[dict[str, Any], str]:
        row = self.corpus.sessions.row(key, named=True)
        header = parse_json(row["header_json"]) if row["header_json"] is not None else None
        exact_id = header.get("id") if isinstance(header, dict) else None
        listed = bool(row["listed"]) and isinstance(exact_id, str)
        cat: dict[str, Any] | None = None
        if row["origin"] == "subagent" and listed:
            self._ensure_catalog()
            cat = self._by_path.get(row["path"])
        role = session_role(row, cat)
        children_text = descendants_text = "(not listed: upstream cannot use this session as a parent)"
        if listed:
            children_text = self._agents_text(exact_id, "children")
            descendants_text = self._agents_text(exact_id, "descendants")
        return session_info(
            self.corpus,
            key,
            row,
            cat,
            role=role,
            agents_text=(children_text, descendants_text),
            semantics=self.semantics,
            catalog_error=self._catalog_error,
        )

    # -------------------------------------------------------------- problems

    def _render_problems(self) -> None:
        problems = self.corpus.problems
        kind = self.problem_kind.value
        if kind != ANY:
            problems = problems.filter(pl.col("kind") == kind)
        problems = problems.sort(
            [
                pl.col("fails_listing"),
                pl.col("severity").replace_strict({"error": 0, "warning": 1, "info": 2}, default=3),
            ],
            descending=[True, False],
        )
        styles = ["background:#fdecee" if fails else "" for fails in problems["fails_listing"].head(200).to_list()]
        self.problems_html.value = table_html(
            problems,
            max_rows=200,
            columns=["scope", "kind", "severity", "fails_listing", "session_id", "line", "message", "path"],
            caption=f"{problems.height} problems" + (" (listing-fatal first)" if self.corpus.listing_error else ""),
            row_styles=styles,
        )
