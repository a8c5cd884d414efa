"""Score plugins: exact scores where upstream's arithmetic is easy to follow, order otherwise."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework.config import PluginConfig

from .builders import make_node, make_pod
from .harness import framework, only, scores

# Memory in plain bytes keeps the arithmetic readable: 4 CPU / 10000 bytes.
EMPTY = make_node("empty").capacity(cpu="4", memory="10000").obj()
BUSY = make_node("busy").capacity(cpu="4", memory="10000").obj()
BUSY_POD = make_pod("e").req(cpu="2", memory="5000").node("busy").obj()
POD = make_pod("p").req(cpu="1", memory="2000").obj()


def fit_scores(strategy: dict) -> dict[str, int]:
    fw = framework([EMPTY, BUSY], [BUSY_POD], plugins=only("NodeResourcesFit", weights={"NodeResourcesFit": 1}),
                   plugin_config=[PluginConfig("NodeResourcesFit", {"scoringStrategy": strategy})])
    return scores(fw, POD)


@pytest.mark.parametrize("strategy, want", [
    # empty: cpu (4000-1000)*100/4000=75, mem (10000-2000)*100/10000=80 -> 155/2
    # busy:  cpu (4000-3000)*100/4000=25, mem (10000-7000)*100/10000=30 -> 55/2
    pytest.param({"type": "LeastAllocated"}, {"empty": 77, "busy": 27}, id="LeastAllocated"),
    pytest.param({"type": "MostAllocated"}, {"empty": 22, "busy": 72}, id="MostAllocated"),
    # cpu weight 3: empty (75*3+80)/4, busy (25*3+30)/4
    pytest.param({"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]},
                 {"empty": 76, "busy": 26}, id="weights"),
    # bin packing shape: utilization 25%/20% -> 25,20 -> round(22.5)=23; 75%/70% -> round(72.5)=73
    pytest.param({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}},
        {"empty": 23, "busy": 73}, id="RequestedToCapacityRatio"),
])
def test_node_resources_fit_strategies(strategy, want):
    assert fit_scores(strategy) == want


def test_least_allocated_counts_missing_requests_as_100m_200mi():
    node = make_node("n").capacity(cpu="1", memory="1Gi").obj()
    fw = framework([node], plugins=only("NodeResourcesFit", weights={"NodeResourcesFit": 1}))
    # cpu (1000-100)*100/1000 = 90, memory (1Gi-200Mi)*100/1Gi = 80 -> 85
    assert scores(fw, make_pod().container().obj()) == {"n": 85}


def test_extended_resource_scored_only_when_requested():
    nodes = [make_node("a").capacity({"cpu": "4", "memory": "10000", "example.com/gpu": "4"}).obj(),
             make_node("b").capacity({"cpu": "4", "memory": "10000", "example.com/gpu": "8"}).obj()]
    cfg = [PluginConfig("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "example.com/gpu", "weight": 2}]}})]
    fw = framework(nodes, plugins=only("NodeResourcesFit", weights={"NodeResourcesFit": 1}), plugin_config=cfg)
    # gpu: a 2/4 -> 50, b 2/8 -> 25; cpu 25, mem 20: a (25+20+100)/4 = 36, b (25+20+50)/4 = 23
    assert scores(fw, make_pod().req({"example.com/gpu": "2"}, cpu="1", memory="2000").obj()) == {"a": 36, "b": 23}
    # not requested: left out entirely -> (25 + 20) / 2
    assert scores(fw, POD) == {"a": 22, "b": 22}


@pytest.mark.parametrize("existing, want", [
    # fractions .25/.2 -> std .025 -> 97 (truncated)
    ([], 97),
    # cpu (2+1)/4=.75, mem (1000+2000)/10000=.3 -> std .225 -> 77
    ([make_pod("e").req(cpu="2", memory="1000").node("busy").obj()], 77),
])
def test_balanced_allocation(existing, want):
    fw = framework([BUSY], existing, plugins=only("NodeResourcesBalancedAllocation",
                                                  weights={"NodeResourcesBalancedAllocation": 1}))
    assert scores(fw, POD) == {"busy": want}


def test_balanced_allocation_skips_best_effort_pods():
    fw = framework([EMPTY, BUSY], [BUSY_POD], plugins=only("NodeResourcesBalancedAllocation",
                                                           weights={"NodeResourcesBalancedAllocation": 1}))
    assert scores(fw, make_pod().container().obj()) == {"empty": 0, "busy": 0}


def test_taint_toleration_prefers_fewer_untolerated_prefer_no_schedule_taints():
    nodes = [make_node("clean").obj(),
             make_node("one").taint("a", "1", "PreferNoSchedule").obj(),
             make_node("two").taint("a", "1", "PreferNoSchedule").taint("b", "2", "PreferNoSchedule").obj(),
             make_node("tolerated").taint("c", "3", "PreferNoSchedule").obj()]
    fw = framework(nodes, plugins=only("TaintToleration", weights={"TaintToleration": 1}))
    pod = make_pod().toleration(key="c", operator="Exists", effect="PreferNoSchedule").obj()
    assert scores(fw, pod) == {"clean": 100, "one": 50, "two": 0, "tolerated": 100}


def test_node_affinity_preferred_terms():
    nodes = [make_node("zone").label("zone", "a").obj(), make_node("ssd").label("disk", "ssd").obj(),
             make_node("both").label("zone", "a").label("disk", "ssd").obj(), make_node("none").obj()]
    fw = framework(nodes, plugins=only("NodeAffinity", weights={"NodeAffinity": 1}))
    pod = make_pod().preferred_node_affinity(2, "zone", ["a"]).preferred_node_affinity(5, "disk", ["ssd"]).obj()
    assert scores(fw, pod) == {"zone": 28, "ssd": 71, "both": 100, "none": 0}


def test_default_profile_totals_use_upstream_weights():
    fw = framework([EMPTY, BUSY], [BUSY_POD])
    # TaintToleration 100*3 + NodeResourcesFit (77 | 27) + BalancedAllocation (97 | 97)
    assert scores(fw, POD) == {"empty": 300 + 77 + 97, "busy": 300 + 27 + 97}
