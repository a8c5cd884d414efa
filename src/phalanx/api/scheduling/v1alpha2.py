"""scheduling.k8s.io: PriorityClass (v1), Workload and PodGroup (v1alpha2, Kubernetes 1.36).

Importing this module registers the three kinds with `registry.register`. What each strategy does
follows kube-apiserver 1.36:

- PriorityClass (cluster-scoped, short name `pc`): `preemptionPolicy` defaults to
  `PreemptLowerPriority`; names starting with `system-` are reserved for the two classes in
  `SYSTEM_PRIORITY_CLASSES` (which bootstrap creates); user values are capped at 1000000000;
  `value` and `preemptionPolicy` are immutable; the Priority admission plugin allows only one
  `globalDefault` class.
- Workload: 1..8 `podGroupTemplates` with unique DNS-label names, a `basic`/`gang` scheduling policy
  union, gated template fields dropped when their gate is off; the whole spec is immutable.
  Upstream validates these types declaratively only (DeclarativeEnforcement), so errors use the
  declarative validators' words (`must specify exactly one of: ...`, `field is immutable`,
  `must be greater than or equal to 1`).
- PodGroup (status subresource): `disruptionMode` defaults to `Pod` (WorkloadAwarePreemption),
  immutable spec fields, metav1 condition validation on `/status`; admission on CREATE runs the
  Priority, PodGroupProtection and PodGroupWorkloadExists plugins.

Both v1alpha2 types keep upstream's JSON shape quirks: a template's `schedulingConstraints` and a
PodGroup's `podGroupTemplateRef` are serialized as `null` when unset (their Go fields have no
`omitempty`), and a PodGroup always carries a `status` object.
"""

from __future__ import annotations

from typing import Any

from ...machinery import errors
from ...machinery.errors import FieldError
from ..registry import AGE_COLUMN, NAME_COLUMN, Column, Obj, ResourceType, Strategy, StrategyContext, \
    age_cell, register
from .common import (  # noqa: F401  (re-exported by the package)
    GROUP, MAX_POD_GROUP_RESOURCE_CLAIMS, MAX_TOPOLOGY_CONSTRAINTS, POD_GROUP_PROTECTION_FINALIZER,
    PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER, PRIORITY_CLASSES_KEY, PRIORITY_MAX, PRIORITY_MIN, WORKLOADS_KEY,
    admit_priority, default_priority_class, long_name_errors, path_segment_errors, short_name_errors,
    validate_conditions)
from .common import duplicates as _duplicates, enabled as _enabled, immutable as _immutable, list_at as _list, \
    priority_class_name_errors as _priority_class_name_errors, priority_errors as _priority_errors, \
    set_once as _set_once, union as _union, validate_controller_ref as _validate_controller_ref, \
    validate_resource_claims as _validate_resource_claims, \
    validate_resource_claim_statuses as _validate_pod_group_status, \
    validate_scheduling_constraints as _validate_scheduling_constraints, \
    claim_statuses_match_spec as _claim_statuses_match_spec

# -- PriorityClass constants (pkg/apis/scheduling) -------------------------------------------------
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"

# The classes kube-apiserver creates at start-up; validation accepts a `system-` name only if it
# matches one of these exactly (name, value, globalDefault).
SYSTEM_PRIORITY_CLASSES: list[Obj] = [
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": SYSTEM_NODE_CRITICAL},
        "value": SYSTEM_CRITICAL_PRIORITY + 1000,
        "description": "Used for system critical pods that must not be moved from their current node.",
        "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": SYSTEM_CLUSTER_CRITICAL},
        "value": SYSTEM_CRITICAL_PRIORITY,
        "description": "Used for system critical pods that must run in the cluster, but can be moved to "
                       "another node if necessary.",
        "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
    },
]

