"""A Job's `spec.scheduling` (Kubernetes 1.37, KEP-5547, gate `WorkloadWithJob`): the field's rules.

`JobSchedulingConfiguration` embeds the `scheduling.k8s.io/v1alpha3` controller building blocks
(KEP-6089): `schedulingPolicy` (`basic` | `gang{minCount?}`), `schedulingConstraints.topology`
(at most one label key), `disruptionMode` (`single` | `all`) and up to four `resourceClaims`.
Upstream validates the blocks declaratively, so the errors use the declarative validators' words
(`must specify exactly one of: ...`, `must be greater than or equal to 1`, `field is immutable`).

- Served only where the release is 1.37 and the gate is on. With the gate off the field is cleared
  on create and ignored on update (the stored value is kept), as upstream drops disabled fields;
  1.36 has no such field at all and its Job strategy never calls into this module.
- All of it is immutable once set, except `schedulingPolicy.gang.minCount`; `basic` and `gang`
  cannot be switched.
- `schemas_1_37` are the OpenAPI schemas a 1.37 API serves, decodes and patches a Job with (the
  field and its blocks), added to the release by `register_schemas` (`openapi.add_release_schemas`).
"""

from __future__ import annotations

import copy
from typing import Any

from ..machinery import errors
from ..machinery.errors import FieldError
from .scheduling.common import immutable, union, validate_resource_claims, validate_scheduling_constraints

Obj = dict[str, Any]

RELEASE = "1.37"
GATE = "WorkloadWithJob"
FIELD = "scheduling"
POLICIES = ("basic", "gang")
DISRUPTION_MODES = ("single", "all")
# workloadbuilder's allow-list rule: an `all` disruption needs a `gang` policy.
MSG_ALL_NEEDS_GANG = "the preemption unit must not be larger than the scheduling unit"


def served(ctx: Any) -> bool:
    """Whether the API serves `spec.scheduling`: a 1.37 cluster with `WorkloadWithJob` on."""
    gates = getattr(ctx, "gates", None)
    if str(getattr(gates, "release", "1.36")) != RELEASE:
        return False
    try:
        return bool(ctx.enabled(GATE))
    except Exception:  # a gate the release does not know is off
        return False


def is_1_37(ctx: Any) -> bool:
    return str(getattr(getattr(ctx, "gates", None), "release", "1.36")) == RELEASE


def drop_disabled(spec: Any, old_spec: Any, ctx: Any) -> None:
    """Upstream's dropDisabledFields for the field: cleared on create, kept as stored on update."""
    if not isinstance(spec, dict) or not is_1_37(ctx) or served(ctx):
        return
    old = old_spec.get(FIELD) if isinstance(old_spec, dict) else None
    if old is None:
        spec.pop(FIELD, None)
    else:
        spec[FIELD] = copy.deepcopy(old)


