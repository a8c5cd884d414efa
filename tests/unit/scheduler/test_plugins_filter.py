"""Filter plugins, one table each: fits, or the exact rejection upstream reports."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code, PodInfo, QueuedPodInfo
from phalanx.scheduler.framework.events import QueueingHint
from phalanx.scheduler.plugins.queuesort import PrioritySort

from .builders import make_node, make_pod
from .harness import filter_one, framework, only

U = Code.Unschedulable
UU = Code.UnschedulableAndUnresolvable


def check(plugin: str, node: dict, pod: dict, want, pods_on_node=(), plugin_config=None):
    fw = framework([node], list(pods_on_node), plugins=only(plugin), plugin_config=plugin_config)
    status = filter_one(fw, pod, node["metadata"]["name"])
    if want is None:
        assert status is None or status.is_success(), status
    else:
        code, *reasons = want
        assert status is not None and (status.code, status.reasons()) == (code, reasons)
        assert status.plugin == plugin


@pytest.mark.parametrize("node, pod, want", [
    pytest.param(make_node("n").obj(), make_pod().obj(), None, id="schedulable node"),
    pytest.param(make_node("n").unschedulable().obj(), make_pod().obj(), (UU, "node(s) were unschedulable"), id="cordoned"),
    pytest.param(make_node("n").unschedulable().obj(),
                 make_pod().toleration(key="node.kubernetes.io/unschedulable", effect="NoSchedule", operator="Exists").obj(),
                 None, id="cordoned, tolerated"),
])
def test_node_unschedulable(node, pod, want):
    check("NodeUnschedulable", node, pod, want)


@pytest.mark.parametrize("pod, want", [
    (make_pod().obj(), None),
    (make_pod().node("n").obj(), None),
    (make_pod().node("other").obj(), (UU, "node(s) didn't match the requested node name")),
])
def test_node_name(pod, want):
    check("NodeName", make_node("n").obj(), pod, want)


@pytest.mark.parametrize("node, pod, want", [
    pytest.param(make_node("n").taint("dedicated", "gpu").obj(), make_pod().obj(),
                 (UU, "node(s) had untolerated taint {dedicated: gpu}"), id="untolerated"),
    pytest.param(make_node("n").taint("node-role.kubernetes.io/control-plane").obj(), make_pod().obj(),
                 (UU, "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"), id="no value"),
    pytest.param(make_node("n").taint("dedicated", "gpu").obj(),
                 make_pod().toleration(key="dedicated", value="gpu", operator="Equal", effect="NoSchedule").obj(), None,
                 id="tolerated by Equal"),
    pytest.param(make_node("n").taint("dedicated", "gpu").obj(), make_pod().toleration(key="dedicated", operator="Exists").obj(),
                 None, id="tolerated by Exists"),
    pytest.param(make_node("n").taint("dedicated", "gpu").obj(), make_pod().toleration().obj(), None,
                 id="empty key with Exists tolerates everything"),
    pytest.param(make_node("n").taint("dedicated", "gpu").obj(),
                 make_pod().toleration(key="dedicated", value="cpu", operator="Equal").obj(),
                 (UU, "node(s) had untolerated taint {dedicated: gpu}"), id="wrong value"),
    pytest.param(make_node("n").taint("dedicated", "gpu", "NoExecute").obj(),
                 make_pod().toleration(key="dedicated", operator="Exists", effect="NoSchedule").obj(),
                 (UU, "node(s) had untolerated taint {dedicated: gpu}"), id="wrong effect"),
    pytest.param(make_node("n").taint("soft", "x", "PreferNoSchedule").obj(), make_pod().obj(), None,
                 id="PreferNoSchedule does not filter"),
    pytest.param(make_node("n").taint("a", "1").taint("b", "2").obj(), make_pod().toleration(key="a", operator="Exists").obj(),
                 (UU, "node(s) had untolerated taint {b: 2}"), id="first untolerated taint is named"),
])
def test_taint_toleration(node, pod, want):
    check("TaintToleration", node, pod, want)


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


PORTS = (U, "node(s) didn't have free ports for the requested pod ports")


@pytest.mark.parametrize("existing, pod, want", [
    pytest.param([], make_pod().host_port(80).obj(), None, id="free"),
    pytest.param([make_pod("e").host_port(80).node("n").obj()], make_pod().host_port(80).obj(), PORTS, id="taken"),
    pytest.param([make_pod("e").host_port(80).node("n").obj()], make_pod().host_port(80, "UDP").obj(), None,
                 id="other protocol"),
    pytest.param([make_pod("e").host_port(80, host_ip="10.0.0.1").node("n").obj()],
                 make_pod().host_port(80, host_ip="10.0.0.2").obj(), None, id="other host IP"),
    pytest.param([make_pod("e").host_port(80, host_ip="10.0.0.1").node("n").obj()], make_pod().host_port(80).obj(), PORTS,
                 id="0.0.0.0 conflicts with any IP"),
])
def test_node_ports(existing, pod, want):
    check("NodePorts", make_node("n").obj(), pod, want, existing)


NODE = make_node("n").capacity({"cpu": "4", "memory": "8Gi", "pods": "3", "example.com/gpu": "2"}).obj()


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


def test_batched_and_per_node_filters_agree():
    """filter_nodes must give exactly what filter gives node by node."""
    nodes = [make_node(f"n{i}").capacity(cpu=str(1 + i % 3), memory="4Gi", pods=str(2 + i % 2))
             .label(ZONE, "abc"[i % 3]).obj() for i in range(12)]
    nodes[4]["spec"]["unschedulable"] = True
    nodes[5]["spec"]["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    pods = [make_pod(f"e{i}").req(cpu="500m", memory="1Gi").node(f"n{i % 12}").obj() for i in range(20)]
    fw = framework(nodes, pods)
    from phalanx.scheduler.framework import CycleState
    for pod in [make_pod().req(cpu="1500m").obj(), make_pod().req(memory="3Gi").node_selector({ZONE: "b"}).obj(),
                make_pod().container().obj()]:
        pi, state = PodInfo(pod), CycleState()
        fw.run_pre_filter_plugins(state, pi, fw.snapshot.list())
        for pl in fw.filter_plugins:
            if pl.name() in state.skip_filter_plugins:
                continue
            batch = dict(pl.filter_nodes(state, pi, fw.snapshot.list()))
            single = {i: st for i, ni in enumerate(fw.snapshot.list()) if (st := pl.filter(state, pi, ni)) is not None}
            assert {i: s.reasons() for i, s in batch.items()} == {i: s.reasons() for i, s in single.items()}, pl.name()


# -- PreEnqueue / QueueSort ---------------------------------------------------------------------

def test_priority_sort():
    less = PrioritySort().less
    hi = QueuedPodInfo(PodInfo(make_pod("hi").priority(10).obj()), timestamp=5)
    lo_old = QueuedPodInfo(PodInfo(make_pod("lo1").obj()), timestamp=1)
    lo_new = QueuedPodInfo(PodInfo(make_pod("lo2").obj()), timestamp=2)
    assert sorted([lo_new, hi, lo_old], key=__import__("functools").cmp_to_key(
        lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))) == [hi, lo_old, lo_new]


# -- queueing hints --------------------------------------------------------------------------------

def _hint(plugin: str, pod: dict, old, new, resource: str):
    fw = framework([make_node("n").obj()])
    for ev in fw.plugin(plugin).events_to_register():
        if ev.event.resource == resource and ev.queueing_hint_fn is not None:
            return ev.queueing_hint_fn(pod, old, new)
    raise AssertionError("no hint")


@pytest.mark.parametrize("plugin, pod, old, new, resource, want", [
    ("TaintToleration", make_pod().obj(), make_node("n").taint("k").obj(), make_node("n").obj(), "Node", QueueingHint.Queue),
    ("TaintToleration", make_pod().obj(), make_node("n").obj(), make_node("n").taint("k").obj(), "Node", QueueingHint.QueueSkip),
    ("NodeAffinity", make_pod().node_selector(zone="a").obj(), make_node("n").obj(), make_node("n").label("zone", "a").obj(),
     "Node", QueueingHint.Queue),
    ("NodeAffinity", make_pod().node_selector(zone="a").obj(), None, make_node("n").label("zone", "b").obj(),
     "Node", QueueingHint.QueueSkip),
    ("NodeResourcesFit", make_pod().req(cpu="1").obj(), make_pod("x").req(cpu="1").node("n").obj(), None, "Pod",
     QueueingHint.Queue),
    ("NodeResourcesFit", make_pod().req(cpu="1").obj(), make_pod("x").req(cpu="1").obj(), None, "Pod",
     QueueingHint.QueueSkip),
    ("NodeResourcesFit", make_pod().req(cpu="8").obj(), None, make_node("n").capacity(cpu="4").obj(), "Node",
     QueueingHint.QueueSkip),
    ("NodeResourcesFit", make_pod().req(cpu="2").obj(), make_node("n").capacity(cpu="1").obj(),
     make_node("n").capacity(cpu="4").obj(), "Node", QueueingHint.Queue),
    ("NodeUnschedulable", make_pod().obj(), make_node("n").unschedulable().obj(), make_node("n").obj(), "Node",
     QueueingHint.Queue),
    ("SchedulingGates", make_pod("p").scheduling_gates("g").obj(), make_pod("p").scheduling_gates("g").obj(),
     make_pod("p").obj(), "Pod", QueueingHint.Queue),
])
def test_queueing_hints(plugin, pod, old, new, resource, want):
    assert _hint(plugin, pod, old, new, resource) == want
