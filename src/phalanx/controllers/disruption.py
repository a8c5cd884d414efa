"""The disruption controller (kube-controller-manager's `disruption`): PodDisruptionBudget status.

For each policy/v1 PodDisruptionBudget it counts the pods its selector selects and writes what the
eviction subresource and the scheduler's preemption read, as upstream's `DisruptionController`:

- `expectedPods` and `desiredHealthy`: with an integer `minAvailable`, the matching pods and that
  number; with a percentage `minAvailable` or any `maxUnavailable`, the scale of the pods'
  controllers (Deployment, ReplicaSet, StatefulSet, ReplicationController; each counted once),
  percentages rounded up. A pod whose controller has no scale fails the sync (event
  `CalculateExpectedPodCountFailed`, `DisruptionAllowed=False` with reason `SyncFailed`);
- `currentHealthy`: ready pods that are not terminating and not in `disruptedPods`;
- `disruptedPods`: entries the eviction subresource made, dropped once their pod is gone or
  terminating, or after two minutes (the pod was not deleted after all);
- `disruptionsAllowed`: `currentHealthy - desiredHealthy`, never below 0 (0 without expected pods);
- `observedGeneration` and the `DisruptionAllowed` condition (`SufficientPods` /
  `InsufficientPods`).

Pod events are batched per budget for 100 ms; a budget's own changes sync at once.
"""

from __future__ import annotations

import math
from typing import Any

from ..api.labelselectors import label_selector_matches
from ..api.policy import set_condition, set_disruption_allowed_condition
from ..client.clock import Clock, to_datetime
from ..client.controller import Controller
from ..client.informer import InformerFactory, object_key
from ..client.interface import Client
from ..machinery.errors import StatusError
from ..machinery.meta import controller_of, deep_copy
from ..machinery.timestamps import now_rfc3339, parse_rfc3339
from .podcontrol import is_pod_ready

Obj = dict[str, Any]

DELETION_TIMEOUT = 120.0  # seconds an eviction's pod may take to start terminating
POD_BATCH_PERIOD = 0.1  # seconds: pod events of one budget within it make one sync
_SCALED_KINDS = {("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("apps", "Deployment"),
                 ("", "ReplicationController")}


class ExpectedCountError(Exception):
    """The pods' controllers could not be scaled (upstream: `found no controllers for pod`)."""


def scaled_value(value: Any, total: int, round_up: bool = True) -> int:
    """`intstr.GetScaledValueFromIntOrPercent`."""
    if isinstance(value, str) and value.endswith("%"):
        pct = int(value[:-1])
        exact = pct * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value or 0)


def selects(pdb: Obj, pod: Obj) -> bool:
    sel = (pdb.get("spec") or {}).get("selector")
    return sel is not None and label_selector_matches(sel, (pod.get("metadata") or {}).get("labels"))


