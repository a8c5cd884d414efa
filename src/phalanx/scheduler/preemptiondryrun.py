"""Workload-aware preemption's dry runs: the units a preemption may evict, and the search for the
fewest, least important of them that let a whole gang fit.

`grouppreemption.GroupPreemption` decides when to preempt and carries out the evictions; this
module answers which: `DryRun` runs the group cycle's own algorithm (`GroupCycleOps`, the narrow
part of `PodGroupCycle` preemption uses) on a copy of the cycle's snapshot with candidate victims
taken out, and `select_victims` finds, per domain, the lowest priority threshold whose victims make
the gang fit, then reprieves victims greedily (PodDisruptionBudget violators first) while it still
fits. The scheduler's own cache and snapshot are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Protocol, Sequence

from .framework.constants import Obj
from .framework.cycle_state import CycleState
from .framework.diagnosis import FitError, NoNodesAvailableError, SchedulingError
from .framework.interface import Placement, PodGroupInfo
from .framework.runtime import Framework
from .framework.snapshot import Snapshot
from .framework.types import NodeInfo, PodInfo, QueuedPodInfo
from .placement_outcome import Assignment, PlacementOutcome
from .plugins.defaultpreemption import filter_pods_with_pdb_violation

DRY_RUN_PREFIX = "preemption:"  # never "cluster": the scheduler's own snapshot must stay untouched


# -- data --------------------------------------------------------------------------------------------

@dataclass
class VictimUnit:
    """What preemption evicts as one: a lone pod, or every running pod of a PodGroup."""

    kind: str  # "Pod" | "PodGroup"
    key: str  # the pod's key (uid), or the PodGroup's namespace/name
    name: str  # namespace/name, for people
    priority: int
    pods: list[tuple[PodInfo, str]]  # (pod, node)
    start: str = ""
    pod_group: Optional[dict] = None
    preemptor: Optional[PodInfo] = None  # pod-by-pod preemption: the member that chose this victim

    @property
    def is_group(self) -> bool:
        return self.kind == "PodGroup"

    def importance(self) -> tuple:
        """Sorts most important first: priority, PodGroup over lone pod, larger group, earlier start."""
        return (-self.priority, 0 if self.is_group else 1, -len(self.pods), self.start, self.name)

    def nodes(self) -> list[str]:
        return sorted({n for _, n in self.pods})

    def record(self) -> dict:
        rec = {"kind": self.kind, "name": self.name, "priority": self.priority, "nodes": self.nodes()[:20]}
        if self.is_group:
            rec["pods"] = len(self.pods)
        return rec


@dataclass
class Domain:
    name: str
    node_names: list[str]
    rank: int = 0
    index: int = 0


@dataclass
class DomainPlan:
    """One domain's answer: the victims to evict and where the dry run put the preemptor's pods."""

    domain: Domain
    victims: list[VictimUnit] = field(default_factory=list)
    assignment: list[tuple[PodInfo, str]] = field(default_factory=list)
    pdb_violations: int = 0
    feasible: bool = False
    message: str = ""
    dry_runs: int = 0

    def cost(self) -> tuple:
        return (self.pdb_violations, len(self.victims), sum(u.priority for u in self.victims),
                self.domain.rank, self.domain.index)


# -- what it needs from the group cycle -------------------------------------------------------------

class GroupCycleOps(Protocol):
    """The group cycle's operations workload-aware preemption uses (`schedule_one_podgroup.PodGroupCycle`)."""

    def live_snapshot(self) -> Snapshot:
        """The scheduler's snapshot of the cycle (dry runs must never place pods on it)."""
        ...

    def try_placement(self, fw: Framework, placement: Placement, members: Sequence[QueuedPodInfo],
                      pg_info: PodGroupInfo, already: int) -> PlacementOutcome:
        """The group algorithm on one placement; its assumptions stay until `revert`."""
        ...

    def revert(self, fw: Framework, outcome: PlacementOutcome) -> None: ...

    async def evict(self, victim: Obj, message: str, preemptor: Obj) -> None: ...

    async def patch_pod_status(self, pod: Obj, patch: dict) -> None: ...

    def is_assumed(self, pod_key: str) -> bool:
        """Assumed and not bound yet (its group is still binding)."""
        ...

    def is_cached(self, pod_key: str) -> bool:
        """Still running in the scheduler's view (a victim not yet gone)."""
        ...

    def count(self, stat: str, n: int = 1) -> None: ...


