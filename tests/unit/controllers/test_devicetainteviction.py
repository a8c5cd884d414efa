"""The device taint eviction controller with the simulated DRA driver: a failed device
(`fault.phalanx.dev/devices`) is published with a NoExecute taint, the pods using it are evicted
(at once, or after their claim's tolerationSeconds), a claim reserved for pods is then allocated
elsewhere, and a PodGroup's pods all go together."""

from __future__ import annotations

import pytest

from phalanx.api.faults import DEVICE_FAULT_ANNOTATION
from phalanx.client import InProcessClient
from phalanx.cluster.spec import NodeSpec
from phalanx.controllers.devicetainteviction import DeviceTaintEvictionController, taint_eviction_time
from phalanx.controllers.garbagecollector import GarbageCollector
from phalanx.controllers.resourceclaim import ResourceClaimController
from phalanx.machinery.timestamps import rfc3339_seconds
from phalanx.nodes.dradriver.reconcile import SimulatedDRADrivers
from phalanx.nodes.kubelet import SimulatedKubelets

from .harness import Running, scheduler, shared_factory

RESOURCE = "resource.k8s.io/v1"
TAINT_KEY = "gpu.example.com/unhealthy"


class Cluster(Running):
    def __init__(self, env, nodes=("n1",)):
        env.bootstrap([NodeSpec(n) for n in nodes])
        self.env = env
        self.factory = shared_factory(env)
        kw = dict(clock=env.clock)

        def client(manager):
            return InProcessClient(env.api, clock=env.clock, field_manager=manager)
        self.controllers = [
            SimulatedKubelets(client("kubelet"), self.factory, **kw),
            SimulatedDRADrivers(client("dra-driver"), self.factory, None, **kw),
            ResourceClaimController(client("kube-controller-manager"), self.factory, gates=env.api.gates, **kw),
            GarbageCollector(client("kube-controller-manager"), self.factory, **kw),
            DeviceTaintEvictionController(client("kube-controller-manager"), self.factory, gates=env.api.gates, **kw),
            scheduler(env, self.factory, **kw)]

    def pods(self):
        return {p["metadata"]["name"]: p for p in self.env.api.list(self.env.api.resource("", "v1", "pods"),
                                                                     "default")["items"]}

    def claims(self):
        return self.env.api.list(self.env.api.resource("resource.k8s.io", "v1", "resourceclaims"),
                                 "default")["items"]

    def running(self, name):
        return (self.pods().get(name) or {}).get("status", {}).get("phase") == "Running"

    def device_of(self, claim):
        return [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]]

    async def fail_devices(self, node, value):
        obj = await self.env.client.get("v1", "Node", None, node)
        annotations = obj["metadata"].setdefault("annotations", {})
        if value:
            annotations[DEVICE_FAULT_ANNOTATION] = value
        else:
            annotations.pop(DEVICE_FAULT_ANNOTATION, None)
        await self.env.client.update(obj)

    def device_taints(self, node, device):
        for s in self.env.api.list(self.env.api.resource("resource.k8s.io", "v1", "resourceslices"), None)["items"]:
            if s["spec"].get("nodeName") == node:
                for d in s["spec"].get("devices") or []:
                    if d["name"] == device:
                        return d.get("taints") or []
        return None

    def events(self, name):
        evs = self.env.api.list(self.env.api.resource("", "v1", "events"), "default")["items"]
        return [(e["reason"], e["message"]) for e in evs if e["involvedObject"]["name"] == name
                and e["source"]["component"] == "device-taint-eviction-controller"]


