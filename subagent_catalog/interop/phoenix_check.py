"""Phoenix, asked back: which traces it already holds, how many of the spans sent it stored, and our model prices.

Phoenix ingests OTLP asynchronously: a 2xx reply means "received", not
"stored" (on a busy server, minutes pass before a span can be read back).
``verify_phoenix`` asks Phoenix how many spans of each trace of an export
it holds (its GraphQL ``numSpans``, counted by its database, Phoenix 8.5 and
later) until every trace's count matches or a deadline passes.
``phoenix_presence`` tells ``send_otlp`` which traces Phoenix held spans of
before they were sent (Phoenix keeps the first copy of a span id: a trace
already present is not replaced). ``register_prices`` writes model prices
from our price table into Phoenix's model table (its GraphQL ``createModel``
and ``updateModel`` mutations, what its Settings > Models page does), since
Phoenix prices spans from that table and ignores ``llm.cost.total``.

Every request is one POST to Phoenix's ``/graphql`` through
``otlp_http.exchange`` (a whole-request deadline; the reply read up to
``MAX_REPLY_BYTES``), and every reply is read in one place (``_ask``,
``_field``): a reply that is not a JSON object with the expected fields of
the expected types (a count: ``bounds.COUNT``, 0 to 2^53 - 1) is a
``PhoenixError`` naming Phoenix's URL and what was wrong.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from subagent_catalog.bounds import COUNT, POSITIVE_SECONDS, SECONDS
from subagent_catalog.errors import SubagentCatalogError
from subagent_catalog.interop.errors import ExchangeError
from subagent_catalog.interop.otlp_export import OtlpStats
from subagent_catalog.interop.otlp_http import Endpoint, check_headers, exchange, parse_endpoint
from subagent_catalog.prices import PriceTable

GROUP_TRACES = 50
"""A count asks Phoenix for this many traces at once (one GraphQL request)."""
PRICE_RELOAD_S = 6.0
"""Seconds Phoenix may take to use a model price written (its model table is reloaded every 5 s)."""
MODEL_PREFIX = "dsh "
"""The name of a model ``register_prices`` writes: this prefix, the provider, ``/``, the model."""
MAX_REPLY_BYTES = 16 * 1024 * 1024
"""Phoenix's reply to one request is read up to this many bytes; a longer one is an error."""
MAX_PAGES = 1000
"""Phoenix's model list is read at most this many pages (500 models a page); more is an error."""

_HINT = (
    "check the Phoenix URL (the server that --endpoint sends to), that it runs, --header for its API key "
    "and --timeout (each request's whole time)"
)
_JSON = "application/json"
_UNCLEAR_HINT = "is --endpoint a Phoenix server (8.5 or later, its GraphQL at /graphql)? check the URL"


