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
