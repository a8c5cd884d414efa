"""The StatefulSet controller (kube-controller-manager's `statefulset` controller), through `Client`.

    StatefulSetController(client, factory, clock=clock).start()

For each apps/v1 StatefulSet, as upstream's `stateful_set_control.go` does:

- pods `<set>-<ordinal>` for ordinals `[start, start+replicas)`, each with the claims of its
  `volumeClaimTemplates` (`<template>-<set>-<ordinal>`, created before the pod), the set as
  controller and the labels `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index`,
  `controller-revision-hash`;
- `OrderedReady`: one pod at a time, each created only when every lower ordinal is Running and
  Ready; scaling down deletes the highest ordinal first and waits for it to go. `Parallel`: all at
  once;
- revisions: a ControllerRevision `<set>-<hash>` per distinct pod template (`revision` counting up,
  `revisionHistoryLimit` old ones kept), `status.currentRevision` / `updateRevision`;
- `RollingUpdate`: pods at or above `partition` whose revision is not the update revision are
  deleted one at a time from the highest ordinal down, once the others are healthy, and recreated at
  the update revision; `OnDelete` leaves that to the user;
- `persistentVolumeClaimRetentionPolicy`: `whenDeleted: Delete` makes the set an owner of its claims,
  `whenScaled: Delete` makes a condemned pod the owner of its claims (the garbage collector
  deletes them); the default `Retain` keeps them;
- status: replicas, readyReplicas, currentReplicas, updatedReplicas, availableReplicas,
  observedGeneration, the revisions and collisionCount — what `kubectl rollout status sts/x` reads;
- events on the set: `SuccessfulCreate` "create Pod web-0 in StatefulSet web successful",
  `SuccessfulCreate` "create Claim www-web-0 Pod web-0 in StatefulSet web success",
  `SuccessfulDelete` "delete Pod web-2 in StatefulSet web successful", the `Failed*` forms, and
  `RecreatingFailedPod` / `RecreatingTerminatedPod` when a pod that ended is replaced.
"""

from __future__ import annotations

from typing import Any

from ..client.clock import Clock
from ..client.controller import Controller
from ..client.informer import InformerFactory, object_key
from ..client.interface import MERGE_PATCH, Client
from ..machinery.errors import StatusError
from ..machinery.meta import controller_of, deep_copy
from .podcontrol import add_workload_indexers, candidates_for, claim_objects, selector_of
from .statefulset_utils import (
    claims_for, compute_status, equal_revision, is_failed, is_healthy, is_parallel, is_rolling_update,
    is_running_and_available, is_succeeded, is_terminating, max_unavailable, new_pod, new_revision,
    parent_and_ordinal, partition_of, replicas_of, revision_number, revision_of, set_from_revision, sort_revisions, start_ordinal,
)

Obj = dict[str, Any]

COMPONENT = "statefulset-controller"


class _Wait(Exception):
    """This sync has done what it may; the next event continues (OrderedReady's one step at a time)."""


