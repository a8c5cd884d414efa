"""The scheduler: informers -> queue -> scheduling cycles (pods and pod groups) -> binding cycles.

`Scheduler(client, factory, ...)` is kube-scheduler's scheduler.go: it wires the parts together
and runs the `scheduleOne` loop; the cycles live beside it:

- Informers on Pods, Nodes and PodGroups feed the cache (bound and assumed pods per node), the
  PodGroupManager (pods per group) and the queue (unscheduled pods of this scheduler's profiles);
  every change is also a cluster event for the queueing hints. ResourceClaim, ResourceSlice and
  DeviceClass informers feed the shared DRA manager the same way.
- A popped **pod** runs the pod cycle and, asynchronously, the binding cycle (`schedule_one.py`).
- A popped **pod group** runs the group cycle (`schedule_one_podgroup.py`), with workload-aware
  preemption when it does not fit (`grouppreemption.py`); a popped CompositePodGroup tree (1.37,
  its leaves queued as its root) runs the tree cycle (`schedule_one_compositegroup.py`).
- Plugins get what they need through their profile's Handle: the client, the informer factory, an
  event recorder, the DRA manager, the PodGroup lister, the clock and off-cycle API calls
  (`framework/services.py`); informers they make there are waited for like the scheduler's own.
- What users see: `PodScheduled` conditions and `Scheduled` / `FailedScheduling` events with
  upstream's messages, the PodGroup's `PodGroupScheduled` condition, and for every decision a
  diagnosis (per plugin, per node) kept on the event as the annotation
  `scheduler.phalanx.dev/diagnosis`, which `phalanx explain` reads (`reporting.py`).
- Metrics: kube-scheduler's (`phalanx.metrics.scheduler`), recorded where a cycle ends and by the
  profiles' `MeteredFramework` (`framework/metering.py`); the queue's depths are read when scraped.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Optional

from ..client.clock import REAL_CLOCK, Clock
from ..client.informer import Informer, InformerFactory
from ..client.interface import Client
from .apicalls import BackgroundCalls
from ..api.scheduling.fields import COMPOSITE_POD_GROUP_API
from ..machinery.featuregates import FeatureGates
from ..metrics import scheduler as sm
from .cache import SchedulerCache, pod_key
from .framework.config import KubeSchedulerConfiguration, KubeSchedulerProfile, PluginConfig, default_profile
from .framework.constants import Obj
from .framework.dra_manager import DRAManager
from .framework.metering import MeteredFramework
from .framework.events import ActionType, ClusterEvent, EventResource, node_scheduling_properties_change
from .framework.nominator import Nominator
from .framework.registry import Registry, in_tree_registry
from .framework.runtime import Framework
from .framework.services import HandleServices
from .framework.snapshot import Snapshot
from .framework.status import Status
from .framework.types import PodInfo, QueuedPodInfo
from .grouppreemption import GATE as WORKLOAD_AWARE_PREEMPTION_GATE
from .grouppreemption import GroupPreemption
from .plugins import (defaultbinder, dynamicresources, gangscheduling, names, podgrouppodscount, topologyaware,
                      volumebinding, volumerestrictions, volumezone)
from .podgroups import PodGroupManager
from .queue import QueuedPodGroup, SchedulingQueue
from .reporting import pod_group_api, release_of
from .schedule_one import CycleContext, PodCycle, is_terminal
from .schedule_one_compositegroup import CompositeGroupCycle
from .schedule_one_podgroup import PodGroupCycle, members_fall_short

log = logging.getLogger("phalanx.scheduler")

RESOURCE_API_VERSION = "resource.k8s.io/v1"
COMPOSITE_POD_GROUP_GATE = "CompositePodGroup"


class Scheduler:
    def __init__(self, client: Client, factory: InformerFactory | None = None, *,
                 config: KubeSchedulerConfiguration | None = None, gates: Optional["FeatureGates"] = None,
                 clock: Optional[Clock] = None, permit_timeout: float | None = None,
                 registry: Optional[Registry] = None, pod_group_cycles: bool = True, seed: int = 0):
        self.client = client
        self.seed = seed  # the profiles' random tie-breaks (equal scores, preemption's start offset)
        recorder = getattr(client, "events", None)
        if recorder is not None:  # upstream's scheduler records through events.k8s.io's series recorder:
            recorder.correlate = False  # repeats are counted, never aggregated or spam-filtered
        self.clock = clock or (factory.clock if factory is not None else REAL_CLOCK)
        self.factory = factory or InformerFactory(client, clock=self.clock)
        self._own_factory = factory is None
        self.gates = gates or FeatureGates()
        # the default profile follows this scheduler's feature gates (GangScheduling, DRA, TAS plugins)
        self.config = config or KubeSchedulerConfiguration(profiles=[default_profile(self.gates)])
        self.cache = SchedulerCache()
        self.groups = PodGroupManager(self._scheduled_count)
        self.snapshot = Snapshot()
        self.nominator = Nominator()
        self.group_aware = self.gates.enabled("GenericWorkload")
        self.node_topology = topologyaware.NodeTopologyIndex()  # fed by the Node informer (_wire)
        self.dra_manager = DRAManager()
        self.calls = BackgroundCalls()
        reg = (registry if registry is not None else in_tree_registry()).copy()
        # a registry that brings its own DynamicResources brings its own claim bookkeeping
        self._dra_informers = self._wire_dra_manager() if names.DynamicResources not in reg else []
        informers_before = set(map(id, self.factory.informers))
        self.frameworks = self._build_frameworks(reg, permit_timeout)
        self.fw = next(iter(self.frameworks.values()))
        for fw in self.frameworks.values():
            if fw.batch is not None:  # batches expire in the scheduler's time (virtual in simulations)
                fw.batch.clock = self.clock.now
        self.queue = SchedulingQueue(self.fw, self.clock, group_cycles=pod_group_cycles)
        sm.PENDING_PODS.add_source(self.queue, SchedulingQueue.pending_pods)
        # informers
        self.pods = self.factory.informer("v1", "Pod")
        self.nodes = self.factory.informer("v1", "Node")
        self.namespaces = self.factory.informer("v1", "Namespace")
        self.pdb_informer = self.factory.informer("policy/v1", "PodDisruptionBudget")
        self.kubernetes_release = release_of(self.gates)  # which PodGroup API (v1alpha2 or v1beta1) and condition
        self.podgroups = (self.factory.informer(pod_group_api(self.kubernetes_release), "PodGroup")
                          if self.group_aware else None)
        # 1.37: CompositePodGroup trees (served at v1alpha3 only, behind their gate)
        self.composites = (self.factory.informer(COMPOSITE_POD_GROUP_API, "CompositePodGroup")
                           if self.group_aware and self.kubernetes_release != "1.36"
                           and self.gates.enabled(COMPOSITE_POD_GROUP_GATE) else None)
        # informers plugins made through their Handle's factory are waited for too
        self._plugin_informers = [i for i in self.factory.informers if id(i) not in informers_before]
        # the cycles
        self.cycle = CycleContext(client, self.clock, self.cache, self.snapshot, self.nominator, self.queue,
                                  self.pods, self.frameworks, self.fw, self.calls)
        self.stats = self.cycle.stats
        self.last_diagnosis = self.cycle.last_diagnosis
        self.pod_cycle = PodCycle(self.cycle)
        self.group_cycle = PodGroupCycle(self.cycle, self.pod_cycle, self.groups, self.podgroups,
                                         release=self.kubernetes_release)
        self.queue.on_gated = self.pod_cycle.pod_gated
        if self.composites is not None:
            self.group_cycle.composite = CompositeGroupCycle(self.group_cycle)
            self.queue.group_of = self.groups.forest.root_key  # a tree's leaves queue as its root
        self.queue.group_ready = self._group_ready
        self._wire()
        self._wire_storage_events()
        self._task: asyncio.Task | None = None
        self.group_preemption = GroupPreemption(
            self.group_cycle, list(self.frameworks.values()),
            enabled=bool(self.group_aware and self.gates.enabled(WORKLOAD_AWARE_PREEMPTION_GATE)),
            pod_by_pod=self.group_aware)
        self.group_cycle.preemption = self.group_preemption
        if self.group_preemption.whole_group_victims:
            self.pod_cycle.whole_group_eviction = self.group_preemption.evict_whole_groups

    # -- construction ------------------------------------------------------------------------------
    def _build_frameworks(self, reg: Registry, permit_timeout: Optional[float]) -> dict[str, Framework]:
        self._register_scheduler_plugins(reg)
        services = HandleServices(client=self.client, informer_factory=self.factory, dra_manager=self.dra_manager,
                                  pod_groups=self.groups, clock=self.clock, spawn_api_call=self.calls.spawn)
        frameworks: dict[str, Framework] = {}
        for prof in self.config.profiles:
            if permit_timeout is not None:
                _set_plugin_arg(prof, names.GangScheduling, "permitWaitingTimeoutSeconds", permit_timeout)
            frameworks[prof.scheduler_name] = MeteredFramework(
                prof, registry=reg, feature_gates=self.gates, snapshot=self.snapshot, nominator=self.nominator,
                services=services, namespaces=self._namespace_labels, pod_disruption_budgets=self._pdbs,
                percentage_of_nodes_to_score=self.config.percentage_of_nodes_to_score, seed=self.seed)
        return frameworks

    def _register_scheduler_plugins(self, reg: Registry) -> None:
        """The plugins that need a running scheduler: its Handle's services (the client, the DRA
        manager, the PodGroup lister) or, for topology placements, its node label index and
        cluster-wide snapshot (one index per scheduler, fed by its Node informer)."""
        def scheduled_pods(group_key: str) -> list[tuple[PodInfo, str]]:
            return [(s.info, s.node) for s in map(self.cache.pods.get, self.cache.scheduled_in_group(group_key)) if s]
        plugins: dict[str, Callable[..., Any]] = {
            names.GangScheduling: gangscheduling.new,
            names.DefaultBinder: defaultbinder.new,
            names.TopologyPlacementGenerator: topologyaware.factory(self.node_topology, scheduled_pods, self.snapshot),
            names.PodGroupPodsCount: podgrouppodscount.new,
            names.DynamicResources: dynamicresources.new,
            names.VolumeBinding: volumebinding.new,
            names.VolumeRestrictions: volumerestrictions.new,
            names.VolumeZone: volumezone.new,
        }
        for name, factory in plugins.items():
            if name not in reg:
                reg.register(name, factory)

    # -- informer wiring (upstream eventhandlers.go) ----------------------------------------------
    def _responsible(self, pod: Obj) -> bool:
        return ((pod.get("spec") or {}).get("schedulerName") or "default-scheduler") in self.frameworks

    def _wire(self) -> None:
        self.pods.add_event_handler(on_add=self._pod_add, on_update=self._pod_update, on_delete=self._pod_delete)
        self.nodes.add_event_handler(on_add=self._node_add, on_update=self._node_update, on_delete=self._node_delete)
        self.node_topology.watch(self.nodes)
        if self.podgroups is not None:
            self.podgroups.add_event_handler(on_add=self._pg_add, on_update=self._pg_update, on_delete=self._pg_delete)
        if self.composites is not None:
            self.composites.add_event_handler(on_add=self._cpg_add, on_update=self._cpg_update,
                                              on_delete=self.groups.remove_composite)

    def _wire_storage_events(self) -> None:
        """Changes of the claims, volumes and classes the volume plugins read (through informers on
        the shared factory) are cluster events for the queue, when a profile runs one of them."""
        volume_plugins = (names.VolumeBinding, names.VolumeRestrictions, names.VolumeZone)
        if not any(name in fw.plugins_map for fw in self.frameworks.values() for name in volume_plugins):
            return
        for resource, api_version, kind in volumebinding.WATCHED:
            self.factory.informer(api_version, kind).add_event_handler(
                **self._feeding(resource, lambda obj: None, lambda old, new: None, lambda obj: None))

    def _wire_dra_manager(self) -> list[Informer]:
        """Feed the DRA manager from ResourceClaim, ResourceSlice and DeviceClass informers; every
        change is also a cluster event for the queue."""
        manager = self.dra_manager
        feeds = [(EventResource.ResourceClaim, "ResourceClaim", manager.claim_added, manager.claim_updated,
                  manager.claim_deleted),
                 (EventResource.ResourceSlice, "ResourceSlice", manager.slice_added, manager.slice_updated,
                  manager.slice_deleted),
                 (EventResource.DeviceClass, "DeviceClass", manager.class_added, manager.class_updated,
                  manager.class_deleted)]
        informers = []
        for resource, kind, added, updated, deleted in feeds:
            inf = self.factory.informer(RESOURCE_API_VERSION, kind)
            inf.add_event_handler(**self._feeding(resource, added, updated, deleted))
            informers.append(inf)
        return informers

    def _feeding(self, resource: str, added: Callable[[Obj], None], updated: Callable[[Optional[Obj], Obj], None],
                 deleted: Callable[[Obj], None]) -> dict[str, Callable[..., None]]:
        """Informer handlers that feed the DRA manager, then the queue (built after them)."""
        def on_add(obj: Obj) -> None:
            added(obj)
            self.queue.on_event(ClusterEvent(resource, ActionType.Add), None, obj)

        def on_update(old: Obj, new: Obj) -> None:
            updated(old, new)
            self.queue.on_event(ClusterEvent(resource, ActionType.Update), old, new)

        def on_delete(obj: Obj) -> None:
            deleted(obj)
            self.queue.on_event(ClusterEvent(resource, ActionType.Delete), obj, None)
        return {"on_add": on_add, "on_update": on_update, "on_delete": on_delete}

    def _pod_add(self, pod: Obj) -> None:
        self.groups.set_pod(pod)
        if (pod.get("spec") or {}).get("nodeName"):
            if not is_terminal(pod):
                self.cache.add_pod(pod)
            self.queue.on_event(ClusterEvent(EventResource.AssignedPod, ActionType.Add), None, pod)
            return
        if is_terminal(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        if self._responsible(pod):
            self.queue.add(pod)
        self.queue.on_event(ClusterEvent(EventResource.UnscheduledPod, ActionType.Add), None, pod)

    def _pod_update(self, old: Obj, new: Obj) -> None:
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
            if is_terminal(new) and not is_terminal(old):
                self.queue.on_event(ClusterEvent(EventResource.AssignedPod, ActionType.Delete), old, None)
            return
        if (new.get("metadata") or {}).get("deletionTimestamp") or is_terminal(new):
            self.queue.delete(new)
            return
        if self._responsible(new):
            self.queue.update(old, new)

    def _pod_delete(self, pod: Obj) -> None:
        self.groups.remove_pod(pod)
        if (pod.get("spec") or {}).get("nodeName"):
            self.cache.remove_pod(pod)
            self.queue.on_event(ClusterEvent(EventResource.AssignedPod, ActionType.Delete), pod, None)
        else:
            self.queue.delete(pod)
        self.nominator.delete_nominated_key(pod_key(pod))

    def _node_add(self, node: Obj) -> None:
        self.cache.add_node(node)
        self.queue.on_event(ClusterEvent(EventResource.Node, ActionType.Add), None, node)

    def _node_update(self, old: Obj, new: Obj) -> None:
        self.cache.update_node(new)
        for ev in node_scheduling_properties_change(new, old):
            self.queue.on_event(ev, old, new)

    def _node_delete(self, node: Obj) -> None:
        self.cache.remove_node(node)
        self.queue.on_event(ClusterEvent(EventResource.Node, ActionType.Delete), node, None)

    def _pg_add(self, pg: Obj) -> None:
        self.groups.set_group(pg)
        self.queue.on_event(ClusterEvent(gangscheduling.POD_GROUP, ActionType.Add), None, pg)

    def _pg_update(self, old: Obj, new: Obj) -> None:
        self.groups.set_group(new)
        self.queue.on_event(ClusterEvent(gangscheduling.POD_GROUP, ActionType.Update), old, new)

    def _cpg_add(self, cpg: Obj) -> None:
        self.groups.set_composite(cpg)
        self.queue.on_event(ClusterEvent(gangscheduling.COMPOSITE_POD_GROUP, ActionType.Add), None, cpg)

    def _cpg_update(self, old: Obj, new: Obj) -> None:
        self.groups.set_composite(new)
        self.queue.on_event(ClusterEvent(gangscheduling.COMPOSITE_POD_GROUP, ActionType.Update), old, new)

    def _pg_delete(self, pg: Obj) -> None:
        self.groups.remove_group(pg)
        self.group_cycle.forget_group(pg)

    def _group_ready(self, group: QueuedPodGroup) -> Optional[Status]:
        """The queue's question before it pops a group (see `members_fall_short`)."""
        rep = group.representative()
        if rep is None:
            return None
        fw = self.cycle.framework_for(rep.pod)
        return members_fall_short(fw, group, self.groups.get(group.key), len(self.cache.scheduled_in_group(group.key)))

    def _namespace_labels(self) -> dict:
        return {n["metadata"]["name"]: (n["metadata"].get("labels") or {}) for n in self.namespaces.list()}

    def _pdbs(self) -> list:
        return self.pdb_informer.list()

    def _scheduled_count(self, group_key: str) -> int:
        return len(self.cache.scheduled_in_group(group_key))

    # -- lifecycle -------------------------------------------------------------------------------
    def _informers_to_sync(self) -> list[Informer]:
        own = [i for i in (self.pods, self.nodes, self.namespaces, self.pdb_informer, self.podgroups, self.composites)
               if i is not None]
        return own + self._dra_informers + [i for i in self._plugin_informers if i not in own]

    async def run(self) -> None:
        self.factory.start()
        await self.factory.wait_for_sync(self._informers_to_sync())
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

    async def schedule_one(self, qpi: QueuedPodInfo) -> None:
        await self.pod_cycle.schedule_one(qpi)

    async def schedule_pod_group(self, group: QueuedPodGroup) -> None:
        await self.group_cycle.schedule_pod_group(group)

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
        self.calls.cancel_all()
        if self._own_factory:
            await self.factory.stop()

    async def wait_idle(self) -> None:
        """Let outstanding binding cycles and API calls finish (tests and benchmarks)."""
        await self.calls.wait_idle()


def _set_plugin_arg(profile: KubeSchedulerProfile, plugin: str, key: str, value: Any) -> None:
    for pc in profile.plugin_config:
        if pc.name == plugin:
            pc.args = dict(pc.args or {}, **{key: value})
            return
    profile.plugin_config.append(PluginConfig(plugin, {key: value}))
