"""The node lifecycle controller: silent kubelets turn nodes Unknown, tainted and their pods not
Ready; NoExecute taints are rate limited per zone as upstream's are; recovery undoes it all."""

from __future__ import annotations

import pytest

from phalanx.api.faults import NODE_FAULT_ANNOTATION
from phalanx.client import InformerFactory, InProcessClient
from phalanx.cluster.spec import NodeSpec
from phalanx.controllers.nodelifecycle import (STATE_FULL, STATE_NORMAL, STATE_PARTIAL, NodeLifecycleConfig,
                                               NodeLifecycleController, no_schedule_taints, swapped_taints,
                                               zone_key, zone_state)
from phalanx.nodes.kubelet import SimulatedKubelets

FAST = NodeLifecycleConfig(node_monitor_period=1, node_monitor_grace_period=4, node_startup_grace_period=4,
                           node_eviction_rate=1.0)


class Cluster:
    """Kubelets (1 s leases) and the node lifecycle controller on the test's API and clock."""

    def __init__(self, env, nodes, config=FAST):
        env.bootstrap(nodes)
        self.env = env
        self.factory = InformerFactory(InProcessClient(env.api, clock=env.clock, shared_reads=True), clock=env.clock)
        self.kubelet = SimulatedKubelets(InProcessClient(env.api, clock=env.clock, field_manager="kubelet"),
                                         self.factory, clock=env.clock, lease_duration=1)
        self.controller = NodeLifecycleController(
            InProcessClient(env.api, clock=env.clock, field_manager="kube-controller-manager"), self.factory,
            config=config, clock=env.clock)

    async def __aenter__(self):
        for c in (self.kubelet, self.controller):
            c.start()
        assert await self.env.run_until(lambda: self.kubelet.synced and self.controller.synced, within=5)
        return self

    async def __aexit__(self, *exc):
        await self.controller.stop()
        await self.kubelet.stop()
        await self.factory.stop()

    def node(self, name):
        return self.env.api.get(self.env.api.resource("", "v1", "nodes"), "", name)

    def ready(self, name):
        return next(c for c in self.node(name)["status"]["conditions"] if c["type"] == "Ready")

    def taints(self, name):
        return {(t["key"], t["effect"]) for t in self.node(name)["spec"].get("taints") or []}

    async def fail(self, name, down=True):
        node = await self.env.client.get("v1", "Node", None, name)
        annotations = node["metadata"].setdefault("annotations", {})
        if down:
            annotations[NODE_FAULT_ANNOTATION] = "down"
        else:
            annotations.pop(NODE_FAULT_ANNOTATION, None)
        await self.env.client.update(node)

    def events(self, reason):
        evs = self.env.api.list(self.env.api.resource("", "v1", "events"), None)["items"]
        return [e for e in evs if e["reason"] == reason]


UNREACHABLE_NO_SCHEDULE = ("node.kubernetes.io/unreachable", "NoSchedule")
UNREACHABLE_NO_EXECUTE = ("node.kubernetes.io/unreachable", "NoExecute")


async def running_pod(env, name, node):
    await env.client.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                             "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    await env.client.bind("default", name, node)


def pod_ready(env, name):
    pod = env.api.get(env.api.resource("", "v1", "pods"), "default", name)
    return next((c["status"] for c in pod["status"].get("conditions") or [] if c["type"] == "Ready"), None)


