"""NodeUnschedulable (Filter): a cordoned node (`spec.unschedulable`) takes only pods that
tolerate the `node.kubernetes.io/unschedulable:NoSchedule` taint."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import EnqueueExtensions, FilterPlugin, Handle
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.constants import TAINT_EFFECT_NO_SCHEDULE, TAINT_NODE_UNSCHEDULABLE, Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.taints import Taint, parse_tolerations, tolerations_tolerate_taint
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from . import names

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", TAINT_EFFECT_NO_SCHEDULE)


def _uid(pod: Optional[Obj]) -> str:
    return ((pod or {}).get("metadata") or {}).get("uid") or ""


class NodeUnschedulable(FilterPlugin, EnqueueExtensions):
    NAME = names.NodeUnschedulable

    SIGNATURE_FROM_SPEC = True

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching fragment: the tolerations."""
        return pod.spec_signature("tolerations")

    def __init__(self) -> None:
        self._status = Status.new(Code.UnschedulableAndUnresolvable, ERR_REASON_UNSCHEDULABLE).with_plugin(self.NAME)

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        if node_info.node is None:
            return Status.new(Code.UnschedulableAndUnresolvable, ERR_REASON_UNKNOWN_CONDITION)
        if not node_info.unschedulable:
            return None
        if tolerations_tolerate_taint(pod.tolerations, _UNSCHEDULABLE_TAINT):
            return None
        return self._status

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[int, Status]]:
        flags = [ni.unschedulable for ni in nodes]
        if not any(flags) or tolerations_tolerate_taint(pod.tolerations, _UNSCHEDULABLE_TAINT):
            return []
        st = self._status
        return [(i, st) for i, cordoned in enumerate(flags) if cordoned]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeTaint),
                                 self._after_node_change),
            ClusterEventWithHint(ClusterEvent(EventResource.Pod, ActionType.UpdatePodToleration),
                                 self._after_pod_toleration_change),
        ]

    @staticmethod
    def _after_node_change(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        new_cordoned = bool(((new or {}).get("spec") or {}).get("unschedulable"))
        if old is None:
            return QueueingHint.QueueSkip if new_cordoned else QueueingHint.Queue
        old_cordoned = bool((old.get("spec") or {}).get("unschedulable"))
        return QueueingHint.Queue if old_cordoned and not new_cordoned else QueueingHint.QueueSkip

    @staticmethod
    def _after_pod_toleration_change(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        if _uid(new) != _uid(pod):
            return QueueingHint.QueueSkip
        tols = parse_tolerations(((new or {}).get("spec") or {}).get("tolerations"))
        return QueueingHint.Queue if tolerations_tolerate_taint(tols, _UNSCHEDULABLE_TAINT) else QueueingHint.QueueSkip


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()
