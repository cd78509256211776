"""OTLP/HTTP delivery you can trust (issue 39 item 3): requests within a byte budget, every span exactly once,
partial failures naming the traces that did not get through, a deadline that holds over many requests.

Every collector is a thread on 127.0.0.1 (``tests/fuzz/otlp_server.py``) recording what it received; the
expectations come from ``to_otlp`` (the spans) and from the requests the collector decoded.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from subagent_catalog import read_corpus
from subagent_catalog.cli import main
from subagent_catalog.interop.otel import otlp_parts, send_otlp, to_otlp
from subagent_catalog.interop.otlp_export import FAILURES_IN_A_ROW, OtlpDeliveryError, OtlpStats
from subagent_catalog.synth.writer import EventLog, header, write_session
from tests.fuzz.otlp_server import Received, collector

GIVE_UP_S = 60.0


def _long_session(root: Path, session: str, turns: int, *, created_at: int = 1) -> None:
    log = EventLog(session, time=created_at)
    for turn in range(turns):
        log.turn_start()
        log.user(f"step {turn} " + "x" * 300)
        log.tool_round(f"c{turn}", "result " + "y" * 300)
        log.turn_end()
    write_session(root, header(session, created_at=created_at), log.events, "none")


def _spans_of(body: bytes) -> list[tuple[str, str, str]]:
    """(trace id, span id, session id) of every span in one request."""
    request = ExportTraceServiceRequest.FromString(body)
    out = []
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                session = next(a.value.string_value for a in span.attributes if a.key == "dsh.session.id")
                out.append((span.trace_id.hex(), span.span_id.hex(), session))
    return out


def _send(traces: Any, url: str, **options: Any) -> OtlpStats | BaseException:
    outcome: list[OtlpStats | BaseException] = []

    def run() -> None:
        try:
            outcome.append(send_otlp(traces, url, **options))
        except BaseException as error:  # handed to the test
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(GIVE_UP_S)
    assert not worker.is_alive(), f"send_otlp did not return within {GIVE_UP_S} s"
    return outcome[0]


def test_a_trace_over_the_byte_budget_arrives_in_several_requests_with_every_span_once(tmp_path: Path) -> None:
    _long_session(tmp_path / "root", "big", 120)
    corpus = read_corpus(tmp_path / "root", cache=False)
    expected = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in to_otlp(corpus)}
    budget = 40_000
    with collector("ok") as server:
        stats = _send(otlp_parts(corpus), server.url, max_request_bytes=budget)
        bodies = [received.body for received in server.accepted]
    assert isinstance(stats, OtlpStats), stats
    assert len(bodies) == stats.requests > 3 and stats.failed == {}
    assert all(len(body) <= budget for body in bodies)
    got = [(trace, span) for body in bodies for trace, span, _ in _spans_of(body)]
    assert collections.Counter(got) == collections.Counter(expected)  # every span exactly once
    assert len({trace for trace, _ in got}) == 1  # one trace, in several requests
    assert stats.accepted_spans == stats.spans == len(expected) and stats.bytes == sum(map(len, bodies))


def test_without_a_byte_budget_the_same_trace_is_one_request(tmp_path: Path) -> None:
    _long_session(tmp_path / "root", "big", 120)
    with collector("ok") as server:
        stats = _send(otlp_parts(read_corpus(tmp_path / "root", cache=False)), server.url)
        assert isinstance(stats, OtlpStats) and stats.requests == len(server.accepted) == 1


def test_a_partial_failure_names_the_traces_that_did_not_get_through(tmp_path: Path) -> None:
    for index in range(6):
        _long_session(tmp_path / "root", f"run-{index}", 20, created_at=1 + index * 10_000)
    corpus = read_corpus(tmp_path / "root", cache=False)
    spans = to_otlp(corpus)
    traces = {f"{s.context.trace_id:032x}": s.attributes["dsh.session.id"] for s in spans if s.parent is None}

    def refuse(number: int, received: Received) -> bool:
        return any(session == "run-3" for _, _, session in _spans_of(received.body))

    with collector("ok", refuse=refuse) as server:
        error = _send(otlp_parts(corpus), server.url, max_request_bytes=20_000)
        accepted = [span for received in server.accepted for span in _spans_of(received.body)]
        refused = [
            span for received in server.received if received not in server.accepted for span in _spans_of(received.body)
        ]
    assert isinstance(error, OtlpDeliveryError), error
    # the traces named are those with spans in a refused request (run-3, and a neighbour sharing its request)
    lost = {trace for trace, _, _ in refused}
    assert {trace for trace, name in traces.items() if name == "run-3"} <= lost and len(lost) < 6
    assert error.stats is not None and set(error.stats.failed) == lost
    assert f"{len(lost)} of 6 traces did not get through: " in str(error) and "run-3" in str(error)
    assert "it answered 500 Refused" in str(error) and "hint:" in str(error)
    assert f"did not accept {len(spans) - len(accepted)} spans" in str(error)
    # every other trace was sent on after the failure, each span exactly once
    others = [(t, s) for t, s, _ in accepted if t not in lost]
    assert collections.Counter(others) == collections.Counter(
        (f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}")
        for s in spans
        if f"{s.context.trace_id:032x}" not in lost
    )
    assert error.stats.accepted_spans == len(accepted)


def test_the_cli_names_the_failed_traces_and_exits_non_zero(tmp_path: Path) -> None:
    for index in range(3):
        _long_session(tmp_path / "root", f"run-{index}", 3, created_at=1 + index * 10_000)

    def refuse(number: int, received: Received) -> bool:
        return any(session == "run-1" for _, _, session in _spans_of(received.body))

    with collector("ok", refuse=refuse) as server:
        args = ["otel", str(tmp_path / "root"), "--endpoint", server.url, "--max-request-bytes", "1024"]
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert "1 of 3 traces did not get through: run-1;" in result.output and "hint:" in result.output
    assert "run-0" not in result.output and "run-2" not in result.output


def test_failed_requests_in_a_row_stop_the_export_and_name_every_trace(tmp_path: Path) -> None:
    for index in range(8):
        _long_session(tmp_path / "root", f"run-{index}", 3, created_at=1 + index * 10_000)
    with collector("status-500") as server:
        error = _send(otlp_parts(read_corpus(tmp_path / "root", cache=False)), server.url, max_request_bytes=1000)
        asked = len(server.received)
    assert isinstance(error, OtlpDeliveryError) and error.stats is not None
    assert asked == FAILURES_IN_A_ROW  # no request after the third failure in a row
    assert len(error.stats.failed) == 8 and list(error.stats.failed.values()).count("not sent") >= 5
    assert f"stopped after {FAILURES_IN_A_ROW} failed requests in a row" in str(error)
    assert "8 of 8 traces did not get through" in str(error) and "and 3 more" in str(error)


def test_the_deadline_holds_over_many_requests_to_a_stalled_collector(tmp_path: Path) -> None:
    for index in range(8):
        _long_session(tmp_path / "root", f"run-{index}", 3, created_at=1 + index * 10_000)
    corpus = read_corpus(tmp_path / "root", cache=False)
    with collector("silent") as server:
        started = time.monotonic()
        error = _send(otlp_parts(corpus), server.url, timeout=0.5, retry_for=0, max_request_bytes=1000)
        elapsed = time.monotonic() - started
        connections = server.connections
    assert isinstance(error, OtlpDeliveryError) and "no complete reply within 0.5 s" in str(error)
    assert connections == FAILURES_IN_A_ROW  # three requests, each ended at its deadline; the rest only named
    assert error.stats is not None and len(error.stats.failed) == 8
    assert elapsed < GIVE_UP_S / 2


@pytest.mark.parametrize("budget", [0, -5])
def test_a_byte_budget_must_be_positive(budget: int) -> None:
    with pytest.raises(ValueError, match="max_request_bytes must be a positive number"):
        send_otlp([], "http://127.0.0.1:9", max_request_bytes=budget)


# ----------------------------------------------------------------------------- --verify, against a loopback Phoenix


class _SlowPhoenix:
    """Phoenix's ``numSpans`` as a slow server ingests: each count of a trace finds ``per_round`` more of its spans."""

    def __init__(self, per_round: int) -> None:
        self.per_round = per_round
        self.stored: dict[str, int] = {}

    def __call__(self, trace: str) -> int:
        self.stored[trace] = self.stored.get(trace, 0) + self.per_round
        return self.stored[trace]


