"""OTLP/HTTP delivery (issue 42 items 9 and 14): a whole-request deadline against misbehaving collectors, one line
for every malformed endpoint. Every server is a thread on 127.0.0.1 (``tests/fuzz/otlp_server.py``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from subagent_catalog import read_corpus
from subagent_catalog.cli import main
from subagent_catalog.interop.errors import EndpointError, OtlpExportError
from subagent_catalog.interop.otel import send_otlp, to_otlp
from subagent_catalog.interop.otlp_http import check_headers, parse_endpoint
from subagent_catalog.synth.writer import EventLog, header, write_session
from tests.fuzz.otlp_server import collector

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"
GIVE_UP_S = 30.0  # a send that has not returned by then never would (the deadlines below are 1 s)


def _spans(tmp_path: Path) -> list[Any]:
    log = EventLog("s1")
    log.turn_start()
    log.user("fix it")
    log.tool_round("c1", "ok")
    log.turn_end()
    write_session(tmp_path / "root", header("s1", created_at=1), log.events, "none")
    return to_otlp(read_corpus(tmp_path / "root", cache=False))


def _send_bounded(spans: list[Any], url: str, **options: Any) -> BaseException | None:
    """``send_otlp`` in a thread; the error it raised (``None``: it succeeded). Fails if it never returns."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            send_otlp([spans], url, **options)
            outcome.append(None)
        except BaseException as error:  # handed to the test
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(GIVE_UP_S)
    assert not worker.is_alive(), f"send_otlp did not return within {GIVE_UP_S} s"
    return outcome[0]


@pytest.mark.parametrize("behaviour", ["drip-status", "drip-headers", "drip-body", "slow-accept", "silent"])
def test_a_collector_that_drips_or_stalls_ends_at_the_whole_request_deadline(tmp_path: Path, behaviour: str) -> None:
    spans = _spans(tmp_path)
    with collector(behaviour) as server:
        started = time.monotonic()
        error = _send_bounded(spans, server.url, timeout=1.0, retry_for=0)
        elapsed = time.monotonic() - started
    assert isinstance(error, OtlpExportError) and "no complete reply within 1 s" in str(error)
    assert "did not accept 4 spans (1 of 1 requests failed)" in str(error) and "--timeout" in (error.hint or "")
    assert "1 of 1 traces did not get through: s1;" in str(error)
    assert elapsed < GIVE_UP_S


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        ("reset", "the connection failed: ConnectionResetError"),
        ("close-no-reply", "the connection failed: RemoteDisconnected"),
        ("close-half-reply", "the connection failed: IncompleteRead"),
        ("huge-header-line", "the connection failed: LineTooLong"),
        ("many-headers", "got more than 100 headers"),
        ("not-http", "the connection failed: BadStatusLine"),
        ("status-400", "it answered 400 Whatever: collector says no"),
        ("status-404", "it answered 404 Whatever"),
        ("status-500", "it answered 500 Whatever"),
        ("endless-body", "it answered 400 Bad"),
        ("partial-success", "it rejected 3 spans: spans too old"),
        ("retry-after-huge", "it answered 429 Slow down"),
        ("status-503", "it answered 503 Whatever"),
    ],
)
def test_a_misbehaving_collector_is_one_error_saying_what_it_did(tmp_path: Path, behaviour: str, said: str) -> None:
    spans = _spans(tmp_path)
    with collector(behaviour) as server:
        error = _send_bounded(spans, server.url, timeout=2.0, retry_for=1.0)
    assert isinstance(error, OtlpExportError) and said in str(error), str(error)
    assert "\n" not in str(error).strip()


def test_a_redirect_is_not_followed(tmp_path: Path) -> None:
    spans = _spans(tmp_path)
    for behaviour, status in (("redirect-307", "307"), ("redirect-301-loop", "301")):
        with collector(behaviour) as server:
            error = _send_bounded(spans, server.url, timeout=2.0)
            assert len(server.received) == 1  # asked once; the Location was never requested
        assert isinstance(error, OtlpExportError)
        assert f"it answered {status}, a redirect to " in str(error) and "which is not followed" in str(error)


@pytest.mark.parametrize("behaviour", ["ok", "ok-204", "ok-garbage-body", "ok-no-length", "retry-then-ok"])
def test_a_collector_that_accepts_gets_the_spans_once(tmp_path: Path, behaviour: str) -> None:
    spans = _spans(tmp_path)
    with collector(behaviour) as server:
        assert _send_bounded(spans, server.url, timeout=5.0, headers={"x-api-key": "k"}) is None
        received = server.received[-1]
    assert received.method == "POST" and received.path == "/v1/traces"
    assert received.headers["content-type"] == "application/x-protobuf" and received.headers["x-api-key"] == "k"
    request = ExportTraceServiceRequest.FromString(received.body)
    assert len(request.resource_spans[0].scope_spans[0].spans) == 4
    assert len(server.received) == (3 if behaviour == "retry-then-ok" else 1)


def test_a_refused_connection_fails_at_once(tmp_path: Path) -> None:
    error = _send_bounded(_spans(tmp_path), "http://127.0.0.1:9", timeout=20.0)
    assert isinstance(error, OtlpExportError) and "could not connect" in str(error)


