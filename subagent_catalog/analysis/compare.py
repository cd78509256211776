"""Compare two corpora: did the change make runs fail less, cost less, finish sooner — with the uncertainty said.

``compare(a, b)`` reads two corpora or archives (or two windows of one: ``Window.corpus``) and gives a
``Comparison`` of frames, B against A: ``outcomes`` (counts and rates per outcome, Newcomb's interval of
the difference, Fisher's exact or χ² test), ``metrics`` (cost, tokens, active time, steps, tool calls and
failed tool results per run and per tree: median, p90, mean, the relative change with a seeded bootstrap
interval, Mann-Whitney), ``models``, ``tools``, ``errors`` (the report's groups of failed runs, new first),
``health`` (read verdicts, listing rows, descriptor statuses and versions, problems) and, with
``match``, ``tasks`` and ``pairs`` (runs paired by title or first prompt). The p-values of each table
are one family, adjusted by Holm's method (``p_adjusted``); ``better`` names the side whose value is
better where that has a meaning and the adjusted p-value is below ``ALPHA``. The statistics are
``scipy.stats``' (``analysis.compare_stats``); docs/compare.md says what each assumes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from subagent_catalog.analysis.compare_sides import RUN_METRICS, Side, read_side
from subagent_catalog.analysis.compare_stats import (
    ALPHA,
    describe,
    holm,
    newcomb_interval,
    proportion_test,
    rank_test,
    relative_changes,
)
from subagent_catalog.analysis.compare_tasks import Match, match_tasks
from subagent_catalog.analysis.error_groups import group_failures
from subagent_catalog.analysis.run_filter import describe_filter, filter_runs
from subagent_catalog.analysis.run_names import session_name
from subagent_catalog.analysis.run_summary import FAILED_OUTCOMES
from subagent_catalog.bounds import RESAMPLES, SEED
from subagent_catalog.frames.display import notebook_html
from subagent_catalog.frames.outcome import OUTCOMES
from subagent_catalog.frames.source import Source
from subagent_catalog.prices import Prices, PriceTable, price_table

LOWER_IS_BETTER = frozenset({"cost", "tokens", "active_time", "failed_tool_results"})
"""The metrics whose lower value is better (steps and tool calls have no better direction)."""

UNITS = {
    "cost": "USD",
    "tokens": "tokens",
    "active_time": "ms",
    "steps": "steps",
    "tool_calls": "calls",
    "failed_tool_results": "results",
}

_PROPORTION_COLUMNS = ("diff", "diff_low", "diff_high", "p_value", "test")
_CHANGES = tuple(f"{stat}_change{end}" for stat in ("median", "mean") for end in ("", "_low", "_high"))


@dataclass
class Comparison:
    """B against A (``compare``): frames of plain values, ready to show; every view reads these."""

    a_label: str
    b_label: str
    runs: tuple[int, int]
    """Sessions on each side."""
    trees: tuple[int, int]
    """Trees (a session without a resolved parent and all below it) on each side."""
    cost_unknown: tuple[int, int]
    """Sessions of unknown cost on each side: while any, cost is not tested nor gated (its figures are bounds)."""
    outcomes: pl.DataFrame
    metrics: pl.DataFrame
    models: pl.DataFrame
    tools: pl.DataFrame
    errors: pl.DataFrame
    health: pl.DataFrame
    tasks: pl.DataFrame | None = None
    """With ``match``: one row per paired test (outcome flips, each metric); ``None`` without."""
    pairs: pl.DataFrame | None = None
    """With ``match``: the paired runs, those whose outcome changed first; ``None`` without."""
    match: Match = "none"
    confidence: float = 0.95
    seed: int = 0
    resamples: int = 2000
    notes: list[str] = field(default_factory=list)
    """What the figures leave out or assume, one sentence each; every view shows them."""

    def significant(self) -> dict[str, pl.DataFrame]:
        """The rows of each table whose Holm-adjusted p-value is below ``ALPHA``, by table name.

        Examples:
            >>> from subagent_catalog.corpus import read_corpus
            >>> corpus = read_corpus("tests/data/run-facts")
            >>> {name: rows.height for name, rows in compare(corpus, corpus).significant().items()}
            {}
        """
        out = {}
        for name in ("outcomes", "metrics", "models", "tools", "errors", "health", "tasks"):
            frame = getattr(self, name)
            if frame is not None and frame.height and "p_adjusted" in frame.columns:
                rows = frame.filter(pl.col("p_adjusted") < ALPHA)
                if rows.height:
                    out[name] = rows
        return out

    def _repr_html_(self) -> str | None:
        return notebook_html(self)  # views.compare_display.comparison_html, registered by the package

    def __repr__(self) -> str:
        changed = sum(frame.height for frame in self.significant().values())
        return (
            f"Comparison({self.a_label!r} → {self.b_label!r}, runs {self.runs[0]} → {self.runs[1]}, "
            f"{changed} significant rows)"
        )


def _proportions(k_a: int, n_a: int, k_b: int, n_b: int, confidence: float, share: str = "rate") -> dict[str, Any]:
    """Each side's share (``a_<share>``, ``b_<share>``), their difference with its interval and test."""
    diff, low, high = newcomb_interval(k_a, n_a, k_b, n_b, confidence=confidence)
    p, test = proportion_test(k_a, n_a, k_b, n_b)
    sign = np.sign(diff) if diff is not None else 0  # which side is higher (``_adjust`` reads and drops it)
    shares = {f"a_{share}": _rate(k_a, n_a), f"b_{share}": _rate(k_b, n_b)}
    return {**shares, "diff": diff, "diff_low": low, "diff_high": high, "p_value": p, "test": test, "_sign": sign}


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None


