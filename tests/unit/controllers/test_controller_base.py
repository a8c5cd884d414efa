"""The Controller base: informer events become keys, workers sync them, failures retry with backoff."""

from __future__ import annotations

import pytest

from phalanx.client.controller import Controller
from phalanx.machinery.errors import StatusError

from .harness import shared_factory


class Mirror(Controller):
    """Copies each ConfigMap's data into a Secret of the same name; fails the first `flaky` tries."""

    name = "mirror"

    def __init__(self, client, factory, flaky=0, **kw):
        super().__init__(client, factory, **kw)
        self.configmaps = self.informer("v1", "ConfigMap")
        self.enqueue_on(self.configmaps)
        self.flaky = flaky
        self.attempts: list[tuple[str, float]] = []

    async def sync(self, key):
        self.attempts.append((key, self.clock.now()))
        if len([a for a in self.attempts if a[0] == key]) <= self.flaky:
            raise StatusError(500, "InternalError", "try again")
        ns, name = key.split("/")
        cm = self.configmaps.get(key)
        if cm is None:
            try:
                await self.client.delete("v1", "Secret", ns, name)
            except StatusError as e:
                if e.code != 404:
                    raise
            return
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns},
                  "stringData": cm.get("data") or {}}
        try:
            await self.client.create(secret)
        except StatusError as e:
            if e.code != 409:
                raise


def cm(name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": data}


async def secret_names(env):
    items, _ = await env.client.list("v1", "Secret", "default")
    return sorted(i["metadata"]["name"] for i in items)


async def test_events_become_syncs_that_converge(env):
    await env.namespace("default")
    await env.client.create(cm("before"))
    ctrl = Mirror(env.client, shared_factory(env))
    ctrl.start()
    await env.client.create(cm("after"))
    names = []

    async def refresh():
        names[:] = await secret_names(env)
    assert await env.run_until(lambda: ctrl.synced and len(ctrl.attempts) >= 2)
    await refresh()
    assert names == ["after", "before"]
    await env.client.delete("v1", "ConfigMap", "default", "before")
    assert await env.run_until(lambda: len(ctrl.attempts) >= 3)
    await refresh()
    assert names == ["after"]
    await ctrl.stop()


async def test_failed_syncs_retry_with_exponential_backoff(env):
    await env.namespace("default")
    await env.client.create(cm("x"))
    ctrl = Mirror(env.client, shared_factory(env), flaky=3)
    ctrl.start()
    assert await env.run_until(lambda: len(ctrl.attempts) == 4)
    times = [t - ctrl.attempts[0][1] for _, t in ctrl.attempts]
    assert times == pytest.approx([0, 0.005, 0.015, 0.035], abs=1e-6)
    assert await secret_names(env) == ["x"]
    assert ctrl.queue.num_requeues("default/x") == 0  # success forgets the backoff
    await ctrl.stop()


async def test_a_burst_of_changes_to_one_object_is_one_sync(env):
    await env.namespace("default")
    await env.client.create(cm("same"))
    ctrl = Mirror(env.client, shared_factory(env))
    ctrl.start()
    assert await env.run_until(lambda: ctrl.synced and len(ctrl.attempts) == 1 and len(ctrl.queue) == 0)
    cms = env.api.resource("", "v1", "configmaps")
    for i in range(5):  # five writes before the controller gets to run
        env.api.update(cms, "default", "same", cm("same", v=str(i)))
    assert await env.run_until(lambda: len(ctrl.attempts) >= 2)
    await env.clock.advance(10)
    assert [k for k, _ in ctrl.attempts] == ["default/same", "default/same"]
    await ctrl.stop()


class Costly(Controller):
    """A controller whose every sync takes 5 ms of real time, fed by coalesced adds."""

    name = "costly"

    def __init__(self, client, factory, **kw):
        super().__init__(client, factory, **kw)
        self.configmaps = self.informer("v1", "ConfigMap")
        self.synced_at: list[float] = []

    async def sync(self, key):
        import time
        self.synced_at.append(self.clock.now())
        end = time.perf_counter() + 0.005
        while time.perf_counter() < end:
            pass


async def test_coalesced_syncs_of_a_costly_key_are_spread_out(env):
    """A key whose sync is costly waits at least ten times its last sync between coalesced syncs,
    however many events ask for one meanwhile."""
    ctrl = Costly(env.client, shared_factory(env))
    ctrl.start()
    assert await env.run_until(lambda: ctrl.synced)
    ctrl.enqueue("default/big")
    assert await env.run_until(lambda: len(ctrl.synced_at) == 1)
    for _ in range(20):  # events over 20 ms of virtual time
        ctrl.enqueue_coalesced("default/big", 0.001)
        await env.clock.advance(0.001)
    assert await env.run_until(lambda: len(ctrl.synced_at) == 2)
    assert len(ctrl.synced_at) == 2
    assert ctrl.synced_at[1] - ctrl.synced_at[0] >= 0.05  # not the 1 ms window: 10 x the 5 ms sync
    await ctrl.stop()
