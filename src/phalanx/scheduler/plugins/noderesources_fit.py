"""NodeResourcesFit (PreFilter, Filter, PreScore, Score): the node must have room for the pod's
requests ("Insufficient cpu", "Too many pods", "Insufficient example.com/gpu", ...), and nodes are
scored by the configured strategy (LeastAllocated by default; MostAllocated;
RequestedToCapacityRatio) with per-resource weights.

Args (NodeResourcesFitArgs): `ignoredResources`, `ignoredResourceGroups` (extended resources the
Filter does not check), `scoringStrategy` {type, resources [{name, weight}],
requestedToCapacityRatio {shape [{utilization, score}]}}.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from phalanx.scheduler.framework.config import default_plugin_args
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.types import (
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    Obj,
    PodInfo,
    QueueingHint,
    Resource,
    is_extended_resource_name,
)

from . import names
from .noderesources_scorer import ResourceAllocationScorer, ScoreMemo, scorer_for_strategy

PRE_FILTER_STATE_KEY = "PreFilter" + names.NodeResourcesFit
PRE_SCORE_STATE_KEY = "PreScore" + names.NodeResourcesFit


class InsufficientResource:
    """Which resource did not fit, and by how much (upstream InsufficientResource)."""

    __slots__ = ("resource_name", "reason", "requested", "used", "capacity")

    def __init__(self, resource_name: str, reason: str, requested: int, used: int, capacity: int):
        self.resource_name = resource_name
        self.reason = reason
        self.requested = requested
        self.used = used
        self.capacity = capacity

    def __repr__(self) -> str:
        return f"InsufficientResource({self.resource_name!r}, {self.reason!r}, {self.requested}, {self.used}, {self.capacity})"


def fits_request(request: Resource, ni: NodeInfo, ignored: frozenset[str] = frozenset(),
                 ignored_groups: frozenset[str] = frozenset()) -> list[InsufficientResource]:
    """Every resource the node lacks for `request` (upstream fitsRequest)."""
    out = []
    alloc, used = ni.allocatable, ni.requested
    allowed = alloc.allowed_pod_number
    if len(ni.pods) + 1 > allowed:
        out.append(InsufficientResource(RESOURCE_PODS, "Too many pods", 1, len(ni.pods), allowed))
    if request.milli_cpu == 0 and request.memory == 0 and request.ephemeral_storage == 0 and not request.scalar_resources:
        return out
    if request.milli_cpu > 0 and request.milli_cpu > alloc.milli_cpu - used.milli_cpu:
        out.append(InsufficientResource(RESOURCE_CPU, "Insufficient cpu", request.milli_cpu, used.milli_cpu, alloc.milli_cpu))
    if request.memory > 0 and request.memory > alloc.memory - used.memory:
        out.append(InsufficientResource(RESOURCE_MEMORY, "Insufficient memory", request.memory, used.memory, alloc.memory))
    if request.ephemeral_storage > 0 and request.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage:
        out.append(InsufficientResource(RESOURCE_EPHEMERAL_STORAGE, "Insufficient ephemeral-storage",
                                        request.ephemeral_storage, used.ephemeral_storage, alloc.ephemeral_storage))
    for name, q in request.scalar_resources.items():
        if q == 0:
            continue
        if is_extended_resource_name(name):
            if name in ignored or (ignored_groups and name.split("/", 1)[0] in ignored_groups):
                continue
        have = alloc.scalar_resources.get(name, 0)
        in_use = used.scalar_resources.get(name, 0)
        if q > have - in_use:
            out.append(InsufficientResource(name, f"Insufficient {name}", q, in_use, have))
    return out


def fits(pod: PodInfo, ni: NodeInfo) -> list[InsufficientResource]:
    return fits_request(pod.requests, ni)


class Fit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    NAME = names.NodeResourcesFit

    def __init__(self, args: Mapping[str, Any], handle: Handle):
        self.handle = handle
        self.ignored_resources = frozenset(args.get("ignoredResources") or ())
        self.ignored_resource_groups = frozenset(args.get("ignoredResourceGroups") or ())
        self.scorer: ResourceAllocationScorer = scorer_for_strategy(args.get("scoringStrategy") or {})
        self._statuses: dict[tuple[str, ...], Status] = {}
        self._memo = ScoreMemo()

    def _reject(self, reasons: tuple[str, ...]) -> Status:
        st = self._statuses.get(reasons)
        if st is None:
            st = self._statuses[reasons] = Status(Code.Unschedulable, reasons, plugin=self.NAME)
        return st

    # -- PreFilter / Filter ------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[Optional[PreFilterResult], Optional[Status]]:
        state.write(PRE_FILTER_STATE_KEY, pod.requests)
        return None, None

    def _request(self, state: CycleState, pod: PodInfo) -> Resource:
        r = state.get(PRE_FILTER_STATE_KEY)
        return pod.requests if r is None else r

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Optional[Status]:
        insufficient = fits_request(self._request(state, pod), node_info, self.ignored_resources,
                                    self.ignored_resource_groups)
        if not insufficient:
            return None
        return self._reject(tuple(r.reason for r in insufficient))

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[int, Status]]:
        req = self._request(state, pod)
        if req.scalar_resources or req.ephemeral_storage:
            return FilterPlugin.filter_nodes(self, state, pod, nodes)
        cpu, mem = req.milli_cpu, req.memory
        bad = [i for i, (free_cpu, free_mem, room) in enumerate([ni.free for ni in nodes])
               if room <= 0 or (cpu and cpu > free_cpu) or (mem and mem > free_mem)]
        if not bad:
            return []
        filt = self.filter
        return [(i, filt(state, pod, nodes[i])) for i in bad]  # type: ignore[misc]

    # -- Score -------------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Optional[Status]:
        state.write(PRE_SCORE_STATE_KEY, self.scorer.pod_request_list(pod))
        return None

    def _pod_requests(self, state: CycleState, pod: PodInfo) -> list[int]:
        r = state.get(PRE_SCORE_STATE_KEY)
        return self.scorer.pod_request_list(pod) if r is None else r

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Optional[Status]]:
        return self.scorer.score(node_info, self._pod_requests(state, pod)), None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Optional[Status]]:
        reqs = self._pod_requests(state, pod)
        cap = 2 * self.handle.snapshot_shared_lister().num_nodes() + 1024
        return self._memo.scores(tuple(reqs), nodes, lambda ns: self.scorer.score_nodes(ns, reqs), cap), None

    # -- requeueing ----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.Pod, ActionType.Delete | ActionType.UpdatePodScaleDown),
                                 self._after_pod_event),
            ClusterEventWithHint(ClusterEvent(EventResource.Node, ActionType.Add | ActionType.UpdateNodeAllocatable),
                                 self._after_node_change),
        ]

    @staticmethod
    def _after_pod_event(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        if new is None:  # deleted: only an assigned pod frees anything
            return QueueingHint.Queue if ((old or {}).get("spec") or {}).get("nodeName") else QueueingHint.QueueSkip
        target = PodInfo(pod)
        modified = PodInfo(new)
        if modified.uid and modified.uid == target.uid:
            return QueueingHint.Queue
        if not modified.node_name:
            return QueueingHint.QueueSkip
        before = PodInfo(old).requests if old is not None else Resource()
        after = modified.requests
        want = target.requests
        if want.milli_cpu and before.milli_cpu > after.milli_cpu:
            return QueueingHint.Queue
        if want.memory and before.memory > after.memory:
            return QueueingHint.Queue
        if want.ephemeral_storage and before.ephemeral_storage > after.ephemeral_storage:
            return QueueingHint.Queue
        for name, q in want.scalar_resources.items():
            if q and before.scalar_resources.get(name, 0) > after.scalar_resources.get(name, 0):
                return QueueingHint.Queue
        return QueueingHint.QueueSkip

    @staticmethod
    def _after_node_change(pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        if new is None:
            return QueueingHint.QueueSkip
        target = PodInfo(pod)
        if fits(target, NodeInfo(new)):
            return QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.Queue
        a0, a1 = NodeInfo(old).allocatable, NodeInfo(new).allocatable
        if a1.allowed_pod_number > a0.allowed_pod_number:
            return QueueingHint.Queue
        r = target.requests
        if r.is_zero():
            return QueueingHint.QueueSkip
        if ((r.milli_cpu > 0 and a1.milli_cpu > a0.milli_cpu) or (r.memory > 0 and a1.memory > a0.memory)
                or (r.ephemeral_storage > 0 and a1.ephemeral_storage > a0.ephemeral_storage)):
            return QueueingHint.Queue
        for name, q in r.scalar_resources.items():
            if q and a1.scalar_resources.get(name, 0) > a0.scalar_resources.get(name, 0):
                return QueueingHint.Queue
        return QueueingHint.QueueSkip


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> Fit:
    return Fit(default_plugin_args(names.NodeResourcesFit, args) or {}, handle)
