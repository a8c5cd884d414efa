"""Validation of a ResourceSlice spec: one node-selection mode, pool and driver (immutable), devices
with attributes, capacities and their request policies, taints, counters and binding conditions,
and shared counter sets."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ...dra.semver import SEMVER_RE
from ...machinery import errors
from ...machinery.errors import FieldError
from ...machinery.names import label_value_errors
from .constants import (BINDING_CONDITIONS_MAX, CAPACITY_VALID_VALUES_MAX, DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH,
                        DEVICE_MAX_DOMAIN_LENGTH, DEVICE_MAX_ID_LENGTH, DEVICE_TAINTS_MAX,
                        MAX_ATTRIBUTES_AND_CAPACITIES, MAX_COUNTER_CONSUMPTIONS_PER_DEVICE,
                        MAX_COUNTERS_PER_COUNTER_CONSUMPTION, MAX_COUNTERS_PER_COUNTER_SET,
                        RESOURCE_SLICE_MAX_COUNTER_SETS, RESOURCE_SLICE_MAX_DEVICES,
                        RESOURCE_SLICE_MAX_DEVICES_ADVANCED, TAINT_EFFECTS)
from .fields import (QUANTITY_MSG, field_dict, field_items, field_list, parse_quantity, validate_driver_name,
                     validate_label, validate_label_name, validate_map, validate_node_selector, validate_pool_name,
                     validate_qualified_name, validate_set, validate_slice, validate_subdomain)



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
    if not SEMVER_RE.match(v):
        errs.append(errors.invalid(path, v, "must be a string compatible with semver.org spec 2.0.0"))
    if len(v) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        errs.append(errors.too_long(path, DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    return errs


def _validate_request_policy(capacity_value: Fraction | None, policy: dict, path: str) -> list[FieldError]:
    """A capacity's requestPolicy: a default with either sorted, unique validValues or a validRange."""
    valid_values = field_list(policy, "validValues")
    valid_range = policy.get("validRange")
    if valid_values and valid_range is not None:
        return [errors.forbidden(path, 'exactly one policy can be specified, cannot specify "validValues" and '
                                       '"validRange" at the same time')]
    if valid_values:
        return _validate_valid_values(capacity_value, policy, valid_values, path)
    if isinstance(valid_range, dict):
        return _validate_valid_range(capacity_value, policy, valid_range, path)
    return []


def _validate_valid_values(capacity_value: Fraction | None, policy: dict, valid_values: list,
                           path: str) -> list[FieldError]:
    default = policy.get("default")
    if default is None:
        return [errors.required(f"{path}.default", "required when validValues is defined")]
    dflt = parse_quantity(default)
    cap = capacity_value if capacity_value is not None else Fraction(0)
    vpath = f"{path}.validValues"
    parsed = [parse_quantity(v) for v in valid_values]
    errs: list[FieldError] = []
    for i in range(len(parsed) - 1):
        before, after = parsed[i], parsed[i + 1]
        if before is not None and after is not None and before > after:
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
        errs.append(errors.invalid(vpath, str(default), "default value is not valid according to the requestPolicy"))
    return errs


def _validate_valid_range(capacity_value: Fraction | None, policy: dict, valid_range: dict,
                          path: str) -> list[FieldError]:
    rpath = f"{path}.validRange"
    default = policy.get("default")
    if default is None:
        return [errors.required(f"{path}.default", "required when validRange is defined")]
    mn = parse_quantity(valid_range.get("min"))
    if valid_range.get("min") is None or mn is None:
        return [errors.required(f"{rpath}.min", "required when validRange is defined")]
    dflt = parse_quantity(default)
    cap = capacity_value if capacity_value is not None else Fraction(0)
    smin = str(valid_range["min"])
    errs: list[FieldError] = []
    if mn > cap:
        errs.append(errors.invalid(f"{rpath}.min", smin,
                                   f"min is larger than capacity value: {capacity_str(capacity_value)}"))
    if dflt is not None and dflt < mn:
        errs.append(errors.invalid(f"{rpath}.default", str(default), f"default is less than min: {smin}"))
    mx = parse_quantity(valid_range.get("max"))
    if valid_range.get("max") is not None and mx is not None:
        errs += _validate_range_max(capacity_value, default, dflt, mn, mx, str(valid_range["max"]), smin, rpath)
    step = parse_quantity(valid_range.get("step"))
    if valid_range.get("step") is not None and step is not None:
        errs += _validate_range_step(capacity_value, ((default, dflt), (valid_range.get("max"), mx)), mn, step,
                                     str(valid_range["step"]), smin, rpath)
    return errs


