"""Simulated storage: the PersistentVolume controller's binding and a dynamic provisioner, as one
controller, through `Client`.

    VolumeProvisioner(client, factory, clock=clock).start()

What kube-controller-manager's `persistentvolume-binder` and an external provisioner (kind's
`rancher.io/local-path`) do for a real cluster:

- a claim whose class has `volumeBindingMode: WaitForFirstConsumer` waits (event
  `WaitForFirstConsumer` "waiting for first consumer to be created before binding") until the
  scheduler names its node in the annotation `volume.kubernetes.io/selected-node`;
- then, or at once for `Immediate` classes, an `Available` PersistentVolume that fits (same class,
  enough capacity, the access modes, the volume mode, a node affinity that admits the selected node)
  is bound; failing that the class's provisioner "provisions" one: PV `pvc-<claim uid>` with the
  requested capacity, the class's reclaim policy, a `hostPath` under
  `/var/local-path-provisioner/`, and for a selected node a required node affinity on
  `kubernetes.io/hostname` (events `Provisioning`, `ProvisioningSucceeded`). Classes whose
  provisioner is `kubernetes.io/no-provisioner` are never provisioned;
- binding as the PV controller writes it: the PV's `spec.claimRef` and phase `Bound`, the claim's
  `spec.volumeName`, annotations `pv.kubernetes.io/bind-completed` and
  `pv.kubernetes.io/bound-by-controller`, phase `Bound` with the PV's capacity and access modes;
- a PV whose claim is gone is `Released`; with reclaim policy `Delete` it is deleted.
"""

from __future__ import annotations

from typing import Any

from ..client.clock import Clock
from ..client.controller import Controller
from ..client.informer import InformerFactory, object_key
from ..client.interface import Client
from ..machinery.errors import StatusError
from ..machinery.meta import deep_copy
from ..machinery.quantity import parse_quantity

Obj = dict[str, Any]

COMPONENT = "persistentvolume-controller"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER_ANNOTATION = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY_ANNOTATION = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER_ANNOTATION = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER_ANNOTATION = "volume.beta.kubernetes.io/storage-provisioner"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
HOSTNAME_LABEL = "kubernetes.io/hostname"
LOCAL_PATH_ROOT = "/var/local-path-provisioner"


def _md(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _qty(v: Any) -> Any:
    try:
        return parse_quantity(v)
    except (ValueError, TypeError):
        return 0


def claim_request(pvc: Obj) -> Any:
    return ((_spec(pvc).get("resources") or {}).get("requests") or {}).get("storage")


def _term_admits(term: Obj, node: str) -> bool:
    for req in term.get("matchExpressions") or []:
        if req.get("key") != HOSTNAME_LABEL:
            continue
        values = req.get("values") or []
        if (req.get("operator") == "In") != (node in values):
            return False
    return True


def pv_admits_node(pv: Obj, node: str | None) -> bool:
    """Whether the PV's required node affinity admits the node named by `kubernetes.io/hostname`
    (the only label simulated storage pins volumes with); no affinity admits every node."""
    terms = (((_spec(pv).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")) or []
    if not terms:
        return True
    return node is not None and any(_term_admits(term, node) for term in terms)


def _reserved_for_other(pv: Obj, pvc: Obj) -> bool:
    """The PV names another claim (a Released volume keeps its old claim's uid), or is being
    deleted, or is in use without a claimRef."""
    ref = _spec(pv).get("claimRef")
    md = _md(pvc)
    if ref:
        return ref.get("name") != md.get("name") or ref.get("namespace") != md.get("namespace") or \
            bool(ref.get("uid") and ref.get("uid") != md.get("uid"))
    phase = (pv.get("status") or {}).get("phase")
    return bool(_md(pv).get("deletionTimestamp")) or phase not in (None, "Available", "Pending")


def pv_fits_claim(pv: Obj, pvc: Obj, claim_class: str, node: str | None) -> bool:
    """`FindMatchingVolume`'s checks: free for this claim, same class and volume mode, the access
    modes, enough capacity, a node affinity that admits the node."""
    if _reserved_for_other(pv, pvc):
        return False
    spec, cspec = _spec(pv), _spec(pvc)
    return ((spec.get("storageClassName") or "") == claim_class
            and (spec.get("volumeMode") or "Filesystem") == (cspec.get("volumeMode") or "Filesystem")
            and set(cspec.get("accessModes") or []) <= set(spec.get("accessModes") or [])
            and _qty((spec.get("capacity") or {}).get("storage")) >= _qty(claim_request(pvc))
            and pv_admits_node(pv, node))


def provisioned_volume(pvc: Obj, sc: Obj, node: str | None) -> Obj:
    """The PV a local-path provisioner creates for `pvc`."""
    md, spec = _md(pvc), _spec(pvc)
    name = f"pvc-{md['uid']}"
    pv_spec: Obj = {
        "capacity": {"storage": claim_request(pvc)},
        "accessModes": list(spec.get("accessModes") or []),
        "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
        "storageClassName": _md(sc)["name"],
        "volumeMode": spec.get("volumeMode") or "Filesystem",
        "hostPath": {"path": f"{LOCAL_PATH_ROOT}/{name}_{md['namespace']}_{md['name']}",
                     "type": "DirectoryOrCreate"},
        "claimRef": _claim_ref(pvc),
    }
    if node:
        pv_spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}]}}
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {PROVISIONED_BY_ANNOTATION: sc.get("provisioner", "")}},
            "spec": pv_spec}


