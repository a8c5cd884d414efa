"""The PodGroup cycle (1.36's workload scheduling cycle; upstream's schedule_one_podgroup.go).

A popped PodGroup runs its queued members, sorted by priority then first-seen time, on one
snapshot: PlacementGenerate plugins may split the cluster into candidate placements (topology
domains); on each placement tried, every member is filtered, scored, assumed and reserved in turn
and PlacementFeasible decides after each pod whether the group can still make `minCount`
(`PodGroupCycle.try_placement`, a `PlacementOutcome`). PlacementScore picks among the feasible
placements. All-or-nothing: either the chosen placement's pods are committed (assumed in the
cache, Permit, one binding task for those Permit allowed) or every assumption is reverted and the
group goes back to the queue with a summary of why (`PodGroupScheduled=False`, events, a
diagnosis per member), after workload-aware preemption had its say.

`PodGroupCycle` also gives workload-aware preemption (`grouppreemption.py`) the narrow set of
operations it needs for its dry runs and evictions (`GroupCycleOps`).

Metrics: each cycle counts in `scheduler_podgroup_schedule_attempts_total{result,profile}` and
`scheduler_podgroup_scheduling_attempt_duration_seconds` (`scheduled`, `unschedulable` — a group
waiting for its victims too —, `error`); the placement search is
`scheduler_podgroup_scheduling_algorithm_duration_seconds`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import orjson

from phalanx.client.informer import Informer
from phalanx.machinery.errors import StatusError
from phalanx.metrics import scheduler as sm

from .apicalls import STRATEGIC_MERGE, conditions_with, timestamp
from .framework.constants import Obj
from .framework.cycle_state import CycleState
from .framework.diagnosis import FitError, NoNodesAvailableError, SchedulingError
from .framework.interface import Placement, PlacementProgress, PodGroupAssignments, PodGroupInfo
from .framework.runtime import Framework
from .framework.snapshot import Snapshot
from .framework.status import Code, Status
from .framework.types import PodInfo, QueuedPodInfo
from .placement_outcome import Assignment, PlacementOutcome
from .placementsearch import search_placements
from .podgroups import PodGroupManager, policy_of
from .queue import QueuedPodGroup
from .reporting import (DIAGNOSIS_ANNOTATION, Failures, diagnosis_record, group_summary, pod_group_api,
                        scheduled_condition)
from .schedule_one import CycleContext, PodCycle

if TYPE_CHECKING:
    from .grouppreemption import GroupPreemption
    from .schedule_one_compositegroup import CompositeGroupCycle

log = logging.getLogger("phalanx.scheduler")

CLUSTER = "cluster"
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"
MSG_WAITING_ON_PREEMPTION = "pod group is waiting for preemption to complete"
REASON_SCHEDULER_ERROR = "SchedulerError"
MSG_SCHEDULER_NAMES = "all pods in a single pod group should have the same .spec.schedulerName set"
MSG_PRIORITY = "all pods in a single pod group should match the priority of the pod group"
MAX_LISTED_PLACEMENTS = 50
MAX_LISTED_PODS = 10


@dataclass
class GroupAttempt:
    """One PodGroup cycle's inputs: the profile, the group, its live members in order."""

    fw: Framework
    group: QueuedPodGroup
    pod_group: Obj
    members: list[QueuedPodInfo]
    info: PodGroupInfo
    already: int  # the group's pods already assumed or bound
    min_count: int
    state: CycleState
    preempt: bool = False  # members may preempt pod by pod (PostFilter), as 1.36 without WAP


