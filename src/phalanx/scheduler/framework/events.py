"""Cluster events: what plugins register in `EventsToRegister` (`ClusterEvent`, `ActionType`,
`EventResource`) and what their queueing hints answer (`QueueingHint`), so the queue knows which
changes may make a rejected pod schedulable; names and bit order follow upstream. Also the
detectors that turn a Node or Pod update into the events it stands for.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Callable, Iterable, Mapping, Optional

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


def match_any_cluster_event(incoming: ClusterEvent, registered: Iterable[ClusterEvent]) -> bool:
    return any(match_cluster_events(e, incoming) for e in registered)


def node_scheduling_properties_change(new: Obj, old: Obj) -> list[ClusterEvent]:
    """The Node update sub-events a change carries (upstream NodeSchedulingPropertiesChange)."""
    events = []
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    nst, ost = new.get("status") or {}, old.get("status") or {}
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    if bool(ns.get("unschedulable")) != bool(os_.get("unschedulable")) or (ns.get("taints") or []) != (os_.get("taints") or []):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeTaint))
    if (nst.get("allocatable") or {}) != (ost.get("allocatable") or {}):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeAllocatable))
    if (nm.get("labels") or {}) != (om.get("labels") or {}):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeLabel))
    def conds(s: Mapping) -> dict:
        return {c.get("type"): c.get("status") for c in s.get("conditions") or []}
    if conds(nst) != conds(ost):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeCondition))
    if (nm.get("annotations") or {}) != (om.get("annotations") or {}):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeAnnotation))
    if (nst.get("declaredFeatures") or []) != (ost.get("declaredFeatures") or []):
        events.append(ClusterEvent(EventResource.Node, ActionType.UpdateNodeDeclaredFeature))
    return events


def pod_scheduling_properties_change(new: Obj, old: Obj) -> list[ClusterEvent]:
    """The Pod update sub-events a change carries (upstream PodSchedulingPropertiesChange);
    a change none of them explains is reported as a plain Update."""
    events = []
    nm, om = new.get("metadata") or {}, old.get("metadata") or {}
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if (nm.get("labels") or {}) != (om.get("labels") or {}):
        events.append(ClusterEvent(EventResource.Pod, ActionType.UpdatePodLabel))
    if os_.get("schedulingGates") and not ns.get("schedulingGates"):
        events.append(ClusterEvent(EventResource.Pod, ActionType.UpdatePodSchedulingGatesEliminated))
    if len(ns.get("tolerations") or []) > len(os_.get("tolerations") or []):
        events.append(ClusterEvent(EventResource.Pod, ActionType.UpdatePodToleration))
    try:
        old_req, new_req = PodInfo(old).requests, PodInfo(new).requests
        if (new_req.milli_cpu < old_req.milli_cpu or new_req.memory < old_req.memory
                or new_req.ephemeral_storage < old_req.ephemeral_storage
                or any(new_req.scalar_resources.get(k, 0) < v for k, v in old_req.scalar_resources.items())):
            events.append(ClusterEvent(EventResource.Pod, ActionType.UpdatePodScaleDown))
    except ValueError:
        pass
    if ((new.get("status") or {}).get("resourceClaimStatuses") or []) != ((old.get("status") or {}).get("resourceClaimStatuses") or []):
        events.append(ClusterEvent(EventResource.Pod, ActionType.UpdatePodGeneratedResourceClaim))
    if not events:
        events.append(ClusterEvent(EventResource.Pod, ActionType.Update))
    return events


