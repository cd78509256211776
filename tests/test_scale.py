"""Distributed export on a local Dask cluster: the archive's catalog equals the single-machine one, row for row."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from subagent_catalog.catalog.listing import list_children, list_descendants
from subagent_catalog.corpus import read_corpus
from subagent_catalog.read.paths import Compression
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from tests.helpers import tree_hash
from tests.test_archive import ENCODINGS, assert_same_catalog, assert_same_corpus, make_corpus

pytestmark = pytest.mark.scale

distributed = pytest.importorskip("distributed", reason="the [scale] extra (dask[distributed]) is not installed")

CONFORMANCE = Path(
    os.environ.get("SUBAGENT_CATALOG_CONFORMANCE", Path(__file__).resolve().parents[2] / "shared" / "conformance")
)
SESSIONS = 400


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A scheduler with two worker processes of one thread each."""
    with distributed.LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    ) as local:
        yield local


@pytest.fixture(scope="module", params=ENCODINGS)
def big_corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Compression]:
    compression: Compression = request.param
    root = tmp_path_factory.mktemp(f"scale-{compression}")
    counts = make_corpus(root, compression, sessions=SESSIONS, seed=17)
    assert counts["damaged"] > 20 and counts["forks"] > 20 and counts["subagents"] > 100
    return root, compression


def test_cluster_export_equals_single_machine(
    big_corpus: tuple[Path, Compression], cluster: Any, tmp_path: Path
) -> None:
    root, compression = big_corpus
    manifest = export_archive(
        root, tmp_path / "a", events=True, engine="dask", scheduler=cluster.scheduler_address, batch_size=32
    )
    assert manifest["compression"] == compression
    engine = manifest["engine"]
    assert engine["name"] == "dask" and engine["scheduler"] == cluster.scheduler_address
    assert engine["workers"] == 2 and engine["read_tasks"] == SESSIONS // 32 + 1 and engine["walk_tasks"] >= 1
    assert engine["workers_used"] == 2, "both worker processes should have run tasks"
    assert manifest["versions"]["distributed"] == distributed.__version__

    raw = read_corpus(root, events=True, cache=False)
    assert raw.listing_error is None
    archive = open_archive(tmp_path / "a")
    corpus = archive.to_corpus()
    assert_same_corpus(corpus, raw, events=True)
    assert_same_catalog(corpus, raw)
    parents = raw.sessions.filter(pl.col("listed"))["session_id"].to_list()
    assert len(parents) > 300
    for parent in parents:
        assert_frame_equal(list_children(corpus, parent), list_children(raw, parent))
        assert_frame_equal(list_descendants(corpus, parent), list_descendants(raw, parent))
    assert (corpus.sessions["verdict"] == "failed").sum() > 0, "the corpus should hold unreadable children"


def test_cluster_export_equals_local_export(big_corpus: tuple[Path, Compression], cluster: Any, tmp_path: Path) -> None:
    root, _ = big_corpus
    export_archive(root, tmp_path / "dask", engine="dask", scheduler=cluster.scheduler_address)
    export_archive(root, tmp_path / "local", jobs=1)
    dask_archive, local_archive = open_archive(tmp_path / "dask"), open_archive(tmp_path / "local")
    for table in ("sessions", "descriptors", "problems", "facts"):
        key = local_archive.order_by(table) if table != "facts" else ["list_order"]
        assert_frame_equal(
            dask_archive.scan(table).sort(key).collect(),
            local_archive.scan(table).sort(key).collect(),
        )


def test_without_scheduler_a_local_cluster_runs_for_the_call(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    make_corpus(root, "zstd", sessions=150, seed=23)
    manifest = export_archive(root, tmp_path / "a", engine="dask")
    assert manifest["engine"]["scheduler"] == "local-cluster"
    assert manifest["engine"]["workers"] == 2
    raw = read_corpus(root, cache=False)
    assert_same_corpus(open_archive(tmp_path / "a").to_corpus(), raw)
    assert_same_catalog(open_archive(tmp_path / "a"), raw)


def test_incremental_through_the_cluster(cluster: Any, tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    make_corpus(root, "none", sessions=120, seed=29)
    out = tmp_path / "a"
    address = cluster.scheduler_address
    first = export_archive(root, out, events=True, engine="dask", scheduler=address)
    assert first["update"]["files_read"] == 120
    raw = read_corpus(root, cache=False)
    victim = raw.sessions.filter(pl.col("verdict") == "ok")["path"][7]
    with open(victim, "ab") as handle:  # a torn tail appended: size and mtime change
        handle.write(b'{"type":"turn/start"')
    second = export_archive(root, out, events=True, engine="dask", scheduler=address)
    assert second["update"]["files_read"] == 1 and second["update"]["files_reused"] == 119
    fresh = read_corpus(root, events=True, cache=False)
    assert fresh.sessions.filter(pl.col("path") == victim)["verdict"].to_list() == ["torn-tail"]
    assert_same_corpus(open_archive(out).to_corpus(), fresh, events=True)


@pytest.mark.parametrize("compression", ENCODINGS)
def test_edge_conformance_corpora_exported_locally(compression: Compression, tmp_path: Path) -> None:
    root = CONFORMANCE / "cases" / f"edge-s1-{compression}" / "corpus"
    if not root.is_dir():
        pytest.skip(f"no conformance corpus at {root}")
    before = tree_hash(root)
    manifest = export_archive(root, tmp_path / "a", events=True, jobs=2)
    assert tree_hash(root) == before, "the export must not touch the corpus"
    raw = read_corpus(root, events=True, cache=False)
    assert manifest["compression"] == compression
    assert manifest["row_counts"]["sessions"] == raw.sessions.height > 400
    corpus = open_archive(tmp_path / "a").to_corpus()
    assert_same_corpus(corpus, raw, events=True)
    assert_same_catalog(corpus, raw)