def template(tolerations=None):
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
    if tolerations:
        request["exactly"]["tolerations"] = tolerations
    return {"apiVersion": RESOURCE, "kind": "ResourceClaimTemplate", "metadata": {"name": "gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [request]}}}}


def gpu_pod(name, group=None):
    spec = {"terminationGracePeriodSeconds": 0,
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
            "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


async def test_a_failed_device_evicts_its_pod_and_the_next_claim_gets_another_device(env):
    async with Cluster(env) as c:
        await env.client.create(template())
        await env.client.create(gpu_pod("p"))
        assert await env.run_until(lambda: c.running("p"), within=30)
        [claim] = c.claims()
        failed = c.device_of(claim)[0]
        seen = []
        c.controllers[0].pods.add_event_handler(on_update=lambda o, n: seen.append(n))

        await c.fail_devices("n1", failed)
        assert await env.run_until(lambda: "p" not in c.pods(), within=30)
        [taint] = c.device_taints("n1", failed)
        assert (taint["key"], taint["effect"]) == (TAINT_KEY, "NoExecute") and taint["timeAdded"]
        [cond] = [x for x in seen[-1]["status"]["conditions"] if x["type"] == "DisruptionTarget"]
        assert (cond["reason"], cond["message"]) == ("DeletionByDeviceTaintManager",
                                                     "Device Taint manager: deleting due to NoExecute taint")
        assert c.events("p") == [("DeviceTaintManagerEviction", "Marking for deletion")]
        assert await env.run_until(lambda: not c.claims(), within=30)  # the pod's claim went with it

        await env.client.create(gpu_pod("q"))
        assert await env.run_until(lambda: c.running("q"), within=30)
        [claim] = c.claims()
        assert failed not in c.device_of(claim)

        await c.fail_devices("n1", None)
        assert await env.run_until(lambda: c.device_taints("n1", failed) == [], within=10)


async def test_a_claim_toleration_delays_the_eviction_and_recovery_cancels_it(env):
    toleration = {"key": TAINT_KEY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
    async with Cluster(env) as c:
        await env.client.create(template([toleration]))
        await env.client.create(gpu_pod("p"))
        assert await env.run_until(lambda: c.running("p"), within=30)
        await c.fail_devices("n1", "*")
        await env.run_until(lambda: False, within=30)
        assert c.running("p")
        await c.fail_devices("n1", None)
        await env.run_until(lambda: False, within=60)
        assert c.running("p")
        assert c.events("p") == [("DeviceTaintManagerEviction", "Cancelling deletion")]

        await c.fail_devices("n1", "*")
        failed_at = env.clock.now()
        assert await env.run_until(lambda: "p" not in c.pods(), within=120)
        assert 60 <= env.clock.now() - failed_at < 65


async def test_a_pod_group_claim_evicts_every_pod_of_the_group(env):
    async with Cluster(env, nodes=("n1", "n2")) as c:
        await env.client.create(template())
        await env.client.create({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                                 "metadata": {"name": "g", "namespace": "default"},
                                 "spec": {"schedulingPolicy": {"gang": {"minCount": 3}},
                                          "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}})
        for i in range(3):
            await env.client.create(gpu_pod(f"w{i}", group="g"))
        assert await env.run_until(lambda: all(c.running(f"w{i}") for i in range(3)), within=60)
        [claim] = c.claims()
        node = c.pods()["w0"]["spec"]["nodeName"]
        await c.fail_devices(node, c.device_of(claim)[0])
        assert await env.run_until(lambda: not any(f"w{i}" in c.pods() for i in range(3)), within=30)
        assert all(c.events(f"w{i}") == [("DeviceTaintManagerEviction", "Marking for deletion")] for i in range(3))
        [claim] = c.claims()  # a PodGroup's reservation stays while the PodGroup exists (upstream)
        assert claim["status"]["reservedFor"][0]["resource"] == "podgroups"


def test_partitions_of_a_failed_device_are_tainted():
    from phalanx.api.faults import device_matches
    assert device_matches(["gpu-0"], "gpu-0-partition-3") and device_matches(["gpu-0"], "gpu-0-full")
    assert not device_matches(["gpu-1"], "gpu-10") and device_matches(["*"], "anything")


@pytest.mark.parametrize("tolerations, expected", [
    ([], 100.0),
    ([{"key": TAINT_KEY, "operator": "Exists", "effect": "NoExecute"}], None),
    ([{"key": TAINT_KEY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}], 130.0),
    ([{"key": TAINT_KEY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -3}], 100.0),
    ([{"operator": "Exists"}], 100.0),  # only NoExecute tolerations count, as upstream
    ([{"key": "other", "operator": "Exists", "effect": "NoExecute"}], 100.0),
])
def test_taint_eviction_time(tolerations, expected):
    taint = {"key": TAINT_KEY, "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}
    t0 = rfc3339_seconds("2026-01-01T00:00:00Z")
    when = taint_eviction_time(taint, tolerations, first_seen=0)
    assert (None if when is None else when - t0 + 100) == expected
