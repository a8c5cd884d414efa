"""storage.k8s.io/v1 StorageClass: defaults, validation, update rules and printer cells.

Rules from upstream `pkg/apis/storage/v1/defaults.go` (reclaimPolicy Delete, volumeBindingMode
Immediate), `pkg/apis/storage/validation` (`ValidateStorageClass{,Update}`) and the printer in
`pkg/printers/internalversion` (the default class prints as `<name> (default)`). Cluster-scoped, no
`/status`. Which class is the default is read by the DefaultStorageClass admission of
PersistentVolumeClaims (`phalanx.api.persistentvolumes`).
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, forbidden, invalid, not_supported, required, too_long
from ..machinery.names import qualified_name_errors
from .common import Obj, _col, _dict, _list, _name, creation_age
from .persistentvolumes import BETA_DEFAULT_CLASS_ANNOTATION, DEFAULT_CLASS_ANNOTATION
from .registry import AGE_COLUMN, NAME_COLUMN, ResourceType, Strategy, StrategyContext, register

RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
MAX_PROVISIONER_PARAMETER_SIZE = 256 * 1024
MAX_PROVISIONER_PARAMETER_LEN = 512


def is_default_class(sc: Obj) -> bool:
    ann = _dict(_dict(sc.get("metadata")).get("annotations"))
    return ann.get(DEFAULT_CLASS_ANNOTATION) == "true" or ann.get(BETA_DEFAULT_CLASS_ANNOTATION) == "true"


def _validate_provisioner(value: Any) -> list[FieldError]:
    if not value:
        return [required("provisioner", "")]
    errs = [invalid("provisioner", value, m) for m in qualified_name_errors(str(value))]
    if len(str(value)) > 63:
        errs.append(too_long("provisioner", 63))
    return errs


def _validate_parameters(params: Any) -> list[FieldError]:
    params = _dict(params)
    if len(params) > MAX_PROVISIONER_PARAMETER_LEN:
        return [too_long("parameters", MAX_PROVISIONER_PARAMETER_LEN)]
    total = 0
    errs: list[FieldError] = []
    for k, v in params.items():
        if not k:
            errs.append(invalid("parameters", k, "field can not be empty."))
        total += len(k) + len(str(v))
    if total > MAX_PROVISIONER_PARAMETER_SIZE:
        errs.append(too_long("parameters", MAX_PROVISIONER_PARAMETER_SIZE))
    return errs


class StorageClassStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        _col("Provisioner", "provisioner indicates the type of the provisioner."),
        _col("ReclaimPolicy", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned "
                              "PersistentVolumes of this storage class."),
        _col("VolumeBindingMode", "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned "
                                  "and bound."),
        _col("AllowVolumeExpansion", "allowVolumeExpansion shows whether the storage class allow volume expand."),
        AGE_COLUMN,
    ]
    tracks_generation = False

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        if not obj.get("reclaimPolicy"):
            obj["reclaimPolicy"] = "Delete"
        if not obj.get("volumeBindingMode"):
            obj["volumeBindingMode"] = "Immediate"

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = _validate_provisioner(obj.get("provisioner"))
        errs += _validate_parameters(obj.get("parameters"))
        policy = obj.get("reclaimPolicy")
        if policy not in RECLAIM_POLICIES:
            errs.append(not_supported("reclaimPolicy", policy, RECLAIM_POLICIES))
        mode = obj.get("volumeBindingMode")
        if mode not in BINDING_MODES:
            errs.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
        for i, opt in enumerate(_list(obj.get("mountOptions"))):
            if not opt:
                errs.append(required(f"mountOptions[{i}]", ""))
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        if _dict(new.get("parameters")) != _dict(old.get("parameters")):
            errs.append(forbidden("parameters", "updates to parameters are forbidden."))
        if new.get("provisioner") != old.get("provisioner"):
            errs.append(forbidden("provisioner", "updates to provisioner are forbidden."))
        if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
            errs.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
        if new.get("volumeBindingMode") != old.get("volumeBindingMode"):
            errs.append(invalid("volumeBindingMode", new.get("volumeBindingMode"), "field is immutable"))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        name = _name(obj)
        if is_default_class(obj):
            name += " (default)"
        return [name, obj.get("provisioner", ""), obj.get("reclaimPolicy") or "Delete",
                obj.get("volumeBindingMode") or "Immediate", bool(obj.get("allowVolumeExpansion")),
                creation_age(obj, ctx)]


STORAGECLASS_STRATEGY = StorageClassStrategy()

register(ResourceType("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, STORAGECLASS_STRATEGY,
                      short_names=["sc"]))
