"""The simulated kubelets' node heartbeats: Lease renewals in `kube-node-lease` and the node's
kubelet conditions, as upstream's kubelet keeps them.

    beats = NodeHeartbeats(client, clock, nodes_informer, is_live, lease_duration=40)
    task = loop.create_task(beats.run())        # renews every live node's Lease
    await beats.renew(node_name)                # one renewal now (a node that came back)
    await beats.post_ready(node)                # Ready=True again after the node controller's Unknown

A node's Lease says `leaseDurationSeconds` (the kubelet's `nodeLeaseDurationSeconds`, 40 by default)
and is renewed every quarter of it, as upstream's kubelet does. Beyond 800 nodes the interval grows
with the node count (one renewal per node every `nodes/200` seconds) to keep a 5,000-node cluster
cheap, but never past half the lease duration, so the node lifecycle controller (grace period 50 s
by default) keeps seeing renewals. `is_live(name)` says which nodes heartbeat: simulated nodes that
are not failed (`fault.phalanx.dev/node: down`).

The last written Lease of each node is remembered, so a renewal is one update (a get only after a
conflict or on the first renewal).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ..client.clock import Clock, to_datetime
from ..client.informer import Informer
from ..client.interface import Client
from ..machinery.errors import StatusError
from ..machinery.timestamps import now_rfc3339, now_rfc3339_micro
from .stages.runner import NODE_CONDITIONS

log = logging.getLogger("phalanx.nodes.heartbeat")

LEASE_API = "coordination.k8s.io/v1"
LEASE_NAMESPACE = "kube-node-lease"
DEFAULT_LEASE_DURATION = 40.0
NODES_PER_SECOND = 200  # renewals per second beyond which the interval grows
YIELD_EVERY = 200  # renewals between two yields to the event loop

# The conditions the kubelet sets (the node lifecycle controller turns these Unknown when the
# kubelet stops posting); NetworkUnavailable belongs to the network plugin.
KUBELET_CONDITION_TYPES = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
HEALTHY_CONDITIONS = {c["type"]: c for c in NODE_CONDITIONS if c["type"] in KUBELET_CONDITION_TYPES}

Obj = dict[str, Any]


def kubelet_conditions_healthy(node: Obj) -> bool:
    """Whether the node shows the kubelet's conditions as a healthy kubelet posts them."""
    current = {c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or []}
    return all(current.get(t) == c["status"] for t, c in HEALTHY_CONDITIONS.items())


class NodeHeartbeats:
    def __init__(self, client: Client, clock: Clock, nodes: Informer, is_live: Callable[[str], bool], *,
                 lease_duration: float = DEFAULT_LEASE_DURATION, renew_interval: float | None = None,
                 record_event: Callable[..., Any] | None = None):
        self.client = client
        self.clock = clock
        self.nodes = nodes
        self.is_live = is_live
        self.lease_duration = max(1, int(round(lease_duration)))
        self.fixed_interval = renew_interval
        self.record_event = record_event
        self._leases: dict[str, Obj] = {}

    def interval(self, node_count: int) -> float:
        """Seconds between two renewals of a node's Lease."""
        if self.fixed_interval:
            return self.fixed_interval
        base = self.lease_duration / 4
        return min(max(base, node_count / NODES_PER_SECOND), self.lease_duration / 2)

    async def run(self) -> None:
        while True:
            names = [n["metadata"]["name"] for n in self.nodes.list() if self.is_live(n["metadata"]["name"])]
            for i, name in enumerate(names):
                try:
                    await self.renew(name)
                except StatusError as e:
                    log.debug("lease for %s: %s", name, e)
                except Exception:  # pragma: no cover - keep heartbeating
                    log.exception("lease for %s", name)
                if i % YIELD_EVERY == YIELD_EVERY - 1:
                    await asyncio.sleep(0)
            await self.clock.sleep(self.interval(len(names)))

    async def renew(self, node_name: str) -> None:
        now = now_rfc3339_micro(to_datetime(self.clock.now()))
        lease = self._leases.get(node_name)
        if lease is not None:
            lease = dict(lease, spec=dict(lease["spec"], renewTime=now, leaseDurationSeconds=self.lease_duration))
            try:
                self._leases[node_name] = await self.client.update(lease)
                return
            except StatusError as e:
                self._leases.pop(node_name, None)
                if e.code not in (404, 409):
                    raise
        await self._renew_fresh(node_name, now)

    async def _renew_fresh(self, node_name: str, now: str) -> None:
        try:
            lease = await self.client.get(LEASE_API, "Lease", LEASE_NAMESPACE, node_name)
        except StatusError as e:
            if e.code != 404:
                raise
            node = self.nodes.get(node_name) or {"metadata": {}}
            self._leases[node_name] = await self.client.create({
                "apiVersion": LEASE_API, "kind": "Lease",
                "metadata": {"name": node_name, "namespace": LEASE_NAMESPACE,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node_name,
                                                  "uid": node["metadata"].get("uid", "")}]},
                "spec": {"holderIdentity": node_name, "leaseDurationSeconds": self.lease_duration,
                         "renewTime": now}})
            return
        lease = dict(lease, spec=dict(lease.get("spec") or {}, renewTime=now,
                                      leaseDurationSeconds=self.lease_duration))
        self._leases[node_name] = await self.client.update(lease)

    def forget(self, node_name: str) -> None:
        self._leases.pop(node_name, None)

    async def post_ready(self, node: Obj) -> bool:
        """Post the kubelet's healthy conditions when the node shows others (Unknown after the
        node lifecycle controller gave up on it); True when the status was written."""
        if kubelet_conditions_healthy(node):
            return False
        now = now_rfc3339(to_datetime(self.clock.now()))
        status = dict(node.get("status") or {})
        conditions = []
        seen = set()
        for c in status.get("conditions") or []:
            healthy = HEALTHY_CONDITIONS.get(c.get("type"))
            if healthy is None:
                conditions.append(c)
                continue
            seen.add(c["type"])
            transition = c.get("lastTransitionTime") if c.get("status") == healthy["status"] else now
            conditions.append({**healthy, "lastHeartbeatTime": now, "lastTransitionTime": transition or now})
        for t, healthy in HEALTHY_CONDITIONS.items():
            if t not in seen:
                conditions.append({**healthy, "lastHeartbeatTime": now, "lastTransitionTime": now})
        status["conditions"] = conditions
        try:
            await self.client.update_status({"apiVersion": "v1", "kind": "Node", "metadata": dict(node["metadata"]),
                                             "spec": node.get("spec") or {}, "status": status})
        except StatusError as e:
            if e.code in (404, 409):
                return False  # gone, or changed meanwhile: the informer brings it back
            raise
        if self.record_event is not None:
            name = node["metadata"]["name"]
            # The kubelet's node reference carries the node's name as its uid, as upstream's does.
            await self.record_event({"kind": "Node", "metadata": {"name": name, "uid": name}}, "NodeReady",
                                    f"Node {name} status is now: NodeReady", host=name)
        return True
