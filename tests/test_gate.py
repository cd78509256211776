"""The data-quality gate: each check counts exactly its offenders; selection decides pass or fail."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import polars as pl
import pytest

from subagent_catalog.analysis.gate import run_checks
from subagent_catalog.analysis.gate_checks import CHECKS, DEFAULT_FAIL_ON, check_names, parse_fail_on
from subagent_catalog.corpus import read_corpus
from subagent_catalog.read.paths import MISSING
from subagent_catalog.synth import writer as w
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


# --------------------------------------------------------------------------- empty corpus


def test_empty_root_fails_whatever_the_selection_unless_allowed(tmp_path: Path) -> None:
    corpus = read_corpus(tmp_path, jobs=1)
    for fail_on in (None, [], ["torn-tail"]):
        result = run_checks(corpus, fail_on=fail_on)
        assert result.failed and result.failing == [] and result.empty is not None
        assert result.empty.message == f"no session files under {str(tmp_path)!r}"
        assert "right directory" in result.empty.hint
    allowed = run_checks(corpus, allow_empty=True)
    assert not allowed.failed and allowed.empty is not None and allowed.empty.allowed
    assert format_text(run_checks(corpus)).startswith("check: FAILED: empty corpus (")
    assert "empty: no session files under" in format_text(run_checks(corpus))
    assert "allowed by --allow-empty" in format_text(allowed)
    assert "**Empty corpus**: no session files" in format_markdown(run_checks(corpus))
    data = json.loads(format_json(run_checks(corpus)))
    assert data["failed"] is True and data["empty"]["allowed"] is False and data["session_files"] == 0


def test_a_directory_without_logs_is_empty(tmp_path: Path) -> None:
    w.write_file(os.path.join(tmp_path, "--p--", "s", "notes.txt"), b"hello\n")
    assert run_checks(read_corpus(tmp_path, jobs=1)).empty is not None


def test_only_skipped_files_is_empty_but_damaged_listed_files_are_not(tmp_path: Path) -> None:
    w.write_file(os.path.join(tmp_path, "--p--", "s1", "session.jsonl"), b"")
    w.write_file(os.path.join(tmp_path, "--p--", "s2", "session.jsonl"), b"not json\n")
    skipped = run_checks(read_corpus(tmp_path, jobs=1))
    assert skipped.failed and skipped.empty is not None and skipped.session_files == 2
    assert (
        skipped.empty.message.startswith("no listed session under ") and "all 2 session files" in skipped.empty.message
    )
    damaged = tmp_path / "damaged"
    _child(damaged, "c-bad", "gone", {"version": 2, "mode": "bogus", "provider": "spawn"})
    result = run_checks(read_corpus(damaged, jobs=1))
    assert result.empty is None and result.failing == ["corrupt", "malformed-descriptor"]


def test_wrong_compression_is_empty_and_a_corpus_error(tmp_path: Path) -> None:
    build_healthy(tmp_path)
    result = run_checks(read_corpus(tmp_path, compression="zstd", jobs=1))
    assert result.empty is not None and "other encoding" in result.empty.hint
    assert result.failing[0] == "corpus-error"


def test_an_empty_window_is_not_an_empty_corpus(tmp_path: Path) -> None:
    from subagent_catalog.analysis.window import Window

    build_healthy(tmp_path)
    result = run_checks(read_corpus(tmp_path, jobs=1), window=Window.of("2030-01-01", None))
    assert not result.failed and result.empty is None
    assert (result.window_files, result.session_files, result.denominator) == (0, 3, 0)
    assert "by created_at: 0 of 3 session files" in format_text(result)


# --------------------------------------------------------------------------- thresholds


def test_max_count_tolerates_up_to_n_and_selects_its_check(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    corpus = read_corpus(tmp_path, jobs=1)
    at = run_checks(corpus, fail_on=["corpus-error"], max_count={"corrupt": 2})
    assert at["corrupt"].selected and at["corrupt"].status == "tolerated" and not at.failed
    assert at.fail_on == ("corpus-error", "corrupt")
    assert re.search(r"^ \* corrupt +2  tolerated +\(max 2\)$", format_text(at), re.M)
    over = run_checks(corpus, fail_on=["corpus-error"], max_count={"corrupt": 1})
    assert over.failing == ["corrupt"] and json.loads(format_json(over))["checks"][3]["max"] == 1
    assert run_checks(corpus, max_count={"corrupt": 0})["corrupt"].status == "fail"


def test_max_rate_divides_by_the_session_files_of_the_window(tmp_path: Path) -> None:
    from subagent_catalog.analysis.window import Window

    build_mixed(tmp_path)  # 12 session files, 2 corrupt
    corpus = read_corpus(tmp_path, jobs=1)
    assert run_checks(corpus, fail_on=[], max_rate={"corrupt": 2 / 12})["corrupt"].status == "tolerated"
    assert run_checks(corpus, fail_on=[], max_rate={"corrupt": 0.15})["corrupt"].status == "fail"
    assert run_checks(corpus, fail_on=[], max_rate={"corrupt": 0.15})["corrupt"].rate == 2 / 12
    window = Window.of(None, "2023-11-14T22:13:20.004Z")  # root, c-ok, c-one, c-bad: 1 corrupt of 4
    windowed = run_checks(corpus, fail_on=[], max_rate={"corrupt": 0.25}, window=window)
    assert windowed.denominator == 4 and windowed["corrupt"].status == "tolerated"
    nothing = run_checks(corpus, fail_on=[], max_rate={"corrupt": 0.5}, window=Window.of("2030-01-01", None))
    assert nothing["corrupt"].status == "pass" and nothing["corrupt"].rate is None


def test_both_limits_fail_when_either_is_exceeded(tmp_path: Path) -> None:
    build_mixed(tmp_path)
    corpus = read_corpus(tmp_path, jobs=1)
    assert run_checks(corpus, fail_on=[], max_count={"corrupt": 5}, max_rate={"corrupt": 0.5}).failed is False
    assert run_checks(corpus, fail_on=[], max_count={"corrupt": 1}, max_rate={"corrupt": 0.5}).failing == ["corrupt"]
    assert run_checks(corpus, fail_on=[], max_count={"corrupt": 5}, max_rate={"corrupt": 0.1}).failing == ["corrupt"]


def test_a_threshold_does_not_excuse_an_unevaluated_check(tmp_path: Path) -> None:
    build_listing_failure(tmp_path)
    result = run_checks(read_corpus(tmp_path, jobs=1), fail_on=[], max_count={"corrupt": 100})
    assert result["corrupt"].status == "unevaluated" and result.failing == ["corrupt"]


def test_threshold_values_are_validated() -> None:
    from subagent_catalog.analysis.gate_policy import parse_max, parse_max_rate

    assert parse_max(" corrupt = 7") == ("corrupt", 7)
    assert parse_max_rate("unavailable=1%") == ("unavailable", 0.01)
    assert parse_max_rate("unavailable=0") == ("unavailable", 0.0)
    for bad, message in (
        ("corrupt", "expected CHECK=N"),
        ("corrupt=", "expected CHECK=N"),
        ("=3", "expected CHECK=N"),
        ("corrupt=2.5", "whole number"),
        ("corrupt=-1", "whole number"),
        ("bogus=1", "unknown check 'bogus' in --max (hint: choose from corpus-error,"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            parse_max(bad)
    for bad in ("corrupt=1.5", "corrupt=-0.1", "corrupt=nan", "corrupt=inf", "corrupt=150%", "corrupt=x"):
        with pytest.raises(ValueError, match="fraction from 0 to 1"):
            parse_max_rate(bad)
    from subagent_catalog.analysis.gate_policy import check_limits

    with pytest.raises(ValueError, match="unknown check 'all' in max_count"):
        check_limits({"all": 1}, {})
    with pytest.raises(ValueError, match="must be a fraction"):
        check_limits({}, {"corrupt": 2})
    with pytest.raises(ValueError, match="must be a whole number"):
        check_limits({"corrupt": True}, {})


# --------------------------------------------------------------------------- baseline


def _baseline(tmp_path: Path, result, name: str = "previous.json"):
    from subagent_catalog.analysis.gate_policy import load_baseline

    target = tmp_path / name
    target.write_text(format_json(result), encoding="utf-8")
    return load_baseline(str(target))


def test_baseline_fails_only_on_new_offenders(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    build_mixed(root)
    before = run_checks(read_corpus(root, jobs=1))
    baseline = _baseline(tmp_path, before)
    same = run_checks(read_corpus(root, jobs=1), baseline=baseline)
    assert not same.failed and same.known == sum(before.counts.values())
    assert same["corrupt"].status == "tolerated" and same["corrupt"].new == 0
    assert "baseline: " in format_text(same) and "offenders already in it (not counted), 0 new" in format_text(same)
    _child(root, "c-bad2", "root", {"version": 2, "mode": "bogus", "provider": "spawn"}, created=T0 + 20)
    after = run_checks(read_corpus(root, jobs=1), baseline=baseline)
    assert after.failing == ["corrupt", "malformed-descriptor"]
    corrupt = after["corrupt"]
    assert (corrupt.count, corrupt.known, corrupt.new) == (3, 2, 1)
    assert corrupt.offenders["session_id"][0] == "c-bad2"  # new offenders first
    assert corrupt.offenders["in_baseline"].to_list() == [False, True, True]
    assert re.search(r"^ \* corrupt +3  FAIL +\(1 new\)$", format_text(after), re.M)
    data = json.loads(format_json(after))
    assert data["baseline"]["known"] == after.known and data["checks"][3]["new"] == 1
    assert "| FAIL (1 new) |" in format_markdown(after) and "(in baseline)" in format_markdown(after)
    # thresholds count the new offenders only
    assert not run_checks(
        read_corpus(root, jobs=1), baseline=baseline, max_count={"corrupt": 1, "malformed-descriptor": 1}
    ).failed


def test_a_fixed_offender_is_not_needed_and_a_moved_corpus_still_matches(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "a"
    build_mixed(root)
    baseline = _baseline(tmp_path, run_checks(read_corpus(root, jobs=1)))
    moved = tmp_path / "mnt" / "b"
    shutil.copytree(root, moved)
    assert not run_checks(read_corpus(moved, jobs=1), baseline=baseline).failed  # paths compared below the root
    shutil.rmtree(moved / "--proj--" / "c-bad")
    fixed = run_checks(read_corpus(moved, jobs=1), baseline=baseline)
    assert not fixed.failed and fixed["corrupt"].count == 1


def test_a_baseline_counts_repeated_identities(tmp_path: Path) -> None:
    from collections import Counter

    from subagent_catalog.analysis.gate_policy import Baseline, mark_known

    rows = run_checks(read_corpus(tmp_path, jobs=1), allow_empty=True)["corrupt"].offenders
    twice = pl.concat(
        [rows, pl.DataFrame([{"session_id": None, "path": None, "cause": "x"}] * 3, schema_overrides=rows.schema)],
        how="diagonal_relaxed",
    )
    base = Baseline("b.json", None, None, 1, Counter({("corrupt", None, None, "x"): 2}))
    assert mark_known("corrupt", twice, str(tmp_path), base)["in_baseline"].to_list() == [True, True, False]


def test_baseline_errors_are_one_line_with_a_hint(tmp_path: Path) -> None:
    from subagent_catalog.analysis.gate_policy import BaselineError, load_baseline

    build_healthy(tmp_path / "c")
    result = run_checks(read_corpus(tmp_path / "c", jobs=1))
    cases = {
        "missing.json": None,
        "not-json.json": "{",
        "list.json": "[]",
        "no-checks.json": '{"root": "/r"}',
        "bad-offender.json": '{"checks": [{"name": "corrupt", "offenders": [{"path": 3}]}]}',
        "newer.json": '{"format_version": 2, "checks": []}',
        "other.json": '{"format": "something-else", "checks": []}',
        "deep.json": "[" * 100_000 + "]" * 100_000,
    }
    for name, text in cases.items():
        if text is not None:
            (tmp_path / name).write_text(text)
        with pytest.raises(BaselineError) as caught:
            load_baseline(str(tmp_path / name))
        line = str(caught.value)
        assert "\n" not in line and name in line and "(hint: " in line, line
    trace = _baseline(tmp_path, run_checks(read_corpus(tmp_path / "c", jobs=1), semantics="trace"), "trace.json")
    with pytest.raises(BaselineError, match="written with semantics trace, this run uses projection"):
        run_checks(read_corpus(tmp_path / "c", jobs=1), baseline=trace)
    # output from before format_version existed still reads
    old = result.to_dict()
    del old["format"], old["format_version"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert load_baseline(str(tmp_path / "old.json")).format_version is None


def test_json_output_names_its_format() -> None:
    import tempfile

    data = json.loads(format_json(run_checks(read_corpus(tempfile.mkdtemp()), allow_empty=True)))
    assert (data["format"], data["format_version"]) == ("subagent-catalog-check", 1)
    assert {"session_files", "listed_sessions", "window_files", "empty", "baseline"} <= set(data)
