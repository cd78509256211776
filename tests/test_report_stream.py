"""The report written as a stream: the same page and the same data as one rendered string.

``report_stream`` renders the page while it is written (the tree JSON in pieces,
``script_json_chunks``), the run tables take their tree nodes from ``node_index``
before the forest is built, and the charts count columns instead of a dict per row.
These tests pin each of those to an independent computation of the same values.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from subagent_catalog.analysis.forest import build_forest, forest_of_rows, sibling_order
from subagent_catalog.analysis.run_names import run_names
from subagent_catalog.analysis.run_summary import run_summary
from subagent_catalog.analysis.text import LABEL_BOUND, clip
from subagent_catalog.catalog.collation import collation_key
from subagent_catalog.catalog.tables import catalog
from subagent_catalog.cli import main
from subagent_catalog.corpus import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.frames.schemas import DESCRIPTOR_SCHEMA, PROBLEM_SCHEMA
from subagent_catalog.views.memory import release_freed_memory
from subagent_catalog.views.report import (
    _shown_names,
    render_report,
    report_stream,
    script_json,
    script_json_chunks,
    write_report,
)
from subagent_catalog.views.report_charts import report_charts
from subagent_catalog.views.report_data import diagnostic_rows, node_index, node_places
from subagent_catalog.views.report_errors import ERROR_GROUP_ROWS, error_index
from subagent_catalog.views.report_runs import FAILURE_ROWS
from tests.test_report import T0, _session, build_hostile, build_mixed
from tests.test_report import w as writer

GENERATED = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=6), inner, max_size=5),
    max_leaves=40,
)
"""JSON values with the characters the escaping handles (``st.text`` draws ``<``, U+2028, lone surrogates...)."""


@settings(max_examples=300, deadline=None)
@given(value=json_values, items=st.integers(min_value=1, max_value=4))
def test_script_json_chunks_join_to_script_json(value: Any, items: int) -> None:
    pieces = list(script_json_chunks(value, items=items))
    assert "".join(pieces) == script_json(value)


@given(value=st.dictionaries(st.integers(), st.integers(), min_size=1, max_size=4))
def test_dicts_with_other_keys_are_one_piece(value: dict[int, int]) -> None:
    assert list(script_json_chunks(value, items=1)) == [script_json(value)]


def test_long_lists_are_cut_into_pieces() -> None:
    nodes = [{"i": f"</script>{n}", "n": [n]} for n in range(10)]
    pieces = list(script_json_chunks({"nodes": nodes, "roots": list(range(10))}, items=3))
    assert len(pieces) == 1 + 4 + 1 + 1 + 4 + 1 + 1  # key, 4 pieces of nodes, "]", key, 4 of roots, "]", "}"
    assert all("</script>" not in piece for piece in pieces)
    assert json.loads("".join(pieces)) == {"nodes": nodes, "roots": list(range(10))}


def _blob(page: str) -> str:
    [body] = re.findall(r'<script type="application/json" id="forest-data">(.*?)</script>', page, flags=re.S)
    return body


def _mixed_corpus(root: Path) -> Path:
    """``build_mixed``, plus an orphan, a lineage cycle and a second project."""
    build_mixed(root)
    _session(root, "lost", parent="missing-parent", payload=writer.descriptor("one-shot"), created=T0 + 20)
    _session(root, "a", parent="b", payload=writer.descriptor("one-shot"), created=T0 + 21)
    _session(root, "b", parent="a", payload=writer.descriptor("one-shot"), created=T0 + 22)
    _session(root, "elsewhere", parent="root", payload=writer.descriptor("one-shot"), created=T0 + 23, cwd="/other")
    return root


def test_the_page_embeds_the_forest_data_as_computed_directly(tmp_path: Path) -> None:
    for build, root in ((_mixed_corpus, tmp_path / "mixed"), (build_hostile, tmp_path / "hostile")):
        build(root)
        corpus = read_corpus(root, jobs=1, cache=False)
        rows = catalog(corpus)
        forest = forest_of_rows(corpus, rows)
        summary = run_summary(corpus)
        listed = summary.listed_failures(FAILURE_ROWS, ERROR_GROUP_ROWS)["path"].to_list()
        names = run_names(corpus).join(corpus.sessions.select("list_order", "session_id"), on="list_order")
        for sid, name in names.select("session_id", "name").iter_rows():  # roots and forks carry their run's name
            node = forest.nodes[forest.index[sid]] if sid in forest.index else None
            if node is not None and node["k"] == "s" and name is not None:
                node["l"] = clip(name, LABEL_BOUND)
        expected = {
            "nodes": forest.nodes,
            "roots": forest.roots,
            "places": node_places(corpus, forest),
            "diagnostics": diagnostic_rows(corpus, rows, forest, _shown_names(corpus, rows)),
            "errors": error_index(summary, {path: i for i, path in enumerate(listed)}, forest.index),
        }
        assert _blob(render_report(corpus)) == script_json(expected)


def test_streamed_written_and_printed_pages_are_one_page(tmp_path: Path) -> None:
    root = _mixed_corpus(tmp_path / "c")
    corpus = read_corpus(root, jobs=1, cache=False)
    page = GENERATED.sub("generated -", render_report(corpus))
    pieces = list(report_stream(corpus))
    assert GENERATED.sub("generated -", "".join(pieces)) == page
    written = write_report(corpus, tmp_path / "r.html")
    assert GENERATED.sub("generated -", written.read_text(encoding="utf-8")) == page
    result = CliRunner().invoke(main, ["report", str(root), "-q", "-j", "1", "-o", str(tmp_path / "cli.html")])
    assert result.exit_code == 0, result.output
    assert GENERATED.sub("generated -", (tmp_path / "cli.html").read_text(encoding="utf-8")) == page


def test_the_cli_states_the_size_it_wrote(tmp_path: Path) -> None:
    root = _mixed_corpus(tmp_path / "c")
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(root), "-j", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out} ({os.path.getsize(out) // 1024} KiB)" in result.output


def test_node_index_is_the_forests_index(tmp_path: Path) -> None:
    corpus = read_corpus(_mixed_corpus(tmp_path), jobs=1, cache=False)
    forest = build_forest(corpus)
    assert len(forest.nodes) > len(forest.index)  # group nodes (the orphan's, the cycle's) have no session
    assert node_index(corpus) == forest.index


def test_chart_tables_count_the_listing_rows(tmp_path: Path) -> None:
    """The chart tables equal counts made row by row from the catalog rows' dicts."""
    corpus = read_corpus(_mixed_corpus(tmp_path), jobs=1, cache=False)
    rows = catalog(corpus)
    listed = [r for r in rows.iter_rows(named=True) if r["kind"] in ("child", "diagnostic")]

    def outcome(row: dict[str, Any]) -> str:
        return "child" if row["kind"] == "child" else str(row["reason"])

    depth = dict(zip(corpus.sessions["session_id"], corpus.sessions["delegation_depth"], strict=True))

    def table(pairs: list[tuple[Any, Any]]) -> list[list[Any]]:
        return [[a, b, n] for (a, b), n in sorted(Counter(pairs).items(), key=lambda p: (str(p[0][0]), str(p[0][1])))]

    diagnostics = [r for r in listed if r["kind"] == "diagnostic"]
    expected = {
        "reason-cause": table([(r["cause"] or "(none)", str(r["reason"])) for r in diagnostics]),
        "provider": table([(r["provider"] or "(none)", outcome(r)) for r in listed]),
        "depth": table([(str(depth[r["id"]]) if depth.get(r["id"]) is not None else "?", outcome(r)) for r in listed]),
    }
    charts = {chart.key: chart.rows for chart in report_charts(corpus, rows)}
    assert {key: charts[key] for key in expected} == expected
    assert sum(n for _, _, n in charts["time"]) == sum(r["created_at_ms"] is not None for r in listed)
    descriptors = corpus.descriptors
    versions = table(
        [(str(v) if v is not None else "(none)", s) for v, s in descriptors.select("version", "status").rows()]
    )
    assert charts["version"] == versions


