"""GangScheduling: PreEnqueue holds a gang until its PodGroup and minCount pods exist,
PlacementFeasible tells the group cycle whether minCount can still be made, Permit holds
single-pod cycles until minCount pods are assumed or bound; upstream's messages throughout."""

from __future__ import annotations

from typing import Optional

import pytest

from phalanx.scheduler.framework import Code, CycleState, PodInfo
from phalanx.scheduler.framework.interface import PlacementProgress, PodGroupInfo
from phalanx.scheduler.plugins.gangscheduling import DEFAULT_PERMIT_TIMEOUT, GangScheduling
from phalanx.scheduler.podgroups import PodGroupManager

from .builders import make_pod

WAITING_FOR_GROUP = 'waiting for pods\'s pod group "g" to appear in scheduling queue'
WAITING_FOR_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"


def pod_group(min_count: Optional[int]) -> dict:
    policy = {"gang": {"minCount": min_count}} if min_count else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default", "uid": "uid-g"}, "spec": {"schedulingPolicy": policy}}


def member(name: str, scheduler: str = "") -> dict:
    pod = make_pod(name).uid(f"uid-{name}").obj()
    pod["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    if scheduler:
        pod["spec"]["schedulerName"] = scheduler
    return pod


def gang(group: Optional[dict], pods: list[dict], scheduled: int = 0) -> GangScheduling:
    manager = PodGroupManager()
    if group is not None:
        manager.set_group(group)
    for p in pods:
        manager.set_pod(p)
    return GangScheduling(manager, lambda key: scheduled)


@pytest.mark.parametrize("group, pods, want", [
    pytest.param(None, [member("a")], (Code.UnschedulableAndUnresolvable, WAITING_FOR_GROUP), id="no PodGroup yet"),
    pytest.param(pod_group(3), [member("a"), member("b")], (Code.UnschedulableAndUnresolvable, WAITING_FOR_MIN_COUNT),
                 id="below minCount"),
    pytest.param(pod_group(2), [member("a"), member("b")], None, id="minCount pods exist"),
    pytest.param(pod_group(None), [member("a")], None, id="basic policy"),
    pytest.param(pod_group(2), [member("a"), member("b", scheduler="other")],
                 (Code.UnschedulableAndUnresolvable, 'pods of pod group "g" use different schedulers: '
                                                     'default-scheduler, other'), id="mixed schedulers"),
])
def test_pre_enqueue(group, pods, want):
    st = gang(group, pods).pre_enqueue(PodInfo(pods[0]))
    if want is None:
        assert st is None
    else:
        assert (st.code, st.message(), st.plugin) == (*want, "GangScheduling")


def test_pods_outside_a_group_pass():
    assert gang(None, []).pre_enqueue(PodInfo(make_pod("lone").obj())) is None


@pytest.mark.parametrize("scheduled, remaining, want", [
    (1, 1, (Code.Unschedulable, "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining")),
    (2, 1, (Code.Wait, "minCount (3) is not yet satisfied: 2 scheduled, 1 remaining")),
    (3, 0, None),
])
def test_placement_feasible(scheduled, remaining, want):
    pg = pod_group(3)
    st = gang(pg, []).placement_feasible(CycleState(), PodGroupInfo("default", "g", pg, []),
                                         PlacementProgress(scheduled=scheduled, remaining=remaining))
    assert (None if st is None else (st.code, st.message())) == want


@pytest.mark.parametrize("scheduled, want_wait", [(1, True), (2, False)])
def test_permit_waits_until_min_count_pods_are_scheduled(scheduled, want_wait):
    pods = [member("a"), member("b")]
    st, timeout = gang(pod_group(2), pods, scheduled=scheduled).permit(CycleState(), PodInfo(pods[0]), "n1")
    if want_wait:
        assert st.code == Code.Wait and st.message() == "waiting for minCount pods from a gang to be scheduled"
        assert timeout == DEFAULT_PERMIT_TIMEOUT
    else:
        assert st is None


def test_built_from_the_handle_it_counts_the_schedulers_scheduled_pods():
    from phalanx.scheduler.framework import Framework
    from phalanx.scheduler.framework.registry import in_tree_registry
    from phalanx.scheduler.framework.services import HandleServices
    from phalanx.scheduler.plugins import gangscheduling

    manager = PodGroupManager(scheduled_count=lambda key: 2 if key == "default/g" else 0)
    manager.set_group(pod_group(2))
    reg = in_tree_registry()
    reg.register("GangScheduling", gangscheduling.new)
    fw = Framework(registry=reg, services=HandleServices(pod_groups=manager))
    plugin = fw.plugin("GangScheduling")
    assert plugin.permit(CycleState(), PodInfo(member("a")), "n1") == (None, 0)  # minCount already scheduled
