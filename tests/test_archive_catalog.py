"""The catalog over an archive (out of core) equals the catalog over the corpus, call for call.

Every conformance corpus, the sample, synthetic corpora with damage and fuzz
mutations are exported and compared with ``tests.archive_diff``; the edge
cases the out-of-core path handles specially have a named test each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from subagent_catalog import catalog, catalog_descendants, list_children, read_corpus
from subagent_catalog.errors import CatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.store.archive import Archive, open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.synth.generate import generate
from tests.archive_diff import FrameSource, archive_differences, source_differences
from tests.fuzz.mutations import FAST, make_case
from tests.helpers import ENCODINGS, header, healthy, scenario_share, write_session

SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance"
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def _cases() -> list[Path]:
    found = []
    for folder in ("cases", "trace-cases"):
        base = SHARED / folder
        if base.is_dir():
            found += scenario_share(sorted(p for p in base.iterdir() if (p / "corpus").is_dir()), 3)
    return found


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/conformance is not present")
@pytest.mark.parametrize("case", _cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_conformance_corpus(case: Path, tmp_path: Path) -> None:
    meta = json.loads((case / "meta.json").read_text())
    # catalog and catalog_descendants compare every parent; one-parent calls a sample of 6 (and the odd ones)
    assert archive_differences(case / "corpus", tmp_path, compression=meta["compression"], parents_cap=6) == []


def test_sample(tmp_path: Path) -> None:
    assert archive_differences(SAMPLE, tmp_path) == []


@pytest.mark.parametrize(("seed", "profile"), [(1, "full"), (2, "small"), (3, "small")])
def test_synthetic_corpus_with_damage(seed: int, profile: Any, tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    stats = generate(root, sessions=160, seed=seed, compression="none", damaged_fraction=0.12, jobs=1, profile=profile)
    assert stats.damaged and stats.max_fanout > 10
    assert archive_differences(root, tmp_path, parents_cap=20) == []


@pytest.mark.parametrize("seed", [11, 12, 13, 14, 16])
def test_fuzz_mutated_corpus(seed: int, tmp_path: Path) -> None:
    case = make_case(seed, FAST)
    try:
        if case.live:  # a writer appending while the corpus is read twice would differ by design
            pytest.skip("a live-writer case: its corpus changes between the two reads")
        differences = archive_differences(case.root, tmp_path, compression=case.compression, parents_cap=8)
        assert differences == [], case.describe()
    finally:
        case.cleanup()


# --------------------------------------------------------------------------- edge cases


def _child(root: Path, head: dict[str, Any], compression: Any = "none") -> None:
    write_session(root, head, healthy(head["id"], f"label {head['id']}"), compression)


def _head(ident: str, created: Any, parent: Any = None, **extra: Any) -> dict[str, Any]:
    out = header(ident, created_at=1, subagent=True)
    out["createdAt"] = created
    if parent is not None:
        out["parentSession"] = parent
    out.update(extra)
    return out


@pytest.mark.parametrize("compression", ENCODINGS)
def test_non_string_parent_sessions(tmp_path: Path, compression: Any) -> None:
    root = tmp_path / "c"
    _child(root, header("P", created_at=1), compression)
    for index, parent in enumerate([7, 7.0, True, False, {"o": 1}, ["l"], "7", 10**30]):
        _child(root, _head(f"k{index}", 10 + index, parent), compression)
    _child(root, {**_head("knull", 20), "parentSession": None}, compression)
    frame = catalog(read_corpus(root, cache=False))
    assert {"7", "true", "false", "null", "1e+30"} <= set(frame["parent"].to_list())
    assert archive_differences(root, tmp_path, compression=compression) == []


def test_lone_surrogate_ids_and_parents(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _child(root, header("P\ud83d", created_at=1))
    _child(root, header("P\ufffd", created_at=2))  # the same text in a UTF-8 column
    _child(root, _head("a", 5, "P\ud83d"))
    _child(root, _head("b", 5, "P\ufffd"))
    _child(root, _head("c\udc00", 6, "P\ud83d"))
    _child(root, _head("d", 7, "c\udc00"))
    corpus = read_corpus(root, cache=False)
    assert list_children(corpus, "P\ud83d")["id"].to_list() == ["a", "c\ufffd"]
    assert archive_differences(root, tmp_path) == []


def test_collation_ties(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _child(root, header("P", created_at=1))
    for ident in ["E", "c-x", "B", "A", "a", "\u00e9", "e\u0301", "z"]:
        _child(root, _head(ident, 5, "P"))  # one createdAt: localeCompare decides, canonical twins by list order
    _child(root, _head("first", 2.0, "P"))
    ids = list_children(read_corpus(root, cache=False), "P")["id"].to_list()
    assert ids[:6] == ["first", "a", "A", "B", "c-x", "E"]
    assert archive_differences(root, tmp_path) == []


def test_non_integer_created_at(tmp_path: Path) -> None:
    """``createdAt`` that is not a safe integer (no real log lists one today): keyed from the header."""
    root = tmp_path / "c"
    _child(root, header("P", created_at=1))
    for ident in ["k1", "k2", "k3", "k4", "k5"]:
        _child(root, _head(ident, 5, "P"))
    corpus = read_corpus(root, cache=False)
    stamps = {"k1": 2.5, "k2": 2.5, "k3": 1e17, "k4": 2.25}
    headers = [
        text if ident not in stamps else text.replace('"createdAt":5', f'"createdAt":{stamps[ident]!r}')
        for ident, text in corpus.sessions.select("session_id", "header_json").iter_rows()
    ]
    changed = corpus.sessions.with_columns(
        pl.Series("header_json", headers),
        pl.when(pl.col("session_id").is_in(list(stamps)))
        .then(None)
        .otherwise(pl.col("created_at_ms"))
        .alias("created_at_ms"),
    )
    odd = Corpus(corpus.root, corpus.compression, changed, corpus.descriptors, corpus.problems)
    assert list_children(odd, "P")["id"].to_list() == ["k4", "k1", "k2", "k5", "k3"]
    assert source_differences(odd, FrameSource(odd)) == []


def test_trace_cycles_and_unknown_parents_are_error_rows(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _child(root, _head("A", 1, "B"))
    _child(root, _head("B", 2, "A"))
    _child(root, _head("tail", 3, "A"))  # leads into the cycle: its trace check fails too
    _child(root, _head("orphan", 4, "gone"))
    _child(root, _head("ok", 5))
    _child(root, _head("self", 6, "self"))
    export_archive(root, tmp_path / "a", jobs=1)
    archive = open_archive(tmp_path / "a")
    errors = catalog(archive, semantics="trace").filter(pl.col("kind") == "error")
    assert sorted(errors.select("parent", "reason").rows()) == [
        ("A", "SUBAGENT_LINEAGE_CYCLE"),
        ("B", "SUBAGENT_LINEAGE_CYCLE"),
        ("gone", "SUBAGENT_PARENT_NOT_FOUND"),
        ("self", "SUBAGENT_LINEAGE_CYCLE"),
        ("tail", "SUBAGENT_LINEAGE_CYCLE"),
    ]
    assert archive_differences(root, tmp_path / "diff") == []


def test_a_cycle_longer_than_the_queried_levels_is_walked_over_the_keys(tmp_path: Path) -> None:
    # 40 sessions in one cycle (past the 8 levels queried one by one) and a tail leading into it:
    # every chain is walked over the keys, once for all of them (a 400-cycle once took minutes).
    root = tmp_path / "c"
    ring = [f"r{n:02d}" for n in range(40)]
    for n, ident in enumerate(ring):
        _child(root, _head(ident, n, ring[(n + 1) % len(ring)]))
    _child(root, _head("tail", 99, "r07"))
    corpus = read_corpus(root, cache=False)
    errors = catalog(corpus, semantics="trace").filter(pl.col("kind") == "error")
    assert sorted(errors["parent"].to_list()) == sorted([*ring, "tail"])
    assert set(errors["reason"].to_list()) == {"SUBAGENT_LINEAGE_CYCLE"}
    assert source_differences(corpus, FrameSource(corpus), parents_cap=4) == []


def test_listing_failure_is_the_same_error(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _child(root, header("P", created_at=1))
    _child(root, _head("k", 2, "P"))
    (root / "_no-cwd" / "legacy.jsonl").write_text("{}\n")
    export_archive(root, tmp_path / "a", jobs=1)
    archive = open_archive(tmp_path / "a")
    for call in (lambda s: catalog(s), lambda s: catalog_descendants(s), lambda s: list_children(s, "P")):
        with pytest.raises(CatalogError) as raised:
            call(archive)
        assert raised.value.code == "PERSISTENCE_LIST_FAILED"
    assert archive_differences(root, tmp_path / "diff") == []


def test_archive_calls_never_collect_the_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    export_archive(SAMPLE, tmp_path / "a", jobs=1)
    archive = open_archive(tmp_path / "a")
    expected = catalog(read_corpus(SAMPLE, cache=False))

    def refuse(self: Archive, **options: Any) -> Any:
        raise AssertionError("the out-of-core catalog collected every table")

    monkeypatch.setattr(Archive, "to_corpus", refuse)
    assert catalog(archive).equals(expected)
    assert list_children(archive, "run-webapp-1").height == 9
    assert catalog_descendants(archive).height == 27
