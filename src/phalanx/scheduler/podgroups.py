"""What the scheduler knows about PodGroups: the objects, and the pods that belong to each.

`PodGroupManager` is fed by the scheduler's informers (PodGroups and Pods) and answers the
questions gang scheduling asks (upstream's PodGroupManager): does the group exist, what is its
policy and `minCount`, how many of its pods exist (`all_pods_count`), which scheduler names its
pods use, and how many are scheduled (assumed or bound: `scheduled_count`, which the scheduler
answers from its cache). Plugins reach it as their Handle's PodGroup lister.

Kubernetes 1.37 (gate CompositePodGroup): it also keeps the CompositePodGroups and answers for the
trees they make (`tree_root`, `tree_children`, `tree_ready`): a PodGroup naming a
`parentCompositePodGroupName` is a leaf of the tree of its root CompositePodGroup, and the whole
tree is one queue entity (`tree_queue_key`).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from phalanx.api.scheduling.fields import parent_composite, workload_name

from .cache import pod_group_key, pod_key

MAX_TREE_DEPTH = 4  # upstream's WorkloadMaxTreeDepth: levels, the leaf PodGroup included
TREE_MARK = "compositepodgroup:"  # a tree's queue key: namespace/compositepodgroup:<root>
MSG_TREE_DEPTH = "hierarchy exceeded maximum tree depth at {key}, possibly caused by cycle or deep hierarchy"
MSG_MULTI_WORKLOAD = "composite pod group tree references more than one Workload"  # [U] phalanx's words


def tree_queue_key(root_key: str) -> str:
    namespace, name = root_key.split("/", 1)
    return f"{namespace}/{TREE_MARK}{name}"


def tree_root_of(queue_key: str) -> Optional[str]:
    """The root CompositePodGroup's key of a tree's queue key; None for any other key."""
    namespace, _, name = queue_key.partition("/")
    return f"{namespace}/{name[len(TREE_MARK):]}" if name.startswith(TREE_MARK) else None


def composite_policy_of(cpg: Obj) -> tuple[str, int]:
    """("Gang", minGroupCount) or ("Basic", 1) of a CompositePodGroup."""
    pol = (cpg.get("spec") or {}).get("schedulingPolicy") or {}
    gang = pol.get("gang")
    if isinstance(gang, dict):
        return "Gang", int(gang.get("minGroupCount") or 0)
    return "Basic", 1


def _key(obj: Obj) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


def _creation_order(obj: Obj) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return md.get("creationTimestamp") or "", md.get("name") or ""

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
        self.composites: dict[str, Obj] = {}  # namespace/name -> CompositePodGroup (1.37)
        self.trees_enabled = False  # the scheduler's CompositePodGroup gate

    # -- informer feed -----------------------------------------------------------------------
    def set_group(self, pg: Obj) -> None:
        md = pg["metadata"]
        self.groups[f"{md.get('namespace', '')}/{md['name']}"] = pg

    def remove_group(self, pg: Obj) -> None:
        md = pg["metadata"]
        self.groups.pop(f"{md.get('namespace', '')}/{md['name']}", None)

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

    def set_composite(self, cpg: Obj) -> None:
        self.composites[_key(cpg)] = cpg

    def remove_composite(self, cpg: Obj) -> None:
        self.composites.pop(_key(cpg), None)

    # -- trees of CompositePodGroups (1.37) ---------------------------------------------------
    def parent_key(self, group_key: str) -> Optional[str]:
        """The key of a PodGroup's parent CompositePodGroup (trees enabled), else None."""
        pg = self.groups.get(group_key)
        parent = parent_composite(pg) if pg is not None and self.trees_enabled else None
        return f"{group_key.split('/', 1)[0]}/{parent}" if parent else None

    def tree_root(self, group_key: str) -> tuple[Optional[str], str]:
        """(root CompositePodGroup key, "") of a leaf PodGroup in a tree; (None, "") for a PodGroup
        of no tree; (None, why) for a tree the scheduler refuses: a missing parent, a group still
        not the root MAX_TREE_DEPTH steps up (a cycle or a deeper tree: upstream's walk and words),
        or more than one Workload along the way."""
        namespace = group_key.split("/", 1)[0]
        key, obj, composite = group_key, self.groups.get(group_key), False
        workloads: set[Optional[str]] = set()
        for _ in range(MAX_TREE_DEPTH):
            if obj is None:
                return None, ""
            workloads.add(workload_name(obj))
            parent = parent_composite(obj) if self.trees_enabled else None
            if not parent:
                if not composite:
                    return None, ""
                return (key, "") if len(workloads - {None}) <= 1 else (None, MSG_MULTI_WORKLOAD)
            key, obj, composite = f"{namespace}/{parent}", self.composites.get(f"{namespace}/{parent}"), True
            if obj is None:
                return None, f"{parent} not found in workload forest"
        return None, MSG_TREE_DEPTH.format(key=f"compositepodgroup/{key}")

    def tree_children(self, cpg_key: str) -> list[tuple[str, bool]]:
        """(key, is_leaf) of a CompositePodGroup's children, in creation order (then name)."""
        namespace, name = cpg_key.split("/", 1)
        found: list[tuple[tuple[str, str], str, bool]] = []
        for leaf, objs in ((True, self.groups), (False, self.composites)):
            for key, obj in objs.items():
                if key.split("/", 1)[0] == namespace and parent_composite(obj) == name:
                    found.append((_creation_order(obj), key, leaf))
        return [(key, leaf) for _, key, leaf in sorted(found)]

    def tree_ready(self, cpg_key: str, depth: int = 1) -> bool:
        """Whether the subtree has its quorum of pods: a leaf its `minCount` pods, a
        CompositePodGroup `minGroupCount` ready children (PreEnqueue's question for a tree)."""
        cpg = self.composites.get(cpg_key)
        if cpg is None or depth > MAX_TREE_DEPTH:
            return False
        _, need = composite_policy_of(cpg)
        ready = 0
        for key, leaf in self.tree_children(cpg_key):
            if leaf:
                _, min_count = policy_of(self.groups[key])
                ready += self.all_pods_count(key) >= max(min_count, 1)
            else:
                ready += self.tree_ready(key, depth + 1)
        return ready >= max(need, 1)

    def queue_key(self, pod: Obj) -> Optional[str]:
        """The queue entity a pod of a group joins: its tree's when its PodGroup is a leaf of a
        valid tree, else its PodGroup's (None for a pod of no group)."""
        g = pod_group_key(pod)
        if g is None or not self.trees_enabled:
            return g
        root, _ = self.tree_root(g)
        return tree_queue_key(root) if root is not None else g

    # -- questions ---------------------------------------------------------------------------
    def get(self, group_key: str) -> Optional[Obj]:
        return self.groups.get(group_key)

    def all_pods_count(self, group_key: str) -> int:
        return len(self.pods.get(group_key) or ())

    def members(self, group_key: str) -> list[Obj]:
        return list((self.pods.get(group_key) or {}).values())

    def scheduler_names(self, group_key: str) -> set[str]:
        return set(self._names.get(group_key) or ())

    def scheduled_count(self, group_key: str) -> int:
        """The group's pods assumed or bound; 0 without a scheduler cache to ask."""
        return self._scheduled_count(group_key) if self._scheduled_count is not None else 0