class StatefulSetController(Controller[str]):
    name = "statefulset"
    workers = 5  # --concurrent-statefulset-syncs

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.sets = self.informer("apps/v1", "StatefulSet")
        self.pods = self.informer("v1", "Pod")
        add_workload_indexers(self.pods)
        self.revisions = self.informer("apps/v1", "ControllerRevision")
        self.claims = self.informer("v1", "PersistentVolumeClaim")
        self.enqueue_on(self.sets)
        self.pods.add_event_handler(on_add=self._pod_event, on_update=lambda old, new: self._pod_event(new),
                                    on_delete=self._pod_event)
        self.revisions.add_event_handler(on_add=self._owned_event, on_delete=self._owned_event)
        self.claims.add_event_handler(on_delete=self._selected_event)  # a pending pod's claim comes back

    # -- event handlers --------------------------------------------------------------------------
    def _owner_key(self, obj: Obj) -> str | None:
        ref = controller_of(obj)
        if not ref or ref.get("kind") != "StatefulSet":
            return None
        return f"{(obj.get('metadata') or {}).get('namespace', '')}/{ref.get('name')}"

    def _pod_event(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.enqueue(key)
        elif controller_of(pod) is None:
            self._selected_event(pod)  # an orphan some set may adopt

    def _selected_event(self, obj: Obj) -> None:
        """Enqueue the sets whose selector matches the object's labels."""
        ns = (obj.get("metadata") or {}).get("namespace")
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for set_ in self.sets.list(ns):
            sel = selector_of(set_)
            if not sel.empty and sel.matches(labels):
                self.enqueue(object_key(set_))

    def _owned_event(self, obj: Obj) -> None:
        key = self._owner_key(obj)
        if key is not None:
            self.enqueue(key)

    # -- sync --------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        shared = self.sets.get(key)
        if shared is None:
            return
        set_ = deep_copy(shared)
        if selector_of(set_).is_nothing:
            return
        pods = await self._claim_pods(set_)
        current, update, collision = await self._revisions(set_, pods)
        if not set_["metadata"].get("deletionTimestamp"):
            try:
                await self._update(set_, pods, current, update)
            except _Wait:
                pass
        pods = await self._claim_pods(set_)
        status = compute_status(set_, pods, current["metadata"]["name"], update["metadata"]["name"],
                                self.clock.now(), collision)
        await self._write_status(set_, status)
        await self._truncate_history(set_, pods, current, update)
        mrs = int((set_.get("spec") or {}).get("minReadySeconds") or 0)
        if mrs and status["availableReplicas"] < status["readyReplicas"]:
            self.enqueue_after(key, mrs)  # ready pods become available minReadySeconds later

    async def _claim_pods(self, set_: Obj) -> list[Obj]:
        name = set_["metadata"]["name"]

        def is_member(pod: Obj) -> bool:
            return parent_and_ordinal(pod)[0] == name
        return await claim_objects(self.client, set_, selector_of(set_), candidates_for(self.pods, set_),
                                   api_version="v1", kind="Pod", filter_fn=is_member)

    # -- revisions ---------------------------------------------------------------------------------
    def _owned_revisions(self, set_: Obj) -> list[Obj]:
        uid = set_["metadata"]["uid"]
        return sort_revisions([r for r in self.revisions.list(set_["metadata"].get("namespace"))
                               if (controller_of(r) or {}).get("uid") == uid])

    async def _revisions(self, set_: Obj, pods: list[Obj]) -> tuple[Obj, Obj, int]:
        """`getStatefulSetRevisions`: the current and update revisions, the update one created (or
        an equal older one renumbered) when the template changed."""
        revisions = self._owned_revisions(set_)
        status = set_.get("status") or {}
        collision = int(status.get("collisionCount") or 0)
        next_number = revision_number(revisions[-1]) + 1 if revisions else 1
        wanted = new_revision(set_, next_number, collision)
        equal = [r for r in revisions if equal_revision(r, wanted)]
        if equal and revisions and equal[-1] is revisions[-1]:
            update = revisions[-1]
        elif equal:
            body = {"revision": next_number}
            update = await self.client.patch("apps/v1", "ControllerRevision", equal[-1]["metadata"]["namespace"],
                                             equal[-1]["metadata"]["name"], body, MERGE_PATCH)
        else:
            update, collision = await self._create_revision(set_, wanted, next_number, collision)
        current = next((r for r in revisions if r["metadata"]["name"] == status.get("currentRevision")), update)
        return current, update, collision

    async def _create_revision(self, set_: Obj, wanted: Obj, number: int, collision: int) -> tuple[Obj, int]:
        while True:
            try:
                return await self.client.create(wanted), collision
            except StatusError as e:
                if e.code != 409:
                    raise
            existing = await self.client.get("apps/v1", "ControllerRevision", wanted["metadata"]["namespace"],
                                              wanted["metadata"]["name"])
            if equal_revision(existing, wanted) and (controller_of(existing) or {}).get("uid") == \
                    set_["metadata"]["uid"]:
                return existing, collision
            collision += 1  # a hash collision with someone else's revision: hash again
            wanted = new_revision(set_, number, collision)

    async def _truncate_history(self, set_: Obj, pods: list[Obj], current: Obj, update: Obj) -> None:
        live = {current["metadata"]["name"], update["metadata"]["name"]} | {revision_of(p) for p in pods}
        history = [r for r in self._owned_revisions(set_) if r["metadata"]["name"] not in live]
        limit = int((set_.get("spec") or {}).get("revisionHistoryLimit", 10) or 0)
        for rev in history[:max(0, len(history) - limit)]:
            try:
                await self.client.delete("apps/v1", "ControllerRevision", rev["metadata"]["namespace"],
                                         rev["metadata"]["name"])
            except StatusError as e:
                if e.code != 404:
                    raise

    # -- the update ----------------------------------------------------------------------------------
    async def _update(self, set_: Obj, pods: list[Obj], current: Obj, update: Obj) -> None:
        """`updateStatefulSet`: replicas in ordinal order, condemned pods from the top, then the
        rolling update."""
        start, count = start_ordinal(set_), replicas_of(set_)
        replicas: dict[int, Obj] = {}
        condemned: list[Obj] = []
        for pod in pods:
            ordinal = parent_and_ordinal(pod)[1]
            if start <= ordinal < start + count:
                replicas[ordinal] = pod
            elif ordinal >= 0:
                condemned.append(pod)
        condemned.sort(key=lambda p: -parent_and_ordinal(p)[1])
        current_set = set_from_revision(set_, current)
        update_set = set_from_revision(set_, update)
        parallel = is_parallel(set_)
        for ordinal in range(start, start + count):
            await self._process_replica(set_, current_set, update_set, current, update, ordinal,
                                        replicas.get(ordinal), parallel)
        if not parallel and any(not is_healthy(p) for p in replicas.values()):
            raise _Wait()
        await self._process_condemned(set_, condemned, parallel)
        if is_rolling_update(set_):
            await self._rolling_update(set_, replicas, update, start, count)

    def _versioned_pod(self, current_set: Obj, update_set: Obj, current: Obj, update: Obj, ordinal: int) -> Obj:
        """`newVersionedStatefulSetPod`: below the partition, the current revision's template."""
        if is_rolling_update(current_set) and ordinal < start_ordinal(current_set) + partition_of(update_set):
            return new_pod(current_set, ordinal, current["metadata"]["name"])
        return new_pod(update_set, ordinal, update["metadata"]["name"])

    async def _process_replica(self, set_: Obj, current_set: Obj, update_set: Obj, current: Obj, update: Obj,
                               ordinal: int, pod: Obj | None, parallel: bool) -> None:
        """One ordinal: replace an ended pod, create a missing one (claims first); OrderedReady
        waits after each step and for the pod to be Running, Ready (and Available)."""
        if pod is not None and (is_failed(pod) or is_succeeded(pod)) and not is_terminating(pod):
            await self._replace_ended(set_, pod)
        elif pod is None:
            pod = self._versioned_pod(current_set, update_set, current, update, ordinal)
            await self._create_claims(set_, pod, ordinal)
            await self._create_pod(set_, pod)
        else:
            if not (pod.get("spec") or {}).get("nodeName") and not is_terminating(pod):
                await self._create_claims(set_, pod, ordinal)  # a pending pod whose claim was deleted
            if parallel or self._ready_for_next(set_, pod):
                return
        if not parallel:
            raise _Wait()

    async def _replace_ended(self, set_: Obj, pod: Obj) -> None:
        md = set_["metadata"]
        reason, what = ("RecreatingFailedPod", "failed") if is_failed(pod) else ("RecreatingTerminatedPod", "terminated")
        await self._event(set_, reason, f"StatefulSet {md.get('namespace', '')}/{md['name']} is recreating "
                          f"{what} Pod {pod['metadata']['name']}", warning=True)
        await self._delete_pod(set_, pod)

    def _ready_for_next(self, set_: Obj, pod: Obj) -> bool:
        """Running and Ready ("waiting for Pod ... to be Running and Ready"), and Available for
        minReadySeconds (looked at again then)."""
        if not is_healthy(pod):
            return False
        mrs = int((set_.get("spec") or {}).get("minReadySeconds") or 0)
        if mrs and not is_running_and_available(pod, mrs, self.clock.now()):
            self.enqueue_after(object_key(set_), mrs)
            return False
        return True

    async def _create_claims(self, set_: Obj, pod: Obj, ordinal: int) -> None:
        """`createPersistentVolumeClaims`: the pod's missing claims, owned by the set when the
        retention policy deletes them with it."""
        deleted = ((set_.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}).get("whenDeleted")
        for claim in claims_for(set_, ordinal).values():
            md = claim["metadata"]
            if self.claims.get(f"{md['namespace']}/{md['name']}") is not None:
                continue
            if deleted == "Delete":
                md["ownerReferences"] = [_owner_ref(set_)]
            try:
                await self.client.create(claim)
            except StatusError as e:
                if e.code == 409:
                    continue
                await self._event(set_, "FailedCreate", f"create Claim {md['name']} for Pod "
                                  f"{pod['metadata']['name']} in StatefulSet {set_['metadata']['name']} failed "
                                  f"error: {e.message}", warning=True)
                raise
            await self._event(set_, "SuccessfulCreate", f"create Claim {md['name']} Pod {pod['metadata']['name']} "
                              f"in StatefulSet {set_['metadata']['name']} success")

    async def _create_pod(self, set_: Obj, pod: Obj) -> None:
        name = pod["metadata"]["name"]
        try:
            await self.client.create(pod)
        except StatusError as e:
            if e.code == 409:
                return
            await self._event(set_, "FailedCreate", f"create Pod {name} in StatefulSet {set_['metadata']['name']} "
                              f"failed error: {e.message}", warning=True)
            raise
        await self._event(set_, "SuccessfulCreate", f"create Pod {name} in StatefulSet "
                          f"{set_['metadata']['name']} successful")

    async def _delete_pod(self, set_: Obj, pod: Obj) -> None:
        name = pod["metadata"]["name"]
        try:
            await self.client.delete("v1", "Pod", pod["metadata"]["namespace"], name)
        except StatusError as e:
            if e.code == 404:
                return
            await self._event(set_, "FailedDelete", f"delete Pod {name} in StatefulSet {set_['metadata']['name']} "
                              f"failed error: {e.message}", warning=True)
            raise
        await self._event(set_, "SuccessfulDelete", f"delete Pod {name} in StatefulSet "
                          f"{set_['metadata']['name']} successful")

    async def _process_condemned(self, set_: Obj, condemned: list[Obj], parallel: bool) -> None:
        """Pods beyond the replicas go highest ordinal first; OrderedReady waits for each to go."""
        for pod in condemned:
            if is_terminating(pod):
                if not parallel:
                    raise _Wait()
                continue
            await self._retain_or_release_claims(set_, pod)
            await self._delete_pod(set_, pod)
            if not parallel:
                raise _Wait()

    async def _retain_or_release_claims(self, set_: Obj, pod: Obj) -> None:
        """`whenScaled: Delete`: the condemned pod becomes the owner of its claims (instead of the set)."""
        policy = (set_.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
        if policy.get("whenScaled") != "Delete":
            return
        ordinal = parent_and_ordinal(pod)[1]
        for claim in claims_for(set_, ordinal).values():
            md = claim["metadata"]
            existing = self.claims.get(f"{md['namespace']}/{md['name']}")
            if existing is None:
                continue
            old_refs = list(existing["metadata"].get("ownerReferences") or [])
            set_uid, pod_uid = set_["metadata"]["uid"], pod["metadata"]["uid"]
            # a scaled-down pod's claim is owned by the pod alone (`updateClaimOwnerRefForSetAndPod`)
            refs = [r for r in old_refs if r.get("uid") not in (set_uid, pod_uid)] + [_owner_ref(pod)]
            if refs == old_refs:
                continue
            await self.client.patch("v1", "PersistentVolumeClaim", md["namespace"], md["name"],
                                    {"metadata": {"ownerReferences": refs}}, MERGE_PATCH)

    async def _rolling_update(self, set_: Obj, replicas: dict[int, Obj], update: Obj, start: int, count: int) -> None:
        """`maxUnavailable` (default 1) out-of-date pods at or above the partition are deleted, from
        the highest ordinal down, counting the pods already unavailable against it."""
        mrs = int((set_.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.clock.now()
        unavailable = sum(1 for p in replicas.values()
                          if not is_healthy(p) or (mrs and not is_running_and_available(p, mrs, now)))
        unavailable += count - len(replicas)  # missing pods are unavailable too
        budget = max_unavailable(set_, count) - unavailable
        update_name = update["metadata"]["name"]
        for ordinal in range(start + count - 1, start + partition_of(set_) - 1, -1):
            if budget <= 0:
                return
            pod = replicas.get(ordinal)
            if pod is not None and revision_of(pod) != update_name and not is_terminating(pod):
                await self._delete_pod(set_, pod)
                budget -= 1

    # -- status and events --------------------------------------------------------------------------
    async def _write_status(self, set_: Obj, status: Obj) -> None:
        old = set_.get("status") or {}
        if all(old.get(k) == v for k, v in status.items()):
            return
        new = deep_copy(set_)
        new["status"] = {**old, **status}
        try:
            await self.client.update_status(new)
        except StatusError as e:
            if e.code == 404:
                return
            raise

    async def _event(self, set_: Obj, reason: str, message: str, warning: bool = False) -> None:
        await self.client.create_event(set_, reason, message, type="Warning" if warning else "Normal",
                                       component=COMPONENT)


def _owner_ref(owner: Obj) -> dict:
    md = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": md["name"], "uid": md["uid"]}
