"""The group cycle's algorithm on one placement, as a typed `PlacementOutcome`: which members it
placed and where, which it could not place and why, whether the PodGroup is feasible there, and
that a revert leaves the cluster as it was. Built from the cycle's parts, no Scheduler."""

from __future__ import annotations

from typing import Optional, Sequence

import pytest

from phalanx.client.clock import VirtualClock
from phalanx.client.informer import InformerFactory
from phalanx.scheduler.cache import SchedulerCache
from phalanx.scheduler.framework import CycleState, FitError, Framework, PodInfo, QueuedPodInfo, Snapshot
from phalanx.scheduler.framework.config import KubeSchedulerProfile, set_profile_defaults
from phalanx.scheduler.framework.interface import Placement, PodGroupInfo
from phalanx.scheduler.framework.nominator import Nominator
from phalanx.scheduler.framework.registry import in_tree_registry
from phalanx.scheduler.framework.services import HandleServices
from phalanx.scheduler.placement_outcome import PlacementOutcome
from phalanx.scheduler.placementsearch import search_placements
from phalanx.scheduler.plugins import gangscheduling
from phalanx.scheduler.podgroups import PodGroupManager
from phalanx.scheduler.queue import SchedulingQueue
from phalanx.scheduler.schedule_one import CycleContext, PodCycle
from phalanx.scheduler.schedule_one_podgroup import PodGroupCycle, _condition_would_change

from .builders import make_node, make_pod
from .harness import only


def pod_group(min_count: Optional[int]) -> dict:
    policy = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default", "uid": "uid-g"}, "spec": {"schedulingPolicy": policy}}


