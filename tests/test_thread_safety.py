"""Native objects shared between threads: concurrent lazy scans over zstd corpora (issue 29, item 1).

``scan_events`` hands Polars a Python source that Polars runs on its own threads; a query that uses
one LazyFrame twice (tool/call joined to tool/result) runs two of them at once. The process-wide
``ZstdDecompressor`` the reader used then was decoding on two threads at once (python-zstandard
releases the GIL while it decodes), which gave wrong rows and killed the interpreter with signal 11.
These tests run such queries repeatedly, also from several Python threads at once, and compare every
result with the same query over the eagerly read events; under ``pytest -n 2`` they run beside the
rest of the suite.
"""

from __future__ import annotations

import threading

import polars as pl
import pytest
import zstandard

from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.events import scan_events
from subagent_catalog.read import zstdframes
from subagent_catalog.synth.generate import generate

REPEATS = 3


@pytest.fixture(scope="module")
def zstd_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("threads") / "corpus"
    generate(root, sessions=60, seed=29, compression="zstd", jobs=1)
    return read_corpus(root, compression="zstd", cache=False, jobs=1)


def _calls_with_results(events: pl.LazyFrame) -> pl.LazyFrame:
    """Tool calls joined to the tool results of the same session: the frame is used twice."""
    calls = events.filter(pl.col("type") == "tool/call").select("session_id", "seq", pl.col("data").alias("call"))
    results = events.filter(pl.col("type") == "tool/result").select(
        "session_id", pl.col("seq").alias("result_seq"), "data"
    )
    return (
        calls.join(results, on="session_id")
        .group_by("session_id")
        .agg(pl.len(), pl.col("data").str.len_bytes().sum(), pl.col("call").str.len_bytes().sum())
        .sort("session_id")
    )


def test_a_scan_events_frame_used_twice_in_one_query_gives_the_eager_result_every_time(zstd_corpus: Corpus) -> None:
    expected = _calls_with_results(zstd_corpus.events.lazy()).collect()
    assert expected.height > 25 and expected["len"].sum() > 1_000  # the corpus has tool rounds to join
    scan = scan_events(zstd_corpus)
    for _ in range(REPEATS):
        assert _calls_with_results(scan).collect().equals(expected)


def test_concurrent_scan_events_queries_from_python_threads_agree(zstd_corpus: Corpus) -> None:
    expected = _calls_with_results(zstd_corpus.events.lazy()).collect()
    types = zstd_corpus.events.group_by("type").len().sort("type")
    failures: list[str] = []

    def run(index: int) -> None:
        try:
            for _ in range(2):
                if index % 2:
                    got = scan_events(zstd_corpus).group_by("type").len().sort("type").collect()
                    if not got.equals(types):
                        failures.append(f"thread {index}: counts by type differ")
                elif not _calls_with_results(scan_events(zstd_corpus)).collect().equals(expected):
                    failures.append(f"thread {index}: the join differs")
        except Exception as error:  # reported below with the thread that raised it
            failures.append(f"thread {index}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=run, args=(index,)) for index in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_each_thread_decodes_with_its_own_zstd_context() -> None:
    frame = zstandard.ZstdCompressor(write_checksum=True).compress(b'{"seq":1}\n' * 1000)
    seen: dict[str, zstandard.ZstdDecompressor] = {}  # kept alive: no id is reused

    def decode(name: str) -> None:
        assert zstdframes.decode_frame(frame) == b'{"seq":1}\n' * 1000
        seen[name] = zstdframes._decompressor()

    threads = [threading.Thread(target=decode, args=(str(index),)) for index in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    decode("main")
    assert len(seen) == 4 and len({id(value) for value in seen.values()}) == 4
