"""The session tree behind the browser: roots, children in upstream's sibling order, cycles.

Pure Polars and Python over ``corpus.sessions`` (no widgets): a session's
children are the listed sessions whose header names it as ``parentSession``;
roots are listed sessions whose parent is absent, then one member of each
parent cycle no root reaches, then the unlisted files.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal

import polars as pl

from subagent_catalog.analysis.bins import total_tokens
from subagent_catalog.analysis.forest import sibling_order
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.costs import known_costs
from subagent_catalog.views.widgets.error_filter import ERROR_COLUMNS, error_group_choices, error_group_column
from subagent_catalog.views.widgets.finding_filter import ANY_FINDING
from subagent_catalog.views.widgets.run_facts import FAILED_CHOICE
from subagent_catalog.views.widgets.session_detail import ROLES

NODE_COLUMNS = [
    "key",
    "session_id",
    "parent_session",
    "origin",
    "listed",
    "list_skip",
    "list_error",
    "verdict",
    "project_dir",
    "delegation_depth",
    "identity_mode",
    "identity_label",
    "created_at_ms",
    "path",
    "list_order",
    "outcome",
    "run_wall_ms",
    "active_ms",
    "cost_usd",
    "tool_results_failed",
    *ERROR_COLUMNS,
]
"""The ``sessions`` columns the tree keeps (with ``key``, the computed ``tokens`` and ``cost_usd_known``)."""


def known_cost_column(sessions: pl.DataFrame) -> pl.Series:
    """Each session's known cost (``known_costs``; frames without the samples: ``cost_usd``, unknown as 0).

    Examples:
        >>> known_cost_column(pl.DataFrame({"cost_usd": [None, 0.5]})).to_list()
        [0.0, 0.5]
    """
    if "usage_samples" in sessions.columns:
        return known_costs(sessions)
    return sessions["cost_usd"].fill_null(0.0).alias("cost_usd_known")


class SessionTree:
    """The parent-to-children index of a corpus's sessions (keys are row indexes in ``corpus.sessions``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> SessionTree(read_corpus(tempfile.mkdtemp())).roots
        []
    """

    def __init__(self, corpus: Corpus) -> None:
        sessions = corpus.sessions
        self._child_keys: dict[int, list[int]] = {}
        self.nodes = nodes = (
            sessions.with_row_index("key")
            .with_columns(pl.col("key").cast(pl.Int64))
            .select(*NODE_COLUMNS, total_tokens())
            .with_columns(known_cost_column(sessions))
        )
        self.ids: list[str | None] = nodes["session_id"].to_list()
        self.parents: list[str | None] = nodes["parent_session"].to_list()
        self.created: list[float] = [math.inf if ms is None else ms for ms in nodes["created_at_ms"].to_list()]
        self.listed_flags: list[bool] = nodes["listed"].to_list()
        in_tree = nodes.filter(pl.col("listed") & pl.col("session_id").is_not_null())
        present = set(in_tree["session_id"].to_list())
        grouped = (
            in_tree.filter(pl.col("parent_session").is_not_null())
            .group_by("parent_session", maintain_order=True)
            .agg(pl.col("key"))
        )
        self.children: dict[str, list[int]] = dict(
            zip(grouped["parent_session"].to_list(), grouped["key"].to_list(), strict=True)
        )
        top = in_tree.filter(pl.col("parent_session").is_null() | ~pl.col("parent_session").is_in(list(present)))
        top = top.sort(["created_at_ms", "key"], nulls_last=True)
        roots: list[int] = top["key"].to_list()
        self.cycle_roots = self._cycle_members(in_tree, roots)
        unlisted = nodes.filter(~(pl.col("listed") & pl.col("session_id").is_not_null()))["key"].to_list()
        self.roots: list[int] = roots + self.cycle_roots + unlisted
        self.root_set = set(self.roots)
        self.present = present
        self.key_of: dict[str, int] = {}
        for key, sid in zip(in_tree["key"].to_list(), in_tree["session_id"].to_list(), strict=True):
            self.key_of.setdefault(sid, key)

    def _cycle_members(self, in_tree: pl.DataFrame, roots: list[int]) -> list[int]:
        """One member of each parent cycle no root reaches (their subtrees are otherwise invisible)."""
        reached: set[int] = set()

        def reach(stack: list[int]) -> None:  # every session below these, marked reached
            while stack:
                key = stack.pop()
                if key not in reached:
                    reached.add(key)
                    session_id = self.ids[key]
                    if session_id is not None:
                        stack.extend(self.children.get(session_id, []))

        reach(list(roots))
        if len(reached) == in_tree.height:
            return []
        key_of = {sid: key for key, sid in zip(in_tree["key"].to_list(), in_tree["session_id"].to_list(), strict=True)}
        extra: list[int] = []
        for key in in_tree["key"].to_list():
            if key in reached:
                continue
            seen: list[int] = []
            current = key
            while current not in seen and current not in reached:
                seen.append(current)
                parent = self.parents[current]
                if parent is None or parent not in key_of:
                    break
                current = key_of[parent]
            member = min(seen[seen.index(current) :]) if current in seen else key
            extra.append(member)
            reach([member])
        return extra

    def children_of(self, key: int) -> list[int]:
        """The session keys whose header names this session as parent, in upstream's sibling order.

        Order: ``createdAt``, then the id in ``localeCompare`` order (sorted on
        first use, then cached).

        Examples:
            >>> import tempfile
            >>> from subagent_catalog.corpus import read_corpus
            >>> SessionTree(read_corpus(tempfile.mkdtemp())).children_of(0)
            []
        """
        keys = self._child_keys.get(key)
        if keys is None:
            keys = self._child_keys[key] = list(self.unsorted_children(key))
            sibling_order(keys, self.created, self.ids)  # type: ignore[arg-type]  # every child has an id
        return keys

    def unsorted_children(self, key: int) -> list[int]:
        """The children of a listed session, in corpus order (``[]`` for an unlisted one)."""
        session_id = self.ids[key] if 0 <= key < len(self.ids) else None
        return self.children.get(session_id, []) if session_id is not None and self.listed(key) else []

    def listed(self, key: int) -> bool:
        """Whether upstream lists the session (a listed header with an id)."""
        return self.listed_flags[key] and self.ids[key] is not None

    def session_row(self, corpus: Corpus, key: int) -> dict[str, Any]:
        """The session's ``corpus.sessions`` row with its known cost (``cost_usd_known``): what its pane shows."""
        return {**corpus.sessions.row(key, named=True), "cost_usd_known": self.nodes["cost_usd_known"][key]}


