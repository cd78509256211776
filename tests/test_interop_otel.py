"""``to_otlp``: the spans of every conformance corpus are valid OTLP, and they say what the frames say.

Expectations are derived independently of the exporter: span counts and
token sums from the ``sessions`` columns (the read's own fold), model steps
and tool calls from the raw events frame, spawning calls from the text of
the parent's tool results and arguments.
"""

from __future__ import annotations

import collections
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import orjson
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.trace import StatusCode

from subagent_catalog import read_corpus, unpriced_models, usage_by_model
from subagent_catalog.errors import UnknownSessionError
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.interop.errors import OtlpExportError
from subagent_catalog.interop.otel import otlp_traces, send_otlp, to_otlp, write_otlp_json
from subagent_catalog.interop.otel_conventions import (
    GEN_AI_PACKAGE_VERSION,
    OPENINFERENCE_VERSION,
    conventions_text,
    installed_versions,
)
from subagent_catalog.interop.otlp_json import json_line, parse_line
from subagent_catalog.synth.generate import generate
from subagent_catalog.synth.writer import EventLog, header, write_session
from tests.helpers import one_encoding

SHARED = Path(__file__).resolve().parents[2] / "shared" / "conformance"
ROOT = Path(__file__).resolve().parents[1]
CASES = (
    one_encoding(sorted(p for p in (SHARED / "cases").glob("*") if (p / "corpus").is_dir())) if SHARED.is_dir() else []
)
RICH = SHARED / "cases" / "real-writer-rich-none" / "corpus"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/conformance is not present")
USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


def _read(case: Path) -> Corpus:
    meta = json.loads((case / "meta.json").read_text())
    return read_corpus(case / "corpus", compression=meta["compression"], cache=False)


def _kind(span: Any) -> str:
    return str(span.attributes["openinference.span.kind"])


@pytest.fixture(scope="module")
def rich() -> tuple[Corpus, list[Any]]:
    if not RICH.is_dir():
        pytest.skip("../shared/conformance is not present")
    corpus = read_corpus(RICH, cache=False)
    return corpus, to_otlp(corpus)


def test_the_pinned_convention_packages_are_installed() -> None:
    assert installed_versions() == {
        "openinference-semantic-conventions": OPENINFERENCE_VERSION,
        "opentelemetry-semantic-conventions": GEN_AI_PACKAGE_VERSION,
    }


@needs_shared
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_conformance_corpus_exports_valid_otlp(case: Path) -> None:
    corpus = _read(case)
    spans = to_otlp(corpus)
    request = parse_line(json_line(spans))  # through the protobuf schema, unknown fields refused
    exported = [s for r in request.resource_spans for scope in r.scope_spans for s in scope.spans]
    assert len(exported) == len(spans)
    readable = corpus.sessions.filter(pl.col("verdict") != "skipped")
    assert sum(_kind(s) == "AGENT" for s in spans) == readable.height
    ids = {(s.context.trace_id, s.context.span_id) for s in spans}
    assert len(ids) == len(spans), "span ids are unique"
    for span in spans:
        assert span.end_time >= span.start_time
        if _kind(span) != "AGENT":  # every non-AGENT span hangs under a span of the same trace in the export
            assert (span.context.trace_id, span.parent.span_id) in ids
    scope = request.resource_spans[0].scope_spans[0].scope if exported else None
    if scope is not None:
        assert scope.name == "subagent_catalog.interop.otel"
        assert request.resource_spans[0].scope_spans[0].schema_url == "https://opentelemetry.io/schemas/1.44.0"
        assert {a.key: a.value.string_value for a in scope.attributes}["dsh.conventions"] == conventions_text()


def _own_events(corpus: Corpus, row: dict[str, Any]) -> pl.DataFrame:
    events = corpus.log_events(row["list_order"])
    return events.filter(pl.col("seq") >= (row["seed_length"] or 0))


