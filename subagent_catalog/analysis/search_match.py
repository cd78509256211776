"""The vectorized match of ``search_events``: a pattern over the events' ``text`` column, in Polars.

The pattern runs in Polars' Rust ``regex`` engine (a literal with
``literal=True``): linear time in the text whatever the pattern, over whole
columns at once, case-insensitive by the engine's ``(?i)`` (Unicode simple
case folding) without any decoding in Python. Events whose ``text`` holds the
pattern are split into their parts (``read.event_text``), and each part that
holds it gives its first match's offsets, a snippet around it and its count.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import polars as pl

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.read.event_text import PART_SEPARATOR
from subagent_catalog.read.jsvalue import frame_text

__all__ = ["FIELD_ORDER", "MAX_PATTERN_CHARS", "Pattern", "SearchError", "compile_pattern", "match_events"]

MAX_PATTERN_CHARS = 10_000
"""The longest pattern searched (literal or regex): a longer one is a ``SearchError``, not a huge regex."""

FIELD_ORDER: tuple[str, ...] = ("text", "reasoning", "name", "arguments", "result", "error", "label", "persona", "data")
"""The order of an event's matching fields in the result."""

_RANK = {name: rank for rank, name in enumerate(FIELD_ORDER)}
_ELLIPSIS = "\u2026"


class SearchError(SubagentCatalogError, ValueError):
    """A search that cannot run: an empty or invalid pattern, or a bad option."""


@dataclass(frozen=True)
class Pattern:
    """A compiled search: the engine's pattern source, whether it is literal, whether it is anchored.

    ``chars`` is the length in characters of every match when it is fixed
    (a literal, case-insensitive or not: the engine's simple case folding
    maps one character to one), else ``None`` (a regex).
    """

    source: str
    literal: bool
    anchored: bool
    chars: int | None = None


def _brief(error: BaseException) -> str:
    text = " ".join(line.strip() for line in str(error).split("This error occurred")[0].splitlines() if line.strip())
    return text[:200] + ("…" if len(text) > 200 else "")


