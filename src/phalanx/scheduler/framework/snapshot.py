"""The frozen view of the cluster one scheduling cycle works on (upstream `cache.Snapshot`).

Build one for tests or a dry run straight from API objects:

    snap = Snapshot.from_nodes_and_pods(nodes, pods)   # pods with spec.nodeName are placed
    snap.get("node-1").requested.milli_cpu
    snap.list()                                          # NodeInfos in a stable order
    snap.have_pods_with_affinity_list()                  # nodes hosting pods with (anti-)affinity

The scheduler cache (someone else's) keeps one Snapshot and refreshes it incrementally before
each cycle, handing over a *copy* of each NodeInfo whose generation moved:

    snap.update_node_info(node_info.snapshot())           # add or replace, O(1)
    snap.remove_node("node-1")

Within a cycle (or a PodGroup cycle) pods can be assumed onto the snapshot so later pods see them:

    snap.add_pod(pod_info, "node-1"); snap.remove_pod(pod_info, "node-1")

Those mutate the snapshot's own NodeInfo, so a snapshot built from a cache must hold copies.
"""

from __future__ import annotations

import builtins
from typing import Iterable, Optional

from .constants import Obj
from .types import NodeInfo, PodInfo


class NodeNotFoundError(KeyError):
    def __str__(self) -> str:
        return f"nodeinfo not found for node name {self.args[0]!r}"


class Snapshot:
    __slots__ = ("node_info_map", "_list", "_index", "_with_affinity", "_with_required_anti_affinity",
                 "_affinity_list", "_anti_affinity_list", "generation")

    def __init__(self, node_infos: Iterable[NodeInfo] = ()):
        self.node_info_map: dict[str, NodeInfo] = {}
        self._list: list[NodeInfo] = []
        self._index: dict[str, int] = {}
        self._with_affinity: dict[str, NodeInfo] = {}
        self._with_required_anti_affinity: dict[str, NodeInfo] = {}
        self._affinity_list: Optional[list[NodeInfo]] = None
        self._anti_affinity_list: Optional[list[NodeInfo]] = None
        self.generation = 0
        for ni in node_infos:
            self.update_node_info(ni)

    @classmethod
    def from_nodes_and_pods(cls, nodes: Iterable[Obj], pods: Iterable[Obj | PodInfo] = ()) -> "Snapshot":
        """A snapshot of `nodes` with every pod bound to one of them (spec.nodeName) placed on it."""
        infos: dict[str, NodeInfo] = {}
        order = []
        for n in nodes:
            ni = NodeInfo(n)
            infos[ni.name] = ni
            order.append(ni)
        for p in pods:
            pi = p if isinstance(p, PodInfo) else PodInfo(p)
            host = infos.get(pi.node_name)
            if host is not None:
                host.add_pod_info(pi)
        return cls(order)

    # -- lister (upstream NodeInfoLister) -----------------------------------------------------
    def node_infos(self) -> "Snapshot":
        return self

    def list(self) -> list[NodeInfo]:
        return self._list

    def num_nodes(self) -> int:
        return len(self._list)

    def __len__(self) -> int:
        return len(self._list)

    def get(self, name: str) -> NodeInfo:
        try:
            return self.node_info_map[name]
        except KeyError:
            raise NodeNotFoundError(name) from None

    def have_pods_with_affinity_list(self) -> builtins.list[NodeInfo]:
        if self._affinity_list is None:
            self._affinity_list = list(self._with_affinity.values())
        return self._affinity_list

    def have_pods_with_required_anti_affinity_list(self) -> builtins.list[NodeInfo]:
        if self._anti_affinity_list is None:
            self._anti_affinity_list = list(self._with_required_anti_affinity.values())
        return self._anti_affinity_list

    # -- incremental maintenance -----------------------------------------------------------------
    def update_node_info(self, ni: NodeInfo) -> None:
        """Add a node, or replace the NodeInfo of a node already present (keeps its position)."""
        if ni.node is None:
            self.remove_node(ni.name)
            return
        name = ni.name
        idx = self._index.get(name)
        if idx is None:
            self._index[name] = len(self._list)
            self._list.append(ni)
        else:
            self._list[idx] = ni
        self.node_info_map[name] = ni
        self._refresh_membership(ni)
        if ni.generation > self.generation:
            self.generation = ni.generation

    def remove_node(self, name: str) -> None:
        idx = self._index.pop(name, None)
        if idx is None:
            return
        del self._list[idx]
        for i in range(idx, len(self._list)):
            self._index[self._list[i].name] = i
        del self.node_info_map[name]
        if self._with_affinity.pop(name, None) is not None:
            self._affinity_list = None
        if self._with_required_anti_affinity.pop(name, None) is not None:
            self._anti_affinity_list = None

    def _refresh_membership(self, ni: NodeInfo) -> None:
        name = ni.name
        had = name in self._with_affinity
        if ni.pods_with_affinity:
            if not had or self._with_affinity[name] is not ni:
                self._with_affinity[name] = ni
                self._affinity_list = None
        elif had:
            del self._with_affinity[name]
            self._affinity_list = None
        had = name in self._with_required_anti_affinity
        if ni.pods_with_required_anti_affinity:
            if not had or self._with_required_anti_affinity[name] is not ni:
                self._with_required_anti_affinity[name] = ni
                self._anti_affinity_list = None
        elif had:
            del self._with_required_anti_affinity[name]
            self._anti_affinity_list = None

    # -- in-cycle assumption ---------------------------------------------------------------------
    def add_pod(self, pod: PodInfo | Obj, node_name: str) -> NodeInfo:
        """Place a pod on a node of this snapshot (an assumed pod in a group cycle)."""
        pi = pod if isinstance(pod, PodInfo) else PodInfo(pod)
        ni = self.get(node_name)
        ni.add_pod_info(pi)
        self._refresh_membership(ni)
        return ni

    def remove_pod(self, pod: PodInfo | Obj, node_name: str) -> NodeInfo:
        ni = self.get(node_name)
        ni.remove_pod(pod)
        self._refresh_membership(ni)
        return ni

    def clone(self) -> "Snapshot":
        """A deep-enough copy for what-if evaluation: every NodeInfo copied."""
        return Snapshot(ni.snapshot() for ni in self._list)

    def __repr__(self) -> str:
        return f"Snapshot(nodes={len(self._list)}, generation={self.generation})"
