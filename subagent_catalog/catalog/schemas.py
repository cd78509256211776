"""Column schemas of the catalog's frames: listing rows, the all-parents extras, deviations."""

from __future__ import annotations

from typing import Any

import polars as pl

from subagent_catalog.frames.schemas import OUTCOME_SCHEMA, RUN_SCHEMA

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


# The child's session columns each row carries after upstream's and the audit columns.
SESSION_EXTRA: dict[str, Any] = {
    "project_dir": pl.String,
    "created_at": pl.Datetime("ms", "UTC"),
    **OUTCOME_SCHEMA,
    **RUN_SCHEMA,
}
ROW_SCHEMA.update(SESSION_EXTRA)


CATALOG_EXTRA: dict[str, Any] = {"parent": pl.String, "parent_json": pl.String}


DEVIATION_SCHEMA: dict[str, Any] = {
    "parent": pl.String,
    "id": pl.String,
    "projection": pl.String,
    "trace": pl.String,
    "deviation": pl.String,
    "explanation": pl.String,
    "path": pl.String,
}
