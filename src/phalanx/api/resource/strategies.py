"""The four DRA kinds' strategies (what create, update and status updates may change, defaults,
printer columns, field selectors) and their registration."""

from __future__ import annotations

from datetime import timezone
from typing import Any

from ...machinery import errors
from ...machinery.errors import FieldError
from ...machinery.names import qualified_name_errors
from ..registry import AGE_COLUMN, NAME_COLUMN, Column, Obj, ResourceType, Strategy, StrategyContext, age_cell, \
    register
from .claim_validation import (admin_access_errors, namespace_admin_check, validate_device_configuration,
                               validate_resource_claim_spec, validate_selectors, validate_template_object_meta)
from .constants import DEVICE_CONFIG_MAX, GATE_EXTENDED_RESOURCE, GROUP, VERSION, enabled
from .fields import field_dict, field_items, field_list, validate_slice
from .gated_fields import (default_claim_spec, drop_deallocated_status_devices, drop_disabled_claim_spec_fields,
                           drop_disabled_claim_status_fields, drop_disabled_slice_fields)
from .slice_validation import validate_resource_slice_spec
from .status_validation import validate_claim_status_update


def is_extended_resource_name(name: str) -> bool:
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


class DeviceClassStrategy(Strategy):
    columns = [NAME_COLUMN, AGE_COLUMN]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        obj.setdefault("spec", {})

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        self._drop(obj, None, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        self._drop(new, old, ctx)

    @staticmethod
    def _drop(obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and not enabled(ctx, GATE_EXTENDED_RESOURCE) and \
                field_dict(old, "spec").get("extendedResourceName") is None:
            spec.pop("extendedResourceName", None)

    def _validate_spec(self, spec: Any, old_spec: Any) -> list[FieldError]:
        spec = spec if isinstance(spec, dict) else {}
        sel_stored = old_spec is not None and field_list(spec, "selectors") == field_list(old_spec, "selectors")
        errs = validate_selectors(field_list(spec, "selectors"), "spec.selectors", sel_stored)
        cfg_stored = old_spec is not None and field_list(spec, "config") == field_list(old_spec, "config")
        errs += validate_slice(field_items(spec, "config"), DEVICE_CONFIG_MAX,
                                lambda c, p: validate_device_configuration(c, p, cfg_stored), "spec.config")
        ern = spec.get("extendedResourceName")
        if ern is not None and not is_extended_resource_name(str(ern)):
            errs.append(errors.invalid("spec.extendedResourceName", ern, "must be a valid extended resource name"))
        return errs

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return self._validate_spec(obj.get("spec"), None)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return self._validate_spec(new.get("spec"), old.get("spec") or {})


# ===================================================================================================


class ResourceSliceStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Node", "string", "", "NodeName identifies the node which provides the resources in this pool."),
        Column("Driver", "string", "", "Driver identifies the DRA driver providing the capacity information."),
        Column("Pool", "string", "", "Name is used to identify the pool."),
        AGE_COLUMN,
    ]
    field_selectors = {
        "spec.nodeName": lambda o: field_dict(o, "spec").get("nodeName") or "",
        "spec.driver": lambda o: field_dict(o, "spec").get("driver") or "",
    }

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        pool = spec.setdefault("pool", {})
        if isinstance(pool, dict):  # ResourcePool's fields have no omitempty
            pool.setdefault("name", "")
            pool.setdefault("generation", 0)
            pool.setdefault("resourceSliceCount", 0)
        now = ctx.now().astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        for d in field_items(spec, "devices"):
            for t in field_items(d, "taints"):
                if not t.get("timeAdded"):
                    t["timeAdded"] = now

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        drop_disabled_slice_fields(obj.get("spec"), None, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        drop_disabled_slice_fields(new.get("spec"), old.get("spec"), ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_resource_slice_spec(obj.get("spec"), None)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_resource_slice_spec(new.get("spec"), old.get("spec") or {})

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = field_dict(obj, "spec")
        return [obj["metadata"]["name"], spec.get("nodeName") or "", spec.get("driver") or "",
                field_dict(spec, "pool").get("name") or "", age_cell(obj, ctx)]


# ===================================================================================================
# ResourceClaim
# ===================================================================================================

def resource_claim_state(obj: Obj) -> str:
    """The STATE column: `deleted` when terminating, then `pending` or `allocated[,reserved]`."""
    states = []
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    if deleting:
        states.append("deleted")
    status = field_dict(obj, "status")
    if status.get("allocation") is None:
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if field_list(status, "reservedFor"):
            states.append("reserved")
    return ",".join(states)


class ResourceClaimStrategy(Strategy):
    status_is_subresource = True
    columns = [
        NAME_COLUMN,
        Column("State", "string", "", "A summary of the current state (allocated, pending, reserved, etc.)."),
        AGE_COLUMN,
    ]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        default_claim_spec(spec)
        for r in field_items(field_dict(field_dict(obj, "status").get("allocation"), "devices"), "results"):
            for t in field_items(r, "tolerations"):
                if not t.get("operator"):
                    t["operator"] = "Equal"

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {}
        drop_disabled_claim_spec_fields(obj.get("spec"), None, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        new["status"] = old.get("status", {})
        drop_disabled_claim_spec_fields(new.get("spec"), old.get("spec"), ctx)
        drop_disabled_claim_status_fields(new, old, ctx)

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_status_update(new, old, ctx)
        new.setdefault("status", {})
        drop_deallocated_status_devices(new, old)
        drop_disabled_claim_status_fields(new, old, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        ns = (obj.get("metadata") or {}).get("namespace", "")
        return admin_access_errors(obj.get("spec"), ns, ctx) + \
            validate_resource_claim_spec(obj.get("spec"), "spec", ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = validate_resource_claim_spec(new.get("spec"), "spec", ctx)
        if new.get("spec") != old.get("spec"):
            errs.append(errors.immutable("spec", new.get("spec")))
        return errs

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        old_results = field_items(field_dict(field_dict(old, "status").get("allocation"), "devices"), "results")
        if not any(r.get("adminAccess") is True for r in old_results):
            for i, r in enumerate(field_items(field_dict(field_dict(new, "status").get("allocation"), "devices"), "results")):
                if r.get("adminAccess") is True:
                    ns = (new.get("metadata") or {}).get("namespace", "")
                    errs += namespace_admin_check(ns, f"status.allocation.devices.results[{i}].adminAccess", ctx)
                    break
        return errs + validate_claim_status_update(new, old, ctx)

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [obj["metadata"]["name"], resource_claim_state(obj), age_cell(obj, ctx)]


# ===================================================================================================


class ResourceClaimTemplateStrategy(Strategy):
    columns = [NAME_COLUMN, AGE_COLUMN]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("metadata", {})
        default_claim_spec(spec.setdefault("spec", {}))

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        drop_disabled_claim_spec_fields(field_dict(obj, "spec").get("spec"), None, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        drop_disabled_claim_spec_fields(field_dict(new, "spec").get("spec"), field_dict(old, "spec").get("spec"), ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = field_dict(obj, "spec")
        ns = (obj.get("metadata") or {}).get("namespace", "")
        errs = admin_access_errors(spec.get("spec"), ns, ctx)
        errs += validate_template_object_meta(spec.get("metadata"), "spec.metadata")
        return errs + validate_resource_claim_spec(spec.get("spec"), "spec.spec", ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        if new.get("spec") != old.get("spec"):
            return [errors.immutable("spec", new.get("spec"))]
        return []


DEVICE_CLASSES = register(ResourceType(
    group=GROUP, version=VERSION, kind="DeviceClass", plural="deviceclasses", namespaced=False,
    strategy=DeviceClassStrategy()))

RESOURCE_SLICES = register(ResourceType(
    group=GROUP, version=VERSION, kind="ResourceSlice", plural="resourceslices", namespaced=False,
    strategy=ResourceSliceStrategy()))

RESOURCE_CLAIMS = register(ResourceType(
    group=GROUP, version=VERSION, kind="ResourceClaim", plural="resourceclaims", namespaced=True,
    strategy=ResourceClaimStrategy(), subresources=["status"]))

RESOURCE_CLAIM_TEMPLATES = register(ResourceType(
    group=GROUP, version=VERSION, kind="ResourceClaimTemplate", plural="resourceclaimtemplates", namespaced=True,
    strategy=ResourceClaimTemplateStrategy()))