async def test_a_silent_kubelet_makes_its_node_unknown_tainted_and_its_pods_not_ready(env):
    async with Cluster(env, [NodeSpec("n1"), NodeSpec("n2")]) as c:
        await running_pod(env, "p", "n1")
        assert await env.run_until(lambda: pod_ready(env, "p") == "True", within=10)
        await env.run_until(lambda: False, within=10)
        assert c.ready("n1")["status"] == "True"  # leases keep it alive well past the grace period

        await c.fail("n1")
        assert await env.run_until(lambda: c.ready("n1")["status"] == "Unknown", within=10)
        ready = c.ready("n1")
        assert (ready["reason"], ready["message"]) == ("NodeStatusUnknown", "Kubelet stopped posting node status.")
        assert {cond["type"]: cond["status"] for cond in c.node("n1")["status"]["conditions"]} == {
            "Ready": "Unknown", "MemoryPressure": "Unknown", "DiskPressure": "Unknown", "PIDPressure": "Unknown"}
        assert await env.run_until(lambda: {UNREACHABLE_NO_SCHEDULE, UNREACHABLE_NO_EXECUTE} <= c.taints("n1"),
                                   within=10)
        assert all(t.get("timeAdded") for t in c.node("n1")["spec"]["taints"])
        assert await env.run_until(lambda: pod_ready(env, "p") == "False", within=5)
        [node_event] = c.events("NodeNotReady")[:1]
        assert node_event["message"] == "Node n1 status is now: NodeNotReady"
        assert node_event["source"]["component"] == "node-controller"
        pod_events = [e for e in c.events("NodeNotReady") if e["involvedObject"]["kind"] == "Pod"]
        assert [(e["type"], e["message"]) for e in pod_events] == [("Warning", "Node is not ready")]
        assert c.ready("n2")["status"] == "True" and not c.taints("n2")

        await c.fail("n1", down=False)
        assert await env.run_until(lambda: c.ready("n1")["status"] == "True" and not c.taints("n1")
                                   and pod_ready(env, "p") == "True", within=10)
        assert [e["message"] for e in c.events("NodeReady")] == ["Node n1 status is now: NodeReady"]


async def test_registered_node_events(env):
    async with Cluster(env, [NodeSpec("n1")]) as c:
        assert await env.run_until(lambda: len(c.events("RegisteredNode")) == 1, within=5)
        assert c.events("RegisteredNode")[0]["message"] == "Node n1 event: Registered Node n1 in Controller"


async def test_no_execute_taints_follow_the_eviction_rate(env):
    config = NodeLifecycleConfig(node_monitor_period=1, node_monitor_grace_period=4, node_eviction_rate=0.1)
    names = [f"n{i}" for i in range(10)]
    async with Cluster(env, [NodeSpec(n) for n in names], config) as c:
        for n in names[:2]:
            await c.fail(n)
        assert await env.run_until(lambda: any(UNREACHABLE_NO_EXECUTE in c.taints(n) for n in names[:2]), within=20)
        tainted_first = env.clock.now()
        assert sum(UNREACHABLE_NO_EXECUTE in c.taints(n) for n in names[:2]) == 1
        assert all(UNREACHABLE_NO_SCHEDULE in c.taints(n) for n in names[:2])  # NoSchedule is not rate limited
        assert await env.run_until(lambda: all(UNREACHABLE_NO_EXECUTE in c.taints(n) for n in names[:2]), within=20)
        assert env.clock.now() - tainted_first >= 9  # one token per 10 s


async def test_a_fully_disrupted_cluster_gets_no_no_execute_taints(env):
    async with Cluster(env, [NodeSpec("n1"), NodeSpec("n2")]) as c:
        await c.fail("n1")
        await c.fail("n2")
        assert await env.run_until(lambda: c.ready("n1")["status"] == c.ready("n2")["status"] == "Unknown",
                                   within=10)
        await env.run_until(lambda: False, within=20)
        assert UNREACHABLE_NO_EXECUTE not in c.taints("n1") | c.taints("n2")
        assert UNREACHABLE_NO_SCHEDULE in c.taints("n1")
        assert set(c.controller.zone_states.values()) == {STATE_FULL}


async def test_a_small_zone_in_partial_disruption_stops_tainting(env):
    names = [f"n{i}" for i in range(5)]
    async with Cluster(env, [NodeSpec(n) for n in names]) as c:
        for n in names[:3]:  # 3 of 5 not Ready: at least 55 % and more than 2
            await c.fail(n)
        assert await env.run_until(lambda: all(c.ready(n)["status"] == "Unknown" for n in names[:3]), within=10)
        await env.run_until(lambda: False, within=20)
        assert c.controller.zone_states[""] == STATE_PARTIAL
        assert not any(UNREACHABLE_NO_EXECUTE in c.taints(n) for n in names)


