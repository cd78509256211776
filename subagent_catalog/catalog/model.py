"""The catalog's input model: one node per session file, indexed by parent.

``build_model`` turns a corpus's frames into ``Node`` records (the
listed header, the read verdict, the identity fold) grouped by
``parentSession``, and ``Row`` is one upstream listing row with the
audit columns. Anything that gives a corpus (``ToCorpus``, e.g. an
opened archive) is accepted through ``as_corpus``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol, get_args

import polars as pl

from subagent_catalog.catalog.collation import sort_siblings
from subagent_catalog.catalog.source import TableSource
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.jsvalue import is_number, js_number, js_string, parse_json
from subagent_catalog.read.paths import MISSING
from subagent_catalog.read.scanner import ReadCause

Semantics = Literal["projection", "trace"]


Scope = Literal["children", "descendants"]


Reason = Literal["corrupt", "unsupported", "unavailable"]


LIFECYCLE_KEYS = ("version", "id", "createdAt", "cwd", "parentSession", "seedLength", "delegationDepth")


BACKEND_CAUSES = frozenset({*get_args(ReadCause), "io-error", "unstable-file", "file-too-large", "unknown-event-type"})


@dataclass
class Node:
    """One listed session, as the catalog sees it."""

    id: str
    header: dict[str, Any]
    row: dict[str, Any]
    order: int
    created: float
    provider: str | None
    descriptors: list[tuple[int, str, str | None]]

    @property
    def origin_subagent(self) -> bool:
        """Whether the header says ``origin: "subagent"``."""
        return self.header.get("origin") == "subagent"


@dataclass
class Row:
    """One upstream listing entry plus its audit facts.

    ``session`` holds the child's session columns the catalog carries past
    upstream's fields (``project_dir``, ``created_at`` and the run facts).
    """

    kind: Literal["child", "diagnostic"]
    id: str
    mode: str | None = None
    label: str | None = None
    activity: str | None = None
    has_children: bool | None = None
    reason: Reason | None = None
    parent: Any = MISSING
    depth: int | None = None
    cause: str | None = None
    cause_detail: str | None = None
    verdict: str | None = None
    descriptor_seq: int | None = None
    identity_from_seed: bool | None = None
    provider: str | None = None
    created_at_ms: int | None = None
    path: str | None = None
    semantics: str = "projection"
    session: dict[str, Any] = field(default_factory=dict)

    def upstream(self) -> dict[str, Any]:
        """The row as upstream's object (``label`` omitted when absent)."""
        out: dict[str, Any]
        if self.kind == "child":
            out = {"kind": "child", "id": self.id, "mode": self.mode}
            if self.label is not None:
                out["label"] = self.label
            out["activity"] = self.activity
            out["hasChildren"] = self.has_children
        else:
            out = {"kind": "diagnostic", "id": self.id, "reason": self.reason}
        if self.parent is not MISSING:
            out["parentId"] = self.parent
            out["depth"] = self.depth
        return out

    def frame_row(self) -> dict[str, Any]:
        """The row as a frame record (upstream fields plus audit columns, by ``ROW_SCHEMA`` name)."""
        row = {name: getattr(self, name) for name in _FRAME_FIELDS}
        parent = None if self.parent is MISSING else js_string(self.parent)
        return {**row, "hasChildren": self.has_children, "parentId": parent, **self.session}


_FRAME_FIELDS = [spec.name for spec in fields(Row) if spec.name not in ("has_children", "parent", "session")]
"""The ``Row`` fields a frame record holds under their own name."""


def map_key(value: Any) -> Any:
    """A dict key with JavaScript ``Map`` (SameValueZero) identity for JSON values.

    Examples:
        >>> map_key(1) == map_key(1.0), map_key("1") == map_key(1)
        (True, False)
    """
    if isinstance(value, (dict, list)):
        return ("object", id(value))
    if is_number(value):
        return ("number", js_number(value))
    return (type(value).__name__, value)


class ToCorpus(Protocol):
    """Anything that can give a ``Corpus`` (an opened archive, for instance)."""

    def to_corpus(self) -> Corpus:
        """The corpus frames."""


CorpusSource = Corpus | ToCorpus | TableSource


