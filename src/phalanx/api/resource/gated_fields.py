"""Defaults and feature-gated fields: SetDefaults for claim specs, and the fields dropped when
their gate (DRAPrioritizedList, DRADeviceTaints, DRAAdminAccess, DRAConsumableCapacity,
DRAPartitionableDevices, DRADeviceBindingConditions, DRAResourceClaimDeviceStatus,
DRAListTypeAttributes) is off, unless the old object already used them."""

from __future__ import annotations

from typing import Any, Callable

from ..registry import Obj, StrategyContext
from .constants import (GATE_ADMIN_ACCESS, GATE_BINDING_CONDITIONS, GATE_CONSUMABLE_CAPACITY, GATE_DEVICE_STATUS,
                        GATE_DEVICE_TAINTS, GATE_LIST_ATTRIBUTES, GATE_PARTITIONABLE, GATE_PRIORITIZED_LIST, enabled)
from .fields import field_dict, field_items, field_list


def default_claim_spec(spec: Any) -> None:
    """SetDefaults for a ResourceClaimSpec: request allocation modes/counts and toleration operators.

    Also gives the spec upstream's JSON shape: `devices` and `devices.requests` have no omitempty.
    """
    if not isinstance(spec, dict):
        return
    devices = spec.setdefault("devices", {})
    if not isinstance(devices, dict):
        return
    devices.setdefault("requests", None)
    for req in field_items(devices, "requests"):
        if isinstance(req.get("exactly"), dict):
            _default_request_mode(req["exactly"])
        for sub in field_items(req, "firstAvailable"):
            _default_request_mode(sub)


def _default_request_mode(req: dict) -> None:
    if not req.get("allocationMode"):
        req["allocationMode"] = "ExactCount"
    if req["allocationMode"] == "ExactCount" and not req.get("count"):
        req["count"] = 1
    for t in field_items(req, "tolerations"):
        if not t.get("operator"):
            t["operator"] = "Equal"


def all_requests(spec: Any) -> list[tuple[dict, bool]]:
    """Every (request-like dict, is_exactly) of a claim spec: `exactly` entries and subrequests."""
    out: list[tuple[dict, bool]] = []
    for req in field_items(field_dict(spec, "devices"), "requests"):
        if isinstance(req.get("exactly"), dict):
            out.append((req["exactly"], True))
        for sub in field_items(req, "firstAvailable"):
            out.append((sub, False))
    return out


def drop_disabled_claim_spec_fields(spec: Any, old_spec: Any, ctx: StrategyContext) -> None:
    """`resourceclaimspec.DropDisabledFields`."""
    if not isinstance(spec, dict):
        return
    for gate, in_use, drop in _CLAIM_SPEC_FIELDS:
        if not enabled(ctx, gate) and not in_use(old_spec):
            drop(spec)


_LIST_ATTRIBUTE_KEYS = ("bools", "ints", "strings", "versions")


def _requests(spec: Any) -> list[dict]:
    return field_items(field_dict(spec, "devices"), "requests")


def _exact_requests(spec: Any) -> list[dict]:
    return [r for r, exact in all_requests(spec) if exact]


def _pop_all(items: list[dict], *names: str) -> None:
    for item in items:
        for name in names:
            item.pop(name, None)


def _uses_consumable_capacity_in_spec(spec: Any) -> bool:
    constraints = field_items(field_dict(spec, "devices"), "constraints")
    return any(c.get("distinctAttribute") is not None for c in constraints) or \
        any(r.get("capacity") is not None for r, _ in all_requests(spec))


def _drop_consumable_capacity_from_spec(spec: dict) -> None:
    _pop_all(field_items(field_dict(spec, "devices"), "constraints"), "distinctAttribute")
    _pop_all([r for r, _ in all_requests(spec)], "capacity")


