"""Workload-aware preemption (KEP-5710 with delayed preemption) on an in-process cluster: a gang
evicts exactly what it needs, whole `disruptionMode: PodGroup` victims or none of them, the
lowest priorities first, PodDisruptionBudgets where it can, never with `preemptionPolicy: Never`,
and with a topology constraint the domain with the smallest eviction set (beyond 1.36).

The shapes are upstream's `workload_preemption` benchmarks scaled down: nodes full of low-priority
pods (GangPreemptionBasic) or of low-priority gangs (GangPreemptionPodGroups), one high-priority
gang whose pods each need a whole node.
"""

from __future__ import annotations

import pytest

from phalanx.nodes.kubelet import StageDelays
from phalanx.scheduler.explain import explain_podgroup

from .conftest import nodes, pod, podgroup

RACK = "topology.kubernetes.io/rack"


def pc(name: str, value: int, **extra) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **extra}


def cond(obj: dict, t: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == t), None)


def preempted(c, kind: str = "Pod") -> set[str]:
    """Names of the objects that got a `Preempted` event."""
    evs = c.api.list(c.api.resource("", "v1", "events"), "default")["items"]
    return {e["involvedObject"]["name"] for e in evs
            if e["reason"] == "Preempted" and e["involvedObject"].get("kind") == kind}


async def priority_classes(c) -> None:
    await c.client.create(pc("low", 0))
    await c.client.create(pc("mid", 500))
    await c.client.create(pc("high", 1000))


async def fill(c, names_nodes: dict[str, str], cpu: str = "1", priority_class: str = "low", **extra) -> None:
    """Running filler pods pinned to nodes (spec.nodeName), so every test knows where they are."""
    for name, node in names_nodes.items():
        await c.client.create(pod(name, cpu=cpu, priority_class=priority_class, nodeName=node, **extra))
    assert await c.run_until(lambda: set(names_nodes) <= set(c.running()))


async def gang(c, name: str, size: int, cpu: str = "4", priority_class: str = "high", min_count: int | None = None,
               pod_extra: dict | None = None, **spec) -> None:
    await c.client.create(podgroup(name, min_count or size, priorityClassName=priority_class, **spec))
    for i in range(size):
        await c.client.create(pod(f"{name}-{i}", cpu=cpu, group=name, priority_class=priority_class,
                                  **(pod_extra or {})))


def graceful(c, seconds: float = 30) -> None:
    """Simulated kubelets take up to `seconds` (the pod's grace period) to terminate a pod, so a
    victim stays visible, marked DisruptionTarget, between its preemption and its removal."""
    c.kubelet.delays = StageDelays(terminating=seconds)


def bound_of(c, prefix: str) -> dict[str, str]:
    return {n: node for n, node in c.bound().items() if n.startswith(prefix)}


# -- GangPreemptionBasic, scaled down -------------------------------------------------------------

