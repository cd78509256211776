"""``CatalogBrowser``: a corpus's session tree and its runs, rendered and virtualized in the browser.

The widget is an `anywidget <https://anywidget.dev>`_: its front end (``static/browser.js`` and
``static/browser.css``, shipped in this package; nothing is fetched at run time) draws only the rows in view,
so 20,000 top-level rows and a 1,000-child hub scroll like ten. Python keeps the state and sends the tree as
drawn (keys, depths and flags as binary buffers) and the labels of the rows in view on request: each row's
outcome badge, duration, cost, tokens and failed tools, a run's readable name (``run_names``) after it.

The tree shows root sessions, then (on expansion) every session whose header names the node as
``parentSession``: subagents with their mode and label, diagnostics with upstream's reason and the
toolkit's cause, ordinary forks marked as forks. The catalog rows are computed once, on the first label,
search or filter that needs them. Filters (outcome, failed tools, role, mode, findings, labels...) and a sort
(duration, cost, tokens, failed tools) list the matching sessions. Selecting a session shows the run's facts,
a timeline of its children (one bar each, a click reveals it), its findings and labels (``finding_filter``),
then what ``session_detail.session_info`` renders: header, descriptors, diagnostic cause, ``list_agents``
texts, problems, transcript and events, read from that one file only. All state lives in traits (``search``,
the filters, ``expanded``, ``selected``...): set them, or call ``expand``, ``reveal`` and friends.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anywidget
import polars as pl
import traitlets

from subagent_catalog.analysis.tallies import tally
from subagent_catalog.catalog.listing import list_agents_text
from subagent_catalog.catalog.model import Semantics
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.errors import CatalogError, SubagentCatalogError
from subagent_catalog.frames.display import escape, listing_error_html
from subagent_catalog.frames.source import Source
from subagent_catalog.read.jsvalue import parse_json
from subagent_catalog.views import palette
from subagent_catalog.views.widgets.error_filter import FILTERS, ErrorGroupFilter
from subagent_catalog.views.widgets.finding_filter import FindingLabelFilters, Rule
from subagent_catalog.views.widgets.run_facts import RunNames, facts_text, lead_html, run_facts_html, timeline_payload
from subagent_catalog.views.widgets.session_detail import (
    ROLES,
    problems_in_order,
    problems_table_html,
    row_text,
    session_info,
    session_role,
)
from subagent_catalog.views.widgets.session_tree import (
    SORT_KEYS,
    SessionTree,
    filter_choices,
    filter_keys,
    flatten,
    nodes_table,
    row_position,
    sort_label,
    tree_position,
)
from subagent_catalog.views.widgets.tree_row import ANY, RowInfo

STATIC = Path(__file__).resolve().parent / "static"
LABEL_BATCH = 400
"""At most this many row labels are answered per request (a viewport needs about 40)."""
MIN_TREE_HEIGHT = 120
"""The smallest list height (px) ``tree_height`` accepts (the front end's drag stops there too)."""


def _buffer(values: Sequence[int], code: str = "i") -> bytes:
    return array(code, values).tobytes()


class CatalogBrowser(anywidget.AnyWidget, ErrorGroupFilter, FindingLabelFilters):
    """Browse a corpus's session tree, search and filter it, inspect one session.

    Args:
        corpus: a read corpus or an opened archive (``store.source.Source``).
        semantics: the listing semantics of the rows and ``list_agents`` texts.
        live: an optional live overlay (``{id: "running"|"idle"}``), as for the catalog.
        labels: a label store (``store.labels.Labels``' file, outside the corpus root) the pane writes to.
        rules: user rules for the findings (a TOML file or ``Rule`` objects; docs/findings.md).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> browser = CatalogBrowser(read_corpus(tempfile.mkdtemp()))
        >>> browser.built_nodes, browser.catalog_loaded, browser.visible
        (0, False, [])
    """

    _esm = (STATIC / "browser.js").read_text(encoding="utf-8")
    _css = (STATIC / "browser.css").read_text(encoding="utf-8") + palette.outcome_css(".sc-browser .sc-o-{outcome}")

    search = traitlets.Unicode("", help="case-insensitive substring of id, label, error code or message").tag(sync=True)
    outcome = traitlets.Unicode(
        None, allow_none=True, help="run outcome filter (an ``outcome`` value, or FAILED_CHOICE: any failed run)"
    ).tag(sync=True)
    tool_failures = traitlets.Enum(
        ["some", "none"], None, allow_none=True, help="runs with some / no failed tool results"
    ).tag(sync=True)
    sort_by = traitlets.Enum(
        list(SORT_KEYS), "created", help="order of the results (any but created lists every session, sorted)"
    ).tag(sync=True)
    sort_descending = traitlets.Bool(True, help="largest first (the sorts other than created)").tag(sync=True)
    kind = traitlets.Unicode(None, allow_none=True, help="role filter: " + ", ".join(ROLES)).tag(sync=True)
    mode = traitlets.Unicode(None, allow_none=True, help="identity mode filter").tag(sync=True)
    activity = traitlets.Unicode(None, allow_none=True, help="catalog activity filter").tag(sync=True)
    reason = traitlets.Unicode(None, allow_none=True, help="diagnostic reason filter").tag(sync=True)
    cause = traitlets.Unicode(None, allow_none=True, help="diagnostic cause filter").tag(sync=True)
    depth = traitlets.Int(None, allow_none=True, help="header delegationDepth filter").tag(sync=True)
    provider = traitlets.Unicode(None, allow_none=True, help="last descriptor's provider filter").tag(sync=True)
    project = traitlets.Unicode(None, allow_none=True, help="project directory filter").tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode(), help="expanded tree positions (each also opens its ancestors)").tag(
        sync=True
    )
    selected = traitlets.Int(None, allow_none=True, help="selected session (row index in corpus.sessions)").tag(
        sync=True
    )
    showing = traitlets.Enum(["tree", "results"], "tree", help="which list the left pane shows").tag(sync=True)
    tab = traitlets.Enum(["sessions", "problems"], "sessions", help="the open tab").tag(sync=True)
    problem_kind = traitlets.Unicode(ANY, help="problems tab filter").tag(sync=True)
    filtering = traitlets.Bool(False, help="a search or filter is active").tag(sync=True)
    tree_height = traitlets.Int(
        None,
        allow_none=True,
        min=MIN_TREE_HEIGHT,
        help="the list's height in px (the grip under it sets it); None: as tall as its rows, up to the room in view",
    ).tag(sync=True)
    # what the front end draws (written by Python only)
    tree_keys = traitlets.Bytes(b"", help="session key of each drawn tree row (int32)").tag(sync=True)
    tree_depths = traitlets.Bytes(b"", help="depth of each drawn tree row (int32)").tag(sync=True)
    tree_flags = traitlets.Bytes(b"", help="1: has children, 2: expanded (uint8)").tag(sync=True)
    result_keys = traitlets.Bytes(b"", help="session key of each result row (int32)").tag(sync=True)
    result_flags = traitlets.Bytes(b"", help="1: the result has children (uint8)").tag(sync=True)
    scroll_to = traitlets.List(traitlets.Int(), [-1, 0], help="[row index, request number]").tag(sync=True)
    banner = traitlets.Unicode("", help="the failing listing's banner (HTML)").tag(sync=True)
    summary = traitlets.Unicode("", help="one line of corpus facts (HTML)").tag(sync=True)
    results_label = traitlets.Unicode("", help="what the results list holds (HTML)").tag(sync=True)
    choices = traitlets.List(traitlets.Any(), help="[[filter, [values...]], ...]").tag(sync=True)
    problem_kinds = traitlets.List(traitlets.Unicode()).tag(sync=True)
    problem_count = traitlets.Int(0).tag(sync=True)
    problems_html = traitlets.Unicode("").tag(sync=True)
    detail = traitlets.Unicode("", help="the detail pane of the selected session (HTML)").tag(sync=True)
    detail_key = traitlets.Int(None, allow_none=True, help="the session the detail pane describes").tag(sync=True)
    timeline = traitlets.Dict(help="the selected session's children over time (run_facts.timeline_payload)").tag(
        sync=True
    )
    # read back from Python
    results = traitlets.List(traitlets.Int(), help="sessions matching the search and filters")
    built_nodes = traitlets.Int(0, help="row labels computed so far")
    catalog_loaded = traitlets.Bool(False, help="whether the catalog rows have been computed")
    selected_info = traitlets.Dict(help="facts about the selected session (see select)")

    def __init__(
        self,
        corpus: Source,
        *,
        semantics: Semantics = "projection",
        live: Mapping[str, str] | None = None,
        labels: str | os.PathLike[str] | None = None,
        rules: str | os.PathLike[str] | Sequence[Rule] | None = None,
    ) -> None:
        corpus = corpus.to_corpus()  # a corpus, or an archive's frames
        self.corpus = corpus
        self.semantics: Semantics = semantics
        self.live = dict(live) if live else None
        self._labels: dict[tuple[bool, int], RowInfo] = {}
        self._by_path: dict[str, dict[str, Any]] = {}
        self._catalog_error: str | None = None
        self._nodes_frame: pl.DataFrame | None = None
        self._tree = SessionTree(corpus)
        self._rows: tuple[list[int], list[int]] = ([], [])  # the drawn rows' keys and parent rows
        self._index_of: dict[tuple[int, int], int] = {}  # (parent row, key) -> drawn row
        self._names = RunNames(corpus, self._tree.nodes)  # readable names of the runs labelled so far
        self._key_of_order = dict(
            zip(corpus.sessions["list_order"].to_list(), range(corpus.sessions.height), strict=True)
        )
        listed = dict(tally(corpus.sessions, "listed").iter_rows()).get(True, 0)
        problems = corpus.problems
        super().__init__(
            banner=listing_error_html(corpus),
            summary=f"{corpus.sessions.height} session files · {listed} listed · {len(self._tree.roots)} "
            f"top-level rows · {problems.height} problems · <code>{escape(corpus.root)}</code>",
            choices=[[name, values] for name, values in filter_choices(corpus).items()],
            problem_count=problems.height,
            problem_kinds=[ANY, *sorted(set(problems["kind"].to_list()))] if problems.height else [ANY],
        )
        self._init_findings(labels=labels, rules=rules)
        self._render_tree()
        self._render_problems()
        self.observe(lambda _change: self._render_tree(), names=["expanded"])
        self.observe(self._on_filter_change, names=[*FILTERS, "search", "sort_by", "sort_descending"])
        self.observe(self._on_selected, names=["selected"])
        self.observe(lambda _change: self._render_problems(), names=["problem_kind"])
        self.on_msg(self._on_message)

    # ------------------------------------------------------------- catalog

    def children_of(self, key: int) -> list[int]:
        """The session keys whose header names this session as parent, in upstream's sibling order.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> CatalogBrowser(read_corpus(tempfile.mkdtemp())).children_of(0)
            []
        """
        return self._tree.children_of(key)

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

    # ---------------------------------------------------------------- tree

    def _render_tree(self) -> None:
        keys, depths, flags, parents = flatten(self._tree, self.expanded)
        self._rows = (keys, parents)
        self._index_of = {}
        with self.hold_sync():
            self.tree_keys = _buffer(keys)
            self.tree_depths = _buffer(depths)
            self.tree_flags = _buffer(flags, "B")

    @property
    def visible(self) -> list[str]:
        """The tree positions drawn, in order (spelled on request: a row's position is as long as its depth).

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> CatalogBrowser(read_corpus("data/sample")).visible[:3]
            ['8', '20', '25']
        """
        keys, parents = self._rows
        positions: list[str] = []
        for key, parent in zip(keys, parents, strict=True):
            positions.append(f"{positions[parent]}/{key}" if parent >= 0 else str(key))
        return positions

    def _position_index(self, position: str) -> int:
        """The drawn row at a position, or -1 (linear in the position, whatever the rows)."""
        keys, parents = self._rows
        if not self._index_of and keys:
            self._index_of = {(parent, key): row for row, (key, parent) in enumerate(zip(keys, parents, strict=True))}
        row = -1
        for part in position.split("/"):
            if not part.isdigit():
                return -1
            row = self._index_of.get((row, int(part)), -2)
            if row < 0:
                return -1
        return row

    def _is_open(self, position: str) -> bool:
        """Whether a position is expanded: in ``expanded``, or an ancestor of a position there."""
        below = position + "/"
        return any(entry == position or entry.startswith(below) for entry in self.expanded)

    def label(self, key: int, *, context: bool = False) -> RowInfo:
        """The label, tooltip, style and child count of a session's row (``context``: as a search result).

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus("data/sample"))
            >>> browser.label(browser.find("run-webapp-1"))["text"]
            'run-webapp-1  [session · 10 below]'
        """
        cached = self._labels.get((context, key))
        if cached is not None:
            return cached
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
        children = len(self._tree.unsorted_children(key))
        found, cycle = row["parent_session"] in self._tree.present, key in self._tree.cycle_roots
        text, tip, style = row_text(
            row, cat, children=children, parent_found=found, in_cycle=cycle, context=context, name=self._names.get(key)
        )
        facts = facts_text(row)
        info = RowInfo(
            key=key, text=text, tooltip=tip, style=style, children=children, outcome=row["outcome"], facts=facts
        )
        self._labels[(context, key)] = info
        self.built_nodes = len(self._labels)
        return info

    def name_runs(self, keys: Sequence[int]) -> list[int]:
        """Look up the readable names (``run_names``) of these rows' runs; returns the keys that got one.

        A run's name is its title or first prompt; its labels are made again. Subagents keep their
        descriptor's label.

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus("data/sample"))
            >>> browser.name_runs([browser.find("run-webapp-1")]) == [browser.find("run-webapp-1")]
            True
        """
        named = self._names.lookup(keys)
        for key in named:
            self._labels.pop((False, key), None)
            self._labels.pop((True, key), None)
        return named

    def row(self, position: str) -> RowInfo:
        """The drawn row at a tree position, with its label (``"expanded"``: whether it is open).

        Raises:
            KeyError: the position is not drawn (its parent is collapsed, or it is no node).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> CatalogBrowser(read_corpus(tempfile.mkdtemp())).row("0")
            Traceback (most recent call last):
            ...
            KeyError: 'no tree row at position 0'
        """
        index = self._position_index(position)
        if index < 0:
            raise KeyError(f"no tree row at position {position}")
        flags = self.tree_flags[index]
        info = RowInfo(self.label(int(position.rsplit("/", 1)[-1])))
        info.update(position=position, expandable=bool(flags & 1), expanded=bool(flags & 2))
        return info

    def expand(self, position: str) -> None:
        """Expand a tree node (its children are drawn right below it).

        Args:
            position: a position from ``visible`` (``"key"`` or ``"key/key/..."``); its ancestors
                open too.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus(tempfile.mkdtemp()))
            >>> browser.expand("0"); browser.expanded
            ['0']
        """
        if not self._is_open(position):  # its ancestors' entries are implied by it from now on
            self.expanded = [e for e in self.expanded if not position.startswith(e + "/")] + [position]

    def collapse(self, position: str) -> None:
        """Collapse a tree node (the nodes below it close too; its ancestors stay open).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus(tempfile.mkdtemp()))
            >>> browser.expand("0"); browser.collapse("0"); browser.expanded
            []
        """
        below = position + "/"
        kept = [e for e in self.expanded if e != position and not e.startswith(below)]
        parent = position.rsplit("/", 1)[0] if "/" in position else None
        if (
            parent is not None
            and len(kept) < len(self.expanded)
            and not any(e == parent or e.startswith(parent + "/") for e in kept)
        ):
            kept.append(parent)  # its ancestors stay open
        self.expanded = kept

    def toggle(self, position: str) -> None:
        """Expand a collapsed node or collapse an expanded one (the ▸/▾ toggle's handler).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus(tempfile.mkdtemp()))
            >>> browser.toggle("0"); browser.expanded
            ['0']
        """
        (self.collapse if self._is_open(position) else self.expand)(position)

    def reveal(self, session: int | str, *, expand: bool = False, select: bool = True) -> str:
        """Show a session in the tree: open its ancestors, scroll to it, select it; returns its position.

        Args:
            session: a key (row index of ``corpus.sessions``) or a session id.
            expand: also expand the session itself.
            select: also select it.

        Raises:
            KeyError: no such session.

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus("data/sample"))
            >>> browser.reveal("auth-refactor")
            '8/0'
            >>> browser.expanded, browser.showing, browser.selected
            (['8'], 'tree', 0)
        """
        key = self.find(session) if isinstance(session, str) else session
        if key is None or not 0 <= key < self.corpus.sessions.height:
            raise KeyError(f"no session {session}")
        position = tree_position(self._tree, key)
        # one position opens every ancestor: the state stays linear in the depth
        opened = position if expand else position.rsplit("/", 1)[0] if "/" in position else None
        # the tree and the scroll go out first: the front end shows the row while the detail is made
        if opened is not None:
            self.expand(opened)
        self.showing = "tree"
        self.scroll_to = [self._position_index(position), self.scroll_to[1] + 1]
        if select:
            self.selected = key
        return position

    def find(self, session_id: str) -> int | None:
        """The key (row index in ``corpus.sessions``) of a session id, or ``None``.

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> CatalogBrowser(read_corpus(tempfile.mkdtemp())).find("x") is None
            True
        """
        key = self._tree.key_of.get(session_id)
        if key is not None:
            return key
        try:
            return self._tree.ids.index(session_id)
        except ValueError:
            return None

    # --------------------------------------------------------------- messages

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """Requests from the front end: ``labels`` of rows in view, ``toggle``/``reveal`` a row."""
        if not isinstance(content, dict) or self._findings_message(content):
            return
        kind = content.get("type")
        if kind == "labels":
            context = bool(content.get("results"))
            keys = [int(k) for k in content.get("keys", [])[:LABEL_BATCH] if 0 <= int(k) < self.corpus.sessions.height]
            self._send_labels(keys, context)
            named = self.name_runs(keys)  # the rows named since: their labels made again with the name
            if named:
                self._send_labels(named, context)
        elif kind == "toggle":
            index = int(content.get("index", -1))
            keys, parents = self._rows
            if 0 <= index < len(keys):
                self.toggle(row_position(keys, parents, index))
        elif kind == "reveal":
            self.reveal(int(content["key"]), expand=bool(content.get("expand")))

    def _send_labels(self, keys: list[int], context: bool) -> None:
        infos = [self.label(key, context=context) for key in keys]
        rows = [[i["key"], i["text"], i["tooltip"], i["style"], i["outcome"], i["facts"]] for i in infos]
        self.send({"type": "labels", "results": context, "rows": rows})

    # ---------------------------------------------------------------- filters

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
            for name in FILTERS:
                setattr(self, name, None)
            self.sort_by = "created"
            self.sort_descending = True

    def _on_filter_change(self, _change: dict[str, Any]) -> None:
        filters = {name: getattr(self, name) for name in FILTERS if getattr(self, name) is not None}
        query = self.search.strip().lower()
        sort = self.sort_by
        if not filters and not query and sort == "created":
            with self.hold_sync():
                self.filtering = False
                self.results = []
                self.result_keys = self.result_flags = b""
                self.results_label = ""
                self.showing = "tree"
            return
        frame = self._with_finding_columns(self._nodes_table(), filters)
        keys = filter_keys(frame, filters, query, sort=sort, descending=self.sort_descending)
        described = ", ".join(f"{name}={value}" for name, value in filters.items())
        search = f'search "{self.search.strip()}"' if query else ""
        if sort != "created":
            described = ", ".join(
                p for p in (described, sort_label(self._nodes_table(), sort, self.sort_descending)) if p
            )
        children = self._tree.unsorted_children
        with self.hold_sync():
            self.filtering = True
            self.results = keys
            self.result_keys = _buffer(keys)
            self.result_flags = _buffer([1 if children(k) else 0 for k in keys], "B")
            self.results_label = (
                f"<b>{len(keys):,}</b> {'matching ' if filters or query else ''}session{'' if len(keys) == 1 else 's'} "
                f"({escape(', '.join(p for p in (search, described) if p))})"
            )
            self.showing = "results"

    # -------------------------------------------------------------- selection

    @traitlets.validate("selected")
    def _valid_selection(self, proposal: dict[str, Any]) -> int | None:
        value = proposal["value"]
        if value is not None and not 0 <= value < self.corpus.sessions.height:
            raise traitlets.TraitError(
                f"selected must be a row index of corpus.sessions (0..{self.corpus.sessions.height - 1}), not {value}"
            )
        return value if value is None else int(value)

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

    def _on_selected(self, change: dict[str, Any]) -> None:
        info: dict[str, Any] = {}
        text = ""
        if change["new"] is not None:
            # first the run facts and the timeline (quick), then the rest of the pane (it reads the log)
            key = int(change["new"])
            with self.hold_sync():
                self.timeline = self.children_timeline(key)
                self.detail = lead_html(self.corpus.sessions.row(key, named=True), self._lead(key))
                self.detail_key = key
            info, text = self._describe(key)
        with self.hold_sync():
            self.selected_info = info
            if change["new"] is None:
                self.timeline = {}
            self.detail = text
            self.detail_key = change["new"]

    def children_timeline(self, key: int) -> dict[str, Any]:
        """The children timeline the detail pane draws (``run_facts.timeline_payload``; ``{}``: no children).

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> browser = CatalogBrowser(read_corpus("data/sample"))
            >>> data = browser.children_timeline(browser.find("run-webapp-1"))
            >>> len(data["rows"]) + data["no_span"] == len(browser.children_of(browser.find("run-webapp-1")))
            True
        """
        session_id = self._tree.ids[key]
        if session_id is None or not self._tree.unsorted_children(key):
            return {}
        try:
            return timeline_payload(self.corpus, session_id, self._key_of_order)
        except SubagentCatalogError:  # an archive without the run columns: no timeline, the rest of the pane stays
            return {}

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
        scopes: tuple[Literal["children", "descendants"], ...] = ("children", "descendants")
        unlisted = "(not listed: upstream cannot use this session as a parent)"
        agents_text = [self._agents_text(exact_id, scope) if listed else unlisted for scope in scopes]
        return session_info(
            self.corpus,
            key,
            row,
            cat,
            role=session_role(row, cat),
            agents_text=(agents_text[0], agents_text[1]),
            semantics=self.semantics,
            catalog_error=self._catalog_error,
            lead=lambda events: self._lead(key, events),
            findings=self._pane_findings(key),
        )

    def _lead(self, key: int, events: pl.DataFrame | None = None) -> str:
        """The pane's lead: the run facts (with the run's name), the timeline's slot."""
        if self._names.lookup([key]):
            self._labels.pop((False, key), None)
            self._labels.pop((True, key), None)
        lead = run_facts_html(self._tree.session_row(self.corpus, key), name=self._names.get(key))
        return lead + ('<div class="sc-timeline-slot"></div>' if self._tree.unsorted_children(key) else "")

    # --------------------------------------------------------------- problems

    def _render_problems(self) -> None:
        problems = problems_in_order(self.corpus.problems, self.problem_kind)
        self.problems_html = problems_table_html(problems, root=self.corpus.root, total=self.corpus.problems.height)
