"""A ``Comparison`` in a notebook: what changed significantly first, then each table (escaped HTML, no script).

``Comparison._repr_html_`` calls ``comparison_html`` (through ``frames.display.NOTEBOOK_HTML``, which the package
facade fills); the full page is ``views.compare_html``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import polars as pl

from subagent_catalog.analysis.compare import Comparison
from subagent_catalog.frames.display import BOX, escape, table_html
from subagent_catalog.frames.units import MISSING, human_cost, human_count, human_duration
from subagent_catalog.views.run_format import model_cost

P_ADJ = "p adj."
"""The Holm-adjusted p-value's name in every comparison view's headers and lines (JSON's key is ``p_adjusted``)."""

UNADJUSTED = f"The per-row intervals are not adjusted for the table's other rows; only {P_ADJ} is (Holm's method)."
"""The line every comparison view puts under its verdict: the p-values are adjusted, the intervals are not."""

MONEY_DIGITS = 2
"""Significant digits of a cost below $1 in every comparison view (``$0.0037`` beside ``$0.0050``); cents above."""


def figure(value: float | None, unit: str) -> str:
    """A metric's value in its unit as people read it (``–`` when unknown).

    A cost has ``MONEY_DIGITS`` significant digits below $1 and cents above; a count is whole, or
    three significant digits when it is not (a mean). Two figures side by side: ``figures``.

    Examples:
        >>> figure(0.0042, "USD"), figure(0.005, "USD"), figure(92_000, "ms"), figure(12_345.0, "tokens")
        ('$0.0042', '$0.0050', '1 min 32 s', '12.3 k')
        >>> figure(2.5, "steps"), figure(3.0, "steps"), figure(None, "USD")
        ('2.5', '3', '–')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if unit == "USD":
        return human_cost(value, significant=MONEY_DIGITS)
    if unit == "ms":
        return human_duration(value)
    if float(value).is_integer() or abs(value) >= 1000:
        return human_count(round(value))
    return f"{value:,.{_places(value)}f}"


def _places(value: float) -> int:
    """Decimals that show ``value`` to three significant digits, trailing zeros dropped (0 for a whole number)."""
    if value == 0 or float(value).is_integer():
        return 0
    places = max(0, 2 - math.floor(math.log10(abs(value))))
    text = f"{abs(value):.{places}f}".rstrip("0")
    return len(text.partition(".")[2])


def figures(a: float | None, b: float | None, unit: str) -> tuple[str, str]:
    """A's and B's figure of one metric, formatted alike: counts that are not whole share their decimals.

    Costs and durations follow ``figure`` (one rule for both sides); a count below 1,000 that is not whole
    on one side (a mean, a median of an even number of runs) gets as many decimals on both, so ``3.00``
    stands beside ``2.95``, not ``3``.

    Examples:
        >>> figures(0.0037, 0.005, "USD"), figures(0.8836, 1.1715, "USD")
        (('$0.0037', '$0.0050'), ('$0.88', '$1.17'))
        >>> figures(3.0, 2.9533, "steps"), figures(3.0, 3.5, "steps"), figures(2.0, 3.0, "steps")
        (('3.00', '2.95'), ('3.0', '3.5'), ('2', '3'))
        >>> figures(None, 2.5, "steps"), figures(950.5, 1200.0, "tokens")
        (('–', '2.5'), ('950', '1,200'))
    """
    if unit in ("USD", "ms"):
        return figure(a, unit), figure(b, unit)
    known = [float(v) for v in (a, b) if v is not None and not math.isnan(v)]
    if not known or any(abs(v) >= 1000 for v in known):
        return figure(a, unit), figure(b, unit)
    places = max(_places(v) for v in known)
    a_text, b_text = (MISSING if v is None or math.isnan(v) else f"{v:,.{places}f}" for v in (a, b))
    return a_text, b_text


def row_figures(row: Mapping[str, Any], stat: str) -> tuple[str, str]:
    """A metrics row's A and B figure of ``stat`` (``median``, ``mean``...) by ``figures``, ``≥`` before a lower bound.

    A side's cost figures are a lower bound (``a_lower_bound``) when some of its runs' costs are unknown.

    Examples:
        >>> row = {"unit": "USD", "a_median": 0.5, "b_median": 0.01, "a_lower_bound": False, "b_lower_bound": True}
        >>> row_figures(row, "median")
        ('$0.50', '≥ $0.010')
    """
    texts = figures(row[f"a_{stat}"], row[f"b_{stat}"], row["unit"])
    a_text, b_text = (
        f"≥ {text}" if row.get(f"{side}_lower_bound") and text != MISSING else text
        for side, text in zip("ab", texts, strict=True)
    )
    return a_text, b_text


def side_model_cost(row: Mapping[str, Any], side: str) -> str:
    """A ``models`` row's cost on one side as the report's model table writes it (``model_cost``); ``–`` unused.

    Examples:
        >>> row = {"a_sessions": 3, "a_cost_usd": None, "a_cost_usd_known": 0.0, "a_unpriced_steps": 4, "b_sessions": 0}
        >>> side_model_cost(row, "a"), side_model_cost(row, "b")
        ('unpriced', '–')
    """
    if not row[f"{side}_sessions"]:
        return MISSING
    return model_cost({name: row[f"{side}_{name}"] for name in ("cost_usd", "cost_usd_known", "unpriced_steps")})


def percent(value: float | None, *, signed: bool = False, digits: int = 1) -> str:
    """A share or change as a percentage, written as the report writes a share (``5.6%``; ``–`` when unknown).

    Examples:
        >>> percent(0.1234), percent(0.05, signed=True), percent(None)
        ('12.3%', '+5.0%', '–')
    """
    return "–" if value is None else f"{value * 100:{'+' if signed else ''}.{digits}f}%"


def points(value: float | None) -> str:
    """A difference of two proportions in percentage points (``–`` when unknown).

    Examples:
        >>> points(0.025), points(-0.1)
        ('+2.5 pp', '-10.0 pp')
    """
    return "–" if value is None else f"{value * 100:+.1f} pp"


def p_text(value: float | None) -> str:
    """A p-value as people read it (``< 0.001`` below a thousandth).

    Examples:
        >>> p_text(0.0004), p_text(0.0312), p_text(None)
        ('< 0.001', '0.031', '–')
    """
    return "–" if value is None else "< 0.001" if value < 0.001 else f"{value:.3f}"


def interval(low: float | None, high: float | None, *, unit: str = "pp") -> str:
    """An interval in points (``pp``) or as a signed percentage (``%``).

    Examples:
        >>> interval(0.01, 0.2), interval(-0.1, 0.05, unit="%"), interval(None, 0.1)
        ('[+1.0, +20.0] pp', '[-10.0, +5.0]%', '–')
    """
    if low is None or high is None:
        return "–"
    suffix = " pp" if unit == "pp" else "%"
    return f"[{low * 100:+.1f}, {high * 100:+.1f}]{suffix}"


def headline(comparison: Comparison) -> list[str]:
    """One line per significant row (Holm-adjusted p below 0.05), outcomes first: what changed, B against A.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.compare import compare
        >>> corpus = read_corpus("tests/data/run-facts")
        >>> headline(compare(corpus, corpus))
        []
    """
    lines = []
    found = comparison.significant()
    for row in found.get("outcomes", pl.DataFrame()).iter_rows(named=True):
        lines.append(
            f"{row['outcome']} rate {percent(row['a_rate'])} → {percent(row['b_rate'])} "
            f"({points(row['diff'])}, {interval(row['diff_low'], row['diff_high'])}, "
            f"{P_ADJ} {p_text(row['p_adjusted'])})"
        )
    for row in found.get("metrics", pl.DataFrame()).iter_rows(named=True):
        a_median, b_median = row_figures(row, "median")
        lines.append(
            f"{row['metric']} per {row['level']}: median {a_median} → {b_median} "
            f"({percent(row['median_change'], signed=True)}, "
            f"{interval(row['median_change_low'], row['median_change_high'], unit='%')}), "
            f"{P_ADJ} {p_text(row['p_adjusted'])}"
        )
    for name, key in (("tools", "name"), ("models", "model"), ("errors", "message"), ("health", "value")):
        for row in found.get(name, pl.DataFrame()).iter_rows(named=True):
            label = f"{row['aspect']} {row[key]}" if name == "health" else f"{name[:-1]} {row[key]}"
            lines.append(f"{label}: {points(row['diff'])} {interval(row['diff_low'], row['diff_high'])}")
    for row in found.get("tasks", pl.DataFrame()).iter_rows(named=True):
        lines.append(
            f"paired {row['metric']}: B higher in {row['b_higher']}, A in {row['a_higher']} of {row['pairs']} "
            f"pairs, {P_ADJ} {p_text(row['p_adjusted'])}"
        )
    return lines


def comparison_html(comparison: Comparison) -> str:
    """The notebook display of a comparison: the headline, the notes, then each table's first rows.

    Examples:
        >>> from subagent_catalog.corpus import read_corpus
        >>> from subagent_catalog.analysis.compare import compare
        >>> corpus = read_corpus("tests/data/run-facts")
        >>> "no significant difference" in comparison_html(compare(corpus, corpus))
        True
    """
    a, b = escape(comparison.a_label), escape(comparison.b_label)
    parts = [
        f'<div style="{BOX}"><b>Comparison</b>: {b} against {a} · runs {comparison.runs[0]:,} → '
        f"{comparison.runs[1]:,} · trees {comparison.trees[0]:,} → {comparison.trees[1]:,}"
    ]
    lines = headline(comparison)
    if lines:
        items = "".join(f"<li>{escape(line)}</li>" for line in lines)
        parts.append(f"<div>Changed significantly (Holm-adjusted p &lt; 0.05):</div><ul>{items}</ul>")
    else:
        parts.append("<div>no significant difference (Holm-adjusted p &lt; 0.05 in no table)</div>")
    parts.append(f"<div>{escape(UNADJUSTED)}</div>")
    parts.append("<ul>" + "".join(f"<li>{escape(note)}</li>" for note in comparison.notes) + "</ul></div>")
    for name in ("outcomes", "metrics", "errors", "tools", "models", "health", "tasks", "pairs"):
        frame = getattr(comparison, name)
        if frame is not None:
            parts.append(table_html(frame, max_rows=20, caption=name))
    return "".join(parts)
