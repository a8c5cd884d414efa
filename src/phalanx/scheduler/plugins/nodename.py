"""NodeName (Filter): a pod that names its node (`spec.nodeName`) fits only that node."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import EnqueueExtensions, FilterPlugin, Handle
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.constants import Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from . import names

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(FilterPlugin, EnqueueExtensions):
    NAME = names.NodeName

    SIGNATURE_FROM_SPEC = True

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching fragment: spec.nodeName."""
        return pod.node_name

    def __init__(self) -> None:
        self._status = Status.new(Code.UnschedulableAndUnresolvable, ERR_REASON).with_plugin(self.NAME)

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        want = pod.node_name
        if not want or want == node_info.name:
            return None
        return self._status

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[int, Status]]:
        want = pod.node_name
        if not want:
            return []
        st = self._status
        return [(i, st) for i, ni in enumerate(nodes) if ni.name != want]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add), self._after_node_add)]

    @staticmethod
    def _after_node_add(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        want = (pod.get("spec") or {}).get("nodeName") or ""
        name = ((new or {}).get("metadata") or {}).get("name") or ""
        return QueueingHint.Queue if not want or want == name else QueueingHint.QueueSkip


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> NodeName:
    return NodeName()
