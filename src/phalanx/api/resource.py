"""resource.k8s.io/v1 (Dynamic Resource Allocation): DeviceClass, ResourceSlice, ResourceClaim,
ResourceClaimTemplate.

Importing this module registers the four kinds. Behaviour follows kube-apiserver 1.36
(`pkg/apis/resource/validation`, `pkg/registry/resource/*/strategy.go`, printers):

- defaults: a request's `allocationMode` is `ExactCount` and its `count` 1; a toleration's
  `operator` is `Equal`; a device taint's `timeAdded` is now;
- validation of requests (exactly one of `exactly`/`firstAvailable`), selectors (CEL expressions
  are compiled and type-checked at admission by `phalanx.dra.cel.validation`), constraints and config
  naming existing requests (`req` or `req/sub`), slices (one node-selection mode, pool names,
  device names, attributes and capacities), claim status (allocation set once, reservedFor unique
  by uid and at most 256, device statuses for allocated devices only);
- fields behind DRAAdminAccess, DRAPrioritizedList, DRADeviceTaints, DRAPartitionableDevices,
  DRAConsumableCapacity, DRADeviceBindingConditions and DRAExtendedResource are dropped when the
  gate is off, unless the old object already used them;
- `adminAccess: true` needs the `resource.kubernetes.io/admin-access: "true"` label on the namespace;
- tables: ResourceClaim NAME STATE AGE (`pending`, `allocated,reserved`, `deleted`, ...),
  ResourceSlice NAME NODE DRIVER POOL AGE; ResourceSlice field selectors `spec.nodeName`,
  `spec.driver`.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import timezone
from fractions import Fraction
from typing import Any, Callable

import orjson

from ..dra.cel.validation import check_expression
from ..machinery import errors, quantity
from ..machinery.errors import FieldError
from ..machinery.names import regex_error, dns1123_label_errors, dns1123_subdomain_errors, label_value_errors, \
    qualified_name_errors, validate_annotations, validate_labels
from .registry import AGE_COLUMN, NAME_COLUMN, Column, Obj, ResourceType, Strategy, StrategyContext, \
    age_cell, register
from .scheduling import validate_conditions

GROUP = "resource.k8s.io"
VERSION = "v1"

# -- constants (k8s.io/api/resource/v1) ------------------------------------------------------------
FINALIZER = "resource.kubernetes.io/delete-protection"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
DRA_ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"

DEVICE_REQUESTS_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_CONFIG_MAX = 32
DEVICE_SELECTORS_MAX = 32
FIRST_AVAILABLE_MAX = 8
DEVICE_TOLERATIONS_MAX = 16
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024
RESERVED_FOR_MAX = 256
ALLOCATION_RESULTS_MAX = 32
ALLOCATION_CONFIG_MAX = 2 * DEVICE_CONFIG_MAX
RESOURCE_SLICE_MAX_DEVICES = 128
RESOURCE_SLICE_MAX_DEVICES_ADVANCED = 64  # when a device has taints, consumes counters or list attributes
RESOURCE_SLICE_MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_COUNTER_SET = 32
MAX_COUNTER_CONSUMPTIONS_PER_DEVICE = 2
MAX_COUNTERS_PER_COUNTER_CONSUMPTION = 32
MAX_ATTRIBUTES_AND_CAPACITIES = 32
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
DEVICE_TAINTS_MAX = 16
DRIVER_NAME_MAX_LENGTH = 63
POOL_NAME_MAX_LENGTH = 253
BINDING_CONDITIONS_MAX = 4
CAPACITY_VALID_VALUES_MAX = 10
ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS = 8
ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH = 10 * 1024
NETWORK_DATA_MAX_IPS = 16
NETWORK_DATA_INTERFACE_NAME_MAX = 256
NETWORK_DATA_HARDWARE_ADDRESS_MAX = 128

ALLOCATION_MODES = ("All", "ExactCount")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
CONFIG_SOURCES = ("FromClaim", "FromClass")

GATE_ADMIN_ACCESS = "DRAAdminAccess"
GATE_PRIORITIZED_LIST = "DRAPrioritizedList"
GATE_DEVICE_TAINTS = "DRADeviceTaints"
GATE_PARTITIONABLE = "DRAPartitionableDevices"
GATE_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
GATE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
GATE_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"
GATE_EXTENDED_RESOURCE = "DRAExtendedResource"
GATE_LIST_ATTRIBUTES = "DRAListTypeAttributes"

# Upstream 1.36 defaults for gates phalanx's FeatureGates may not know yet.
_GATE_DEFAULTS = {GATE_BINDING_CONDITIONS: True, GATE_DEVICE_STATUS: True, GATE_LIST_ATTRIBUTES: False}

NAMESPACES_KEY = "core/namespaces"



# -- helpers ---------------------------------------------------------------------------------------

def _enabled(ctx: StrategyContext, gate: str) -> bool:
    try:
        return bool(ctx.enabled(gate))
    except Exception:  # a gate phalanx does not list yet: upstream's 1.36 default
        return _GATE_DEFAULTS.get(gate, False)


def _dict(d: Any, key: str) -> dict:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, dict) else {}


def _list(d: Any, key: str) -> list:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, list) else []


def _items(d: Any, key: str) -> list[dict]:
    return [x if isinstance(x, dict) else {} for x in _list(d, key)]




_C_IDENT_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENT_RE = re.compile(f"^{_C_IDENT_FMT}$")
_C_IDENT_MSG = regex_error("a valid C identifier must start with alphabetic character or '_', followed by a "
                            "string of alphanumeric characters or '_'", _C_IDENT_FMT, "my_name", "MY_NAME", "MyName")
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$")
_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def parse_quantity(value: Any) -> Fraction | None:
    """A resource.Quantity string (or number) as an exact value; None when it is not a quantity."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        return quantity.parse_quantity(value.strip() if isinstance(value, str) else value)
    except ValueError:
        return None


