"""Cluster events: what plugins register in `EventsToRegister` (`ClusterEvent`, `ActionType`,
`EventResource`) and what their queueing hints answer (`QueueingHint`), so the queue knows which
changes may make a rejected pod schedulable; names and bit order follow upstream. Also the
detectors that turn a Node or Pod update into the events it stands for.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Any, Callable, Optional

from .constants import Obj
from .types import PodInfo


# -- cluster events ------------------------------------------------------------------------------

class ActionType(IntFlag):
    """What changed about an object; sub-types of Update narrow the queueing hints that run."""

    Add = 1 << 0
    Delete = 1 << 1
    UpdateNodeAllocatable = 1 << 2
    UpdateNodeLabel = 1 << 3
    UpdateNodeTaint = 1 << 4  # taints or spec.unschedulable
    UpdateNodeCondition = 1 << 5
    UpdateNodeAnnotation = 1 << 6
    UpdatePodLabel = 1 << 7
    UpdatePodScaleDown = 1 << 8  # any resource request reduced
    UpdatePodToleration = 1 << 9  # tolerations added (they cannot be changed or removed)
    UpdatePodSchedulingGatesEliminated = 1 << 10
    UpdatePodGeneratedResourceClaim = 1 << 11
    UpdateNodeDeclaredFeature = 1 << 12

    All = (1 << 13) - 1
    Update = (UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdateNodeCondition | UpdateNodeAnnotation
              | UpdatePodLabel | UpdatePodScaleDown | UpdatePodToleration | UpdatePodSchedulingGatesEliminated
              | UpdatePodGeneratedResourceClaim | UpdateNodeDeclaredFeature)
    None_ = 0

    def label(self) -> str:
        if self == ActionType.All:
            return "All"
        if self == ActionType.Update:
            return "Update"
        return self.name or str(int(self))


class EventResource:
    """The resource a cluster event is about (group/kind, as upstream spells it)."""

    Pod = "Pod"
    # The scheduling queue splits Pod events by whom they concern; registering `Pod` matches all.
    AssignedPod = "AssignedPod"
    UnscheduledPod = "UnscheduledPod"
    Node = "Node"
    PersistentVolume = "PersistentVolume"
    PersistentVolumeClaim = "PersistentVolumeClaim"
    CSINode = "storage.k8s.io/CSINode"
    CSIDriver = "storage.k8s.io/CSIDriver"
    VolumeAttachment = "storage.k8s.io/VolumeAttachment"
    CSIStorageCapacity = "storage.k8s.io/CSIStorageCapacity"
    StorageClass = "storage.k8s.io/StorageClass"
    ResourceClaim = "resource.k8s.io/ResourceClaim"
    ResourceSlice = "resource.k8s.io/ResourceSlice"
    DeviceClass = "resource.k8s.io/DeviceClass"
    PodGroup = "scheduling.k8s.io/PodGroup"
    Workload = "scheduling.k8s.io/Workload"
    WildCard = "*"


class QueueingHint(IntEnum):
    QueueSkip = 0  # the event cannot make the pod schedulable
    Queue = 1  # the event may make the pod schedulable

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ClusterEvent:
    resource: str
    action_type: ActionType
    custom_label: str = ""

    def label(self) -> str:
        """Used in logs and metrics: e.g. "NodeAdd", "PodUpdatePodLabel"."""
        return self.custom_label or f"{self.resource}{self.action_type.label()}"

    def is_wildcard(self) -> bool:
        return self.resource == EventResource.WildCard and self.action_type == ActionType.All


# hint(pod, old_obj, new_obj) -> QueueingHint; old is None for Add, new is None for Delete.
QueueingHintFn = Callable[[Obj, Optional[Obj], Optional[Obj]], QueueingHint]


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    queueing_hint_fn: Optional[QueueingHintFn] = None  # None means always Queue


_POD_RESOURCES = frozenset((EventResource.AssignedPod, EventResource.UnscheduledPod))


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """True when `incoming` is the same as, or more specific than, `registered` (upstream
    MatchClusterEvents): Update matches UpdateNodeLabel, not the reverse; `Pod` matches the
    AssignedPod/UnscheduledPod split; a wildcard registration matches everything."""
    if registered.is_wildcard():
        return True
    r, i = registered.resource, incoming.resource
    resource_ok = r == EventResource.WildCard or r == i or (r == EventResource.Pod and i in _POD_RESOURCES)
    return resource_ok and bool(registered.action_type & incoming.action_type) and int(incoming.action_type) <= int(registered.action_type)


def _part(obj: Obj, section: str, name: str) -> Any:
    """`obj[section][name]`, missing parts as None."""
    return (obj.get(section) or {}).get(name)


def _differs(section: str, name: str, empty: Any) -> Callable[[Obj, Obj], bool]:
    def changed(new: Obj, old: Obj) -> bool:
        return bool((_part(new, section, name) or empty) != (_part(old, section, name) or empty))
    return changed


def _node_taints_changed(new: Obj, old: Obj) -> bool:
    return bool(_part(new, "spec", "unschedulable")) != bool(_part(old, "spec", "unschedulable")) or \
        (_part(new, "spec", "taints") or []) != (_part(old, "spec", "taints") or [])


def _node_conditions_changed(new: Obj, old: Obj) -> bool:
    def conds(node: Obj) -> dict[str, Any]:
        return {c.get("type"): c.get("status") for c in _part(node, "status", "conditions") or []}
    return conds(new) != conds(old)


_NODE_CHANGES: list[tuple[ActionType, Callable[[Obj, Obj], bool]]] = [
    (ActionType.UpdateNodeTaint, _node_taints_changed),
    (ActionType.UpdateNodeAllocatable, _differs("status", "allocatable", {})),
    (ActionType.UpdateNodeLabel, _differs("metadata", "labels", {})),
    (ActionType.UpdateNodeCondition, _node_conditions_changed),
    (ActionType.UpdateNodeAnnotation, _differs("metadata", "annotations", {})),
    (ActionType.UpdateNodeDeclaredFeature, _differs("status", "declaredFeatures", [])),
]


def node_scheduling_properties_change(new: Obj, old: Obj) -> list[ClusterEvent]:
    """The Node update sub-events a change carries (upstream NodeSchedulingPropertiesChange)."""
    return [ClusterEvent(EventResource.Node, action) for action, changed in _NODE_CHANGES if changed(new, old)]


def _pod_gates_eliminated(new: Obj, old: Obj) -> bool:
    return bool(_part(old, "spec", "schedulingGates")) and not _part(new, "spec", "schedulingGates")


def _pod_tolerations_added(new: Obj, old: Obj) -> bool:
    return len(_part(new, "spec", "tolerations") or []) > len(_part(old, "spec", "tolerations") or [])


def _pod_scaled_down(new: Obj, old: Obj) -> bool:
    """Some request went down (an in-place resize); unparsable requests count as no change."""
    try:
        old_req, new_req = PodInfo(old).requests, PodInfo(new).requests
    except ValueError:
        return False
    return (new_req.milli_cpu < old_req.milli_cpu or new_req.memory < old_req.memory
            or new_req.ephemeral_storage < old_req.ephemeral_storage
            or any(new_req.scalar_resources.get(k, 0) < v for k, v in old_req.scalar_resources.items()))


_POD_CHANGES: list[tuple[ActionType, Callable[[Obj, Obj], bool]]] = [
    (ActionType.UpdatePodLabel, _differs("metadata", "labels", {})),
    (ActionType.UpdatePodSchedulingGatesEliminated, _pod_gates_eliminated),
    (ActionType.UpdatePodToleration, _pod_tolerations_added),
    (ActionType.UpdatePodScaleDown, _pod_scaled_down),
    (ActionType.UpdatePodGeneratedResourceClaim, _differs("status", "resourceClaimStatuses", [])),
]


def pod_scheduling_properties_change(new: Obj, old: Obj) -> list[ClusterEvent]:
    """The Pod update sub-events a change carries (upstream PodSchedulingPropertiesChange);
    a change none of them explains is reported as a plain Update."""
    events = [ClusterEvent(EventResource.Pod, action) for action, changed in _POD_CHANGES if changed(new, old)]
    return events or [ClusterEvent(EventResource.Pod, ActionType.Update)]


