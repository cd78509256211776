"""Counts of a corpus at a glance.

``corpus_summary`` gives files, projects, sessions, read verdicts,
problems, catalog rows by kind and reason, and the time span.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import polars as pl

from subagent_catalog.catalog.model import Semantics
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.units import clock, iso_time

VERDICT_ORDER = ("ok", "torn-tail", "prefix", "failed", "skipped")
SEVERITY_ORDER = ("error", "warning", "info")


def _counts(series: pl.Series, order: Sequence[str] = ()) -> dict[str, int]:
    counted: Counter[str] = Counter()  # counted by Polars: no Python string per row
    for value, count in series.value_counts().iter_rows():
        counted["(none)" if value is None else str(value)] += count
    ordered = {key: counted.pop(key) for key in order if key in counted}
    ordered.update(sorted(counted.items(), key=lambda item: (-item[1], item[0])))
    return ordered


def iso(ms: int | None) -> str | None:
    """A UTC time in epoch milliseconds as ``YYYY-MM-DD HH:MM:SS UTC`` (``None`` stays ``None``; ``clock``).

    Examples:
        >>> iso(1_767_323_045_000), iso(253_402_300_800_000), iso(None)
        ('2026-01-02 03:04:05 UTC', '+010000-01-01 00:00:00 UTC', None)
    """
    return clock(ms) if ms is not None else None


def minute(ms: int | None) -> str | None:
    """A UTC time in epoch milliseconds to the minute (``None`` stays ``None``; ``clock``).

    Examples:
        >>> minute(1_767_323_045_000)
        '2026-01-02 03:04 UTC'
    """
    return clock(ms, seconds=False) if ms is not None else None


def _int_or_none(value: Any) -> int | None:
    return int(value) if value is not None else None


def human_bytes(size: int) -> str:
    """A byte count in binary units (``1.5 KiB``).

    Examples:
        >>> human_bytes(512), human_bytes(1536)
        ('512 B', '1.5 KiB')
    """
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def corpus_summary(corpus: Corpus, *, semantics: Semantics = "projection") -> dict[str, Any]:
    """The corpus's headline numbers (what ``summary`` prints and the report shows).

    Keys: ``root``, ``compression``, ``files``, ``listed``, ``projects``,
    ``subagent_sessions``, ``verdicts``, ``encodings``, ``bytes``,
    ``first_created_ms`` (the smallest ``createdAt``), ``last_activity_ms`` (the largest
    ``createdAt`` or event time), both exact epoch milliseconds whatever their year, and
    ``first_created``, ``last_activity``: the same as ISO 8601 text (``iso_time``: an expanded
    year outside years 1 to 9999), ``descriptors``,
    ``descriptor_statuses``, ``listing_error``, ``listing_error_path``,
    ``problems``, ``problem_severities``, ``problem_kinds``, and ``rows``
    (listing rows by outcome; ``None`` when the listing fails). ``compression``
    is the encoding the logs were read as, ``None`` when there was no log.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> facts = corpus_summary(read_corpus(tempfile.mkdtemp()))
        >>> facts["files"], facts["listing_error"], facts["rows"], facts["compression"]
        (0, None, {}, None)
    """
    rows = catalog(corpus, semantics=semantics) if corpus.listing_error is None else None
    return summary_of_rows(corpus, semantics, rows)


def summary_of_rows(corpus: Corpus, semantics: Semantics, frame: pl.DataFrame | None) -> dict[str, Any]:
    """The ``corpus_summary`` dict from catalog rows already computed (``None``: the listing fails).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog import read_corpus
        >>> summary_of_rows(read_corpus(tempfile.mkdtemp(), cache=False), "projection", None)["files"]
        0
    """
    sessions = corpus.sessions
    listed = sessions.select("listed", "origin").filter(pl.col("listed"))  # two columns, not every one
    # Exact milliseconds, never Python datetimes: a log may hold a time no date names (year 10000, 2^53 - 1 ms).
    first_created = _int_or_none(sessions["created_at_ms"].min())
    latest = [_int_or_none(sessions[name].max()) for name in ("created_at_ms", "last_event_ms")]
    last_activity = max((ms for ms in latest if ms is not None), default=None)
    problems = corpus.problems
    kinds = (
        problems.group_by("kind", "severity", "scope")
        .len()
        .sort(["len", "kind"], descending=[True, False])
        .rename({"len": "count"})
        .to_dicts()
    )
    rows: dict[str, int] | None = None
    if frame is not None:
        listed_rows = frame.filter(pl.col("kind") != "error")
        outcome = listed_rows.select(
            pl.when(pl.col("kind") == "child").then(pl.lit("child")).otherwise(pl.col("reason"))
        )
        rows = _counts(outcome.to_series(), ("child", "unavailable", "corrupt", "unsupported"))
    return {
        "root": corpus.root,
        "compression": corpus.compression if sessions.height else None,  # the encoding of what was read
        "semantics": semantics,
        "files": sessions.height,
        "listed": listed.height,
        "projects": sessions["project_dir"].n_unique() if sessions.height else 0,
        "subagent_sessions": listed.filter(pl.col("origin") == "subagent").height,
        "verdicts": _counts(sessions["verdict"], VERDICT_ORDER),
        "encodings": _counts(sessions["encoding"]),
        "bytes": int(sessions["bytes"].sum() or 0),
        "first_created_ms": first_created,
        "last_activity_ms": last_activity,
        "first_created": iso_time(first_created),
        "last_activity": iso_time(last_activity),
        "descriptors": corpus.descriptors.height,
        "descriptor_statuses": _counts(corpus.descriptors["status"], ("valid", "malformed", "unknown-version")),
        "listing_error": corpus.listing_error,
        "listing_error_path": corpus.listing_error_path,
        "problems": problems.height,
        "problem_severities": _counts(problems["severity"], SEVERITY_ORDER),
        "problem_kinds": kinds,
        "rows": rows,
    }


def root_hint(corpus: Corpus) -> str | None:
    """A hint when the root is a project folder rather than the corpus root (else ``None``).

    dsh keeps ``<root>/<project>/<session>/session.jsonl[.zstd]``; a project folder passed as the
    root (``data/sample/--home-dev-projects-webapp--``) holds session directories where projects
    should be, so no session file is found and every log is a legacy flat file. The hint names
    the parent, the root that was meant.

    ``read_corpus`` and ``export_archive`` refuse a project folder (``CorpusLevelError``), so
    only the frames of an archive exported from one before they did, or of a walk taken as
    it is, give a hint.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.frames.assemble import assemble
        >>> from subagent_catalog.read.discover import _discover
        >>> walked = assemble(_discover("data/sample/--home-dev-projects-webapp--", "none"), [])
        >>> root_hint(walked).endswith("its parent, data/sample")
        True
        >>> root_hint(read_corpus("data/sample")) is None
        True
    """
    import os

    if corpus.sessions.height:
        return None
    root = os.path.normpath(corpus.root)
    name = os.path.basename(root)
    flat = corpus.problems.filter(pl.col("kind") == "legacy-flat-file")["path"].drop_nulls().to_list()
    nested = any(
        os.path.basename(path).startswith("session.jsonl")
        and os.path.dirname(os.path.dirname(os.path.normpath(path))) == root
        for path in flat
    )
    if not nested and not (name.startswith("--") and name.endswith("--") and len(name) > 4):
        return None
    parent = os.path.dirname(root) or "."
    return (
        f"{corpus.root} looks like a project folder (a directory per session inside it): "
        f"the corpus root is its parent, {parent}"
    )
