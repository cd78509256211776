"""A misbehaving OTLP/HTTP collector on 127.0.0.1, for the OTLP tests and the OTLP fuzz tier.

``Collector(behaviour)`` listens on a free loopback port (never anything
else) and answers every POST the way ``behaviour`` says: a proper 200, a
status line or a body dripped one byte at a time, a reset, a close without
a reply, a header line of 100 KiB or a thousand headers, a redirect, a
retryable status then a 200, an OTLP partial success, a garbage body, no
``accept()`` at all. It records each request's path, headers and body.

As a Phoenix (``PHOENIX_BEHAVIOURS``) it accepts every OTLP POST and answers
POSTs to ``.../graphql`` (what ``--verify`` and ``--register-prices`` ask):
honestly (``phoenix``: each trace's ``numSpans`` from the spans it accepted,
an empty model list, a model id for each one created), or, from its
``lie_from``-th GraphQL request on, with a lie (a 200 maintenance page in
HTML, a JSON list, counts that are text, ``1e400``, negative, 10^30, 5,000
digits or ``NaN``, missing keys, null data, ``errors`` only or malformed,
nesting 100,000 deep, bytes that are not UTF-8, a model list whose pages go
round), a 500, a redirect, headers or a body dripped one byte at a time, a
reset, a close, a 64 MiB reply or an endless one.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

BEHAVIOURS = (
    "ok",
    "ok-204",
    "ok-garbage-body",
    "ok-no-length",
    "partial-success",
    "status-400",
    "status-404",
    "status-500",
    "status-503",
    "retry-then-ok",
    "retry-after-huge",
    "redirect-307",
    "redirect-301-loop",
    "drip-status",
    "drip-headers",
    "drip-body",
    "endless-body",
    "reset",
    "close-no-reply",
    "close-half-reply",
    "huge-header-line",
    "many-headers",
    "not-http",
    "slow-accept",
    "silent",
)
"""Every way ``Collector`` can answer (the fuzz tier draws from these)."""

ONCE_THEN_OK = ("stall-then-ok", "reset-then-ok")
"""Also answered: the first request gets no reply (held until the client gives up, or reset), the next ones 200."""

PHOENIX_BEHAVIOURS = (
    "phoenix",
    "graphql-html",
    "graphql-list",
    "graphql-text-count",
    "graphql-1e400",
    "graphql-negative",
    "graphql-huge-number",
    "graphql-long-number",
    "graphql-nan",
    "graphql-missing-keys",
    "graphql-null-data",
    "graphql-errors-only",
    "graphql-errors-malformed",
    "graphql-deep",
    "graphql-not-utf8",
    "graphql-pages-loop",
    "graphql-status-500",
    "graphql-redirect",
    "graphql-drip-headers",
    "graphql-drip-body",
    "graphql-reset",
    "graphql-close",
    "graphql-huge-reply",
    "graphql-endless",
)
"""Every way ``Collector`` answers as a Phoenix (OTLP accepted; its GraphQL honest, lying, dripping, resetting...)."""

_LIES = {  # the text in place of every count and flag, and of every id, in an otherwise honest GraphQL reply
    "graphql-text-count": ('"many"', '["many"]'),
    "graphql-1e400": ("1e400", "1e400"),
    "graphql-negative": ("-3", "-3"),
    "graphql-huge-number": ("1" + "0" * 30, "1" + "0" * 30),
    "graphql-long-number": ("9" * 5000, "9" * 5000),
    "graphql-nan": ("NaN", "NaN"),
}
_REPLIES = {  # the whole body of a lying GraphQL reply
    "graphql-html": b"<!doctype html><html><body><h1>Down for maintenance</h1></body></html>",
    "graphql-list": b'[{"data": {}}]',
    "graphql-missing-keys": b'{"data": {}}',
    "graphql-null-data": b'{"data": null}',
    "graphql-errors-only": b'{"errors": [{"message": "Phoenix is down for maintenance"}]}',
    "graphql-errors-malformed": b'{"errors": "maintenance", "data": 5}',
    "graphql-deep": b"[" * 100_000 + b"]" * 100_000,
    "graphql-not-utf8": b'{"data": {"getProjectByName": "\xff\xfe\x00"}}',
}
MODEL_ID = "R2VuZXJhdGl2ZU1vZGVsOjE="
DRIP_EVERY_S = 0.2


@dataclass
class Received:
    """One request the collector read."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Collector:
    """A loopback HTTP server answering as ``behaviour`` says (use as a context manager)."""

    behaviour: str
    received: list[Received] = field(default_factory=list)
    accepted: list[Received] = field(default_factory=list)  # the requests answered 2xx (what a collector stores)
    connections: int = 0
    refuse: Callable[[int, Received], bool] | None = None  # "ok" only: answer 500 to the requests it picks
    lie_from: int = 1  # a Phoenix: the GraphQL request from which it misbehaves (before: honest)
    count: Callable[[str], int] | None = None  # a Phoenix: numSpans of a trace (default: the spans it accepted)
    graphql: int = 0  # a Phoenix: the GraphQL requests it read
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.behaviour not in BEHAVIOURS + ONCE_THEN_OK + PHOENIX_BEHAVIOURS:
            raise ValueError(f"unknown behaviour {self.behaviour!r}")
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        if self.behaviour != "slow-accept":  # slow-accept: the kernel completes handshakes, nobody reads
            self._spawn(self._accept_loop)

    def __enter__(self) -> Collector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop answering and close every socket (threads end within a drip step)."""
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        try:
            self._listener.settimeout(0.1)
        except OSError:  # closed before this thread ran
            return
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            self._spawn(self._serve, conn)

    def _read_request(self, conn: socket.socket) -> Received | None:
        conn.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _version = [*lines[0].split(" ", 2), "", ""][:3]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        while len(rest) < length:
            chunk = conn.recv(min(65536, length - len(rest)))
            if not chunk:
                break
            rest += chunk
        received = Received(method, path, headers, rest)
        self.received.append(received)
        return received

    def _drip(self, conn: socket.socket, data: bytes, *, forever: bool = False) -> None:
        while not self._stop.is_set():
            for byte in data:
                if self._stop.is_set():
                    return
                conn.sendall(bytes([byte]))
                time.sleep(DRIP_EVERY_S)
            if not forever:
                return

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            if self.behaviour == "silent":  # accepts, reads nothing, answers nothing
                self._stop.wait(60)
                return
            received = self._read_request(conn)
            if received is None:
                return
            number = len(self.received)
            if self.behaviour in PHOENIX_BEHAVIOURS:
                self._phoenix(conn, received)
                return
            if self.behaviour in ONCE_THEN_OK:
                if number == 1 and self.behaviour == "stall-then-ok":
                    self._stop.wait(30)  # the client's deadline shuts the connection first
                elif number == 1:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                else:
                    self.accepted.append(received)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                return
            if self.refuse is not None and self.refuse(number, received):
                conn.sendall(b"HTTP/1.1 500 Refused\r\nContent-Length: 0\r\n\r\n")
                return
            if self.behaviour in ("ok", "ok-204", "ok-garbage-body", "ok-no-length") or (
                self.behaviour == "retry-then-ok" and number >= 3
            ):
                self.accepted.append(received)
            self._answer(conn, number)

    def _answer(self, conn: socket.socket, number: int) -> None:
        behaviour = self.behaviour
        if behaviour == "ok":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        elif behaviour == "ok-204":
            conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        elif behaviour == "ok-garbage-body":
            body = b"\x00\xffnot protobuf\x01" * 10
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n")
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        elif behaviour == "ok-no-length":
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{}")
        elif behaviour == "partial-success":
            reply = ExportTraceServiceResponse(
                partial_success=ExportTracePartialSuccess(rejected_spans=3, error_message="spans too old")
            ).SerializeToString()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n")
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(reply) + reply)
        elif behaviour.startswith("status-"):
            body = b"collector says no \x1b[31m\n" * 3
            status = behaviour.split("-")[1].encode()
            conn.sendall(b"HTTP/1.1 " + status + b" Whatever\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        elif behaviour == "retry-then-ok":
            if number < 3:
                conn.sendall(b"HTTP/1.1 503 Busy\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n")
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        elif behaviour == "retry-after-huge":
            conn.sendall(b"HTTP/1.1 429 Slow down\r\nRetry-After: 86400\r\nContent-Length: 0\r\n\r\n")
        elif behaviour == "redirect-307":
            conn.sendall(b"HTTP/1.1 307 Moved\r\nLocation: http://127.0.0.1:9/v1/traces\r\nContent-Length: 0\r\n\r\n")
        elif behaviour == "redirect-301-loop":
            conn.sendall(b"HTTP/1.1 301 Moved\r\nLocation: /v1/traces\r\nContent-Length: 0\r\n\r\n")
        elif behaviour == "drip-status":
            self._drip(conn, b"HTTP/1.1 200 OK\r\n", forever=True)
        elif behaviour == "drip-headers":
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            self._drip(conn, b"X-Slow: a\r\n", forever=True)
        elif behaviour == "drip-body":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            self._drip(conn, b"x", forever=True)
        elif behaviour == "endless-body":
            conn.sendall(b"HTTP/1.1 400 Bad\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"%x\r\n%s\r\n" % (65536, b"y" * 65536)
            while not self._stop.is_set():
                conn.sendall(chunk)
        elif behaviour == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif behaviour == "close-no-reply":
            return
        elif behaviour == "close-half-reply":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Le")
        elif behaviour == "huge-header-line":
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Big: " + b"z" * 100_000 + b"\r\nContent-Length: 0\r\n\r\n")
        elif behaviour == "many-headers":
            conn.sendall(b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(1000)) + b"\r\n")
        elif behaviour == "not-http":
            conn.sendall(b"SSH-2.0-OpenSSH_9.0\r\n")

    def spans_of(self, trace: str) -> int:
        """The spans of a trace (hex id) in the OTLP requests this collector accepted."""
        found = 0
        for received in list(self.accepted):
            request = ExportTraceServiceRequest.FromString(received.body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    found += sum(span.trace_id.hex() == trace for span in scope.spans)
        return found

    def _honest(self, query: str, variables: dict[str, object], lie: bool = False) -> dict[str, object]:
        """Phoenix's GraphQL answer (``lie``: every count and flag ``"@N"``, every id ``"@T"``, to be replaced)."""
        number, text = ("@N", "@T") if lie else (None, MODEL_ID)
        if "numSpans" in query:
            held: dict[str, object] = {}
            for name, trace in variables.items():
                if name != "project":
                    spans = self.count(str(trace)) if self.count is not None else self.spans_of(str(trace))
                    held[name] = {"numSpans": spans if number is None else number} if spans or lie else None
            return {"data": {"getProjectByName": held if self.accepted or self.count or lie else None}}
        if "generativeModels" in query:
            edges = [{"node": {"id": text, "name": "dsh other/model", "kind": "CUSTOM"}}] if lie else []
            info = {"hasNextPage": number if lie else False, "endCursor": text if lie else None}
            return {"data": {"generativeModels": {"edges": edges, "pageInfo": info}}}
        for mutation in ("createModel", "updateModel"):
            if mutation in query:
                return {"data": {mutation: {"model": {"id": text}}}}
        return {"errors": [{"message": "unknown query"}]}

    def _phoenix(self, conn: socket.socket, received: Received) -> None:
        """Answer as a Phoenix: an OTLP POST accepted, a GraphQL POST as ``behaviour`` says."""
        if not received.path.split("?")[0].rstrip("/").endswith("/graphql"):
            self.accepted.append(received)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            return
        self.graphql += 1
        try:
            asked = json.loads(received.body)
            query, variables = str(asked["query"]), dict(asked.get("variables") or {})
        except (ValueError, KeyError, TypeError):
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return
        behaviour = self.behaviour if self.graphql >= self.lie_from else "phoenix"
        if behaviour == "graphql-pages-loop" and "generativeModels" in query:
            info = {"hasNextPage": True, "endCursor": "c1"}
            behaviour, body = "", json.dumps({"data": {"generativeModels": {"edges": [], "pageInfo": info}}}).encode()
        elif behaviour in ("phoenix", "graphql-pages-loop"):
            body = json.dumps(self._honest(query, variables)).encode()
        elif behaviour in _LIES:
            number, text = _LIES[behaviour]
            lying = json.dumps(self._honest(query, variables, lie=True))
            body = lying.replace('"@N"', number).replace('"@T"', text).encode()
        else:
            body = _REPLIES.get(behaviour, b"")
        kind = b"text/html" if behaviour == "graphql-html" else b"application/json"
        head = b"HTTP/1.1 200 OK\r\nContent-Type: " + kind + b"\r\n"
        if behaviour == "graphql-status-500":
            conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 9\r\n\r\nit broke\n")
        elif behaviour == "graphql-redirect":
            conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/graphql\r\nContent-Length: 0\r\n\r\n")
        elif behaviour == "graphql-drip-headers":
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            self._drip(conn, b"X-Slow: a\r\n", forever=True)
        elif behaviour == "graphql-drip-body":
            conn.sendall(head + b"Content-Length: 100000\r\n\r\n")
            self._drip(conn, b'{"data": ', forever=False)
            self._drip(conn, b" ", forever=True)
        elif behaviour == "graphql-reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif behaviour == "graphql-close":
            return
        elif behaviour == "graphql-huge-reply":
            size = 64 * 1024 * 1024
            conn.sendall(head + b"Content-Length: %d\r\n\r\n" % size + b'{"data": {"x": "')
            block = b"a" * (1024 * 1024)
            for _ in range(size // len(block)):
                if self._stop.is_set():
                    return
                conn.sendall(block)
        elif behaviour == "graphql-endless":
            conn.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n")
            chunk = b"%x\r\n%s\r\n" % (65536, b"[" * 65536)
            while not self._stop.is_set():
                conn.sendall(chunk)
        else:
            conn.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)


@contextlib.contextmanager
def collector(
    behaviour: str,
    refuse: Callable[[int, Received], bool] | None = None,
    *,
    lie_from: int = 1,
    count: Callable[[str], int] | None = None,
) -> Iterator[Collector]:
    """A ``Collector`` for the duration of a ``with`` block (``refuse``: requests answered 500 instead; a Phoenix's
    ``lie_from`` and ``count``)."""
    server = Collector(behaviour, refuse=refuse, lie_from=lie_from, count=count)
    try:
        yield server
    finally:
        server.close()
