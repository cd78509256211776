"""Times no date names (issue 42, item 3): a log dated past year 9999 or before year 1 breaks no command or view.

A log may hold any safe integer as a ``createdAt`` (non-negative) or an event ``time``: year 10000,
2^53 - 1 ms (year 287,396), -(2^53 - 1) ms (year -283,457). The frames keep each exactly (``*_ms``);
the ``*_at`` datetime columns are null outside years 1 to 9999 (a ``datetime`` holds no other, and
Polars panics printing a time past about year 262,000); every shown time reads with an expanded
year; per-day bins put such a time in an ``out of range`` bin; a ``time-out-of-range`` problem row
names the file. Before the fix ``summary``, ``report``, ``list``, ``show``, ``check``, ``otel`` and
``sql`` failed with an internal error or a Rust panic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from subagent_catalog import catalog, in_window, list_children, read_corpus, run_summary, sql
from subagent_catalog.analysis.summary import corpus_summary
from subagent_catalog.analysis.timeline import tree_timeline
from subagent_catalog.cli import main as cli_main
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.display import corpus_html, table_html
from subagent_catalog.frames.units import clock, iso_time
from subagent_catalog.store.archive import open_archive
from subagent_catalog.store.export import export_archive
from subagent_catalog.synth.writer import EventLog, descriptor, header, write_session
from subagent_catalog.views.report import render_report
from subagent_catalog.views.timeline_view import timeline_html

SAFE_MAX = 2**53 - 1
T0 = 1_750_000_000_000  # 2025-06-15T15:06:40Z
YEAR_1 = int(datetime(1, 1, 1, tzinfo=UTC).timestamp() * 1000)
YEAR_10000 = int(datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC).timestamp() * 1000) + 1

CASES: dict[str, tuple[int, int]] = {
    # name: (the child's createdAt, the time of its first event; the others follow 1 ms apart)
    "year-10000": (YEAR_10000, YEAR_10000 + 100),
    "2^53-1": (SAFE_MAX, SAFE_MAX - 20),
    "-(2^53-1)": (T0 + 1, -SAFE_MAX),
    "year-0": (T0 + 1, YEAR_1 - 1000),
}


def civil(ms: int) -> str:
    """A UTC time as ``±YYYYYY-MM-DD HH:MM:SS.mmm``, by Howard Hinnant's days-to-civil arithmetic.

    Independent of the code under test (which shifts by 400-year cycles into ``datetime``'s range).
    """
    days, rest = divmod(ms, 86_400_000)
    hour, rest = divmod(rest, 3_600_000)
    minute, rest = divmod(rest, 60_000)
    second, milli = divmod(rest, 1000)
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    shown = f"{year:04d}" if 1 <= year <= 9999 else f"{year:+07d}"
    return f"{shown}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}.{milli:03d}"


def outside(ms: int) -> bool:
    return not YEAR_1 <= ms < YEAR_10000


def _child_events(session_id: str, first: int) -> list[dict[str, Any]]:
    log = EventLog(session_id, time=first - 1)  # each event 1 ms after the one before
    log.turn_start()
    log.user("far work")
    log.descriptor(descriptor("one-shot", label="far"))
    log.assistant("done")
    log.tool_round("call-1", "output")
    log.turn_end()
    return log.events


def _run_events() -> list[dict[str, Any]]:
    log = EventLog("run", time=T0)
    log.turn_start()
    log.user("start")
    log.assistant("hello", chunks=4)
    log.turn_end()
    return log.events


RUN_LAST = _run_events()[-1]["time"]
"""The time of the healthy run's last event."""


def build(root: Path, created: int, first: int) -> Path:
    """A healthy run (``run``, created at T0) and its subagent ``far`` created at ``created``, events from ``first``."""
    write_session(root, header("run", created_at=T0, cwd="/w"), _run_events(), "none")
    head = header("far", created_at=created, cwd="/w", parent="run", subagent=True, delegation_depth=1)
    write_session(root, head, _child_events("far", first), "none")
    return root


@pytest.fixture(params=list(CASES), ids=list(CASES))
def hostile(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    created, first = CASES[request.param]
    return request.param, build(tmp_path / "root", created, first)


def _cli(*args: str) -> str:
    done = CliRunner().invoke(cli_main, list(args))
    assert done.exit_code == 0, done.output
    return done.output


def _far(corpus: Corpus) -> dict[str, Any]:
    return corpus.sessions.filter(pl.col("session_id") == "far").row(0, named=True)


# --------------------------------------------------------------------------- the helper


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_every_time_reads_as_its_proleptic_gregorian_utc_date_and_never_raises(ms: int) -> None:
    assert clock(ms, precision="millisecond") == civil(ms) + " UTC"
    assert iso_time(ms) == civil(ms).replace(" ", "T") + "Z"


@pytest.mark.parametrize(
    ("ms", "shown"),
    [
        (YEAR_10000 - 1, "9999-12-31 23:59:59.999 UTC"),
        (YEAR_10000, "+010000-01-01 00:00:00.000 UTC"),
        (YEAR_1, "0001-01-01 00:00:00.000 UTC"),
        (YEAR_1 - 1, "+000000-12-31 23:59:59.999 UTC"),  # year 0, never '0000': it reads as out of range
        (SAFE_MAX, "+287396-10-12 08:59:00.991 UTC"),
        (-SAFE_MAX, "-283457-03-21 15:00:59.009 UTC"),
    ],
)
def test_the_calendar_boundaries_read_with_an_expanded_year_outside_it(ms: int, shown: str) -> None:
    assert clock(ms, precision="millisecond") == shown


# --------------------------------------------------------------------------- the frames


def test_times_outside_the_calendar_stay_exact_and_their_datetime_columns_are_null(
    hostile: tuple[str, Path],
) -> None:
    name, root = hostile
    created, first = CASES[name]
    corpus = read_corpus(root, cache=False)
    far = _far(corpus)
    last = first + len(_child_events("far", first)) - 1
    assert (far["created_at_ms"], far["first_event_ms"], far["last_event_ms"]) == (created, first, last)
    assert far["run_first_ms"] == first and far["run_wall_ms"] == last - first
    assert (far["created_at"] is None) == outside(created)
    assert (far["first_event_at"] is None) == outside(first) and (far["last_event_at"] is None) == outside(last)
    assert far["verdict"] == "ok" and far["outcome"] == "completed"
    events = corpus.events.filter(pl.col("session_id") == "far")["time_ms"].to_list()
    assert events == list(range(first, last + 1))  # every event time exact
    # Every datetime cell reaches Python and the frames print (Polars panicked on 2^53 - 1)
    assert len(corpus.sessions.rows()) == 2 and "far" in str(corpus.sessions)
    problems = corpus.problems.filter(pl.col("kind") == "time-out-of-range")
    assert problems["session_id"].to_list() == ["far"] * len(problems)
    assert set(problems["severity"]) == {"warning"} and not problems["fails_listing"].any()
    named = " ".join(problems["message"].to_list())
    for ms in (created, first, last):
        assert (str(ms) in named) == outside(ms)
        if outside(ms):
            assert civil(ms) in named  # shown with its expanded year too


def test_the_listing_orders_siblings_on_the_raw_created_at_numbers(tmp_path: Path) -> None:
    """Upstream sorts siblings on the numbers: a createdAt no date names keeps its place, exactly."""
    created = {"at-max": SAFE_MAX, "at-10000": YEAR_10000, "at-9999": YEAR_10000 - 1, "at-t0": T0 + 5}
    build(tmp_path, T0 + 1, T0 + 1)  # "run" and one more child ("far")
    for session_id, ms in created.items():
        head = header(session_id, created_at=ms, cwd="/w", parent="run", subagent=True, delegation_depth=1)
        write_session(tmp_path, head, _child_events(session_id, T0 + 10), "none")
    corpus = read_corpus(tmp_path, cache=False)
    created["far"] = T0 + 1
    expected = sorted(created, key=lambda sid: created[sid])
    assert list_children(corpus, "run")["id"].to_list() == expected
    rows = catalog(corpus).filter(pl.col("parent") == "run")
    assert rows["created_at_ms"].to_list() == sorted(created.values())
    assert rows["created_at"].is_null().to_list() == [outside(created[sid]) for sid in expected]


def test_a_facts_cache_round_trip_gives_the_same_frames(hostile: tuple[str, Path], tmp_path: Path) -> None:
    _, root = hostile
    fresh = read_corpus(root, cache=False)
    cache = tmp_path / "cache"
    for _ in range(2):  # the first read fills the cache, the second is served from it
        cached = read_corpus(root, cache=cache)
        assert cached.sessions.drop("mtime").equals(fresh.sessions.drop("mtime"))
        assert cached.problems.equals(fresh.problems)


def test_an_archive_keeps_the_times_and_reads_back_the_same(hostile: tuple[str, Path], tmp_path: Path) -> None:
    _, root = hostile
    corpus = read_corpus(root, cache=False)
    export_archive(root, tmp_path / "archive", jobs=1, events=True)
    archive = open_archive(tmp_path / "archive")
    assert archive.to_corpus().sessions.equals(corpus.sessions)
    assert archive.to_corpus().problems.select("kind", "message").equals(corpus.problems.select("kind", "message"))
    for command in (["summary"], ["runs", "-q"], ["report", "-q", "-o", str(tmp_path / "r.html")]):
        _cli(command[0], str(tmp_path / "archive"), *command[1:])


def test_an_archive_written_before_the_rule_reads_its_datetimes_inside_the_calendar(tmp_path: Path) -> None:
    """A sessions part holding a datetime past year 9999 (as exports before the fix wrote them) reads it null."""
    from subagent_catalog.store.layout import SESSION_TIMES, table_view

    times = pl.Series([T0, SAFE_MAX, YEAR_10000, YEAR_1 - 1], dtype=pl.Int64)
    part = tmp_path / "part.parquet"
    pl.DataFrame({name: times.cast(pl.Datetime("ms", "UTC")) for name in SESSION_TIMES}).write_parquet(part)
    read = table_view("sessions", pl.scan_parquet(part), 7).collect()
    for name in SESSION_TIMES:
        assert read[name].to_list() == [datetime.fromtimestamp(T0 / 1000, UTC), None, None, None]


# --------------------------------------------------------------------------- the commands


def test_summary_shows_the_exact_span_in_text_json_and_markdown(hostile: tuple[str, Path]) -> None:
    name, root = hostile
    created, first = CASES[name]
    last = first + len(_child_events("far", first)) - 1
    text = _cli("summary", str(root), "-q")  # failed: OverflowError / year 10000 is out of range / a panic
    earliest, latest = min(T0, created), max(created, last, RUN_LAST)
    assert f"time span    {civil(earliest)[:-4]} UTC → {civil(latest)[:-4]} UTC" in text
    assert "time-out-of-range" in text
    facts = json.loads(_cli("summary", str(root), "-q", "-f", "json"))["corpus"]
    assert (facts["first_created_ms"], facts["last_activity_ms"]) == (earliest, latest)
    assert facts["last_activity"] == civil(latest).replace(" ", "T") + "Z"
    assert "# Corpus" in _cli("summary", str(root), "-q", "-f", "md")
    assert corpus_summary(read_corpus(root, cache=False))["last_activity_ms"] == latest


def test_the_report_renders_and_bins_a_day_no_date_names(hostile: tuple[str, Path], tmp_path: Path) -> None:
    name, root = hostile
    created, _ = CASES[name]
    out = tmp_path / "report.html"
    _cli("report", str(root), "-q", "-o", str(out))  # failed in catalog/model.py and the per-day rows
    page = out.read_text()
    assert ("(out of range: before year 1 or after 9999)" in page) == outside(created)
    assert ("1 row with a createdAt outside years 1 to 9999" in page) == outside(created)
    assert "time-out-of-range" in page
    assert render_report(read_corpus(root, cache=False)).count("<html") == 1


def test_run_summary_puts_a_time_no_date_names_in_a_labelled_day_bin(hostile: tuple[str, Path]) -> None:
    name, root = hostile
    created, _ = CASES[name]
    corpus = read_corpus(root, cache=False)
    by_day = run_summary(corpus).by_day
    assert by_day["sessions"].sum() == corpus.sessions.height  # no session dropped
    bins = dict(zip(by_day["bin"], by_day["sessions"], strict=True))
    day = datetime.fromtimestamp(T0 / 1000, UTC).date()
    if outside(created):
        assert bins == {day.isoformat(): 1, "out of range": 1}
        assert by_day.filter(pl.col("bin") == "out of range")["day"].to_list() == [None]
    else:
        assert bins == {day.isoformat(): 2}
    assert by_day["day"].drop_nulls().to_list() == [day]
    for table in ("outcomes", "models", "tools", "trees", "sessions"):
        for fmt in ("text", "json", "csv"):
            _cli("runs", str(root), "-q", "-t", table, "-f", fmt)


def test_sql_reads_the_exact_times_and_null_datetimes(hostile: tuple[str, Path]) -> None:
    name, root = hostile
    created, first = CASES[name]
    query = "select session_id, created_at_ms, created_at is null as undated, first_event_ms from sessions"
    rows = sql(read_corpus(root, cache=False), query + " order by session_id").rows()
    assert rows[0] == ("far", created, outside(created), first)
    output = _cli("sql", str(root), "select * from sessions order by session_id", "-q", "-f", "csv")
    assert str(created) in output  # the whole sessions table: a panic before the fix
    _cli("sql", str(root), "select * from events", "-q")


def test_show_writes_the_transcript_with_the_expanded_year(hostile: tuple[str, Path], tmp_path: Path) -> None:
    name, root = hostile
    created, first = CASES[name]
    markdown = _cli("show", str(root), "far", "-q", "-f", "md")  # failed: OverflowError, year 0, a panic
    assert f"- created: `{civil(created)} UTC`" in markdown
    page = _cli("show", str(root), "far", "-q", "-f", "html")
    assert civil(first) + " UTC" in page  # the first event's time, on its row's title
    _cli("show", str(root), "run", "-q", "--tree", "-o", str(tmp_path / "tree"))
    assert civil(first) + " UTC" in (tmp_path / "tree" / "far.html").read_text()  # the child's page


@pytest.mark.parametrize(
    "command",
    [
        ["list", "{root}", "run"],
        ["list", "{root}", "run", "-f", "csv"],
        ["list", "{root}", "run", "--scope", "descendants", "-f", "json"],
        ["check", "{root}"],
        ["search", "{root}", "far"],
        ["search", "{root}", "far", "-f", "json"],
        ["otel", "{root}", "-q", "-o", "{tmp}/spans.jsonl"],
        ["export", "{root}", "{tmp}/archive", "-q"],
    ],
    ids=["list", "list-csv", "list-json", "check", "search", "search-json", "otel", "export"],
)
def test_every_other_command_reads_such_a_corpus(hostile: tuple[str, Path], tmp_path: Path, command: list[str]) -> None:
    _, root = hostile
    _cli(*(part.format(root=root, tmp=tmp_path) for part in command))


def test_otel_clamps_a_time_it_cannot_carry_and_says_so(tmp_path: Path) -> None:
    root = build(tmp_path / "root", SAFE_MAX, SAFE_MAX - 20)
    _cli("otel", str(root), "-q", "-o", str(tmp_path / "spans.jsonl"))
    spans = [
        span
        for line in (tmp_path / "spans.jsonl").read_text().splitlines()
        for resource in json.loads(line)["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]
    clamped = [s for s in spans if any(a["key"] == "dsh.time_clamped" for a in s["attributes"])]
    assert clamped and all(int(s["startTimeUnixNano"]) <= 2**64 - 1 for s in spans)


# --------------------------------------------------------------------------- windows and timelines


def test_a_window_compares_the_exact_created_at(hostile: tuple[str, Path]) -> None:
    """A createdAt past year 9999 is after every bound (its datetime is null, its milliseconds are not)."""
    name, root = hostile
    created, _ = CASES[name]
    corpus = read_corpus(root, cache=False)
    since = in_window(corpus.sessions, since="2025-06-15T15:06:40.001Z")["session_id"].to_list()
    assert since == ["far"]  # created after T0 in every case
    until = in_window(corpus.sessions, until="2030-01-01")["session_id"].to_list()
    assert until == (["run"] if outside(created) else ["far", "run"])
    assert in_window(catalog(corpus), since="2026-01-01")["id"].to_list() == (["far"] if outside(created) else [])
    text = _cli("summary", str(root), "-q", "--since", "2020-01-01")
    assert "2 of 2 files" in text and "without created_at" not in text
    _cli("report", str(root), "-q", "--until", "2030-01-01", "-o", str(root.parent / "w.html"))


def test_the_timeline_of_such_a_tree_draws(hostile: tuple[str, Path]) -> None:
    name, root = hostile
    _, first = CASES[name]
    corpus = read_corpus(root, cache=False)
    rows = tree_timeline(corpus, "run")
    assert sorted(rows["session_id"].to_list()) == ["far", "run"]
    assert rows.filter(pl.col("session_id") == "far")["start_ms"].to_list() == [first]
    assert "<svg" in timeline_html(rows)


# --------------------------------------------------------------------------- the notebook


def test_the_notebook_display_of_such_a_corpus(hostile: tuple[str, Path]) -> None:
    _, root = hostile
    corpus = read_corpus(root, cache=False)
    assert corpus._repr_html_() == corpus_html(corpus)  # a panic or an OverflowError before the fix
    assert "far" in table_html(corpus.sessions) and "far" in repr(corpus.sessions)


def test_the_browser_shows_such_a_session_and_the_dashboard_bins_its_day(hostile: tuple[str, Path]) -> None:
    from subagent_catalog.views.widgets import CatalogBrowser, DiagnosticsDashboard

    name, root = hostile
    created, first = CASES[name]
    corpus = read_corpus(root, cache=False)
    browser = CatalogBrowser(corpus)
    browser.select_id("far")
    assert f"{civil(created)} UTC" in browser.detail
    assert f"{civil(first)} UTC to " in browser.detail  # the events' span
    assert civil(first) in browser.detail.split("raw events", 1)[1]  # the first raw event's time
    board = DiagnosticsDashboard(corpus)
    board.selected_dimension = "day"
    days = {value: count for _split, value, count in board.bars}
    day = datetime.fromtimestamp(T0 / 1000, UTC).date().isoformat()
    assert days == ({day: 1, "out of range": 1} if outside(created) else {day: 2})


def _views(corpus: Corpus) -> list[Callable[[], Any]]:
    return [lambda: corpus_summary(corpus), lambda: run_summary(corpus), lambda: render_report(corpus)]


def test_a_corpus_of_only_such_times_has_every_view(tmp_path: Path) -> None:
    """Nothing in the calendar at all: the views still draw (a time chart with nothing to place)."""
    created = SAFE_MAX
    head = header("alone", created_at=created, cwd="/w")
    write_session(tmp_path, head, _child_events("alone", SAFE_MAX - 20), "none")
    corpus = read_corpus(tmp_path, cache=False)
    for view in _views(corpus):
        view()
    assert _cli("summary", str(tmp_path), "-q").count("+287396") == 2