# -- Workload / PodGroup constants (scheduling/v1alpha2) -------------------------------------------
WORKLOAD_MAX_POD_GROUP_TEMPLATES = 8
DISRUPTION_MODES = ("Pod", "PodGroup")
DEFAULT_DISRUPTION_MODE = "Pod"

POD_GROUP_SCHEDULED = "PodGroupScheduled"
DISRUPTION_TARGET = "DisruptionTarget"

GATE_GENERIC_WORKLOAD = "GenericWorkload"
GATE_TAS = "TopologyAwareWorkloadScheduling"
GATE_WAP = "WorkloadAwarePreemption"
GATE_DRA_WORKLOAD_CLAIMS = "DRAWorkloadResourceClaims"


# ===================================================================================================
# PriorityClass
# ===================================================================================================

def _known_system_class_error(name: str, value: Any, global_default: bool) -> str | None:
    for spc in SYSTEM_PRIORITY_CLASSES:
        if spc["metadata"]["name"] == name:
            if spc["value"] != value:
                return f"value of {name} PriorityClass must be {spc['value']}"
            if bool(spc.get("globalDefault", False)) != global_default:
                return f"globalDefault of {name} PriorityClass must be {str(bool(spc.get('globalDefault'))).lower()}"
            return None
    return f"{name} is not a known system priority class"


def _validate_preemption_policy(policy: Any, path: str) -> list[FieldError]:
    if policy in (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER):
        return []
    if policy == "":
        return [errors.required(path, "")]
    return [errors.not_supported(path, policy, [PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER])]


