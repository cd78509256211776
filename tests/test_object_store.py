"""Archives on an object store: a real S3-compatible server (moto, server mode, 127.0.0.1).

Exports write every part and the manifest to ``s3://`` (the local engine's
spawned workers, or Dask workers, write their own parts), ``open_archive``
reads them back with the endpoint in ``storage_options`` only, and the
catalog equals the raw corpus's. A killed export leaves the previous
generation as it was.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from subagent_catalog.corpus import read_corpus
from subagent_catalog.read.paths import Compression
from subagent_catalog.store import export as export_module
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.store.layout import ArchiveError
from tests.s3 import S3Server
from tests.test_archive import assert_same_catalog, assert_same_corpus, make_corpus


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with S3Server() as server:
        yield server


@pytest.fixture(autouse=True)
def _no_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)  # the endpoint and credentials come from storage_options only


@pytest.fixture(scope="module", params=["none", "zstd"])
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Compression]:
    root = tmp_path_factory.mktemp(f"s3-corpus-{request.param}")
    make_corpus(root, request.param, sessions=120, seed=31)
    return root, request.param


def test_export_to_s3_then_open_from_s3_equals_the_raw_corpus(corpus: tuple[Path, Compression], s3: S3Server) -> None:
    root, compression = corpus
    url = s3.bucket() + "/archives/sample"
    manifest = export_archive(root, url, events=True, jobs=2, batch_size=16, storage_options=s3.options)
    assert manifest["compression"] == compression and manifest["engine"]["read_tasks"] == 120 // 16 + 1
    archive = open_archive(url, storage_options=s3.options)
    raw = read_corpus(root, events=True, cache=False)
    corpus_back = archive.to_corpus(events=True)
    assert_same_corpus(corpus_back, raw, events=True)
    assert_same_catalog(archive, raw)
    # the store holds the manifest and exactly the files it names: no scratch, no staging marker
    named = {name for entry in manifest["tables"].values() for name in entry["files"]}
    named |= set(manifest["fingerprints"]["files"])
    assert s3.keys(url) == sorted({"manifest.json", *named})


def test_other_readers_use_the_manifest_file_list(corpus: tuple[Path, Compression], s3: S3Server) -> None:
    root, _ = corpus
    url = s3.bucket() + "/a"
    export_archive(root, url, jobs=1, storage_options=s3.options)
    manifest = open_archive(url, storage_options=s3.options).manifest
    files = [f"{url}/{name}" for name in manifest["tables"]["sessions"]["files"]]
    sessions = pl.scan_parquet(files, storage_options=s3.options, hive_partitioning=False).sort("list_order")
    stored = read_corpus(root, cache=False).sessions.drop("cost_usd")  # the stored columns (costs are priced at read)
    assert_frame_equal(sessions.collect().cast(stored.schema), stored)  # type: ignore[arg-type]


def test_incremental_export_to_s3_rereads_only_the_changed_file(tmp_path: Path, s3: S3Server) -> None:
    root = tmp_path / "corpus"
    make_corpus(root, "none", sessions=40, seed=32)
    url = s3.bucket() + "/inc"
    first = export_archive(root, url, events=True, jobs=1, storage_options=s3.options)
    log = next(root.glob("*/*/session.jsonl"))
    log.write_bytes(log.read_bytes() + b"")
    os.utime(log, ns=(1, 2))
    second = export_archive(root, url, events=True, jobs=1, storage_options=s3.options)
    assert second["update"]["files_read"] == 1 and second["update"]["files_reused"] == first["row_counts"]["files"] - 1
    assert second["update"]["events_reused"] > 0
    assert all(not key.startswith(first["data_dir"]) for key in s3.keys(url))  # the old generation is gone
    assert_same_corpus(
        open_archive(url, storage_options=s3.options).to_corpus(events=True),
        read_corpus(root, events=True, cache=False),
        events=True,
    )


@pytest.mark.scale
def test_dask_workers_write_their_parts_to_s3(tmp_path: Path, s3: S3Server) -> None:
    from distributed import Client, LocalCluster

    root = tmp_path / "corpus"
    make_corpus(root, "zstd", sessions=80, seed=33)
    url = s3.bucket() + "/dask"
    with (
        LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        manifest = export_archive(
            root, url, engine="dask", scheduler=cluster.scheduler_address, batch_size=10, storage_options=s3.options
        )
        workers = set(client.scheduler_info()["workers"])
    assert manifest["engine"]["workers_used"] == len(workers) == 2
    raw = read_corpus(root, cache=False)
    archive = open_archive(url, storage_options=s3.options)
    assert_same_corpus(archive.to_corpus(), raw)
    assert_same_catalog(archive, raw)


def _killed_export(root: Path, url: str, options: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    """Run an export in a child that is SIGKILLed right after its first read task wrote its parts."""
    script = (
        "import os, signal, sys\n"
        "from subagent_catalog.store import export\n"
        "real = export.read_task\n"
        "def dying(task):\n"
        "    real(task)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "export.read_task = dying\n"
        f"export.export_archive({str(root)!r}, {url!r}, jobs=1, incremental=False, storage_options={options!r})\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=300, env=env)


@pytest.mark.parametrize("where", ["s3", "local"])
def test_a_killed_client_leaves_the_previous_generation_and_nothing_visible(
    where: str, tmp_path: Path, s3: S3Server
) -> None:
    root = tmp_path / "corpus"
    make_corpus(root, "none", sessions=30, seed=34)
    url = s3.bucket() + "/killed" if where == "s3" else str(tmp_path / "killed")
    options = s3.options if where == "s3" else None
    before = export_archive(root, url, jobs=1, storage_options=options)
    killed = _killed_export(root, url, options or {})
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    archive = open_archive(url, storage_options=options)
    assert archive.manifest == before  # the manifest names the previous generation, unchanged
    assert_same_corpus(archive.to_corpus(), read_corpus(root, cache=False))
    keys = (
        s3.keys(url) if where == "s3" else sorted(str(p.relative_to(url)) for p in Path(url).rglob("*") if p.is_file())
    )
    assert "gen-000002/.staging" in keys  # the killed generation is marked as staging, never looks complete
    assert not any(k.startswith("gen-000002/") and k.endswith("manifest.json") for k in keys)
    again = export_archive(root, url, jobs=1, storage_options=options)
    assert again["generation"] == 3 and again["update"]["stale_staging"] == ["gen-000002"]


def test_a_commit_after_another_export_committed_is_refused(
    tmp_path: Path, s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "corpus"
    make_corpus(root, "none", sessions=10, seed=35)
    url = s3.bucket() + "/race"
    export_archive(root, url, jobs=1, storage_options=s3.options)
    real = export_module._export
    nested: list[dict[str, Any]] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        if not nested:  # another export commits while this one runs
            nested.append({})
            nested[0] = export_archive(root, url, jobs=1, storage_options=s3.options)
        return real(*args, **kwargs)

    monkeypatch.setattr(export_module, "_export", racing)
    with pytest.raises(ArchiveError, match=r"another export committed generation 3 .* while this one ran"):
        export_archive(root, url, jobs=1, incremental=False, storage_options=s3.options)
    assert open_archive(url, storage_options=s3.options).manifest == nested[0]
    assert not any(key.startswith("gen-000002/") for key in s3.keys(url))  # the loser removed what it wrote


def test_open_archive_honours_storage_options_for_the_manifest(s3: S3Server, tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    make_corpus(root, "none", sessions=5, seed=36)
    url = s3.bucket() + "/m"
    export_archive(root, url, jobs=1, storage_options=s3.options)
    wrong = {**s3.options, "aws_endpoint_url": "http://127.0.0.1:9"}
    with pytest.raises(ArchiveError, match=r"cannot read 's3://.*/m/manifest.json'"):
        open_archive(url, storage_options=wrong)
    assert json.loads(json.dumps(open_archive(url, storage_options=s3.options).manifest))["generation"] == 1


def test_the_cli_exports_to_s3_with_storage_options(tmp_path: Path, s3: S3Server) -> None:
    from click.testing import CliRunner

    from subagent_catalog.cli import main

    root = tmp_path / "corpus"
    make_corpus(root, "none", sessions=8, seed=37)
    url = s3.bucket() + "/cli"
    flags = [f"--storage-option={key}={value}" for key, value in s3.options.items()]
    result = CliRunner().invoke(main, ["export", str(root), url, "-q", *flags])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"exported {root} to {url}: sessions 8")
    bad = CliRunner().invoke(main, ["export", str(root), url, "--storage-option", "aws_region"])
    assert bad.exit_code == 2 and "'aws_region' is not KEY=VALUE" in bad.output
    assert open_archive(url, storage_options=s3.options).manifest["row_counts"]["sessions"] == 8


def test_a_damaged_part_on_s3_is_refused_by_its_checksum(tmp_path: Path, s3: S3Server) -> None:
    """The part is hashed as it is downloaded, its footer parsed from those bytes (no second read)."""
    from subagent_catalog.store.location import arrow_filesystem

    root = tmp_path / "corpus"
    make_corpus(root, "none", sessions=6, seed=38)
    url = s3.bucket() + "/damaged"
    manifest = export_archive(root, url, jobs=1, storage_options=s3.options)
    assert open_archive(url, storage_options=s3.options).to_corpus().sessions.height == 6
    name = manifest["tables"]["sessions"]["files"][0]
    filesystem, path = arrow_filesystem(f"{url}/{name}", s3.options)
    with filesystem.open_input_stream(path) as stream:
        data = bytearray(stream.read())
    data[len(data) // 2] ^= 4  # one bit, the size unchanged
    with filesystem.open_output_stream(path) as stream:
        stream.write(bytes(data))
    with pytest.raises(ArchiveError, match="does not match its checksum") as raised:
        open_archive(url, storage_options=s3.options).to_corpus()
    assert raised.value.args[0].startswith(f"archive data file '{url}/{name}'")


def test_the_endpoint_and_credentials_can_come_from_the_environment(
    corpus: tuple[Path, Compression], s3: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # object_store (Polars' scans) reads AWS_ENDPOINT_URL and AWS_ALLOW_HTTP; the manifest and parts read
    # through pyarrow once ignored them and went to AWS ("Could not resolve host: bucket.s3...amazonaws.com")
    root, _ = corpus
    url = s3.bucket() + "/from-env"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    options = {"aws_region": "eu-west-1"}  # only what the help's example gives
    export_archive(root, url, jobs=1, storage_options=options)
    assert "manifest.json" in s3.keys(url)
    assert_same_catalog(open_archive(url, storage_options=options), read_corpus(root, cache=False))
