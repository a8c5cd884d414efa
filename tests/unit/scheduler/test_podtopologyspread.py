"""PodTopologySpread (PreFilter, Filter, Score): skew per topology domain with upstream's
messages, matchLabelKeys, node inclusion policies, system default constraints, score order."""

from __future__ import annotations

import pytest

from phalanx.machinery.selectors import label_selector_from_object
from phalanx.scheduler.framework import Code, CycleState, Framework, PodInfo
from phalanx.scheduler.framework.config import default_profile

from .builders import make_node, make_pod
from .harness import app, framework, only, scores, snapshot, verdicts, zone_nodes

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
SPREAD = (Code.Unschedulable, "node(s) didn't match pod topology spread constraints")
MISSING = (Code.UnschedulableAndUnresolvable, "node(s) didn't match pod topology spread constraints (missing required label)")
SPREAD_POD = make_pod("p").label("app", "x").spread(1, ZONE, {"app": "x"}).obj()


@pytest.mark.parametrize("existing, pod, want", [
    pytest.param([app("a", "n0"), app("b", "n1")], SPREAD_POD,
                 {"n0": SPREAD, "n1": SPREAD, "n2": None, "n3": None}, id="zone a has 2, zone b 0"),
    pytest.param([app("a", "n0"), app("b", "n2")], SPREAD_POD,
                 {"n0": None, "n1": None, "n2": None, "n3": None}, id="balanced"),
    pytest.param([app("a", "n0"), app("b", "n1", label="other"), app("c", "n0", ns="elsewhere")], SPREAD_POD,
                 {"n0": SPREAD, "n1": SPREAD, "n2": None, "n3": None}, id="only matching pods of the namespace count"),
    pytest.param([app("a", "n0"), app("b", "n2")],
                 make_pod("p").label("app", "x").spread(1, ZONE, {"app": "x"}, min_domains=3).obj(),
                 {"n0": SPREAD, "n1": SPREAD, "n2": SPREAD, "n3": SPREAD},
                 id="fewer domains than minDomains: the minimum counts as 0"),
    pytest.param([app("a", "n0")], make_pod("p").label("app", "other").spread(1, ZONE, {"app": "x"}).obj(),
                 {"n0": None, "n1": None, "n2": None, "n3": None}, id="a pod not matching itself adds nothing"),
])
def test_spread_filter(existing, pod, want):
    assert verdicts("PodTopologySpread", zone_nodes("a", "a", "b", "b"), existing, pod) == want


def test_spread_filter_missing_label_and_taints_policy():
    nodes = zone_nodes("a", "b", "")
    nodes[1]["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    existing = [app("a", "n0")]
    # zone b counts as a domain (0 pods) unless tainted nodes are excluded.
    assert verdicts("PodTopologySpread", nodes, existing, SPREAD_POD) == {"n0": SPREAD, "n1": None, "n2": MISSING}
    honor = make_pod("p").label("app", "x").spread(1, ZONE, {"app": "x"}, node_taints_policy="Honor").obj()
    assert verdicts("PodTopologySpread", nodes, existing, honor) == {"n0": None, "n1": None, "n2": MISSING}


def test_spread_match_label_keys():
    pod = make_pod("p").label("app", "x").label("rev", "2").spread(1, ZONE, {"app": "x"}, match_label_keys=["rev"]).obj()
    existing = [make_pod("old1").label("app", "x").label("rev", "1").node("n0").obj(),
                make_pod("old2").label("app", "x").label("rev", "1").node("n1").obj()]
    # Pods of revision 1 do not count for revision 2.
    assert verdicts("PodTopologySpread", zone_nodes("a", "a", "b"), existing, pod) == {"n0": None, "n1": None, "n2": None}


def test_spread_prefilter_skips_pods_without_constraints():
    fw = framework(zone_nodes("a"), plugins=only("PodTopologySpread"))
    state = CycleState()
    fw.run_pre_filter_plugins(state, PodInfo(make_pod().obj()), fw.snapshot.list())
    assert "PodTopologySpread" in state.skip_filter_plugins


def test_spread_score_prefers_emptier_hosts():
    nodes = [make_node(f"n{i}").capacity(cpu="8").obj() for i in range(3)]
    existing = [app("a", "n0"), app("b", "n0"), app("c", "n1")]
    pod = make_pod("p").label("app", "x").spread(1, HOST, {"app": "x"}, when="ScheduleAnyway").obj()
    fw = framework(nodes, existing, plugins=only("PodTopologySpread", weights={"PodTopologySpread": 1}))
    # raw: cnt*log(3+2) -> 3, 2, 0; normalized 100*(max+min-s)/max
    assert scores(fw, pod) == {"n0": 0, "n1": 33, "n2": 100}


def test_system_default_constraints_apply_with_a_selector():
    nodes = zone_nodes("a", "a", "b") + [make_node("nolabel").capacity(cpu="8").obj()]
    existing = [app("a", "n0"), app("b", "n0"), app("c", "n1")]
    selector = label_selector_from_object({"matchLabels": {"app": "x"}})
    fw_pts = Framework(default_profile(), snapshot=snapshot(nodes, existing), default_spread_selector=lambda pi: selector)
    pod = make_pod("p").label("app", "x").req(cpu="1").obj()
    state = CycleState()
    pi = PodInfo(pod)
    fw_pts.run_pre_filter_plugins(state, pi, fw_pts.snapshot.list())
    result = fw_pts.prioritize_nodes(state, pi, fw_pts.snapshot.list())
    spread = dict(zip([n.name for n in result.nodes], result.plugin_scores["PodTopologySpread"]))
    assert spread["n2"] > spread["n1"] > spread["n0"]
    assert spread["nolabel"] > 0, "system defaults still spread by hostname on nodes without a zone"
    # Without a selector (no Service/ReplicaSet selects the pod) the defaults do nothing.
    plain = Framework(default_profile(), snapshot=snapshot(nodes, existing))
    state = CycleState()
    plain.run_pre_filter_plugins(state, pi, plain.snapshot.list())
    assert "PodTopologySpread" not in plain.prioritize_nodes(state, pi, plain.snapshot.list()).plugin_scores