def test_release_freed_memory_says_whether_it_can() -> None:
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert release_freed_memory() is glibc


@given(
    nodes=st.lists(
        st.tuples(st.sampled_from([0.0, 1.0, -0.0, float("inf")]), st.text(alphabet="aAbBäé-1 ", max_size=4)),
        max_size=12,
    ),
    data=st.data(),
)
def test_sibling_order_is_the_order_of_the_whole_key(nodes: list[tuple[float, str]], data: st.DataObject) -> None:
    created, ids = [c for c, _ in nodes], [i for _, i in nodes]
    members = data.draw(st.permutations(range(len(nodes))))
    expected = sorted(members, key=lambda i: (created[i], collation_key(ids[i]), i))
    sibling_order(members, created, ids)
    assert members == expected


def test_node_index_keeps_the_last_log_of_an_id_and_only_listed_sessions() -> None:
    """Nodes number the listed logs in list order; an id logged twice is its last log's node."""
    sessions = pl.DataFrame(
        {
            "list_order": [4, 0, 1, 2, 3, 5],
            "session_id": ["c", "a", "b", "a", None, "d"],
            "listed": [False, True, True, True, True, True],
        }
    )
    corpus = Corpus(
        root="/nowhere",
        compression="none",
        sessions=sessions,
        descriptors=pl.DataFrame(schema=DESCRIPTOR_SCHEMA),
        problems=pl.DataFrame(schema=PROBLEM_SCHEMA),
    )
    index = node_index(corpus)
    # listed, in list order: a (node 0), b (1), a (2), an unnamed log (3), d (4); c is not listed
    assert dict(index) == {"a": 2, "b": 1, "d": 4}
    assert (len(index), index.get("c"), index.get("nobody"), index.get(7)) == (3, None, None, None)  # type: ignore[call-overload]
    assert sorted(index) == ["a", "b", "d"]


