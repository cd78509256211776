"""Reliability round 5, items 6 and 7: every HTTP exchange (OTLP send, Phoenix verify, price registration) has a
whole-request deadline and turns any reply it does not understand into one typed error naming the endpoint.

Phoenix is a loopback fake (``tests/fuzz/otlp_server.py``, ``PHOENIX_BEHAVIOURS``): it accepts the spans and
answers its GraphQL honestly until its ``lie_from``-th request (1: the question asked before sending, which
traces it holds; 2: the count after sending, or the first model written), then lies, drips, resets or floods.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from subagent_catalog.cli import main
from subagent_catalog.interop.errors import ExchangeError
from subagent_catalog.interop.otlp_export import OtlpStats
from subagent_catalog.interop.otlp_http import exchange, parse_endpoint
from subagent_catalog.interop.phoenix_check import PhoenixError, phoenix_client, verify_phoenix
from tests.fuzz.otlp_server import collector

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"
GIVE_UP_S = 60.0  # a command that has not returned by then never would
MARGIN_S = 15.0  # reading the corpus and building its spans, on a loaded machine

LIES = {  # behaviour -> what the one error line says was wrong
    "graphql-html": "with a reply not understood: not JSON (Expecting value",
    "graphql-list": "with a reply not understood: a JSON list, not an object",
    "graphql-missing-keys": "with a reply not understood: no ",
    "graphql-null-data": "with a reply not understood: data is null, not an object",
    "graphql-errors-only": ": Phoenix is down for maintenance",
    "graphql-errors-malformed": "with a reply not understood: errors is 'maintenance', not a list",
    "graphql-deep": "with a reply not understood: not JSON (nested too deep",
    "graphql-not-utf8": "with a reply not understood: not JSON ('utf-8' codec can't decode",
    "graphql-long-number": "with a reply not understood: not JSON (Exceeds the limit (4300 digits)",
    "graphql-nan": "with a reply not understood: not JSON (NaN is not JSON",
    "graphql-status-500": ": 500 Internal Server Error: it broke",
    "graphql-redirect": ": 302 Found (a redirect to http://127.0.0.1:9/graphql, not followed)",
    "graphql-reset": "did not answer",
    "graphql-close": "did not answer",
    "graphql-huge-reply": "with a reply not understood: a reply longer than 16 MiB",
    "graphql-endless": "with a reply not understood: a reply longer than 16 MiB",
}
COUNTS = "a whole number from 0 to 9,007,199,254,740,991"  # bounds.COUNT
COUNT_LIES = {  # what a lie in place of every count says
    "graphql-text-count": f"numSpans is 'many', not {COUNTS}",
    "graphql-1e400": f"numSpans is inf, not {COUNTS}",
    "graphql-negative": f"numSpans is -3, not {COUNTS}",
    "graphql-huge-number": f"numSpans is 1000000000000000000000000000000, not {COUNTS}",
}
PRICE_LIES = {  # ... and in place of every flag and id of the model list, or of the model written
    "graphql-text-count": "is a JSON list, not text",
    "graphql-1e400": "is inf, not text",
    "graphql-negative": "is -3, not text",
    "graphql-huge-number": "is 1000000000000000000000000000000, not text",
}


def _otel(args: list[str]) -> tuple[Result, float]:
    """``otel`` in a thread (fails if it never returns): its result and its wall time."""
    outcome: list[Result] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: outcome.append(CliRunner().invoke(main, args)), daemon=True)
    worker.start()
    worker.join(GIVE_UP_S)
    assert not worker.is_alive(), f"otel {args} did not return within {GIVE_UP_S} s"
    return outcome[0], time.monotonic() - started


def _one_error(result: Result, url: str) -> str:
    """The one ``Error:`` line naming Phoenix's GraphQL at ``url``, exit 1, no traceback."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"Error: Phoenix at {url}/graphql "), line
    return line


@pytest.mark.parametrize("lie_from", [1, 2])
@pytest.mark.parametrize("behaviour", [*LIES, *COUNT_LIES])
def test_verify_against_a_lying_phoenix_is_one_error_naming_it(behaviour: str, lie_from: int) -> None:
    # item 6: a 200 maintenance page, a JSON list, numSpans "many" or 1e400... gave "internal error"
    with collector(behaviour, lie_from=lie_from) as server:
        result, _ = _otel(["otel", str(SAMPLE), "--endpoint", server.url, "--verify", "--timeout", "2", "-q"])
        accepted = len(server.accepted)
    line = _one_error(result, server.url)
    assert (LIES.get(behaviour) or COUNT_LIES[behaviour]) in line and "a count of spans" in line
    assert accepted == lie_from - 1  # asked before sending: a lie there sends nothing


@pytest.mark.parametrize("lie_from", [1, 2])
@pytest.mark.parametrize("behaviour", [*LIES, *PRICE_LIES])
def test_register_prices_against_a_lying_phoenix_is_one_error_naming_it(behaviour: str, lie_from: int) -> None:
    with collector(behaviour, lie_from=lie_from) as server:
        result, _ = _otel(["otel", str(SAMPLE), "--endpoint", server.url, "--register-prices", "--timeout", "2", "-q"])
        accepted = len(server.accepted)
    line = _one_error(result, server.url)
    assert (LIES.get(behaviour) or PRICE_LIES[behaviour]) in line
    assert ("the list of models" if lie_from == 1 else "the price of deepseek/") in line
    assert accepted == 0  # prices are written before sending


