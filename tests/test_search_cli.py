"""``subagent-catalog search``: text, json and csv output, archives, limits, errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from subagent_catalog.cli import main
from subagent_catalog.store.export import export_archive

SAMPLE = Path(__file__).parent.parent / "data" / "sample"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["search", *args])
    return result.exit_code, result.stdout, result.stderr


def test_text_output_groups_hits_by_session() -> None:
    code, out, err = _run(str(SAMPLE), "Done with task 2")
    assert code == 0
    assert out.splitlines() == [
        "auth-refactor  (--home-dev-projects-webapp--)  1 hit",
        "  seq 28  assistant/message  text: Done with task 2.",
        "run-webapp-1  (--home-dev-projects-webapp--)  1 hit",
        "  seq 37  assistant/message  text: Done with task 2.",
        "run-research-7  (--srv-research-agents--)  1 hit",
        "  seq 27  assistant/message  text: Done with task 2.",
    ]
    assert err.strip().endswith("3 hits in 3 sessions")


def test_json_lines_keep_the_exact_snippet_and_the_limit_is_said() -> None:
    code, out, err = _run(str(SAMPLE), r"result \d of turn 2", "--regex", "-n", "2", "-f", "json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["session_id"] for r in rows] == ["auth-refactor", "run-webapp-1"]
    assert rows[0]["snippet"].startswith("result 0 of turn 2\n")
    assert "2 hits (the limit) in 2 sessions" in err


def test_csv_to_a_file_and_types(tmp_path: Path) -> None:
    out = tmp_path / "hits.csv"
    code, _out, _err = _run(str(SAMPLE), "read_file", "--type", "tool/call", "-f", "csv", "-o", str(out), "-q")
    assert code == 0
    lines = out.read_text().splitlines()
    header_line = "session_id,seq,time_ms,type,turn,step,field,block,start,end,snippet,matches,project_dir,list_order"
    assert lines[0] == header_line
    assert len(lines) > 1 and all(",tool/call," in line for line in lines[1:])


def test_no_hit_is_not_an_error() -> None:
    code, out, err = _run(str(SAMPLE), "no such text anywhere")
    assert (code, out) == (0, "")
    assert "0 hits in 0 sessions" in err


def test_an_archive_directory_is_searched_through_its_events(tmp_path: Path) -> None:
    export_archive(SAMPLE, tmp_path / "arch", events=True, jobs=1)
    code, out, err = _run(str(tmp_path / "arch"), "Done with task 2")
    assert code == 0 and f"searching the archive {tmp_path / 'arch'} (its events table)" in err
    assert out == _run(str(SAMPLE), "Done with task 2")[1]
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE, root)
    export_archive(root, tmp_path / "bare", jobs=1)  # no events: the logs under its recorded root are searched
    code, out, err = _run(str(tmp_path / "bare"), "Done with task 2")
    assert (code, out) == (0, _run(str(root), "Done with task 2")[1])
    assert f"(no events table: the logs under {root})" in err
    shutil.rmtree(root)  # ... and without them, it says what is missing
    code, _out, err = _run(str(tmp_path / "bare"), "x")
    assert code == 1 and "holds no events" in err


def test_a_bad_regex_is_one_error_line() -> None:
    code, out, err = _run(str(SAMPLE), "(", "--regex")
    assert code == 1 and out == ""
    assert err.startswith("Error: invalid regular expression '('") and err.count("\n") == 1


def test_terminal_output_is_escaped(tmp_path: Path) -> None:
    from subagent_catalog.synth.writer import EventLog, header, write_session

    log = EventLog("esc")
    log.turn_start()
    log.user("evil \x1b[2J text")
    write_session(tmp_path, header("esc", created_at=1), log.events, "none")
    code, out, _err = _run(str(tmp_path), "evil", "-q")
    assert code == 0 and "\x1b" not in out and "\\x1b[2J" in out


def test_each_session_line_counts_the_hit_lines_under_it() -> None:
    code, out, _err = _run(str(SAMPLE), "turn 2", "-q")
    assert code == 0
    groups: list[tuple[str, int]] = []
    for line in out.splitlines():
        if line.startswith("  "):
            groups[-1] = (groups[-1][0], groups[-1][1] + 1)
        else:
            groups.append((line, 0))
    assert len(groups) > 1 and any(count > 1 for _, count in groups)
    for header_line, count in groups:
        assert header_line.endswith(f"  {count} hit{'s' if count != 1 else ''}"), header_line
