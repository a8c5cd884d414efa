"""The correctness checks a benchmark run ends with (phalanx.sim.checks), on small cluster states."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.sim.checks import run_checks


class FakeAPI:
    """What run_checks reads: `resource(group, version, plural)` and `list(rt, None)`."""

    def __init__(self, **objects: list[dict]):
        self.objects = objects

    def resource(self, group: str, version: str, plural: str) -> str:
        return plural

    def list(self, rt: str, namespace: Any) -> dict:
        return {"items": self.objects.get(rt, [])}


class Gates:
    def enabled(self, name: str) -> bool:
        return True


def node(name: str, cpu: str = "4", pods: str = "110", zone: str = "z1") -> dict:
    return {"metadata": {"name": name, "labels": {"zone": zone}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": pods}}}


def pod(name: str, node_name: str | None, cpu: str = "100m", group: str | None = None,
        claims: list[dict] | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Mi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if claims:
        spec["resourceClaims"] = claims
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": spec,
            "status": {"phase": "Running"}}


def gang(name: str, min_count: int, topology_key: str | None = None) -> dict:
    spec: dict = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def claim(name: str, device: str, reserved_for: list[str] | None = None, allocated: bool = True) -> dict:
    status: dict = {}
    if allocated:
        status["allocation"] = {"devices": {"results": [{"driver": "gpu.example.com", "pool": "n1",
                                                         "device": device}]}}
    status["reservedFor"] = [{"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in reserved_for or []]
    return {"metadata": {"name": name, "namespace": "ns"}, "status": status}


CASES = [
    ("an empty cluster has nothing to check", {}, {},
     {"podsScheduled": (True, "nothing to check"), "nodesNotOvercommitted": (True, "nothing to check"),
      "devicesNotDoubleAllocated": (True, "nothing to check")}),
    ("an op that waited for fewer bound pods than it created", {}, {"op 1 createPods": (10, 7)},
     {"podsScheduled": (False, "op 1 createPods: 7/10 pods scheduled")}),
    ("requests within allocatable", {"nodes": [node("n1")], "pods": [pod("a", "n1"), pod("b", "n1")]}, {},
     {"nodesNotOvercommitted": (True, "1 nodes within allocatable")}),
    ("cpu requested beyond allocatable", {"nodes": [node("n1", cpu="1")],
                                          "pods": [pod("a", "n1", cpu="600m"), pod("b", "n1", cpu="600m")]}, {},
     {"nodesNotOvercommitted": (False, "n1: cpu 1200m requested > 1")}),
    ("a pod bound to a node that does not exist", {"pods": [pod("a", "gone")]}, {},
     {"nodesNotOvercommitted": (False, "1 pod(s) bound to missing node gone")}),
    ("finished and unbound pods do not count", {"nodes": [node("n1", pods="1")],
                                                "pods": [pod("a", "n1"), pod("b", None),
                                                         {**pod("c", "n1"), "status": {"phase": "Succeeded"}}]}, {},
     {"nodesNotOvercommitted": (True, "1 nodes within allocatable")}),
    ("a gang partly bound", {"nodes": [node("n1")], "podgroups": [gang("g", 3)],
                             "pods": [pod("a", "n1", group="g"), pod("b", "n1", group="g")]}, {},
     {"gangsIntact": (False, "ns/g: 2 pods bound, minCount 3")}),
    ("a gang not bound at all is intact", {"podgroups": [gang("g", 3)], "pods": [pod("a", None, group="g")]}, {},
     {"gangsIntact": (True, "1 gangs all-or-nothing")}),
    ("a PodGroup spread over two zones", {"nodes": [node("n1", zone="z1"), node("n2", zone="z2")],
                                          "podgroups": [gang("g", 1, topology_key="zone")],
                                          "pods": [pod("a", "n1", group="g"), pod("b", "n2", group="g")]}, {},
     {"topologyRespected": (False, "ns/g: 2 pods span zone=['z1', 'z2']")}),
    ("a pod's claim that does not exist", {"nodes": [node("n1")],
                                           "pods": [pod("a", "n1", claims=[{"name": "gpu",
                                                                            "resourceClaimName": "c1"}])]}, {},
     {"claimsAllocatedAndReserved": (False, "pod ns/a claim gpu: ResourceClaim c1 not found")}),
    ("a pod's claim allocated but reserved for another pod",
     {"nodes": [node("n1")], "resourceclaims": [claim("c1", "gpu-0", reserved_for=["b"])],
      "pods": [pod("a", "n1", claims=[{"name": "gpu", "resourceClaimName": "c1"}])]}, {},
     {"claimsAllocatedAndReserved": (False, "pod ns/a claim gpu: ResourceClaim c1 is not reserved for it")}),
    ("a pod's claim allocated and reserved for it",
     {"nodes": [node("n1")], "resourceclaims": [claim("c1", "gpu-0", reserved_for=["a"])],
      "pods": [pod("a", "n1", claims=[{"name": "gpu", "resourceClaimName": "c1"}])]}, {},
     {"claimsAllocatedAndReserved": (True, "1 pod claims allocated and reserved"),
      "devicesNotDoubleAllocated": (True, "1 devices allocated once")}),
    ("one device in two allocations", {"resourceclaims": [claim("c1", "gpu-0"), claim("c2", "gpu-0")]}, {},
     {"devicesNotDoubleAllocated": (False, "gpu.example.com/n1/gpu-0 allocated 2 times")}),
]


@pytest.mark.parametrize("objects, expectations, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_checks_report_what_is_wrong(objects: dict, expectations: dict, want: dict) -> None:
    results = {r["name"]: r for r in run_checks(FakeAPI(**objects), expectations, Gates())}
    for name, (ok, detail) in want.items():
        assert (results[name]["ok"], results[name]["detail"]) == (ok, detail), name


def test_every_check_reports_in_order() -> None:
    names = [r["name"] for r in run_checks(FakeAPI(), {}, Gates())]
    assert names == ["podsScheduled", "nodesNotOvercommitted", "gangsIntact", "topologyRespected",
                     "claimsAllocatedAndReserved", "sharedClaimsOneReservation", "devicesNotDoubleAllocated"]
