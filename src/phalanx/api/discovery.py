"""discovery.k8s.io/v1 EndpointSlice: validation and `kubectl get endpointslices` cells.

Rules from upstream `pkg/apis/discovery/validation` (address types, at most 1000 endpoints and 100
ports, port names unique) and the printer's `printEndpointSlice` (ADDRESSTYPE, PORTS, ENDPOINTS).
Registered at import as `endpointslices`; the EndpointSlice controller writes them.
"""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, duplicate, invalid, not_supported, required, too_many
from .common import Obj, _dict, _list, _name, creation_age
from .fieldchecks import IMMUTABLE_MSG
from .registry import AGE_COLUMN, NAME_COLUMN, Column, ResourceType, Strategy, StrategyContext, register

ADDRESS_TYPES = ("IPv4", "IPv6", "FQDN")
MAX_ENDPOINTS = 1000
MAX_PORTS = 100
MAX_ADDRESSES = 100


def format_slice_ports(ports: Any) -> str:
    values = [str(_dict(p).get("port")) for p in _list(ports) if _dict(p).get("port") is not None]
    return ",".join(values) if values else "<unset>"


def format_slice_endpoints(endpoints: Any) -> str:
    addresses = [a for ep in _list(endpoints) for a in _list(_dict(ep).get("addresses"))]
    if not addresses:
        return "<unset>"
    more = f" + {len(addresses) - 3} more..." if len(addresses) > 3 else ""
    return ",".join(str(a) for a in addresses[:3]) + more


def _endpoint_errors(endpoints: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(endpoints) > MAX_ENDPOINTS:
        errs.append(too_many(path, len(endpoints), MAX_ENDPOINTS))
    for i, ep in enumerate(endpoints):
        addrs = _list(_dict(ep).get("addresses"))
        if not addrs:
            errs.append(required(f"{path}[{i}].addresses", "must contain at least 1 address"))
        elif len(addrs) > MAX_ADDRESSES:
            errs.append(too_many(f"{path}[{i}].addresses", len(addrs), MAX_ADDRESSES))
    return errs


def _port_errors(ports: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(ports) > MAX_PORTS:
        errs.append(too_many(path, len(ports), MAX_PORTS))
    names: set[str] = set()
    for i, port in enumerate(ports):
        name = _dict(port).get("name", "")
        if name in names:
            errs.append(duplicate(f"{path}[{i}].name", name))
        names.add(name)
        num = _dict(port).get("port")
        if num is not None and (not isinstance(num, int) or isinstance(num, bool) or not 0 <= num <= 65535):
            errs.append(invalid(f"{path}[{i}].port", num, "must be between 0 and 65535, inclusive"))
    return errs


class EndpointSliceStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("AddressType", "string", "", "The IP protocol for this slice"),
        Column("Ports", "string", "", "The ports for this slice"),
        Column("Endpoints", "string", "", "First 3 endpoints for this slice"),
        AGE_COLUMN,
    ]

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        at = obj.get("addressType")
        if not at:
            errs.append(required("addressType", ""))
        elif at not in ADDRESS_TYPES:
            errs.append(not_supported("addressType", at, ADDRESS_TYPES))
        errs += _endpoint_errors(_list(obj.get("endpoints")), "endpoints")
        errs += _port_errors(_list(obj.get("ports")), "ports")
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs = self.validate(new, ctx)
        if new.get("addressType") != old.get("addressType"):
            errs.append(invalid("addressType", new.get("addressType"), IMMUTABLE_MSG))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [_name(obj), obj.get("addressType", ""), format_slice_ports(obj.get("ports")),
                format_slice_endpoints(obj.get("endpoints")), creation_age(obj, ctx)]


ENDPOINTSLICE_STRATEGY = EndpointSliceStrategy()

register(ResourceType("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True, ENDPOINTSLICE_STRATEGY))
