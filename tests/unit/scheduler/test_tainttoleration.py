"""TaintToleration (Filter, Score): untolerated NoSchedule/NoExecute taints reject a node;
fewer untolerated PreferNoSchedule taints score higher."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code
from phalanx.scheduler.framework.events import QueueingHint

from .builders import make_node, make_pod
from .harness import check, framework, only, queueing_hint, scores

UU = Code.UnschedulableAndUnresolvable


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


def test_taint_toleration_prefers_fewer_untolerated_prefer_no_schedule_taints():
    nodes = [make_node("clean").obj(),
             make_node("one").taint("a", "1", "PreferNoSchedule").obj(),
             make_node("two").taint("a", "1", "PreferNoSchedule").taint("b", "2", "PreferNoSchedule").obj(),
             make_node("tolerated").taint("c", "3", "PreferNoSchedule").obj()]
    fw = framework(nodes, plugins=only("TaintToleration", weights={"TaintToleration": 1}))
    pod = make_pod().toleration(key="c", operator="Exists", effect="PreferNoSchedule").obj()
    assert scores(fw, pod) == {"clean": 100, "one": 50, "two": 0, "tolerated": 100}


@pytest.mark.parametrize("pod, old, new, want", [
    (make_pod().obj(), make_node("n").taint("k").obj(), make_node("n").obj(), QueueingHint.Queue),
    (make_pod().obj(), make_node("n").obj(), make_node("n").taint("k").obj(), QueueingHint.QueueSkip),
])
def test_taint_toleration_queueing_hint(pod, old, new, want):
    assert queueing_hint("TaintToleration", pod, old, new, "Node") == want