class PriorityClassStrategy(Strategy):
    columns = [
        NAME_COLUMN,
        Column("Value", "integer", "", "value represents the integer value of this priority class. This is the "
               "actual priority that pods receive when they have the name of this class in their pod spec."),
        Column("Global-Default", "boolean", "", "globalDefault specifies whether this PriorityClass should be "
               "considered as the default priority for pods that do not have any priority class."),
        AGE_COLUMN,
        Column("PreemptionPolicy", "string", "", "preemptionPolicy is the Policy for preempting pods with lower "
               "priority."),
    ]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        if obj.get("preemptionPolicy") is None:
            obj["preemptionPolicy"] = PREEMPT_LOWER_PRIORITY

    def admit(self, operation: str, obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        # The Priority plugin's validating half: only one globalDefault class may exist.
        if operation not in ("CREATE", "UPDATE") or not obj.get("globalDefault"):
            return
        dpc = default_priority_class(ctx.list_objects(PRIORITY_CLASSES_KEY, None) or [])
        if dpc is None:
            return
        name = obj["metadata"].get("name", "")
        if operation == "CREATE" or dpc["metadata"]["name"] != name:
            raise errors.forbidden_error(
                "priorityclasses", GROUP, name,
                f"PriorityClass {dpc['metadata']['name']} is already marked as default. Only one default can exist")

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        name = obj.get("metadata", {}).get("name") or ""
        value = obj.get("value", 0)
        if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
            why = _known_system_class_error(name, value, bool(obj.get("globalDefault")))
            if why:
                errs.append(errors.forbidden(
                    "metadata.name",
                    f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use "
                    f"only. error: {why}"))
        elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
            errs.append(errors.forbidden(
                "value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
        if obj.get("preemptionPolicy") is not None:
            errs += _validate_preemption_policy(obj["preemptionPolicy"], "preemptionPolicy")
        return errs

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        errs: list[FieldError] = []
        if new.get("value", 0) != old.get("value", 0):
            errs.append(errors.forbidden("value", "may not be changed in an update."))
        if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
            errs.append(errors.immutable("preemptionPolicy", new.get("preemptionPolicy")))
        return errs

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        return [obj["metadata"]["name"], obj.get("value", 0), bool(obj.get("globalDefault", False)),
                age_cell(obj, ctx), obj.get("preemptionPolicy") or ""]


# ===================================================================================================
# Workload and PodGroup shared parts
# ===================================================================================================

def _validate_scheduling_policy(policy: Any, path: str) -> list[FieldError]:
    policy = policy if isinstance(policy, dict) else {}
    errs = _union(path, policy, ("basic", "gang"))
    gang = policy.get("gang")
    if isinstance(gang, dict):
        mc = gang.get("minCount") or 0
        p = f"{path}.gang.minCount"
        if mc == 0:
            errs.append(errors.required(p, ""))
        elif isinstance(mc, int) and mc < 1:
            errs.append(errors.invalid(p, mc, "must be greater than or equal to 1"))
    return errs


def _validate_wap_fields(spec: dict, path: str, ctx: StrategyContext, old: dict | None,
                         pod_group: bool) -> list[FieldError]:
    """disruptionMode / priorityClassName / priority under the gated declarative rules.

    With the gate off each field is Forbidden. With it on, a PodGroup's fields are immutable and
    its disruptionMode required (it is defaulted); a template's are only format-checked (the
    whole template list is immutable instead). Unchanged values are not re-validated (ratcheting).
    """
    errs: list[FieldError] = []
    wap = _enabled(ctx, GATE_WAP)
    updating = old is not None
    for fname in ("disruptionMode", "priorityClassName", "priority"):
        v = spec.get(fname)
        ov = (old or {}).get(fname)
        if fname == "priorityClassName":
            v, ov = v or "", ov or ""
        is_set = v not in (None, "")
        if updating and v == ov:
            continue
        p = f"{path}.{fname}"
        if not wap:
            if is_set:
                errs.append(errors.forbidden(p, ""))
            continue
        group_errs = _pod_group_wap_errors(fname, v, p, updating) if pod_group else []
        errs += group_errs
        if not group_errs and is_set:
            errs += _WAP_FORMAT_CHECKS[fname](v, p)
    return errs


def _pod_group_wap_errors(fname: str, v: Any, p: str, updating: bool) -> list[FieldError]:
    """A PodGroup's disruptionMode is required, and its fields immutable."""
    errs: list[FieldError] = []
    if fname == "disruptionMode" and v is None:
        errs.append(errors.required(p, ""))
    if updating:
        errs.append(_immutable(p))
    return errs


def _disruption_mode_errors(v: Any, p: str) -> list[FieldError]:
    return [] if v in DISRUPTION_MODES else [errors.not_supported(p, v, list(DISRUPTION_MODES))]


_WAP_FORMAT_CHECKS = {"disruptionMode": _disruption_mode_errors, "priorityClassName": _priority_class_name_errors,
                      "priority": _priority_errors}


def _drop_gated_fields(spec: dict, old: dict | None, ctx: StrategyContext, *, null_constraints: bool) -> None:
    """`dropDisabled*Fields`: clear fields whose gate is off unless the old object used them.

    `null_constraints`: a Workload template serializes an unset `schedulingConstraints` as null.
    """
    old = old or {}
    if not _enabled(ctx, GATE_TAS) and old.get("schedulingConstraints") is None:
        if null_constraints:
            spec["schedulingConstraints"] = None
        else:
            spec.pop("schedulingConstraints", None)
    if not _enabled(ctx, GATE_DRA_WORKLOAD_CLAIMS) and not old.get("resourceClaims"):
        spec.pop("resourceClaims", None)
    if not _enabled(ctx, GATE_WAP):
        if old.get("disruptionMode") is None:
            spec.pop("disruptionMode", None)
        if not old.get("priorityClassName"):
            spec.pop("priorityClassName", None)
        if old.get("priority") is None:
            spec.pop("priority", None)


# ===================================================================================================
# Workload
# ===================================================================================================

def _validate_pod_group_template(t: Any, path: str, ctx: StrategyContext) -> list[FieldError]:
    t = t if isinstance(t, dict) else {}
    errs: list[FieldError] = []
    name = t.get("name") or ""
    if not name:
        errs.append(errors.required(f"{path}.name", ""))
    else:
        errs += [errors.invalid(f"{path}.name", name, m) for m in short_name_errors(name)]
    errs += _validate_scheduling_policy(t.get("schedulingPolicy"), f"{path}.schedulingPolicy")
    sc = t.get("schedulingConstraints")
    if sc is not None:
        if not _enabled(ctx, GATE_TAS):
            errs.append(errors.forbidden(f"{path}.schedulingConstraints", ""))
        else:
            errs += _validate_scheduling_constraints(sc, f"{path}.schedulingConstraints")
    if t.get("resourceClaims"):
        errs += _validate_resource_claims(t["resourceClaims"], f"{path}.resourceClaims")
    errs += _validate_wap_fields(t, path, ctx, None, pod_group=False)
    return errs


class WorkloadStrategy(Strategy):
    columns = [NAME_COLUMN, AGE_COLUMN]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        for t in _list(spec, "podGroupTemplates"):
            if isinstance(t, dict):
                t.setdefault("schedulingPolicy", {})
                t.setdefault("schedulingConstraints", None)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj.pop("status", None)  # Workload has no status
        for t in _list(obj.get("spec"), "podGroupTemplates"):
            if isinstance(t, dict):
                _drop_gated_fields(t, None, ctx, null_constraints=True)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        new.pop("status", None)
        old_templates = _list(old.get("spec"), "podGroupTemplates")
        for i, t in enumerate(_list(new.get("spec"), "podGroupTemplates")):
            if isinstance(t, dict):
                _drop_gated_fields(t, old_templates[i] if i < len(old_templates) else None, ctx,
                                  null_constraints=True)

    def _validate_spec(self, spec: Any, old_spec: Any, ctx: StrategyContext) -> list[FieldError]:
        spec = spec if isinstance(spec, dict) else {}
        errs: list[FieldError] = []
        updating = old_spec is not None
        old_spec = old_spec if isinstance(old_spec, dict) else {}
        # controllerRef
        ref, old_ref = spec.get("controllerRef"), old_spec.get("controllerRef")
        if not (updating and ref == old_ref):
            if updating:
                errs.append(_immutable("spec.controllerRef"))
            elif isinstance(ref, dict):
                errs += _validate_controller_ref(ref, "spec.controllerRef")
        # podGroupTemplates
        templates, old_templates = _list(spec, "podGroupTemplates"), _list(old_spec, "podGroupTemplates")
        path = "spec.podGroupTemplates"
        if not (updating and templates == old_templates):
            early: list[FieldError] = []
            if updating:
                early.append(_immutable(path))
            if len(templates) > WORKLOAD_MAX_POD_GROUP_TEMPLATES:
                early.append(errors.too_many(path, len(templates), WORKLOAD_MAX_POD_GROUP_TEMPLATES))
            if not templates:
                early.append(errors.required(path, ""))
            if early:
                return errs + early
            errs += _duplicates(path, templates, "name")
            for i, t in enumerate(templates):
                errs += _validate_pod_group_template(t, f"{path}[{i}]", ctx)
        return errs

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return self._validate_spec(obj.get("spec"), None, ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        if new.get("spec") == old.get("spec"):
            return []
        return self._validate_spec(new.get("spec"), old.get("spec") or {}, ctx)


# ===================================================================================================
# PodGroup
# ===================================================================================================

def _validate_template_ref(ref: dict, path: str) -> list[FieldError]:
    errs = _union(path, ref, ("workload",))
    wl = ref.get("workload")
    if isinstance(wl, dict):
        p = f"{path}.workload"
        name = wl.get("workloadName") or ""
        if not name:
            errs.append(errors.required(f"{p}.workloadName", ""))
        else:
            errs += [errors.invalid(f"{p}.workloadName", name, m) for m in long_name_errors(name)]
        tname = wl.get("podGroupTemplateName") or ""
        if not tname:
            errs.append(errors.required(f"{p}.podGroupTemplateName", ""))
        else:
            errs += [errors.invalid(f"{p}.podGroupTemplateName", tname, m) for m in short_name_errors(tname)]
    return errs


def _validate_pod_group_spec(spec: Any, old_spec: Any, ctx: StrategyContext) -> list[FieldError]:
    spec = spec if isinstance(spec, dict) else {}
    updating = old_spec is not None
    old_spec = old_spec if isinstance(old_spec, dict) else {}
    if updating and spec == old_spec:
        return []
    ref, oref = spec.get("podGroupTemplateRef"), old_spec.get("podGroupTemplateRef")
    errs = _set_once(ref, oref, updating, "spec.podGroupTemplateRef",
                     lambda v, p: _validate_template_ref(v, p) if isinstance(v, dict) else [])
    errs += _set_once(spec.get("schedulingPolicy"), old_spec.get("schedulingPolicy"), updating,
                      "spec.schedulingPolicy", _validate_scheduling_policy)
    sc, osc = spec.get("schedulingConstraints"), old_spec.get("schedulingConstraints")
    if not _enabled(ctx, GATE_TAS):
        if sc is not None and not (updating and sc == osc):
            errs.append(errors.forbidden("spec.schedulingConstraints", ""))
    else:
        errs += _set_once(sc, osc, updating, "spec.schedulingConstraints",
                          lambda v, p: _validate_scheduling_constraints(v, p) if v is not None else [])
    errs += _set_once(spec.get("resourceClaims") or [], old_spec.get("resourceClaims") or [], updating,
                      "spec.resourceClaims", lambda v, p: _validate_resource_claims(v, p) if v else [])
    errs += _validate_wap_fields(spec, "spec", ctx, old_spec if updating else None, pod_group=True)
    return errs


def _scheduled_condition(obj: Obj) -> dict | None:
    for c in _list(obj.get("status"), "conditions"):
        if isinstance(c, dict) and c.get("type") == POD_GROUP_SCHEDULED:
            return c
    return None


class PodGroupStrategy(Strategy):
    status_is_subresource = True
    columns = [
        NAME_COLUMN,
        Column("Policy", "string", "", "The scheduling policy of the pod group: Basic or Gang."),
        Column("Workload", "string", "", "The Workload whose PodGroupTemplate this pod group was created from."),
        Column("Status", "string", "", "The reason of the PodGroupScheduled condition."),
        AGE_COLUMN,
    ]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("podGroupTemplateRef", None)
        spec.setdefault("schedulingPolicy", {})
        if _enabled(ctx, GATE_WAP) and spec.get("disruptionMode") is None:
            spec["disruptionMode"] = DEFAULT_DISRUPTION_MODE

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {}
        if isinstance(obj.get("spec"), dict):
            _drop_gated_fields(obj["spec"], None, ctx, null_constraints=False)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        new["status"] = old.get("status", {})
        if isinstance(new.get("spec"), dict):
            _drop_gated_fields(new["spec"], old.get("spec") if isinstance(old.get("spec"), dict) else None, ctx,
                              null_constraints=False)

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_status_update(new, old, ctx)
        new.setdefault("status", {})
        if not _enabled(ctx, GATE_DRA_WORKLOAD_CLAIMS) and not _list(old.get("spec"), "resourceClaims"):
            if isinstance(new["status"], dict):
                new["status"].pop("resourceClaimStatuses", None)

    def admit(self, operation: str, obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        if operation != "CREATE":
            return
        name = obj.get("metadata", {}).get("name", "")
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = {}
        # Priority (mutating): resolve priorityClassName -> priority.
        if _enabled(ctx, GATE_WAP):
            admit_priority("podgroups", name, spec, ctx)
        # PodGroupProtection (mutating): every new PodGroup gets the protection finalizer.
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if POD_GROUP_PROTECTION_FINALIZER not in finalizers:
            finalizers.append(POD_GROUP_PROTECTION_FINALIZER)
        # PodGroupWorkloadExists (validating): upstream runs it after validation, so an invalid
        # PodGroup is reported as such (422) rather than refused here.
        if self.validate(obj, ctx):
            return
        ref = spec.get("podGroupTemplateRef")
        wl = ref.get("workload") if isinstance(ref, dict) else None
        if not isinstance(wl, dict):
            return
        wname = wl.get("workloadName") or ""
        tname = wl.get("podGroupTemplateName") or ""
        workload = ctx.lookup(WORKLOADS_KEY, obj["metadata"].get("namespace", ""), wname)
        if workload is None:
            raise errors.forbidden_error("podgroups", GROUP, name, f'PodGroup rejected: Workload "{wname}" not found')
        if (workload.get("metadata") or {}).get("deletionTimestamp"):
            raise errors.forbidden_error("podgroups", GROUP, name,
                                         f'PodGroup rejected: Workload "{wname}" is being deleted')
        if not any(isinstance(t, dict) and t.get("name") == tname
                   for t in _list(workload.get("spec"), "podGroupTemplates")):
            raise errors.forbidden_error(
                "podgroups", GROUP, name,
                f'PodGroup rejected: PodGroupTemplate "{tname}" not found in Workload "{wname}"')

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return _validate_pod_group_spec(obj.get("spec"), None, ctx) + \
            _validate_pod_group_status(obj.get("status"), None)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        # Upstream defaults the stored object when it reads it back, so an object stored before
        # WorkloadAwarePreemption was enabled compares as if it had `disruptionMode: Pod`.
        old_spec = dict(old.get("spec") or {})
        if _enabled(ctx, GATE_WAP) and old_spec.get("disruptionMode") is None:
            old_spec["disruptionMode"] = DEFAULT_DISRUPTION_MODE
        return _validate_pod_group_spec(new.get("spec"), old_spec, ctx) + \
            _validate_pod_group_status(new.get("status"), old.get("status") or {})

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        status = new.get("status")
        if not isinstance(status, dict):
            status = {}
        errs = validate_conditions(status.get("conditions"), "status.conditions") + _claim_statuses_match_spec(new)
        return errs + _validate_pod_group_status(status, old.get("status") or {})

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = {}
        return [obj["metadata"]["name"], pod_group_policy(spec), pod_group_workload(spec),
                pod_group_status(obj), age_cell(obj, ctx)]


def pod_group_policy(spec: dict) -> str:
    sp = spec.get("schedulingPolicy")
    if not isinstance(sp, dict):
        sp = {}
    if sp.get("gang") is not None:
        return "Gang"
    if sp.get("basic") is not None:
        return "Basic"
    return ""


def pod_group_workload(spec: dict) -> str:
    ref = spec.get("podGroupTemplateRef")
    wl = ref.get("workload") if isinstance(ref, dict) else None
    if isinstance(wl, dict) and wl.get("workloadName"):
        return wl["workloadName"]
    return "<none>"


def pod_group_status(obj: Obj) -> str:
    c = _scheduled_condition(obj)
    return (c or {}).get("reason") or ""


PRIORITY_CLASSES = register(ResourceType(
    group=GROUP, version="v1", kind="PriorityClass", plural="priorityclasses", namespaced=False,
    strategy=PriorityClassStrategy(), short_names=["pc"]))

WORKLOADS = register(ResourceType(
    group=GROUP, version="v1alpha2", kind="Workload", plural="workloads", namespaced=True,
    strategy=WorkloadStrategy(), requires_gate=GATE_GENERIC_WORKLOAD, alpha=True, releases=("1.36",)))

POD_GROUPS = register(ResourceType(
    group=GROUP, version="v1alpha2", kind="PodGroup", plural="podgroups", namespaced=True,
    strategy=PodGroupStrategy(), subresources=["status"], requires_gate=GATE_GENERIC_WORKLOAD, alpha=True,
    releases=("1.36",)))
