"""Validation of a ResourceClaimSpec (`validateResourceClaimSpec`, shared by claims and templates):
requests and subrequests, CEL selectors (compiled and type-checked at admission), tolerations,
capacity requests, constraints and config naming existing requests, and admin access."""

from __future__ import annotations

from typing import Any

from ...dra.cel.validation import check_expression
from ...machinery import errors
from ...machinery.errors import FieldError
from ...machinery.names import label_value_errors, validate_annotations, validate_labels
from ..registry import StrategyContext
from .constants import (ALLOCATION_MODES, CEL_EXPRESSION_MAX_LENGTH, DEVICE_CONFIG_MAX, DEVICE_CONSTRAINTS_MAX,
                        DEVICE_MAX_DOMAIN_LENGTH, DEVICE_MAX_ID_LENGTH, DEVICE_REQUESTS_MAX, DEVICE_SELECTORS_MAX,
                        DEVICE_TOLERATIONS_MAX, DRA_ADMIN_NAMESPACE_LABEL, FIRST_AVAILABLE_MAX,
                        GATE_CONSUMABLE_CAPACITY, NAMESPACES_KEY, OPAQUE_PARAMETERS_MAX_LENGTH, TAINT_EFFECTS,
                        TOLERATION_OPERATORS, enabled)
from .fields import (QUANTITY_MSG, field_dict, field_items, field_list, parse_quantity, validate_driver_name,
                     validate_fully_qualified_name, validate_label, validate_label_name, validate_map,
                     validate_qualified_name, validate_raw_extension, validate_set, validate_slice, validate_subdomain)


class RequestNames:
    """Request names of a claim, with their subrequest names (for `req` / `req/sub` references)."""

    def __init__(self, devices: Any):
        self.names: dict[str, set | None] = {}
        for r in field_items(devices, "requests"):
            subs = field_items(r, "firstAvailable")
            self.names[r.get("name") or ""] = {s.get("name") for s in subs} if subs else None

    def has(self, ref: str) -> bool:
        segs = ref.split("/")
        if len(segs) > 2 or segs[0] not in self.names:
            return False
        if len(segs) == 1:
            return True
        return segs[1] in (self.names[segs[0]] or set())


_REQUEST_REF_MSG = "must be the name of a request in the claim or the name of a request and a subrequest " \
                   "separated by '/'"


def validate_request_ref(name: Any, path: str, names: RequestNames) -> list[FieldError]:
    name = name if isinstance(name, str) else ""
    segs = name.split("/")
    if len(segs) > 2:
        return [errors.invalid(path, name, _REQUEST_REF_MSG)]
    errs: list[FieldError] = []
    for s in segs:
        errs += validate_label(s, path)
    if not names.has(name):
        errs.append(errors.invalid(path, name, _REQUEST_REF_MSG))
    return errs


def validate_cel_expression(expr: Any, path: str, stored: bool) -> list[FieldError]:
    if stored:
        return []
    expr = expr if isinstance(expr, str) else ""
    if len(expr) > CEL_EXPRESSION_MAX_LENGTH:
        return [errors.too_long(path, CEL_EXPRESSION_MAX_LENGTH)]
    problem = check_expression(expr)
    if problem is None:
        return []
    kind, detail = problem
    if kind == "Required":
        return [errors.required(path, detail)]
    if kind == "Forbidden":
        return [errors.forbidden(path, detail)]
    return [errors.invalid(path, expr, detail)]


def _validate_selector(sel: Any, path: str, stored: bool) -> list[FieldError]:
    cel = sel.get("cel") if isinstance(sel, dict) else None
    if not isinstance(cel, dict):
        return [errors.required(f"{path}.cel", "")]
    return validate_cel_expression(cel.get("expression"), f"{path}.cel.expression", stored)


def validate_selectors(sels: list, path: str, stored: bool) -> list[FieldError]:
    return validate_slice(sels, DEVICE_SELECTORS_MAX, lambda s, p: _validate_selector(s, p, stored), path)


def _validate_device_class_name(name: Any, path: str) -> list[FieldError]:
    name = name if isinstance(name, str) else ""
    if not name:
        return [errors.required(path, "")]
    return validate_subdomain(name, path)


