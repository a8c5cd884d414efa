"""NodePorts (Filter): host ports in use on the node, by protocol and IP."""

from __future__ import annotations

import pytest

from phalanx.scheduler.framework import Code

from .builders import make_node, make_pod
from .harness import check

U = Code.Unschedulable
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