def nodes_table(nodes: pl.DataFrame, rows: list[dict[str, Any]], descriptors: pl.DataFrame) -> pl.DataFrame:
    """The tree's nodes joined with their catalog rows and last descriptor's provider, with a ``role``.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus(tempfile.mkdtemp())
        >>> nodes_table(SessionTree(corpus).nodes, [], corpus.descriptors).columns[-4:]
        ['role', 'any_mode', 'any_label', 'error_group']
    """
    columns = ["path", "kind", "mode", "label", "activity", "reason", "cause", "cause_detail"]
    cat = pl.DataFrame([{c: r[c] for c in columns} for r in rows], schema=dict.fromkeys(columns, pl.String))
    last = (
        descriptors.filter(pl.col("is_last"))
        .select("path", pl.col("provider").alias("last_provider"))
        .unique("path", keep="last")
    )
    frame = nodes.join(cat, on="path", how="left").join(last, on="path", how="left")
    role = (
        pl.when(~(pl.col("listed") & pl.col("session_id").is_not_null()))
        .then(pl.lit("unlisted"))
        .when(pl.col("kind") == "diagnostic")
        .then(pl.lit("diagnostic"))
        .when((pl.col("kind") == "child") | (pl.col("origin") == "subagent"))
        .then(pl.lit("subagent"))
        .when(pl.col("parent_session").is_not_null())
        .then(pl.lit("fork"))
        .otherwise(pl.lit("session"))
    )
    return frame.with_columns(
        role.alias("role"),
        pl.coalesce("mode", "identity_mode").alias("any_mode"),
        pl.coalesce("label", "identity_label").alias("any_label"),
        error_group_column(frame) if frame.height else pl.lit(None, pl.String).alias("error_group"),
    )


FILTER_COLUMNS = {
    "outcome": "outcome",
    "error_group": "error_group",
    "tool_failures": "tool_results_failed",
    "kind": "role",
    "mode": "any_mode",
    "activity": "activity",
    "reason": "reason",
    "cause": "cause",
    "depth": "delegation_depth",
    "provider": "last_provider",
    "project": "project_dir",
    "finding": "finding_kinds",
    "session_label": "labels",
}


SortKey = Literal["created", "duration", "cost", "tokens", "failed_tools"]
SORT_KEYS: tuple[SortKey, ...] = ("created", "duration", "cost", "tokens", "failed_tools")
SORT_COLUMNS: dict[SortKey, str] = {
    "created": "created_at_ms",
    "duration": "active_ms",  # idle time is not slowness: the time a turn of its own was open
    "cost": "cost_usd_known",
    "tokens": "tokens",
    "failed_tools": "tool_results_failed",
}
"""The column each browser sort orders by (``created``: the header's ``createdAt``; ``cost``: the known part, and
``tokens`` when no session has a known cost above 0: ``sort_column``)."""


