"""HTTP with a whole-request deadline: every request this package makes (OTLP, Phoenix's GraphQL) is one ``exchange``.

The OpenTelemetry exporter's HTTP client (and ``httpx``) bounds each socket
read, not the request: a server that sends one byte every few seconds keeps
it waiting forever, and it follows redirects (a POST turned into a GET
counts as sent). Here every request has one deadline for all of it (name
lookup, connect, TLS, sending, the reply's status line, headers and body): a
watchdog thread shuts the socket down when it passes. The standard
library's ``http.client`` speaks HTTP/1.1 (it bounds a header line to 64 KiB
and a reply to 100 headers); the reply's body is read up to a bound (64 KiB
for OTLP). Any failure is one ``ExchangeError`` naming the URL and why.

Decisions: a redirect (3xx) is **not followed** (an error naming its
``Location``); 429, 502, 503 and 504, an attempt past its deadline and a
connection closed or reset before any reply are tried again for up to
``retry_for`` seconds (after ``Retry-After`` when it fits, else a doubling
pause); a refused connection, any other status or malformed reply, or a 2xx
whose OTLP reply reports rejected spans is an error at once. No proxy is
used: bytes go to the endpoint only.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import re
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from subagent_catalog.interop.errors import EndpointError, ExchangeError, ExchangeReason, OtlpExportError
from subagent_catalog.version import __version__

MAX_URL_CHARS = 2048
MAX_REPLY_BODY = 64 * 1024
RETRY_STATUSES = frozenset({429, 502, 503, 504})
_HOST = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?\Z")
_BRACKETED = re.compile(r"\[[^\[\]]+\](?::[0-9]*)?\Z")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_ENDPOINT_HINT = "pass a URL like http://127.0.0.1:6006 or https://collector.example:4318/v1/traces"


@dataclass(frozen=True)
class Endpoint:
    """A checked OTLP/HTTP traces URL.

    Attributes:
        url: the whole URL (``/v1/traces`` added to one without a path).
        scheme: ``http`` or ``https``.
        host: the host name or address (an IPv6 address without brackets).
        port: the TCP port.
        target: the request target (path and query).
    """

    url: str
    scheme: Literal["http", "https"]
    host: str
    port: int
    target: str


def _bad(text: str, why: str, hint: str = _ENDPOINT_HINT) -> EndpointError:
    return EndpointError(f"not a usable endpoint URL {text[:200]!r}: {why}", hint=hint)


def parse_endpoint(text: str) -> Endpoint:
    """Check an endpoint URL and give its parts; every malformed URL is one ``EndpointError``.

    Raises:
        EndpointError: not text, too long, whitespace or control characters,
            not http(s), no host, a bad port, a bad IPv6 literal or host
            name, credentials or a fragment in it, non-ASCII path.

    Examples:
        >>> parse_endpoint("http://127.0.0.1:6006").url
        'http://127.0.0.1:6006/v1/traces'
        >>> parse_endpoint("https://[::1]/custom?x=1").target
        '/custom?x=1'
        >>> parse_endpoint("http://[::1")
        Traceback (most recent call last):
        ...
        subagent_catalog.interop.errors.EndpointError: not a usable endpoint URL 'http://[::1': Invalid IPv6 URL (...)
    """
    if not isinstance(text, str):
        raise _bad(repr(text), "not text")
    if len(text) > MAX_URL_CHARS:
        raise _bad(text, f"{len(text):,} characters long (at most {MAX_URL_CHARS:,})")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise _bad(text, "it holds whitespace or control characters", "remove them (percent-encode a space as %20)")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as error:
        raise _bad(text, str(error) or "malformed") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        why = "no scheme" if not parts.scheme else f"the scheme {parts.scheme!r} is not http or https"
        raise _bad(text, why)
    host = parts.hostname or ""
    if not host:
        raise _bad(text, "no host")
    if parts.username is not None or parts.password is not None:
        raise _bad(text, "credentials in the URL", "give them as a header: --header Authorization=...")
    if parts.fragment or text.endswith("#"):
        raise _bad(text, "a fragment (#...) in the URL", "remove it")
    if "[" in parts.netloc or "]" in parts.netloc:
        if not _BRACKETED.match(parts.netloc.rpartition("@")[2]):
            raise _bad(text, "Invalid IPv6 URL (characters around the brackets)")
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise _bad(text, f"{host!r} is not an IPv6 address") from None
    else:
        try:
            ascii_host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise _bad(text, f"the host {host!r} is not a valid name") from None
        if not _HOST.match(ascii_host) or ".." in ascii_host:
            raise _bad(text, f"the host {host!r} is not a valid name or address")
        host = ascii_host
    if port == 0:
        raise _bad(text, "port 0")
    if not (parts.path + parts.query).isascii():
        raise _bad(text, "non-ASCII characters in the path", "percent-encode them")
    path = parts.path if parts.path not in ("", "/") else "/v1/traces"
    url = urlunsplit((scheme, parts.netloc, path, parts.query, ""))
    target = path + (f"?{parts.query}" if parts.query else "")
    default = 443 if scheme == "https" else 80
    return Endpoint(url, scheme, host, port or default, target)  # type: ignore[arg-type]


def check_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers as sent; a name that is not an HTTP token or a value with a line break is an ``EndpointError``.

    Examples:
        >>> check_headers({"Authorization": "Bearer k"})
        {'Authorization': 'Bearer k'}
        >>> check_headers({"x": "a\\r\\nInjected: 1"})
        Traceback (most recent call last):
        ...
        subagent_catalog.interop.errors.EndpointError: the header 'x' has a value with a line break or a NUL (hint: ...)
    """
    out: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.match(name):
            raise EndpointError(f"{name!r} is not an HTTP header name", hint="use letters, digits and - (NAME=VALUE)")
        if not isinstance(value, str) or any(ch in value for ch in "\r\n\x00"):
            raise EndpointError(
                f"the header {name!r} has a value with a line break or a NUL", hint="give the value on one line"
            )
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            raise EndpointError(
                f"the header {name!r} has a value HTTP cannot carry (not Latin-1)", hint="percent-encode it"
            ) from None
        out[name] = value
    return out