class PodGroupCycle:
    """Scheduling cycles of PodGroups; members bind through the pod cycle's binding cycle."""

    def __init__(self, ctx: CycleContext, pods: PodCycle, groups: PodGroupManager, podgroups: Optional[Informer],
                 *, release: str = "1.36"):
        self.ctx = ctx
        self.release = release
        self.api_version = pod_group_api(release)  # v1alpha2 (1.36) or v1beta1 (1.37)
        self.condition_type = scheduled_condition(release)  # PodGroupScheduled or PodGroupInitiallyScheduled
        self.pods = pods
        self.groups = groups
        self.podgroups = podgroups
        self.preemption: Optional["GroupPreemption"] = None  # set by the scheduler once built
        self.composite: Optional["CompositeGroupCycle"] = None  # 1.37 CompositePodGroup trees, when served
        self.groups_scheduled: set[str] = set()  # PodGroups (uid) that had a successful cycle

    # -- what workload-aware preemption uses (GroupCycleOps) ------------------------------------------
    def live_snapshot(self) -> Snapshot:
        return self.ctx.snapshot

    def is_assumed(self, pod_key: str) -> bool:
        return self.ctx.cache.is_assumed(pod_key)

    def is_cached(self, pod_key: str) -> bool:
        return pod_key in self.ctx.cache.pods

    def count(self, stat: str, n: int = 1) -> None:
        self.ctx.stats[stat] += n

    async def evict(self, victim: Obj, message: str, preemptor: Obj) -> None:
        await self.ctx.evict(victim, message, preemptor)

    async def patch_pod_status(self, pod: Obj, patch: dict) -> None:
        await self.ctx.patch_pod_status(pod, patch)

    def forget_group(self, pod_group: Obj) -> None:
        """The PodGroup is gone: a new one of the same name starts afresh."""
        self.groups_scheduled.discard(pod_group["metadata"].get("uid") or "")

    # -- the cycle ------------------------------------------------------------------------------------
    async def schedule_pod_group(self, group: QueuedPodGroup) -> None:
        ctx = self.ctx
        if self.composite is not None and self.groups.composite(group.key) is not None:
            await self.composite.schedule_tree(group)  # the root of a CompositePodGroup tree (1.37)
            return
        pg = self.groups.get(group.key)
        members = self._live_members(group)
        if pg is None or not members:
            self._send_back(group, members)
            return
        start = time.perf_counter()
        members.sort(key=lambda q: (-q.pod_info.priority, q.initial_attempt_timestamp or q.timestamp))
        if self.release != "1.36":
            mismatch = members_mismatch(pg, members, self.groups.scheduler_names(group.key))
            if mismatch:
                await self._scheduler_error(group, pg, members, mismatch)
                _attempt_done(sm.ERROR, ctx.framework_for(members[0].pod), start)
                return
        if self.preemption is not None:
            self.preemption.before_group_cycle(group, members)  # workload-aware preemption: own nominations
        fw = ctx.framework_for(members[0].pod)
        ctx.refresh_snapshot()
        _, min_count = policy_of(pg)
        attempt = GroupAttempt(fw, group, pg, members,
                               PodGroupInfo(group.namespace, group.name, pg, [q.pod_info for q in members]),
                               len(ctx.cache.scheduled_in_group(group.key)), min_count, CycleState(),
                               preempt=pod_by_pod_preemption(fw, pg))
        parent = Placement(CLUSTER, list(ctx.snapshot.list()))
        # Members that join an already scheduled group stay in its domain (topology placements).
        placements, st = fw.run_placement_generate_plugins(attempt.state, attempt.info, parent)
        if st is not None:
            await self._group_failed(attempt, {}, st.message(), st.plugin and {st.plugin} or set(),
                                     placements_tried=[], counted=False)
            _attempt_done(sm.UNSCHEDULABLE, fw, start)
            return
        outcomes, skipped = self._search(attempt, placements)
        sm.PODGROUP_SCHEDULING_ALGORITHM_DURATION.observe(time.perf_counter() - start)
        feasible = [o for o in outcomes if o.feasible]
        ctx.stats["group_attempts"] += 1
        if not feasible:
            await self._no_placement_fits(attempt, outcomes)
            _attempt_done(sm.UNSCHEDULABLE, fw, start)
            return
        chosen = self._choose(attempt, feasible)
        if chosen.victims:
            await self._waiting_on_preemption(attempt, chosen)
            _attempt_done(sm.UNSCHEDULABLE, fw, start)
            return
        self._commit(attempt, chosen)
        self._scheduled(attempt, chosen, outcomes, skipped)
        _attempt_done(sm.SCHEDULED, fw, start)

    def _live_members(self, group: QueuedPodGroup) -> list[QueuedPodInfo]:
        """The queued members that still need scheduling, with their latest objects."""
        members: list[QueuedPodInfo] = []
        for key, qpi in list(group.members.items()):
            pod = self.ctx.current(qpi)
            if pod is None:
                group.members.pop(key, None)
                continue
            if qpi.pod_info.pod is not pod:
                qpi.pod_info = PodInfo(pod)
            members.append(qpi)
        return members

    def _send_back(self, group: QueuedPodGroup, members: list[QueuedPodInfo]) -> None:
        """The group vanished: its pods go back through PreEnqueue (they will be gated)."""
        pods = [q.pod for q in members]
        group.members.clear()
        self.ctx.queue.done(group)
        for p in pods:
            self.ctx.queue.add(p)

    def _search(self, attempt: GroupAttempt, placements: list[Placement]) -> tuple[list[PlacementOutcome], int]:
        """Try the placements (ranks, capacity pruning and score bounds: the same choice as trying
        every placement); each try is reverted, except a lone feasible placement's, whose
        assumptions and reservations stay for the commit instead of being undone and redone."""
        fw, ctx = attempt.fw, self.ctx
        single = len(placements) == 1

        def try_one(placement: Placement) -> PlacementOutcome:
            outcome = self.try_placement(fw, placement, attempt.members, attempt.info, attempt.already,
                                         preempt=attempt.preempt)
            if single and outcome.feasible:
                outcome.kept = True
            else:
                self.revert(fw, outcome)
            return outcome
        outcomes, skipped = search_placements(fw, attempt.state, attempt.info, placements, try_one,
                                              already=attempt.already)
        fw.set_snapshot(ctx.snapshot)  # placements ran on node subsets; plugins see the whole cluster again
        ctx.stats["placements_tried"] += sum(1 for o in outcomes if o.tried)
        ctx.stats["placements_skipped"] += skipped + sum(1 for o in outcomes if not o.tried)
        return outcomes, skipped

    def _choose(self, attempt: GroupAttempt, feasible: list[PlacementOutcome]) -> PlacementOutcome:
        """The feasible placement PlacementScore prefers (the first of equals); the first without scores."""
        if len(feasible) == 1:
            return feasible[0]
        assignments = [PodGroupAssignments(o.placement, {a.pod_info.key: a.node for a in o.assigned})
                       for o in feasible]
        totals, _, st = attempt.fw.run_placement_score_plugins(attempt.state, attempt.info, assignments)
        if st is None and totals:
            return feasible[max(range(len(feasible)), key=lambda i: totals[i])]
        return feasible[0]

    # -- one placement ----------------------------------------------------------------------------------
    def try_placement(self, fw: Framework, placement: Placement, members: Sequence[QueuedPodInfo],
                      pg_info: PodGroupInfo, already: int, *, preempt: bool = False) -> PlacementOutcome:
        """Run the group algorithm on one placement; assumptions stay on its view until `revert`.
        `preempt`: a member that fits nowhere runs PostFilter, and one that gets a nominated node
        counts as placed there, its victims out of the view (upstream's pod-by-pod preemption)."""
        view = self.ctx.snapshot if placement.name == CLUSTER else Snapshot(placement.nodes)
        outcome = PlacementOutcome(placement, view)
        feasible_status: Optional[Status] = None
        evaluated = 0
        for qpi in members:
            evaluated += 1
            pstate = CycleState()
            self._place_member(fw, outcome, qpi, pstate, preempt)
            progress = PlacementProgress(scheduled=already + len(outcome.assigned), remaining=len(members) - evaluated)
            feasible_status = fw.run_placement_feasible_plugins(pstate, pg_info, progress)
            if feasible_status is not None and feasible_status.is_rejected():
                if feasible_status.plugin:
                    outcome.plugins.add(feasible_status.plugin)
                break
        if not fw.placement_feasible_plugins:
            feasible = bool(outcome.assigned)
        else:
            feasible = feasible_status is None or feasible_status.is_success()
        if feasible_status is not None and not feasible:
            outcome.status_message = feasible_status.message()
        outcome.feasible = feasible and bool(outcome.assigned) or (feasible and already > 0 and not members)
        return outcome

    def _place_member(self, fw: Framework, outcome: PlacementOutcome, qpi: QueuedPodInfo, pstate: CycleState,
                      preempt: bool = False) -> None:
        """Filter, score, assume and reserve one member on the outcome's view, or record why not."""
        pi = qpi.pod_info
        view = outcome.view
        assert view is not None
        try:
            res = fw.schedule_pod(pstate, pi, view)
        except FitError as fe:
            node = nominate_by_preemption(fw, outcome, pi, pstate, fe) if preempt else ""
            if not node:
                outcome.failures[pi.key] = (qpi, fe)
                outcome.plugins |= set(fe.diagnosis.unschedulable_plugins)
                return
        except (NoNodesAvailableError, SchedulingError) as e:
            outcome.status_message = str(e)
            return
        else:
            node = res.suggested_host
            if res.batched:
                self.ctx.stats["batched"] += 1
        assumed = pi.assumed_on(node)
        view.add_pod(assumed, node)
        st = fw.run_reserve_plugins_reserve(pstate, assumed, node)
        if st is not None:
            view.remove_pod(assumed, node)
            fw.run_reserve_plugins_unreserve(pstate, assumed, node)
            outcome.status_message = st.message()
            if st.plugin:
                outcome.plugins.add(st.plugin)
            return
        outcome.assigned.append(Assignment(qpi, pi, node, pstate))
        outcome.assumed[pi.key] = assumed

    def revert(self, fw: Framework, outcome: PlacementOutcome) -> None:
        """Unreserve and unassume every member the try placed, last first."""
        view = outcome.view
        assert view is not None
        for _, pi, node, pstate in reversed(outcome.assigned):
            assumed = pi.assumed_on(node)
            fw.run_reserve_plugins_unreserve(pstate, assumed, node)
            view.remove_pod(assumed, node)
        for victim, node, _ in reversed(outcome.victims):
            view.add_pod(victim, node)
        self.ctx.cache.mark_dirty(a.node for a in outcome.assigned)
        self.ctx.cache.mark_dirty(node for _, node, _ in outcome.victims)

    # -- success ------------------------------------------------------------------------------------------
    def _commit(self, attempt: GroupAttempt, chosen: PlacementOutcome, *, done: bool = True) -> None:
        """Assume the chosen placement's pods in the cache, Reserve again (unless kept), Permit, bind.
        `done`: the cycle ends with this group (a CompositePodGroup tree commits several, then ends)."""
        ctx, fw, group = self.ctx, attempt.fw, attempt.group
        if done:
            ctx.queue.done(group)
        committed: list[tuple[QueuedPodInfo, PodInfo, str, CycleState, PodInfo]] = []
        for qpi, pi, node, pstate in chosen.assigned:
            assumed = ctx.cache.assume(pi, node, chosen.assumed.get(pi.key))
            if not chosen.kept:
                fw.run_reserve_plugins_reserve(pstate, assumed, node)
            group.members.pop(pi.key, None)
            committed.append((qpi, pi, node, pstate, assumed))
        ctx.cache.mark_dirty(a.node for a in chosen.assigned)
        allowed: list[tuple[CycleState, PodInfo, str, QueuedPodInfo]] = []
        for qpi, pi, node, pstate, assumed_pi in committed:
            st = fw.run_permit_plugins(pstate, assumed_pi, node)
            waiting = st is not None and st.code == Code.Wait
            if st is not None and not waiting:
                fw.run_reserve_plugins_unreserve(pstate, assumed_pi, node)
                ctx.cache.forget(pi, node)
                ctx.queue.activate([pi.pod])
                continue
            if waiting:
                self.pods.spawn_binding(fw, pstate, assumed_pi, node, qpi, waiting=True, group=group)
            else:
                allowed.append((pstate, assumed_pi, node, qpi))
        if allowed:  # one task binds the members Permit allowed, in order (as their own tasks would run)
            ctx.calls.spawn(self.pods.binding_cycles(fw, allowed, group))

    def _scheduled(self, attempt: GroupAttempt, chosen: PlacementOutcome, outcomes: list[PlacementOutcome],
                   skipped: int) -> None:
        ctx, group = self.ctx, attempt.group
        ctx.stats["groups_scheduled"] += 1
        self.groups_scheduled.add(attempt.pod_group["metadata"].get("uid") or group.key)
        # the status write and the event are API calls off the scheduling cycle (as upstream's
        # asynchronous API calls): the next cycle does not wait for them
        ctx.calls.spawn(self._report_group_scheduled(attempt, chosen.placement.name, len(chosen.assigned)))
        ctx.last_diagnosis["group:" + group.key] = {
            "result": "Scheduled", "placement": chosen.placement.name,
            "podsPlaced": len(chosen.assigned), "podsInCycle": len(attempt.members), "minCount": attempt.min_count,
            "alreadyScheduled": attempt.already,
            "placementsTried": [o.record(o.message) for o in outcomes[:MAX_LISTED_PLACEMENTS]],
            "placementsSkipped": skipped}  # could not outscore the chosen one (placementsearch)
        if group.members:  # members this cycle could not place: retry them later as late members
            plugins: set[str] = set().union(*[set(f[1].diagnosis.unschedulable_plugins)
                                              for f in chosen.failures.values()]) if chosen.failures else set()
            ctx.queue.requeue(group, plugins)

    async def _report_group_scheduled(self, attempt: GroupAttempt, placement: str, placed_now: int) -> None:
        first = await self._set_group_condition(attempt.pod_group, "True", "Scheduled", "")
        ann = {DIAGNOSIS_ANNOTATION: orjson.dumps({"result": "Scheduled", "placement": placement,
                                                   "podsPlaced": placed_now,
                                                   "minCount": attempt.min_count}).decode()}
        where = f" in {placement}" if placement != CLUSTER else ""
        verb = "Successfully placed" if first else "Placed late members:"
        await attempt.fw.event_recorder().eventf(
            attempt.pod_group, "Scheduled", f"{verb} {placed_now} pod(s) of pod group {attempt.group.key}{where}",
            annotations=ann)

    # -- pod-by-pod preemption ------------------------------------------------------------------------------
    async def _waiting_on_preemption(self, attempt: GroupAttempt, chosen: PlacementOutcome) -> None:
        """The group fits once the victims its members' PostFilter chose are gone: nothing binds
        now; the victims are evicted, every placed member is nominated to its node, and the group
        goes back to the queue until the victims' deletion lets it fit (upstream: Unschedulable,
        "pod group is waiting for preemption to complete"). While earlier victims still terminate,
        nothing more is evicted."""
        ctx, fw, group = self.ctx, attempt.fw, attempt.group
        if chosen.kept:
            self.revert(fw, chosen)
        ctx.stats["groups_waiting_on_preemption"] += 1
        ctx.queue.requeue(group, chosen.plugins)
        summary = MSG_WAITING_ON_PREEMPTION  # upstream's condition and pod message, word for word
        preemption: dict = {}
        nominated: dict[str, str] = {}
        if self.preemption is not None:  # what was preempted, or still terminates, is for `phalanx explain`
            result = await self.preemption.actuate_pod_by_pod(fw, group, attempt.pod_group, attempt.members, chosen)
            preemption = result.diagnosis or {}
            if result.preempted:  # else an earlier preemption's nominations stand
                nominated = {a.pod_info.key: a.node for a in chosen.assigned}
        diag = {"result": "Unschedulable", "podsPlaced": len(chosen.assigned), "podsInCycle": len(attempt.members),
                "minCount": attempt.min_count, "alreadyScheduled": attempt.already, "message": summary,
                "pods": {}, "placementsTried": [chosen.record(summary)], "preemption": preemption}
        ctx.last_diagnosis["group:" + group.key] = diag
        failures: Failures = {k: (q, fe) for k, (q, fe) in chosen.failures.items()}
        for a in chosen.assigned:
            fe = chosen.preempting.get(a.pod_info.key)
            if fe is not None:
                failures[a.pod_info.key] = (a.queued, fe)
        ctx.calls.spawn(self._report_group_unschedulable(fw, attempt.pod_group, attempt.members, failures,
                                                         summary, diag, nominated))

    # -- failure ------------------------------------------------------------------------------------------
    async def _scheduler_error(self, group: QueuedPodGroup, pg: Obj, members: list[QueuedPodInfo],
                               message: str) -> None:
        """1.37: the group cannot be scheduled as it is (its pods disagree on scheduler or priority):
        PodGroupInitiallyScheduled=False (SchedulerError), the same on every member, and a retry
        after backoff."""
        ctx = self.ctx
        ctx.stats["groups_scheduler_error"] += 1
        ctx.queue.requeue(group, set(), error=True)
        ctx.last_diagnosis["group:" + group.key] = {"result": "SchedulerError", "message": message,
                                                    "podsInCycle": len(members)}
        ctx.calls.spawn(self._report_scheduler_error(ctx.framework_for(members[0].pod), pg, members, message))

    async def _report_scheduler_error(self, fw: Framework, pg: Obj, members: list[QueuedPodInfo],
                                      message: str) -> None:
        recorder = fw.event_recorder()
        await self._set_group_condition(pg, "False", REASON_SCHEDULER_ERROR, message)
        await recorder.eventf(pg, "FailedScheduling", message, type="Warning")
        for qpi in members:
            await self.ctx.write_pod_unschedulable(qpi.pod, REASON_SCHEDULER_ERROR, message)
            await recorder.eventf(qpi.pod, "FailedScheduling", message, type="Warning")

    async def _no_placement_fits(self, attempt: GroupAttempt, outcomes: list[PlacementOutcome]) -> None:
        best = max(outcomes, key=lambda o: len(o.assigned)) if outcomes else None
        # requeue on events that could help any of the domains, not just the best one
        plugins: set[str] = set().union(*(o.plugins for o in outcomes))
        await self._group_failed(attempt, best.failures if best else {},
                                 best.status_message if best else "no placement", plugins,
                                 placements_tried=outcomes, best=best)

    async def _group_failed(self, attempt: GroupAttempt, failures: Failures, status_message: str,
                            plugins: set[str], *, placements_tried: list[PlacementOutcome],
                            best: Optional[PlacementOutcome] = None, counted: bool = True) -> None:
        """`counted`: the cycle got as far as trying placements (minCount and the scheduled pods
        are part of the summary); a PlacementGenerate failure reports neither."""
        ctx, group, members = self.ctx, attempt.group, attempt.members
        min_count = attempt.min_count if counted else 0
        already = attempt.already if counted else 0
        ctx.stats["groups_unschedulable"] += 1
        preemption_message, preemption_diagnosis = "", None
        if self.preemption is not None:  # workload-aware preemption: evict victims and nominate, or say why not
            result = await self.preemption.on_group_unschedulable(
                attempt.fw, group, attempt.pod_group, members, placements_tried, min_count=min_count, already=already)
            preemption_message, preemption_diagnosis = result.message, result.diagnosis
        placed = len(best.assigned) if best else 0
        summary = group_summary(placed, len(members), min_count, already, failures, status_message,
                                ctx.snapshot.num_nodes(), placements_tried)
        if preemption_message:
            summary += "; " + preemption_message
        ctx.queue.requeue(group, plugins)
        diag = {"result": "Unschedulable", "podsPlaced": placed, "podsInCycle": len(members), "minCount": min_count,
                "alreadyScheduled": already, "message": summary,
                "pods": {qpi.pod_info.name: diagnosis_record(fe, str(fe))
                         for qpi, fe in list(failures.values())[:MAX_LISTED_PODS]},
                "placementsTried": [o.record(o.message or o.status_message)
                                    for o in placements_tried[:MAX_LISTED_PLACEMENTS]]}
        if preemption_diagnosis:
            diag["preemption"] = preemption_diagnosis
        ctx.last_diagnosis["group:" + group.key] = diag
        ctx.calls.spawn(self._report_group_unschedulable(attempt.fw, attempt.pod_group, members, failures,
                                                         summary, diag))

    async def _report_group_unschedulable(self, fw: Framework, pg: Obj, members: list[QueuedPodInfo],
                                          failures: Failures, summary: str, diag: dict,
                                          nominated: Optional[dict[str, str]] = None) -> None:
        """The failed group cycle's API writes, off the cycle: condition, events, pod conditions."""
        recorder = fw.event_recorder()
        await self._set_group_condition(pg, "False", "Unschedulable", summary)
        await recorder.eventf(pg, "FailedScheduling", summary, type="Warning",
                              annotations={DIAGNOSIS_ANNOTATION: orjson.dumps(diag).decode()})
        for qpi in members:
            fe = failures.get(qpi.pod_info.key)
            if fe:
                msg = str(fe[1])
            elif summary.startswith(MSG_WAITING_ON_PREEMPTION):
                msg = summary
            else:
                msg = f"pod group is unschedulable: {summary}"
            rec = diagnosis_record(fe[1], msg) if fe else {"result": "Unschedulable", "message": msg,
                                                           "podGroup": summary}
            await self.ctx.write_pod_unschedulable(qpi.pod, "Unschedulable", msg,
                                                   (nominated or {}).get(qpi.pod_info.key, ""))
            await recorder.eventf(qpi.pod, "FailedScheduling", msg, type="Warning",
                                  annotations={DIAGNOSIS_ANNOTATION: orjson.dumps(rec).decode()})

    async def _set_group_condition(self, pg: Obj, status: str, reason: str, message: str) -> bool:
        """Set PodGroupScheduled (1.37: PodGroupInitiallyScheduled); False when nothing changed (the
        condition keeps the first success: in 1.37 it is terminal by definition)."""
        key = f"{pg['metadata'].get('namespace', '')}/{pg['metadata']['name']}"
        if status != "True" and (pg["metadata"].get("uid") or key) in self.groups_scheduled:
            return False  # scheduled once (its True condition may still be on its way)
        current = self.podgroups.get(key) if self.podgroups is not None else None
        if not _condition_would_change(current or pg, status, reason, message, self.condition_type):
            return False
        cond = {"type": self.condition_type, "status": status, "reason": reason, "message": message,
                "lastTransitionTime": timestamp(self.ctx.clock),
                "observedGeneration": pg["metadata"].get("generation", 1)}
        md = pg["metadata"]
        try:
            await self.ctx.client.patch(self.api_version, "PodGroup", md.get("namespace", ""), md["name"],
                                        {"status": {"conditions": conditions_with(current or pg, cond)}},
                                        patch_type=STRATEGIC_MERGE,
                                        subresource="status")
        except StatusError as e:
            if e.code != 404:
                log.warning("updating PodGroup %s status: %s", key, e.message)
            return False
        return True


