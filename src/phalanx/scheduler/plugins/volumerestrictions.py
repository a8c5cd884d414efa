"""VolumeRestrictions: a `ReadWriteOncePod` claim serves one pod in the whole cluster (upstream
`volumerestrictions`; the in-tree disk conflicts it also checks need cloud disks, which simulated
nodes do not have).

The scheduler registers `new(args, handle)`, reading claims from the informer VolumeBinding made
on the shared factory; by hand: `VolumeRestrictions(claims, snapshot=lambda: snapshot)`.

- **PreFilter** finds the pod's claims whose access modes include `ReadWriteOncePod` (a missing
  claim: `persistentvolumeclaim "x" not found`, UnschedulableAndUnresolvable) and counts the other
  pods of the cluster that use them; a pod without such claims is skipped.
- **PreFilterExtensions** change that count as preemption removes or adds pods.
- **Filter** rejects every node while the count is above zero: "node has pod using
  PersistentVolumeClaim with the same name and ReadWriteOncePod access mode" (Unschedulable, so
  preempting the user can help).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from phalanx.scheduler.framework.constants import Obj
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.interface import (
    UNSIGNABLE, EnqueueExtensions, FilterPlugin, Handle, PreFilterExtensions, PreFilterPlugin, PreFilterResult,
)
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from .volumebinding import WATCHED, Lister, claim_names

NAME = "VolumeRestrictions"
STATE_KEY = NAME
ERR_RWOP_CONFLICT = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"


@dataclass
class _State:
    claims: frozenset[str]  # namespace/name of the pod's ReadWriteOncePod claims
    conflicts: int

    def clone(self) -> "_State":
        return _State(self.claims, self.conflicts)


def _uses(pod: PodInfo, claims: frozenset[str]) -> int:
    return sum(1 for name in claim_names(pod.pod) if f"{pod.namespace}/{name}" in claims)


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, PreFilterExtensions, EnqueueExtensions):
    NAME = NAME
    SIGNATURE_FROM_SPEC = True

    def __init__(self, claims: Lister, snapshot: Callable[[], Any]):
        self.claims = claims
        self.snapshot = snapshot

    def sign_pod(self, pod: PodInfo) -> object:
        return UNSIGNABLE if claim_names(pod.pod) else ()

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status]]:
        rwop: set[str] = set()
        for name in claim_names(pod.pod):
            pvc = self.claims.get(f"{pod.namespace}/{name}")
            if pvc is None:
                return None, Status.new(Code.UnschedulableAndUnresolvable,
                                        f'persistentvolumeclaim "{name}" not found').with_plugin(NAME)
            if "ReadWriteOncePod" in ((pvc.get("spec") or {}).get("accessModes") or ()):
                rwop.add(f"{pod.namespace}/{name}")
        if not rwop:
            return None, Status.new(Code.Skip)
        claims = frozenset(rwop)
        conflicts = sum(_uses(other, claims) for ni in self.snapshot().list() for other in ni.pods
                        if other.key != pod.key)
        state.write(STATE_KEY, _State(claims, conflicts))
        return None, None

    def pre_filter_extensions(self) -> Optional[PreFilterExtensions]:
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: PodInfo, pod_info_to_add: PodInfo,
                node_info: NodeInfo) -> Optional[Status]:
        data: Optional[_State] = state.get(STATE_KEY)
        if data is not None:
            data.conflicts += _uses(pod_info_to_add, data.claims)
        return None

    def remove_pod(self, state: CycleState, pod_to_schedule: PodInfo, pod_info_to_remove: PodInfo,
                   node_info: NodeInfo) -> Optional[Status]:
        data: Optional[_State] = state.get(STATE_KEY)
        if data is not None:
            data.conflicts -= _uses(pod_info_to_remove, data.claims)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        data: Optional[_State] = state.get(STATE_KEY)
        if data is not None and data.conflicts > 0:
            return Status.new(Code.Unschedulable, ERR_RWOP_CONFLICT).with_plugin(NAME)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def queue(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
            return QueueingHint.Queue if claim_names(pod) else QueueingHint.QueueSkip
        return [ClusterEventWithHint(ClusterEvent(EventResource.AssignedPod, ActionType.Delete), queue),
                ClusterEventWithHint(ClusterEvent(EventResource.PersistentVolumeClaim,
                                                  ActionType.Add | ActionType.Update), queue)]


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> VolumeRestrictions:
    factory = handle.shared_informer_factory()
    if factory is None:
        raise ValueError("VolumeRestrictions needs the scheduler's shared informer factory")
    _, api_version, kind = WATCHED[0]
    return VolumeRestrictions(factory.informer(api_version, kind), handle.snapshot_shared_lister)