def _validate_range_max(capacity_value: Fraction | None, default: Any, dflt: Fraction | None, mn: Fraction,
                        mx: Fraction, smax: str, smin: str, rpath: str) -> list[FieldError]:
    cap = capacity_value if capacity_value is not None else Fraction(0)
    errs: list[FieldError] = []
    if mn > mx:
        errs.append(errors.invalid(f"{rpath}.max", smin, f"min is larger than max: {smax}"))
    if mx > cap:
        errs.append(errors.invalid(f"{rpath}.max", smax,
                                   f"max is larger than capacity value: {capacity_str(capacity_value)}"))
    if dflt is not None and dflt > mx:
        errs.append(errors.invalid(f"{rpath}.default", str(default), f"default is more than max: {smax}"))
    return errs


def _validate_range_step(capacity_value: Fraction | None, values: tuple, mn: Fraction, step: Fraction, sstep: str,
                         smin: str, rpath: str) -> list[FieldError]:
    """`values`: (raw, parsed) of the default and the max, each a multiple of `step` from min."""
    if step <= 0:
        return [errors.invalid(f"{rpath}.step", sstep, "must be greater than zero")]
    cap = capacity_value if capacity_value is not None else Fraction(0)
    errs: list[FieldError] = []
    if mn + step > cap:
        errs.append(errors.invalid(f"{rpath}.step", sstep, f"one step {capacity_str(mn + step)} is larger than "
                                                           f"capacity value: {capacity_str(capacity_value)}"))
    for raw, q in values:
        if raw is not None and q is not None and (q - mn) % step != 0:
            errs.append(errors.invalid(f"{rpath}.step", str(raw), f"value is not a multiple of a given step "
                                                                  f"({sstep}) from ({smin})"))
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
    errs = validate_label_name(t.get("key") or "", f"{path}.key")
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
    return validate_label(name, path)


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
        errs += validate_label(name, f"{path}.counterSet")
    counters = field_dict(cc, "counters")
    if not counters:
        errs.append(errors.required(f"{path}.counters", ""))
    else:
        errs += validate_map(counters, MAX_COUNTERS_PER_COUNTER_CONSUMPTION, 63, _validate_counter_name_key,
                              _validate_counter, f"{path}.counters")
    return errs


def _validate_counter_set(cs: Any, path: str) -> list[FieldError]:
    cs = cs if isinstance(cs, dict) else {}
    errs: list[FieldError] = []
    name = cs.get("name") or ""
    if not name:
        errs.append(errors.required(f"{path}.name", ""))
    else:
        errs += validate_label(name, f"{path}.name")
    counters = field_dict(cs, "counters")
    if not counters:
        errs.append(errors.required(f"{path}.counters", ""))
    else:
        errs += validate_map(counters, MAX_COUNTERS_PER_COUNTER_SET, 63, _validate_counter_name_key,
                              _validate_counter, f"{path}.counters")
    return errs


def validate_binding_params(dev: dict, path: str) -> list[FieldError]:
    conds = [c for c in field_list(dev, "bindingConditions") if isinstance(c, str)]
    fconds = [c for c in field_list(dev, "bindingFailureConditions") if isinstance(c, str)]
    errs = validate_slice(conds, BINDING_CONDITIONS_MAX, validate_label_name, f"{path}.bindingConditions")
    errs += validate_slice(fconds, BINDING_CONDITIONS_MAX, validate_label_name, f"{path}.bindingFailureConditions")
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
    return validate_subdomain(name, path)


