"""The data-quality gate: each check counts exactly its offenders; selection decides pass or fail."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from subagent_catalog.corpus import read_corpus
from subagent_catalog.read.paths import MISSING
from subagent_catalog.synth import writer as w
from subagent_catalog.views.gate import run_checks
from subagent_catalog.views.gate_checks import CHECKS, DEFAULT_FAIL_ON, check_names, parse_fail_on
from subagent_catalog.views.gate_format import format_json, format_markdown, format_text

T0 = 1_700_000_000_000


def _child(
    root: Path,
    sid: str,
    parent: str,
    payload: object,
    *,
    tail: bytes = b"",
    events: list | None = None,
    created: int = T0,
    depth: int = 1,
) -> str:
    head = w.header(sid, created_at=created, cwd="/proj", parent=parent, subagent=True, delegation_depth=depth)
    return w.write_session(
        root, head, events if events is not None else w.simple_child_events(sid, payload), "none", tail=tail
    )


def build_mixed(root: Path) -> dict[str, str]:
    """One root session, healthy and damaged children, a fork with a grandchild, a skipped file."""
    paths = {
        "root": w.write_session(
            root, w.header("root", created_at=T0, cwd="/proj"), w.simple_child_events("root", MISSING), "none"
        )
    }
    paths["c-ok"] = _child(root, "c-ok", "root", w.descriptor("continuable", label="ok child"), created=T0 + 1)
    paths["c-one"] = _child(root, "c-one", "root", w.descriptor("one-shot"), created=T0 + 2)
    paths["c-bad"] = _child(root, "c-bad", "root", {"version": 2, "mode": "bogus", "provider": "spawn"}, created=T0 + 3)
    paths["c-v3"] = _child(
        root, "c-v3", "root", {"version": 3, "mode": "one-shot", "provider": "spawn"}, created=T0 + 4
    )
    paths["c-torn"] = _child(
        root, "c-torn", "root", w.descriptor("continuable", label="torn"), tail=b'{"type":"turn/st', created=T0 + 5
    )
    gap = w.simple_child_events("c-gap", w.descriptor("continuable", label="gap"))
    for event in gap[2:]:
        event["seq"] += 1
    paths["c-gap"] = _child(root, "c-gap", "root", None, events=gap, created=T0 + 6)
    unknown = w.simple_child_events("c-unk", w.descriptor("continuable", label="unk"))
    unknown.insert(2, {"type": "mystery/x", "seq": 2, "time": T0, "data": {}})
    for seq, event in enumerate(unknown):
        event["seq"] = seq
    paths["c-unk"] = _child(root, "c-unk", "root", None, events=unknown, created=T0 + 7)
    paths["c-pre"] = _child(
        root, "c-pre", "root", w.descriptor("continuable", label="prefix"), tail=b"garbage\n", created=T0 + 8
    )
    fork = w.header("fork", created_at=T0 + 9, cwd="/proj", parent="root")
    paths["fork"] = w.write_session(root, fork, w.simple_child_events("fork", MISSING), "none")
    paths["g1"] = _child(root, "g1", "fork", w.descriptor("continuable", label="grandchild"), created=T0 + 10, depth=2)
    paths["junk"] = w.write_file(os.path.join(root, "--proj--", "junk", "session.jsonl"), b"not json\n")
    return paths


def build_healthy(root: Path) -> None:
    w.write_session(root, w.header("P", created_at=T0, cwd="/p"), w.simple_child_events("P", MISSING), "none")
    _child(root, "k1", "P", w.descriptor("continuable", label="one"), created=T0 + 1)
    _child(root, "k2", "P", w.descriptor("one-shot"), created=T0 + 2)


def build_listing_failure(root: Path) -> None:
    build_healthy(root)
    w.write_file(os.path.join(root, "--p--", "legacy.jsonl"), b"{}\n")


def _ids(result, name: str) -> list[str | None]:
    return result[name].offenders["session_id"].to_list()


def test_mixed_corpus_counts_every_check_exactly(tmp_path: Path) -> None:
    paths = build_mixed(tmp_path)
    result = run_checks(read_corpus(tmp_path, jobs=1))
    assert result.counts == {
        "corpus-error": 0,
        "read-failed": 2,
        "unavailable": 2,
        "corrupt": 2,
        "unsupported": 0,
        "unsupported-version": 1,
        "malformed-descriptor": 1,
        "unknown-event-type": 1,
        "torn-tail": 1,
        "prefix": 1,
        "skipped-header": 1,
        "lineage-error": 0,
        "deviation": 1,
    }
    assert sorted(_ids(result, "unavailable")) == ["c-gap", "c-unk"]
    assert sorted(_ids(result, "corrupt")) == ["c-bad", "c-v3"]
    assert _ids(result, "unsupported-version") == ["c-v3"]
    assert _ids(result, "malformed-descriptor") == ["c-bad"]
    assert _ids(result, "torn-tail") == ["c-torn"]
    assert _ids(result, "prefix") == ["c-pre"]
    assert result["skipped-header"].offenders["path"].to_list() == [paths["junk"]]
    causes = dict(zip(_ids(result, "corrupt"), result["corrupt"].offenders["cause"].to_list(), strict=True))
    assert causes == {"c-bad": "malformed-descriptor", "c-v3": "unknown-descriptor-version"}
    unavailable = result["unavailable"].offenders.sort("session_id")
    assert unavailable["path"].to_list() == [paths["c-gap"], paths["c-unk"]]
    assert unavailable["cause"].to_list() == ["seq-gap-before-turn-end", "unknown-event-type"]


def test_default_selection_fails_on_errors_and_warns_on_the_rest(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    result = run_checks(read_corpus(tmp_path, jobs=1))
    assert result.fail_on == DEFAULT_FAIL_ON
    assert result.failed
    assert result.failing == [
        "read-failed",
        "unavailable",
        "corrupt",
        "unsupported-version",
        "malformed-descriptor",
        "unknown-event-type",
    ]
    assert result["torn-tail"].status == "warn"
    assert result["unsupported"].status == "pass"


def test_selection_decides_failure(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    corpus = read_corpus(tmp_path, jobs=1)
    only_torn = run_checks(corpus, fail_on=["torn-tail"])
    assert only_torn.failed and only_torn.failing == ["torn-tail"]
    assert only_torn["corrupt"].status == "warn"
    nothing = run_checks(corpus, fail_on=[])
    assert not nothing.failed
    assert {c.status for c in nothing.checks} == {"pass", "warn"}
    clean_only = run_checks(corpus, fail_on=["corpus-error", "unsupported", "lineage-error"])
    assert not clean_only.failed


def test_trace_semantics_produces_unsupported(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    result = run_checks(read_corpus(tmp_path, jobs=1), semantics="trace", fail_on=["unsupported"])
    assert result.semantics == "trace"
    assert _ids(result, "unsupported") == ["c-v3"]
    assert result["unsupported"].offenders["cause"].to_list() == ["unknown-descriptor-version"]
    assert _ids(result, "corrupt") == ["c-bad"]
    assert result.failing == ["unsupported"]


def test_lineage_error_under_trace_for_unlisted_parent(tmp_path: Path) -> None:
    build_healthy(tmp_path)
    _child(tmp_path, "orphan", "gone", w.descriptor("continuable", label="x"))
    corpus = read_corpus(tmp_path, jobs=1)
    assert run_checks(corpus)["lineage-error"].count == 0
    trace = run_checks(corpus, semantics="trace", fail_on=["lineage-error"])
    assert trace["lineage-error"].count == 1
    assert trace["lineage-error"].offenders["cause"].to_list() == ["SUBAGENT_PARENT_NOT_FOUND"]
    assert trace["lineage-error"].offenders["session_id"].to_list() == ["gone"]
    assert trace.failed


def test_healthy_corpus_passes_every_check(tmp_path: Path) -> None:
    build_healthy(tmp_path)
    result = run_checks(read_corpus(tmp_path, jobs=1), fail_on=check_names())
    assert not result.failed
    assert {c.status for c in result.checks} == {"pass"}
    assert all(c.count == 0 for c in result.checks)


def test_listing_failure_fails_closed(tmp_path: Path) -> None:
    build_listing_failure(tmp_path)
    corpus = read_corpus(tmp_path, jobs=1)
    assert corpus.listing_error is not None
    result = run_checks(corpus)
    assert result["corpus-error"].count == 1
    assert result["corpus-error"].offenders["cause"].to_list() == ["legacy-flat-file"]
    assert result["corpus-error"].status == "fail"
    for name in ("unavailable", "corrupt", "unsupported", "lineage-error", "deviation"):
        assert result[name].status == "unevaluated"
        assert "listing fails" in (result[name].note or "")
    assert "unavailable" in result.failing
    # a selection of frame-only checks still evaluates and passes
    frame_only = run_checks(corpus, fail_on=["torn-tail", "malformed-descriptor"])
    assert not frame_only.failed
    # an unevaluated selected check fails the gate even when corpus-error is not selected
    assert run_checks(corpus, fail_on=["corrupt"]).failing == ["corrupt"]


def test_parse_fail_on() -> None:
    assert parse_fail_on("all") == tuple(check_names())
    assert parse_fail_on("default,torn-tail") == (*DEFAULT_FAIL_ON, "torn-tail")
    assert parse_fail_on(" corrupt , corrupt ,") == ("corrupt",)
    assert parse_fail_on("") == ()
    with pytest.raises(ValueError, match=r"unknown check 'nope' \(hint: choose from corpus-error"):
        parse_fail_on("corrupt,nope")
    with pytest.raises(ValueError):
        parse_fail_on("unsupported_version")


def test_checks_are_data_with_unique_names_and_descriptions() -> None:
    names = [c.name for c in CHECKS]
    assert len(names) == len(set(names))
    required = {
        "corpus-error",
        "unavailable",
        "corrupt",
        "unsupported",
        "unsupported-version",
        "malformed-descriptor",
        "torn-tail",
        "prefix",
        "unknown-event-type",
        "skipped-header",
    }
    assert required <= set(names)
    assert all(c.description and callable(c.offenders) for c in CHECKS)


def test_formats(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    result = run_checks(read_corpus(tmp_path, jobs=1))
    text = format_text(result, limit=1)
    assert text.startswith("check: FAILED: read-failed, unavailable")
    assert re.search(r"^ \* corrupt +2  FAIL$", text, re.M)
    assert re.search(r"^   torn-tail +1  warn$", text, re.M)
    assert "… and 1 more" in text
    assert "c-torn" in text
    data = json.loads(format_json(result))
    assert data["failed"] is True
    by_name = {c["name"]: c for c in data["checks"]}
    assert sorted(o["session_id"] for o in by_name["unavailable"]["offenders"]) == ["c-gap", "c-unk"]
    assert by_name["torn-tail"]["status"] == "warn"
    markdown = format_markdown(result)
    assert markdown.startswith("## subagent-catalog check: **failed**")
    assert "| `corrupt` | yes | 2 | FAIL |" in markdown
    assert "### torn-tail (1)" in markdown


def test_text_and_markdown_escape_hostile_values(tmp_path: Path) -> None:
    build_healthy(tmp_path)
    hostile = "x|<img src=x onerror=alert(1)>\x1b[31m`*"
    _child(tmp_path, hostile, "P", {"version": 2, "mode": "bogus", "provider": "spawn"})
    result = run_checks(read_corpus(tmp_path, jobs=1))
    assert _ids(result, "corrupt") == [hostile]
    text = format_text(result)
    assert "\x1b" not in text and "\\x1b[31m" in text
    markdown = format_markdown(result)
    assert "<img" not in markdown and "\x1b" not in markdown
    assert r"x\|&lt;img src=x onerror=alert(1)&gt;\\x1b\[31m\`\*" in markdown
