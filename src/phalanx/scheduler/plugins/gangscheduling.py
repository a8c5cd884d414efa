"""GangScheduling (PreEnqueue, Permit, PlacementFeasible): a PodGroup's pods bind together or not at all.

- PreEnqueue holds a pod whose PodGroup does not exist yet, and the pods of a gang until at least
  `minCount` of them exist (upstream's messages; the scheduler shows them on the pod as
  PodScheduled=False/SchedulingGated, and `phalanx explain` adds the live count).
- PlacementFeasible, called after each pod of a group cycle: Unschedulable once `minCount` cannot
  be reached any more, Wait while it is not reached yet, Success when it is.
- Permit, for pods scheduled one by one (a late member, or profiles without group cycles): Wait
  until `minCount` pods of the group are assumed or bound, then allow the waiting ones together;
  the wait times out after `permitWaitingTimeoutSeconds` (upstream's fixed 5 minutes by default,
  configurable here through the plugin's args).
- Basic-policy groups pass everything (effective minCount 1).

Kubernetes 1.37 (the Handle's gates are of release 1.37): the plugin is PreEnqueue and
PlacementFeasible only. There is no Permit barrier, so no gang timeout (a failed group cycle backs
off as a pod does), and pods of one group with different schedulers are not held here: the group
cycle rejects the group with SchedulerError (`PodGroupCycle`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

from phalanx.scheduler.framework.cycle_state import CycleState
from phalanx.scheduler.framework.interface import (EnqueueExtensions, Handle, PermitPlugin, PlacementFeasiblePlugin,
                                                   PlacementProgress, PodGroupInfo, PreEnqueuePlugin, WaitingPod)
from phalanx.scheduler.framework.services import PodGroupLister
from phalanx.scheduler.framework.status import Code, Status
from phalanx.scheduler.framework.constants import Obj
from phalanx.scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource, QueueingHint
from phalanx.scheduler.framework.types import PodInfo

from ..cache import pod_group_key
from ..podgroups import policy_of
from ..reporting import release_of
from . import names

DEFAULT_PERMIT_TIMEOUT = 300.0
POD_GROUP = "PodGroup"
COMPOSITE_POD_GROUP = "CompositePodGroup"


class GangScheduling(PreEnqueuePlugin, PermitPlugin, PlacementFeasiblePlugin, EnqueueExtensions):
    NAME = names.GangScheduling

    def __init__(self, manager: PodGroupLister, scheduled_count: Callable[[str], int],
                 handle: Optional[Handle] = None, permit_timeout: float = DEFAULT_PERMIT_TIMEOUT):
        self.manager = manager
        self.scheduled_count = scheduled_count
        self.handle = handle
        self.permit_timeout = permit_timeout
        self.release = release_of(getattr(handle, "feature_gates", None))

    # -- PreEnqueue ------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Optional[Status]:
        g = pod_group_key(pod.pod)
        if g is None:
            return None
        pg = self.manager.get(g)
        group_name = g.split("/", 1)[1]
        if pg is None:
            return Status.new(Code.UnschedulableAndUnresolvable,
                              f'waiting for pods\'s pod group "{group_name}" to appear in scheduling queue'
                              ).with_plugin(self.NAME)
        names_used = self.manager.scheduler_names(g)
        if len(names_used) > 1 and self.release == "1.36":
            return Status.new(Code.UnschedulableAndUnresolvable,
                              f'pods of pod group "{group_name}" use different schedulers: '
                              f'{", ".join(sorted(names_used))}').with_plugin(self.NAME)
        waiting = self.manager.tree_wait_reason(g)
        if waiting is not None:  # 1.37: a leaf of a CompositePodGroup tree waits for the whole tree
            return Status.new(Code.UnschedulableAndUnresolvable, waiting).with_plugin(self.NAME)
        policy, min_count = policy_of(pg)
        if policy == "Basic" or (pg.get("spec") or {}).get("parentCompositePodGroupName"):
            return None  # a tree's leaves are counted in its quorum, above
        if self.manager.all_pods_count(g) < min_count:
            # upstream's words; `phalanx explain` adds the live count (n/minCount pods exist)
            return Status.new(Code.UnschedulableAndUnresolvable,
                              "waiting for minCount pods from a gang to appear in scheduling queue").with_plugin(self.NAME)
        return None

    # -- PlacementFeasible -------------------------------------------------------------------------
    def placement_feasible(self, state: CycleState, pod_group: PodGroupInfo,
                           progress: PlacementProgress) -> Optional[Status]:
        pg = pod_group.pod_group or self.manager.get(pod_group.key)
        if pg is None:
            return Status.new(Code.UnschedulableAndUnresolvable, "pod group not found").with_plugin(self.NAME)
        _, min_count = policy_of(pg)
        if progress.scheduled + progress.remaining < min_count:
            return Status.new(Code.Unschedulable,
                              f"minCount ({min_count}) cannot be satisfied: {progress.scheduled} scheduled, "
                              f"{progress.remaining} remaining").with_plugin(self.NAME)
        if progress.scheduled < min_count:
            return Status.new(Code.Wait,
                              f"minCount ({min_count}) is not yet satisfied: {progress.scheduled} scheduled, "
                              f"{progress.remaining} remaining").with_plugin(self.NAME)
        return None

    # -- Permit ------------------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Optional[Status], float]:
        g = pod_group_key(pod.pod)
        if g is None or self.release != "1.36":  # 1.37: no Permit barrier, no gang timeout
            return None, 0
        pg = self.manager.get(g)
        if pg is None:
            return None, 0
        policy, min_count = policy_of(pg)
        if policy == "Basic":
            return None, 0
        if self.scheduled_count(g) >= min_count:
            self._allow_group(g)
            return None, 0
        return (Status.new(Code.Wait, "waiting for minCount pods from a gang to be scheduled").with_plugin(self.NAME),
                self.permit_timeout)

    def _allow_group(self, g: str) -> None:
        if self.handle is None:
            return

        def allow(wp: WaitingPod) -> None:
            if pod_group_key(wp.pod) == g:
                wp.allow(self.NAME)
        self.handle.iterate_over_waiting_pods(allow)

    # -- events ------------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.UnscheduledPod, ActionType.Add), self._same_group_pod),
            ClusterEventWithHint(ClusterEvent(EventResource.AssignedPod, ActionType.Add), self._same_group_pod),
            ClusterEventWithHint(ClusterEvent(POD_GROUP, ActionType.Add), self._own_group),
            ClusterEventWithHint(ClusterEvent(POD_GROUP, ActionType.Update), self._min_count_decreased),
            ClusterEventWithHint(ClusterEvent(COMPOSITE_POD_GROUP, ActionType.Add), self._in_a_tree),
            ClusterEventWithHint(ClusterEvent(COMPOSITE_POD_GROUP, ActionType.Update), self._in_a_tree),
        ]

    def _same_group_pod(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        """A new pod of the group helps a gated member only once the group has minCount pods
        (otherwise every arrival would re-run PreEnqueue for every waiting member)."""
        g = pod_group_key(pod)
        other = pod_group_key(new) if new is not None else None
        if g is not None and other is not None and other != g and self.manager.same_tree(g, other):
            return QueueingHint.Queue  # a pod of a sibling leaf: the tree's quorum may be met now
        if g is None or new is None or other != g:
            return QueueingHint.QueueSkip
        pg = self.manager.get(g)
        if pg is not None:
            policy, min_count = policy_of(pg)
            if policy == "Gang" and self.manager.all_pods_count(g) < min_count:
                return QueueingHint.QueueSkip
        return QueueingHint.Queue

    def _own_group(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        g = pod_group_key(pod)
        md = (new or {}).get("metadata") or {}
        added = f"{md.get('namespace', '')}/{md.get('name')}"
        if g == added or (g is not None and self.manager.same_tree(g, added)):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def _in_a_tree(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        """A CompositePodGroup appeared or changed: pods of a PodGroup with a parent may have a
        complete tree now."""
        g = pod_group_key(pod)
        pg = self.manager.get(g) if g is not None else None
        has_parent = bool(((pg or {}).get("spec") or {}).get("parentCompositePodGroupName"))
        return QueueingHint.Queue if has_parent else QueueingHint.QueueSkip

    def _min_count_decreased(self, pod: Obj, old: Optional[Obj], new: Optional[Obj]) -> QueueingHint:
        if self._own_group(pod, old, new) != QueueingHint.Queue:
            return QueueingHint.QueueSkip
        return QueueingHint.Queue if policy_of(new or {})[1] < policy_of(old or {})[1] else QueueingHint.QueueSkip


def new(args: Optional[Mapping[str, Any]], handle: Handle) -> GangScheduling:
    """The plugin on the Handle's PodGroup lister (which also counts the scheduled pods)."""
    pod_groups = handle.pod_group_lister()
    if pod_groups is None:
        raise ValueError("GangScheduling needs the scheduler's PodGroup lister")
    timeout = float((args or {}).get("permitWaitingTimeoutSeconds", DEFAULT_PERMIT_TIMEOUT))
    return GangScheduling(pod_groups, pod_groups.scheduled_count, handle, timeout)
