"""Topology-aware workload scheduling: TopologyPlacementGenerator (required, late members,
preferred levels), PodGroupPodsCount, NodeResourcesFit's placement score, and the placement
search (ranks, capacity pruning, score bounds) against an exhaustive search."""

from __future__ import annotations

import random
from typing import Optional

import pytest

from phalanx.machinery.featuregates import FeatureGates
from phalanx.scheduler.framework import CycleState, FitError, Framework, PodInfo, Registry, Snapshot, Status
from phalanx.scheduler.framework.config import KubeSchedulerProfile, PluginRef, PluginSet, Plugins, set_profile_defaults
from phalanx.scheduler.framework.interface import (Placement, PlacementFeasiblePlugin, PlacementProgress,
                                                   PlacementScore, PodGroupAssignments, PodGroupInfo)
from phalanx.scheduler.framework.registry import in_tree_registry
from phalanx.scheduler.framework.status import Code
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from phalanx.scheduler.placement_outcome import Assignment, PlacementOutcome
from phalanx.scheduler.placementsearch import describe, search_placements, summarize
from phalanx.scheduler.plugins import podgrouppodscount, topologyaware
from phalanx.scheduler.podgroups import policy_of

from .builders import make_node, make_pod

RACK = "topology.kubernetes.io/rack"
BLOCK = "example.com/block"
NVL = "example.com/nvlink"


def rack_nodes(n: int, per_rack: int, cpu: str = "4", labels: Optional[dict] = None) -> list[dict]:
    """Nodes n0..n{n-1} in racks of `per_rack`; `labels` maps more label keys to f(i)."""
    out = []
    for i in range(n):
        b = make_node(f"n{i}").capacity(cpu=cpu, memory="32Gi").label(RACK, f"rack-{i // per_rack}")
        for k, fn in (labels or {}).items():
            b.label(k, fn(i))
        out.append(b.obj())
    return out


def pod_group(name: str = "g", min_count: Optional[int] = None, key: Optional[str] = RACK,
              preferred: Optional[str] = None) -> dict:
    spec: dict = {"schedulingPolicy": {"gang": {"minCount": min_count}} if min_count else {"basic": {}}}
    if key:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    md: dict = {"name": name, "namespace": "default"}
    if preferred:
        md["annotations"] = {topologyaware.PREFERRED_TOPOLOGY_ANNOTATION: preferred}
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": md, "spec": spec}


class Handle:
    """The bits of the framework the generator asks for: feature gates."""

    def __init__(self, gates: Optional[dict] = None):
        self.gates = FeatureGates(gates or {})

    def feature_enabled(self, gate: str) -> bool:
        return self.gates.enabled(gate)


def generate(nodes: list[dict], pg: dict, *, scheduled=(), gates: Optional[dict] = None, indexed: bool = False):
    snap = Snapshot.from_nodes_and_pods(nodes)
    index = None
    if indexed:
        index = topologyaware.NodeTopologyIndex()
        for n in nodes:
            index.set_node(n)
    sched = [(PodInfo(make_pod(p).obj()), node) for p, node in scheduled]
    pl = topologyaware.TopologyPlacementGenerator(Handle(gates), index, lambda g: sched, snap)
    info = PodGroupInfo("default", pg["metadata"]["name"], pg, [])
    return pl.generate_placements(CycleState(), info, Placement("cluster", list(snap.list())))


def shape(placements) -> list[tuple[str, int, list[str]]]:
    return [(p.name, getattr(p, "rank", 0), sorted(p.node_names(), key=topologyaware.natural_key)) for p in placements]


# -- TopologyPlacementGenerator ------------------------------------------------------------------

@pytest.mark.parametrize("indexed", [False, True])
def test_one_placement_per_rack_in_natural_order_and_unlabelled_nodes_never_used(indexed):
    nodes = rack_nodes(24, 2) + [make_node("plain").capacity(cpu="64").obj()]
    placements, st = generate(nodes, pod_group(), indexed=indexed)
    assert st is None
    got = shape(placements)
    assert [name for name, _, _ in got][:3] == [f"{RACK}=rack-0", f"{RACK}=rack-1", f"{RACK}=rack-2"]
    assert got[10] == (f"{RACK}=rack-10", 0, ["n20", "n21"])
    assert len(got) == 12
    assert all("plain" not in names for _, _, names in got)


def test_no_constraint_gives_the_parent_unchanged():
    placements, st = generate(rack_nodes(4, 2), pod_group(key=None))
    assert st is None and [p.name for p in placements] == ["cluster"] and len(placements[0].nodes) == 4