def test_spans_per_session_equal_what_the_frames_say(rich: tuple[Corpus, list[Any]]) -> None:
    corpus, spans = rich
    kinds: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    tokens: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    failed: collections.Counter[str] = collections.Counter()
    for span in spans:
        session = span.attributes["dsh.session.id"]
        kinds[session][_kind(span)] += 1
        if _kind(span) == "LLM":
            for field in USAGE:
                tokens[session][field] += span.attributes.get(f"dsh.usage.{field}", 0)
        if _kind(span) == "TOOL" and span.status.status_code == StatusCode.ERROR:
            failed[session] += 1
    for row in corpus.sessions.iter_rows(named=True):
        sid = row["session_id"]
        own = _own_events(corpus, row)
        model = own.filter(pl.col("type").is_in(["assistant/chunk", "assistant/message", "llm/retry"]))
        calls = own.filter(pl.col("type") == "tool/call")["data"].map_elements(
            lambda d: orjson.loads(d).get("callId"), return_dtype=pl.String
        )
        results = own.filter(pl.col("type") == "tool/result")["data"].map_elements(
            lambda d: orjson.loads(d)["message"]["source"]["callId"], return_dtype=pl.String
        )
        assert kinds[sid]["AGENT"] == 1
        assert kinds[sid]["CHAIN"] == row["turns"], sid
        assert kinds[sid]["LLM"] == model.select("turn", "step").unique().height, sid
        assert kinds[sid]["TOOL"] == len(set(calls.to_list()) | set(results.to_list())), sid
        assert failed[sid] == row["tool_results_failed"], sid
        for field in USAGE:
            assert tokens[sid][field] == (row[field] or 0), (sid, field)
    assert sum(failed.values()) > 0 and sum(t["cache_write_tokens"] for t in tokens.values()) > 0


def test_the_openinference_token_counts_hold_the_whole_prompt(rich: tuple[Corpus, list[Any]]) -> None:
    _, spans = rich
    llm = [s.attributes for s in spans if _kind(s) == "LLM" and "dsh.usage.input_tokens" in s.attributes]
    assert llm
    for a in llm:
        parts = [a.get(f"dsh.usage.{f}", 0) for f in ("input_tokens", "cache_read_tokens", "cache_write_tokens")]
        assert a["llm.token_count.prompt"] == sum(parts) == a["gen_ai.usage.input_tokens"]
        assert a["llm.token_count.total"] == a["llm.token_count.prompt"] + a.get("llm.token_count.completion", 0)
        assert a["llm.model_name"] == a["gen_ai.request.model"]
    assert {a["llm.provider"] for a in llm} >= {"mock", "mock-alt"}


def _first_user(corpus: Corpus, row: dict[str, Any]) -> str | None:
    for data in _own_events(corpus, row).filter(pl.col("type") == "user/message")["data"]:
        blocks = orjson.loads(data)["content"]
        return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
    return None


def test_each_child_hangs_under_the_tool_call_that_started_it(rich: tuple[Corpus, list[Any]]) -> None:
    corpus, spans = rich
    by_id = {(s.context.trace_id, s.context.span_id): s for s in spans}
    sessions = {r["session_id"]: r for r in corpus.sessions.iter_rows(named=True)}
    links = collections.Counter()
    for span in spans:
        if _kind(span) != "AGENT" or span.attributes.get("dsh.origin") != "subagent":
            continue
        child = sessions[span.attributes["dsh.session.id"]]
        parent = by_id.get((span.context.trace_id, span.parent.span_id)) if span.parent else None
        if child["parent_session"] not in sessions:
            assert parent is None
            continue
        assert parent is not None and parent.attributes["dsh.session.id"] == child["parent_session"]
        link = span.attributes["dsh.spawn.link"]
        links[link] += 1
        if link == "result-id":
            assert _kind(parent) == "TOOL"
            assert parent.attributes["output.value"] == f"started subagent {child['session_id']}"
        elif link == "start-time":  # a subagent call running when the child was created, started just before
            assert _kind(parent) == "TOOL"
            assert parent.name in {"subagent", "fork_subagent"} or "prompt" in orjson.loads(
                parent.attributes["input.value"]
            )
            assert parent.start_time <= child["created_at_ms"] * 1_000_000 <= parent.end_time
            assert child["created_at_ms"] * 1_000_000 - parent.start_time <= 60_000 * 1_000_000
        elif link == "prompt":
            assert _kind(parent) == "TOOL"
            arguments = orjson.loads(parent.attributes["input.value"])
            assert arguments["prompt"] == _first_user(corpus, child)
        else:  # no call of the parent carries the child's first message as its prompt
            assert _kind(parent) == "AGENT"
            prompts = [
                orjson.loads(s.attributes["input.value"]).get("prompt")
                for s in spans
                if _kind(s) == "TOOL"
                and s.attributes["dsh.session.id"] == child["parent_session"]
                and s.attributes.get("input.value", "").startswith("{")
            ]
            assert _first_user(corpus, child) not in prompts
    assert links["result-id"] > 100 and links["start-time"] > 50, links