@dataclass(frozen=True)
class Reply:
    """A server's reply: status, reason, the ``Location`` and ``Retry-After`` headers, the body's start.

    ``cut``: the body went on past the bound it was read to (``exchange``'s ``max_body``).
    """

    status: int
    reason: str
    location: str | None
    retry_after: str | None
    content_type: str
    body: bytes
    cut: bool = False


class _Watchdog:
    """Shuts a request's socket down when its deadline passes (a read that keeps trickling cannot outlive it)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired = False
        self.sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(deadline - time.monotonic(), 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.fired = True
            raise TimeoutError("deadline passed")
        return left

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self.sock = sock
            if self.fired:
                _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            if self.sock is not None:
                _shut(self.sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _addresses(host: str, port: int, watchdog: _Watchdog) -> list[Any]:
    """``getaddrinfo`` in a daemon thread, waited for only until the deadline (a name lookup can hang)."""
    found: list[Any] = []
    failed: list[BaseException] = []

    def lookup() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as error:
            failed.append(error)

    worker = threading.Thread(target=lookup, name="otlp-resolve", daemon=True)
    worker.start()
    worker.join(watchdog.remaining())
    if worker.is_alive():
        watchdog.fired = True
        raise TimeoutError("the name lookup did not finish")
    if failed:
        raise failed[0]
    return found


def _connect(endpoint: Endpoint, watchdog: _Watchdog) -> socket.socket:
    last: BaseException = OSError(f"no address for {endpoint.host}")
    for family, kind, proto, _name, address in _addresses(endpoint.host, endpoint.port, watchdog):
        sock = socket.socket(family, kind, proto)
        watchdog.watch(sock)
        try:
            sock.settimeout(watchdog.remaining())
            sock.connect(address)
        except OSError as error:
            sock.close()
            last = error
            if watchdog.fired:
                raise
            continue
        if endpoint.scheme == "https":
            context = ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=endpoint.host)
            watchdog.watch(sock)
        return sock
    raise last


class _EndWatch:
    """A reply's file that notes when it ends (``readline`` gives ``b""``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.ended = False

    def readline(self, limit: int = -1) -> bytes:
        line: bytes = self.inner.readline(limit)
        self.ended = self.ended or not line
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _Response(http.client.HTTPResponse):
    """``http.client``'s reply, except that one ending inside its headers is an error (not a 200 without them)."""

    def begin(self) -> None:
        watched = _EndWatch(self.fp)
        self.fp = watched  # type: ignore[assignment]
        try:
            super().begin()
        finally:
            if self.fp is not None:  # (http.client drops it on a bad status line)
                self.fp = watched.inner
        if watched.ended:
            raise http.client.IncompleteRead(b"", None)


