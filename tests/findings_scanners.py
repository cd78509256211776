"""Scanners for tests/test_findings.py (module level: worker processes import them by name)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import polars as pl


def make_calls(rows: pl.DataFrame, session: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A finding per session whose tool calls ran ``make``, pointing at the first such call."""
    calls = rows.filter((pl.col("kind") == "tool-call") & pl.col("text").str.contains("make", literal=True))
    if calls.height:
        first = calls.row(0, named=True)
        yield {
            "message": f"{calls.height} make calls",
            "seq": first["seq"],
            "turn": first["turn"],
            "evidence": first["text"],
        }


def broken(rows: pl.DataFrame, session: dict[str, Any]) -> list[dict[str, Any]]:
    """Fails on one session, returns a malformed finding on another, nothing elsewhere."""
    if session["session_id"] == "loop-yes":
        raise RuntimeError("boom")
    if session["session_id"] == "loop-no":
        return [{"severity": "fatal", "message": "x"}]
    return []


def slow(rows: pl.DataFrame, session: dict[str, Any]) -> list[dict[str, Any]]:
    """Hangs on one session (a scanner past its time limit), answers at once elsewhere."""
    if session["session_id"] == "retry-yes":
        time.sleep(600)
    return [{"message": "seen", "severity": "info"}] if session["session_id"] == "retry-no" else []


def reserved_kind(rows: pl.DataFrame, session: dict[str, Any]) -> list[dict[str, Any]]:
    """Claims a built-in detector's kind."""
    return [{"kind": "tool-loop", "message": "not mine"}] if session["session_id"] == "loop-no" else []
