"""Where a pod may run: tolerations, node and pod affinity, topology spread constraints and the
scheduling group (upstream `ValidateTolerations`, `validateAffinity`,
`validateTopologySpreadConstraints`)."""

from __future__ import annotations

from typing import Any

from ..machinery.errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from ..machinery.names import dns1123_label_errors, dns1123_subdomain_errors, label_value_errors
from .common import _dict, _list
from .labelselectors import validate_label_name, validate_label_selector

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def validate_tolerations(tolerations: list, path: str) -> list[FieldError]:
    """`ValidateTolerations`."""
    errs: list[FieldError] = []
    for i, t in enumerate(tolerations):
        tp = f"{path}[{i}]"
        t = _dict(t)
        key = t.get("key") or ""
        op = t.get("operator") or ""
        effect = t.get("effect") or ""
        value = t.get("value") or ""
        if key:
            errs += validate_label_name(key, f"{tp}.key")
        if not key and op != "Exists":
            errs.append(invalid(f"{tp}.operator", op,
                                "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(invalid(f"{tp}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if op in ("Equal", ""):
            msgs = label_value_errors(value)
            if msgs:
                errs.append(invalid(f"{tp}.operator", value, ";".join(msgs)))
        elif op == "Exists":
            if value:
                errs.append(invalid(f"{tp}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(f"{tp}.operator", op, ("Equal", "Exists")))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(f"{tp}.effect", effect, TAINT_EFFECTS))
    return errs


def _validate_node_selector_requirement(rq: Any, path: str, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    rq = _dict(rq)
    op = rq.get("operator")
    values = _list(rq.get("values"))
    if op in ("In", "NotIn"):
        if not values:
            errs.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(invalid(f"{path}.operator", op or "", "not a valid selector operator"))
    errs += validate_label_name(rq.get("key", ""), f"{path}.key")
    if not allow_invalid_values:
        for j, v in enumerate(values):
            errs += [invalid(f"{path}.values[{j}]", v, m) for m in label_value_errors(str(v))]
    return errs


def _validate_node_selector_term(term: Any, path: str, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    term = _dict(term)
    for j, rq in enumerate(_list(term.get("matchExpressions"))):
        errs += _validate_node_selector_requirement(rq, f"{path}.matchExpressions[{j}]", allow_invalid_values)
    for j, rq in enumerate(_list(term.get("matchFields"))):
        fp = f"{path}.matchFields[{j}]"
        rq = _dict(rq)
        if rq.get("operator") in ("In", "NotIn"):
            if len(_list(rq.get("values"))) != 1:
                errs.append(required(f"{fp}.values",
                                     "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
        else:
            errs.append(invalid(f"{fp}.operator", rq.get("operator", ""), "not a valid selector operator"))
        if rq.get("key") != "metadata.name":
            errs.append(invalid(f"{fp}.key", rq.get("key", ""), "not a valid field selector key"))
        else:
            for k, v in enumerate(_list(rq.get("values"))):
                errs += [invalid(f"{fp}.values[{k}]", v, m) for m in dns1123_subdomain_errors(str(v))]
    return errs


def _validate_pod_affinity_term(term: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    term = _dict(term)
    errs += validate_label_selector(term.get("labelSelector"), f"{path}.labelSelector")
    errs += validate_label_selector(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for ns in _list(term.get("namespaces")):
        errs += [invalid(f"{path}.namespace", ns, m) for m in dns1123_label_errors(str(ns))]
    topo = term.get("topologyKey") or ""
    if not topo:
        errs.append(required(f"{path}.topologyKey", "can not be empty"))
    errs += validate_label_name(topo, f"{path}.topologyKey")
    return errs


def _validate_weighted_terms(terms: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, wt in enumerate(terms):
        wt = _dict(wt)
        w = wt.get("weight", 0)
        if not isinstance(w, int) or w <= 0 or w > 100:
            errs.append(invalid(f"{path}[{j}].weight", w, "must be in the range 1-100"))
        errs += _validate_pod_affinity_term(wt.get("podAffinityTerm"), f"{path}[{j}].podAffinityTerm")
    return errs


def validate_affinity(aff: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if aff is None:
        return errs
    aff = _dict(aff)
    na = aff.get("nodeAffinity")
    if isinstance(na, dict):
        np = f"{path}.nodeAffinity"
        req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
        if req is not None:
            rp = f"{np}.requiredDuringSchedulingIgnoredDuringExecution"
            terms = _list(_dict(req).get("nodeSelectorTerms"))
            if not terms:
                errs.append(required(f"{rp}.nodeSelectorTerms", "must have at least one node selector term"))
            for i, t in enumerate(terms):
                errs += _validate_node_selector_term(t, f"{rp}.nodeSelectorTerms[{i}]", False)
        for i, pt in enumerate(_list(na.get("preferredDuringSchedulingIgnoredDuringExecution"))):
            pp = f"{np}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            pt = _dict(pt)
            w = pt.get("weight", 0)
            if not isinstance(w, int) or w <= 0 or w > 100:
                errs.append(invalid(f"{pp}.weight", w, "must be in the range 1-100"))
            errs += _validate_node_selector_term(pt.get("preference"), f"{pp}.preference", True)
    for kind in ("podAffinity", "podAntiAffinity"):
        pa = aff.get(kind)
        if not isinstance(pa, dict):
            continue
        kp = f"{path}.{kind}"
        for i, t in enumerate(_list(pa.get("requiredDuringSchedulingIgnoredDuringExecution"))):
            errs += _validate_pod_affinity_term(t, f"{kp}.requiredDuringSchedulingIgnoredDuringExecution[{i}]")
        errs += _validate_weighted_terms(_list(pa.get("preferredDuringSchedulingIgnoredDuringExecution")),
                                         f"{kp}.preferredDuringSchedulingIgnoredDuringExecution")
    return errs


def validate_topology_spread(constraints: list, path: str) -> list[FieldError]:
    """`validateTopologySpreadConstraints`."""
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        cp = f"{path}[{i}]"
        c = _dict(c)
        skew = c.get("maxSkew", 0)
        if not isinstance(skew, int) or skew <= 0:
            errs.append(invalid(f"{cp}.maxSkew", skew, "must be greater than zero"))
        key = c.get("topologyKey") or ""
        if not key:
            errs.append(required(f"{cp}.topologyKey", "can not be empty"))
        else:
            errs += validate_label_name(key, f"{cp}.topologyKey")
        wu = c.get("whenUnsatisfiable") or ""
        if wu not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(not_supported(f"{cp}.whenUnsatisfiable", wu, ("DoNotSchedule", "ScheduleAnyway")))
        pair = (key, wu)
        if pair in seen:
            errs.append(duplicate(f"{cp}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {wu}}}"))
        seen.add(pair)
        errs += validate_label_selector(c.get("labelSelector"), f"{cp}.labelSelector")
    return errs


def validate_scheduling_group(sg: Any, path: str) -> list[FieldError]:
    """`spec.schedulingGroup` (1.36, gate GenericWorkload): a one-member union whose
    `podGroupName` is a DNS-1123 subdomain."""
    errs: list[FieldError] = []
    if sg is None:
        return errs
    if not isinstance(sg, dict):
        return [invalid(path, sg, "must be an object")]
    name = sg.get("podGroupName")
    if name is None:
        errs.append(required(f"{path}.podGroupName", "must specify one of: `podGroupName`"))
    elif not isinstance(name, str) or not name:
        errs.append(required(f"{path}.podGroupName"))
    else:
        errs += [invalid(f"{path}.podGroupName", name, m) for m in dns1123_subdomain_errors(name)]
    return errs