# -- dry runs -----------------------------------------------------------------------------------------

class DryRun:
    """A what-if copy of the cluster: victim units taken out or put back, and the scheduler's group
    algorithm run on a domain of it. Every run is reverted before the next starts."""

    def __init__(self, cycle: GroupCycleOps, fw: Framework, members: Sequence[QueuedPodInfo], pg_info: PodGroupInfo,
                 already: int, clone: Snapshot, units: list[VictimUnit]):
        self.cycle = cycle
        self.fw = fw
        self.members = list(members)
        self.pg_info = pg_info
        self.already = already
        self.clone = clone
        self.units = units
        self.removed: set[int] = set()
        self.runs = 0
        self._domain_nodes: dict[str, set[str]] = {}
        self.group_is_plain = all(_plain(q.pod_info) for q in self.members)

    def domain_nodes(self, d: Domain) -> set[str]:
        s = self._domain_nodes.get(d.name)
        if s is None:
            s = self._domain_nodes[d.name] = set(d.node_names)
        return s

    # -- the copy's contents -------------------------------------------------------------------------
    def apply(self, removed: set[int]) -> None:
        """Make exactly the units in `removed` absent from the copy."""
        for i in self.removed - removed:
            self._put_back(self.units[i])
        for i in removed - self.removed:
            self._take_out(self.units[i])
        self.removed = set(removed)

    def _take_out(self, unit: VictimUnit, view: Optional[Snapshot] = None) -> None:
        for pi, node in unit.pods:
            if view is not None and node in view.node_info_map:
                view.remove_pod(pi, node)
            elif node in self.clone.node_info_map:
                self.clone.node_info_map[node].remove_pod(pi)

    def _put_back(self, unit: VictimUnit, view: Optional[Snapshot] = None) -> None:
        for pi, node in unit.pods:
            if view is not None and node in view.node_info_map:
                view.add_pod(pi, node)
            elif node in self.clone.node_info_map:
                self.clone.node_info_map[node].add_pod_info(pi)

    # -- group algorithm -----------------------------------------------------------------------------
    def run(self, d: Domain) -> PlacementOutcome:
        """The group algorithm on the domain; its assumptions stay until `revert`."""
        nodes = [self.clone.node_info_map[n] for n in d.node_names if n in self.clone.node_info_map]
        outcome = self.cycle.try_placement(self.fw, Placement(DRY_RUN_PREFIX + d.name, nodes), self.members,
                                           self.pg_info, self.already)
        self.runs += 1
        if outcome.view is self.cycle.live_snapshot():  # never evaluate on the live snapshot
            self.revert(outcome)
            raise RuntimeError("group preemption dry run reached the scheduler's snapshot")
        return outcome

    def revert(self, outcome: PlacementOutcome) -> None:
        self.cycle.revert(self.fw, outcome)

    def fits(self, d: Domain, removed: set[int]) -> Optional[list[tuple[PodInfo, str]]]:
        """Where the group goes with exactly `removed` evicted, or None when it does not fit."""
        self.apply(removed)
        outcome = self.run(d)
        try:
            if not outcome.feasible:
                return None
            return [(a.pod_info, a.node) for a in outcome.assigned]
        finally:
            self.revert(outcome)

    # -- reprieve ------------------------------------------------------------------------------------
    def reprieve(self, outcome: PlacementOutcome, index: int) -> bool:
        """Put victim `index` back next to the assumed group; keep it there when the group still
        fits, moving the preemptor pods that no longer fit on its nodes elsewhere."""
        unit = self.units[index]
        view = outcome.view
        assert view is not None
        self._put_back(unit, view)
        affected = {n for _, n in unit.pods if n in view.node_info_map}
        on_affected = [a for a in outcome.assigned if a.node in affected]
        if on_affected:
            if self.group_is_plain and all(_plain(pi) for pi, _ in unit.pods):
                over = {n for n in affected if _overcommitted(view.node_info_map[n])}
                displaced = [a for a in on_affected if a.node in over]
            else:
                displaced = on_affected
            if displaced and not self._move(outcome, displaced):
                self._take_out(unit, view)
                return False
        self.removed.discard(index)
        return True

    def _move(self, outcome: PlacementOutcome, displaced: list[Assignment]) -> bool:
        """Re-place the `displaced` preemptor pods anywhere in the view; undo everything on failure."""
        fw, view, assigned = self.fw, outcome.view, outcome.assigned
        assert view is not None
        for qpi, pi, node, pstate in displaced:
            assumed = pi.assumed_on(node)
            fw.run_reserve_plugins_unreserve(pstate, assumed, node)
            view.remove_pod(assumed, node)
        placed: list[Assignment] = []
        ok = _room_for(view, [a.pod_info for a in displaced])
        if ok:
            for qpi, pi, _, _ in displaced:
                pstate = CycleState()
                try:
                    node = fw.schedule_pod(pstate, pi, view).suggested_host
                except (FitError, NoNodesAvailableError, SchedulingError):
                    ok = False
                    break
                assumed = pi.assumed_on(node)
                view.add_pod(assumed, node)
                if fw.run_reserve_plugins_reserve(pstate, assumed, node) is not None:
                    fw.run_reserve_plugins_unreserve(pstate, assumed, node)
                    view.remove_pod(assumed, node)
                    ok = False
                    break
                placed.append(Assignment(qpi, pi, node, pstate))
        if ok:
            gone = {id(a) for a in displaced}
            assigned[:] = [a for a in assigned if id(a) not in gone] + placed
            return True
        for qpi, pi, node, pstate in reversed(placed):
            assumed = pi.assumed_on(node)
            fw.run_reserve_plugins_unreserve(pstate, assumed, node)
            view.remove_pod(assumed, node)
        # the caller takes the victim out again; then the displaced pods return to their nodes
        outcome.displaced.extend(displaced)
        return False

    def restore_displaced(self, outcome: PlacementOutcome) -> None:
        """After a failed reprieve: the displaced preemptor pods go back where they were."""
        fw, view, assigned = self.fw, outcome.view, outcome.assigned
        assert view is not None
        broken = []
        displaced, outcome.displaced = outcome.displaced, []
        for a in displaced:
            qpi, pi, node, pstate = a
            assumed = pi.assumed_on(node)
            view.add_pod(assumed, node)
            if fw.run_reserve_plugins_reserve(pstate, assumed, node) is not None:
                fw.run_reserve_plugins_unreserve(pstate, assumed, node)
                view.remove_pod(assumed, node)
                broken.append(a)
        if broken:
            gone = {id(a) for a in broken}
            assigned[:] = [a for a in assigned if id(a) not in gone]
            outcome.feasible = False


