"""How one child resolves under its parent.

Upstream's projection path (``resolve_projection``, today) and the
superseded trace path (``resolve_trace``) each return a listing
``Row`` (a child, or a diagnostic with
its cause), or ``None`` when upstream skips the child.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from subagent_catalog.catalog.model import BACKEND_CAUSES, LIFECYCLE_KEYS, Model, Node, Reason, Row, Semantics, map_key
from subagent_catalog.catalog.schemas import SESSION_EXTRA
from subagent_catalog.errors import CatalogError, LiveOverlayError
from subagent_catalog.read.jsvalue import is_number, js_number, js_strict_equal, js_string, parse_json
from subagent_catalog.read.paths import MISSING


def _lifecycle_matches(read: dict[str, Any] | None, listed: dict[str, Any], *, trace: bool = False) -> bool:
    """Whether the read header's lifecycle keys equal the listed header's (``trace``: a missing depth is 0)."""
    if read is None:
        return False
    for key in LIFECYCLE_KEYS:
        a, b = read.get(key, MISSING), listed.get(key, MISSING)
        if trace and key == "delegationDepth":
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
        # A node loaded out of core carries no session columns: they are joined to the frame afterwards.
        session={name: node.row[name] for name in SESSION_EXTRA if name in node.row},
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


def seed_length(header: dict[str, Any]) -> float:
    """The header's ``seedLength`` as JavaScript compares it (a double; 0 when absent).

    Examples:
        >>> seed_length({"seedLength": 3}), seed_length({"seedLength": 2.5}), seed_length({})
        (3.0, 2.5, 0.0)
    """
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
    seed = seed_length(node.header)
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
    seed = seed_length(node.header)
    is_live = node.id in live
    if not is_live:
        if r["lookup_error"] is not None:
            return _diagnostic(row, "unavailable", "lookup-failed", r["lookup_error"])
        if r["verdict"] == "failed":
            reason: Reason = "unavailable" if r["read_cause"] in BACKEND_CAUSES else "corrupt"
            return _diagnostic(row, reason, r["read_cause"], r["read_message"])
        if not _lifecycle_matches(_read_header(node), node.header, trace=True):
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


RESOLVERS = {"projection": resolve_projection, "trace": resolve_trace}


def check_live(model: Model, live: Mapping[str, str] | None) -> Mapping[str, str]:
    """The live-status overlay, validated against the model (ids must be listed sessions).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog import read_corpus
        >>> from subagent_catalog.catalog.model import build_model
        >>> check_live(build_model(read_corpus(tempfile.mkdtemp(), cache=False)), None)
        {}
    """
    if not live:
        return {}
    for session_id, status in live.items():
        if status not in ("running", "idle"):
            raise LiveOverlayError(
                f"live status of {session_id!r} must be 'running' or 'idle', not {status!r}",
                hint="pass live={session_id: 'running' | 'idle'}",
            )
    return live


def trace_parent_check(model: Model, parent: Any) -> None:
    """Raise what the trace read path raises for a parent it cannot read.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog import read_corpus
        >>> from subagent_catalog.catalog.model import build_model
        >>> trace_parent_check(build_model(read_corpus(tempfile.mkdtemp(), cache=False)), "nope")
        Traceback (most recent call last):
        ...
        subagent_catalog.errors.CatalogError: ...
    """
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
        key = ancestor if isinstance(ancestor, str) else map_key(ancestor)
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


def error_row(error: CatalogError, semantics: str) -> dict[str, Any]:
    """The all-parents frames' row for a parent whose listing call fails (``kind="error"``).

    Examples:
        >>> error_row(CatalogError("SUBAGENT_PARENT_NOT_FOUND", "gone"), "trace")["reason"]
        'SUBAGENT_PARENT_NOT_FOUND'
    """
    return {
        "kind": "error",
        "id": None,
        "reason": error.code,
        "cause": error.code,
        "cause_detail": error.message,
        "path": error.path,
        "semantics": semantics,
    }