def test_tas_gate_off_gives_the_parent_even_with_an_annotation():
    placements, _ = generate(rack_nodes(4, 2), pod_group(preferred=RACK, key=None),
                             gates={"TopologyAwareWorkloadScheduling": False})
    assert [p.name for p in placements] == ["cluster"]


def test_no_node_carries_the_label():
    placements, st = generate([make_node("a").capacity(cpu="4").obj()], pod_group())
    assert placements == []
    assert (st.code, st.message()) == (Code.Unschedulable, f"no nodes found with topology label '{RACK}'")


@pytest.mark.parametrize("indexed", [False, True])
def test_late_members_are_held_to_the_domain_of_the_scheduled_pods(indexed):
    placements, st = generate(rack_nodes(6, 2), pod_group(), scheduled=[("a", "n3"), ("b", "n2")], indexed=indexed)
    assert st is None and shape(placements) == [(f"{RACK}=rack-1", 0, ["n2", "n3"])]


@pytest.mark.parametrize("scheduled, message", [
    ([("a", "n0"), ("b", "n3")],
     "cannot determine domain for already scheduled pods: more than 1 domain found for pod group: rack-0, rack-1"),
    ([("a", "plain")],
     "cannot determine domain for already scheduled pods: no topology domain found for pod default/a"),
    ([("a", "gone")], 'cannot determine domain for already scheduled pods: getting node for pod default/a: '
                      'nodeinfo not found for node name "gone"'),
])
def test_scheduled_pods_without_one_domain_are_an_error(scheduled, message):
    nodes = rack_nodes(4, 2) + [make_node("plain").capacity(cpu="4").obj()]
    placements, st = generate(nodes, pod_group(), scheduled=scheduled)
    assert placements == [] and st.code == Code.Error and st.message() == message


def blocks(n: int = 8) -> list[dict]:
    """Blocks of 4 nodes, racks of 2."""
    return rack_nodes(n, 2, labels={BLOCK: lambda i: f"block-{i // 4}"})


@pytest.mark.parametrize("indexed", [False, True])
def test_preferred_rack_inside_required_block_comes_first(indexed):
    placements, st = generate(blocks(), pod_group(key=BLOCK, preferred=RACK), indexed=indexed)
    assert st is None
    assert shape(placements) == [
        (f"{BLOCK}=block-0/{RACK}=rack-0", 0, ["n0", "n1"]), (f"{BLOCK}=block-0/{RACK}=rack-1", 0, ["n2", "n3"]),
        (f"{BLOCK}=block-1/{RACK}=rack-2", 0, ["n4", "n5"]), (f"{BLOCK}=block-1/{RACK}=rack-3", 0, ["n6", "n7"]),
        (f"{BLOCK}=block-0", 1, ["n0", "n1", "n2", "n3"]), (f"{BLOCK}=block-1", 1, ["n4", "n5", "n6", "n7"])]


def test_several_preferred_levels_tightest_first_and_looser_levels_skipped():
    nodes = rack_nodes(4, 2)
    nodes[0]["metadata"]["labels"][NVL] = "nvl-a"
    nodes[1]["metadata"]["labels"][NVL] = "nvl-a"
    nodes[2]["metadata"]["labels"][NVL] = "nvl-b"
    pg = pod_group(key=None, preferred=f"{NVL}, {RACK}, {NVL}")
    placements, st = generate(nodes, pg)
    assert shape(placements) == [
        (f"{NVL}=nvl-a", 0, ["n0", "n1"]), (f"{NVL}=nvl-b", 0, ["n2"]),
        (f"{RACK}=rack-0", 1, ["n0", "n1"]), (f"{RACK}=rack-1", 1, ["n2", "n3"]),
        ("cluster", 2, ["n0", "n1", "n2", "n3"])]
    # required rack, preferred nvlink: rack-0's nvlink domain is the whole rack, so it adds nothing there
    placements, _ = generate(nodes, pod_group(key=RACK, preferred=NVL))
    assert shape(placements) == [(f"{RACK}=rack-1/{NVL}=nvl-b", 0, ["n2"]),
                                 (f"{RACK}=rack-0", 1, ["n0", "n1"]), (f"{RACK}=rack-1", 1, ["n2", "n3"])]


def test_preferred_gate_off_keeps_upstream_placements():
    placements, _ = generate(blocks(), pod_group(key=BLOCK, preferred=RACK), gates={"PhalanxPreferredTopology": False})
    assert [p.name for p in placements] == [f"{BLOCK}=block-0", f"{BLOCK}=block-1"]