def test_a_fork_is_its_own_trace_linked_to_its_parent_and_its_seed_is_not_exported(
    rich: tuple[Corpus, list[Any]],
) -> None:
    corpus, spans = rich
    agents = {s.attributes["dsh.session.id"]: s for s in spans if _kind(s) == "AGENT"}
    forks = corpus.sessions.filter(pl.col("seed_length").is_not_null(), pl.col("origin").is_null())
    assert forks.height > 0
    for row in forks.iter_rows(named=True):
        span = agents[row["session_id"]]
        assert span.parent is None
        (link,) = span.links
        parent = agents.get(row["parent_session"])
        if parent is not None:
            assert (link.context.trace_id, link.context.span_id) == (parent.context.trace_id, parent.context.span_id)
        assert link.attributes["dsh.link"] == "fork-of"
        own_start = _own_events(corpus, row)["time_ms"].min()
        session_spans = [s for s in spans if s.attributes["dsh.session.id"] == row["session_id"] and s is not span]
        if own_start is not None and session_spans:
            assert min(s.start_time for s in session_spans) >= own_start * 1_000_000 - 1


def test_re_exporting_gives_the_same_ids_and_a_subtree_the_same_spans(rich: tuple[Corpus, list[Any]]) -> None:
    corpus, spans = rich
    assert json_line(to_otlp(corpus)) == json_line(spans)
    child = next(s for s in spans if s.attributes.get("dsh.spawn.link") == "start-time")
    alone = to_otlp(corpus, sessions=[child.attributes["dsh.session.id"]])
    whole = {(s.context.trace_id, s.context.span_id): s for s in spans}
    assert alone and alone[0].context == child.context
    for span in alone:
        same = whole[(span.context.trace_id, span.context.span_id)]
        assert (span.parent, span.start_time, span.end_time, span.name) == (
            same.parent,
            same.start_time,
            same.end_time,
            same.name,
        )


def test_an_unknown_session_names_the_nearest(rich: tuple[Corpus, list[Any]]) -> None:
    corpus, spans = rich
    some = spans[0].attributes["dsh.session.id"]
    with pytest.raises(UnknownSessionError, match="did you mean"):
        to_otlp(corpus, sessions=[some[:-1]])


@needs_shared
@pytest.mark.parametrize(
    ("case", "cause"),
    [("S20-torn-tail-none", "torn-tail"), ("S22-garbage-line-before-turn-end-zstd", "unparsable-line")],
)
def test_a_damaged_log_exports_what_is_readable_with_an_error_and_an_event(case: str, cause: str) -> None:
    corpus = _read(SHARED / "cases" / case)
    damaged = corpus.sessions.filter(~pl.col("verdict").is_in(["ok", "skipped"]))
    spans = to_otlp(corpus)
    agents = {s.attributes["dsh.session.id"]: s for s in spans if _kind(s) == "AGENT"}
    assert damaged.height > 0
    for row in damaged.iter_rows(named=True):
        span = agents[row["session_id"]]
        assert span.status.status_code == StatusCode.ERROR
        (event,) = [e for e in span.events if e.name == "dsh.read_problem"]
        assert cause in event.attributes["dsh.read_problem"]
        assert span.status.description == event.attributes["dsh.read_problem"]