def as_corpus(source: CorpusSource) -> Corpus:
    """The corpus behind a source (a Corpus itself, or an object with ``to_corpus()``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> c = read_corpus(tempfile.mkdtemp())
        >>> as_corpus(c) is c
        True
    """
    if isinstance(source, Corpus):
        return source
    collect = getattr(source, "to_corpus", None)
    if collect is None:
        raise TypeError(f"{type(source).__name__} gives no corpus (it has no to_corpus())")
    corpus: Corpus = collect()
    return corpus


@dataclass
class Model:
    """The listed corpus, indexed for listing calls (built once per corpus)."""

    nodes: list[Node]
    by_id: dict[str, Node]
    children: dict[Any, list[Node]] = field(default_factory=dict)
    subagent_parents: set[str] = field(default_factory=set)


NESTED_COLUMNS = ("usage_samples", "tool_call_records")
"""``sessions`` columns a node's ``row`` leaves out (lists of records: half the cost of the rows)."""


def build_model(source: CorpusSource) -> Model:
    """Index the listed sessions of a corpus (raises when upstream's listing fails).

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's list() fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> build_model(read_corpus(tempfile.mkdtemp())).nodes
        []
    """
    corpus = as_corpus(source)
    cached = getattr(corpus, "_model", None)
    if isinstance(cached, Model):
        return cached
    corpus.require_listing()
    last_descriptor: dict[str, str | None] = {}
    descriptors: dict[str, list[tuple[int, str, str | None]]] = {}
    frame = corpus.descriptors.select("path", "seq", "status", "provider", "is_last", "reason")
    for path, seq, status, provider, is_last, reason in frame.iter_rows():
        descriptors.setdefault(path, []).append((seq, status, reason))
        if is_last:
            last_descriptor[path] = provider
    # the nested per-step and per-call records are no node's business, and the costliest to turn into dicts
    listed = corpus.sessions.filter(pl.col("listed")).sort("list_order").drop(NESTED_COLUMNS, strict=False)
    nodes = [
        node_from_row(row, last_descriptor.get(row["path"]), descriptors.get(row["path"], []))
        for row in listed.iter_rows(named=True)
    ]
    model = model_of(nodes)
    object.__setattr__(corpus, "_model", model)
    return model


def node_from_row(row: dict[str, Any], provider: str | None, descriptors: list[tuple[int, str, str | None]]) -> Node:
    """The node of one listed ``sessions`` row (its header parsed from ``header_json``).

    Examples:
        >>> node = node_from_row({"header_json": '{"id":"a","createdAt":2.5}', "list_order": 0}, None, [])
        >>> node.id, node.created
        ('a', 2.5)
    """
    header = parse_json(row["header_json"])
    return Node(
        id=header["id"],
        header=header,
        row=row,
        order=row["list_order"],
        created=js_number(header["createdAt"]),
        provider=provider,
        descriptors=descriptors,
    )


def model_of(nodes: list[Node], *, subagent_parents: set[str] | None = None) -> Model:
    """Index nodes (in list order) by parent, siblings in upstream's order.

    ``subagent_parents`` defaults to the string parents of the ``origin:
    "subagent"`` nodes given; a caller that holds only part of a corpus passes
    the exact set for the ids it resolves.

    Examples:
        >>> model_of([]).children
        {}
    """
    model = Model(nodes=nodes, by_id={node.id: node for node in nodes})
    for node in nodes:
        parent = node.header.get("parentSession", MISSING)
        if parent is MISSING:
            continue
        model.children.setdefault(map_key(parent), []).append(node)
        if node.origin_subagent and isinstance(parent, str):
            model.subagent_parents.add(parent)
    if subagent_parents is not None:
        model.subagent_parents = subagent_parents
    for siblings in model.children.values():
        sort_siblings(siblings, lambda n: n.created, lambda n: n.id)
    return model


def walk(model: Model, root: Any) -> list[tuple[Node, Any, int]]:
    """Upstream's pre-order walk below ``root``: (node, direct parent, depth), every node once.

    Examples:
        >>> walk(model_of([]), "P")
        []
    """
    order: list[tuple[Node, Any, int]] = []
    visited: set[Any] = {map_key(root)}
    stack: list[tuple[Node, Any, int]] = [(n, root, 1) for n in reversed(model.children.get(map_key(root), []))]
    while stack:
        node, parent, depth = stack.pop()
        if map_key(node.id) in visited:
            continue
        visited.add(map_key(node.id))
        order.append((node, parent, depth))
        stack.extend((child, node.id, depth + 1) for child in reversed(model.children.get(map_key(node.id), [])))
    return order
