"""The command line through click's CliRunner: every command, every error path, exit codes."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog.catalog.conformance import conformance_lines
from subagent_catalog.catalog.listing import children_rows, list_agents_text, list_children, list_descendants
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.outputs import OutputError
from subagent_catalog.read.paths import MISSING
from subagent_catalog.store.distributed import EngineError
from subagent_catalog.store.layout import ArchiveError
from subagent_catalog.synth import writer as w
from subagent_catalog.views.text import csv_cells, csv_safe, printable, terminal_safe

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
    assert "sessions     8 files, 8 listed, 1 project\n" in result.output
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
    sessions = next(line for line in result.output.splitlines() if line.startswith("sessions "))
    assert "none listed (upstream's listing fails;" in sessions  # no count contradicts the failure
    assert "listed sessions" not in result.output


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
    assert "it is inside the corpus" in result.output and "(hint: corpora are read-only" in result.output
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
    assert _run(runner, "list", tmp_path, "c-ok").output == "(no subagents)\n"  # a session without subagents


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
    assert _run(runner, "list", tmp_path, "g1", "-f", "json").output == "[]\n"  # a session without subagents


def test_list_csv_has_audit_columns_and_neutralises_formulas(runner: CliRunner, tmp_path: Path) -> None:
    root = build_formulas(tmp_path / "corpus")
    out = tmp_path / "rows.csv"
    assert _run(runner, "list", root, "P", "--format", "csv", "-o", out).exit_code == 0
    frame = pl.read_csv(out)
    expected = list_children(read_corpus(root), "P")
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
    # on stdout the tab and the carriage return are escaped (no formula can start with a backslash)
    printed = pl.read_csv(_run(runner, "list", root, "P", "--format", "csv").stdout.encode())
    shown = dict(zip(printed["id"].to_list(), printed["label"].to_list(), strict=True))
    assert shown == {**labels, "k-tab": "\\tx", "k-cr": "\\x0dx"}


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
    assert inside_root.exit_code == 1 and "it is inside the corpus" in inside_root.output
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


# --------------------------------------------------------------------------- terminal injection (reliability item 6)

OSC_LINK = "\x1b]8;;http://evil\x07"
HOSTILE = OSC_LINK + "click\x1b]8;;\x07\x1b[2J\u202eabc\x9b31m\u2066\u200b"


def _raw_controls(text: str) -> list[str]:
    """The characters of the terminal rule in ``text`` (newline aside: it ends lines)."""
    return [char for char in text if char != "\n" and terminal_safe(char) != char]


def build_hostile(root: Path) -> Path:
    _session(root, "P", created=T0)
    _session(root, "k" + HOSTILE, parent="P", payload=w.descriptor("continuable", label="L" + HOSTILE), created=T0 + 1)
    _session(
        root,
        "bad" + HOSTILE,
        parent="P",
        payload={"version": 2, "mode": "bogus" + HOSTILE, "provider": "spawn"},
        created=T0 + 2,
    )
    return root


def test_terminal_rule_covers_every_control_and_format_character() -> None:
    kept = {"\u200c", "\u200d"}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs") and char not in kept:
            assert terminal_safe(char) != char, f"U+{code:04X} is printed raw"
    for text in ("plain", "é ü ß", "日本語", "👨\u200d👩\u200d👧", "می\u200cخواهم", "\\x1b literal"):
        assert terminal_safe(text) == text
    assert printable("a\x9b[2Jb\u202ec") == "a\\x9b[2Jb\\u202ec"


@pytest.mark.parametrize("fmt", ["text", "json", "csv"])
@pytest.mark.parametrize("scope", ["children", "descendants"])
def test_list_on_stdout_escapes_osc_csi_c1_and_bidi(runner: CliRunner, tmp_path: Path, fmt: str, scope: str) -> None:
    build_hostile(tmp_path)
    result = _run(runner, "list", tmp_path, "P", "--format", fmt, "--scope", scope, "-q")
    assert result.exit_code == 0
    assert _raw_controls(result.stdout) == [] and _raw_controls(result.stderr) == []
    if fmt == "json":  # JSON escapes: the same values
        rows = json.loads(result.stdout)
        assert {row["id"] for row in rows} == {"k" + HOSTILE, "bad" + HOSTILE}
        assert next(row for row in rows if row["kind"] == "child")["label"] == "L" + HOSTILE
    else:
        assert (
            "k\\x1b]8;;http://evil\\x07click" in result.stdout and "\\u202eabc\\x9b31m\\u2066\\u200b" in result.stdout
        )


def test_list_label_with_a_newline_cannot_fake_a_row_on_a_terminal(runner: CliRunner, tmp_path: Path) -> None:
    _session(tmp_path, "P", created=T0)
    _session(tmp_path, "k1", parent="P", payload=w.descriptor("continuable", label="x\nfake [ready] — y"))
    result = _run(runner, "list", tmp_path, "P")
    assert result.stdout == "k1 [ready] — x\\nfake [ready] — y\n"


def test_list_output_files_keep_the_exact_data(runner: CliRunner, tmp_path: Path) -> None:
    root = build_hostile(tmp_path / "corpus")
    corpus = read_corpus(root)
    for scope in ("children", "descendants"):
        text, rows, table = tmp_path / "l.txt", tmp_path / "l.json", tmp_path / "l.csv"
        assert _run(runner, "list", root, "P", "--scope", scope, "-o", text).exit_code == 0
        assert text.read_bytes() == (list_agents_text(corpus, "P", scope=scope) + "\n").encode()
        assert _run(runner, "list", root, "P", "--scope", scope, "-f", "json", "-o", rows).exit_code == 0
        assert OSC_LINK.encode() not in rows.read_bytes()  # JSON escapes ESC itself; the values are exact
        assert "\u202e".encode() in rows.read_bytes() and "\x9b".encode() in rows.read_bytes()
        assert _run(runner, "list", root, "P", "--scope", scope, "-f", "csv", "-o", table).exit_code == 0
        expected = csv_safe(csv_cells((list_children if scope == "children" else list_descendants)(corpus, "P")))
        assert table.read_bytes() == expected.write_csv().encode()
        assert OSC_LINK in table.read_text(encoding="utf-8")


def test_summary_check_and_conformance_escape_corpus_values(runner: CliRunner, tmp_path: Path) -> None:
    build_hostile(tmp_path)
    for args in (
        ["summary", tmp_path],
        ["check", tmp_path, "--fail-on", "all", "--limit", "0"],
        ["check", tmp_path, "-f", "markdown", "--limit", "0"],
        ["check", tmp_path, "-f", "json"],
        ["conformance", tmp_path, "--all-parents"],
    ):
        result = runner.invoke(main, [str(a) for a in args])
        assert result.exit_code in (0, 1), result.output
        assert _raw_controls(result.stdout) == [], args
    check = runner.invoke(main, ["check", str(tmp_path), "-f", "json"])
    ids = {o["session_id"] for c in json.loads(check.stdout)["checks"] for o in c["offenders"]}
    assert "bad" + HOSTILE in ids  # JSON escapes keep the exact value
    printed = runner.invoke(main, ["conformance", str(tmp_path), "--all-parents"]).stdout
    exact = conformance_lines(read_corpus(tmp_path), None)
    assert [json.loads(line) for line in printed.splitlines()] == [json.loads(line) for line in exact]


def test_error_and_warning_lines_escape_corpus_values(runner: CliRunner, tmp_path: Path) -> None:
    root = build_healthy(tmp_path / "corpus")
    name = "legacy" + HOSTILE.replace("/", "_") + ".jsonl"  # a flat file fails the listing, and is named
    w.write_file(os.path.join(root, "--proj--", name), b"{}\n")
    listing = runner.invoke(main, ["list", str(root), "P"])
    assert listing.exit_code == 1 and "legacy\\x1b]8;;http:__evil\\x07" in listing.stderr
    assert _raw_controls(listing.stderr) == [] and len(listing.stderr.splitlines()) == 1
    report = runner.invoke(main, ["report", str(root), "-q", "-o", str(tmp_path / "r.html")])
    assert report.exit_code == 0 and "warning: upstream's listing fails:" in report.stderr
    assert _raw_controls(report.stderr) == []
    healthy = build_healthy(tmp_path / "healthy")
    trace = runner.invoke(main, ["list", str(healthy), "ghost" + HOSTILE, "--semantics", "trace"])
    assert trace.exit_code == 1 and 'session "ghost\\x1b]8;;' in trace.stderr and _raw_controls(trace.stderr) == []
    usage = runner.invoke(main, ["list", str(root), "P", "--live", str(tmp_path / f"no{HOSTILE}.json")])
    assert usage.exit_code == 2 and _raw_controls(usage.stderr) == []


# --------------------------------------------------------------------------- one line, never a traceback (item 7)


def _fail_if_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("the corpus was read before the output path was checked")

    _patch_reads(monkeypatch, boom)


def _patch_reads(monkeypatch: pytest.MonkeyPatch, replacement: object) -> None:
    """Every CLI command reads a corpus through ``replacement`` (``open_source`` reads through ``read_corpus``)."""
    monkeypatch.setattr("subagent_catalog.corpus.read_corpus", replacement)


def _one_error_line(result: object) -> str:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.exit_code == 1, stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr and len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith("Error: ") and stderr.rstrip().endswith(")") and "(hint: " in stderr
    return stderr


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{root}", "-o", "/nonexistent/x.html"],
        ["list", "{root}", "P", "-o", "/nonexistent/x.csv", "-f", "csv"],
        ["list", "{root}", "P", "-o", "/nonexistent/x.parquet", "-f", "parquet"],
        ["report", "{root}", "-o", "{root}/../alias/x.html"],
        ["list", "{root}", "P", "-o", "{root}/../alias/x.csv"],
        ["list", "{root}", "P", "-o", "{root}/../alias/--proj--/P/session.jsonl"],
    ],
)
def test_a_bad_output_path_fails_in_one_line_before_the_corpus_is_read(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    root = build_healthy(tmp_path / "corpus")
    (tmp_path / "alias").symlink_to(root, target_is_directory=True)  # the corpus under another name
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    _fail_if_read(monkeypatch)
    _one_error_line(runner.invoke(main, [a.format(root=root) for a in args]))
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_report_refuses_a_hard_link_of_a_corpus_log(runner: CliRunner, tmp_path: Path) -> None:
    root = build_healthy(tmp_path / "corpus")
    log = root / "--proj--" / "P" / "session.jsonl"
    before = log.read_bytes()
    os.link(log, tmp_path / "x.html")
    for args in (["report", root, "-o", tmp_path / "x.html"], ["list", root, "P", "-o", tmp_path / "x.html"]):
        line = _one_error_line(runner.invoke(main, [str(a) for a in args]))
        assert "hard links" in line
    assert log.read_bytes() == before and log.stat().st_nlink == 2


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{root}", "-q", "-o", "/dev/full"],
        ["list", "{root}", "P", "-f", "csv", "-o", "/dev/full"],
        ["list", "{root}", "P", "-f", "parquet", "-o", "/dev/full"],
    ],
)
def test_a_full_disk_is_one_line(runner: CliRunner, tmp_path: Path, args: list[str]) -> None:
    root = build_healthy(tmp_path)
    line = _one_error_line(runner.invoke(main, [a.format(root=root) for a in args]))
    assert "cannot write '/dev/full': No space left on device (hint: " in line


def test_dev_null_is_written_in_place(runner: CliRunner, tmp_path: Path) -> None:
    root = build_healthy(tmp_path)
    assert _run(runner, "list", root, "P", "-f", "parquet", "-o", "/dev/null").exit_code == 0
    assert _run(runner, "report", root, "-q", "-o", "/dev/null").exit_code == 0


def _cli(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), **kwargs.pop("env", {})}  # type: ignore[dict-item]
    return subprocess.run(
        [sys.executable, "-m", "subagent_catalog", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_closed_pipe_on_stdout_ends_quietly_with_status_141(tmp_path: Path) -> None:
    root = build_mixed(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    for args in (["list", root, "root", "--scope", "descendants", "-f", "csv"], ["check", root], ["summary", root]):
        child = subprocess.Popen(
            [sys.executable, "-m", "subagent_catalog", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()  # as `| head -0` does, before the command writes
        stderr = child.stderr.read().decode()
        assert child.wait(timeout=60) == 141, stderr
        assert stderr == "", args


def test_a_closed_stdout_is_one_line(tmp_path: Path) -> None:
    root = build_healthy(tmp_path)
    for args in (["list", root, "P"], ["summary", root]):
        done = subprocess.run(
            ["sh", "-c", '"$0" -m subagent_catalog "$@" >&-', sys.executable, *map(str, args)],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )
        assert done.returncode == 1 and done.stderr.startswith("Error: cannot write to stdout: "), done.stderr
        assert len(done.stderr.splitlines()) == 1


def test_an_ascii_stdout_gets_backslash_escapes_not_unicode_errors(tmp_path: Path) -> None:
    _session(tmp_path, "P", created=T0)
    _session(tmp_path, "kö", parent="P", payload=w.descriptor("continuable", label="naïve 🚀"), created=T0 + 1)
    env = {"PYTHONIOENCODING": "ascii"}
    listed = _cli("list", tmp_path, "P", env=env)
    assert listed.returncode == 0 and listed.stdout == "k\\xf6 [ready] \\u2014 na\\xefve \\U0001f680\n", listed.stderr
    for args in (["list", tmp_path, "P", "-f", "json"], ["list", tmp_path, "P", "-f", "csv"], ["summary", tmp_path]):
        done = _cli(*args, env=env)
        assert done.returncode == 0 and done.stderr == "", done.stderr
    missing = _cli("list", tmp_path, "gh\u00f6st", "--semantics", "trace", env=env)
    assert missing.returncode == 1 and 'session "gh\\xf6st" not found' in missing.stderr
    assert "Traceback" not in missing.stderr


def test_report_refuses_to_print_html_to_a_terminal(tmp_path: Path) -> None:
    import pty

    root = build_healthy(tmp_path)
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "subagent_catalog", "report", str(root), "-o", "-"],
            stdout=follower,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,  # a page written to an unread terminal blocks once its buffer is full
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 2 and "refusing to print the HTML page to a terminal" in done.stderr


def test_live_json_nested_too_deeply_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    root = build_healthy(tmp_path / "corpus")
    live = tmp_path / "live.json"
    live.write_text("[" * 100_000 + "]" * 100_000)
    result = runner.invoke(main, ["list", str(root), "P", "--live", str(live)])
    assert result.exit_code == 2 and "nested too deeply" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "error",
    [
        OutputError("cannot write '/proc/x/manifest.json': Permission denied", hint="choose a path you may write to"),
        ArchiveError("manifest.json is truncated", hint="export again with --full"),
        EngineError("no Dask worker has been alive for 60 s", hint="start workers"),
        OSError(errno.ENOSPC, "No space left on device", "/full/archive/part-0.parquet"),
        PermissionError(errno.EACCES, "Permission denied"),
    ],
)
def test_export_failures_are_one_line(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    root = build_healthy(tmp_path / "corpus")

    def fail(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr("subagent_catalog.store.export.export_archive", fail)
    _one_error_line(runner.invoke(main, ["export", str(root), str(tmp_path / "out"), "-q"]))


def test_export_into_an_archive_with_a_broken_manifest_is_one_line(runner: CliRunner, tmp_path: Path) -> None:
    root = build_healthy(tmp_path / "corpus")
    out = tmp_path / "out"
    assert _run(runner, "export", root, out, "-q", "--jobs", "1").exit_code == 0
    manifest = (out / "manifest.json").read_text()
    for broken in (manifest[: len(manifest) // 2], '{"row_counts": 7, "tables": []}', "[]"):
        (out / "manifest.json").write_text(broken)
        result = runner.invoke(main, ["export", str(root), str(out), "-q", "--jobs", "1"])
        assert "Traceback" not in result.stderr
        if result.exit_code:
            _one_error_line(result)


def test_an_unexpected_error_is_one_line_unless_the_traceback_is_asked_for(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_healthy(tmp_path)

    def bug(*args: object, **kwargs: object) -> str:
        raise RecursionError("maximum recursion depth exceeded \x1b[2J")

    monkeypatch.setattr("subagent_catalog.views.summary_text.summary_text", bug)
    line = _one_error_line(runner.invoke(main, ["summary", str(tmp_path)]))
    assert "internal error: RecursionError: maximum recursion depth exceeded \\x1b[2J (hint: " in line
    monkeypatch.setenv("SUBAGENT_CATALOG_TRACEBACK", "1")
    with pytest.raises(RecursionError):
        runner.invoke(main, ["summary", str(tmp_path)], catch_exceptions=False)


# --------------------------------------------------------------------------- gate: empty corpus, thresholds, baseline


def test_check_of_an_empty_root_fails_unless_allowed(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(main, ["check", str(tmp_path), "-q"])
    assert result.exit_code == 1
    assert result.output.startswith("check: FAILED: empty corpus (8 checks selected")
    assert f"empty: no session files under {str(tmp_path)!r} (hint: is it the right directory" in result.output
    assert runner.invoke(main, ["check", str(tmp_path), "--fail-on", "none"]).exit_code == 1
    data = json.loads(runner.invoke(main, ["check", str(tmp_path), "-f", "json"]).output)
    assert data["failed"] is True and data["empty"]["message"].startswith("no session files")
    markdown = runner.invoke(main, ["check", str(tmp_path), "-f", "markdown"])
    assert markdown.exit_code == 1 and "**Empty corpus**" in markdown.output
    allowed = runner.invoke(main, ["check", str(tmp_path), "--allow-empty"])
    assert allowed.exit_code == 0 and "(allowed by --allow-empty)" in allowed.output


def test_check_wrong_compression_is_an_empty_corpus_with_a_hint(runner: CliRunner, tmp_path: Path) -> None:
    build_healthy(tmp_path)
    result = runner.invoke(main, ["check", str(tmp_path), "--compression", "zstd"])
    assert result.exit_code == 1 and "FAILED: empty corpus, corpus-error" in result.output
    assert "other encoding" in result.output


def test_check_thresholds(runner: CliRunner, tmp_path: Path) -> None:
    build_mixed(tmp_path)  # 2 corrupt of 8 session files
    base = ["check", str(tmp_path), "--fail-on", "corpus-error"]
    assert runner.invoke(main, [*base, "--max", "corrupt=2"]).exit_code == 0
    assert runner.invoke(main, [*base, "--max", "corrupt=1"]).exit_code == 1
    assert runner.invoke(main, [*base, "--max-rate", "corrupt=25%"]).exit_code == 0
    assert runner.invoke(main, [*base, "--max-rate", "corrupt=0.2"]).exit_code == 1
    assert runner.invoke(main, ["check", str(tmp_path), "--max", "corrupt=5"]).exit_code == 1  # others still fail
    for bad, message in (
        (["--max", "corrupt"], "expected CHECK=N"),
        (["--max", "nope=1"], "unknown check 'nope' in --max (hint: choose from corpus-error"),
        (["--max", "corrupt=-2"], "whole number"),
        (["--max-rate", "corrupt=2"], "fraction from 0 to 1"),
        (["--max", "corrupt=1", "--max", "corrupt=2"], "corrupt is given twice"),
    ):
        result = runner.invoke(main, [*base, *bad])
        assert result.exit_code == 2 and message in result.output, (bad, result.output)


def test_check_baseline(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = build_mixed(tmp_path / "corpus")
    previous = tmp_path / "previous.json"
    first = runner.invoke(main, ["check", str(root), "-f", "json"])
    assert first.exit_code == 1
    previous.write_text(first.stdout)
    again = runner.invoke(main, ["check", str(root), "--baseline", str(previous)])
    assert again.exit_code == 0, again.output
    assert "offenders already in it (not counted), 0 new" in again.output
    _session(root, "c-new", parent="root", payload={"version": 2, "mode": "x", "provider": "spawn"}, created=T0 + 9)
    later = runner.invoke(main, ["check", str(root), "--baseline", str(previous)])
    assert later.exit_code == 1 and later.output.startswith("check: FAILED: corrupt, malformed-descriptor")
    assert "c-new" in later.output and "(in baseline)" in later.output
    # an unusable baseline fails in one line (exit 2) before the corpus is read
    _patch_reads(monkeypatch, lambda *a, **k: pytest.fail("corpus read"))
    (tmp_path / "bad.json").write_text("{")
    for name in ("missing.json", "bad.json"):
        result = runner.invoke(main, ["check", str(root), "--baseline", str(tmp_path / name)])
        assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, result.output
        assert result.stderr.startswith("Error: ") and "(hint: " in result.stderr
    trace = runner.invoke(main, ["check", str(root), "--baseline", str(previous), "--semantics", "trace"])
    assert trace.exit_code == 2 and "written with semantics projection, this run uses trace" in trace.stderr


def test_list_and_report_refuse_an_id_naming_no_session(runner: CliRunner, tmp_path: Path) -> None:
    root = build_mixed(tmp_path / "corpus")
    _session(root, "orphan", parent="gone-away", payload=w.descriptor("one-shot"), created=T0 + 9)
    for args in (["list", root, "roo"], ["list", root, "fork-x", "--scope", "descendants", "-f", "json"]):
        result = runner.invoke(main, [str(a) for a in args])
        assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1, result.output
        assert result.stderr.startswith(f"Error: no session {args[2]!r} in the corpus (hint: ")
        assert "did you mean " in result.stderr
    assert (
        "prefix needs at least 4 characters: did you mean root?"
        in runner.invoke(main, ["list", str(root), "roo"]).stderr
    )
    far = runner.invoke(main, ["list", str(root), "zzzzzzzz"])
    assert far.exit_code == 1 and "none of the corpus's" in far.stderr
    assert _run(runner, "list", root, "c-one").output == "(no subagents)\n"  # a session without subagents
    known_parent = _run(runner, "list", root, "gone-away")  # named only by a header's parentSession
    assert known_parent.exit_code == 0 and "Error" not in known_parent.output
    report = runner.invoke(
        main, ["report", str(root), "-q", "-p", "root", "-p", "fork1", "-o", str(tmp_path / "r.html")]
    )
    assert report.exit_code == 1 and "no session 'fork1' in the corpus (hint: did you mean fork?)" in report.stderr
    assert not (tmp_path / "r.html").exists()
    hostile = runner.invoke(main, ["list", str(root), "x\x1b[2J"])
    assert hostile.exit_code == 1 and "\x1b" not in hostile.stderr and "\\x1b[2J" in hostile.stderr