def test_late_members_prefer_the_preferred_domain_their_group_occupies():
    placements, _ = generate(blocks(), pod_group(key=BLOCK, preferred=RACK), scheduled=[("a", "n6")])
    assert shape(placements) == [(f"{BLOCK}=block-1/{RACK}=rack-3", 0, ["n6", "n7"]),
                                 (f"{BLOCK}=block-1", 1, ["n4", "n5", "n6", "n7"])]
    # spread over two racks already: no preferred rack, the required block only
    placements, _ = generate(blocks(), pod_group(key=BLOCK, preferred=RACK), scheduled=[("a", "n4"), ("b", "n6")])
    assert shape(placements) == [(f"{BLOCK}=block-1", 1, ["n4", "n5", "n6", "n7"])]


def test_annotation_parsing():
    pg = pod_group(preferred=" a/b ,, c ,a/b")
    assert topologyaware.preferred_topology_keys(pg) == ["a/b", "c"]
    assert topologyaware.required_topology_key(pod_group(key=None)) is None


def test_index_groupings_are_cached_until_topology_changes():
    index = topologyaware.NodeTopologyIndex()
    nodes = rack_nodes(4, 2)
    for n in nodes:
        index.set_node(n)
    first = index.group_by((RACK,))
    v = index.version
    index.set_node(nodes[0])  # a status update: same labels
    assert index.version == v and index.group_by((RACK,)) is first
    relabelled = make_node("n0").capacity(cpu="4").label(RACK, "rack-9").obj()
    index.set_node(relabelled)
    assert [(vals, names) for vals, names in index.group_by((RACK,))] == [
        (("rack-0",), ["n1"]), (("rack-1",), ["n2", "n3"]), (("rack-9",), ["n0"])]
    index.remove_node(relabelled)
    assert len(index) == 3 and index.labels_of("n0") is None


def test_positions_follow_node_removal_and_addition():
    """The indexed path picks nodes by position in the snapshot's list; removals shift them."""
    nodes = rack_nodes(6, 2)
    snap = Snapshot.from_nodes_and_pods(nodes)
    index = topologyaware.NodeTopologyIndex()
    for n in nodes:
        index.set_node(n)
    pl = topologyaware.TopologyPlacementGenerator(Handle(), index, None, snap)
    info = PodGroupInfo("default", "g", pod_group(), [])
    pl.generate_placements(CycleState(), info, Placement("cluster", list(snap.list())))
    snap.remove_node("n1")
    index.remove_node(nodes[1])
    extra = make_node("n9").capacity(cpu="4").label(RACK, "rack-0").obj()
    snap.update_node_info(Snapshot.from_nodes_and_pods([extra]).get("n9"))
    index.set_node(extra)
    placements, _ = pl.generate_placements(CycleState(), info, Placement("cluster", list(snap.list())))
    assert shape(placements) == [(f"{RACK}=rack-0", 0, ["n0", "n9"]), (f"{RACK}=rack-1", 0, ["n2", "n3"]),
                                 (f"{RACK}=rack-2", 0, ["n4", "n5"])]
    assert all(ni is snap.get(ni.name) for p in placements for ni in p.nodes)


def test_requeue_hints():
    pl = topologyaware.TopologyPlacementGenerator(Handle())
    generate(rack_nodes(2, 2), pod_group())  # another instance; hints use this one's keys
    pl._keys_seen.add(RACK)
    old = make_node("n").capacity(cpu="4").obj()
    new = make_node("n").capacity(cpu="4").label(RACK, "r").obj()
    pod = make_pod("p").obj()
    assert pl._node_topology_changed(pod, old, new) == QueueingHint.Queue
    assert pl._node_topology_changed(pod, new, new) == QueueingHint.QueueSkip
    member = make_pod("m").obj()
    member["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    other = make_pod("o").obj()
    assert pl._same_group_pod(member, member, None) == QueueingHint.Queue
    assert pl._same_group_pod(member, other, None) == QueueingHint.QueueSkip
    events = [e.event for e in pl.events_to_register()]
    assert ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeLabel) in events


# -- PodGroupPodsCount ---------------------------------------------------------------------------