def _claim_ref(pvc: Obj) -> Obj:
    md = _md(pvc)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": md["namespace"], "name": md["name"],
            "uid": md["uid"], "resourceVersion": md.get("resourceVersion", "")}


class VolumeProvisioner(Controller[str]):
    name = "persistentvolume-binder"
    workers = 2

    def __init__(self, client: Client, factory: InformerFactory | None = None, *, clock: Clock | None = None,
                 workers: int | None = None):
        super().__init__(client, factory, clock=clock, workers=workers)
        self.claims = self.informer("v1", "PersistentVolumeClaim")
        self.volumes = self.informer("v1", "PersistentVolume")
        self.classes = self.informer("storage.k8s.io/v1", "StorageClass")
        self.enqueue_on(self.claims, key_of=lambda o: "pvc:" + object_key(o))
        self.enqueue_on(self.volumes, key_of=lambda o: "pv:" + _md(o).get("name", ""))
        self.classes.add_event_handler(on_add=lambda sc: self._all_claims())
        self.claims.add_event_handler(on_delete=self._claim_deleted)
        self._waiting_reported: set[str] = set()

    def _claim_deleted(self, pvc: Obj) -> None:
        """Its volume is Released (and reclaimed) now."""
        if _spec(pvc).get("volumeName"):
            self.enqueue("pv:" + _spec(pvc)["volumeName"])

    def _claims_waiting_for(self, pv: Obj) -> None:
        """An Available volume may fit an unbound claim of its class (upstream's periodic resync)."""
        cls = _spec(pv).get("storageClassName") or ""
        for pvc in self.claims.list(None):
            if not _spec(pvc).get("volumeName") and (_spec(pvc).get("storageClassName") or "") == cls:
                self.enqueue("pvc:" + object_key(pvc))

    def _all_claims(self) -> None:
        for pvc in self.claims.list(None):
            self.enqueue("pvc:" + object_key(pvc))

    async def sync(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        if kind == "pvc":
            await self._sync_claim(rest)
        else:
            await self._sync_volume(rest)

    # -- claims ------------------------------------------------------------------------------------
    async def _sync_claim(self, key: str) -> None:
        pvc = self.claims.get(key)
        if pvc is None or _md(pvc).get("deletionTimestamp"):
            self._waiting_reported.discard(key)
            return
        volume_name = _spec(pvc).get("volumeName")
        if volume_name:
            await self._finish_binding(pvc, volume_name)
            return
        class_name = _spec(pvc).get("storageClassName") or ""
        sc = self.classes.get(class_name) if class_name else None
        node = (_md(pvc).get("annotations") or {}).get(SELECTED_NODE_ANNOTATION)
        if sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer" and not node:
            await self._report_waiting(key, pvc)
            return
        match = self._matching_volume(pvc, class_name, node)
        if match is not None:
            await self._bind(pvc, match)
        elif sc is not None and sc.get("provisioner") != NO_PROVISIONER:
            await self._provision(pvc, sc, node)

    async def _report_waiting(self, key: str, pvc: Obj) -> None:
        if key not in self._waiting_reported:
            self._waiting_reported.add(key)
            await self._event(pvc, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")

    def _matching_volume(self, pvc: Obj, class_name: str, node: str | None) -> Obj | None:
        """The smallest volume that fits the claim."""
        fitting = [pv for pv in self.volumes.list(None) if pv_fits_claim(pv, pvc, class_name, node)]
        return min(fitting, key=lambda v: (_qty((_spec(v).get("capacity") or {}).get("storage")), _md(v)["name"]),
                   default=None)

    async def _provision(self, pvc: Obj, sc: Obj, node: str | None) -> None:
        provisioner = sc.get("provisioner", "")
        await self._annotate_provisioner(pvc, provisioner)
        await self._event(pvc, "ExternalProvisioning", "Waiting for a volume to be created either by the external "
                          f"provisioner '{provisioner}' or manually by the system administrator. If volume creation "
                          "is delayed, please verify that the provisioner is running and correctly registered.")
        md = _md(pvc)
        await self._event(pvc, "Provisioning", f'External provisioner is provisioning volume for claim '
                          f'"{md["namespace"]}/{md["name"]}"', component=provisioner)
        pv = provisioned_volume(pvc, sc, node)
        try:
            created = await self.client.create(pv)
        except StatusError as e:
            if e.code != 409:
                await self._event(pvc, "ProvisioningFailed", f"failed to provision volume with StorageClass "
                                  f'"{_md(sc)["name"]}": {e.message}', warning=True, component=provisioner)
                raise
            created = await self.client.get("v1", "PersistentVolume", None, pv["metadata"]["name"])
        await self._event(pvc, "ProvisioningSucceeded", f"Successfully provisioned volume {created['metadata']['name']}",
                          component=provisioner)
        await self._bind(pvc, created)

    async def _annotate_provisioner(self, pvc: Obj, provisioner: str) -> None:
        ann = _md(pvc).get("annotations") or {}
        if ann.get(STORAGE_PROVISIONER_ANNOTATION) == provisioner:
            return
        body = {"metadata": {"annotations": {STORAGE_PROVISIONER_ANNOTATION: provisioner,
                                             BETA_STORAGE_PROVISIONER_ANNOTATION: provisioner}}}
        md = _md(pvc)
        await self.client.patch("v1", "PersistentVolumeClaim", md["namespace"], md["name"], body)

    async def _bind(self, pvc: Obj, pv: Obj) -> None:
        """`bind`: the PV's claimRef, then the PV's phase, the claim's volumeName, the claim's phase."""
        pv = deep_copy(pv)
        if not _spec(pv).get("claimRef") or _spec(pv)["claimRef"].get("uid") != _md(pvc).get("uid"):
            pv["spec"]["claimRef"] = _claim_ref(pvc)
            pv.setdefault("metadata", {}).setdefault("annotations", {})[BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
            pv = await self.client.update(pv)
        await self._volume_phase(pv, "Bound")
        md = _md(pvc)
        current = await self.client.get("v1", "PersistentVolumeClaim", md["namespace"], md["name"])
        new = deep_copy(current)
        new["spec"]["volumeName"] = pv["metadata"]["name"]
        ann = new["metadata"].setdefault("annotations", {})
        ann[BIND_COMPLETED_ANNOTATION] = "yes"
        ann[BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
        claim = await self.client.update(new)
        await self._claim_bound(claim, pv)

    async def _finish_binding(self, pvc: Obj, volume_name: str) -> None:
        pv = self.volumes.get(volume_name)
        if pv is None:
            if (pvc.get("status") or {}).get("phase") == "Bound":
                await self._claim_phase(pvc, {"phase": "Lost"})
                await self._event(pvc, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the "
                                  "volume is lost!", warning=True)
            return
        ref = _spec(pv).get("claimRef") or {}
        if ref.get("uid") and ref.get("uid") != _md(pvc).get("uid"):
            await self._event(pvc, "FailedBinding", "volume already bound to a different claim.", warning=True)
            return
        if not ref.get("uid"):
            await self._bind(pvc, pv)
            return
        await self._volume_phase(pv, "Bound")
        await self._claim_bound(pvc, pv)

    async def _claim_bound(self, pvc: Obj, pv: Obj) -> None:
        status = {"phase": "Bound", "accessModes": list(_spec(pv).get("accessModes") or []),
                  "capacity": dict(_spec(pv).get("capacity") or {})}
        await self._claim_phase(pvc, status)

    async def _claim_phase(self, pvc: Obj, status: Obj) -> None:
        old = pvc.get("status") or {}
        if all(old.get(k) == v for k, v in status.items()):
            return
        new = deep_copy(pvc)
        new["status"] = {**old, **status}
        await self.client.update_status(new)

    # -- volumes -----------------------------------------------------------------------------------
    async def _sync_volume(self, name: str) -> None:
        pv = self.volumes.get(name)
        if pv is None or _md(pv).get("deletionTimestamp"):
            return
        ref = _spec(pv).get("claimRef")
        if not ref:
            await self._volume_phase(pv, "Available")
            self._claims_waiting_for(pv)
            return
        claim = self.claims.get(f"{ref.get('namespace', '')}/{ref.get('name', '')}")
        if claim is not None and (not ref.get("uid") or _md(claim).get("uid") == ref.get("uid")):
            return  # bound (or being bound): the claim's sync finishes it
        if not ref.get("uid"):
            await self._volume_phase(pv, "Available")
            return
        await self._volume_phase(pv, "Released")
        if _spec(pv).get("persistentVolumeReclaimPolicy") == "Delete":
            try:
                await self.client.delete("v1", "PersistentVolume", None, name)
            except StatusError as e:
                if e.code != 404:
                    raise

    async def _volume_phase(self, pv: Obj, phase: str) -> None:
        if (pv.get("status") or {}).get("phase") == phase:
            return
        new = deep_copy(pv)
        new["status"] = {**(pv.get("status") or {}), "phase": phase}
        try:
            await self.client.update_status(new)
        except StatusError as e:
            if e.code != 409:
                raise
            current = await self.client.get("v1", "PersistentVolume", None, pv["metadata"]["name"])
            await self._volume_phase(current, phase)

    async def _event(self, obj: Obj, reason: str, message: str, *, warning: bool = False,
                     component: str = COMPONENT) -> None:
        await self.client.create_event(obj, reason, message, type="Warning" if warning else "Normal",
                                       component=component)
