"""Failed runs grouped by their error: the error code, and the message with what varies between runs made alike.

"797 failed runs" is not an answer; "NETWORK 60, CONTEXT_LENGTH_EXCEEDED 45, RATE_LIMITED 42" is. A failed
run (an outcome in ``FAILED_OUTCOMES``) is grouped by its last error's code and its normalised message
(``normalise_message``: ids, paths, long hex, quoted text and numbers replaced by placeholders); a run
without an error message (an abort, an open run, an unreadable log) is grouped by its outcome's detail
(``parent``, ``user``, the read's cause...), else by its outcome (``max-tokens``). Each group says how
many runs it holds, with which outcomes, when it was first and last seen, what its runs cost (the known
part, and how many runs' cost is unknown: then it is a lower bound) and one example.
"""

from __future__ import annotations

import re

import polars as pl

from subagent_catalog.frames.outcome import OUTCOMES

__all__ = ["ERROR_GROUP_SCHEMA", "EXAMPLE_CLIP", "group_failures", "normalise_message"]

EXAMPLE_CLIP = 400
"""Characters of the example message a group keeps."""

ERROR_GROUP_SCHEMA: dict[str, pl.DataType] = {
    "code": pl.String(),
    "message": pl.String(),
    "runs": pl.Int64(),
    "outcomes": pl.String(),
    "first_seen_ms": pl.Int64(),
    "last_seen_ms": pl.Int64(),
    "cost_usd_known": pl.Float64(),
    "cost_unknown": pl.Int64(),
    "example_session_id": pl.String(),
    "example_label": pl.String(),
    "example_name": pl.String(),
    "example_path": pl.String(),
    "example_message": pl.String(),
}
"""The columns of ``group_failures``: ``code`` (the last error's code, null when none), ``message`` (the
normalised message, else the outcome's detail, else the outcome), ``runs`` (failed sessions), ``outcomes``
(``error ×3, aborted ×1``: most first), ``first_seen_ms`` and ``last_seen_ms`` (the earliest and latest end
of those runs: their last own event, else their start; epoch milliseconds), ``cost_usd_known`` (what the
runs' priced steps cost) with ``cost_unknown`` (runs whose cost is unknown: the known cost is then a lower
bound), and the first run in list order as the example (its id, null for a log with no readable header,
its label and name (``sessions.name``), its path and its message, clipped to ``EXAMPLE_CLIP``)."""

_PATTERNS = (
    (re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"), "<id>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[/\\][\w.@~+-]+){2,}[/\\]?"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-fA-F]{12,}\b"), "<hex>"),
    (re.compile(r"\"[^\"]*\"|'[^']*'|`[^`]*`"), "<text>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
)


def normalise_message(message: str | None, *, clip: int = 160) -> str | None:
    """An error message with the parts that vary between runs made alike: ids, paths, numbers, quoted text.

    Examples:
        >>> normalise_message('timeout after 30000 ms reading "/tmp/a b/x" (req 5f0c9e0a-1b2c-4d5e-8f90-123456789abc)')
        'timeout after <n> ms reading <text> (req <id>)'
        >>> normalise_message("ENOENT: /home/dev/app/src/main.ts")
        'ENOENT: <path>'
    """
    if message is None:
        return None
    text = message
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    text = text.strip()
    return text if len(text) <= clip else text[: clip - 1] + "…"


def error_messages(text: pl.Series) -> pl.Series:
    """``normalise_message`` over a column, each distinct text normalised once.

    Examples:
        >>> error_messages(pl.Series(["took 5 ms", "took 7 ms", None])).to_list()
        ['took <n> ms', 'took <n> ms', None]
    """
    normal = {value: normalise_message(value) for value in text.unique().drop_nulls().to_list()}
    return text.replace_strict(normal, default=None, return_dtype=pl.String)


