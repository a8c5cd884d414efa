"""A PodGroup's members preempt one by one in its cycle when WorkloadAwarePreemption is off, as
upstream 1.36 does (test/integration/scheduler/podgroup/podgroup_test.go, TestPodGroupScheduling):

- "gang schedules with preemption" / "basic group schedules with preemption": a 4-cpu node holds a
  2-cpu low-priority pod; four 1-cpu high-priority members of a group all run after the low pod is
  preempted, and the group's condition ends Scheduled;
- "tas gang with constraint does not use pod by pod preemption": a gang with a topology constraint
  stays unschedulable and nothing is preempted.

The members' PostFilter (DefaultPreemption) chooses the victims; they are evicted only once the
whole group fits with them gone, every placed member is nominated to its node, and the group waits
in the queue ("pod group is waiting for preemption to complete") until the victims are gone.
"""

from __future__ import annotations

import pytest

from .conftest import nodes, pod, podgroup

ZONE = "topology.kubernetes.io/zone"
WAP_OFF = {"WorkloadAwarePreemption": False}


def pc(name: str, value: int) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def cond(obj: dict, t: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == t), None)


def preempted_events(c) -> dict[str, str]:
    evs = c.api.list(c.api.resource("", "v1", "events"), "default")["items"]
    return {e["involvedObject"]["name"]: e["message"] for e in evs if e["reason"] == "Preempted"}


async def setup(c) -> None:
    await c.client.create(pc("low", 10))
    await c.client.create(pc("mid", 50))
    await c.client.create(pc("high", 100))


@pytest.mark.parametrize("policy", ["gang", "basic"])
async def test_group_schedules_after_its_members_preempt(cluster_factory, policy):
    c = await cluster_factory(gates=WAP_OFF).start(nodes(1, cpu="4", **{ZONE: "zone1"}))
    await setup(c)
    await c.client.create(pod("low-priority-blocker", cpu="2", priority_class="low"))
    assert await c.run_until(lambda: "low-priority-blocker" in c.running())
    await c.client.create(podgroup("pg1", 3 if policy == "gang" else None, priorityClassName="high"))
    for i in range(1, 5):
        await c.client.create(pod(f"p{i}", cpu="1", group="pg1", priority_class="high"))
    assert await c.run_until(lambda: {"p1", "p2", "p3", "p4"} <= set(c.bound()), within=120)
    assert await c.run_until(lambda: "low-priority-blocker" not in {p["metadata"]["name"] for p in c.pods()},
                             within=60)
    st = cond(c.podgroup("pg1"), "PodGroupScheduled")
    assert (st["status"], st["reason"]) == ("True", "Scheduled")
    # the victim was preempted by a member, in the pod preemption's words
    [(victim, message)] = preempted_events(c).items()
    assert victim == "low-priority-blocker"
    uids = {c.pod(f"p{i}")["metadata"]["uid"] for i in range(1, 5)}
    assert any(message == f"Preempted by pod {u} on node node-0" for u in uids), message
    assert c.scheduler.stats["groups_waiting_on_preemption"] >= 1
    # while the victim went away the group said why it waited, in upstream's words
    waits = [e["message"] for e in c.events("pg1") if e["reason"] == "FailedScheduling"]
    assert "pod group is waiting for preemption to complete" in waits
    diag = c.scheduler.last_diagnosis.get("group:default/pg1")
    assert diag["result"] == "Scheduled"
    await c.stop()


async def test_nothing_is_evicted_when_the_gang_cannot_fit_even_with_preemption(cluster_factory):
    """minCount 3 of 2-cpu pods on one 4-cpu node: preemption can make room for two, never three,
    so the computed victims are dropped and the blocker keeps running."""
    c = await cluster_factory(gates=WAP_OFF).start(nodes(1, cpu="4"))
    await setup(c)
    await c.client.create(pod("blocker", cpu="2", priority_class="low"))
    assert await c.run_until(lambda: "blocker" in c.running())
    await c.client.create(podgroup("pg1", 3, priorityClassName="high"))
    for i in range(3):
        await c.client.create(pod(f"p{i}", cpu="2", group="pg1", priority_class="high"))
    assert await c.run_until(lambda: (st := cond(c.podgroup("pg1"), "PodGroupScheduled")) is not None
                             and st["status"] == "False")
    await c.settle(5)
    assert preempted_events(c) == {}
    assert "blocker" in c.running() and not {"p0", "p1", "p2"} & set(c.bound())
    assert all(not (c.pod(f"p{i}")["status"].get("nominatedNodeName")) for i in range(3))
    await c.stop()


async def test_topology_constrained_gang_does_not_preempt_pod_by_pod(cluster_factory):
    c = await cluster_factory(gates=WAP_OFF).start(nodes(1, cpu="4", **{ZONE: "zone1"}))
    await setup(c)
    for name, pc_name in (("very-low-p1", "low"), ("very-low-p2", "low"), ("low-p1", "low"), ("low-p2", "low")):
        await c.client.create(pod(name, cpu="1", priority_class=pc_name))
    assert await c.run_until(lambda: len(c.running()) == 4)
    await c.client.create(podgroup("mid-pg", 2, priorityClassName="mid",
                                   schedulingConstraints={"topology": [{"key": ZONE}]}))
    for i in (1, 2):
        await c.client.create(pod(f"mid-p{i}", cpu="1", group="mid-pg", priority_class="mid"))
    assert await c.run_until(lambda: all((st := cond(c.pod(f"mid-p{i}"), "PodScheduled")) is not None
                                         and st["reason"] == "Unschedulable" for i in (1, 2)))
    await c.settle(5)
    assert preempted_events(c) == {}
    assert len(c.running()) == 4
    await c.stop()
