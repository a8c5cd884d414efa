"""The ReplicaSet controller (kube-controller-manager's `replicaset` controller), through `Client`.

    ReplicaSetController(client, factory, clock=clock).start()

Keeps `spec.replicas` active pods for each apps/v1 ReplicaSet: pods from the template with
generateName `<rs>-` and the ReplicaSet as controller (events SuccessfulCreate `Created pod: <name>`,
SuccessfulDelete `Deleted pod: <name>`), created in slow-start batches of 1, 2, 4, ... (at most 500
per sync); surplus pods are deleted least-valuable first (unscheduled, pending, not ready, newest).
Orphan pods the selector matches are adopted; owned pods it no longer matches are released.

Status as upstream reports it: `replicas` (active pods), `fullyLabeledReplicas` (pods carrying every
template label), `readyReplicas`, `availableReplicas` (ready for `minReadySeconds`),
`observedGeneration`, and the `ReplicaFailure` condition when pods cannot be created or deleted.
"""

from __future__ import annotations

from typing import Any

from ..client.informer import InformerFactory, object_key
from ..machinery.errors import StatusError
from ..machinery.meta import controller_of, deep_copy
from ..client.clock import Clock
from ..client.controller import Controller
from ..client.interface import Client
from ..client.retry import retry_on_conflict
from .podcontrol import (BatchError, ControllerExpectations, PodControl, active_pods_deletion_order,
                         add_workload_indexers, candidates_for, claim_objects, is_namespace_terminating,
                         is_pod_active, is_pod_available, is_pod_ready, rfc3339, selector_of, slow_start_batch,
                         SLOW_START_INITIAL_BATCH_SIZE)

Obj = dict[str, Any]

COMPONENT = "replicaset-controller"
BURST_REPLICAS = 500
# Pod events that change only the ReplicaSet's status (a pod bound, started, ready; one of a batch of
# creations still outstanding) are collapsed into one sync per this window: a sync reads every pod of
# the ReplicaSet, so one per event made a 2,000-replica rollout quadratic.
STATUS_SYNC_WINDOW = 0.1
REPLICA_FAILURE = "ReplicaFailure"


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def rs_condition(status: Obj, ctype: str) -> dict | None:
    for c in status.get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


