"""NodeResourcesFit (Filter, Score): insufficient resources with upstream's reasons, ignored
resources, and the scoring strategies' exact scores."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code
from phalanx.scheduler.framework.config import PluginConfig
from phalanx.scheduler.framework.events import QueueingHint

from .builders import make_node, make_pod
from .harness import check, framework, only, queueing_hint, scores

U = Code.Unschedulable
NODE = make_node("n").capacity({"cpu": "4", "memory": "8Gi", "pods": "3", "example.com/gpu": "2"}).obj()
EMPTY = make_node("empty").capacity(cpu="4", memory="10000").obj()
BUSY = make_node("busy").capacity(cpu="4", memory="10000").obj()
BUSY_POD = make_pod("e").req(cpu="2", memory="5000").node("busy").obj()
POD = make_pod("p").req(cpu="1", memory="2000").obj()


def fit_scores(strategy: dict) -> dict[str, int]:
    fw = framework([EMPTY, BUSY], [BUSY_POD], plugins=only("NodeResourcesFit", weights={"NodeResourcesFit": 1}),
                   plugin_config=[PluginConfig("NodeResourcesFit", {"scoringStrategy": strategy})])
    return scores(fw, POD)


@pytest.mark.parametrize("existing, pod, want", [
    pytest.param([], make_pod().req(cpu="4", memory="8Gi").obj(), None, id="exactly fits"),
    pytest.param([make_pod("e").req(cpu="3").node("n").obj()], make_pod().req(cpu="2").obj(), (U, "Insufficient cpu"),
                 id="cpu"),
    pytest.param([make_pod("e").req(memory="7Gi").node("n").obj()], make_pod().req(memory="2Gi").obj(),
                 (U, "Insufficient memory"), id="memory"),
    pytest.param([make_pod(f"e{i}").node("n").obj() for i in range(3)], make_pod().obj(), (U, "Too many pods"),
                 id="pods"),
    pytest.param([make_pod(f"e{i}").req(cpu="1500m", memory="4Gi").node("n").obj() for i in range(3)],
                 make_pod().req(cpu="1", memory="1Gi").obj(), (U, "Too many pods", "Insufficient cpu", "Insufficient memory"),
                 id="every reason, in upstream's order"),
    pytest.param([], make_pod().req({"example.com/gpu": "3"}).obj(), (U, "Insufficient example.com/gpu"), id="extended"),
    pytest.param([], make_pod().req({"example.com/fpga": "1"}).obj(), (U, "Insufficient example.com/fpga"),
                 id="extended resource the node lacks"),
    pytest.param([], make_pod().req(ephemeral_storage="1Gi").obj(), (U, "Insufficient ephemeral-storage"),
                 id="ephemeral storage"),
    pytest.param([], make_pod().req(cpu="1").init_req(cpu="5").obj(), (U, "Insufficient cpu"), id="init container peak"),
    pytest.param([], make_pod().req(cpu="3").overhead(cpu="2").obj(), (U, "Insufficient cpu"), id="overhead counts"),
    pytest.param([], make_pod().container().obj(), None, id="best effort needs only a pod slot"),
])
def test_node_resources_fit(existing, pod, want):
    check("NodeResourcesFit", NODE, pod, want, existing)


def test_node_resources_fit_ignored_resources():
    from phalanx.scheduler.framework.config import PluginConfig
    pod = make_pod().req({"example.com/fpga": "1", "other.io/x": "1"}).obj()
    check("NodeResourcesFit", NODE, pod, None, plugin_config=[PluginConfig("NodeResourcesFit", {
        "ignoredResources": ["example.com/fpga"], "ignoredResourceGroups": ["other.io"]})])


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


@pytest.mark.parametrize("pod, old, new, resource, want", [
    (make_pod().req(cpu="1").obj(), make_pod("x").req(cpu="1").node("n").obj(), None, "Pod", QueueingHint.Queue),
    (make_pod().req(cpu="1").obj(), make_pod("x").req(cpu="1").obj(), None, "Pod", QueueingHint.QueueSkip),
    (make_pod().req(cpu="8").obj(), None, make_node("n").capacity(cpu="4").obj(), "Node", QueueingHint.QueueSkip),
    (make_pod().req(cpu="2").obj(), make_node("n").capacity(cpu="1").obj(), make_node("n").capacity(cpu="4").obj(),
     "Node", QueueingHint.Queue),
])
def test_node_resources_fit_queueing_hint(pod, old, new, resource, want):
    assert queueing_hint("NodeResourcesFit", pod, old, new, resource) == want
