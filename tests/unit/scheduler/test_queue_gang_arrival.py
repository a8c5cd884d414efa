"""The scheduling queue as a gang's pods arrive: members wait (gated) until minCount pods exist,
then the group is queued once; arrivals before that do not re-run PreEnqueue for the waiting
members, and events no gating plugin registered for leave gated pods alone."""

from __future__ import annotations

from phalanx.client.clock import VirtualClock
from phalanx.machinery.featuregates import FeatureGates
from phalanx.scheduler.framework import Framework
from phalanx.scheduler.framework.services import HandleServices
from phalanx.scheduler.framework.registry import in_tree_registry
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, EventResource
from phalanx.scheduler.plugins import gangscheduling, names
from phalanx.scheduler.podgroups import PodGroupManager
from phalanx.scheduler.queue import QueuedPodGroup, SchedulingQueue

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
