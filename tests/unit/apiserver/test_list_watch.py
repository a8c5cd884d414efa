"""List, get and watch parameters over HTTP, answered as upstream answers them, and watch events
encoded once for all the watches that send them."""

from __future__ import annotations

import asyncio
import contextlib
import time

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from phalanx.apiserver import listing
from phalanx.apiserver.server import build_app

CMS = "/api/v1/namespaces/default/configmaps"


@contextlib.asynccontextmanager
async def http(env):
    env.bootstrap()
    client = TestClient(TestServer(build_app(env.api, None)))
    await client.start_server()
    try:
        yield client
    finally:
        env.store.close()  # ends open watches now
        await client.close()


async def create(client, name: str) -> dict:
    r = await client.post(CMS, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    assert r.status == 201, await r.text()
    return await r.json()


async def watch_lines(client, query: str) -> list[dict]:
    r = await client.get(f"{CMS}?watch=true&{query}")
    assert r.status == 200, await r.text()
    return [orjson.loads(line) for line in (await r.read()).splitlines() if line.strip()]


@pytest.mark.parametrize("query,code,message", [
    ("limit=abc", 400, 'strconv.ParseInt: parsing "abc": invalid syntax'),
    ("limit=1.5", 400, 'strconv.ParseInt: parsing "1.5": invalid syntax'),
    ("limit=99999999999999999999", 400, 'strconv.ParseInt: parsing "99999999999999999999": value out of range'),
    ("resourceVersion=garbage", 400, 'invalid resource version: resourceVersion: Invalid value: "garbage": '
                                     'strconv.ParseUint: parsing "garbage": invalid syntax'),
    ("resourceVersion=-1", 400, 'invalid resource version: resourceVersion: Invalid value: "-1": '
                                'strconv.ParseUint: parsing "-1": invalid syntax'),
    ("resourceVersionMatch=Exact", 422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                                        'resourceVersionMatch is forbidden unless resourceVersion is provided'),
    ("resourceVersion=1&resourceVersionMatch=Newest", 422,
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Newest": '
     'supported values: "Exact", "NotOlderThan", ""'),
    ("resourceVersion=0&resourceVersionMatch=Exact", 422,
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
     'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
    ("continue=bm9wZQ", 400, "continue key is not valid: invalid continue token"),
    ("continue={token}&resourceVersion=3", 400, "specifying resource version is not allowed when using continue"),
])
async def test_bad_list_parameters_are_refused_as_upstream_refuses_them(env, query, code, message):
    async with http(env) as client:
        for i in range(3):
            await create(client, f"c{i}")
        token = (await (await client.get(f"{CMS}?limit=1")).json())["metadata"]["continue"]
        r = await client.get(f"{CMS}?{query.format(token=token)}")
        body = await r.json()
        assert (r.status, body["code"], body["message"]) == (code, code, message)


@pytest.mark.parametrize("limit", ["-1", "0", "-9223372036854775808", ""])
async def test_a_limit_of_zero_or_less_lists_everything(env, limit):
    async with http(env) as client:
        for i in range(3):
            await create(client, f"c{i}")
        r = await client.get(f"{CMS}?limit={limit}")
        body = await r.json()
        assert r.status == 200
        assert [o["metadata"]["name"] for o in body["items"]] == ["c0", "c1", "c2"]
        assert "continue" not in body["metadata"]


async def test_every_page_carries_the_first_pages_resource_version(env):
    async with http(env) as client:
        for i in range(5):
            await create(client, f"c{i}")
        first = await (await client.get(f"{CMS}?limit=2")).json()
        await create(client, "c0a")  # after the snapshot: on no page
        r = await client.delete(f"{CMS}/c3")
        assert r.status == 200
        pages, token = [first], first["metadata"]["continue"]
        while token:
            page = await (await client.get(f"{CMS}?limit=2&continue={token}")).json()
            pages.append(page)
            token = page["metadata"].get("continue")
        assert [o["metadata"]["name"] for p in pages for o in p["items"]] == ["c0", "c1", "c2", "c3", "c4"]
        assert {p["metadata"]["resourceVersion"] for p in pages} == {first["metadata"]["resourceVersion"]}


async def test_a_get_at_a_garbage_or_future_resource_version(env):
    async with http(env) as client:
        cm = await create(client, "c")
        r = await client.get(f"{CMS}/c?resourceVersion=garbage")
        assert (r.status, (await r.json())["reason"]) == (400, "BadRequest")
        ahead = int(cm["metadata"]["resourceVersion"]) + 10
        r = await client.get(f"{CMS}/c?resourceVersion={ahead}")
        body = await r.json()
        assert (r.status, body["reason"]) == (504, "Timeout")
        assert body["message"] == f"Timeout: Too large resource version: {ahead}, current: {ahead - 10}"
        assert body["details"]["retryAfterSeconds"] == 1
        r = await client.get(f"{CMS}/c?resourceVersion={ahead - 10}")
        assert r.status == 200


async def test_a_list_not_older_than_a_future_version_waits_then_answers_504(env, monkeypatch):
    monkeypatch.setattr(listing, "TOO_LARGE_RV_WAIT_SECONDS", 0.3)
    async with http(env) as client:
        cm = await create(client, "c")
        ahead = int(cm["metadata"]["resourceVersion"]) + 2
        t0 = time.monotonic()
        r = await client.get(f"{CMS}?resourceVersion={ahead}&resourceVersionMatch=NotOlderThan")
        waited = time.monotonic() - t0
        body = await r.json()
        assert (r.status, body["reason"]) == (504, "Timeout")
        assert body["details"] == {"causes": [{"reason": "ResourceVersionTooLarge",
                                               "message": "Too large resource version"}],
                                   "retryAfterSeconds": 1}
        assert 0.3 <= waited < 5

        # Writes that reach the version during the wait answer the list.
        async def two_writes_soon():
            await asyncio.sleep(0.05)
            await create(client, "d")
            await create(client, "e")
        writes = asyncio.create_task(two_writes_soon())
        r = await client.get(f"{CMS}?resourceVersion={ahead}&resourceVersionMatch=NotOlderThan")
        await writes
        body = await r.json()
        assert r.status == 200 and int(body["metadata"]["resourceVersion"]) >= ahead


@pytest.mark.parametrize("timeout", ["nan", "inf", "1e400", "1.5", "-inf", "9223372036854775808", "ten"])
async def test_a_watch_timeout_must_be_an_integer(env, timeout):
    async with http(env) as client:
        r = await client.get(f"{CMS}?watch=true&timeoutSeconds={timeout}")
        body = await r.json()
        assert (r.status, body["reason"]) == (400, "BadRequest")
        assert body["message"].startswith(f'strconv.ParseInt: parsing "{timeout}": ')
        assert env.store.watcher_count() == 0


async def test_a_watch_ends_at_its_timeout(env):
    async with http(env) as client:
        t0 = time.monotonic()
        assert await watch_lines(client, "timeoutSeconds=1") == []
        assert time.monotonic() - t0 < 5


async def test_a_watch_from_a_future_version_sends_only_what_comes_after_it(env):
    async with http(env) as client:
        rv = int((await create(client, "c0"))["metadata"]["resourceVersion"])
        reader = asyncio.create_task(watch_lines(client, f"resourceVersion={rv + 3}&timeoutSeconds=1"))
        await asyncio.sleep(0.1)
        for i in range(1, 6):
            await create(client, f"c{i}")  # rv+1 .. rv+5
        events = await reader
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "c4"), ("ADDED", "c5")]