_CLAIM_SPEC_FIELDS: tuple[tuple[str, Callable[[Any], bool], Callable[[dict], None]], ...] = (
    (GATE_PRIORITIZED_LIST, lambda old: any(field_list(r, "firstAvailable") for r in _requests(old)),
     lambda spec: _pop_all(_requests(spec), "firstAvailable")),
    (GATE_DEVICE_TAINTS, lambda old: any(field_list(r, "tolerations") for r, _ in all_requests(old)),
     lambda spec: _pop_all([r for r, _ in all_requests(spec)], "tolerations")),
    (GATE_ADMIN_ACCESS, lambda old: any(r.get("adminAccess") is not None for r in _exact_requests(old)),
     lambda spec: _pop_all(_exact_requests(spec), "adminAccess")),
    (GATE_CONSUMABLE_CAPACITY, _uses_consumable_capacity_in_spec, _drop_consumable_capacity_from_spec),
)


def drop_disabled_slice_fields(spec: Any, old_spec: Any, ctx: StrategyContext) -> None:
    """`resourceslice.DropDisabledFields`."""
    if not isinstance(spec, dict):
        return
    old = old_spec if isinstance(old_spec, dict) else {}
    for gate_on, in_use, drop in _SLICE_FIELDS:
        if not gate_on(ctx) and not in_use(old):
            drop(spec)


_PER_DEVICE_NODE_FIELDS = ("nodeName", "nodeSelector", "allNodes")
_BINDING_FIELDS = ("bindingConditions", "bindingFailureConditions", "bindsToNode")


def _uses_partitionable_devices(old: dict) -> bool:
    if field_list(old, "sharedCounters") or old.get("perDeviceNodeSelection") is not None:
        return True
    return any(field_list(d, "consumesCounters") or any(d.get(f) is not None for f in _PER_DEVICE_NODE_FIELDS)
               for d in field_items(old, "devices"))


def _drop_partitionable_devices(spec: dict) -> None:
    spec.pop("sharedCounters", None)
    spec.pop("perDeviceNodeSelection", None)
    _pop_all(field_items(spec, "devices"), "consumesCounters", *_PER_DEVICE_NODE_FIELDS)


def _uses_binding_conditions(old: dict) -> bool:
    return any(field_list(d, "bindingConditions") or field_list(d, "bindingFailureConditions")
               or d.get("bindsToNode") is not None for d in field_items(old, "devices"))


def _capacities(device: dict) -> list[dict]:
    return [c for c in field_dict(device, "capacity").values() if isinstance(c, dict)]


def _uses_consumable_capacity_in_slice(old: dict) -> bool:
    return any(d.get("allowMultipleAllocations") is not None
               or any(c.get("requestPolicy") is not None for c in _capacities(d)) for d in field_items(old, "devices"))


def _drop_consumable_capacity_from_slice(spec: dict) -> None:
    for d in field_items(spec, "devices"):
        d.pop("allowMultipleAllocations", None)
        _pop_all(_capacities(d), "requestPolicy")


def _attributes(spec: dict) -> list[dict]:
    return [a for d in field_items(spec, "devices") for a in field_dict(d, "attributes").values()
            if isinstance(a, dict)]


_SLICE_FIELDS: tuple[tuple[Callable[[StrategyContext], bool], Callable[[dict], bool], Callable[[dict], None]], ...] = (
    (lambda ctx: enabled(ctx, GATE_DEVICE_TAINTS),
     lambda old: any(field_list(d, "taints") for d in field_items(old, "devices")),
     lambda spec: _pop_all(field_items(spec, "devices"), "taints")),
    (lambda ctx: enabled(ctx, GATE_PARTITIONABLE), _uses_partitionable_devices, _drop_partitionable_devices),
    (lambda ctx: enabled(ctx, GATE_BINDING_CONDITIONS) and enabled(ctx, GATE_DEVICE_STATUS),
     _uses_binding_conditions, lambda spec: _pop_all(field_items(spec, "devices"), *_BINDING_FIELDS)),
    (lambda ctx: enabled(ctx, GATE_CONSUMABLE_CAPACITY), _uses_consumable_capacity_in_slice,
     _drop_consumable_capacity_from_slice),
    (lambda ctx: enabled(ctx, GATE_LIST_ATTRIBUTES),
     lambda old: any(any(a.get(k) is not None for k in _LIST_ATTRIBUTE_KEYS) for a in _attributes(old)),
     lambda spec: _pop_all(_attributes(spec), *_LIST_ATTRIBUTE_KEYS)),
)


