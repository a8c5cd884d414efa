"""A Kubernetes 1.37 cluster in one process for scheduler tests: the API of release 1.37 (v1beta1
PodGroups), the scheduler and simulated kubelets, on virtual time."""

from __future__ import annotations

from typing import Any, Optional

from phalanx.apiserver import build_api
from phalanx.client import InformerFactory, InProcessClient, VirtualClock
from phalanx.cluster.spec import NodeSpec
from phalanx.machinery.featuregates import FeatureGates
from phalanx.nodes.kubelet import SimulatedKubelets
from phalanx.scheduler.scheduler import Scheduler
from phalanx.store import MemoryStore

V1BETA1 = "scheduling.k8s.io/v1beta1"


class Cluster137:
    def __init__(self, gates: Optional[dict] = None):
        self.clock = VirtualClock()
        self.store = MemoryStore()
        self.gates = FeatureGates(gates or {}, release="1.37")
        self.api = build_api(self.store, self.gates, now=self.clock.datetime)
        self.client = InProcessClient(self.api, clock=self.clock, field_manager="test")

    async def start(self, nodes: list[NodeSpec]) -> "Cluster137":
        from phalanx.cluster.bootstrap import bootstrap
        from phalanx.cluster.spec import ClusterSpec
        bootstrap(self.api, ClusterSpec(nodes=nodes))
        self.factory = InformerFactory(InProcessClient(self.api, clock=self.clock, shared_reads=True), clock=self.clock)
        self.scheduler = Scheduler(InProcessClient(self.api, clock=self.clock, field_manager="default-scheduler"),
                                   self.factory, gates=self.gates, clock=self.clock)
        self.kubelet = SimulatedKubelets(InProcessClient(self.api, clock=self.clock, field_manager="kubelet"),
                                         self.factory, clock=self.clock)
        self.scheduler.start()
        self.kubelet.start()
        await self.run_until(lambda: self.scheduler.synced and self.kubelet.synced, within=5)
        return self

    async def stop(self) -> None:
        await self.kubelet.stop()
        await self.scheduler.stop()
        await self.factory.stop()

    async def run_until(self, pred: Any, within: float = 60.0) -> bool:
        return bool(await self.clock.run_until(pred, within=within))

    async def settle(self, seconds: float = 5.0) -> None:
        await self.clock.run_until(lambda: False, within=seconds)

    def pods(self) -> list[dict]:
        return self.api.list(self.api.resource("", "v1", "pods"), "default")["items"]

    def pod(self, name: str) -> dict:
        return self.api.get(self.api.resource("", "v1", "pods"), "default", name)

    def bound(self) -> dict[str, str]:
        return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in self.pods() if p["spec"].get("nodeName")}

    def podgroup(self, name: str) -> dict:
        return self.api.get(self.api.resource("scheduling.k8s.io", "v1beta1", "podgroups"), "default", name)

    def events(self, name: str) -> list[dict]:
        evs = self.api.list(self.api.resource("", "v1", "events"), "default")["items"]
        return [e for e in evs if e["involvedObject"].get("name") == name]


def nodes(n: int, cpu: str = "4", **labels: str) -> list[NodeSpec]:
    return [NodeSpec(f"node-{i}", capacity={"cpu": cpu, "memory": "32Gi", "pods": "110"}, labels=dict(labels))
            for i in range(n)]


def pod(name: str, cpu: str = "1", group: Optional[str] = None, priority_class: Optional[str] = None,
        **spec: Any) -> dict:
    p: dict = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
               "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
                        "terminationGracePeriodSeconds": 0, **spec}}
    if group:
        p["spec"]["schedulingGroup"] = {"podGroupName": group}
    if priority_class:
        p["spec"]["priorityClassName"] = priority_class
    return p


def podgroup(name: str, min_count: Optional[int] = None, **spec: Any) -> dict:
    policy = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return {"apiVersion": V1BETA1, "kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": policy, **spec}}


def workload(name: str, *templates: str) -> dict:
    """A Workload with a basic PodGroup template of each name: what a PodGroup naming it in its
    `workloadRef` needs to be admitted (PodGroupWorkloadExists), as a controller would create it."""
    return {"apiVersion": V1BETA1, "kind": "Workload", "metadata": {"name": name, "namespace": "default"},
            "spec": {"podGroupTemplates": [{"name": t, "schedulingPolicy": {"basic": {}}} for t in templates]}}


def priority_class(name: str, value: int, **extra: Any) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **extra}


def condition(obj: dict, type_: str) -> Optional[dict]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)