class ReplicaSetController(Controller[str]):
    name = "replicaset"
    workers = 5  # --concurrent-replicaset-syncs
    # The kind managed; the ReplicationController controller (replicationcontroller.py) reuses this one.
    api_version = "apps/v1"
    kind = "ReplicaSet"
    component = COMPONENT

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None, workers: int | None = None,
                 burst_replicas: int = BURST_REPLICAS):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.burst_replicas = burst_replicas
        self.pod_control = PodControl(client, self.component)
        self.expectations = ControllerExpectations(self.clock)
        self.replica_sets = self.informer(self.api_version, self.kind)
        self.pods = self.informer("v1", "Pod")
        add_workload_indexers(self.pods)
        self.replica_sets.add_event_handler(on_add=lambda rs: self.enqueue(object_key(rs)),
                                            on_update=self._update_rs, on_delete=self._delete_rs)
        self.pods.add_event_handler(on_add=self._add_pod, on_update=self._update_pod, on_delete=self._delete_pod)

    # -- event handlers --------------------------------------------------------------------------
    def selector_of(self, rs: Obj) -> Any:
        """The pods the object selects (`spec.selector`, a LabelSelector)."""
        return selector_of(rs)

    def _update_rs(self, old: Obj, cur: Obj) -> None:
        """A new spec or metadata is synced at once; a write of the status alone (this controller's
        own, most of the time) only within the status window."""
        key = object_key(cur)
        if _meta_that_matters(cur) != _meta_that_matters(old):
            self.enqueue(key)
        else:
            self.enqueue_coalesced(key, STATUS_SYNC_WINDOW)

    def _delete_rs(self, rs: Obj) -> None:
        key = object_key(rs)
        self.expectations.delete(key)
        self.enqueue(key)

    def _resolve(self, namespace: str, ref: dict | None) -> Obj | None:
        if not ref or ref.get("kind") != self.kind:
            return None
        rs = self.replica_sets.get(f"{namespace}/{ref.get('name')}")
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return None
        return rs

    def _selecting(self, pod: Obj) -> list[Obj]:
        md = pod.get("metadata") or {}
        out = []
        for rs in self.replica_sets.list(md.get("namespace")):
            sel = self.selector_of(rs)
            if not sel.empty and sel.matches(md.get("labels") or {}):
                out.append(rs)
        return out

    def _add_pod(self, pod: Obj) -> None:
        md = pod["metadata"]
        if md.get("deletionTimestamp"):
            self._delete_pod(pod)
            return
        rs = self._resolve(md.get("namespace", ""), controller_of(pod))
        if rs is not None:
            key = object_key(rs)
            self.expectations.creation_observed(key)
            self._enqueue_observed(key)
            return
        if controller_of(pod) is None:
            for rs in self._selecting(pod):
                self.enqueue(object_key(rs))

    def _update_pod(self, old: Obj, cur: Obj) -> None:
        md = cur["metadata"]
        if md.get("resourceVersion") == old["metadata"].get("resourceVersion"):
            return
        labels_changed = (md.get("labels") or {}) != (old["metadata"].get("labels") or {})
        if md.get("deletionTimestamp"):
            self._delete_pod(cur)
            if labels_changed:
                self._delete_pod(old)
            return
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        if cur_ref != old_ref and old_ref is not None:
            rs = self._resolve(md.get("namespace", ""), old_ref)
            if rs is not None:
                self.enqueue(object_key(rs))
        if cur_ref is not None:
            rs = self._resolve(md.get("namespace", ""), cur_ref)
            if rs is None:
                return
            key = object_key(rs)
            self.enqueue_coalesced(key, STATUS_SYNC_WINDOW)
            # a pod that turned ready becomes available minReadySeconds later
            mrs = _int((rs.get("spec") or {}).get("minReadySeconds"))
            if mrs > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                self.enqueue_after(key, mrs + 1)
            return
        if labels_changed or cur_ref != old_ref:
            for rs in self._selecting(cur):
                self.enqueue(object_key(rs))

    def _delete_pod(self, pod: Obj) -> None:
        md = pod.get("metadata") or {}
        rs = self._resolve(md.get("namespace", ""), controller_of(pod))
        if rs is None:
            return
        key = object_key(rs)
        self.expectations.deletion_observed(key, md.get("uid", ""))
        self._enqueue_observed(key)

    def _enqueue_observed(self, key: str) -> None:
        """A creation or deletion seen: the last one of a batch lets the next batch start now; the
        ones before it only change the status."""
        if self.expectations.satisfied(key):
            self.enqueue(key)
        else:
            self.enqueue_coalesced(key, STATUS_SYNC_WINDOW)

    # -- sync --------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        shared = self.replica_sets.get(key)
        if shared is None:
            self.expectations.delete(key)
            return
        rs = deep_copy(shared)
        satisfied = self.expectations.satisfied(key)
        selector = self.selector_of(rs)
        if selector.is_nothing:
            return  # an invalid selector: nothing to manage
        active = [p for p in candidates_for(self.pods, rs) if is_pod_active(p)]
        pods = await claim_objects(self.client, rs, selector, active, api_version="v1", kind="Pod")
        manage_error: Exception | None = None
        if satisfied and not rs["metadata"].get("deletionTimestamp"):
            try:
                await self._manage_replicas(key, pods, rs)
            except Exception as e:  # reported in status, then retried
                manage_error = e
        status = self._calculate_status(rs, pods, manage_error)
        updated = await self._update_status(rs, status)
        mrs = _int((rs.get("spec") or {}).get("minReadySeconds"))
        if manage_error is None and mrs > 0 and updated.get("readyReplicas") == _int(rs["spec"].get("replicas")) \
                and updated.get("availableReplicas") != _int(rs["spec"].get("replicas")):
            self.enqueue_after(key, mrs)
        if manage_error is not None:
            raise manage_error

    async def _manage_replicas(self, key: str, pods: list[Obj], rs: Obj) -> None:
        diff = len(pods) - _int((rs.get("spec") or {}).get("replicas"))
        ns = rs["metadata"].get("namespace", "")
        if diff < 0:
            count = min(-diff, self.burst_replicas)
            self.expectations.expect_creations(key, count)
            template = rs["spec"].get("template") or {}

            async def create(_: int) -> None:
                try:
                    await self.pod_control.create_pod(ns, template, rs)
                except StatusError as e:
                    self.expectations.creation_observed(key)
                    if is_namespace_terminating(e):
                        return
                    raise

            try:
                await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE, create)
            except BatchError as e:
                for _ in range(e.skipped):
                    self.expectations.creation_observed(key)
                raise e.first from None
        elif diff > 0:
            diff = min(diff, self.burst_replicas)
            victims = active_pods_deletion_order(pods)[:diff]
            self.expectations.expect_deletions(key, [p["metadata"].get("uid", "") for p in victims])
            first_error: Exception | None = None
            for pod in victims:
                md = pod["metadata"]
                try:
                    await self.pod_control.delete_pod(ns, md["name"], rs)
                except StatusError as e:
                    self.expectations.deletion_observed(key, md.get("uid", ""))
                    if e.code != 404:
                        first_error = first_error or e
            if first_error is not None:
                raise first_error

    def _calculate_status(self, rs: Obj, pods: list[Obj], manage_error: Exception | None) -> Obj:
        spec = rs.get("spec") or {}
        status = deep_copy(rs.get("status") or {})
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        mrs = _int(spec.get("minReadySeconds"))
        now = self.clock.now()
        fully_labeled = ready = available = 0
        for p in pods:
            labels = p["metadata"].get("labels") or {}
            if all(labels.get(k) == v for k, v in template_labels.items()):
                fully_labeled += 1
            if is_pod_ready(p):
                ready += 1
                if is_pod_available(p, mrs, now):
                    available += 1
        failure = rs_condition(status, REPLICA_FAILURE)
        if manage_error is not None and failure is None:
            diff = len(pods) - _int(spec.get("replicas"))
            reason = "FailedCreate" if diff < 0 else "FailedDelete"
            message = str(getattr(manage_error, "message", manage_error))
            status.setdefault("conditions", []).append({"type": REPLICA_FAILURE, "status": "True",
                                                        "lastTransitionTime": rfc3339(self.clock),
                                                        "reason": reason, "message": message})
        elif manage_error is None and failure is not None:
            status["conditions"] = [c for c in status["conditions"] if c.get("type") != REPLICA_FAILURE]
            if not status["conditions"]:
                status.pop("conditions")
        status["replicas"] = len(pods)
        status["fullyLabeledReplicas"] = fully_labeled
        status["readyReplicas"] = ready
        status["availableReplicas"] = available
        status["observedGeneration"] = rs["metadata"].get("generation", 0)
        return status

    async def _update_status(self, rs: Obj, status: Obj) -> Obj:
        written = _status_for_write(status)
        if written == _status_for_write(rs.get("status") or {}):
            return status
        md = rs["metadata"]

        async def attempt(conflicted: bool) -> None:
            # after a conflict (the Deployment controller changed the spec): write onto the latest version
            latest = await self.client.get(self.api_version, self.kind, md.get("namespace", ""), md["name"]) \
                if conflicted else rs
            if latest["metadata"].get("uid") != md.get("uid"):
                return
            latest["status"] = written
            await self.client.update_status(latest)

        await retry_on_conflict(attempt, steps=2)
        return status


def _meta_that_matters(rs: Obj) -> tuple:
    """What of a ReplicaSet, besides its status, a sync acts on: the spec (by its generation) and the
    metadata that decides ownership and deletion. A write of the status changes none of it."""
    md = rs.get("metadata") or {}
    return (md.get("generation"), md.get("uid"), md.get("deletionTimestamp"), md.get("labels"),
            md.get("annotations"), md.get("ownerReferences"), md.get("finalizers"))


# ReplicaSetStatus in serialization order; zero counters other than replicas are omitempty.
_STATUS_ORDER = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "terminatingReplicas",
                 "observedGeneration", "conditions")


def _status_for_write(status: Obj) -> Obj:
    out = {k: status[k] for k in _STATUS_ORDER if k in status}
    out.update({k: v for k, v in status.items() if k not in out})
    out["replicas"] = _int(out.get("replicas"))
    for f in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"):
        if not out.get(f):
            out.pop(f, None)
    return out


__all__ = ["ReplicaSetController"]