class _Connection(http.client.HTTPConnection):
    """``http.client`` over a socket connected (and watched) beforehand."""

    response_class = _Response

    def __init__(self, endpoint: Endpoint, sock: socket.socket) -> None:
        super().__init__(endpoint.host, endpoint.port)
        self.sock = sock

    def connect(self) -> None:  # the socket is given; never reconnect
        raise http.client.NotConnected("the connection was closed")


def exchange(
    endpoint: Endpoint,
    body: bytes,
    headers: Mapping[str, str],
    *,
    timeout: float,
    content_type: str = "application/x-protobuf",
    max_body: int = MAX_REPLY_BODY,
) -> Reply:
    """One POST of ``body`` to ``endpoint``, all of it within ``timeout`` seconds, or an ``ExchangeError`` naming it.

    The deadline covers the name lookup, connect, TLS, sending, the reply's
    status line, headers and body: a watchdog shuts the socket down when it
    passes, so a server that drips a byte at a time is cut at it. The body
    is read up to ``max_body`` bytes (``Reply.cut`` says more followed). A
    redirect is a reply like any other: never followed. No proxy is used.

    Raises:
        ExchangeError: its ``reason`` says why: ``refused``, ``dropped``
            (closed or reset before any reply), ``timeout`` (no whole reply
            within ``timeout`` seconds) or ``failed`` (anything else: a name
            that does not resolve, TLS, a reply that is not HTTP).

    Examples:
        >>> exchange(parse_endpoint("http://127.0.0.1:9"), b"", {}, timeout=2)
        Traceback (most recent call last):
        ...
        subagent_catalog.interop.errors.ExchangeError: http://127.0.0.1:9/v1/traces: could not connect: [Errno 111] ...
    """
    watchdog = _Watchdog(time.monotonic() + timeout)
    connection: _Connection | None = None
    try:
        sock = _connect(endpoint, watchdog)
        connection = _Connection(endpoint, sock)
        sent = {"Content-Type": content_type, "User-Agent": f"subagent-catalog/{__version__}", **headers}
        connection.request("POST", endpoint.target, body=body, headers=sent)
        response = connection.getresponse()
        data = response.read(max_body + 1)
        if watchdog.fired:  # the reply was cut by the deadline (http.client takes an early end as the end)
            raise TimeoutError("the deadline passed")
        return Reply(
            response.status,
            response.reason or "",
            response.getheader("Location"),
            response.getheader("Retry-After"),
            response.getheader("Content-Type") or "",
            data[:max_body],
            len(data) > max_body,
        )
    except (OSError, http.client.HTTPException, ValueError) as error:
        if watchdog.fired or isinstance(error, TimeoutError):
            raise ExchangeError(endpoint.url, f"no complete reply within {timeout:g} s", reason="timeout") from None
        if isinstance(error, ConnectionRefusedError):
            raise ExchangeError(endpoint.url, f"could not connect: {error}", reason="refused") from None
        dropped = isinstance(error, ConnectionResetError | http.client.RemoteDisconnected)  # before any reply
        reason: ExchangeReason = "dropped" if dropped else "failed"
        detail = " ".join((str(error) or type(error).__name__).split())  # clipped, on one line
        raise ExchangeError(
            endpoint.url, f"the connection failed: {type(error).__name__}: {detail[:300]}", reason=reason
        ) from None
    finally:
        watchdog.cancel()
        if connection is not None:
            connection.close()


