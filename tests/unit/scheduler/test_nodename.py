"""NodeName (Filter): a pod with `spec.nodeName` fits that node only."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code

from .builders import make_node, make_pod
from .harness import check, only

UU = Code.UnschedulableAndUnresolvable


@pytest.mark.parametrize("pod, want", [
    (make_pod().obj(), None),
    (make_pod().node("n").obj(), None),
    (make_pod().node("other").obj(), (UU, "node(s) didn't match the requested node name")),
])
def test_node_name(pod, want):
    check("NodeName", make_node("n").obj(), pod, want)
