"""Validation of a ResourceClaim status update: reservedFor (unique by uid, at most 256, none while
being deleted), the allocation (set once), and device statuses for allocated devices only."""

from __future__ import annotations

import ipaddress
from typing import Any

from ...machinery import errors
from ...machinery.errors import FieldError
from ..registry import Obj, StrategyContext
from ..scheduling import validate_conditions
from .claim_validation import RequestNames, validate_device_configuration, validate_request_ref, validate_toleration
from .constants import (ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH, ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS,
                        ALLOCATION_CONFIG_MAX, ALLOCATION_RESULTS_MAX, CONFIG_SOURCES, DEVICE_REQUESTS_MAX,
                        NETWORK_DATA_HARDWARE_ADDRESS_MAX, NETWORK_DATA_INTERFACE_NAME_MAX, NETWORK_DATA_MAX_IPS,
                        RESERVED_FOR_MAX)
from .fields import (field_dict, field_items, field_list, validate_driver_name, validate_label,
                     validate_node_selector, validate_pool_name, validate_raw_extension, validate_set,
                     validate_slice, validate_uid)
from .slice_validation import validate_binding_params


def _device_id(d: dict) -> str:
    base = f"{d.get('driver', '')}/{d.get('pool', '')}/{d.get('device', '')}"
    return f"{base}/{d['shareID']}" if d.get("shareID") else base


def _validate_consumer_ref(ref: Any, path: str) -> list[FieldError]:
    ref = ref if isinstance(ref, dict) else {}
    return [errors.required(f"{path}.{f}", "") for f in ("resource", "name", "uid") if not ref.get(f)]


def _validate_allocation_result_entry(r: Any, path: str, names: RequestNames) -> list[FieldError]:
    r = r if isinstance(r, dict) else {}
    errs = validate_request_ref(r.get("request"), f"{path}.request", names)
    errs += validate_driver_name(r.get("driver"), f"{path}.driver")
    errs += validate_pool_name(r.get("pool"), f"{path}.pool")
    errs += validate_label(r.get("device") or "", f"{path}.device")
    errs += validate_binding_params(r, path)
    for i, t in enumerate(field_list(r, "tolerations")):
        errs += validate_toleration(t, f"{path}.tolerations[{i}]")
    if r.get("shareID") is not None:
        errs += validate_uid(r["shareID"], f"{path}.shareID")
    return errs


def _validate_allocation_config(c: Any, path: str, names: RequestNames) -> list[FieldError]:
    c = c if isinstance(c, dict) else {}
    errs: list[FieldError] = []
    source = c.get("source") or ""
    if not source:
        errs.append(errors.required(f"{path}.source", ""))
    elif source not in CONFIG_SOURCES:
        errs.append(errors.not_supported(f"{path}.source", source, list(CONFIG_SOURCES)))
    errs += validate_set(field_list(c, "requests"), DEVICE_REQUESTS_MAX,
                          lambda n, p: validate_request_ref(n, p, names), lambda n: n, f"{path}.requests")
    return errs + validate_device_configuration(c, path, False)


def _validate_allocation(alloc: Any, path: str, names: RequestNames) -> list[FieldError]:
    devices = field_dict(alloc, "devices")
    errs = validate_slice(field_list(devices, "results"), ALLOCATION_RESULTS_MAX,
                           lambda r, p: _validate_allocation_result_entry(r, p, names), f"{path}.devices.results")
    errs += validate_slice(field_list(devices, "config"), ALLOCATION_CONFIG_MAX,
                            lambda c, p: _validate_allocation_config(c, p, names), f"{path}.devices.config")
    if isinstance(alloc, dict) and alloc.get("nodeSelector") is not None:
        errs += validate_node_selector(alloc["nodeSelector"], f"{path}.nodeSelector")
    return errs


def _validate_network_data(nd: Any, path: str) -> list[FieldError]:
    if not isinstance(nd, dict):
        return []
    errs: list[FieldError] = []
    if len(nd.get("interfaceName") or "") > NETWORK_DATA_INTERFACE_NAME_MAX:
        errs.append(errors.too_long(f"{path}.interfaceName", NETWORK_DATA_INTERFACE_NAME_MAX))
    if len(nd.get("hardwareAddress") or "") > NETWORK_DATA_HARDWARE_ADDRESS_MAX:
        errs.append(errors.too_long(f"{path}.hardwareAddress", NETWORK_DATA_HARDWARE_ADDRESS_MAX))

    def ip_errs(addr: Any, p: str) -> list[FieldError]:
        try:
            ipaddress.ip_interface(str(addr))
            if "/" not in str(addr):
                raise ValueError
        except ValueError:
            return [errors.invalid(p, addr, "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or "
                                            "2001:db8::1/64)")]
        return []

    errs += validate_set(field_list(nd, "ips"), NETWORK_DATA_MAX_IPS, ip_errs, lambda a: a, f"{path}.ips")
    return errs


def _validate_device_status(d: Any, path: str, allocated: set[str]) -> list[FieldError]:
    d = d if isinstance(d, dict) else {}
    errs = validate_driver_name(d.get("driver"), f"{path}.driver")
    errs += validate_pool_name(d.get("pool"), f"{path}.pool")
    errs += validate_label(d.get("device") or "", f"{path}.device")
    if d.get("shareID") is not None:
        errs += validate_uid(d["shareID"], f"{path}.shareID")
    if _device_id(d) not in allocated:
        errs.append(errors.invalid(path, _device_id(d), "must be an allocated device in the claim"))
    conds = field_list(d, "conditions")
    if len(conds) > ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS:
        errs.append(errors.too_many(f"{path}.conditions", len(conds), ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS))
    errs += validate_conditions(conds, f"{path}.conditions")
    if d.get("data") is not None:
        errs += validate_raw_extension(d["data"], f"{path}.data", False, ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH)
    errs += _validate_network_data(d.get("networkData"), f"{path}.networkData")
    return errs


def validate_claim_status_update(new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
    status, old_status = field_dict(new, "status"), field_dict(old, "status")
    names = RequestNames(field_dict(field_dict(new, "spec"), "devices"))
    errs: list[FieldError] = []
    reserved = field_list(status, "reservedFor")
    errs += validate_set(reserved, RESERVED_FOR_MAX, _validate_consumer_ref,
                          lambda r: r.get("uid") if isinstance(r, dict) else None, "status.reservedFor")
    allocation = status.get("allocation")
    allocated = {_device_id(r) for r in field_items(field_dict(allocation, "devices"), "results")}
    errs += validate_set(field_list(status, "devices"), -1, lambda d, p: _validate_device_status(d, p, allocated),
                          lambda d: _device_id(d) if isinstance(d, dict) else None, "status.devices")
    if reserved:
        if allocation is None:
            errs.append(errors.forbidden("status.reservedFor", "may not be specified when `allocated` is not set"))
        elif (new.get("metadata") or {}).get("deletionTimestamp"):
            old_uids = {(r or {}).get("uid") for r in field_list(old_status, "reservedFor") if isinstance(r, dict)}
            if any(isinstance(r, dict) and r.get("uid") not in old_uids for r in reserved):
                errs.append(errors.forbidden("status.reservedFor", "new entries may not be added while "
                                                                   "`deallocationRequested` or `deletionTimestamp` "
                                                                   "are set"))
    old_allocation = old_status.get("allocation")
    if old_allocation is not None and allocation is not None:
        if allocation != old_allocation:
            errs.append(errors.immutable("status.allocation", allocation))
    elif allocation is not None:
        errs += _validate_allocation(allocation, "status.allocation", names)
    return errs
