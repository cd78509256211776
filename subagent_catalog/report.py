"""The batch report: one self-contained, offline HTML file for a corpus.

:func:`render_report` returns the page and :func:`write_report` writes it.
The page inlines its CSS and JavaScript and draws its charts as static SVG
(Altair specs rendered by vl-convert, embedded as ``data:`` images), so it
fetches nothing when viewed. It holds a corpus summary, the problems, the
session forest as a lazily expanded tree (the tree is a JSON blob the inline
script expands on click, a page of children at a time), distribution charts,
the largest and most damaged trees, and the ``list_agents`` text of chosen
parents. When upstream's listing fails as a whole the page still renders the
summary and the problems under a banner naming the failure.

Everything that comes from the corpus (ids, labels, cwds, messages) is
escaped: Jinja autoescaping for markup, :func:`script_json` for the JSON blob.
Long values are clipped for display, with a bounded full text in a tooltip.
:func:`summary_text` gives the ``summary`` command's terminal text.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import polars as pl

from subagent_catalog.catalog import Semantics, catalog, list_agents_text
from subagent_catalog.collation import collation_key
from subagent_catalog.corpus import Corpus
from subagent_catalog.errors import CatalogError
from subagent_catalog.jsvalue import is_number, js_number, parse_json

__all__ = [
    "DEFAULT_PARENT_CAP",
    "Forest",
    "build_forest",
    "chart_text",
    "clip",
    "corpus_summary",
    "default_parents",
    "render_report",
    "script_json",
    "summary_text",
    "write_report",
]

DEFAULT_PARENT_CAP = 20
"""How many parents' ``list_agents`` text the report shows by default."""

LABEL_BOUND = 1000
"""Longest text kept for a tooltip (labels, ids, messages); the rest is cut."""

LISTING_LINE_BOUND = 2000
LISTING_LINES_BOUND = 500
PROBLEM_ROWS = 300
TOP_TREES = 10
TOP_CATEGORIES = 15
HORIZONTAL_LABEL = 36
VERTICAL_LABEL = 18

VERDICT_ORDER = ("ok", "torn-tail", "prefix", "failed", "skipped")
SEVERITY_ORDER = ("error", "warning", "info")
OUTCOME_COLORS = {
    "child": "#4c78a8",
    "corrupt": "#e45756",
    "unavailable": "#f58518",
    "unsupported": "#b279a2",
    "omitted": "#9d9da0",
}
STATUS_COLORS = {"valid": "#4c78a8", "malformed": "#e45756", "unknown-version": "#b279a2"}

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f]")
_NOT_XML = re.compile("[\ufffe\uffff\ud800-\udfff]")


def chart_text(value: str) -> str:
    """Text as a chart shows it: control characters as visible pictures, nothing XML forbids.

    The chart renderer parses its own SVG as XML and aborts the whole
    process (an uncatchable Rust panic) on a character XML 1.0 forbids, so
    every string in a chart spec goes through this first. C0 controls and
    DEL become their Control Pictures (``U+2400``–``U+2421``); the
    non-characters U+FFFE/U+FFFF and lone surrogates become U+FFFD.

    Examples:
        >>> chart_text("gpt\\x00x\\x7f")
        'gpt␀x␡'
        >>> chart_text("a\\ufffeb")
        'a�b'
    """
    text = _CONTROL.sub(lambda m: chr(0x2421 if m[0] == "\x7f" else 0x2400 + ord(m[0])), value)
    return _NOT_XML.sub("\ufffd", text)


def _chart_safe(value: Any) -> Any:
    """``value`` (a chart spec) with :func:`chart_text` applied to every string, keys included."""
    if isinstance(value, str):
        return chart_text(value)
    if isinstance(value, dict):
        return {chart_text(k) if isinstance(k, str) else k: _chart_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_chart_safe(v) for v in value]
    return value


def clip(value: object, limit: int = LABEL_BOUND) -> str:
    """A value as bounded display text: lone surrogates replaced, long text cut with an ellipsis.

    Examples:
        >>> clip("abcdef", 3)
        'abc…'
        >>> clip(None)
        ''
    """
    if value is None:
        return ""
    text = _LONE_SURROGATE.sub("\ufffd", str(value))
    return text if len(text) <= limit else text[:limit] + "…"