MALFORMED = [
    ("http://[::1", "Invalid IPv6 URL"),
    ("http://[::1]x:80", "Invalid IPv6 URL"),
    ("http://[zz::1]:4318", "does not appear to be an IPv4 or IPv6 address"),
    ("http://host:99999", "Port out of range"),
    ("http://host:abc", "Port could not be cast"),
    ("http://host:0", "port 0"),
    ("http://", "no host"),
    ("http:///v1/traces", "no host"),
    ("ftp://127.0.0.1/x", "is not http or https"),
    ("localhost:4318", "is not http or https"),
    ("127.0.0.1:4318", "no scheme"),
    ("", "no scheme"),
    (" http://127.0.0.1:4318", "whitespace or control characters"),
    ("http://127.0.0.1:4318/v1/traces\n", "whitespace or control characters"),
    ("http://exa mple.com", "whitespace or control characters"),
    ("http://user:pw@127.0.0.1:4318", "credentials in the URL"),
    ("http://127.0.0.1:4318/#frag", "a fragment"),
    ("http://bad_host!:4318", "not a valid name"),
    ("http://a..b:4318", "not a valid name"),
    ("http://127.0.0.1:4318/\u00e9", "non-ASCII"),
    ("http://" + "a" * 3000, "characters long"),
    ("http://\udcff/", "not a valid name"),
]


@pytest.mark.parametrize(("url", "why"), MALFORMED)
def test_every_malformed_endpoint_is_one_endpoint_error_with_a_hint(url: str, why: str) -> None:
    with pytest.raises(EndpointError, match="not a usable endpoint URL") as refused:
        parse_endpoint(url)
    assert why in str(refused.value) and refused.value.hint
    with pytest.raises(EndpointError):
        send_otlp([], url)


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:6006", "https://collector.example/custom?a=1", "http://[::1]:4318", "HTTP://LOCALHOST:4318/"],
)
def test_wellformed_endpoints_are_accepted(url: str) -> None:
    endpoint = parse_endpoint(url)
    assert endpoint.scheme in ("http", "https") and endpoint.port > 0 and endpoint.target.startswith("/")


def test_headers_that_http_cannot_carry_are_refused() -> None:
    for bad in ({"x": "a\r\nInjected: 1"}, {"bad name": "v"}, {"x": "\u2603"}, {"": "v"}, {"x": "a\x00"}):
        with pytest.raises(EndpointError):
            check_headers(bad)


def test_the_cli_says_one_line_for_a_malformed_endpoint_before_reading_the_corpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import subagent_catalog.cli.interop as command

    def no_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("the corpus was read")

    monkeypatch.setattr(command, "_source", no_read)
    for url, why in MALFORMED[:12]:
        result = CliRunner().invoke(main, ["otel", str(SAMPLE), "--endpoint", url, "-q"])
        assert result.exit_code == 1, (url, result.output)
        (line,) = result.output.strip().splitlines()
        assert line.startswith("Error: not a usable endpoint URL") and why in line and "(hint: " in line
    args = ["otel", str(SAMPLE), "--endpoint", "http://127.0.0.1:9", "--header", "a b=c"]
    bad_header = CliRunner().invoke(main, args)
    assert bad_header.exit_code == 1 and "is not an HTTP header name" in bad_header.output


def test_the_cli_bounds_a_dripping_collector(tmp_path: Path) -> None:
    with collector("drip-status") as server:
        outcome: list[Any] = []
        worker = threading.Thread(
            target=lambda: outcome.append(
                CliRunner().invoke(
                    main, ["otel", str(SAMPLE), "--endpoint", server.url, "--timeout", "1", "--retry-for", "0", "-q"]
                )
            ),
            daemon=True,
        )
        worker.start()
        worker.join(GIVE_UP_S)
        assert not worker.is_alive(), "otel --endpoint did not return"
    (result,) = outcome
    assert result.exit_code == 1 and "no complete reply within 1 s" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_busy_collector_is_waited_for_up_to_retry_for_then_named(tmp_path: Path) -> None:
    # every attempt is answered 503 at once: the request is tried again for retry_for seconds, not timeout's
    spans = _spans(tmp_path)
    with collector("status-503") as server:
        started = time.monotonic()
        error = _send_bounded(spans, server.url, timeout=0.5, retry_for=3.0)
        elapsed = time.monotonic() - started
        attempts = len(server.received)
    assert isinstance(error, OtlpExportError) and "it answered 503 Whatever" in str(error)
    assert f"(after {attempts} attempts in " in str(error) and attempts >= 4  # 0.25, 0.5, 1 s pauses fit in 3 s
    assert 1.75 <= elapsed < 3.0 + 0.5 + 8.0  # the pauses taken; bounded by retry_for + timeout (+ one pause)


def test_the_cli_default_retry_budget_is_the_librarys() -> None:
    from subagent_catalog.interop.otlp_http import RETRY_FOR

    option = next(p for p in main.commands["otel"].params if p.name == "retry_for")
    assert option.default == RETRY_FOR


@pytest.mark.parametrize("behaviour", ["stall-then-ok", "reset-then-ok"])
def test_an_attempt_without_a_reply_is_made_again_within_retry_for(tmp_path: Path, behaviour: str) -> None:
    # a collector busy ingesting answers the first attempt too late (or drops it): the same request goes again
    spans = _spans(tmp_path)
    with collector(behaviour) as server:
        assert _send_bounded(spans, server.url, timeout=0.5, retry_for=10.0) is None
        assert len(server.received) == 2 and len(server.accepted) == 1
        assert server.received[0].body == server.received[1].body  # the very same request


def test_without_retry_for_an_attempt_without_a_reply_is_the_error(tmp_path: Path) -> None:
    spans = _spans(tmp_path)
    with collector("stall-then-ok") as server:
        error = _send_bounded(spans, server.url, timeout=0.5, retry_for=0)
        assert len(server.received) == 1 and server.accepted == []
    assert isinstance(error, OtlpExportError) and "no complete reply within 0.5 s" in str(error)
    assert "attempts" not in str(error)  # one attempt: nothing to count
