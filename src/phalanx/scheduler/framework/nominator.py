"""The Nominator: pods nominated to nodes by preemption, which Filter counts on those nodes
(upstream's PodNominator, kept by the scheduling queue there)."""

from __future__ import annotations

from .types import PodInfo


class Nominator:
    """Pods nominated to nodes (by preemption), as the queue's PodNominator keeps them."""

    def __init__(self) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    def add_nominated_pod(self, pod: PodInfo, node_name: str = "") -> None:
        node_name = node_name or pod.nominated_node_name
        self.delete_nominated_pod_if_exists(pod)
        if not node_name:
            return
        self._by_node.setdefault(node_name, []).append(pod)
        self._node_of[pod.key] = node_name

    def delete_nominated_pod_if_exists(self, pod: PodInfo) -> None:
        self.delete_nominated_key(pod.key)

    def delete_nominated_key(self, key: str) -> None:
        """`delete_nominated_pod_if_exists` by `PodInfo.key` (a deleted pod needs no PodInfo built)."""
        node = self._node_of.pop(key, None)
        if node is None:
            return
        lst = [p for p in self._by_node.get(node, []) if p.key != key]
        if lst:
            self._by_node[node] = lst
        else:
            self._by_node.pop(node, None)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._by_node.get(node_name, ()))

    def nominated_node_names(self) -> set[str]:
        return set(self._by_node)
