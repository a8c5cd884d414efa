"""Simulated kubelets: what a kubelet does to the API for pods bound to its node, without containers.

One `SimulatedKubelets` controller serves every simulated node (Nodes whose `spec.providerID`
starts with `phalanx://`), so a 5,000-node cluster costs one informer, not 5,000. For each pod bound
to such a node it walks the pod through upstream's lifecycle as the API shows it:

    Pending (PodScheduled) -> ContainerCreating (PodReadyToStartContainers False) -> Running
    (Initialized, ContainersReady, Ready; container statuses, podIP, hostIP, startTime)
    -> Succeeded / Failed when a run time is set -> removal after graceful deletion.

A pod whose volumes name PersistentVolumeClaims stays ContainerCreating until every claim is Bound.

Per-pod behaviour comes from annotations, as KWOK stages do:

    phalanx.dev/run-for: 30s      containers exit after 30s (default: run forever)
    phalanx.dev/exit-code: "1"    ... with this exit code (default 0)

`restartPolicy` decides what an exit means: Never ends the pod (Succeeded on 0, Failed otherwise);
OnFailure restarts failed containers and ends the pod on 0; Always restarts every exit. Stage delays
(`StageDelays`) are zero by default. Each node renews its Lease in `kube-node-lease`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from ..client.clock import to_datetime
from ..client.informer import InformerFactory, index_pod_by_node_name, object_key
from ..client.interface import Client
from ..client.controller import Controller
from ..machinery.durations import parse_duration
from ..machinery.errors import StatusError
from ..machinery.timestamps import now_rfc3339, now_rfc3339_micro, rfc3339_seconds

log = logging.getLogger("phalanx.nodes.kubelet")

RUN_FOR = "phalanx.dev/run-for"
EXIT_CODE = "phalanx.dev/exit-code"
PROVIDER_PREFIX = "phalanx://"
FIELD_MANAGER = "kubelet"

def run_for_seconds(pod: dict) -> float | None:
    """The pod's `phalanx.dev/run-for` annotation in seconds; None when absent, negative or not a Go
    duration (`30s`, `1m30s`, `500ms`)."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(RUN_FOR)
    if not text:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


@dataclass
class StageDelays:
    """Seconds each lifecycle stage takes (zero: the next stage follows at once)."""

    container_creating: float = 0.0
    terminating: float = 0.0


def _cond(t: str, status: str, now: str, reason: str | None = None) -> dict:
    c = {"type": t, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
    if reason:
        c["reason"] = reason
    return c


def _set_conditions(status: dict, conds: list[dict]) -> None:
    """Set conditions by type, keeping lastTransitionTime when the status did not change."""
    existing = {c.get("type"): c for c in status.get("conditions") or []}
    out = []
    for c in conds:
        old = existing.pop(c["type"], None)
        if old is not None and old.get("status") == c["status"]:
            c = dict(c, lastTransitionTime=old.get("lastTransitionTime", c["lastTransitionTime"]))
        out.append(c)
    # keep conditions set by others (PodScheduled, DisruptionTarget, readiness gates)
    status["conditions"] = [*existing.values(), *out]
    order = {"PodReadyToStartContainers": 0, "Initialized": 1, "Ready": 2, "ContainersReady": 3, "PodScheduled": 4}
    status["conditions"].sort(key=lambda c: order.get(c.get("type"), 5))


def _claim_names(pod: dict) -> list[str]:
    return [v["persistentVolumeClaim"].get("claimName", "") for v in (pod.get("spec") or {}).get("volumes") or ()
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)]


