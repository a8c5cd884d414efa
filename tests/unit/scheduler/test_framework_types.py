"""Status, CycleState, PodInfo requests, NodeInfo, host ports, Snapshot and cluster events."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    NodeInfo,
    NotFoundError,
    PodInfo,
    Snapshot,
    Status,
    as_status,
)
from phalanx.scheduler.framework.events import match_cluster_events, node_scheduling_properties_change, pod_scheduling_properties_change
from phalanx.scheduler.framework.hostports import HostPortInfo

from .builders import make_node, make_pod

GI = 1024**3
MI = 1024**2


# -- Status -----------------------------------------------------------------------------------------

def test_codes_have_upstream_order_and_names():
    assert [str(c) for c in Code] == ["Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable",
                                      "Wait", "Skip", "Pending"]
    assert [int(c) for c in Code] == list(range(7))


@pytest.mark.parametrize("status, rejected, message", [
    (Status.new(Code.Unschedulable, "Insufficient cpu", "Too many pods"), True, "Insufficient cpu, Too many pods"),
    (Status.new(Code.UnschedulableAndUnresolvable, "x"), True, "x"),
    (Status.new(Code.Pending, "waiting"), True, "waiting"),
    (Status.new(Code.Wait, "w"), False, "w"),
    (Status.new(Code.Skip), False, ""),
    (as_status(RuntimeError("boom")), False, "boom"),
])
def test_status_rejected_and_message(status, rejected, message):
    assert status.is_rejected() is rejected
    assert status.message() == message


def test_status_as_error_is_none_for_success_wait_skip():
    for code in (Code.Success, Code.Wait, Code.Skip):
        assert Status.new(code).as_error() is None
    assert str(Status.new(Code.Unschedulable, "a", "b").as_error()) == "a, b"


# -- CycleState -------------------------------------------------------------------------------------

class _Counter:
    def __init__(self, n: int):
        self.n = n

    def clone(self) -> "_Counter":
        return _Counter(self.n)


def test_cycle_state_read_write_and_clone():
    state = CycleState()
    with pytest.raises(NotFoundError):
        state.read("missing")
    shared = ("immutable",)
    state.write("counter", _Counter(1))
    state.write("shared", shared)
    state.set_skip_filter_plugins({"NodePorts"})
    copy = state.clone()
    copy.read("counter").n = 5
    assert state.read("counter").n == 1, "values with clone() are cloned"
    assert copy.read("shared") is shared, "other values are shared"
    assert copy.skip_filter_plugins == frozenset({"NodePorts"})


# -- PodInfo: effective requests ---------------------------------------------------------------------

@pytest.mark.parametrize("pod, cpu, memory", [
    pytest.param(make_pod().req(cpu="2", memory="1G").req(cpu="1", memory="1G")
                 .init_req(cpu="2", memory="1G").init_req(cpu="2", memory="3G").obj(), 3000, 3 * 10**9,
                 id="init containers: max(sum(containers), each init)"),
    pytest.param(make_pod().req(cpu="1").sidecar_req(cpu="1").init_req(cpu="2").obj(), 3000, 0,
                 id="sidecar started before an init container adds to it"),
    pytest.param(make_pod().req(cpu="1").init_req(cpu="2").sidecar_req(cpu="1").obj(), 2000, 0,
                 id="sidecar after the init container only adds to the containers"),
    pytest.param(make_pod().req(cpu="1").overhead(cpu="250m", memory="10Mi").obj(), 1250, 10 * MI,
                 id="pod overhead is added"),
    pytest.param(make_pod().req(cpu="1", memory="1Gi").req(cpu="1").pod_level_req(cpu="500m").obj(), 500, GI,
                 id="pod-level requests replace the container sum for cpu/memory"),
    pytest.param(make_pod().req(cpu="0.1").req(cpu="100m").obj(), 200, 0, id="quantities summed exactly"),
])
def test_pod_requests(pod, cpu, memory):
    r = PodInfo(pod).requests
    assert (r.milli_cpu, r.memory) == (cpu, memory)


@pytest.mark.parametrize("pod, non0_cpu, non0_mem", [
    pytest.param(make_pod().container().obj(), 100, 200 * MI, id="no requests: 100m / 200Mi"),
    pytest.param(make_pod().req(cpu="1").container().obj(), 1100, 400 * MI, id="per container"),
    pytest.param(make_pod().req(cpu="0", memory="0").obj(), 0, 0, id="explicit zero is kept"),
    pytest.param(make_pod().req(cpu="1", memory="1Gi").obj(), 1000, GI, id="set requests unchanged"),
])
def test_non_zero_requests(pod, non0_cpu, non0_mem):
    pi = PodInfo(pod)
    assert (pi.non0_cpu, pi.non0_mem) == (non0_cpu, non0_mem)


def test_resized_container_counts_with_its_largest_request():
    pod = make_pod().req(cpu="1").obj()
    pod["status"]["containerStatuses"] = [{"name": "c0", "allocatedResources": {"cpu": "2"},
                                           "resources": {"requests": {"cpu": "1500m"}}}]
    assert PodInfo(pod).requests.milli_cpu == 2000


def test_scalar_and_extended_resources():
    pi = PodInfo(make_pod().req({"example.com/gpu": "2", "hugepages-2Mi": "4Mi"}, cpu="1").obj())
    assert pi.requests.scalar_resources == {"example.com/gpu": 2, "hugepages-2Mi": 4 * MI}


def test_affinity_parse_error_is_recorded():
    pod = make_pod().obj()
    pod["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}, "topologyKey": "zone"}]}}
    assert PodInfo(pod).parse_error == 'requiredAffinityTerms: "Bogus" is not a valid label selector operator'


# -- NodeInfo ----------------------------------------------------------------------------------------

def test_node_info_aggregates_pods_and_tracks_generation():
    ni = NodeInfo(make_node("n").capacity(cpu="4", memory="8Gi", pods=3).obj())
    assert (ni.allocatable.milli_cpu, ni.allocatable.memory, ni.allocatable.allowed_pod_number) == (4000, 8 * GI, 3)
    g0 = ni.generation
    a = PodInfo(make_pod("a").req(cpu="1").host_port(80).node("n").obj())
    b = PodInfo(make_pod("b").container().pod_anti_affinity("zone", {"x": "y"}).node("n").obj())
    ni.add_pod_info(a)
    ni.add_pod_info(b)
    assert ni.generation > g0
    assert ni.requested.milli_cpu == 1000 and ni.non_zero_requested.milli_cpu == 1100
    assert ni.non_zero_requested.memory == 400 * MI
    assert [p.name for p in ni.pods_with_affinity] == ["b"]
    assert [p.name for p in ni.pods_with_required_anti_affinity] == ["b"]
    assert ni.used_ports.check_conflict("", "TCP", 80)
    assert ni.free == (3000, 8 * GI, 1)
    g1 = ni.generation
    ni.remove_pod(a)
    assert ni.generation > g1
    assert ni.requested.milli_cpu == 0 and not ni.used_ports.check_conflict("", "TCP", 80)
    with pytest.raises(KeyError):
        ni.remove_pod(a)


def test_node_info_snapshot_is_independent():
    ni = NodeInfo(make_node("n").capacity(cpu="4").obj(), [make_pod("a").req(cpu="1").node("n").obj()])
    copy = ni.snapshot()
    assert copy.generation == ni.generation
    copy.remove_pod(copy.pods[0])
    assert len(ni.pods) == 1 and ni.requested.milli_cpu == 1000


@pytest.mark.parametrize("used, want, conflict", [
    (("0.0.0.0", "TCP", 80), ("127.0.0.1", "TCP", 80), True),
    (("127.0.0.1", "TCP", 80), ("0.0.0.0", "TCP", 80), True),
    (("127.0.0.1", "TCP", 80), ("127.0.0.2", "TCP", 80), False),
    (("", "TCP", 80), ("", "UDP", 80), False),
    (("", "", 8080), ("10.0.0.1", "TCP", 8080), True),
    (("", "TCP", 80), ("", "TCP", 81), False),
])
def test_host_port_conflicts(used, want, conflict):
    h = HostPortInfo()
    h.add(*used)
    assert h.check_conflict(*want) is conflict


# -- Snapshot -----------------------------------------------------------------------------------------

def test_snapshot_from_nodes_and_pods_and_incremental_updates():
    nodes = [make_node(f"n{i}").capacity(cpu="4").obj() for i in range(3)]
    pods = [make_pod("a").req(cpu="1").node("n1").obj(),
            make_pod("b").container().pod_affinity("zone", {"x": "y"}).node("n2").obj(),
            make_pod("stray").node("gone").obj()]
    snap = Snapshot.from_nodes_and_pods(nodes, pods)
    assert [ni.name for ni in snap.list()] == ["n0", "n1", "n2"]
    assert snap.get("n1").requested.milli_cpu == 1000
    assert [ni.name for ni in snap.have_pods_with_affinity_list()] == ["n2"]
    assert snap.have_pods_with_required_anti_affinity_list() == []

    changed = snap.get("n0").snapshot()
    changed.add_pod_info(PodInfo(make_pod("c").container().pod_anti_affinity("zone", {"x": "y"}).node("n0").obj()))
    snap.update_node_info(changed)
    assert snap.get("n0") is changed and [ni.name for ni in snap.list()] == ["n0", "n1", "n2"]
    assert [ni.name for ni in snap.have_pods_with_required_anti_affinity_list()] == ["n0"]
    assert snap.generation >= changed.generation

    snap.remove_node("n0")
    assert [ni.name for ni in snap.list()] == ["n1", "n2"] and snap.have_pods_with_required_anti_affinity_list() == []
    snap.update_node_info(NodeInfo(make_node("n3").obj()))
    assert [ni.name for ni in snap.list()] == ["n1", "n2", "n3"]
    with pytest.raises(KeyError, match="nodeinfo not found for node name 'n0'"):
        snap.get("n0")


def test_snapshot_assume_and_forget_pod():
    snap = Snapshot.from_nodes_and_pods([make_node("n").capacity(cpu="4").obj()])
    pi = PodInfo(make_pod("p").req(cpu="1").container().pod_affinity("zone", {"a": "b"}).obj()).assumed_on("n")
    snap.add_pod(pi, "n")
    assert snap.get("n").requested.milli_cpu == 1000 and pi.node_name == "n"
    assert [ni.name for ni in snap.have_pods_with_affinity_list()] == ["n"]
    snap.remove_pod(pi, "n")
    assert snap.get("n").requested.milli_cpu == 0 and snap.have_pods_with_affinity_list() == []


# -- cluster events ---------------------------------------------------------------------------------

@pytest.mark.parametrize("registered, incoming, match", [
    (ClusterEvent(EventResource.Node, ActionType.Update), ClusterEvent(EventResource.Node, ActionType.UpdateNodeLabel), True),
    (ClusterEvent(EventResource.Node, ActionType.UpdateNodeLabel), ClusterEvent(EventResource.Node, ActionType.Update), False),
    (ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeTaint),
     ClusterEvent(EventResource.Node, ActionType.UpdateNodeTaint), True),
    (ClusterEvent(EventResource.Node, ActionType.Add), ClusterEvent(EventResource.Pod, ActionType.Add), False),
    (ClusterEvent(EventResource.Pod, ActionType.Add), ClusterEvent(EventResource.AssignedPod, ActionType.Add), True),
    (ClusterEvent(EventResource.WildCard, ActionType.All), ClusterEvent(EventResource.PodGroup, ActionType.Add), True),
])
def test_match_cluster_events(registered, incoming, match):
    assert match_cluster_events(registered, incoming) is match


def test_cluster_event_label():
    assert ClusterEvent(EventResource.Node, ActionType.Add).label() == "NodeAdd"
    assert ClusterEvent(EventResource.Pod, ActionType.UpdatePodLabel).label() == "PodUpdatePodLabel"
    assert ClusterEvent(EventResource.Node, ActionType.Update).label() == "NodeUpdate"


def test_scheduling_property_changes():
    old = make_node("n").capacity(cpu="4").obj()
    new = make_node("n").capacity(cpu="8").label("zone", "a").taint("k").obj()
    kinds = {e.action_type for e in node_scheduling_properties_change(new, old)}
    assert kinds == {ActionType.UpdateNodeAllocatable, ActionType.UpdateNodeLabel, ActionType.UpdateNodeTaint}
    p_old = make_pod().req(cpu="2").scheduling_gates("g").obj()
    p_new = make_pod().req(cpu="1").label("a", "b").toleration(key="k").obj()
    kinds = {e.action_type for e in pod_scheduling_properties_change(p_new, p_old)}
    assert kinds == {ActionType.UpdatePodLabel, ActionType.UpdatePodSchedulingGatesEliminated,
                     ActionType.UpdatePodToleration, ActionType.UpdatePodScaleDown}