async def test_gang_evicts_exactly_the_pods_on_the_nodes_it_needs(cluster_factory):
    """Four 4-cpu nodes hold four 1-cpu low pods each; a gang of two whole-node pods evicts the
    eight pods of two nodes, no more, and then binds there."""
    c = await cluster_factory().start(nodes(4, cpu="4"))
    await priority_classes(c)
    graceful(c)
    where = {f"lo-{n}-{i}": f"node-{n}" for n in range(4) for i in range(4)}
    await fill(c, where, terminationGracePeriodSeconds=30)
    await gang(c, "hi", 2)
    # delayed preemption: victims are marked and deleted, the gang's pods are nominated
    assert await c.run_until(lambda: len(preempted(c)) == 8)
    victims = preempted(c)
    victim_nodes = {where[v] for v in victims}
    assert len(victim_nodes) == 2
    assert victims == {v for v, n in where.items() if n in victim_nodes}  # whole nodes, nothing else
    for v in victims:
        dt = cond(c.pod(v), "DisruptionTarget")
        assert (dt["status"], dt["reason"]) == ("True", "PreemptionByScheduler")
        assert dt["message"] == "default-scheduler: preempting to accommodate a higher priority podgroup"
        assert c.pod(v)["metadata"].get("deletionTimestamp")
    nominated = {c.pod(f"hi-{i}")["status"].get("nominatedNodeName") for i in range(2)}
    assert nominated == victim_nodes
    st = cond(c.podgroup("hi"), "PodGroupScheduled")
    assert (st["status"], st["reason"]) == ("False", "Unschedulable")
    assert st["message"].endswith(f"; preemption: preempting 8 pod(s) of priority ≤ 0 on nodes "
                                  f"{', '.join(sorted(victim_nodes))}")
    ev = next(e for e in c.events(sorted(victims)[0]) if e["reason"] == "Preempted")
    # upstream's words (TestWorkloadAwarePreemptionInvocation): the preemptor's kind and uid, the
    # domain of workload-aware preemption ("cluster"), not the victim's node
    assert ev["message"] == f"Preempted by podgroup {c.podgroup('hi')['metadata']['uid']} on node cluster"
    # once the victims are gone the gang binds on the freed nodes; the other pods never moved
    assert await c.run_until(lambda: len(bound_of(c, "hi-")) == 2, within=120)
    assert set(bound_of(c, "hi-").values()) == victim_nodes
    survivors = set(where) - victims
    assert survivors <= set(c.running())
    assert all(cond(c.pod(s), "DisruptionTarget") is None for s in survivors)
    assert c.scheduler.stats["group_preemptions"] == 1  # no second preemption while victims terminated
    assert cond(c.podgroup("hi"), "PodGroupScheduled")["status"] == "True"
    await c.stop()


async def test_no_new_preemption_while_victims_terminate(cluster_factory):
    c = await cluster_factory().start(nodes(2, cpu="4"))
    await priority_classes(c)
    graceful(c, 60)
    await fill(c, {"lo-0": "node-0", "lo-1": "node-1"}, cpu="4", terminationGracePeriodSeconds=60)
    await gang(c, "hi", 1)
    assert await c.run_until(lambda: len(preempted(c)) == 1)
    # a member joins meanwhile: the group is retried, waits for its victim, preempts nothing more
    await c.client.create(pod("hi-late", cpu="1", group="hi", priority_class="high"))
    await c.settle(20)
    assert c.scheduler.stats["group_preemptions"] == 1
    assert len(preempted(c)) == 1
    msg = cond(c.podgroup("hi"), "PodGroupScheduled")["message"]
    assert "preemption: waiting for 1 preempted pod(s) to terminate on nodes node-" in msg
    assert await c.run_until(lambda: "hi-0" in c.running(), within=120)
    await c.stop()


async def test_a_higher_priority_victim_is_never_chosen_while_a_lower_one_would_do(cluster_factory):
    c = await cluster_factory().start(nodes(3, cpu="4"))
    await priority_classes(c)
    await fill(c, {"mid-0": "node-0", "mid-1": "node-0"}, cpu="2", priority_class="mid")
    await fill(c, {"lo-0": "node-1", "lo-1": "node-1"}, cpu="2", priority_class="low")
    await fill(c, {"mid-2": "node-2"}, cpu="2", priority_class="mid")
    await fill(c, {"lo-2": "node-2"}, cpu="2", priority_class="low")
    await gang(c, "hi", 1)
    assert await c.run_until(lambda: "hi-0" in c.running(), within=120)
    # the pod needs a whole node: node-0 costs two mid pods, node-1 two low pods, node-2 a low and
    # a mid one. Evicting priority ≤ 0 suffices (node-1), so no mid pod goes, and lo-2 is reprieved.
    assert preempted(c) == {"lo-0", "lo-1"}
    assert c.bound()["hi-0"] == "node-1"
    await c.stop()


