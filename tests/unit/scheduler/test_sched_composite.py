"""CompositePodGroup trees on a whole 1.37 scheduler, beside test_composite_scheduling.py: minGroupCount
lets a tree through without a leaf that does not fit, children stay in their parent's topology
domain, siblings are placed greedily in creation order (not name order), and a tree of the
maximum depth (4 levels) schedules."""

from __future__ import annotations

from typing import Any, Optional

from phalanx.cluster.spec import NodeSpec

from .cluster137 import Cluster137, condition, pod, podgroup, workload

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
    """Create `objs`, first the Workload each of their PodGroups names (with their templates)."""
    templates: dict[str, list[str]] = {}
    for o in objs:
        ref = o["spec"].get("workloadRef") if o["kind"] == "PodGroup" else None
        if ref:
            templates.setdefault(ref["workloadName"], []).append(ref["templateName"])
    for name, names in templates.items():
        await c.client.create(workload(name, *names))
    for o in objs:
        await c.client.create(o)


def zone_of(node: str) -> str:
    return node[len("node-")]


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
    await c.client.create(workload("w", "zfirst", "asecond"))
    await c.client.create(cpg("root", 2))
    await c.client.create(leaf("zfirst", 1, "root"))
    await c.settle(2)
    await c.client.create(leaf("asecond", 2, "root", key=RACK))
    await create_all(c, pod("f0", cpu="2", group="zfirst"), *[pod(f"s{i}", cpu="2", group="asecond") for i in range(2)])
    assert await c.run_until(lambda: condition(c.podgroup("asecond"), INITIALLY) is not None)
    await c.settle(5)
    assert c.bound() == {}
    st = condition(c.podgroup("asecond"), INITIALLY)
    assert st["status"] == "False" and "asecond" in st["message"], st
    await c.stop()


async def test_a_depth_four_tree_schedules():
    c = await Cluster137().start(racks())
    await create_all(c, cpg("c1", 1), cpg("c2", 1, parent="c1"), cpg("c3", 1, parent="c2"), leaf("l", 1, "c3"))
    await c.client.create(pod("p0", group="l"))
    assert await c.run_until(lambda: "p0" in c.bound())
    await c.stop()


def two_cpu_nodes(n: int) -> list[NodeSpec]:
    return [NodeSpec(f"node-{i}", capacity={"cpu": "4", "memory": "8Gi", "pods": "110"}) for i in range(n)]


async def _blockers_and_tree(c: Cluster137, blockers: dict[str, int], root_policy: Optional[str] = None,
                             leaf_cpu: str = "3") -> None:
    for name, value in {"high": 1000, **{f"p{v}": v for v in blockers.values()}}.items():
        await c.client.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                               "metadata": {"name": name}, "value": value})
    for i, (name, value) in enumerate(blockers.items()):
        await c.client.create(pod(name, cpu="3", priority_class=f"p{value}", nodeName=f"node-{i}"))
    assert await c.run_until(lambda: len(c.bound()) == len(blockers))
    if root_policy:
        await c.client.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                               "metadata": {"name": "high-never"}, "value": 1000, "preemptionPolicy": root_policy})
    root = cpg("root", 2)
    root["spec"]["priorityClassName"] = "high-never" if root_policy else "high"  # the tree's priority and policy
    a, b = leaf("a", 1, "root"), leaf("b", 1, "root")
    for group in (a, b):
        group["spec"]["priorityClassName"] = "high"
    await create_all(c, root, a, b)
    await create_all(c, pod("a0", cpu=leaf_cpu, group="a", priority_class="high"),
                     pod("b0", cpu=leaf_cpu, group="b", priority_class="high"))


def preempted(c: Cluster137) -> dict[str, str]:
    evs = c.api.list(c.api.resource("", "v1", "events"), "default")["items"]
    return {e["involvedObject"]["name"]: e["message"] for e in evs if e["reason"] == "Preempted"}


async def test_a_tree_preempts_at_its_root_and_spares_what_it_does_not_need():
    """Three nodes, each held by a lower-priority pod; the tree needs two of them: the most
    important blocker is reprieved, the other two go, named as preempted by the root."""
    c = await Cluster137().start(two_cpu_nodes(3))
    await _blockers_and_tree(c, {"keep": 30, "go1": 20, "go2": 10})
    assert await c.run_until(lambda: {"a0", "b0"} <= set(c.bound()))
    uid = c.api.get(c.api.resource("scheduling.k8s.io", "v1alpha3", "compositepodgroups"), "default",
                    "root")["metadata"]["uid"]
    assert preempted(c) == {"go1": f"Preempted by compositepodgroup {uid} on node cluster",
                            "go2": f"Preempted by compositepodgroup {uid} on node cluster"}
    assert "keep" in c.bound()
    for name in ("a", "b"):
        assert condition(c.podgroup(name), INITIALLY)["status"] == "True"
    await c.stop()


async def test_a_root_with_preemption_policy_never_preempts_nothing():
    c = await Cluster137().start(two_cpu_nodes(2))
    await _blockers_and_tree(c, {"x": 10, "y": 10}, root_policy="Never")
    assert await c.run_until(lambda: condition(c.podgroup("a"), INITIALLY) is not None)
    await c.settle(5)
    assert preempted(c) == {} and set(c.bound()) == {"x", "y"}
    assert "preemption: not eligible due to preemptionPolicy=Never." in condition(c.podgroup("a"), INITIALLY)["message"]
    await c.stop()


async def test_nothing_is_preempted_when_the_tree_cannot_fit_anyway():
    c = await Cluster137().start(two_cpu_nodes(2))
    await _blockers_and_tree(c, {"x": 10, "y": 10}, leaf_cpu="8")
    assert await c.run_until(lambda: condition(c.podgroup("a"), INITIALLY) is not None)
    await c.settle(5)
    assert preempted(c) == {} and set(c.bound()) == {"x", "y"}
    msg = condition(c.podgroup("a"), INITIALLY)["message"]
    assert "preemption: not helpful: the composite pod group does not fit even without all 2 pod(s)" in msg, msg
    await c.stop()


async def test_a_leaf_whose_pods_disagree_on_priority_fails_the_tree():
    c = await Cluster137().start(racks())
    for name, value in (("low", 10), ("high", 100)):
        await c.client.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                               "metadata": {"name": name}, "value": value})
    a, b = leaf("a", 1, "root"), leaf("b", 1, "root")
    for group in (a, b):
        group["spec"]["priorityClassName"] = "high"
    await create_all(c, cpg("root", 2), a, b, pod("a0", group="a", priority_class="high"),
                     pod("b0", group="b", priority_class="low"))
    message = "all pods in a single pod group should match the priority of the pod group, got: 10 and 100"
    assert await c.run_until(lambda: (condition(c.podgroup("a"), INITIALLY) or {}).get("message") == message)
    assert condition(c.podgroup("b"), INITIALLY)["reason"] == "SchedulerError"
    assert c.bound() == {}
    await c.stop()
