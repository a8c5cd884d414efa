"""Accepting the API server's connections: TLS, a connection limit, and an answer to plain HTTP.

    limits = ServingLimits()
    runner = web.AppRunner(app, keepalive_timeout=limits.header_timeout, ...)
    await runner.setup()
    listener = await Listener.open(runner.server, "127.0.0.1", 6443, ssl_context=ctx, limits=limits)
    ...
    await listener.close()
    await runner.cleanup()

kube-apiserver's Go HTTP server gives up on a client that does not finish its request headers
within 32 s (`ReadHeaderTimeout`), ends requests that do not complete within the request timeout
(60 s; watches and other long-running requests excepted), and answers a plain HTTP request on
its TLS port with `400 Bad Request` and "Client sent an HTTP request to an HTTPS server.". Here:

- headers: aiohttp closes a connection that has no complete request `keepalive_timeout` seconds
  after it opened or after its last response (the runner is given `header_timeout`);
- bodies: `Server` reads a request body within `body_timeout` (504 Timeout otherwise);
- at most `max_connections` connections are open; further clients wait in the listen backlog
  until one closes, as with Go's `netutil.LimitListener`;
- on a TLS port, the first bytes of a connection are peeked before the handshake: a plain HTTP
  request gets Go's answer instead of a failed handshake.

A watch is one long request: none of these limits cut it short. `phalanx serve` reads the limits
from the environment (`ServingLimits.from_env`): PHALANX_APISERVER_HEADER_TIMEOUT,
PHALANX_APISERVER_BODY_TIMEOUT (seconds) and PHALANX_APISERVER_MAX_CONNECTIONS.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from aiohttp import web

# Go's net/http answer to plain HTTP on a TLS listener, and the prefixes it recognises as HTTP.
PLAIN_HTTP_ON_TLS_ANSWER = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
_HTTP_PREFIXES = (b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO")


@dataclass(frozen=True)
class ServingLimits:
    """Timeouts (seconds) and the connection limit of the API server."""

    header_timeout: float = 32.0  # kube-apiserver's ReadHeaderTimeout
    body_timeout: float = 60.0  # kube-apiserver's default --request-timeout
    max_connections: int = 1000
    request_timeout: float = 60.0  # deadline of a request that is not a watch or a followed log

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "ServingLimits":
        """The defaults, overridden by
        PHALANX_APISERVER_{HEADER_TIMEOUT,BODY_TIMEOUT,MAX_CONNECTIONS,REQUEST_TIMEOUT}."""
        default = cls()
        return cls(header_timeout=float(env.get("PHALANX_APISERVER_HEADER_TIMEOUT", default.header_timeout)),
                   body_timeout=float(env.get("PHALANX_APISERVER_BODY_TIMEOUT", default.body_timeout)),
                   max_connections=int(env.get("PHALANX_APISERVER_MAX_CONNECTIONS", default.max_connections)),
                   request_timeout=float(env.get("PHALANX_APISERVER_REQUEST_TIMEOUT", default.request_timeout)))


class _ReleasingProtocol(asyncio.Protocol):
    """Delegates to the HTTP protocol and frees a connection slot when the connection ends."""

    def __init__(self, inner: asyncio.Protocol, release: Callable[[], None]):
        self._inner = inner
        self._release = release

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self._inner.connection_lost(exc)
        finally:
            self._release()


async def serve_app(app: web.Application, host: str, port: int, *, ssl_context: ssl.SSLContext | None = None,
                    limits: ServingLimits | None = None) -> tuple[web.AppRunner, "Listener"]:
    """Start serving `app` on host:port (port 0: any free port, see `Listener.port`)."""
    limits = limits or ServingLimits()
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0,
                           keepalive_timeout=limits.header_timeout,
                           lingering_time=min(10.0, limits.body_timeout))  # reading what a response left unread
    await runner.setup()
    assert runner.server is not None
    return runner, await Listener.open(runner.server, host, port, ssl_context=ssl_context, limits=limits)


class Listener:
    """A listening socket serving `protocol_factory` (an aiohttp `web.Server`) within `limits`."""

    def __init__(self, protocol_factory: Callable[[], Any], sock: socket.socket,
                 ssl_context: ssl.SSLContext | None, limits: ServingLimits):
        self._factory = protocol_factory
        self._sock = sock
        self._ssl = ssl_context
        self.limits = limits
        self._slots = asyncio.Semaphore(limits.max_connections)
        self._starting: set[asyncio.Task] = set()
        self._accepting: asyncio.Task | None = None

    @classmethod
    async def open(cls, protocol_factory: Callable[[], Any], host: str, port: int, *,
                   ssl_context: ssl.SSLContext | None = None, limits: ServingLimits | None = None) -> "Listener":
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        sock = socket.create_server((host, port), family=family, backlog=1024)
        sock.setblocking(False)
        listener = cls(protocol_factory, sock, ssl_context, limits or ServingLimits())
        listener._accepting = asyncio.create_task(listener._accept_loop())
        return listener

    @property
    def port(self) -> int:
        return self._sock.getsockname()[1]

    async def close(self) -> None:
        """Stop accepting; connections already served are closed by the runner's cleanup."""
        tasks = [t for t in (self._accepting, *self._starting) if t is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._sock.close()

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._slots.acquire()
            try:
                conn, _ = await loop.sock_accept(self._sock)
            except BaseException:
                self._slots.release()
                raise
            task = asyncio.create_task(self._start_connection(conn))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _start_connection(self, conn: socket.socket) -> None:
        """Hand the accepted socket to the HTTP protocol (after TLS), or refuse it; either way the
        slot is released once the connection is gone."""
        handed_over = False
        try:
            if self._ssl is not None and not await self._tls_expected(conn):
                return
            loop = asyncio.get_running_loop()
            await loop.connect_accepted_socket(
                lambda: _ReleasingProtocol(self._factory(), self._slots.release), conn, ssl=self._ssl,
                ssl_handshake_timeout=self.limits.header_timeout if self._ssl is not None else None)
            handed_over = True
        except (OSError, ssl.SSLError, asyncio.TimeoutError):
            pass  # a failed handshake or a client gone: nothing to serve
        finally:
            if not handed_over:
                conn.close()
                self._slots.release()

    async def _tls_expected(self, conn: socket.socket) -> bool:
        """Peek at the first bytes: answer plain HTTP as Go does and say False; True otherwise."""
        loop = asyncio.get_running_loop()
        readable: asyncio.Future[None] = loop.create_future()

        def on_readable() -> None:
            if not readable.done():
                readable.set_result(None)
        loop.add_reader(conn.fileno(), on_readable)
        try:
            await asyncio.wait_for(readable, self.limits.header_timeout)
        except asyncio.TimeoutError:
            return False
        finally:
            loop.remove_reader(conn.fileno())
        try:
            head = conn.recv(5, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            return True
        if head.startswith(_HTTP_PREFIXES):
            with contextlib.suppress(OSError, asyncio.TimeoutError):
                await loop.sock_sendall(conn, PLAIN_HTTP_ON_TLS_ANSWER)
                conn.shutdown(socket.SHUT_WR)
                await asyncio.wait_for(_drain(conn), _LINGER_SECONDS)
            return False
        return bool(head)


_LINGER_SECONDS = 1.0


async def _drain(conn: socket.socket) -> None:
    """Read what the client sent until it closes: closing a socket with unread input resets the
    connection, and the reset can overtake the answer just written."""
    loop = asyncio.get_running_loop()
    while await loop.sock_recv(conn, 65536):
        pass
