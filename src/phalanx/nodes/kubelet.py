"""Simulated kubelets: what a kubelet does to the API for pods bound to its node, without containers.

One `SimulatedKubelets` controller serves every simulated node (Nodes whose `spec.providerID`
starts with `phalanx://`), so a 5,000-node cluster costs one informer, not 5,000. For each pod bound
to such a node it walks the pod through upstream's lifecycle as the API shows it:

    Pending (PodScheduled) -> ContainerCreating (PodReadyToStartContainers False) -> Running
    (Initialized, ContainersReady, Ready; container statuses, podIP, hostIP, startTime)
    -> the containers exit: restarted (CrashLoopBackOff with upstream's back-off), or the pod ends
    Succeeded / Failed -> on deletion: not Ready, containers stopped, then the pod is removed.

A pod whose volumes name PersistentVolumeClaims stays ContainerCreating until every claim is Bound.
What the containers do comes from `podstatus.plan` (annotations, recognised commands, Job pods).

`restartPolicy` decides what an exit means: Never ends the pod (Succeeded on 0, Failed otherwise);
OnFailure restarts failed containers and ends the pod on 0; Always restarts every exit. The first
restart is immediate; later ones wait upstream's back-off (10s doubling to 5m, forgotten once a
container ran for 10 minutes), shown as `CrashLoopBackOff` with `BackOff` events.

Deletion as upstream's kubelet does it: `Killing` events, Ready=False at once, the containers stop
after their `preStop` hooks (or the configured `terminatingDelay`), never later than the pod's
grace period, with exit code 0 (137 when the grace period ran out), then the pod is removed.

The kubelet's events (`Pulling`, `Pulled`, `Created`, `Started`, `Killing`, `BackOff`) carry
upstream's reasons and messages. Each step above is a named built-in stage (`pod-create`,
`pod-ready`, `pod-probe-ready`, `pod-exit`, `pod-crashloop-backoff`, `pod-terminating`,
`pod-stopped`, `pod-delete`, `node-initialize`; `phalanx.nodes.stages.builtin`): `select_pod` /
`select_node` say which one applies and when, `act_pod` / `act_node` do it, and the `StageRunner`
draws them together with the stages of KWOK Stage files (`stages`), which act first on the objects
they select and replace a built-in stage of the same name; see `phalanx.nodes.stages`. Each node renews its Lease in
`kube-node-lease` (`phalanx.nodes.heartbeat`).

A node annotated `fault.phalanx.dev/node: down` (`phalanx fail node`) has a dead kubelet: no Lease
renewals, no node status, no pod work; its pods keep their last status, deletions included. When the
annotation goes, the kubelet comes back: it renews the Lease at once, posts Ready=True again (event
`NodeReady`) and resumes every pod of the node, turning pods the node controller marked not Ready
back to Ready.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Callable

from ..api.faults import node_is_down
from ..client.clock import to_datetime
from ..client.informer import InformerFactory, index_pod_by_node_name, object_key
from ..client.interface import Client
from ..client.controller import Controller
from ..machinery.errors import StatusError
from ..machinery.timestamps import now_rfc3339, rfc3339_seconds
from . import podstatus as ps
from .heartbeat import DEFAULT_LEASE_DURATION, NodeHeartbeats, kubelet_conditions_healthy
from .stages import Stage
from .stages.builtin import NODE_TRANSITIONS, POD_TRANSITIONS, BuiltinStages
from .stages.runner import NODE_CONDITIONS, STARTED, VERSION, StageRunner, rfc3339_nano
from .podstatus import EXIT_CODE, RUN_FOR, cond as _cond, run_for_seconds, set_conditions as _set_conditions

__all__ = ["EXIT_CODE", "RUN_FOR", "SimulatedKubelets", "StageDelays", "run_for_seconds"]

log = logging.getLogger("phalanx.nodes.kubelet")

PROVIDER_PREFIX = "phalanx://"
NODE_KEY = "node:"  # queue keys of nodes (pods' keys are namespace/name)
FIELD_MANAGER = "kubelet"

@dataclass
class StageDelays:
    """Seconds each lifecycle stage takes (zero: the next stage follows at once)."""

    container_creating: float = 0.0
    terminating: float = 0.0


def _started(c: dict) -> bool:
    """Running, or waiting in back-off after having run."""
    state = c.get("state") or {}
    return "running" in state or (state.get("waiting") or {}).get("reason") == ps.CRASH_LOOP


def _rv(obj: dict) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _pod_condition(pod: dict, kind: str) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c.get("status")
    return None


def _claim_names(pod: dict) -> list[str]:
    return [v["persistentVolumeClaim"].get("claimName", "") for v in (pod.get("spec") or {}).get("volumes") or ()
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)]


class SimulatedKubelets(Controller[str]):
    name = "kubelet"
    workers = 4

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, delays: StageDelays | None = None,
                 lease_period: float | None = None, lease_duration: float = DEFAULT_LEASE_DURATION,
                 events: bool = True, stages: list[Stage] | None = None, **kw: Any):
        super().__init__(client, factory, **kw)
        self.events = events
        self._backoff: dict[str, float] = {}  # pod key -> the next restart's back-off (upstream keeps it in memory too)
        self._restart_at: dict[str, float] = {}  # pod key -> when its containers leave CrashLoopBackOff
        self.delays = delays or StageDelays()
        self.nodes = self.informer("v1", "Node")
        self.pods = self.informer("v1", "Pod")
        self.pods.add_event_handler(on_add=self._pod_event, on_update=lambda o, n: self._pod_event(n),
                                    on_delete=lambda o: self._written.pop(object_key(o), None))
        self.pods.add_indexer("spec.nodeName", index_pod_by_node_name)
        self.nodes.add_event_handler(on_add=self._node_added, on_update=self._node_updated)
        # a pod's PersistentVolumeClaims must be Bound before its containers start (the volume manager)
        self.claims = self.informer("v1", "PersistentVolumeClaim")
        self.claims.add_event_handler(on_add=self._claim_event, on_update=lambda o, n: self._claim_event(n))
        # pod key -> resourceVersion of the kubelet's last status write, until the informer shows it: a
        # sync of an older copy would only repeat the write and meet a conflict (upstream's status
        # manager keeps its own cache of what it wrote for the same reason)
        self._written: dict[str, int] = {}
        self._ips: dict[str, set[int]] = {}  # node -> host numbers in use in its pod CIDR
        self._pod_ip: dict[str, tuple[str, int]] = {}  # pod key -> (node, host number)
        self._resumed: set[str] = set()  # pods of a node that came back: their readiness is posted again
        self._lease_task: asyncio.Task[None] | None = None
        self.heartbeats = NodeHeartbeats(client, self.clock, self.nodes, self._live, lease_duration=lease_duration,
                                         renew_interval=lease_period, record_event=self._node_event_record)
        builtin = {"Pod": BuiltinStages("Pod", POD_TRANSITIONS, self.select_pod, self.act_pod),
                   "Node": BuiltinStages("Node", NODE_TRANSITIONS, self.select_node, self.act_node)}
        self._runners = {kind: StageRunner(client, [s for s in stages or () if s.kind == kind and s.api_group == "v1"],
                                           self.clock.now, self.enqueue_after, self._template_funcs, builtin[kind])
                         for kind in ("Pod", "Node")}

    # -- which pods are ours ------------------------------------------------------------------
    def _simulated(self, node_name: str | None) -> bool:
        if not node_name:
            return False
        node = self.nodes.get(node_name)
        return bool(node and str((node.get("spec") or {}).get("providerID", "")).startswith(PROVIDER_PREFIX))

    def _pod_event(self, pod: dict) -> None:
        if self._simulated((pod.get("spec") or {}).get("nodeName")):
            key = object_key(pod)
            written = self._written.get(key)
            if written is not None and _rv(pod) >= written:
                del self._written[key]
            self.queue.add(key)

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

    def _live(self, node_name: str) -> bool:
        """A simulated node whose kubelet is not failed."""
        return self._simulated(node_name) and not node_is_down(self.nodes.get(node_name))

    def _node_event(self, node: dict) -> None:
        if self._simulated(node["metadata"]["name"]):
            self.queue.add(NODE_KEY + node["metadata"]["name"])

    def _node_added(self, node: dict) -> None:
        if self._runners["Node"].stages:
            self._node_event(node)
        # pods may have been bound before this node was seen
        for pod in self.pods.by_index("spec.nodeName", node["metadata"]["name"]):
            self._pod_event(pod)

    def _node_updated(self, old: dict, new: dict) -> None:
        if node_is_down(old) and not node_is_down(new):  # the kubelet is back: resume its pods
            self._node_event(new)
            for pod in self.pods.by_index("spec.nodeName", new["metadata"]["name"]):
                self._resumed.add(object_key(pod))
                self._pod_event(pod)
        elif self._runners["Node"].stages or not (node_is_down(new) or kubelet_conditions_healthy(new)):
            self._node_event(new)

    async def _node_event_record(self, node_ref: dict, reason: str, message: str, host: str = "") -> None:
        if self.events:
            try:
                await self.client.create_event(node_ref, reason, message, component="kubelet", host=host)
            except StatusError as e:  # best effort, as upstream's recorder
                log.debug("event %s for node %s: %s", reason, host, e)

    async def run(self) -> None:
        self._lease_task = asyncio.get_running_loop().create_task(self.heartbeats.run(), name="kubelet leases")
        try:
            await super().run()
        finally:
            if self._lease_task is not None:
                self._lease_task.cancel()

    # -- pod lifecycle -------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        if key.startswith(NODE_KEY):
            await self._sync_node(key)
            return
        pod = self.pods.get(key)
        if pod is None:
            self._forget(key)
            return
        node_name: str = (pod.get("spec") or {}).get("nodeName") or ""
        if not self._live(node_name):
            return  # not ours, or its kubelet is down: the pod keeps its last status
        written = self._written.get(key)
        if written is not None and _rv(pod) < written:
            return  # the informer has not shown our last write yet; its event enqueues the pod again
        if not await self._runners["Pod"].step(pod, key) and \
                (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self._release_ip(key)

    async def _sync_node(self, key: str) -> None:
        name = key[len(NODE_KEY):]
        node = self.nodes.get(name)
        if node is None or not self._simulated(name):
            self._runners["Node"].forget(key)
            self.heartbeats.forget(name)
            return
        if node_is_down(node):
            return  # a dead kubelet posts nothing
        await self._runners["Node"].step(node, key)

    def select_node(self, node: dict, key: str, now: float) -> tuple[str, float] | None:
        """The built-in node transition that applies: `node-initialize` while the kubelet's
        conditions are not healthy."""
        return None if kubelet_conditions_healthy(node) else ("node-initialize", 0.0)

    async def act_node(self, name: str, node: dict, key: str) -> None:
        # node-initialize: heartbeat now, then Ready
        await self.heartbeats.renew(node["metadata"]["name"])
        await self.heartbeats.post_ready(node)

    def select_pod(self, pod: dict, key: str, now: float) -> tuple[str, float] | None:
        """The built-in transition that applies to `pod` (a pod of a live simulated node) and its
        delay; None when the pod waits for something else (a claim, an update) or is done."""
        status = pod.get("status") or {}
        statuses = status.get("containerStatuses") or []
        if pod["metadata"].get("deletionTimestamp"):
            if status.get("phase") in ("Succeeded", "Failed") or all(
                    "terminated" in (c.get("state") or {}) for c in statuses):
                return "pod-delete", 0.0
            if any(c.get("ready") for c in statuses):
                return "pod-terminating", 0.0
            return "pod-stopped", max(0.0, self._stop_time(pod)[0] - now)
        phase = status.get("phase", "Pending")
        if phase in ("Succeeded", "Failed"):
            return None
        if phase == "Running" and statuses and all(_started(c) for c in statuses):
            return self._select_running(pod, key, statuses, now)
        if not self._claims_bound(pod):  # the claim's update to Bound enqueues the pod again
            return None if statuses else ("pod-create", 0.0)
        creating = self.delays.container_creating
        if creating <= 0:
            return "pod-ready", 0.0
        if not statuses:
            return "pod-create", 0.0
        started = rfc3339_seconds(status.get("startTime"))
        return "pod-ready", 0.0 if started is None else max(0.0, started + creating - now)

    def _select_running(self, pod: dict, key: str, statuses: list[dict], now: float) -> tuple[str, float] | None:
        """Running: leave back-off, turn ready (probes; a node that came back) or exit, whichever
        is due first."""
        if any("waiting" in (c.get("state") or {}) for c in statuses):
            return "pod-crashloop-backoff", max(0.0, self._restart_at.get(key, now) - now)
        starts = (rfc3339_seconds(((c.get("state") or {}).get("running") or {}).get("startedAt")) for c in statuses)
        started_at = max((s for s in starts if s is not None), default=None)
        if started_at is None:
            return None
        run_for = ps.plan(pod).run_for
        exit_in = None if run_for is None else max(0.0, started_at + run_for - now)
        if not all(c.get("ready") for c in statuses):
            probes = (ps.probe_delay(c) for c in pod["spec"].get("containers") or [])
            ready_in = max(0.0, started_at + max(probes, default=0.0) - now)
            if exit_in is not None and exit_in < ready_in:
                return "pod-exit", exit_in
            return "pod-probe-ready", ready_in
        if key in self._resumed:  # back from a failure: Ready again if the node controller said otherwise
            if _pod_condition(pod, "Ready") == "False":
                return "pod-probe-ready", 0.0
            self._resumed.discard(key)
        return None if exit_in is None else ("pod-exit", exit_in)

    async def act_pod(self, name: str, pod: dict, key: str) -> None:
        """Do the built-in transition `name` on `pod`."""
        node_name: str = pod["spec"].get("nodeName") or ""
        if name == "pod-create":
            await self._write_status(pod, self._creating_status(pod))
        elif name == "pod-ready":
            if await self._write_status(pod, self._running_status(pod, node_name, restarts=None)):
                await self._container_events(pod, node_name, pulled=True)
            self.enqueue_after(key, 0.0)  # the run time and the probes start counting now
        elif name == "pod-probe-ready":
            self._resumed.discard(key)
            await self._write_status(pod, self._with_readiness(pod, self.clock.now()))
        elif name == "pod-exit":
            await self._containers_exited(pod, key, node_name, self._ran(pod))
        elif name == "pod-crashloop-backoff":
            await self._leave_backoff(pod, key, node_name)
        elif name == "pod-terminating":
            await self._turn_unready(pod)
        elif name == "pod-stopped":
            if await self._write_status(pod, ps.stopped_status(pod, self._now(), self._stop_time(pod)[1])):
                await self._delete(pod, key)  # pod-delete at once, without waiting for the update
        else:  # pod-delete
            await self._delete(pod, key)

    def _ran(self, pod: dict) -> float:
        """How long the pod's containers have been running."""
        starts = (rfc3339_seconds(((c.get("state") or {}).get("running") or {}).get("startedAt"))
                  for c in (pod.get("status") or {}).get("containerStatuses") or [])
        started_at = max((s for s in starts if s is not None), default=None)
        return 0.0 if started_at is None else self.clock.now() - started_at

    def _template_funcs(self, obj: dict) -> dict[str, Callable[..., Any]]:
        """KWOK's template functions for `obj` (a Pod or a Node)."""
        md = obj.get("metadata") or {}
        node_name = md.get("name", "") if obj.get("kind") == "Node" else (obj.get("spec") or {}).get("nodeName", "")

        def pod_ip_with(node: str, host_network: bool = False, uid: str = "", name: str = "", ns: str = "") -> str:
            return self._host_ip(node) if host_network else self._pod_ip_for(f"{ns}/{name}", node)

        return {
            "Now": lambda: rfc3339_nano(self.clock.now()), "StartTime": lambda: rfc3339_nano(STARTED.timestamp()),
            "Version": lambda: VERSION, "NodeConditions": lambda: [dict(c) for c in NODE_CONDITIONS],
            "NodeName": lambda: node_name, "NodeIP": lambda: self._host_ip(node_name), "NodePort": lambda: 10250,
            "NodeIPWith": self._host_ip, "PodIPWith": pod_ip_with,
            "NodeIPsWith": lambda node: [ip for ip in [self._host_ip(node)] if ip],
            "PodIPsWith": lambda *a: [ip for ip in [pod_ip_with(*a)] if ip],
            "PodIP": lambda: pod_ip_with(node_name, bool((obj.get("spec") or {}).get("hostNetwork")), "",
                                         md.get("name", ""), md.get("namespace", "")),
        }

    def _forget(self, key: str) -> None:
        self._written.pop(key, None)
        self._resumed.discard(key)
        self._runners["Pod"].forget(key)
        self._release_ip(key)
        self._backoff.pop(key, None)
        self._restart_at.pop(key, None)

    async def _leave_backoff(self, pod: dict, key: str, node_name: str) -> None:
        """Containers waiting in back-off start again (the back-off is over)."""
        self._restart_at.pop(key, None)
        restarts = {c["name"]: 1 for c in pod["spec"].get("containers") or []}
        if await self._write_status(pod, self._running_status(pod, node_name, restarts, keep_last=True)):
            await self._container_events(pod, node_name, pulled=False)

    def _with_readiness(self, pod: dict, now: float) -> dict:
        status = dict(pod.get("status") or {})
        probes = {c["name"]: ps.probe_delay(c) for c in pod["spec"].get("containers") or []}
        cstats, unready = [], []
        for cs in status.get("containerStatuses") or []:
            started = rfc3339_seconds(((cs.get("state") or {}).get("running") or {}).get("startedAt")) or now
            ready = now >= started + probes.get(cs.get("name"), 0.0)
            cstats.append(dict(cs, ready=ready))
            if not ready:
                unready.append(cs.get("name", ""))
        status["containerStatuses"] = cstats
        ps.readiness(status, self._now(), unready)
        return status

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

    def _running_status(self, pod: dict, node_name: str, restarts: dict | None, exit_code: int = 0,
                        keep_last: bool = False) -> dict:
        """Running containers; `restarts` counts a restart per container name (the last termination
        with `exit_code`, or, with `keep_last`, the one a back-off recorded)."""
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
        old = {c.get("name"): c for c in status.get("containerStatuses") or []}
        cstats = [self._container_running(pod, c, old.get(c["name"]) or {}, (restarts or {}).get(c["name"], 0),
                                          exit_code, keep_last, now)
                  for c in pod["spec"].get("containers") or []]
        unready = [cs["name"] for cs in cstats if not cs["ready"]]
        status["containerStatuses"] = cstats
        _set_conditions(status, [_cond("PodReadyToStartContainers", "True", now), _cond("Initialized", "True", now)])
        ps.readiness(status, now, unready)
        if pod["spec"].get("initContainers"):
            status["initContainerStatuses"] = [{
                "name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": True, "restartCount": 0,
                "started": False, "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                                          "startedAt": now, "finishedAt": now}}}
                for c in pod["spec"]["initContainers"]]
        return status

    @staticmethod
    def _container_running(pod: dict, c: dict, prev: dict, restarted: int, exit_code: int, keep_last: bool,
                           now: str) -> dict:
        count = prev.get("restartCount", 0) + restarted
        cs = {"name": c["name"], "image": c.get("image", ""),
              "imageID": f"docker.io/library/{c.get('image', '')}@sha256:" + "0" * 64,
              "containerID": f"phalanx://{pod['metadata'].get('uid', '')[:8]}-{c['name']}-{count}",
              "ready": ps.probe_delay(c) <= 0, "restartCount": count, "started": True,
              "state": {"running": {"startedAt": now}}, "lastState": {}}
        if restarted and keep_last:
            cs["lastState"] = prev.get("lastState") or {}
        elif restarted:
            started = ((prev.get("state") or {}).get("running") or {}).get("startedAt", now)
            cs["lastState"] = {"terminated": ps.terminated(exit_code, started, now, prev.get("containerID", ""))}
        return cs

    async def _containers_exited(self, pod: dict, key: str, node_name: str, ran: float) -> None:
        code = ps.plan(pod).exit_code
        policy = pod["spec"].get("restartPolicy", "Always")
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            await self._restart(pod, key, node_name, code, ran)
            return
        now = self._now()
        status = dict(pod.get("status") or {})
        status["phase"] = "Succeeded" if code == 0 else "Failed"
        cstats = []
        for cs in status.get("containerStatuses") or []:
            started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now)
            cstats.append(dict(cs, ready=False, started=False,
                               state={"terminated": ps.terminated(code, started, now, cs.get("containerID", ""))}))
        status["containerStatuses"] = cstats
        _set_conditions(status, [
            _cond("PodReadyToStartContainers", "False", now),
            _cond("Initialized", "True", now, "PodCompleted"),
            _cond("Ready", "False", now, "PodCompleted"),
            _cond("ContainersReady", "False", now, "PodCompleted"),
        ])
        await self._write_status(pod, status)
        self._release_ip(key)

    async def _restart(self, pod: dict, key: str, node_name: str, code: int, ran: float) -> None:
        """Restart the exited containers: at once the first time (and after a run of 10 minutes),
        else after the back-off, waiting in CrashLoopBackOff meanwhile."""
        backoff = None if ran >= ps.BACKOFF_RESET else self._backoff.get(key)
        if backoff is None:
            restarts = {c["name"]: 1 for c in pod["spec"].get("containers") or []}
            if await self._write_status(pod, self._running_status(pod, node_name, restarts, exit_code=code)):
                self._backoff[key] = ps.next_backoff(None)
                await self._container_events(pod, node_name, pulled=False)
                self.enqueue_after(key, 0.0)
            return
        if await self._write_status(pod, ps.backoff_status(pod, self._now(), backoff, code)):
            self._restart_at[key] = self.clock.now() + backoff
            self._backoff[key] = ps.next_backoff(backoff)
            for c in pod["spec"].get("containers") or []:
                await self._event(pod, node_name, c["name"], "BackOff",
                                  f"Back-off restarting failed container {c['name']} in pod {ps.pod_ref(pod)}",
                                  "Warning")
            self.enqueue_after(key, backoff)

    async def _delete(self, pod: dict, key: str) -> None:
        md = pod["metadata"]
        try:
            await self.client.delete("v1", "Pod", md.get("namespace", ""), md["name"], grace_period=0,
                                     preconditions={"uid": md.get("uid")})
        except StatusError as e:
            if e.code not in (404, 409):
                raise
        self._forget(key)

    async def _turn_unready(self, pod: dict) -> None:
        """A deleted pod: Ready=False and a Killing event per running container."""
        if await self._write_status(pod, ps.unready_status(pod, self._now())):
            for c in (pod.get("status") or {}).get("containerStatuses") or []:
                if "running" in (c.get("state") or {}):
                    await self._event(pod, pod["spec"].get("nodeName", ""), c["name"], "Killing",
                                      f"Stopping container {c['name']}")

    def _stop_time(self, pod: dict) -> tuple[float, int]:
        """When a deleted pod's containers stop, and their exit code: after the longest preStop hook
        (or the configured terminating delay), at the latest when the grace period ends (137)."""
        md = pod["metadata"]
        grace = float(md.get("deletionGracePeriodSeconds") or 0)
        deadline = rfc3339_seconds(md.get("deletionTimestamp"))
        hooks = max((ps.prestop_seconds(c) for c in pod["spec"].get("containers") or []), default=0.0)
        stop_after = min(grace, max(hooks, self.delays.terminating))
        stop_at = (deadline - grace if deadline is not None else self.clock.now()) + stop_after
        return stop_at, 137 if grace > 0 and hooks >= grace else 0

    # -- events --------------------------------------------------------------------------------
    async def _event(self, pod: dict, node_name: str, container: str, reason: str, message: str,
                     type: str = "Normal") -> None:
        if not self.events:
            return
        try:
            await self.client.create_event(pod, reason, message, type=type, component="kubelet", host=node_name,
                                           field_path=f"spec.containers{{{container}}}")
        except StatusError as e:  # events are best effort, as upstream's recorder
            log.debug("event %s for %s: %s", reason, object_key(pod), e)

    async def _container_events(self, pod: dict, node_name: str, pulled: bool) -> None:
        """Pulling/Pulled, Created and Started for each container, with upstream's messages."""
        for c in pod["spec"].get("containers") or []:
            name, image = c["name"], c.get("image", "")
            policy = c.get("imagePullPolicy") or ("Always" if ":" not in image.rsplit("/", 1)[-1]
                                                  or image.endswith(":latest") else "IfNotPresent")
            if pulled and policy == "Always":
                await self._event(pod, node_name, name, "Pulling", f'Pulling image "{image}"')
                await self._event(pod, node_name, name, "Pulled", f'Successfully pulled image "{image}" in 0s '
                                                                  f"(0s including waiting). Image size: 0 bytes.")
            else:
                await self._event(pod, node_name, name, "Pulled",
                                  f'Container image "{image}" already present on machine')
            await self._event(pod, node_name, name, "Created", f"Created container: {name}")
            await self._event(pod, node_name, name, "Started", f"Started container {name}")

    async def _write_status(self, pod: dict, status: dict) -> bool:
        """Write the pod's status; False when the pod changed or went meanwhile."""
        # Handed over: a new top level, metadata and status; the spec is the cache's, which the API
        # server only reads.
        new = {"apiVersion": "v1", "kind": "Pod", "metadata": dict(pod["metadata"]), "spec": pod["spec"],
               "status": status}
        try:
            stored = await self.client.update_status(new, handover=True)
        except StatusError as e:
            if e.code == 409:
                self.queue.add(object_key(pod))  # a newer version will come through the informer
                return False
            if e.code == 404:
                return False
            raise
        self._written[object_key(pod)] = _rv(stored)
        return True
