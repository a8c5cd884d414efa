"""The scheduler: informers -> queue -> scheduling cycles (pods and pod groups) -> binding cycles.

`Scheduler(client, factory, ...)` is kube-scheduler's `scheduleOne` loop around the framework:

- Informers on Pods, Nodes and PodGroups feed the cache (bound and assumed pods per node), the
  PodGroupManager (pods per group) and the queue (unscheduled pods of this scheduler's profiles);
  every change is also a cluster event for the queueing hints.
- A popped **pod** runs one scheduling cycle on a snapshot: PreFilter, Filter, PostFilter
  (preemption) on failure, Score, assume, Reserve, Permit.
- A popped **pod group** (1.36's workload scheduling cycle) runs its queued members, sorted by
  priority then first-seen time, on one snapshot: each pod is filtered, scored, assumed and
  reserved in turn; PlacementFeasible decides after each pod whether the group can still make
  `minCount`. All-or-nothing: either enough pods are placed and all placed pods go to binding, or
  every assumption is reverted and the group goes back to the queue. PlacementGenerate plugins
  may split the cluster into candidate placements (topology domains); each is tried and reverted,
  PlacementScore picks one.
- The **binding cycle** runs asynchronously (the loop goes on): wait on Permit, PreBind, Bind
  (`pods/binding`), PostBind; a failure forgets the assumed pod and requeues it.
- What users see: `PodScheduled` conditions and `Scheduled` / `FailedScheduling` events with
  upstream's messages, the PodGroup's `PodGroupScheduled` condition, and for every decision a
  diagnosis (per plugin, per node) kept on the event as the annotation
  `scheduler.phalanx.dev/diagnosis`, which `phalanx explain` reads.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import Counter
from typing import Any, Iterable, Optional

import orjson

from ..client.clock import REAL_CLOCK, to_datetime
from ..client.informer import InformerFactory
from ..machinery.errors import StatusError
from ..machinery.featuregates import FeatureGates
from ..machinery.timestamps import now_rfc3339
from .cache import SchedulerCache
from .framework import (ActionType, ClusterEvent, Code, CycleState, EventResource, FitError, Framework,
                        KubeSchedulerConfiguration, Nominator, PodInfo, QueuedPodInfo, Snapshot, Status)
from .framework.diagnosis import NoNodesAvailableError, SchedulingError
from .framework.interface import Placement, PlacementProgress, PodGroupAssignments, PodGroupInfo
from .framework.config import default_profile
from .framework.registry import in_tree_registry
from .plugins import defaultbinder, gangscheduling, names
from .placementsearch import search_placements
from .placementsearch import summarize as summarize_placements
from .podgroups import PodGroupManager, policy_of
from .queue import QueuedPodGroup, SchedulingQueue

log = logging.getLogger("phalanx.scheduler")

DIAGNOSIS_ANNOTATION = "scheduler.phalanx.dev/diagnosis"
POD_GROUP_API = "scheduling.k8s.io/v1alpha2"
MAX_NODES_PER_REASON = 20


def _is_terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class Scheduler:
    def __init__(self, client: Any, factory: InformerFactory | None = None, *,
                 config: KubeSchedulerConfiguration | None = None, gates: Any = None, clock: Any = None,
                 permit_timeout: float | None = None, registry: Any = None, pod_group_cycles: bool = True):
        self.client = client
        self.clock = clock or (factory.clock if factory is not None else REAL_CLOCK)
        self.factory = factory or InformerFactory(client, clock=self.clock)
        self._own_factory = factory is None
        self.gates = gates or FeatureGates()
        # the default profile follows this scheduler's feature gates (GangScheduling, DRA, TAS plugins)
        self.config = config or KubeSchedulerConfiguration(profiles=[default_profile(self.gates)])
        self.cache = SchedulerCache()
        self.groups = PodGroupManager()
        self.snapshot = Snapshot()
        self.nominator = Nominator()
        self.group_aware = self.gates.enabled("GenericWorkload")
        reg = registry if registry is not None else in_tree_registry()
        reg = reg.copy()
        if names.GangScheduling not in reg:
            reg.register(names.GangScheduling, gangscheduling.factory(self.groups, self._scheduled_count))
        if names.DefaultBinder not in reg:
            reg.register(names.DefaultBinder, defaultbinder.factory(client))
        self._extend_registry(reg)
        self.frameworks: dict[str, Framework] = {}
        for prof in self.config.profiles:
            if permit_timeout is not None:
                _set_plugin_arg(prof, names.GangScheduling, "permitWaitingTimeoutSeconds", permit_timeout)
            self.frameworks[prof.scheduler_name] = Framework(
                prof, registry=reg, feature_gates=self.gates, snapshot=self.snapshot, nominator=self.nominator,
                namespaces=self._namespace_labels, pod_disruption_budgets=self._pdbs,
                percentage_of_nodes_to_score=self.config.percentage_of_nodes_to_score)
        self.fw = next(iter(self.frameworks.values()))
        for fw in self.frameworks.values():
            if fw.batch is not None:  # batches expire in the scheduler's time (virtual in simulations)
                fw.batch.clock = self.clock.now
        self.queue = SchedulingQueue(self.fw, self.clock, group_cycles=pod_group_cycles)
        self.queue.on_gated = self._pod_gated
        # informers
        self.pods = self.factory.informer("v1", "Pod")
        self.nodes = self.factory.informer("v1", "Node")
        self.namespaces = self.factory.informer("v1", "Namespace")
        self.pdb_informer = self.factory.informer("policy/v1", "PodDisruptionBudget")
        self.podgroups = self.factory.informer(POD_GROUP_API, "PodGroup") if self.group_aware else None
        self._wire()
        self._task: asyncio.Task | None = None
        self._binding_tasks: set[asyncio.Task] = set()
        self._group_conditions: dict[str, str] = {}
        self.last_diagnosis: dict[str, dict] = {}
        self.stats = Counter()
        self._groups_scheduled: set[str] = set()  # PodGroups (uid) that had a successful cycle
        # >>> workload-aware preemption (grouppreemption.py): victims for gangs, nominations
        from .grouppreemption import GroupPreemption
        self.group_preemption = GroupPreemption(self)
        # <<< workload-aware preemption

    def _extend_registry(self, reg: Any) -> None:
        """Plugins that need the scheduler's own state (DRA, topology) register here."""
        from .plugins import podgrouppodscount, topologyaware
        self.node_topology = topologyaware.NodeTopologyIndex()  # fed by the Node informer (_wire)
        if names.TopologyPlacementGenerator not in reg:
            reg.register(names.TopologyPlacementGenerator, topologyaware.factory(
                self.node_topology, lambda g: [(s.info, s.node) for s in map(self.cache.pods.get,
                                                                             self.cache.scheduled_in_group(g)) if s],
                self.snapshot))
        if names.PodGroupPodsCount not in reg:
            reg.register(names.PodGroupPodsCount, podgrouppodscount.factory(self._scheduled_count))
        try:
            from .plugins import dynamicresources
        except ImportError:
            return
        if names.DynamicResources not in reg:
            reg.register(names.DynamicResources, dynamicresources.factory(self))

    # -- informer wiring -------------------------------------------------------------------------
    def _responsible(self, pod: dict) -> bool:
        return ((pod.get("spec") or {}).get("schedulerName") or "default-scheduler") in self.frameworks

    def _wire(self) -> None:
        self.pods.add_event_handler(on_add=self._pod_add, on_update=self._pod_update, on_delete=self._pod_delete)
        self.nodes.add_event_handler(on_add=self._node_add, on_update=self._node_update, on_delete=self._node_delete)
        self.node_topology.watch(self.nodes)
        if self.podgroups is not None:
            self.podgroups.add_event_handler(on_add=self._pg_add, on_update=self._pg_update, on_delete=self._pg_delete)

    def _pod_add(self, pod: dict) -> None:
        self.groups.set_pod(pod)
        if (pod.get("spec") or {}).get("nodeName"):
            if not _is_terminal(pod):
                self.cache.add_pod(pod)
            self.queue.on_event(ClusterEvent(EventResource.AssignedPod, ActionType.Add), None, pod)
            return
        if _is_terminal(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        if self._responsible(pod):
            self.queue.add(pod)
        self.queue.on_event(ClusterEvent(EventResource.UnscheduledPod, ActionType.Add), None, pod)

    def _pod_update(self, old: dict, new: dict) -> None:
        self.groups.set_pod(new)
        old_node = (old.get("spec") or {}).get("nodeName")
        new_node = (new.get("spec") or {}).get("nodeName")
        if new_node:
            if not old_node:
                self.queue.assigned(new)
                self.cache.add_pod(new)
                self.queue.on_event(ClusterEvent(EventResource.AssignedPod, ActionType.Add), None, new)
                return
            self.cache.update_pod(old, new)
            if _is_terminal(new) and not _is_terminal(old):
                self.queue.on_event(ClusterEvent(EventResource.AssignedPod, ActionType.Delete), old, None)
            return
        if (new.get("metadata") or {}).get("deletionTimestamp") or _is_terminal(new):
            self.queue.delete(new)
            return
        if self._responsible(new):
            self.queue.update(old, new)

    def _pod_delete(self, pod: dict) -> None:
        self.groups.remove_pod(pod)
        if (pod.get("spec") or {}).get("nodeName"):
            self.cache.remove_pod(pod)
            self.queue.on_event(ClusterEvent(EventResource.AssignedPod, ActionType.Delete), pod, None)
        else:
            self.queue.delete(pod)
        self.nominator.delete_nominated_pod_if_exists(PodInfo(pod))

    def _node_add(self, node: dict) -> None:
        self.cache.add_node(node)
        self.queue.on_event(ClusterEvent(EventResource.Node, ActionType.Add), None, node)

    def _node_update(self, old: dict, new: dict) -> None:
        self.cache.update_node(new)
        from .framework.types import node_scheduling_properties_change
        for ev in node_scheduling_properties_change(new, old):
            self.queue.on_event(ev, old, new)

    def _node_delete(self, node: dict) -> None:
        self.cache.remove_node(node)
        self.queue.on_event(ClusterEvent(EventResource.Node, ActionType.Delete), node, None)

    def _pg_add(self, pg: dict) -> None:
        self.groups.set_group(pg)
        self.queue.on_event(ClusterEvent(gangscheduling.POD_GROUP, ActionType.Add), None, pg)

    def _pg_update(self, old: dict, new: dict) -> None:
        self.groups.set_group(new)
        self.queue.on_event(ClusterEvent(gangscheduling.POD_GROUP, ActionType.Update), old, new)

    def _pg_delete(self, pg: dict) -> None:
        self.groups.remove_group(pg)
        self._groups_scheduled.discard(pg["metadata"].get("uid") or "")

    def _namespace_labels(self) -> dict:
        return {n["metadata"]["name"]: (n["metadata"].get("labels") or {}) for n in self.namespaces.list()}

    def _pdbs(self) -> list:
        return self.pdb_informer.list()

    def _scheduled_count(self, group_key: str) -> int:
        return len(self.cache.scheduled_in_group(group_key))

    # -- lifecycle -------------------------------------------------------------------------------
    async def run(self) -> None:
        self.factory.start()
        await self.factory.wait_for_sync([i for i in (self.pods, self.nodes, self.namespaces, self.pdb_informer,
                                                      self.podgroups) if i is not None]
                                         + list(getattr(self, "extra_informers", ())))  # plugins' (DRA)
        self.synced = True
        while True:
            entity = await self.queue.pop()
            if entity is None:
                return
            try:
                if isinstance(entity, QueuedPodGroup):
                    await self.schedule_pod_group(entity)
                else:
                    await self.schedule_one(entity)
            except Exception:  # keep scheduling; the entity is retried with backoff
                log.exception("scheduling cycle failed")
                self.queue.requeue(entity, (), error=True)
            await asyncio.sleep(0)

    synced = False

    def start(self) -> asyncio.Task:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.run(), name="scheduler")
        return self._task

    async def stop(self) -> None:
        self.queue.close()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
        for t in list(self._binding_tasks):
            t.cancel()
        if self._own_factory:
            await self.factory.stop()

    async def wait_idle(self) -> None:
        """Let outstanding binding cycles finish (tests and benchmarks)."""
        while self._binding_tasks:
            await asyncio.gather(*list(self._binding_tasks), return_exceptions=True)

    # -- helpers -----------------------------------------------------------------------------------
    def _framework_for(self, pod: dict) -> Framework:
        return self.frameworks.get((pod.get("spec") or {}).get("schedulerName") or "default-scheduler", self.fw)

    def _current(self, qpi: QueuedPodInfo) -> dict | None:
        """The latest version of a queued pod, or None when it no longer needs scheduling."""
        pod = self.pods.get_by_name(qpi.pod_info.namespace, qpi.pod_info.name)
        if pod is None or (pod.get("metadata") or {}).get("uid") != qpi.pod_info.uid:
            return None
        if (pod.get("spec") or {}).get("nodeName") or _is_terminal(pod) or pod["metadata"].get("deletionTimestamp"):
            return None
        return pod

    def _refresh_snapshot(self, also: Iterable[str] = ()) -> None:
        self.cache.update_snapshot(self.snapshot, also)

    def _now(self) -> str:
        return now_rfc3339(to_datetime(self.clock.now()))

    # -- single pods -------------------------------------------------------------------------------
    async def schedule_one(self, qpi: QueuedPodInfo) -> None:
        pod = self._current(qpi)
        if pod is None:
            self.queue.done(qpi)
            return
        pi = qpi.pod_info
        if pi.pod is not pod:  # the informer's object changed since the PodInfo was built
            qpi.pod_info = pi = PodInfo(pod)
        fw = self._framework_for(pod)
        self._refresh_snapshot()
        state = CycleState()
        touched: set[str] = set()

        def assume(p: PodInfo, node: str) -> PodInfo:
            assumed = self.cache.assume(p, node)
            self.snapshot.add_pod(assumed, node)
            touched.add(node)
            return assumed

        def forget(p: PodInfo, node: str) -> None:
            self.cache.forget(p, node)
            touched.add(node)

        result = fw.scheduling_cycle(pi, self.snapshot, state=state, assume=assume, forget=forget)
        self.cache.mark_dirty(touched)
        self.stats["attempts"] += 1
        if result.schedule_result is not None and result.schedule_result.batched:
            self.stats["batched"] += 1
        if result.status is None or result.status.code == Code.Wait:
            self.queue.done(qpi)
            self.nominator.delete_nominated_pod_if_exists(pi)
            self._spawn_binding(fw, state, result.pod_info, result.node_name, qpi,
                                waiting=result.status is not None, scores=result.schedule_result)
            return
        await self._handle_failure(fw, qpi, pi, result.status, result.fit_error, result.post_filter_result)

    async def _handle_failure(self, fw: Framework, qpi: QueuedPodInfo, pi: PodInfo, status: Status,
                              fit_error: Optional[FitError], post_filter: Any) -> None:
        self.stats["unschedulable"] += 1
        plugins: set[str] = set()
        nominated = ""
        if fit_error is not None:
            plugins = set(fit_error.diagnosis.unschedulable_plugins)
            if post_filter is not None and post_filter.nominating_info is not None:
                nominated = post_filter.nominating_info.nominated_node_name
                await self._preempt(pi, post_filter)
        message = str(fit_error) if fit_error is not None else status.message()
        error = status.code == Code.Error
        reason = "SchedulerError" if error else "Unschedulable"
        diag = self._diagnosis_record(fit_error, message)
        self.last_diagnosis[pi.key] = diag
        self.queue.requeue(qpi, plugins, error=error)
        if nominated:
            self.nominator.add_nominated_pod(pi, nominated)
        await self._write_pod_unschedulable(pi.pod, reason, message, nominated)
        await self.client.create_event(pi.pod, "FailedScheduling", message, type="Warning",
                                       component=fw.profile_name,
                                       annotations={DIAGNOSIS_ANNOTATION: orjson.dumps(diag).decode()})

    async def _preempt(self, preemptor: PodInfo, post_filter: Any) -> None:
        """Actuate what DefaultPreemption proposed: evict the victims, clear lower nominations."""
        for victim in post_filter.victims:
            await self._evict(victim.pod, f"Preempted by pod {preemptor.uid} on node "
                                          f"{post_filter.nominating_info.nominated_node_name}",
                              preemptor.pod)
        for p in post_filter.lower_priority_nominated_pods:
            self.nominator.delete_nominated_pod_if_exists(p)
            await self._patch_status(p.pod, {"status": {"nominatedNodeName": None}})

    async def _evict(self, victim: dict, message: str, preemptor: dict) -> None:
        md = victim["metadata"]
        cond = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                "message": f"{'default-scheduler'}: preempting to accommodate a higher priority pod",
                "lastTransitionTime": self._now()}
        await self._patch_status(victim, {"status": {"conditions": [cond]}})
        try:
            await self.client.delete("v1", "Pod", md.get("namespace", ""), md["name"],
                                     preconditions={"uid": md.get("uid")})
        except StatusError as e:
            if e.code not in (404, 409):
                raise
        await self.client.create_event(victim, "Preempted", message, type="Normal", component="default-scheduler")

    async def _patch_status(self, pod: dict, patch: dict) -> None:
        md = pod["metadata"]
        try:
            await self.client.patch("v1", "Pod", md.get("namespace", ""), md["name"], patch,
                                    patch_type="application/strategic-merge-patch+json", subresource="status")
        except StatusError as e:
            if e.code != 404:
                log.warning("updating status of pod %s/%s: %s", md.get("namespace"), md["name"], e.message)

    async def _write_pod_unschedulable(self, pod: dict, reason: str, message: str, nominated: str = "") -> None:
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == reason \
                    and c.get("message") == message and not nominated:
                return
        patch: dict = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": reason,
                                                  "message": message, "lastProbeTime": None,
                                                  "lastTransitionTime": self._now()}]}}
        if nominated:
            patch["status"]["nominatedNodeName"] = nominated
        await self._patch_status(pod, patch)

    def _pod_gated(self, qpi: QueuedPodInfo, status: Status) -> None:
        """A PreEnqueue plugin holds the pod: say so on the pod (PodScheduled=False, SchedulingGated),
        once per distinct message, as kube-scheduler does for scheduling gates."""
        self._spawn_api_call(self._write_pod_unschedulable(qpi.pod, "SchedulingGated", status.message()))

    def _spawn_api_call(self, coro: Any) -> None:
        """Run an API write in the background; `wait_idle` waits for it like a binding cycle."""
        task = asyncio.get_running_loop().create_task(coro)
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_tasks.discard)

    # -- binding cycle ------------------------------------------------------------------------------
    def _spawn_binding(self, fw: Framework, state: CycleState, pi: PodInfo, node: str, qpi: Any, *,
                       waiting: bool, scores: Any = None, group: Optional[QueuedPodGroup] = None) -> None:
        task = asyncio.get_running_loop().create_task(
            self._binding_cycle(fw, state, pi, node, qpi, waiting=waiting, scores=scores, group=group))
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_tasks.discard)

    async def _binding_cycles(self, fw: Framework, items: list, group: QueuedPodGroup) -> None:
        for state, pi, node, qpi in items:
            await self._binding_cycle(fw, state, pi, node, qpi, waiting=False, scores=None, group=group)
            await asyncio.sleep(0)

    async def _wait_on_permit(self, fw: Framework, pi: PodInfo) -> Optional[Status]:
        wp = fw.get_waiting_pod(pi.uid or pi.key)
        if wp is None:
            return None
        if not wp.done:
            done = asyncio.get_running_loop().create_future()
            wp.on_done.append(lambda st: done.done() or done.set_result(st))
            timer = asyncio.ensure_future(self.clock.sleep(wp.timeout_seconds()))
            finished, _ = await asyncio.wait({done, timer}, return_when=asyncio.FIRST_COMPLETED)
            if done not in finished:
                wp.expire() if hasattr(wp, "expire") else wp.reject("", "timeout")
            timer.cancel()
        return fw.wait_on_permit_status(pi)

    async def _binding_cycle(self, fw: Framework, state: CycleState, pi: PodInfo, node: str, qpi: Any, *,
                             waiting: bool, scores: Any, group: Optional[QueuedPodGroup]) -> None:
        st: Optional[Status] = None
        try:
            if waiting:
                st = await self._wait_on_permit(fw, pi)
            if st is None or st.is_success():
                st = await self._run_pre_bind(fw, state, pi, node)
            if st is None or st.is_success():
                st = await self._bind(fw, state, pi, node)
        except Exception as e:  # an API error in PreBind/Bind: treat as a binding failure
            log.exception("binding %s/%s", pi.namespace, pi.name)
            st = Status.new(Code.Error, str(e))
        if st is None or st.is_success():
            self.stats["bound"] += 1
            for pl in fw.post_bind_plugins:
                try:
                    pl.post_bind(state, pi, node)
                except Exception:  # pragma: no cover
                    log.exception("PostBind")
            msg = f"Successfully assigned {pi.namespace}/{pi.name} to {node}"
            ann = None
            if scores is not None and getattr(scores, "scores", None) is not None:
                ann = {DIAGNOSIS_ANNOTATION: orjson.dumps(
                    {"result": "Scheduled", "node": node,
                     "feasibleNodes": scores.feasible_nodes, "evaluatedNodes": scores.evaluated_nodes,
                     "topScores": [{"node": n, "score": s} for n, s in scores.scores.top(5)],
                     **({"opportunisticBatch": True} if scores.batched else {})}).decode()}
            await self.client.create_event(pi.pod, "Scheduled", msg, component=fw.profile_name, annotations=ann)
            return
        # failure: release what the scheduling cycle reserved
        fw.run_reserve_plugins_unreserve(state, pi, node)
        self.cache.forget(pi, node)
        self.stats["binding_failures"] += 1
        message = st.message()
        if st.is_rejected() and st.code != Code.Error:
            reason_text = message
        else:
            reason_text = f"Binding rejected: {message}" if message else "Binding rejected"
        if group is None and qpi is not None:
            self.queue.add(pi.pod) if self.pods.get_by_name(pi.namespace, pi.name) else None
        elif group is not None:
            self.queue.activate([pi.pod])
        await self._write_pod_unschedulable(pi.pod, "SchedulerError" if st.code == Code.Error else "Unschedulable",
                                            reason_text)
        await self.client.create_event(pi.pod, "FailedScheduling", reason_text, type="Warning",
                                       component=fw.profile_name)

    async def _run_pre_bind(self, fw: Framework, state: CycleState, pi: PodInfo, node: str) -> Optional[Status]:
        for pl in fw.pre_bind_plugins:
            pre = pl.pre_bind_pre_flight(state, pi, node)
            if pre is not None and pre.code == Code.Skip:
                continue
            st = pl.pre_bind(state, pi, node)
            if inspect.isawaitable(st):
                st = await st
            if st is not None and not st.is_success():
                return st.with_plugin(pl.name()) if st.is_rejected() else Status.new(
                    Code.Error, f'running PreBind plugin "{pl.name()}": {st.message()}')
        return None

    async def _bind(self, fw: Framework, state: CycleState, pi: PodInfo, node: str) -> Optional[Status]:
        for pl in fw.bind_plugins:
            st = pl.bind(state, pi, node)
            if inspect.isawaitable(st):
                st = await st
            if st is not None and st.code == Code.Skip:
                continue
            return st
        return Status.new(Code.Error, "no bind plugin bound the pod")

    # -- pod groups --------------------------------------------------------------------------------
    async def schedule_pod_group(self, group: QueuedPodGroup) -> None:
        pg = self.groups.get(group.key)
        members: list[QueuedPodInfo] = []
        for key, qpi in list(group.members.items()):
            pod = self._current(qpi)
            if pod is None:
                group.members.pop(key, None)
                continue
            if qpi.pod_info.pod is not pod:
                qpi.pod_info = PodInfo(pod)
            members.append(qpi)
        if pg is None or not members:
            # the group vanished: send its pods back through PreEnqueue (they will be gated)
            pods = [q.pod for q in members]
            group.members.clear()
            self.queue.done(group)
            for p in pods:
                self.queue.add(p)
            return
        members.sort(key=lambda q: (-q.pod_info.priority, q.initial_attempt_timestamp or q.timestamp))
        self.group_preemption.before_group_cycle(group, members)  # workload-aware preemption: own nominations
        fw = self._framework_for(members[0].pod)
        self._refresh_snapshot()
        pg_info = PodGroupInfo(group.namespace, group.name, pg, [q.pod_info for q in members])
        already = len(self.cache.scheduled_in_group(group.key))
        policy, min_count = policy_of(pg)
        state = CycleState()
        parent = Placement("cluster", list(self.snapshot.list()))
        # Members that join an already scheduled group stay in its domain (topology placements).
        placements, st = fw.run_placement_generate_plugins(state, pg_info, parent)
        if st is not None:
            await self._group_failed(fw, group, pg, members, {}, st.message(), st.plugin and {st.plugin} or set(),
                                     placements_tried=[])
            return
        # One placement (no topology constraint): a feasible outcome is the choice, so its
        # assumptions and reservations stay instead of being undone and redone at commit.
        single = len(placements) == 1

        def attempt(placement: Placement) -> dict:
            outcome = self._try_placement(fw, placement, members, pg_info, already)
            if single and outcome["feasible"]:
                outcome["kept"] = True
            else:
                self._revert(fw, outcome)
            return outcome
        # ranks, capacity pruning and score bounds: the same choice as trying every placement
        outcomes, skipped = search_placements(fw, state, pg_info, placements, attempt, already=already)
        fw.set_snapshot(self.snapshot)  # placements ran on node subsets; plugins see the whole cluster again
        self.stats["placements_tried"] += sum(1 for o in outcomes if o.get("tried", True))
        self.stats["placements_skipped"] += skipped + sum(1 for o in outcomes if not o.get("tried", True))
        feasible = [o for o in outcomes if o["feasible"]]
        self.stats["group_attempts"] += 1
        if not feasible:
            best = max(outcomes, key=lambda o: len(o["assigned"])) if outcomes else None
            # requeue on events that could help any of the domains, not just the best one
            plugins = set().union(*(o["plugins"] for o in outcomes))
            await self._group_failed(fw, group, pg, members, best["failures"] if best else {},
                                     best["status_message"] if best else "no placement", plugins,
                                     placements_tried=outcomes, best=best, min_count=min_count, already=already)
            return
        chosen = feasible[0]
        if len(feasible) > 1:
            assignments = [PodGroupAssignments(o["placement"], {a[1].key: a[2] for a in o["assigned"]})
                           for o in feasible]
            totals, _, st = fw.run_placement_score_plugins(state, pg_info, assignments)
            if st is None and totals:
                chosen = feasible[max(range(len(feasible)), key=lambda i: totals[i])]
        # commit the chosen placement: assume in the cache, Reserve again, bind
        placed_keys = set()
        self.queue.done(group)
        kept = chosen.get("kept", False)
        committed = []
        assumed_infos = chosen.get("assumed") or {}
        for qpi, pi, node, pstate in chosen["assigned"]:
            assumed = self.cache.assume(pi, node, assumed_infos.get(pi.key))
            if not kept:
                fw.run_reserve_plugins_reserve(pstate, assumed, node)
            placed_keys.add(pi.key)
            group.members.pop(pi.key, None)
            committed.append((qpi, pi, node, pstate, assumed))
        self.cache.mark_dirty(n for _, _, n, _ in chosen["assigned"])
        allowed: list[tuple[CycleState, PodInfo, str, QueuedPodInfo]] = []
        for qpi, pi, node, pstate, assumed_pi in committed:
            st = fw.run_permit_plugins(pstate, assumed_pi, node)
            waiting = st is not None and st.code == Code.Wait
            if st is not None and not waiting:
                fw.run_reserve_plugins_unreserve(pstate, assumed_pi, node)
                self.cache.forget(pi, node)
                self.queue.activate([pi.pod])
                continue
            if waiting:
                self._spawn_binding(fw, pstate, assumed_pi, node, qpi, waiting=True, group=group)
            else:
                allowed.append((pstate, assumed_pi, node, qpi))
        if allowed:  # one task binds the members Permit allowed, in order (as their own tasks would run)
            self._spawn_api_call(self._binding_cycles(fw, allowed, group))
        self.stats["groups_scheduled"] += 1
        self._groups_scheduled.add(pg["metadata"].get("uid") or group.key)
        # the status write and the event are API calls off the scheduling cycle (as upstream's
        # asynchronous API calls): the next cycle does not wait for them
        self._spawn_api_call(self._report_group_scheduled(fw, group, pg, chosen["placement"].name,
                                                          len(chosen["assigned"]), min_count))
        diag = {"result": "Scheduled", "placement": chosen["placement"].name,
                "podsPlaced": len(chosen["assigned"]), "podsInCycle": len(members), "minCount": min_count,
                "alreadyScheduled": already,
                "placementsTried": [{"placement": o["placement"].name, "feasible": o["feasible"],
                                     "podsPlaced": len(o["assigned"]), "message": o.get("message", "")}
                                    for o in outcomes[:50]],
                "placementsSkipped": skipped}  # could not outscore the chosen one (placementsearch)
        self.last_diagnosis["group:" + group.key] = diag
        if group.members:  # members this cycle could not place: retry them later as late members
            self.queue.requeue(group, set().union(*[set(f[1].diagnosis.unschedulable_plugins)
                                                    for f in chosen["failures"].values()]) if chosen["failures"] else set())

    async def _report_group_scheduled(self, fw: Framework, group: QueuedPodGroup, pg: dict, placement: str,
                                      placed_now: int, min_count: int) -> None:
        first = await self._set_group_condition(pg, "True", "Scheduled", "")
        ann = {DIAGNOSIS_ANNOTATION: orjson.dumps({"result": "Scheduled", "placement": placement,
                                                   "podsPlaced": placed_now, "minCount": min_count}).decode()}
        where = f" in {placement}" if placement != "cluster" else ""
        verb = "Successfully placed" if first else "Placed late members:"
        await self.client.create_event(pg, "Scheduled", f"{verb} {placed_now} pod(s) of pod group "
                                                        f"{group.key}{where}", component=fw.profile_name,
                                       annotations=ann)

    def _try_placement(self, fw: Framework, placement: Placement, members: list[QueuedPodInfo],
                       pg_info: PodGroupInfo, already: int) -> dict:
        """Run the group algorithm on one placement; assumptions stay in the snapshot until _revert."""
        view = self.snapshot if placement.name == "cluster" else Snapshot(placement.nodes)
        assigned: list[tuple[QueuedPodInfo, PodInfo, str, CycleState]] = []
        assumed_infos: dict[str, PodInfo] = {}  # pod key -> the PodInfo assumed on the view
        failures: dict[str, tuple[QueuedPodInfo, FitError]] = {}
        plugins: set[str] = set()
        status_message = ""
        feasible_status: Optional[Status] = None
        evaluated = 0
        for qpi in members:
            pi = qpi.pod_info
            evaluated += 1
            pstate = CycleState()
            try:
                res = fw.schedule_pod(pstate, pi, view)
            except FitError as fe:
                failures[pi.key] = (qpi, fe)
                plugins |= set(fe.diagnosis.unschedulable_plugins)
            except (NoNodesAvailableError, SchedulingError) as e:
                status_message = str(e)
            else:
                node = res.suggested_host
                if res.batched:
                    self.stats["batched"] += 1
                assumed = pi.assumed_on(node)
                view.add_pod(assumed, node)
                st = fw.run_reserve_plugins_reserve(pstate, assumed, node)
                if st is not None:
                    view.remove_pod(assumed, node)
                    fw.run_reserve_plugins_unreserve(pstate, assumed, node)
                    status_message = st.message()
                    if st.plugin:
                        plugins.add(st.plugin)
                else:
                    assigned.append((qpi, pi, node, pstate))
                    assumed_infos[pi.key] = assumed
            progress = PlacementProgress(scheduled=already + len(assigned), remaining=len(members) - evaluated)
            feasible_status = fw.run_placement_feasible_plugins(pstate, pg_info, progress)
            if feasible_status is not None and feasible_status.is_rejected():
                if feasible_status.plugin:
                    plugins.add(feasible_status.plugin)
                break
        if not fw.placement_feasible_plugins:
            feasible = bool(assigned)
        else:
            feasible = feasible_status is None or feasible_status.is_success()
        if feasible_status is not None and not feasible:
            status_message = feasible_status.message()
        return {"placement": placement, "view": view, "assigned": assigned, "assumed": assumed_infos,
                "failures": failures,
                "feasible": feasible and bool(assigned) or (feasible and already > 0 and not members),
                "plugins": plugins, "status_message": status_message}

    def _revert(self, fw: Framework, outcome: dict) -> None:
        view = outcome["view"]
        for qpi, pi, node, pstate in reversed(outcome["assigned"]):
            assumed = pi.assumed_on(node)
            fw.run_reserve_plugins_unreserve(pstate, assumed, node)
            view.remove_pod(assumed, node)
        self.cache.mark_dirty(n for _, _, n, _ in outcome["assigned"])

    async def _group_failed(self, fw: Framework, group: QueuedPodGroup, pg: dict, members: list[QueuedPodInfo],
                            failures: dict, status_message: str, plugins: set[str], *, placements_tried: list,
                            best: dict | None = None, min_count: int = 0, already: int = 0) -> None:
        self.stats["groups_unschedulable"] += 1
        # >>> workload-aware preemption (grouppreemption.py): evict victims and nominate, or say why not
        preemption = await self.group_preemption.on_group_unschedulable(
            fw, group, pg, members, placements_tried, min_count=min_count, already=already)
        # <<< workload-aware preemption
        placed = len(best["assigned"]) if best else 0
        total = len(members)
        n_nodes = self.snapshot.num_nodes()
        summary = self._group_summary(placed, total, min_count, already, failures, status_message, n_nodes,
                                      placements_tried)
        if preemption.message:  # workload-aware preemption
            summary += "; " + preemption.message
        self.queue.requeue(group, plugins)
        diag = {"result": "Unschedulable", "podsPlaced": placed, "podsInCycle": total, "minCount": min_count,
                "alreadyScheduled": already, "message": summary,
                "pods": {qpi.pod_info.name: self._diagnosis_record(fe, str(fe)) for qpi, fe in
                         list(failures.values())[:10]},
                "placementsTried": [{"placement": o["placement"].name, "feasible": o["feasible"],
                                     "podsPlaced": len(o["assigned"]),
                                     "message": o.get("message") or o["status_message"]}
                                    for o in placements_tried[:50]]}
        if preemption.diagnosis:  # workload-aware preemption
            diag["preemption"] = preemption.diagnosis
        self.last_diagnosis["group:" + group.key] = diag
        self._spawn_api_call(self._report_group_unschedulable(fw, pg, members, failures, summary, diag))

    async def _report_group_unschedulable(self, fw: Framework, pg: dict, members: list[QueuedPodInfo],
                                          failures: dict, summary: str, diag: dict) -> None:
        """The failed group cycle's API writes, off the cycle: condition, events, pod conditions."""
        await self._set_group_condition(pg, "False", "Unschedulable", summary)
        await self.client.create_event(pg, "FailedScheduling", summary, type="Warning", component=fw.profile_name,
                                       annotations={DIAGNOSIS_ANNOTATION: orjson.dumps(diag).decode()})
        for qpi in members:
            fe = failures.get(qpi.pod_info.key)
            msg = str(fe[1]) if fe else f"pod group is unschedulable: {summary}"
            rec = self._diagnosis_record(fe[1], msg) if fe else {"result": "Unschedulable", "message": msg,
                                                                  "podGroup": summary}
            await self._write_pod_unschedulable(qpi.pod, "Unschedulable", msg)
            await self.client.create_event(qpi.pod, "FailedScheduling", msg, type="Warning",
                                           component=fw.profile_name,
                                           annotations={DIAGNOSIS_ANNOTATION: orjson.dumps(rec).decode()})

    @staticmethod
    def _group_summary(placed: int, total: int, min_count: int, already: int, failures: dict, status_message: str,
                       n_nodes: int, placements: list) -> str:
        """`4/6 pods fit, 6 required; 2 pods: 3 node(s) Insufficient cpu, 1 node(s) had untolerated taint ...`"""
        need = f"{min_count} required" if min_count else "at least 1 required"
        fit_total = placed + already
        head = f"{fit_total}/{total + already} pods fit, {need}"
        parts = []
        if failures:
            by_msg: Counter = Counter()
            for qpi, fe in failures.values():
                counts = fe.diagnosis.reason_counts(n_nodes)
                by_msg[", ".join(f"{v} {k}" for k, v in sorted(counts.items()))] += 1
            parts = [f"{n} pod{'s' if n != 1 else ''}: {text}" for text, n in by_msg.most_common()]
        not_tried = total - placed - len(failures)
        if not_tried > 0 and status_message:
            parts.append(f"{not_tried} pod{'s' if not_tried != 1 else ''} not evaluated ({status_message})")
        elif status_message and not failures:
            parts.append(status_message)
        if parts:
            head += "; " + "; ".join(parts)
        tried = summarize_placements(placements)  # the domains evaluated and why each failed
        if tried:
            head += "; " + tried
        return head

    async def _set_group_condition(self, pg: dict, status: str, reason: str, message: str) -> bool:
        """Set PodGroupScheduled; False when nothing changed (the condition keeps the first success)."""
        key = f"{pg['metadata'].get('namespace', '')}/{pg['metadata']['name']}"
        if status != "True" and (pg["metadata"].get("uid") or key) in self._groups_scheduled:
            return False  # scheduled once (its True condition may still be on its way)
        current = self.podgroups.get(key) if self.podgroups is not None else None
        for c in ((current or pg).get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodGroupScheduled":
                if c.get("status") == status and c.get("reason") == reason and c.get("message") == message:
                    return False
                if c.get("status") == "True":
                    return False  # the condition records the initial decision only (upstream's documented limit)
        cond = {"type": "PodGroupScheduled", "status": status, "reason": reason, "message": message,
                "lastTransitionTime": self._now(), "observedGeneration": pg["metadata"].get("generation", 1)}
        md = pg["metadata"]
        try:
            await self.client.patch(POD_GROUP_API, "PodGroup", md.get("namespace", ""), md["name"],
                                    {"status": {"conditions": [cond]}},
                                    patch_type="application/strategic-merge-patch+json", subresource="status")
        except StatusError as e:
            if e.code != 404:
                log.warning("updating PodGroup %s status: %s", key, e.message)
            return False
        return True

    # -- explanations --------------------------------------------------------------------------------
    @staticmethod
    def _diagnosis_record(fit_error: Optional[FitError], message: str) -> dict:
        rec: dict = {"result": "Unschedulable", "message": message}
        if fit_error is None:
            return rec
        by_reason: dict[str, list[str]] = {}
        reason_plugin: dict[str, str] = {}
        by_plugin: Counter = Counter()
        for node, st in fit_error.diagnosis.node_to_status.items():
            for r in st.reasons():
                lst = by_reason.setdefault(r, [])
                if len(lst) < MAX_NODES_PER_REASON:
                    lst.append(node)
                if st.plugin:
                    reason_plugin.setdefault(r, st.plugin)
            if st.plugin:
                by_plugin[st.plugin] += 1
        rec["nodes"] = fit_error.num_all_nodes
        rec["reasons"] = {r: {"count": len(v), "plugin": reason_plugin.get(r, ""), "nodes": v}
                          for r, v in by_reason.items()}
        counts = fit_error.diagnosis.reason_counts(getattr(fit_error, "num_all_nodes", 0) or 0)
        for r, n in counts.items():
            if r in rec["reasons"]:
                rec["reasons"][r]["count"] = n
        rec["plugins"] = dict(by_plugin)
        if fit_error.diagnosis.post_filter_msg:
            rec["preemption"] = fit_error.diagnosis.post_filter_msg
        return rec


def _set_plugin_arg(profile: Any, plugin: str, key: str, value: Any) -> None:
    for pc in profile.plugin_config:
        if pc.name == plugin:
            pc.args = dict(pc.args or {}, **{key: value})
            return
    from .framework.config import PluginConfig
    profile.plugin_config.append(PluginConfig(plugin, {key: value}))