def _adjust(rows: list[dict[str, Any]], better: Any = None) -> None:
    """Holm-adjust the rows' ``p_value`` in place (one family); set ``significant`` and ``better``.

    ``better(row)`` gives ``"lower"``, ``"higher"`` or ``None`` (no direction): which value of ``diff`` wins.
    """
    for row, adjusted in zip(rows, holm([row.get("p_value") for row in rows]), strict=True):
        row["p_adjusted"] = adjusted
        row["significant"] = adjusted is not None and adjusted < ALPHA
        direction = better(row) if better is not None else None
        sign = row.pop("_sign", None)
        row["better"] = None
        if row["significant"] and direction is not None and sign:
            row["better"] = ("b" if sign > 0 else "a") if direction == "higher" else ("a" if sign > 0 else "b")


def _sides(dtype: Any, *names: str) -> dict[str, Any]:
    """The columns ``a_<name>`` and ``b_<name>`` of each name, of one type."""
    return {f"{side}_{name}": dtype for name in names for side in "ab"}


def _frame(rows: list[dict[str, Any]], schema: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


_PROPORTION_SCHEMA: dict[str, Any] = {
    "diff": pl.Float64,
    "diff_low": pl.Float64,
    "diff_high": pl.Float64,
    "p_value": pl.Float64,
    "test": pl.String,
    "p_adjusted": pl.Float64,
    "significant": pl.Boolean,
    "better": pl.String,
}


def _outcomes(a: Side, b: Side, confidence: float) -> pl.DataFrame:
    n_a, n_b = a.runs.height, b.runs.height
    count_a = dict(a.runs.group_by("outcome").len().iter_rows())
    count_b = dict(b.runs.group_by("outcome").len().iter_rows())
    rows = []
    for outcome in OUTCOMES:
        k_a, k_b = int(count_a.get(outcome, 0)), int(count_b.get(outcome, 0))
        if not k_a and not k_b:
            continue
        rows.append({"outcome": outcome, "a": k_a, "b": k_b, **_proportions(k_a, n_a, k_b, n_b, confidence)})

    def better(row: dict[str, Any]) -> str | None:
        return "higher" if row["outcome"] == "completed" else "lower" if row["outcome"] in FAILED_OUTCOMES else None

    _adjust(rows, better)
    schema = {"outcome": pl.String, **dict.fromkeys("ab", pl.Int64), **_sides(pl.Float64, "rate")}
    return _frame(rows, {**schema, **_PROPORTION_SCHEMA})


_METRIC_SCHEMA: dict[str, Any] = {
    "level": pl.String,
    "metric": pl.String,
    "unit": pl.String,
    **_sides(pl.Int64, "n", "unknown"),
    **_sides(pl.Boolean, "lower_bound"),
    **_sides(pl.Float64, "median", "p90", "mean", "p10", "p25", "p75"),
    **dict.fromkeys(_CHANGES, pl.Float64),
    "b_greater": pl.Float64,
    "p_value": pl.Float64,
    "p_adjusted": pl.Float64,
    "significant": pl.Boolean,
    "better": pl.String,
    "not_comparable": pl.String,
    "note": pl.String,
}


def _values(frame: pl.DataFrame, column: str) -> np.ndarray[Any, Any]:
    return frame[column].drop_nulls().cast(pl.Float64).to_numpy()


def not_comparable(metric: str, unit: str, sides: list[tuple[int, int, bool, int]]) -> str | None:
    """Why a metric's figures are not A's and B's whole figures (``None``: they are), from each side's counts.

    ``sides`` holds A's and B's ``(unknown, n, lower_bound, total)``. A side is not whole when some of its
    runs (trees) have an unknown cost (its figure is then a lower bound, or none), or when it has runs but
    no value at all. Such a row is not tested and a gate on it fails.

    Examples:
        >>> not_comparable("cost", "runs", [(0, 30, False, 30), (30, 0, False, 30)])
        "B's cost is unknown for 30 of 30 runs"
        >>> not_comparable("tokens", "runs", [(2, 28, False, 30), (0, 30, False, 30)]) is None   # left out, said
        True
    """
    said = []
    for tag, (unknown, n, bound, total) in zip("AB", sides, strict=True):
        if unknown and (metric == "cost" or n == 0 or bound):
            tail = " (its figure is a lower bound)" if bound else ""
            said.append(f"{tag}'s {metric} is unknown for {unknown:,} of {total:,} {unit}{tail}")
    return " and ".join(said) or None


def _metrics(a: Side, b: Side, *, seed: int, resamples: int, confidence: float) -> pl.DataFrame:
    """Each metric per run and per tree (docs/compare.md, "Unknown figures": what is tested and what is a bound).

    A value left out (null; a tree's sum without some of its sessions' values) is never 0. A side whose
    figure is not whole (``not_comparable``: a cost unknown for some runs, no value at all) is not tested
    (no change, interval, p-value, ``better``) since a bound is not the figure; its cost figures are lower
    bounds (``a_lower_bound``) over the known parts, or none when nothing is known.
    """
    rows = []
    nested = bool((a.runs["depth"] > 0).any() or (b.runs["depth"] > 0).any())
    for level, fa, fb in (("run", a.runs, b.runs), ("tree", a.trees, b.trees)):
        unit = "runs" if level == "run" else "trees"
        for index, (name, column) in enumerate(RUN_METRICS.items()):
            values, counts = [], []
            for frame in (fa, fb):
                # a tree's sum without some of its sessions' values is left out; every cost unknown: no figure
                whole = frame.filter(pl.col(f"{column}_unknown") == 0) if level == "tree" and name != "cost" else frame
                known = _values(whole, column)
                unknown = frame.height - known.size
                if name == "cost":  # runs (trees) whose cost is unknown (a tree: any session of it)
                    costless = frame["cost_usd"].is_null() if level == "run" else frame["cost_unknown"] > 0
                    unknown = int(costless.sum())
                known = known[:0] if unknown == frame.height else known
                values.append(known)
                counts.append((unknown, int(known.size), name == "cost" and unknown > 0 < known.size, frame.height))
            (va, vb), ((unknown_a, *_), (unknown_b, *_)) = values, counts
            why = not_comparable(name, unit, counts)
            notes = [f"not comparable: {why}"] if why else []
            if why is None and (unknown_a or unknown_b):
                what = "a whole value" if level == "tree" else "a value"
                notes.append(f"{unknown_a:,} / {unknown_b:,} {unit} without {what}, left out")
            salt = seed * 1000 + (0 if level == "run" else 100) + index
            if why is None:
                changes = relative_changes(va, vb, seed=salt, resamples=resamples, confidence=confidence)
                p, b_greater = rank_test(va, vb)
            else:
                changes, p, b_greater = dict.fromkeys(_CHANGES), None, None
            if level == "run" and nested:
                notes.append("subagents are not independent of their root: see the tree row")
            rows.append(
                {
                    "level": level,
                    "metric": name,
                    "unit": UNITS[name],
                    "a_n": int(va.size),
                    "b_n": int(vb.size),
                    "a_unknown": unknown_a,
                    "b_unknown": unknown_b,
                    "a_lower_bound": counts[0][2],
                    "b_lower_bound": counts[1][2],
                    **{f"a_{key}": value for key, value in describe(va).items()},
                    **{f"b_{key}": value for key, value in describe(vb).items()},
                    **changes,
                    "b_greater": b_greater,
                    "p_value": p,
                    "not_comparable": why,
                    "note": "; ".join(notes) or None,
                    "_sign": 0 if b_greater is None else np.sign(b_greater - 0.5),
                }
            )
    _adjust(rows, lambda row: "lower" if row["metric"] in LOWER_IS_BETTER else None)
    return _frame(rows, _METRIC_SCHEMA)


def _models(a: Side, b: Side, confidence: float) -> pl.DataFrame:
    keys = ["provider", "model"]
    kept = ["sessions", "steps", "billed_input_tokens", "output_tokens", "cost_usd", "cost_usd_known", "unpriced_steps"]

    def own(side: Side, tag: str) -> pl.DataFrame:
        frame = side.models.filter(~pl.col("in_seed")).select(*keys, *kept)
        return frame.rename({name: f"{tag}_{name}" for name in kept})

    joined = own(a, "a").join(own(b, "b"), on=keys, how="full", coalesce=True, nulls_equal=True)
    joined = joined.sort(keys, nulls_last=True)
    rows = []
    for row in joined.iter_rows(named=True):
        k_a, k_b = row["a_sessions"] or 0, row["b_sessions"] or 0
        shares = _proportions(k_a, a.runs.height, k_b, b.runs.height, confidence, "share")
        rows.append({"side": _side(k_a, k_b), **row, **shares})
    _adjust(rows)
    schema = {
        "provider": pl.String,
        "model": pl.String,
        "side": pl.String,
        **{f"{tag}_{name}": pl.Float64 if name.startswith("cost") else pl.Int64 for tag in "ab" for name in kept},
        **_sides(pl.Float64, "share"),
        **_PROPORTION_SCHEMA,
    }
    return _frame(rows, schema)


def _codes(codes: list[dict[str, Any]] | None) -> str | None:
    return ", ".join(f"{c['code']} ×{c['count']}" for c in codes[:3]) if codes else None


def _side(k_a: int, k_b: int) -> str:
    return "both" if k_a and k_b else "a only" if k_a else "b only"


def _tools(a: Side, b: Side, confidence: float) -> pl.DataFrame:
    def own(side: Side, tag: str) -> pl.DataFrame:
        return side.tools.rename({"calls": f"{tag}_calls", "failed": f"{tag}_failed", "codes": f"{tag}_codes"})

    joined = own(a, "a").join(own(b, "b"), on="name", how="full", coalesce=True, nulls_equal=True)
    rows = []
    counts = pl.col("a_calls", "b_calls", "a_failed", "b_failed").fill_null(0)
    for row in joined.with_columns(counts).sort("name", nulls_last=True).iter_rows(named=True):
        n_a, n_b, k_a, k_b = (row[key] for key in ("a_calls", "b_calls", "a_failed", "b_failed"))
        codes = {f"{tag}_top_error_codes": _codes(row[f"{tag}_codes"]) for tag in "ab"}
        rates = _proportions(k_a, n_a, k_b, n_b, confidence, "failure_rate")
        rows.append({**row, "side": _side(n_a, n_b), **codes, **rates})
    _adjust(rows, lambda row: "lower")
    schema = {
        "name": pl.String,
        "side": pl.String,
        **_sides(pl.Int64, "calls", "failed"),
        **_sides(pl.Float64, "failure_rate"),
        **_sides(pl.String, "top_error_codes"),
        **_PROPORTION_SCHEMA,
    }
    frame = _frame(rows, schema)
    return frame.sort(["a_failed", "b_failed", "name"], descending=[True, True, False], nulls_last=True)


def _errors(a: Side, b: Side, confidence: float) -> pl.DataFrame:
    """The failed runs of each side grouped as the report groups them (``group_failures``), joined by group."""

    def groups(side: Side, tag: str) -> pl.DataFrame:
        named = {"runs": "", "outcomes": "_outcomes", "example_message": "_example", "example_session_id": "_session"}
        named |= {"example_label": "_label", "example_name": "_name"}
        frame = group_failures(side.runs.filter(pl.col("outcome").is_in(FAILED_OUTCOMES)))
        return frame.select("code", "message", *(pl.col(name).alias(tag + end) for name, end in named.items()))

    keys = ["code", "message"]
    joined = groups(a, "a").join(groups(b, "b"), on=keys, how="full", coalesce=True, nulls_equal=True)
    rows = []
    n_a, n_b = a.runs.height, b.runs.height
    for row in joined.with_columns(pl.col("a", "b").fill_null(0)).sort(keys, nulls_last=True).iter_rows(named=True):
        k_a, k_b = row["a"], row["b"]
        rows.append(
            {
                **row,
                "change": {"a only": "vanished", "b only": "new"}.get(_side(k_a, k_b), "both"),
                "outcomes": row["b_outcomes"] or row["a_outcomes"],
                "example": row["b_example"] or row["a_example"],
                "a_example_session": row["a_session"],
                "b_example_session": row["b_session"],
                "a_example_name": session_name(row["a_label"], row["a_name"]),
                "b_example_name": session_name(row["b_label"], row["b_name"]),
                **_proportions(k_a, n_a, k_b, n_b, confidence),
            }
        )
    _adjust(rows, lambda row: "lower")
    schema = {
        "code": pl.String,
        "message": pl.String,
        "change": pl.String,
        **dict.fromkeys("ab", pl.Int64),
        **_sides(pl.Float64, "rate"),
        "outcomes": pl.String,
        "example": pl.String,
        **_sides(pl.String, "example_session", "example_name"),
        **_PROPORTION_SCHEMA,
    }
    rank = pl.col("change").replace_strict({"new": 0, "vanished": 1, "both": 2}, default=3)
    frame = _frame(rows, schema)
    order = [rank, (pl.col("b") - pl.col("a")).abs(), pl.col("b") + pl.col("a"), "code", "message"]
    return frame.sort(order, descending=[False, True, True, False, False], nulls_last=True)


_GOOD = {"verdict": "ok", "descriptor status": "valid", "listing row": "child"}


def _health(a: Side, b: Side, confidence: float) -> pl.DataFrame:
    keys = ["aspect", "value"]
    joined = a.health.rename({"count": "a", "total": "a_total"}).join(
        b.health.rename({"count": "b", "total": "b_total"}), on=keys, how="full", coalesce=True, nulls_equal=True
    )
    totals = {
        tag: dict(side.health.group_by("aspect").agg(pl.col("total").max()).iter_rows())
        for tag, side in (("a", a), ("b", b))
    }
    rows = []
    for row in joined.sort(keys).iter_rows(named=True):
        aspect = row["aspect"]
        k_a, k_b = int(row["a"] or 0), int(row["b"] or 0)
        n_a, n_b = int(totals["a"].get(aspect) or 0), int(totals["b"].get(aspect) or 0)
        out = {**row, "a": k_a, "b": k_b, "a_total": n_a, "b_total": n_b}
        out.update(_proportions(k_a, n_a, k_b, n_b, confidence, "share"))
        if aspect in ("problem", "listing"):  # a file can have several problems: a count, not a proportion
            out.update(dict.fromkeys(_PROPORTION_COLUMNS))
        rows.append(out)

    def better(row: dict[str, Any]) -> str | None:
        good = _GOOD.get(row["aspect"])
        return None if good is None else "higher" if row["value"] == good else "lower"

    _adjust(rows, better)
    schema = {
        "aspect": pl.String,
        "value": pl.String,
        **dict.fromkeys("ab", pl.Int64),
        **_sides(pl.Int64, "total"),
        **_sides(pl.Float64, "share"),
        **_PROPORTION_SCHEMA,
    }
    return _frame(rows, schema)


def compare(
    a: Source,
    b: Source,
    *,
    match: Match = "none",
    prices: Prices | PriceTable | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    labels: tuple[str, str] = ("A", "B"),
    label: str | None = None,
    without_label: str | None = None,
    finding: str | None = None,
    without_finding: str | None = None,
    label_store: str | os.PathLike[str] | None = None,
    rules: str | os.PathLike[str] | None = None,
) -> Comparison:
    """Compare two corpora or archives, B against A: outcomes, metrics, models, tools, errors, health (and tasks).

    Args:
        a: the baseline: a read corpus, an opened archive, or a window of one (``Window.corpus``).
        b: the corpus compared with it.
        match: pair runs (roots) of the two sides by their ``title`` or first human ``prompt`` and add
            ``tasks`` (paired tests) and ``pairs``; ``none`` (the default) reads no log again.
        prices: a price table for the costs (default: genai-prices'); both sides are priced by it.
        confidence: of every interval.
        resamples: bootstrap resamples of each metric's interval.
        seed: seeds the bootstrap (the same inputs and seed give the same intervals).
        labels: the names the views give A and B.
        label: compare only the runs with this label (on each side; ``run_filter.filter_runs``).
        without_label: compare only the runs without this label.
        finding: compare only the runs with a finding of this kind (a detector's or a rule's name).
        without_finding: compare only the runs without a finding of this kind.
        label_store: the label store the label filters read (default: the ``labels`` column of a corpus
            read with ``labels=``).
        rules: a rules file whose rules' names the finding filters may give.

    Raises:
        TypeError: a side is neither a ``Corpus`` nor an ``Archive``.
        ArchiveError: an archive's data file fails its checks or cannot be read.
        SubsetError: a label filter over sessions without labels and no ``label_store``.
        FindingsError: a finding filter's kind is neither a detector nor a rule of ``rules``.
        BoundError: ``seed`` or ``resamples`` outside its range (``bounds.SEED``, ``bounds.RESAMPLES``).

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> corpus = read_corpus("data/sample")
        >>> same = compare(corpus, corpus)
        >>> same.outcomes.select("outcome", "a", "b", "diff", "p_value").row(0)
        ('completed', 17, 17, 0.0, 1.0)
        >>> same.metrics.filter(pl.col("level") == "run").select("metric", "median_change", "p_value").head(2).rows()
        [('cost', None, None), ('tokens', 0.0, 1.0)]
        >>> planted = read_corpus("data/findings")
        >>> clean = compare(planted, planted, without_finding="tool-loop")
        >>> clean.runs, [note for note in clean.notes if note.startswith("filter")]
        ((49, 49), ['filter (no tool-loop finding): left out 1 of 50 runs of A and 1 of 50 of B'])
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    SEED.check("seed", seed)
    RESAMPLES.check("resamples", resamples)
    table = price_table(prices)
    chosen = {"label": label, "without_label": without_label, "finding": finding, "without_finding": without_finding}
    what = describe_filter(**chosen)
    if what is not None:
        kept_a = filter_runs(a, **chosen, label_store=label_store, rules=rules)
        kept_b = kept_a if b is a else filter_runs(b, **chosen, label_store=label_store, rules=rules)
        a, b = kept_a.corpus, kept_b.corpus
    side_a, side_b = read_side(a, table), read_side(b, table)
    comparison = Comparison(
        a_label=labels[0],
        b_label=labels[1],
        runs=(side_a.runs.height, side_b.runs.height),
        trees=(side_a.trees.height, side_b.trees.height),
        cost_unknown=(int(side_a.runs["cost_usd"].is_null().sum()), int(side_b.runs["cost_usd"].is_null().sum())),
        outcomes=_outcomes(side_a, side_b, confidence),
        metrics=_metrics(side_a, side_b, seed=seed, resamples=resamples, confidence=confidence),
        models=_models(side_a, side_b, confidence),
        tools=_tools(side_a, side_b, confidence),
        errors=_errors(side_a, side_b, confidence),
        health=_health(side_a, side_b, confidence),
        match=match,
        confidence=confidence,
        seed=seed,
        resamples=resamples,
    )
    if match != "none":
        comparison.tasks, comparison.pairs = match_tasks(a, b, side_a, side_b, match=match)
    comparison.notes = _notes(comparison, side_a, side_b)
    if what is not None:
        comparison.notes.append(
            f"filter ({what}): left out {kept_a.left_out} of {kept_a.total} runs of A "
            f"and {kept_b.left_out} of {kept_b.total} of B"
        )
    return comparison


def _notes(comparison: Comparison, a: Side, b: Side) -> list[str]:
    notes = [
        "intervals: Newcomb's hybrid score interval for a difference of proportions; a percentile bootstrap "
        f"({comparison.resamples} resamples, seed {comparison.seed}) for a relative change; "
        f"{round(comparison.confidence * 100)}% each",
        "tests: Fisher's exact (χ² above 10,000 runs), Mann-Whitney U; p adj.: Holm's method within each table",
    ]
    unknown_a, unknown_b = comparison.cost_unknown
    if unknown_a or unknown_b:
        notes.append(
            f"cost: {unknown_a} runs of A and {unknown_b} of B have an unknown cost (an unpriced model or unread "
            "usage): cost is not tested, and a --fail-on on it fails; a side with some shows its runs' known "
            "part, a lower bound (≥), one with only such runs no figure"
        )
    if bool((a.runs["depth"] > 0).any() or (b.runs["depth"] > 0).any()):
        notes.append(
            "runs are tested as independent, but subagents are not independent of their root: the tree rows "
            "(one value per tree) are the independent units"
        )
    for tag, side in (("A", a), ("B", b)):
        if side.listing_error is not None:
            notes.append(f"{tag}'s listing fails as a whole ({side.listing_error}): its listing rows are not counted")
    return notes