@needs_shared
def test_negative_times_are_clamped_and_said() -> None:
    spans = to_otlp(_read(SHARED / "cases" / "S31-negative-time-none"))
    clamped = [s for s in spans if s.attributes.get("dsh.time_clamped")]
    assert clamped and all(s.start_time == 0 and s.attributes["dsh.start_ms"] < 0 for s in clamped)
    parse_line(json_line(spans))


def _small_corpus(tmp_path: Path, *, text: str = "fix the bug") -> Corpus:
    log = EventLog("s1")
    log.turn_start()
    log.user(text)
    log.tool_round("c1", "x" * 50)
    log.turn_end()
    write_session(tmp_path, header("s1", created_at=1), log.events, "none")
    return read_corpus(tmp_path, cache=False)


def test_texts_are_clipped_to_the_stated_size(tmp_path: Path) -> None:
    spans = to_otlp(_small_corpus(tmp_path), max_text=10)
    tool = next(s for s in spans if _kind(s) == "TOOL")
    assert tool.attributes["output.value"] == "x" * 10 + "… [clipped 40 of 50 characters]"
    assert tool.attributes["gen_ai.tool.call.result"] == tool.attributes["output.value"]


def test_conventions_choose_the_attribute_sets(tmp_path: Path) -> None:
    corpus = _small_corpus(tmp_path)
    only_gen_ai = to_otlp(corpus, conventions="gen_ai")
    only_oi = to_otlp(corpus, conventions="openinference")
    assert not any(k.startswith("openinference.") or k.startswith("llm.") for s in only_gen_ai for k in s.attributes)
    assert not any(k.startswith("gen_ai.") for s in only_oi for k in s.attributes)
    assert all("dsh.session.id" in s.attributes for s in only_gen_ai + only_oi)
    operations = [s.attributes["gen_ai.operation.name"] for s in only_gen_ai if "gen_ai.operation.name" in s.attributes]
    assert operations == ["invoke_agent", "chat", "execute_tool"]


def test_a_price_function_fills_the_cost(tmp_path: Path) -> None:
    seen = []

    def price(usage: Any) -> float:
        seen.append(usage)
        return 0.25

    spans = to_otlp(_small_corpus(tmp_path), price=price)
    llm = [s for s in spans if _kind(s) == "LLM"]
    assert [s.attributes["llm.cost.total"] for s in llm] == [0.25] and seen[0].model == "deepseek-chat"
    assert "llm.cost.total" not in to_otlp(_small_corpus(tmp_path / "b"), price=lambda usage: None)[2].attributes


def test_llm_spans_cost_what_usage_by_model_says(tmp_path: Path) -> None:
    corpus = read_corpus(ROOT / "data" / "sample")
    llm = [s for s in to_otlp(corpus) if _kind(s) == "LLM"]
    costs: dict[tuple[str, str], float] = {}
    for span in llm:
        key = (span.attributes["dsh.session.id"], span.attributes["llm.model_name"])
        if "llm.cost.total" in span.attributes:
            costs[key] = costs.get(key, 0.0) + span.attributes["llm.cost.total"]
    expected = {
        (row["session_id"], row["model"]): row["cost_usd"]
        for row in usage_by_model(corpus).iter_rows(named=True)
        if row["cost_usd"] is not None and row["steps"]
    }
    assert costs.keys() == expected.keys() and len(costs) > 5
    assert all(abs(costs[key] - expected[key]) <= 1e-12 * max(1.0, expected[key]) for key in costs)
    unpriced = {row["model"] for row in unpriced_models(corpus).iter_rows(named=True)}
    unpriced_spans = [s for s in llm if s.attributes["llm.model_name"] in unpriced]
    assert unpriced_spans and not any("llm.cost.total" in s.attributes for s in unpriced_spans)


def test_the_file_holds_one_request_per_line_that_parses(tmp_path: Path) -> None:
    corpus = _small_corpus(tmp_path / "root")
    stats = write_otlp_json(otlp_traces(corpus), tmp_path / "spans.jsonl")
    lines = (tmp_path / "spans.jsonl").read_bytes().splitlines()
    assert stats.spans == 4 and stats.kinds == {"AGENT": 1, "CHAIN": 1, "LLM": 1, "TOOL": 1} and len(lines) == 1
    span = parse_line(lines[0]).resource_spans[0].scope_spans[0].spans[0]
    assert len(span.trace_id) == 16 and len(span.span_id) == 8
    assert orjson.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == span.trace_id.hex()