async def test_lone_pods_go_before_a_pod_group_of_equal_priority(cluster_factory):
    c = await cluster_factory().start(nodes(3, cpu="4"))
    await priority_classes(c)
    await c.client.create(podgroup("lo", 4, priorityClassName="low", disruptionMode="PodGroup"))
    for i in range(4):
        await c.client.create(pod(f"lo-{i}", cpu="2", group="lo", priority_class="low", nodeName=f"node-{i // 2}"))
    await fill(c, {"single-0": "node-2", "single-1": "node-2"}, cpu="2")
    assert await c.run_until(lambda: len(c.running()) == 6)
    await gang(c, "hi", 1)
    assert await c.run_until(lambda: "hi-0" in c.running(), within=120)
    assert preempted(c) == {"single-0", "single-1"}
    assert preempted(c, "PodGroup") == set()
    assert cond(c.podgroup("lo"), "DisruptionTarget") is None
    await c.stop()


# -- GangPreemptionPodGroups, scaled down ---------------------------------------------------------

@pytest.mark.parametrize("mode,victims", [
    ("Pod", 2),       # each pod is its own unit: the two pods on one node are enough
    ("PodGroup", 4),  # one unit: all four go, though two would have made room
])
async def test_disruption_mode_decides_the_unit(cluster_factory, mode, victims):
    c = await cluster_factory().start(nodes(2, cpu="4"))
    await priority_classes(c)
    graceful(c)
    await c.client.create(podgroup("lo", 4, priorityClassName="low", disruptionMode=mode))
    for i in range(4):
        await c.client.create(pod(f"lo-{i}", cpu="2", group="lo", priority_class="low",
                                  terminationGracePeriodSeconds=30))
    assert await c.run_until(lambda: len(c.running()) == 4)
    await gang(c, "hi", 1)
    assert await c.run_until(lambda: len(preempted(c)) == victims)
    dt = cond(c.podgroup("lo"), "DisruptionTarget")
    if mode == "PodGroup":
        assert (dt["status"], dt["reason"]) == ("True", "PreemptionByScheduler")
        assert dt["message"] == "default-scheduler: preempting to accommodate a higher priority pod group"
        assert cond(c.podgroup("lo"), "PodGroupScheduled")["status"] == "True"  # merged, not replaced
        ev = next(e for e in c.events("lo") if e["reason"] == "Preempted")
        assert ev["message"].startswith("Preempted by pod group default/hi: 4 pod(s) on nodes node-0, node-1")
        assert "preempting 1 pod group(s) of priority ≤ 0" in cond(c.podgroup("hi"), "PodGroupScheduled")["message"]
    else:
        assert dt is None
        assert preempted(c, "PodGroup") == set()
    assert await c.run_until(lambda: "hi-0" in c.running(), within=120)
    await c.settle(5)
    assert len(preempted(c)) == victims
    await c.stop()


async def test_pod_group_victim_priority_is_the_groups(cluster_factory):
    """The PodGroup's priority is authoritative: pods created with a low class inside a mid group
    are not victims for a preemptor between the two."""
    c = await cluster_factory().start(nodes(1, cpu="4"))
    await priority_classes(c)
    await c.client.create(pc("between", 100))
    await c.client.create(podgroup("g", 2, priorityClassName="mid", disruptionMode="PodGroup"))
    for i in range(2):
        await c.client.create(pod(f"g-{i}", cpu="2", group="g", priority_class="low"))
    assert await c.run_until(lambda: len(c.running()) == 2)
    await gang(c, "hi", 1, priority_class="between")
    await c.settle(10)
    assert preempted(c) == set()
    assert "preemption" not in cond(c.podgroup("hi"), "PodGroupScheduled")["message"]
    text = await explain_podgroup(c.client, "default", "hi")
    assert "preemption: no running pod or pod group has a priority lower than 100" in text
    await c.stop()


async def test_preemption_that_cannot_help_evicts_nothing(cluster_factory):
    c = await cluster_factory().start(nodes(2, cpu="4"))
    await priority_classes(c)
    await fill(c, {"lo-0": "node-0", "lo-1": "node-1"}, cpu="4")
    await gang(c, "hi", 3)  # three whole-node pods on two nodes
    await c.settle(10)
    assert preempted(c) == set()
    assert {"lo-0", "lo-1"} <= set(c.running())
    msg = cond(c.podgroup("hi"), "PodGroupScheduled")["message"]
    assert msg.endswith("; preemption: not helpful: the pod group does not fit even without all 2 pod(s) of "
                        "priority lower than 1000")
    assert not any(c.pod(f"hi-{i}")["status"].get("nominatedNodeName") for i in range(3))
    await c.stop()


