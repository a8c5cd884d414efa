"""The Framework: extension-point ordering, Skip semantics, PreFilterResult, weights and
normalization, percentageOfNodesToScore, round robin, Reserve/Permit/Bind, PostFilter,
pod-group points, and profile construction errors."""

from __future__ import annotations

import asyncio

from typing import Optional

import pytest

from phalanx.scheduler.framework import (
    BindPlugin,
    Code,
    CycleState,
    FilterPlugin,
    FitError,
    Framework,
    PermitPlugin,
    Placement,
    PlacementFeasiblePlugin,
    PlacementGeneratePlugin,
    PlacementProgress,
    PlacementScorePlugin,
    PodGroupAssignments,
    PodGroupInfo,
    PodInfo,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    Registry,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    Snapshot,
    Status,
)
from phalanx.scheduler.framework.config import KubeSchedulerProfile, PluginRef, PluginSet, Plugins
from phalanx.scheduler.framework.diagnosis import SchedulingError
from phalanx.scheduler.framework.construction import FrameworkConfigError
from phalanx.scheduler.plugins import queuesort

from .builders import make_node, make_pod


# -- fake plugins ------------------------------------------------------------------------------

class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []


class FakePreFilter(PreFilterPlugin):
    def __init__(self, name: str, rec: Recorder, *, names: Optional[set[str]] = None,
                 status: Optional[Status] = None):
        self.NAME, self.rec, self.names, self.status = name, rec, names, status

    def pre_filter(self, state, pod, nodes):
        self.rec.calls.append(("PreFilter", self.NAME))
        return (PreFilterResult(set(self.names)) if self.names is not None else None), self.status


class FakeFilter(FilterPlugin):
    def __init__(self, name: str, rec: Recorder, reject: tuple[str, ...] = (), code: Code = Code.Unschedulable,
                 msg: str = ""):
        self.NAME, self.rec, self.reject, self.code = name, rec, set(reject), code
        self.msg = msg or f"{name} rejects"

    def filter(self, state, pod, node_info):
        self.rec.calls.append(("Filter", f"{self.NAME}/{node_info.name}"))
        return Status.new(self.code, self.msg) if node_info.name in self.reject else None


