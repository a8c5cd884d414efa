"""The taint eviction controller: pods leave nodes with NoExecute taints they do not tolerate, at
once or after their tolerationSeconds, with upstream's condition and events."""

from __future__ import annotations

import pytest

from phalanx.client import InformerFactory, InProcessClient
from phalanx.cluster.spec import NodeSpec
from phalanx.controllers.tainteviction import TaintEvictionController, matching_tolerations, min_toleration_seconds
from phalanx.machinery.timestamps import now_rfc3339
from phalanx.nodes.kubelet import SimulatedKubelets


class Cluster:
    def __init__(self, env, nodes=("n1", "n2")):
        env.bootstrap([NodeSpec(n) for n in nodes])
        self.env = env
        self.factory = InformerFactory(InProcessClient(env.api, clock=env.clock, shared_reads=True), clock=env.clock)
        self.kubelet = SimulatedKubelets(InProcessClient(env.api, clock=env.clock, field_manager="kubelet"),
                                         self.factory, clock=env.clock)
        self.controller = TaintEvictionController(
            InProcessClient(env.api, clock=env.clock, field_manager="kube-controller-manager"), self.factory,
            clock=env.clock)

    async def __aenter__(self):
        for c in (self.kubelet, self.controller):
            c.start()
        assert await self.env.run_until(lambda: self.kubelet.synced and self.controller.synced, within=5)
        return self

    async def __aexit__(self, *exc):
        await self.controller.stop()
        await self.kubelet.stop()
        await self.factory.stop()

    async def pod(self, name, node="n1", tolerations=None, grace=0):
        spec = {"containers": [{"name": "c", "image": "busybox"}], "terminationGracePeriodSeconds": grace}
        if tolerations is not None:
            spec["tolerations"] = tolerations
        await self.env.client.create({"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": name, "namespace": "default"}, "spec": spec})
        await self.env.client.bind("default", name, node)
        assert await self.env.run_until(lambda: self.phase(name) == "Running", within=10)

    def get(self, name):
        try:
            return self.env.api.get(self.env.api.resource("", "v1", "pods"), "default", name)
        except Exception:
            return None

    def phase(self, name):
        return ((self.get(name) or {}).get("status") or {}).get("phase")

    def gone(self, name):
        return self.get(name) is None

    async def taint(self, node, key, effect="NoExecute", time_added=True, remove=False):
        obj = await self.env.client.get("v1", "Node", None, node)
        taints = [t for t in obj["spec"].get("taints") or [] if t["key"] != key]
        if not remove:
            taint = {"key": key, "effect": effect}
            if time_added:
                taint["timeAdded"] = now_rfc3339(self.env.clock.datetime())
            taints.append(taint)
        obj["spec"]["taints"] = taints
        await self.env.client.update(obj)

    def events(self, name):
        evs = self.env.api.list(self.env.api.resource("", "v1", "events"), "default")["items"]
        return [(e["reason"], e["message"]) for e in evs if e["involvedObject"]["name"] == name
                and e["source"]["component"] == "taint-eviction-controller"]


def toleration(key="node.kubernetes.io/unreachable", seconds=None, effect="NoExecute"):
    t = {"key": key, "operator": "Exists", "effect": effect}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


