"""Time windows: parse_instant, half-open bounds, windowed frames and corpora, and --since/--until on the CLI."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from subagent_catalog import catalog, catalog_descendants, list_children, read_corpus
from subagent_catalog.analysis.window import Window, WindowError, in_window, parse_instant, window_corpus
from subagent_catalog.cli import main
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.read.paths import MISSING
from subagent_catalog.synth import writer as w

NOW = datetime(2026, 11, 8, 12, 0, tzinfo=UTC)
DAY = 86_400_000
T = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp() * 1000)


def _child(root: Path, sid: str, parent: str, payload: object, created: int, depth: int = 1) -> str:
    head = w.header(sid, created_at=created, cwd="/proj", parent=parent, subagent=True, delegation_depth=depth)
    return w.write_session(root, head, w.simple_child_events(sid, payload), "none")


def build(root: Path) -> dict[str, str]:
    """P (Nov 1) with a (Nov 2, parent of g, Nov 4) and b (Nov 3, malformed descriptor); a headerless file."""
    paths = {
        "P": w.write_session(
            root, w.header("P", created_at=T, cwd="/proj"), w.simple_child_events("P", MISSING), "none"
        )
    }
    paths["a"] = _child(root, "a", "P", w.descriptor("continuable", label="alpha"), T + DAY)
    paths["b"] = _child(root, "b", "P", {"version": 2, "mode": "bogus", "provider": "spawn"}, T + 2 * DAY)
    paths["g"] = _child(root, "g", "a", w.descriptor("continuable", label="gamma"), T + 3 * DAY, depth=2)
    paths["junk"] = w.write_file(os.path.join(root, "--proj--", "junk", "session.jsonl"), b"not json\n")
    return paths


@pytest.fixture
def root(tmp_path: Path) -> Path:
    build(tmp_path / "corpus")
    return tmp_path / "corpus"


# --------------------------------------------------------------------------- parse_instant


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-01", datetime(2026, 11, 1, tzinfo=UTC)),
        ("2026-11-01T12:00", datetime(2026, 11, 1, 12, tzinfo=UTC)),
        ("2026-11-01 12:00:30", datetime(2026, 11, 1, 12, 0, 30, tzinfo=UTC)),
        ("2026-11-01T12:00:00Z", datetime(2026, 11, 1, 12, tzinfo=UTC)),
        ("2026-11-01T12:00+02:00", datetime(2026, 11, 1, 10, tzinfo=UTC)),
        ("2026-11-01T12:00:00.250-05:00", datetime(2026, 11, 1, 17, 0, 0, 250_000, tzinfo=UTC)),
        ("7 days", NOW - timedelta(days=7)),
        ("36 hours", NOW - timedelta(hours=36)),
        ("2 weeks", NOW - timedelta(weeks=2)),
        ("90 minutes", NOW - timedelta(minutes=90)),
        ("1 day", NOW - timedelta(days=1)),
        ("7d", NOW - timedelta(days=7)),
        ("12h", NOW - timedelta(hours=12)),
        ("30s", NOW - timedelta(seconds=30)),
        ("2w", NOW - timedelta(weeks=2)),
        ("1.5 hours", NOW - timedelta(minutes=90)),
        ("3 days ago", NOW - timedelta(days=3)),
        ("  7 Days  ", NOW - timedelta(days=7)),
        ("now", NOW),
    ],
)
def test_parse_instant_accepts_iso_and_spans(text: str, expected: datetime) -> None:
    got = parse_instant(text, now=NOW)
    assert got == expected
    assert got.tzinfo is not None and got.utcoffset() == timedelta(0)


def test_parse_instant_naive_now_is_utc_and_default_now_is_current() -> None:
    assert parse_instant("1 hour", now=datetime(2026, 11, 8, 12)) == datetime(2026, 11, 8, 11, tzinfo=UTC)
    before = datetime.now(UTC)
    got = parse_instant("1 day")
    assert before - timedelta(days=1, seconds=5) <= got <= datetime.now(UTC) - timedelta(days=1)


@pytest.mark.parametrize(
    "text",
    ["", "   ", "yesterday", "next tuesday", "7 fortnights", "7 months", "-3 days", "2026-13-01", "2026-11-01Tx"],
)
def test_parse_instant_rejects_anything_else_with_a_hint(text: str) -> None:
    with pytest.raises(WindowError) as caught:
        parse_instant(text, now=NOW)
    error = caught.value
    assert isinstance(error, SubagentCatalogError) and isinstance(error, ValueError)
    assert error.hint is not None
    for form in ("2026-11-01", "7 days", "36 hours", "12h"):
        assert form in error.hint
    assert "hint:" in str(error)


def test_window_since_must_be_before_until() -> None:
    with pytest.raises(WindowError, match="empty window"):
        Window.of("2026-11-02", "2026-11-01")
    with pytest.raises(WindowError, match="empty window"):
        Window.of("2026-11-01", "2026-11-01")
    assert Window.of("2026-11-01", "2026-11-01T00:00:00.001").bounded


def test_window_accepts_datetimes_naive_as_utc_and_aware_converted() -> None:
    window = Window.of(datetime(2026, 11, 1), datetime(2026, 11, 1, 5, tzinfo=timezone(timedelta(hours=2))))
    assert window.since == datetime(2026, 11, 1, tzinfo=UTC)
    assert window.until == datetime(2026, 11, 1, 3, tzinfo=UTC)
    direct = Window(datetime(2026, 11, 2))  # the constructor normalises too: naive is UTC, not local time
    assert direct.since == datetime(2026, 11, 2, tzinfo=UTC) and direct.contains_ms(T + DAY)
    assert not direct.contains_ms(T + DAY - 1)


# --------------------------------------------------------------------------- frames


def _days(*values: datetime | None) -> pl.DataFrame:
    return pl.DataFrame({"created_at": list(values)}, schema={"created_at": pl.Datetime("ms", "UTC")})


def test_bounds_are_half_open() -> None:
    start, end = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
    frame = _days(start - timedelta(milliseconds=1), start, end - timedelta(milliseconds=1), end)
    kept = in_window(frame, since=start, until=end)["created_at"].to_list()
    assert kept == [start, end - timedelta(milliseconds=1)]
    assert in_window(frame, since=start).height == 3
    assert in_window(frame, until=end).height == 3
    assert in_window(frame, since="2026-11-01", until="2026-11-02")["created_at"].to_list() == kept


def test_null_created_at_is_outside_every_bounded_window() -> None:
    frame = _days(None, datetime(2026, 11, 1, tzinfo=UTC), None)
    assert in_window(frame, since="2000-01-01").height == 1
    assert in_window(frame, until="2100-01-01").height == 1
    assert in_window(frame).height == 3  # no bound: everything, nulls included
    assert Window.of("2000-01-01").without_time(frame) == 2
    assert Window().without_time(frame) == 0


def test_integer_millisecond_and_naive_datetime_columns() -> None:
    frame = pl.DataFrame({"created_at_ms": [T - 1, T, T + DAY, None]})
    assert in_window(frame, since="2026-11-01", until="2026-11-02", column="created_at_ms")[
        "created_at_ms"
    ].to_list() == [T]
    naive = pl.DataFrame({"created_at": [datetime(2026, 10, 31, 23), datetime(2026, 11, 1, 1)]})
    assert in_window(naive, since="2026-11-01T00:00+00:00")["created_at"].to_list() == [datetime(2026, 11, 1, 1)]


def test_missing_column_is_a_typed_error() -> None:
    with pytest.raises(WindowError, match="'created_at'"):
        in_window(pl.DataFrame({"x": [1]}), since="2026-11-01")


def test_contains_ms_matches_the_frame_filter() -> None:
    window = Window.of("2026-11-02", "2026-11-04")
    values = [T + DAY - 1, T + DAY, T + 3 * DAY - 1, T + 3 * DAY, None]
    frame = pl.DataFrame({"created_at_ms": values}, schema={"created_at_ms": pl.Int64})
    assert [v for v in values if window.contains_ms(v)] == window.frame(frame, "created_at_ms")[
        "created_at_ms"
    ].to_list()
    assert [window.contains_ms(v) for v in values] == [False, True, True, False, False]


# --------------------------------------------------------------------------- corpus and catalog


def test_window_corpus_restricts_every_frame_by_session(root: Path) -> None:
    corpus = read_corpus(root, jobs=1, cache=False)
    assert corpus.sessions.height == 5 and corpus.sessions["created_at"].null_count() == 1
    windowed = window_corpus(corpus, since="2026-11-02", until="2026-11-04")
    assert sorted(windowed.sessions["session_id"].to_list()) == ["a", "b"]
    kept = set(windowed.sessions["path"].to_list())
    assert set(windowed.descriptors["path"].to_list()) == kept
    assert windowed.descriptors.height == corpus.descriptors.filter(pl.col("path").is_in(sorted(kept))).height > 0
    assert windowed.problems.height < corpus.problems.height  # the headerless file's problem is outside
    assert not windowed.problems["path"].is_in(sorted(kept)).not_().any()
    assert set(windowed.events["session_id"].unique().to_list()) == {"a", "b"}  # read for the kept logs only
    loaded = read_corpus(root, jobs=1, cache=False)
    assert loaded.events.height > 0
    again = window_corpus(loaded, since="2026-11-02", until="2026-11-04")
    assert again.events.sort("session_id", "seq").equals(windowed.events.sort("session_id", "seq"))
    assert window_corpus(corpus) is corpus
    assert corpus.sessions.height == 5  # the whole corpus is untouched


def test_corpus_level_problems_are_kept(tmp_path: Path) -> None:
    build(tmp_path)
    w.write_file(os.path.join(tmp_path, "--proj--", "legacy.jsonl"), b"{}\n")
    corpus = read_corpus(tmp_path, jobs=1, cache=False)
    assert corpus.listing_error is not None
    windowed = window_corpus(corpus, since="2030-01-01")
    assert windowed.sessions.height == 0
    assert (
        windowed.problems.filter(pl.col("scope") == "corpus").height
        == (corpus.problems.filter(pl.col("scope") == "corpus").height)
        > 0
    )
    assert windowed.listing_error == corpus.listing_error


def test_catalog_rows_are_windowed_after_the_whole_listing(root: Path) -> None:
    corpus = read_corpus(root, jobs=1, cache=False)
    whole = catalog(corpus)
    rows = in_window(whole, since="2026-11-02", until="2026-11-04")
    assert rows["id"].to_list() == ["a", "b"]
    assert rows.filter(pl.col("id") == "a")["hasChildren"].item() is True  # g is outside, the row is upstream's
    assert rows.equals(whole.filter(pl.col("id").is_in(["a", "b"])))
    # computing the listing over the windowed corpus instead would change rows: the reason for the rule
    wrong = catalog(window_corpus(corpus, since="2026-11-02", until="2026-11-04"))
    assert wrong.filter(pl.col("id") == "a")["hasChildren"].item() is False
    down = in_window(catalog_descendants(corpus).filter(pl.col("root") == "P"), since="2026-11-03")
    assert down.select("id", "depth").rows() == [("g", 2), ("b", 1)]  # upstream's pre-order, kept
    assert in_window(list_children(corpus, "a"), until="2026-11-04").height == 0


# --------------------------------------------------------------------------- CLI


def _run(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_summary_counts_the_windowed_sessions(root: Path) -> None:
    whole = _run("summary", root, "-q")
    assert whole.exit_code == 0 and "\nwindow " not in whole.output
    assert "5 files" in whole.output
    result = _run("summary", root, "-q", "--since", "2026-11-02", "--until", "2026-11-04")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == (
        "window       [2026-11-02 00:00:00 UTC, 2026-11-04 00:00:00 UTC) by created_at: 2 of 5 files, "
        "1 without created_at left out"
    )
    assert "sessions     2 files, 2 listed, 1 project" in lines
    assert "rows (projection): child 1, corrupt 1" in result.output
    assert "header-skipped" in whole.output and "header-skipped" not in result.output


def test_check_counts_only_windowed_offenders(root: Path) -> None:
    assert _run("check", root, "-q").exit_code == 1  # b is malformed and corrupt
    late = _run("check", root, "-q", "--since", "2026-11-04")
    assert late.exit_code == 0, late.output
    assert "window: [2026-11-04 00:00:00 UTC, open) by created_at" in late.output
    early = _run("check", root, "-q", "--since", "2026-11-03", "--until", "2026-11-04", "--format", "json")
    assert early.exit_code == 1
    data = json.loads(early.output)
    assert data["window"] == "[2026-11-03 00:00:00 UTC, 2026-11-04 00:00:00 UTC)"
    counts = {c["name"]: c["count"] for c in data["checks"]}
    assert counts["malformed-descriptor"] == 1 and counts["corrupt"] == 1 and counts["skipped-header"] == 0
    assert {o["session_id"] for c in data["checks"] for o in c["offenders"]} == {"b"}
    whole = json.loads(_run("check", root, "-q", "--format", "json").output)
    assert whole["window"] is None
    assert {c["name"]: c["count"] for c in whole["checks"]}["skipped-header"] == 1


def test_check_keeps_corpus_level_offenders(tmp_path: Path) -> None:
    build(tmp_path)
    w.write_file(os.path.join(tmp_path, "--proj--", "legacy.jsonl"), b"{}\n")
    result = _run("check", tmp_path, "-q", "--since", "2030-01-01", "--format", "json")
    assert result.exit_code == 1
    counts = {c["name"]: c["count"] for c in json.loads(result.output)["checks"]}
    assert counts["corpus-error"] >= 1 and counts["read-failed"] == 0


def test_list_rows_are_windowed_and_exact(root: Path, tmp_path: Path) -> None:
    result = _run("list", root, "P", "--until", "2026-11-03", "--format", "json", "-q")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["id"] for r in rows] == ["a"] and rows[0]["hasChildren"] is True
    text = _run("list", root, "P", "--scope", "descendants", "--since", "2026-11-03", "-q")
    assert text.exit_code == 0
    assert "g [ready] parent=a depth=2" in text.output and "a [ready]" not in text.output
    empty = _run("list", root, "P", "--since", "2030-01-01", "-q")
    assert empty.output == "(no subagents)\n"
    out = tmp_path / "rows.parquet"
    parquet = _run("list", root, "P", "--scope", "descendants", "--since", "7 days", "-f", "parquet", "-o", out, "-q")
    assert parquet.exit_code == 0
    assert pl.read_parquet(out).height == 0  # the corpus is from November 2026's first days, "7 days" is later
    csv = _run("list", root, "P", "--since", "2026-11-03", "-f", "csv", "-q")
    assert [line.split(",")[1] for line in csv.output.splitlines()[1:]] == ["b"]


def test_report_shows_the_window(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = _run("report", root, "-q", "-o", out, "--since", "2026-11-03")
    assert result.exit_code == 0, result.output
    page = out.read_text("utf-8")
    assert 'id="window"' in page and "[2026-11-03 00:00:00 UTC, open)" in page
    whole = tmp_path / "w.html"
    assert _run("report", root, "-q", "-o", whole).exit_code == 0
    assert 'id="window"' not in whole.read_text("utf-8")


@pytest.mark.parametrize("command", [["summary"], ["report", "-o", "x.html"], ["check"], ["list", "P"]])
def test_bad_window_values_are_usage_errors(root: Path, command: list[str], tmp_path: Path) -> None:
    name, *rest = command
    bad = _run(name, root, *rest, "--since", "next tuesday")
    assert bad.exit_code == 2
    assert "Invalid value for '--since'" in bad.output and "7 days" in bad.output
    bad_until = _run(name, root, *rest, "--until", "7 fortnights")
    assert bad_until.exit_code == 2 and "Invalid value for '--until'" in bad_until.output
    empty = _run(name, root, *rest, "--since", "2026-11-03", "--until", "2026-11-02")
    assert empty.exit_code == 2 and "empty window" in empty.output
    assert not (tmp_path / "x.html").exists()


def test_loaded_events_of_a_duplicate_id_outside_the_window_are_left_out(tmp_path: Path) -> None:
    # the same session id in two projects, one created inside the window and one before it
    for project_cwd, created in (("/work/early", T), ("/work/late", T + 2 * DAY)):
        log = w.EventLog("dup")
        log.turn_start()
        log.user(f"created {created}")
        log.turn_end()
        w.write_session(tmp_path, w.header("dup", created_at=created, cwd=project_cwd), log.events, "none")
    since = datetime.fromtimestamp((T + DAY) / 1000, UTC)
    loaded = read_corpus(tmp_path, events=True, cache=False)
    lazily = window_corpus(read_corpus(tmp_path, cache=False), since=since).events
    windowed = window_corpus(loaded, since=since).events
    assert windowed.height == lazily.height == loaded.events.height // 2
    assert windowed.equals(lazily)
