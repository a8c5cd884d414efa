"""Integration fixtures: an in-process cluster (API + store + scheduler + simulated kubelets) on
virtual time. Reuses the unit `Env` (tests/unit/conftest.py) and adds the components."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from phalanx.apiserver import build_api
from phalanx.client import InformerFactory, InProcessClient, VirtualClock
from phalanx.machinery.featuregates import FeatureGates
from phalanx.cluster.spec import NodeSpec
from phalanx.nodes.kubelet import SimulatedKubelets
from phalanx.scheduler.scheduler import Scheduler
from phalanx.store import MemoryStore


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        asyncio.run(asyncio.wait_for(pyfuncitem.obj(**args), 120))
        return True
    return None


class Cluster:
    """An in-process cluster: `await c.start(nodes)`, then drive it through `c.client`."""

    def __init__(self, gates: dict | None = None, **scheduler_kw):
        self.clock = VirtualClock()
        self.store = MemoryStore()
        self.gates = FeatureGates.from_config(gates or {})
        self.api = build_api(self.store, self.gates, now=self.clock.datetime)
        self.client = InProcessClient(self.api, clock=self.clock, field_manager="test")
        self.scheduler_kw = scheduler_kw
        self.components: list = []

    async def start(self, nodes: list[NodeSpec], *, extra=()) -> "Cluster":
        from phalanx.cluster.bootstrap import bootstrap
        from phalanx.cluster.spec import ClusterSpec
        bootstrap(self.api, ClusterSpec(nodes=nodes))
        self.factory = InformerFactory(InProcessClient(self.api, clock=self.clock, shared_reads=True), clock=self.clock)
        self.scheduler = Scheduler(InProcessClient(self.api, clock=self.clock, field_manager="default-scheduler"),
                                   self.factory, gates=self.gates, clock=self.clock, **self.scheduler_kw)
        self.kubelet = SimulatedKubelets(InProcessClient(self.api, clock=self.clock, field_manager="kubelet"),
                                         self.factory, clock=self.clock)
        self.components = [self.scheduler, self.kubelet, *[c(self) for c in extra]]
        for c in self.components:
            c.start()
        await self.run_until(lambda: self.scheduler.synced and self.kubelet.synced, within=5)
        return self

    async def stop(self) -> None:
        for c in reversed(self.components):
            await c.stop()
        await self.factory.stop()

    async def run_until(self, pred, within: float = 60.0) -> bool:
        return await self.clock.run_until(pred, within=within)

    async def settle(self, seconds: float = 5.0) -> None:
        await self.clock.run_until(lambda: False, within=seconds)

    # -- reading state ---------------------------------------------------------------------------
    def pods(self, namespace: str = "default") -> list[dict]:
        return self.api.list(self.api.resource("", "v1", "pods"), namespace)["items"]

    def pod(self, name: str, namespace: str = "default") -> dict:
        return self.api.get(self.api.resource("", "v1", "pods"), namespace, name)

    def bound(self, namespace: str = "default") -> dict[str, str]:
        return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in self.pods(namespace)
                if (p.get("spec") or {}).get("nodeName")}

    def running(self, namespace: str = "default") -> list[str]:
        return [p["metadata"]["name"] for p in self.pods(namespace) if (p.get("status") or {}).get("phase") == "Running"]

    def podgroup(self, name: str, namespace: str = "default") -> dict:
        return self.api.get(self.api.resource("scheduling.k8s.io", "v1alpha2", "podgroups"), namespace, name)

    def events(self, name: str, namespace: str = "default") -> list[dict]:
        evs = self.api.list(self.api.resource("", "v1", "events"), namespace)["items"]
        return [e for e in evs if e["involvedObject"].get("name") == name]


@pytest.fixture
def cluster_factory():
    made: list[Cluster] = []

    def make(**kw) -> Cluster:
        c = Cluster(**kw)
        made.append(c)
        return c
    return make


def nodes(n: int, cpu: str = "4", prefix: str = "node", **labels) -> list[NodeSpec]:
    return [NodeSpec(f"{prefix}-{i}", capacity={"cpu": cpu, "memory": "32Gi", "pods": "110"},
                     labels={k: (v(i) if callable(v) else v) for k, v in labels.items()}) for i in range(n)]


def pod(name: str, cpu: str = "1", group: str | None = None, priority_class: str | None = None, **extra) -> dict:
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
         "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
                  "terminationGracePeriodSeconds": 0}}
    if group:
        p["spec"]["schedulingGroup"] = {"podGroupName": group}
    if priority_class:
        p["spec"]["priorityClassName"] = priority_class
    for k, v in extra.items():
        p["spec"][k] = v
    return p


def podgroup(name: str, min_count: int | None = None, **spec) -> dict:
    policy = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": policy, **spec}}
