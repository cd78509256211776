"""The listing's keys over every listed session of a ``TableSource``, as columns.

``listing_keys`` reads each listed session's exact id and ``parentSession``
(as ``source.value_key`` keys), ``origin`` and ``createdAt`` from the
``sessions`` table, and derives with Polars joins every parent in upstream's
order, each session's parent rank, ``hasChildren`` and its rank among
siblings with the same ``createdAt`` (``localeCompare``).

Columns hold text as ``frame_text`` makes it (lone surrogates become U+FFFD)
and ``parent_session`` holds string values only. A row whose columns are not
exact (an id or ``parentSession`` with U+FFFD, a ``parentSession`` that is
not a string, a ``createdAt`` that is not a safe integer) is keyed from its
parsed header instead: a rare slow path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from subagent_catalog.catalog.collation import collation_key
from subagent_catalog.catalog.source import (
    KEY_ESCAPED,
    KEY_TEXT,
    TableSource,
    key_value,
    require_listing,
    value_key,
)
from subagent_catalog.read.jsvalue import js_number, json_text, parse_json
from subagent_catalog.read.paths import MISSING

KEY_SCHEMA: dict[str, Any] = {
    "order": pl.Int64,
    "n_kind": pl.UInt8,
    "n_text": pl.String,
    "p_kind": pl.UInt8,
    "p_text": pl.String,
    "named": pl.Boolean,
    "subagent": pl.Boolean,
    "created": pl.Float64,
}
"""Per listed session: list order, exact node key, exact parent key, names a parent, is a subagent, ``createdAt``."""

_ODD = (
    pl.col("session_id").is_null()
    | pl.col("session_id").str.contains("\ufffd", literal=True)
    | pl.col("parent_session").str.contains("\ufffd", literal=True).fill_null(False)
    | (pl.col("parent_session").is_null() & pl.col("header_json").str.contains('"parentSession"', literal=True))
    | pl.col("created_at_ms").is_null()
)
"""Listed rows whose columns are not exact keys (keyed from the parsed header instead)."""


@dataclass
class ListingKeys:
    """The listing's structure over every listed session, as columns.

    Attributes:
        frame: one row per listed session in list order: ``KEY_SCHEMA`` plus
            ``prank`` (its parent's rank, null when it names none or an
            object), ``has_children`` and ``tie`` (its ``localeCompare`` rank
            among siblings with the same ``createdAt``, else 0).
        parents: every parent in order (``rank``): ``kind``/``text`` (its
            key; ``id`` numbers the text, as ``n_id``/``p_id`` do in
            ``frame``), ``is_node`` and ``first`` (the list order of the
            session whose id, or first ``parentSession``, the value is).
        values: exact ``(id, parentSession)`` of the rows keyed from their header.
    """

    frame: pl.DataFrame
    parents: pl.DataFrame
    values: dict[int, tuple[Any, Any]]

    def parent_value(self, kind: int, text: str, is_node: bool, first: int) -> Any:
        """The exact value of one parent (a listed id, or a ``parentSession`` value)."""
        if kind == KEY_TEXT:
            return text
        exact = self.values.get(first)
        if exact is None:
            return key_value(kind, text)
        return exact[0] if is_node else exact[1]


def listing_keys(source: TableSource) -> ListingKeys:
    """Every listed session's keys, parents in order, ``hasChildren`` and sibling ties, as columns.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> listing_keys.__name__
        'listing_keys'
    """
    require_listing(source)
    sessions = source.scan("sessions").filter(pl.col("listed"))
    # Two scans: the odd rows need header_json, the plain keys (all but those few) do not.
    values: dict[int, tuple[Any, Any]] = {}  # the odd rows' exact (id, parentSession), from their header
    rows: list[tuple[Any, ...]] = []
    for order, text in sessions.filter(_ODD).select("list_order", "header_json").collect(engine="streaming").rows():
        header = parse_json(text)
        ident, parent = header["id"], header.get("parentSession", MISSING)
        values[order] = (ident, parent)
        node = value_key(ident) or (KEY_ESCAPED, json_text(ident))
        key = None if parent is MISSING else value_key(parent)
        subagent = header.get("origin") == "subagent"
        created = js_number(header["createdAt"]) + 0.0  # + 0.0: -0 sorts as 0
        rows.append((order, *node, *(key or (None, None)), parent is not MISSING, subagent, created))
    odd = pl.DataFrame(rows, schema=KEY_SCHEMA, orient="row")
    plain = sessions.select(
        pl.col("list_order").alias("order"),
        pl.lit(KEY_TEXT, pl.UInt8).alias("n_kind"),
        pl.col("session_id").alias("n_text"),
        pl.when(pl.col("parent_session").is_not_null()).then(pl.lit(KEY_TEXT, pl.UInt8)).alias("p_kind"),
        pl.col("parent_session").alias("p_text"),
        pl.col("parent_session").is_not_null().alias("named"),
        (pl.col("origin") == "subagent").fill_null(False).alias("subagent"),
        pl.col("created_at_ms").cast(pl.Float64).alias("created"),
    ).collect(engine="streaming")
    plain = plain.cast(pl.Schema(KEY_SCHEMA))
    if odd.height:
        plain = plain.filter(~pl.col("order").is_in(odd["order"].implode()))
    frame = pl.concat([plain, odd]).sort("order")
    del plain, rows
    # Every key text as an integer (a dense rank: exact, and far cheaper than hashing strings per join).
    texts = pl.concat([frame["n_text"], frame["p_text"]]).rank("dense").cast(pl.Int64)
    frame = frame.with_columns(texts[: frame.height].alias("n_id"), texts[frame.height :].alias("p_id"))
    del texts
    offset = (frame["order"].max() or 0) + 1  # type: ignore[operator]
    nodes = frame.select(
        pl.col("order").alias("first"),
        pl.col("n_kind").alias("kind"),
        pl.col("n_id").alias("id"),
        pl.col("n_text").alias("text"),
    )
    if not nodes.select(pl.struct("kind", "id").is_unique().all()).item():  # a successful listing has unique ids
        nodes = nodes.group_by("kind", "id").agg(pl.all().sort_by("first").first())
    nodes = nodes.with_columns(pl.col("first").alias("rank"), pl.lit(True).alias("is_node"))
    extra = (
        frame.filter(pl.col("p_kind").is_not_null())
        .group_by("p_kind", "p_id")
        .agg(pl.col("order").min().alias("first"))
        .rename({"p_kind": "kind", "p_id": "id"})
        .join(nodes, on=["kind", "id"], how="anti")
        .join(frame.select(pl.col("order").alias("first"), pl.col("p_text").alias("text")), on="first", how="left")
        .with_columns((pl.col("first") + offset).alias("rank"), pl.lit(False).alias("is_node"))
    )
    parents = pl.concat([nodes, extra.select(nodes.columns)]).sort("rank")
    ranks = parents.select(pl.col("kind").alias("p_kind"), pl.col("id").alias("p_id"), pl.col("rank").alias("prank"))
    named = (
        frame.filter(pl.col("subagent") & pl.col("p_kind").is_in([KEY_TEXT, KEY_ESCAPED]))
        .select(pl.col("p_kind").alias("n_kind"), pl.col("p_id").alias("n_id"))
        .unique()
        .with_columns(pl.lit(True).alias("has_children"))
    )
    frame = (
        frame.join(ranks, on=["p_kind", "p_id"], how="left", maintain_order="left")
        .join(named, on=["n_kind", "n_id"], how="left", maintain_order="left")
        .with_columns(pl.col("has_children").fill_null(False))
    )
    # ``tie``: siblings with equal ``createdAt`` are ordered by ``localeCompare`` of their ids.
    tied = frame.filter(pl.col("prank").is_not_null() & (pl.len().over("prank", "created") > 1))
    ids = [
        text if kind == KEY_TEXT else values[order][0]
        for order, kind, text in tied.select("order", "n_kind", "n_text").iter_rows()
    ]
    keys = [collation_key(ident) for ident in ids]
    rank = {key: index for index, key in enumerate(sorted(set(keys)))}
    ties = pl.DataFrame(
        {"order": tied["order"], "tie": [rank[key] for key in keys]}, schema={"order": pl.Int64, "tie": pl.Int64}
    )
    frame = frame.join(ties, on="order", how="left", maintain_order="left").with_columns(pl.col("tie").fill_null(0))
    return ListingKeys(frame, parents, values)
