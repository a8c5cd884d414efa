"""The API server's listener over real sockets: stalled headers and bodies are cut off, connections
are limited, watches outlive every timeout, and plain HTTP on the TLS port gets Go's answer.

Timeouts are shortened to fractions of a second; the waits are bounds for "does not hang"."""

from __future__ import annotations

import asyncio
import ssl
from contextlib import asynccontextmanager
from typing import AsyncIterator

import aiohttp
import orjson
import pytest

from phalanx.apiserver import build_api
from phalanx.apiserver.listener import PLAIN_HTTP_ON_TLS_ANSWER, ServingLimits, serve_app
from phalanx.apiserver.server import Server
from phalanx.machinery.featuregates import FeatureGates
from phalanx.cluster.pki import ensure_pki
from phalanx.store import MemoryStore

TOKEN = "t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Served:
    def __init__(self, api, port: int):
        self.api = api
        self.port = port

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port)


@asynccontextmanager
async def serving(limits: ServingLimits, ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[Served]:
    api = build_api(MemoryStore(), FeatureGates.from_config({}))
    api.create(api.resource("", "v1", "namespaces"), "", {"metadata": {"name": "default"}})
    server = Server(api, TOKEN, limits=limits)
    runner, listener = await serve_app(server.app(), "127.0.0.1", 0, ssl_context=ssl_context, limits=limits)
    try:
        yield Served(api, listener.port)
    finally:
        await listener.close()
        await runner.cleanup()


def request(method: str, path: str, body: bytes = b"", length: int | None = None) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
    if body or length is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body) if length is None else length}\r\n"
    return head.encode() + b"\r\n" + body


async def test_a_connection_stalled_in_its_headers_is_closed():
    async with serving(ServingLimits(header_timeout=0.3)) as s:
        reader, writer = await s.connect()
        writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\n")  # the blank line never comes
        assert await asyncio.wait_for(reader.read(), 3) == b""
        writer.close()


async def test_an_idle_keep_alive_connection_is_closed():
    async with serving(ServingLimits(header_timeout=0.3)) as s:
        reader, writer = await s.connect()
        writer.write(request("GET", "/version"))
        assert (await asyncio.wait_for(reader.readline(), 3)).startswith(b"HTTP/1.1 200")
        await asyncio.wait_for(reader.read(), 3)  # the rest of the response, then the close
        assert reader.at_eof()
        writer.close()


async def test_a_stalled_body_answers_504_timeout():
    async with serving(ServingLimits(body_timeout=0.3)) as s:
        reader, writer = await s.connect()
        writer.write(request("POST", "/api/v1/namespaces/default/configmaps", b'{"metadata":', length=100))
        status = await asyncio.wait_for(reader.readline(), 3)
        assert status.startswith(b"HTTP/1.1 504")
        body = (await asyncio.wait_for(reader.read(), 3)).split(b"\r\n\r\n", 1)[1]
        assert orjson.loads(body)["reason"] == "Timeout"
        writer.close()


async def test_connections_beyond_the_limit_wait_for_a_free_slot():
    async with serving(ServingLimits(max_connections=2, header_timeout=10)) as s:
        held = [await s.connect() for _ in range(2)]
        await asyncio.sleep(0.1)  # let both be accepted
        reader, writer = await s.connect()  # queued in the backlog
        writer.write(request("GET", "/version"))
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(reader.readline(), 0.5)
        held[0][1].close()
        assert (await asyncio.wait_for(reader.readline(), 3)).startswith(b"HTTP/1.1 200")
        for _, w in (held[1], (reader, writer)):
            w.close()


async def test_a_watch_outlives_the_header_and_body_timeouts():
    async with serving(ServingLimits(header_timeout=0.2, body_timeout=0.2)) as s:
        url = f"http://127.0.0.1:{s.port}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0"
        async with aiohttp.ClientSession(headers=AUTH) as http:
            async with http.get(url) as resp:
                assert resp.status == 200
                await asyncio.sleep(1.0)  # five header timeouts
                s.api.create(s.api.resource("", "v1", "configmaps"), "default", {"metadata": {"name": "late"}})
                event = orjson.loads(await asyncio.wait_for(resp.content.readline(), 3))
                assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "late")


@pytest.fixture
def tls(tmp_path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    pki = ensure_pki(tmp_path, "test")
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(pki.server_cert_file, pki.server_key_file)
    return server, ssl.create_default_context(cafile=str(pki.ca_cert_file))


@pytest.mark.parametrize("first_line", [b"GET /version HTTP/1.1\r\n", b"POST /api HTTP/1.1\r\n",
                                        b"PUT /api HTTP/1.1\r\n", b"HEAD / HTTP/1.1\r\n", b"OPTIONS * HTTP/1.1\r\n"])
async def test_plain_http_on_the_tls_port_gets_go_s_answer(tls, first_line):
    async with serving(ServingLimits(), ssl_context=tls[0]) as s:
        reader, writer = await s.connect()
        writer.write(first_line + b"Host: x\r\n\r\n")
        assert await asyncio.wait_for(reader.read(), 3) == PLAIN_HTTP_ON_TLS_ANSWER
        assert PLAIN_HTTP_ON_TLS_ANSWER == b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
        writer.close()


async def test_https_is_served_on_the_tls_port(tls):
    async with serving(ServingLimits(), ssl_context=tls[0]) as s:
        async with aiohttp.ClientSession(headers=AUTH) as http:
            async with http.get(f"https://127.0.0.1:{s.port}/api/v1/namespaces/default", ssl=tls[1]) as resp:
                assert resp.status == 200 and (await resp.json())["metadata"]["name"] == "default"


async def test_a_client_that_connects_and_says_nothing_is_dropped_on_the_tls_port(tls):
    async with serving(ServingLimits(header_timeout=0.3), ssl_context=tls[0]) as s:
        reader, writer = await s.connect()
        assert await asyncio.wait_for(reader.read(), 3) == b""
        writer.close()


@pytest.mark.parametrize("env, expected", [
    ({}, ServingLimits(header_timeout=32.0, body_timeout=60.0, max_connections=1000)),
    ({"PHALANX_APISERVER_HEADER_TIMEOUT": "1.5", "PHALANX_APISERVER_BODY_TIMEOUT": "2",
      "PHALANX_APISERVER_MAX_CONNECTIONS": "7"}, ServingLimits(header_timeout=1.5, body_timeout=2.0, max_connections=7)),
])
def test_limits_from_the_environment(env, expected):
    assert ServingLimits.from_env(env) == expected