def sort_column(frame: pl.DataFrame, sort: SortKey) -> str:
    """The column a sort orders by: ``SORT_COLUMNS``, but the cost sort by ``tokens`` when nothing is priced.

    Examples:
        >>> frame = pl.DataFrame({"cost_usd_known": [0.0, None], "tokens": [10, None]})
        >>> sort_column(frame, "cost"), sort_column(frame.with_columns(cost_usd_known=pl.lit(0.5)), "cost")
        ('tokens', 'cost_usd_known')
    """
    if sort == "cost" and not (frame["cost_usd_known"].fill_null(0.0) > 0).any():
        return "tokens"
    return SORT_COLUMNS[sort]


def sort_label(frame: pl.DataFrame, sort: SortKey, descending: bool) -> str:
    """What the results say of their order (``sorted by cost ↓``; the cost sort by tokens says so).

    Examples:
        >>> frame = pl.DataFrame({"cost_usd_known": [0.0], "tokens": [10]})
        >>> sort_label(frame, "cost", True), sort_label(frame, "failed_tools", False)
        ('sorted by cost ↓: nothing is priced, by tokens', 'sorted by failed tools ↑')
    """
    by = ": nothing is priced, by tokens" if sort_column(frame, sort) != SORT_COLUMNS[sort] else ""
    return f"sorted by {sort.replace('_', ' ')} {'↓' if descending else '↑'}{by}"


def _filter_expr(name: str, value: Any) -> pl.Expr:
    if name == "outcome" and value == FAILED_CHOICE:
        return pl.col("outcome").is_in(list(FAILED_OUTCOMES)).fill_null(False)
    if name == "tool_failures":
        failed = pl.col("tool_results_failed").fill_null(0) > 0
        return failed if value == "some" else ~failed
    if name == "finding" and value == ANY_FINDING:
        return pl.col("finding_kinds").list.len() > 0
    if name in ("finding", "session_label"):  # list columns (``finding_filter``)
        return pl.col(FILTER_COLUMNS[name]).list.contains(value).fill_null(False)
    matches: pl.Expr = pl.col(FILTER_COLUMNS[name]) == value
    return matches


def filter_keys(
    frame: pl.DataFrame,
    filters: dict[str, Any],
    query: str,
    *,
    sort: SortKey = "created",
    descending: bool = True,
) -> list[int]:
    """Keys of the nodes matching every filter and the (lower-case) substring query, in the sort's order.

    The query matches a session's id, label, last error code, last error message and outcome detail.

    ``created`` lists the oldest first (``descending`` is ignored); the others order by their column
    (largest first when ``descending``; ``sort_column``), sessions without a value last, ties oldest first. The
    ``outcome`` filter's ``FAILED_CHOICE`` matches every failed outcome (``FAILED_OUTCOMES``);
    ``tool_failures`` is ``some`` (at least one failed tool result) or ``none``.

    Examples:
        >>> import polars as pl
        >>> frame = pl.DataFrame({"key": [0, 1], "session_id": ["ab", "cd"], "any_label": [None, "x"],
        ...                       "created_at_ms": [2, 1], "role": ["session", "session"],
        ...                       "cost_usd_known": [0.5, None], "outcome": ["error", "completed"]})
        >>> filter_keys(frame, {}, "c"), filter_keys(frame, {"kind": "session"}, "")
        ([1], [1, 0])
        >>> filter_keys(frame, {}, "", sort="cost"), filter_keys(frame, {"outcome": FAILED_CHOICE}, "")
        ([0, 1], [0])
    """
    column = sort_column(frame, sort)  # by the whole corpus: nothing priced among the matches is no reason to switch
    for name, value in filters.items():
        frame = frame.filter(_filter_expr(name, value))
    if query:
        searched = [name for name in ("session_id", "any_label", *ERROR_COLUMNS) if name in frame.columns]
        frame = frame.filter(
            pl.any_horizontal(
                pl.col(name).str.to_lowercase().str.contains(query, literal=True).fill_null(False) for name in searched
            )
        )
    if sort == "created":
        ordered = frame.sort(["created_at_ms", "key"], nulls_last=True)
    else:
        ordered = frame.sort([column, "created_at_ms", "key"], descending=[descending, False, False], nulls_last=True)
    return ordered["key"].to_list()


EXTRA_CAUSES = ("lifecycle-mismatch", "unit-fold-failed", "lookup-failed", "multiple-descriptors")