def select_victims(run: DryRun, d: Domain, candidates: list[int], pdbs: Sequence[dict]) -> DomainPlan:
    """The eviction set for one domain (indices into run.units, most important first)."""
    plan = DomainPlan(d)
    if not candidates:
        plan.message = "no lower-priority pod or pod group runs there"
        return plan
    runs_before = run.runs
    all_out = run.fits(d, set(candidates))
    if all_out is None:
        plan.message = f"does not fit even without all {describe_units([run.units[i] for i in candidates])}"
        plan.dry_runs = run.runs - runs_before
        return plan
    victims, threshold_assignment = _threshold_victims(run, d, candidates, all_out)
    # reprieve: PDB-violating victims first, then the rest, each in importance order
    violating = _pdb_violating(run, victims, pdbs)
    violating_set = set(violating)
    ordered = violating + [i for i in victims if i not in violating_set]
    reprieved = _reprieve(run, d, victims, ordered)
    final = [i for i in victims if i not in reprieved]
    assignment: Optional[list[tuple[PodInfo, str]]] = threshold_assignment
    if reprieved:
        checked = run.fits(d, set(final))
        if checked is None:  # something the reprieve could not see: evict the threshold set
            final, checked = victims, run.fits(d, set(victims))
        assignment = checked if checked is not None else threshold_assignment
    plan.victims = [run.units[i] for i in final]
    plan.assignment = assignment or []
    plan.pdb_violations = sum(1 for i in final if i in violating_set)
    plan.feasible = bool(plan.victims) and assignment is not None
    plan.dry_runs = run.runs - runs_before
    plan.message = f"{describe_units(plan.victims)} of priority ≤ {max(u.priority for u in plan.victims)}" \
        if plan.victims else "fits without preemption"
    return plan


