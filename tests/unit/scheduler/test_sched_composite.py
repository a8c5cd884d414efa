"""CompositePodGroup trees on a 1.37 scheduler (was-1.37.md 2.4-2.5): one queue entity scheduled
root to leaves, minGroupCount, children confined to their parent's topology domain, greedy
siblings, all or nothing, and the trees the scheduler refuses."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from phalanx.cluster.spec import NodeSpec

from .cluster137 import Cluster137, condition, pod, podgroup

V1ALPHA3 = "scheduling.k8s.io/v1alpha3"
ZONE = "topology.kubernetes.io/zone"
RACK = "topology.example.com/rack"
INITIALLY = "PodGroupInitiallyScheduled"


def cpg(name: str, min_group_count: Optional[int] = None, parent: Optional[str] = None, key: Optional[str] = None,
        workload: str = "w") -> dict:
    policy = {"gang": {"minGroupCount": min_group_count}} if min_group_count else {"basic": {}}
    spec: dict[str, Any] = {"workloadRef": {"workloadName": workload, "templateName": name},
                            "schedulingPolicy": policy}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    if key:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    return {"apiVersion": V1ALPHA3, "kind": "CompositePodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def leaf(name: str, min_count: int, parent: str, key: Optional[str] = None, workload: str = "w") -> dict:
    extra: dict[str, Any] = {"workloadRef": {"workloadName": workload, "templateName": name},
                             "parentCompositePodGroupName": parent}
    if key:
        extra["schedulingConstraints"] = {"topology": [{"key": key}]}
    return podgroup(name, min_count, **extra)


def racks(per_rack: int = 1, cpu: str = "2") -> list[NodeSpec]:
    """Two zones of two racks: node-<zone><rack><i>."""
    out = []
    for z in ("a", "b"):
        for r in ("1", "2"):
            for i in range(per_rack):
                out.append(NodeSpec(f"node-{z}{r}{i}", capacity={"cpu": cpu, "memory": "32Gi", "pods": "110"},
                                    labels={ZONE: z, RACK: f"{z}{r}"}))
    return out


async def create_all(c: Cluster137, *objs: dict) -> None:
    for o in objs:
        await c.client.create(o)


def zone_of(node: str) -> str:
    return node[len("node-")]


async def test_tree_binds_all_leaves_in_one_zone_each_leaf_in_one_rack():
    c = await Cluster137().start(racks(per_rack=2))
    await create_all(c, cpg("root", 2, key=ZONE), leaf("workers", 2, "root", key=RACK),
                     leaf("leader", 1, "root", key=RACK))
    await create_all(c, *[pod(f"w{i}", cpu="2", group="workers") for i in range(2)], pod("l0", cpu="2", group="leader"))
    assert await c.run_until(lambda: len(c.bound()) == 3)
    bound = c.bound()
    assert len({zone_of(n) for n in bound.values()}) == 1  # the root's zone
    assert len({n[:-1] for p, n in bound.items() if p.startswith("w")}) == 1  # the workers' one rack
    for name in ("workers", "leader"):
        st = condition(c.podgroup(name), INITIALLY)
        assert (st["status"], st["reason"]) == ("True", "Scheduled")
    await c.stop()


async def test_nothing_binds_when_one_required_leaf_cannot_fit():
    """All or nothing across the tree: an infeasible leaf keeps its feasible sibling from binding."""
    c = await Cluster137().start(racks())
    await create_all(c, cpg("root", 2), leaf("small", 1, "root"), leaf("huge", 1, "root"))
    await create_all(c, pod("s0", cpu="1", group="small"), pod("h0", cpu="64", group="huge"))
    assert await c.run_until(lambda: condition(c.podgroup("small"), INITIALLY) is not None)
    await c.settle(5)
    assert c.bound() == {}
    st = condition(c.podgroup("small"), INITIALLY)
    assert (st["status"], st["reason"]) == ("False", "Unschedulable")
    assert st["message"].startswith('composite pod group "root" tree cannot be scheduled: ')
    assert "pod group huge: 0/1 pods fit, 1 required" in st["message"]
    await c.stop()


async def test_min_group_count_lets_the_tree_go_without_a_leaf_that_does_not_fit():
    c = await Cluster137().start(racks())
    await create_all(c, cpg("root", 1), leaf("small", 1, "root"), leaf("huge", 1, "root"))
    await create_all(c, pod("s0", cpu="1", group="small"), pod("h0", cpu="64", group="huge"))
    assert await c.run_until(lambda: "s0" in c.bound())
    assert condition(c.podgroup("small"), INITIALLY)["status"] == "True"
    assert "h0" not in c.bound()
    await c.stop()


async def test_children_are_confined_to_the_parent_domain():
    """Each zone has 2 cpu per rack: the two leaves (2 pods of 2 cpu each, one rack each) need both
    racks of one zone; a zone with a rack already full cannot take the tree."""
    c = await Cluster137().start(racks())
    await c.client.create(pod("filler", cpu="2", nodeName="node-a10"))
    assert await c.run_until(lambda: "filler" in c.bound())
    await create_all(c, cpg("root", 2, key=ZONE), leaf("x", 1, "root", key=RACK), leaf("y", 1, "root", key=RACK))
    await create_all(c, pod("x0", cpu="2", group="x"), pod("y0", cpu="2", group="y"))
    assert await c.run_until(lambda: {"x0", "y0"} <= set(c.bound()))
    assert {zone_of(c.bound()[p]) for p in ("x0", "y0")} == {"b"}
    await c.stop()


async def test_siblings_are_placed_greedily_in_creation_order():
    """No sibling backtracking: the older sibling (unconstrained) goes first and takes half of the
    4-cpu node it prefers; the younger one then needs 4 cpu in one rack and finds none, although the
    other order would have fit. Creation order, not name order, decides who goes first."""
    def node(name: str, cpu: str, rack: str) -> NodeSpec:
        return NodeSpec(name, capacity={"cpu": cpu, "memory": "8Gi", "pods": "110"}, labels={ZONE: "a", RACK: rack})
    c = await Cluster137().start([node("node-a10", "4", "a1"), node("node-a20", "2", "a2")])
    await create_all(c, cpg("root", 2), leaf("zfirst", 1, "root"))
    await c.settle(2)
    await c.client.create(leaf("asecond", 2, "root", key=RACK))
    await create_all(c, pod("f0", cpu="2", group="zfirst"), *[pod(f"s{i}", cpu="2", group="asecond") for i in range(2)])
    assert await c.run_until(lambda: condition(c.podgroup("asecond"), INITIALLY) is not None)
    await c.settle(5)
    assert c.bound() == {}
    st = condition(c.podgroup("asecond"), INITIALLY)
    assert st["status"] == "False" and "pod group asecond: " in st["message"], st
    await c.stop()


@pytest.mark.parametrize("objs, message", [
    ([leaf("l", 1, "missing")], "missing not found in workload forest"),
    ([cpg("c1", 1, parent="c2"), cpg("c2", 1, parent="c1"), leaf("l", 1, "c1")],
     "hierarchy exceeded maximum tree depth at compositepodgroup/default/c2, possibly caused by cycle or deep hierarchy"),
    ([cpg("c1", 1), cpg("c2", 1, parent="c1"), cpg("c3", 1, parent="c2"), cpg("c4", 1, parent="c3"),
      leaf("l", 1, "c4")],
     "hierarchy exceeded maximum tree depth at compositepodgroup/default/c1, possibly caused by cycle or deep hierarchy"),
    ([cpg("c1", 1, workload="w1"), leaf("l", 1, "c1", workload="w2")],
     "composite pod group tree references more than one Workload"),
])
async def test_trees_the_scheduler_refuses(objs, message):
    c = await Cluster137().start(racks())
    await create_all(c, *objs, pod("p0", group="l"))
    assert await c.run_until(lambda: (ps := condition(c.pod("p0"), "PodScheduled")) is not None
                             and ps["message"] == message)
    assert condition(c.pod("p0"), "PodScheduled")["reason"] == "SchedulingGated"
    assert c.bound() == {}
    await c.stop()


async def test_a_tree_waits_for_its_quorum():
    c = await Cluster137().start(racks())
    await create_all(c, cpg("root", 2), leaf("a", 1, "root"), leaf("b", 2, "root"))
    await create_all(c, pod("a0", group="a"), pod("b0", group="b"))
    msg = 'waiting for composite pod group "root" tree to meet quorum'
    assert await c.run_until(lambda: (ps := condition(c.pod("a0"), "PodScheduled")) is not None
                             and ps["message"] == msg)
    await c.settle(5)
    assert c.bound() == {}
    await c.client.create(pod("b1", group="b"))
    assert await c.run_until(lambda: set(c.bound()) == {"a0", "b0", "b1"})
    await c.stop()


async def test_a_depth_four_tree_schedules():
    c = await Cluster137().start(racks())
    await create_all(c, cpg("c1", 1), cpg("c2", 1, parent="c1"), cpg("c3", 1, parent="c2"), leaf("l", 1, "c3"))
    await c.client.create(pod("p0", group="l"))
    assert await c.run_until(lambda: "p0" in c.bound())
    await c.stop()