def _stats(counts: dict[str, int]) -> OtlpStats:
    return OtlpStats(trace_spans=dict(counts), names={trace: f"run-{trace[-1]}" for trace in counts})


def test_verify_counts_until_every_trace_is_stored() -> None:
    from subagent_catalog.interop.phoenix_check import phoenix_client, verify_phoenix

    sent = {"a" * 32: 5, "b" * 32: 3}
    slow = _SlowPhoenix(per_round=2)
    with collector("phoenix", count=slow) as server:
        check = verify_phoenix(phoenix_client(server.url), _stats(sent), project="p", deadline=60, pause=0.01)
        asked = [json.loads(received.body) for received in server.received]
    assert (check.sent, check.stored, check.short, check.traces) == (8, 8, {}, 2)
    assert len(asked) == 3  # 2, 4, 6 spans of the larger trace: three counts
    assert all(request["variables"]["project"] == "p" and "numSpans" in request["query"] for request in asked)
    assert slow.stored == {"a" * 32: 6, "b" * 32: 4}  # the smaller one is not asked again once whole


def test_verify_against_a_phoenix_that_cannot_count_is_one_error_naming_it() -> None:
    from subagent_catalog.interop.phoenix_check import PhoenixError, phoenix_client, verify_phoenix

    with collector("graphql-errors-only") as server, pytest.raises(PhoenixError) as refused:
        verify_phoenix(phoenix_client(server.url), _stats({"a" * 32: 1}), project="p", deadline=5, pause=0.01)
    assert f"Phoenix at {server.url}/graphql refused a count of spans: " in str(refused.value)