def test_a_model_list_whose_pages_go_round_is_one_error() -> None:
    with collector("graphql-pages-loop") as server:
        result, _ = _otel(["otel", str(SAMPLE), "--endpoint", server.url, "--register-prices", "-q"])
        asked = server.graphql
    assert "the list of models with a reply not understood: pages that go round" in _one_error(result, server.url)
    assert asked == 2


@pytest.mark.parametrize("lie_from", [1, 2])
@pytest.mark.parametrize("behaviour", ["graphql-drip-headers", "graphql-drip-body"])
def test_verify_cuts_a_dripping_phoenix_at_the_request_deadline(behaviour: str, lie_from: int) -> None:
    # item 7: headers, then a byte every few seconds: --verify-timeout and --timeout did not bound it
    args = ["--verify", "--verify-timeout", "2", "--timeout", "1", "-q"]
    with collector(behaviour, lie_from=lie_from) as server:
        result, seconds = _otel(["otel", str(SAMPLE), "--endpoint", server.url, *args])
    line = _one_error(result, server.url)
    assert "did not answer a count of spans: no complete reply within 1 s" in line
    assert seconds < 2 + 1 + MARGIN_S


@pytest.mark.parametrize("behaviour", ["graphql-drip-headers", "graphql-drip-body"])
def test_register_prices_cuts_a_dripping_phoenix_at_the_request_deadline(behaviour: str) -> None:
    with collector(behaviour) as server:
        result, seconds = _otel(["otel", str(SAMPLE), "--endpoint", server.url, "--register-prices", "--timeout", "1"])
    line = _one_error(result, server.url)
    assert "did not answer the list of models: no complete reply within 1 s" in line
    assert seconds < 1 + MARGIN_S


def test_an_honest_phoenix_is_verified_and_priced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("subagent_catalog.interop.phoenix_check.PRICE_RELOAD_S", 0.0)  # the fake reloads nothing
    with collector("phoenix") as server:
        args = ["otel", str(SAMPLE), "--endpoint", server.url, "--verify", "--register-prices", "--timeout", "5"]
        result, _ = _otel(args)
        written = [json.loads(r.body) for r in server.received if r.path == "/graphql" and b"createModel" in r.body]
    assert result.exit_code == 0, result.output
    assert "Phoenix model deepseek/deepseek-chat: created: input $" in result.output
    assert "4 traces new, 0 already present in Phoenix (project dsh)" in result.output
    assert "Phoenix stored 132 of 132 spans sent (4 traces)" in result.output
    assert {request["variables"]["input"]["name"] for request in written} >= {"dsh deepseek/deepseek-chat"}


def test_a_count_past_2_to_the_53_is_refused_naming_the_endpoint() -> None:
    stats = OtlpStats(trace_spans={"a" * 32: 3}, names={"a" * 32: "run-a"})
    with collector("phoenix", count=lambda trace: 2**53) as server, pytest.raises(PhoenixError) as refused:
        verify_phoenix(phoenix_client(server.url), stats, project="p", deadline=5, pause=0.01)
    said = str(refused.value)
    assert f"Phoenix at {server.url}/graphql answered a count of spans" in said
    assert f"getProjectByName.t0.numSpans is 9007199254740992, not {COUNTS}" in said


@pytest.mark.parametrize(("behaviour", "reason"), [("graphql-drip-body", "timeout"), ("graphql-reset", "dropped")])
def test_one_exchange_is_bounded_and_its_failure_typed_and_named(behaviour: str, reason: str) -> None:
    with collector(behaviour) as server:
        endpoint = parse_endpoint(f"{server.url}/graphql")
        body = json.dumps({"query": "{ generativeModels { edges } }", "variables": {}}).encode()
        started = time.monotonic()
        with pytest.raises(ExchangeError) as failed:
            exchange(endpoint, body, {}, timeout=0.5, content_type="application/json")
        seconds = time.monotonic() - started
    assert failed.value.reason == reason and failed.value.url == endpoint.url
    assert str(failed.value).startswith(f"{endpoint.url}: ")
    assert seconds < 0.5 + 5  # the deadline, not the drip's pace


def test_one_exchange_reads_a_huge_reply_only_to_its_bound() -> None:
    with collector("graphql-huge-reply") as server:
        body = json.dumps({"query": "{ generativeModels { edges } }", "variables": {}}).encode()
        reply = exchange(parse_endpoint(f"{server.url}/graphql"), body, {}, timeout=10, max_body=1024)
    assert reply.status == 200 and reply.cut and len(reply.body) == 1024


@pytest.mark.parametrize("timeout", [float("inf"), float("nan"), 0.0, -1.0, 1e400])
def test_a_phoenix_request_deadline_must_be_a_positive_number_of_seconds(timeout: float) -> None:
    from subagent_catalog.errors import BoundError

    with pytest.raises(BoundError, match="timeout must be a positive number of seconds"):
        phoenix_client("http://127.0.0.1:9", timeout=timeout)
