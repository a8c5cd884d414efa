"""The PodGroup protection controller against the real API on virtual time: deleting a PodGroup
waits for its non-terminal pods, and a live PodGroup with active pods keeps its finalizer."""

from __future__ import annotations

import pytest

from phalanx.controllers.podgroupprotection import POD_GROUP_PROTECTION_FINALIZER, PodGroupProtectionController

from .harness import shared_factory

NS = "default"
SCHEDULING = "scheduling.k8s.io/v1alpha2"


def pod_group(name="workers"):
    return {"apiVersion": SCHEDULING, "kind": "PodGroup", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingPolicy": {"basic": {}}}}


def pod(name, group="workers"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingGroup": {"podGroupName": group}, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "busybox"}]}}


class Protection:
    def __init__(self, env):
        self.env = env
        self.factory = shared_factory(env)
        self.controller = PodGroupProtectionController(env.client, self.factory, clock=env.clock)

    async def __aenter__(self):
        await self.env.namespace(NS)
        self.controller.start()
        assert await self.env.run_until(lambda: self.controller.synced, within=10)
        return self

    async def __aexit__(self, *exc):
        await self.controller.stop()
        await self.factory.stop()

    def pod_group(self, name="workers"):
        return self.env.store.get("scheduling.k8s.io/podgroups", NS, name)


async def running(env, name, node="worker-1"):
    await env.client.bind(NS, name, node)
    p = await env.client.get("v1", "Pod", NS, name)
    p["status"]["phase"] = "Running"
    return await env.client.update_status(p)


async def set_phase(env, name, phase):
    p = await env.client.get("v1", "Pod", NS, name)
    p["status"]["phase"] = phase
    return await env.client.update_status(p)


async def test_deletion_waits_for_a_running_pod_and_completes_once_it_is_gone(env):
    async with Protection(env) as pr:
        c = env.client
        pg = await c.create(pod_group())
        assert pg["metadata"]["finalizers"] == [POD_GROUP_PROTECTION_FINALIZER]  # admission adds it
        await c.create(pod("w-0"))
        await running(env, "w-0")
        await c.delete(SCHEDULING, "PodGroup", NS, "workers")
        await env.clock.advance(120)
        held = pr.pod_group()
        assert held is not None and held["metadata"]["deletionTimestamp"]
        assert held["metadata"]["finalizers"] == [POD_GROUP_PROTECTION_FINALIZER]

        await c.delete("v1", "Pod", NS, "w-0", grace_period=0)
        assert await env.run_until(lambda: pr.pod_group() is None, within=10)


@pytest.mark.parametrize("phases, held", [
    (["Succeeded", "Failed"], False),   # terminal pods do not hold the PodGroup
    (["Succeeded", "Running"], True),
    (["Pending", "Failed"], True),      # a pod not yet scheduled counts as active
])
async def test_only_non_terminal_pods_hold_the_pod_group(env, phases, held):
    async with Protection(env) as pr:
        c = env.client
        await c.create(pod_group())
        for i, phase in enumerate(phases):
            await c.create(pod(f"w-{i}"))
            if phase != "Pending":
                await running(env, f"w-{i}")
                if phase != "Running":
                    await set_phase(env, f"w-{i}", phase)
        await c.create(pod("elsewhere", group="other-group"))  # a pod of another group does not count
        await c.delete(SCHEDULING, "PodGroup", NS, "workers")
        await env.clock.advance(60)
        assert (pr.pod_group() is not None) is held


async def test_the_last_pod_turning_terminal_releases_the_pod_group(env):
    async with Protection(env) as pr:
        c = env.client
        await c.create(pod_group())
        for n in ("w-0", "w-1"):
            await c.create(pod(n))
            await running(env, n)
        await c.delete(SCHEDULING, "PodGroup", NS, "workers")
        await set_phase(env, "w-0", "Succeeded")
        await env.clock.advance(60)
        assert pr.pod_group() is not None
        await set_phase(env, "w-1", "Failed")
        assert await env.run_until(lambda: pr.pod_group() is None, within=10)


async def test_a_pod_group_without_pods_is_deleted_at_once(env):
    async with Protection(env) as pr:
        await env.client.create(pod_group())
        await env.client.delete(SCHEDULING, "PodGroup", NS, "workers")
        assert await env.run_until(lambda: pr.pod_group() is None, within=10)


async def test_a_live_pod_group_with_active_pods_gets_its_finalizer_back(env):
    async with Protection(env) as pr:
        c = env.client
        await c.create(pod_group())
        await c.create(pod_group("idle"))
        await c.create(pod("w-0"))
        for name in ("workers", "idle"):
            await c.patch(SCHEDULING, "PodGroup", NS, name, {"metadata": {"finalizers": None}})
        assert await env.run_until(
            lambda: pr.pod_group()["metadata"].get("finalizers") == [POD_GROUP_PROTECTION_FINALIZER], within=10)
        await env.clock.advance(60)
        assert not pr.pod_group("idle")["metadata"].get("finalizers")  # no pods, nothing to protect
