"""core/v1 PersistentVolume and PersistentVolumeClaim: defaults, validation, update rules, printer
cells, and the DefaultStorageClass admission plugin.

Rules from upstream `pkg/apis/core/v1/defaults.go` (`SetDefaults_PersistentVolume{,Claim}`),
`pkg/apis/core/validation` (`ValidatePersistentVolume{,Claim}{,Update}`),
`pkg/registry/core/persistentvolume{,claim}/strategy.go`, `pkg/printers/internalversion` and
`plugin/pkg/admission/storage/storageclass/setdefault`. Both kinds have a `/status` subresource;
`register_kinds()` is called by `phalanx.api.core`. The claim spec check is shared with
StatefulSet's `volumeClaimTemplates` (`validate_claim_spec`).
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, forbidden, invalid, not_supported, required
from ..machinery.names import dns1123_subdomain_errors
from ..machinery.timestamps import now_rfc3339
from .common import Obj, _col, _dict, _list, _name, creation_age
from .computeresources import canonicalize_resource_list, parse_quantity, quantity_str
from .podplacement import _validate_node_selector_term
from .registry import AGE_COLUMN, NAME_COLUMN, ResourceType, Strategy, StrategyContext, register

ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
_SHORT_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
VOLUME_MODES = ("Block", "Filesystem")
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
PV_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd", "iscsi", "cinder",
              "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
              "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos", "csi")

# Annotations the storage machinery reads and writes (upstream's constants).
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
STORAGE_CLASSES_KEY = "storage.k8s.io/storageclasses"
# StorageObjectInUseProtection: removed by the pvc-protection / pv-protection controllers.
PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"


def add_finalizer(obj: Obj, finalizer: str) -> None:
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return
    finalizers = md.get("finalizers")
    if not isinstance(finalizers, list):
        finalizers = md["finalizers"] = []
    if finalizer not in finalizers:
        finalizers.append(finalizer)


def access_modes_string(modes: Any) -> str:
    """`GetAccessModesAsString`: the short forms, in upstream's fixed order."""
    present = set(_list(modes))
    return ",".join(_SHORT_MODES[m] for m in ACCESS_MODES if m in present)


def claim_class(pvc: Obj) -> str:
    """`GetPersistentVolumeClaimClass`: the beta annotation wins over `spec.storageClassName`."""
    ann = _dict(_dict(pvc.get("metadata")).get("annotations"))
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return str(ann[BETA_STORAGE_CLASS_ANNOTATION])
    return _dict(pvc.get("spec")).get("storageClassName") or ""


def volume_class(pv: Obj) -> str:
    return claim_class(pv)


def storage_of(resources: Any) -> Any:
    return _dict(resources).get("storage")