def compile_pattern(pattern: str, *, regex: bool, ignore_case: bool) -> Pattern:
    """The engine's form of a pattern, checked (a bad regex is a ``SearchError`` naming it).

    Examples:
        >>> compile_pattern("a.b", regex=False, ignore_case=True)
        Pattern(source='(?i)a\\\\.b', literal=False, anchored=False, chars=3)
        >>> compile_pattern("^x", regex=True, ignore_case=False).anchored
        True
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise SearchError(
            f"the pattern is {len(pattern):,} characters long; the longest searched is {MAX_PATTERN_CHARS:,}",
            hint="search for a shorter, distinctive part of the text",
        )
    text = frame_text(pattern) or ""
    if not regex and not ignore_case:
        return Pattern(text, True, False, len(text))
    source = text if regex else pl.escape_regex(text)
    if ignore_case:
        source = "(?i)" + source
    try:
        pl.Series([""], dtype=pl.String).str.contains(source)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as error:
        raise SearchError(
            f"invalid regular expression {pattern[:200]!r}{'…' if len(pattern) > 200 else ''}: {_brief(error)}",
            hint="fix the pattern (Rust regex syntax: no look-around or backreferences), "
            "or pass regex=False to search for the text literally",
        ) from None
    # Anchors match at the text's ends, not at a part's: such a pattern is tried on every part.
    anchored = regex and any(mark in source for mark in ("^", "$", "\\A", "\\z"))
    return Pattern(source, False, anchored, None if regex else len(text))


def contains(column: str, pattern: Pattern) -> pl.Expr:
    """Whether the column holds the pattern (the event-level filter).

    Examples:
        >>> literal = compile_pattern("a", regex=False, ignore_case=False)
        >>> pl.DataFrame({"t": ["ab", "b"]}).filter(contains("t", literal)).height
        1
    """
    return pl.col(column).str.contains(pattern.source, literal=pattern.literal)


def match_events(
    frame: pl.DataFrame | pl.LazyFrame, pattern: Pattern, *, context: int, prefiltered: bool = False
) -> pl.DataFrame:
    """One row per (event, field) whose text holds the pattern, from candidate events.

    ``frame`` holds ``session_id``, ``seq``, ``time_ms``, ``type``, ``turn``,
    ``step``, ``text``, ``text_fields``, ``list_order``, ``_pos`` and
    ``project_dir``. The result has those (but the texts), ``field``,
    ``block`` (the part of the event's text: ``text.str.split("\\x1f")``),
    ``start`` and ``end`` (the first match's character offsets in the
    event's ``text``), ``snippet``, ``matches`` (in all the field's parts) and
    ``_rank`` (the field's place in ``FIELD_ORDER``); unsorted.
    ``prefiltered`` says every row's ``text`` is known to hold the pattern
    (an unanchored pattern already filtered them): the events are not
    searched again before their parts are.

    Examples:
        >>> frame = pl.DataFrame({"session_id": ["s"], "seq": [1], "time_ms": [5], "type": ["tool/call"],
        ...     "turn": [1], "step": [1], "text": ["grep\\x1fgrep it"], "text_fields": ["name arguments"],
        ...     "list_order": [0], "_pos": [3], "project_dir": ["p"]})
        >>> found = match_events(frame, compile_pattern("grep", regex=False, ignore_case=False), context=2)
        >>> found.select("field", "block", "start", "end", "snippet", "matches").rows()
        [('name', 0, 0, 4, 'grep', 1), ('arguments', 1, 5, 9, 'grep i…', 1)]
    """
    source, literal = pattern.source, pattern.literal
    lazy = frame.lazy().filter(pl.col("text").is_not_null())
    if not pattern.anchored and not prefiltered:
        lazy = lazy.filter(contains("text", pattern))
    events = lazy.collect()
    several = pl.col("text_fields").str.contains(" ", literal=True)
    # Most events have one part (a tool result, a user message): no split, no offsets to add up, one row each.
    single = events.lazy().filter(~several).rename({"text": "_part", "text_fields": "field"})
    if pattern.anchored:
        single = single.filter(pl.col("_part").str.contains(source, literal=literal))
    single = single.with_columns(pl.lit(0, pl.Int64).alias("block"), pl.lit(0, pl.Int64).alias("_offset"))
    multiple = (
        events.lazy()
        .filter(several)
        .with_row_index("_event")
        .with_columns(
            pl.col("text").str.split(PART_SEPARATOR).alias("_part"),
            pl.col("text_fields").str.split(" ").alias("field"),
        )
        .drop("text", "text_fields")
        .with_columns(pl.int_ranges(pl.col("_part").list.len(), dtype=pl.Int64).alias("block"))
        .explode(["_part", "field", "block"])
        .with_columns((pl.col("_part").str.len_chars().cast(pl.Int64) + 1).alias("_size"))
        .with_columns((pl.col("_size").cum_sum().over("_event") - pl.col("_size")).alias("_offset"))
        .drop("_size")
        .filter(pl.col("_part").str.contains(source, literal=literal))
    )
    # A field of several parts holds the first part's match and the matches of all its parts.
    grouped = (
        _located(multiple, pattern, context)
        .group_by("_event", "field", maintain_order=True)
        .agg(pl.all().exclude("matches").first(), pl.col("matches").sum())
        .drop("_event")
    )
    found = pl.concat([_located(single, pattern, context), grouped], how="diagonal_relaxed")
    return found.with_columns(
        pl.col("field").replace_strict(_RANK, default=len(FIELD_ORDER), return_dtype=pl.Int64).alias("_rank")
    ).collect()


@functools.cache
def find_counts_characters() -> bool:
    """Whether this Polars' ``str.find`` gives a character offset (Polars 2.2 on) rather than a byte offset.

    Examples:
        >>> find_counts_characters() == (pl.Series(["é0"]).str.find("0", literal=True).item() == 1)
        True
    """
    return bool(pl.Series(["é0"]).str.find("0", literal=True).item() == 1)


def _located(parts: pl.LazyFrame, pattern: Pattern, context: int) -> pl.LazyFrame:
    """Each part's first match (character offsets in the event's text), a snippet around it, its match count.

    ``parts`` holds ``_part`` (the text) and ``_offset`` (the part's first
    character in the event's text); both are dropped.
    """
    part = pl.col("_part")
    source, literal = pattern.source, pattern.literal
    ascii_only = pl.col("_chars") == part.str.len_bytes().cast(pl.Int64)
    return (
        parts.with_columns(
            part.str.find(source, literal=literal).alias("_at"),
            part.str.count_matches(source, literal=literal).cast(pl.Int64).alias("matches"),
            (
                pl.lit(pattern.chars, pl.Int64)
                if pattern.chars is not None  # no second pass of the engine to measure each match
                else part.str.extract(source, 0).str.len_chars().cast(pl.Int64)
            ).alias("_len"),
            part.str.len_chars().cast(pl.Int64).alias("_chars"),
        )
        .with_columns(  # a byte offset is the character offset in ASCII text: no prefix to decode
            pl.col("_at").cast(pl.Int64).alias("_in")
            if find_counts_characters()
            else pl.when(ascii_only)
            .then(pl.col("_at").cast(pl.Int64))
            .otherwise(
                part.cast(pl.Binary)
                .bin.head(pl.when(ascii_only).then(0).otherwise(pl.col("_at")))
                .cast(pl.String)
                .str.len_chars()
                .cast(pl.Int64)
            )
            .alias("_in")
        )
        .with_columns(pl.max_horizontal(pl.col("_in") - context, pl.lit(0, pl.Int64)).alias("_low"))
        .with_columns((pl.col("_in") - pl.col("_low") + pl.col("_len") + context).alias("_width"))
        .with_columns(
            pl.concat_str(
                pl.when(pl.col("_low") > 0).then(pl.lit(_ELLIPSIS)).otherwise(pl.lit("")),
                part.str.slice(pl.col("_low"), pl.col("_width")),
                pl.when(pl.col("_low") + pl.col("_width") < pl.col("_chars"))
                .then(pl.lit(_ELLIPSIS))
                .otherwise(pl.lit("")),
            ).alias("snippet"),
            (pl.col("_offset") + pl.col("_in")).alias("start"),
            (pl.col("_offset") + pl.col("_in") + pl.col("_len")).alias("end"),
        )
        .drop("_part", "_chars", "_offset", "_at", "_len", "_in", "_low", "_width")
    )
