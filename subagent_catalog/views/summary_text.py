"""The ``summary`` command's output: counts and runs of a corpus at a glance, as text, JSON or Markdown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import polars as pl

from subagent_catalog.analysis.run_summary import RunSummary, run_summary
from subagent_catalog.analysis.summary import human_bytes, iso, root_hint, summary_of_rows
from subagent_catalog.analysis.window import Window
from subagent_catalog.catalog.model import Semantics
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.source import Source
from subagent_catalog.frames.units import exact_count, plural
from subagent_catalog.views.columns import UNREAD_BY_SUMMARY
from subagent_catalog.views.memory import between_stages
from subagent_catalog.views.run_format import FAILED_LINES, runs_json, runs_lines, runs_markdown
from subagent_catalog.views.text import md_cell, printable

T = TypeVar("T")


def _read(
    source: Source, semantics: Semantics, window: Window | None, runs: Callable[[RunSummary], T]
) -> tuple[Corpus, Window, Corpus, dict[str, Any], T]:
    """The frames, the window, the windowed frames, their counts and ``runs`` of their run summary.

    The frames are read first, without the columns the summary leaves unread,
    and the run summary (every session's tree) is made and handed to ``runs``
    at once, then dropped; only then is the listing computed (over an archive
    out of core) and counted: the run summary and the listing rows are never
    in memory together.
    """
    window, listing, size = window or Window(), source, source.session_count()
    corpus = source.frames(without=UNREAD_BY_SUMMARY)  # a corpus, or an archive's frames
    shown = window.corpus(corpus)
    made = runs(run_summary(shown))
    between_stages(size)
    rows = window.frame(catalog(listing, semantics=semantics)) if listing.listing_error is None else None
    facts = summary_of_rows(shown, semantics, rows)
    return corpus, window, shown, facts, made


def _join_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{key} {exact_count(value)}" for key, value in counts.items()) if counts else "none"


def summary_text(
    corpus: Source,
    *,
    corpus_problems: int = 5,
    semantics: Semantics = "projection",
    window: Window | None = None,
    limit: int = FAILED_LINES,
) -> str:
    """A short readable summary of a corpus for a terminal: its files and damage, then its runs.

    Args:
        corpus: a read corpus or an opened archive (``store.source.Source``).
        corpus_problems: how many corpus-level problems to quote.
        semantics: the listing semantics for the row counts.
        window: count only the sessions created in this window (and their
            descriptors, problems and listing rows; the listing itself is
            computed over the whole corpus).
        limit: failed runs named (0: all).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> print(summary_text(read_corpus(tempfile.mkdtemp())).splitlines()[1])
        sessions     0 files, 0 listed, 0 projects
    """
    corpus, window, shown, facts, runs = _read(corpus, semantics, window, lambda made: runs_lines(made, limit=limit))
    first, last = iso(facts["first_created_ms"]), iso(facts["last_activity_ms"])
    span = f"{first} → {last}" if first and last else "no timestamps"
    if facts["first_created_ms"] is not None and facts["last_activity_ms"] is not None:
        days = (facts["last_activity_ms"] - facts["first_created_ms"]) / 86_400_000
        span += f" ({days:.1f} days)"
    failing = facts["listing_error"] is not None
    listed = (
        f"none listed (upstream's listing fails; {exact_count(facts['listed'])} with a listable header)"
        if failing
        else f"{exact_count(facts['listed'])} listed"
    )
    encoding = f" ({facts['compression']})" if facts["compression"] else ""  # none: no log was read
    lines = [f"corpus       {printable(facts['root'])}{encoding}"]
    if (hint := root_hint(corpus)) is not None:
        lines.append(f"hint         {printable(hint)}")
    if window.bounded:
        untimed = window.without_time(corpus.sessions)
        lines.append(
            f"window       {window.describe()} by created_at: {exact_count(shown.sessions.height)} of "
            f"{plural(corpus.sessions.height, 'file')}"
            + (f", {exact_count(untimed)} without created_at left out" if untimed else "")
        )
    lines += [
        f"sessions     {plural(facts['files'], 'file')}, {listed}, {plural(facts['projects'], 'project')}",
        f"subagents    {exact_count(facts['subagent_sessions'])} {'' if failing else 'listed '}"
        "sessions with origin=subagent" + (" (by header)" if failing else ""),
        f"verdicts     {_join_counts(facts['verdicts'])}",
        f"encodings    {_join_counts(facts['encodings'])}",
        f"bytes        {human_bytes(facts['bytes'])} ({exact_count(facts['bytes'])})",
        f"time span    {span}",
        f"descriptors  {exact_count(facts['descriptors'])} ({_join_counts(facts['descriptor_statuses'])})",
    ]
    if facts["listing_error"] is not None:
        lines.append(f"listing      FAILS: {printable(facts['listing_error'])}")
    else:
        lines.append(f"listing      ok; rows ({semantics}): {_join_counts(facts['rows'] or {})}")
    lines.append(f"problems     {exact_count(facts['problems'])} ({_join_counts(facts['problem_severities'])})")
    for item in facts["problem_kinds"]:
        lines.append(f"  {exact_count(item['count']):>6}  {item['severity']:<8} {item['scope']:<7} {item['kind']}")
    level = shown.problems.filter(pl.col("scope") == "corpus")
    if level.height:
        lines.append(f"corpus-level problems (first {min(corpus_problems, level.height):,} of {level.height:,}):")
        for row in level.head(corpus_problems).iter_rows(named=True):
            lines.append(f"  - {row['kind']}: {printable(row['message'])}")
            lines.append(f"      {printable(row['path'])}")
    lines += [printable(line) for line in runs]
    return "\n".join(lines)


def summary_json(
    corpus: Source, *, semantics: Semantics = "projection", window: Window | None = None
) -> dict[str, Any]:
    """The summary as JSON values: ``corpus`` (the counts ``summary`` prints) and ``runs`` (every failed run).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> facts = summary_json(read_corpus("data/sample"))
        >>> facts["corpus"]["files"], facts["runs"]["failed"]
        (26, 7)
    """
    corpus, window, _, counts, runs = _read(corpus, semantics, window, runs_json)
    facts = {key: value.isoformat() if hasattr(value, "isoformat") else value for key, value in counts.items()}
    if window.bounded:
        facts["window"] = window.describe()
    facts["root_hint"] = root_hint(corpus)
    return {"corpus": facts, "runs": runs}


def summary_markdown(
    corpus: Source,
    *,
    semantics: Semantics = "projection",
    window: Window | None = None,
    limit: int = FAILED_LINES,
) -> str:
    """The summary as Markdown for a CI job summary (``>> "$GITHUB_STEP_SUMMARY"``): counts, then runs.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> print(summary_markdown(read_corpus("data/sample")).splitlines()[0])
        # Corpus `data/sample`
    """
    corpus, window, _, facts, runs = _read(corpus, semantics, window, lambda made: runs_markdown(made, limit=limit))
    root = str(facts["root"]).replace("`", "'")
    lines = [f"# Corpus `{root}`", ""]
    if (hint := root_hint(corpus)) is not None:
        lines += [f"> **Hint:** {md_cell(hint)}", ""]
    if window.bounded:
        lines += [f"Window {md_cell(window.describe())} by created_at.", ""]
    listing = (
        f"**fails**: {md_cell(facts['listing_error'])}"
        if facts["listing_error"] is not None
        else f"ok ({_join_counts(facts['rows'] or {}) if facts['rows'] else 'no rows'})"
    )
    lines += [
        "| sessions | listed | projects | verdicts | problems | listing |",
        "|---|---|---|---|---|---|",
        f"| {exact_count(facts['files'])} | {exact_count(facts['listed'])} | {exact_count(facts['projects'])} | "
        f"{md_cell(_join_counts(facts['verdicts']))} | {exact_count(facts['problems'])} | "
        f"{listing} |",
        "",
    ]
    lines += runs
    return "\n".join(lines)
