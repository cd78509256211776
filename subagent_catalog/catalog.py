"""The subagent catalog: upstream's listing, row for row, over corpus frames.

``list_children``, ``list_descendants`` and ``list_agents_text`` give the
rows and text upstream's ``listChildren``, ``listDescendants`` and
``list_agents`` give for the same corpus, in the same order. Every row also
carries audit columns upstream folds away (the cause behind a diagnostic,
the read verdict, the descriptor seq...), which never change the upstream
values. The functions are pure: frames in, frames out.

Two semantics are available: ``projection`` (upstream today) and ``trace``
(the superseded read path, see SPEC section 4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import polars as pl

from subagent_catalog.collation import collation_key
from subagent_catalog.corpus import Corpus
from subagent_catalog.errors import CatalogError, LiveOverlayError
from subagent_catalog.jsvalue import clean_row, frame_text, is_number, js_number, js_strict_equal, js_string, parse_json
from subagent_catalog.paths import MISSING

Semantics = Literal["projection", "trace"]
Scope = Literal["children", "descendants"]
LiveStatus = Literal["running", "idle"]
Reason = Literal["corrupt", "unsupported", "unavailable"]

LIFECYCLE_KEYS = ("version", "id", "createdAt", "cwd", "parentSession", "seedLength", "delegationDepth")
BACKEND_CAUSES = frozenset(
    {
        "header-missing",
        "header-not-json",
        "header-not-session",
        "header-retired-fields",
        "foreign-format-version",
        "unparsable-line-before-turn-end",
        "seq-gap-before-turn-end",
        "null-record",
        "zstd-structure",
        "zstd-frame-damage",
        "zstd-header-frame",
        "zstd-torn-record-in-complete-frame",
        "io-error",
        "unstable-file",
        "file-too-large",
        "plaintext-too-large",
        "unknown-event-type",
    }
)

ROW_SCHEMA: dict[str, Any] = {
    "kind": pl.String,
    "id": pl.String,
    "mode": pl.String,
    "label": pl.String,
    "activity": pl.String,
    "hasChildren": pl.Boolean,
    "reason": pl.String,
    "parentId": pl.String,
    "depth": pl.Int64,
    "cause": pl.String,
    "cause_detail": pl.String,
    "verdict": pl.String,
    "descriptor_seq": pl.Int64,
    "identity_from_seed": pl.Boolean,
    "provider": pl.String,
    "created_at_ms": pl.Int64,
    "path": pl.String,
    "semantics": pl.String,
}


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
    """One upstream listing entry plus its audit facts."""

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
        """The row as a frame record (upstream fields plus audit columns)."""
        return {
            "kind": self.kind,
            "id": self.id,
            "mode": self.mode,
            "label": self.label,
            "activity": self.activity,
            "hasChildren": self.has_children,
            "reason": self.reason,
            "parentId": None if self.parent is MISSING else js_string(self.parent),
            "depth": self.depth,
            "cause": self.cause,
            "cause_detail": self.cause_detail,
            "verdict": self.verdict,
            "descriptor_seq": self.descriptor_seq,
            "identity_from_seed": self.identity_from_seed,
            "provider": self.provider,
            "created_at_ms": self.created_at_ms,
            "path": self.path,
            "semantics": self.semantics,
        }


def _key(value: Any) -> Any:
    """A dict key with JavaScript ``Map`` (SameValueZero) identity for JSON values."""
    if isinstance(value, (dict, list)):
        return ("object", id(value))
    if is_number(value):
        return ("number", js_number(value))
    return (type(value).__name__, value)


class ToCorpus(Protocol):
    """Anything that can give a :class:`Corpus` (an opened archive, for instance)."""

    def to_corpus(self) -> Corpus:
        """The corpus frames."""


CorpusSource = Corpus | ToCorpus


def as_corpus(source: CorpusSource) -> Corpus:
    """The corpus behind a source (a Corpus itself, or an object with ``to_corpus()``).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> c = read_corpus(tempfile.mkdtemp())
        >>> as_corpus(c) is c
        True
    """
    return source if isinstance(source, Corpus) else source.to_corpus()


@dataclass
class Model:
    """The listed corpus, indexed for listing calls (built once per corpus)."""

    nodes: list[Node]
    by_id: dict[str, Node]
    children: dict[Any, list[Node]] = field(default_factory=dict)
    subagent_parents: set[str] = field(default_factory=set)


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
    nodes: list[Node] = []
    listed = corpus.sessions.filter(pl.col("listed")).sort("list_order")
    for row in listed.iter_rows(named=True):
        header = parse_json(row["header_json"])
        nodes.append(
            Node(
                id=header["id"],
                header=header,
                row=row,
                order=row["list_order"],
                created=js_number(header["createdAt"]),
                provider=last_descriptor.get(row["path"]),
                descriptors=descriptors.get(row["path"], []),
            )
        )
    model = Model(nodes=nodes, by_id={node.id: node for node in nodes})
    for node in nodes:
        parent = node.header.get("parentSession", MISSING)
        if parent is MISSING:
            continue
        model.children.setdefault(_key(parent), []).append(node)
        if node.origin_subagent and isinstance(parent, str):
            model.subagent_parents.add(parent)
    for siblings in model.children.values():
        siblings.sort(key=lambda n: (n.created, collation_key(n.id)))
    object.__setattr__(corpus, "_model", model)
    return model


def _lifecycle_matches(read: dict[str, Any] | None, listed: dict[str, Any]) -> bool:
    if read is None:
        return False
    return all(
        (read.get(k, MISSING) is MISSING and listed.get(k, MISSING) is MISSING)
        or js_strict_equal(read.get(k, MISSING), listed.get(k, MISSING))
        for k in LIFECYCLE_KEYS
    )


def _trace_compatible(read: dict[str, Any] | None, listed: dict[str, Any]) -> bool:
    if read is None:
        return False
    for key in LIFECYCLE_KEYS:
        a, b = read.get(key, MISSING), listed.get(key, MISSING)
        if key == "delegationDepth":
            a = 0 if a is MISSING else a
            b = 0 if b is MISSING else b
        if not ((a is MISSING and b is MISSING) or js_strict_equal(a, b)):
            return False
    return True


def _base(node: Node, semantics: Semantics) -> Row:
    created = node.header.get("createdAt")
    return Row(
        kind="diagnostic",
        id=node.id,
        verdict=node.row["verdict"],
        provider=node.provider,
        created_at_ms=int(created) if is_number(created) else None,
        path=node.row["path"],
        semantics=semantics,
    )


def _diagnostic(row: Row, reason: Reason, cause: str | None, detail: str | None) -> Row:
    row.kind, row.reason, row.cause, row.cause_detail = "diagnostic", reason, cause, detail
    return row


def _child(
    row: Row, mode: str, label: str | None, activity: str, has_children: bool, seq: int | None, seed: float
) -> Row:
    row.kind, row.mode, row.label, row.activity, row.has_children = "child", mode, label, activity, has_children
    row.descriptor_seq = seq
    row.identity_from_seed = seq < seed if seq is not None else None
    return row


def _seed_length(header: dict[str, Any]) -> float:
    # JavaScript compares ``seq < seedLength`` on doubles: 2.5, 1e400 (Infinity) compare as they are.
    value = header.get("seedLength", 0)
    return js_number(value) if is_number(value) else 0.0


def _read_header(node: Node) -> dict[str, Any] | None:
    text = node.row["read_header_json"]
    return parse_json(text) if text is not None else None


def resolve_projection(node: Node, model: Model, live: Mapping[str, str]) -> Row | None:
    """Upstream's row for one candidate under the projection semantics.

    Examples:
        >>> resolve_projection.__name__
        'resolve_projection'
    """
    row = _base(node, "projection")
    r = node.row
    has_children = node.id in model.subagent_parents
    seed = _seed_length(node.header)
    if node.id in live:
        if r["unit_failure_live"] is not None:
            return _diagnostic(row, "corrupt", "unit-fold-failed", r["unit_failure_live"])
        if r["identity_mode"] is None:
            return None
        return _child(row, r["identity_mode"], r["identity_label"], "running", has_children, r["identity_seq"], seed)
    if r["lookup_error"] is not None:
        return _diagnostic(row, "unavailable", "lookup-failed", r["lookup_error"])
    if r["verdict"] == "failed":
        return _diagnostic(row, "unavailable", r["read_cause"], r["read_message"])
    if not _lifecycle_matches(_read_header(node), node.header):
        return _diagnostic(row, "corrupt", "lifecycle-mismatch", "the log's header differs from the listed header")
    if r["unit_failure"] is not None:
        return _diagnostic(row, "corrupt", "unit-fold-failed", r["unit_failure"])
    if r["identity_mode"] is None:
        return _diagnostic(row, "corrupt", r["identity_cause"], r["identity_detail"])
    return _child(row, r["identity_mode"], r["identity_label"], "inactive", has_children, r["identity_seq"], seed)


def resolve_trace(node: Node, model: Model, live: Mapping[str, str]) -> Row | None:
    """The superseded (trace) semantics' row for one candidate.

    Examples:
        >>> resolve_trace.__name__
        'resolve_trace'
    """
    row = _base(node, "trace")
    r = node.row
    has_children = node.id in model.subagent_parents
    seed = _seed_length(node.header)
    is_live = node.id in live
    if not is_live:
        if r["lookup_error"] is not None:
            return _diagnostic(row, "unavailable", "lookup-failed", r["lookup_error"])
        if r["verdict"] == "failed":
            reason: Reason = "unavailable" if r["read_cause"] in BACKEND_CAUSES else "corrupt"
            return _diagnostic(row, reason, r["read_cause"], r["read_message"])
        if not _trace_compatible(_read_header(node), node.header):
            return _diagnostic(row, "corrupt", "lifecycle-mismatch", "the log's header differs from the listed header")
    own = [d for d in node.descriptors if d[0] >= seed]
    if not own:
        return None
    if len(own) > 1:
        seqs = ", ".join(str(d[0]) for d in own)
        return _diagnostic(
            row, "corrupt", "multiple-descriptors", f"{len(own)} descriptors in the own suffix (seqs {seqs})"
        )
    seq, status, why = own[0]
    row.descriptor_seq = seq
    if status == "malformed":
        return _diagnostic(row, "corrupt", "malformed-descriptor", f"descriptor (seq {seq}): {why}")
    if status == "unknown-version":
        return _diagnostic(row, "unsupported", "unknown-descriptor-version", f"descriptor (seq {seq}): {why}")
    # Seed descriptors all have smaller seqs, so the single own descriptor is the last one and
    # the identity fold's value is exactly this descriptor's identity.
    return _child(
        row, r["identity_mode"], r["identity_label"], "running" if is_live else "inactive", has_children, seq, seed
    )


_RESOLVERS = {"projection": resolve_projection, "trace": resolve_trace}


def _check_live(model: Model, live: Mapping[str, str] | None) -> Mapping[str, str]:
    if not live:
        return {}
    for session_id, status in live.items():
        if status not in ("running", "idle"):
            raise LiveOverlayError(
                f"live status of {session_id!r} must be 'running' or 'idle', not {status!r}",
                hint="pass live={session_id: 'running' | 'idle'}",
            )
    return live


def _trace_parent_check(model: Model, parent: Any) -> None:
    node = model.by_id.get(parent) if isinstance(parent, str) else None
    if node is None:
        raise CatalogError(
            "SUBAGENT_PARENT_NOT_FOUND",
            f'session "{js_string(parent)}" not found',
            hint="the trace semantics needs a listed parent; check the id or its header verdict",
        )
    seen = {parent}
    ancestor = node.header.get("parentSession", MISSING)
    while ancestor is not MISSING and ancestor is not None:
        key = ancestor if isinstance(ancestor, str) else _key(ancestor)
        if key in seen:
            raise CatalogError(
                "SUBAGENT_LINEAGE_CYCLE",
                f'session lineage contains a cycle at "{js_string(ancestor)}"',
                path=node.row["path"],
                hint="a session names itself or a descendant as its parent",
            )
        seen.add(key)
        above = model.by_id.get(ancestor) if isinstance(ancestor, str) else None
        if above is None:
            break
        ancestor = above.header.get("parentSession", MISSING)


def children_rows(
    corpus: CorpusSource, parent: Any, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> list[Row]:
    """Upstream ``listChildren`` rows (``parent`` may be any JSON value).

    Raises:
        CatalogError: when the call fails as a whole.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> children_rows(read_corpus(tempfile.mkdtemp()), "P")
        []
    """
    model = build_model(corpus)
    live_map = _check_live(model, live)
    if semantics == "trace":
        _trace_parent_check(model, parent)
    resolve = _RESOLVERS[semantics]
    rows = []
    for node in model.children.get(_key(parent), []):
        if not node.origin_subagent:
            continue
        row = resolve(node, model, live_map)
        if row is not None:
            rows.append(row)
    return rows


def descendant_rows(
    corpus: CorpusSource, root: Any, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> list[Row]:
    """Upstream ``listDescendants`` rows, in pre-order.

    Raises:
        CatalogError: when the call fails as a whole.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> descendant_rows(read_corpus(tempfile.mkdtemp()), "P")
        []
    """
    model = build_model(corpus)
    live_map = _check_live(model, live)
    if semantics == "trace":
        _trace_parent_check(model, root)
    resolve = _RESOLVERS[semantics]
    rows: list[Row] = []
    visited: set[Any] = {_key(root)}
    stack: list[tuple[Node, Any, int]] = [(n, root, 1) for n in reversed(model.children.get(_key(root), []))]
    while stack:
        node, parent, depth = stack.pop()
        if _key(node.id) in visited:
            continue
        visited.add(_key(node.id))
        if node.origin_subagent:
            row = resolve(node, model, live_map)
            if row is not None:
                row.parent, row.depth = parent, depth
                rows.append(row)
        for child in reversed(model.children.get(_key(node.id), [])):
            stack.append((child, node.id, depth + 1))
    return rows


def _frame(rows: list[Row]) -> pl.DataFrame:
    if not rows:
        return pl.DataFrame(schema=ROW_SCHEMA)
    return pl.DataFrame([clean_row(row.frame_row()) for row in rows], schema=ROW_SCHEMA)


def list_children(
    corpus: CorpusSource, parent_id: Any, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """One parent's subagent children, exactly as upstream lists them.

    Upstream's fields are ``kind``, ``id``, ``mode``, ``label``,
    ``activity``, ``hasChildren`` and ``reason``; the other columns are
    audit facts (see README).

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing
            fails as a whole; under ``trace``, also for an unknown parent
            or a lineage cycle.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> list_children(read_corpus(tempfile.mkdtemp()), "P").height
        0
    """
    return _frame(children_rows(corpus, parent_id, semantics=semantics, live=live))


def list_descendants(
    corpus: CorpusSource, root_id: Any, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """Every subagent below a root in upstream's pre-order, with ``parentId`` and ``depth``.

    Raises:
        CatalogError: as :func:`list_children`.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> list_descendants(read_corpus(tempfile.mkdtemp()), "P").height
        0
    """
    return _frame(descendant_rows(corpus, root_id, semantics=semantics, live=live))


def render_list_agents(rows: list[Row], *, scope: Scope, statuses: Mapping[str, str] | None = None) -> str:
    """Upstream's model-facing ``list_agents`` text for listing rows.

    Examples:
        >>> render_list_agents([], scope="children")
        '(no subagents)'
        >>> render_list_agents([Row("child", "c", mode="continuable", label="x")], scope="children")
        'c [ready] — x'
    """
    statuses = statuses or {}
    lines = []
    for row in rows:
        at = f" parent={js_string(row.parent)} depth={row.depth}" if scope == "descendants" else ""
        if row.kind == "diagnostic":
            lines.append(f"{row.id} [diagnostic: {row.reason}]{at}")
        elif row.mode == "continuable":
            status = statuses.get(row.id, "ready")
            lines.append(f"{row.id} [{status}]{at} \u2014 {row.label}")
    return "\n".join(lines) if lines else "(no subagents)"


def list_agents_text(
    corpus: CorpusSource,
    parent_id: Any,
    *,
    scope: Scope = "children",
    semantics: Semantics = "projection",
    live: Mapping[str, str] | None = None,
    statuses: Mapping[str, str] | None = None,
) -> str:
    """The ``list_agents`` tool's text for a parent, byte for byte.

    ``statuses`` maps ids to the live Agent registry's ``running``/``idle``
    (default: the ``live`` overlay); every other child is ``ready``.

    Raises:
        CatalogError: as :func:`list_children`.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> list_agents_text(read_corpus(tempfile.mkdtemp()), "P")
        '(no subagents)'
    """
    if scope == "children":
        rows = children_rows(corpus, parent_id, semantics=semantics, live=live)
    else:
        rows = descendant_rows(corpus, parent_id, semantics=semantics, live=live)
    return render_list_agents(rows, scope=scope, statuses=statuses if statuses is not None else live)


CATALOG_EXTRA: dict[str, Any] = {"parent": pl.String, "parent_json": pl.String}


def _json(value: Any) -> str:
    from subagent_catalog.conformance import json_text

    return json_text(value)


def _all_parent_keys(model: Model) -> list[Any]:
    parents: list[Any] = []
    seen: set[Any] = set()
    for node in model.nodes:
        if _key(node.id) not in seen:
            seen.add(_key(node.id))
            parents.append(node.id)
    for node in model.nodes:
        value = node.header.get("parentSession", MISSING)
        if value is not MISSING and _key(value) not in seen and not isinstance(value, (dict, list)):
            seen.add(_key(value))
            parents.append(value)
    return parents


def _resolved(model: Model, semantics: Semantics, live: Mapping[str, str]) -> dict[str, Row | None]:
    resolve = _RESOLVERS[semantics]
    return {node.id: resolve(node, model, live) for node in model.nodes if node.origin_subagent}


def catalog(
    corpus: CorpusSource, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """Every parent's children in one pass: the rows of ``list_children`` for each parent.

    Parents are every listed session plus every (primitive) ``parentSession``
    value a header names, in that order. Each candidate is resolved once.
    Under ``trace`` a parent whose call fails (not listed, lineage cycle)
    gives one ``kind="error"`` row naming the code in ``reason``.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> catalog(read_corpus(tempfile.mkdtemp())).columns[:2]
        ['parent', 'parent_json']
    """
    model = build_model(corpus)
    live_map = _check_live(model, live)
    resolved = _resolved(model, semantics, live_map)
    out: list[dict[str, Any]] = []
    for parent in _all_parent_keys(model):
        head = {"parent": js_string(parent), "parent_json": _json(parent)}
        if semantics == "trace":
            try:
                _trace_parent_check(model, parent)
            except CatalogError as error:
                out.append({**head, **_error_row(error, semantics)})
                continue
        for node in model.children.get(_key(parent), []):
            row = resolved.get(node.id) if node.origin_subagent else None
            if row is not None:
                out.append({**head, **row.frame_row()})
    schema = {**CATALOG_EXTRA, **ROW_SCHEMA}
    return pl.DataFrame([clean_row(r) for r in out], schema=schema) if out else pl.DataFrame(schema=schema)


def _error_row(error: CatalogError, semantics: str) -> dict[str, Any]:
    return {
        "kind": "error",
        "id": None,
        "reason": error.code,
        "cause": error.code,
        "cause_detail": error.message,
        "path": error.path,
        "semantics": semantics,
    }


def catalog_descendants(
    corpus: CorpusSource, *, semantics: Semantics = "projection", live: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """Every parent's descendant listing (pre-order), each candidate resolved once.

    Column ``root`` names the listing's root; the rows equal
    ``list_descendants(corpus, root)`` for each root.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> catalog_descendants(read_corpus(tempfile.mkdtemp())).height
        0
    """
    model = build_model(corpus)
    live_map = _check_live(model, live)
    resolved = _resolved(model, semantics, live_map)
    # A session sits below every one of its ancestors, so one row's values repeat once per
    # ancestor: n^2 copies of a 100 MiB label in a long chain. Each distinct row is built once
    # and the output gathers it by index; a Polars gather shares string buffers, not bytes.
    rows: list[dict[str, Any]] = []
    row_of: dict[str, int] = {}
    parents = _Interned()
    roots: list[dict[str, Any]] = []
    picks: list[int] = []
    root_of: list[int] = []
    parent_of: list[int] = []
    depths: list[int | None] = []
    for root in _all_parent_keys(model):
        roots.append({"root": js_string(root), "root_json": _json(root)})
        if semantics == "trace":
            try:
                _trace_parent_check(model, root)
            except CatalogError as error:
                rows.append(_error_row(error, semantics))
                picks.append(len(rows) - 1)
                root_of.append(len(roots) - 1)
                parent_of.append(parents.index(None))
                depths.append(None)
                continue
        for node, parent, depth in _walk(model, root):
            cached = resolved.get(node.id)
            if cached is None:
                continue
            if node.id not in row_of:
                row_of[node.id] = len(rows)
                rows.append(cached.frame_row())
            picks.append(row_of[node.id])
            root_of.append(len(roots) - 1)
            parent_of.append(parents.index(js_string(parent)))
            depths.append(depth)
    schema = {"root": pl.String, "root_json": pl.String, **ROW_SCHEMA}
    if not picks:
        return pl.DataFrame(schema=schema)
    heads = pl.DataFrame([clean_row(r) for r in roots], schema={"root": pl.String, "root_json": pl.String})
    body = pl.DataFrame([clean_row(r) for r in rows], schema=ROW_SCHEMA)[picks].with_columns(
        parents.series("parentId")[parent_of], pl.Series("depth", depths, dtype=pl.Int64)
    )
    return pl.concat([heads[root_of], body], how="horizontal").select(list(schema))


class _Interned:
    """Distinct texts, each stored once, addressed by index (``None`` included)."""

    def __init__(self) -> None:
        self.values: list[str | None] = []
        self.slots: dict[str | None, int] = {}

    def index(self, value: str | None) -> int:
        if value not in self.slots:
            self.slots[value] = len(self.values)
            self.values.append(value)
        return self.slots[value]

    def series(self, name: str) -> pl.Series:
        return pl.Series(name, [None if v is None else frame_text(v) for v in self.values], dtype=pl.String)


def _walk(model: Model, root: Any) -> list[tuple[Node, Any, int]]:
    """Upstream's pre-order walk below ``root``: (node, direct parent, depth), every node once."""
    order: list[tuple[Node, Any, int]] = []
    visited: set[Any] = {_key(root)}
    stack: list[tuple[Node, Any, int]] = [(n, root, 1) for n in reversed(model.children.get(_key(root), []))]
    while stack:
        node, parent, depth = stack.pop()
        if _key(node.id) in visited:
            continue
        visited.add(_key(node.id))
        order.append((node, parent, depth))
        for child in reversed(model.children.get(_key(node.id), [])):
            stack.append((child, node.id, depth + 1))
    return order