class PhoenixError(SubagentCatalogError):
    """Phoenix could not be asked: the server did not answer, refused, or answered what it does not understand.

    Attributes:
        status: the HTTP status Phoenix answered (``None``: no answer).
    """

    def __init__(self, message: str, *, hint: str | None = None, status: int | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


@dataclass(frozen=True)
class Phoenix:
    """A Phoenix server to ask: its base URL, its GraphQL endpoint, the headers sent, each request's deadline (s)."""

    url: str
    graphql: Endpoint
    headers: dict[str, str]
    timeout: float


def phoenix_url(endpoint: str) -> str:
    """Phoenix's base URL from the OTLP endpoint it receives spans at (``/v1/traces`` removed).

    Examples:
        >>> phoenix_url("http://127.0.0.1:6006"), phoenix_url("http://h:6006/phoenix/v1/traces")
        ('http://127.0.0.1:6006', 'http://h:6006/phoenix')
    """
    url = parse_endpoint(endpoint).url.split("?", 1)[0]
    return url.removesuffix("/v1/traces").rstrip("/")


def phoenix_client(url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 60.0) -> Phoenix:
    """The Phoenix at ``url`` to ask: each request within ``timeout`` seconds in all, ``headers`` sent with it.

    Nothing is asked yet. Each request is one ``otlp_http.exchange``: no
    proxy from the environment, no redirect followed.

    Raises:
        EndpointError: ``url`` or a header is not usable.
        BoundError: ``timeout`` is not a positive number of seconds (``bounds.POSITIVE_SECONDS``).

    Examples:
        >>> phoenix_client("http://127.0.0.1:6006", headers={"api_key": "k"}).graphql.url
        'http://127.0.0.1:6006/graphql'
    """
    POSITIVE_SECONDS.check("timeout", timeout)
    graphql = parse_endpoint(f"{url.rstrip('/')}/graphql")
    return Phoenix(url, graphql, check_headers(dict(headers or {})), timeout)


def _unclear(server: Phoenix, what: str, problem: str) -> PhoenixError:
    return PhoenixError(
        f"Phoenix at {server.graphql.url} answered {what} with a reply not understood: {problem}", hint=_UNCLEAR_HINT
    )


def _shown(value: Any) -> str:
    """A JSON value in a few words, for an error."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, dict | list):
        return f"a JSON {'object' if isinstance(value, dict) else 'list'}"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _ask(server: Phoenix, what: str, query: str, variables: Mapping[str, Any]) -> dict[str, Any]:
    """The ``data`` of one GraphQL request to Phoenix; every failure and every reply not understood a ``PhoenixError``.

    Its ``errors`` (a list of objects with a ``message``) are Phoenix
    refusing the request; anything but a JSON object with an object
    ``data`` is a reply not understood.
    """
    body = json.dumps({"query": query, "variables": variables}).encode()
    headers = {"Accept": _JSON, **server.headers}
    try:
        reply = exchange(
            server.graphql, body, headers, timeout=server.timeout, content_type=_JSON, max_body=MAX_REPLY_BYTES
        )
    except ExchangeError as error:
        raise PhoenixError(f"Phoenix at {error.url} did not answer {what}: {error.detail}", hint=_HINT) from None
    if not 200 <= reply.status < 300:
        said = " ".join(reply.body[:300].decode("utf-8", "replace").split())
        where = f" (a redirect to {' '.join(reply.location[:300].split())}, not followed)" if reply.location else ""
        raise PhoenixError(
            f"Phoenix at {server.graphql.url} refused {what}: {reply.status} {reply.reason}{where}".rstrip()
            + (f": {said}" if said else ""),
            hint=_HINT,
            status=reply.status,
        )
    if reply.cut:
        raise _unclear(server, what, f"a reply longer than {MAX_REPLY_BYTES // 2**20} MiB")
    try:
        parsed = json.loads(reply.body, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        why = " ".join(str(error).split())[:100] if isinstance(error, ValueError) else "nested too deep"
        start = " ".join(reply.body[:60].decode("utf-8", "replace").split())
        kind = reply.content_type or "no content type"
        raise _unclear(server, what, f"not JSON ({why}; {kind}: {start!r})") from None
    if not isinstance(parsed, dict):
        raise _unclear(server, what, f"{_shown(parsed)}, not an object")
    errors = parsed.get("errors")
    if errors is not None and errors != []:
        if not isinstance(errors, list):
            raise _unclear(server, what, f"errors is {_shown(errors)}, not a list")
        first = errors[0]
        message = first.get("message") if isinstance(first, dict) else None
        said = " ".join(message.split())[:300] if isinstance(message, str) else _shown(first)
        raise PhoenixError(f"Phoenix at {server.graphql.url} refused {what}: {said}", hint=_HINT)
    data: dict[str, Any] = _field(server, what, parsed, "data", "object")
    return data


_KINDS: dict[str, tuple[type, ...]] = {"object": (dict,), "list": (list,), "text": (str,), "flag": (bool,)}
_NAMED = {"object": "an object", "list": "a list", "text": "text", "flag": "true or false", "count": COUNT.describe()}


def _field(server: Phoenix, what: str, value: Any, path: str, kind: str, *, where: str = "") -> Any:
    """The field at ``path`` (dotted keys) of a reply's ``value``, checked to be ``kind``, or a ``PhoenixError``.

    ``kind``: ``object``, ``list``, ``text``, ``flag`` (true or false) or
    ``count`` (``bounds.COUNT``: a whole number from 0 to 2^53 - 1, not
    text, not 1e400, not negative); ending in ``?``, null too. ``where``: the path of ``value``
    in the reply, for the error.
    """
    label = f"{where}.{path}" if where else path
    here = value
    for key in path.split("."):
        if not isinstance(here, dict) or key not in here:
            raise _unclear(server, what, f"no {label}")
        here = here[key]
    if here is None and kind.endswith("?"):
        return None
    wanted = kind.removesuffix("?")
    if wanted == "count":
        ok = COUNT.admits(here)
    else:
        ok = isinstance(here, _KINDS[wanted]) and (wanted == "flag" or not isinstance(here, bool))
    if not ok:
        raise _unclear(server, what, f"{label} is {_shown(here)}, not {_NAMED[wanted]}")
    return here


def _counted(server: Phoenix | None, project: str, traces: Sequence[str]) -> dict[str, int]:
    """How many spans of each trace Phoenix holds in ``project``: one GraphQL request (``numSpans``, its database's)."""
    assert server is not None
    names = ", ".join(f"$t{n}: ID!" for n in range(len(traces)))
    asked = " ".join(f"t{n}: trace(traceId: $t{n}) {{ numSpans }}" for n in range(len(traces)))
    query = f"query($project: String!, {names}) {{ getProjectByName(name: $project) {{ {asked} }} }}"
    variables = {"project": project, **{f"t{n}": trace for n, trace in enumerate(traces)}}
    what = "a count of spans"
    data = _ask(server, what, query, variables)
    held = _field(server, what, data, "getProjectByName", "object?")
    if held is None:  # no such project yet: nothing stored
        return dict.fromkeys(traces, 0)
    counts: dict[str, int] = {}
    for n, trace in enumerate(traces):
        found = _field(server, what, held, f"t{n}", "object?", where="getProjectByName")  # null: no such trace yet
        where = f"getProjectByName.t{n}"
        counts[trace] = 0 if found is None else _field(server, what, found, "numSpans", "count", where=where)
    return counts


def phoenix_presence(server: Phoenix | None, project: str) -> Callable[[Mapping[str, str]], set[str]]:
    """A ``send_otlp(present=...)`` function: which of some traces Phoenix holds spans of in ``project``.

    ``server`` is ``phoenix_client(...)``.

    It receives each trace's first span id (trace id -> span id, hex) and
    asks Phoenix how many spans of each trace it holds (``numSpans``,
    ``GROUP_TRACES`` traces a request); a trace it holds any span of is
    present (its ids come from the export: an earlier send of the same runs).

    Raises:
        PhoenixError: Phoenix did not answer, refused, or answered what it does not understand.

    Examples:
        >>> ask = phoenix_presence(None, "dsh"); ask({})
        set()
    """

    def present(first_spans: Mapping[str, str]) -> set[str]:
        traces = list(first_spans)
        found: set[str] = set()
        for start in range(0, len(traces), GROUP_TRACES):
            counts = _counted(server, project, traces[start : start + GROUP_TRACES])
            found.update(trace for trace, count in counts.items() if count > 0)
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
    The first round asks for every trace; a later one starts no request
    once ``deadline`` has passed, so the call ends within ``deadline`` plus
    one request's time (``phoenix_client``'s ``timeout``).

    Args:
        server: ``phoenix_client(...)``.
        stats: what ``send_otlp`` sent.
        project: the Phoenix project the spans went to.
        deadline: seconds to wait for Phoenix to store them all.
        pause: seconds between rounds.
        progress: called with the check after each round.

    Raises:
        BoundError: ``deadline`` or ``pause`` is not a number of seconds (``bounds.SECONDS``).
        PhoenixError: Phoenix did not answer, refused a count (a Phoenix
            before 8.5 has no ``numSpans``), or answered one it does not
            understand.

    Examples:
        >>> verify_phoenix(None, OtlpStats(), project="dsh").short
        {}
    """
    SECONDS.check("deadline", deadline)
    SECONDS.check("pause", pause)
    started = time.monotonic()
    expected = {trace: count for trace, count in stats.trace_spans.items() if trace not in stats.failed}
    counts: dict[str, int] = dict.fromkeys(expected, 0)
    pending = list(expected)
    check = PhoenixCheck(sent=sum(expected.values()), traces=len(expected))
    first = True
    while pending:
        for start in range(0, len(pending), GROUP_TRACES):
            if not first and time.monotonic() >= started + deadline:
                break
            counts.update(_counted(server, project, pending[start : start + GROUP_TRACES]))
        first = False
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


def _our_models(server: Phoenix) -> dict[str, str]:
    """Phoenix's custom models named by ``register_prices`` before: name -> id (at most ``MAX_PAGES`` pages read)."""
    what = "the list of models"
    found: dict[str, str] = {}
    after: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = _field(server, what, _ask(server, what, _MODELS, {"after": after}), "generativeModels", "object")
        for n, edge in enumerate(_field(server, what, page, "edges", "list", where="generativeModels")):
            where = f"generativeModels.edges[{n}].node"
            node = _field(server, what, edge, "node", "object", where=where.removesuffix(".node"))
            name = _field(server, what, node, "name", "text", where=where)
            kind = _field(server, what, node, "kind", "text", where=where)
            model = _field(server, what, node, "id", "text", where=where)
            if kind == "CUSTOM" and name.startswith(MODEL_PREFIX):
                found[name] = model
        if not _field(server, what, page, "pageInfo.hasNextPage", "flag", where="generativeModels"):
            return found
        after = _field(server, what, page, "pageInfo.endCursor", "text", where="generativeModels")
        if after in seen:
            raise _unclear(server, what, f"pages that go round (the cursor {_shown(after)} again)")
        seen.add(after)
    raise _unclear(server, what, f"more than {MAX_PAGES} pages")


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
        PhoenixError: Phoenix did not answer, refused a model, or answered what it does not understand.

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
        what = f"the price of {name[len(MODEL_PREFIX) :]}"
        if name in existing:
            updated = _ask(server, what, _UPDATE, {"input": {"id": existing[name], **fields}})
            _field(server, what, updated, "updateModel.model.id", "text")
            out.append(RegisteredPrice(provider, model, "updated", prices))
        else:
            created = _ask(server, what, _CREATE, {"input": fields})
            existing[name] = _field(server, what, created, "createModel.model.id", "text")
            out.append(RegisteredPrice(provider, model, "created", prices))
    return out
