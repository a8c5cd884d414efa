"""The scheduler cache: nodes with the pods on them, assumed pods, and the per-cycle snapshot.

The cache is the scheduler's truth between API round trips (upstream `backend/cache`):

- informer events add, update and remove Nodes and bound Pods;
- `assume(pod_info, node)` places a pod the scheduler decided on before its binding reaches the
  API, so the next cycle sees the node's resources as used; `forget` undoes it when binding fails;
  the informer's update with `spec.nodeName` set confirms an assumed pod;
- `update_snapshot(snapshot)` copies into the cycle's `Snapshot` only the nodes that changed since
  the last call (NodeInfo copies, so a cycle may assume pods on its snapshot without touching the
  cache), which keeps the per-cycle cost independent of cluster size.

It also counts, per PodGroup (`namespace/name`), the pods that are assumed or bound: what gang
scheduling calls the group's scheduled pods.
"""

from __future__ import annotations

from typing import Iterable, Optional

from .framework.snapshot import Snapshot
from .framework.constants import Obj
from .framework.types import NodeInfo, PodInfo


def pod_key(pod: Obj) -> str:
    """The key the framework uses for a pod (`PodInfo.key`): its uid, else namespace/name."""
    md = pod.get("metadata") or {}
    return md.get("uid") or f"{md.get('namespace', '')}/{md.get('name', '')}"


def pod_group_key(pod: Obj) -> str | None:
    name = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    if not name:
        return None
    return f"{(pod.get('metadata') or {}).get('namespace', '')}/{name}"


class _PodState:
    __slots__ = ("info", "node", "assumed")

    def __init__(self, info: PodInfo, node: str, assumed: bool):
        self.info = info
        self.node = node
        self.assumed = assumed


class SchedulerCache:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.pods: dict[str, _PodState] = {}
        self._dirty: set[str] = set()
        self._removed: set[str] = set()
        self._group_scheduled: dict[str, set[str]] = {}  # pod group key -> pod keys assumed or bound
        self._pending_pods: dict[str, list[PodInfo]] = {}  # pods bound to nodes not (yet) known

    # -- nodes -----------------------------------------------------------------------------------
    def add_node(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        ni = self.nodes.get(name)
        if ni is None:
            ni = self.nodes[name] = NodeInfo(node)
            for pi in self._pending_pods.pop(name, []):
                ni.add_pod_info(pi)
        else:
            ni.set_node(node)
        self._removed.discard(name)
        self._dirty.add(name)

    update_node = add_node

    def remove_node(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        if self.nodes.pop(name, None) is not None:
            self._dirty.discard(name)
            self._removed.add(name)

    # -- pods ------------------------------------------------------------------------------------
    def _place(self, pi: PodInfo, node: str) -> None:
        ni = self.nodes.get(node)
        if ni is None:
            self._pending_pods.setdefault(node, []).append(pi)
            return
        ni.add_pod_info(pi)
        self._dirty.add(node)

    def _unplace(self, pi: PodInfo, node: str) -> None:
        ni = self.nodes.get(node)
        if ni is None:
            pend = self._pending_pods.get(node)
            if pend:
                self._pending_pods[node] = [p for p in pend if p.key != pi.key]
            return
        try:
            ni.remove_pod(pi)
        except (KeyError, ValueError):
            pass
        self._dirty.add(node)

    def _group_add(self, pod: Obj, key: str) -> None:
        g = pod_group_key(pod)
        if g is not None:
            self._group_scheduled.setdefault(g, set()).add(key)

    def _group_remove(self, pod: Obj, key: str) -> None:
        g = pod_group_key(pod)
        if g is not None:
            s = self._group_scheduled.get(g)
            if s is not None:
                s.discard(key)
                if not s:
                    del self._group_scheduled[g]

    def add_pod(self, pod: Obj) -> None:
        """A pod bound to a node (from the informer); confirms an assumed pod."""
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return
        key = pod_key(pod)
        old = self.pods.get(key)
        pi = None
        if old is not None:
            if old.node == node:  # e.g. our assumed pod confirmed: keep what was derived from it
                pi = old.info.with_pod(pod)
            self._unplace(old.info, old.node)
        if pi is None:
            pi = PodInfo(pod)
        self.pods[key] = _PodState(pi, node, False)
        self._place(pi, node)
        self._group_add(pod, key)

    def update_pod(self, old: Obj, new: Obj) -> None:
        terminal = (new.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if terminal:
            self.remove_pod(new)
            return
        if not (new.get("spec") or {}).get("nodeName"):
            return
        state = self.pods.get(pod_key(new))
        if state is not None and not state.assumed and old.get("spec") == new.get("spec") and \
                (old.get("metadata") or {}).get("labels") == (new.get("metadata") or {}).get("labels"):
            state.info.pod = new  # status-only change: requests and placement are unchanged
            return
        self.add_pod(new)

    def remove_pod(self, pod: Obj) -> None:
        key = pod_key(pod)
        state = self.pods.pop(key, None)
        if state is not None:
            self._unplace(state.info, state.node)
            self._group_remove(state.info.pod, key)

    def assume(self, pi: PodInfo, node: str, assumed: Optional[PodInfo] = None) -> PodInfo:
        """Place `pi` on `node` until its binding is confirmed; `assumed` is `pi.assumed_on(node)`
        when the caller already made it."""
        if assumed is None or assumed.node_name != node:
            assumed = pi.assumed_on(node)
        key = pi.key
        old = self.pods.get(key)
        if old is not None:
            self._unplace(old.info, old.node)
        self.pods[key] = _PodState(assumed, node, True)
        self._place(assumed, node)
        self._group_add(assumed.pod, key)
        return assumed

    def forget(self, pi: PodInfo, node: str) -> None:
        key = pi.key
        state = self.pods.get(key)
        if state is not None and state.assumed:
            del self.pods[key]
            self._unplace(state.info, state.node)
            self._group_remove(state.info.pod, key)

    def is_assumed(self, key: str) -> bool:
        s = self.pods.get(key)
        return bool(s and s.assumed)

    def scheduled_in_group(self, group_key: str) -> set[str]:
        return self._group_scheduled.get(group_key, set())

    # -- snapshot ----------------------------------------------------------------------------------
    def update_snapshot(self, snap: Snapshot, also: Iterable[str] = ()) -> None:
        """Bring `snap` up to date with the cache; `also` names nodes a cycle changed in the snapshot."""
        for name in self._removed:
            snap.remove_node(name)
        self._removed.clear()
        dirty = self._dirty
        dirty.update(also)
        for name in dirty:
            ni = self.nodes.get(name)
            if ni is not None:
                snap.update_node_info(ni.snapshot())
        dirty.clear()

    def mark_dirty(self, names: Iterable[str]) -> None:
        self._dirty.update(n for n in names if n in self.nodes)
