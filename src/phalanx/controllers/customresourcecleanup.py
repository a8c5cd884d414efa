"""The CRD finalizer (apiextensions-apiserver's `crd-finalizer`), through `Client`: deleting a
CustomResourceDefinition deletes every object of its resource, then lets the CRD go.

A CRD is created with the `customresourcecleanup.apiextensions.k8s.io` finalizer. When it is
deleted, this controller sets `Terminating=True` (reason `InstanceDeletionInProgress`), deletes the
custom objects (their own finalizers are honoured: it looks again until none is left), then sets
`Terminating=False` (`InstanceDeletionCompleted`) and removes the finalizer, and the CRD is gone.

    CustomResourceCleanupController(client, factory).start()
"""

from __future__ import annotations

from typing import Any

from ..client.controller import Controller
from ..client.informer import InformerFactory, object_key
from ..client.interface import Client
from ..client.clock import Clock, to_datetime
from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy
from ..machinery.timestamps import now_rfc3339

Obj = dict[str, Any]
CRD_API = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"
FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
RECHECK_SECONDS = 1.0


class CustomResourceCleanupController(Controller[str]):
    """Deletes the objects of a terminating CRD, then removes its finalizer."""

    name = "crd-finalizer"

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None):
        super().__init__(client, factory, clock=clock)
        self.crds = self.informer(CRD_API, CRD_KIND)
        self.crds.add_event_handler(on_add=self._maybe_enqueue, on_update=lambda o, n: self._maybe_enqueue(n))

    def _maybe_enqueue(self, crd: Obj) -> None:
        md = crd["metadata"]
        if md.get("deletionTimestamp") and FINALIZER in (md.get("finalizers") or []):
            self.enqueue(object_key(crd))

    async def sync(self, key: str) -> None:
        crd = self.crds.get(key)
        if crd is None:
            return
        md = crd["metadata"]
        if not md.get("deletionTimestamp") or FINALIZER not in (md.get("finalizers") or []):
            return
        crd = await self._set_terminating(crd, "True", "InstanceDeletionInProgress",
                                          "CustomResource deletion is in progress")
        if await self._delete_objects(crd):
            self.enqueue_after(key, RECHECK_SECONDS)
            return
        crd = await self._set_terminating(crd, "False", "InstanceDeletionCompleted",
                                          "removed all instances")
        fresh = deep_copy(crd)
        fresh["metadata"]["finalizers"] = [f for f in fresh["metadata"].get("finalizers") or [] if f != FINALIZER]
        try:
            await self.client.update(fresh)
        except StatusError as e:
            if e.code != 404:
                raise

    async def _set_terminating(self, crd: Obj, status: str, reason: str, message: str) -> Obj:
        conds = (crd.get("status") or {}).get("conditions") or []
        current = next((c for c in conds if c.get("type") == "Terminating"), None)
        if current is not None and current.get("status") == status and current.get("reason") == reason:
            return crd
        new = deep_copy(crd)
        new_conds = [c for c in (new.setdefault("status", {}).get("conditions") or []) if c.get("type") != "Terminating"]
        new_conds.append({"type": "Terminating", "status": status, "reason": reason, "message": message,
                          "lastTransitionTime": now_rfc3339(to_datetime(self.clock.now()))})
        new["status"]["conditions"] = new_conds
        try:
            return await self.client.update_status(new)
        except StatusError as e:
            if e.code == 409:
                return await self.client.get(CRD_API, CRD_KIND, None, crd["metadata"]["name"])
            raise

    async def _delete_objects(self, crd: Obj) -> bool:
        """Delete every object of the CRD's resource; True while some remain."""
        spec = crd["spec"]
        plural = ((crd.get("status") or {}).get("acceptedNames") or spec["names"]).get("plural")
        version = next((v["name"] for v in spec.get("versions") or [] if v.get("served")), None)
        if not plural or version is None:
            return False
        api_version = f"{spec['group']}/{version}"
        try:
            items, _ = await self.client.list(api_version, plural)
        except StatusError as e:
            if e.code == 404:
                return False  # not served (never established): nothing to delete
            raise
        for obj in items:
            omd = obj["metadata"]
            if omd.get("deletionTimestamp"):
                continue
            try:
                await self.client.delete(api_version, plural, omd.get("namespace") or None, omd["name"])
            except StatusError as e:
                if e.code != 404:
                    raise
        return bool(items)