DEVIATION_SCHEMA: dict[str, Any] = {
    "parent": pl.String,
    "id": pl.String,
    "projection": pl.String,
    "trace": pl.String,
    "deviation": pl.String,
    "explanation": pl.String,
    "path": pl.String,
}


def _describe(row: Row | None) -> str:
    if row is None:
        return "omitted"
    if row.kind == "diagnostic":
        return f"diagnostic:{row.reason}"
    return f"child:{row.mode}" + (f":{row.label}" if row.label is not None else "")


def _deviation(node: Node, projection: Row | None, trace: Row | None) -> tuple[str, str]:
    own = [d for d in node.descriptors if d[0] >= _seed_length(node.header)]
    if trace is None and projection is not None and projection.kind == "child":
        return (
            "seed-descriptor-identity",
            "only a fork-seed (ancestor) descriptor: today's last-wins fold serves it as the child's identity; "
            "the trace path required an own-suffix descriptor and omitted the child",
        )
    if trace is None:
        return (
            "settled-debris-visible",
            "no own-suffix descriptor: the trace path omitted the child silently; today it is a corrupt diagnostic",
        )
    if trace.reason == "unsupported":
        return (
            "unsupported-no-longer-produced",
            "an own descriptor of another version: trace says unsupported, today corrupt",
        )
    if len(own) > 1:
        return (
            "multiple-own-descriptors",
            "several own-suffix descriptors: the trace path judged corrupt; today the last one wins",
        )
    if trace.reason == "corrupt" and projection is not None and projection.reason == "unavailable":
        return (
            "source-read-failure",
            "the cold read rejects the stored log after reading it: trace said corrupt, today unavailable",
        )
    return ("other", "the two semantics disagree for a reason not among upstream's documented deviations")


