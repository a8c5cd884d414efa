"""Every in-tree Filter plugin's `filter_nodes` (a whole chunk of nodes at once) gives exactly
its per-node `filter` results; and the default profile's total scores use upstream's weights."""

from __future__ import annotations

from phalanx.scheduler.framework import PodInfo

from .builders import make_node, make_pod
from .harness import framework, scores


ZONE = "topology.kubernetes.io/zone"
EMPTY = make_node("empty").capacity(cpu="4", memory="10000").obj()
BUSY = make_node("busy").capacity(cpu="4", memory="10000").obj()
BUSY_POD = make_pod("e").req(cpu="2", memory="5000").node("busy").obj()
POD = make_pod("p").req(cpu="1", memory="2000").obj()


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


def test_default_profile_totals_use_upstream_weights():
    fw = framework([EMPTY, BUSY], [BUSY_POD])
    # TaintToleration 100*3 + NodeResourcesFit (77 | 27) + BalancedAllocation (97 | 97)
    assert scores(fw, POD) == {"empty": 300 + 77 + 97, "busy": 300 + 27 + 97}
