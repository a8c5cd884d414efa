"""The room `phalanx bench --cluster` counts on: untainted nodes' pod slots, less the pods already
bound there (kube-system's kube-proxy and kindnet on every node of a kind-sized cluster)."""

from __future__ import annotations

from phalanx.sim.clusterbench import room_for_pods


def _node(name: str, pods: int, tainted: bool = False) -> dict:
    spec = {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]} if tainted else {}
    return {"metadata": {"name": name}, "spec": spec, "status": {"allocatable": {"pods": str(pods)}}}


def test_room_leaves_out_tainted_nodes_and_pods_already_bound():
    nodes = {"items": [_node("cp", 110, tainted=True), _node("w1", 110), _node("w2", 110)]}
    pods = {"items": [{"spec": {"nodeName": n}} for n in ("cp", "cp", "w1", "w1", "w2", "w2")]}
    assert room_for_pods(nodes) == 220
    assert room_for_pods(nodes, pods) == 216
