"""``otel -o`` streams a run tree (issue 42 item 11): the whole-tree export's spans, never the whole tree in memory.

The reference here is the export as it was before streaming, written out
independently of the streaming code: every log's whole ``sessions`` row, a
tree's spans all collected, then one request per group of whole traces.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Link

import subagent_catalog.interop.otlp_export as otlp_export
from subagent_catalog import read_corpus
from subagent_catalog.analysis.transcript import session_transcript
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.interop.otel import export_settings, otlp_parts, otlp_traces, write_otlp_json
from subagent_catalog.interop.otel_conventions import MAX_TEXT
from subagent_catalog.interop.otel_identity import FACT_COLUMNS, ExportIdentity, log_facts_digest, settings_digest
from subagent_catalog.interop.otel_links import spawn_link
from subagent_catalog.interop.otel_session import context, session_spans, span_id, trace_id
from subagent_catalog.interop.otlp_json import json_line
from subagent_catalog.prices import price_table
from subagent_catalog.synth.writer import EventLog, descriptor, header, write_session

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance"
RICH = SHARED / "cases" / "real-writer-rich-none"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/conformance is not present")


def _whole_tree_reference(corpus: Corpus) -> list[list[ReadableSpan]]:
    """Every root run's spans, built the pre-streaming way (full rows, each tree's spans held together)."""
    rows = corpus.sessions.filter(pl.col("verdict") != "skipped").sort("list_order").to_dicts()
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["session_id"]] = counts.get(row["session_id"], 0) + 1
    plain = {
        id(r): r["session_id"] if counts[r["session_id"]] == 1 else f"{r['session_id']}\x00{r['path']}" for r in rows
    }
    by_id: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_id.setdefault(row["session_id"], row)
    parent_of: dict[int, dict[str, Any]] = {}
    for row in rows:
        parent = by_id.get(row["parent_session"]) if isinstance(row["parent_session"], str) else None
        if row["origin"] == "subagent" and parent is not None and parent is not row:
            parent_of[id(row)] = parent
    for row in rows:  # cut a loop where it closes
        seen, at = {id(row)}, parent_of.get(id(row))
        while at is not None and id(at) not in seen:
            seen.add(id(at))
            at = parent_of.get(id(at))
        if at is not None:
            parent_of.pop(id(at), None)
    children: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        if id(row) in parent_of:
            children.setdefault(id(parent_of[id(row)]), []).append(row)

    def root_of(row: dict[str, Any]) -> dict[str, Any]:
        while id(row) in parent_of:
            row = parent_of[id(row)]
        return row

    def tree(row: dict[str, Any]) -> list[dict[str, Any]]:
        return [row, *(r for child in children.get(id(row), []) for r in tree(child))]

    # the export's identity (otel_identity): the settings' digest and each run's logs' facts
    settings = settings_digest(conventions="openinference+gen_ai", max_text=MAX_TEXT, price=None, table=price_table())
    roots = [row for row in rows if id(row) not in parent_of]
    run_digest = {id(r): log_facts_digest([tuple(t[c] for c in FACT_COLUMNS) for t in tree(r)]) for r in roots}
    identity_digest = log_facts_digest([settings, True, *((plain[id(r)], run_digest[id(r)]) for r in roots)])
    identity = ExportIdentity("dsh", None, settings, identity_digest, len(roots))
    export = export_settings(export_id=identity.name)
    key = {id(r): f"{identity.scope(run_digest[id(root_of(r))])!r}\x00{plain[id(r)]}" for r in rows}

    def links(row: dict[str, Any]) -> list[Link]:
        parent_id = row["parent_session"]
        if not isinstance(parent_id, str) or (row["origin"] == "subagent" and parent_id in by_id):
            return []
        parent = by_id.get(parent_id)
        if parent is None or parent is row:
            return []
        attributes: dict[str, Any] = {
            "dsh.link": "fork-of" if row["seed_length"] is not None else "child-of",
            "dsh.parent_session": parent_id,
        }
        if row["seed_length"] is not None:
            attributes["dsh.seed_length"] = row["seed_length"]
        return [Link(context(trace_id(key[id(root_of(parent))]), span_id(key[id(parent)], "agent")), attributes)]

    def fork(row: dict[str, Any]) -> dict[str, Any]:
        (link,) = links(row) or [None]
        if link is None or row["seed_length"] is None:
            return {}
        return {"dsh.fork_of": row["parent_session"], "dsh.fork_of_trace_id": format(link.context.trace_id, "032x")}

    traces = []
    for root in (row for row in rows if id(row) not in parent_of):
        trace = trace_id(key[id(root)])
        spans: list[ReadableSpan] = []
        claimed: set[tuple[int, int]] = set()
        stack: list[tuple[dict[str, Any], Any]] = [(root, None)]
        while stack:
            row, parent = stack.pop()
            events = corpus.log_events(row["list_order"])

            def place(
                first: str | None, parent: Any = parent, row: dict[str, Any] = row, claimed: Any = claimed
            ) -> Any:
                return (None, {}) if parent is None else spawn_link(parent, row, first, claimed)

            built = session_spans(
                export,
                row,
                session_transcript(corpus, row, events),
                events,
                key=key[id(row)],
                trace=trace,
                parent=place,
                links=[] if parent is not None else links(row),
                extra={} if parent is not None else fork(row),
            )
            spans.extend(built.spans)
            stack.extend((child, built) for child in reversed(children.get(id(row), [])))
        traces.append(spans)
    return traces


def _span_dicts(lines: list[bytes]) -> dict[str, Any]:
    out = {}
    for line in lines:
        for resource in orjson.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    out[span["spanId"]] = (resource["resource"], scope["scope"], span)
    return out


def _corpora() -> list[tuple[str, Path, str]]:
    found = [("sample", SAMPLE, "none")]
    if RICH.is_dir():
        found.append(("rich", RICH / "corpus", json.loads((RICH / "meta.json").read_text())["compression"]))
    return found


@pytest.mark.parametrize(("name", "root", "compression"), _corpora(), ids=[c[0] for c in _corpora()])
def test_the_streamed_file_equals_the_whole_tree_export(
    tmp_path: Path, name: str, root: Path, compression: str
) -> None:
    corpus = read_corpus(root, compression=compression, cache=False)  # type: ignore[arg-type]
    streamed = tmp_path / "streamed.jsonl"
    stats = write_otlp_json(otlp_parts(corpus), streamed)
    reference = _whole_tree_reference(corpus)
    whole = tmp_path / "whole.jsonl"
    write_otlp_json(reference, whole)
    # no trace here is larger than a request: the very same lines, byte for byte
    assert max(len(trace) for trace in reference) < otlp_export.MAX_REQUEST_SPANS
    assert streamed.read_bytes() == whole.read_bytes()
    assert stats.traces == len(reference) and stats.spans == sum(map(len, reference))
    assert [len(t) for t in otlp_traces(corpus)] == [len(t) for t in reference]


def test_a_trace_larger_than_a_request_is_split_across_lines_with_the_same_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = read_corpus(SAMPLE, cache=False)
    whole = _span_dicts([json_line(trace) for trace in _whole_tree_reference(corpus)])
    monkeypatch.setattr(otlp_export, "MAX_REQUEST_SPANS", 7)
    monkeypatch.setattr(otlp_export, "REQUEST_SPANS", 5)
    stats = write_otlp_json(otlp_parts(corpus), tmp_path / "split.jsonl")
    lines = (tmp_path / "split.jsonl").read_bytes().splitlines()
    sizes = [len(_span_dicts([line])) for line in lines]
    assert max(sizes) <= 7 and stats.requests == len(lines) > len(whole) // 7
    assert _span_dicts(lines) == whole  # the same spans (set equality by span id, each span whole)
    ids = [span[2]["traceId"] for line in lines for span in _span_dicts([line]).values()]
    assert len(set(ids)) == stats.traces  # every trace's spans kept together, in order, across lines


def _star(root: Path, children: int) -> None:
    """One root log starting ``children`` subagents (each call's result names its child)."""
    hub = EventLog("hub")
    hub.turn_start()
    hub.user("split")
    for index in range(children):
        hub.tool_round(f"k{index}", f"started subagent c{index}", step=index + 1)
    hub.turn_end()
    write_session(root, header("hub", created_at=hub.events[0]["time"]), hub.events, "none")
    for index in range(children):
        log = EventLog(f"c{index}", time=hub.events[0]["time"] + 5 + index)
        log.turn_start()
        log.user(f"task {index}")
        log.descriptor(descriptor("continuable", label=f"w{index}"))
        log.tool_round(f"r{index}", "done")
        log.turn_end()
        head = header(f"c{index}", created_at=log.events[0]["time"], parent="hub", subagent=True)
        write_session(root, head, log.events, "none")


def _live_spans() -> int:
    """Spans still reachable: garbage another test left in this worker is collected first, not counted."""
    gc.collect()
    return sum(1 for obj in gc.get_objects() if isinstance(obj, ReadableSpan))


def test_otel_o_holds_a_bounded_number_of_spans_whatever_the_size_of_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _star(tmp_path / "root", 150)
    corpus = read_corpus(tmp_path / "root", cache=False)
    before = _live_spans()  # spans another test in this worker still holds (none, normally)
    live: list[int] = []
    original = otlp_export.json_line

    def counting(spans: list[ReadableSpan]) -> bytes:
        live.append(_live_spans() - before)
        return original(spans)

    monkeypatch.setattr(otlp_export, "json_line", counting)
    monkeypatch.setattr(otlp_export, "MAX_REQUEST_SPANS", 100)
    monkeypatch.setattr(otlp_export, "REQUEST_SPANS", 50)
    stats = write_otlp_json(otlp_parts(corpus), tmp_path / "spans.jsonl")
    # one tree; an AGENT and a CHAIN per log (one turn each); an LLM and a TOOL per tool round (150 + 150)
    assert stats.traces == 1 and stats.spans == 2 * 151 + 2 * (150 + 150)
    # a request's spans and at most one streamed part beside them: never the tree's 902
    assert len(live) == stats.requests and max(live) <= 100 + 512 < stats.spans
    lines = (tmp_path / "spans.jsonl").read_bytes().splitlines()
    spans = _span_dicts(lines)
    linked = [
        attribute["value"]["stringValue"]
        for _, _, span in spans.values()
        for attribute in span.get("attributes", ())
        if attribute["key"] == "dsh.spawn.link"
    ]
    assert linked == ["result-id"] * 150  # every child under the call that started it


def test_a_trace_export_loads_neither_duckdb_nor_pyarrow_nor_pandas(tmp_path: Path) -> None:
    """About 90 MB the export never used (issue 42 item 11): ``interop.sql`` is imported on first use, and the
    frames are built by Polars. ``interop.sql`` is still the function, whichever is imported first."""
    code = textwrap.dedent(
        """
        import importlib, sys
        from subagent_catalog.corpus import read_corpus
        from subagent_catalog.interop.otel import otlp_parts, write_otlp_json
        write_otlp_json(otlp_parts(read_corpus(sys.argv[1], cache=False, jobs=1)), sys.argv[2])
        print(*[name for name in ("duckdb", "pyarrow", "pandas") if name in sys.modules] or ["none"])
        import subagent_catalog, subagent_catalog.interop as interop
        module = importlib.import_module("subagent_catalog.interop.sql")
        from subagent_catalog.interop import sql
        print(sql is module.sql and interop.sql is module.sql and subagent_catalog.sql is module.sql)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(SAMPLE), str(tmp_path / "spans.jsonl")],
        capture_output=True,
        text=True,
        check=True,
        cwd=SAMPLE.parents[1],
    )
    assert done.stdout.splitlines() == ["none", "True"]
    assert (tmp_path / "spans.jsonl").stat().st_size > 0