def _rejected(reply: Reply) -> str | None:
    """What a 2xx OTLP reply says it rejected (partial success), if anything."""
    if "protobuf" not in reply.content_type or not reply.body:
        return None
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    message = ExportTraceServiceResponse()
    try:
        message.ParseFromString(reply.body)
    except DecodeError:
        return None
    rejected = message.partial_success.rejected_spans
    if rejected <= 0:
        return None
    detail = message.partial_success.error_message
    return f"it rejected {rejected} spans" + (f": {detail[:300]}" if detail else "")


def _pause(reply: Reply | None, attempt: int) -> float:
    """Seconds before attempt ``attempt + 1``: the reply's ``Retry-After``, else 0.25 s doubling to 8 s."""
    if reply is not None and reply.retry_after is not None:
        try:
            return max(float(reply.retry_after), 0.0)
        except ValueError:
            pass
    return float(min(0.25 * 2.0**attempt, 8.0))


RETRY_FOR = 60.0
"""Seconds a request is tried again by default when the collector is busy (``deliver``'s ``retry_for``)."""


def deliver(
    endpoint: Endpoint, body: bytes, headers: Mapping[str, str], *, timeout: float, retry_for: float = RETRY_FOR
) -> None:
    """Send one export request, each attempt within ``timeout`` seconds in all, or an ``OtlpExportError``.

    An attempt's deadline covers all of it: name lookup, connect, TLS, sending
    and the whole reply. An attempt that looks like a busy collector is made
    again, after its ``Retry-After`` or an exponential pause (0.25 s doubling
    to 8 s), while the next attempt starts within ``retry_for`` seconds of
    the first: an answer 429, 502, 503 or 504 (Phoenix answers 503 while its
    span queue is full), no complete reply within ``timeout`` (a collector
    busy ingesting), or a connection closed or reset before any reply (the
    OTLP specification's advice: send the same request again). The whole
    call ends within ``retry_for + timeout`` seconds (plus one pause).

    Sending a request again may deliver its spans twice to a collector that
    had taken them before its reply was lost; the span ids are the same
    (``otel_identity``), and a receiver that keys spans by id (Phoenix) keeps
    one copy.

    Raises:
        OtlpExportError: the connection was refused or failed in a way not
            worth another attempt, the collector answered other than 2xx (a
            redirect is not followed), was still busy after ``retry_for``
            seconds, or its reply rejected spans. The message says which (and
            how many attempts were made).

    Examples:
        >>> deliver(parse_endpoint("http://127.0.0.1:9"), b"", {}, timeout=1)
        Traceback (most recent call last):
        ...
        subagent_catalog.interop.errors.OtlpExportError: could not connect: [Errno 111] Connection refused
    """
    started = time.monotonic()
    attempt = 0
    while True:
        reply: Reply | None = None
        try:
            reply = exchange(endpoint, body, headers, timeout=timeout)
        except ExchangeError as error:
            if error.reason in ("refused", "failed"):
                raise OtlpExportError(error.detail) from None
            failure = error.detail  # dropped or past the deadline: a busy collector, worth another attempt
        else:
            if 200 <= reply.status < 300:
                rejected = _rejected(reply)
                if rejected:
                    raise OtlpExportError(rejected)
                return
            said = " ".join(reply.body[:300].decode("utf-8", "replace").split())  # one line
            failure = f"it answered {reply.status} {reply.reason}".rstrip() + (f": {said}" if said else "")
            if 300 <= reply.status < 400:
                where = f" to {' '.join(reply.location[:300].split())}" if reply.location else ""
                raise OtlpExportError(f"it answered {reply.status}, a redirect{where}, which is not followed")
            if reply.status not in RETRY_STATUSES:
                raise OtlpExportError(failure)
        pause = _pause(reply, attempt)
        if time.monotonic() + pause >= started + retry_for:
            tries = f" (after {attempt + 1} attempts in {time.monotonic() - started:.0f} s)" if attempt else ""
            raise OtlpExportError(failure + tries)
        time.sleep(pause)
        attempt += 1
