"""Issue 39 (items 1, 2, 4): failed runs look failed, exports have an identity, forks and subagents attached right.

Expectations are derived independently of the exporter: outcomes from the
``sessions`` frame (the library's run facts), ids compared across exports,
spawning calls from the logs this file writes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from opentelemetry.trace import StatusCode

from subagent_catalog import read_corpus
from subagent_catalog.cli import main
from subagent_catalog.interop.otel import otlp_parts, to_otlp
from subagent_catalog.interop.otlp_json import json_line, parse_line
from subagent_catalog.synth.writer import EventLog, header, write_session

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample"
FAILED = {"error", "aborted", "max-tokens", "blocked", "interrupted", "other", "open", "unreadable"}
BAD_TURNS = ("turns_error", "turns_aborted", "turns_max_tokens", "turns_blocked", "turns_interrupted", "turns_other")


def _kind(span: Any) -> str:
    return str(span.attributes["openinference.span.kind"])


def _ids(spans: list[Any]) -> set[tuple[int, int]]:
    return {(s.context.trace_id, s.context.span_id) for s in spans}


@pytest.fixture(scope="module")
def sample() -> tuple[Any, list[Any]]:
    corpus = read_corpus(SAMPLE, cache=False)
    return corpus, to_otlp(corpus)


# item 1: outcomes


def test_every_agent_span_carries_its_runs_outcome_and_failed_runs_are_errors(sample: tuple[Any, list[Any]]) -> None:
    corpus, spans = sample
    rows = {r["session_id"]: r for r in corpus.sessions.iter_rows(named=True)}
    agents = [s for s in spans if _kind(s) == "AGENT"]
    assert {rows[s.attributes["dsh.session.id"]]["outcome"] for s in agents} >= {"error", "aborted", "max-tokens"}
    for span in agents:
        row = rows[span.attributes["dsh.session.id"]]
        assert span.attributes["dsh.outcome"] == row["outcome"]
        assert span.attributes.get("dsh.outcome_detail") == row["outcome_detail"]
        assert span.attributes.get("dsh.active_ms") == row["active_ms"]
        failed = row["outcome"] in FAILED or row["verdict"] not in ("ok", "skipped")
        assert (span.status.status_code == StatusCode.ERROR) == failed, row["session_id"]
        if row["outcome"] == "error":
            assert span.attributes["dsh.error_code"] == row["last_error_code"]
            assert row["outcome_detail"] in span.status.description
        if failed and row["verdict"] == "ok":
            assert span.status.description.startswith(row["outcome"])
        if not failed:
            assert span.status.status_code == StatusCode.UNSET  # completed: UNSET, as OpenInference advises


def test_the_failed_turns_are_error_chain_spans(sample: tuple[Any, list[Any]]) -> None:
    corpus, spans = sample
    errors: dict[str, int] = {}
    for span in spans:
        if _kind(span) == "CHAIN" and span.status.status_code == StatusCode.ERROR:
            sid = span.attributes["dsh.session.id"]
            errors[sid] = errors.get(sid, 0) + 1
            assert span.attributes["dsh.outcome"] in FAILED
            assert span.status.description.startswith(span.attributes["dsh.outcome"])
    expected = {
        row["session_id"]: sum(row[c] or 0 for c in BAD_TURNS) + (row["turns_open"] or 0)
        for row in corpus.sessions.filter(pl.col("verdict") != "skipped").iter_rows(named=True)
    }
    assert errors == {sid: n for sid, n in expected.items() if n}
    assert sum(errors.values()) >= 4


def test_the_outcome_reaches_the_otlp_json_line(sample: tuple[Any, list[Any]]) -> None:
    _, spans = sample
    request = parse_line(json_line(spans))
    exported = [s for r in request.resource_spans for scope in r.scope_spans for s in scope.spans]
    aborted = [
        s
        for s in exported
        if any(a.key == "dsh.outcome" and a.value.string_value == "aborted" for a in s.attributes)
        and any(a.key == "dsh.origin" and a.value.string_value == "subagent" for a in s.attributes)
    ]
    assert aborted and all(s.status.code == 2 and s.status.message == "aborted by parent" for s in aborted)


# item 2: identity


def test_the_same_export_gives_the_same_ids_and_identity(sample: tuple[Any, list[Any]]) -> None:
    corpus, spans = sample
    again = otlp_parts(corpus)
    assert json_line([s for part in again for s in part.spans]) == json_line(spans)
    assert again.identity == otlp_parts(corpus).identity
    assert {s.attributes["dsh.export.id"] for s in spans if _kind(s) == "AGENT"} == {again.identity.name}


@pytest.mark.parametrize(
    "change",
    [{"project": "other"}, {"max_text": 40}, {"prices": {"deepseek-chat": {"input": 9, "output": 9}}}],
    ids=["project", "max_text", "prices"],
)
def test_another_project_or_content_gives_new_ids_everywhere(sample: tuple[Any, list[Any]], change: Any) -> None:
    corpus, spans = sample
    other = to_otlp(corpus, **change)
    assert len(other) == len(spans)
    assert not _ids(other) & _ids(spans)
    assert not {s.context.trace_id for s in other} & {s.context.trace_id for s in spans}
    assert otlp_parts(corpus, **change).identity.name != otlp_parts(corpus).identity.name


def test_a_run_id_replaces_the_content_digest(sample: tuple[Any, list[Any]]) -> None:
    corpus, spans = sample
    named = to_otlp(corpus, run_id="nightly")
    assert not _ids(named) & _ids(spans)
    assert _ids(to_otlp(corpus, run_id="nightly", max_text=40)) == _ids(named)
    assert not _ids(to_otlp(corpus, run_id="nightly", project="other")) & _ids(named)
    assert otlp_parts(corpus, run_id="nightly").identity.name == "dsh/run nightly"


def _run(root: Path, sid: str, turns: int, created: int = 1_700_000_000_000) -> None:
    log = EventLog(sid, time=created)
    for _ in range(turns):
        log.turn_start()
        log.user(f"task for {sid}")
        log.tool_round("c1", "ok")
        log.turn_end()
    write_session(root, header(sid, created_at=created), log.events, "none")


def test_a_changed_run_gets_new_ids_and_the_others_keep_theirs(tmp_path: Path) -> None:
    _run(tmp_path, "a", 1)
    _run(tmp_path, "b", 1)
    before = {s.attributes["dsh.session.id"]: s.context for s in to_otlp(read_corpus(tmp_path, cache=False))}
    (tmp_path / "_no-cwd" / "b" / "session.jsonl").unlink()
    _run(tmp_path, "b", 2)  # b ran another turn
    after = {s.attributes["dsh.session.id"]: s.context for s in to_otlp(read_corpus(tmp_path, cache=False))}
    assert after["a"] == before["a"]
    assert after["b"].trace_id != before["b"].trace_id


def test_a_subtree_alone_keeps_the_ids_of_the_whole_export(sample: tuple[Any, list[Any]]) -> None:
    corpus, spans = sample
    child = next(s for s in spans if _kind(s) == "AGENT" and s.parent is not None)
    alone = to_otlp(corpus, sessions=[child.attributes["dsh.session.id"]])
    assert alone[0].context == child.context and _ids(alone) <= _ids(spans)


# item 4: forks and subagents


def _spawn(log: EventLog, call_id: str, name: str, prompt: str, result: str, *, runs: int, step: int) -> int:
    """A model step calling a subagent tool, the call's start and, ``runs`` ms later, its result; the start time."""
    log.add("step/start", {"turn": log.turn, "step": step})
    block = {"type": "tool-call", "id": call_id, "name": name, "arguments": json.dumps({"prompt": prompt})}
    source = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}
    message = {"id": f"m-{call_id}", "role": "assistant", "content": [block], "source": source}
    log.add("assistant/message", {"turn": log.turn, "step": step, "message": message}, surfaceOp="append")
    start = int(log.add("tool/call", {"turn": log.turn, "step": step, "callId": call_id, "name": name})["time"])
    content = [{"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": result}]}]
    reply = {"id": f"r-{call_id}", "role": "user", "content": content, "source": {"kind": "tool", "callId": call_id}}
    log.add("tool/result", {"turn": log.turn, "step": step, "message": reply}, dt=runs, surfaceOp="append")
    log.add("step/end", {"turn": log.turn, "step": step})
    return start