async def test_zones_are_counted_apart(env):
    nodes = [NodeSpec(f"a{i}", labels={"topology.kubernetes.io/zone": "a"}) for i in range(2)] + \
            [NodeSpec(f"b{i}", labels={"topology.kubernetes.io/zone": "b"}) for i in range(2)]
    async with Cluster(env, nodes) as c:
        for n in ("a0", "a1"):
            await c.fail(n)
        assert await env.run_until(lambda: all(UNREACHABLE_NO_EXECUTE in c.taints(n) for n in ("a0", "a1")),
                                   within=30)
        assert c.controller.zone_states == {":\x00:a": STATE_FULL, ":\x00:b": STATE_NORMAL}


async def test_a_restarted_controller_gives_nodes_a_fresh_grace_period_and_keeps_state(env):
    async with Cluster(env, [NodeSpec("n1"), NodeSpec("n2")]) as c:
        await c.fail("n1")
        assert await env.run_until(lambda: UNREACHABLE_NO_EXECUTE in c.taints("n1"), within=20)
        await c.controller.stop()
        c.controller = NodeLifecycleController(
            InProcessClient(env.api, clock=env.clock, field_manager="kube-controller-manager"), c.factory,
            config=FAST, clock=env.clock)
        c.controller.start()
        await env.run_until(lambda: False, within=10)
        assert c.ready("n1")["status"] == "Unknown" and UNREACHABLE_NO_EXECUTE in c.taints("n1")
        assert c.ready("n2")["status"] == "True" and not c.taints("n2")
        await c.fail("n1", down=False)
        assert await env.run_until(lambda: not c.taints("n1"), within=10)


async def test_cordon_taints_the_node_unschedulable(env):
    async with Cluster(env, [NodeSpec("n1")]) as c:
        node = await env.client.get("v1", "Node", None, "n1")
        node["spec"]["unschedulable"] = True
        await env.client.update(node)
        assert await env.run_until(lambda: ("node.kubernetes.io/unschedulable", "NoSchedule") in c.taints("n1"),
                                   within=5)
        node = await env.client.get("v1", "Node", None, "n1")
        node["spec"]["unschedulable"] = False
        await env.client.update(node)
        assert await env.run_until(lambda: not c.taints("n1"), within=5)


@pytest.mark.parametrize("statuses, expected", [
    (["True", "True"], (0, STATE_NORMAL)),
    (["Unknown", "False"], (2, STATE_FULL)),
    (["True", "Unknown", "Unknown"], (2, STATE_NORMAL)),          # not more than 2
    (["True", "True", "Unknown", "Unknown", "Unknown"], (3, STATE_PARTIAL)),
    (["True"] * 4 + ["Unknown"] * 3, (3, STATE_NORMAL)),         # 3/7 below 55 %
    ([None, "True"], (1, STATE_NORMAL)),
])
def test_zone_state(statuses, expected):
    assert zone_state(statuses, 0.55) == expected


def test_zone_key():
    assert zone_key({"metadata": {"labels": {}}}) == ""
    assert zone_key({"metadata": {"labels": {"topology.kubernetes.io/region": "r", "topology.kubernetes.io/zone": "z"}}}) \
        == "r:\x00:z"


def test_no_schedule_taints_from_conditions():
    node = {"spec": {"unschedulable": True}, "status": {"conditions": [
        {"type": "Ready", "status": "False"}, {"type": "MemoryPressure", "status": "True"},
        {"type": "DiskPressure", "status": "False"}, {"type": "NetworkUnavailable", "status": "True"}]}}
    assert [t["key"] for t in no_schedule_taints(node)] == [
        "node.kubernetes.io/not-ready", "node.kubernetes.io/memory-pressure", "node.kubernetes.io/network-unavailable",
        "node.kubernetes.io/unschedulable"]


def test_swapped_taints_replace_in_place_and_keep_time_added():
    old = [{"key": "a", "effect": "NoSchedule"}, {"key": "u", "effect": "NoExecute", "timeAdded": "t0"}]
    assert swapped_taints(old, [{"key": "u", "effect": "NoExecute", "timeAdded": "t1"}], []) == old
    assert swapped_taints(old, [{"key": "n", "effect": "NoExecute", "timeAdded": "t1"}],
                          [{"key": "u", "effect": "NoExecute"}]) == [
        {"key": "a", "effect": "NoSchedule"}, {"key": "n", "effect": "NoExecute", "timeAdded": "t1"}]