def script_json(value: Any) -> str:
    """JSON text that is safe inside an HTML ``<script>`` element.

    ``<``, ``>`` and ``&`` (and the JavaScript line separators) are written
    as ``\\uXXXX`` escapes, so no value can close the element or open a
    comment; ``JSON.parse`` reads the same value back.

    Examples:
        >>> script_json({"label": "</script><b>&"})
        '{"label":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e\\\\u0026"}'
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = _LONE_SURROGATE.sub("\ufffd", text)
    for char, escape in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text


# --------------------------------------------------------------------------- summary


def _counts(series: pl.Series, order: Sequence[str] = ()) -> dict[str, int]:
    counted = Counter("(none)" if value is None else str(value) for value in series.to_list())
    ordered = {key: counted.pop(key) for key in order if key in counted}
    ordered.update(sorted(counted.items(), key=lambda item: (-item[1], item[0])))
    return ordered


def _iso(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else None


def _minute(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value is not None else None


def _human_bytes(size: int) -> str:
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
    ``first_created``, ``last_activity``, ``descriptors``,
    ``descriptor_statuses``, ``listing_error``, ``listing_error_path``,
    ``problems``, ``problem_severities``, ``problem_kinds``, and ``rows``
    (listing rows by outcome; ``None`` when the listing fails).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> facts = corpus_summary(read_corpus(tempfile.mkdtemp()))
        >>> facts["files"], facts["listing_error"], facts["rows"]
        (0, None, {})
    """
    rows = catalog(corpus, semantics=semantics) if corpus.listing_error is None else None
    return _summary(corpus, semantics, rows)


def _summary(corpus: Corpus, semantics: Semantics, frame: pl.DataFrame | None) -> dict[str, Any]:
    sessions = corpus.sessions
    listed = sessions.filter(pl.col("listed"))
    created = sessions["created_at"].drop_nulls()
    activity = pl.concat([created, sessions["last_event_at"].drop_nulls().cast(created.dtype)])
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
        "compression": corpus.compression,
        "semantics": semantics,
        "files": sessions.height,
        "listed": listed.height,
        "projects": sessions["project_dir"].n_unique() if sessions.height else 0,
        "subagent_sessions": listed.filter(pl.col("origin") == "subagent").height,
        "verdicts": _counts(sessions["verdict"], VERDICT_ORDER),
        "encodings": _counts(sessions["encoding"]),
        "bytes": int(sessions["bytes"].sum() or 0),
        "first_created": created.min() if created.len() else None,
        "last_activity": activity.max() if activity.len() else None,
        "descriptors": corpus.descriptors.height,
        "descriptor_statuses": _counts(corpus.descriptors["status"], ("valid", "malformed", "unknown-version")),
        "listing_error": corpus.listing_error,
        "listing_error_path": corpus.listing_error_path,
        "problems": problems.height,
        "problem_severities": _counts(problems["severity"], SEVERITY_ORDER),
        "problem_kinds": kinds,
        "rows": rows,
    }


def _join_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{key} {value}" for key, value in counts.items()) if counts else "none"