class _Collector(http.server.BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []
    status = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).bodies.append(body)
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, type[_Collector]]]:
    handler = type("Collector", (_Collector,), {"bodies": [], "status": 200})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_send_posts_otlp_protobuf_to_the_endpoint(tmp_path: Path, collector: tuple[str, type[_Collector]]) -> None:
    url, handler = collector
    stats = send_otlp([to_otlp(_small_corpus(tmp_path))], url, headers={"x-key": "k"})
    (body,) = handler.bodies
    request = ExportTraceServiceRequest.FromString(body)
    assert stats.spans == len(request.resource_spans[0].scope_spans[0].spans) == 4


def test_a_refusing_endpoint_is_one_error(tmp_path: Path, collector: tuple[str, type[_Collector]]) -> None:
    url, handler = collector
    handler.status = 400
    with pytest.raises(OtlpExportError, match="did not accept 4 spans"):
        send_otlp([to_otlp(_small_corpus(tmp_path))], url, timeout=2)
    with pytest.raises(OtlpExportError, match="is not http or https"):
        send_otlp([], "ftp://127.0.0.1/x")


@settings(max_examples=8)
@given(seed=st.integers(min_value=0, max_value=10_000), damaged=st.sampled_from([0.0, 0.3, 1.0]))
def test_any_generated_corpus_exports_a_consistent_forest(
    tmp_path_factory: pytest.TempPathFactory, seed: int, damaged: float
) -> None:
    root = tmp_path_factory.mktemp("synth") / "root"
    generate(root, sessions=10, seed=seed, compression="none", damaged_fraction=damaged, jobs=1, profile="small")
    corpus = read_corpus(root, cache=False)
    traces = list(otlp_traces(corpus))
    spans = [span for trace in traces for span in trace]
    ids = {(s.context.trace_id, s.context.span_id) for s in spans}
    assert len(ids) == len(spans)
    assert not [clash for span in spans for clash in _nesting_clashes(span)]
    for trace in traces:  # one trace id per trace, every parent inside it except the root AGENT span's
        assert len({s.context.trace_id for s in trace}) <= 1
        roots = [s for s in trace if s.parent is None]
        assert len(roots) == 1 and roots[0] is trace[0]
        assert all(s.parent is None or (s.context.trace_id, s.parent.span_id) in ids for s in trace)
    assert sum(_kind(s) == "AGENT" for s in spans) == corpus.sessions.filter(pl.col("verdict") != "skipped").height
    assert json_line(to_otlp(corpus)) == json_line(spans)
    parse_line(json_line(spans))


def _nesting_clashes(span: Any) -> list[str]:
    """Keys of a span that are also a dotted prefix of another of its keys (``a.b`` beside ``a.b.c``)."""
    keys = set(span.attributes or ())
    return sorted(key for key in keys if any(other.startswith(key + ".") for other in keys))


@pytest.mark.parametrize(
    "root", [ROOT / "data" / "sample", pytest.param(RICH, marks=needs_shared)], ids=["sample", "rich"]
)
def test_no_span_attribute_is_both_a_value_and_a_dotted_prefix_of_another(root: Path) -> None:
    """Phoenix and other back ends nest dotted keys: ``dsh.turn`` (a number) beside ``dsh.turn.outcome``
    loses one of them, so a turn's outcome is ``dsh.turn_outcome``."""
    spans = [span for trace in otlp_traces(read_corpus(root, cache=False)) for span in trace]
    chains = [span for span in spans if (span.attributes or {}).get("openinference.span.kind") == "CHAIN"]
    closed = [span for span in chains if (span.attributes or {}).get("dsh.turn_open") is False]
    assert closed and all("dsh.turn_outcome" in (span.attributes or {}) for span in closed)
    assert [clash for span in spans for clash in _nesting_clashes(span)] == []
