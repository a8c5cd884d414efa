"""VolumeZone: a pod whose bound volumes carry zone or region labels goes to nodes of those zones
(upstream `volumezone`).

The scheduler registers `new(args, handle)`, reading claims and volumes from the informers
VolumeBinding made on the shared factory; by hand: `VolumeZone(claims, volumes)`.

- **PreFilter** gathers, from the PVs of the pod's bound claims, the labels
  `topology.kubernetes.io/zone` / `region` (and their `failure-domain.beta.kubernetes.io` forms);
  a value may list several zones joined by `__`. A pod with none is skipped.
- **Filter**: a node without any topology label passes (upstream's rule); otherwise each gathered
  label must be on the node with one of the values, else "node(s) had no available volume zone"
  (UnschedulableAndUnresolvable). A beta label on the volume matches the node's GA label.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from phalanx.scheduler.framework.constants import Obj
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.interface import (
    UNSIGNABLE, EnqueueExtensions, FilterPlugin, Handle, PreFilterPlugin, PreFilterResult,
)
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from .volumebinding import WATCHED, Lister, claim_names

NAME = "VolumeZone"
STATE_KEY = NAME
ERR_CONFLICT = "node(s) had no available volume zone"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
GA_OF_BETA = {BETA_ZONE: ZONE, BETA_REGION: REGION}


@dataclass
class _State:
    topologies: list[tuple[str, frozenset[str]]]

    def clone(self) -> "_State":
        return self  # read-only after PreFilter


class VolumeZone(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    NAME = NAME
    SIGNATURE_FROM_SPEC = True

    def __init__(self, claims: Lister, volumes: Lister):
        self.claims = claims
        self.volumes = volumes

    def sign_pod(self, pod: PodInfo) -> object:
        return UNSIGNABLE if claim_names(pod.pod) else ()

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status]]:
        topologies: list[tuple[str, frozenset[str]]] = []
        for name in claim_names(pod.pod):
            pvc = self.claims.get(f"{pod.namespace}/{name}")
            volume_name = ((pvc or {}).get("spec") or {}).get("volumeName")
            pv = self.volumes.get(volume_name) if volume_name else None
            labels = ((pv or {}).get("metadata") or {}).get("labels") or {}
            topologies += [(k, frozenset(str(labels[k]).split("__"))) for k in TOPOLOGY_LABELS if k in labels]
        if not topologies:
            return None, Status.new(Code.Skip)
        state.write(STATE_KEY, _State(topologies))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        data: Optional[_State] = state.get(STATE_KEY)
        labels = node_info.labels
        if data is None or not any(k in labels for k in TOPOLOGY_LABELS):
            return None
        for key, values in data.topologies:
            value = labels.get(key, labels.get(GA_OF_BETA.get(key, key)))
            if value is None or value not in values:
                return Status.new(Code.UnschedulableAndUnresolvable, ERR_CONFLICT).with_plugin(NAME)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def queue(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
            return QueueingHint.Queue if claim_names(pod) else QueueingHint.QueueSkip
        return [ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeLabel),
                                     queue),
                ClusterEventWithHint(ClusterEvent(EventResource.PersistentVolumeClaim,
                                                  ActionType.Add | ActionType.Update), queue),
                ClusterEventWithHint(ClusterEvent(EventResource.PersistentVolume, ActionType.Add | ActionType.Update),
                                     queue)]


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> VolumeZone:
    factory = handle.shared_informer_factory()
    if factory is None:
        raise ValueError("VolumeZone needs the scheduler's shared informer factory")
    (_, claims_version, claims_kind), (_, volumes_version, volumes_kind) = WATCHED[0], WATCHED[1]
    return VolumeZone(factory.informer(claims_version, claims_kind), factory.informer(volumes_version, volumes_kind))
