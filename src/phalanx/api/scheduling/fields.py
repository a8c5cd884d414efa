"""Reading a Workload or PodGroup without caring which release wrote it.

Kubernetes 1.36 (`scheduling.k8s.io/v1alpha2`) and 1.37 (`v1beta1`, `v1alpha3`) spell the same facts
differently: the template reference (`podGroupTemplateRef.workload.podGroupTemplateName` against
`workloadRef.templateName`), the disruption mode (`"Pod"`/`"PodGroup"` against `{single: {}}`/
`{all: {}}`) and the scheduled condition (`PodGroupScheduled` against `PodGroupInitiallyScheduled`).
Components read these through the functions here, so one scheduler and one set of controllers serve
clusters of both releases.
"""

from __future__ import annotations

from typing import Any

GROUP = "scheduling.k8s.io"
V1ALPHA2 = f"{GROUP}/v1alpha2"
V1BETA1 = f"{GROUP}/v1beta1"
V1ALPHA3 = f"{GROUP}/v1alpha3"

# The group-version each release's controllers and scheduler write Workloads and PodGroups in.
WORKLOAD_API_BY_RELEASE = {"1.36": V1ALPHA2, "1.37": V1BETA1}
# CompositePodGroup exists only at v1alpha3 (Kubernetes 1.37 on).
COMPOSITE_POD_GROUP_API = V1ALPHA3

DISRUPTION_SINGLE = "single"
DISRUPTION_ALL = "all"

SCHEDULED_CONDITION_1_36 = "PodGroupScheduled"
SCHEDULED_CONDITION_1_37 = "PodGroupInitiallyScheduled"

Obj = dict[str, Any]


def _spec(obj: Obj) -> dict:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    return spec if isinstance(spec, dict) else {}


def is_1_36_shape(obj: Obj) -> bool:
    """Whether `obj` is a `v1alpha2` (Kubernetes 1.36) object."""
    return obj.get("apiVersion") == V1ALPHA2


def template_ref(pod_group: Obj) -> tuple[str, str] | None:
    """(workloadName, templateName) of the Workload template a PodGroup was made from, if any."""
    spec = _spec(pod_group)
    ref = spec.get("workloadRef")
    if isinstance(ref, dict) and ref.get("workloadName"):
        return ref["workloadName"], ref.get("templateName") or ""
    old = spec.get("podGroupTemplateRef")
    wl = old.get("workload") if isinstance(old, dict) else None
    if isinstance(wl, dict) and wl.get("workloadName"):
        return wl["workloadName"], wl.get("podGroupTemplateName") or ""
    return None


def workload_name(pod_group: Obj) -> str | None:
    ref = template_ref(pod_group)
    return ref[0] if ref else None


def disruption_mode(obj: Obj | dict) -> str:
    """`single` or `all` for a PodGroup, CompositePodGroup or template (its `spec` or itself)."""
    holder = _spec(obj) if "spec" in obj else obj
    mode = holder.get("disruptionMode")
    if isinstance(mode, dict):
        return DISRUPTION_ALL if "all" in mode else DISRUPTION_SINGLE
    return DISRUPTION_ALL if mode == "PodGroup" else DISRUPTION_SINGLE


def disrupts_as_whole(obj: Obj | dict) -> bool:
    """Whether the group is preempted as one unit (`all` in 1.37, `PodGroup` in 1.36)."""
    return disruption_mode(obj) == DISRUPTION_ALL


def disruption_mode_value(mode: str, api_version: str) -> Any:
    """How `mode` (`single`/`all`) is spelled in `api_version`."""
    if api_version == V1ALPHA2:
        return "PodGroup" if mode == DISRUPTION_ALL else "Pod"
    return {mode: {}}


def gang_min_count(obj: Obj | dict) -> int | None:
    """`schedulingPolicy.gang.minCount` of a PodGroup or template; None for a basic policy."""
    holder = _spec(obj) if "spec" in obj else obj
    policy = holder.get("schedulingPolicy")
    gang = policy.get("gang") if isinstance(policy, dict) else None
    if not isinstance(gang, dict):
        return None
    value = gang.get("minCount")
    return value if isinstance(value, int) else None


def preemption_policy(obj: Obj | dict) -> str | None:
    """`preemptionPolicy` of a 1.37 PodGroup (None when unset, and always in 1.36)."""
    holder = _spec(obj) if "spec" in obj else obj
    value = holder.get("preemptionPolicy")
    return value if isinstance(value, str) else None


def parent_composite(pod_group: Obj) -> str | None:
    """`spec.parentCompositePodGroupName` (1.37), None for a root."""
    value = _spec(pod_group).get("parentCompositePodGroupName")
    return value if isinstance(value, str) and value else None


def scheduled_condition_type(obj: Obj) -> str:
    """The condition a scheduler sets when the group is scheduled, in `obj`'s release."""
    return SCHEDULED_CONDITION_1_36 if is_1_36_shape(obj) else SCHEDULED_CONDITION_1_37