def filter_choices(corpus: Corpus) -> dict[str, list[Any]]:
    """The values each browser filter offers, in the order the filters are shown.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> filter_choices(read_corpus(tempfile.mkdtemp()))["reason"]
        ['corrupt', 'unsupported', 'unavailable']
    """
    sessions = corpus.sessions
    providers = sorted(
        {p for p in corpus.descriptors["provider"].to_list() if p is not None} if corpus.descriptors.height else set()
    )
    causes = sorted(
        {c for c in [*sessions["read_cause"].to_list(), *sessions["identity_cause"].to_list()] if c is not None}
        | set(EXTRA_CAUSES)
    )
    rank = {outcome: at for at, outcome in enumerate(FAILED_OUTCOMES)}  # the failed ones first, then by name
    outcomes = sorted({o for o in sessions["outcome"].to_list() if o is not None}, key=lambda o: (rank.get(o, 99), o))
    return {
        "outcome": [FAILED_CHOICE, *outcomes],
        "error_group": error_group_choices(sessions),
        "tool_failures": ["some", "none"],
        "kind": list(ROLES),
        "mode": ["one-shot", "continuable"],
        "activity": ["inactive", "running"],
        "reason": ["corrupt", "unsupported", "unavailable"],
        "cause": causes,
        "depth": sorted({d for d in sessions["delegation_depth"].to_list() if d is not None}),
        "provider": providers,
        "project": sorted({p for p in sessions["project_dir"].to_list() if p is not None}),
    }


def flatten(tree: SessionTree, expanded: Iterable[str]) -> tuple[list[int], list[int], list[int], list[int]]:
    """The rows of the tree as drawn: keys, depths, flags (1: has children, 2: expanded) and parent rows.

    A node is open when its position is in ``expanded`` or is an ancestor of
    one there (so revealing a row deep in a chain adds one position, not one
    per ancestor); its children come right after it, a child already on the
    node's path (a parent cycle) left out. ``parents`` holds each row's parent
    row (``-1`` for a top-level row), from which ``row_position`` spells its
    position. Time and memory are linear in the rows drawn and the text of
    ``expanded``, whatever the depth.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> flatten(SessionTree(read_corpus(tempfile.mkdtemp())), set())
        ([], [], [], [])
    """
    trie: dict[tuple[int, int], int] = {}  # the expanded positions as a trie: (node, key) -> child node, 0 the top
    for position in expanded:
        at = 0
        for part in position.split("/"):
            if not part.isdigit():
                break
            step = (at, int(part))
            if step not in trie:
                trie[step] = len(trie) + 1
            at = trie[step]
    keys: list[int] = []
    depths: list[int] = []
    flags: list[int] = []
    parents: list[int] = []
    stack: list[tuple[int, int, int, int | None]] = [(key, 0, -1, trie.get((0, key))) for key in reversed(tree.roots)]
    children = tree.children
    ids = tree.ids
    path: list[int] = []  # the keys from the top-level row down to the row being drawn
    on_path: set[int] = set()
    while stack:
        key, depth, parent, node = stack.pop()
        while len(path) > depth:
            on_path.discard(path.pop())
        session_id = ids[key]
        below = children.get(session_id, []) if session_id is not None and tree.listed(key) else []
        if below and depth:
            below = [child for child in below if child not in on_path and child != key]
        is_open = bool(below) and node is not None
        row = len(keys)
        keys.append(key)
        depths.append(depth)
        flags.append((1 if below else 0) | (2 if is_open else 0))
        parents.append(parent)
        path.append(key)
        on_path.add(key)
        if is_open and node is not None:
            stack.extend(
                (child, depth + 1, row, trie.get((node, child)))
                for child in reversed(tree.children_of(key))
                if child not in on_path
            )
    return keys, depths, flags, parents


def row_position(keys: list[int], parents: list[int], row: int) -> str:
    """The position of a drawn row: the keys from its top-level row down to it, joined by ``/``.

    Examples:
        >>> row_position([8, 0], [-1, 0], 1)
        '8/0'
    """
    chain: list[int] = []
    while row >= 0:
        chain.append(keys[row])
        row = parents[row]
    return "/".join(str(key) for key in reversed(chain))


def tree_position(tree: SessionTree, key: int) -> str:
    """The tree position of a session: the keys from its top-level row down to it.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> tree_position(SessionTree(read_corpus(tempfile.mkdtemp())), 0)
        '0'
    """
    roots = tree.root_set
    chain = [key]
    while chain[-1] not in roots and 0 <= chain[-1] < len(tree.parents):
        parent = tree.parents[chain[-1]]
        up = tree.key_of.get(parent) if parent is not None else None
        if up is None or up in chain:
            break
        chain.append(up)
    return "/".join(str(k) for k in reversed(chain))