def _validate_device(dev: Any, path: str, old_dev: dict | None, per_device: bool) -> list[FieldError]:
    dev = dev if isinstance(dev, dict) else {}
    errs = validate_label(dev.get("name") or "", f"{path}.name")
    attrs, caps = field_dict(dev, "attributes"), field_dict(dev, "capacity")
    total = len(attrs) + len(caps)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        errs.append(errors.invalid(path, total, f"the total number of attributes and capacities must not exceed "
                                                f"{MAX_ATTRIBUTES_AND_CAPACITIES}"))
    key_len = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
    errs += validate_map(attrs, -1, key_len, validate_qualified_name, _validate_attribute, f"{path}.attributes")
    multi = dev.get("allowMultipleAllocations") is True
    if old_dev is None or field_dict(old_dev, "capacity") != caps:
        errs += validate_map(caps, -1, key_len, validate_qualified_name,
                              lambda c, p: _validate_capacity(c, p, multi), f"{path}.capacity")
    if old_dev is None or field_list(old_dev, "taints") != field_list(dev, "taints"):
        errs += validate_slice(field_list(dev, "taints"), DEVICE_TAINTS_MAX, _validate_taint, f"{path}.taints")
    errs += validate_set(field_list(dev, "consumesCounters"), MAX_COUNTER_CONSUMPTIONS_PER_DEVICE,
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
    errs += validate_binding_params(dev, path)
    return errs


def _slice_uses_advanced_features(spec: dict) -> bool:
    for d in field_items(spec, "devices"):
        if field_list(d, "taints") or field_list(d, "consumesCounters"):
            return True
        for a in field_dict(d, "attributes").values():
            if isinstance(a, dict) and any(a.get(k) is not None for k in ("bools", "ints", "strings", "versions")):
                return True
    return False


def validate_resource_slice_spec(spec: Any, old_spec: Any) -> list[FieldError]:
    spec = spec if isinstance(spec, dict) else {}
    errs = validate_driver_name(spec.get("driver"), "spec.driver")
    errs += _validate_pool(field_dict(spec, "pool"))
    if old_spec is not None:
        errs += _immutable_slice_fields(spec, old_spec)
    errs += _validate_node_selection(spec)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(errors.invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    max_devices = RESOURCE_SLICE_MAX_DEVICES_ADVANCED if _slice_uses_advanced_features(spec) \
        else RESOURCE_SLICE_MAX_DEVICES
    per_device = spec.get("perDeviceNodeSelection") is True
    old_devices = {d.get("name"): d for d in field_items(old_spec, "devices")} if old_spec is not None else {}
    errs += validate_set(field_list(spec, "devices"), max_devices,
                         lambda d, p: _validate_device(d, p, old_devices.get((d or {}).get("name")) if isinstance(
                             d, dict) else None, per_device),
                         lambda d: d.get("name") if isinstance(d, dict) else None, "spec.devices")
    errs += validate_set(field_list(spec, "sharedCounters"), RESOURCE_SLICE_MAX_COUNTER_SETS, _validate_counter_set,
                         lambda c: c.get("name") if isinstance(c, dict) else None, "spec.sharedCounters")
    return errs


def _validate_pool(pool: dict) -> list[FieldError]:
    errs = validate_pool_name(pool.get("name"), "spec.pool.name")
    rsc = pool.get("resourceSliceCount") or 0
    if not isinstance(rsc, int) or rsc <= 0:
        errs.append(errors.invalid("spec.pool.resourceSliceCount", rsc, "must be greater than zero"))
    gen = pool.get("generation") or 0
    if isinstance(gen, int) and gen < 0:
        errs.append(errors.invalid("spec.pool.generation", gen, "must be greater than or equal to zero"))
    return errs


def _immutable_slice_fields(spec: dict, old_spec: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    pool, old_pool = field_dict(spec, "pool"), field_dict(old_spec, "pool")
    if pool.get("name") != old_pool.get("name"):
        errs.append(errors.immutable("spec.pool.name", pool.get("name")))
    for f in ("driver", "nodeName"):
        if spec.get(f) != old_spec.get(f):
            errs.append(errors.immutable(f"spec.{f}", spec.get(f)))
    return errs


def _validate_node_selection(spec: dict) -> list[FieldError]:
    """Exactly one of nodeName, nodeSelector (one term), allNodes and perDeviceNodeSelection."""
    set_fields = []
    errs: list[FieldError] = []
    if spec.get("nodeName") is not None:
        if spec["nodeName"] != "":
            set_fields.append("`nodeName`")
            errs += _node_name_errors(spec["nodeName"], "spec.nodeName")
        else:
            errs.append(errors.invalid("spec.nodeName", "", "must be either unset or set to a non-empty string"))
    if spec.get("nodeSelector") is not None:
        set_fields.append("`nodeSelector`")
        errs += validate_node_selector(spec["nodeSelector"], "spec.nodeSelector")
        terms = field_list(spec["nodeSelector"], "nodeSelectorTerms")
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
    return errs
