"""Storage object in-use protection: kube-controller-manager's `pvc-protection` and
`pv-protection` controllers, through `Client`.

    StorageProtection(client, factory, clock=clock).start()

The API server's StorageObjectInUseProtection admission puts the finalizer
`kubernetes.io/pvc-protection` on every new PersistentVolumeClaim and `kubernetes.io/pv-protection`
on every new PersistentVolume (`phalanx.api.persistentvolumes`). This controller removes them when
deleting is safe, as upstream does:

- a claim being deleted keeps its finalizer (and prints `Terminating`) while a scheduled pod that
  is not Succeeded or Failed names it in `spec.volumes`; then the finalizer goes and the claim with
  it;
- a volume being deleted keeps its finalizer while it is `Bound` to a claim.
"""

from __future__ import annotations

from typing import Any

from ..client.clock import Clock
from ..client.controller import Controller
from ..client.informer import InformerFactory, object_key
from ..client.interface import Client
from ..api.persistentvolumes import PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER
from ..machinery.errors import StatusError
from .podcontrol import pod_phase

Obj = dict[str, Any]



def _claim_names(pod: Obj) -> set[str]:
    return {v["persistentVolumeClaim"].get("claimName", "") for v in (pod.get("spec") or {}).get("volumes") or ()
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)}


class StorageProtection(Controller[str]):
    name = "storage-protection"
    workers = 1

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.claims = self.informer("v1", "PersistentVolumeClaim")
        self.volumes = self.informer("v1", "PersistentVolume")
        self.pods = self.informer("v1", "Pod")
        self.enqueue_on(self.claims, key_of=self._claim_key)
        self.enqueue_on(self.volumes, key_of=self._volume_key)
        self.pods.add_event_handler(on_update=lambda old, new: self._pod_changed(new), on_delete=self._pod_changed)

    @staticmethod
    def _claim_key(pvc: Obj) -> str | None:
        md = pvc.get("metadata") or {}
        return "pvc:" + object_key(pvc) if md.get("deletionTimestamp") else None

    @staticmethod
    def _volume_key(pv: Obj) -> str | None:
        md = pv.get("metadata") or {}
        return "pv:" + md.get("name", "") if md.get("deletionTimestamp") else None

    def _pod_changed(self, pod: Obj) -> None:
        ns = (pod.get("metadata") or {}).get("namespace", "")
        for name in _claim_names(pod):
            pvc = self.claims.get(f"{ns}/{name}")
            if pvc is not None and (pvc.get("metadata") or {}).get("deletionTimestamp"):
                self.enqueue(f"pvc:{ns}/{name}")

    async def sync(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        if kind == "pvc":
            pvc = self.claims.get(rest)
            if pvc is not None and not self._claim_in_use(pvc):
                await self._remove_finalizer("PersistentVolumeClaim", pvc, PVC_PROTECTION_FINALIZER, key)
            return
        pv = self.volumes.get(rest)
        if pv is not None and (pv.get("status") or {}).get("phase") != "Bound":
            await self._remove_finalizer("PersistentVolume", pv, PV_PROTECTION_FINALIZER, key)

    def _claim_in_use(self, pvc: Obj) -> bool:
        md = pvc["metadata"]
        for pod in self.pods.list(md.get("namespace")):
            # only scheduled pods count: the kubelet starts no pod whose claim is being deleted
            if pod_phase(pod) in ("Succeeded", "Failed") or not (pod.get("spec") or {}).get("nodeName"):
                continue
            if md.get("name") in _claim_names(pod):
                return True
        return False

    async def _remove_finalizer(self, kind: str, obj: Obj, finalizer: str, key: str) -> None:
        md = obj["metadata"]
        finalizers = list(md.get("finalizers") or [])
        if finalizer not in finalizers or not md.get("deletionTimestamp"):
            return
        finalizers.remove(finalizer)
        body = {"metadata": {"finalizers": finalizers, "resourceVersion": md.get("resourceVersion")}}
        try:
            await self.client.patch("v1", kind, md.get("namespace"), md["name"], body)
        except StatusError as e:
            if e.code not in (404, 409):
                raise
            if e.code == 409:
                self.enqueue_after(key, 0.1)  # changed meanwhile: look again
