"""Small builders for real-format test corpora (written with our own writer)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from subagent_catalog.read.paths import Compression
from subagent_catalog.read.zstdframes import compress_frame
from subagent_catalog.synth.writer import (
    EventLog,
    descriptor,
    dumps,
    encode_log,
    header,
    log_path,
    simple_child_events,
    write_file,
    write_session,
)

ENCODINGS: list[Compression] = ["none", "zstd"]


def healthy(session_id: str, label: str = "x", mode: str = "continuable") -> list[dict[str, Any]]:
    return simple_child_events(session_id, descriptor(mode, label=label))


def base_tree(root: Path, compression: Compression) -> None:
    """P with children c-ok and c-x; g-below-x under c-x (the S00 baseline shape)."""
    parent = EventLog("P")
    parent.turn_start()
    parent.user("work")
    parent.turn_end()
    write_session(root, header("P", created_at=1), parent.events, compression)
    write_session(root, header("c-ok", created_at=2, parent="P", subagent=True), healthy("c-ok", "ok"), compression)
    write_session(root, header("c-x", created_at=3, parent="P", subagent=True), healthy("c-x", "x"), compression)
    write_session(
        root, header("g-below-x", created_at=4, parent="c-x", subagent=True), healthy("g", "below x"), compression
    )


def raw_log(
    head: dict[str, Any], lines: list[bytes], compression: Compression, *, frames: list[list[int]] | None = None
) -> bytes:
    """Bytes of a log from raw event lines; zstd puts each group of line indices in one frame."""
    head_line = dumps(head) + b"\n"
    if compression == "none":
        return head_line + b"".join(lines)
    groups = frames if frames is not None else [list(range(len(lines)))] if lines else []
    return compress_frame(head_line) + b"".join(compress_frame(b"".join(lines[i] for i in g)) for g in groups)


def line(event: dict[str, Any]) -> bytes:
    return dumps(event) + b"\n"


def write_raw(root: Path, head: dict[str, Any], data: bytes, compression: Compression) -> str:
    return write_file(log_path(root, head, compression), data)


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            digest.update(path.encode())
            with open(path, "rb") as handle:
                digest.update(handle.read())
    return digest.hexdigest()


__all__ = [
    "ENCODINGS",
    "EventLog",
    "base_tree",
    "descriptor",
    "dumps",
    "encode_log",
    "header",
    "healthy",
    "line",
    "raw_log",
    "tree_hash",
    "write_raw",
    "write_session",
]


FULL_SWEEP = bool(os.environ.get("SUBAGENT_CATALOG_FULL_SWEEP"))
"""``make test-sweep`` sets it: every conformance case in every test that walks them."""
TWIN_LOGS = 50
"""A conformance corpus with more logs than this is walked in one encoding by ``one_encoding``."""


def scenario_share(cases: list[Path], every: int) -> list[Path]:
    """The conformance cases a whole-corpus differential walks in ``make test``: a share of the scenarios.

    Every non-scenario case (N.., Z.., edge, fault, real-writer, tiny) and every ``every``-th scenario
    case (``S..``, in name order, so that the two encodings alternate), a large corpus in one encoding
    (``one_encoding``). The scenario cases each add one kind of damage to the same small corpus; the
    listing itself is checked on every one of them by ``make conformance`` and ``tests/test_conformance.py``.
    ``make test-sweep`` (``SUBAGENT_CATALOG_FULL_SWEEP=1``) walks them all.
    """
    if FULL_SWEEP:
        return cases
    scenarios = [case for case in cases if case.name.startswith("S")]
    kept = set(scenarios[::every])
    return one_encoding([case for case in cases if not case.name.startswith("S") or case in kept])


def one_encoding(cases: list[Path]) -> list[Path]:
    """The conformance cases a whole-corpus test walks in ``make test``: a large corpus in one encoding.

    ``edge-s1-zstd`` holds the bytes of ``edge-s1-none`` compressed (474 logs, 39 MB): tests about
    content (streaming, search, traces, SQL, every command over an archive) walk the ``-none`` twin,
    and zstd decoding is walked on the small zstd cases. ``make conformance`` lists both twins (the
    conformance bar), and ``make test-sweep`` (``SUBAGENT_CATALOG_FULL_SWEEP=1``) walks every case.
    """
    if FULL_SWEEP:
        return cases
    names = {case.name for case in cases}

    def large_twin(case: Path) -> bool:
        twin = case.name.removesuffix("-zstd") + "-none"
        if not case.name.endswith("-zstd") or twin not in names:
            return False
        corpus = case / "corpus" if (case / "corpus").is_dir() else case
        return sum(1 for _ in corpus.rglob("session.jsonl*")) > TWIN_LOGS

    return [case for case in cases if not large_twin(case)]
