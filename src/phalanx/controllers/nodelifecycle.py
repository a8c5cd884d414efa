"""The node lifecycle controller: kube-controller-manager's `node-lifecycle-controller`, which notices
nodes whose kubelet stopped posting and taints them so that pods leave.

    NodeLifecycleController(client, factory, config=NodeLifecycleConfig(node_monitor_grace_period=4),
                            clock=clock).start()

What it does, as upstream does:

- **Health** (every `node_monitor_period`, 5 s): a node's kubelet is alive while its Lease in
  `kube-node-lease` is renewed or its Ready condition's `lastHeartbeatTime` moves. A node not heard
  of for `node_monitor_grace_period` (50 s; `node_startup_grace_period`, 60 s, for a node that never
  posted Ready) gets Ready, MemoryPressure, DiskPressure and PIDPressure `Unknown` with reason
  `NodeStatusUnknown`, "Kubelet stopped posting node status." (`NodeStatusNeverUpdated`, "Kubelet
  never posted node status.", for a condition that was missing), the event `NodeNotReady` ("Node X
  status is now: NodeNotReady") and its pods' Ready condition False with a Warning `NodeNotReady`
  ("Node is not ready") on each.
- **NoSchedule taints** (on every node change): Ready False -> `node.kubernetes.io/not-ready`,
  Ready Unknown -> `node.kubernetes.io/unreachable`, MemoryPressure/DiskPressure/PIDPressure/
  NetworkUnavailable True -> `memory-pressure`/`disk-pressure`/`pid-pressure`/`network-unavailable`,
  `spec.unschedulable` -> `node.kubernetes.io/unschedulable`; each removed once its reason is gone.
- **NoExecute taints**, rate limited per zone (`topology.kubernetes.io/region` + `zone` labels):
  a node seen Ready=False gets `not-ready:NoExecute`, one seen Unknown `unreachable:NoExecute`
  (swapped at once when it has the other), through a token bucket of `node_eviction_rate` (0.1/s)
  with burst 1. A zone with no Ready node is in FullDisruption (normal rate); one with more than 2
  and at least `unhealthy_zone_threshold` (55 %) of its nodes not Ready is in PartialDisruption
  (`secondary_node_eviction_rate`, 0.01/s, when the zone has more than `large_cluster_size_threshold`
  nodes, else 0: no new taints); when every zone is fully disrupted, no node is tainted NoExecute at
  all and existing NoExecute taints are removed ("master disruption mode"). Nodes labelled
  `node.kubernetes.io/exclude-disruption` do not count. A Ready node loses both NoExecute taints.
- Events (component `node-controller`): `RegisteredNode` for each node when the controller first
  sees it, `RemovingNode` when it is gone, `NodeNotReady` as above.

The taint eviction controller (`controllers/tainteviction.py`) then deletes the pods that do not
tolerate the NoExecute taints. Restart-safe: health is read from the API (Lease `renewTime`,
condition heartbeats); the controller's start time counts as a heartbeat, so a restarted control
plane gives every node a fresh grace period, as a restarted upstream controller does. Rate limiter
queues and zone states are rebuilt from the nodes on the first pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from ..api.faults import (TAINT_NODE_DISK_PRESSURE, TAINT_NODE_MEMORY_PRESSURE, TAINT_NODE_NETWORK_UNAVAILABLE,
                          TAINT_NODE_NOT_READY, TAINT_NODE_PID_PRESSURE, TAINT_NODE_UNREACHABLE,
                          TAINT_NODE_UNSCHEDULABLE)
from ..client.clock import to_datetime
from ..client.controller import Controller
from ..client.informer import InformerFactory, index_pod_by_node_name
from ..client.interface import Client
from ..client.retry import retry_on_conflict
from ..machinery.errors import StatusError, not_found_error
from ..machinery.meta import deep_copy
from ..machinery.timestamps import now_rfc3339, rfc3339_seconds
from .evictionqueue import RateLimitedTimedQueue

Obj = dict[str, Any]

EVENT_COMPONENT = "node-controller"
LEASE_NAMESPACE = "kube-node-lease"
MONITOR_KEY = "monitor"
TAINT_KEY = "noexecute"
NODE_PREFIX = "node/"
EXCLUDE_DISRUPTION_LABEL = "node.kubernetes.io/exclude-disruption"
ZONE_LABEL, REGION_LABEL = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"

STATE_INITIAL, STATE_NORMAL = "Initial", "Normal"
STATE_FULL, STATE_PARTIAL = "FullDisruption", "PartialDisruption"

# The kubelet's conditions that turn Unknown when it stops posting (NetworkUnavailable does not).
MONITORED_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")

# NodeConditionType -> {status: taint key}, upstream's nodeConditionToTaintKeyStatusMap.
CONDITION_TAINTS = {
    "Ready": {"False": TAINT_NODE_NOT_READY, "Unknown": TAINT_NODE_UNREACHABLE},
    "MemoryPressure": {"True": TAINT_NODE_MEMORY_PRESSURE},
    "DiskPressure": {"True": TAINT_NODE_DISK_PRESSURE},
    "NetworkUnavailable": {"True": TAINT_NODE_NETWORK_UNAVAILABLE},
    "PIDPressure": {"True": TAINT_NODE_PID_PRESSURE},
}
CONDITION_TAINT_KEYS = {key for by_status in CONDITION_TAINTS.values() for key in by_status.values()}


@dataclass
class NodeLifecycleConfig:
    """kube-controller-manager's flags for this controller, with upstream's 1.36 defaults."""

    node_monitor_period: float = 5.0
    node_monitor_grace_period: float = 50.0
    node_startup_grace_period: float = 60.0
    node_eviction_rate: float = 0.1
    secondary_node_eviction_rate: float = 0.01
    large_cluster_size_threshold: int = 50
    unhealthy_zone_threshold: float = 0.55


def condition(node: Obj, kind: str) -> Obj | None:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c
    return None


def zone_key(node: Obj) -> str:
    """upstream's GetZoneKey: region and zone labels, "" when the node has neither."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    region, zone = labels.get(REGION_LABEL, ""), labels.get(ZONE_LABEL, "")
    return f"{region}:\x00:{zone}" if region or zone else ""


