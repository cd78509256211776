"""The corpus frames' chunks built by Polars hold what Arrow built (issue 42 item 11: no pandas in a read).

``frames.columns.Columns(polars=True)`` (the chunks of a read's frames) has
Polars build each column from the Python values: pyarrow's conversion of
Python values imports pandas, about 40 MB, whenever pandas is installed.
The reference is the Arrow build the same rows get with ``polars=False``
(pyarrow arrays, as every chunk was built before): the frames must be equal,
value for value, for the rows of real corpora and for values Polars refuses
and leaves to Arrow.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from subagent_catalog.frames.columns import Columns
from subagent_catalog.frames.lookup import NameIndex, holders_in
from subagent_catalog.frames.rows import FrameChunks
from subagent_catalog.progress import quiet
from subagent_catalog.read.discover import discover
from subagent_catalog.read.pool import read_all
from tests.fuzz.mutations import CONFORMANCE, FAST, make_case

REPO = Path(__file__).resolve().parents[1]


def _built(root: Path, *, polars: bool) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    found = discover(str(root), "auto")
    chunks = FrameChunks(
        found.root,
        found.compression,
        chunk_files=5,  # several chunks, each built alone
        index=NameIndex.build(found.project_names),
        holders=holders_in(found.project_names),
        polars=polars,
    )
    chunks.add_entries((0, index, entry, None) for index, entry in enumerate(found.entries))
    facts = read_all([f.source for f in found.files], found.compression, want_events=False, jobs=1, progress=quiet)
    for order, (file, item) in enumerate(zip(found.files, facts, strict=True)):
        chunks.add(order, file, item)
    return chunks.frames()


def _same_frames(root: Path) -> None:
    for by_polars, by_arrow in zip(_built(root, polars=True), _built(root, polars=False), strict=True):
        assert by_polars.schema == by_arrow.schema, root
        assert by_polars.equals(by_arrow, null_equal=True), root


@pytest.mark.skipif(not CONFORMANCE.is_dir(), reason="no shared conformance corpora")
def test_conformance_corpora_build_the_same_frames() -> None:
    roots = sorted(CONFORMANCE.glob("*/corpus"))
    assert len(roots) > 50
    for root in roots:
        _same_frames(root)


def test_the_sample_and_fuzzed_corpora_build_the_same_frames() -> None:
    _same_frames(REPO / "data" / "sample")
    for seed in (3, 11, 29):
        case = make_case(seed, FAST)
        try:
            _same_frames(case.root)
        finally:
            case.cleanup()


SCHEMA: dict[str, Any] = {
    "i": pl.Int64,
    "u": pl.UInt64,
    "f": pl.Float64,
    "b": pl.Boolean,
    "s": pl.String,
    "y": pl.Binary,
    "t": pl.Datetime("ms", "UTC"),
    "n": pl.Datetime("ns", "UTC"),
    "l": pl.List(pl.String),
    "r": pl.List(pl.Struct({"a": pl.Int64, "b": pl.String})),
}

ROWS: list[list[Any]] = [
    [1, 2**64 - 1, 1.5, True, "plain", b"\xff\x00", 1_700_000_000_000, 1_700_000_000_000_000_000, ["a"], [(1, "x")]],
    [None] * len(SCHEMA),
    [-(2**63), 0, 3, False, "lone \udc00 surrogate", b"", 0, 0, ["\ud800", None], [(None, "\udfff"), (2, None)]],
    [2.0, None, float("nan"), None, "", None, None, None, [], []],  # 2.0 in Int64: Polars refuses, Arrow takes it
    [None, None, float("inf"), None, "é ✓ 🙂", b"x", -1, -1, None, [(None, None)]],
]


@pytest.mark.parametrize("rows", [ROWS, ROWS[1:2], ROWS[2:3], ROWS[3:]], ids=["all", "nulls", "surrogates", "refused"])
def test_every_column_type_and_odd_value_builds_the_same_chunk(rows: list[list[Any]]) -> None:
    by_polars, by_arrow = Columns(SCHEMA, polars=True), Columns(SCHEMA, polars=False)
    for row in rows:
        by_polars.add_values(list(row))
        by_arrow.add_values(list(row))
    by_polars.flush()
    by_arrow.flush()
    assert by_polars.frame().schema == by_arrow.frame().schema == pl.Schema(SCHEMA)
    assert by_polars.frame().equals(by_arrow.frame(), null_equal=True)


def test_reading_a_corpus_never_imports_pandas(tmp_path: Path) -> None:
    """Not with the facts cache either (its file was built with pyarrow's conversion)."""
    code = textwrap.dedent(
        """
        import sys
        from subagent_catalog.corpus import read_corpus
        read_corpus(sys.argv[1], cache=False, jobs=1)
        read_corpus(sys.argv[1], cache=sys.argv[2], jobs=1)
        print("pandas" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "data" / "sample"), str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert done.stdout.split() == ["False"]
    assert list((tmp_path / "cache").glob("facts-*.arrow"))
