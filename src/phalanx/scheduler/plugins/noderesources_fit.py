"""NodeResourcesFit (PreFilter, Filter, PreScore, Score): the node must have room for the pod's
requests ("Insufficient cpu", "Too many pods", "Insufficient example.com/gpu", ...), and nodes are
scored by the configured strategy (LeastAllocated by default; MostAllocated;
RequestedToCapacityRatio) with per-resource weights.

Args (NodeResourcesFitArgs): `ignoredResources`, `ignoredResourceGroups` (extended resources the
Filter does not check), `scoringStrategy` {type, resources [{name, weight}],
requestedToCapacityRatio {shape [{utilization, score}]}}.

PlacementScore (1.36, KEP-5732): a PodGroup's candidate placement scores MostAllocated over all
of the placement's nodes taken together, with the group's assigned pods added (resources and
weights from `scoringStrategy.resources`, whatever its type): the tightest domain wins. Two
phalanx hooks serve the placement search (`phalanx.scheduler.placementsearch`):
`placement_score_bound` (the same score as if every pod of the group were placed there: an upper
bound, exact for an all-fit placement) and `placement_capacity_shortfall` (the placement's free
capacity cannot hold the pods the group still needs, so Filter would reject it anyway).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping, Optional, Sequence

from phalanx.machinery.quantity import BINARY_SI, DECIMAL_SI, format_quantity
from phalanx.scheduler.framework.config import default_plugin_args
from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    Placement,
    PlacementScorePlugin,
    PodGroupAssignments,
    PodGroupInfo,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.constants import RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY, RESOURCE_PODS, Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.resources import Resource, is_extended_resource_name, is_scalar_resource_name
from phalanx.scheduler.framework.types import NodeInfo, PodInfo

from . import names
from .noderesources_scorer import MOST_ALLOCATED, ResourceAllocationScorer, ScoreMemo, scorer_for_strategy

PRE_FILTER_STATE_KEY = "PreFilter" + names.NodeResourcesFit
PRE_SCORE_STATE_KEY = "PreScore" + names.NodeResourcesFit
PLACEMENT_MEMO_SIZE = 4096


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


class Fit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, PlacementScorePlugin, EnqueueExtensions):
    NAME = names.NodeResourcesFit

    SIGNATURE_FROM_SPEC = True

    def sign_pod(self, pod: PodInfo) -> object:
        """Batching fragment: the pod's requests are all this plugin reads."""
        return pod.requests_signature()

    def __init__(self, args: Mapping[str, Any], handle: Handle):
        self.handle = handle
        self.ignored_resources = frozenset(args.get("ignoredResources") or ())
        self.ignored_resource_groups = frozenset(args.get("ignoredResourceGroups") or ())
        strategy = args.get("scoringStrategy") or {}
        self.scorer: ResourceAllocationScorer = scorer_for_strategy(strategy)
        self.placement_scorer: ResourceAllocationScorer = scorer_for_strategy(
            {"type": MOST_ALLOCATED, "resources": strategy.get("resources") or []})
        self._statuses: dict[tuple[str, ...], Status] = {}
        self._memo = ScoreMemo()
        self._placement_memo: dict[str, tuple[list[NodeInfo], list[int], list[int]]] = {}

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

    # -- PlacementScore ------------------------------------------------------------------------------
    def score_placement(self, state: CycleState, pod_group: PodGroupInfo,
                        assignments: PodGroupAssignments) -> tuple[int, Optional[Status]]:
        by_key = {pi.key: pi for pi in pod_group.unscheduled_pods}
        sc = self.placement_scorer
        requested = [0] * len(sc.resources)
        for key in assignments.assignments:
            pi = assignments.pods.get(key) or by_key.get(key)
            if pi is None:
                continue
            for i, r in enumerate(sc.pod_request_list(pi)):
                requested[i] += r
        return self._placement_most_allocated(assignments.placement, requested), None

    def placement_score_bound(self, state: CycleState, pod_group: PodGroupInfo, placement: Placement) -> int:
        """The placement's score were every pod of the group placed in it (MostAllocated only
        grows with the requests, so no assignment in this placement scores higher)."""
        key = "PlacementBound" + self.NAME
        requested = state.get(key)
        if requested is None:
            sc = self.placement_scorer
            requested = [0] * len(sc.resources)
            for pi in pod_group.unscheduled_pods:
                for i, r in enumerate(sc.pod_request_list(pi)):
                    requested[i] += r
            state.write(key, requested)
        return self._placement_most_allocated(placement, requested)

    def _placement_most_allocated(self, placement: Placement, group_requests: list[int]) -> int:
        """MostAllocated of (all nodes' requests + the group's) over all nodes' allocatable."""
        sc = self.placement_scorer
        allocatable, used = self._placement_usage(placement)
        requested = [0] * len(allocatable)
        alloc = list(allocatable)
        for i, (name, _) in enumerate(sc.resources):
            if not alloc[i]:
                continue
            if group_requests[i] == 0 and is_scalar_resource_name(name):
                alloc[i] = 0  # an extended resource the group does not request is left out (upstream)
                continue
            requested[i] = used[i] + group_requests[i]
        return sc.scorer(requested, alloc)

    def _placement_usage(self, placement: Placement) -> tuple[list[int], list[int]]:
        """(allocatable, requested) per scoring resource over the placement's nodes, requests
        as Score counts them (non-zero cpu/memory).

        Memoized per placement name while the placement holds the very same NodeInfo objects:
        the scheduler's snapshot replaces a node's NodeInfo with a fresh copy whenever the node
        changes (and in-cycle assumptions are reverted before placements are scored), so a
        domain's sums are recomputed only after something changed in it, and checking costs a
        pointer comparison per node."""
        nodes = placement.nodes
        hit = self._placement_memo.get(placement.name)
        if hit is not None and hit[0] == nodes:
            return hit[1], hit[2]
        sc = self.placement_scorer
        n = len(sc.resources)
        allocatable = [0] * n
        used = [0] * n
        cm_index = {RESOURCE_CPU: (0, 4), RESOURCE_MEMORY: (1, 5)}
        if all(name in cm_index for name, _ in sc.resources):
            cms = [ni.cm for ni in nodes]
            for i, (name, _) in enumerate(sc.resources):
                a, u = cm_index[name]
                allocatable[i] = sum(c[a] for c in cms)
                used[i] = sum(c[u] for c in cms if c[a])
        else:
            for ni in nodes:
                alloc, req, nz = ni.allocatable, ni.requested, ni.non_zero_requested
                for i, (name, _) in enumerate(sc.resources):
                    if name == RESOURCE_CPU:
                        have, use = alloc.milli_cpu, nz.milli_cpu
                    elif name == RESOURCE_MEMORY:
                        have, use = alloc.memory, nz.memory
                    elif name == RESOURCE_EPHEMERAL_STORAGE:
                        have, use = alloc.ephemeral_storage, req.ephemeral_storage
                    else:
                        have, use = alloc.scalar_resources.get(name, 0), req.scalar_resources.get(name, 0)
                    if have:
                        allocatable[i] += have
                        used[i] += use
        if len(self._placement_memo) >= PLACEMENT_MEMO_SIZE:
            self._placement_memo.clear()
        self._placement_memo[placement.name] = (list(nodes), allocatable, used)
        return allocatable, used

    def placement_capacity_shortfall(self, state: CycleState, pod_group: PodGroupInfo, placement: Placement,
                                     need: int) -> list[str]:
        """Why the placement cannot hold `need` more pods of the group, or [] when it might:
        the free capacity (allocatable - requested) summed over its nodes falls short of the
        `need` smallest requests (["cpu: 1500m free, 4 requested"]), or, node by node, room for
        fewer pods than `need` counting each pod at the group's smallest request
        (["its nodes have room for 2"]). Filter rejects any node short of a pod's requests, so
        such a placement cannot place `need` pods, however they are packed."""
        pods = pod_group.unscheduled_pods
        if need <= 0 or not pods:
            return []
        need = min(need, len(pods))
        resources = self._requested_resources(pods, placement.nodes)
        room = [f[2] for f in (ni.free for ni in placement.nodes)]
        out = _total_shortfall(resources, room, need)
        if out:
            return out
        fit = _pods_that_fit_node_by_node(resources, room)
        if fit < need:
            return [f"its nodes have room for {fit}"]
        return []

    def _requested_resources(self, pods: Sequence[PodInfo],
                             nodes: Sequence[NodeInfo]) -> list[tuple[str, list[int], list[int]]]:
        """(name, request per pod, free per node) for every resource Filter checks and a pod requests."""
        resources: list[tuple[str, list[int], list[int]]] = []
        frees = [ni.free for ni in nodes]
        cpu = [p.requests.milli_cpu for p in pods]
        if any(cpu):
            resources.append((RESOURCE_CPU, cpu, [f[0] for f in frees]))
        mem = [p.requests.memory for p in pods]
        if any(mem):
            resources.append((RESOURCE_MEMORY, mem, [f[1] for f in frees]))
        eph = [p.requests.ephemeral_storage for p in pods]
        if any(eph):
            resources.append((RESOURCE_EPHEMERAL_STORAGE, eph, [
                ni.allocatable.ephemeral_storage - ni.requested.ephemeral_storage for ni in nodes]))
        for name in sorted({name for p in pods for name, q in p.requests.scalar_resources.items() if q}):
            if self._ignored(name):
                continue
            resources.append((name, [p.requests.scalar_resources.get(name, 0) for p in pods], [
                ni.allocatable.scalar_resources.get(name, 0) - ni.requested.scalar_resources.get(name, 0)
                for ni in nodes]))
        return resources

    def _ignored(self, name: str) -> bool:
        """An extended resource the plugin's args tell Filter to ignore."""
        return is_extended_resource_name(name) and (name in self.ignored_resources or (
            bool(self.ignored_resource_groups) and name.split("/", 1)[0] in self.ignored_resource_groups))

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


