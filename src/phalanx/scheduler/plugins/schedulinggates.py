"""SchedulingGates (PreEnqueue): a pod with `spec.schedulingGates` waits outside the active queue
until every gate is removed ("waiting for scheduling gates: [a b]")."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from phalanx.scheduler.framework.interface import EnqueueExtensions, Handle, PreEnqueuePlugin
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.constants import Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.types import PodInfo

from . import names


def _uid(pod: Optional[Obj]) -> str:
    return ((pod or {}).get("metadata") or {}).get("uid") or ""


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    NAME = names.SchedulingGates

    def pre_enqueue(self, pod: PodInfo) -> Optional[Status]:
        gates = pod.spec.get("schedulingGates")
        if not gates:
            return None
        listed = " ".join(g.get("name", "") for g in gates)
        return Status.new(Code.UnschedulableAndUnresolvable, f"waiting for scheduling gates: [{listed}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.Pod, ActionType.UpdatePodSchedulingGatesEliminated),
                                     self._after_gates_eliminated)]

    @staticmethod
    def _after_gates_eliminated(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        return QueueingHint.Queue if _uid(new) == _uid(pod) else QueueingHint.QueueSkip


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> SchedulingGates:
    return SchedulingGates()