def zone_state(ready_statuses: Iterable[str | None], unhealthy_threshold: float) -> tuple[int, str]:
    """(not-Ready nodes, state) of a zone from its nodes' Ready statuses (ComputeZoneState)."""
    ready = not_ready = 0
    for status in ready_statuses:
        if status == "True":
            ready += 1
        else:
            not_ready += 1
    if ready == 0 and not_ready > 0:
        return not_ready, STATE_FULL
    if not_ready > 2 and not_ready / (not_ready + ready) >= unhealthy_threshold:
        return not_ready, STATE_PARTIAL
    return not_ready, STATE_NORMAL


def no_schedule_taints(node: Obj) -> list[Obj]:
    """The NoSchedule taints the node's conditions and `spec.unschedulable` call for."""
    taints = []
    for c in (node.get("status") or {}).get("conditions") or []:
        key = CONDITION_TAINTS.get(c.get("type"), {}).get(c.get("status"))
        if key:
            taints.append({"key": key, "effect": "NoSchedule"})
    if (node.get("spec") or {}).get("unschedulable"):
        taints.append({"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"})
    return taints


def _has_taint(node: Obj, key: str, effect: str) -> bool:
    return any(t.get("key") == key and t.get("effect") == effect for t in (node.get("spec") or {}).get("taints") or [])


def _matches(a: Obj, b: Obj) -> bool:
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def swapped_taints(taints: list[Obj], add: list[Obj], remove: list[Obj]) -> list[Obj]:
    """`taints` with `add` added or replacing the taint of the same key and effect in place (one
    that differs only in `timeAdded` is kept as it is), then `remove` dropped."""
    out = list(taints)
    for t in add:
        i = next((i for i, old in enumerate(out) if _matches(old, t)), None)
        if i is None:
            out.append(t)
        elif {k: v for k, v in out[i].items() if k != "timeAdded"} != {k: v for k, v in t.items() if k != "timeAdded"}:
            out[i] = t
    return [t for t in out if not any(_matches(t, r) for r in remove)]


def _pod_ready_true(pod: Obj) -> bool:
    c = condition(pod, "Ready")
    return c is not None and c.get("status") != "False"