def _attempt_done(result: str, fw: Framework, start: float) -> None:
    sm.pod_group_attempt(result, fw.profile_name, time.perf_counter() - start)


def pod_by_pod_preemption(fw: Framework, pod_group: Obj) -> bool:
    """Whether the members of this group preempt one by one in its cycle: upstream 1.36 runs
    PostFilter for each member that fits nowhere when workload-aware preemption is off, except
    for a group with a topology constraint ("tas gang with constraint does not use pod by pod
    preemption")."""
    if fw.feature_enabled(WORKLOAD_AWARE_PREEMPTION) or not fw.has_post_filter_plugins():
        return False
    return not ((pod_group.get("spec") or {}).get("schedulingConstraints") or {}).get("topology")


def nominate_by_preemption(fw: Framework, outcome: PlacementOutcome, pi: PodInfo, pstate: CycleState,
                           fit_error: FitError) -> str:
    """PostFilter for a member that fits nowhere. When it nominates a node, the victims leave the
    outcome's view (later members see the room, and no victim is chosen twice) and the node is
    returned for the member to be assumed there; "" when preemption cannot help."""
    result, st = fw.run_post_filter_plugins(pstate, pi, fit_error.diagnosis.node_to_status)
    fit_error.diagnosis.post_filter_msg = st.message()
    node = result.nominated_node_name if result is not None and st.is_success() else ""
    view = outcome.view
    if not node or result is None or not result.victims or view is None:
        return ""
    for victim in result.victims:
        view.remove_pod(victim, node)
        outcome.victims.append((victim, node, pi))
    outcome.preempting[pi.key] = fit_error
    outcome.lower_nominated.extend(result.lower_priority_nominated_pods)
    outcome.plugins |= set(fit_error.diagnosis.unschedulable_plugins)
    return node