def _threshold_victims(run: DryRun, d: Domain, candidates: list[int],
                       all_out: list[tuple[PodInfo, str]]) -> tuple[list[int], list[tuple[PodInfo, str]]]:
    """The lowest priority threshold N whose units (priority ≤ N) make room (a binary search over
    the candidates' distinct priorities): those units, and where the group goes without them."""
    priorities = sorted({run.units[i].priority for i in candidates})
    lo, hi = 0, len(priorities) - 1
    assignment = None
    while lo < hi:
        mid = (lo + hi) // 2
        found = run.fits(d, {i for i in candidates if run.units[i].priority <= priorities[mid]})
        if found is not None:
            hi, assignment = mid, found
        else:
            lo = mid + 1
    victims = [i for i in candidates if run.units[i].priority <= priorities[lo]]
    # the threshold is the highest priority: every candidate goes
    return victims, assignment if assignment is not None else all_out


def _pdb_violating(run: DryRun, victims: list[int], pdbs: Sequence[dict]) -> list[int]:
    """The victims whose eviction would violate a PodDisruptionBudget, in importance order."""
    pods = [pi for i in victims for pi, _ in run.units[i].pods]
    violating_pods, _ = filter_pods_with_pdb_violation(pods, pdbs)
    violating_keys = {pi.key for pi in violating_pods}
    return [i for i in victims if any(pi.key in violating_keys for pi, _ in run.units[i].pods)]


def _reprieve(run: DryRun, d: Domain, victims: list[int], ordered: list[int]) -> set[int]:
    """Put victims back one by one in `ordered`; those the group still fits next to stay."""
    run.apply(set(victims))
    outcome = run.run(d)
    reprieved: set[int] = set()
    try:
        if outcome.feasible:
            for i in ordered:
                if run.reprieve(outcome, i):
                    reprieved.add(i)
                else:
                    run.restore_displaced(outcome)
                    if not outcome.feasible:
                        break
    finally:
        run.revert(outcome)
    return reprieved


def _plain(pi: PodInfo) -> bool:
    """A pod whose fit on a node depends on resources only (no ports, pod affinity or spreading)."""
    return not (pi.host_ports or pi.has_affinity or pi.spec.get("topologySpreadConstraints"))


def _overcommitted(ni: NodeInfo) -> bool:
    if ni.free[0] < 0 or ni.free[1] < 0 or ni.free[2] < 0:
        return True
    req, alloc = ni.requested, ni.allocatable
    if req.ephemeral_storage > alloc.ephemeral_storage and req.ephemeral_storage > 0:
        return True
    return any(v > alloc.scalar_resources.get(k, 0) for k, v in req.scalar_resources.items() if v > 0)


def _room_for(view: Snapshot, pods: Sequence[PodInfo]) -> bool:
    """A necessary condition for re-placing `pods` (NodeResourcesFit would reject them otherwise):
    the view's free cpu and memory together hold them all, and each fits some node on its own."""
    cpu = sum(pi.requests.milli_cpu for pi in pods)
    mem = sum(pi.requests.memory for pi in pods)
    free_cpu = free_mem = 0
    frees = []
    for ni in view.list():
        f = ni.free
        free_cpu += max(0, f[0])
        free_mem += max(0, f[1])
        if f[2] > 0:
            frees.append(f)
    if free_cpu < cpu or free_mem < mem:
        return False
    for pi in pods:
        c, m = pi.requests.milli_cpu, pi.requests.memory
        if not any(f[0] >= c and f[1] >= m for f in frees):
            return False
    return True


def describe_units(units: Sequence[VictimUnit]) -> str:
    """`3 pod(s) and 1 pod group(s)`."""
    pods = sum(1 for u in units if not u.is_group)
    groups = sum(1 for u in units if u.is_group)
    parts = []
    if pods or not groups:
        parts.append(f"{pods} pod(s)")
    if groups:
        parts.append(f"{groups} pod group(s)")
    return " and ".join(parts)