class SkippingPlugin(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """Skips at PreFilter and PreScore; its Filter/Score would reject/err if they ran."""

    NAME = "Skipper"

    def pre_filter(self, state, pod, nodes):
        return None, Status.new(Code.Skip)

    def filter(self, state, pod, node_info):
        return Status.new(Code.UnschedulableAndUnresolvable, "must not run")

    def pre_score(self, state, pod, nodes):
        return Status.new(Code.Skip)

    def score(self, state, pod, node_info):
        return 0, Status.new(Code.Error, "must not run")


class FakeScore(ScorePlugin, ScoreExtensions):
    def __init__(self, name: str, values: dict[str, int], normalize: Optional[str] = None):
        self.NAME, self.values, self.normalize = name, values, normalize

    def score(self, state, pod, node_info):
        return self.values.get(node_info.name, 0), None

    def score_extensions(self):
        return self if self.normalize else None

    def normalize_score(self, state, pod, scores, nodes):
        if self.normalize == "reverse":
            hi = max(scores)
            scores[:] = [100 - s * 100 // hi for s in scores]
        elif self.normalize == "bad":
            scores[0] = 101
        return None


class FakeReserve(ReservePlugin):
    def __init__(self, name: str, rec: Recorder, fail: Optional[Status] = None):
        self.NAME, self.rec, self.fail = name, rec, fail

    def reserve(self, state, pod, node_name):
        self.rec.calls.append(("Reserve", self.NAME))
        return self.fail

    def unreserve(self, state, pod, node_name):
        self.rec.calls.append(("Unreserve", self.NAME))


class FakePermit(PermitPlugin):
    def __init__(self, name: str, status: Optional[Status], timeout: float = 0):
        self.NAME, self.status, self.timeout = name, status, timeout

    def permit(self, state, pod, node_name):
        return self.status, self.timeout


class FakeBind(BindPlugin):
    def __init__(self, name: str, rec: Recorder, status: Optional[Status]):
        self.NAME, self.rec, self.status = name, rec, status

    def bind(self, state, pod, node_name):
        self.rec.calls.append(("Bind", self.NAME))
        return self.status


class FakePostFilter(PostFilterPlugin):
    def __init__(self, name: str, result: Optional[PostFilterResult], status: Optional[Status]):
        self.NAME, self.result, self.status = name, result, status

    def post_filter(self, state, pod, node_to_status):
        return self.result, self.status


def build(plugins: list, *, weights: Optional[dict[str, int]] = None, nodes: int = 3,
          percentage: Optional[int] = None) -> Framework:
    registry = Registry({"PrioritySort": queuesort.new})
    for p in plugins:
        registry.register(p.NAME, (lambda inst: lambda args, handle: inst)(p))
    refs = [PluginRef("PrioritySort")] + [PluginRef(p.NAME, (weights or {}).get(p.NAME, 0)) for p in plugins]
    profile = KubeSchedulerProfile(plugins=Plugins(multi_point=PluginSet(enabled=refs)),
                                   percentage_of_nodes_to_score=percentage)
    snap = Snapshot.from_nodes_and_pods([make_node(f"n{i}").capacity(cpu="4").obj() for i in range(nodes)])
    return Framework(profile, registry=registry, snapshot=snap)


POD = make_pod("p").req(cpu="1").obj()


# -- PreFilter / Filter -------------------------------------------------------------------------

def test_filters_run_in_order_and_the_first_rejection_wins():
    rec = Recorder()
    fw = build([FakeFilter("A", rec, reject=("n0",)), FakeFilter("B", rec, reject=("n0", "n1"))])
    state = CycleState()
    status = fw.run_filter_plugins(state, PodInfo(POD), fw.snapshot.get("n0"))
    assert status.plugin == "A" and status.message() == "A rejects"
    assert ("Filter", "B/n0") not in rec.calls
    with pytest.raises(FitError) as e:
        build([FakeFilter("A", rec, reject=("n0", "n1", "n2"))]).schedule_pod(CycleState(), POD)
    assert str(e.value) == "0/3 nodes are available: 3 A rejects."


def test_prefilter_skip_disables_filter_and_prescore_skip_disables_score():
    fw = build([SkippingPlugin()], weights={"Skipper": 1})
    state = CycleState()
    result = fw.schedule_pod(state, POD)
    assert result.feasible_nodes == 3
    assert state.skip_filter_plugins == {"Skipper"} and state.skip_score_plugins == {"Skipper"}


def test_prefilter_result_narrows_nodes_and_names_the_plugin_for_the_others():
    rec = Recorder()
    fw = build([FakePreFilter("Narrow", rec, names={"n1", "n2", "ghost"}), FakeFilter("F", rec, reject=("n1", "n2"))],
               nodes=4)
    with pytest.raises(FitError) as e:
        fw.schedule_pod(CycleState(), POD)
    assert str(e.value) == "0/4 nodes are available: 2 F rejects, 2 node(s) didn't satisfy plugin(s) [Narrow]."
    assert {c for c in rec.calls if c[0] == "Filter"} == {("Filter", "F/n1"), ("Filter", "F/n2")}
    assert e.value.diagnosis.unschedulable_plugins == {"Narrow", "F"}


@pytest.mark.parametrize("sets, message", [
    ([set()], "node(s) didn't satisfy plugin A"),
    ([{"n0"}, {"n1"}], "node(s) didn't satisfy plugin(s) [A B] simultaneously"),
])
def test_prefilter_results_intersect_to_nothing(sets, message):
    rec = Recorder()
    plugins = [FakePreFilter(name, rec, names=s) for name, s in zip("AB", sets)]
    fw = build(plugins)
    _, status, _ = fw.run_pre_filter_plugins(CycleState(), PodInfo(POD), fw.snapshot.list())
    assert status.code == Code.UnschedulableAndUnresolvable and status.message() == message
    with pytest.raises(FitError) as e:
        fw.schedule_pod(CycleState(), POD)
    assert str(e.value) == f"0/3 nodes are available: {message}."


def test_prefilter_unschedulable_lets_the_others_run_unresolvable_stops():
    rec = Recorder()
    fw = build([FakePreFilter("A", rec, status=Status.new(Code.Unschedulable, "a")),
                FakePreFilter("B", rec), FakePreFilter("C", rec, status=Status.new(Code.UnschedulableAndUnresolvable, "c")),
                FakePreFilter("D", rec)])
    _, status, _ = fw.run_pre_filter_plugins(CycleState(), PodInfo(POD), fw.snapshot.list())
    assert [c[1] for c in rec.calls] == ["A", "B", "C"]
    assert status.plugin == "C" and status.message() == "c"


def test_prefilter_error_is_wrapped():
    rec = Recorder()
    fw = build([FakePreFilter("A", rec, status=Status.new(Code.Error, "broken"))])
    with pytest.raises(SchedulingError, match='running PreFilter plugin "A": broken'):
        fw.schedule_pod(CycleState(), POD)


def test_filter_returning_an_error_aborts_the_cycle():
    rec = Recorder()
    fw = build([FakeFilter("A", rec, reject=("n1",), code=Code.Error, msg="kaput")])
    with pytest.raises(SchedulingError, match='running "A" filter plugin: kaput'):
        fw.schedule_pod(CycleState(), POD)


# -- Score ----------------------------------------------------------------------------------------

def test_scores_are_normalized_weighted_and_summed():
    fw = build([FakeScore("S1", {"n0": 10, "n1": 20, "n2": 30}),
                FakeScore("S2", {"n0": 50, "n1": 0, "n2": 100}, normalize="reverse")],
               weights={"S1": 2, "S2": 3})
    state = CycleState()
    result = fw.prioritize_nodes(state, PodInfo(POD), fw.snapshot.list())
    assert result.plugin_scores == {"S1": [20, 40, 60], "S2": [150, 300, 0]}
    assert result.totals == [170, 340, 60]
    assert fw.select_host(result) == "n1"
    assert result.node_plugin_scores()[1] == {"name": "n1", "scores": [{"name": "S1", "score": 40},
                                                                        {"name": "S2", "score": 300}],
                                              "totalScore": 340}


def test_score_out_of_range_after_normalize_is_an_error():
    fw = build([FakeScore("S", {"n0": 1}, normalize="bad")], weights={"S": 1})
    with pytest.raises(SchedulingError, match=r'plugin "S" returns an invalid score 101, it should in the range of \[0, 100\] after normalizing'):
        fw.prioritize_nodes(CycleState(), PodInfo(POD), fw.snapshot.list())


def test_select_host_breaks_ties_among_the_best_only():
    fw = build([FakeScore("S", {"n0": 5, "n1": 9, "n2": 9, "n3": 9, "n4": 1})], weights={"S": 1}, nodes=5)
    picked = set()
    for _ in range(60):
        picked.add(fw.select_host(fw.prioritize_nodes(CycleState(), PodInfo(POD), fw.snapshot.list())))
    assert picked == {"n1", "n2", "n3"}


# -- how many nodes, and where to start ------------------------------------------------------------

@pytest.mark.parametrize("nodes, percentage, want", [
    (50, None, 50),
    (99, None, 99),
    (100, None, 100),
    (200, None, 100),   # 49% of 200 = 98 -> at least 100
    (1000, None, 420),  # 50 - 1000/125 = 42%
    (5000, None, 500),  # 10%
    (6000, None, 300),  # 50 - 48 = 2% -> at least 5%
    (1000, 100, 1000),
    (1000, 30, 300),
    (1000, 5, 100),
])
def test_num_feasible_nodes_to_find(nodes, percentage, want):
    fw = build([], percentage=percentage, nodes=1)
    assert fw.num_feasible_nodes_to_find(nodes) == want


def test_search_stops_after_enough_feasible_nodes_and_resumes_round_robin():
    rec = Recorder()
    fw = build([FakeFilter("F", rec), FakeScore("S", {})], weights={"S": 1}, nodes=250)
    starts = []
    for _ in range(3):
        starts.append(fw.next_start_node_index)
        result = fw.schedule_pod(CycleState(), POD)
        assert result.feasible_nodes == 120 and result.evaluated_nodes == 120
    assert starts == [0, 120, 240]
    assert fw.next_start_node_index == 110


def test_rejected_nodes_count_towards_the_round_robin():
    rec = Recorder()
    fw = build([FakeFilter("F", rec, reject=("n0", "n1")), FakeScore("S", {})], weights={"S": 1}, nodes=5)
    result = fw.schedule_pod(CycleState(), POD)
    assert (result.feasible_nodes, result.evaluated_nodes) == (3, 5)
    assert fw.next_start_node_index == 0


def test_without_score_plugins_the_first_feasible_node_wins():
    rec = Recorder()
    fw = build([FakeFilter("F", rec, reject=("n0",))], nodes=4)
    assert fw.schedule_pod(CycleState(), POD).suggested_host == "n1"
    # n0 (rejected) and n1 were processed, so the next search starts at n2.
    assert fw.schedule_pod(CycleState(), POD).suggested_host == "n2"


def test_nominated_node_is_tried_first():
    rec = Recorder()
    fw = build([FakeFilter("F", rec), FakeScore("S", {"n0": 100})], weights={"S": 1})
    pod = make_pod("p").req(cpu="1").nominated_node("n2").obj()
    result = fw.schedule_pod(CycleState(), pod)
    assert result.suggested_host == "n2" and result.evaluated_nodes == 1


# -- Reserve / Permit / Bind / PostFilter -----------------------------------------------------------

def test_reserve_failure_unreserves_in_reverse_and_forgets_the_pod():
    rec = Recorder()
    fw = build([FakeReserve("R1", rec), FakeReserve("R2", rec, fail=Status.new(Code.Unschedulable, "no room")),
                FakeReserve("R3", rec)])
    cycle = fw.scheduling_cycle(POD, fw.snapshot)
    assert rec.calls == [("Reserve", "R1"), ("Reserve", "R2"), ("Unreserve", "R3"), ("Unreserve", "R2"),
                         ("Unreserve", "R1")]
    assert cycle.status.code == Code.Unschedulable and cycle.node_name == ""
    assert str(cycle.fit_error) == "0/1 nodes are available: 1 no room."
    assert all(not ni.pods for ni in fw.snapshot.list()), "the assumed pod is forgotten"


def test_permit_wait_registers_a_waiting_pod():
    fw = build([FakePermit("Gang", Status.new(Code.Wait, "waiting for quorum"), 5 * 60),
                FakePermit("Other", None)])
    cycle = fw.scheduling_cycle(POD, fw.snapshot)
    assert cycle.status.code == Code.Wait
    assert cycle.status.message() == 'one or more plugins asked to wait and no plugin rejected pod "p"'
    wp = fw.get_waiting_pod("uid-p")
    assert wp is cycle.waiting_pod and wp.get_pending_plugins() == ["Gang"] and wp.timeout_seconds() == 300
    assert fw.wait_on_permit_status(cycle.pod_info).code == Code.Wait
    wp.allow("Gang")
    assert fw.wait_on_permit_status(cycle.pod_info) is None
    assert fw.get_waiting_pod("uid-p") is None


def test_permit_timeout_and_rejection_messages():
    fw = build([FakePermit("Gang", Status.new(Code.Wait), 3600)])
    cycle = fw.scheduling_cycle(POD, fw.snapshot)
    wp = cycle.waiting_pod
    assert wp.timeout_seconds() == 15 * 60, "Permit waits are capped at 15 minutes"
    wp.expire()
    st = fw.wait_on_permit_status(cycle.pod_info)
    assert st.code == Code.Unschedulable and st.plugin == "Gang"
    assert st.message() == "rejected due to timeout after waiting 15m0s at plugin Gang"


def test_permit_rejection_fails_the_cycle():
    fw = build([FakePermit("P", Status.new(Code.UnschedulableAndUnresolvable, "nope"))])
    cycle = fw.scheduling_cycle(POD, fw.snapshot)
    assert cycle.status.code == Code.UnschedulableAndUnresolvable and str(cycle.fit_error) == "0/1 nodes are available: 1 nope."


@pytest.mark.parametrize("statuses, want_code, calls", [
    ([], Code.Error, []),  # nothing bound the pod: the binding cycle fails
    ([Status.new(Code.Skip), None], Code.Success, ["B0", "B1"]),
    ([Status.new(Code.Skip), Status.new(Code.Skip)], Code.Error, ["B0", "B1"]),
    ([None, None], Code.Success, ["B0"]),
    ([Status.new(Code.Error, "api down")], Code.Error, ["B0"]),
])
def test_bind_plugins(statuses, want_code, calls):
    rec = Recorder()
    fw = build([FakeBind(f"B{i}", rec, st) for i, st in enumerate(statuses)])
    st = asyncio.run(fw.run_bind_plugins(CycleState(), PodInfo(POD), "n0"))
    assert (Code.Success if st is None else st.code) == want_code
    assert [c[1] for c in rec.calls] == calls


def test_post_filter_collects_reasons_until_one_succeeds():
    fw = build([FakeFilter("F", Recorder(), reject=("n0", "n1", "n2")),
                FakePostFilter("P1", None, Status.new(Code.Unschedulable, "p1 could not help")),
                FakePostFilter("P2", PostFilterResult.with_nominated_node("n1"), Status.new(Code.Unschedulable, "p2 neither"))])
    cycle = fw.scheduling_cycle(POD, fw.snapshot)
    assert cycle.fit_error.diagnosis.post_filter_msg == "p1 could not help, p2 neither"
    assert cycle.nominating_info.nominated_node_name == "n1"
    assert str(cycle.fit_error) == "0/3 nodes are available: 3 F rejects. p1 could not help, p2 neither"


def test_pre_enqueue_runs_scheduling_gates():
    fw = Framework()
    st = fw.run_pre_enqueue_plugins(make_pod().scheduling_gates("foo", "bar").obj())
    assert st.code == Code.UnschedulableAndUnresolvable and st.plugin == "SchedulingGates"
    assert st.message() == "waiting for scheduling gates: [foo bar]"
    assert fw.run_pre_enqueue_plugins(make_pod().obj()) is None


# -- pod-group points ------------------------------------------------------------------------------

class RackPlacements(PlacementGeneratePlugin):
    def __init__(self, name: str, key: str):
        self.NAME, self.key = name, key

    def generate_placements(self, state, pod_group, parent):
        groups: dict[str, list] = {}
        for ni in parent.nodes:
            if self.key in ni.labels:
                groups.setdefault(ni.labels[self.key], []).append(ni)
        return [Placement(v, nodes) for v, nodes in sorted(groups.items())], None


class CountScore(PlacementScorePlugin):
    NAME = "Count"

    def score_placement(self, state, pod_group, assignments):
        return len(assignments.assignments), None


class MinCount(PlacementFeasiblePlugin):
    def __init__(self, name: str, min_count: int):
        self.NAME, self.min_count = name, min_count

    def placement_feasible(self, state, pod_group, progress):
        if progress.remaining + progress.scheduled < self.min_count:
            return Status.new(Code.Unschedulable, "cannot be satisfied")
        if progress.scheduled < self.min_count:
            return Status.new(Code.Wait, "not yet")
        return None


def test_placement_generate_intersects_several_plugins():
    fw = build([RackPlacements("Rack", "rack"), RackPlacements("Zone", "zone")])
    nodes = [make_node(f"n{i}").label("rack", f"r{i // 2}").label("zone", f"z{i % 2}").obj() for i in range(4)]
    snap = Snapshot.from_nodes_and_pods(nodes)
    placements, st = fw.run_placement_generate_plugins(CycleState(), PodGroupInfo("ns", "pg"),
                                                       Placement("all", snap.list()))
    assert st is None
    assert {(p.name, tuple(sorted(p.node_names()))) for p in placements} == {
        ("r0/z0", ("n0",)), ("r0/z1", ("n1",)), ("r1/z0", ("n2",)), ("r1/z1", ("n3",))}


def test_placement_score_and_feasible():
    fw = build([CountScore(), MinCount("Gang", 3)], weights={"Count": 2})
    fw.placement_score_plugin_weight["Count"] = 2
    a = PodGroupAssignments(Placement("a", []), {"p1": "n0"})
    b = PodGroupAssignments(Placement("b", []), {"p1": "n1", "p2": "n1"})
    totals, per_plugin, st = fw.run_placement_score_plugins(CycleState(), PodGroupInfo("ns", "pg"), [a, b])
    assert st is None and totals == [2, 4] and per_plugin == {"Count": [2, 4]}
    pg = PodGroupInfo("ns", "pg")
    assert fw.run_placement_feasible_plugins(CycleState(), pg, PlacementProgress(1, 1)).code == Code.Unschedulable
    assert fw.run_placement_feasible_plugins(CycleState(), pg, PlacementProgress(1, 5)).code == Code.Wait
    assert fw.run_placement_feasible_plugins(CycleState(), pg, PlacementProgress(3, 0)) is None


# -- profile construction ----------------------------------------------------------------------------

def _profile(**sets: list[PluginRef]) -> KubeSchedulerProfile:
    plugins = Plugins(queue_sort=PluginSet(enabled=[PluginRef("PrioritySort")]))
    for k, v in sets.items():
        setattr(plugins, k, PluginSet(enabled=v))
    return KubeSchedulerProfile(plugins=plugins)


@pytest.mark.parametrize("profile, message", [
    (_profile(filter=[PluginRef("NoSuchPlugin")]), 'FilterPlugin "NoSuchPlugin" does not exist'),
    (_profile(score=[PluginRef("NodeUnschedulable")]), 'plugin "NodeUnschedulable" does not extend ScorePlugin plugin'),
    (_profile(filter=[PluginRef("NodeName"), PluginRef("NodeName")]), 'plugin "NodeName" already registered as "FilterPlugin"'),
    (KubeSchedulerProfile(scheduler_name="x", plugins=Plugins()),
     'only one queue sort plugin required for profile with scheduler name "x", but got 0'),
])
def test_profile_errors(profile, message):
    with pytest.raises(FrameworkConfigError) as e:
        Framework(profile)
    assert str(e.value) == message


def test_chunked_search_records_exactly_the_nodes_it_evaluated():
    rec = Recorder()
    fw = build([FakeFilter("F", rec, reject=tuple(f"n{i}" for i in range(10))), FakeScore("S", {})],
               weights={"S": 1}, nodes=150)
    result = fw.schedule_pod(CycleState(), POD)
    assert (result.feasible_nodes, result.evaluated_nodes) == (100, 110)
    assert sorted(n for n, _ in result.diagnosis.node_to_status.items()) == sorted(f"n{i}" for i in range(10))
    assert fw.next_start_node_index == 110


def test_default_profile_cycle_assumes_the_pod_on_the_least_allocated_node():
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi").obj() for i in range(3)]
    pods = [make_pod("a").req(cpu="3").node("n0").obj(), make_pod("b").req(cpu="1").node("n1").obj()]
    fw = Framework(snapshot=Snapshot.from_nodes_and_pods(nodes, pods))
    cycle = fw.scheduling_cycle(make_pod("p").req(cpu="2", memory="1Gi").obj(), fw.snapshot)
    assert cycle.status is None and cycle.node_name == "n2"
    assert [p.name for p in fw.snapshot.get("n2").pods] == ["p"] and cycle.pod_info.node_name == "n2"
    top = cycle.schedule_result.scores.top(3)
    assert top[0][0] == "n2" and {n for n, _ in top} == {"n1", "n2"}, "n0 lacks cpu"
    assert [n for n, st in cycle.schedule_result.diagnosis.node_to_status.items()] == ["n0"]