def test_pods_count_scores_scheduled_plus_assigned_and_normalizes_by_the_max():
    pl = podgrouppodscount.PodGroupPodsCount(lambda g: 2)
    info = PodGroupInfo("default", "g")
    a = PodGroupAssignments(Placement("a", []), {"p1": "n0", "p2": "n0"})
    b = PodGroupAssignments(Placement("b", []), {"p1": "n1"})
    raw = [pl.score_placement(CycleState(), info, x)[0] for x in (a, b)]
    assert raw == [4, 3]
    scores = [PlacementScore(a.placement, 4), PlacementScore(b.placement, 3)]
    assert pl.normalize_placement_score(CycleState(), info, scores) is None
    assert [s.score for s in scores] == [100, 75]
    zero = [PlacementScore(a.placement, 0)]
    st = pl.normalize_placement_score(CycleState(), info, zero)
    assert st.code == Code.Error
    assert st.message() == "no pods from pod group are assigned to any of the candidate placements"


# -- NodeResourcesFit placement score ---------------------------------------------------------

def fit_plugin(nodes, pods=(), args=None):
    fw = Framework(snapshot=Snapshot.from_nodes_and_pods(nodes, list(pods)))
    return fw, fw.plugin("NodeResourcesFit")


def test_node_resources_fit_scores_a_placement_most_allocated_over_all_its_nodes():
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj() for i in range(4)]
    busy = [make_pod("busy").req(cpu="2", memory="4Gi").node("n0").obj()]
    fw, fit = fit_plugin(nodes, busy)
    snap = fw.snapshot_shared_lister()
    group = [PodInfo(make_pod(f"p{i}").req(cpu="1", memory="2Gi").obj()) for i in range(2)]
    info = PodGroupInfo("default", "g", pod_group(), group)
    tight = Placement("tight", [snap.get("n0"), snap.get("n1")])
    loose = Placement("loose", [snap.get("n2"), snap.get("n3")])
    one = {group[0].key: "n1", group[1].key: "n1"}
    s_tight, _ = fit.score_placement(CycleState(), info, PodGroupAssignments(tight, one))
    s_loose, _ = fit.score_placement(CycleState(), info, PodGroupAssignments(loose, dict(one)))
    # tight: cpu (2+2)/8, memory (4+4)/16 -> 50; loose: 2/8, 4/16 -> 25
    assert (s_tight, s_loose) == (50, 25)
    assert fit.placement_score_bound(CycleState(), info, tight) == 50
    half = PodGroupAssignments(tight, {group[0].key: "n1"})
    assert fit.score_placement(CycleState(), info, half)[0] == 37
    assert fit.placement_score_bound(CycleState(), info, tight) == 50


def test_capacity_shortfall_names_what_is_missing():
    nodes = [make_node(f"n{i}").capacity(cpu="2", memory="4Gi", pods="2").obj() for i in range(2)]
    fw, fit = fit_plugin(nodes, [make_pod("busy").req(cpu="1500m").node("n0").obj()])
    snap = fw.snapshot_shared_lister()
    group = [PodInfo(make_pod(f"p{i}").req(cpu="1", memory="1Gi").obj()) for i in range(4)]
    info = PodGroupInfo("default", "g", pod_group(), group)
    p = Placement("rack", snap.list())
    assert fit.placement_capacity_shortfall(CycleState(), info, p, 2) == []
    assert fit.placement_capacity_shortfall(CycleState(), info, p, 4) == [
        "pods: 3 free, 4 requested", "cpu: 2500m free, 4 requested"]
    # enough in sum, but fragmented: 3 nodes with 1500m free each hold one 1-cpu pod apiece
    nodes = [make_node(f"n{i}").capacity(cpu="2", memory="4Gi").obj() for i in range(3)]
    fw, fit = fit_plugin(nodes, [make_pod(f"b{i}").req(cpu="500m").node(f"n{i}").obj() for i in range(3)])
    p = Placement("rack", fw.snapshot_shared_lister().list())
    assert fit.placement_capacity_shortfall(CycleState(), info, p, 4) == ["its nodes have room for 3"]
    assert fit.placement_capacity_shortfall(CycleState(), info, p, 3) == []


# -- placement search --------------------------------------------------------------------------

class GangMinCount(PlacementFeasiblePlugin):
    NAME = "GangMinCount"

    def placement_feasible(self, state, pod_group, progress):
        _, min_count = policy_of(pod_group.pod_group or {})
        if progress.scheduled + progress.remaining < min_count:
            return Status.new(Code.Unschedulable, f"minCount ({min_count}) cannot be satisfied: "
                                                  f"{progress.scheduled} scheduled, {progress.remaining} remaining")
        if progress.scheduled < min_count:
            return Status.new(Code.Wait, "not yet")
        return None


