"""Pod spec validation shared by every kind that embeds a pod template.

Pod, Job, Deployment, ReplicaSet and JobSet all carry a `PodSpec`; upstream validates it with
`ValidatePodSpec`, and so do we:

    errs = validate_pod_spec(spec, "spec", ctx)      # -> list[FieldError], upstream paths and words
    errs = validate_pod_template(template, "spec.template", ctx)
    errs = validate_pod_spec_update(new_spec, old_spec, "spec", ctx)   # pod immutability rules

The rules by concern live beside it: `containers`, `volumes`, `podplacement` (tolerations,
affinity, topology spread), `computeresources`; defaulting is in `poddefaults`. All functions work
on plain JSON dicts.
"""


from __future__ import annotations

from typing import Any, Callable

from ..machinery.errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from ..machinery.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    qualified_name_errors,
    validate_annotations,
    validate_labels,
)
from .common import MAX_INT32, Obj, _dict, _gate, _list, to_json
from .containers import validate_containers, validate_init_containers
from .fieldchecks import IMMUTABLE_MSG
from .podplacement import validate_affinity, validate_scheduling_group, validate_tolerations, validate_topology_spread
from .volumes import validate_pod_resource_claims, validate_volumes

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
OS_NAMES = ("linux", "windows")

# Fields of PodSpec a pod update may change (upstream's `updatablePodSpecFields`).
UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