async def test_initial_events_from_a_future_version_end_with_too_large(env, monkeypatch):
    monkeypatch.setattr(listing, "TOO_LARGE_RV_WAIT_SECONDS", 0.2)
    async with http(env) as client:
        rv = int((await create(client, "c0"))["metadata"]["resourceVersion"])
        events = await watch_lines(client, f"resourceVersion={rv + 5}&resourceVersionMatch=NotOlderThan"
                                           "&sendInitialEvents=true&allowWatchBookmarks=true")
        assert [e["type"] for e in events] == ["ERROR"]
        status = events[0]["object"]
        assert (status["code"], status["reason"]) == (504, "Timeout")
        assert status["message"] == f"Timeout: Too large resource version: {rv + 5}, current: {rv}"


async def test_each_event_is_encoded_once_for_all_watches(env):
    async with http(env) as client:
        rv = (await create(client, "c0"))["metadata"]["resourceVersion"]
        frames = env.api.watch_frames
        before = (frames.misses, frames.hits)
        readers = [asyncio.create_task(watch_lines(client, f"resourceVersion={rv}&timeoutSeconds=1"))
                   for _ in range(5)]
        while env.store.watcher_count() < 5:
            await asyncio.sleep(0.01)
        for i in range(1, 5):
            await create(client, f"c{i}")
        streams = await asyncio.gather(*readers)
        assert all(s == streams[0] for s in streams) and len(streams[0]) == 4
        assert (frames.misses - before[0], frames.hits - before[1]) == (4, 16)


async def test_table_watches_each_get_column_definitions_first_then_shared_rows(env):
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    async with http(env) as client:
        rv = (await create(client, "c0"))["metadata"]["resourceVersion"]

        async def table_watch() -> list[dict]:
            r = await client.get(f"{CMS}?watch=true&resourceVersion={rv}&timeoutSeconds=1", headers={"Accept": table})
            assert r.headers["Content-Type"] == table
            return [orjson.loads(line) for line in (await r.read()).splitlines() if line.strip()]
        readers = [asyncio.create_task(table_watch()) for _ in range(3)]
        while env.store.watcher_count() < 3:
            await asyncio.sleep(0.01)
        for i in range(1, 4):
            await create(client, f"c{i}")
        streams = await asyncio.gather(*readers)
        for events in streams:
            assert [e["object"]["rows"][0]["cells"][0] for e in events] == ["c1", "c2", "c3"]
            assert ["columnDefinitions" in e["object"] for e in events] == [True, False, False]
        assert streams[0] == streams[1] == streams[2]
