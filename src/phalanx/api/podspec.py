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

from typing import Any

from ..machinery.errors import FieldError, duplicate, forbidden, invalid, not_supported, required
from ..machinery.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    qualified_name_errors,
    validate_annotations,
    validate_labels,
)
from .common import MAX_INT32, Obj, _dict, _gate, _list, to_json
from .containers import _validate_containers, _validate_init_containers
from .fieldchecks import IMMUTABLE_MSG
from .podplacement import _validate_topology_spread, validate_affinity, validate_scheduling_group, validate_tolerations
from .volumes import _validate_pod_resource_claims, _validate_volumes

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")

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
    pod-only ones when `resource_is_pod`)."""
    if not isinstance(spec, dict):
        return [required(path)]
    errs: list[FieldError] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(required(f"{path}.terminationGracePeriodSeconds"))
    grace = spec.get("terminationGracePeriodSeconds")
    vols, verrs = _validate_volumes(_list(spec.get("volumes")), f"{path}.volumes")
    errs += verrs
    claims = _list(spec.get("resourceClaims"))
    claim_names = {_dict(c).get("name") for c in claims if _dict(c).get("name")}
    errs += _validate_pod_resource_claims(claims, f"{path}.resourceClaims")
    rp = spec.get("restartPolicy")
    containers = _list(spec.get("containers"))
    errs += _validate_containers(containers, vols, claim_names, grace, f"{path}.containers", rp)
    errs += _validate_init_containers(_list(spec.get("initContainers")), containers, vols, claim_names, grace,
                                      f"{path}.initContainers", rp)
    if spec.get("hostNetwork"):
        for i, c in enumerate(containers):
            for j, p in enumerate(_list(_dict(c).get("ports"))):
                p = _dict(p)
                hp, cport = p.get("hostPort", 0), p.get("containerPort")
                if (resource_is_pod or hp) and hp != cport:
                    errs.append(invalid(f"{path}.containers[{i}].ports[{j}].hostPort", hp,
                                        "must match `containerPort` when `hostNetwork` is true"))
    if not rp:
        errs.append(required(f"{path}.restartPolicy"))
    elif rp not in RESTART_POLICIES:
        errs.append(not_supported(f"{path}.restartPolicy", rp, RESTART_POLICIES))
    dp = spec.get("dnsPolicy")
    if not dp:
        errs.append(required(f"{path}.dnsPolicy"))
    elif dp not in DNS_POLICIES:
        errs.append(not_supported(f"{path}.dnsPolicy", dp, DNS_POLICIES))
    errs += validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    for i, ps in enumerate(_list(spec.get("imagePullSecrets"))):
        if set(_dict(ps)) - {"name"}:
            errs.append(invalid(f"{path}.imagePullSecrets[{i}]", ps, "only name may be set"))
    errs += validate_affinity(spec.get("affinity"), f"{path}.affinity")
    errs += _validate_dns_config(spec.get("dnsConfig"), dp, f"{path}.dnsConfig")
    for i, g in enumerate(_list(spec.get("readinessGates"))):
        ct = _dict(g).get("conditionType") or ""
        errs += [invalid(f"{path}.readinessGates[{i}].conditionType", ct, m) for m in qualified_name_errors(ct)]
    seen_gates: set[str] = set()
    for i, g in enumerate(_list(spec.get("schedulingGates"))):
        gname = _dict(g).get("name") or ""
        errs += [invalid(f"{path}.schedulingGates[{i}]", gname, m) for m in qualified_name_errors(gname)]
        if gname in seen_gates:
            errs.append(duplicate(f"{path}.schedulingGates[{i}]", gname))
        seen_gates.add(gname)
    errs += _validate_topology_spread(_list(spec.get("topologySpreadConstraints")),
                                      f"{path}.topologySpreadConstraints")
    sa = spec.get("serviceAccountName")
    if sa:
        errs += [invalid(f"{path}.serviceAccountName", sa, m) for m in dns1123_subdomain_errors(sa)]
    node = spec.get("nodeName")
    if node:
        errs += [invalid(f"{path}.nodeName", node, m) for m in dns1123_subdomain_errors(node)]
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and (not isinstance(ads, int) or ads < 1 or ads > MAX_INT32):
        errs.append(invalid(f"{path}.activeDeadlineSeconds", ads, f"must be between 1 and {MAX_INT32}, inclusive"))
    for key in ("hostname", "subdomain"):
        if spec.get(key):
            errs += [invalid(f"{path}.{key}", spec[key], m) for m in dns1123_label_errors(spec[key])]
    if spec.get("tolerations"):
        errs += validate_tolerations(_list(spec.get("tolerations")), f"{path}.tolerations")
    pcn = spec.get("priorityClassName")
    if pcn:
        errs += [invalid(f"{path}.priorityClassName", pcn, m) for m in dns1123_subdomain_errors(pcn)]
    if spec.get("runtimeClassName") is not None:
        rcn = spec["runtimeClassName"]
        errs += [invalid(f"{path}.runtimeClassName", rcn, m) for m in dns1123_subdomain_errors(str(rcn))]
    pp = spec.get("preemptionPolicy")
    if pp is not None:
        if pp == "":
            errs.append(required(f"{path}.preemptionPolicy"))
        elif pp not in PREEMPTION_POLICIES:
            errs.append(not_supported(f"{path}.preemptionPolicy", pp, PREEMPTION_POLICIES))
    os_ = spec.get("os")
    if isinstance(os_, dict):
        if not os_.get("name"):
            errs.append(required(f"{path}.os.name"))
        elif os_["name"] not in ("linux", "windows"):
            errs.append(not_supported(f"{path}.os.name", os_["name"], ("linux", "windows")))
    if "schedulingGroup" in spec:
        if _gate(ctx, "GenericWorkload"):
            errs += validate_scheduling_group(spec.get("schedulingGroup"), f"{path}.schedulingGroup")
        elif spec.get("schedulingGroup") is not None:
            errs.append(forbidden(f"{path}.schedulingGroup", "disabled by feature-gate GenericWorkload"))
    return errs


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
    errs: list[FieldError] = []
    for key in ("containers", "initContainers"):
        nc, oc = _list(new.get(key)), _list(old.get(key))
        if len(nc) != len(oc):
            errs.append(forbidden(f"{path}.{key}", "pod updates may not add or remove containers"))
            return errs
        for i, c in enumerate(nc):
            img = _dict(c).get("image") or ""
            if not img:
                errs.append(required(f"{path}.{key}[{i}].image"))
            elif img != img.strip():
                errs.append(invalid(f"{path}.{key}[{i}].image", img, "must not have leading or trailing whitespace"))
    nads, oads = new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    if nads is not None:
        if not isinstance(nads, int) or nads < 0 or nads > MAX_INT32:
            errs.append(invalid(f"{path}.activeDeadlineSeconds", nads, f"must be between 0 and {MAX_INT32}, inclusive"))
            return errs
        if oads is not None and oads < nads:
            errs.append(invalid(f"{path}.activeDeadlineSeconds", nads, "must be less than or equal to previous value"))
            return errs
    elif oads is not None:
        errs.append(invalid(f"{path}.activeDeadlineSeconds", None, "must not update from a positive integer to nil value"))
    new_tols, old_tols = _list(new.get("tolerations")), _list(old.get("tolerations"))
    for ot in old_tols:
        if not any(_toleration_eq_ignoring_seconds(ot, nt) for nt in new_tols):
            errs.append(forbidden(f"{path}.tolerations", "existing toleration can not be modified except its tolerationSeconds"))
            break
    else:
        errs += validate_tolerations(new_tols, f"{path}.tolerations")
    old_gates = {_dict(g).get("name") for g in _list(old.get("schedulingGates"))}
    for i, g in enumerate(_list(new.get("schedulingGates"))):
        gname = _dict(g).get("name")
        if gname not in old_gates:
            errs.append(forbidden(f"{path}.schedulingGates[{i}].name",
                                  f"only deletion is allowed, but found new scheduling gate '{gname}'"))
    if new.get("schedulingGroup") != old.get("schedulingGroup") and ("schedulingGroup" in old or "schedulingGroup" in new):
        errs.append(invalid(f"{path}.schedulingGroup", new.get("schedulingGroup"), IMMUTABLE_MSG))
    if new == old:
        return errs
    munged = dict(new)
    for key in ("containers", "initContainers"):
        if key in munged:
            munged[key] = [_with_image_of(c, oc) for c, oc in zip(_list(new.get(key)), _list(old.get(key)))]
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations", "schedulingGroup"):
        if key in old:
            munged[key] = old[key]
        else:
            munged.pop(key, None)
    otg, ntg = old.get("terminationGracePeriodSeconds"), munged.get("terminationGracePeriodSeconds")
    if isinstance(otg, int) and otg < 0 and ntg == 1:
        munged["terminationGracePeriodSeconds"] = otg
    if _list(old.get("schedulingGates")):
        ons, nns = _dict(old.get("nodeSelector")), _dict(munged.get("nodeSelector"))
        if ons != nns:
            for k, v in ons.items():
                if nns.get(k) != v:
                    errs.append(invalid(f"{path}.nodeSelector[{k}]", nns.get(k), IMMUTABLE_MSG))
            if "nodeSelector" in old:
                munged["nodeSelector"] = old["nodeSelector"]
            else:
                munged.pop("nodeSelector", None)
    if munged != old:
        detail = ("pod updates may not change fields other than " + ",".join(UPDATABLE_POD_SPEC_FIELDS)
                  + "\n" + pod_spec_diff(old, munged))
        errs.append(forbidden(path, detail))
    return errs