def test_verify_counts_a_project_phoenix_does_not_have_yet_as_nothing_stored() -> None:
    from subagent_catalog.interop.phoenix_check import phoenix_client, verify_phoenix

    with collector("phoenix") as server:  # it accepted no span: its getProjectByName is null
        check = verify_phoenix(phoenix_client(server.url), _stats({"a" * 32: 2}), project="p", deadline=0.2, pause=0.05)
        asked = server.graphql
    assert (check.stored, check.short) == (0, {"a" * 32: (0, 2)}) and asked >= 1


def test_verify_gives_up_at_its_deadline_and_names_what_is_short() -> None:
    from subagent_catalog.interop.phoenix_check import phoenix_client, verify_phoenix

    sent = {"a" * 32: 1, "b" * 32: 1000}  # the first count (there is always one) finds "a" whole, never "b"
    started = time.monotonic()
    with collector("phoenix", count=_SlowPhoenix(1)) as server:
        check = verify_phoenix(phoenix_client(server.url), _stats(sent), project="p", deadline=0.5, pause=0.05)
    assert time.monotonic() - started < 10
    assert set(check.short) == {"b" * 32} and check.short["b" * 32][1] == 1000 and check.stored < check.sent


def test_verify_skips_the_traces_that_did_not_get_through() -> None:
    from subagent_catalog.interop.phoenix_check import phoenix_client, verify_phoenix

    stats = _stats({"a" * 32: 2, "b" * 32: 2})
    stats.failed["b" * 32] = "it answered 500"
    with collector("phoenix", count=_SlowPhoenix(2)) as server:
        check = verify_phoenix(phoenix_client(server.url), stats, project="p", deadline=5, pause=0.01)
        asked = [json.loads(received.body)["variables"] for received in server.received]
    assert (check.sent, check.stored, check.traces) == (2, 2, 1)
    assert asked == [{"project": "p", "t0": "a" * 32}]


def test_verify_and_register_prices_need_an_endpoint(tmp_path: Path) -> None:
    _long_session(tmp_path / "root", "s", 1)
    for flag in ("--verify", "--register-prices"):
        result = CliRunner().invoke(main, ["otel", str(tmp_path / "root"), "-o", str(tmp_path / "x.jsonl"), flag])
        assert result.exit_code == 2 and "go with --endpoint" in result.output


def test_verify_against_a_collector_that_is_not_phoenix_is_one_line_and_sends_no_span(tmp_path: Path) -> None:
    _long_session(tmp_path / "root", "s", 1)
    with collector("ok") as server:  # an OTLP collector: its /graphql answers 200 with no body
        result = CliRunner().invoke(main, ["otel", str(tmp_path / "root"), "--endpoint", server.url, "--verify"])
        paths = [received.path for received in server.received]
    assert result.exit_code == 1 and paths == ["/graphql"]  # asked which traces it holds; nothing sent
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"Error: Phoenix at {server.url}/graphql answered a count of spans with a reply not")
