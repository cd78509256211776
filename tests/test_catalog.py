"""Catalog rules (SPEC sections 3, 4 and 7), each pinned by a named fixture."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from subagent_catalog import (
    CatalogError,
    catalog,
    catalog_descendants,
    deviations,
    list_agents_text,
    list_children,
    list_descendants,
    read_corpus,
)
from subagent_catalog.catalog.collation import locale_compare
from subagent_catalog.catalog.listing import children_rows, descendant_rows
from tests.helpers import (
    ENCODINGS,
    EventLog,
    base_tree,
    descriptor,
    header,
    healthy,
    line,
    raw_log,
    write_raw,
    write_session,
)

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def corpus_with(tmp_path: Path, children: dict[str, list[dict]], compression: str = "none", **heads: dict):
    parent = EventLog("P")
    parent.turn_start()
    parent.turn_end()
    write_session(tmp_path, header("P", created_at=1), parent.events, compression)  # type: ignore[arg-type]
    for i, (cid, events) in enumerate(children.items()):
        head = heads.get(cid) or header(cid, created_at=10 + i, parent="P", subagent=True)
        write_session(tmp_path, head, events, compression)  # type: ignore[arg-type]
    return read_corpus(tmp_path, compression=compression)  # type: ignore[arg-type]


def upstream(rows) -> list[dict]:
    return [row.upstream() for row in rows]


# --- rows and diagnostics ----------------------------------------------------------------------


@pytest.mark.parametrize("compression", ENCODINGS)
def test_healthy_children_are_child_rows_in_created_order(tmp_path: Path, compression: str) -> None:
    base_tree(tmp_path, compression)  # type: ignore[arg-type]
    corpus = read_corpus(tmp_path, compression=compression)  # type: ignore[arg-type]
    assert upstream(children_rows(corpus, "P")) == [
        {
            "kind": "child",
            "id": "c-ok",
            "mode": "continuable",
            "label": "ok",
            "activity": "inactive",
            "hasChildren": False,
        },
        {
            "kind": "child",
            "id": "c-x",
            "mode": "continuable",
            "label": "x",
            "activity": "inactive",
            "hasChildren": True,
        },
    ]


def test_missing_descriptor_is_corrupt_with_its_cause(tmp_path: Path) -> None:
    events = EventLog("c")
    events.turn_start()
    events.turn_end()
    frame = list_children(corpus_with(tmp_path, {"c": events.events}), "P")
    assert frame.select("kind", "reason", "cause").row(0) == ("diagnostic", "corrupt", "no-descriptor")


@pytest.mark.parametrize(
    ("payload", "cause", "detail"),
    [
        (None, "malformed-descriptor", "payload must be an object"),
        ({"version": "2", "mode": "one-shot", "provider": "p"}, "malformed-descriptor", "version must be a number"),
        ({"version": 2, "mode": "continuable", "provider": "p"}, "malformed-descriptor", "label is required"),
        (
            {"version": 2, "mode": "one-shot", "provider": "p", "persona": "x"},
            "malformed-descriptor",
            'unknown field "persona"',
        ),
        (
            {"version": 2, "mode": "continuable", "provider": "p", "label": "x", "toolFilter": {}},
            "malformed-descriptor",
            "allow and/or deny",
        ),
        ({"version": 1, "mode": "one-shot", "provider": "p"}, "unknown-descriptor-version", "version 1 is not 2"),
    ],
    ids=[
        "null",
        "version-string",
        "continuable-no-label",
        "one-shot-continuable-key",
        "tool-filter-empty",
        "version-1",
    ],
)
def test_invalid_last_descriptor_is_corrupt_and_names_why(
    tmp_path: Path, payload: object, cause: str, detail: str
) -> None:
    frame = list_children(corpus_with(tmp_path, {"c": healthy_with(payload)}), "P")
    row = frame.row(0, named=True)
    assert (row["kind"], row["reason"], row["cause"]) == ("diagnostic", "corrupt", cause)
    assert detail in row["cause_detail"]


def healthy_with(payload: object) -> list[dict]:
    log = EventLog("c")
    log.turn_start()
    log.descriptor(payload)
    log.turn_end()
    return log.events


def test_valid_then_invalid_descriptor_is_corrupt(tmp_path: Path) -> None:
    log = EventLog("c")
    log.turn_start()
    log.descriptor(descriptor("continuable", label="first"))
    log.descriptor({"version": 2})
    log.turn_end()
    assert list_children(corpus_with(tmp_path, {"c": log.events}), "P")["reason"].to_list() == ["corrupt"]


def test_empty_label_is_valid_and_renders_a_trailing_space(tmp_path: Path) -> None:
    corpus = corpus_with(tmp_path, {"c": healthy_with(descriptor("continuable", label=""))})
    assert list_agents_text(corpus, "P") == "c [ready] \u2014 "


def test_one_shot_without_label_omits_the_label_key(tmp_path: Path) -> None:
    corpus = corpus_with(tmp_path, {"c": healthy_with(descriptor("one-shot"))})
    assert upstream(children_rows(corpus, "P"))[0] == {
        "kind": "child",
        "id": "c",
        "mode": "one-shot",
        "activity": "inactive",
        "hasChildren": False,
    }
    assert list_agents_text(corpus, "P") == "(no subagents)"  # one-shot children are not offered to the model


def test_read_failure_is_unavailable_with_the_read_cause(tmp_path: Path) -> None:
    write_session(tmp_path, header("P", created_at=1), [], "none")
    head = header("c", created_at=2, parent="P", subagent=True)
    lines = [line(e) for e in healthy("c")]
    write_raw(tmp_path, head, raw_log(head, [*lines[:2], b"oops\n", *lines[2:]], "none"), "none")
    row = list_children(read_corpus(tmp_path, compression="none"), "P").row(0, named=True)
    assert (row["reason"], row["cause"], row["verdict"]) == ("unavailable", "unparsable-line-before-turn-end", "failed")


def test_fork_seed_descriptor_serves_identity_under_projection_only(tmp_path: Path) -> None:
    seed = healthy("src", "ancestor")
    log = EventLog("fork", events=[dict(e) for e in seed], turn=1)
    log.turn_start()
    log.turn_end()
    head = header("fork", created_at=5, parent="P", subagent=True, seed_length=len(seed))
    corpus = corpus_with(tmp_path, {"fork": log.events}, fork=head)
    row = list_children(corpus, "P").row(0, named=True)
    assert (row["label"], row["identity_from_seed"]) == ("ancestor", True)
    assert list_children(corpus, "P", semantics="trace").height == 0
    dev = deviations(corpus)
    assert dev["deviation"].to_list() == ["seed-descriptor-identity"]


def test_has_children_counts_unhealthy_subagent_children(tmp_path: Path) -> None:
    broken = EventLog("g")
    broken.turn_start()
    corpus = corpus_with(
        tmp_path,
        {"c": healthy("c"), "g": broken.events},
        g=header("g", created_at=20, parent="c", subagent=True),
    )
    assert children_rows(corpus, "P")[0].has_children is True
    assert list_children(corpus, "c")["reason"].to_list() == ["corrupt"]


def test_ordinary_forks_are_traversed_but_not_listed(tmp_path: Path) -> None:
    corpus = corpus_with(
        tmp_path,
        {"fork": healthy("fork"), "deep": healthy("deep", "deep")},
        fork=header("fork", created_at=5, parent="P"),
        deep=header("deep", created_at=6, parent="fork", subagent=True),
    )
    assert list_children(corpus, "P").height == 0
    rows = upstream(descendant_rows(corpus, "P"))
    assert [(r["id"], r["parentId"], r["depth"]) for r in rows] == [("deep", "fork", 2)]
    assert list_agents_text(corpus, "P", scope="descendants") == "deep [ready] parent=fork depth=2 \u2014 deep"


def test_self_parent_appears_in_its_own_children_but_not_in_descendants(tmp_path: Path) -> None:
    corpus = corpus_with(
        tmp_path, {"loop": healthy("loop")}, loop=header("loop", created_at=5, parent="loop", subagent=True)
    )
    assert list_children(corpus, "loop")["id"].to_list() == ["loop"]
    assert list_descendants(corpus, "loop").height == 0


def test_unknown_parent_is_empty_under_projection_and_an_error_under_trace(tmp_path: Path) -> None:
    base_tree(tmp_path, "none")
    corpus = read_corpus(tmp_path, compression="none")
    assert list_children(corpus, "nobody").height == 0
    with pytest.raises(CatalogError) as raised:
        list_children(corpus, "nobody", semantics="trace")
    assert raised.value.code == "SUBAGENT_PARENT_NOT_FOUND"


def test_lineage_cycle_fails_the_trace_call(tmp_path: Path) -> None:
    write_session(tmp_path, header("a", created_at=1, parent="b"), [], "none")
    write_session(tmp_path, header("b", created_at=2, parent="a"), [], "none")
    corpus = read_corpus(tmp_path, compression="none")
    with pytest.raises(CatalogError) as raised:
        list_children(corpus, "a", semantics="trace")
    assert raised.value.code == "SUBAGENT_LINEAGE_CYCLE"
    assert list_children(corpus, "a").height == 0


def test_trace_rules_for_own_descriptors(tmp_path: Path) -> None:
    two = EventLog("two")
    two.turn_start()
    two.descriptor(descriptor("continuable", label="one"))
    two.descriptor(descriptor("continuable", label="two"))
    two.turn_end()
    corpus = corpus_with(
        tmp_path,
        {"two": two.events, "v3": healthy_with({"version": 3}), "none": healthy_with(None)[:1]},
    )
    trace = {r["id"]: r for r in upstream(children_rows(corpus, "P", semantics="trace"))}
    assert trace["two"]["reason"] == "corrupt"
    assert trace["v3"]["reason"] == "unsupported"
    assert "none" not in trace
    projection = {r["id"]: r for r in upstream(children_rows(corpus, "P"))}
    assert projection["two"]["label"] == "two" and projection["v3"]["reason"] == "corrupt"
    assert projection["none"]["reason"] == "corrupt"


def test_whole_listing_failure_raises_one_typed_error(tmp_path: Path) -> None:
    base_tree(tmp_path, "none")
    write_session(tmp_path, {**header("r", created_at=9), "approvalPolicy": "never"}, [], "none")
    corpus = read_corpus(tmp_path, compression="none")
    for call in (list_children, list_descendants, list_agents_text):
        with pytest.raises(CatalogError) as raised:
            call(corpus, "P")
        assert raised.value.code == "PERSISTENCE_LIST_FAILED" and raised.value.path is not None
    with pytest.raises(CatalogError):
        catalog(corpus)


# --- order --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("a", "A"),
        ("A", "B"),
        ("B", "c-x"),
        ("c-x", "E"),
        ("x000a", "x000B"),
        ("t1_alpha", "t1-alpha"),
        ("T1-beta", "t1.alpha"),
    ],
)
def test_locale_compare_matches_icu_on_tricky_ids(a: str, b: str) -> None:
    assert locale_compare(a, b) == -1 and locale_compare(b, a) == 1


def test_ties_on_created_at_break_on_locale_compare_not_code_units(tmp_path: Path) -> None:
    ids = ["E", "c-x", "B", "A", "a"]
    children = {cid: healthy(cid, cid) for cid in ids}
    heads = {cid: header(cid, created_at=7, parent="P", subagent=True) for cid in ids}
    corpus = corpus_with(tmp_path, children, **heads)
    assert list_children(corpus, "P")["id"].to_list() == ["a", "A", "B", "c-x", "E"]


def test_canonically_equivalent_ids_keep_listing_order(tmp_path: Path) -> None:
    composed, decomposed = "\u00e9", "e\u0301"
    heads = {cid: header(cid, created_at=7, parent="P", subagent=True) for cid in (decomposed, composed)}
    corpus = corpus_with(tmp_path, {cid: healthy(cid) for cid in heads}, **heads)
    listed = corpus.sessions.filter(pl.col("parent_session") == "P").sort("list_order")["session_id"].to_list()
    assert list_children(corpus, "P")["id"].to_list() == listed


def test_ties_and_distinct_created_at_mix_in_one_sibling_group(tmp_path: Path) -> None:
    created = {"z": 1, "b": 9, "B": 5, "a": 5, "c": 5}
    heads = {cid: header(cid, created_at=at, parent="P", subagent=True) for cid, at in created.items()}
    corpus = corpus_with(tmp_path, {cid: healthy(cid, cid) for cid in created}, **heads)
    assert list_children(corpus, "P")["id"].to_list() == ["z", "a", "B", "c", "b"]


def test_pyuca_is_not_loaded_without_created_at_ties() -> None:
    # A fresh process: the sample corpus has no tie among siblings, so no collation key is needed.
    script = (
        "import sys\n"
        "from subagent_catalog import catalog, read_corpus\n"
        f"corpus = read_corpus({str(SAMPLE)!r}, cache=False, jobs=1)\n"
        "assert catalog(corpus).height > 0\n"
        "print('pyuca' in sys.modules)\n"
    )
    repo = str(SAMPLE.parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "False"


# --- live overlay -------------------------------------------------------------------------------


def test_live_children_are_running_and_statuses_render(tmp_path: Path) -> None:
    base_tree(tmp_path, "none")
    corpus = read_corpus(tmp_path, compression="none")
    live = {"c-ok": "running", "c-x": "idle"}
    frame = list_children(corpus, "P", live=live)
    assert frame["activity"].to_list() == ["running", "running"]
    assert list_agents_text(corpus, "P", live=live) == "c-ok [running] \u2014 ok\nc-x [idle] \u2014 x"


def test_live_child_without_identity_is_omitted_creation_window(tmp_path: Path) -> None:
    early = EventLog("new")
    early.turn_start()
    corpus = corpus_with(tmp_path, {"new": early.events, "old": healthy("old")})
    assert list_children(corpus, "P")["id"].to_list() == ["new", "old"]  # cold: corrupt + child
    assert list_children(corpus, "P", live={"new": "running"})["id"].to_list() == ["old"]


def test_live_status_must_be_running_or_idle(tmp_path: Path) -> None:
    base_tree(tmp_path, "none")
    with pytest.raises(ValueError, match="running"):
        list_children(read_corpus(tmp_path, compression="none"), "P", live={"c-x": "busy"})


# --- catalog over all parents ---------------------------------------------------------------------


def test_catalog_equals_per_parent_calls_on_the_sample() -> None:
    corpus = read_corpus(SAMPLE)
    whole = catalog(corpus)
    for parent in whole["parent"].unique(maintain_order=True).to_list():
        per_parent = list_children(corpus, parent)
        assert whole.filter(pl.col("parent") == parent).drop("parent", "parent_json").equals(per_parent), parent
    deep = catalog_descendants(corpus)
    for root in ["run-webapp-1", "auth-refactor", "scratch"]:
        assert deep.filter(pl.col("root") == root).drop("root", "root_json").equals(list_descendants(corpus, root))


def test_sample_deviations_name_upstream_documented_cases() -> None:
    names = set(deviations(read_corpus(SAMPLE))["deviation"])
    assert names == {
        "seed-descriptor-identity",
        "settled-debris-visible",
        "multiple-own-descriptors",
        "unsupported-no-longer-produced",
    }


def test_per_id_lookup_failure_is_unavailable(tmp_path: Path) -> None:
    base_tree(tmp_path, "none")
    other = tmp_path / "--elsewhere--"
    other.mkdir()
    (other / "c-x").write_text("a file named like the session")  # upstream's lookup hits ENOTDIR
    corpus = read_corpus(tmp_path, compression="none")
    assert corpus.listing_error is None
    row = list_children(corpus, "P").filter(pl.col("id") == "c-x").row(0, named=True)
    assert (row["reason"], row["cause"]) == ("unavailable", "lookup-failed")


def test_duplicate_session_dir_whose_header_is_skipped_makes_lookup_fail(tmp_path: Path) -> None:
    base_tree(tmp_path, "none")
    dup = tmp_path / "--elsewhere--" / "c-x"
    dup.mkdir(parents=True)
    (dup / "session.jsonl").write_bytes(b"not a header\n")
    row = list_children(read_corpus(tmp_path, compression="none"), "P").filter(pl.col("id") == "c-x").row(0, named=True)
    assert (row["reason"], row["cause"]) == ("unavailable", "lookup-failed")
    assert "duplicate" in row["cause_detail"]
