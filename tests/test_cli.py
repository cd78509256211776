"""The command line through click's CliRunner: every command, every error path, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog.catalog.conformance import conformance_lines
from subagent_catalog.catalog.listing import children_rows, list_agents_text, list_children, list_descendants
from subagent_catalog.cli import inside, main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.read.paths import MISSING
from subagent_catalog.synth import writer as w
from subagent_catalog.views.text import csv_safe

T0 = 1_700_000_000_000


def _session(
    root: Path,
    sid: str,
    *,
    parent: str | None = None,
    payload: object = MISSING,
    created: int = T0,
    subagent: bool = True,
    tail: bytes = b"",
    compression: str = "none",
) -> str:
    head = w.header(
        sid,
        created_at=created,
        cwd="/proj",
        parent=parent,
        subagent=subagent and parent is not None,
        delegation_depth=1 if parent else 0,
    )
    return w.write_session(root, head, w.simple_child_events(sid, payload), compression, tail=tail)  # type: ignore[arg-type]


def build_mixed(root: Path, compression: str = "none") -> Path:
    _session(root, "root", created=T0, compression=compression)
    _session(
        root,
        "c-ok",
        parent="root",
        payload=w.descriptor("continuable", label="ok child"),
        created=T0 + 1,
        compression=compression,
    )
    _session(root, "c-one", parent="root", payload=w.descriptor("one-shot"), created=T0 + 2, compression=compression)
    _session(
        root,
        "c-bad",
        parent="root",
        payload={"version": 2, "mode": "bogus", "provider": "spawn"},
        created=T0 + 3,
        compression=compression,
    )
    _session(
        root,
        "c-v3",
        parent="root",
        payload={"version": 3, "mode": "one-shot", "provider": "spawn"},
        created=T0 + 4,
        compression=compression,
    )
    _session(
        root,
        "c-torn",
        parent="root",
        payload=w.descriptor("continuable", label="torn"),
        created=T0 + 5,
        tail=b'{"type":"turn/st' if compression == "none" else b"",
        compression=compression,
    )
    _session(root, "fork", parent="root", created=T0 + 6, subagent=False, compression=compression)
    _session(
        root,
        "g1",
        parent="fork",
        payload=w.descriptor("continuable", label="grandchild"),
        created=T0 + 7,
        compression=compression,
    )
    return root


def build_healthy(root: Path) -> Path:
    _session(root, "P", created=T0)
    _session(root, "k1", parent="P", payload=w.descriptor("continuable", label="one"), created=T0 + 1)
    _session(root, "k2", parent="P", payload=w.descriptor("one-shot"), created=T0 + 2)
    return root


def build_listing_failure(root: Path) -> Path:
    build_healthy(root)
    w.write_file(os.path.join(root, "--proj--", "legacy.jsonl"), b"{}\n")
    return root


def build_formulas(root: Path) -> Path:
    _session(root, "P", created=T0)
    labels = {
        "-dash": "@SUM(A1)",
        "k-eq": '=HYPERLINK("http://x")',
        "k-plus": "+1",
        "k-tab": "\tx",
        "k-cr": "\rx",
        "k-plain": "plain = fine",
    }
    for offset, (sid, label) in enumerate(labels.items(), 1):
        _session(root, sid, parent="P", payload=w.descriptor("continuable", label=label), created=T0 + offset)
    return root


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def _run(runner: CliRunner, *args: str):
    return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


# --------------------------------------------------------------------------- group


def test_help_lists_every_command_and_version(runner: CliRunner) -> None:
    result = _run(runner, "--help")
    assert result.exit_code == 0
    for name in ("summary", "report", "check", "list", "export", "conformance"):
        assert f"  {name} " in result.output
    version = _run(runner, "--version")
    assert version.exit_code == 0 and "subagent-catalog, version " in version.output


def test_python_dash_m_runs_the_same_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "subagent_catalog", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "summary" in done.stdout


def test_unknown_command_and_option_are_usage_errors(runner: CliRunner, tmp_path: Path) -> None:
    assert _run(runner, "nope").exit_code == 2
    build_healthy(tmp_path)
    for args in (
        ["summary", tmp_path, "--bogus"],
        ["summary", tmp_path, "--compression", "gzip"],
        ["summary", tmp_path, "--jobs", "0"],
        ["summary"],
        ["check", tmp_path, "--format", "xml"],
        ["list", tmp_path],
        ["report", tmp_path, "--semantics", "future"],
    ):
        result = runner.invoke(main, [str(a) for a in args])
        assert result.exit_code == 2, args
        assert "Usage:" in result.output


@pytest.mark.parametrize(
    "command",
    [
        ["summary", "{root}"],
        ["report", "{root}", "-o", "-"],
        ["check", "{root}"],
        ["list", "{root}", "P"],
        ["export", "{root}", "{out}"],
    ],
)
def test_missing_root_exits_1_with_hint(runner: CliRunner, tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "nowhere"
    args = [a.format(root=missing, out=tmp_path / "out") for a in command]
    result = runner.invoke(main, args)
    assert result.exit_code == 1
    assert f"Error: corpus root '{missing}' does not exist (hint: " in result.output
    assert result.output.rstrip().endswith(")")


def test_root_that_is_a_file_exits_1(runner: CliRunner, tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    result = runner.invoke(main, ["summary", str(target)])
    assert result.exit_code == 1 and "is not a directory (hint: " in result.output


# --------------------------------------------------------------------------- summary


def test_summary(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path)
    result = _run(runner, "summary", tmp_path, "--jobs", "1", "--quiet")
    assert result.exit_code == 0
    assert "sessions     8 files, 8 listed, 1 projects" in result.output
    assert "verdicts     ok 7, torn-tail 1" in result.output
    assert "listing      ok; rows (projection): child 4, corrupt 2" in result.output
    assert "torn-tail" in result.output


def test_summary_zstd_and_compression_option(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path, compression="zstd")
    result = _run(runner, "summary", tmp_path, "--compression", "zstd", "-q")
    assert result.exit_code == 0 and "(zstd)" in result.output and "8 listed" in result.output
    # read as the other encoding: upstream refuses a root holding the other encoding
    other = _run(runner, "summary", tmp_path, "--compression", "none", "-q")
    assert other.exit_code == 0 and "listing      FAILS" in other.output


def test_summary_of_a_failing_listing_still_prints(runner: CliRunner, tmp_path: Path) -> None:
    build_listing_failure(tmp_path)
    result = _run(runner, "summary", tmp_path)
    assert result.exit_code == 0
    assert "listing      FAILS:" in result.output and "legacy-flat-file" in result.output


def test_no_progress_bar_when_not_a_terminal(runner: CliRunner, tmp_path: Path) -> None:
    build_healthy(tmp_path)
    result = CliRunner().invoke(main, ["summary", str(tmp_path)])
    assert result.exit_code == 0 and result.stderr == ""


# --------------------------------------------------------------------------- report


def test_report_writes_a_file(runner: CliRunner, tmp_path: Path) -> None:
    root = build_mixed(tmp_path / "corpus")
    out = tmp_path / "r.html"
    result = _run(runner, "report", root, "-o", out, "--jobs", "1")
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and 'id="forest"' in page
    assert f"wrote {out}" in result.stderr
    assert list_agents_text(read_corpus(root), "root") in page


def test_report_to_stdout_with_parents_and_trace(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path)
    result = _run(
        runner,
        "report",
        tmp_path,
        "-o",
        "-",
        "--parent",
        "fork",
        "-p",
        "c-ok",
        "--semantics",
        "trace",
        "--title",
        "T<1>",
    )
    assert result.exit_code == 0
    page = result.stdout
    assert "<title>T&lt;1&gt;</title>" in page
    assert "parent <code><bdi>fork</bdi></code>" in page and "parent <code><bdi>c-ok</bdi></code>" in page
    assert "parent <code><bdi>root</bdi></code>" not in page
    assert "semantics <b>trace</b>" in page


def test_report_refuses_to_write_inside_the_root(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = runner.invoke(main, ["report", str(tmp_path), "-o", str(tmp_path / "--proj--" / "r.html")])
    assert result.exit_code == 1
    assert "inside the corpus root" in result.output and "(hint: corpora are read-only" in result.output
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_report_of_a_failing_listing_renders_with_banner(runner: CliRunner, tmp_path: Path) -> None:
    root = build_listing_failure(tmp_path / "corpus")
    out = tmp_path / "r.html"
    result = _run(runner, "report", root, "-o", out)
    assert result.exit_code == 0
    assert "warning: upstream's listing fails:" in result.stderr
    page = out.read_text(encoding="utf-8")
    assert 'id="listing-error"' in page and 'id="problems"' in page


# --------------------------------------------------------------------------- check


def test_check_fails_on_damage_and_lists_offenders(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path)
    result = runner.invoke(main, ["check", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.startswith("check: FAILED: corrupt, unsupported-version, malformed-descriptor")
    assert "c-bad" in result.output and str(tmp_path / "--proj--" / "c-bad" / "session.jsonl") in result.output
    assert "malformed-descriptor: " in result.output


def test_check_selection_and_exit_codes(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path)
    assert runner.invoke(main, ["check", str(tmp_path), "--fail-on", "none"]).exit_code == 0
    assert runner.invoke(main, ["check", str(tmp_path), "--fail-on", "corpus-error,unavailable"]).exit_code == 0
    assert runner.invoke(main, ["check", str(tmp_path), "--fail-on", "torn-tail"]).exit_code == 1
    assert runner.invoke(main, ["check", str(tmp_path), "--fail-on", "unsupported"]).exit_code == 0
    trace = runner.invoke(main, ["check", str(tmp_path), "--fail-on", "unsupported", "--semantics", "trace"])
    assert trace.exit_code == 1 and "c-v3" in trace.output
    bad = runner.invoke(main, ["check", str(tmp_path), "--fail-on", "corrupt,bogus"])
    assert bad.exit_code == 2 and "unknown check 'bogus'" in bad.output


def test_check_passes_on_a_healthy_corpus(runner: CliRunner, tmp_path: Path) -> None:
    build_healthy(tmp_path)
    result = runner.invoke(main, ["check", str(tmp_path), "--fail-on", "all"])
    assert result.exit_code == 0 and result.output.startswith("check: PASSED")


def test_check_listing_failure_is_corpus_error(runner: CliRunner, tmp_path: Path) -> None:
    build_listing_failure(tmp_path)
    result = runner.invoke(main, ["check", str(tmp_path), "--format", "json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    checks = {c["name"]: c for c in data["checks"]}
    assert checks["corpus-error"]["count"] == 1 and checks["corpus-error"]["status"] == "fail"
    assert checks["corpus-error"]["offenders"][0]["cause"] == "legacy-flat-file"
    assert checks["corrupt"]["status"] == "unevaluated"
    only = runner.invoke(main, ["check", str(tmp_path), "--fail-on", "corpus-error"])
    assert only.exit_code == 1 and "corpus-error (1)" in only.output


def test_check_formats(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path)
    markdown = runner.invoke(main, ["check", str(tmp_path), "--format", "markdown", "--limit", "1"])
    assert markdown.exit_code == 1 and markdown.output.startswith("## subagent-catalog check: **failed**")
    data = json.loads(runner.invoke(main, ["check", str(tmp_path), "-f", "json"]).output)
    assert data["failing"] == ["corrupt", "unsupported-version", "malformed-descriptor"]
    assert data["fail_on"][0] == "corpus-error"
    limited = runner.invoke(main, ["check", str(tmp_path), "--fail-on", "all", "--limit", "1"])
    assert "… and 1 more" in limited.output


# --------------------------------------------------------------------------- list


def test_list_text_is_list_agents_text(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path)
    corpus = read_corpus(tmp_path)
    for scope in ("children", "descendants"):
        result = _run(runner, "list", tmp_path, "root", "--scope", scope)
        assert result.exit_code == 0
        assert result.output == list_agents_text(corpus, "root", scope=scope) + "\n"
    assert _run(runner, "list", tmp_path, "no-such-parent").output == "(no subagents)\n"


def test_list_json_is_upstream_rows(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path)
    corpus = read_corpus(tmp_path)
    result = _run(runner, "list", tmp_path, "root", "--format", "json")
    assert json.loads(result.output) == [row.upstream() for row in children_rows(corpus, "root")]
    descendants = json.loads(_run(runner, "list", tmp_path, "root", "--scope", "descendants", "-f", "json").output)
    assert descendants[-1] == {
        "kind": "child",
        "id": "g1",
        "mode": "continuable",
        "label": "grandchild",
        "activity": "inactive",
        "hasChildren": False,
        "parentId": "fork",
        "depth": 2,
    }
    assert _run(runner, "list", tmp_path, "nobody", "-f", "json").output == "[]\n"


def test_list_csv_has_audit_columns_and_neutralises_formulas(runner: CliRunner, tmp_path: Path) -> None:
    build_formulas(tmp_path)
    result = _run(runner, "list", tmp_path, "P", "--format", "csv")
    frame = pl.read_csv(result.stdout.encode())
    expected = list_children(read_corpus(tmp_path), "P")
    assert frame.columns == expected.columns
    labels = dict(zip(frame["id"].to_list(), frame["label"].to_list(), strict=True))
    assert labels == {
        "'-dash": "'@SUM(A1)",
        "k-eq": '\'=HYPERLINK("http://x")',
        "k-plus": "'+1",
        "k-tab": "'\tx",
        "k-cr": "'\rx",
        "k-plain": "plain = fine",
    }


def test_list_csv_and_parquet_files(runner: CliRunner, tmp_path: Path) -> None:
    root = build_mixed(tmp_path / "corpus")
    csv_path, parquet_path = tmp_path / "rows.csv", tmp_path / "rows.parquet"
    assert _run(runner, "list", root, "root", "-f", "csv", "-o", csv_path, "--scope", "descendants").exit_code == 0
    assert pl.read_csv(csv_path).height == list_descendants(read_corpus(root), "root").height
    result = _run(runner, "list", root, "root", "-f", "parquet", "-o", parquet_path, "--scope", "descendants")
    assert result.exit_code == 0
    assert pl.read_parquet(parquet_path).equals(list_descendants(read_corpus(root), "root"))
    needs_output = runner.invoke(main, ["list", str(root), "root", "-f", "parquet"])
    assert needs_output.exit_code == 2 and "--format parquet needs --output FILE" in needs_output.output
    inside_root = runner.invoke(main, ["list", str(root), "root", "-f", "csv", "-o", str(root / "x.csv")])
    assert inside_root.exit_code == 1 and not (root / "x.csv").exists()


def test_list_live_overlay(runner: CliRunner, tmp_path: Path) -> None:
    root = build_mixed(tmp_path / "corpus")
    live = tmp_path / "live.json"
    live.write_text(json.dumps({"c-ok": "running", "g1": "idle"}))
    result = _run(runner, "list", root, "root", "--scope", "descendants", "--live", live)
    assert "c-ok [running] parent=root depth=1 — ok child" in result.output
    assert "g1 [idle] parent=fork depth=2 — grandchild" in result.output
    rows = json.loads(_run(runner, "list", root, "root", "-f", "json", "--live", live).output)
    assert next(r for r in rows if r["id"] == "c-ok")["activity"] == "running"
    for bad in ("[1, 2]", '{"c-ok": "sleeping"}', "not json"):
        live.write_text(bad)
        result = runner.invoke(main, ["list", str(root), "root", "--live", str(live)])
        assert result.exit_code == 2, bad
        assert "--live" in result.output
    missing = runner.invoke(main, ["list", str(root), "root", "--live", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2


def test_list_errors(runner: CliRunner, tmp_path: Path) -> None:
    failing = build_listing_failure(tmp_path / "failing")
    result = runner.invoke(main, ["list", str(failing), "P"])
    assert result.exit_code == 1
    assert "flat-file layout" in result.output and "(hint: " in result.output
    healthy = build_healthy(tmp_path / "healthy")
    trace = runner.invoke(main, ["list", str(healthy), "ghost", "--semantics", "trace"])
    assert trace.exit_code == 1 and 'session "ghost" not found (hint: ' in trace.output


def test_csv_safe_leaves_other_columns_alone() -> None:
    frame = pl.DataFrame({"n": [1, 2], "s": ["-1", "a"]})
    assert csv_safe(frame).to_dicts() == [{"n": 1, "s": "'-1"}, {"n": 2, "s": "a"}]
    assert inside("/a/b/c", "/a/b") and not inside("/a/bc", "/a/b")


# --------------------------------------------------------------------------- export


def test_export_writes_archive_and_manifest(runner: CliRunner, tmp_path: Path) -> None:
    root = build_mixed(tmp_path / "corpus")
    out = tmp_path / "archive"
    result = _run(runner, "export", root, out, "--jobs", "1", "--events", "-q")
    assert result.exit_code == 0, result.output
    assert "sessions 8, descriptors 6, problems" in result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["row_counts"]["sessions"] == 8
    assert manifest["row_counts"]["events"] == read_corpus(root, events=True).events.height
    assert manifest["compression"] == "none"
    assert {"subagent_catalog", "polars"} <= set(manifest["versions"])
    assert manifest["created_at"]
    again = _run(runner, "export", root, out, "--jobs", "1", "-q")
    assert again.exit_code == 0 and "files read 0" in again.output
    full = _run(runner, "export", root, out, "--jobs", "1", "-q", "--full")
    assert full.exit_code == 0 and "files read 8" in full.output


def test_export_errors(runner: CliRunner, tmp_path: Path) -> None:
    root = build_mixed(tmp_path / "corpus")
    inside_root = runner.invoke(main, ["export", str(root), str(root / "out")])
    assert inside_root.exit_code == 1 and "inside the corpus root" in inside_root.output
    assert not (root / "out").exists()
    missing = runner.invoke(main, ["export", str(tmp_path / "none"), str(tmp_path / "out")])
    assert missing.exit_code == 1 and "does not exist (hint: " in missing.output
    assert runner.invoke(main, ["export", str(root), str(tmp_path / "o"), "--engine", "spark"]).exit_code == 2


# --------------------------------------------------------------------------- conformance (unchanged)


def test_conformance_command_prints_conformance_lines(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path)
    corpus = read_corpus(tmp_path, compression="none")
    result = _run(runner, "conformance", tmp_path, "--compression", "none", "--all-parents")
    assert result.output == "".join(line + "\n" for line in conformance_lines(corpus, None))
    chosen = _run(
        runner, "conformance", tmp_path, "--compression", "none", "--semantics", "trace", "--parents", "root,fork"
    )
    assert chosen.output == "".join(
        line + "\n" for line in conformance_lines(corpus, ["root", "fork"], semantics="trace")
    )
