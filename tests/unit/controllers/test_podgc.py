"""The pod garbage collector frees pods no kubelet will finish: on out-of-service nodes, on deleted
nodes, beyond the terminated-pod threshold, and terminating before they had a node."""

from __future__ import annotations

from phalanx.api.faults import NODE_FAULT_ANNOTATION
from phalanx.client import InformerFactory, InProcessClient
from phalanx.cluster.spec import NodeSpec
from phalanx.controllers.podgc import PodGCController
from phalanx.nodes.kubelet import SimulatedKubelets


class Cluster:
    def __init__(self, env, threshold=12500):
        env.bootstrap([NodeSpec("n1"), NodeSpec("n2")])
        self.env = env
        self.factory = InformerFactory(InProcessClient(env.api, clock=env.clock, shared_reads=True), clock=env.clock)
        self.kubelet = SimulatedKubelets(InProcessClient(env.api, clock=env.clock, field_manager="kubelet"),
                                         self.factory, clock=env.clock)
        self.gc = PodGCController(InProcessClient(env.api, clock=env.clock), self.factory,
                                  terminated_pod_threshold=threshold, clock=env.clock)
        self.seen: list[dict] = []

    async def __aenter__(self):
        for c in (self.kubelet, self.gc):
            c.start()
        assert await self.env.run_until(lambda: self.kubelet.synced and self.gc.synced, within=5)
        self.gc.pods.add_event_handler(on_update=lambda o, n: self.seen.append(n))
        return self

    async def __aexit__(self, *exc):
        await self.gc.stop()
        await self.kubelet.stop()
        await self.factory.stop()

    async def pod(self, name, node="n1", annotations=None, restart="Always"):
        await self.env.client.create({"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": name, "namespace": "default",
                                                   "annotations": annotations or {}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox"}],
                                               "restartPolicy": restart}})
        if node:
            await self.env.client.bind("default", name, node)

    def exists(self, name):
        try:
            self.env.api.get(self.env.api.resource("", "v1", "pods"), "default", name)
            return True
        except Exception:
            return False

    async def patch_node(self, name, change):
        node = await self.env.client.get("v1", "Node", None, name)
        change(node)
        await self.env.client.update(node)

    async def set_status(self, name, ready):
        node = await self.env.client.get("v1", "Node", None, name)
        for c in node["status"]["conditions"]:
            if c["type"] == "Ready":
                c["status"] = ready
        await self.env.client.update_status(node)


async def test_terminating_pods_on_an_out_of_service_node_are_force_deleted(env):
    async with Cluster(env) as c:
        await c.pod("p")
        await env.run_until(lambda: False, within=5)
        await c.patch_node("n1", lambda n: n["metadata"]["annotations"].update({NODE_FAULT_ANNOTATION: "down"}))
        await c.set_status("n1", "Unknown")
        await env.client.delete("v1", "Pod", "default", "p")
        await env.run_until(lambda: False, within=60)
        assert c.exists("p")  # Terminating: the kubelet is down, and the node is not out of service
        await c.patch_node("n1", lambda n: n["spec"].setdefault("taints", []).append(
            {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}))
        assert await env.run_until(lambda: not c.exists("p"), within=30)
        assert any(p["status"]["phase"] == "Failed" for p in c.seen if p["metadata"]["name"] == "p")


async def test_pods_of_a_deleted_node_go_after_the_quarantine(env):
    async with Cluster(env) as c:
        await c.pod("p", node="n2")
        await env.run_until(lambda: False, within=5)
        await env.client.delete("v1", "Node", None, "n2")
        await env.run_until(lambda: False, within=30)
        assert c.exists("p")
        assert await env.run_until(lambda: not c.exists("p"), within=60)
        last = [p for p in c.seen if p["metadata"]["name"] == "p"][-1]
        [cond] = [x for x in last["status"]["conditions"] if x["type"] == "DisruptionTarget"]
        assert (cond["reason"], cond["message"]) == ("DeletionByPodGC", "PodGC: node no longer exists")


async def test_terminated_pods_beyond_the_threshold_are_deleted_oldest_first(env):
    async with Cluster(env, threshold=2) as c:
        for i in range(4):
            await c.pod(f"done-{i}", annotations={"phalanx.dev/run-for": "1s"}, restart="Never")
            await env.run_until(lambda: False, within=1)
        await env.run_until(lambda: False, within=30)
        assert [c.exists(f"done-{i}") for i in range(4)] == [False, False, True, True]


async def test_an_unscheduled_terminating_pod_is_deleted(env):
    async with Cluster(env) as c:
        await c.pod("pending", node=None)
        md = {"finalizers": ["example.com/hold"]}
        pod = await env.client.get("v1", "Pod", "default", "pending")
        pod["metadata"].update(md)
        await env.client.update(pod)
        await env.client.delete("v1", "Pod", "default", "pending")
        assert await env.run_until(lambda: any(p["status"].get("phase") == "Failed" for p in c.seen
                                               if p["metadata"]["name"] == "pending"), within=30)