def group_failures(failures: pl.DataFrame) -> pl.DataFrame:
    """Failed runs (``run_summary``'s ``RUN_COLUMNS`` rows) grouped by error code and normalised message.

    Args:
        failures: one row per failed run, with ``list_order``, ``session_id``, ``label``, ``name``, ``outcome``,
            ``outcome_detail``, ``error_message``, ``error_code``, ``start_ms``, ``wall_ms``, ``cost_usd``,
            ``cost_usd_known`` and ``path`` (``RunSummary.failures``).

    Returns:
        ``ERROR_GROUP_SCHEMA`` rows, the group with the most runs first (then the latest seen, then code
        and message); every failed run is in exactly one group.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.run_summary import run_summary
        >>> groups = group_failures(run_summary(read_corpus("data/sample")).failures)
        >>> groups.filter(pl.col("code").is_not_null()).select("code", "message", "runs", "outcomes").rows()
        [('CONTEXT_LENGTH', 'context length exceeded', 1, 'error ×1')]
        >>> groups.filter(pl.col("outcomes") == "aborted ×1").select("message", "example_session_id").rows()
        [('aborted by parent', 'rs-01')]
        >>> groups.height, int(groups["runs"].sum())   # every failed run is in one group
        (7, 7)
    """
    text = pl.coalesce(pl.col("error_message"), pl.col("outcome_detail"), pl.col("outcome"))
    frame = failures.with_columns(
        text.alias("_text"),
        pl.col("error_code").alias("code"),
        # The run's end: its last own event (start + wall), else its start; a sum past 64 bits is no time.
        pl.when(pl.col("wall_ms").is_not_null())
        .then(pl.col("start_ms").cast(pl.Int128) + pl.col("wall_ms").cast(pl.Int128))
        .otherwise(pl.col("start_ms").cast(pl.Int128))
        .alias("_seen"),
    )
    frame = frame.with_columns(
        pl.when(pl.col("_seen").is_between(-(2**63), 2**63 - 1)).then(pl.col("_seen")).cast(pl.Int64).alias("_seen")
    )
    frame = frame.with_columns(error_messages(frame["_text"]).alias("message"))
    groups = frame.group_by("code", "message").agg(
        pl.len().cast(pl.Int64).alias("runs"),
        pl.col("_seen").min().alias("first_seen_ms"),
        pl.col("_seen").max().alias("last_seen_ms"),
        pl.col("cost_usd_known").fill_null(0.0).sum().cast(pl.Float64).alias("cost_usd_known"),
        pl.col("cost_usd").is_null().sum().cast(pl.Int64).alias("cost_unknown"),
        pl.col("session_id").sort_by("list_order").first().alias("example_session_id"),
        pl.col("label").sort_by("list_order").first().alias("example_label"),
        pl.col("name").sort_by("list_order").first().alias("example_name"),
        pl.col("path").sort_by("list_order").first().alias("example_path"),
        pl.col("_text").sort_by("list_order").first().str.slice(0, EXAMPLE_CLIP).alias("example_message"),
    )
    rank = {name: i for i, name in enumerate(OUTCOMES)}  # each group's outcomes: most runs first, then OUTCOMES order
    counted = (
        frame.group_by("code", "message", "outcome")
        .agg(pl.len().alias("n"))
        .with_columns(pl.col("outcome").replace_strict(rank, default=len(rank)).alias("_rank"))
        .sort(["n", "_rank"], descending=[True, False])
    )
    text = pl.concat_str(pl.col("outcome").fill_null("?"), pl.lit(" ×"), pl.col("n").cast(pl.String))
    outcomes = counted.group_by("code", "message", maintain_order=True).agg(text.str.join(", ").alias("outcomes"))
    joined = groups.join(outcomes, on=["code", "message"], how="left", nulls_equal=True)
    ordered = joined.sort(
        ["runs", "last_seen_ms", "code", "message"], descending=[True, True, False, False], nulls_last=True
    )
    return ordered.select(list(ERROR_GROUP_SCHEMA)).cast(ERROR_GROUP_SCHEMA)  # type: ignore[arg-type]
