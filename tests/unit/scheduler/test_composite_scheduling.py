"""CompositePodGroup trees in the scheduler on a Kubernetes 1.37 cluster (KEP-6012): a tree binds
all or nothing, top-down within one domain of each constrained group; an incomplete tree waits with
upstream's messages; a tree too deep is a SchedulerError."""

from __future__ import annotations

import copy
from typing import Any, Optional

from phalanx.cluster.spec import NodeSpec

from .cluster137 import Cluster137, condition, pod, workload

V1ALPHA3 = "scheduling.k8s.io/v1alpha3"
V1BETA1 = "scheduling.k8s.io/v1beta1"
INITIALLY = "PodGroupInitiallyScheduled"
ZONE, RACK = "topology.kubernetes.io/zone", "topology.kubernetes.io/rack"


def topology_nodes() -> list[NodeSpec]:
    """Two zones of two racks of two nodes; 2 CPUs each."""
    return [NodeSpec(f"z{z}-r{r}-n{i}", capacity={"cpu": "2", "memory": "32Gi", "pods": "110"},
                     labels={ZONE: f"zone-{z}", RACK: f"zone-{z}-rack-{r}"})
            for z in range(2) for r in range(2) for i in range(2)]


def composite(name: str, parent: Optional[str] = None, min_groups: Optional[int] = None,
              topology: Optional[str] = None) -> dict:
    spec: dict[str, Any] = {"workloadRef": {"workloadName": "trainer", "templateName": name},
                            "schedulingPolicy": {"gang": {"minGroupCount": min_groups}} if min_groups
                            else {"basic": {}}}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {"apiVersion": V1ALPHA3, "kind": "CompositePodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def leaf(name: str, parent: str, min_count: int, topology: Optional[str] = None) -> dict:
    spec: dict[str, Any] = {"workloadRef": {"workloadName": "trainer", "templateName": name},
                            "parentCompositePodGroupName": parent,
                            "schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {"apiVersion": V1BETA1, "kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


async def leader_and_workers(c: Cluster137, workers: int, worker_cpu: str = "1") -> None:
    await c.client.create(workload("trainer", "leader", "workers"))
    await c.client.create(composite("job", min_groups=2, topology=ZONE))
    await c.client.create(leaf("leader", "job", 1, topology=RACK))
    await c.client.create(leaf("workers", "job", workers, topology=RACK))
    await c.client.create(pod("leader-0", group="leader"))
    for i in range(workers):
        await c.client.create(pod(f"worker-{i}", cpu=worker_cpu, group="workers"))


def labels_of(c: Cluster137, node: str) -> dict:
    return c.api.get(c.api.resource("", "v1", "nodes"), "", node)["metadata"]["labels"]


async def test_a_tree_binds_in_one_zone_with_each_leaf_in_one_rack():
    c = await Cluster137().start(topology_nodes())
    await leader_and_workers(c, workers=4)
    assert await c.run_until(lambda: len(c.bound()) == 5)
    bound = c.bound()
    assert len({labels_of(c, n)[ZONE] for n in bound.values()}) == 1
    assert len({labels_of(c, bound[f"worker-{i}"])[RACK] for i in range(4)}) == 1
    for name in ("leader", "workers"):
        cond = condition(c.podgroup(name), INITIALLY)
        assert cond is not None and cond["status"] == "True", c.podgroup(name)
    await c.stop()


async def test_an_infeasible_leaf_blocks_its_siblings():
    """Workers need 5 CPUs in one rack (racks have 4): nothing of the tree binds, not even the
    leader, and both PodGroups say why."""
    c = await Cluster137().start(topology_nodes())
    await leader_and_workers(c, workers=5)
    await c.settle(15)
    assert c.bound() == {}
    for name in ("leader", "workers"):
        cond = condition(c.podgroup(name), INITIALLY)
        assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Unschedulable")
        assert cond["message"].startswith('composite pod group "job" cannot be scheduled: pod groups workers do not fit')
    # room appears (the workers' gang shrinks to what one rack holds): the whole tree binds
    wg = copy.deepcopy(c.podgroup("workers"))  # the API's stored object is shared with the informers
    wg["spec"]["schedulingPolicy"]["gang"]["minCount"] = 4
    await c.client.update(wg)
    await c.client.delete("v1", "Pod", "default", "worker-4")
    assert await c.run_until(lambda: len(c.bound()) == 5, within=120)
    await c.stop()


async def test_a_missing_parent_keeps_the_pods_waiting_until_it_exists():
    c = await Cluster137().start(topology_nodes())
    await c.client.create(workload("trainer", "solo"))
    await c.client.create(leaf("solo", "root", 1))
    await c.client.create(pod("p", group="solo"))
    await c.settle(5)
    assert c.bound() == {}
    scheduled = condition(c.pod("p"), "PodScheduled")
    assert scheduled is not None and "root not found in workload forest" in scheduled["message"]
    await c.client.create(composite("root"))
    assert await c.run_until(lambda: "p" in c.bound(), within=60)
    await c.stop()


async def test_a_tree_waits_for_its_quorum():
    c = await Cluster137().start(topology_nodes())
    await c.client.create(workload("trainer", "a", "b"))
    await c.client.create(composite("root", min_groups=2))
    await c.client.create(leaf("a", "root", 1))
    await c.client.create(leaf("b", "root", 2))
    await c.client.create(pod("a-0", group="a"))
    await c.client.create(pod("b-0", group="b"))
    await c.settle(5)
    assert c.bound() == {}
    scheduled = condition(c.pod("a-0"), "PodScheduled")
    assert scheduled is not None and scheduled["message"] == 'waiting for composite pod group "root" tree to meet quorum'
    await c.client.create(pod("b-1", group="b"))
    assert await c.run_until(lambda: len(c.bound()) == 3, within=60)
    await c.stop()


async def test_a_tree_deeper_than_four_is_a_scheduler_error():
    c = await Cluster137().start(topology_nodes())
    await c.client.create(composite("cpg-root"))
    for child, parent in (("cpg1", "cpg-root"), ("cpg2", "cpg1"), ("cpg3", "cpg2")):
        await c.client.create(composite(child, parent=parent))
    await c.client.create(workload("trainer", "pg1"))
    await c.client.create(leaf("pg1", "cpg3", 1))
    await c.client.create(pod("pg1-pod-0", group="pg1"))
    message = "hierarchy depth 5 exceeds maximum allowed depth 4"
    assert await c.run_until(lambda: (condition(c.podgroup("pg1"), INITIALLY) or {}).get("message") == message)
    cond = condition(c.podgroup("pg1"), INITIALLY)
    assert (cond["status"], cond["reason"]) == ("False", "SchedulerError")
    scheduled = condition(c.pod("pg1-pod-0"), "PodScheduled")
    assert scheduled is not None and (scheduled["reason"], scheduled["message"]) == ("SchedulerError", message)
    assert c.bound() == {}
    await c.stop()