def _validate_allocation_mode(req: dict, path: str) -> list[FieldError]:
    mode = req.get("allocationMode") or ""
    count = req.get("count") or 0
    if mode == "All":
        if count != 0:
            return [errors.invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")]
    elif mode == "ExactCount":
        if not isinstance(count, int) or count <= 0:
            return [errors.invalid(f"{path}.count", count, "must be greater than zero")]
    else:
        return [errors.not_supported(f"{path}.allocationMode", mode, list(ALLOCATION_MODES))]
    return []


def validate_toleration(t: Any, path: str) -> list[FieldError]:
    t = t if isinstance(t, dict) else {}
    errs: list[FieldError] = []
    key = t.get("key") or ""
    if key:
        errs += validate_label_name(key, f"{path}.key")
    op = t.get("operator") or ""
    value = t.get("value") or ""
    if op == "Exists":
        if value:
            errs.append(errors.invalid(f"{path}.value", value, "must be empty for operator `Exists`"))
    elif op == "Equal":
        errs += [errors.invalid(f"{path}.value", value, m) for m in label_value_errors(value)]
    elif op == "":
        errs.append(errors.required(f"{path}.operator", ""))
    else:
        errs.append(errors.not_supported(f"{path}.operator", op, list(TOLERATION_OPERATORS)))
    effect = t.get("effect") or ""
    if effect and effect not in TAINT_EFFECTS:
        errs.append(errors.not_supported(f"{path}.effect", effect, list(TAINT_EFFECTS)))
    return errs


def _validate_tolerations(tols: list, path: str) -> list[FieldError]:
    return validate_slice(tols, DEVICE_TOLERATIONS_MAX, validate_toleration, path)


def _validate_capacity_requests(cap: Any, path: str) -> list[FieldError]:
    reqs = field_dict(cap, "requests")
    return validate_map(reqs, -1, DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH, validate_qualified_name,
                         _validate_quantity_value, f"{path}.requests")


def _validate_quantity_value(v: Any, path: str) -> list[FieldError]:
    if parse_quantity(v) is None:
        return [errors.invalid(path, v, QUANTITY_MSG)]
    return []


def _validate_exact_request(req: dict, path: str, stored: bool) -> list[FieldError]:
    errs = _validate_device_class_name(req.get("deviceClassName"), f"{path}.deviceClassName")
    errs += validate_selectors(field_list(req, "selectors"), f"{path}.selectors", stored)
    errs += _validate_allocation_mode(req, path)
    errs += _validate_tolerations(field_list(req, "tolerations"), f"{path}.tolerations")
    if isinstance(req.get("capacity"), dict):
        errs += _validate_capacity_requests(req["capacity"], f"{path}.capacity")
    return errs


def _validate_sub_request(sub: Any, path: str, stored: bool) -> list[FieldError]:
    sub = sub if isinstance(sub, dict) else {}
    errs = validate_label(sub.get("name") or "", f"{path}.name")
    errs += _validate_device_class_name(sub.get("deviceClassName"), f"{path}.deviceClassName")
    errs += validate_selectors(field_list(sub, "selectors"), f"{path}.selectors", stored)
    errs += _validate_allocation_mode(sub, path)
    errs += _validate_tolerations(field_list(sub, "tolerations"), f"{path}.tolerations")
    if isinstance(sub.get("capacity"), dict):
        errs += _validate_capacity_requests(sub["capacity"], f"{path}.capacity")
    return errs


def _validate_request(req: Any, path: str, stored: bool) -> list[FieldError]:
    req = req if isinstance(req, dict) else {}
    errs = validate_label(req.get("name") or "", f"{path}.name")
    first = field_list(req, "firstAvailable")
    exactly = req.get("exactly")
    has_exactly = isinstance(exactly, dict)
    if not first and not has_exactly:
        errs.append(errors.required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif first and has_exactly:
        errs.append(errors.invalid(path, None, "exactly one of `exactly` or `firstAvailable` is required, but "
                                               "multiple fields are set"))
    elif first:
        errs += validate_set(first, FIRST_AVAILABLE_MAX, lambda s, p: _validate_sub_request(s, p, stored),
                              lambda s: (s or {}).get("name") if isinstance(s, dict) else None,
                              f"{path}.firstAvailable")
    else:
        errs += _validate_exact_request(exactly, f"{path}.exactly", stored)
    return errs


def _validate_constraint(c: Any, path: str, names: RequestNames, ctx: StrategyContext) -> list[FieldError]:
    c = c if isinstance(c, dict) else {}
    errs = validate_set(field_list(c, "requests"), DEVICE_REQUESTS_MAX,
                         lambda n, p: validate_request_ref(n, p, names), lambda n: n, f"{path}.requests")
    if c.get("matchAttribute") is not None:
        errs += validate_fully_qualified_name(str(c["matchAttribute"]), f"{path}.matchAttribute")
    elif c.get("distinctAttribute") is not None:
        errs += validate_fully_qualified_name(str(c["distinctAttribute"]), f"{path}.distinctAttribute")
    elif enabled(ctx, GATE_CONSUMABLE_CAPACITY):
        errs.append(errors.required(path, 'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                                          'but multiple fields are set'))
    else:
        errs.append(errors.required(f"{path}.matchAttribute", ""))
    return errs


def validate_device_configuration(cfg: dict, path: str, stored: bool) -> list[FieldError]:
    opaque = cfg.get("opaque")
    if not isinstance(opaque, dict):
        return [errors.required(f"{path}.opaque", "")]
    errs = validate_driver_name(opaque.get("driver"), f"{path}.opaque.driver")
    errs += validate_raw_extension(opaque.get("parameters"), f"{path}.opaque.parameters", stored,
                                    OPAQUE_PARAMETERS_MAX_LENGTH)
    return errs


def _validate_claim_config(cfg: Any, path: str, names: RequestNames, stored: bool) -> list[FieldError]:
    cfg = cfg if isinstance(cfg, dict) else {}
    errs = validate_set(field_list(cfg, "requests"), DEVICE_REQUESTS_MAX,
                         lambda n, p: validate_request_ref(n, p, names), lambda n: n, f"{path}.requests")
    return errs + validate_device_configuration(cfg, path, stored)


def validate_resource_claim_spec(spec: Any, path: str, ctx: StrategyContext, *,
                                 stored: bool = False) -> list[FieldError]:
    """`validateResourceClaimSpec`, shared by ResourceClaim (`spec`) and templates (`spec.spec`)."""
    devices = field_dict(spec, "devices")
    dpath = f"{path}.devices"
    names = RequestNames(devices)
    errs = validate_set(field_list(devices, "requests"), DEVICE_REQUESTS_MAX,
                         lambda r, p: _validate_request(r, p, stored),
                         lambda r: r.get("name") if isinstance(r, dict) else None, f"{dpath}.requests")
    errs += validate_slice(field_list(devices, "constraints"), DEVICE_CONSTRAINTS_MAX,
                            lambda c, p: _validate_constraint(c, p, names, ctx), f"{dpath}.constraints")
    errs += validate_slice(field_list(devices, "config"), DEVICE_CONFIG_MAX,
                            lambda c, p: _validate_claim_config(c, p, names, stored), f"{dpath}.config")
    return errs


def admin_access_errors(spec: Any, namespace: str, ctx: StrategyContext) -> list[FieldError]:
    """`AuthorizedForAdmin`: `adminAccess: true` needs the admin-access label on the namespace."""
    path = None
    for i, req in enumerate(field_items(field_dict(spec, "devices"), "requests")):
        if isinstance(req.get("exactly"), dict) and req["exactly"].get("adminAccess") is True:
            path = f"spec.devices.requests[{i}].adminAccess"
            break
    if path is None:
        return []
    return namespace_admin_check(namespace, path, ctx)


def namespace_admin_check(namespace: str, path: str, ctx: StrategyContext) -> list[FieldError]:
    ns = ctx.lookup(NAMESPACES_KEY, "", namespace)
    if ns is None:
        return [FieldError("InternalError", path, None, "could not retrieve namespace to verify admin access: "
                                                        f'namespaces "{namespace}" not found', has_value=False)]
    if ((ns.get("metadata") or {}).get("labels") or {}).get(DRA_ADMIN_NAMESPACE_LABEL) != "true":
        return [errors.forbidden(path, f"admin access to devices requires the `{DRA_ADMIN_NAMESPACE_LABEL}: true` "
                                       f"label on the containing namespace")]
    return []


# ===================================================================================================
# DeviceClass


def validate_template_object_meta(md: Any, path: str) -> list[FieldError]:
    md = md if isinstance(md, dict) else {}
    errs = validate_annotations(md.get("annotations"), f"{path}.annotations")
    errs += validate_labels(md.get("labels"), f"{path}.labels")
    for k in sorted(md):
        if k not in ("labels", "annotations") and md[k] not in (None, "", [], {}, 0):
            errs.append(errors.forbidden(f"{path}.{k}", "cannot be set for a template"))
    return errs
