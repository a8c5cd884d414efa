"""NodePorts (PreFilter, Filter): the pod's host ports must be free on the node.

PreFilter returns Skip for pods without host ports, so their cycles never run this Filter."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import EnqueueExtensions, FilterPlugin, Handle, PreFilterPlugin, PreFilterResult
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.constants import Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.hostports import HostPort, get_host_ports
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from . import names

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PRE_FILTER_STATE_KEY = "PreFilter" + names.NodePorts


def fits_ports(want: Sequence[HostPort], node_info: NodeInfo) -> bool:
    used = node_info.used_ports
    for hp in want:
        if used.check_conflict(hp.host_ip, hp.protocol, hp.host_port):
            return False
    return True


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    NAME = names.NodePorts

    SIGNATURE_FROM_SPEC = True

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching fragment: the pod's host ports."""
        return pod.host_ports

    def __init__(self) -> None:
        self._status = Status.new(Code.Unschedulable, ERR_REASON).with_plugin(self.NAME)

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status]]:
        if not pod.host_ports:
            return None, Status.new(Code.Skip)
        state.write(PRE_FILTER_STATE_KEY, pod.host_ports)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        want = state.get(PRE_FILTER_STATE_KEY)
        if want is None:
            want = pod.host_ports
        return None if fits_ports(want, node_info) else self._status

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.Pod, ActionType.Delete), self._after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add), None),
        ]

    @staticmethod
    def _after_pod_deleted(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        deleted = old or {}
        if not (deleted.get("spec") or {}).get("nodeName"):
            return QueueingHint.QueueSkip
        freed = {(hp.host_ip or "0.0.0.0", hp.protocol, hp.host_port) for hp in get_host_ports(deleted)}
        for hp in get_host_ports(pod):
            for ip, proto, port in freed:
                if proto == hp.protocol and port == hp.host_port and (
                        ip == "0.0.0.0" or (hp.host_ip or "0.0.0.0") in ("0.0.0.0", ip)):
                    return QueueingHint.Queue
        return QueueingHint.QueueSkip


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> NodePorts:
    return NodePorts()