def drop_disabled_claim_status_fields(new: Obj, old: Obj | None, ctx: StrategyContext) -> None:
    """The status part of `resourceclaim.dropDisabledFields`."""
    status = new.get("status")
    if not isinstance(status, dict):
        return
    old = old if isinstance(old, dict) else {}
    for gate, in_use, drop in _CLAIM_STATUS_FIELDS:
        if not enabled(ctx, gate) and not in_use(old):
            drop(status, field_dict(old, "status"))


def _results(status: Any) -> list[dict]:
    return field_items(field_dict(field_dict(status, "allocation"), "devices"), "results")


def _old_results(old: Obj) -> list[dict]:
    return _results(field_dict(old, "status"))


def _uses_admin_access_in_status(old: Obj) -> bool:
    return any(r.get("adminAccess") is not None for r in _exact_requests(field_dict(old, "spec"))) or \
        any(r.get("adminAccess") is not None for r in _old_results(old))


def _uses_consumable_capacity_in_status(old: Obj) -> bool:
    return any(r.get("shareID") is not None or r.get("consumedCapacity") is not None for r in _old_results(old)) \
        or any(d.get("shareID") is not None for d in field_items(field_dict(old, "status"), "devices"))


def _drop_consumable_capacity_from_status(status: dict, old_status: dict) -> None:
    _pop_all(_results(status), "shareID", "consumedCapacity")
    _pop_all(field_items(status, "devices"), "shareID")


def _drop_binding_conditions_from_status(status: dict, old_status: dict) -> None:
    _pop_all(_results(status), "bindingConditions", "bindingFailureConditions")
    if isinstance(status.get("allocation"), dict) and \
            field_dict(old_status, "allocation").get("allocationTimestamp") is None:
        status["allocation"].pop("allocationTimestamp", None)


def _drop_device_statuses(status: dict, old_status: dict) -> None:
    status.pop("devices", None)


_CLAIM_STATUS_FIELDS: tuple[tuple[str, Callable[[Obj], bool], Callable[[dict, dict], None]], ...] = (
    (GATE_ADMIN_ACCESS, _uses_admin_access_in_status,
     lambda status, old_status: _pop_all(_results(status), "adminAccess")),
    (GATE_DEVICE_STATUS, lambda old: bool(field_list(field_dict(old, "status"), "devices")), _drop_device_statuses),
    (GATE_CONSUMABLE_CAPACITY, _uses_consumable_capacity_in_status, _drop_consumable_capacity_from_status),
    (GATE_BINDING_CONDITIONS,
     lambda old: any(r.get("bindingConditions") is not None or r.get("bindingFailureConditions") is not None
                     for r in _old_results(old)),
     _drop_binding_conditions_from_status),
    (GATE_DEVICE_TAINTS, lambda old: any(field_list(r, "tolerations") for r in _old_results(old)),
     lambda status, old_status: _pop_all(_results(status), "tolerations")),
)


def drop_deallocated_status_devices(new: Obj, old: Obj) -> None:
    status = new.get("status")
    if not isinstance(status, dict) or not field_list(status, "devices"):
        return
    old_ids = {f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}"
               for r in field_items(field_dict(field_dict(old, "status").get("allocation"), "devices"), "results")}
    new_ids = {f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}"
               for r in field_items(field_dict(status.get("allocation"), "devices"), "results")}
    gone = old_ids - new_ids
    kept = [d for d in field_list(status, "devices")
            if not (isinstance(d, dict) and f"{d.get('driver')}/{d.get('pool')}/{d.get('device')}" in gone)]
    if kept:
        status["devices"] = kept
    else:
        status.pop("devices", None)
