"""Informers over the in-process client: list+watch cache, handlers, indexers, relist on 410."""

from __future__ import annotations

import pytest

from phalanx.client import InformerFactory, index_pod_by_node_name, index_pod_by_pod_group
from phalanx.client.informer import Informer
from phalanx.machinery.errors import StatusError


def configmap(name, namespace="default", **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": data}


def pod(name, node=None, group=None, namespace="default"):
    spec: dict = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


class Recorder:
    def __init__(self, informer):
        self.events: list[tuple] = []
        informer.add_event_handler(
            on_add=lambda o: self.events.append(("add", o["metadata"]["name"])),
            on_update=lambda old, new: self.events.append(("update", new["metadata"]["name"])),
            on_delete=lambda o: self.events.append(("delete", o["metadata"]["name"])))


async def test_list_then_watch_keeps_the_cache_and_calls_handlers(env):
    c = env.client
    await env.namespace("default")
    await c.create(configmap("before"))
    factory = InformerFactory(c, clock=env.clock)
    inf = factory.informer("v1", "ConfigMap")
    rec = Recorder(inf)
    assert not inf.has_synced
    factory.start()
    await factory.wait_for_sync()
    assert inf.has_synced and rec.events == [("add", "before")]
    await c.create(configmap("after"))
    await c.update(configmap("before", k="v"))
    await c.delete("v1", "ConfigMap", "default", "after")
    assert await env.run_until(lambda: len(rec.events) == 4)
    assert rec.events[1:] == [("add", "after"), ("update", "before"), ("delete", "after")]
    assert inf.keys() == ["default/before"] and inf.get("default/before")["data"] == {"k": "v"}
    await factory.stop()


async def test_factory_shares_one_informer_per_kind_and_late_handlers_get_the_cache(env):
    await env.namespace("default")
    await env.client.create(configmap("x"))
    factory = InformerFactory(env.client, clock=env.clock)
    a = factory.informer("v1", "ConfigMap")
    assert factory.informer("v1", "ConfigMap") is a
    with pytest.raises(ValueError):
        factory.informer("v1", "configmaps")
    factory.start()
    await factory.wait_for_sync()
    late = Recorder(a)
    assert late.events == [("add", "x")]
    await factory.stop()


async def test_indexers_follow_changes(env):
    c = env.client
    await env.namespace("default")
    factory = InformerFactory(c, clock=env.clock)
    pods = factory.informer("v1", "Pod", indexers={"nodeName": index_pod_by_node_name,
                                                    "podGroup": index_pod_by_pod_group})
    await c.create(pod("a", group="gang"))
    await c.create(pod("b", group="gang"))
    await c.create(pod("solo"))
    factory.start()
    await factory.wait_for_sync()
    assert [p["metadata"]["name"] for p in pods.by_index("podGroup", "default/gang")] == ["a", "b"]
    assert pods.by_index("nodeName", "n1") == []
    await c.bind("default", "a", "n1")
    await c.delete("v1", "Pod", "default", "b")
    assert await env.run_until(lambda: len(pods.by_index("nodeName", "n1")) == 1 and len(pods) == 2)
    assert [p["metadata"]["name"] for p in pods.by_index("podGroup", "default/gang")] == ["a"]
    await factory.stop()


async def test_relist_on_410_catches_up_with_what_happened_meanwhile(make_env):
    env = make_env(history=5)
    c = env.client
    await env.namespace("default")
    for name in ("keep", "change", "remove"):
        await c.create(configmap(name))
    factory = InformerFactory(c, clock=env.clock)
    inf = factory.informer("v1", "ConfigMap")
    rec = Recorder(inf)
    factory.start()
    await factory.wait_for_sync()
    await c.create(configmap("marker"))  # proves the watch is established
    assert await env.run_until(lambda: inf.get("default/marker") is not None)
    await env.clock.advance(30)  # ... and has been running for a while
    rec.events.clear()
    started = env.clock.now()

    # The connection drops; before the informer re-watches, more changes than the server keeps
    # in its history happen, so re-watching from the last resourceVersion answers 410 Expired.
    env.store.close()
    env.api.update(env.api.resource("", "v1", "configmaps"), "default", "change",
                   {**configmap("change", k="v")})
    env.api.delete(env.api.resource("", "v1", "configmaps"), "default", "remove")
    for i in range(6):
        env.api.create(env.api.resource("", "v1", "configmaps"), "default", configmap(f"new-{i}"))

    assert await env.run_until(lambda: inf.relists == 1 and len(rec.events) == 8)
    assert isinstance(inf.last_error, StatusError) and inf.last_error.code == 410
    assert env.clock.now() - started == pytest.approx(0.8)  # client-go's first backoff step
    assert sorted(rec.events) == sorted([("update", "change"), ("delete", "remove")] +
                                        [("add", f"new-{i}") for i in range(6)])
    assert sorted(inf.keys()) == sorted(["default/keep", "default/change", "default/marker"] +
                                        [f"default/new-{i}" for i in range(6)])
    # ... and it watches again: later changes arrive.
    await c.create(configmap("later"))
    assert await env.run_until(lambda: ("add", "later") in rec.events)
    await factory.stop()


class FlakyClient:
    """Delegates to a real client; its watch streams break after `break_after` events."""

    def __init__(self, client, break_after):
        self.client = client
        self.break_after = break_after
        self.lists = 0

    async def list(self, *a, **kw):
        self.lists += 1
        return await self.client.list(*a, **kw)

    def watch(self, *a, **kw):
        inner = self.client.watch(*a, **kw)
        outer = self

        class Broken:
            n = 0

            def __aiter__(self):
                return self

            async def __anext__(self):
                if self.n >= outer.break_after:
                    raise ConnectionResetError("connection reset by peer")
                self.n += 1
                return await inner.__anext__()

            async def aclose(self):
                await inner.aclose()
        return Broken()


async def test_a_broken_stream_relists_with_growing_backoff(env):
    await env.namespace("default")
    flaky = FlakyClient(env.client, break_after=0)
    inf = Informer(flaky, "v1", "ConfigMap", clock=env.clock)
    start = env.clock.now()
    inf.start()
    assert await env.run_until(lambda: flaky.lists == 4)
    # lists at 0, then after 0.8 s, 1.6 s, 3.2 s of backoff
    assert env.clock.now() - start == pytest.approx(0.8 + 1.6 + 3.2)
    assert isinstance(inf.last_error, ConnectionResetError)
    await env.client.create(configmap("seen-on-relist"))
    assert await env.run_until(lambda: inf.get("default/seen-on-relist") is not None)
    await inf.stop()
    assert not inf.running


async def test_a_label_selected_informer_sees_objects_enter_and_leave_the_selection(env):
    c = env.client
    await env.namespace("default")
    labelled = configmap("x")
    labelled["metadata"]["labels"] = {"app": "web"}
    await c.create(labelled)
    await c.create(configmap("y"))
    inf = Informer(c, "v1", "ConfigMap", "default", label_selector="app=web", clock=env.clock)
    rec = Recorder(inf)
    inf.start()
    assert await env.run_until(lambda: inf.has_synced)
    assert inf.keys() == ["default/x"]
    y = await c.get("v1", "ConfigMap", "default", "y")
    y["metadata"]["labels"] = {"app": "web"}
    await c.update(y)
    x = await c.get("v1", "ConfigMap", "default", "x")
    x["metadata"]["labels"] = {"app": "db"}
    await c.update(x)
    assert await env.run_until(lambda: len(rec.events) == 3)
    assert rec.events == [("add", "x"), ("add", "y"), ("delete", "x")]
    assert inf.keys() == ["default/y"]
    await inf.stop()


async def test_watches_that_end_at_once_back_off_instead_of_spinning(env):
    await env.namespace("default")

    class EmptyWatches(FlakyClient):
        def watch(self, *a, **kw):
            class Ends:
                def __aiter__(self):
                    return self

                async def __anext__(self):
                    raise StopAsyncIteration

                async def aclose(self):
                    pass
            return Ends()

    client = EmptyWatches(env.client, break_after=0)
    inf = Informer(client, "v1", "ConfigMap", clock=env.clock)
    start = env.clock.now()
    inf.start()
    assert await env.run_until(lambda: client.lists == 3)
    assert env.clock.now() - start == pytest.approx(0.8 + 1.6)
    assert "very short watch" in str(inf.last_error)
    await inf.stop()
