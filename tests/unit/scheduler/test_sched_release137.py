"""The scheduler on a Kubernetes 1.37 cluster (was-1.37.md section 2): v1beta1 PodGroups,
`PodGroupInitiallyScheduled`, and the 1.37 rules of gang scheduling and preemption."""

from __future__ import annotations

import pytest

from .cluster137 import Cluster137, condition, nodes, pod, podgroup, priority_class

INITIALLY = "PodGroupInitiallyScheduled"


async def test_gang_binds_together_and_is_initially_scheduled():
    c = await Cluster137().start(nodes(2))
    await c.client.create(podgroup("g", 3))
    for i in range(3):
        await c.client.create(pod(f"p{i}", group="g"))
    assert await c.run_until(lambda: len(c.bound()) == 3)
    cond = condition(c.podgroup("g"), INITIALLY)
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Scheduled")
    assert condition(c.podgroup("g"), "PodGroupScheduled") is None
    await c.stop()


async def _low_group_on_both_nodes(c: Cluster137, mode: str) -> None:
    for name, value in (("low", 10), ("high", 100)):
        await c.client.create(priority_class(name, value))
    await c.client.create(podgroup("lo", 2, disruptionMode={mode: {}}, priorityClassName="low"))
    for i in range(2):
        await c.client.create(pod(f"lo{i}", cpu="3", group="lo", priority_class="low"))
    assert await c.run_until(lambda: len(c.bound()) == 2 and len(set(c.bound().values())) == 2)