def _validate_dns_config(cfg: Any, dns_policy: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if dns_policy == "None":
        if cfg is None:
            return [required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not _list(_dict(cfg).get("nameservers")):
            return [required(f"{path}.nameservers", "must provide at least one DNS nameserver when `dnsPolicy` is None")]
    if isinstance(cfg, dict):
        ns = _list(cfg.get("nameservers"))
        if len(ns) > 3:
            errs.append(invalid(f"{path}.nameservers", ns, "must not have more than 3 nameservers"))
        searches = _list(cfg.get("searches"))
        if len(searches) > 32:
            errs.append(invalid(f"{path}.searches", searches, "must not have more than 32 search paths"))
        for i, o in enumerate(_list(cfg.get("options"))):
            if not _dict(o).get("name"):
                errs.append(required(f"{path}.options[{i}]", "must not be empty"))
    return errs


def validate_pod_spec(spec: Obj, path: str, ctx: Any = None, *, resource_is_pod: bool = False) -> list[FieldError]:
    """`ValidatePodSpec`: every rule that holds for a Pod and a pod template alike (plus the
    pod-only ones when `resource_is_pod`). Errors come in upstream's order."""
    if not isinstance(spec, dict):
        return [required(path)]
    errs: list[FieldError] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(required(f"{path}.terminationGracePeriodSeconds"))
    errs += _validate_volumes_and_containers(spec, path)
    if spec.get("hostNetwork"):
        errs += _host_network_port_errors(_list(spec.get("containers")), path, resource_is_pod)
    errs += _enum_errors(spec.get("restartPolicy"), f"{path}.restartPolicy", RESTART_POLICIES)
    errs += _enum_errors(spec.get("dnsPolicy"), f"{path}.dnsPolicy", DNS_POLICIES)
    errs += validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    if spec.get("imagePullSecrets"):
        errs += _image_pull_secret_errors(_list(spec.get("imagePullSecrets")), f"{path}.imagePullSecrets")
    errs += validate_affinity(spec.get("affinity"), f"{path}.affinity")
    errs += _validate_dns_config(spec.get("dnsConfig"), spec.get("dnsPolicy"), f"{path}.dnsConfig")
    if spec.get("readinessGates"):
        errs += _readiness_gate_errors(_list(spec.get("readinessGates")), f"{path}.readinessGates")
    if spec.get("schedulingGates"):
        errs += _scheduling_gate_errors(_list(spec.get("schedulingGates")), f"{path}.schedulingGates")
    errs += validate_topology_spread(_list(spec.get("topologySpreadConstraints")),
                                      f"{path}.topologySpreadConstraints")
    errs += _name_field_errors(spec, path, ("serviceAccountName", "nodeName"), dns1123_subdomain_errors)
    if spec.get("activeDeadlineSeconds") is not None:
        errs += _active_deadline_errors(spec["activeDeadlineSeconds"], f"{path}.activeDeadlineSeconds")
    errs += _name_field_errors(spec, path, ("hostname", "subdomain"), dns1123_label_errors)
    if spec.get("tolerations"):
        errs += validate_tolerations(_list(spec.get("tolerations")), f"{path}.tolerations")
    errs += _name_field_errors(spec, path, ("priorityClassName",), dns1123_subdomain_errors)
    if spec.get("runtimeClassName") is not None:
        rcn = spec["runtimeClassName"]
        errs += [invalid(f"{path}.runtimeClassName", rcn, m) for m in dns1123_subdomain_errors(str(rcn))]
    if spec.get("preemptionPolicy") is not None:
        errs += _preemption_policy_errors(spec["preemptionPolicy"], f"{path}.preemptionPolicy")
    if isinstance(spec.get("os"), dict):
        errs += _enum_errors(spec["os"].get("name"), f"{path}.os.name", OS_NAMES)
    if "schedulingGroup" in spec:
        errs += _scheduling_group_errors(spec.get("schedulingGroup"), f"{path}.schedulingGroup", ctx)
    return errs


def _validate_volumes_and_containers(spec: Obj, path: str) -> list[FieldError]:
    """Volumes and resource claims first: containers refer to them by name."""
    grace = spec.get("terminationGracePeriodSeconds")
    vols, errs = validate_volumes(_list(spec.get("volumes")), f"{path}.volumes")
    claims = _list(spec.get("resourceClaims"))
    claim_names: set[str] = {name for c in claims if (name := _dict(c).get("name"))}
    errs += validate_pod_resource_claims(claims, f"{path}.resourceClaims")
    rp = spec.get("restartPolicy")
    containers = _list(spec.get("containers"))
    errs += validate_containers(containers, vols, claim_names, grace, f"{path}.containers", rp)
    errs += validate_init_containers(_list(spec.get("initContainers")), containers, vols, claim_names, grace,
                                      f"{path}.initContainers", rp)
    return errs


def _host_network_port_errors(containers: list, path: str, resource_is_pod: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, c in enumerate(containers):
        for j, p in enumerate(_list(_dict(c).get("ports"))):
            p = _dict(p)
            hp, cport = p.get("hostPort", 0), p.get("containerPort")
            if (resource_is_pod or hp) and hp != cport:
                errs.append(invalid(f"{path}.containers[{i}].ports[{j}].hostPort", hp,
                                    "must match `containerPort` when `hostNetwork` is true"))
    return errs


def _enum_errors(value: Any, path: str, allowed: tuple[str, ...]) -> list[FieldError]:
    """A required field with a fixed set of values."""
    if not value:
        return [required(path)]
    if value not in allowed:
        return [not_supported(path, value, allowed)]
    return []


def _preemption_policy_errors(pp: Any, path: str) -> list[FieldError]:
    if pp == "":
        return [required(path)]
    if pp is not None and pp not in PREEMPTION_POLICIES:
        return [not_supported(path, pp, PREEMPTION_POLICIES)]
    return []


def _image_pull_secret_errors(secrets: list, path: str) -> list[FieldError]:
    return [invalid(f"{path}[{i}]", ps, "only name may be set") for i, ps in enumerate(secrets)
            if set(_dict(ps)) - {"name"}]


def _readiness_gate_errors(gates: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, g in enumerate(gates):
        ct = _dict(g).get("conditionType") or ""
        errs += [invalid(f"{path}[{i}].conditionType", ct, m) for m in qualified_name_errors(ct)]
    return errs


def _scheduling_gate_errors(gates: list, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, g in enumerate(gates):
        gname = _dict(g).get("name") or ""
        errs += [invalid(f"{path}[{i}]", gname, m) for m in qualified_name_errors(gname)]
        if gname in seen:
            errs.append(duplicate(f"{path}[{i}]", gname))
        seen.add(gname)
    return errs


def _name_field_errors(spec: Obj, path: str, fields: tuple[str, ...],
                       name_errors: Callable[[str], list[str]]) -> list[FieldError]:
    """Each of `fields` that is set must be a valid name of the given kind (DNS label, subdomain)."""
    errs: list[FieldError] = []
    for key in fields:
        value = spec.get(key)
        if value:
            errs += [invalid(f"{path}.{key}", value, m) for m in name_errors(value)]
    return errs


def _active_deadline_errors(ads: Any, path: str) -> list[FieldError]:
    if ads is not None and (not isinstance(ads, int) or ads < 1 or ads > MAX_INT32):
        return [invalid(path, ads, f"must be between 1 and {MAX_INT32}, inclusive")]
    return []


def _scheduling_group_errors(sg: Any, path: str, ctx: Any) -> list[FieldError]:
    if _gate(ctx, "GenericWorkload"):
        return validate_scheduling_group(sg, path)
    if sg is not None:
        return [forbidden(path, "disabled by feature-gate GenericWorkload")]
    return []


def validate_pod_template(template: Any, path: str, ctx: Any = None) -> list[FieldError]:
    """`ValidatePodTemplateSpec`: template labels and annotations, then the pod spec."""
    if not isinstance(template, dict):
        return [required(path)]
    errs: list[FieldError] = []
    md = _dict(template.get("metadata"))
    errs += validate_labels(md.get("labels"), f"{path}.metadata.labels")
    errs += validate_annotations(md.get("annotations"), f"{path}.metadata.annotations")
    spec = template.get("spec")
    errs += validate_pod_spec(_dict(spec), f"{path}.spec", ctx)
    if _list(_dict(spec).get("ephemeralContainers")):
        errs.append(forbidden(f"{path}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"))
    return errs


# --- pod update rules -----------------------------------------------------------------------------

def _go_name(field: str) -> str:
    special = {"dnsPolicy": "DNSPolicy", "dnsConfig": "DNSConfig", "hostIPC": "HostIPC", "hostPID": "HostPID",
               "os": "OS"}
    return special.get(field, field[:1].upper() + field[1:])


def pod_spec_diff(old: Obj, new: Obj) -> str:
    """A compact rendering of what changed, in the spirit of upstream's `cmp.Diff` of the specs."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) == new.get(key):
            continue
        if key in old:
            lines.append(f"- \t{_go_name(key)}: {to_json(old[key])},")
        if key in new:
            lines.append(f"+ \t{_go_name(key)}: {to_json(new[key])},")
    lines.append("  }")
    return "\n".join(lines)


def _toleration_eq_ignoring_seconds(a: Any, b: Any) -> bool:
    a, b = dict(_dict(a)), dict(_dict(b))
    a.pop("tolerationSeconds", None)
    b.pop("tolerationSeconds", None)
    norm = lambda t: {k: v for k, v in t.items() if v not in ("", None)}  # noqa: E731
    return norm(a) == norm(b)


def _with_image_of(c: Any, oc: Any) -> dict:
    m = dict(_dict(c))
    if "image" in _dict(oc):
        m["image"] = oc["image"]
    else:
        m.pop("image", None)
    return m


def validate_pod_spec_update(new: Obj, old: Obj, path: str = "spec", ctx: Any = None) -> list[FieldError]:
    """The pod-update part of `ValidatePodUpdate`: which spec fields may change and how."""
    errs, stop = _container_update_errors(new, old, path)
    if stop:
        return errs
    deadline_errs, stop = _active_deadline_update_errors(
        new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds"), f"{path}.activeDeadlineSeconds")
    errs += deadline_errs
    if stop:
        return errs
    errs += _toleration_update_errors(_list(new.get("tolerations")), _list(old.get("tolerations")),
                                      f"{path}.tolerations")
    errs += _scheduling_gate_update_errors(new, old, f"{path}.schedulingGates")
    if new.get("schedulingGroup") != old.get("schedulingGroup") and ("schedulingGroup" in old or "schedulingGroup" in new):
        errs.append(invalid(f"{path}.schedulingGroup", new.get("schedulingGroup"), IMMUTABLE_MSG))
    if new == old:
        return errs
    munged = _with_updatable_fields_of(new, old)
    if _list(old.get("schedulingGates")):
        errs += _gated_node_selector_errors(munged, old, path)
    if munged != old:
        detail = ("pod updates may not change fields other than " + ",".join(UPDATABLE_POD_SPEC_FIELDS)
                  + "\n" + pod_spec_diff(old, munged))
        errs.append(forbidden(path, detail))
    return errs


def _container_update_errors(new: Obj, old: Obj, path: str) -> tuple[list[FieldError], bool]:
    """Images of the (same number of) containers; True when the count changed (nothing else checked)."""
    errs: list[FieldError] = []
    for key in ("containers", "initContainers"):
        nc, oc = _list(new.get(key)), _list(old.get(key))
        if len(nc) != len(oc):
            errs.append(forbidden(f"{path}.{key}", "pod updates may not add or remove containers"))
            return errs, True
        for i, c in enumerate(nc):
            img = _dict(c).get("image") or ""
            if not img:
                errs.append(required(f"{path}.{key}[{i}].image"))
            elif img != img.strip():
                errs.append(invalid(f"{path}.{key}[{i}].image", img, "must not have leading or trailing whitespace"))
    return errs, False


def _active_deadline_update_errors(nads: Any, oads: Any, path: str) -> tuple[list[FieldError], bool]:
    """activeDeadlineSeconds may only be set or lowered; True when the update stops here."""
    if nads is None:
        if oads is not None:
            return [invalid(path, None, "must not update from a positive integer to nil value")], False
        return [], False
    if not isinstance(nads, int) or nads < 0 or nads > MAX_INT32:
        return [invalid(path, nads, f"must be between 0 and {MAX_INT32}, inclusive")], True
    if oads is not None and oads < nads:
        return [invalid(path, nads, "must be less than or equal to previous value")], True
    return [], False


def _toleration_update_errors(new_tols: list, old_tols: list, path: str) -> list[FieldError]:
    """Existing tolerations stay (but for their tolerationSeconds); the new list must be valid."""
    for ot in old_tols:
        if not any(_toleration_eq_ignoring_seconds(ot, nt) for nt in new_tols):
            return [forbidden(path, "existing toleration can not be modified except its tolerationSeconds")]
    return validate_tolerations(new_tols, path)


def _scheduling_gate_update_errors(new: Obj, old: Obj, path: str) -> list[FieldError]:
    old_gates = {_dict(g).get("name") for g in _list(old.get("schedulingGates"))}
    errs: list[FieldError] = []
    for i, g in enumerate(_list(new.get("schedulingGates"))):
        gname = _dict(g).get("name")
        if gname not in old_gates:
            errs.append(forbidden(f"{path}[{i}].name",
                                  f"only deletion is allowed, but found new scheduling gate '{gname}'"))
    return errs


def _with_updatable_fields_of(new: Obj, old: Obj) -> Obj:
    """`new` with the fields an update may change taken from `old`: what is left must equal `old`."""
    munged = dict(new)
    for key in ("containers", "initContainers"):
        if key in munged:
            munged[key] = [_with_image_of(c, oc) for c, oc in zip(_list(new.get(key)), _list(old.get(key)))]
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations", "schedulingGroup"):
        _copy_field(munged, old, key)
    otg, ntg = old.get("terminationGracePeriodSeconds"), munged.get("terminationGracePeriodSeconds")
    if isinstance(otg, int) and otg < 0 and ntg == 1:
        munged["terminationGracePeriodSeconds"] = otg
    return munged


def _copy_field(dst: Obj, src: Obj, key: str) -> None:
    if key in src:
        dst[key] = src[key]
    else:
        dst.pop(key, None)


def _gated_node_selector_errors(munged: Obj, old: Obj, path: str) -> list[FieldError]:
    """While scheduling gates remain, nodeSelector may gain entries but not change existing ones
    (then it is taken from `old` in `munged`)."""
    ons, nns = _dict(old.get("nodeSelector")), _dict(munged.get("nodeSelector"))
    if ons == nns:
        return []
    errs = [invalid(f"{path}.nodeSelector[{k}]", nns.get(k), IMMUTABLE_MSG)
            for k, v in ons.items() if nns.get(k) != v]
    _copy_field(munged, old, "nodeSelector")
    return errs