class DisruptionController(Controller[str]):
    name = "disruption"
    workers = 1

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.pdbs = self.informer("policy/v1", "PodDisruptionBudget")
        self.pods = self.informer("v1", "Pod")
        self.enqueue_on(self.pdbs)
        self.pods.add_event_handler(on_add=self._pod_changed, on_update=lambda old, new: self._pod_changed(new),
                                    on_delete=self._pod_changed)

    def _pod_changed(self, pod: Obj) -> None:
        for pdb in self.pdbs.list((pod.get("metadata") or {}).get("namespace")):
            if selects(pdb, pod):
                self.queue.add_after(object_key(pdb), POD_BATCH_PERIOD)  # the earliest pending add wins

    # -- sync --------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        shared = self.pdbs.get(key)
        if shared is None:
            return
        pdb = deep_copy(shared)
        ns = pdb["metadata"].get("namespace", "")
        pods = [p for p in self.pods.list(ns) if selects(pdb, p)]
        if not pods:
            await self.client.create_event(pdb, "NoPods", "No matching pods found", type="Normal")
        try:
            expected, desired, unmanaged = await self._expected_count(pdb, pods)
        except ExpectedCountError as e:
            await self.client.create_event(pdb, "CalculateExpectedPodCountFailed",
                                           f"Failed to calculate the number of expected pods: {e}", type="Warning")
            await self._fail_safe(pdb, str(e))
            return
        if unmanaged:
            await self.client.create_event(
                pdb, "UnmanagedPods",
                f"Pods selected by this PodDisruptionBudget (selector: {_selector_text(pdb)}) were found to be "
                "unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in "
                "undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB "
                "to an integer value.", type="Warning")
        disrupted, recheck = self._disrupted_pods(pdb, pods)
        healthy = sum(1 for p in pods if not p["metadata"].get("deletionTimestamp")
                      and p["metadata"].get("name") not in disrupted and is_pod_ready(p))
        await self._write_status(pdb, healthy, desired, expected, disrupted)
        if recheck is not None:
            self.enqueue_after(key, max(recheck, 0.0) + 0.001)

    async def _expected_count(self, pdb: Obj, pods: list[Obj]) -> tuple[int, int, list[str]]:
        spec = pdb.get("spec") or {}
        max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
        if max_unavailable is not None:
            expected, unmanaged = await self._expected_scale(pods)
            return expected, max(expected - scaled_value(max_unavailable, expected), 0), unmanaged
        if isinstance(min_available, int):
            return len(pods), min_available, []
        if isinstance(min_available, str):
            expected, unmanaged = await self._expected_scale(pods)
            return expected, scaled_value(min_available, expected), unmanaged
        return 0, 0, []

    async def _expected_scale(self, pods: list[Obj]) -> tuple[int, list[str]]:
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scales:
                continue
            found = await self._scale_of(pod["metadata"].get("namespace", ""), ref)
            if found is None:
                raise ExpectedCountError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            uid, replicas = found
            scales[uid] = replicas
        return sum(scales.values()), unmanaged

    async def _scale_of(self, namespace: str, ref: dict) -> tuple[str, int] | None:
        """(controller uid, spec.replicas) of the pod's controller; a ReplicaSet a Deployment
        controls answers with the Deployment."""
        group = str(ref.get("apiVersion", "")).rpartition("/")[0]
        if (group, ref.get("kind")) not in _SCALED_KINDS:
            return None
        try:
            owner = await self.client.get(ref["apiVersion"], ref["kind"], namespace, ref["name"])
        except StatusError as e:
            if e.code == 404:
                return None
            raise
        if owner["metadata"].get("uid") != ref.get("uid"):
            return None
        parent = controller_of(owner)
        if ref.get("kind") == "ReplicaSet" and parent is not None and parent.get("kind") == "Deployment":
            return await self._scale_of(namespace, parent)
        return owner["metadata"]["uid"], int((owner.get("spec") or {}).get("replicas") or 0)

    def _disrupted_pods(self, pdb: Obj, pods: list[Obj]) -> tuple[dict[str, str], float | None]:
        """`buildDisruptedPodMap`: the entries still waiting for their pod's deletion, and when the
        first of them expires (seconds from now)."""
        now = self.clock.now()
        by_name = {p["metadata"]["name"]: p for p in pods}
        kept: dict[str, str] = {}
        recheck: float | None = None
        for name, ts in ((pdb.get("status") or {}).get("disruptedPods") or {}).items():
            pod = by_name.get(name)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                continue
            at = parse_rfc3339(ts)
            if at is None:
                continue
            left = at.timestamp() + DELETION_TIMEOUT - now
            if left < 0:
                self.log.info("pod %s/%s was expected to be deleted at %s but it wasn't", pdb["metadata"].get(
                    "namespace"), name, ts)
                continue
            kept[name] = ts
            recheck = left if recheck is None else min(recheck, left)
        return kept, recheck

    async def _write_status(self, pdb: Obj, healthy: int, desired: int, expected: int,
                            disrupted: dict[str, str]) -> None:
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        old = pdb.get("status") or {}
        status: Obj = {k: v for k, v in deep_copy(old).items() if k == "conditions"}
        status.update({"observedGeneration": pdb["metadata"].get("generation", 0), "disruptionsAllowed": allowed,
                       "currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected})
        if disrupted:
            status["disruptedPods"] = disrupted
        set_disruption_allowed_condition(status, self._now())
        await self._update(pdb, status)

    async def _fail_safe(self, pdb: Obj, message: str) -> None:
        status = deep_copy(pdb.get("status") or {})
        status["disruptionsAllowed"] = 0
        status["observedGeneration"] = pdb["metadata"].get("generation", 0)
        set_condition(status, {"type": "DisruptionAllowed", "status": "False",
                               "observedGeneration": status["observedGeneration"], "lastTransitionTime": self._now(),
                               "reason": "SyncFailed", "message": message})
        await self._update(pdb, status)

    async def _update(self, pdb: Obj, status: Obj) -> None:
        if status == (pdb.get("status") or {}):
            return
        pdb["status"] = status
        await self.client.update_status(pdb)  # a conflict requeues: the next sync reads the new budget

    def _now(self) -> str:
        return now_rfc3339(to_datetime(self.clock.now()))


def _selector_text(pdb: Obj) -> str:
    sel = (pdb.get("spec") or {}).get("selector") or {}
    return str(sel)


__all__ = ["DisruptionController", "DELETION_TIMEOUT", "scaled_value"]