def _amount(resource: str, n: int) -> str:
    """A quantity as the API writes it: cpu from millicores, memory and storage in bytes."""
    if resource == RESOURCE_CPU:
        return format_quantity(Fraction(n, 1000), DECIMAL_SI)
    if resource in (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE) or resource.startswith("hugepages-"):
        return format_quantity(n, BINARY_SI)
    return str(n)


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> Fit:
    return Fit(default_plugin_args(names.NodeResourcesFit, args) or {}, handle)


def _total_shortfall(resources: list[tuple[str, list[int], list[int]]], room: list[int], need: int) -> list[str]:
    """The resources (and pod slots) whose free amount over all nodes is below `need` pods' smallest requests."""
    out = []
    total_room = sum(r for r in room if r > 0)
    if total_room < need:
        out.append(f"pods: {total_room} free, {need} requested")
    for name, requests, free in resources:
        want = sum(sorted(requests)[:need])
        have = sum(f for f in free if f > 0)
        if want and have < want:
            out.append(f"{name}: {_amount(name, have)} free, {_amount(name, want)} requested")
    return out


def _pods_that_fit_node_by_node(resources: list[tuple[str, list[int], list[int]]], room: list[int]) -> int:
    """How many pods of the group's smallest requests the nodes could take, node by node."""
    per_node = [r if r > 0 else 0 for r in room]
    for _, requests, free in resources:
        least = min(requests)
        if least:
            per_node = [min(k, f // least) if f > 0 else 0 for k, f in zip(per_node, free)]
    return sum(per_node)
