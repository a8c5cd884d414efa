"""What the scheduler knows about PodGroups: the objects, and the pods that belong to each.

`PodGroupManager` is fed by the scheduler's informers (PodGroups and Pods) and answers the
questions gang scheduling asks (upstream's PodGroupManager): does the group exist, what is its
policy and `minCount`, how many of its pods exist (`all_pods_count`), which scheduler names its
pods use, and how many are scheduled (assumed or bound: `scheduled_count`, which the scheduler
answers from its cache). Plugins reach it as their Handle's PodGroup lister.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .cache import pod_group_key, pod_key

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