def _truncate_key(key: str, max_len: int) -> str:
    max_len = max(max_len, 16)
    if len(key) <= max_len:
        return key
    remaining = max_len - 3
    return key[:(remaining + 1) // 2] + "..." + key[len(key) - remaining // 2:]


def _validate_slice(items: list, max_size: int, validate_item: Callable[[Any, str], list[FieldError]],
                    path: str) -> list[FieldError]:
    """`validateSlice`: at most max_size entries (checked first, short-circuits), each valid."""
    if max_size >= 0 and len(items) > max_size:
        return [errors.too_many(path, len(items), max_size)]
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        errs += validate_item(item, f"{path}[{i}]")
    return errs


def _validate_set(items: list, max_size: int, validate_item: Callable[[Any, str], list[FieldError]],
                  key: Callable[[Any], Any], path: str) -> list[FieldError]:
    """`validateSet`: like `_validate_slice`, plus a Duplicate for each repeated key."""
    if max_size >= 0 and len(items) > max_size:
        return [errors.too_many(path, len(items), max_size)]
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        errs += validate_item(item, f"{path}[{i}]")
    seen: set = set()
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            errs.append(errors.duplicate(f"{path}[{i}]", k))
        else:
            seen.add(k)
    return errs


def _validate_map(m: Any, max_size: int, truncate_len: int, validate_key: Callable[[str, str], list[FieldError]],
                  validate_item: Callable[[Any, str], list[FieldError]], path: str) -> list[FieldError]:
    m = m if isinstance(m, dict) else {}
    if max_size >= 0 and len(m) > max_size:
        return [errors.too_many(path, len(m), max_size)]
    errs: list[FieldError] = []
    for k in sorted(m):
        errs += validate_key(k, path)
        errs += validate_item(m[k], f"{path}[{_truncate_key(k, truncate_len)}]")
    return errs


def _label(value: str, path: str) -> list[FieldError]:
    """core `ValidateDNS1123Label`: one Invalid per message."""
    return [errors.invalid(path, value, m) for m in dns1123_label_errors(value)]


def _subdomain(value: str, path: str) -> list[FieldError]:
    return [errors.invalid(path, value, m) for m in dns1123_subdomain_errors(value)]


def _label_name(value: str, path: str) -> list[FieldError]:
    """metav1 `ValidateLabelName` (a qualified name)."""
    if value == "":
        return [errors.invalid(path, value, "name part must be non-empty"),
                errors.invalid(path, value, "name part must consist of alphanumeric characters, '-', '_' or '.', "
                                            "and must start and end with an alphanumeric character (e.g. 'MyName',"
                                            "  or 'my.name',  or '123-abc', regex used for validation is "
                                            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")]
    return [errors.invalid(path, value, m) for m in qualified_name_errors(value)]


def validate_driver_name(name: Any, path: str) -> list[FieldError]:
    """core `ValidateCSIDriverName`, used for every DRA driver name."""
    name = name if isinstance(name, str) else ""
    errs: list[FieldError] = []
    if not name:
        errs.append(errors.required(path, ""))
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        errs.append(errors.too_long(path, DRIVER_NAME_MAX_LENGTH))
    errs += [errors.invalid(path, name, m) for m in dns1123_subdomain_errors(name.lower())]
    return errs


def validate_pool_name(name: Any, path: str) -> list[FieldError]:
    name = name if isinstance(name, str) else ""
    if not name:
        return [errors.required(path, "")]
    errs: list[FieldError] = []
    if len(name) > POOL_NAME_MAX_LENGTH:
        errs.append(errors.too_long(path, POOL_NAME_MAX_LENGTH))
    for part in name.split("/"):
        errs += _subdomain(part, path)
    return errs


def _validate_c_identifier(ident: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(ident) > DEVICE_MAX_ID_LENGTH:
        errs.append(errors.too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _C_IDENT_RE.match(ident):
        errs.append(errors.invalid(path, ident, _C_IDENT_MSG))
    return errs


def validate_qualified_name(name: str, path: str) -> list[FieldError]:
    """An attribute or capacity name: a C identifier, optionally `<driver-like domain>/`-prefixed."""
    parts = name.split("/")
    if len(parts) == 1:
        return _validate_c_identifier(parts[0], path)
    if len(parts) == 2:
        errs: list[FieldError] = []
        if not parts[0]:
            errs.append(errors.invalid(path, "", "the domain must not be empty"))
        else:
            errs += validate_driver_name(parts[0], path)
        if not parts[1]:
            errs.append(errors.invalid(path, "", "the name must not be empty"))
        else:
            errs += _validate_c_identifier(parts[1], path)
        return errs
    return [errors.invalid(path, name, "must not contain more than one slash")]


def validate_fully_qualified_name(name: str, path: str) -> list[FieldError]:
    errs = validate_qualified_name(name, path)
    if "/" not in name:
        errs.append(errors.invalid(path, name, "a fully qualified name must be a domain and a name separated by a "
                                               "slash"))
    return errs


def _validate_raw_extension(raw: Any, path: str, stored: bool, max_len: int) -> list[FieldError]:
    if raw is None:
        return [errors.required(path, "")]
    encoded = orjson.dumps(raw)
    if not stored and len(encoded) > max_len:
        return [errors.too_long(path, max_len)]
    if not isinstance(raw, dict):
        return [errors.invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def _validate_uid(uid: Any, path: str) -> list[FieldError]:
    uid = uid if isinstance(uid, str) else ""
    if not re.match(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$", uid):
        return [errors.invalid(path, uid, "error validating uid: invalid UUID format")]
    if not _UUID_RE.match(uid):
        return [errors.invalid(path, uid, "uid must be in RFC 4122 normalized form, "
                                          "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal "
                                          "characters")]
    return []


# -- node selectors (core ValidateNodeSelector, as DRA uses it) -------------------------------------

_NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def validate_node_selector(ns: Any, path: str) -> list[FieldError]:
    terms = _list(ns, "nodeSelectorTerms")
    tpath = f"{path}.nodeSelectorTerms"
    if not terms:
        return [errors.required(tpath, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        p = f"{tpath}[{i}]"
        for j, req in enumerate(_items(term, "matchExpressions")):
            rp = f"{p}.matchExpressions[{j}]"
            op, values = req.get("operator"), _list(req, "values")
            if op in ("In", "NotIn"):
                if not values:
                    errs.append(errors.required(f"{rp}.values",
                                                "must be specified when `operator` is 'In' or 'NotIn'"))
            elif op in ("Exists", "DoesNotExist"):
                if values:
                    errs.append(errors.forbidden(f"{rp}.values",
                                                 "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
            elif op in ("Gt", "Lt"):
                if len(values) != 1:
                    errs.append(errors.required(f"{rp}.values",
                                                "must be specified single value when `operator` is 'Lt' or 'Gt'"))
            else:
                errs.append(errors.invalid(f"{rp}.operator", op, "not a valid selector operator"))
            errs += _label_name(req.get("key") or "", f"{rp}.key")
        for j, req in enumerate(_items(term, "matchFields")):
            rp = f"{p}.matchFields[{j}]"
            op, values = req.get("operator"), _list(req, "values")
            if op in ("In", "NotIn"):
                if len(values) != 1:
                    errs.append(errors.required(f"{rp}.values", "must be only one value when `operator` is 'In' "
                                                                "or 'NotIn' for node field selector"))
            else:
                errs.append(errors.invalid(f"{rp}.operator", op, "not a valid selector operator"))
            if req.get("key") != "metadata.name":
                errs.append(errors.not_supported(f"{rp}.key", req.get("key"), ["metadata.name"]))
    return errs


# -- ResourceClaimSpec -----------------------------------------------------------------------------

class _RequestNames:
    """Request names of a claim, with their subrequest names (for `req` / `req/sub` references)."""

    def __init__(self, devices: Any):
        self.names: dict[str, set | None] = {}
        for r in _items(devices, "requests"):
            subs = _items(r, "firstAvailable")
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


def _validate_request_ref(name: Any, path: str, names: _RequestNames) -> list[FieldError]:
    name = name if isinstance(name, str) else ""
    segs = name.split("/")
    if len(segs) > 2:
        return [errors.invalid(path, name, _REQUEST_REF_MSG)]
    errs: list[FieldError] = []
    for s in segs:
        errs += _label(s, path)
    if not names.has(name):
        errs.append(errors.invalid(path, name, _REQUEST_REF_MSG))
    return errs


def _validate_cel_expression(expr: Any, path: str, stored: bool) -> list[FieldError]:
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
    return _validate_cel_expression(cel.get("expression"), f"{path}.cel.expression", stored)


def _validate_selectors(sels: list, path: str, stored: bool) -> list[FieldError]:
    return _validate_slice(sels, DEVICE_SELECTORS_MAX, lambda s, p: _validate_selector(s, p, stored), path)


def _validate_device_class_name(name: Any, path: str) -> list[FieldError]:
    name = name if isinstance(name, str) else ""
    if not name:
        return [errors.required(path, "")]
    return _subdomain(name, path)


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


def _validate_toleration(t: Any, path: str) -> list[FieldError]:
    t = t if isinstance(t, dict) else {}
    errs: list[FieldError] = []
    key = t.get("key") or ""
    if key:
        errs += _label_name(key, f"{path}.key")
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
    return _validate_slice(tols, DEVICE_TOLERATIONS_MAX, _validate_toleration, path)


def _validate_capacity_requests(cap: Any, path: str) -> list[FieldError]:
    reqs = _dict(cap, "requests")
    return _validate_map(reqs, -1, DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH, validate_qualified_name,
                         _validate_quantity_value, f"{path}.requests")


def _validate_quantity_value(v: Any, path: str) -> list[FieldError]:
    if parse_quantity(v) is None:
        return [errors.invalid(path, v, QUANTITY_MSG)]
    return []


def _validate_exact_request(req: dict, path: str, stored: bool) -> list[FieldError]:
    errs = _validate_device_class_name(req.get("deviceClassName"), f"{path}.deviceClassName")
    errs += _validate_selectors(_list(req, "selectors"), f"{path}.selectors", stored)
    errs += _validate_allocation_mode(req, path)
    errs += _validate_tolerations(_list(req, "tolerations"), f"{path}.tolerations")
    if isinstance(req.get("capacity"), dict):
        errs += _validate_capacity_requests(req["capacity"], f"{path}.capacity")
    return errs


def _validate_sub_request(sub: Any, path: str, stored: bool) -> list[FieldError]:
    sub = sub if isinstance(sub, dict) else {}
    errs = _label(sub.get("name") or "", f"{path}.name")
    errs += _validate_device_class_name(sub.get("deviceClassName"), f"{path}.deviceClassName")
    errs += _validate_selectors(_list(sub, "selectors"), f"{path}.selectors", stored)
    errs += _validate_allocation_mode(sub, path)
    errs += _validate_tolerations(_list(sub, "tolerations"), f"{path}.tolerations")
    if isinstance(sub.get("capacity"), dict):
        errs += _validate_capacity_requests(sub["capacity"], f"{path}.capacity")
    return errs


def _validate_request(req: Any, path: str, stored: bool) -> list[FieldError]:
    req = req if isinstance(req, dict) else {}
    errs = _label(req.get("name") or "", f"{path}.name")
    first = _list(req, "firstAvailable")
    exactly = req.get("exactly")
    has_exactly = isinstance(exactly, dict)
    if not first and not has_exactly:
        errs.append(errors.required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif first and has_exactly:
        errs.append(errors.invalid(path, None, "exactly one of `exactly` or `firstAvailable` is required, but "
                                               "multiple fields are set"))
    elif first:
        errs += _validate_set(first, FIRST_AVAILABLE_MAX, lambda s, p: _validate_sub_request(s, p, stored),
                              lambda s: (s or {}).get("name") if isinstance(s, dict) else None,
                              f"{path}.firstAvailable")
    else:
        errs += _validate_exact_request(exactly, f"{path}.exactly", stored)
    return errs


def _validate_constraint(c: Any, path: str, names: _RequestNames, ctx: StrategyContext) -> list[FieldError]:
    c = c if isinstance(c, dict) else {}
    errs = _validate_set(_list(c, "requests"), DEVICE_REQUESTS_MAX,
                         lambda n, p: _validate_request_ref(n, p, names), lambda n: n, f"{path}.requests")
    if c.get("matchAttribute") is not None:
        errs += validate_fully_qualified_name(str(c["matchAttribute"]), f"{path}.matchAttribute")
    elif c.get("distinctAttribute") is not None:
        errs += validate_fully_qualified_name(str(c["distinctAttribute"]), f"{path}.distinctAttribute")
    elif _enabled(ctx, GATE_CONSUMABLE_CAPACITY):
        errs.append(errors.required(path, 'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                                          'but multiple fields are set'))
    else:
        errs.append(errors.required(f"{path}.matchAttribute", ""))
    return errs


def _validate_device_configuration(cfg: dict, path: str, stored: bool) -> list[FieldError]:
    opaque = cfg.get("opaque")
    if not isinstance(opaque, dict):
        return [errors.required(f"{path}.opaque", "")]
    errs = validate_driver_name(opaque.get("driver"), f"{path}.opaque.driver")
    errs += _validate_raw_extension(opaque.get("parameters"), f"{path}.opaque.parameters", stored,
                                    OPAQUE_PARAMETERS_MAX_LENGTH)
    return errs


def _validate_claim_config(cfg: Any, path: str, names: _RequestNames, stored: bool) -> list[FieldError]:
    cfg = cfg if isinstance(cfg, dict) else {}
    errs = _validate_set(_list(cfg, "requests"), DEVICE_REQUESTS_MAX,
                         lambda n, p: _validate_request_ref(n, p, names), lambda n: n, f"{path}.requests")
    return errs + _validate_device_configuration(cfg, path, stored)


def validate_resource_claim_spec(spec: Any, path: str, ctx: StrategyContext, *,
                                 stored: bool = False) -> list[FieldError]:
    """`validateResourceClaimSpec`, shared by ResourceClaim (`spec`) and templates (`spec.spec`)."""
    devices = _dict(spec, "devices")
    dpath = f"{path}.devices"
    names = _RequestNames(devices)
    errs = _validate_set(_list(devices, "requests"), DEVICE_REQUESTS_MAX,
                         lambda r, p: _validate_request(r, p, stored),
                         lambda r: r.get("name") if isinstance(r, dict) else None, f"{dpath}.requests")
    errs += _validate_slice(_list(devices, "constraints"), DEVICE_CONSTRAINTS_MAX,
                            lambda c, p: _validate_constraint(c, p, names, ctx), f"{dpath}.constraints")
    errs += _validate_slice(_list(devices, "config"), DEVICE_CONFIG_MAX,
                            lambda c, p: _validate_claim_config(c, p, names, stored), f"{dpath}.config")
    return errs


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
    for req in _items(devices, "requests"):
        if isinstance(req.get("exactly"), dict):
            _default_request_mode(req["exactly"])
        for sub in _items(req, "firstAvailable"):
            _default_request_mode(sub)


def _default_request_mode(req: dict) -> None:
    if not req.get("allocationMode"):
        req["allocationMode"] = "ExactCount"
    if req["allocationMode"] == "ExactCount" and not req.get("count"):
        req["count"] = 1
    for t in _items(req, "tolerations"):
        if not t.get("operator"):
            t["operator"] = "Equal"


def _all_requests(spec: Any) -> list[tuple[dict, bool]]:
    """Every (request-like dict, is_exactly) of a claim spec: `exactly` entries and subrequests."""
    out: list[tuple[dict, bool]] = []
    for req in _items(_dict(spec, "devices"), "requests"):
        if isinstance(req.get("exactly"), dict):
            out.append((req["exactly"], True))
        for sub in _items(req, "firstAvailable"):
            out.append((sub, False))
    return out


def drop_disabled_claim_spec_fields(spec: Any, old_spec: Any, ctx: StrategyContext) -> None:
    """`resourceclaimspec.DropDisabledFields`."""
    if not isinstance(spec, dict):
        return
    requests = _items(_dict(spec, "devices"), "requests")
    old_requests = _items(_dict(old_spec, "devices"), "requests")
    if not _enabled(ctx, GATE_PRIORITIZED_LIST) and not any(_list(r, "firstAvailable") for r in old_requests):
        for r in requests:
            r.pop("firstAvailable", None)
    if not _enabled(ctx, GATE_DEVICE_TAINTS) and not any(_list(r, "tolerations") for r, _ in _all_requests(old_spec)):
        for r, _ in _all_requests(spec):
            r.pop("tolerations", None)
    if not _enabled(ctx, GATE_ADMIN_ACCESS) and not any(
            r.get("adminAccess") is not None for r, exact in _all_requests(old_spec) if exact):
        for r, exact in _all_requests(spec):
            if exact:
                r.pop("adminAccess", None)
    if not _enabled(ctx, GATE_CONSUMABLE_CAPACITY):
        in_use = any(c.get("distinctAttribute") is not None for c in _items(_dict(old_spec, "devices"), "constraints"))
        in_use = in_use or any(r.get("capacity") is not None for r, _ in _all_requests(old_spec))
        if not in_use:
            for c in _items(_dict(spec, "devices"), "constraints"):
                c.pop("distinctAttribute", None)
            for r, _ in _all_requests(spec):
                r.pop("capacity", None)


def admin_access_errors(spec: Any, namespace: str, ctx: StrategyContext) -> list[FieldError]:
    """`AuthorizedForAdmin`: `adminAccess: true` needs the admin-access label on the namespace."""
    path = None
    for i, req in enumerate(_items(_dict(spec, "devices"), "requests")):
        if isinstance(req.get("exactly"), dict) and req["exactly"].get("adminAccess") is True:
            path = f"spec.devices.requests[{i}].adminAccess"
            break
    if path is None:
        return []
    return _namespace_admin_check(namespace, path, ctx)


def _namespace_admin_check(namespace: str, path: str, ctx: StrategyContext) -> list[FieldError]:
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
# ===================================================================================================

def _is_extended_resource_name(name: str) -> bool:
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
        if isinstance(spec, dict) and not _enabled(ctx, GATE_EXTENDED_RESOURCE) and \
                _dict(old, "spec").get("extendedResourceName") is None:
            spec.pop("extendedResourceName", None)

    def _validate_spec(self, spec: Any, old_spec: Any) -> list[FieldError]:
        spec = spec if isinstance(spec, dict) else {}
        sel_stored = old_spec is not None and _list(spec, "selectors") == _list(old_spec, "selectors")
        errs = _validate_selectors(_list(spec, "selectors"), "spec.selectors", sel_stored)
        cfg_stored = old_spec is not None and _list(spec, "config") == _list(old_spec, "config")
        errs += _validate_slice(_items(spec, "config"), DEVICE_CONFIG_MAX,
                                lambda c, p: _validate_device_configuration(c, p, cfg_stored), "spec.config")
        ern = spec.get("extendedResourceName")
        if ern is not None and not _is_extended_resource_name(str(ern)):
            errs.append(errors.invalid("spec.extendedResourceName", ern, "must be a valid extended resource name"))
        return errs

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return self._validate_spec(obj.get("spec"), None)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return self._validate_spec(new.get("spec"), old.get("spec") or {})


# ===================================================================================================
# ResourceSlice
# ===================================================================================================

def _validate_attribute(attr: Any, path: str) -> list[FieldError]:
    attr = attr if isinstance(attr, dict) else {}
    errs: list[FieldError] = []
    n = 0
    if attr.get("bool") is not None:
        n += 1
    if attr.get("int") is not None:
        n += 1
    if attr.get("string") is not None:
        n += 1
        if len(str(attr["string"])) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
            errs.append(errors.too_long(f"{path}.string", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    if attr.get("version") is not None:
        n += 1
        errs += _validate_version(str(attr["version"]), f"{path}.version")
    for key in ("bools", "ints", "strings", "versions"):
        if attr.get(key) is None:
            continue
        n += 1
        values = attr[key] if isinstance(attr[key], list) else []
        if not values:
            errs.append(errors.invalid(f"{path}.{key}", values, "must not be empty if specified"))
        for i, v in enumerate(values):
            if key == "strings" and len(str(v)) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
                errs.append(errors.too_long(f"{path}.strings[{i}]", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
            if key == "versions":
                errs += _validate_version(str(v), f"{path}.versions[{i}]")
    if n == 0:
        errs.append(errors.invalid(path, "", "exactly one value must be specified"))
    elif n > 1:
        errs.append(errors.invalid(path, attr, "exactly one value must be specified"))
    return errs


def _validate_version(v: str, path: str) -> list[FieldError]:
    errs = []
    if not _SEMVER_RE.match(v):
        errs.append(errors.invalid(path, v, "must be a string compatible with semver.org spec 2.0.0"))
    if len(v) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        errs.append(errors.too_long(path, DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    return errs


def _validate_request_policy(capacity_value: Fraction | None, policy: dict, path: str) -> list[FieldError]:
    valid_values = _list(policy, "validValues")
    valid_range = policy.get("validRange")
    if valid_values and valid_range is not None:
        return [errors.forbidden(path, 'exactly one policy can be specified, cannot specify "validValues" and '
                                       '"validRange" at the same time')]
    default = policy.get("default")
    dflt = parse_quantity(default)
    cap = capacity_value if capacity_value is not None else Fraction(0)
    errs: list[FieldError] = []
    if valid_values:
        if default is None:
            return [errors.required(f"{path}.default", "required when validValues is defined")]
        vpath = f"{path}.validValues"
        parsed = [parse_quantity(v) for v in valid_values]
        for i in range(len(parsed) - 1):
            if parsed[i] is not None and parsed[i + 1] is not None and parsed[i] > parsed[i + 1]:
                errs.append(errors.invalid(f"{vpath}[{i + 1}]", str(valid_values[i + 1]),
                                           "values must be sorted in ascending order"))
        if len(valid_values) > CAPACITY_VALID_VALUES_MAX:
            return errs + [errors.too_many(vpath, len(valid_values), CAPACITY_VALID_VALUES_MAX)]
        found = False
        seen: set = set()
        for i, (raw, q) in enumerate(zip(valid_values, parsed)):
            if q is not None and q > cap:
                errs.append(errors.invalid(f"{vpath}[{i}]", str(raw),
                                           f"option is larger than capacity value: {capacity_str(capacity_value)}"))
            if q is not None and dflt is not None and q == dflt:
                found = True
            if q in seen:
                errs.append(errors.duplicate(f"{vpath}[{i}]", str(raw)))
            seen.add(q)
        if not found:
            errs.append(errors.invalid(vpath, str(default), "default value is not valid according to the "
                                                            "requestPolicy"))
    elif isinstance(valid_range, dict):
        rpath = f"{path}.validRange"
        if default is None:
            return [errors.required(f"{path}.default", "required when validRange is defined")]
        mn = parse_quantity(valid_range.get("min"))
        if valid_range.get("min") is None or mn is None:
            return [errors.required(f"{rpath}.min", "required when validRange is defined")]
        smin = str(valid_range["min"])
        if mn > cap:
            errs.append(errors.invalid(f"{rpath}.min", smin,
                                       f"min is larger than capacity value: {capacity_str(capacity_value)}"))
        if dflt is not None and dflt < mn:
            errs.append(errors.invalid(f"{rpath}.default", str(default), f"default is less than min: {smin}"))
        mx = parse_quantity(valid_range.get("max"))
        if valid_range.get("max") is not None and mx is not None:
            smax = str(valid_range["max"])
            if mn > mx:
                errs.append(errors.invalid(f"{rpath}.max", smin, f"min is larger than max: {smax}"))
            if mx > cap:
                errs.append(errors.invalid(f"{rpath}.max", smax,
                                           f"max is larger than capacity value: {capacity_str(capacity_value)}"))
            if dflt is not None and dflt > mx:
                errs.append(errors.invalid(f"{rpath}.default", str(default), f"default is more than max: {smax}"))
        step = parse_quantity(valid_range.get("step"))
        if valid_range.get("step") is not None and step is not None:
            sstep = str(valid_range["step"])
            if step <= 0:
                errs.append(errors.invalid(f"{rpath}.step", sstep, "must be greater than zero"))
            else:
                if mn + step > cap:
                    errs.append(errors.invalid(
                        f"{rpath}.step", sstep,
                        f"one step {capacity_str(mn + step)} is larger than capacity value: "
                        f"{capacity_str(capacity_value)}"))
                for raw, q in ((default, dflt), (valid_range.get("max"), mx)):
                    if raw is not None and q is not None and (q - mn) % step != 0:
                        errs.append(errors.invalid(f"{rpath}.step", str(raw), f"value is not a multiple of a given "
                                                                              f"step ({sstep}) from ({smin})"))
    return errs


def capacity_str(q: Fraction | None) -> str:
    if q is None:
        return "0"
    if q.denominator == 1:
        return str(q.numerator)
    from decimal import Decimal
    return format(Decimal(q.numerator) / Decimal(q.denominator), "f").rstrip("0").rstrip(".")


def _validate_capacity(cap: Any, path: str, multi: bool) -> list[FieldError]:
    cap = cap if isinstance(cap, dict) else {}
    value = parse_quantity(cap.get("value"))
    errs: list[FieldError] = []
    if cap.get("value") is not None and value is None:
        errs.append(errors.invalid(f"{path}.value", cap.get("value"), QUANTITY_MSG))
    policy = cap.get("requestPolicy")
    if isinstance(policy, dict):
        if not multi:
            errs.append(errors.forbidden(f"{path}.requestPolicy", "allowMultipleAllocations must be true"))
        else:
            errs += _validate_request_policy(value, policy, f"{path}.requestPolicy")
    return errs


def _validate_taint(t: Any, path: str) -> list[FieldError]:
    t = t if isinstance(t, dict) else {}
    errs = _label_name(t.get("key") or "", f"{path}.key")
    value = t.get("value") or ""
    if value:
        errs += [errors.invalid(f"{path}.value", value, m) for m in label_value_errors(value)]
    effect = t.get("effect") or ""
    if not effect:
        errs.append(errors.required(f"{path}.effect", ""))
    elif effect not in TAINT_EFFECTS:
        errs.append(errors.not_supported(f"{path}.effect", effect, list(TAINT_EFFECTS)))
    return errs


def _validate_counter_name_key(name: str, path: str) -> list[FieldError]:
    return _label(name, path)


def _validate_counter(c: Any, path: str) -> list[FieldError]:
    v = (c or {}).get("value") if isinstance(c, dict) else None
    if v is not None and parse_quantity(v) is None:
        return [errors.invalid(f"{path}.value", v, QUANTITY_MSG)]
    return []


def _validate_counter_consumption(cc: Any, path: str) -> list[FieldError]:
    cc = cc if isinstance(cc, dict) else {}
    errs: list[FieldError] = []
    name = cc.get("counterSet") or ""
    if not name:
        errs.append(errors.required(f"{path}.counterSet", ""))
    else:
        errs += _label(name, f"{path}.counterSet")
    counters = _dict(cc, "counters")
    if not counters:
        errs.append(errors.required(f"{path}.counters", ""))
    else:
        errs += _validate_map(counters, MAX_COUNTERS_PER_COUNTER_CONSUMPTION, 63, _validate_counter_name_key,
                              _validate_counter, f"{path}.counters")
    return errs


def _validate_counter_set(cs: Any, path: str) -> list[FieldError]:
    cs = cs if isinstance(cs, dict) else {}
    errs: list[FieldError] = []
    name = cs.get("name") or ""
    if not name:
        errs.append(errors.required(f"{path}.name", ""))
    else:
        errs += _label(name, f"{path}.name")
    counters = _dict(cs, "counters")
    if not counters:
        errs.append(errors.required(f"{path}.counters", ""))
    else:
        errs += _validate_map(counters, MAX_COUNTERS_PER_COUNTER_SET, 63, _validate_counter_name_key,
                              _validate_counter, f"{path}.counters")
    return errs


def _validate_binding_params(dev: dict, path: str) -> list[FieldError]:
    conds = [c for c in _list(dev, "bindingConditions") if isinstance(c, str)]
    fconds = [c for c in _list(dev, "bindingFailureConditions") if isinstance(c, str)]
    errs = _validate_slice(conds, BINDING_CONDITIONS_MAX, _label_name, f"{path}.bindingConditions")
    errs += _validate_slice(fconds, BINDING_CONDITIONS_MAX, _label_name, f"{path}.bindingFailureConditions")
    seen: set = set()
    for i, c in enumerate(conds):
        if c in seen:
            errs.append(errors.duplicate(f"{path}.bindingConditions[{i}]", c))
        seen.add(c)
    fseen: set = set()
    for i, c in enumerate(fconds):
        if c in fseen:
            errs.append(errors.duplicate(f"{path}.bindingFailureConditions[{i}]", c))
        fseen.add(c)
        if c in conds:
            errs.append(errors.invalid(f"{path}.bindingFailureConditions[{i}]", c,
                                       "bindingFailureConditions must not overlap with bindingConditions"))
    if not conds and fconds:
        errs.append(errors.invalid(f"{path}.bindingConditions", conds,
                                   "bindingConditions are required to use bindingFailureConditions"))
    if not fconds and conds:
        errs.append(errors.invalid(f"{path}.bindingFailureConditions", fconds,
                                   "bindingFailureConditions are required to use bindingConditions"))
    return errs


def _node_name_errors(name: str, path: str) -> list[FieldError]:
    return _subdomain(name, path)


def _validate_device(dev: Any, path: str, old_dev: dict | None, per_device: bool) -> list[FieldError]:
    dev = dev if isinstance(dev, dict) else {}
    errs = _label(dev.get("name") or "", f"{path}.name")
    attrs, caps = _dict(dev, "attributes"), _dict(dev, "capacity")
    total = len(attrs) + len(caps)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        errs.append(errors.invalid(path, total, f"the total number of attributes and capacities must not exceed "
                                                f"{MAX_ATTRIBUTES_AND_CAPACITIES}"))
    key_len = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
    errs += _validate_map(attrs, -1, key_len, validate_qualified_name, _validate_attribute, f"{path}.attributes")
    multi = dev.get("allowMultipleAllocations") is True
    if old_dev is None or _dict(old_dev, "capacity") != caps:
        errs += _validate_map(caps, -1, key_len, validate_qualified_name,
                              lambda c, p: _validate_capacity(c, p, multi), f"{path}.capacity")
    if old_dev is None or _list(old_dev, "taints") != _list(dev, "taints"):
        errs += _validate_slice(_list(dev, "taints"), DEVICE_TAINTS_MAX, _validate_taint, f"{path}.taints")
    errs += _validate_set(_list(dev, "consumesCounters"), MAX_COUNTER_CONSUMPTIONS_PER_DEVICE,
                          _validate_counter_consumption,
                          lambda c: c.get("counterSet") if isinstance(c, dict) else None, f"{path}.consumesCounters")
    if per_device:
        set_fields = []
        if dev.get("nodeName") is not None:
            if dev["nodeName"]:
                set_fields.append("`nodeName`")
                errs += _node_name_errors(dev["nodeName"], f"{path}.nodeName")
            else:
                errs.append(errors.invalid(f"{path}.nodeName", dev["nodeName"], "must not be empty"))
        if dev.get("nodeSelector") is not None:
            set_fields.append("`nodeSelector`")
            errs += validate_node_selector(dev["nodeSelector"], f"{path}.nodeSelector")
        if dev.get("allNodes") is not None:
            if dev["allNodes"] is True:
                set_fields.append("`allNodes`")
            else:
                errs.append(errors.invalid(f"{path}.allNodes", dev["allNodes"], "must be either unset or set to true"))
        msg = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
               "is set to true in the ResourceSlice spec")
        if not set_fields:
            errs.append(errors.required(path, msg))
        elif len(set_fields) > 1:
            errs.append(errors.invalid(path, "{" + ", ".join(set_fields) + "}", msg))
    elif any(dev.get(f) is not None for f in ("nodeName", "nodeSelector", "allNodes")):
        errs.append(errors.invalid(path, None, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                                               "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
    errs += _validate_binding_params(dev, path)
    return errs


def _slice_uses_advanced_features(spec: dict) -> bool:
    for d in _items(spec, "devices"):
        if _list(d, "taints") or _list(d, "consumesCounters"):
            return True
        for a in _dict(d, "attributes").values():
            if isinstance(a, dict) and any(a.get(k) is not None for k in ("bools", "ints", "strings", "versions")):
                return True
    return False


def validate_resource_slice_spec(spec: Any, old_spec: Any) -> list[FieldError]:
    spec = spec if isinstance(spec, dict) else {}
    errs = validate_driver_name(spec.get("driver"), "spec.driver")
    pool = _dict(spec, "pool")
    errs += validate_pool_name(pool.get("name"), "spec.pool.name")
    rsc = pool.get("resourceSliceCount") or 0
    if not isinstance(rsc, int) or rsc <= 0:
        errs.append(errors.invalid("spec.pool.resourceSliceCount", rsc, "must be greater than zero"))
    gen = pool.get("generation") or 0
    if isinstance(gen, int) and gen < 0:
        errs.append(errors.invalid("spec.pool.generation", gen, "must be greater than or equal to zero"))
    if old_spec is not None:
        old_pool = _dict(old_spec, "pool")
        if pool.get("name") != old_pool.get("name"):
            errs.append(errors.immutable("spec.pool.name", pool.get("name")))
        if spec.get("driver") != old_spec.get("driver"):
            errs.append(errors.immutable("spec.driver", spec.get("driver")))
        if spec.get("nodeName") != old_spec.get("nodeName"):
            errs.append(errors.immutable("spec.nodeName", spec.get("nodeName")))
    set_fields = []
    if spec.get("nodeName") is not None:
        if spec["nodeName"] != "":
            set_fields.append("`nodeName`")
            errs += _node_name_errors(spec["nodeName"], "spec.nodeName")
        else:
            errs.append(errors.invalid("spec.nodeName", "", "must be either unset or set to a non-empty string"))
    if spec.get("nodeSelector") is not None:
        set_fields.append("`nodeSelector`")
        errs += validate_node_selector(spec["nodeSelector"], "spec.nodeSelector")
        terms = _list(spec["nodeSelector"], "nodeSelectorTerms")
        if len(terms) != 1:
            errs.append(errors.invalid("spec.nodeSelector.nodeSelectorTerms", terms,
                                       "must have exactly one node selector term"))
    for f in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(f) is not None:
            if spec[f] is True:
                set_fields.append(f"`{f}`")
            else:
                errs.append(errors.invalid(f"spec.{f}", spec[f], "must be either unset or set to true"))
    if not set_fields:
        errs.append(errors.required("spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                                            "`perDeviceNodeSelection` is required"))
    elif len(set_fields) > 1:
        errs.append(errors.invalid("spec", "{" + ", ".join(set_fields) + "}",
                                   "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
                                   "is required, but multiple fields are set"))
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(errors.invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    max_devices = RESOURCE_SLICE_MAX_DEVICES_ADVANCED if _slice_uses_advanced_features(spec) \
        else RESOURCE_SLICE_MAX_DEVICES
    per_device = spec.get("perDeviceNodeSelection") is True
    old_devices = {d.get("name"): d for d in _items(old_spec, "devices")} if old_spec is not None else {}
    errs += _validate_set(_list(spec, "devices"), max_devices,
                          lambda d, p: _validate_device(d, p, old_devices.get((d or {}).get("name")) if isinstance(
                              d, dict) else None, per_device),
                          lambda d: d.get("name") if isinstance(d, dict) else None, "spec.devices")
    errs += _validate_set(_list(spec, "sharedCounters"), RESOURCE_SLICE_MAX_COUNTER_SETS, _validate_counter_set,
                          lambda c: c.get("name") if isinstance(c, dict) else None, "spec.sharedCounters")
    return errs


def _drop_disabled_slice_fields(spec: Any, old_spec: Any, ctx: StrategyContext) -> None:
    if not isinstance(spec, dict):
        return
    devices = _items(spec, "devices")
    old_devices = _items(old_spec, "devices")
    if not _enabled(ctx, GATE_DEVICE_TAINTS) and not any(_list(d, "taints") for d in old_devices):
        for d in devices:
            d.pop("taints", None)
    if not _enabled(ctx, GATE_PARTITIONABLE):
        old = old_spec if isinstance(old_spec, dict) else {}
        in_use = bool(_list(old, "sharedCounters")) or old.get("perDeviceNodeSelection") is not None or any(
            _list(d, "consumesCounters") or any(d.get(f) is not None for f in ("nodeName", "nodeSelector", "allNodes"))
            for d in old_devices)
        if not in_use:
            spec.pop("sharedCounters", None)
            spec.pop("perDeviceNodeSelection", None)
            for d in devices:
                for f in ("consumesCounters", "nodeName", "nodeSelector", "allNodes"):
                    d.pop(f, None)
    if not (_enabled(ctx, GATE_BINDING_CONDITIONS) and _enabled(ctx, GATE_DEVICE_STATUS)) and not any(
            _list(d, "bindingConditions") or _list(d, "bindingFailureConditions") or d.get("bindsToNode") is not None
            for d in old_devices):
        for d in devices:
            for f in ("bindingConditions", "bindingFailureConditions", "bindsToNode"):
                d.pop(f, None)
    if not _enabled(ctx, GATE_CONSUMABLE_CAPACITY) and not any(
            d.get("allowMultipleAllocations") is not None or any(
                isinstance(c, dict) and c.get("requestPolicy") is not None for c in _dict(d, "capacity").values())
            for d in old_devices):
        for d in devices:
            d.pop("allowMultipleAllocations", None)
            for c in _dict(d, "capacity").values():
                if isinstance(c, dict):
                    c.pop("requestPolicy", None)
    if not _enabled(ctx, GATE_LIST_ATTRIBUTES) and not any(
            isinstance(a, dict) and any(a.get(k) is not None for k in ("bools", "ints", "strings", "versions"))
            for d in old_devices for a in _dict(d, "attributes").values()):
        for d in devices:
            for a in _dict(d, "attributes").values():
                if isinstance(a, dict):
                    for k in ("bools", "ints", "strings", "versions"):
                        a.pop(k, None)


class ResourceSliceStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Node", "string", "", "NodeName identifies the node which provides the resources in this pool."),
        Column("Driver", "string", "", "Driver identifies the DRA driver providing the capacity information."),
        Column("Pool", "string", "", "Name is used to identify the pool."),
        AGE_COLUMN,
    ]
    field_selectors = {
        "spec.nodeName": lambda o: _dict(o, "spec").get("nodeName") or "",
        "spec.driver": lambda o: _dict(o, "spec").get("driver") or "",
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
        for d in _items(spec, "devices"):
            for t in _items(d, "taints"):
                if not t.get("timeAdded"):
                    t["timeAdded"] = now

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        _drop_disabled_slice_fields(obj.get("spec"), None, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        _drop_disabled_slice_fields(new.get("spec"), old.get("spec"), ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_resource_slice_spec(obj.get("spec"), None)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_resource_slice_spec(new.get("spec"), old.get("spec") or {})

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = _dict(obj, "spec")
        return [obj["metadata"]["name"], spec.get("nodeName") or "", spec.get("driver") or "",
                _dict(spec, "pool").get("name") or "", age_cell(obj, ctx)]


# ===================================================================================================
# ResourceClaim
# ===================================================================================================

def resource_claim_state(obj: Obj) -> str:
    """The STATE column: `deleted` when terminating, then `pending` or `allocated[,reserved]`."""
    states = []
    deleting = bool((obj.get("metadata") or {}).get("deletionTimestamp"))
    if deleting:
        states.append("deleted")
    status = _dict(obj, "status")
    if status.get("allocation") is None:
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if _list(status, "reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _device_id(d: dict) -> str:
    base = f"{d.get('driver', '')}/{d.get('pool', '')}/{d.get('device', '')}"
    return f"{base}/{d['shareID']}" if d.get("shareID") else base


def _validate_consumer_ref(ref: Any, path: str) -> list[FieldError]:
    ref = ref if isinstance(ref, dict) else {}
    return [errors.required(f"{path}.{f}", "") for f in ("resource", "name", "uid") if not ref.get(f)]


def _validate_allocation_result_entry(r: Any, path: str, names: _RequestNames) -> list[FieldError]:
    r = r if isinstance(r, dict) else {}
    errs = _validate_request_ref(r.get("request"), f"{path}.request", names)
    errs += validate_driver_name(r.get("driver"), f"{path}.driver")
    errs += validate_pool_name(r.get("pool"), f"{path}.pool")
    errs += _label(r.get("device") or "", f"{path}.device")
    errs += _validate_binding_params(r, path)
    for i, t in enumerate(_list(r, "tolerations")):
        errs += _validate_toleration(t, f"{path}.tolerations[{i}]")
    if r.get("shareID") is not None:
        errs += _validate_uid(r["shareID"], f"{path}.shareID")
    return errs


def _validate_allocation_config(c: Any, path: str, names: _RequestNames) -> list[FieldError]:
    c = c if isinstance(c, dict) else {}
    errs: list[FieldError] = []
    source = c.get("source") or ""
    if not source:
        errs.append(errors.required(f"{path}.source", ""))
    elif source not in CONFIG_SOURCES:
        errs.append(errors.not_supported(f"{path}.source", source, list(CONFIG_SOURCES)))
    errs += _validate_set(_list(c, "requests"), DEVICE_REQUESTS_MAX,
                          lambda n, p: _validate_request_ref(n, p, names), lambda n: n, f"{path}.requests")
    return errs + _validate_device_configuration(c, path, False)


def _validate_allocation(alloc: Any, path: str, names: _RequestNames) -> list[FieldError]:
    devices = _dict(alloc, "devices")
    errs = _validate_slice(_list(devices, "results"), ALLOCATION_RESULTS_MAX,
                           lambda r, p: _validate_allocation_result_entry(r, p, names), f"{path}.devices.results")
    errs += _validate_slice(_list(devices, "config"), ALLOCATION_CONFIG_MAX,
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

    errs += _validate_set(_list(nd, "ips"), NETWORK_DATA_MAX_IPS, ip_errs, lambda a: a, f"{path}.ips")
    return errs


def _validate_device_status(d: Any, path: str, allocated: set[str]) -> list[FieldError]:
    d = d if isinstance(d, dict) else {}
    errs = validate_driver_name(d.get("driver"), f"{path}.driver")
    errs += validate_pool_name(d.get("pool"), f"{path}.pool")
    errs += _label(d.get("device") or "", f"{path}.device")
    if d.get("shareID") is not None:
        errs += _validate_uid(d["shareID"], f"{path}.shareID")
    if _device_id(d) not in allocated:
        errs.append(errors.invalid(path, _device_id(d), "must be an allocated device in the claim"))
    conds = _list(d, "conditions")
    if len(conds) > ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS:
        errs.append(errors.too_many(f"{path}.conditions", len(conds), ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS))
    errs += validate_conditions(conds, f"{path}.conditions")
    if d.get("data") is not None:
        errs += _validate_raw_extension(d["data"], f"{path}.data", False, ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH)
    errs += _validate_network_data(d.get("networkData"), f"{path}.networkData")
    return errs


def validate_claim_status_update(new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
    status, old_status = _dict(new, "status"), _dict(old, "status")
    names = _RequestNames(_dict(_dict(new, "spec"), "devices"))
    errs: list[FieldError] = []
    reserved = _list(status, "reservedFor")
    errs += _validate_set(reserved, RESERVED_FOR_MAX, _validate_consumer_ref,
                          lambda r: r.get("uid") if isinstance(r, dict) else None, "status.reservedFor")
    allocation = status.get("allocation")
    allocated = {_device_id(r) for r in _items(_dict(allocation, "devices"), "results")}
    errs += _validate_set(_list(status, "devices"), -1, lambda d, p: _validate_device_status(d, p, allocated),
                          lambda d: _device_id(d) if isinstance(d, dict) else None, "status.devices")
    if reserved:
        if allocation is None:
            errs.append(errors.forbidden("status.reservedFor", "may not be specified when `allocated` is not set"))
        elif (new.get("metadata") or {}).get("deletionTimestamp"):
            old_uids = {(r or {}).get("uid") for r in _list(old_status, "reservedFor") if isinstance(r, dict)}
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


def _drop_disabled_claim_status_fields(new: Obj, old: Obj | None, ctx: StrategyContext) -> None:
    status = new.get("status")
    if not isinstance(status, dict):
        return
    old_status = _dict(old, "status")
    results = _items(_dict(status.get("allocation"), "devices"), "results")
    old_results = _items(_dict(old_status.get("allocation"), "devices"), "results")
    if not _enabled(ctx, GATE_ADMIN_ACCESS):
        old_spec_admin = any(r.get("adminAccess") is not None for r, exact in _all_requests(_dict(old, "spec"))
                             if exact)
        if not old_spec_admin and not any(r.get("adminAccess") is not None for r in old_results):
            for r in results:
                r.pop("adminAccess", None)
    if not _enabled(ctx, GATE_DEVICE_STATUS) and not _list(old_status, "devices"):
        status.pop("devices", None)
    if not _enabled(ctx, GATE_CONSUMABLE_CAPACITY) and not any(
            r.get("shareID") is not None or r.get("consumedCapacity") is not None for r in old_results) and not any(
            d.get("shareID") is not None for d in _items(old_status, "devices")):
        for r in results:
            r.pop("shareID", None)
            r.pop("consumedCapacity", None)
        for d in _items(status, "devices"):
            d.pop("shareID", None)
    if not _enabled(ctx, GATE_BINDING_CONDITIONS) and not any(
            r.get("bindingConditions") is not None or r.get("bindingFailureConditions") is not None
            for r in old_results):
        for r in results:
            r.pop("bindingConditions", None)
            r.pop("bindingFailureConditions", None)
        if isinstance(status.get("allocation"), dict) and _dict(old_status, "allocation").get(
                "allocationTimestamp") is None:
            status["allocation"].pop("allocationTimestamp", None)
    if not _enabled(ctx, GATE_DEVICE_TAINTS) and not any(_list(r, "tolerations") for r in old_results):
        for r in results:
            r.pop("tolerations", None)


def _drop_deallocated_status_devices(new: Obj, old: Obj) -> None:
    status = new.get("status")
    if not isinstance(status, dict) or not _list(status, "devices"):
        return
    old_ids = {f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}"
               for r in _items(_dict(_dict(old, "status").get("allocation"), "devices"), "results")}
    new_ids = {f"{r.get('driver')}/{r.get('pool')}/{r.get('device')}"
               for r in _items(_dict(status.get("allocation"), "devices"), "results")}
    gone = old_ids - new_ids
    kept = [d for d in _list(status, "devices")
            if not (isinstance(d, dict) and f"{d.get('driver')}/{d.get('pool')}/{d.get('device')}" in gone)]
    if kept:
        status["devices"] = kept
    else:
        status.pop("devices", None)


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
        for r in _items(_dict(_dict(obj, "status").get("allocation"), "devices"), "results"):
            for t in _items(r, "tolerations"):
                if not t.get("operator"):
                    t["operator"] = "Equal"

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {}
        drop_disabled_claim_spec_fields(obj.get("spec"), None, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        new["status"] = old.get("status", {})
        drop_disabled_claim_spec_fields(new.get("spec"), old.get("spec"), ctx)
        _drop_disabled_claim_status_fields(new, old, ctx)

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_status_update(new, old, ctx)
        new.setdefault("status", {})
        _drop_deallocated_status_devices(new, old)
        _drop_disabled_claim_status_fields(new, old, ctx)

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
        old_results = _items(_dict(_dict(old, "status").get("allocation"), "devices"), "results")
        if not any(r.get("adminAccess") is True for r in old_results):
            for i, r in enumerate(_items(_dict(_dict(new, "status").get("allocation"), "devices"), "results")):
                if r.get("adminAccess") is True:
                    ns = (new.get("metadata") or {}).get("namespace", "")
                    errs += _namespace_admin_check(ns, f"status.allocation.devices.results[{i}].adminAccess", ctx)
                    break
        return errs + validate_claim_status_update(new, old, ctx)

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [obj["metadata"]["name"], resource_claim_state(obj), age_cell(obj, ctx)]


# ===================================================================================================
# ResourceClaimTemplate
# ===================================================================================================

def _validate_template_object_meta(md: Any, path: str) -> list[FieldError]:
    md = md if isinstance(md, dict) else {}
    errs = validate_annotations(md.get("annotations"), f"{path}.annotations")
    errs += validate_labels(md.get("labels"), f"{path}.labels")
    for k in sorted(md):
        if k not in ("labels", "annotations") and md[k] not in (None, "", [], {}, 0):
            errs.append(errors.forbidden(f"{path}.{k}", "cannot be set for a template"))
    return errs


class ResourceClaimTemplateStrategy(Strategy):
    columns = [NAME_COLUMN, AGE_COLUMN]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("metadata", {})
        default_claim_spec(spec.setdefault("spec", {}))

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        drop_disabled_claim_spec_fields(_dict(obj, "spec").get("spec"), None, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        drop_disabled_claim_spec_fields(_dict(new, "spec").get("spec"), _dict(old, "spec").get("spec"), ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        spec = _dict(obj, "spec")
        ns = (obj.get("metadata") or {}).get("namespace", "")
        errs = admin_access_errors(spec.get("spec"), ns, ctx)
        errs += _validate_template_object_meta(spec.get("metadata"), "spec.metadata")
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