class SimulatedKubelets(Controller[str]):
    name = "kubelet"
    workers = 4

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, delays: StageDelays | None = None,
                 lease_period: float | None = None, **kw: Any):
        super().__init__(client, factory, **kw)
        self.delays = delays or StageDelays()
        self.lease_period = lease_period
        self.nodes = self.informer("v1", "Node")
        self.pods = self.informer("v1", "Pod")
        self.pods.add_event_handler(on_add=self._pod_event, on_update=lambda o, n: self._pod_event(n),
                                    on_delete=lambda o: None)
        self.pods.add_indexer("spec.nodeName", index_pod_by_node_name)
        self.nodes.add_event_handler(on_add=self._node_added)
        # a pod's PersistentVolumeClaims must be Bound before its containers start (the volume manager)
        self.claims = self.informer("v1", "PersistentVolumeClaim")
        self.claims.add_event_handler(on_add=self._claim_event, on_update=lambda o, n: self._claim_event(n))
        self._ips: dict[str, set[int]] = {}  # node -> host numbers in use in its pod CIDR
        self._pod_ip: dict[str, tuple[str, int]] = {}  # pod key -> (node, host number)
        self._lease_task: asyncio.Task[None] | None = None

    # -- which pods are ours ------------------------------------------------------------------
    def _simulated(self, node_name: str | None) -> bool:
        if not node_name:
            return False
        node = self.nodes.get(node_name)
        return bool(node and str((node.get("spec") or {}).get("providerID", "")).startswith(PROVIDER_PREFIX))

    def _pod_event(self, pod: dict) -> None:
        if self._simulated((pod.get("spec") or {}).get("nodeName")):
            self.queue.add(object_key(pod))

    def _claim_event(self, claim: dict) -> None:
        if (claim.get("status") or {}).get("phase") != "Bound":
            return
        md = claim["metadata"]
        for pod in self.pods.list(md.get("namespace")):
            if md.get("name") in _claim_names(pod):
                self._pod_event(pod)

    def _claims_bound(self, pod: dict) -> bool:
        ns = pod["metadata"].get("namespace", "")
        for name in _claim_names(pod):
            claim = self.claims.get(f"{ns}/{name}")
            if claim is None or (claim.get("status") or {}).get("phase") != "Bound" or \
                    claim["metadata"].get("deletionTimestamp"):
                return False  # missing, unbound or being deleted: the volume manager waits
        return True

    def _node_added(self, node: dict) -> None:
        # pods may have been bound before this node was seen
        for pod in self.pods.by_index("spec.nodeName", node["metadata"]["name"]):
            self._pod_event(pod)

    async def run(self) -> None:
        self._lease_task = asyncio.get_running_loop().create_task(self._renew_leases(), name="kubelet leases")
        try:
            await super().run()
        finally:
            if self._lease_task is not None:
                self._lease_task.cancel()

    # -- pod lifecycle -------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None:
            self._release_ip(key)
            return
        node_name: str = (pod.get("spec") or {}).get("nodeName") or ""
        if not self._simulated(node_name):
            return
        status = pod.get("status") or {}
        phase = status.get("phase", "Pending")
        if pod["metadata"].get("deletionTimestamp"):
            await self._terminate(pod, key)
        elif phase in ("Succeeded", "Failed"):
            self._release_ip(key)
        else:
            statuses = status.get("containerStatuses") or []
            if phase == "Running" and statuses and all("running" in (c.get("state") or {}) for c in statuses):
                await self._check_run_time(pod, key, node_name, statuses)
            else:
                await self._start(pod, key, node_name, status)

    async def _start(self, pod: dict, key: str, node_name: str, status: dict) -> None:
        """Pending → ContainerCreating (when that stage takes time, or until the pod's claims are
        Bound) → Running."""
        creating = self.delays.container_creating
        if not self._claims_bound(pod):
            if not status.get("containerStatuses"):
                await self._write_status(pod, self._creating_status(pod))
            return  # the claim's update to Bound enqueues the pod again
        if not status.get("containerStatuses") and creating > 0:
            await self._write_status(pod, self._creating_status(pod))
            self.enqueue_after(key, creating)
            return
        started = rfc3339_seconds(status.get("startTime")) if creating > 0 else None
        now = self.clock.now()
        if started is not None and now < started + creating:
            self.enqueue_after(key, started + creating - now)
            return
        await self._write_status(pod, self._running_status(pod, node_name, restarts=None))
        run_for = run_for_seconds(pod)
        if run_for is not None:
            self.enqueue_after(key, run_for)

    async def _check_run_time(self, pod: dict, key: str, node_name: str, statuses: list[dict]) -> None:
        """Running: once the `phalanx.dev/run-for` time has elapsed, the containers exit."""
        run_for = run_for_seconds(pod)
        if run_for is None:
            return
        starts = (rfc3339_seconds(((c.get("state") or {}).get("running") or {}).get("startedAt")) for c in statuses)
        started_at = max((s for s in starts if s is not None), default=None)
        if started_at is None:
            return
        remaining = started_at + run_for - self.clock.now()
        if remaining > 0:
            self.enqueue_after(key, remaining)
            return
        await self._containers_exited(pod, key, node_name)

    def _now(self) -> str:
        return now_rfc3339(to_datetime(self.clock.now()))

    def _host_ip(self, node_name: str) -> str:
        node = self.nodes.get(node_name) or {}
        for a in (node.get("status") or {}).get("addresses") or []:
            if a.get("type") == "InternalIP":
                return a.get("address", "")
        return ""

    def _pod_ip_for(self, key: str, node_name: str) -> str:
        node = self.nodes.get(node_name) or {}
        cidr = (node.get("spec") or {}).get("podCIDR") or "10.244.0.0/24"
        base = cidr.split("/")[0].rsplit(".", 1)[0]
        held = self._pod_ip.get(key)
        if held is None or held[0] != node_name:
            used = self._ips.setdefault(node_name, set())
            n = next(i for i in range(2, 100_000) if i not in used)
            used.add(n)
            held = self._pod_ip[key] = (node_name, n)
        n = held[1]
        if n < 255:
            return f"{base}.{n}"
        a, b = base.rsplit(".", 1)[0], int(base.rsplit(".", 1)[1])
        return f"{a}.{(b + n // 254) % 256}.{n % 254 + 1}"

    def _release_ip(self, key: str) -> None:
        held = self._pod_ip.pop(key, None)
        if held is not None:
            self._ips.get(held[0], set()).discard(held[1])

    def _creating_status(self, pod: dict) -> dict:
        now = self._now()
        status = dict(pod.get("status") or {})
        status["phase"] = "Pending"
        status["hostIP"] = self._host_ip(pod["spec"]["nodeName"])
        status["hostIPs"] = [{"ip": status["hostIP"]}]
        status.setdefault("startTime", now)
        _set_conditions(status, [
            _cond("PodReadyToStartContainers", "False", now),
            _cond("Initialized", "True", now),
            _cond("Ready", "False", now, "ContainersNotReady"),
            _cond("ContainersReady", "False", now, "ContainersNotReady"),
        ])
        status["containerStatuses"] = [{
            "name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False, "restartCount": 0,
            "started": False, "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}}
            for c in pod["spec"].get("containers") or []]
        return status

    def _running_status(self, pod: dict, node_name: str, restarts: dict | None, exit_code: int = 0) -> dict:
        now = self._now()
        key = object_key(pod)
        status = dict(pod.get("status") or {})
        status["phase"] = "Running"
        status["hostIP"] = self._host_ip(node_name)
        status["hostIPs"] = [{"ip": status["hostIP"]}]
        # A host-network pod has its node's address, as upstream's kubelet reports it.
        ip = status["hostIP"] if (pod.get("spec") or {}).get("hostNetwork") else self._pod_ip_for(key, node_name)
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
        status.setdefault("startTime", now)
        _set_conditions(status, [
            _cond("PodReadyToStartContainers", "True", now),
            _cond("Initialized", "True", now),
            _cond("Ready", "True", now),
            _cond("ContainersReady", "True", now),
        ])
        old = {c.get("name"): c for c in status.get("containerStatuses") or []}
        cstats = []
        for c in pod["spec"].get("containers") or []:
            prev = old.get(c["name"]) or {}
            count = prev.get("restartCount", 0) + ((restarts or {}).get(c["name"], 0))
            cs = {"name": c["name"], "image": c.get("image", ""),
                  "imageID": f"docker.io/library/{c.get('image', '')}@sha256:" + "0" * 64,
                  "containerID": f"phalanx://{pod['metadata'].get('uid', '')[:8]}-{c['name']}-{count}",
                  "ready": True, "restartCount": count, "started": True,
                  "state": {"running": {"startedAt": now}}, "lastState": {}}
            if restarts and restarts.get(c["name"]):
                started = ((prev.get("state") or {}).get("running") or {}).get("startedAt", now)
                cs["lastState"] = {"terminated": {
                    "exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                    "startedAt": started, "finishedAt": now, "containerID": prev.get("containerID", "")}}
            cstats.append(cs)
        status["containerStatuses"] = cstats
        if pod["spec"].get("initContainers"):
            status["initContainerStatuses"] = [{
                "name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": True, "restartCount": 0,
                "started": False, "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                                          "startedAt": now, "finishedAt": now}}}
                for c in pod["spec"]["initContainers"]]
        return status

    async def _containers_exited(self, pod: dict, key: str, node_name: str) -> None:
        md = pod["metadata"]
        try:
            code = int((md.get("annotations") or {}).get(EXIT_CODE, "0"))
        except ValueError:
            code = 1
        policy = pod["spec"].get("restartPolicy", "Always")
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            restarts = {c["name"]: 1 for c in pod["spec"].get("containers") or []}
            status = self._running_status(pod, node_name, restarts, exit_code=code)
            await self._write_status(pod, status)
            run_for = run_for_seconds(pod)
            if run_for is not None:
                self.enqueue_after(key, run_for)
            return
        now = self._now()
        status = dict(pod.get("status") or {})
        status["phase"] = "Succeeded" if code == 0 else "Failed"
        reason = "Completed" if code == 0 else "Error"
        cstats = []
        for cs in status.get("containerStatuses") or []:
            started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now)
            cs = dict(cs, ready=False, started=False,
                      state={"terminated": {"exitCode": code, "reason": reason, "startedAt": started,
                                            "finishedAt": now, "containerID": cs.get("containerID", "")}})
            cstats.append(cs)
        status["containerStatuses"] = cstats
        _set_conditions(status, [
            _cond("PodReadyToStartContainers", "False", now),
            _cond("Initialized", "True", now, "PodCompleted"),
            _cond("Ready", "False", now, "PodCompleted"),
            _cond("ContainersReady", "False", now, "PodCompleted"),
        ])
        await self._write_status(pod, status)
        self._release_ip(key)

    async def _terminate(self, pod: dict, key: str) -> None:
        md = pod["metadata"]
        deadline = rfc3339_seconds(md.get("deletionTimestamp"))
        wait = self.delays.terminating
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - self.clock.now())) if wait else 0.0
        if wait > 0:
            self.enqueue_after(key, wait)
            return
        try:
            await self.client.delete("v1", "Pod", md.get("namespace", ""), md["name"], grace_period=0,
                                     preconditions={"uid": md.get("uid")})
        except StatusError as e:
            if e.code not in (404, 409):
                raise
        self._release_ip(key)

    async def _write_status(self, pod: dict, status: dict) -> None:
        new = {"apiVersion": "v1", "kind": "Pod", "metadata": dict(pod["metadata"]), "spec": pod["spec"],
               "status": status}
        try:
            await self.client.update_status(new)
        except StatusError as e:
            if e.code == 409:
                self.queue.add(object_key(pod))  # a newer version will come through the informer
                return
            if e.code == 404:
                return
            raise

    # -- node leases ---------------------------------------------------------------------------
    async def _renew_leases(self) -> None:
        while True:
            names = [n["metadata"]["name"] for n in self.nodes.list() if self._simulated(n["metadata"]["name"])]
            period = self.lease_period or max(10.0, len(names) / 50.0)
            for name in names:
                try:
                    await self._renew_lease(name, period)
                except StatusError as e:
                    log.debug("lease for %s: %s", name, e)
                except Exception:  # pragma: no cover - keep heartbeating
                    log.exception("lease for %s", name)
            await self.clock.sleep(period)

    async def _renew_lease(self, node_name: str, period: float) -> None:
        now = now_rfc3339_micro(to_datetime(self.clock.now()))
        try:
            lease = await self.client.get("coordination.k8s.io/v1", "Lease", "kube-node-lease", node_name)
        except StatusError as e:
            if e.code != 404:
                raise
            node = self.nodes.get(node_name) or {"metadata": {}}
            await self.client.create({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": node_name, "namespace": "kube-node-lease",
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node_name,
                                                  "uid": node["metadata"].get("uid", "")}]},
                "spec": {"holderIdentity": node_name, "leaseDurationSeconds": int(max(40, period * 4)),
                         "renewTime": now}})
            return
        lease["spec"]["renewTime"] = now
        lease["spec"]["leaseDurationSeconds"] = int(max(40, period * 4))
        await self.client.update(lease)