def _child(root: Path, sid: str, created: int, first: str) -> None:
    log = EventLog(sid, time=created)
    log.turn_start()
    log.user(first)
    log.turn_end()
    head = header(sid, created_at=created, parent="P", subagent=True, delegation_depth=1)
    write_session(root, head, log.events, "none")


@pytest.fixture(scope="module")
def spawned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A parent whose children are each attached by one rule (``otel_links``), and a fork of it."""
    root = tmp_path_factory.mktemp("spawn")
    log = EventLog("P")
    log.turn_start()
    log.user("plan the work")
    _spawn(log, "c-id", "subagent", "Task A", "started subagent by-id", runs=5, step=1)
    by_time = _spawn(log, "c-time", "subagent", "Review the code", "looks fine", runs=1_000, step=2)
    skewed = _spawn(log, "c-prompt", "quick_task", "Summarise", "summary", runs=10, step=3)
    log.turn_end()
    write_session(root, header("P", created_at=log.events[0]["time"] - 1), log.events, "none")
    _child(root, "by-id", by_time + 5_000, "Task A")  # created after its call returned: only the result says it
    _child(root, "by-time", by_time + 3, "Review the code\n\n(context: the diff)")  # not the prompt verbatim
    _child(root, "by-prompt", skewed + 90_000, "Summarise")  # a clock that stepped: after its call ended
    _child(root, "by-none", by_time + 3_000, "Summarize the state so far.")  # started by the harness
    fork = EventLog("F", time=log.time + 10)
    fork.events = [dict(e) for e in log.events]
    fork.turn = log.turn
    fork.turn_start()
    fork.user("try another way")
    fork.turn_end()
    head = header("F", created_at=log.time + 10, parent="P", seed_length=len(log.events))
    write_session(root, head, fork.events, "none")
    return root


def test_each_subagent_is_attached_by_the_first_rule_that_holds(spawned: Path) -> None:
    parts = otlp_parts(read_corpus(spawned, cache=False))
    spans = [s for part in parts for s in part.spans]
    by_ctx = {(s.context.trace_id, s.context.span_id): s for s in spans}
    agents = {s.attributes["dsh.session.id"]: s for s in spans if _kind(s) == "AGENT"}
    expected = {"by-id": "c-id", "by-time": "c-time", "by-prompt": "c-prompt", "by-none": None}
    for sid, call_id in expected.items():
        parent = by_ctx[(agents[sid].context.trace_id, agents[sid].parent.span_id)]
        if call_id is None:
            assert parent is agents["P"]
        else:
            assert _kind(parent) == "TOOL" and parent.attributes["dsh.session.id"] == "P"
            assert parent.attributes["tool_call.id"] == call_id, sid
    links = {sid: agents[sid].attributes["dsh.spawn.link"] for sid in expected}
    assert links == {"by-id": "result-id", "by-time": "start-time", "by-prompt": "prompt", "by-none": "none"}
    assert parts.spawn_links == {"result-id": 1, "start-time": 1, "prompt": 1, "none": 1}
    assert parts.spawn_fallbacks == 2


def test_parallel_calls_started_together_go_to_the_child_with_their_prompt(tmp_path: Path) -> None:
    log = EventLog("P")
    log.turn_start()
    log.user("fan out")
    log.add("step/start", {"turn": 1, "step": 1})
    blocks = [
        {"type": "tool-call", "id": f"c{i}", "name": "subagent", "arguments": json.dumps({"prompt": f"part {i}"})}
        for i in (1, 2)
    ]
    source = {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}
    message = {"id": "m1", "role": "assistant", "content": blocks, "source": source}
    log.add("assistant/message", {"turn": 1, "step": 1, "message": message}, surfaceOp="append")
    start = int(log.add("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "subagent"})["time"])
    log.add("tool/call", {"turn": 1, "step": 1, "callId": "c2", "name": "subagent"}, dt=0)
    for i in (1, 2):
        content = [{"type": "tool-result", "toolCallId": f"c{i}", "content": [{"type": "text", "text": "done"}]}]
        reply = {"id": f"r{i}", "role": "user", "content": content, "source": {"kind": "tool", "callId": f"c{i}"}}
        log.add("tool/result", {"turn": 1, "step": 1, "message": reply}, dt=500, surfaceOp="append")
    log.turn_end()
    write_session(tmp_path, header("P", created_at=start - 100), log.events, "none")
    _child(tmp_path, "ka", start + 1, "part 2")  # listed first: the first call would be its by time alone
    _child(tmp_path, "kb", start + 2, "part 1 (with notes)")
    corpus = read_corpus(tmp_path, cache=False)
    assert corpus.sessions.sort("list_order")["session_id"].to_list() == ["P", "ka", "kb"]
    spans = to_otlp(corpus)
    tools = {s.context.span_id: s.attributes["tool_call.id"] for s in spans if _kind(s) == "TOOL"}
    agents = [s for s in spans if _kind(s) == "AGENT"]
    parents = {s.attributes["dsh.session.id"]: s.parent and tools.get(s.parent.span_id) for s in agents}
    assert parents == {"P": None, "ka": "c2", "kb": "c1"}


def test_a_fork_names_its_parent_and_links_to_its_agent_span(spawned: Path) -> None:
    spans = to_otlp(read_corpus(spawned, cache=False))
    agents = {s.attributes["dsh.session.id"]: s for s in spans if _kind(s) == "AGENT"}
    fork, parent = agents["F"], agents["P"]
    assert fork.parent is None and fork.context.trace_id != parent.context.trace_id
    assert fork.attributes["dsh.fork_of"] == "P"
    assert fork.attributes["dsh.fork_of_trace_id"] == format(parent.context.trace_id, "032x")
    (link,) = fork.links
    assert (link.context.trace_id, link.context.span_id) == (parent.context.trace_id, parent.context.span_id)
    assert "dsh.fork_of" not in parent.attributes
    request = parse_line(json_line(spans))  # the link survives the OTLP encoding
    (encoded,) = [s for r in request.resource_spans for sc in r.scope_spans for s in sc.spans if s.name == fork.name]
    assert encoded.links[0].span_id == parent.context.span_id.to_bytes(8, "big")


def test_the_cli_names_the_export_and_counts_the_fallbacks(spawned: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    corpus = tmp_path / "corpus"
    shutil.copytree(spawned, corpus)
    out = tmp_path / "spans.jsonl"
    result = runner.invoke(main, ["otel", str(corpus), "-o", str(out), "--run-id", "r7"])
    assert result.exit_code == 0, result.output
    assert "export dsh/run r7" in result.output
    assert "1 by the child id in their call's result, 1 by start time, 1 by prompt (2 fallbacks)" in result.output
    assert "1 under the parent's AGENT span" in result.output
    ids = {json.dumps(line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]) for line in _lines(out)}
    result = runner.invoke(main, ["otel", str(corpus), "-o", str(out), "--run-id", "r7", "--max-text", "3"])
    assert result.exit_code == 0, result.output
    assert {json.dumps(line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]) for line in _lines(out)} == ids


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]