def deviations(corpus: CorpusSource, *, live: Mapping[str, str] | None = None) -> pl.DataFrame:
    """Every child on which the projection and trace semantics disagree, and why.

    ``deviation`` names which of upstream's documented deviations applies
    (``seed-descriptor-identity``, ``settled-debris-visible``,
    ``multiple-own-descriptors``, ``source-read-failure``,
    ``unsupported-no-longer-produced``) or ``other``.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> deviations(read_corpus(tempfile.mkdtemp())).height
        0
    """
    model = build_model(corpus)
    live_map = _check_live(model, live)
    rows: list[dict[str, Any]] = []
    for node in model.nodes:
        if not node.origin_subagent or "parentSession" not in node.header:
            continue
        projection = resolve_projection(node, model, live_map)
        trace = resolve_trace(node, model, live_map)
        if _describe(projection) == _describe(trace):
            continue
        name, why = _deviation(node, projection, trace)
        rows.append(
            {
                "parent": js_string(node.header["parentSession"]),
                "id": node.id,
                "projection": _describe(projection),
                "trace": _describe(trace),
                "deviation": name,
                "explanation": why,
                "path": node.row["path"],
            }
        )
    return (
        pl.DataFrame([clean_row(r) for r in rows], schema=DEVIATION_SCHEMA)
        if rows
        else pl.DataFrame(schema=DEVIATION_SCHEMA)
    )
