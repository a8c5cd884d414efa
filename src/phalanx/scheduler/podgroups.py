"""What the scheduler knows about PodGroups: the objects, and the pods that belong to each.

`PodGroupManager` is fed by the scheduler's informers (PodGroups and Pods) and answers the
questions gang scheduling asks (upstream's PodGroupManager): does the group exist, what is its
policy and `minCount`, how many of its pods exist (`all_pods_count`), which scheduler names its
pods use, and how many are scheduled (assumed or bound: `scheduled_count`, which the scheduler
answers from its cache). Plugins reach it as their Handle's PodGroup lister.

In Kubernetes 1.37 it also keeps the CompositePodGroups (`forest`, a `WorkloadForest`): which tree
a PodGroup belongs to, and whether that tree has its quorum.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .cache import pod_group_key, pod_key
from .compositetree import HierarchyError, TreeNode, WorkloadForest, is_ready

Obj = dict[str, Any]


def policy_of(pg: Obj) -> tuple[str, int]:
    """("Gang", minCount) or ("Basic", 1)."""
    pol = (pg.get("spec") or {}).get("schedulingPolicy") or {}
    gang = pol.get("gang")
    if isinstance(gang, dict):
        return "Gang", int(gang.get("minCount") or 0)
    return "Basic", 1


class PodGroupManager:
    def __init__(self, scheduled_count: Optional[Callable[[str], int]] = None) -> None:
        self._scheduled_count = scheduled_count  # group key -> pods assumed or bound (the scheduler's cache)
        self.groups: dict[str, Obj] = {}  # namespace/name -> PodGroup
        self.pods: dict[str, dict[str, Obj]] = {}  # group key -> pod key -> pod (non-terminal)
        self._names: dict[str, dict[str, int]] = {}  # group key -> schedulerName -> pods using it
        self.forest = WorkloadForest()  # PodGroups and CompositePodGroups (1.37 trees)

    # -- informer feed -----------------------------------------------------------------------
    def set_group(self, pg: Obj) -> None:
        md = pg["metadata"]
        self.groups[f"{md.get('namespace', '')}/{md['name']}"] = pg
        self.forest.set_pod_group(pg)

    def remove_group(self, pg: Obj) -> None:
        md = pg["metadata"]
        self.groups.pop(f"{md.get('namespace', '')}/{md['name']}", None)
        self.forest.remove_pod_group(pg)

    def set_composite(self, cpg: Obj) -> None:
        self.forest.set_composite(cpg)

    def remove_composite(self, cpg: Obj) -> None:
        self.forest.remove_composite(cpg)

    def set_pod(self, pod: Obj) -> None:
        g = pod_group_key(pod)
        if g is None:
            return
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed") or (pod.get("metadata") or {}).get("deletionTimestamp"):
            self.remove_pod(pod)
            return
        members = self.pods.setdefault(g, {})
        key = pod_key(pod)
        previous = members.get(key)
        if previous is not None:
            self._count_name(g, previous, -1)
        members[key] = pod
        self._count_name(g, pod, 1)

    def remove_pod(self, pod: Obj) -> None:
        g = pod_group_key(pod)
        if g is None:
            return
        members = self.pods.get(g)
        if members is not None:
            previous = members.pop(pod_key(pod), None)
            if previous is not None:
                self._count_name(g, previous, -1)
            if not members:
                del self.pods[g]

    def _count_name(self, g: str, pod: Obj, delta: int) -> None:
        name = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        names = self._names.setdefault(g, {})
        n = names.get(name, 0) + delta
        if n > 0:
            names[name] = n
        else:
            names.pop(name, None)
            if not names:
                del self._names[g]

    # -- questions ---------------------------------------------------------------------------
    def get(self, group_key: str) -> Optional[Obj]:
        return self.groups.get(group_key)

    def all_pods_count(self, group_key: str) -> int:
        return len(self.pods.get(group_key) or ())

    def members(self, group_key: str) -> list[Obj]:
        return list((self.pods.get(group_key) or {}).values())

    def scheduler_names(self, group_key: str) -> set[str]:
        return set(self._names.get(group_key) or ())

    def composite(self, key: str) -> Optional[Obj]:
        """The CompositePodGroup `key` (namespace/name), if known."""
        return self.forest.composites.get(key)

    def tree_of(self, group_key: str) -> tuple[Optional[TreeNode], Optional[HierarchyError]]:
        """The tree a PodGroup with a parent belongs to (None for a PodGroup without one), or why it
        cannot be resolved yet."""
        if not self.forest.has_parent(group_key):
            return None, None
        root, err = self.forest.root_of(group_key)
        if root is None:
            return None, err
        return self.forest.tree(root), None

    def tree_wait_reason(self, group_key: str) -> Optional[str]:
        """Why the pods of a PodGroup in a CompositePodGroup tree must wait before a cycle: the
        tree is incomplete (a parent missing, a cycle) or short of its quorum; None when they need
        not (or the PodGroup is in no tree)."""
        tree, err = self.tree_of(group_key)
        if err is not None:
            return err.message
        if tree is None:
            return None
        if not is_ready(tree, self.all_pods_count):
            return f'waiting for composite pod group "{tree.name}" tree to meet quorum'
        return None

    def same_tree(self, group_key: str, other_key: str) -> bool:
        """Whether two PodGroups are leaves of one CompositePodGroup tree."""
        if not (self.forest.has_parent(group_key) and self.forest.has_parent(other_key)):
            return False
        return self.forest.root_key(group_key) == self.forest.root_key(other_key)

    def scheduled_count(self, group_key: str) -> int:
        """The group's pods assumed or bound; 0 without a scheduler cache to ask."""
        return self._scheduled_count(group_key) if self._scheduled_count is not None else 0