def topology_framework(nodes, pods=(), gates=None) -> Framework:
    reg: Registry = in_tree_registry()
    reg.register("TopologyPlacementGenerator", topologyaware.new)
    reg.register("PodGroupPodsCount", podgrouppodscount.new)
    reg.register("GangMinCount", lambda args, handle: GangMinCount())
    fg = FeatureGates(gates or {})
    prof = KubeSchedulerProfile()
    set_profile_defaults(prof, fg, Plugins(placement_feasible=PluginSet(enabled=[PluginRef("GangMinCount")])))
    return Framework(prof, registry=reg, feature_gates=fg, snapshot=Snapshot.from_nodes_and_pods(nodes, list(pods)))


def whole_cluster(fw: Framework) -> Placement:
    return Placement("cluster", list(fw.snapshot_shared_lister().list()))


def make_attempt(fw: Framework, members: list[PodInfo], info: PodGroupInfo, log: list):
    """The scheduler's group algorithm on one placement (as PodGroupCycle.try_placement), reverted
    afterwards; the node RNG is reseeded per placement so a placement's outcome depends on
    nothing but the cluster state."""
    def attempt(placement: Placement) -> PlacementOutcome:
        log.append(placement.name)
        fw.rng.seed(placement.name)
        view = Snapshot(placement.nodes)
        assigned, failures = [], {}
        st: Optional[Status] = None
        for i, pi in enumerate(members):
            try:
                res = fw.schedule_pod(CycleState(), pi, view)
            except FitError as fe:
                failures[pi.key] = (type("Q", (), {"pod_info": pi})(), fe)
            else:
                view.add_pod(pi.assumed_on(res.suggested_host), res.suggested_host)
                assigned.append(Assignment(None, pi, res.suggested_host, None))
            progress = PlacementProgress(len(assigned), len(members) - i - 1)
            st = fw.run_placement_feasible_plugins(CycleState(), info, progress)
            if st is not None and st.is_rejected():
                break
        for _, pi, node, _ in assigned:
            view.remove_pod(pi.assumed_on(node), node)
        feasible = bool(assigned) and (st is None or st.is_success())
        return PlacementOutcome(placement, view, assigned, failures=failures, feasible=feasible,
                                status_message="" if feasible or st is None else st.message())
    return attempt


def choose(fw: Framework, info: PodGroupInfo, outcomes: list[PlacementOutcome]) -> Optional[str]:
    """What the scheduler does with the outcomes: score the feasible ones, the first best wins."""
    feasible = [o for o in outcomes if o.feasible]
    if not feasible:
        return None
    if len(feasible) == 1:
        return feasible[0].placement.name
    assignments = [PodGroupAssignments(o.placement, {a.pod_info.key: a.node for a in o.assigned}) for o in feasible]
    totals, _, st = fw.run_placement_score_plugins(CycleState(), info, assignments)
    assert st is None
    return feasible[max(range(len(feasible)), key=lambda i: totals[i])].placement.name


def random_cluster(rng: random.Random) -> tuple[list[dict], list[dict]]:
    nodes, pods = [], []
    n_racks = rng.randint(2, 7)
    i = 0
    for r in range(n_racks):
        for _ in range(rng.randint(1, 5)):
            cpu = rng.choice([2, 4, 8])
            nodes.append(make_node(f"n{i}").capacity(cpu=str(cpu), memory=f"{rng.choice([8, 16, 32])}Gi")
                         .label(RACK, f"rack-{r}").obj())
            used = rng.randint(0, cpu * 1000)
            if used > 200:
                pods.append(make_pod(f"busy-{i}").req(cpu=f"{used}m", memory=f"{rng.randint(0, 4000)}Mi")
                            .node(f"n{i}").obj())
            i += 1
    return nodes, pods