def summary_text(corpus: Corpus, *, corpus_problems: int = 5, semantics: Semantics = "projection") -> str:
    """A short readable summary of a corpus for a terminal.

    Args:
        corpus: a read corpus.
        corpus_problems: how many corpus-level problems to quote.
        semantics: the listing semantics for the row counts.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> print(summary_text(read_corpus(tempfile.mkdtemp())).splitlines()[1])
        sessions     0 files, 0 listed, 0 projects
    """
    from subagent_catalog.gate import printable

    facts = corpus_summary(corpus, semantics=semantics)
    first, last = _iso(facts["first_created"]), _iso(facts["last_activity"])
    span = f"{first} → {last}" if first and last else "no timestamps"
    if facts["first_created"] is not None and facts["last_activity"] is not None:
        days = (facts["last_activity"] - facts["first_created"]).total_seconds() / 86400
        span += f" ({days:.1f} days)"
    lines = [
        f"corpus       {printable(facts['root'])} ({facts['compression']})",
        f"sessions     {facts['files']} files, {facts['listed']} listed, {facts['projects']} projects",
        f"subagents    {facts['subagent_sessions']} listed sessions with origin=subagent",
        f"verdicts     {_join_counts(facts['verdicts'])}",
        f"encodings    {_join_counts(facts['encodings'])}",
        f"bytes        {_human_bytes(facts['bytes'])} ({facts['bytes']:,})",
        f"time span    {span}",
        f"descriptors  {facts['descriptors']} ({_join_counts(facts['descriptor_statuses'])})",
    ]
    if facts["listing_error"] is not None:
        lines.append(f"listing      FAILS: {printable(facts['listing_error'])}")
    else:
        lines.append(f"listing      ok; rows ({semantics}): {_join_counts(facts['rows'] or {})}")
    lines.append(f"problems     {facts['problems']} ({_join_counts(facts['problem_severities'])})")
    for item in facts["problem_kinds"]:
        lines.append(f"  {item['count']:>6}  {item['severity']:<8} {item['scope']:<7} {item['kind']}")
    level = corpus.problems.filter(pl.col("scope") == "corpus")
    if level.height:
        lines.append(f"corpus-level problems (first {min(corpus_problems, level.height)} of {level.height}):")
        for row in level.head(corpus_problems).iter_rows(named=True):
            lines.append(f"  - {row['kind']}: {printable(row['message'])}")
            lines.append(f"      {printable(row['path'])}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- forest


@dataclass
class Forest:
    """The listed sessions as a forest (every session, ordinary forks included).

    Attributes:
        nodes: one dict per node (short keys, see the template's script):
            ``i`` id, ``k`` kind (``s`` ordinary session, ``c`` subagent
            child, ``d`` diagnostic, ``o`` subagent the listing omits, ``g``
            group), ``m`` mode, ``l`` label, ``r`` reason, ``u`` cause,
            ``x`` cause detail, ``v`` read verdict when not ``ok``, ``t``
            created time, ``w`` cwd (root sessions), ``p`` parent node, ``n`` child nodes, ``z``
            sessions below, ``a`` subagent rows below, ``e`` diagnostics below.
        roots: the top-level nodes (root sessions, then groups).
        index: node index by session id.
    """

    nodes: list[dict[str, Any]] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)


def _created_key(header: dict[str, Any]) -> float:
    value = header.get("createdAt")
    return js_number(value) if is_number(value) else float("inf")