class NodeLifecycleController(Controller[str]):
    name = "node-lifecycle-controller"

    def __init__(self, client: Client, factory: InformerFactory | None = None, *,
                 config: NodeLifecycleConfig | None = None, events: bool = True, **kw: Any):
        super().__init__(client, factory, **kw)
        self.config = config or NodeLifecycleConfig()
        self.events = events
        self.nodes = self.informer("v1", "Node")
        self.leases = self.informer("coordination.k8s.io/v1", "Lease", namespace=LEASE_NAMESPACE)
        self.pods = self.informer("v1", "Pod")
        self.pods.add_indexer("spec.nodeName", index_pod_by_node_name)
        self.nodes.add_event_handler(on_add=self._node_changed, on_update=lambda o, n: self._node_changed(n))
        self.started_at: float | None = None
        self.known_nodes: dict[str, str] = {}  # name -> uid: nodes this controller has registered
        self.zone_states: dict[str, str] = {}
        self.tainters: dict[str, RateLimitedTimedQueue] = {}

    def _node_changed(self, node: Obj) -> None:
        self.queue.add(NODE_PREFIX + node["metadata"]["name"])

    async def setup(self) -> None:
        self.started_at = self.clock.now()
        self.queue.add(MONITOR_KEY)

    async def sync(self, key: str) -> None:
        if key == MONITOR_KEY:
            try:
                await self.monitor_node_health()
            finally:
                self.enqueue_after(MONITOR_KEY, self.config.node_monitor_period)
        elif key == TAINT_KEY:
            await self.no_execute_tainting_pass()
        elif key.startswith(NODE_PREFIX):
            await self.no_schedule_tainting_pass(key[len(NODE_PREFIX):])

    # -- events --------------------------------------------------------------------------------
    async def _event(self, regarding: Obj, reason: str, message: str, type: str = "Normal") -> None:
        if not self.events:
            return
        try:
            await self.client.create_event(regarding, reason, message, type=type, component=EVENT_COMPONENT)
        except StatusError as e:  # best effort, as upstream's recorder
            self.log.debug("event %s: %s", reason, e)

    async def _node_event(self, name: str, uid: str, reason: str, what: str) -> None:
        """upstream's RecordNodeEvent: "Node <name> event: <what>"."""
        await self._event({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}}, reason,
                          f"Node {name} event: {what}")

    # -- health --------------------------------------------------------------------------------
    def _now(self) -> str:
        return now_rfc3339(to_datetime(self.clock.now()))

    def probe_time(self, node: Obj) -> tuple[float, float]:
        """(last time the kubelet was heard of, grace period) for the node."""
        name = node["metadata"]["name"]
        ready = condition(node, "Ready")
        heard = [self.started_at or self.clock.now()]
        if ready is None:
            grace = self.config.node_startup_grace_period
            heard.append(rfc3339_seconds(node["metadata"].get("creationTimestamp")) or 0.0)
        else:
            grace = self.config.node_monitor_grace_period
            heard.append(rfc3339_seconds(ready.get("lastHeartbeatTime")) or 0.0)
        lease = self.leases.get(f"{LEASE_NAMESPACE}/{name}")
        if lease is not None:
            heard.append(rfc3339_seconds((lease.get("spec") or {}).get("renewTime")) or 0.0)
        return max(heard), grace

    def unknown_status(self, node: Obj) -> Obj | None:
        """The node's status with the kubelet's conditions Unknown, when it was not heard of within
        its grace period and Ready is not Unknown yet; None otherwise."""
        heard, grace = self.probe_time(node)
        if self.clock.now() <= heard + grace:
            return None
        ready = condition(node, "Ready")
        if ready is not None and ready.get("status") == "Unknown":
            return None
        now = self._now()
        status = deep_copy(node.get("status") or {})
        conditions = status.setdefault("conditions", [])
        for kind in MONITORED_CONDITIONS:
            current = next((c for c in conditions if c.get("type") == kind), None)
            if current is None:
                conditions.append({"type": kind, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                                   "message": "Kubelet never posted node status.",
                                   "lastHeartbeatTime": node["metadata"].get("creationTimestamp"),
                                   "lastTransitionTime": now})
            elif current.get("status") != "Unknown":
                current.update(status="Unknown", reason="NodeStatusUnknown",
                               message="Kubelet stopped posting node status.", lastTransitionTime=now)
        return status

    async def monitor_node_health(self) -> None:
        nodes = self.nodes.list()
        await self._register(nodes)
        zones: dict[str, list[str | None]] = {}
        for node in nodes:
            observed = (condition(node, "Ready") or {}).get("status")
            current = await self._update_health(node, observed)
            if EXCLUDE_DISRUPTION_LABEL not in ((node["metadata"].get("labels")) or {}):
                zones.setdefault(zone_key(node), []).append(current)
            await self.process_taint_based_eviction(node, observed)
            if current != "True" and observed == "True":
                await self._event({"apiVersion": "v1", "kind": "Node", "metadata": node["metadata"]},
                                  "NodeNotReady", f"Node {node['metadata']['name']} status is now: NodeNotReady")
            if current == "Unknown":
                await self.mark_pods_not_ready(node["metadata"]["name"])
        await self.handle_disruption(zones, nodes)
        self._schedule_tainting()

    async def _update_health(self, node: Obj, observed: str | None) -> str | None:
        """Write Unknown conditions when the node's kubelet went silent; the Ready status now."""
        status = self.unknown_status(node)
        if status is None:
            return observed
        new = {"apiVersion": "v1", "kind": "Node", "metadata": dict(node["metadata"]), "spec": node.get("spec") or {},
               "status": status}
        try:
            await self.client.update_status(new)
        except StatusError as e:
            if e.code in (404, 409):
                return observed  # gone or changed: the next pass looks again
            raise
        return "Unknown"

    async def _register(self, nodes: list[Obj]) -> None:
        names = {n["metadata"]["name"] for n in nodes}
        for node in nodes:
            md = node["metadata"]
            if md["name"] not in self.known_nodes:
                self.known_nodes[md["name"]] = md.get("uid", "")
                self._tainter(zone_key(node))
                await self._node_event(md["name"], md.get("uid", ""), "RegisteredNode",
                                       f"Registered Node {md['name']} in Controller")
            elif zone_key(node) not in self.tainters:
                self._tainter(zone_key(node))
        for name in [n for n in self.known_nodes if n not in names]:
            uid = self.known_nodes.pop(name)
            await self._node_event(name, uid, "RemovingNode", f"Removing Node {name} from Controller")

    def _tainter(self, zone: str) -> RateLimitedTimedQueue:
        if zone not in self.tainters:
            self.tainters[zone] = RateLimitedTimedQueue(self.config.node_eviction_rate, self.clock.now())
            self.zone_states[zone] = STATE_INITIAL
        return self.tainters[zone]

    async def mark_pods_not_ready(self, node_name: str) -> None:
        """upstream's MarkPodsNotReady for the pods still Ready on an unreachable node."""
        for pod in self.pods.by_index("spec.nodeName", node_name):
            if not _pod_ready_true(pod) or pod["spec"].get("nodeName") != node_name:
                continue
            status = deep_copy(pod.get("status") or {})
            for c in status.get("conditions") or []:
                if c.get("type") == "Ready":
                    c.update(status="False", lastTransitionTime=self._now())
            try:
                await self.client.update_status({"apiVersion": "v1", "kind": "Pod", "metadata": dict(pod["metadata"]),
                                                 "spec": pod["spec"], "status": status})
            except StatusError as e:
                if e.code in (404, 409):
                    continue  # gone, or changed: the next pass looks again
                raise
            await self._event({"apiVersion": "v1", "kind": "Pod", "metadata": pod["metadata"]}, "NodeNotReady",
                              "Node is not ready", type="Warning")

    # -- NoExecute taints ---------------------------------------------------------------------
    async def process_taint_based_eviction(self, node: Obj, observed: str | None) -> None:
        name, uid = node["metadata"]["name"], node["metadata"].get("uid", "")
        tainter = self._tainter(zone_key(node))
        if observed in ("False", "Unknown"):
            wanted, opposite = ((TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE) if observed == "False"
                                else (TAINT_NODE_UNREACHABLE, TAINT_NODE_NOT_READY))
            if _has_taint(node, opposite, "NoExecute"):
                await self.swap_taints(name, [{"key": wanted, "effect": "NoExecute"}],
                                       [{"key": opposite, "effect": "NoExecute"}])
                return
            if not _has_taint(node, wanted, "NoExecute"):
                tainter.remove(name)  # re-queued below with a fresh time (markNodeForTainting)
            tainter.add(name, uid, self.clock.now())
        elif observed == "True":
            await self.mark_node_as_reachable(node)

    async def mark_node_as_reachable(self, node: Obj) -> None:
        if _has_taint(node, TAINT_NODE_UNREACHABLE, "NoExecute") or _has_taint(node, TAINT_NODE_NOT_READY, "NoExecute"):
            await self.swap_taints(node["metadata"]["name"], [], [{"key": TAINT_NODE_UNREACHABLE, "effect": "NoExecute"},
                                                                  {"key": TAINT_NODE_NOT_READY, "effect": "NoExecute"}])
        self._tainter(zone_key(node)).remove(node["metadata"]["name"])

    def _schedule_tainting(self) -> None:
        now = self.clock.now()
        waits = [w for w in (t.next_attempt(now) for t in self.tainters.values()) if w is not None]
        if waits:
            self.enqueue_after(TAINT_KEY, min(waits))

    async def no_execute_tainting_pass(self) -> None:
        """Taint the queued nodes as fast as each zone's limiter allows (doNoExecuteTaintingPass)."""
        for tainter in list(self.tainters.values()):
            await tainter.try_process(self.clock.now(), self._taint_no_execute)
        self._schedule_tainting()

    async def _taint_no_execute(self, name: str, uid: str) -> tuple[bool, float]:
        node = self.nodes.get(name)
        if node is None:
            return True, 0.0
        ready = condition(node, "Ready")
        if ready is None:
            return False, 0.05
        status = ready.get("status")
        if status == "False":
            wanted, opposite = TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE
        elif status == "Unknown":
            wanted, opposite = TAINT_NODE_UNREACHABLE, TAINT_NODE_NOT_READY
        else:
            return True, 0.0  # Ready again: nothing to taint
        ok = await self.swap_taints(name, [{"key": wanted, "effect": "NoExecute"}],
                                    [{"key": opposite, "effect": "NoExecute"}])
        return ok, 0.0

    async def swap_taints(self, name: str, add: list[Obj], remove: list[Obj]) -> bool:
        """SwapNodeControllerTaint: add `add` (stamped `timeAdded` now; a taint of the same key and
        effect is replaced in place) and drop `remove` (by key and effect), in one update; False when
        the node is gone."""
        stamped = [dict(t, timeAdded=self._now()) for t in add]

        async def attempt(conflicted: bool) -> None:
            node = await self.client.get("v1", "Node", None, name) if conflicted else self.nodes.get(name)
            if node is None:
                raise not_found_error("nodes", "", name)
            old = (node.get("spec") or {}).get("taints") or []
            taints = swapped_taints(old, stamped, remove)
            if taints == old:
                return
            new = deep_copy(node)
            new["spec"]["taints"] = taints
            if not taints:
                del new["spec"]["taints"]
            await self.client.update(new)

        try:
            await retry_on_conflict(attempt)
        except StatusError as e:
            if e.code == 404:
                return False
            raise
        return True

    # -- NoSchedule taints ---------------------------------------------------------------------
    async def no_schedule_tainting_pass(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        wanted = no_schedule_taints(node)
        present = [t for t in (node.get("spec") or {}).get("taints") or []
                   if t.get("effect") == "NoSchedule" and (t.get("key") in CONDITION_TAINT_KEYS
                                                           or t.get("key") == TAINT_NODE_UNSCHEDULABLE)]
        add = [t for t in wanted if not _has_taint(node, t["key"], "NoSchedule")]
        remove = [{"key": t["key"], "effect": "NoSchedule"} for t in present
                  if not any(w["key"] == t.get("key") for w in wanted)]
        if add or remove:
            await self.swap_taints(name, add, remove)

    # -- zones ---------------------------------------------------------------------------------
    async def handle_disruption(self, zones: dict[str, list[str | None]], nodes: list[Obj]) -> None:
        """Zone states and their eviction rates (handleDisruption)."""
        new_states = {z: zone_state(statuses, self.config.unhealthy_zone_threshold)[1] for z, statuses in zones.items()}
        all_fully = all(s == STATE_FULL for s in new_states.values())
        for z in list(self.zone_states):
            if z not in zones:
                del self.zone_states[z]
        for z in zones:
            self.zone_states.setdefault(z, STATE_INITIAL)
        all_were_fully = all(s == STATE_FULL for s in self.zone_states.values())
        if all_fully and all_were_fully:
            return
        now = self.clock.now()
        if all_fully:
            self.log.info("Controller detected that all Nodes are not-Ready. Entering master disruption mode")
            for node in nodes:
                await self.mark_node_as_reachable(node)
            for z in self.zone_states:
                self._tainter(z).swap_limiter(0, now)
                self.zone_states[z] = STATE_FULL
            return
        if all_were_fully:
            self.log.info("Controller detected that some Nodes are Ready. Exiting master disruption mode")
        for z, state in new_states.items():
            if all_were_fully or self.zone_states.get(z) != state:
                self._tainter(z).swap_limiter(self._zone_rate(len(zones[z]), state), now)
                self.zone_states[z] = state

    def _zone_rate(self, size: int, state: str) -> float:
        if state == STATE_PARTIAL:
            return self.config.secondary_node_eviction_rate if size > self.config.large_cluster_size_threshold else 0.0
        return self.config.node_eviction_rate