def _validate_access_modes(modes: Any, path: str) -> list[FieldError]:
    modes = _list(modes)
    if not modes:
        return [required(path, "at least 1 access mode is required")]
    errs = [not_supported(path, m, ACCESS_MODES) for m in modes if m not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _validate_storage_request(value: Any, path: str) -> list[FieldError]:
    if value is None:
        return [required(path, "")]
    try:
        q = parse_quantity(value)
    except (ValueError, TypeError):
        return [invalid(path, value, "quantities must match the regular expression "
                                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    if q <= 0:
        return [invalid(path, quantity_str(value), "must be greater than zero")]
    return []


def _validate_class_name(name: Any, path: str) -> list[FieldError]:
    if not name:
        return []
    return [invalid(path, name, m) for m in dns1123_subdomain_errors(str(name))]


def validate_claim_spec(spec: Obj, path: str) -> list[FieldError]:
    """`ValidatePersistentVolumeClaimSpec`: access modes, a positive storage request, the class
    and volume mode."""
    errs = _validate_access_modes(spec.get("accessModes"), f"{path}.accessModes")
    requests = _dict(_dict(spec.get("resources")).get("requests"))
    errs += _validate_storage_request(requests.get("storage"), f"{path}.resources[storage]")
    errs += _validate_class_name(spec.get("storageClassName"), f"{path}.storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(not_supported(f"{path}.volumeMode", mode, VOLUME_MODES))
    if spec.get("selector") is not None and not isinstance(spec.get("selector"), dict):
        errs.append(invalid(f"{path}.selector", spec.get("selector"), "must be a label selector"))
    return errs


def default_claim(pvc: Obj) -> None:
    """`SetDefaults_PersistentVolumeClaim{,Spec}`: Filesystem mode, phase Pending."""
    spec = pvc.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
        res = spec.get("resources")
        if isinstance(res, dict):
            canonicalize_resource_list(res.get("requests"))
            canonicalize_resource_list(res.get("limits"))
    status = pvc.get("status")
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = "Pending"


def default_class_name(ctx: StrategyContext) -> str | None:
    """The default StorageClass: among classes annotated default, the newest (then by name)."""
    defaults = []
    for sc in ctx.list_objects(STORAGE_CLASSES_KEY, None):
        ann = _dict(_dict(sc.get("metadata")).get("annotations"))
        if ann.get(DEFAULT_CLASS_ANNOTATION) == "true" or ann.get(BETA_DEFAULT_CLASS_ANNOTATION) == "true":
            md = sc["metadata"]
            defaults.append((md.get("creationTimestamp") or "", md.get("name") or ""))
    if not defaults:
        return None
    defaults.sort(key=lambda t: (t[0], [-ord(c) for c in t[1]]))
    return defaults[-1][1]


_CLAIM_SPEC_UPDATABLE = ("resources", "volumeAttributesClassName")
CLAIM_SPEC_IMMUTABLE_MSG = ("spec is immutable after creation except resources.requests and "
                            "volumeAttributesClassName for bound claims")


class PersistentVolumeClaimStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        _col("Status", "phase represents the current phase of PersistentVolumeClaim."),
        _col("Volume", "volumeName is the binding reference to the PersistentVolume backing this claim."),
        _col("Capacity", "capacity represents the actual resources of the underlying volume."),
        _col("Access Modes", "accessModes contains the actual access modes the volume backing the PVC has."),
        _col("StorageClass", "StorageClass of the pvc"),
        _col("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
        AGE_COLUMN,
        _col("VolumeMode", "volumeMode defines what type of volume is required by the claim.", priority=1),
    ]
    status_is_subresource = True
    tracks_generation = False
    field_selectors = {"name": _name}  # upstream keeps this bare `name` for compatibility

    def admit(self, operation: str, obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        """DefaultStorageClass: a new claim that names no class gets the default one;
        StorageObjectInUseProtection: and the pvc-protection finalizer."""
        if operation != "CREATE":
            return
        add_finalizer(obj, PVC_PROTECTION_FINALIZER)
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
            return
        if BETA_STORAGE_CLASS_ANNOTATION in _dict(_dict(obj.get("metadata")).get("annotations")):
            return
        name = default_class_name(ctx)
        if name is not None:
            spec["storageClassName"] = name

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        default_claim(obj)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {"phase": "Pending"}

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_claim_spec(_dict(obj.get("spec")), "spec")

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        nspec, ospec = dict(_dict(new.get("spec"))), dict(_dict(old.get("spec")))
        if not ospec.get("volumeName"):
            nspec.pop("volumeName", None)  # binding an unbound claim
            ospec.pop("volumeName", None)
        if ospec.get("storageClassName") is None:
            nspec.pop("storageClassName", None)
            ospec.pop("storageClassName", None)
        for f in _CLAIM_SPEC_UPDATABLE:
            nspec.pop(f, None)
            ospec.pop(f, None)
        if nspec != ospec:
            errs.append(forbidden("spec", CLAIM_SPEC_IMMUTABLE_MSG))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        phase = _dict(new.get("status")).get("phase")
        if phase and phase not in ("Pending", "Bound", "Lost"):
            return [not_supported("status.phase", phase, ("Bound", "Lost", "Pending"))]
        return []

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        phase = "Terminating" if _dict(obj.get("metadata")).get("deletionTimestamp") else status.get("phase", "")
        capacity = modes = ""
        if spec.get("volumeName"):
            modes = access_modes_string(status.get("accessModes"))
            cap = storage_of(status.get("capacity"))
            capacity = quantity_str(cap) if cap is not None else "0"
        return [_name(obj), phase, spec.get("volumeName", ""), capacity, modes, claim_class(obj),
                spec.get("volumeAttributesClassName") or "<unset>", creation_age(obj, ctx),
                spec.get("volumeMode") or "<unset>"]


def _validate_pv_source(spec: Obj) -> list[FieldError]:
    sources = [s for s in PV_SOURCES if spec.get(s) is not None]
    if not sources:
        return [required("spec", "must specify a volume type")]
    if len(sources) > 1:
        return [forbidden(f"spec.{sources[1]}", "may not specify more than 1 volume type")]
    src = sources[0]
    if src in ("hostPath", "local") and not _dict(spec.get(src)).get("path"):
        return [required(f"spec.{src}.path", "")]
    if src == "csi":
        csi = _dict(spec.get("csi"))
        return [required(f"spec.csi.{f}", "") for f in ("driver", "volumeHandle") if not csi.get(f)]
    return []


def _validate_pv_capacity(capacity: Any) -> list[FieldError]:
    capacity = _dict(capacity)
    if not capacity:
        return [required("spec.capacity", "")]
    errs = [not_supported(f"spec.capacity[{k}]", k, ("storage",)) for k in capacity if k != "storage"]
    if "storage" in capacity:
        errs += _validate_storage_request(capacity["storage"], "spec.capacity[storage]")
    return errs


def validate_node_selector(sel: Any, path: str) -> list[FieldError]:
    terms = _list(_dict(sel).get("nodeSelectorTerms"))
    if not terms:
        return [required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, t in enumerate(terms):
        errs += _validate_node_selector_term(t, f"{path}.nodeSelectorTerms[{i}]", False)
    return errs


def validate_persistent_volume(pv: Obj) -> list[FieldError]:
    spec = _dict(pv.get("spec"))
    errs = _validate_access_modes(spec.get("accessModes"), "spec.accessModes")
    errs += _validate_pv_capacity(spec.get("capacity"))
    errs += _validate_pv_source(spec)
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        errs.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES))
    errs += _validate_class_name(spec.get("storageClassName"), "spec.storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(not_supported("spec.volumeMode", mode, VOLUME_MODES))
    affinity = _dict(spec.get("nodeAffinity"))
    if affinity:
        req = affinity.get("required")
        if req is None:
            errs.append(required("spec.nodeAffinity.required", "must specify required node constraints"))
        else:
            errs += validate_node_selector(req, "spec.nodeAffinity.required")
    return errs


class PersistentVolumeStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        _col("Capacity", "capacity is the description of the persistent volume's resources and capacity."),
        _col("Access Modes", "accessModes contains all ways the volume can be mounted."),
        _col("Reclaim Policy", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when "
                               "released from its claim."),
        _col("Status", "phase indicates if a volume is available, bound to a claim, or released by a claim."),
        _col("Claim", "claimRef is part of a bi-directional binding between PersistentVolume and "
                      "PersistentVolumeClaim."),
        _col("StorageClass", "StorageClass of the pv"),
        _col("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
        _col("Reason", "reason is a brief CamelCase string that describes any failure and is meant for machine "
                       "parsing and tidy display in the CLI."),
        AGE_COLUMN,
        _col("VolumeMode", "volumeMode defines if a volume is intended to be used with a formatted filesystem or "
                           "to remain in raw block state.", priority=1),
    ]
    status_is_subresource = True
    tracks_generation = False
    field_selectors = {"name": _name}  # upstream keeps this bare `name` for compatibility

    def admit(self, operation: str, obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        """StorageObjectInUseProtection: a new volume gets the pv-protection finalizer."""
        if operation == "CREATE":
            add_finalizer(obj, PV_PROTECTION_FINALIZER)

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
            spec.setdefault("volumeMode", "Filesystem")
            canonicalize_resource_list(spec.get("capacity"))
        status = obj.get("status")
        if isinstance(status, dict) and not status.get("phase"):
            status["phase"] = "Pending"

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": now_rfc3339(ctx.now())}

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        """A phase change stamps `lastPhaseTransitionTime` (unless the writer set it)."""
        super().prepare_for_status_update(new, old, ctx)
        nst, ost = new.get("status"), _dict(old.get("status"))
        if isinstance(nst, dict) and nst.get("phase") != ost.get("phase") and \
                nst.get("lastPhaseTransitionTime") == ost.get("lastPhaseTransitionTime"):
            nst["lastPhaseTransitionTime"] = now_rfc3339(ctx.now())

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_persistent_volume(obj)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        nspec, ospec = _dict(new.get("spec")), _dict(old.get("spec"))
        for src in PV_SOURCES:
            if ospec.get(src) is not None and nspec.get(src) != ospec.get(src):
                errs.append(forbidden("spec.persistentvolumesource", "spec.persistentvolumesource is forbidden."))
                break
        if ospec.get("volumeMode") != nspec.get("volumeMode"):
            errs.append(invalid("spec.volumeMode", nspec.get("volumeMode"), "field is immutable"))
        if ospec.get("nodeAffinity") and ospec.get("nodeAffinity") != nspec.get("nodeAffinity"):
            errs.append(invalid("spec.nodeAffinity", nspec.get("nodeAffinity"), "field is immutable"))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        phase = _dict(new.get("status")).get("phase")
        allowed = ("Available", "Bound", "Failed", "Pending", "Released")
        if phase and phase not in allowed:
            return [not_supported("status.phase", phase, allowed)]
        return []

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
        ref = _dict(spec.get("claimRef"))
        claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""
        phase = "Terminating" if _dict(obj.get("metadata")).get("deletionTimestamp") else status.get("phase", "")
        cap = storage_of(spec.get("capacity"))
        return [_name(obj), quantity_str(cap) if cap is not None else "0", access_modes_string(spec.get("accessModes")),
                spec.get("persistentVolumeReclaimPolicy", ""), phase, claim, volume_class(obj),
                spec.get("volumeAttributesClassName") or "<unset>", status.get("reason", ""),
                creation_age(obj, ctx), spec.get("volumeMode") or "<unset>"]


PVC_STRATEGY = PersistentVolumeClaimStrategy()
PV_STRATEGY = PersistentVolumeStrategy()


def register_kinds() -> None:
    register(ResourceType("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, PVC_STRATEGY,
                          short_names=["pvc"], subresources=["status"]))
    register(ResourceType("", "v1", "PersistentVolume", "persistentvolumes", False, PV_STRATEGY,
                          short_names=["pv"], subresources=["status"]))
