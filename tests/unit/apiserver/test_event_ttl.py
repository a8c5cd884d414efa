"""Events expire an hour (the TTL) after their last write, as with kube-apiserver's --event-ttl."""

from __future__ import annotations

import asyncio

from phalanx.apiserver import build_api
from phalanx.apiserver.eventttl import EventExpiry, last_write
from phalanx.machinery.featuregates import FeatureGates
from phalanx.store import MemoryStore

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def stamp(seconds: float) -> str:
    from datetime import datetime, timezone
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def event(name: str, last: float) -> dict:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "Started",
            "message": "m", "firstTimestamp": stamp(last), "lastTimestamp": stamp(last), "count": 1}


def setup(ttl: float = 3600):
    api = build_api(MemoryStore(), FeatureGates())
    api.create(api.resource("", "v1", "namespaces"), "", {"apiVersion": "v1", "kind": "Namespace",
                                                            "metadata": {"name": "default"}})
    clock = Clock()
    return api, api.resource("", "v1", "events"), EventExpiry(api, ttl=ttl, now=clock), clock


def names(api, rt) -> list[str]:
    items = api.list(rt, "default")["items"]
    return sorted(e["metadata"]["name"] for e in items)


def test_last_write_is_the_newest_time_the_event_carries():
    ev = event("e", T0)
    ev["metadata"]["managedFields"] = [{"manager": "kubelet", "time": stamp(T0 + 30)}]
    ev["series"] = {"count": 2, "lastObservedTime": "2027-01-15T08:00:45.000000Z"}
    assert last_write(ev) == T0 + 45
    assert last_write({"metadata": {}}) is None


async def test_an_event_goes_an_hour_after_its_last_write_and_a_rewrite_renews_it():
    api, rt, expiry, clock = setup()
    api.create(rt, "default", event("old", T0 - 3000))
    api.create(rt, "default", event("new", T0))
    for type_, obj in api.watch(rt, None).ready():
        expiry.observe(type_, obj)
    assert expiry.expire_due() == 0
    clock.t = T0 + 601  # "old" was last written 3,601 s ago
    assert expiry.expire_due() == 1 and names(api, rt) == ["new"]
    renewed = event("new", T0 + 3000)
    renewed["metadata"]["resourceVersion"] = api.get(rt, "default", "new")["metadata"]["resourceVersion"]
    expiry.observe("MODIFIED", api.update(rt, "default", "new", renewed))
    clock.t = T0 + 3700
    assert expiry.expire_due() == 0 and names(api, rt) == ["new"]
    clock.t = T0 + 6601
    assert expiry.expire_due() == 1 and names(api, rt) == []


async def test_a_backlog_is_deleted_a_slice_at_a_time():
    api, rt, expiry, clock = setup()
    for i in range(1200):
        api.create(rt, "default", event(f"e{i:04}", T0 - 4000))
    for type_, obj in api.watch(rt, None).ready():
        expiry.observe(type_, obj)
    assert [expiry.expire_due(), expiry.expire_due(), expiry.expire_due()] == [500, 500, 200]


async def test_the_running_expiry_follows_the_watch_and_stops():
    api, rt, expiry, clock = setup(ttl=60)
    task = asyncio.create_task(expiry.run())
    await asyncio.sleep(0.05)
    api.create(rt, "default", event("e", T0 - 61))
    api.create(rt, "default", event("f", T0))
    for _ in range(100):
        await asyncio.sleep(0.01)
        if names(api, rt) == ["f"]:
            break
    assert names(api, rt) == ["f"]
    expiry.stop()
    await asyncio.wait_for(task, 5)