@pytest.mark.parametrize("seed", range(60))
def test_pruned_search_chooses_what_the_exhaustive_search_chooses(seed):
    rng = random.Random(seed)
    nodes, pods = random_cluster(rng)
    fw = topology_framework(nodes, pods)
    size = rng.randint(1, 6)
    min_count = rng.choice([None, size, max(1, size - 2)])
    cpu = rng.choice(["250m", "500m", "1", "1500m", "3"])
    members = [PodInfo(make_pod(f"m{j}").req(cpu=cpu, memory=f"{rng.choice([256, 1024, 4096])}Mi").obj())
               for j in range(size)]
    info = PodGroupInfo("default", "g", pod_group(min_count=min_count), members)
    snap = fw.snapshot_shared_lister()
    placements, st = fw.run_placement_generate_plugins(CycleState(), info, whole_cluster(fw))
    assert st is None
    exhaustive_log: list = []
    exhaustive = [make_attempt(fw, members, info, exhaustive_log)(p) for p in placements]
    pruned_log: list = []
    attempt = make_attempt(fw, members, info, pruned_log)
    outcomes, skipped = search_placements(fw, CycleState(), info, placements, attempt)
    assert choose(fw, info, outcomes) == choose(fw, info, exhaustive)
    assert len(pruned_log) + skipped + sum(1 for o in outcomes if not o.tried) == len(placements)
    assert [o.placement.name for o in outcomes] == [p.name for p in placements][:len(outcomes)] or \
        [o.placement.name for o in outcomes] == sorted((o.placement.name for o in outcomes),
                                                          key=[p.name for p in placements].index)


def test_bounds_skip_looser_racks_once_a_tight_one_fits_everything():
    nodes = rack_nodes(8, 2)
    pods = [make_pod("busy").req(cpu="3").node("n4").obj()]  # rack-2 is the most allocated
    fw = topology_framework(nodes, pods)
    members = [PodInfo(make_pod(f"m{j}").req(cpu="1").obj()) for j in range(2)]
    info = PodGroupInfo("default", "g", pod_group(min_count=2), members)
    placements, _ = fw.run_placement_generate_plugins(CycleState(), info, whole_cluster(fw))
    log: list = []
    outcomes, skipped = search_placements(fw, CycleState(), info, placements, make_attempt(fw, members, info, log))
    assert log == [f"{RACK}=rack-2"] and skipped == 3
    assert choose(fw, info, outcomes) == f"{RACK}=rack-2"


def test_ranks_stop_at_the_first_rank_with_a_feasible_placement_and_capacity_prunes():
    nodes = rack_nodes(8, 2, cpu="2", labels={BLOCK: lambda i: f"block-{i // 4}"})
    fw = topology_framework(nodes)
    members = [PodInfo(make_pod(f"m{j}").req(cpu="2").obj()) for j in range(3)]
    info = PodGroupInfo("default", "g", pod_group(min_count=3, key=BLOCK, preferred=RACK), members)
    placements, _ = fw.run_placement_generate_plugins(CycleState(), info, whole_cluster(fw))
    log: list = []
    outcomes, _ = search_placements(fw, CycleState(), info, placements, make_attempt(fw, members, info, log))
    # no rack holds 3 pods of 2 cpu: every rack is pruned by capacity, then block-0 is tried and fits
    assert log == [f"{BLOCK}=block-0"]
    assert [o.message for o in outcomes[:4]] == [
        "not tried, free capacity cannot hold 3 pods (cpu: 4 free, 6 requested)"] * 4
    assert choose(fw, info, outcomes) == f"{BLOCK}=block-0"


def test_a_lone_placement_is_simply_tried():
    nodes = rack_nodes(2, 2, cpu="1")
    fw = topology_framework(nodes)
    members = [PodInfo(make_pod(f"m{j}").req(cpu="2").obj()) for j in range(2)]
    info = PodGroupInfo("default", "g", pod_group(min_count=2), members)
    log: list = []
    placements, _ = fw.run_placement_generate_plugins(CycleState(), info, whole_cluster(fw))
    outcomes, _ = search_placements(fw, CycleState(), info, placements, make_attempt(fw, members, info, log))
    assert log == [f"{RACK}=rack-0"]
    assert outcomes[0].message == (
        "0/2 pods fit (pod m0: 0/2 nodes are available: 2 Insufficient cpu; "
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining)")


def test_describe_and_summarize():
    def o(name, placed, message, tried=True):
        return PlacementOutcome(Placement(name, []), assigned=[None] * placed, message=message, tried=tried)
    outcomes = [o("r=a", 0, "not tried, x"), o("r=b", 0, "not tried, x"), o("r=c", 3, "3/4 pods fit (y)"),
                o("r=d", 0, "not tried, x"), o("r=e", 0, "not tried, x"), o("r=f", 0, "not tried, x")]
    assert summarize(outcomes) == ("6 placements evaluated: r=a, r=b, r=d, r=e and 1 more: not tried, x; "
                                   "r=c: 3/4 pods fit (y)")
    assert summarize([o("cluster", 0, "z")]) == ""
    assert describe(PlacementOutcome(Placement("r=a", []), assigned=[None, None], feasible=True), 4) == "2/4 pods fit"