def members_mismatch(pod_group: Obj, members: Sequence[QueuedPodInfo], scheduler_names: set[str]) -> str:
    """1.37's rule: every pod of a group has the same `.spec.schedulerName` and the group's priority
    (the PodGroup's `spec.priority`, else its first member's). The message when one does not
    (upstream's words, KEP-5710), "" when they all agree."""
    if len(scheduler_names) > 1:
        a, b = sorted(scheduler_names)[:2]
        return f'{MSG_SCHEDULER_NAMES}, got: "{a}" and "{b}"'
    spec = pod_group.get("spec") or {}
    expected = spec.get("priority")
    if not isinstance(expected, int):
        expected = members[0].pod_info.priority if members else 0
    for qpi in members:
        if qpi.pod_info.priority != expected:
            return f"{MSG_PRIORITY}, got: {qpi.pod_info.priority} and {expected}"
    return ""


def members_fall_short(fw: Framework, group: QueuedPodGroup, pod_group: Optional[Obj],
                       scheduled: int) -> Optional[Status]:
    """PlacementFeasible before any pod is placed: the rejection when the group's queued members
    and its pods already scheduled cannot reach what the policy needs (a gang whose minCount pods
    exist, but not all of them passed PreEnqueue yet); None when a cycle is worth running."""
    if pod_group is None or not group.members:
        return None
    members = [q.pod_info for q in group.members.values()]
    info = PodGroupInfo(group.namespace, group.name, pod_group, members)
    st = fw.run_placement_feasible_plugins(CycleState(), info,
                                           PlacementProgress(scheduled=scheduled, remaining=len(members)))
    return st if st is not None and st.code in (Code.Unschedulable, Code.UnschedulableAndUnresolvable) else None


def _condition_would_change(pg: Obj, status: str, reason: str, message: str,
                            condition_type: str = "PodGroupScheduled") -> bool:
    """Whether the scheduled condition would change: not when it says the same already, and never
    after it was True (the condition records the initial decision only: upstream 1.36's documented
    limit, 1.37's definition of PodGroupInitiallyScheduled as terminal)."""
    for c in (pg.get("status") or {}).get("conditions") or []:
        if c.get("type") == condition_type:
            if c.get("status") == status and c.get("reason") == reason and c.get("message") == message:
                return False
            if c.get("status") == "True":
                return False
    return True
