"""Workload-aware preemption (KEP-5710, gate `WorkloadAwarePreemption`) for PodGroup cycles, with
delayed preemption: a gang that cannot be placed evicts the fewest, least important running
units that make the whole gang fit, and evicts nothing when no such set exists.

The scheduler owns one `GroupPreemption` (`scheduler.group_preemption`); the PodGroup cycle calls
it at two points:

    group_preemption.before_group_cycle(group, members)        # lift the group's own nominations
    result = await group_preemption.on_group_unschedulable(     # the cycle failed: preempt?
        fw, group, pod_group, members, outcomes, min_count=4, already=0)
    result.message    # "preemption: preempting 3 pod(s) and 1 pod group(s) of priority ≤ 100 on nodes ..."
    result.diagnosis  # the same for `phalanx explain podgroup` (victims, nominations, domains)

What it does, as upstream 1.36 describes it:

- **Priorities.** The preemptor's priority is the PodGroup's `spec.priority` (admission resolves it
  from `priorityClassName`), which is authoritative for every pod of a group during workload-aware
  preemption; a group without one (created with the gate off) uses its pods' highest priority.
  A member with `preemptionPolicy: Never` (from its PriorityClass) makes the gang non-preempting;
  in 1.37 with `PodGroupPreemptionPolicy` the PodGroup's own `preemptionPolicy` decides when set.
- **Units.** A potential victim is a running unit of lower priority: a lone pod, a pod of a
  PodGroup with `disruptionMode: Pod` (at its group's priority), or a whole PodGroup with
  `disruptionMode: PodGroup` (one unit, all its running pods, even those outside the domain).
- **Domain.** The whole cluster. If removing every potential victim does not make the group fit,
  preemption cannot help and nothing is evicted.
- **Selection.** Units are ordered by importance (higher priority; at equal priority a PodGroup
  before a lone pod; a larger PodGroup first; an earlier start first). A binary search over the
  victims' distinct priorities finds the lowest N such that evicting every unit of priority ≤ N
  makes the group fit. Then victims are reprieved greedily, most important first and the ones
  whose eviction would violate a PodDisruptionBudget before all others: a victim is put back, and
  kept if the group still fits (the dry-run placement is repaired by moving the preemptor pods
  that no longer fit on the victim's nodes). The final set is verified by one more dry run.
- **Dry runs** run the scheduler's own group algorithm (`GroupCycleOps.try_placement`, the group
  cycle's) on a copy of the cycle's snapshot with the victims taken out; the scheduler's cache and
  snapshot are never touched.
- **Delayed preemption.** Victims are evicted only once the whole gang fits: each victim pod gets
  `DisruptionTarget=True, reason=PreemptionByScheduler` and a `Preempted` event before it is
  deleted; a victim PodGroup gets the same condition on its `/status` and its own `Preempted`
  event. The preemptor's pods are nominated to the nodes the dry run placed them on
  (`status.nominatedNodeName` and the Nominator, so the freed room is held for them) and the group
  is requeued. While those victims are still terminating the group starts no new preemption;
  when the group fails without preempting, its nominations are cleared.
- **Topology.** Upstream 1.36 refuses preemption for a group with a topology constraint ("workload
  aware preemption is not supported for pod groups with scheduling constraints"), and so does
  phalanx by default. phalanx's gate `PhalanxTopologyAwarePreemption` (off by default) lifts that:
  every candidate domain (the PlacementGenerate placements) gets its own eviction set, and the
  domain with the smallest one wins: fewest PDB violations, then fewest units, then lowest total
  priority, then a preferred rank, then generation order.
- **Pod by pod (WorkloadAwarePreemption off).** The group cycle runs each member's PostFilter and
  places it on the nominated node with its victims out of the view; when the group fits so,
  `actuate_pod_by_pod` evicts those victims ("Preempted by pod <uid> on node <node>"), nominates
  the members and keeps the group waiting for them like a workload-aware preemption.
- **Single-pod preemption** (DefaultPreemption) keeps 1.36's behaviour for lone pods, which ignores
  PodGroups; a preemptor that belongs to a PodGroup never picks a pod of a `disruptionMode:
  PodGroup` group as a victim, so a gang never evicts part of such a group.

Limits: DRA devices held by victims are not released in the dry run (a gang short of devices is
"not helpful"); reprieving checks resources and ports directly and re-filters the preemptor pods
it moves, and the final dry run guards what that cannot see (cross-node affinity, spreading).

What it uses: the profiles' Handles (client, informer factory, event recorder, PodGroup lister,
nominator, PDBs, clock, off-cycle API calls) and, from the group cycle, the narrow `GroupCycleOps`.

Metrics: `scheduler_workload_preemption_attempts_total{result}` per evaluation (`Success` when victims
were chosen), `scheduler_workload_preemption_victims` per actuation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Iterable, Optional, Sequence

from phalanx.api.scheduling.fields import disrupts_as_whole, preemption_policy
from phalanx.machinery.featuregates import UnknownFeatureGate
from phalanx.metrics import scheduler as sm

from .apicalls import STRATEGIC_MERGE, conditions_with, timestamp
from .cache import pod_group_key, pod_key
from .framework.constants import Obj
from .framework.interface import Handle, Placement, PodGroupInfo
from .framework.runtime import Framework
from .framework.snapshot import Snapshot
from .framework.types import NodeInfo, PodInfo, QueuedPodInfo, pod_start_time_key
from .placement_outcome import PlacementOutcome
from .plugins import names
from .queue import QueuedPodGroup
from .reporting import pod_group_api, release_of
from .preemptiondryrun import (Domain, DomainPlan, DryRun, GroupCycleOps, VictimUnit,
                               describe_units, select_victims)
from .treepreemption import TreeFits, outside_tree, select_tree_victims

log = logging.getLogger("phalanx.scheduler.grouppreemption")

GATE = "WorkloadAwarePreemption"
POLICY_GATE = "PodGroupPreemptionPolicy"  # 1.37: the PodGroup's preemptionPolicy is authoritative
TOPOLOGY_GATE = "PhalanxTopologyAwarePreemption"  # phalanx's extension: preempt for topology-constrained groups
MSG_CONSTRAINTS = "workload aware preemption is not supported for pod groups with scheduling constraints"
DISRUPTION_MODE_POD = "Pod"
DISRUPTION_MODE_POD_GROUP = "PodGroup"  # 1.36's spelling; 1.37 says `all` (fields.disrupts_as_whole reads both)
REASON_PREEMPTION = "PreemptionByScheduler"
MSG_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
CLUSTER = "cluster"
MAX_LISTED = 50  # victims, nominations and domains kept in a diagnosis
MAX_NAMED_NODES = 5


@dataclass
class GroupPreemptionResult:
    """What the failed cycle reports: `message` joins the PodGroup's condition, `diagnosis` its event."""

    message: str = ""
    diagnosis: Optional[dict] = None
    preempted: bool = False


