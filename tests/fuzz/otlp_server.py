"""A misbehaving OTLP/HTTP collector on 127.0.0.1, for the OTLP tests and the OTLP fuzz tier.

``Collector(behaviour)`` listens on a free loopback port (never anything
else) and answers every POST the way ``behaviour`` says: a proper 200, a
status line or a body dripped one byte at a time, a reset, a close without
a reply, a header line of 100 KiB or a thousand headers, a redirect, a
retryable status then a 200, an OTLP partial success, a garbage body, no
``accept()`` at all. It records each request's path, headers and body.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
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
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.behaviour not in BEHAVIOURS + ONCE_THEN_OK:
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


@contextlib.contextmanager
def collector(behaviour: str, refuse: Callable[[int, Received], bool] | None = None) -> Iterator[Collector]:
    """A ``Collector`` for the duration of a ``with`` block (``refuse``: requests answered 500 instead)."""
    server = Collector(behaviour, refuse=refuse)
    try:
        yield server
    finally:
        server.close()
