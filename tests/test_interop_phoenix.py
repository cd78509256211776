"""The interop tier (``make test-interop``): a real Phoenix server receives the spans and gives them back.

A Phoenix server (``arize-phoenix``, the ``[interop]`` extra) runs on
127.0.0.1 in a temporary working directory, offline (``tests/phoenix_server.py``).
A generated corpus (``python -m subagent_catalog.synth``) and the conformance
corpus upstream's own runtime wrote are sent to it over OTLP/HTTP, and the
spans Phoenix stored are read back with its client
(``phoenix.client.Client().spans.get_spans_dataframe``). What Phoenix holds
must equal what our frames say: spans per kind, the tree (each subagent's
AGENT span under its parent's TOOL span), token sums per model and per
session, tool failures. The expectations come from the ``sessions`` columns
and from the raw events, not from the exporter.
"""

from __future__ import annotations

import collections
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import polars as pl
import pytest

from subagent_catalog import read_corpus
from subagent_catalog.frames.corpus import Corpus
from subagent_catalog.interop.otel import otlp_parts, otlp_traces, send_otlp, to_otlp
from subagent_catalog.interop.phoenix_check import PRICE_RELOAD_S, phoenix_client, register_prices, verify_phoenix
from subagent_catalog.synth.writer import EventLog, header, write_session

pytestmark = pytest.mark.interop


def _client(url: str) -> Any:
    """Phoenix's client (imported here: the module is collected, and deselected, where the extra is missing)."""
    module = pytest.importorskip("phoenix.client", reason="the [interop] extra (arize-phoenix) is not installed")
    return module.Client(base_url=url)


REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "conformance"
RICH = SHARED / "cases" / "real-writer-rich-none" / "corpus"
START_DEADLINE = 300.0  # seconds for Phoenix to answer /healthz (its first start migrates a new database)
INGEST_DEADLINE = 120.0  # seconds without a new stored span
FAILED = ["error", "aborted", "max-tokens", "blocked", "interrupted", "other", "open", "unreadable"]
"""The outcomes of a failed run (docs/runs.md), whose AGENT spans are ERROR (docs/traces.md)."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def phoenix() -> Iterator[str]:
    """A Phoenix server of its own for this module: its URL."""
    pytest.importorskip("phoenix.server", reason="the [interop] extra (arize-phoenix) is not installed")
    with tempfile.TemporaryDirectory(prefix="phoenix-") as workdir:
        port, grpc_port = _free_port(), _free_port()
        log = open(os.path.join(workdir, "server.log"), "wb")  # noqa: SIM115 (closed below)
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.phoenix_server", workdir, str(port), str(grpc_port)],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_DEADLINE
            while not _healthy(url):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    tail = Path(workdir, "server.log").read_text(errors="replace")[-3000:]
                    pytest.fail(f"Phoenix did not start (exit {process.poll()}):\n{tail}")
                time.sleep(0.25)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()


def _spans(url: str, project: str, expected: int) -> Any:
    """Phoenix's spans of a project, once it has stored ``expected`` of them (ingestion is asynchronous).

    Waits while the stored count grows (a loaded machine ingests slowly); gives up only when it has
    not grown for ``INGEST_DEADLINE`` seconds.
    """
    client = _client(url)
    deadline = time.monotonic() + INGEST_DEADLINE
    stored = -1
    while True:
        try:
            frame = client.spans.get_spans_dataframe(project_identifier=project, limit=expected + 1000, timeout=600)
        except httpx.HTTPStatusError as error:  # the project appears with its first stored span
            if error.response.status_code != 404 or time.monotonic() > deadline:
                raise
        else:
            if len(frame) >= expected or time.monotonic() > deadline:
                return frame
            if len(frame) > stored:  # progress: wait on
                stored, deadline = len(frame), time.monotonic() + INGEST_DEADLINE
        time.sleep(0.5)


# ------------------------------------------------------------------- expectations from the frames and events


def _own(corpus: Corpus, row: dict[str, Any]) -> tuple[pl.DataFrame, pl.DataFrame]:
    events = corpus.log_events(row["list_order"])
    seed = row["seed_length"] if isinstance(row["seed_length"], int) else 0
    return events, events.filter(pl.col("seq") >= seed)


def _usage_by_step(events: pl.DataFrame, own: pl.DataFrame) -> dict[tuple[Any, Any], tuple[str | None, dict]]:
    """Per (turn, step) of the own events: its model (its message's source, else the last request header) and
    its last usage sample, read from the raw events."""
    headers: list[tuple[int, str]] = []
    for seq, data in events.filter(pl.col("type") == "request/header").select("seq", "data").iter_rows():
        config = orjson.loads(data)["header"]["config"]
        headers.append((seq, f"{config.get('provider')}/{config.get('model')}"))
    steps: dict[tuple[Any, Any], dict[str, Any]] = {}
    model_types = ("assistant/chunk", "assistant/message", "llm/retry")
    for seq, kind, turn, step, data in (
        own.filter(pl.col("type").is_in(model_types)).select("seq", "type", "turn", "step", "data").iter_rows()
    ):
        value = orjson.loads(data)
        entry = steps.setdefault((turn, step), {"first": seq, "usage": None, "model": None})
        if kind == "assistant/chunk" and value["chunk"].get("type") == "usage":
            entry["usage"] = value["chunk"]["usage"]
        elif kind == "assistant/message":
            if isinstance(value.get("usage"), dict):
                entry["usage"] = value["usage"]
            source = value["message"].get("source") or {}
            if source.get("provider") or source.get("model"):
                entry["model"] = f"{source.get('provider')}/{source.get('model')}"
    out = {}
    for key, entry in steps.items():
        model = entry["model"] or next((m for s, m in reversed(headers) if s <= entry["first"]), None)
        out[key] = (model, entry["usage"] or {})
    return out


def _expected(corpus: Corpus) -> dict[str, Any]:
    kinds: collections.Counter[str] = collections.Counter()
    per_model: dict[str | None, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    per_session: dict[str, dict[str, int]] = {}
    for row in corpus.sessions.filter(pl.col("verdict") != "skipped").iter_rows(named=True):
        events, own = _own(corpus, row)
        steps = _usage_by_step(events, own)
        calls = {orjson.loads(d).get("callId") for d in own.filter(pl.col("type") == "tool/call")["data"]}
        results = {
            orjson.loads(d)["message"]["source"]["callId"] for d in own.filter(pl.col("type") == "tool/result")["data"]
        }
        kinds.update({"AGENT": 1, "CHAIN": row["turns"] or 0, "LLM": len(steps), "TOOL": len(calls | results)})
        for model, usage in steps.values():
            for name in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens"):
                per_model[model][name] += usage.get(name, 0)
        per_session[row["session_id"]] = {
            name: row[name] or 0
            for name in ("input_tokens", "output_tokens", "cache_read_tokens", "tool_results_failed", "turns")
        }
    return {"kinds": kinds, "per_model": per_model, "per_session": per_session}


def _check(corpus: Corpus, frame: Any) -> dict[str, int]:
    """Phoenix's spans against the frames; returns the spawn links of the subagent AGENT spans."""
    expected = _expected(corpus)
    assert dict(frame["span_kind"].value_counts()) == dict(expected["kinds"])
    llm = frame[frame["span_kind"] == "LLM"]
    cache_read = "attributes.llm.token_count.prompt_details.cache_read"
    cache_write = "attributes.llm.token_count.prompt_details.cache_write"
    for model, sums in expected["per_model"].items():
        provider, _, name = (model or "").partition("/")
        rows = llm[(llm["attributes.llm.model_name"] == name) & (llm["attributes.llm.provider"] == provider)]
        assert rows["attributes.llm.token_count.completion"].sum() == sums["outputTokens"], model  # NaN: skipped
        prompt = sums["inputTokens"] + sums["cacheReadTokens"] + sums["cacheWriteTokens"]
        assert rows["attributes.llm.token_count.prompt"].sum() == prompt, model
        if cache_read in rows:
            assert rows[cache_read].sum() == sums["cacheReadTokens"], model
        if cache_write in rows:
            assert rows[cache_write].sum() == sums["cacheWriteTokens"], model
    by_session = llm.groupby("attributes.session.id")
    failed = frame[(frame["span_kind"] == "TOOL") & (frame["status_code"] == "ERROR")]
    failures = failed.groupby("attributes.session.id").size().to_dict()
    chains = frame[frame["span_kind"] == "CHAIN"].groupby("attributes.session.id").size().to_dict()
    for session, facts in expected["per_session"].items():
        output = by_session["attributes.llm.token_count.completion"].sum().get(session, 0)
        assert output == facts["output_tokens"], session
        assert by_session[cache_read].sum().get(session, 0) == facts["cache_read_tokens"], session
        assert failures.get(session, 0) == facts["tool_results_failed"], session
        assert chains.get(session, 0) == facts["turns"], session
    spans = frame  # indexed by context.span_id
    sessions = {r["session_id"]: r for r in corpus.sessions.iter_rows(named=True)}
    links: collections.Counter[str] = collections.Counter()
    for _, span in spans[spans["span_kind"] == "AGENT"].iterrows():
        child = sessions[span["attributes.session.id"]]
        dsh = span["attributes.dsh"]
        if child["origin"] != "subagent" or child["parent_session"] not in sessions:
            continue
        parent = spans.loc[span["parent_id"]]
        assert parent["attributes.session.id"] == child["parent_session"]
        link = dsh["spawn"]["link"]
        links[link] += 1
        assert parent["span_kind"] == ("AGENT" if link == "none" else "TOOL")
    return dict(links)


# ----------------------------------------------------------------------------------------------- the tests


def test_a_generated_corpus_in_phoenix_equals_our_frames(phoenix: str, tmp_path: Path) -> None:
    root = tmp_path / "synth"
    options = ["--sessions", "120", "--seed", "11", "--compression", "zstd", "--damaged-fraction", "0.05"]
    subprocess.run(
        [sys.executable, "-m", "subagent_catalog.synth", str(root), *options],
        check=True,
        capture_output=True,
    )
    corpus = read_corpus(root, cache=False)
    stats = send_otlp(otlp_traces(corpus, project="synth"), phoenix)
    frame = _spans(phoenix, "synth", stats.spans)
    assert len(frame) == stats.spans
    links = _check(corpus, frame)
    assert sum(links.values()) > 0
    errors = frame[(frame["span_kind"] == "AGENT") & (frame["status_code"] == "ERROR")]
    failed = corpus.sessions.filter(
        (pl.col("verdict") != "skipped") & (~pl.col("verdict").is_in(["ok"]) | pl.col("outcome").is_in(FAILED))
    )
    assert len(errors) == failed.height > 0  # damaged logs and failed runs


@pytest.mark.skipif(not RICH.is_dir(), reason="../shared/conformance is not present")
def test_the_conformance_corpus_upstream_wrote_equals_our_frames_in_phoenix(phoenix: str) -> None:
    corpus = read_corpus(RICH, cache=False)
    stats = send_otlp(otlp_traces(corpus, project="rich"), phoenix)
    frame = _spans(phoenix, "rich", stats.spans)
    assert len(frame) == stats.spans == 2813
    links = _check(corpus, frame)
    attached = sum(links.get(link, 0) for link in ("result-id", "start-time", "prompt"))
    assert attached > 200, links  # children under the tool call that started them
    # sending the same corpus again stores no second copy: the ids are the same
    send_otlp(otlp_traces(corpus, project="rich"), phoenix)
    time.sleep(2)  # nothing to wait for: a second copy would have to appear, and none may
    assert len(_spans(phoenix, "rich", stats.spans)) == stats.spans


@pytest.mark.skipif(not RICH.is_dir(), reason="../shared/conformance is not present")
def test_a_trace_opens_in_phoenix_ui(phoenix: str, chromium_browser: Any, tmp_path: Path) -> None:
    corpus = read_corpus(RICH, cache=False)
    root = "655a7652-909c-4139-8b86-ad46a44cd2b2"
    spans = to_otlp(corpus, sessions=[root], project="rich")  # the same ids as the whole corpus's export
    send_otlp([spans], phoenix)
    _spans(phoenix, "rich", len(spans))
    project = _client(phoenix).projects.get(project_name="rich")["id"]
    page = chromium_browser.new_page(viewport={"width": 1600, "height": 1000})
    try:
        page.goto(f"{phoenix}/projects/{project}/traces/{spans[0].context.trace_id:032x}", wait_until="load")
        page.get_by_text(f"session {root}").first.wait_for(timeout=120_000)
        page.get_by_text("subagent timeout vacuum schema bench import").first.wait_for(timeout=60_000)
        page.screenshot(path=str(tmp_path / "trace.png"))
    finally:
        page.close()
    assert (tmp_path / "trace.png").stat().st_size > 10_000
    assert json.dumps(spans[0].attributes["dsh.session.id"]) == json.dumps(root)


# ------------------------------------------------------------------ delivery you can trust, costs (issue 39)


def _synth(root: Path, sessions: int, seed: int) -> None:
    options = ["--sessions", str(sessions), "--seed", str(seed), "--compression", "zstd"]
    command = [sys.executable, "-m", "subagent_catalog.synth", str(root), *options]
    subprocess.run(command, check=True, capture_output=True)


def _span_count(url: str, project: str, expected: int) -> int:
    """Phoenix's own count of a project's spans (GraphQL ``recordCount``), once it reaches ``expected``.

    Independent of ``--verify`` (which reads the spans of each trace back): one number counted by Phoenix's
    database. Waits while the count grows, as ``_spans`` does.
    """
    query = "query($name: String!) { getProjectByName(name: $name) { recordCount } }"
    deadline, count = time.monotonic() + INGEST_DEADLINE, -1
    while True:
        reply = httpx.post(f"{url}/graphql", json={"query": query, "variables": {"name": project}}, timeout=300)
        project_data = reply.json()["data"]["getProjectByName"]
        now = int(project_data["recordCount"]) if project_data else 0
        if now >= expected or time.monotonic() > deadline:
            return now
        if now > count:
            count, deadline = now, time.monotonic() + INGEST_DEADLINE
        time.sleep(1)


@pytest.mark.timeout(2400)  # 2,000 sessions generated, sent twice with --verify, counted: minutes on 2 cores
def test_verify_reports_stored_equal_to_sent_on_2000_generated_sessions(phoenix: str, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from subagent_catalog.cli import main

    _synth(tmp_path / "synth", 2000, 39)
    args = ["otel", str(tmp_path / "synth"), "--endpoint", phoenix, "--project", "verify", "--verify", "--no-cache"]
    result = CliRunner().invoke(main, [*args, "--verify-timeout", "1800"])
    assert result.exit_code == 0, result.output
    sent = re.search(r"sent to \S+: (\d+) spans .* in (\d+) traces", result.output)
    stored = re.search(r"Phoenix stored (\d+) of (\d+) spans sent \((\d+) traces\)", result.output)
    assert sent and stored, result.output
    assert stored.group(1) == stored.group(2) == sent.group(1) and int(sent.group(1)) > 20_000
    assert f"{sent.group(2)} traces new, 0 already present" in result.output
    # Phoenix's own count agrees (counted by its database, independently of --verify)
    assert _span_count(phoenix, "verify", int(sent.group(1))) == int(sent.group(1))
    # the same export again: every trace already present, nothing stored twice
    again = CliRunner().invoke(main, [*args, "--verify-timeout", "600"])
    assert again.exit_code == 0 and f"0 traces new, {sent.group(2)} already present" in again.output, again.output


def _big_trace(root: Path, turns: int) -> None:
    log = EventLog("big")
    for turn in range(turns):
        log.turn_start()
        log.user(f"step {turn} " + "x" * 1000)
        log.tool_round(f"c{turn}", "result " + "y" * 1000)
        log.turn_end()
    write_session(root, header("big", created_at=1), log.events, "none")


def test_a_12000_span_trace_is_delivered_to_a_busy_server(phoenix: str, tmp_path: Path) -> None:
    _big_trace(tmp_path / "big", 4000)  # 1 AGENT + 4,000 x (CHAIN, LLM, TOOL) = 12,001 spans
    _synth(tmp_path / "load", 600, 7)
    corpus = read_corpus(tmp_path / "big", cache=False)
    load = read_corpus(tmp_path / "load", cache=False)
    busy = threading.Thread(target=lambda: send_otlp(otlp_parts(load, project="load"), phoenix), daemon=True)
    busy.start()  # another client keeps Phoenix ingesting while the big trace goes out
    stats = send_otlp(otlp_parts(corpus, project="big"), phoenix)
    busy.join(600)
    assert stats.spans == 12_001 and len(stats.trace_spans) == 1 and stats.requests > 1
    assert stats.bytes > 20_000_000 and stats.failed == {}  # what went out as one 22 MB request before
    check = verify_phoenix(phoenix_client(phoenix), stats, project="big", deadline=1800)
    assert (check.stored, check.sent, check.short) == (12_001, 12_001, {})


def test_registered_prices_give_phoenix_the_cost_our_table_gives(phoenix: str) -> None:
    from subagent_catalog import usage_by_model
    from subagent_catalog.prices import price_table

    corpus = read_corpus(REPO / "data" / "sample", cache=False)
    server = phoenix_client(phoenix)
    usage = usage_by_model(corpus, by="model")
    done = register_prices(server, usage.select("provider", "model").rows(), price_table(None))
    assert {d.model: d.action for d in done} == {
        "deepseek-chat": "created",
        "deepseek-reasoner": "created",
        "qwen3-coder": "unpriced",
    }
    again = register_prices(server, usage.select("provider", "model").rows(), price_table(None))
    assert [d.action for d in again if d.prices] == ["updated", "updated"]
    time.sleep(PRICE_RELOAD_S)
    stats = send_otlp(otlp_traces(corpus, project="priced"), phoenix)
    _spans(phoenix, "priced", stats.spans)
    # what Phoenix should charge: the tokens per model (our frames) at the prices registered
    prices = {d.model: d.prices for d in again}
    expected = 0.0
    for row in usage.iter_rows(named=True):
        rate = prices.get(row["model"])
        if rate:
            expected += (  # a count no sample carries is null: none of those tokens
                (row["input_tokens"] or 0) * rate["input"]
                + (row["cache_read_tokens"] or 0) * rate["cache_read"]
                + (row["cache_write_tokens"] or 0) * rate["cache_write"]
                + (row["output_tokens"] or 0) * rate["output"]
            ) / 1e6
    project = server.client.projects.get(project_name="priced")["id"]
    query = "query($id: ID!) { node(id: $id) { ... on Project { costSummary { total { cost } } } } }"
    deadline = time.monotonic() + INGEST_DEADLINE
    while True:  # a span's cost is written with it, or just after
        reply = httpx.post(f"{phoenix}/graphql", json={"query": query, "variables": {"id": project}}, timeout=60)
        cost = reply.json()["data"]["node"]["costSummary"]["total"]["cost"] or 0.0
        if abs(cost - expected) <= 1e-9 * max(expected, 1) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert expected > 0 and cost == pytest.approx(expected, rel=1e-9)


# ------------------------------------------------- issue 39: outcomes, a second export, forks (items 1, 2, 4)


@pytest.fixture(scope="module")
def second_project(phoenix: str) -> tuple[Corpus, Any, int]:
    """The conformance corpus upstream wrote, exported to a project of its own (``rich-again``)."""
    if not RICH.is_dir():
        pytest.skip("../shared/conformance is not present")
    corpus = read_corpus(RICH, cache=False)
    stats = send_otlp(otlp_traces(corpus, project="rich-again"), phoenix)
    return corpus, _spans(phoenix, "rich-again", stats.spans), stats.spans


def test_a_second_export_to_another_project_creates_it_with_all_spans(
    phoenix: str, second_project: tuple[Corpus, Any, int]
) -> None:
    corpus, frame, sent = second_project
    assert len(frame) == sent == 2813  # not one span kept back as a copy of another project's
    _check(corpus, frame)
    first = to_otlp(corpus, project="rich")  # the ids another project's export used
    assert not {f"{s.context.span_id:016x}" for s in first} & set(frame.index)


def test_failed_runs_are_errors_filterable_by_outcome_in_phoenix(
    phoenix: str, second_project: tuple[Corpus, Any, int]
) -> None:
    corpus, frame, _ = second_project
    from phoenix.client.types.spans import SpanQuery

    rows = corpus.sessions.filter(pl.col("verdict") != "skipped")
    outcomes = dict(rows.group_by("outcome").len().iter_rows())
    assert set(outcomes) & {"error", "aborted", "open"}
    client = _client(phoenix)
    for outcome, count in outcomes.items():  # Phoenix filters on the attribute itself, server side
        query = SpanQuery().where(f"span_kind == 'AGENT' and attributes['dsh']['outcome'] == '{outcome}'")
        found = client.spans.get_spans_dataframe(query=query, project_identifier="rich-again", limit=5000)
        assert len(found) == count, outcome
        ok = (found["status_code"] == "ERROR") if outcome in FAILED else (found["status_code"] != "ERROR")
        assert ok.all(), outcome
    agents = frame[frame["span_kind"] == "AGENT"]
    errors = agents[agents["status_code"] == "ERROR"]
    failed = rows.filter(~pl.col("verdict").is_in(["ok"]) | pl.col("outcome").is_in(FAILED))
    assert len(errors) == failed.height


def test_forks_carry_their_parent_in_phoenix(phoenix: str, second_project: tuple[Corpus, Any, int]) -> None:
    corpus, frame, _ = second_project
    forks = corpus.sessions.filter(pl.col("seed_length").is_not_null(), pl.col("origin").is_null())
    assert forks.height > 0
    agents = frame[frame["span_kind"] == "AGENT"]
    by_session = {span["attributes.session.id"]: span for _, span in agents.iterrows()}
    for row in forks.iter_rows(named=True):
        span = by_session[row["session_id"]]
        dsh = span["attributes.dsh"]
        assert dsh["fork_of"] == row["parent_session"]
        parent = by_session.get(row["parent_session"])
        if parent is not None:  # the parent's trace, found as docs/traces.md shows
            assert dsh["fork_of_trace_id"] == parent["context.trace_id"]
            assert span["context.trace_id"] != parent["context.trace_id"] and not isinstance(span["parent_id"], str)
