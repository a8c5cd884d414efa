"""NodeAffinity (PreFilter, Filter, Score): node selectors and required terms with upstream's
message, node names narrowing PreFilter, added affinity, preferred terms' scores."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code, PodInfo
from phalanx.scheduler.framework.config import PluginConfig
from phalanx.scheduler.framework.events import QueueingHint

from .builders import make_node, make_pod
from .harness import check, framework, only, queueing_hint, scores

UU = Code.UnschedulableAndUnresolvable
ZONE = "topology.kubernetes.io/zone"
AFFINITY = (UU, "node(s) didn't match Pod's node affinity/selector")


@pytest.mark.parametrize("pod, want", [
    pytest.param(make_pod().obj(), None, id="no selector"),
    pytest.param(make_pod().node_selector({ZONE: "a"}).obj(), None, id="selector matches"),
    pytest.param(make_pod().node_selector({ZONE: "b"}).obj(), AFFINITY, id="selector mismatch"),
    pytest.param(make_pod().node_selector({ZONE: "a", "disk": "ssd"}).obj(), AFFINITY, id="all selector keys must match"),
    pytest.param(make_pod().node_affinity_in(ZONE, ["b", "a"]).obj(), None, id="In"),
    pytest.param(make_pod().node_affinity_not_in(ZONE, ["a"]).obj(), AFFINITY, id="NotIn"),
    pytest.param(make_pod().node_affinity_in(ZONE, ["b"]).node_affinity_in("kubernetes.io/hostname", ["n"]).obj(), None,
                 id="terms are ORed"),
    pytest.param(make_pod().node_selector({ZONE: "a"}).node_affinity_in(ZONE, ["b"]).obj(), AFFINITY,
                 id="selector AND affinity"),
    pytest.param(make_pod().node_affinity_in("cpus", ["4"], operator="Gt").obj(), None, id="Gt"),
    pytest.param(make_pod().node_affinity_names(["n"]).obj(), None, id="matchFields metadata.name"),
])
def test_node_affinity(pod, want):
    check("NodeAffinity", make_node("n").label(ZONE, "a").label("cpus", "8").obj(), pod, want)


def test_node_affinity_prefilter_narrows_to_named_nodes():
    fw = framework([make_node(f"n{i}").capacity(cpu="1").obj() for i in range(4)], plugins=only("NodeAffinity", "NodeResourcesFit"))
    pod = make_pod().node_affinity_names(["n1", "n3", "ghost"]).obj()
    from phalanx.scheduler.framework import CycleState
    result, status, plugins = fw.run_pre_filter_plugins(CycleState(), PodInfo(pod), fw.snapshot.list())
    assert status is None and result.node_names == {"n1", "n3", "ghost"} and plugins == ["NodeAffinity"]
    conflict = make_pod().node_affinity_names(["n1"]).obj()
    conflict["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchFields"].append({"key": "metadata.name", "operator": "In", "values": ["n2"]})
    _, status, _ = fw.run_pre_filter_plugins(CycleState(), PodInfo(conflict), fw.snapshot.list())
    assert (status.code, status.message()) == (UU, "pod affinity terms conflict")


def test_node_affinity_added_affinity():
    cfg = [{"name": "NodeAffinity", "args": {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["batch"]}]}]}}}}]
    from phalanx.scheduler.framework.config import PluginConfig
    check("NodeAffinity", make_node("n").obj(), make_pod().obj(),
          (UU, "node(s) didn't match scheduler-enforced node affinity"),
          plugin_config=[PluginConfig(c["name"], c["args"]) for c in cfg])


def test_node_affinity_preferred_terms():
    nodes = [make_node("zone").label("zone", "a").obj(), make_node("ssd").label("disk", "ssd").obj(),
             make_node("both").label("zone", "a").label("disk", "ssd").obj(), make_node("none").obj()]
    fw = framework(nodes, plugins=only("NodeAffinity", weights={"NodeAffinity": 1}))
    pod = make_pod().preferred_node_affinity(2, "zone", ["a"]).preferred_node_affinity(5, "disk", ["ssd"]).obj()
    assert scores(fw, pod) == {"zone": 28, "ssd": 71, "both": 100, "none": 0}


@pytest.mark.parametrize("pod, old, new, want", [
    (make_pod().node_selector(zone="a").obj(), make_node("n").obj(), make_node("n").label("zone", "a").obj(),
     QueueingHint.Queue),
    (make_pod().node_selector(zone="a").obj(), None, make_node("n").label("zone", "b").obj(), QueueingHint.QueueSkip),
])
def test_node_affinity_queueing_hint(pod, old, new, want):
    assert queueing_hint("NodeAffinity", pod, old, new, "Node") == want