async def test_an_untolerated_no_execute_taint_evicts_at_once_with_condition_and_event(env):
    async with Cluster(env) as c:
        await c.pod("p", grace=30)
        await c.pod("other", node="n2")
        seen = []
        c.controller.pods.add_event_handler(on_update=lambda o, n: seen.append(n) if n["metadata"]["name"] == "p" else None)
        await c.taint("n1", "example.com/broken")
        assert await env.run_until(lambda: c.gone("p"), within=60)
        terminating = next(p for p in seen if p["metadata"].get("deletionTimestamp"))
        [disruption] = [x for x in terminating["status"]["conditions"] if x["type"] == "DisruptionTarget"]
        assert (disruption["status"], disruption["reason"], disruption["message"]) == (
            "True", "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
        assert c.events("p") == [("TaintManagerEviction", "Marking for deletion Pod default/p")]
        assert c.phase("other") == "Running"


async def test_toleration_seconds_delay_the_eviction(env):
    async with Cluster(env) as c:
        await c.pod("short", tolerations=[toleration(seconds=30)])
        await c.pod("long", tolerations=[toleration(seconds=300)])
        await c.pod("forever", tolerations=[toleration()])
        start = env.clock.now()
        await c.taint("n1", "node.kubernetes.io/unreachable")
        assert await env.run_until(lambda: c.gone("short"), within=120)
        assert 30 <= env.clock.now() - start < 40
        assert not c.gone("long")
        assert await env.run_until(lambda: c.gone("long"), within=400)
        assert 300 <= env.clock.now() - start < 310
        await env.run_until(lambda: False, within=600)
        assert c.phase("forever") == "Running"


async def test_removing_the_taint_cancels_a_scheduled_eviction(env):
    async with Cluster(env) as c:
        await c.pod("p", tolerations=[toleration(seconds=60)])
        await c.taint("n1", "node.kubernetes.io/unreachable")
        await env.run_until(lambda: False, within=20)
        await c.taint("n1", "node.kubernetes.io/unreachable", remove=True)
        await env.run_until(lambda: False, within=120)
        assert c.phase("p") == "Running"
        assert c.events("p") == [("TaintManagerEviction", "Cancelling deletion of Pod default/p")]


async def test_one_untolerated_taint_among_tolerated_ones_evicts_at_once(env):
    async with Cluster(env) as c:
        await c.pod("p", tolerations=[toleration(seconds=600)])
        await c.taint("n1", "node.kubernetes.io/unreachable")
        await c.taint("n1", "example.com/other")
        assert await env.run_until(lambda: c.gone("p"), within=5)


async def test_no_schedule_taints_evict_nobody(env):
    async with Cluster(env) as c:
        await c.pod("p")
        await c.taint("n1", "example.com/maintenance", effect="NoSchedule")
        await env.run_until(lambda: False, within=60)
        assert c.phase("p") == "Running"


async def test_a_restarted_controller_counts_from_the_taints_time_added(env):
    async with Cluster(env) as c:
        await c.pod("p", tolerations=[toleration(seconds=100)])
        start = env.clock.now()
        await c.taint("n1", "node.kubernetes.io/unreachable")
        await env.run_until(lambda: False, within=60)
        await c.controller.stop()
        await env.run_until(lambda: False, within=20)
        c.controller = TaintEvictionController(InProcessClient(env.api, clock=env.clock), c.factory, clock=env.clock)
        c.controller.start()
        assert await env.run_until(lambda: c.gone("p"), within=60)
        assert 100 <= env.clock.now() - start < 105


async def test_a_pod_arriving_on_a_tainted_node_gets_its_full_toleration(env):
    async with Cluster(env) as c:
        await c.taint("n1", "node.kubernetes.io/unreachable")
        await env.run_until(lambda: False, within=200)
        await c.pod("late", tolerations=[toleration(seconds=50)])
        arrived = env.clock.now()
        assert await env.run_until(lambda: c.gone("late"), within=100)
        assert env.clock.now() - arrived >= 49


@pytest.mark.parametrize("taints, tolerations, expected", [
    ([{"key": "a", "effect": "NoExecute"}], [], (False, [])),
    ([{"key": "a", "effect": "NoExecute"}], [{"key": "a", "operator": "Exists"}], (True, [{"key": "a", "operator": "Exists"}])),
    ([{"key": "a", "value": "x", "effect": "NoExecute"}], [{"key": "a", "value": "y"}], (False, [])),
    ([{"key": "a", "effect": "NoExecute"}], [{"operator": "Exists"}], (True, [{"operator": "Exists"}])),
    ([{"key": "a", "effect": "NoExecute"}], [{"key": "a", "operator": "Exists", "effect": "NoSchedule"}], (False, [])),
])
def test_matching_tolerations(taints, tolerations, expected):
    assert matching_tolerations(taints, tolerations) == expected


def test_min_toleration_seconds():
    assert min_toleration_seconds([]) == 0
    assert min_toleration_seconds([{"key": "a"}]) is None
    assert min_toleration_seconds([{"tolerationSeconds": 30}, {"tolerationSeconds": 10}, {}]) == 10
    assert min_toleration_seconds([{"tolerationSeconds": -5}]) == 0