def test_settling_waits_while_the_resident_size_falls_then_stops(monkeypatch: Any) -> None:
    """The wait lasts ``least``, goes on while the size falls 4 MiB a step, and never past ``limit``."""
    from subagent_catalog.views import memory

    mib = 1 << 20
    slept: list[float] = []
    monkeypatch.setattr(memory.time, "sleep", slept.append)
    sizes = iter([900 * mib, *(900 * mib - step * 50 * mib for step in range(1, 5)), *([700 * mib] * 50)])
    monkeypatch.setattr(memory, "resident_bytes", lambda: next(sizes))
    assert memory.settle_freed_memory(least=0.3, limit=2.0, step=0.1) == 200 * mib  # 4 falling steps, then flat
    assert len(slept) == 5
    slept.clear()
    monkeypatch.setattr(memory, "resident_bytes", lambda: 500 * mib)  # nothing to wait for: only ``least``
    assert memory.settle_freed_memory(least=0.3, limit=2.0, step=0.1) == 0
    assert len(slept) == 3
    slept.clear()
    falling = iter(range(10_000 * mib, 0, -8 * mib))
    monkeypatch.setattr(memory, "resident_bytes", lambda: next(falling))  # always falling: ``limit`` ends it
    assert memory.settle_freed_memory(least=0.3, limit=1.0, step=0.1) > 0
    assert len(slept) == 10


def test_only_large_jobs_wait_between_stages(monkeypatch: Any) -> None:
    from subagent_catalog.views import memory

    calls: list[str] = []
    monkeypatch.setattr(memory, "settle_freed_memory", lambda: calls.append("settle") or 0)
    monkeypatch.setattr(memory, "release_freed_memory", lambda: calls.append("release") or True)
    memory.between_stages(memory.LARGE_JOB - 1)
    memory.between_stages(memory.LARGE_JOB)
    assert calls == ["release", "settle"]


def test_top_trees_and_default_parents_equal_their_sorted_definitions(tmp_path: Path) -> None:
    """The largest and most damaged trees, and the default parents, as full sorts of every root would give them."""
    from subagent_catalog.analysis.forest import parents_of_forest
    from subagent_catalog.views.report import TOP_TREES

    corpus = read_corpus(_mixed_corpus(tmp_path), jobs=1, cache=False)
    forest = build_forest(corpus)
    entries = [
        {
            "node": i,
            "id": forest.nodes[i]["i"],
            "group": forest.nodes[i]["k"] == "g",
            "sessions": forest.nodes[i].get("z", 0) + (forest.nodes[i]["k"] != "g"),
            "agents": forest.nodes[i].get("a", 0),
            "damaged": forest.nodes[i].get("e", 0),
            "label": forest.nodes[i].get("l"),
        }
        for i in forest.roots
    ]
    largest = sorted(entries, key=lambda e: (-e["sessions"], -e["agents"]))[:TOP_TREES]
    damaged = sorted((e for e in entries if e["damaged"]), key=lambda e: (-e["damaged"], -e["agents"]))[:TOP_TREES]
    assert forest.top_trees(TOP_TREES) == (largest, damaged)
    ids = {node: sid for sid, node in forest.index.items()}
    roots = [i for i in forest.roots if forest.nodes[i]["k"] != "g"]
    ordered = [i for i in roots if forest.nodes[i].get("a")] + [i for i in roots if not forest.nodes[i].get("a")]
    for limit in (0, 1, 2, 50):
        assert parents_of_forest(forest, limit) == [ids[i] for i in ordered[:limit]]
