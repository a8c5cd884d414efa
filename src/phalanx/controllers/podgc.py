"""The pod garbage collector: kube-controller-manager's `pod-garbage-collector-controller`, which
force-deletes pods nobody else will finish.

    PodGCController(client, factory, terminated_pod_threshold=12500, clock=clock).start()

Every 20 s (`gc_check_period`), as upstream:

- **terminated pods** (Succeeded/Failed) beyond `terminated_pod_threshold` (12,500; 0 turns this
  off), oldest first;
- **terminating pods on out-of-service nodes**: pods with a deletionTimestamp on a node that is not
  Ready and carries the `node.kubernetes.io/out-of-service` taint (upstream's non-graceful node
  shutdown: `kubectl taint nodes N node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`);
- **orphaned pods**, bound to a node that has not existed for 40 s (`quarantine_time`): marked
  `DisruptionTarget` (`DeletionByPodGC`, "PodGC: node no longer exists");
- **unscheduled terminating pods**: deleted before a node was chosen.

Each is set to phase Failed first (when it is not terminal yet), then deleted with grace period 0.
Unlike upstream, a pass also runs as soon as a node's taints change, so an out-of-service taint
takes effect at once rather than within 20 s.
This is what frees the pods of a failed node (`phalanx fail node`) whose kubelet will not come back
to finish their deletion: taint it out of service, or delete the Node. Restart-safe: the only memory
is when an unknown node was first seen, and a restart only starts that quarantine again.
"""

from __future__ import annotations

from typing import Any

from ..api.faults import TAINT_NODE_OUT_OF_SERVICE
from ..client.clock import to_datetime
from ..client.controller import Controller
from ..client.informer import InformerFactory
from ..client.interface import Client
from ..client.retry import retry_on_conflict
from ..machinery.errors import StatusError, not_found_error
from ..machinery.meta import deep_copy
from ..machinery.timestamps import now_rfc3339, rfc3339_seconds
from .tainteviction import with_disruption_condition

Obj = dict[str, Any]

GC_KEY = "gc"
GC_CHECK_PERIOD = 20.0
QUARANTINE_TIME = 40.0
DEFAULT_TERMINATED_POD_THRESHOLD = 12500


def _terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Pending", "Running", "Unknown", None)


def _node_ready(node: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


def _evicted(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


def gc_order(pod: Obj) -> tuple:
    """Evicted pods first, then oldest, then by name (byEvictionAndCreationTimestamp)."""
    md = pod["metadata"]
    return (not _evicted(pod), rfc3339_seconds(md.get("creationTimestamp")) or 0.0, md["name"])


class PodGCController(Controller[str]):
    name = "pod-garbage-collector-controller"

    def __init__(self, client: Client, factory: InformerFactory | None = None, *,
                 terminated_pod_threshold: int = DEFAULT_TERMINATED_POD_THRESHOLD,
                 gc_check_period: float = GC_CHECK_PERIOD, quarantine_time: float = QUARANTINE_TIME, **kw: Any):
        super().__init__(client, factory, **kw)
        self.terminated_pod_threshold = terminated_pod_threshold
        self.gc_check_period = gc_check_period
        self.quarantine_time = quarantine_time
        self.pods = self.informer("v1", "Pod")
        self.nodes = self.informer("v1", "Node")
        self.nodes.add_event_handler(on_update=self._node_updated)
        self._missing_since: dict[str, float] = {}  # node name -> first seen missing

    async def setup(self) -> None:
        self.queue.add(GC_KEY)

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if (old.get("spec") or {}).get("taints") != (new.get("spec") or {}).get("taints"):
            self.queue.add(GC_KEY)

    async def sync(self, key: str) -> None:
        try:
            await self.gc()
        finally:
            self.enqueue_after(GC_KEY, self.gc_check_period)

    async def gc(self) -> None:
        pods = self.pods.list()
        if self.terminated_pod_threshold > 0:
            await self.gc_terminated(pods)
        await self.gc_terminating(pods)
        await self.gc_orphaned(pods)
        for pod in pods:  # terminating pods that never got a node
            if pod["metadata"].get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName"):
                await self.mark_failed_and_delete(pod)

    async def gc_terminated(self, pods: list[Obj]) -> None:
        terminated = [p for p in pods if _terminal(p)]
        excess = len(terminated) - self.terminated_pod_threshold
        if excess > 0:
            for pod in sorted(terminated, key=gc_order)[:excess]:
                await self.mark_failed_and_delete(pod)

    async def gc_terminating(self, pods: list[Obj]) -> None:
        for pod in sorted((p for p in pods if p["metadata"].get("deletionTimestamp")), key=gc_order):
            node = self.nodes.get((pod.get("spec") or {}).get("nodeName") or "")
            if node is None or _node_ready(node):
                continue
            if any(t.get("key") == TAINT_NODE_OUT_OF_SERVICE for t in (node.get("spec") or {}).get("taints") or []):
                await self.mark_failed_and_delete(pod)

    async def gc_orphaned(self, pods: list[Obj]) -> None:
        now = self.clock.now()
        bound = {str((p.get("spec") or {}).get("nodeName") or "") for p in pods} - {""}
        missing = {n for n in bound if self.nodes.get(n) is None}
        for name in list(self._missing_since):
            if name not in missing:
                del self._missing_since[name]
        deleted = set()
        for name in missing:
            since = self._missing_since.setdefault(name, now)
            if now - since >= self.quarantine_time and not await self._node_exists(name):
                deleted.add(name)
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName") in deleted:
                await self.mark_failed_and_delete(pod, ("DeletionByPodGC", "PodGC: node no longer exists"))

    async def _node_exists(self, name: str) -> bool:
        try:
            await self.client.get("v1", "Node", None, name)
            return True
        except StatusError as e:
            if e.code == 404:
                return False
            raise

    async def mark_failed_and_delete(self, pod: Obj, disruption: tuple[str, str] | None = None) -> None:
        """Phase Failed (with `disruption` as the DisruptionTarget condition), then delete now."""
        md = pod["metadata"]
        ns, name = md.get("namespace", ""), md["name"]
        self.log.info("PodGC is force deleting Pod %s/%s", ns, name)

        async def attempt(conflicted: bool) -> None:
            current = await self.client.get("v1", "Pod", ns, name) if conflicted else pod
            if current["metadata"].get("uid") != md.get("uid"):
                raise not_found_error("pods", "", name)
            if _terminal(current):
                return
            now = now_rfc3339(to_datetime(self.clock.now()))
            status = (with_disruption_condition(current, *disruption, now) if disruption else None) \
                or deep_copy(current.get("status") or {})
            status["phase"] = "Failed"
            await self.client.update_status({"apiVersion": "v1", "kind": "Pod", "metadata": dict(current["metadata"]),
                                             "spec": current["spec"], "status": status})

        try:
            await retry_on_conflict(attempt)
            await self.client.delete("v1", "Pod", ns, name, grace_period=0, preconditions={"uid": md.get("uid")})
        except StatusError as e:
            if e.code not in (404, 409):
                raise