# -- Delegation between workload controllers (Kubernetes 1.37, KEP-6089) ---------------------------
# A parent controller (JobSet, ...) that owns the Workload names, on a child it creates, the template
# the child's PodGroup is made from; and, when that group sits under a CompositePodGroup instance,
# the instance's name.
GROUP_TEMPLATE_NAME_ANNOTATION = f"{GROUP}/group-template-name"
PARENT_COMPOSITE_POD_GROUP_ANNOTATION = f"{GROUP}/parent-compositepodgroup"


def controller_ref(workload: Obj) -> tuple[str, str, str] | None:
    """(apiGroup, kind, name) of a 1.37 Workload's `spec.controllerRef`, if it names one."""
    ref = _spec(workload).get("controllerRef")
    if not isinstance(ref, dict) or not ref.get("kind") or not ref.get("name"):
        return None
    return ref.get("apiGroup") or "", ref["kind"], ref["name"]


# -- converting a Workload or PodGroup between the releases' shapes ---------------------------------

_CONVERTED_KINDS = ("Workload", "PodGroup")
_DISRUPTION_1_36 = {"Pod": DISRUPTION_SINGLE, "PodGroup": DISRUPTION_ALL}


def to_release(obj: Obj, release: str) -> Obj:
    """`obj` as a cluster of `release` takes it: a Workload or PodGroup written for the other
    release comes back converted (a new object; `obj` is not changed), anything else as it is.

    1.36 -> 1.37 (`v1alpha2` -> `v1beta1`): a PodGroup's `podGroupTemplateRef.workload.{workloadName,
    podGroupTemplateName}` becomes `workloadRef.{workloadName, templateName}`, and `disruptionMode`
    `"Pod"`/`"PodGroup"` (PodGroup spec, each of a Workload's `podGroupTemplates`) becomes
    `{single: {}}`/`{all: {}}`. 1.37 -> 1.36 (`v1beta1` or `v1alpha3` -> `v1alpha2`) is the reverse;
    fields 1.36 has no word for (`preemptionPolicy`, composite groups) are left for its API to
    refuse. A value neither release spells is kept as it is, for the API to reject in its words."""
    target = WORKLOAD_API_BY_RELEASE.get(release)
    if target is None:
        raise ValueError(f"unsupported Kubernetes release {release!r}")
    version = obj.get("apiVersion")
    if obj.get("kind") not in _CONVERTED_KINDS or version == target:
        return obj
    if target == V1BETA1 and version == V1ALPHA2:
        return _convert(obj, V1BETA1, _ref_to_1_37, _mode_to_1_37)
    if target == V1ALPHA2 and version in (V1BETA1, V1ALPHA3):
        return _convert(obj, V1ALPHA2, _ref_to_1_36, _mode_to_1_36)
    return obj


def _convert(obj: Obj, api_version: str, convert_ref: Any, convert_mode: Any) -> Obj:
    out = {**obj, "apiVersion": api_version}
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return out
    spec = convert_mode(dict(spec))
    if obj["kind"] == "PodGroup":
        spec = convert_ref(spec)
    elif isinstance(spec.get("podGroupTemplates"), list):
        spec["podGroupTemplates"] = [convert_mode(dict(t)) if isinstance(t, dict) else t
                                     for t in spec["podGroupTemplates"]]
    out["spec"] = spec
    return out


def _mode_to_1_37(holder: dict) -> dict:
    value = holder.get("disruptionMode")
    mode = _DISRUPTION_1_36.get(value) if isinstance(value, str) else None
    if mode is not None:
        holder["disruptionMode"] = {mode: {}}
    return holder


def _mode_to_1_36(holder: dict) -> dict:
    mode = holder.get("disruptionMode")
    if isinstance(mode, dict) and len(mode) == 1 and next(iter(mode)) in (DISRUPTION_SINGLE, DISRUPTION_ALL):
        holder["disruptionMode"] = disruption_mode_value(next(iter(mode)), V1ALPHA2)
    return holder


_REF_NAMES_1_37 = {"podGroupTemplateName": "templateName"}
_REF_NAMES_1_36 = {"templateName": "podGroupTemplateName"}


def _ref_to_1_37(spec: dict) -> dict:
    old = spec.get("podGroupTemplateRef")
    if not isinstance(old, dict) or set(old) != {"workload"} or not isinstance(old["workload"], dict):
        return spec
    ref = {_REF_NAMES_1_37.get(k, k): v for k, v in old["workload"].items()}
    return _replace_key(spec, "podGroupTemplateRef", "workloadRef", ref)


def _ref_to_1_36(spec: dict) -> dict:
    ref = spec.get("workloadRef")
    if not isinstance(ref, dict):
        return spec
    old = {"workload": {_REF_NAMES_1_36.get(k, k): v for k, v in ref.items()}}
    return _replace_key(spec, "workloadRef", "podGroupTemplateRef", old)


def _replace_key(d: dict, key: str, new_key: str, value: Any) -> dict:
    """`d` with `key` renamed to `new_key` and given `value`, in the same place among the keys."""
    return {(new_key if k == key else k): (value if k == key else v) for k, v in d.items()}