def _created_text(header: dict[str, Any]) -> str | None:
    value = header.get("createdAt")
    if not is_number(value):
        return None
    try:
        return datetime.fromtimestamp(js_number(value) / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return None


def build_forest(corpus: Corpus, *, semantics: Semantics = "projection") -> Forest:
    """Arrange the listed sessions into trees by ``parentSession``.

    Siblings are ordered as upstream orders them (``createdAt``, then
    ``localeCompare`` of the id). Sessions whose parent is not listed are
    grouped under a ``parent not listed`` node; sessions on a lineage cycle
    (reachable from no root) under a ``lineage cycle`` node. Subagents carry
    their listing row (child or diagnostic) for ``semantics``.

    Raises:
        CatalogError: ``PERSISTENCE_LIST_FAILED`` when upstream's listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> build_forest(read_corpus(tempfile.mkdtemp())).nodes
        []
    """
    return _build_forest(corpus, catalog(corpus, semantics=semantics))


def _build_forest(corpus: Corpus, frame: pl.DataFrame) -> Forest:
    rows = frame.filter(pl.col("kind") != "error")
    by_id = {row["id"]: row for row in rows.iter_rows(named=True)}
    forest = Forest()
    headers: list[dict[str, Any]] = []
    listed = corpus.sessions.filter(pl.col("listed")).sort("list_order")
    for session in listed.select("session_id", "header_json", "verdict", "list_order").iter_rows(named=True):
        header = parse_json(session["header_json"])
        headers.append(header)
        sid = session["session_id"]
        node: dict[str, Any] = {"i": clip(sid, LABEL_BOUND), "k": "s", "n": []}
        if session["verdict"] != "ok":
            node["v"] = session["verdict"]
        created = _created_text(header)
        if created:
            node["t"] = created
        if "parentSession" not in header and isinstance(header.get("cwd"), str):
            node["w"] = clip(header["cwd"], 160)
        if header.get("origin") == "subagent":
            row = by_id.get(sid)
            if row is None:
                node["k"] = "o"
            elif row["kind"] == "child":
                node.update(k="c", m=row["mode"])
                if row["label"] is not None:
                    node["l"] = clip(row["label"], LABEL_BOUND)
            else:
                node.update(k="d", r=row["reason"], u=row["cause"])
                if row["cause_detail"]:
                    node["x"] = clip(row["cause_detail"], 300)
        forest.index[sid] = len(forest.nodes)
        forest.nodes.append(node)
    order: dict[int, tuple[float, tuple[int, ...], int]] = {
        i: (_created_key(h), collation_key(str(h.get("id", ""))), i) for i, h in enumerate(headers)
    }
    groups: dict[str, list[int]] = {}
    for i, header in enumerate(headers):
        if "parentSession" not in header:
            forest.roots.append(i)
            continue
        parent = header["parentSession"]
        at = forest.index.get(parent) if isinstance(parent, str) else None
        if at == i:
            continue  # its own parent: reachable from no root, shown under the lineage-cycle group
        if at is not None:
            forest.nodes[at]["n"].append(i)
        else:
            key = parent if isinstance(parent, str) else json.dumps(parent)
            groups.setdefault(key, []).append(i)
    for node in forest.nodes:
        node["n"].sort(key=order.__getitem__)
    forest.roots.sort(key=order.__getitem__)
    for key, members in groups.items():
        members.sort(key=order.__getitem__)
        forest.roots.append(_group(forest, f"parent not listed: {clip(key, 200)}", members))
    seen = _mark(forest, forest.roots)
    stray = [i for i in range(len(headers)) if i not in seen]
    if stray:
        cycle: list[int] = []
        for i in stray:
            if i in seen:
                continue
            cycle.append(i)
            seen |= _mark(forest, [i])
        for i in cycle:
            parent_of = forest.nodes[i].get("p")
            if parent_of is not None:
                forest.nodes[parent_of]["n"].remove(i)
        forest.roots.append(_group(forest, "lineage cycle (reachable from no root)", cycle))
    _totals(forest)
    return forest


def _group(forest: Forest, title: str, members: list[int]) -> int:
    forest.nodes.append({"i": title, "k": "g", "n": list(members)})
    return len(forest.nodes) - 1


def _mark(forest: Forest, starts: Iterable[int]) -> set[int]:
    """Set parent links from ``starts`` downwards (each node once; breaks cycles)."""
    seen: set[int] = set()
    stack: list[tuple[int, int | None]] = [(start, None) for start in starts]
    while stack:
        index, parent = stack.pop()
        if index in seen:
            continue
        seen.add(index)
        node = forest.nodes[index]
        if parent is not None:
            node["p"] = parent
        kids = [kid for kid in node["n"] if kid not in seen]
        node["n"] = kids
        stack.extend((kid, index) for kid in kids)
    return seen


def _totals(forest: Forest) -> None:
    """Fill ``z`` (sessions below), ``a`` (subagent rows below) and ``e`` (diagnostics below)."""
    order: list[int] = []
    stack = list(forest.roots)
    while stack:
        index = stack.pop()
        order.append(index)
        stack.extend(forest.nodes[index]["n"])
    for index in reversed(order):
        node = forest.nodes[index]
        size = agents = damaged = 0
        for kid in node["n"]:
            child = forest.nodes[kid]
            size += child.get("z", 0) + (child["k"] != "g")
            agents += child.get("a", 0) + (child["k"] in ("c", "d"))
            damaged += child.get("e", 0) + (child["k"] == "d")
        if size:
            node["z"] = size
        if agents:
            node["a"] = agents
        if damaged:
            node["e"] = damaged


def default_parents(
    corpus: Corpus, *, limit: int = DEFAULT_PARENT_CAP, semantics: Semantics = "projection"
) -> list[str]:
    """The parents the report lists by default: root sessions, those with subagents below first.

    Roots are listed sessions whose header names no parent. At most
    ``limit`` are returned; an empty list when the listing fails.

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> default_parents(read_corpus(tempfile.mkdtemp()))
        []
    """
    if corpus.listing_error is not None:
        return []
    forest = build_forest(corpus, semantics=semantics)
    return _default_parents(forest, limit)


def _default_parents(forest: Forest, limit: int) -> list[str]:
    roots = [i for i in forest.roots if forest.nodes[i]["k"] != "g"]
    with_agents = [i for i in roots if forest.nodes[i].get("a")]
    without = [i for i in roots if not forest.nodes[i].get("a")]
    ids = {index: sid for sid, index in forest.index.items()}
    return [ids[i] for i in (with_agents + without)[:limit]]


# --------------------------------------------------------------------------- charts


@dataclass
class Chart:
    """One rendered chart: a title, an SVG ``data:`` URI and its data as a table.

    ``svg_uri`` is ``None`` when there is nothing to count, or when the
    renderer refused the chart (``failure`` then says why; the table stays).
    """

    key: str
    title: str
    note: str
    svg_uri: str | None
    columns: list[str]
    rows: list[list[Any]]
    failure: str | None = None


def _svg_uri(spec: dict[str, Any]) -> str:
    import vl_convert

    svg: str = vl_convert.vegalite_to_svg(_chart_safe(spec))
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _drawn(chart: Chart, spec: dict[str, Any]) -> Chart:
    """``chart`` with its SVG, or with ``failure`` set when the renderer raises (the report goes on)."""
    try:
        chart.svg_uri = _svg_uri(spec)
    except (ValueError, RuntimeError) as error:  # vl-convert reports a failed conversion as ValueError
        chart.failure = clip(" ".join(f"{type(error).__name__}: {error}".split()), 300)
    return chart


def _top(values: list[str | None], limit: int = TOP_CATEGORIES, width: int = HORIZONTAL_LABEL) -> list[str]:
    """Bound categories: clip long names, keep the ``limit`` most frequent, fold the rest into ``(other)``.

    Names are cut here, to ``width`` columns, and never by the renderer: Vega
    cuts a label past its pixel limit by UTF-16 unit, which can split a
    surrogate pair (an emoji), and vl-convert then fails the whole chart.
    """
    named = ["(none)" if value is None else _clip_columns(chart_text(clip(value)), width) for value in values]
    keep = {name for name, _ in Counter(named).most_common(limit)}
    return [name if name in keep else "(other)" for name in named]


def _clip_columns(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns, ellipsis included (wide and astral characters take two)."""
    widths = [2 if char > "\uffff" or unicodedata.east_asian_width(char) in "WF" else 1 for char in text]
    if sum(widths) <= width:
        return text
    used = kept = 0
    for columns in widths:
        if used + columns > width - 1:
            break
        used, kept = used + columns, kept + 1
    return text[:kept] + "…"


def _bar_chart(
    key: str,
    title: str,
    note: str,
    data: list[dict[str, Any]],
    *,
    category: str,
    color: str,
    colors: dict[str, str],
    horizontal: bool,
    category_title: str,
    sort: list[str] | None = None,
    time_unit: str | None = None,
) -> Chart:
    """A stacked bar chart of ``data`` rows counted by (category, color), with totals on the bars."""
    import altair as alt

    counted = Counter((row[category], row[color]) for row in data)
    values = [{category: c, color: s, "count": n} for (c, s), n in counted.items()]
    table = sorted(values, key=lambda v: (str(v[category]), str(v[color])))
    columns = [category_title, color, "count"]
    rows = [[v[category], v[color], v["count"]] for v in table]
    if not values:
        return Chart(key, title, note, None, columns, rows)
    domain = [name for name in colors if any(v[color] == name for v in values)]
    domain += sorted({v[color] for v in values} - set(domain))
    scale = alt.Scale(domain=domain, range=[colors.get(name, "#72b7b2") for name in domain])
    legend = alt.Legend(title=None, orient="bottom", direction="horizontal")
    source = alt.Data(values=values)  # type: ignore[no-untyped-call]
    total = alt.X("sum(count):Q", title="count") if horizontal else alt.Y("sum(count):Q", title="count")
    if time_unit is not None:
        fmt = "%b %d %H:00" if "hours" in time_unit else "%b %d"
        place: Any = alt.X(
            f"{category}:T",
            timeUnit=cast(Any, time_unit),
            title=category_title,
            axis=alt.Axis(format=fmt, labelAngle=-40, labelOverlap="greedy"),
        )
    elif horizontal:
        totals = Counter(row[category] for row in data)
        by_total = sorted(totals, key=lambda name: (-totals[name], str(name)))
        place = alt.Y(
            f"{category}:N",
            sort=sort if sort is not None else by_total,
            title=category_title,
            axis=alt.Axis(labelLimit=0),  # no cut: Vega's cut can split a surrogate pair
        )
    else:
        place = alt.X(
            f"{category}:N",
            sort=sort if sort is not None else "ascending",
            title=category_title,
            axis=alt.Axis(labelAngle=0, labelLimit=0),
        )
    channels = {"x": total, "y": place} if horizontal else {"x": place, "y": total}
    bars = alt.Chart(source).mark_bar().encode(color=alt.Color(f"{color}:N", scale=scale, legend=legend), **channels)
    layers = [bars]
    if time_unit is None:
        text = (
            alt.Chart(source)
            .mark_text(
                align="left" if horizontal else "center",
                baseline="middle" if horizontal else "bottom",
                dx=3 if horizontal else 0,
                dy=0 if horizontal else -3,
                fontSize=10,
                color="#444",
            )
            .encode(text=alt.Text("sum(count):Q"), **channels)
        )
        layers.append(text)
    height = max(60, 22 * len({v[category] for v in values})) if horizontal else 220
    chart = (
        alt.layer(*layers)
        .properties(width=430, height=height)
        .configure_view(stroke=None)
        .configure_axis(labelFontSize=11, titleFontSize=11, gridColor="#eeeeee")
        .configure_legend(labelFontSize=11, symbolType="square")
    )
    return _drawn(Chart(key, title, note, None, columns, rows), chart.to_dict())


def _outcome(row: dict[str, Any]) -> str:
    return "child" if row["kind"] == "child" else str(row["reason"])


def _time_bins(millis: list[int]) -> tuple[str, str]:
    """A bin width for the time chart: (Polars duration, Vega-Lite time unit)."""
    span = (max(millis) - min(millis)) / 86_400_000 if millis else 0
    if span <= 2:
        return "1h", "utcyearmonthdatehours"
    if span <= 120:
        return "1d", "utcyearmonthdate"
    return "1w", "utcyearmonthdate"


def _charts(corpus: Corpus, rows: pl.DataFrame | None) -> list[Chart]:
    charts: list[Chart] = []
    if rows is not None:
        listed = [r for r in rows.iter_rows(named=True) if r["kind"] in ("child", "diagnostic")]
        diagnostics = [r for r in listed if r["kind"] == "diagnostic"]
        data = [
            {"cause": name, "reason": str(r["reason"])}
            for r, name in zip(diagnostics, _top([r["cause"] for r in diagnostics], 25), strict=True)
        ]
        charts.append(
            _bar_chart(
                "reason-cause",
                "Diagnostics by reason and cause",
                "Each diagnostic row once; the cause is the audit column behind upstream's reason.",
                data,
                category="cause",
                color="reason",
                colors=OUTCOME_COLORS,
                horizontal=True,
                category_title="cause",
            )
        )
        data = [
            {"provider": name, "outcome": _outcome(r)}
            for r, name in zip(listed, _top([r["provider"] for r in listed]), strict=True)
        ]
        charts.append(
            _bar_chart(
                "provider",
                "Listing rows by provider",
                "Provider of the child's last descriptor; (none) when it has none.",
                data,
                category="provider",
                color="outcome",
                colors=OUTCOME_COLORS,
                horizontal=True,
                category_title="provider",
            )
        )
        depth_of = dict(
            zip(corpus.sessions["session_id"].to_list(), corpus.sessions["delegation_depth"].to_list(), strict=True)
        )
        depths = [depth_of.get(r["id"]) for r in listed]
        data = [
            {"depth": "?" if d is None else str(d), "outcome": _outcome(r)} for r, d in zip(listed, depths, strict=True)
        ]
        order = sorted({row["depth"] for row in data}, key=lambda d: (d == "?", int(d) if d != "?" else 0))
        charts.append(
            _bar_chart(
                "depth",
                "Listing rows by delegation depth",
                "delegationDepth from the child's header.",
                data,
                category="depth",
                color="outcome",
                colors=OUTCOME_COLORS,
                horizontal=False,
                category_title="delegation depth",
                sort=order,
            )
        )
        timed = [r for r in listed if r["created_at_ms"] is not None]
        every, time_unit = _time_bins([r["created_at_ms"] for r in timed])
        frame = pl.DataFrame(
            {"ms": [r["created_at_ms"] for r in timed], "outcome": [_outcome(r) for r in timed]},
            schema={"ms": pl.Int64, "outcome": pl.String},
        )
        binned = frame.with_columns(
            pl.from_epoch("ms", time_unit="ms").dt.truncate(every).dt.strftime("%Y-%m-%dT%H:%M:%SZ").alias("bin")
        )
        data = [{"created": b, "outcome": o} for b, o in binned.select("bin", "outcome").iter_rows()]
        unit = {"1h": "hour", "1d": "day", "1w": "week"}[every]
        charts.append(
            _bar_chart(
                "time",
                f"Listing rows over time (per {unit})",
                "By the child's createdAt (UTC).",
                data,
                category="created",
                color="outcome",
                colors=OUTCOME_COLORS,
                horizontal=False,
                category_title=f"created ({unit}, UTC)",
                time_unit=time_unit,
            )
        )
    descriptors = corpus.descriptors
    versions = _top(descriptors["version"].to_list(), width=VERTICAL_LABEL)
    data = [{"version": v, "status": s} for v, s in zip(versions, descriptors["status"].to_list(), strict=True)]
    charts.append(
        _bar_chart(
            "version",
            "Descriptor versions",
            "Every subagent/descriptor event (seed copies included), by its version field.",
            data,
            category="version",
            color="status",
            colors=STATUS_COLORS,
            horizontal=False,
            category_title="version",
        )
    )
    modes = _top(descriptors["mode"].to_list(), width=VERTICAL_LABEL)
    data = [{"mode": m, "status": s} for m, s in zip(modes, descriptors["status"].to_list(), strict=True)]
    charts.append(
        _bar_chart(
            "mode",
            "Descriptor modes",
            "Every subagent/descriptor event, by its mode field.",
            data,
            category="mode",
            color="status",
            colors=STATUS_COLORS,
            horizontal=False,
            category_title="mode",
        )
    )
    return charts


# --------------------------------------------------------------------------- page


def _top_trees(forest: Forest) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    entries = []
    for index in forest.roots:
        node = forest.nodes[index]
        entries.append(
            {
                "node": index,
                "id": node["i"],
                "group": node["k"] == "g",
                "sessions": node.get("z", 0) + (node["k"] != "g"),
                "agents": node.get("a", 0),
                "damaged": node.get("e", 0),
            }
        )
    largest = sorted(entries, key=lambda e: (-e["sessions"], -e["agents"]))[:TOP_TREES]
    damaged = sorted((e for e in entries if e["damaged"]), key=lambda e: (-e["damaged"], -e["agents"]))[:TOP_TREES]
    return largest, damaged


def _bounded_listing(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    hidden = max(0, len(lines) - LISTING_LINES_BOUND)
    shown = [clip(line, LISTING_LINE_BOUND) for line in lines[:LISTING_LINES_BOUND]]
    return "\n".join(shown), hidden


def _listings(corpus: Corpus, parents: list[str], semantics: Semantics) -> list[dict[str, Any]]:
    out = []
    for parent in parents:
        entry: dict[str, Any] = {"parent": parent}
        for scope in ("children", "descendants"):
            try:
                text, hidden = _bounded_listing(list_agents_text(corpus, parent, scope=scope, semantics=semantics))
                entry[scope] = {"text": text, "hidden": hidden, "lines": text.count("\n") + 1 + hidden}
            except CatalogError as error:
                entry[scope] = {"error": str(error)}
        out.append(entry)
    return out


def _problem_tables(corpus: Corpus) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    problems = corpus.problems
    rank = {name: i for i, name in enumerate(SEVERITY_ORDER)}
    summary = problems.group_by("severity", "kind", "scope", "fails_listing").len().rename({"len": "count"}).to_dicts()
    summary.sort(key=lambda r: (rank.get(r["severity"], 9), not r["fails_listing"], -r["count"], r["kind"]))
    detail = problems.with_row_index("order").to_dicts()
    detail.sort(key=lambda r: (rank.get(r["severity"], 9), not r["fails_listing"], r["order"]))
    root = corpus.root
    for row in detail:
        path = row["path"] or ""
        try:
            row["relpath"] = os.path.relpath(path, root) if path else ""
        except ValueError:
            row["relpath"] = path
    return summary, detail[:PROBLEM_ROWS]


def _assets() -> tuple[str, str]:
    from importlib.resources import files

    base = files("subagent_catalog").joinpath("templates")
    return base.joinpath("report.css").read_text("utf-8"), base.joinpath("report.js").read_text("utf-8")


def render_report(
    corpus: Corpus,
    *,
    parents: Sequence[str] | None = None,
    semantics: Semantics = "projection",
    title: str | None = None,
) -> str:
    """The report page for a corpus, as one self-contained HTML string.

    Args:
        corpus: a read corpus.
        parents: the sessions whose ``list_agents`` text to show (default:
            up to :data:`DEFAULT_PARENT_CAP` root sessions, those with
            subagents first).
        semantics: the listing semantics for the tree, charts and listings.
        title: the page title (default: from the root's name).

    Examples:
        >>> import tempfile
        >>> from subagent_catalog.corpus import read_corpus
        >>> page = render_report(read_corpus(tempfile.mkdtemp()))
        >>> page.startswith("<!doctype html>"), "<script src" in page
        (True, False)
    """
    import jinja2
    from markupsafe import Markup

    from subagent_catalog import __version__

    forest: Forest | None = None
    rows: pl.DataFrame | None = None
    if corpus.listing_error is None:
        rows = catalog(corpus, semantics=semantics)
        forest = _build_forest(corpus, rows)
    facts = _summary(corpus, semantics, rows)
    roots_total = len([i for i in forest.roots if forest.nodes[i]["k"] != "g"]) if forest else 0
    chosen = list(parents) if parents is not None else (_default_parents(forest, DEFAULT_PARENT_CAP) if forest else [])
    listings = _listings(corpus, chosen, semantics) if corpus.listing_error is None else []
    largest, damaged = _top_trees(forest) if forest else ([], [])
    problem_summary, problem_rows = _problem_tables(corpus)
    css, js = _assets()
    script_hash = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("subagent_catalog", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["clip"] = clip
    env.filters["human_bytes"] = _human_bytes
    env.filters["minute"] = _minute
    forest_data = {"nodes": forest.nodes, "roots": forest.roots} if forest else {"nodes": [], "roots": []}
    template = env.get_template("report.html.j2")
    return template.render(
        title=title or f"subagent-catalog report: {os.path.basename(os.path.normpath(corpus.root)) or corpus.root}",
        facts=facts,
        version=__version__,
        generated=datetime.now(tz=UTC).strftime("%Y-%m-%d %H:%M UTC"),
        semantics=semantics,
        css=Markup(css),
        js=Markup(js),
        script_hash=script_hash,
        forest_json=Markup(script_json(forest_data)),
        node_count=len(forest.nodes) if forest else 0,
        roots_total=roots_total,
        charts=_charts(corpus, rows),
        largest=largest,
        damaged=damaged,
        listings=listings,
        parents_default=parents is None,
        parent_cap=DEFAULT_PARENT_CAP,
        problem_summary=problem_summary,
        problem_rows=problem_rows,
        problem_total=corpus.problems.height,
        corpus_problems=corpus.problems.filter(pl.col("scope") == "corpus").head(20).to_dicts(),
    )


def write_report(
    corpus: Corpus,
    path: str | os.PathLike[str],
    *,
    parents: Sequence[str] | None = None,
    semantics: Semantics = "projection",
    title: str | None = None,
) -> Path:
    """Render the report and write it to ``path`` (UTF-8).

    Refuses a path inside the corpus root: corpora are read-only.

    Raises:
        ValueError: ``path`` lies under the corpus root.

    Examples:
        >>> import tempfile, os
        >>> from subagent_catalog.corpus import read_corpus
        >>> out = write_report(read_corpus(tempfile.mkdtemp()), os.path.join(tempfile.mkdtemp(), "r.html"))
        >>> out.read_text(encoding="utf-8").count("<html")
        1
    """
    target = Path(path)
    root = Path(corpus.root).resolve()
    resolved = target.resolve()
    if resolved == root or root in resolved.parents:
        raise ValueError(
            f"refusing to write {str(target)!r} inside the corpus root "
            "(hint: corpora are read-only; choose another path)"
        )
    page = render_report(corpus, parents=parents, semantics=semantics, title=title)
    target.write_text(page, encoding="utf-8", errors="replace")
    return target