def member(i: int, cpu: str, priority: int = 0) -> QueuedPodInfo:
    pod = make_pod(f"m{i}").uid(f"uid-m{i}").req(cpu=cpu, memory="100Mi").priority(priority).obj()
    pod["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    return QueuedPodInfo(PodInfo(pod))


class GroupCycleSetup:
    """A PodGroupCycle over `nodes` (2 cpu each) with NodeResourcesFit and GangScheduling."""

    def __init__(self, n_nodes: int, pg: dict, running: Sequence[dict] = (), preemption: bool = False):
        self.groups = PodGroupManager()
        self.groups.set_group(pg)
        reg = in_tree_registry()
        reg.register("GangScheduling", gangscheduling.new)
        prof = KubeSchedulerProfile()
        plugins = ("NodeResourcesFit", "GangScheduling") + (("DefaultPreemption",) if preemption else ())
        set_profile_defaults(prof, custom_plugins=only(*plugins, weights={"NodeResourcesFit": 1}))
        nodes = [make_node(f"n{i}").capacity(cpu="2", memory="4Gi", pods="10").obj() for i in range(n_nodes)]
        self.snapshot = Snapshot.from_nodes_and_pods(nodes, list(running))
        self.fw = Framework(prof, registry=reg, snapshot=self.snapshot, services=HandleServices(pod_groups=self.groups))
        clock = VirtualClock()
        pods = InformerFactory(None, clock=clock).informer("v1", "Pod")  # never started: nothing is listed
        ctx = CycleContext(None, clock, SchedulerCache(), self.snapshot, Nominator(),  # type: ignore[arg-type]
                           SchedulingQueue(self.fw, clock), pods, {"default-scheduler": self.fw}, self.fw)
        self.cycle = PodGroupCycle(ctx, PodCycle(ctx), self.groups, None)
        self.pg = pg

    def try_cluster(self, members: list[QueuedPodInfo], already: int = 0, preempt: bool = False) -> PlacementOutcome:
        info = PodGroupInfo("default", "g", self.pg, [q.pod_info for q in members])
        return self.cycle.try_placement(self.fw, Placement("cluster", list(self.snapshot.list())), members, info,
                                        already, preempt=preempt)

    def requested_cpu(self) -> dict[str, int]:
        return {ni.name: ni.requested.milli_cpu for ni in self.snapshot.list()}


@pytest.mark.parametrize("min_count, cpu, placed, failed, feasible, status_message", [
    pytest.param(3, "1", 3, 0, True, "", id="every member fits"),
    pytest.param(3, "2", 2, 1, False, "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining",
                 id="minCount out of reach"),
    pytest.param(2, "2", 2, 1, True, "", id="minCount reached, one member left over"),
    pytest.param(None, "2", 2, 1, True, "", id="basic policy: what fits"),
])
def test_try_placement_outcome(min_count, cpu, placed, failed, feasible, status_message):
    s = GroupCycleSetup(2, pod_group(min_count))
    members = [member(i, cpu) for i in range(3)]
    outcome = s.try_cluster(members)
    assert isinstance(outcome, PlacementOutcome)
    assert (len(outcome.assigned), len(outcome.failures), outcome.feasible) == (placed, failed, feasible)
    assert outcome.status_message == status_message
    for a in outcome.assigned:
        assert isinstance(a.state, CycleState) and a.queued in members
        assert outcome.assumed[a.pod_info.key].node_name == a.node  # assumed on its node in the view
    for qpi, fe in outcome.failures.values():
        assert isinstance(fe, FitError) and qpi in members
        assert str(fe) == "0/2 nodes are available: 2 Insufficient cpu."
    if failed:
        assert "NodeResourcesFit" in outcome.plugins  # the queue requeues on events that help it


def test_revert_gives_back_what_the_try_assumed():
    s = GroupCycleSetup(2, pod_group(3))
    before = s.requested_cpu()
    outcome = s.try_cluster([member(i, "1") for i in range(3)])
    assert sum(s.requested_cpu().values()) == 3000  # the try lives on the cluster's snapshot
    s.cycle.revert(s.fw, outcome)
    assert s.requested_cpu() == before


def test_a_placement_of_part_of_the_cluster_uses_only_its_nodes():
    s = GroupCycleSetup(3, pod_group(2))
    members = [member(i, "2") for i in range(2)]
    info = PodGroupInfo("default", "g", s.pg, [q.pod_info for q in members])
    outcome = s.cycle.try_placement(s.fw, Placement("rack=b", [s.snapshot.get("n1"), s.snapshot.get("n2")]),
                                    members, info, 0)
    assert outcome.feasible and sorted(a.node for a in outcome.assigned) == ["n1", "n2"]
    assert outcome.view is not s.snapshot and outcome.view.num_nodes() == 2
    s.cycle.revert(s.fw, outcome)
    assert s.requested_cpu() == {"n0": 0, "n1": 0, "n2": 0}


def test_late_members_of_a_scheduled_group_with_nobody_left_are_feasible():
    s = GroupCycleSetup(1, pod_group(2))
    outcome = s.try_cluster([], already=2)
    assert outcome.feasible and not outcome.assigned


def test_search_records_each_try_for_explanations():
    s = GroupCycleSetup(2, pod_group(3))
    members = [member(i, "2") for i in range(3)]
    info = PodGroupInfo("default", "g", s.pg, [q.pod_info for q in members])

    def attempt(p: Placement) -> PlacementOutcome:
        o = s.cycle.try_placement(s.fw, p, members, info, 0)
        s.cycle.revert(s.fw, o)
        return o
    outcomes, skipped = search_placements(s.fw, CycleState(), info, [Placement("cluster", list(s.snapshot.list()))],
                                          attempt)
    (o,) = outcomes
    assert skipped == 0 and o.tried and not o.feasible
    assert o.record(o.message) == {
        "placement": "cluster", "feasible": False, "podsPlaced": 2,
        "message": "2/3 pods fit (pod m2: 0/2 nodes are available: 2 Insufficient cpu; "
                   "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining)"}


@pytest.mark.parametrize("conditions, want, changes", [
    ([], ("False", "Unschedulable", "x"), True),
    ([{"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable", "message": "x"}],
     ("False", "Unschedulable", "x"), False),  # says so already
    ([{"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable", "message": "x"}],
     ("False", "Unschedulable", "y"), True),
    ([{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled", "message": ""}],
     ("False", "Unschedulable", "x"), False),  # the first success is kept
])
def test_pod_group_scheduled_condition_changes(conditions, want, changes):
    assert _condition_would_change({"status": {"conditions": conditions}}, *want) is changes


# -- pod-by-pod preemption in the cycle (WorkloadAwarePreemption off) --------------------------------

def runner(name: str, node: str, priority: int) -> dict:
    pod = make_pod(name).uid(f"uid-{name}").req(cpu="1", memory="100Mi").priority(priority).obj()
    pod["spec"]["nodeName"] = node
    return pod


@pytest.mark.parametrize("running_priority, preempt, feasible, victims", [
    pytest.param(0, True, True, ["low-0", "low-1"], id="members preempt the lower pods they need"),
    pytest.param(0, False, False, [], id="without PostFilter the gang does not fit"),
    pytest.param(100, True, False, [], id="pods of equal priority are no victims"),
])
def test_members_preempt_pod_by_pod(running_priority, preempt, feasible, victims):
    """Two 2-cpu nodes each run a 1-cpu pod; a gang of four 1-cpu pods (priority 100, minCount 4)
    fits only if both go. A member that fits nowhere is placed on its PostFilter's node with the
    victims out of the view, so the next member sees the room and no victim is chosen twice."""
    running = [runner(f"low-{i}", f"n{i}", running_priority) for i in range(2)]
    s = GroupCycleSetup(2, pod_group(4), running, preemption=True)
    before = s.requested_cpu()
    outcome = s.try_cluster([member(i, "1", priority=100) for i in range(4)], preempt=preempt)
    assert outcome.feasible is feasible
    assert sorted(v.name for v, _, _ in outcome.victims) == victims
    assert sorted(n for _, n, _ in outcome.victims) == sorted(f"n{i}" for i in range(len(victims)))
    assert len(outcome.preempting) == len(victims)  # the members that needed the room
    if feasible:
        assert sorted(a.node for a in outcome.assigned) == ["n0", "n0", "n1", "n1"]
        assert s.requested_cpu() == {"n0": 2000, "n1": 2000}  # victims out, members in
    s.cycle.revert(s.fw, outcome)
    assert s.requested_cpu() == before
    assert sorted(p.name for ni in s.snapshot.list() for p in ni.pods) == ["low-0", "low-1"]
