"""The corpus synthesizer: determinism, real-format output, tree shape, deliberate damage."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from subagent_catalog.catalog.tables import catalog
from subagent_catalog.corpus import read_corpus
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.read.paths import Compression
from subagent_catalog.read.scanner import scan_log
from subagent_catalog.synth.generate import SynthStats, generate, main
from subagent_catalog.synth.plan import DAMAGE_KINDS, MAX_DEPTH, MAX_HUB_FANOUT, plan_corpus

SESSIONS = 260
SEED = 11
FRACTION = 0.05  # 13 damaged sessions: every kind at least once


def _digest(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module", params=["none", "zstd"])
def synthetic(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[SynthStats, Corpus]:
    compression: Compression = request.param
    out = tmp_path_factory.mktemp(f"synth-{compression}") / "corpus"
    stats = generate(out, sessions=SESSIONS, seed=SEED, compression=compression, damaged_fraction=FRACTION, jobs=2)
    return stats, read_corpus(out, compression=compression)


def _rows(corpus: Corpus) -> dict[str, dict[str, Any]]:
    return {row["path"]: row for row in corpus.sessions.iter_rows(named=True)}


def test_same_seed_same_bytes_across_worker_counts(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", sessions=220, seed=5, compression="zstd", jobs=2)
    b = generate(tmp_path / "b", sessions=220, seed=5, compression="zstd", jobs=1)
    generate(tmp_path / "c", sessions=220, seed=6, compression="zstd", jobs=1)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert len(_digest(tmp_path / "a")) == 220
    assert _digest(tmp_path / "a") != _digest(tmp_path / "c")
    assert [d.session_id for d in a.damaged] == [d.session_id for d in b.damaged]


def test_both_encodings_hold_the_same_sessions(tmp_path: Path) -> None:
    plain = generate(tmp_path / "p", sessions=40, seed=3, compression="none")
    packed = generate(tmp_path / "z", sessions=40, seed=3, compression="zstd")
    names = sorted(p.parent.relative_to(tmp_path / "p") for p in (tmp_path / "p").rglob("session.jsonl"))
    assert names == sorted(p.parent.relative_to(tmp_path / "z") for p in (tmp_path / "z").rglob("session.jsonl.zstd"))
    assert plain.events == packed.events
    assert packed.bytes < plain.bytes


def test_corpus_reads_and_lists_cleanly(synthetic: tuple[SynthStats, Corpus]) -> None:
    stats, corpus = synthetic
    assert corpus.listing_error is None
    assert corpus.problems.filter(pl.col("fails_listing")).height == 0
    assert corpus.sessions.height == SESSIONS
    assert corpus.sessions["encoding"].unique().to_list() == [stats.compression]
    assert catalog(corpus).height > 0


def test_damaged_sessions_get_the_expected_verdicts(synthetic: tuple[SynthStats, Corpus]) -> None:
    _assert_damage_verdicts(*synthetic)


def _assert_damage_verdicts(stats: SynthStats, corpus: Corpus) -> None:
    rows = _rows(corpus)
    assert {d.kind for d in stats.damaged} == set(DAMAGE_KINDS)
    seeds = corpus.descriptors.group_by("path").agg(pl.col("in_seed").all().alias("all_seed"))
    all_seed = dict(seeds.iter_rows())
    for damaged in stats.damaged:
        path = os.path.join(stats.root, damaged.path)
        row = rows[path]
        got = (row["verdict"], row["read_cause"])
        if damaged.kind == "torn-tail":
            assert got == ("torn-tail", None), damaged
        elif damaged.kind == "garbage-line":
            assert got == ("failed", "unparsable-line-before-turn-end"), damaged
        elif damaged.kind == "seq-gap":
            assert got == ("failed", "seq-gap-before-turn-end"), damaged
        elif damaged.kind == "unknown-event-type":
            assert got == ("failed", "unknown-event-type"), damaged
        elif damaged.kind == "malformed-descriptor":
            assert got == ("ok", None) and row["identity_cause"] == "malformed-descriptor", damaged
        elif damaged.kind == "unknown-descriptor-version":
            assert got == ("ok", None) and row["identity_cause"] == "unknown-descriptor-version", damaged
        elif damaged.kind == "no-descriptor":
            assert got == ("ok", None), damaged
            # Only an ancestor's descriptor replayed in the seed may remain.
            assert all_seed.get(path, True), damaged
            assert row["identity_cause"] == "no-descriptor" or row["identity_from_seed"], damaged
        elif damaged.kind == "header-only":
            assert got == ("ok", None) and row["event_count"] == 0, damaged
        else:
            assert damaged.kind == "empty-file"
            assert row["verdict"] == "skipped" and not row["listed"] and row["bytes"] == 0, damaged
    damaged_paths = {os.path.join(stats.root, d.path) for d in stats.damaged}
    healthy = corpus.sessions.filter(~pl.col("path").is_in(sorted(damaged_paths)))
    assert healthy["verdict"].unique().to_list() == ["ok"]
    assert (
        healthy.filter(pl.col("origin") == "subagent")["identity_cause"].null_count()
        == healthy.filter(pl.col("origin") == "subagent").height
    )


def test_catalog_rows_match_the_plan(synthetic: tuple[SynthStats, Corpus]) -> None:
    _assert_catalog_matches_plan(synthetic[1])


def _assert_catalog_matches_plan(corpus: Corpus) -> None:
    plans = {p.id: p for p in plan_corpus(SESSIONS, SEED, damaged_fraction=FRACTION)}
    rows = catalog(corpus)
    assert rows.filter(pl.col("kind") == "child").height > 0
    for row in rows.iter_rows(named=True):
        plan = plans[row["id"]]
        assert plan.kind == "subagent"
        assert plans[row["parent"]].index == plan.parent
        if plan.damage in (None, "torn-tail"):
            assert (row["kind"], row["mode"], row["label"]) == ("child", plan.mode, plan.label), plan
        elif plan.damage in ("garbage-line", "seq-gap", "unknown-event-type"):
            assert (row["kind"], row["reason"]) == ("diagnostic", "unavailable")
        elif plan.damage in ("malformed-descriptor", "unknown-descriptor-version", "header-only"):
            assert (row["kind"], row["reason"]) == ("diagnostic", "corrupt")


def test_small_profile_keeps_the_plan_and_its_damage(tmp_path: Path) -> None:
    small = generate(
        tmp_path / "s", sessions=SESSIONS, seed=SEED, compression="zstd", damaged_fraction=FRACTION, profile="small"
    )
    corpus = read_corpus(tmp_path / "s", compression="zstd", cache=False)
    plans = {p.id: p for p in plan_corpus(SESSIONS, SEED, damaged_fraction=FRACTION)}
    listed = corpus.sessions.filter(pl.col("listed"))
    for ident, parent, created in listed.select("session_id", "parent_session", "created_at_ms").iter_rows():
        plan = plans[ident]
        assert created == plan.created_at
        assert parent == (None if plan.parent is None else next(p for p in plans.values() if p.index == plan.parent).id)
    _assert_damage_verdicts(small, corpus)
    _assert_catalog_matches_plan(corpus)
    own = corpus.sessions.select((pl.col("event_count") - pl.col("seed_length").fill_null(0)).max()).item()
    assert own <= 12  # a handful of own events per session
    assert small.max_fanout > 20 and small.max_depth >= 3


def test_tree_shape_bounds(synthetic: tuple[SynthStats, Corpus]) -> None:
    stats, corpus = synthetic
    listed = corpus.sessions.filter(pl.col("listed"))
    parent_of = dict(zip(listed["session_id"], listed["parent_session"], strict=True))
    kinds = Counter(
        "subagent" if origin == "subagent" else ("fork" if parent is not None else "root")
        for origin, parent in zip(listed["origin"], listed["parent_session"], strict=True)
    )
    assert 0.22 < kinds["subagent"] / listed.height < 0.38
    assert kinds["fork"] > 0 and kinds["root"] > 0

    def depth(session: str) -> int:
        steps = 0
        while parent_of.get(session) is not None:
            session = parent_of[session]
            steps += 1
        return steps

    depths = [depth(s) for s in parent_of]
    assert 3 <= max(depths) <= stats.max_depth <= MAX_DEPTH
    fanout = Counter(p for p in parent_of.values() if p is not None)
    assert 10 <= max(fanout.values()) <= MAX_HUB_FANOUT
    assert stats.max_fanout == max(
        Counter(p.parent for p in plan_corpus(SESSIONS, SEED) if p.parent is not None).values()
    )
    # Ordinary forks carry a seed and no origin; spawned subagents carry no seed.
    forks = listed.filter(pl.col("origin").is_null() & pl.col("parent_session").is_not_null())
    assert forks["seed_length"].min() > 0


def test_seeds_replay_the_parent_prefix(synthetic: tuple[SynthStats, Corpus]) -> None:
    stats, corpus = synthetic
    listed = corpus.sessions.filter(pl.col("listed") & (pl.col("verdict") == "ok"))
    by_id = {row["session_id"]: row for row in listed.iter_rows(named=True)}
    checked = 0
    for row in listed.filter(pl.col("seed_length").is_not_null()).head(12).iter_rows(named=True):
        parent = by_id.get(row["parent_session"])
        if parent is None:
            continue
        child_events = scan_log(Path(row["path"]).read_bytes(), stats.compression).events
        parent_events = scan_log(Path(parent["path"]).read_bytes(), stats.compression).events
        k = row["seed_length"]
        assert child_events[:k] == parent_events[:k]
        assert child_events[k]["type"] == "session/end-seed"
        checked += 1
    assert checked > 0
    seeded_descriptors = corpus.descriptors.filter(pl.col("in_seed"))
    assert seeded_descriptors.height > 0  # an ancestor's descriptor replayed in a seed


def test_realistic_shapes(synthetic: tuple[SynthStats, Corpus]) -> None:
    stats, corpus = synthetic
    assert stats.largest_events >= 1500  # the long tail
    counts = corpus.sessions.filter(pl.col("origin") == "subagent")["event_count"]
    assert 20 <= counts.median() <= 400  # type: ignore[operator]
    if stats.compression == "none":
        text = b"".join(p.read_bytes() for p in Path(stats.root).rglob("session.jsonl"))
        for tag in (
            b'"text-chunks"',
            b'"reasoning-chunks"',
            b'"tool-call-chunks"',
            b'"tool/result"',
            b'"ignorable":true',
        ):
            assert tag in text
    modes = corpus.descriptors.filter(pl.col("valid"))["mode"].unique().sort().to_list()
    assert modes == ["continuable", "one-shot"]
    assert corpus.sessions["project_dir"].n_unique() >= 3


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep")
    with pytest.raises(SubagentCatalogError, match="never overwrites"):
        generate(tmp_path / "full", sessions=2, seed=1)
    (tmp_path / "file").write_text("keep")
    with pytest.raises(SubagentCatalogError):
        generate(tmp_path / "file", sessions=2, seed=1)
    (tmp_path / "empty").mkdir()
    assert generate(tmp_path / "empty", sessions=2, seed=1).sessions == 2
    assert (tmp_path / "full" / "x").read_text() == "keep"


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "manifest.json"
    code = main(
        [str(tmp_path / "c"), "--sessions", "30", "--seed", "4", "--compression", "none", "--manifest", str(manifest)]
    )
    assert code == 0
    assert '"sessions": 30' in capsys.readouterr().out
    assert manifest.exists()
    assert main([str(tmp_path / "c"), "--sessions", "30", "--seed", "4"]) == 2
