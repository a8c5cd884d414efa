"""The pod cycle and the binding cycle (upstream's schedule_one.go).

- `PodCycle.schedule_one(qpi)`: one scheduling cycle for a popped pod on a fresh snapshot:
  PreFilter, Filter, PostFilter (preemption) on failure, Score, assume, Reserve, Permit; a failure
  requeues the pod and says why (PodScheduled=False, a FailedScheduling event with the diagnosis).
- The binding cycle runs asynchronously (the loop goes on): wait on Permit, PreBind, Bind
  (`pods/binding`), PostBind, through the framework's runners; a failure unreserves, forgets the
  assumed pod and requeues it.

`CycleContext` holds the scheduler's parts the pod, binding and group cycles share.

Metrics (`phalanx.metrics.scheduler`): an attempt is counted and timed when it ends, from the
start of the scheduling cycle to the end of binding (`scheduled`) or to the failure
(`unschedulable`, `error`); a bound pod also records its attempts and the SLI latency from its
first entry in the queue; PostFilter runs count as preemption attempts. One cycle in
`PLUGIN_METRICS_SAMPLE_PERCENT` has its plugins timed.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Awaitable, Callable, Iterable, Optional

import orjson

from phalanx.client.clock import Clock
from phalanx.client.informer import Informer
from phalanx.client.interface import Client
from phalanx.metrics import scheduler as sm

from .apicalls import BackgroundCalls, evict_pod, patch_pod_status, write_pod_unschedulable
from .cache import SchedulerCache
from .framework.constants import Obj
from .framework.cycle_state import CycleState
from .framework.diagnosis import FitError
from .framework.interface import PostFilterResult
from .framework.nominator import Nominator
from .framework.results import ScheduleResult
from .framework.runtime import Framework
from .framework.snapshot import Snapshot
from .framework.status import Code, Status
from .framework.types import PodInfo, QueuedPodInfo
from .queue import SchedulingQueue
from .reporting import DIAGNOSIS_ANNOTATION, diagnosis_record

if TYPE_CHECKING:
    from .queue import QueuedPodGroup

log = logging.getLogger("phalanx.scheduler")

DEFAULT_SCHEDULER_NAME = "default-scheduler"
ATTEMPT_START = "phalanx.dev/attempt-start"  # CycleState key: perf_counter() at the cycle's start


def attempt_seconds(state: CycleState) -> Optional[float]:
    """Seconds since the pod cycle that `state` belongs to started (None outside a pod cycle)."""
    start = state.get(ATTEMPT_START)
    return None if start is None else time.perf_counter() - start


def preemptor_type(preemptor: Obj) -> str:
    """Upstream's name for what preempts, in victims' events and conditions: `pod`, `podgroup` or
    (1.37, a tree's root) `compositepodgroup`."""
    if preemptor.get("kind") == "CompositePodGroup":
        return "compositepodgroup"
    if preemptor.get("kind") == "PodGroup" or "schedulingPolicy" in (preemptor.get("spec") or {}):
        return "podgroup"
    return "pod"


def is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


@dataclass
class CycleContext:
    """What the pod, binding and group cycles share: the scheduler's client, clock, cache,
    snapshot, nominator, queue, Pod informer, profiles, background calls and counters."""

    client: Client
    clock: Clock
    cache: SchedulerCache
    snapshot: Snapshot
    nominator: Nominator
    queue: SchedulingQueue
    pods: Informer
    frameworks: dict[str, Framework]
    default_framework: Framework
    calls: BackgroundCalls = field(default_factory=BackgroundCalls)
    stats: Counter = field(default_factory=Counter)
    last_diagnosis: dict[str, dict] = field(default_factory=dict)

    def framework_for(self, pod: Obj) -> Framework:
        name = (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME
        return self.frameworks.get(name, self.default_framework)

    def current(self, qpi: QueuedPodInfo) -> Optional[Obj]:
        """The latest version of a queued pod, or None when it no longer needs scheduling."""
        pod = self.pods.get_by_name(qpi.pod_info.namespace, qpi.pod_info.name)
        if pod is None or (pod.get("metadata") or {}).get("uid") != qpi.pod_info.uid:
            return None
        if (pod.get("spec") or {}).get("nodeName") or is_terminal(pod) or pod["metadata"].get("deletionTimestamp"):
            return None
        return pod

    def refresh_snapshot(self, also: Iterable[str] = ()) -> None:
        self.cache.update_snapshot(self.snapshot, also)

    async def write_pod_unschedulable(self, pod: Obj, reason: str, message: str, nominated: str = "") -> None:
        await write_pod_unschedulable(self.client, self.clock, pod, reason, message, nominated)

    async def patch_pod_status(self, pod: Obj, patch: dict) -> None:
        await patch_pod_status(self.client, pod, patch)

    async def evict(self, victim: Obj, message: str, preemptor: Obj) -> None:
        await evict_pod(self.client, self.clock, victim, message, preemptor_type(preemptor))


class PodCycle:
    """Scheduling and binding cycles of single pods (a PodGroup's members bind here too)."""

    def __init__(self, ctx: CycleContext):
        self.ctx = ctx
        # 1.37: evicts the rest of a victim's `all` PodGroup (GroupPreemption.evict_whole_groups)
        self.whole_group_eviction: Optional[Callable[[Framework, PodInfo, str, list[PodInfo]], Awaitable[None]]] = None

    # -- scheduling cycle ---------------------------------------------------------------------------
    async def schedule_one(self, qpi: QueuedPodInfo) -> None:
        ctx = self.ctx
        pod = ctx.current(qpi)
        if pod is None:
            ctx.queue.done(qpi)
            return
        pi = qpi.pod_info
        if pi.pod is not pod:  # the informer's object changed since the PodInfo was built
            qpi.pod_info = pi = PodInfo(pod)
        fw = ctx.framework_for(pod)
        ctx.refresh_snapshot()
        state = CycleState()
        state.write(ATTEMPT_START, time.perf_counter())
        state.record_plugin_metrics = random.randrange(100) < sm.PLUGIN_METRICS_SAMPLE_PERCENT
        touched: set[str] = set()

        def assume(p: PodInfo, node: str) -> PodInfo:
            assumed = ctx.cache.assume(p, node)
            ctx.snapshot.add_pod(assumed, node)
            touched.add(node)
            return assumed

        def forget(p: PodInfo, node: str) -> None:
            ctx.cache.forget(p, node)
            touched.add(node)

        result = fw.scheduling_cycle(pi, ctx.snapshot, state=state, assume=assume, forget=forget)
        ctx.cache.mark_dirty(touched)
        ctx.stats["attempts"] += 1
        if result.schedule_result is not None and result.schedule_result.batched:
            ctx.stats["batched"] += 1
        if result.status is None or result.status.code == Code.Wait:
            ctx.queue.done(qpi)
            ctx.nominator.delete_nominated_pod_if_exists(pi)
            self.spawn_binding(fw, state, result.pod_info, result.node_name, qpi,
                               waiting=result.status is not None, scores=result.schedule_result)
            return
        sm.pod_attempt(sm.ERROR if result.status.code == Code.Error else sm.UNSCHEDULABLE, fw.profile_name,
                       time.perf_counter() - state.read(ATTEMPT_START))
        if result.fit_error is not None and fw.post_filter_plugins:
            post = result.post_filter_result
            sm.preemption(len(post.victims) if post is not None else 0)
        await self._handle_failure(fw, qpi, pi, result.status, result.fit_error, result.post_filter_result)

    async def _handle_failure(self, fw: Framework, qpi: QueuedPodInfo, pi: PodInfo, status: Status,
                              fit_error: Optional[FitError], post_filter: Optional[PostFilterResult]) -> None:
        ctx = self.ctx
        ctx.stats["unschedulable"] += 1
        plugins: set[str] = set()
        nominated = ""
        if fit_error is not None:
            plugins = set(fit_error.diagnosis.unschedulable_plugins)
            if post_filter is not None and post_filter.nominating_info is not None:
                nominated = post_filter.nominating_info.nominated_node_name
                await self._preempt(pi, post_filter, fw)
        message = str(fit_error) if fit_error is not None else status.message()
        error = status.code == Code.Error
        reason = "SchedulerError" if error else "Unschedulable"
        diag = diagnosis_record(fit_error, message)
        ctx.last_diagnosis[pi.key] = diag
        ctx.queue.requeue(qpi, plugins, error=error)
        if nominated:
            ctx.nominator.add_nominated_pod(pi, nominated)
        await ctx.write_pod_unschedulable(pi.pod, reason, message, nominated)
        await fw.event_recorder().eventf(pi.pod, "FailedScheduling", message, type="Warning",
                                         annotations={DIAGNOSIS_ANNOTATION: orjson.dumps(diag).decode()})

    async def _preempt(self, preemptor: PodInfo, post_filter: PostFilterResult, fw: Framework) -> None:
        """Actuate what DefaultPreemption proposed: evict the victims (1.37: with the rest of their
        `all` PodGroups), clear lower nominations."""
        ctx = self.ctx
        node = post_filter.nominating_info.nominated_node_name if post_filter.nominating_info else ""
        for victim in post_filter.victims:
            await ctx.evict(victim.pod, f"Preempted by pod {preemptor.uid} on node {node}", preemptor.pod)
        if self.whole_group_eviction is not None and post_filter.victims:
            await self.whole_group_eviction(fw, preemptor, node, list(post_filter.victims))
        for p in post_filter.lower_priority_nominated_pods:
            ctx.nominator.delete_nominated_pod_if_exists(p)
            await ctx.patch_pod_status(p.pod, {"status": {"nominatedNodeName": None}})

    def pod_gated(self, qpi: QueuedPodInfo, status: Status) -> None:
        """A PreEnqueue plugin holds the pod: say so on the pod (PodScheduled=False, SchedulingGated),
        once per distinct message, as kube-scheduler does for scheduling gates."""
        self.ctx.calls.spawn(self.ctx.write_pod_unschedulable(qpi.pod, "SchedulingGated", status.message()))

    # -- binding cycle ------------------------------------------------------------------------------
    def spawn_binding(self, fw: Framework, state: CycleState, pi: PodInfo, node: str, qpi: Optional[QueuedPodInfo],
                      *, waiting: bool, scores: Optional[ScheduleResult] = None,
                      group: Optional["QueuedPodGroup"] = None) -> None:
        self.ctx.calls.spawn(self.binding_cycle(fw, state, pi, node, qpi, waiting=waiting, scores=scores, group=group))

    async def binding_cycles(self, fw: Framework, items: list[tuple[CycleState, PodInfo, str, QueuedPodInfo]],
                             group: "QueuedPodGroup") -> None:
        """Bind several members in order, as their own binding tasks would run."""
        for state, pi, node, qpi in items:
            await self.binding_cycle(fw, state, pi, node, qpi, waiting=False, scores=None, group=group)
            await asyncio.sleep(0)

    async def _wait_on_permit(self, fw: Framework, pi: PodInfo) -> Optional[Status]:
        wp = fw.get_waiting_pod(pi.uid or pi.key)
        if wp is None:
            return None
        if not wp.done:
            done: asyncio.Future[Optional[Status]] = asyncio.get_running_loop().create_future()

            def finished_waiting(st: Optional[Status]) -> None:
                if not done.done():
                    done.set_result(st)
            wp.on_done.append(finished_waiting)
            timer: asyncio.Future[None] = asyncio.ensure_future(self.ctx.clock.sleep(wp.timeout_seconds()))
            racing: list[asyncio.Future[Optional[Status]] | asyncio.Future[None]] = [done, timer]
            finished, _ = await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
            if done not in finished:
                wp.expire()
            timer.cancel()
        return fw.wait_on_permit_status(pi)

    async def binding_cycle(self, fw: Framework, state: CycleState, pi: PodInfo, node: str,
                            qpi: Optional[QueuedPodInfo], *, waiting: bool, scores: Optional[ScheduleResult],
                            group: Optional["QueuedPodGroup"]) -> None:
        st: Optional[Status] = None
        try:
            if waiting:
                st = await self._wait_on_permit(fw, pi)
            if st is None or st.is_success():
                st = await fw.run_pre_bind_plugins(state, pi, node)
            if st is None or st.is_success():
                st = await fw.run_bind_plugins(state, pi, node)
        except Exception as e:  # an API error in PreBind/Bind: treat as a binding failure
            log.exception("binding %s/%s", pi.namespace, pi.name)
            st = Status.new(Code.Error, str(e))
        if st is None or st.is_success():
            if qpi is not None:  # a group's members too; their attempt is the group's
                first = qpi.initial_attempt_timestamp
                sm.pod_scheduled(fw.profile_name, attempt_seconds(state), max(1, qpi.attempts),
                                 None if first is None else self.ctx.clock.now() - first)
            await self._bound(fw, state, pi, node, scores)
        else:
            await self._binding_failed(fw, state, pi, node, qpi, st, group)

    async def _bound(self, fw: Framework, state: CycleState, pi: PodInfo, node: str,
                     scores: Optional[ScheduleResult]) -> None:
        self.ctx.stats["bound"] += 1
        fw.run_post_bind_plugins(state, pi, node)
        msg = f"Successfully assigned {pi.namespace}/{pi.name} to {node}"
        ann = None
        if scores is not None and scores.scores is not None:
            ann = {DIAGNOSIS_ANNOTATION: orjson.dumps(
                {"result": "Scheduled", "node": node,
                 "feasibleNodes": scores.feasible_nodes, "evaluatedNodes": scores.evaluated_nodes,
                 "topScores": [{"node": n, "score": s} for n, s in scores.scores.top(5)],
                 **({"opportunisticBatch": True} if scores.batched else {})}).decode()}
        await fw.event_recorder().eventf(pi.pod, "Scheduled", msg, annotations=ann)

    async def _binding_failed(self, fw: Framework, state: CycleState, pi: PodInfo, node: str,
                              qpi: Optional[QueuedPodInfo], st: Status, group: Optional["QueuedPodGroup"]) -> None:
        """Release what the scheduling cycle reserved, requeue the pod and say why."""
        ctx = self.ctx
        fw.run_reserve_plugins_unreserve(state, pi, node)
        ctx.cache.forget(pi, node)
        ctx.stats["binding_failures"] += 1
        seconds = attempt_seconds(state)
        if seconds is not None:
            sm.pod_attempt(sm.ERROR if st.code == Code.Error else sm.UNSCHEDULABLE, fw.profile_name, seconds)
        message = st.message()
        if st.is_rejected() and st.code != Code.Error:
            reason_text = message
        else:
            reason_text = f"Binding rejected: {message}" if message else "Binding rejected"
        if group is None and qpi is not None:
            if ctx.pods.get_by_name(pi.namespace, pi.name):
                ctx.queue.add(pi.pod)
        elif group is not None:
            ctx.queue.activate([pi.pod])
        await ctx.write_pod_unschedulable(pi.pod, "SchedulerError" if st.code == Code.Error else "Unschedulable",
                                          reason_text)
        await fw.event_recorder().eventf(pi.pod, "FailedScheduling", reason_text, type="Warning")
