"""Phoenix, asked back: which traces it already holds, how many of the spans sent it stored, and our model prices.

Phoenix ingests OTLP asynchronously: a 2xx reply means "received", not
"stored" (on a busy server, minutes pass before a span can be read back).
``verify_phoenix`` asks Phoenix how many spans of each trace of an export
it holds (its GraphQL ``numSpans``, counted by its database; a server
without that field has the spans read back through Phoenix's own client,
``arize-phoenix-client``, the ``[interop]`` extra, imported here when used)
until every trace's count matches or a deadline passes.
``phoenix_presence`` tells ``send_otlp`` which traces Phoenix held before
they were sent (Phoenix keeps the first copy of a span id: a trace already
present is not replaced). ``register_prices`` writes model prices from our
price table into Phoenix's model table (its GraphQL ``createModel`` and
``updateModel`` mutations, what its Settings > Models page does), since
Phoenix prices spans from that table and ignores ``llm.cost.total``.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.interop.otlp_export import OtlpStats
from subagent_catalog.prices import PriceTable

PAGE_SPANS = 2000
"""Reading spans back, ``verify_phoenix`` asks for traces holding at most this many (more for a larger one)."""
GROUP_TRACES = 50
"""...and at most this many traces at a time (their ids go in the URL); a count asks for this many traces at once."""
PRICE_RELOAD_S = 6.0
"""Seconds Phoenix may take to use a model price written (its model table is reloaded every 5 s)."""
MODEL_PREFIX = "dsh "
"""The name of a model ``register_prices`` writes: this prefix, the provider, ``/``, the model."""

_HINT = "check the Phoenix URL (the server that --endpoint sends to), that it runs, and --header for its API key"


class PhoenixError(SubagentCatalogError):
    """Phoenix could not be asked: its client is not installed, the server did not answer, or it refused.

    Attributes:
        status: the HTTP status Phoenix answered (``None``: no answer).
    """

    def __init__(self, message: str, *, hint: str | None = None, status: int | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


@dataclass(frozen=True)
class Phoenix:
    """A Phoenix server to ask: its base URL, its client (``phoenix.client.Client``), the ``httpx`` client under it."""

    url: str
    client: Any
    http: Any


def phoenix_url(endpoint: str) -> str:
    """Phoenix's base URL from the OTLP endpoint it receives spans at (``/v1/traces`` removed).

    Examples:
        >>> phoenix_url("http://127.0.0.1:6006"), phoenix_url("http://h:6006/phoenix/v1/traces")
        ('http://127.0.0.1:6006', 'http://h:6006/phoenix')
    """
    from subagent_catalog.interop.otlp_http import parse_endpoint

    url = parse_endpoint(endpoint).url.split("?", 1)[0]
    return url.removesuffix("/v1/traces").rstrip("/")


def phoenix_client(url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 60.0) -> Phoenix:
    """Phoenix's client (``phoenix.client.Client``) for the server at ``url``, over an ``httpx`` client of ours.

    Nothing is asked yet; no proxy from the environment is used.

    Raises:
        PhoenixError: ``arize-phoenix-client`` is not installed.

    Examples:
        >>> try:
        ...     shown = phoenix_client("http://127.0.0.1:9").url
        ... except PhoenixError as error:  # without the [interop] extra: how to install it
        ...     shown = error.hint
        >>> shown == "http://127.0.0.1:9" or shown.startswith("pip install 'subagent-catalog[interop]'")
        True
    """
    try:
        import httpx
        from phoenix.client import Client
    except ImportError:
        raise PhoenixError(
            "reading Phoenix back (--verify) and registering prices need Phoenix's client, which is not installed",
            hint="pip install 'subagent-catalog[interop]' (or: pip install arize-phoenix-client)",
        ) from None
    http = httpx.Client(base_url=url, headers=dict(headers or {}), timeout=timeout, trust_env=False)
    return Phoenix(url, Client(http_client=http), http)


def _asked(what: str, call: Callable[[], Any]) -> Any:
    """Run one request to Phoenix; its failures as one ``PhoenixError`` line."""
    import httpx

    try:
        return call()
    except httpx.HTTPStatusError as error:
        said = " ".join(error.response.text[:300].split())
        status = error.response.status_code
        raise PhoenixError(f"Phoenix refused {what}: {status} {said}".rstrip(), hint=_HINT, status=status) from None
    except (httpx.HTTPError, OSError) as error:
        raise PhoenixError(f"Phoenix did not answer {what}: {type(error).__name__}: {error}", hint=_HINT) from None


def _graphql_reply(server: Phoenix, what: str, query: str, variables: Mapping[str, Any]) -> Any:
    """The JSON body of one GraphQL request to Phoenix (its ``errors``, if any, are the caller's to read)."""
    response = _asked(what, lambda: server.http.post("graphql", json={"query": query, "variables": variables}))
    _asked(what, response.raise_for_status)
    return response.json()


def phoenix_presence(server: Phoenix | None, project: str) -> Callable[[Mapping[str, str]], set[str]]:
    """A ``send_otlp(present=...)`` function: which of some traces Phoenix holds in ``project``.

    ``server`` is ``phoenix_client(...)``.

    It receives each trace's first span id (trace id -> span id, hex) and asks
    Phoenix for those spans; a trace whose span is stored is present.

    Examples:
        >>> ask = phoenix_presence(None, "dsh"); ask({})
        set()
    """

    def present(first_spans: Mapping[str, str]) -> set[str]:
        if not first_spans:
            return set()
        found: set[str] = set()
        items = list(first_spans.items())
        for start in range(0, len(items), GROUP_TRACES):
            group = dict(items[start : start + GROUP_TRACES])

            def read(group: dict[str, str] = group) -> Any:
                assert server is not None
                return server.client.spans.get_spans(
                    project_identifier=project, span_ids=list(group.values()), limit=len(group)
                )

            try:
                spans = _asked("a read of spans", read)
            except PhoenixError as error:
                if error.status == 404:  # no such project yet: nothing present
                    return set()
                raise
            stored = {(span["context"]["trace_id"], span["context"]["span_id"]) for span in spans}
            found.update(trace for trace, span in group.items() if (trace, span) in stored)
        return found

    return present


@dataclass
class PhoenixCheck:
    """What Phoenix stored of an export, read back (``verify_phoenix``).

    Attributes:
        sent: spans the collector accepted (of the traces that got through).
        stored: of them, spans Phoenix holds (per trace at most the count sent).
        traces: traces checked.
        short: each trace Phoenix holds fewer spans of than were sent: (stored, sent).
        extra: each trace Phoenix holds more spans of (an earlier export under the same trace id).
        seconds: how long the reads took.
    """

    sent: int = 0
    stored: int = 0
    traces: int = 0
    short: dict[str, tuple[int, int]] = field(default_factory=dict)
    extra: dict[str, tuple[int, int]] = field(default_factory=dict)
    seconds: float = 0.0


def _groups(traces: Sequence[str], expected: Mapping[str, int]) -> Iterable[list[str]]:
    group: list[str] = []
    spans = 0
    for trace in traces:
        if group and (len(group) >= GROUP_TRACES or spans + expected[trace] > PAGE_SPANS):
            yield group
            group, spans = [], 0
        group.append(trace)
        spans += expected[trace]
    if group:
        yield group


def verify_phoenix(
    server: Phoenix | None,
    stats: OtlpStats,
    *,
    project: str,
    deadline: float = 600.0,
    pause: float = 2.0,
    progress: Callable[[PhoenixCheck], None] | None = None,
) -> PhoenixCheck:
    """Ask Phoenix how many spans of each trace of an export it holds, until all are stored or ``deadline`` passes.

    Only the traces that got through are asked for (``stats.failed`` are
    not). Each round counts the spans of the traces still short, by
    Phoenix's GraphQL (``numSpans`` of each trace, ``GROUP_TRACES`` traces a
    request: a 12,000-span trace is one number, not 120 pages of spans).
    A server whose GraphQL has no such count has the spans read back
    instead (``spans.get_spans``, grouped: at most ``GROUP_TRACES`` traces,
    ``PAGE_SPANS`` spans a request).

    Args:
        server: ``phoenix_client(...)``.
        stats: what ``send_otlp`` sent.
        project: the Phoenix project the spans went to.
        deadline: seconds to wait for Phoenix to store them all.
        pause: seconds between rounds.
        progress: called with the check after each round.

    Raises:
        PhoenixError: Phoenix did not answer, or refused a read.

    Examples:
        >>> verify_phoenix(None, OtlpStats(), project="dsh").short
        {}
    """
    started = time.monotonic()
    expected = {trace: count for trace, count in stats.trace_spans.items() if trace not in stats.failed}
    counts: dict[str, int] = dict.fromkeys(expected, 0)
    pending = list(expected)
    check = PhoenixCheck(sent=sum(expected.values()), traces=len(expected))
    counted = True  # by GraphQL, until Phoenix answers that it has no such count
    while pending:
        if counted:
            try:
                for start in range(0, len(pending), GROUP_TRACES):
                    counts.update(_counted(server, project, pending[start : start + GROUP_TRACES]))
            except _NoCount:
                counted = False
        if not counted:
            for group in _groups(pending, expected):
                counts.update(_read_back(server, project, group, sum(expected[trace] for trace in group) + 1))
        pending = [trace for trace in pending if counts[trace] < expected[trace]]
        check.stored = sum(min(counts[trace], expected[trace]) for trace in expected)
        check.seconds = time.monotonic() - started
        if progress is not None:
            progress(check)
        if not pending or time.monotonic() + pause > started + deadline:
            break
        time.sleep(pause)
    check.short = {trace: (counts[trace], expected[trace]) for trace in pending}
    check.extra = {trace: (counts[trace], n) for trace, n in expected.items() if counts[trace] > n}
    check.seconds = time.monotonic() - started
    return check


class _NoCount(Exception):
    """Phoenix's GraphQL has no per-trace span count (an older server): the spans are read back instead."""


def _counted(server: Phoenix | None, project: str, traces: Sequence[str]) -> dict[str, int]:
    """How many spans of each trace Phoenix holds in ``project``: one GraphQL request (``numSpans``, its database's)."""
    assert server is not None
    names = ", ".join(f"$t{n}: ID!" for n in range(len(traces)))
    asked = " ".join(f"t{n}: trace(traceId: $t{n}) {{ numSpans }}" for n in range(len(traces)))
    query = f"query($project: String!, {names}) {{ getProjectByName(name: $project) {{ {asked} }} }}"
    variables = {"project": project, **{f"t{n}": trace for n, trace in enumerate(traces)}}
    body = _graphql_reply(server, "a count of spans", query, variables)
    if body.get("errors") or not isinstance(body.get("data"), dict):
        raise _NoCount
    held = body["data"].get("getProjectByName") or {}  # no such project yet: nothing stored
    return {trace: int((held.get(f"t{n}") or {}).get("numSpans") or 0) for n, trace in enumerate(traces)}


def _read_back(server: Phoenix | None, project: str, group: list[str], limit: int) -> dict[str, int]:
    """How many spans of each trace of ``group`` Phoenix holds, by reading them (``spans.get_spans``)."""

    def read() -> Any:
        assert server is not None
        return server.client.spans.get_spans(project_identifier=project, trace_ids=group, limit=limit, timeout=120)

    try:
        spans = _asked("a read of spans", read)
    except PhoenixError as error:
        if error.status != 404:  # 404: no such project yet
            raise
        spans = []
    found = Counter(span["context"]["trace_id"] for span in spans)
    return {trace: found.get(trace, 0) for trace in group}


# ------------------------------------------------------------------------------------------------ prices

_PRICE_TYPES = (
    ("input", "PROMPT", "input"),
    ("cache_read", "PROMPT", "cache_read"),
    ("cache_write", "PROMPT", "cache_write"),
    ("output", "COMPLETION", "output"),
    ("reasoning", "COMPLETION", "reasoning"),
)
"""Phoenix's token types (``llm.token_count.prompt_details.*``, ``completion_details.*``), their kind, our rate."""

_MODELS = """query($after: String) { generativeModels(first: 500, after: $after) {
  edges { node { id name kind } } pageInfo { hasNextPage endCursor } } }"""
_CREATE = """mutation($input: CreateModelMutationInput!) { createModel(input: $input) { model { id } } }"""
_UPDATE = """mutation($input: UpdateModelMutationInput!) { updateModel(input: $input) { model { id } } }"""


@dataclass(frozen=True)
class RegisteredPrice:
    """One model's prices as ``register_prices`` wrote them into Phoenix (USD per million tokens).

    Attributes:
        provider: the provider as spans name it (``llm.provider``).
        model: the model (``llm.model_name``, matched exactly).
        action: ``created``, ``updated``, or ``unpriced`` (our table has no price: nothing written).
        prices: token type (``input``, ``cache_read``, ``cache_write``, ``output``, ``reasoning``) -> price.
    """

    provider: str
    model: str
    action: Literal["created", "updated", "unpriced"]
    prices: dict[str, float]


def _graphql(server: Phoenix, query: str, variables: Mapping[str, Any]) -> Any:
    body = _graphql_reply(server, "a GraphQL request", query, variables)
    if body.get("errors"):
        said = " ".join(str(body["errors"][0].get("message", body["errors"][0])).split())[:300]
        raise PhoenixError(f"Phoenix refused the model prices: {said}", hint=_HINT)
    return body["data"]


def _our_models(server: Phoenix) -> dict[str, str]:
    """Phoenix's custom models named by ``register_prices`` before: name -> id."""
    found: dict[str, str] = {}
    after = None
    while True:
        page = _graphql(server, _MODELS, {"after": after})["generativeModels"]
        for edge in page["edges"]:
            node = edge["node"]
            if node["kind"] == "CUSTOM" and node["name"].startswith(MODEL_PREFIX):
                found[node["name"]] = node["id"]
        if not page["pageInfo"]["hasNextPage"]:
            return found
        after = page["pageInfo"]["endCursor"]


def register_prices(
    server: Phoenix | None,
    models: Iterable[tuple[str | None, str | None]],
    table: PriceTable,
    *,
    at_ms: int | None = None,
) -> list[RegisteredPrice]:
    """Write each model's prices from ``table`` into Phoenix's model table, so that Phoenix's costs are not $0.

    A model is written as ``dsh <provider>/<model>``, matching spans whose
    ``llm.model_name`` is the model exactly and whose ``llm.provider`` is
    the provider; one written before is updated. Phoenix keeps one price per
    model: the table's at ``at_ms`` (default now), so a time-of-day or dated
    price is Phoenix's approximation, while ``llm.cost.total`` keeps each
    step's own. Phoenix prices a span when it stores it, and reloads its
    model table every few seconds: register before sending.

    Args:
        server: ``phoenix_client(...)``.
        models: (provider, model) pairs, as ``usage_by_model(..., by="model")`` gives them.
        table: the price table (``price_table(...)``).
        at_ms: the moment whose prices are written (ms since 1970, UTC).

    Raises:
        PhoenixError: Phoenix did not answer or refused a model.

    Examples:
        >>> register_prices(None, [(None, None)], PriceTable())[0].action
        'unpriced'
    """
    minute = (int(time.time() * 1000) if at_ms is None else at_ms) // 60_000
    out: list[RegisteredPrice] = []
    existing: dict[str, str] | None = None
    for provider, model in dict.fromkeys(models):
        rates = table.rates(provider, model, minute) if model else None
        if rates is None or provider is None or model is None:
            out.append(RegisteredPrice(provider or "", model or "", "unpriced", {}))
            continue
        prices = {kind: getattr(rates, rate) * 1_000_000 for kind, _, rate in _PRICE_TYPES}
        assert server is not None
        if existing is None:
            existing = _our_models(server)
        name = f"{MODEL_PREFIX}{provider}/{model}"
        fields = {
            "name": name,
            "provider": provider,
            "namePattern": f"^{re.escape(model)}$",
            "costs": [
                {"tokenType": kind, "kind": side, "costPerMillionTokens": prices[kind]}
                for kind, side, _ in _PRICE_TYPES
            ],
        }
        if name in existing:
            _graphql(server, _UPDATE, {"input": {"id": existing[name], **fields}})
            out.append(RegisteredPrice(provider, model, "updated", prices))
        else:
            created = _graphql(server, _CREATE, {"input": fields})
            existing[name] = created["createModel"]["model"]["id"]
            out.append(RegisteredPrice(provider, model, "created", prices))
    return out
