"""The PodGroup protection controller: kube-controller-manager's `podgroup-protection-controller`.

    PodGroupProtectionController(client, factory, clock=clock, release="1.37").start()

Every new PodGroup gets the finalizer `scheduling.k8s.io/podgroup-protection` at admission (the
PodGroupProtection plugin). This controller decides when it may go, as upstream does:

- a PodGroup being deleted keeps the finalizer while any pod that is not terminal (phase neither
  Succeeded nor Failed) references it through `spec.schedulingGroup.podGroupName`, and loses it
  as soon as none does — so `kubectl delete podgroup` waits for the group's running pods;
- a live PodGroup without the finalizer gets it back while it has such pods.

Pods are indexed by `namespace/spec.schedulingGroup.podGroupName`. A pod event enqueues its
PodGroup only when it can change the answer: the pod was added unscheduled, deleted, or is
terminal; a recreated pod (new uid under an old name) also enqueues the old pod's PodGroup.
"""

from __future__ import annotations

from typing import Any

from ..api.scheduling.fields import WORKLOAD_API_BY_RELEASE
from ..client.informer import InformerFactory, index_pod_by_pod_group, object_key
from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy
from ..client.clock import Clock
from ..client.controller import Controller
from ..client.interface import Client

Obj = dict[str, Any]

POD_GROUP_PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"
POD_SCHEDULING_GROUP_INDEX = "spec.schedulingGroup.podGroupName"


def _md(obj: Obj) -> dict:
    return obj.get("metadata") or {}


def is_pod_terminated(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_deletion_candidate(obj: Obj, finalizer: str) -> bool:
    md = _md(obj)
    return bool(md.get("deletionTimestamp")) and finalizer in (md.get("finalizers") or [])


def needs_finalizer(obj: Obj, finalizer: str) -> bool:
    md = _md(obj)
    return not md.get("deletionTimestamp") and finalizer not in (md.get("finalizers") or [])


class PodGroupProtectionController(Controller[str]):
    name = "podgroupprotection"
    workers = 1

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None, release: str = "1.36"):
        super().__init__(client, factory, clock=clock, workers=workers)
        # the PodGroups of the cluster's Kubernetes release (v1alpha2 in 1.36, v1beta1 in 1.37)
        self.pod_groups = self.informer(WORKLOAD_API_BY_RELEASE[release], "PodGroup")
        self.pods = self.informer("v1", "Pod", indexers={POD_SCHEDULING_GROUP_INDEX: index_pod_by_pod_group})
        self.pod_groups.add_event_handler(on_add=self._pod_group_changed,
                                          on_update=lambda old, new: self._pod_group_changed(new))
        self.pods.add_event_handler(on_add=lambda pod: self._pod_changed(None, pod, False),
                                    on_update=lambda old, new: self._pod_changed(old, new, False),
                                    on_delete=lambda pod: self._pod_changed(None, pod, True))

    # -- event handlers ----------------------------------------------------------------------
    def _pod_group_changed(self, pod_group: Obj) -> None:
        if needs_finalizer(pod_group, POD_GROUP_PROTECTION_FINALIZER) or \
                is_deletion_candidate(pod_group, POD_GROUP_PROTECTION_FINALIZER):
            self.queue.add(object_key(pod_group))

    def _pod_changed(self, old: Obj | None, pod: Obj, deleted: bool) -> None:
        self._enqueue_pod_group_of(pod, deleted)
        if old is not None and _md(old).get("uid") != _md(pod).get("uid"):
            self._enqueue_pod_group_of(old, True)

    def _enqueue_pod_group_of(self, pod: Obj, deleted: bool) -> None:
        keys = index_pod_by_pod_group(pod)
        if not keys:
            return
        # A running pod's updates do not change how many active pods use the group.
        if not deleted and not is_pod_terminated(pod) and (pod.get("spec") or {}).get("nodeName"):
            return
        self.queue.add(keys[0])

    # -- sync --------------------------------------------------------------------------------
    def is_being_used(self, pod_group: Obj) -> bool:
        """True while a non-terminal pod references the PodGroup."""
        return any(not is_pod_terminated(p) for p in self.pods.by_index(POD_SCHEDULING_GROUP_INDEX,
                                                                         object_key(pod_group)))

    async def sync(self, key: str) -> None:
        pod_group = self.pod_groups.get(key)
        if pod_group is None:
            return
        if is_deletion_candidate(pod_group, POD_GROUP_PROTECTION_FINALIZER):
            if not self.is_being_used(pod_group):
                await self._set_finalizer(pod_group, present=False)
                return
            self.log.debug("keeping the finalizer of PodGroup %s: pods still use it", key)
        if needs_finalizer(pod_group, POD_GROUP_PROTECTION_FINALIZER) and self.is_being_used(pod_group):
            await self._set_finalizer(pod_group, present=True)

    async def _set_finalizer(self, pod_group: Obj, *, present: bool) -> None:
        updated = deep_copy(pod_group)
        finalizers = [f for f in _md(updated).get("finalizers") or [] if f != POD_GROUP_PROTECTION_FINALIZER]
        if present:
            finalizers.append(POD_GROUP_PROTECTION_FINALIZER)
        updated["metadata"]["finalizers"] = finalizers
        try:
            await self.client.update(updated)
        except StatusError as e:
            if e.code == 404 and not present:
                return  # already gone
            raise
        self.log.debug("%s protection finalizer %s PodGroup %s", "added" if present else "removed",
                       "to" if present else "from", object_key(pod_group))


__all__ = ["PodGroupProtectionController", "POD_GROUP_PROTECTION_FINALIZER", "is_pod_terminated"]