async def test_preemption_policy_never_never_evicts(cluster_factory):
    c = await cluster_factory().start(nodes(1, cpu="4"))
    await priority_classes(c)
    await c.client.create(pc("high-nonpreempting", 1000, preemptionPolicy="Never"))
    await fill(c, {"lo-0": "node-0"}, cpu="4")
    await gang(c, "hi", 1, priority_class="high-nonpreempting")
    await c.settle(10)
    assert c.pod("hi-0")["spec"]["preemptionPolicy"] == "Never"
    assert preempted(c) == set()
    assert "lo-0" in c.running()
    msg = cond(c.podgroup("hi"), "PodGroupScheduled")["message"]
    assert msg.endswith("; preemption: not eligible due to preemptionPolicy=Never.")
    await c.stop()


@pytest.mark.parametrize("budget_on,expected", [
    (None, {"b-0", "b-1"}),     # importance alone: equal priority and start, b-* sort last
    ("b", {"a-0", "a-1"}),      # b-* are protected by a budget: the unprotected node goes instead
    ("all", {"b-0", "b-1"}),    # every victim violates a budget: preemption still happens
])
async def test_pod_disruption_budgets_respected_when_possible(cluster_factory, budget_on, expected):
    c = await cluster_factory().start(nodes(2, cpu="4"))
    await priority_classes(c)
    graceful(c)
    await fill(c, {"a-0": "node-0", "a-1": "node-0"}, cpu="2", terminationGracePeriodSeconds=30)
    for name in ("a-0", "a-1"):
        await c.client.patch("v1", "Pod", "default", name, {"metadata": {"labels": {"app": "a", "tier": "x"}}})
    await fill(c, {"b-0": "node-1", "b-1": "node-1"}, cpu="2", terminationGracePeriodSeconds=30)
    for name in ("b-0", "b-1"):
        await c.client.patch("v1", "Pod", "default", name, {"metadata": {"labels": {"app": "b", "tier": "x"}}})
    if budget_on is not None:
        selector = {"tier": "x"} if budget_on == "all" else {"app": budget_on}
        await c.client.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                               "metadata": {"name": "pdb", "namespace": "default"},
                               "spec": {"minAvailable": 4, "selector": {"matchLabels": selector}}})
        await c.settle(1)
    await gang(c, "hi", 1)
    assert await c.run_until(lambda: len(preempted(c)) == 2)
    assert preempted(c) == expected
    msg = cond(c.podgroup("hi"), "PodGroupScheduled")["message"]
    assert ("2 victim(s) violate a PodDisruptionBudget" in msg) == (budget_on == "all")
    assert await c.run_until(lambda: "hi-0" in c.running(), within=120)
    await c.stop()


# -- topology ----------------------------------------------------------------------------------------

async def test_topology_constrained_gang_does_not_preempt_by_default(cluster_factory):
    """Upstream 1.36 ("tas gang with constraint does not use workload preemption"): a gang with a
    topology constraint is refused workload-aware preemption and stays unschedulable."""
    c = await cluster_factory().start(nodes(2, cpu="4", **{RACK: "rack-0"}))
    await priority_classes(c)
    await fill(c, {"lo-0": "node-0", "lo-1": "node-1"}, cpu="4")
    await gang(c, "hi", 2, schedulingConstraints={"topology": [{"key": RACK}]})
    assert await c.run_until(lambda: (st := cond(c.podgroup("hi"), "PodGroupScheduled")) is not None
                             and st["status"] == "False")
    await c.settle(5)
    assert preempted(c) == set()
    assert {"lo-0", "lo-1"} <= set(c.running())
    assert not bound_of(c, "hi-")
    msg = cond(c.podgroup("hi"), "PodGroupScheduled")["message"]
    assert msg.endswith("; preemption: workload aware preemption is not supported for pod groups "
                        "with scheduling constraints")
    assert c.scheduler.stats["group_preemptions"] == 0
    await c.stop()


