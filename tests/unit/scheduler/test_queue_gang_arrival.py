"""The scheduling queue as a gang's pods arrive: members wait (gated) until minCount pods exist,
then the group is queued once; arrivals before that do not re-run PreEnqueue for the waiting
members, and events no gating plugin registered for leave gated pods alone. A group whose
members past PreEnqueue cannot make minCount is not popped for a cycle that could only fail."""

from __future__ import annotations

import asyncio

import pytest

from phalanx.client.clock import VirtualClock
from phalanx.machinery.featuregates import FeatureGates
from phalanx.scheduler.framework import Framework
from phalanx.scheduler.framework.services import HandleServices
from phalanx.scheduler.framework.registry import in_tree_registry
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, EventResource
from phalanx.scheduler.plugins import gangscheduling, names
from phalanx.scheduler.podgroups import PodGroupManager
from phalanx.scheduler.queue import QueuedPodGroup, SchedulingQueue
from phalanx.scheduler.schedule_one_podgroup import members_fall_short

from .builders import make_pod

GATES = FeatureGates({"GenericWorkload": True, "GangScheduling": True})


def podgroup(name: str, min_count: int) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def member(name: str, group: str) -> dict:
    pod = make_pod(name).req(cpu="100m").obj()
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return pod


class Setup:
    def __init__(self) -> None:
        self.groups = PodGroupManager()
        reg = in_tree_registry()
        reg.register(names.GangScheduling, gangscheduling.new)
        self.fw = Framework(registry=reg, feature_gates=GATES, services=HandleServices(pod_groups=self.groups))
        self.queue = SchedulingQueue(self.fw, VirtualClock())
        self.pre_enqueue_calls = 0
        plugin = self.fw.plugin(names.GangScheduling)
        original = plugin.pre_enqueue

        def counted(pod):
            self.pre_enqueue_calls += 1
            return original(pod)
        plugin.pre_enqueue = counted

    def arrive(self, pod: dict) -> None:
        """What the scheduler's pod-add handler does."""
        self.groups.set_pod(pod)
        self.queue.add(pod)
        self.queue.on_event(ClusterEvent(EventResource.UnscheduledPod, ActionType.Add), None, pod)


def test_gang_members_wait_for_min_count_then_the_group_is_queued_once():
    s = Setup()
    s.groups.set_group(podgroup("g", 10))
    for i in range(9):
        s.arrive(member(f"p{i}", "g"))
    assert len(s.queue.gated) == 9
    # each arrival ran PreEnqueue for itself only: earlier members were not re-checked
    assert s.pre_enqueue_calls == 9
    s.arrive(member("p9", "g"))
    assert not s.queue.gated
    active = [o.entity for o in s.queue._active]
    assert len(active) == 1 and isinstance(active[0], QueuedPodGroup)
    assert len(active[0].members) == 10


def test_events_no_gating_plugin_registered_for_skip_the_gated_pods():
    s = Setup()
    s.groups.set_group(podgroup("g", 5))
    for i in range(3):
        s.arrive(member(f"p{i}", "g"))
    before = s.pre_enqueue_calls
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
    s.queue.on_event(ClusterEvent(EventResource.Node, ActionType.Add), None, node)
    assert s.pre_enqueue_calls == before
    assert len(s.queue.gated) == 3


def test_a_pod_group_created_after_its_pods_releases_them():
    s = Setup()
    for i in range(2):
        s.arrive(member(f"p{i}", "late"))
    assert len(s.queue.gated) == 2
    pg = podgroup("late", 2)
    s.groups.set_group(pg)
    s.queue.on_event(ClusterEvent(gangscheduling.POD_GROUP, ActionType.Add), None, pg)
    assert not s.queue.gated


# -- a gang whose minCount pods exist but not all passed PreEnqueue ---------------------------------

def gated(pod: dict) -> dict:
    pod["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    return pod


def ungated(pod: dict) -> dict:
    new = {**pod, "spec": {k: v for k, v in pod["spec"].items() if k != "schedulingGates"}}
    new["metadata"] = {**pod["metadata"], "resourceVersion": "2"}
    return new


async def pop_now(queue: SchedulingQueue) -> QueuedPodGroup | None:
    try:
        return await asyncio.wait_for(queue.pop(), 0.05)  # type: ignore[return-value]
    except asyncio.TimeoutError:
        return None


@pytest.mark.parametrize("held, pops", [
    pytest.param(0, True, id="all six past PreEnqueue: the group is popped"),
    pytest.param(3, False, id="three held by another PreEnqueue plugin: the group waits"),
    pytest.param(1, False, id="one held: five cannot make minCount 6"),
])
async def test_group_is_popped_only_when_its_members_can_make_min_count(held, pops):
    """The tutorial's JobSet: six pods exist, but a pod whose claim is not created yet is held by
    DynamicResources' PreEnqueue. A cycle with fewer than minCount members could only fail (and
    report it); the group waits, no attempt counted, until the held members join."""
    s = Setup()
    s.queue.group_ready = lambda g: members_fall_short(s.fw, g, s.groups.get(g.key), scheduled=0)
    s.groups.set_group(podgroup("g", 6))
    pods = [gated(member(f"p{i}", "g")) if i < held else member(f"p{i}", "g") for i in range(6)]
    for p in pods:
        s.arrive(p)
    popped = await pop_now(s.queue)
    assert (popped is not None) == pops
    if popped is not None:
        assert len(popped.members) == 6 and popped.attempts == 1
        return
    group = s.queue.groups["default/g"]
    assert group.attempts == 0 and "group:default/g" in s.queue.unschedulable  # parked, not backed off
    for p in pods[:held]:
        s.queue.update(p, ungated(p))
    popped = await pop_now(s.queue)
    assert popped is group and len(popped.members) == 6 and popped.attempts == 1


async def test_a_group_with_enough_scheduled_pods_is_popped_for_its_late_members():
    s = Setup()
    s.queue.group_ready = lambda g: members_fall_short(s.fw, g, s.groups.get(g.key), scheduled=6)
    s.groups.set_group(podgroup("g", 6))
    for i in range(6):
        s.groups.set_pod(member(f"bound{i}", "g"))
    s.arrive(member("late", "g"))
    popped = await pop_now(s.queue)
    assert popped is not None and [q.pod_info.name for q in popped.members.values()] == ["late"]
