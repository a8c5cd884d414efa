"""scheduling.k8s.io Workload and PodGroup (`v1beta1`, also served at `v1alpha3`) and CompositePodGroup
(`v1alpha3`), as Kubernetes 1.37 serves them.

v1beta1 is the storage version of Workload and PodGroup; `v1alpha3` has the same shapes, so the two
convert by their apiVersion alone.
"""

from __future__ import annotations

from ..registry import ResourceType, Strategy, register

GROUP = "scheduling.k8s.io"
GATE_GENERIC_WORKLOAD = "GenericWorkload"
GATE_COMPOSITE_POD_GROUP = "CompositePodGroup"
RELEASE = ("1.37",)


class WorkloadStrategy(Strategy):
    pass


class PodGroupStrategy(Strategy):
    status_is_subresource = True


class CompositePodGroupStrategy(Strategy):
    status_is_subresource = True


WORKLOADS = register(ResourceType(
    group=GROUP, version="v1beta1", kind="Workload", plural="workloads", namespaced=True,
    strategy=WorkloadStrategy(), requires_gate=GATE_GENERIC_WORKLOAD, beta=True, releases=RELEASE))
POD_GROUPS = register(ResourceType(
    group=GROUP, version="v1beta1", kind="PodGroup", plural="podgroups", namespaced=True,
    strategy=PodGroupStrategy(), subresources=["status"], requires_gate=GATE_GENERIC_WORKLOAD, beta=True,
    releases=RELEASE))
WORKLOADS_V1ALPHA3 = register(ResourceType(
    group=GROUP, version="v1alpha3", kind="Workload", plural="workloads", namespaced=True,
    strategy=WORKLOADS.strategy, requires_gate=GATE_GENERIC_WORKLOAD, alpha=True, releases=RELEASE,
    storage_version=False))
POD_GROUPS_V1ALPHA3 = register(ResourceType(
    group=GROUP, version="v1alpha3", kind="PodGroup", plural="podgroups", namespaced=True,
    strategy=POD_GROUPS.strategy, subresources=["status"], requires_gate=GATE_GENERIC_WORKLOAD, alpha=True,
    releases=RELEASE, storage_version=False))
COMPOSITE_POD_GROUPS = register(ResourceType(
    group=GROUP, version="v1alpha3", kind="CompositePodGroup", plural="compositepodgroups", namespaced=True,
    strategy=CompositePodGroupStrategy(), subresources=["status"], requires_gate=GATE_COMPOSITE_POD_GROUP,
    alpha=True, releases=RELEASE))
