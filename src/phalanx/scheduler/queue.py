"""The scheduling queue: pods and pod groups waiting for a scheduling cycle.

As upstream's `backend/queue`, it keeps

- **activeQ**: entities ready to be scheduled, ordered by the profile's QueueSort (priority, then
  the time they were first queued);
- **backoffQ**: entities that failed and wait out their backoff (1 s doubling to 10 s per attempt,
  upstream's defaults) before returning to activeQ;
- **unschedulable**: entities no cluster change has yet made worth retrying; a cluster event moves
  an entity out when one of the plugins that rejected it registered that event and its queueing
  hint answers Queue; after 5 minutes an entity is retried anyway;
- **gated**: pods a PreEnqueue plugin refused (scheduling gates, a gang still missing members);
  they are re-checked on the events their gating plugin registered.

An entity is a single pod (`QueuedPodInfo`) or a pod group (`QueuedPodGroup`, 1.36's workload
scheduling cycle): pods of a PodGroup never sit in activeQ themselves; once a member passes
PreEnqueue it joins its group's entity, and the group is popped and scheduled as one unit. In a
CompositePodGroup tree (1.37) the entity is the tree's root: `group_of` maps a leaf PodGroup to it,
and the entity holds the pods of every leaf.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Union

from .cache import pod_group_key, pod_key
from .framework.events import ClusterEvent, QueueingHint, match_cluster_events
from .framework.types import PodInfo, QueuedPodInfo

log = logging.getLogger("phalanx.scheduler.queue")

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_IN_UNSCHEDULABLE = 300.0
# A pod held by a PreEnqueue plugin shows why (PodScheduled=False, SchedulingGated) only once it has
# been held this long with that message: KEP-5501's delay for transient rejections (a gang whose
# members are still being created, a claim not in the cache yet).
GATE_REPORT_DELAY = 5.0


@dataclass
class QueuedPodGroup:
    """A PodGroup as one queue entity: its members that passed PreEnqueue."""

    key: str  # namespace/name
    members: dict[str, QueuedPodInfo] = field(default_factory=dict)
    timestamp: float = 0.0
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]

    def representative(self) -> Optional[QueuedPodInfo]:
        if not self.members:
            return None
        return max(self.members.values(), key=lambda q: (q.pod_info.priority, -q.timestamp))


Entity = Union[QueuedPodInfo, QueuedPodGroup]


def entity_key(e: Entity) -> str:
    return ("group:" + e.key) if isinstance(e, QueuedPodGroup) else e.pod_info.key


class _Ordered:
    __slots__ = ("entity", "less", "seq")

    def __init__(self, entity: Entity, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool], seq: int):
        self.entity = entity
        self.less = less
        self.seq = seq

    def _qpi(self) -> QueuedPodInfo:
        e = self.entity
        if isinstance(e, QueuedPodGroup):
            rep = e.representative()
            return QueuedPodInfo(rep.pod_info, timestamp=e.timestamp) if rep else QueuedPodInfo(PodInfo({}))
        return e

    def __lt__(self, other: "_Ordered") -> bool:
        a, b = self._qpi(), other._qpi()
        if self.less(a, b):
            return True
        if self.less(b, a):
            return False
        return self.seq < other.seq


class SchedulingQueue:
    def __init__(self, framework: Any, clock: Any, *, group_cycles: bool = True):
        self.fw = framework
        self.group_cycles = group_cycles  # False: gang pods queue one by one (1.35's Permit path)
        self.clock = clock
        self._seq = itertools.count()
        self._active: list[_Ordered] = []
        self._active_keys: set[str] = set()
        self._backoff: list[tuple[float, int, Entity]] = []
        self._backoff_keys: set[str] = set()
        self.unschedulable: dict[str, tuple[Entity, float]] = {}
        self.gated: dict[str, QueuedPodInfo] = {}
        self._gated_by_plugin: dict[str, dict[str, QueuedPodInfo]] = {}  # gating plugin -> key -> pod
        self._interest_cache: dict[tuple, dict[str, tuple]] = {}  # (resource, action) -> plugin -> hints
        self.groups: dict[str, QueuedPodGroup] = {}  # group key -> entity (wherever it is)
        self.in_flight: set[str] = set()
        self._pods: dict[str, QueuedPodInfo] = {}  # every queued pod by key
        self._wakeup = asyncio.Event()
        self.move_request_cycle = 0
        self.scheduling_cycle = 0
        self._closed = False
        self._events_during: dict[str, int] = {}
        # Called when a pod is gated with a new message (the scheduler makes it visible on the pod).
        self.on_gated: Callable[[QueuedPodInfo, Any], None] | None = None
        # Asked before a pod group is popped: a Status when its members cannot make a cycle worth
        # running yet (a gang with fewer than minCount pods past PreEnqueue); None when they can.
        self.group_ready: Callable[[QueuedPodGroup], Any] | None = None
        self._gate_messages: dict[str, str] = {}  # pod key -> the gating message shown on the pod
        # Gating messages not shown yet: shown only if the pod is still held by then (KEP-5501's
        # delayed dispatch), so the members of a gang that assembles at once are not each written.
        self._gate_reports: list[tuple[float, int, str, str]] = []  # heap of (due, seq, pod key, message)
        # The entity a PodGroup's pods join: the group itself, or the root of its CompositePodGroup tree.
        self.group_of: Callable[[str], str] | None = None

    # -- bookkeeping -----------------------------------------------------------------------------
    def _less(self) -> Callable[[QueuedPodInfo, QueuedPodInfo], bool]:
        return self.fw.queue_sort_less

    def _push_active(self, e: Entity) -> None:
        k = entity_key(e)
        if k in self._active_keys or k in self.in_flight:
            return
        self._remove_elsewhere(k)
        heapq.heappush(self._active, _Ordered(e, self._less(), next(self._seq)))
        self._active_keys.add(k)
        self._wakeup.set()

    def _push_backoff(self, e: Entity) -> None:
        k = entity_key(e)
        if k in self._active_keys or k in self._backoff_keys:
            return
        self._remove_elsewhere(k)
        attempts = max(1, e.attempts)
        delay = min(MAX_BACKOFF, INITIAL_BACKOFF * (2 ** (attempts - 1)))
        heapq.heappush(self._backoff, (self.clock.now() + delay, next(self._seq), e))
        self._backoff_keys.add(k)
        self._wakeup.set()

    def _remove_elsewhere(self, k: str) -> None:
        self.unschedulable.pop(k, None)

    def __len__(self) -> int:
        return len(self._active_keys) + len(self._backoff_keys) + len(self.unschedulable) + len(self.gated)

    def pending(self) -> dict[str, int]:
        return {"active": len(self._active_keys), "backoff": len(self._backoff_keys),
                "unschedulable": len(self.unschedulable), "gated": len(self.gated)}

    def pending_pods(self) -> dict[tuple[str, ...], float]:
        """Pods (a group counts its members) by queue: `scheduler_pending_pods`, read when scraped."""
        def size(e: Entity) -> int:
            return len(e.members) if isinstance(e, QueuedPodGroup) else 1
        active = sum(size(item.entity) for item in self._active if entity_key(item.entity) in self._active_keys)
        return {("active",): active, ("backoff",): sum(size(e) for _, _, e in self._backoff),
                ("unschedulable",): sum(size(e) for e, _ in self.unschedulable.values()),
                ("gated",): len(self.gated)}

    # -- pods arriving and leaving ---------------------------------------------------------------
    def add(self, pod: dict) -> None:
        """A new unscheduled pod (or one seen again after a relist)."""
        pi = PodInfo(pod)
        qpi = self._pods.get(pi.key)
        if qpi is None:
            qpi = QueuedPodInfo(pi, timestamp=self.clock.now())
            qpi.initial_attempt_timestamp = qpi.timestamp
            self._pods[pi.key] = qpi
        else:
            qpi.pod_info = pi
        self._admit(qpi)

    def _admit(self, qpi: QueuedPodInfo) -> None:
        """Run PreEnqueue; gate, or join the pod's group, or queue the pod itself."""
        st = self.fw.run_pre_enqueue_plugins(qpi.pod_info)
        key = qpi.pod_info.key
        if st is not None and not st.is_success():
            self._ungate(key)
            qpi.gating_plugin = st.plugin or ""
            self.gated[key] = qpi
            self._gated_by_plugin.setdefault(qpi.gating_plugin, {})[key] = qpi
            qpi.gate_status = st
            msg = st.message()
            if self.on_gated is not None and self._gate_messages.get(key) != msg:
                heapq.heappush(self._gate_reports, (self.clock.now() + GATE_REPORT_DELAY, next(self._seq), key, msg))
                self._wakeup.set()
            return
        self._ungate(key)
        self._gate_messages.pop(key, None)
        qpi.gating_plugin = ""
        qpi.gate_status = None
        gk = self._entity_of(qpi.pod) if self.group_cycles else None
        if gk is None:
            if key not in self._active_keys and key not in self._backoff_keys and key not in self.in_flight \
                    and key not in self.unschedulable:
                self._push_active(qpi)
            return
        group = self.groups.get(gk)
        if group is None:
            group = self.groups[gk] = QueuedPodGroup(gk, timestamp=qpi.timestamp)
        group.members[key] = qpi
        gkey = entity_key(group)
        if gkey in self.in_flight or gkey in self._active_keys or gkey in self._backoff_keys:
            return
        if gkey in self.unschedulable:
            # A member just passed PreEnqueue: for its group that is a new pod (GangScheduling's
            # pod-Add hint), so the group is worth another cycle.
            e, _ = self.unschedulable.pop(gkey)
            self._push_backoff(e) if e.attempts > 1 else self._push_active(e)
            return
        self._push_active(group)

    def _entity_of(self, pod: dict) -> Optional[str]:
        """The group entity key a pod joins (its PodGroup, or that group's tree root), or None."""
        gk = pod_group_key(pod)
        if gk is not None and self.group_of is not None:
            return self.group_of(gk)
        return gk

    def _ungate(self, key: str) -> None:
        qpi = self.gated.pop(key, None)
        if qpi is not None:
            by_key = self._gated_by_plugin.get(qpi.gating_plugin)
            if by_key is not None:
                by_key.pop(key, None)
                if not by_key:
                    del self._gated_by_plugin[qpi.gating_plugin]

    def update(self, old: dict, new: dict) -> None:
        key = pod_key(new)
        qpi = self._pods.get(key)
        if qpi is None:
            self.add(new)
            return
        qpi.pod_info = PodInfo(new)
        gk = self._entity_of(new)
        if gk is not None and gk in self.groups and key in self.groups[gk].members:
            self.groups[gk].members[key] = qpi
        if key in self.gated:
            self._admit(qpi)

    def delete(self, pod: dict) -> None:
        key = pod_key(pod)
        self._pods.pop(key, None)
        self._ungate(key)
        self._gate_messages.pop(key, None)
        self.unschedulable.pop(key, None)
        self._active_keys.discard(key)  # lazily dropped from the heap at pop
        self._backoff_keys.discard(key)
        for gk in {self._entity_of(pod), pod_group_key(pod)}:  # the tree it joined may have changed since
            if gk is not None and gk in self.groups:
                g = self.groups[gk]
                g.members.pop(key, None)
                if not g.members and entity_key(g) not in self.in_flight:
                    self._drop_group(g)

    def _drop_group(self, g: QueuedPodGroup) -> None:
        k = entity_key(g)
        self.groups.pop(g.key, None)
        self._active_keys.discard(k)
        self._backoff_keys.discard(k)
        self.unschedulable.pop(k, None)

    def assigned(self, pod: dict) -> None:
        """The pod got a node (bound by us or by someone else): it leaves the queue."""
        self.delete(pod)

    # -- the scheduling loop's side --------------------------------------------------------------
    def _flush_backoff(self) -> None:
        now = self.clock.now()
        while self._backoff and self._backoff[0][0] <= now:
            _, _, e = heapq.heappop(self._backoff)
            k = entity_key(e)
            if k not in self._backoff_keys:
                continue
            self._backoff_keys.discard(k)
            if isinstance(e, QueuedPodGroup) and not e.members:
                self._drop_group(e)
                continue
            self._push_active(e)

    def _flush_unschedulable(self) -> None:
        now = self.clock.now()
        for k, (e, since) in list(self.unschedulable.items()):
            if now - since >= MAX_IN_UNSCHEDULABLE:
                del self.unschedulable[k]
                self._push_backoff(e)

    def _flush_gate_reports(self) -> None:
        """Show the gating messages that are due on the pods still held with them."""
        now = self.clock.now()
        while self._gate_reports and self._gate_reports[0][0] <= now:
            _, _, key, msg = heapq.heappop(self._gate_reports)
            qpi = self.gated.get(key)
            st = qpi.gate_status if qpi is not None else None
            if qpi is None or st is None or st.message() != msg or self._gate_messages.get(key) == msg \
                    or self.on_gated is None:
                continue  # admitted, gone, or held for another reason meanwhile
            self._gate_messages[key] = msg
            self.on_gated(qpi, st)

    def _next_wakeup(self) -> float | None:
        t = [self._backoff[0][0]] if self._backoff else []
        if self._gate_reports:
            t.append(self._gate_reports[0][0])
        if self.unschedulable:
            t.append(min(since for _, since in self.unschedulable.values()) + MAX_IN_UNSCHEDULABLE)
        return min(t) if t else None

    async def pop(self) -> Entity | None:
        while not self._closed:
            self._flush_backoff()
            self._flush_gate_reports()
            while self._active:
                item = heapq.heappop(self._active)
                e = item.entity
                k = entity_key(e)
                if k not in self._active_keys:
                    continue  # deleted while queued
                self._active_keys.discard(k)
                if isinstance(e, QueuedPodGroup):
                    if not e.members:
                        self._drop_group(e)
                        continue
                    if self._wait_for_members(e):
                        continue
                e.attempts += 1
                self.in_flight.add(k)
                self.scheduling_cycle += 1
                self._events_during[k] = self.move_request_cycle
                return e
            self._wakeup.clear()
            nxt = self._next_wakeup()
            if nxt is None:
                await self._wakeup.wait()
                continue
            delay = max(0.0, nxt - self.clock.now())
            waiter = asyncio.ensure_future(self._wakeup.wait())
            sleeper = asyncio.ensure_future(self.clock.sleep(delay))
            done, pending = await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
            for t in pending:
                t.cancel()
            self._flush_unschedulable()
        return None

    def _wait_for_members(self, group: QueuedPodGroup) -> bool:
        """Park a group whose members cannot make a cycle worth running yet (upstream's gang
        PreEnqueue holds such pods; here some of them are held by another PreEnqueue plugin, e.g.
        a claim not created yet). Not an attempt and not a failure: no backoff, no event; the
        group returns to activeQ when another member passes PreEnqueue or a hint of the plugin
        that held it fires."""
        if self.group_ready is None:
            return False
        st = self.group_ready(group)
        if st is None:
            return False
        plugin = getattr(st, "plugin", None)
        group.unschedulable_plugins = {plugin} if plugin else set()
        self.unschedulable[entity_key(group)] = (group, self.clock.now())
        return True

    def done(self, e: Entity) -> None:
        """The cycle for `e` finished (successfully or not)."""
        k = entity_key(e)
        self.in_flight.discard(k)
        self._events_during.pop(k, None)
        if isinstance(e, QueuedPodGroup):
            if not e.members:
                self._drop_group(e)
            elif k not in self._active_keys and k not in self._backoff_keys and k not in self.unschedulable:
                # members that joined during the cycle and were not scheduled by it
                self._push_active(e)

    def requeue(self, e: Entity, plugins: Iterable[str], *, error: bool = False) -> None:
        """A failed cycle: back to unschedulable (to wait for a relevant event) or to backoff."""
        k = entity_key(e)
        seen_events = self.move_request_cycle > self._events_during.get(k, self.move_request_cycle)
        self.in_flight.discard(k)
        self._events_during.pop(k, None)
        if isinstance(e, QueuedPodGroup) and not e.members:
            self._drop_group(e)
            return
        e.unschedulable_plugins = set(plugins)
        if error or seen_events or not e.unschedulable_plugins:
            self._push_backoff(e)
        else:
            self.unschedulable[k] = (e, self.clock.now())

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()

    # -- cluster events -----------------------------------------------------------------------
    def on_event(self, event: ClusterEvent, old: Optional[dict], new: Optional[dict]) -> None:
        """Move gated and unschedulable entities a cluster change may help (queueing hints)."""
        self.move_request_cycle += 1
        if not self.gated and not self.unschedulable:
            return
        interest = self._interest(self._registered(), event)  # plugins with a registration this event matches
        self._admit_gated(interest, old, new)
        self._move_unschedulable(interest, old, new)

    def _admit_gated(self, interest: dict[str, tuple], old: Optional[dict], new: Optional[dict]) -> None:
        for plugin, by_key in list(self._gated_by_plugin.items()):
            if plugin and plugin not in interest:
                continue  # no hint of the gating plugin can fire: skip its pods without a look
            hints = interest.get(plugin, ())
            for key, qpi in list(by_key.items()):
                if not plugin or self._run_hints(plugin, hints, qpi.pod, old, new):
                    self._admit(qpi)

    def _move_unschedulable(self, interest: dict[str, tuple], old: Optional[dict], new: Optional[dict]) -> None:
        for key, (e, _) in list(self.unschedulable.items()):
            plugins = e.unschedulable_plugins
            if not any(pl in interest or not pl for pl in plugins):
                continue
            pods = [q.pod for q in e.members.values()] if isinstance(e, QueuedPodGroup) else [e.pod]
            pod = pods[0] if pods else {}
            if any(not pl or (pl in interest and self._run_hints(pl, interest[pl], pod, old, new)) for pl in plugins):
                del self.unschedulable[key]
                self._push_backoff(e) if e.attempts > 1 else self._push_active(e)

    @staticmethod
    def _run_hints(plugin: str, hints: tuple, pod: dict, old, new) -> bool:
        """Whether any of `plugin`'s hints registered for this event says Queue."""
        for ewh in hints:
            fn = ewh.queueing_hint_fn
            if fn is None:
                return True
            try:
                if fn(pod, old, new) == QueueingHint.Queue:
                    return True
            except Exception:  # a hint that fails means "queue", as upstream
                log.exception("queueing hint of %s", plugin)
                return True
        return False

    def _interest(self, registered: dict, event: ClusterEvent) -> dict[str, tuple]:
        key = (event.resource, int(event.action_type))
        out = self._interest_cache.get(key)
        if out is None:
            out = self._interest_cache[key] = {
                plugin: tuple(e for e in ewhs if match_cluster_events(e.event, event))
                for plugin, ewhs in registered.items() if any(match_cluster_events(e.event, event) for e in ewhs)}
        return out

    def _registered(self) -> dict:
        reg = getattr(self, "_registered_cache", None)
        if reg is None:
            reg = self._registered_cache = self.fw.events_to_register()
        return reg

    def activate(self, pods: Iterable[dict]) -> None:
        """Move these pods' entities to activeQ (used by plugins such as GangScheduling)."""
        for pod in pods:
            key = pod_key(pod)
            gk = pod_group_key(pod) if self.group_cycles else None
            if gk is not None and gk in self.groups:
                g = self.groups[gk]
                k = entity_key(g)
                if k in self.unschedulable or k in self._backoff_keys:
                    self._backoff_keys.discard(k)
                    self.unschedulable.pop(k, None)
                    self._push_active(g)
                continue
            qpi = self._pods.get(key)
            if qpi is None:
                continue
            if key in self.unschedulable or key in self._backoff_keys:
                self._backoff_keys.discard(key)
                self.unschedulable.pop(key, None)
                self._push_active(qpi)
            elif key in self.gated:
                self._admit(qpi)