@pytest.mark.parametrize("mode, evicted", [("all", {"lo0", "lo1"}), ("single", None)])
async def test_single_pod_preemption_takes_a_whole_all_group(mode, evicted):
    """1.37: a lone pod's victim in a PodGroup of disruption mode `all` takes its whole group along
    (the PodGroup is marked DisruptionTarget); with `single` one pod goes."""
    c = await Cluster137().start(nodes(2))
    await _low_group_on_both_nodes(c, mode)
    await c.client.create(pod("hi", cpu="2", priority_class="high"))
    assert await c.run_until(lambda: "hi" in c.bound())
    preempted = {e["involvedObject"]["name"] for e in c.api.list(c.api.resource("", "v1", "events"), "default")["items"]
                 if e["reason"] == "Preempted" and e["involvedObject"]["kind"] == "Pod"}
    target = condition(c.podgroup("lo"), "DisruptionTarget")
    if evicted is None:
        assert len(preempted) == 1 and target is None
    else:
        assert preempted == evicted
        assert target is not None and (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")
        assert target["message"] == "default-scheduler: preempting to accommodate a higher priority pod"
        hi_uid = c.pod("hi")["metadata"]["uid"]
        msgs = {e["message"] for name in evicted for e in c.events(name) if e["reason"] == "Preempted"}
        assert all(m.startswith(f"Preempted by pod {hi_uid} on node ") for m in msgs), msgs
        assert await c.run_until(lambda: not {"lo0", "lo1"} & {p["metadata"]["name"] for p in c.pods()})
    await c.stop()


async def _gang_needing_preemption(c: Cluster137, group_class: str, pod_class: str) -> None:
    """A gang of priority 100 that fits only by preempting a low pod. Each side's preemptionPolicy
    comes from its PriorityClass (`high`: PreemptLowerPriority, `high-never`: Never), as the
    Priority admission fills it in for pods and PodGroups alike."""
    for name, value in (("low", 10), ("high", 100)):
        await c.client.create(priority_class(name, value))
    await c.client.create(priority_class("high-never", 100, preemptionPolicy="Never"))
    for i in range(2):
        await c.client.create(pod(f"blocker{i}", cpu="3", priority_class="low"))
    assert await c.run_until(lambda: len(c.bound()) == 2)
    await c.client.create(podgroup("g", 2, priorityClassName=group_class))
    for i in range(2):
        await c.client.create(pod(f"g{i}", cpu="2", group="g", priority_class=pod_class))


@pytest.mark.parametrize("group_class, pod_class, preempts", [
    ("high-never", "high", False),  # the PodGroup says Never: its pods cannot override it
    ("high", "high-never", True),   # the PodGroup is authoritative over its pods
])
async def test_pod_group_preemption_policy_is_authoritative(group_class, pod_class, preempts):
    c = await Cluster137().start(nodes(2))
    await _gang_needing_preemption(c, group_class, pod_class)
    if preempts:
        assert await c.run_until(lambda: {"g0", "g1"} <= set(c.bound()))
        assert len({"blocker0", "blocker1"} & {p["metadata"]["name"] for p in c.pods()}) == 1  # one made room
    else:
        assert await c.run_until(lambda: (st := condition(c.podgroup("g"), INITIALLY)) is not None
                                 and st["status"] == "False")
        await c.settle(5)
        assert set(c.bound()) == {"blocker0", "blocker1"}
        assert "preemption: not eligible due to preemptionPolicy=Never." in condition(c.podgroup("g"), INITIALLY)["message"]
    await c.stop()


async def test_without_the_gate_the_pods_preemption_policy_decides():
    c = await Cluster137({"PodGroupPreemptionPolicy": False}).start(nodes(2))
    await _gang_needing_preemption(c, "high", "high-never")  # no preemptionPolicy on the PodGroup
    assert await c.run_until(lambda: (st := condition(c.podgroup("g"), INITIALLY)) is not None
                             and st["status"] == "False")
    await c.settle(5)
    assert set(c.bound()) == {"blocker0", "blocker1"}
    await c.stop()


@pytest.mark.parametrize("case, message", [
    ("priority", "all pods in a single pod group should match the priority of the pod group, got: 10 and 100"),
    ("schedulerName", 'all pods in a single pod group should have the same .spec.schedulerName set, '
                      'got: "default-scheduler" and "other-scheduler"'),
])
async def test_members_that_disagree_fail_the_group_with_scheduler_error(case, message):
    c = await Cluster137().start(nodes(2))
    for name, value in (("low", 10), ("high", 100)):
        await c.client.create(priority_class(name, value))
    await c.client.create(podgroup("g", 2, priorityClassName="high"))
    await c.client.create(pod("g0", group="g", priority_class="high"))
    if case == "priority":
        await c.client.create(pod("g1", group="g", priority_class="low"))
    else:
        await c.client.create(pod("g1", group="g", priority_class="high"))
        await c.client.create(pod("g2", group="g", priority_class="high", schedulerName="other-scheduler"))
    assert await c.run_until(lambda: (st := condition(c.podgroup("g"), INITIALLY)) is not None)
    await c.settle(5)
    st = condition(c.podgroup("g"), INITIALLY)
    assert (st["status"], st["reason"], st["message"]) == ("False", "SchedulerError", message)
    assert c.bound() == {}
    ps = condition(c.pod("g0"), "PodScheduled")
    assert (ps["status"], ps["reason"], ps["message"]) == ("False", "SchedulerError", message)
    assert any(e["reason"] == "FailedScheduling" and e["message"] == message for e in c.events("g"))
    await c.stop()


async def test_initially_scheduled_is_terminal():
    """True once, then never False nor rewritten: a late member that fits nowhere leaves it as it
    was, and so does one placed later (lastTransitionTime unchanged)."""
    c = await Cluster137().start(nodes(1))
    await c.client.create(podgroup("g", 2))
    for i in range(2):
        await c.client.create(pod(f"g{i}", cpu="2", group="g"))
    assert await c.run_until(lambda: len(c.bound()) == 2)
    first = condition(c.podgroup("g"), INITIALLY)
    assert first is not None and first["status"] == "True"
    await c.settle(30)
    await c.client.create(pod("late", cpu="2", group="g"))  # the node is full: it waits
    assert await c.run_until(lambda: (ps := condition(c.pod("late"), "PodScheduled")) is not None
                             and ps["status"] == "False")
    await c.settle(5)
    assert condition(c.podgroup("g"), INITIALLY) == first
    await c.client.delete("v1", "Pod", "default", "g0")
    assert await c.run_until(lambda: "late" in c.bound())
    await c.settle(5)
    assert condition(c.podgroup("g"), INITIALLY) == first
    await c.stop()


async def test_failed_group_cycle_backs_off_and_retries_when_room_appears():
    """No gang timeout: an unschedulable gang waits (PodGroupInitiallyScheduled=False, Unschedulable)
    as long as it takes, and binds once a pod in its way is gone."""
    c = await Cluster137().start(nodes(2))
    await c.client.create(pod("blocker", cpu="3"))
    assert await c.run_until(lambda: "blocker" in c.bound())
    await c.client.create(podgroup("g", 2))
    for i in range(2):
        await c.client.create(pod(f"g{i}", cpu="3", group="g"))
    assert await c.run_until(lambda: (st := condition(c.podgroup("g"), INITIALLY)) is not None)
    st = condition(c.podgroup("g"), INITIALLY)
    assert (st["status"], st["reason"]) == ("False", "Unschedulable")
    await c.settle(600)  # 1.36's Permit timeout was 5 minutes; nothing of the kind here
    assert set(c.bound()) == {"blocker"}
    assert all(condition(c.pod(f"g{i}"), "PodScheduled")["reason"] == "Unschedulable" for i in range(2))
    await c.client.delete("v1", "Pod", "default", "blocker")
    assert await c.run_until(lambda: {"g0", "g1"} <= set(c.bound()))
    assert condition(c.podgroup("g"), INITIALLY)["status"] == "True"
    await c.stop()


def test_gang_scheduling_has_no_permit_barrier_in_1_37():
    """A gang member reaching Permit alone is not held (1.36 held it up to 5 minutes)."""
    from types import SimpleNamespace

    from phalanx.machinery.featuregates import FeatureGates
    from phalanx.scheduler.framework import CycleState, PodInfo
    from phalanx.scheduler.plugins.gangscheduling import GangScheduling
    from phalanx.scheduler.podgroups import PodGroupManager

    groups = PodGroupManager()
    groups.set_group(podgroup("g", 3))
    member = PodInfo(pod("g0", group="g"))
    held = {}
    for release in ("1.36", "1.37"):
        plugin = GangScheduling(groups, lambda key: 1, SimpleNamespace(feature_gates=FeatureGates(release=release)))
        st, timeout = plugin.permit(CycleState(), member, "node-0")
        held[release] = (st.code.name if st is not None else None, timeout)
    assert held == {"1.36": ("Wait", 300.0), "1.37": (None, 0)}


async def test_workload_aware_preemption_marks_the_victim_group():
    """GenericWorkload (1.37's WAP): a high gang evicts a low `all` gang as one; the victim PodGroup
    keeps its PodGroupInitiallyScheduled and gains DisruptionTarget (PreemptionByScheduler)."""
    c = await Cluster137().start(nodes(2))
    await _low_group_on_both_nodes(c, "all")
    await c.client.create(podgroup("hi", 2, priorityClassName="high"))
    for i in range(2):
        await c.client.create(pod(f"hi{i}", cpu="3", group="hi", priority_class="high"))
    assert await c.run_until(lambda: {"hi0", "hi1"} <= set(c.bound()))
    lo = c.podgroup("lo")
    target = condition(lo, "DisruptionTarget")
    assert target is not None and (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")
    assert condition(lo, INITIALLY)["status"] == "True"
    uid = c.podgroup("hi")["metadata"]["uid"]
    assert {e["message"] for i in range(2) for e in c.events(f"lo{i}") if e["reason"] == "Preempted"} == \
        {f"Preempted by podgroup {uid} on node cluster"}
    await c.stop()
