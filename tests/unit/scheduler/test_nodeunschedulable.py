"""NodeUnschedulable (Filter): cordoned nodes, unless the pod tolerates the unschedulable taint."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code
from phalanx.scheduler.framework.events import QueueingHint

from .builders import make_node, make_pod
from .harness import check, queueing_hint

UU = Code.UnschedulableAndUnresolvable


@pytest.mark.parametrize("node, pod, want", [
    pytest.param(make_node("n").obj(), make_pod().obj(), None, id="schedulable node"),
    pytest.param(make_node("n").unschedulable().obj(), make_pod().obj(), (UU, "node(s) were unschedulable"), id="cordoned"),
    pytest.param(make_node("n").unschedulable().obj(),
                 make_pod().toleration(key="node.kubernetes.io/unschedulable", effect="NoSchedule", operator="Exists").obj(),
                 None, id="cordoned, tolerated"),
])
def test_node_unschedulable(node, pod, want):
    check("NodeUnschedulable", node, pod, want)


def test_node_unschedulable_queueing_hint():
    assert queueing_hint("NodeUnschedulable", make_pod().obj(), make_node("n").unschedulable().obj(),
                         make_node("n").obj(), "Node") == QueueingHint.Queue