@dataclass
class PendingPreemption:
    """A preemption in flight: victims evicted, the group's pods nominated, waiting for the room."""

    victims: dict[str, tuple[str, str, str]]  # victim pod key -> (namespace, name, node)
    nominations: dict[str, tuple[PodInfo, str]]  # preemptor pod key -> (pod, node)
    diagnosis: dict
    actuated: bool = False  # the evictions' API calls are done (they run off the cycle)


# -- the scheduler's side -----------------------------------------------------------------------------

class GroupPreemption:
    """`GroupPreemption(cycle, frameworks, enabled=...)`: `frameworks` are the scheduler's profiles
    (their Handles share the client, informers, nominator and PodGroup lister)."""

    def __init__(self, cycle: GroupCycleOps, frameworks: Sequence[Framework], *, enabled: bool,
                 pod_by_pod: bool = False):
        self.cycle = cycle
        self.handle: Handle = frameworks[0]
        self.enabled = enabled
        # WorkloadAwarePreemption off: the group cycle's members preempt one by one (their
        # PostFilter); this actuates what they chose and keeps the group waiting for its victims.
        self.pod_by_pod = pod_by_pod and not enabled
        release = release_of(getattr(frameworks[0], "feature_gates", None))
        self.api_version = pod_group_api(release)
        # 1.37: single-pod preemption evicts a victim's whole group when its disruption mode is `all`
        self.whole_group_victims = enabled and release != "1.36"
        self.pending: dict[str, PendingPreemption] = {}  # pod group key -> preemption in flight
        self._nominated: dict[str, str] = {}  # preemptor pod key -> its pod group key
        if not (self.enabled or self.pod_by_pod):
            return
        informers = self.handle.shared_informer_factory()
        if informers is None:
            raise ValueError("workload-aware preemption needs the scheduler's informer factory")
        self.pods = informers.informer("v1", "Pod")
        self.pods.add_event_handler(on_update=self._pod_update, on_delete=self._pod_gone)
        informers.informer(self.api_version, "PodGroup").add_event_handler(on_delete=self._pod_group_gone)
        for fw in frameworks if self.enabled else ():
            self._guard_default_preemption(fw)

    def _pod_group(self, key: Optional[str]) -> Optional[Obj]:
        groups = self.handle.pod_group_lister()
        return groups.get(key) if key is not None and groups is not None else None

    # -- hooks ---------------------------------------------------------------------------------------
    def before_group_cycle(self, group: QueuedPodGroup, members: Sequence[QueuedPodInfo]) -> None:
        """The group's own nominations would count its pods twice (nominated and assumed) in its
        own cycle: lift them for the cycle; a failure puts them back while the preemption lasts."""
        if not (self.enabled or self.pod_by_pod):
            return
        for q in members:
            if q.pod_info.key in self._nominated:
                self.handle.delete_nominated_pod_if_exists(q.pod_info)

    async def on_group_unschedulable(self, fw: Framework, group: QueuedPodGroup, pod_group: Obj,
                                     members: Sequence[QueuedPodInfo], outcomes: Sequence[PlacementOutcome],
                                     *, min_count: int = 0,
                                     already: int = 0) -> GroupPreemptionResult:
        if not (self.enabled or self.pod_by_pod) or not members:
            return GroupPreemptionResult()
        waiting_result = self._waiting(group, members)
        if waiting_result is not None:
            return waiting_result
        if not self.enabled:  # pod by pod: the cycle's members tried; a failed cycle clears nominations
            await self._clear_nominations(members)
            return GroupPreemptionResult()
        if not may_preempt(fw, pod_group, members):
            await self._clear_nominations(members)
            msg = "preemption: " + MSG_POLICY_NEVER
            return GroupPreemptionResult(msg, {"result": "NotEligible", "message": msg})
        if has_topology_constraint(pod_group) and not fw.feature_enabled(TOPOLOGY_GATE):
            await self._clear_nominations(members)
            msg = "preemption: " + MSG_CONSTRAINTS
            return GroupPreemptionResult(msg, {"result": "NotSupported", "message": msg})
        placements = [o.placement for o in outcomes]
        if not placements:
            await self._clear_nominations(members)
            return GroupPreemptionResult()
        priority = group_priority(pod_group, [q.pod_info for q in members])
        pg_info = PodGroupInfo(group.namespace, group.name, pod_group, [q.pod_info for q in members])
        try:
            plan, evaluation = self._evaluate(fw, group.key, priority, members, pg_info, placements, already)
        except Exception as e:  # never let a what-if break the cycle: the group is simply not helped
            log.exception("workload-aware preemption for pod group %s", group.key)
            plan, evaluation = None, {"result": "Error", "message": f"preemption: error: {e}"}
        finally:
            fw.set_snapshot(self.cycle.live_snapshot())  # dry runs pointed the framework at their copies
        self.cycle.count("group_preemption_attempts")
        sm.workload_preemption("Success" if plan is not None else
                               "Error" if evaluation.get("result") == "Error" else "Unschedulable", 0)
        if plan is None:
            await self._clear_nominations(members)
            # Nothing of lower priority runs: the usual case in a cluster without priorities, kept
            # out of the condition (explain shows it); every other reason is part of the message.
            quiet = evaluation.get("result") == "NoVictims"
            return GroupPreemptionResult("" if quiet else evaluation["message"], evaluation)
        await self._actuate(fw, group, pod_group, priority, plan, evaluation)
        return GroupPreemptionResult(evaluation["message"], evaluation, preempted=True)

    async def on_tree_unschedulable(self, fw: Framework, entity: QueuedPodGroup, root: Obj, leaf_keys: set[str],
                                    members: Sequence[QueuedPodInfo], fits: TreeFits) -> GroupPreemptionResult:
        """1.37: a CompositePodGroup tree that does not fit preempts at its root (`treepreemption`):
        the victims are evicted, its pods nominated where the dry run placed them, and the tree
        waits for the room as a PodGroup does."""
        if not self.enabled or not members:
            return GroupPreemptionResult()
        waiting_result = self._waiting(entity, members)
        if waiting_result is not None:
            return waiting_result
        if not may_preempt(fw, root, members):
            await self._clear_nominations(members)
            msg = "preemption: " + MSG_POLICY_NEVER
            return GroupPreemptionResult(msg, {"result": "NotEligible", "message": msg})
        priority = group_priority(root, [q.pod_info for q in members])
        clone = self.cycle.live_snapshot().clone()
        units = sorted(outside_tree(self._potential_victims(clone, "", priority), leaf_keys), key=VictimUnit.importance)
        try:
            chosen = select_tree_victims(clone, units, fits) if units else None
        finally:
            fw.set_snapshot(self.cycle.live_snapshot())
        self.cycle.count("group_preemption_attempts")
        if chosen is None or not chosen.victims:
            await self._clear_nominations(members)
            if not units:  # nothing of lower priority runs: kept out of the condition, as for a PodGroup
                return GroupPreemptionResult("", {"result": "NoVictims", "priority": priority})
            msg = (f"preemption: not helpful: the composite pod group does not fit even without all "
                   f"{describe_units(units)} of priority lower than {priority}")
            return GroupPreemptionResult(msg, {"result": "NotHelpful", "message": msg, "priority": priority})
        plan = DomainPlan(Domain(CLUSTER, []), victims=chosen.victims, assignment=chosen.assignment, feasible=True,
                          dry_runs=chosen.dry_runs)
        diag = dict(_preempting(plan, 1), priority=priority, dryRuns=chosen.dry_runs)
        await self._actuate(fw, entity, root, priority, plan, diag)
        return GroupPreemptionResult(diag["message"], diag, preempted=True)

    def _waiting(self, group: QueuedPodGroup, members: Sequence[QueuedPodInfo]) -> Optional[GroupPreemptionResult]:
        """A preemption of this group whose victims still terminate: keep its nominations and say
        so (no new preemption meanwhile); None when there is none (a finished one is dropped)."""
        pending = self.pending.get(group.key)
        if pending is None:
            return None
        waiting = self._still_terminating(pending)
        if not waiting:
            self.pending.pop(group.key, None)
            return None
        self._restore_nominations(pending, members)
        nodes = sorted({n for _, _, n in waiting})
        msg = f"preemption: waiting for {len(waiting)} preempted pod(s) to terminate on nodes {_names(nodes)}"
        return GroupPreemptionResult(msg, dict(pending.diagnosis, result="Waiting", message=msg))

    async def actuate_pod_by_pod(self, fw: Framework, group: QueuedPodGroup, pod_group: Obj,
                                 members: Sequence[QueuedPodInfo], outcome: PlacementOutcome) -> GroupPreemptionResult:
        """The group fits with the victims its members' PostFilter chose (`outcome.victims`):
        evict them and nominate every placed member to its node; while an earlier preemption's
        victims still terminate, evict nothing more and keep that one's nominations."""
        if not self.pod_by_pod:
            return GroupPreemptionResult()
        waiting_result = self._waiting(group, members)
        if waiting_result is not None:
            return waiting_result
        units = [VictimUnit("Pod", v.key, f"{v.namespace}/{v.name}", v.priority, [(v, node)],
                            pod_start_time_key(v), preemptor=by) for v, node, by in outcome.victims]
        plan = DomainPlan(Domain(CLUSTER, []), victims=units,
                          assignment=[(a.pod_info, a.node) for a in outcome.assigned], feasible=True)
        nodes = sorted({n for _, n, _ in outcome.victims})
        msg = f"preemption: preempting {describe_units(units)} pod by pod on nodes {_names(nodes)}"
        diag = dict(result="Preempting", message=msg, domain=CLUSTER,
                    victims=[u.record() for u in units[:MAX_LISTED]],
                    victimCount={"pods": len(units), "podGroups": 0, "podsEvicted": len(units)},
                    nominations={pi.name: n for pi, n in plan.assignment[:MAX_LISTED]})
        priority = group_priority(pod_group, [q.pod_info for q in members])
        await self._actuate(fw, group, pod_group, priority, plan, diag)
        return GroupPreemptionResult(msg, diag, preempted=True)

    # -- evaluation ----------------------------------------------------------------------------------
    def _evaluate(self, fw: Framework, group_key: str, priority: int, members: Sequence[QueuedPodInfo],
                  pg_info: PodGroupInfo, placements: Sequence[Placement],
                  already: int) -> tuple[Optional[DomainPlan], dict]:
        clone = self.cycle.live_snapshot().clone()
        units = self._potential_victims(clone, group_key, priority)
        base: dict[str, object] = {"priority": priority}
        if not units:
            msg = f"preemption: no running pod or pod group has a priority lower than {priority}"
            return None, dict(base, result="NoVictims", message=msg)
        units.sort(key=VictimUnit.importance)
        run = DryRun(self.cycle, fw, members, pg_info, already, clone, units)
        domains = [Domain(p.name, [ni.name for ni in p.nodes], getattr(p, "rank", 0) or 0, i)
                   for i, p in enumerate(placements)]
        pdbs = fw.pod_disruption_budgets()
        plans = []
        for d in domains:
            in_domain = [i for i, u in enumerate(units) if any(n in run.domain_nodes(d) for _, n in u.pods)]
            plans.append(select_victims(run, d, in_domain, pdbs))
        run.apply(set())
        feasible = [p for p in plans if p.feasible]
        base["dryRuns"] = run.runs
        base["domains"] = [{"domain": p.domain.name, "feasible": p.feasible, "victims": len(p.victims),
                            "totalPriority": sum(u.priority for u in p.victims), "message": p.message}
                           for p in plans[:MAX_LISTED]]
        if not feasible:
            what = describe_units(units)
            where = f" in any of {len(domains)} domains" if len(domains) > 1 or domains[0].name != CLUSTER else ""
            msg = (f"preemption: not helpful: the pod group does not fit{where} even without all {what} "
                   f"of priority lower than {priority}")
            return None, dict(base, result="NotHelpful", message=msg)
        best = min(feasible, key=DomainPlan.cost)
        return best, dict(base, **_preempting(best, len(feasible)))

    def _potential_victims(self, snap: Snapshot, group_key: str, priority: int) -> list[VictimUnit]:
        """Every running unit of lower priority than `priority` (the preemptor's own pods excluded)."""
        lone: list[VictimUnit] = []
        grouped: dict[str, VictimUnit] = {}
        excluded_groups: set[str] = set()
        for ni in snap.list():
            for pi in ni.pods:
                if self.cycle.is_assumed(pi.key):
                    gk = pod_group_key(pi.pod)
                    if gk is not None:
                        excluded_groups.add(gk)  # a group still binding is not a victim yet
                    continue
                gk = pod_group_key(pi.pod)
                if gk == group_key:
                    continue
                pg = self._pod_group(gk)
                if gk is not None and pg is not None and disrupts_as_whole(pg):
                    unit = grouped.get(gk)
                    if unit is None:
                        # its priority is set below, once all its pods are known
                        unit = grouped[gk] = VictimUnit("PodGroup", gk, gk, 0, [], pod_group=pg)
                    unit.pods.append((pi, ni.name))
                    continue
                p = pod_group_priority(pg) if pg is not None else None
                p = pi.priority if p is None else p
                if p < priority:
                    lone.append(VictimUnit("Pod", pi.key, f"{pi.namespace}/{pi.name}", p, [(pi, ni.name)],
                                           pod_start_time_key(pi)))
        units = lone
        for gk, unit in grouped.items():
            if gk in excluded_groups:
                continue
            unit.priority = group_priority(unit.pod_group or {}, (pi for pi, _ in unit.pods))
            if unit.priority < priority:
                unit.pods.sort(key=lambda pn: (pn[1], pn[0].name))
                unit.start = min(pod_start_time_key(pi) for pi, _ in unit.pods)
                units.append(unit)
        return units

    # -- actuation -----------------------------------------------------------------------------------
    async def _actuate(self, fw: Framework, group: QueuedPodGroup, pod_group: Obj, priority: int, plan: DomainPlan,
                       diag: dict) -> None:
        """Nominate in the cycle; evict and write the nominations off it (upstream's asynchronous
        preemption): the group's next cycles see the pending preemption and wait for the room."""
        handle = self.handle
        victims: dict[str, tuple[str, str, str]] = {}
        for unit in plan.victims:
            for pi, node in unit.pods:
                victims[pi.key] = (pi.namespace, pi.name, node)
        nominations: dict[str, tuple[PodInfo, str]] = {}
        status_patches: list[tuple[PodInfo, Optional[str]]] = []
        for pi, node in plan.assignment:
            nominations[pi.key] = (pi, node)
            self._nominated[pi.key] = group.key
            handle.add_nominated_pod(pi, node)
            if pi.nominated_node_name != node:
                status_patches.append((pi, node))
        # Lower-priority pods nominated to those nodes lose their claim on the room (as upstream).
        for node in sorted({n for _, n in plan.assignment}):
            for other in handle.nominated_pods_for_node(node):
                if other.key in nominations or pod_group_key(other.pod) == group.key:
                    continue
                if self._preemption_priority(other) < priority:
                    handle.delete_nominated_pod_if_exists(other)
                    self._nominated.pop(other.key, None)
                    status_patches.append((other, None))
        pending = self.pending[group.key] = PendingPreemption(victims, nominations, diag)
        self.cycle.count("group_preemptions")
        self.cycle.count("preemption_victims", len(victims))
        sm.WORKLOAD_PREEMPTION_VICTIMS.observe(len(victims))
        fw.spawn_api_call(self._actuate_api_calls(fw, group, pod_group, plan, status_patches, pending))

    async def _actuate_api_calls(self, fw: Framework, group: QueuedPodGroup, pod_group: Obj, plan: DomainPlan,
                                 status_patches: list[tuple[PodInfo, Optional[str]]],
                                 pending: PendingPreemption) -> None:
        try:
            for unit in plan.victims:
                if unit.is_group:
                    by = "composite pod group" if pod_group.get("kind") == "CompositePodGroup" else "pod group"
                    await self._mark_pod_group(unit, group.key, fw, preemptor_kind=by)
                for pi, node in unit.pods:
                    try:
                        if unit.preemptor is not None:  # pod by pod: the pod preemption's own words
                            await self.cycle.evict(pi.pod, f"Preempted by pod {unit.preemptor.uid} on node {node}",
                                                   unit.preemptor.pod)
                        else:
                            await self.cycle.evict(pi.pod, victim_event_message(pod_group), pod_group)
                    except Exception:  # keep going: a victim that stays is seen when the group retries
                        log.exception("preempting %s/%s", pi.namespace, pi.name)
            for pi, nominated in status_patches:
                await self.cycle.patch_pod_status(pi.pod, {"status": {"nominatedNodeName": nominated}})
        finally:
            pending.actuated = True

    async def _mark_pod_group(self, unit: VictimUnit, preemptor: str, fw: Framework, *,
                              preemptor_kind: str = "pod group") -> None:
        """DisruptionTarget=True (PreemptionByScheduler) on a victim PodGroup, and its `Preempted` event."""
        pg = unit.pod_group or {}
        md = pg.get("metadata") or {}
        cond = {"type": "DisruptionTarget", "status": "True", "reason": REASON_PREEMPTION,
                "message": f"{fw.profile_name}: preempting to accommodate a higher priority {preemptor_kind}",
                "lastTransitionTime": timestamp(fw.clock()), "observedGeneration": md.get("generation", 1)}
        client = fw.client()
        try:
            if client is not None:
                await client.patch(self.api_version, "PodGroup", md.get("namespace", ""), md.get("name", ""),
                                   {"status": {"conditions": conditions_with(self._latest(pg), cond)}},
                                   patch_type=STRATEGIC_MERGE,
                                   subresource="status")
        except Exception as e:  # a PodGroup already gone: its pods are still evicted
            log.info("marking PodGroup %s as a disruption target: %s", unit.name, e)
        nodes = unit.nodes()
        await fw.event_recorder().eventf(
            pg, "Preempted",
            f"Preempted by {preemptor_kind} {preemptor}: {len(unit.pods)} pod(s) on nodes {_names(nodes)}")

    def _latest(self, pg: Obj) -> Obj:
        """The PodGroup as the lister has it now (its conditions), else `pg`."""
        md = pg.get("metadata") or {}
        return self._pod_group(f"{md.get('namespace', '')}/{md.get('name', '')}") or pg

    # -- single-pod preemption of whole groups (1.37) -------------------------------------------------
    async def evict_whole_groups(self, fw: Framework, preemptor: PodInfo, node: str,
                                 victims: Sequence[PodInfo]) -> None:
        """Kubernetes 1.37: a pod's (DefaultPreemption's) victim in a PodGroup of disruption mode
        `all` takes its whole group along: the PodGroup gets DisruptionTarget and every other pod
        of it is evicted too, wherever it runs (1.36 ignored the mode)."""
        if not self.whole_group_victims:
            return
        chosen = {pi.key for pi in victims}
        done: set[str] = set()
        for victim in victims:
            gk = pod_group_key(victim.pod)
            pg = self._pod_group(gk)
            if gk is None or gk in done or pg is None or not disrupts_as_whole(pg):
                continue
            done.add(gk)
            others = [PodInfo(p) for p in self._group_members(gk) if (p.get("spec") or {}).get("nodeName")]
            unit = VictimUnit("PodGroup", gk, gk, pod_group_priority(pg) or 0,
                              [(pi, pi.spec.get("nodeName", "")) for pi in others], pod_group=pg)
            await self._mark_pod_group(unit, f"{preemptor.namespace}/{preemptor.name}", fw, preemptor_kind="pod")
            for pi in others:
                if pi.key in chosen:
                    continue
                try:
                    await self.cycle.evict(pi.pod, f"Preempted by pod {preemptor.uid} on node {node}", preemptor.pod)
                except Exception:  # keep going: a pod that stays is seen when the preemptor retries
                    log.exception("preempting %s/%s", pi.namespace, pi.name)

    def _group_members(self, group_key: str) -> list[Obj]:
        groups = self.handle.pod_group_lister()
        members = getattr(groups, "members", None)
        return list(members(group_key)) if callable(members) else []

    def _whole_group_below(self, pg: Obj, group_key: str, preemptor: PodInfo) -> bool:
        """Whether every pod of an `all` victim group may be preempted by `preemptor` (lower priority)."""
        p = pod_group_priority(pg)
        if p is not None:
            return p < preemptor.priority
        return all(int((m.get("spec") or {}).get("priority") or 0) < preemptor.priority
                   for m in self._group_members(group_key))

    # -- nominations ---------------------------------------------------------------------------------
    def _still_terminating(self, pending: PendingPreemption) -> list[tuple[str, str, str]]:
        """Victims still in the cache. A victim that is not even being deleted (its deletion failed)
        makes the preemption stale: the group may preempt afresh."""
        left = []
        for key, (ns, name, node) in pending.victims.items():
            if not self.cycle.is_cached(key):
                continue
            live = self.pods.get_by_name(ns, name)
            if pending.actuated and live is not None and (live.get("metadata") or {}).get("uid") == key and \
                    not (live.get("metadata") or {}).get("deletionTimestamp"):
                return []
            left.append((ns, name, node))
        return left

    def _restore_nominations(self, pending: PendingPreemption, members: Sequence[QueuedPodInfo]) -> None:
        for q in members:
            nom = pending.nominations.get(q.pod_info.key)
            if nom is not None:
                self.handle.add_nominated_pod(q.pod_info, nom[1])

    async def _clear_nominations(self, members: Sequence[QueuedPodInfo]) -> None:
        for q in members:
            pi = q.pod_info
            self.handle.delete_nominated_pod_if_exists(pi)
            self._nominated.pop(pi.key, None)
            if pi.nominated_node_name:
                await self.cycle.patch_pod_status(pi.pod, {"status": {"nominatedNodeName": None}})

    def _drop_nomination(self, key: str) -> None:
        group_key = self._nominated.pop(key, None)
        if group_key is None:
            return
        self.handle.delete_nominated_pod_if_exists(SimpleNamespace(key=key))  # type: ignore[arg-type]
        pending = self.pending.get(group_key)
        if pending is not None:
            pending.nominations.pop(key, None)
            if not pending.nominations:
                del self.pending[group_key]

    # -- informer handlers -----------------------------------------------------------------------------
    def _pod_update(self, old: dict, new: dict) -> None:
        key = pod_key(new)
        if key not in self._nominated:
            return
        spec, md = new.get("spec") or {}, new.get("metadata") or {}
        if spec.get("nodeName") or md.get("deletionTimestamp") or \
                (new.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self._drop_nomination(key)

    def _pod_gone(self, pod: dict) -> None:
        self._drop_nomination(pod_key(pod))

    def _pod_group_gone(self, pg: dict) -> None:
        md = pg.get("metadata") or {}
        key = f"{md.get('namespace', '')}/{md.get('name', '')}"
        pending = self.pending.pop(key, None)
        if pending is not None:
            for k in list(pending.nominations):
                self._drop_nomination(k)

    # -- single-pod preemption ---------------------------------------------------------------------
    def _guard_default_preemption(self, fw: Framework) -> None:
        """1.36: a preemptor in a PodGroup never takes part of a `disruptionMode: PodGroup` group.
        1.37: a pod of an `all` group is a victim only when its whole group may go (`evict_whole_groups`)."""
        plugin = fw.plugin(names.DefaultPreemption)
        if plugin is None or not hasattr(plugin, "is_eligible_pod"):
            return
        previous = plugin.is_eligible_pod
        whole = self.whole_group_victims

        def eligible(node_info: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
            gk = pod_group_key(victim.pod)
            pg = self._pod_group(gk) if gk is not None else None
            if gk is not None and pg is not None and disrupts_as_whole(pg):
                if whole and not self._whole_group_below(pg, gk, preemptor):
                    return False
                if not whole and pod_group_key(preemptor.pod) is not None:
                    return False
            return previous(node_info, victim, preemptor)
        plugin.is_eligible_pod = eligible

    def _preemption_priority(self, pi: PodInfo) -> int:
        p = pod_group_priority(self._pod_group(pod_group_key(pi.pod)))
        return pi.priority if p is None else p


# -- helpers ------------------------------------------------------------------------------------------

def _preempting(best: DomainPlan, n_feasible: int) -> dict:
    """The diagnosis of the chosen eviction set: message, domain, victims and nominations."""
    top = max(u.priority for u in best.victims)
    nodes = sorted({n for u in best.victims for _, n in u.pods})
    msg = f"preemption: preempting {describe_units(best.victims)} of priority ≤ {top} on nodes {_names(nodes)}"
    if best.domain.name != CLUSTER:
        msg += f" in {best.domain.name}"
        if n_feasible > 1:
            msg += f" (the smallest eviction set of {n_feasible} feasible domains)"
    if best.pdb_violations:
        msg += f"; {best.pdb_violations} victim(s) violate a PodDisruptionBudget"
    return dict(result="Preempting", message=msg, domain=best.domain.name, threshold=top,
                victims=[u.record() for u in best.victims[:MAX_LISTED]],
                victimCount={"pods": sum(1 for u in best.victims if not u.is_group),
                             "podGroups": sum(1 for u in best.victims if u.is_group),
                             "podsEvicted": sum(len(u.pods) for u in best.victims)},
                nominations={pi.name: n for pi, n in best.assignment[:MAX_LISTED]},
                pdbViolations=best.pdb_violations)


def victim_event_message(pod_group: Obj) -> str:
    """A victim pod's `Preempted` event, as upstream's executor writes it for a pod group (or, in
    1.37, a CompositePodGroup tree's root) preemptor: its kind, its uid and the preemption's
    domain, which is the whole cluster."""
    uid = (pod_group.get("metadata") or {}).get("uid", "")
    kind = "compositepodgroup" if pod_group.get("kind") == "CompositePodGroup" else "podgroup"
    return f"Preempted by {kind} {uid} on node {CLUSTER}"


def may_preempt(fw: Framework, pod_group: Obj, members: Sequence[QueuedPodInfo]) -> bool:
    """Whether the group may preempt. 1.37 with PodGroupPreemptionPolicy: the PodGroup's
    `preemptionPolicy` decides (authoritative), whatever its pods say; without it (or in 1.36) a
    member with `preemptionPolicy: Never` makes the group non-preempting."""
    if _gate_on(fw, POLICY_GATE):
        policy = preemption_policy(pod_group)
        if policy is not None:
            return policy != "Never"
    return not any(q.pod_info.spec.get("preemptionPolicy") == "Never" for q in members)


def _gate_on(fw: Framework, gate: str) -> bool:
    """A gate's value; False for a gate the cluster's release does not know."""
    try:
        return fw.feature_enabled(gate)
    except UnknownFeatureGate:
        return False


def has_topology_constraint(pod_group: Obj) -> bool:
    return bool((((pod_group or {}).get("spec") or {}).get("schedulingConstraints") or {}).get("topology"))


def disruption_mode(pod_group: dict) -> str:
    """`Pod` or `PodGroup` (1.36's words) for a PodGroup of either release."""
    return DISRUPTION_MODE_POD_GROUP if disrupts_as_whole(pod_group or {}) else DISRUPTION_MODE_POD


def pod_group_priority(pod_group: Optional[dict]) -> Optional[int]:
    p = ((pod_group or {}).get("spec") or {}).get("priority")
    return int(p) if p is not None else None


def group_priority(pod_group: dict, pods: Iterable[PodInfo]) -> int:
    """The preemptor's priority: the PodGroup's, else its pods' highest."""
    p = pod_group_priority(pod_group)
    if p is not None:
        return p
    return max((pi.priority for pi in pods), default=0)


def _names(items: Sequence[str], limit: int = MAX_NAMED_NODES) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