async def test_topology_constrained_gang_takes_the_rack_with_the_smallest_eviction_set(cluster_factory):
    """phalanx's extension, behind its own gate PhalanxTopologyAwarePreemption (off by default)."""
    c = await cluster_factory(gates={"PhalanxTopologyAwarePreemption": True}).start(
        nodes(6, cpu="4", **{RACK: lambda i: f"rack-{i // 2}"}))
    await priority_classes(c)
    await fill(c, {f"r0-{n}-{i}": f"node-{n}" for n in (0, 1) for i in range(4)})      # 8 victims
    await fill(c, {"r1-a": "node-2", "r1-b": "node-2"}, cpu="2")                       # 3 victims
    await fill(c, {"r1-c": "node-3"}, cpu="4")
    await fill(c, {"r2-a": "node-4", "r2-b": "node-5"}, cpu="4")                       # 2 victims
    await gang(c, "hi", 2, schedulingConstraints={"topology": [{"key": RACK}]})
    assert await c.run_until(lambda: len(bound_of(c, "hi-")) == 2, within=120)
    assert preempted(c) == {"r2-a", "r2-b"}
    assert set(bound_of(c, "hi-").values()) == {"node-4", "node-5"}
    diag = c.scheduler.last_diagnosis.get("group:default/hi")
    assert diag["result"] == "Scheduled"
    ev = [e for e in c.events("hi") if e["reason"] == "FailedScheduling"]
    assert any(f"preempting 2 pod(s) of priority ≤ 0 on nodes node-4, node-5 in {RACK}=rack-2 "
               f"(the smallest eviction set of 3 feasible domains)" in e["message"] for e in ev)
    await c.stop()


# -- explanations ----------------------------------------------------------------------------------

async def test_explain_podgroup_names_the_victims(cluster_factory):
    c = await cluster_factory().start(nodes(2, cpu="4"))
    await priority_classes(c)
    graceful(c)
    await c.client.create(podgroup("lo", 2, priorityClassName="low", disruptionMode="PodGroup"))
    for i in range(2):
        await c.client.create(pod(f"lo-{i}", cpu="2", group="lo", priority_class="low", nodeName="node-0",
                                  terminationGracePeriodSeconds=30))
    await fill(c, {"mid-0": "node-1"}, cpu="4", priority_class="mid")
    await gang(c, "hi", 1)
    assert await c.run_until(lambda: len(preempted(c)) == 2)
    text = await explain_podgroup(c.client, "default", "hi")
    assert "preemption: preempting 1 pod group(s) of priority ≤ 0 on nodes node-0" in text
    assert "victim PodGroup default/lo (priority 0, 2 pods) on node-0" in text
    assert "nominated: hi-0 -> node-0" in text
    await c.stop()


# -- single-pod preemption by a gang pod (1.35's pod-by-pod path) ------------------------------------

async def test_gang_pod_preempting_alone_never_takes_part_of_a_pod_group(cluster_factory):
    c = await cluster_factory(pod_group_cycles=False).start(nodes(1, cpu="4"))
    await priority_classes(c)
    await c.client.create(podgroup("lo", 2, priorityClassName="low", disruptionMode="PodGroup"))
    for i in range(2):
        await c.client.create(pod(f"lo-{i}", cpu="2", group="lo", priority_class="low"))
    assert await c.run_until(lambda: len(c.running()) == 2)
    await gang(c, "hi", 1, cpu="2")
    await c.settle(10)
    assert preempted(c) == set()
    assert {"lo-0", "lo-1"} <= set(c.running())
    # a lone pod is not held to the group (1.36 ignores PodGroups in single-pod preemption)
    await c.client.create(pod("solo", cpu="2", priority_class="high"))
    assert await c.run_until(lambda: len(preempted(c)) == 1)
    await c.stop()
