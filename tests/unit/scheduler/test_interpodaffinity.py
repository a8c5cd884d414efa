"""InterPodAffinity (PreFilter, Filter, PreScore, Score): required (anti-)affinity with
upstream's messages, existing pods' anti-affinity, and preferred terms' score order."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code, CycleState, PodInfo

from .builders import make_pod
from .harness import app, framework, only, scores, verdicts, zone_nodes

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
AFF = (Code.UnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules")
ANTI = (Code.Unschedulable, "node(s) didn't match pod anti-affinity rules")
EXISTING_ANTI = (Code.Unschedulable, "node(s) didn't satisfy existing pods anti-affinity rules")


@pytest.mark.parametrize("existing, pod, want", [
    pytest.param([app("db", "n0", "db")], make_pod("p").pod_affinity(ZONE, {"app": "db"}).obj(),
                 {"n0": None, "n1": None, "n2": AFF, "n3": AFF}, id="affinity to a zone"),
    pytest.param([], make_pod("p").label("app", "web").pod_affinity(ZONE, {"app": "web"}).obj(),
                 {"n0": None, "n1": None, "n2": None, "n3": AFF}, id="first pod of a self-affine group"),
    pytest.param([app("w", "n0", "web")], make_pod("p").pod_anti_affinity(HOST, {"app": "web"}).obj(),
                 {"n0": ANTI, "n1": None, "n2": None, "n3": None}, id="anti-affinity per host"),
    pytest.param([app("w", "n0", "web")], make_pod("p").pod_anti_affinity(ZONE, {"app": "web"}).obj(),
                 {"n0": ANTI, "n1": ANTI, "n2": None, "n3": None}, id="anti-affinity per zone"),
    pytest.param([make_pod("w").label("app", "guard").pod_anti_affinity(HOST, {"app": "web"}).node("n2").obj()],
                 make_pod("p").label("app", "web").obj(),
                 {"n0": None, "n1": None, "n2": EXISTING_ANTI, "n3": None}, id="existing pod's anti-affinity"),
    pytest.param([app("db", "n0", "db", ns="other")], make_pod("p").pod_affinity(ZONE, {"app": "db"}).obj(),
                 {"n0": AFF, "n1": AFF, "n2": AFF, "n3": AFF}, id="terms default to the pod's namespace"),
    pytest.param([app("db", "n0", "db", ns="other")],
                 make_pod("p").pod_affinity(ZONE, {"app": "db"}, namespaces=["other"]).obj(),
                 {"n0": None, "n1": None, "n2": AFF, "n3": AFF}, id="explicit namespaces"),
])
def test_inter_pod_affinity_filter(existing, pod, want):
    assert verdicts("InterPodAffinity", zone_nodes("a", "a", "b", ""), existing, pod) == want


def test_inter_pod_affinity_prefilter_skips_plain_pods():
    fw = framework(zone_nodes("a"), [app("x", "n0")], plugins=only("InterPodAffinity"))
    state = CycleState()
    fw.run_pre_filter_plugins(state, PodInfo(make_pod().obj()), fw.snapshot.list())
    assert "InterPodAffinity" in state.skip_filter_plugins


def test_inter_pod_affinity_score():
    nodes = zone_nodes("a", "a", "b")
    existing = [app("db", "n0", "db"), make_pod("cache").label("app", "cache").node("n2").obj()]
    pod = (make_pod("p").pod_affinity(ZONE, {"app": "db"}, weight=10)
           .pod_anti_affinity(HOST, {"app": "cache"}, weight=5).obj())
    fw = framework(nodes, existing, plugins=only("InterPodAffinity", weights={"InterPodAffinity": 1}))
    # zone a: +10 (n0, n1); n2: -5 -> normalized over [-5, 10]
    assert scores(fw, pod) == {"n0": 100, "n1": 100, "n2": 0}


def test_existing_pods_preferences_and_hard_affinity_count_in_score():
    nodes = zone_nodes("a", "b")
    existing = [make_pod("e").label("app", "e").pod_affinity(ZONE, {"app": "web"}).node("n1").obj()]
    fw = framework(nodes, existing, plugins=only("InterPodAffinity", weights={"InterPodAffinity": 1}))
    # The existing pod's required affinity matches the incoming pod: hardPodAffinityWeight 1 for zone b.
    assert scores(fw, make_pod("p").label("app", "web").obj()) == {"n0": 0, "n1": 100}
