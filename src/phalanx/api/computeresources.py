"""Compute resources: quantities as the API server stores them, container resource names,
requests/limits validation (`ValidateContainerResourceRequirements`) and a pod's QoS class."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..machinery import quantity as _quantity
from ..machinery.errors import FieldError, duplicate, forbidden, invalid, not_found, required
from ..machinery.names import qualified_name_errors
from .common import Obj, _dict, _list
from .fieldchecks import IS_NEGATIVE_MSG

QOS_COMPUTE_RESOURCES = ("cpu", "memory")
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
STANDARD_RESOURCES = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "persistentvolumeclaims", "configmaps", "services.nodeports",
    "services.loadbalancers", "requests.storage",
}
QUANTITY_REGEX_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def parse_quantity(s: Any) -> Fraction:
    """A resource quantity as an exact Fraction; ValueError when malformed."""
    return _quantity.parse_quantity(s)


def quantity_str(q: Any) -> str:
    """What upstream's `Quantity.String()` prints for a value in an error message."""
    try:
        return _quantity.canonicalize(q)
    except (ValueError, TypeError):
        return q if isinstance(q, str) else str(q)


def canonical_resource_quantity(q: Any) -> Any:
    """A ResourceList value as the API server stores it: rounded up to milli precision
    (`SetDefaults_ResourceList`) and written in canonical form. Malformed values are kept for
    validation to report."""
    try:
        value, fmt = _quantity.parse_quantity_format(q)
    except (ValueError, TypeError):
        return q
    if (value * 1000).denominator != 1:
        milli = value * 1000
        whole = -((-abs(milli.numerator)) // milli.denominator)
        value = Fraction(whole if value > 0 else -whole, 1000)
        return _quantity.format_quantity(value, fmt)
    return _quantity.canonicalize(q)


def canonicalize_resource_list(rl: Any) -> None:
    if isinstance(rl, dict):
        for k, v in list(rl.items()):
            rl[k] = canonical_resource_quantity(v)


def _is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_extended_resource(name: str) -> bool:
    if _is_native_resource(name) or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return _is_native_resource(name) and not _is_hugepages(name)


def _validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    errs = [invalid(path, name, m) for m in qualified_name_errors(name)]
    if not errs and "/" not in name and name not in STANDARD_RESOURCES and not _is_hugepages(name):
        errs.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            errs.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native_resource(name) and not _is_extended_resource(name):
        errs.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _validate_quantity_value(name: str, q: Any, path: str) -> tuple[list[FieldError], Fraction | None]:
    try:
        v = parse_quantity(q)
    except (ValueError, TypeError):
        return [invalid(path, q, QUANTITY_REGEX_MSG)], None
    errs: list[FieldError] = []
    if v < 0:
        errs.append(invalid(path, quantity_str(q), IS_NEGATIVE_MSG))
    if _is_extended_resource(name) and v.denominator != 1:
        errs.append(invalid(path, quantity_str(q), "must be an integer"))
    return errs, v


def validate_resource_requirements(res: Any, claim_names: set[str], path: str) -> list[FieldError]:
    """`ValidateContainerResourceRequirements`: names, quantities, requests <= limits, claims."""
    errs: list[FieldError] = []
    res = _dict(res)
    lim_path, req_path = f"{path}.limits", f"{path}.requests"
    limits = _dict(res.get("limits"))
    requests = _dict(res.get("requests"))
    lim_vals: dict[str, Fraction] = {}
    for name, q in limits.items():
        fp = f"{lim_path}[{name}]"
        errs += _validate_container_resource_name(name, fp)
        qerrs, v = _validate_quantity_value(name, q, fp)
        errs += qerrs
        if v is not None:
            lim_vals[name] = v
    for name, q in requests.items():
        fp = f"{req_path}[{name}]"
        errs += _validate_container_resource_name(name, fp)
        qerrs, v = _validate_quantity_value(name, q, fp)
        errs += qerrs
        if name in limits:
            lv = lim_vals.get(name)
            if v is not None and lv is not None:
                if v != lv and not _overcommit_allowed(name):
                    errs.append(invalid(req_path, quantity_str(q),
                                        f"must be equal to {name} limit of {quantity_str(limits[name])}"))
                elif v > lv:
                    errs.append(invalid(req_path, quantity_str(q),
                                        f"must be less than or equal to {name} limit of {quantity_str(limits[name])}"))
        elif not _overcommit_allowed(name):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
    names = list(limits) + list(requests)
    if any(_is_hugepages(n) for n in names) and not any(n in QOS_COMPUTE_RESOURCES for n in names):
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    if res.get("claims"):
        errs += _container_claim_errors(_list(res.get("claims")), claim_names, path)
    return errs


def _container_claim_errors(claims: list, claim_names: set[str], path: str) -> list[FieldError]:
    """A container's `resources.claims`: each names one of the pod's resource claims, once."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        cp = f"{path}.claims[{i}]"
        name = _dict(claim).get("name") or ""
        if not name:
            errs.append(required(cp))
            continue
        if name in seen:
            errs.append(duplicate(cp, name))
        else:
            seen.add(name)
        if name not in claim_names:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += " which is empty" if not claim_names else ": " + ", ".join(sorted(claim_names))
            e = not_found(cp, name)
            e.detail = detail
            errs.append(e)
    return errs


# --- QoS -------------------------------------------------------------------------------------------

def compute_qos_class(spec: Obj) -> str:
    """Upstream `GetPodQOS` (container-level resources): Guaranteed, Burstable or BestEffort."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    containers = _list(spec.get("containers")) + _list(spec.get("initContainers"))
    for c in containers:
        res = _dict(_dict(c).get("resources"))
        for name, q in _dict(res.get("requests")).items():
            if name not in QOS_COMPUTE_RESOURCES:
                continue
            try:
                v = parse_quantity(q)
            except (ValueError, TypeError):
                continue
            if v > 0:
                requests[name] = requests.get(name, Fraction(0)) + v
        found = set()
        for name, q in _dict(res.get("limits")).items():
            if name not in QOS_COMPUTE_RESOURCES:
                continue
            try:
                v = parse_quantity(q)
            except (ValueError, TypeError):
                continue
            if v > 0:
                found.add(name)
                limits[name] = limits.get(name, Fraction(0)) + v
        if not {"cpu", "memory"} <= found:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, req in requests.items():
            if limits.get(name) != req:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"
