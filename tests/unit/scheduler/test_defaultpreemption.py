"""DefaultPreemption: which node and which victims, and the messages when it cannot help."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code, Framework, Nominator, PodInfo
from phalanx.scheduler.framework.config import default_profile

from .builders import make_node, make_pod
from .harness import snapshot

HOST = "kubernetes.io/hostname"


def node(name: str, cpu: str = "4") -> dict:
    return make_node(name).capacity(cpu=cpu, memory="16Gi").obj()


def running(name: str, node_name: str, cpu: str, priority: int = 0, start: str = "2026-01-01T00:00:00Z",
            labels: dict | None = None) -> dict:
    b = make_pod(name).req(cpu=cpu).priority(priority).node(node_name).start_time(start)
    if labels:
        b.labels(labels)
    return b.obj()


def preempt(nodes, pods, pod, **kw):
    fw = Framework(default_profile(), snapshot=snapshot(nodes, pods), **kw)
    return fw.scheduling_cycle(pod, fw.snapshot)


def victims(cycle) -> list[str]:
    return [v.name for v in cycle.post_filter_result.victims]


PREEMPTOR = make_pod("high").req(cpu="2").priority(10).obj()


def test_picks_the_node_whose_victims_have_the_lowest_priority():
    cycle = preempt([node("n1"), node("n2")],
                    [running("low", "n1", "3", priority=0), running("mid", "n2", "3", priority=5)], PREEMPTOR)
    assert cycle.status.code == Code.Unschedulable
    assert cycle.nominating_info.nominated_node_name == "n1" and victims(cycle) == ["low"]
    assert cycle.fit_error.diagnosis.post_filter_msg == ""
    assert str(cycle.fit_error) == "0/2 nodes are available: 2 Insufficient cpu."


def test_evicts_no_more_than_needed_reprieving_the_most_important_first():
    pods = [running("a", "n1", "1", priority=1), running("b", "n1", "1", priority=2), running("c", "n1", "2", priority=3)]
    cycle = preempt([node("n1")], pods, PREEMPTOR)
    assert victims(cycle) == ["b", "a"]


def test_prefers_nodes_without_pdb_violations():
    pods = [running("guarded", "n1", "3", labels={"app": "db"}), running("free", "n2", "3", priority=1)]
    pdb = {"metadata": {"name": "db", "namespace": "default"}, "spec": {"selector": {"matchLabels": {"app": "db"}}},
           "status": {"disruptionsAllowed": 0}}
    cycle = preempt([node("n1"), node("n2")], pods, PREEMPTOR, pod_disruption_budgets=[pdb])
    assert cycle.nominating_info.nominated_node_name == "n2" and victims(cycle) == ["free"]


def test_smallest_priority_sum_then_latest_start_time():
    pods = [running("x1", "n1", "1500m", priority=1), running("x2", "n1", "1500m", priority=1),
            running("y1", "n2", "3", priority=1)]
    assert preempt([node("n1"), node("n2")], pods, PREEMPTOR).nominating_info.nominated_node_name == "n2"
    pods = [running("old", "n1", "3", start="2026-01-01T00:00:00Z"), running("new", "n2", "3", start="2026-03-01T00:00:00Z")]
    assert preempt([node("n1"), node("n2")], pods, PREEMPTOR).nominating_info.nominated_node_name == "n2"


def test_preemption_policy_never():
    pod = make_pod("high").req(cpu="2").priority(10).preemption_policy("Never").obj()
    cycle = preempt([node("n1"), node("n2")], [running("l1", "n1", "3"), running("l2", "n2", "3")], pod)
    assert cycle.post_filter_result is None
    assert str(cycle.fit_error) == ("0/2 nodes are available: 2 Insufficient cpu. "
                                    "preemption: not eligible due to preemptionPolicy=Never.")


@pytest.mark.parametrize("nodes, pods, message", [
    pytest.param([node(f"n{i}") for i in range(5)], [running(f"big{i}", f"n{i}", "3", priority=100) for i in range(5)],
                 "0/5 nodes are available: 5 Insufficient cpu. preemption: 0/5 nodes are available: "
                 "5 No preemption victims found for incoming pod.", id="no lower-priority pods"),
    pytest.param([make_node("cp").capacity(cpu="4").taint("node-role.kubernetes.io/control-plane").obj(), node("w1")],
                 [running("big", "w1", "3", priority=100)],
                 "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint "
                 "{node-role.kubernetes.io/control-plane: }. preemption: 0/2 nodes are available: "
                 "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.",
                 id="unresolvable nodes are not candidates"),
    pytest.param([node("small", cpu="1")], [running("low", "small", "500m")],
                 "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu.",
                 id="even an empty node is too small"),
])
def test_preemption_failure_messages(nodes, pods, message):
    cycle = preempt(nodes, pods, PREEMPTOR)
    assert str(cycle.fit_error) == message
    assert cycle.post_filter_result is not None and cycle.post_filter_result.nominated_node_name == ""


def test_removing_a_victim_resolves_anti_affinity():
    pods = [running("web-low", "n1", "100m", labels={"app": "web"})]
    pod = make_pod("high").req(cpu="1").priority(10).pod_anti_affinity(HOST, {"app": "web"}).obj()
    cycle = preempt([node("n1")], pods, pod)
    assert str(cycle.fit_error) == "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules."
    assert cycle.nominating_info.nominated_node_name == "n1" and victims(cycle) == ["web-low"]


def test_lower_priority_nominated_pods_are_reported_for_clearing():
    nominator = Nominator()
    nominated = PodInfo(make_pod("waiting").req(cpu="1").priority(1).nominated_node("n1").obj())
    nominator.add_nominated_pod(nominated)
    cycle = preempt([node("n1")], [running("low", "n1", "3")], PREEMPTOR, nominator=nominator)
    assert [p.name for p in cycle.post_filter_result.lower_priority_nominated_pods] == ["waiting"]


def test_nominated_pods_of_higher_priority_are_accounted_for():
    nominator = Nominator()
    nominator.add_nominated_pod(PodInfo(make_pod("vip").req(cpu="3").priority(100).nominated_node("n1").obj()))
    fw = Framework(default_profile(), snapshot=snapshot([node("n1"), node("n2")], [running("x", "n2", "3")]),
                   nominator=nominator)
    cycle = fw.scheduling_cycle(make_pod("p").req(cpu="2").obj(), fw.snapshot)
    assert str(cycle.fit_error).startswith("0/2 nodes are available: 2 Insufficient cpu.")