def _d(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _policy_errors(policy: Any, path: str) -> list[FieldError]:
    policy = _d(policy)
    errs = union(path, policy, POLICIES)
    gang = policy.get("gang")
    if isinstance(gang, dict) and gang.get("minCount") is not None:
        mc = gang["minCount"]
        if isinstance(mc, int) and mc < 1:
            errs.append(errors.invalid(f"{path}.gang.minCount", mc, "must be greater than or equal to 1"))
    return errs


def validate(spec: Obj, path: str = "spec") -> list[FieldError]:
    """The rules of `spec.scheduling` on create and update (when the field is served)."""
    sched = spec.get(FIELD)
    if sched is None:
        return []
    p = f"{path}.{FIELD}"
    if not isinstance(sched, dict):
        return [errors.invalid(p, sched, "must be an object")]
    errs: list[FieldError] = []
    if sched.get("schedulingPolicy") is not None:
        errs += _policy_errors(sched["schedulingPolicy"], f"{p}.schedulingPolicy")
    if sched.get("schedulingConstraints") is not None:
        errs += validate_scheduling_constraints(sched["schedulingConstraints"], f"{p}.schedulingConstraints")
    mode = sched.get("disruptionMode")
    if mode is not None:
        errs += union(f"{p}.disruptionMode", _d(mode), DISRUPTION_MODES)
        if _d(mode).get("all") is not None and _d(sched.get("schedulingPolicy")).get("gang") is None:
            errs.append(errors.invalid(f"{p}.disruptionMode", mode, MSG_ALL_NEEDS_GANG))
    if sched.get("resourceClaims") is not None:
        errs += validate_resource_claims(sched["resourceClaims"], f"{p}.resourceClaims")
    return errs


def _without_min_count(sched: Any) -> Any:
    out = copy.deepcopy(sched)
    gang = _d(_d(out).get("schedulingPolicy")).get("gang")
    if isinstance(gang, dict):
        gang.pop("minCount", None)
    return out


def validate_update(spec: Obj, old_spec: Obj, path: str = "spec") -> list[FieldError]:
    """Only `schedulingPolicy.gang.minCount` may change; the policy variant is frozen."""
    new, old = spec.get(FIELD), old_spec.get(FIELD)
    p = f"{path}.{FIELD}"
    if (new is None) != (old is None):
        return [immutable(p)]
    if new is None or new == old:
        return []
    npol, opol = _d(_d(new).get("schedulingPolicy")), _d(_d(old).get("schedulingPolicy"))
    if set(k for k in POLICIES if npol.get(k) is not None) != set(k for k in POLICIES if opol.get(k) is not None):
        return [immutable(f"{p}.schedulingPolicy")]
    errs: list[FieldError] = []
    for f in ("schedulingConstraints", "disruptionMode", "resourceClaims"):
        if _d(new).get(f) != _d(old).get(f):
            errs.append(immutable(f"{p}.{f}"))
    if not errs and _without_min_count(new) != _without_min_count(old):
        errs.append(immutable(f"{p}.schedulingPolicy"))
    return errs


# -- OpenAPI (1.37) --------------------------------------------------------------------------------
_V1ALPHA3 = "io.k8s.api.scheduling.v1alpha3"
_REF = "#/components/schemas/"


def _obj(desc: str, props: dict, required: list[str] | None = None, **extra: Any) -> dict:
    schema: dict = {"type": "object", "description": desc, "properties": props}
    if required:
        schema["required"] = required
    schema.update(extra)
    return schema


def _ref(name: str) -> dict:
    return {"allOf": [{"$ref": _REF + name}]}


def _empty(desc: str) -> dict:
    return {"type": "object", "description": desc}


def schemas_1_37(job_spec: dict) -> dict[str, dict]:
    """The 1.37 `JobSpec` (the shared one plus `scheduling`) and the schemas it reaches."""
    spec = copy.deepcopy(job_spec)
    spec.setdefault("properties", {})[FIELD] = _ref("io.k8s.api.batch.v1.JobSchedulingConfiguration")
    s = f"{_V1ALPHA3}."
    return {
        "io.k8s.api.batch.v1.JobSpec": spec,
        "io.k8s.api.batch.v1.JobSchedulingConfiguration": _obj(
            "How the Job's pods are scheduled as a group (WorkloadWithJob).", {
                "schedulingPolicy": _ref(s + "WorkloadPodGroupSchedulingPolicy"),
                "schedulingConstraints": _ref(s + "WorkloadPodGroupSchedulingConstraints"),
                "disruptionMode": _ref(s + "WorkloadPodGroupDisruptionMode"),
                "resourceClaims": {"type": "array", "items": _ref(s + "WorkloadPodGroupResourceClaim"),
                                   "x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map",
                                   "x-kubernetes-patch-merge-key": "name",
                                   "x-kubernetes-patch-strategy": "merge,retainKeys"}}),
        s + "WorkloadPodGroupSchedulingPolicy": _obj("Exactly one of basic or gang.", {
            "basic": _ref(s + "WorkloadPodGroupBasicSchedulingPolicy"),
            "gang": _ref(s + "WorkloadPodGroupGangSchedulingPolicy")}),
        s + "WorkloadPodGroupBasicSchedulingPolicy": _empty("Pods are scheduled one by one."),
        s + "WorkloadPodGroupGangSchedulingPolicy": _obj("All or nothing: at least minCount pods together.", {
            "minCount": {"type": "integer", "format": "int32"}}),
        s + "WorkloadPodGroupSchedulingConstraints": _obj("Where the group's pods may run together.", {
            "topology": {"type": "array", "items": _ref(s + "TopologyConstraint"),
                         "x-kubernetes-list-type": "atomic"}}),
        s + "TopologyConstraint": _obj("A node label key whose value all pods share.", {
            "key": {"type": "string", "default": ""}}, ["key"]),
        s + "WorkloadPodGroupDisruptionMode": _obj("Exactly one of single or all.", {
            "single": _ref(s + "WorkloadPodGroupSingleDisruptionMode"),
            "all": _ref(s + "WorkloadPodGroupAllDisruptionMode")}),
        s + "WorkloadPodGroupSingleDisruptionMode": _empty("Pods are disrupted one by one."),
        s + "WorkloadPodGroupAllDisruptionMode": _empty("The group is disrupted as a whole."),
        s + "WorkloadPodGroupResourceClaim": _obj("A claim shared by the group's pods.", {
            "name": {"type": "string", "default": ""},
            "resourceClaimName": {"type": "string"},
            "resourceClaimTemplateName": {"type": "string"}}, ["name"]),
    }


def register_schemas() -> None:
    """Give 1.37 API servers the JobSpec with `scheduling` (strict decoding keeps and checks it)."""
    from . import openapi
    openapi.add_release_schemas(RELEASE, schemas_1_37(openapi.component("io.k8s.api.batch.v1.JobSpec")))
