"""scheduling.k8s.io Workload and PodGroup (`v1beta1`, also served at `v1alpha3`) and CompositePodGroup
(`v1alpha3`), as Kubernetes 1.37 serves them.

v1beta1 is the storage version of Workload and PodGroup; `v1alpha3` has the same shapes, so the two
convert by their apiVersion alone. What the strategies do follows kube-apiserver 1.37:

- Workload: exactly one of `podGroupTemplates` / `compositePodGroupTemplates` (each at most 8
  templates with unique DNS-label names). The hand-written tree rules are in `workloadtree`
  (names unique across the tree, at most 4 levels, one priority, no childless composite). On
  update, templates can't be added or removed (`item may not be added`, `may not be removed`), and
  every template field is immutable except the count inside `schedulingPolicy.gang`
  (`basic` and `gang` can't be swapped).
- PodGroup (status subresource): `disruptionMode` defaults to `{single: {}}`; every spec field is
  immutable except `schedulingPolicy.gang.minCount`; `parentCompositePodGroupName` needs a
  `workloadRef`. Admission on CREATE runs Priority (`priority`, `priorityClassName` and, with
  PodGroupPreemptionPolicy, `preemptionPolicy` from the class), PodGroupProtection (the
  `scheduling.k8s.io/podgroup-protection` finalizer); 1.37 removed PodGroupWorkloadExists, so the
  Workload, template or parent a PodGroup names need not exist.
- CompositePodGroup (status subresource): `workloadRef` required, the whole spec immutable,
  `disruptionMode` defaulted to `{single: {}}`, Priority admission as for PodGroups.

Fields behind a gate that is off (schedulingConstraints: TopologyAwareWorkloadScheduling;
resourceClaims: DRAWorkloadResourceClaims; preemptionPolicy: PodGroupPreemptionPolicy;
compositePodGroupTemplates and parentCompositePodGroupName: CompositePodGroup) are dropped on write
unless the stored object already uses them; one that gets through (a stored value changed while
the gate is off) is Forbidden, except resourceClaims, whose gate upstream only drops. Errors use the
declarative validators' words (`must specify exactly one of: ...`, `field is immutable`, `field
cannot be set once created`). JSON shape quirks kept: a Workload's
`podGroupTemplates` and a template's `schedulingConstraints` have no `omitempty` (null when unset),
and PodGroups and CompositePodGroups always carry a `status` object.
"""

from __future__ import annotations

from typing import Any, Callable

from ...machinery import errors
from ...machinery.errors import FieldError
from ..registry import AGE_COLUMN, NAME_COLUMN, Column, Obj, ResourceType, Strategy, StrategyContext, \
    age_cell, register
from . import workloadtree
from .common import GROUP, POD_GROUP_PROTECTION_FINALIZER, PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER, \
    admit_priority, claim_statuses_match_spec, dict_at, duplicates, enabled, immutable, \
    list_at, long_name_errors, priority_class_name_errors, priority_errors, required_name, set_once, \
    short_name_errors, union, validate_conditions, validate_controller_ref, validate_resource_claim_statuses, \
    validate_resource_claims, validate_scheduling_constraints

GATE_GENERIC_WORKLOAD = "GenericWorkload"
GATE_COMPOSITE_POD_GROUP = "CompositePodGroup"
GATE_TAS = "TopologyAwareWorkloadScheduling"
GATE_DRA_WORKLOAD_CLAIMS = "DRAWorkloadResourceClaims"
GATE_PREEMPTION_POLICY = "PodGroupPreemptionPolicy"
RELEASE = ("1.37",)

WORKLOAD_MAX_TEMPLATES = 8
POD_GROUP_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED = "CompositePodGroupInitiallyScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_POLICIES = (PREEMPT_NEVER, PREEMPT_LOWER_PRIORITY)
TEMPLATE_LISTS = ("podGroupTemplates", "compositePodGroupTemplates")


def _unset(v: Any) -> bool:
    return v is None or v == "" or v == []


def _non_empty(d: Any, key: str) -> bool:
    return bool(list_at(d, key))


# ===================================================================================================
# The fields a PodGroup, a CompositePodGroup and their templates share
# ===================================================================================================

def _min_count_errors(policy: dict, path: str, count: str) -> list[FieldError]:
    gang = policy.get("gang")
    if not isinstance(gang, dict):
        return []
    value = gang.get(count) or 0
    p = f"{path}.gang.{count}"
    if value == 0:
        return [errors.required(p, "")]
    if isinstance(value, int) and value < 1:
        return [errors.invalid(p, value, "must be greater than or equal to 1")]
    return []


def _policy_update_errors(policy: dict, old: dict, path: str) -> list[FieldError]:
    """`basic` is immutable and `gang` can be neither set nor cleared (`+k8s:update=NoSet,NoUnset`)."""
    errs: list[FieldError] = []
    if policy.get("basic") != old.get("basic"):
        errs.append(immutable(f"{path}.basic"))
    gang, old_gang = policy.get("gang"), old.get("gang")
    if old_gang is None and gang is not None:
        errs.append(errors.invalid(f"{path}.gang", None, "field cannot be set once created"))
    elif old_gang is not None and gang is None:
        errs.append(errors.invalid(f"{path}.gang", None, "field cannot be cleared once set"))
    return errs


def _validate_policy(policy: Any, old: Any, path: str, composite: bool, frozen: bool = False) -> list[FieldError]:
    """A scheduling policy union: `basic` and `gang` can't be swapped, the count inside `gang`
    (`minCount`, or `minGroupCount` for a composite) may change. `frozen`: the whole policy is
    immutable (a CompositePodGroup's)."""
    policy = policy if isinstance(policy, dict) else {}
    updating = old is not None
    old = old if isinstance(old, dict) else {}
    if updating and policy == old:
        return []
    if updating and frozen:
        return [immutable(path)]
    errs = union(path, policy, ("basic", "gang"))
    if updating:
        errs += _policy_update_errors(policy, old, path)
    return errs + _min_count_errors(policy, path, "minGroupCount" if composite else "minCount")


def _disruption_mode_errors(v: Any, p: str) -> list[FieldError]:
    return union(p, v if isinstance(v, dict) else {}, ("single", "all"))


def _preemption_policy_errors(v: Any, p: str) -> list[FieldError]:
    return [] if v in PREEMPTION_POLICIES else [errors.not_supported(p, v, list(PREEMPTION_POLICIES))]


def _resource_claims_errors(v: Any, p: str) -> list[FieldError]:
    return validate_resource_claims(v, p)


# (field, gate that must be on, format check) for the immutable optional fields of a group. A field
# forbidden while its gate is off names the gate; resourceClaims is only dropped (its gate has no
# declarative `ifDisabled` rule upstream).
_GROUP_FIELDS: list[tuple[str, str | None, Callable[[Any, str], list[FieldError]]]] = [
    ("schedulingConstraints", GATE_TAS, validate_scheduling_constraints),
    ("resourceClaims", None, _resource_claims_errors),
    ("disruptionMode", None, _disruption_mode_errors),
    ("priorityClassName", None, priority_class_name_errors),
    ("priority", None, priority_errors),
    ("preemptionPolicy", GATE_PREEMPTION_POLICY, _preemption_policy_errors),
]
_COMPOSITE_SKIPS = ("resourceClaims",)


def _optional_field(spec: dict, old: dict | None, fname: str, gate: str | None, path: str, ctx: StrategyContext,
                    check: Callable[[Any, str], list[FieldError]]) -> list[FieldError]:
    """An optional, immutable field: forbidden while its gate is off, format-checked on create,
    immutable on update; an unchanged value is not checked again (ratcheting)."""
    v = spec.get(fname)
    ov = old.get(fname) if old is not None else None
    if old is not None and (v == ov or (_unset(v) and _unset(ov))):
        return []
    p = f"{path}.{fname}"
    errs: list[FieldError] = []
    if gate is not None and not enabled(ctx, gate) and not _unset(v):
        errs.append(errors.forbidden(p, ""))
    if old is not None:
        return errs + [immutable(p)]
    if errs or _unset(v):
        return errs
    return check(v, p)


def _validate_group_fields(spec: dict, old: dict | None, path: str, ctx: StrategyContext,
                           composite: bool, frozen_policy: bool = False) -> list[FieldError]:
    """schedulingPolicy and the optional fields of a PodGroup(Template) or CompositePodGroup(Template)."""
    errs = _validate_policy(spec.get("schedulingPolicy"), None if old is None else old.get("schedulingPolicy"),
                            f"{path}.schedulingPolicy", composite, frozen_policy)
    for fname, gate, check in _GROUP_FIELDS:
        if composite and fname in _COMPOSITE_SKIPS:
            continue
        if composite and fname == "schedulingConstraints":
            gate = None  # the CompositePodGroup gate already needs TopologyAwareWorkloadScheduling
        errs += _optional_field(spec, old, fname, gate, path, ctx, check)
    return errs


def _drop_disabled_fields(spec: dict, old: dict | None, ctx: StrategyContext, *, null_constraints: bool,
                          composite: bool = False) -> None:
    """`dropDisabled*Fields`: clear gated fields whose gate is off unless the old object used them.
    `null_constraints`: a Workload's PodGroupTemplate serializes an unset `schedulingConstraints` as null."""
    old = old or {}
    if not composite and not enabled(ctx, GATE_TAS) and old.get("schedulingConstraints") is None:
        if null_constraints:
            spec["schedulingConstraints"] = None
        else:
            spec.pop("schedulingConstraints", None)
    if not composite and not enabled(ctx, GATE_DRA_WORKLOAD_CLAIMS) and not old.get("resourceClaims"):
        spec.pop("resourceClaims", None)
    if not enabled(ctx, GATE_PREEMPTION_POLICY) and old.get("preemptionPolicy") is None:
        spec.pop("preemptionPolicy", None)


def _validate_workload_ref(ref: Any, path: str) -> list[FieldError]:
    ref = ref if isinstance(ref, dict) else {}
    return required_name(ref.get("workloadName"), f"{path}.workloadName", long_name_errors) + \
        required_name(ref.get("templateName"), f"{path}.templateName", short_name_errors)


def _validate_parent(value: Any, path: str) -> list[FieldError]:
    return [] if _unset(value) else [errors.invalid(path, value, m) for m in long_name_errors(value)]


def _admit_group_priority(resource: str, obj: Obj, ctx: StrategyContext) -> None:
    """The Priority plugin for a PodGroup or CompositePodGroup: `priority` and `priorityClassName`
    from the class, and with PodGroupPreemptionPolicy its `preemptionPolicy` (the class's, else
    PreemptLowerPriority); a preset value that differs from the class's is refused."""
    name = obj.get("metadata", {}).get("name", "")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    pc = admit_priority(resource, name, spec, ctx)
    if not enabled(ctx, GATE_PREEMPTION_POLICY):
        return
    computed = (pc or {}).get("preemptionPolicy")
    preset = spec.get("preemptionPolicy")
    if computed is None:
        if preset is None:
            spec["preemptionPolicy"] = PREEMPT_LOWER_PRIORITY
        return
    if preset is not None and preset != computed:
        raise errors.forbidden_error(
            resource, GROUP, name,
            f"the string value of PreemptionPolicy ({preset}) must not be provided in pod group spec; priority "
            f"admission controller computed {computed} from the given PriorityClass name")
    spec["preemptionPolicy"] = computed


def _condition(obj: Obj, ctype: str) -> dict | None:
    for c in list_at(obj.get("status"), "conditions"):
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def policy_name(spec: Any) -> str:
    """`Gang` or `Basic`, the scheduling policy of a group or template (for Tables)."""
    sp = dict_at(spec, "schedulingPolicy")
    if sp.get("gang") is not None:
        return "Gang"
    if sp.get("basic") is not None:
        return "Basic"
    return ""


def workload_name(spec: Any) -> str:
    name = dict_at(spec, "workloadRef").get("workloadName")
    return name if isinstance(name, str) and name else "<none>"


# ===================================================================================================
# Workload
# ===================================================================================================

def _validate_pod_group_template(t: Any, old: dict | None, path: str, ctx: StrategyContext) -> list[FieldError]:
    t = t if isinstance(t, dict) else {}
    errs = [] if old is not None else required_name(t.get("name"), f"{path}.name", short_name_errors)
    return errs + _validate_group_fields(t, old, path, ctx, composite=False)


def _validate_composite_template(t: Any, old: dict | None, path: str, ctx: StrategyContext) -> list[FieldError]:
    t = t if isinstance(t, dict) else {}
    errs = [] if old is not None else required_name(t.get("name"), f"{path}.name", short_name_errors)
    errs += _validate_group_fields(t, old, path, ctx, composite=True)
    return errs + _validate_children(t, old, path, ctx)


def _validate_children(holder: dict, old: dict | None, path: str, ctx: StrategyContext) -> list[FieldError]:
    """Both template lists of a CompositePodGroupTemplate (or of a Workload spec)."""
    errs: list[FieldError] = []
    for key, check in (("podGroupTemplates", _validate_pod_group_template),
                       ("compositePodGroupTemplates", _validate_composite_template)):
        old_items = None if old is None else list_at(old, key)
        errs += _validate_template_list(list_at(holder, key), old_items, f"{path}.{key}", ctx, check)
    return errs


_ItemCheck = Callable[[Any, "dict | None", str, StrategyContext], list[FieldError]]


def _added_or_removed(items: list, old_items: list, path: str) -> list[FieldError]:
    """`+k8s:update=NoAddItem,NoRemoveItem` on a list keyed by name: each new item, and the list
    once if any old item is gone."""
    old_names = {t.get("name") for t in old_items if isinstance(t, dict)}
    names = {t.get("name") for t in items if isinstance(t, dict)}
    errs = [errors.forbidden(f"{path}[{i}]", "item may not be added") for i, t in enumerate(items)
            if not isinstance(t, dict) or t.get("name") not in old_names]
    if old_names - names:
        errs.append(errors.forbidden(path, "may not be removed"))
    return errs


def _validate_template_list(items: list, old_items: list | None, path: str, ctx: StrategyContext,
                            check: _ItemCheck) -> list[FieldError]:
    """At most 8 templates with unique names; on update none added or removed, and each one
    checked against the old template of its name (a new one as on create)."""
    updating = old_items is not None
    if updating and items == old_items:
        return []
    errs: list[FieldError] = []
    if len(items) > WORKLOAD_MAX_TEMPLATES:
        errs.append(errors.too_many(path, len(items), WORKLOAD_MAX_TEMPLATES))
    if updating:
        errs += _added_or_removed(items, old_items or [], path)
    if len(items) > WORKLOAD_MAX_TEMPLATES:
        return errs
    errs += duplicates(path, items, "name")
    old_by_name = {t.get("name"): t for t in old_items or [] if isinstance(t, dict)}
    for i, t in enumerate(items):
        name = t.get("name") if isinstance(t, dict) else None
        errs += check(t, old_by_name.get(name), f"{path}[{i}]", ctx)
    return errs


def _for_each_template(spec: dict, old: dict | None,
                       visit: Callable[[dict, "dict | None", bool], None]) -> None:
    """`visit(template, old template by name or None, is_composite)` over the whole tree."""
    for key in TEMPLATE_LISTS:
        old_by_name = {t.get("name"): t for t in list_at(old, key) if isinstance(t, dict)}
        for t in list_at(spec, key):
            if not isinstance(t, dict):
                continue
            ot = old_by_name.get(t.get("name"))
            visit(t, ot, key == "compositePodGroupTemplates")
            if key == "compositePodGroupTemplates":
                _for_each_template(t, ot, visit)


def _template_lists_union(spec: dict, cpg_on: bool) -> list[FieldError]:
    """Exactly one of the two lists; while CompositePodGroup is off, "must specify one of" names
    podGroupTemplates alone."""
    errs = union("spec", spec, TEMPLATE_LISTS, _non_empty)
    if errs and not any(_non_empty(spec, k) for k in TEMPLATE_LISTS) and not cpg_on:
        return union("spec", spec, TEMPLATE_LISTS[:1], _non_empty)
    return errs


class WorkloadStrategy(Strategy):
    columns = [NAME_COLUMN, AGE_COLUMN]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("podGroupTemplates", None)

        def visit(t: dict, old: dict | None, composite: bool) -> None:
            t.setdefault("schedulingPolicy", {})
            if not composite:
                t.setdefault("schedulingConstraints", None)
        _for_each_template(spec, None, visit)

    @staticmethod
    def _drop(spec: Any, old_spec: Any, ctx: StrategyContext) -> None:
        if not isinstance(spec, dict):
            return
        old_spec = old_spec if isinstance(old_spec, dict) else {}
        if not enabled(ctx, GATE_COMPOSITE_POD_GROUP) and not old_spec.get("compositePodGroupTemplates"):
            spec.pop("compositePodGroupTemplates", None)

        def visit(t: dict, old: dict | None, composite: bool) -> None:
            _drop_disabled_fields(t, old, ctx, null_constraints=True, composite=composite)
        _for_each_template(spec, old_spec, visit)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj.pop("status", None)  # Workload has no status
        self._drop(obj.get("spec"), None, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        new.pop("status", None)
        self._drop(new.get("spec"), old.get("spec"), ctx)

    @staticmethod
    def _validate_lists(spec: dict, old_spec: dict | None, ctx: StrategyContext) -> list[FieldError]:
        """The union of the two template lists, and each list (compositePodGroupTemplates only
        while CompositePodGroup is on, or as stored)."""
        old = old_spec or {}
        errs: list[FieldError] = []
        cpg_on = enabled(ctx, GATE_COMPOSITE_POD_GROUP)
        if old_spec is None or [_non_empty(spec, k) for k in TEMPLATE_LISTS] != \
                [_non_empty(old, k) for k in TEMPLATE_LISTS]:
            errs += _template_lists_union(spec, cpg_on)
        old_items = None if old_spec is None else list_at(old, "podGroupTemplates")
        errs += _validate_template_list(list_at(spec, "podGroupTemplates"), old_items, "spec.podGroupTemplates", ctx,
                                        _validate_pod_group_template)
        composite, old_composite = list_at(spec, "compositePodGroupTemplates"), list_at(old, "compositePodGroupTemplates")
        if old_spec is not None and composite == old_composite:
            return errs
        if composite and not cpg_on:
            return errs + [errors.forbidden("spec.compositePodGroupTemplates", "")]
        return errs + _validate_template_list(composite, None if old_spec is None else old_composite,
                                              "spec.compositePodGroupTemplates", ctx, _validate_composite_template)

    def _validate_spec(self, spec: Any, old_spec: dict | None, ctx: StrategyContext) -> list[FieldError]:
        """The hand-written tree rules (every time), then the declarative ones (changed fields only)."""
        spec = spec if isinstance(spec, dict) else {}
        updating = old_spec is not None
        errs = workloadtree.validate_tree(spec)
        errs += set_once(spec.get("controllerRef"), (old_spec or {}).get("controllerRef"), updating,
                         "spec.controllerRef",
                         lambda v, p: validate_controller_ref(v, p) if isinstance(v, dict) else [])
        return errs + self._validate_lists(spec, old_spec, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return self._validate_spec(obj.get("spec"), None, ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        if new.get("spec") == old.get("spec"):
            return []
        old_spec = old.get("spec")
        return self._validate_spec(new.get("spec"), old_spec if isinstance(old_spec, dict) else {}, ctx)


# ===================================================================================================
# PodGroup
# ===================================================================================================

def _validate_pod_group_spec(spec: Any, old_spec: dict | None, ctx: StrategyContext) -> list[FieldError]:
    spec = spec if isinstance(spec, dict) else {}
    updating = old_spec is not None
    old = old_spec or {}
    if updating and spec == old:
        return []
    ref = spec.get("workloadRef")
    errs = set_once(ref, old.get("workloadRef"), updating, "spec.workloadRef",
                    lambda v, p: _validate_workload_ref(v, p) if v is not None else [])
    errs += _optional_field(spec, old_spec, "parentCompositePodGroupName", GATE_COMPOSITE_POD_GROUP, "spec", ctx,
                            _validate_parent)
    errs += _dependent_required(spec, old_spec, "parentCompositePodGroupName", "workloadRef")
    return errs + _validate_group_fields(spec, old_spec, "spec", ctx, composite=False)


def _dependent_required(spec: dict, old: dict | None, trigger: str, dependent: str) -> list[FieldError]:
    """Declarative `+k8s:dependentRequired`: `dependent` must be set while `trigger` is; on update
    only re-checked when either one's set-ness changed (ratcheting)."""
    now = (not _unset(spec.get(trigger)), not _unset(spec.get(dependent)))
    if old is not None and now == (not _unset(old.get(trigger)), not _unset(old.get(dependent))):
        return []
    if now[0] and not now[1]:
        return [errors.required(f"spec.{dependent}", f"must be specified when `{trigger}` is set")]
    return []


class PodGroupStrategy(Strategy):
    status_is_subresource = True
    columns = [
        NAME_COLUMN,
        Column("Policy", "string", "", "The scheduling policy of the pod group: Basic or Gang."),
        Column("Workload", "string", "", "The Workload whose template this pod group was created from."),
        Column("Status", "string", "", "The reason of the PodGroupInitiallyScheduled condition."),
        AGE_COLUMN,
    ]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("schedulingPolicy", {})
        if spec.get("disruptionMode") is None:
            spec["disruptionMode"] = {"single": {}}

    @staticmethod
    def _drop(spec: Any, old_spec: Any, ctx: StrategyContext) -> None:
        if not isinstance(spec, dict):
            return
        old = old_spec if isinstance(old_spec, dict) else None
        _drop_disabled_fields(spec, old, ctx, null_constraints=False)
        if not enabled(ctx, GATE_COMPOSITE_POD_GROUP) and not (old or {}).get("parentCompositePodGroupName"):
            spec.pop("parentCompositePodGroupName", None)

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {}
        self._drop(obj.get("spec"), None, ctx)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        new["status"] = old.get("status", {})
        self._drop(new.get("spec"), old.get("spec"), ctx)

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_status_update(new, old, ctx)
        new.setdefault("status", {})
        if not enabled(ctx, GATE_DRA_WORKLOAD_CLAIMS) and not list_at(old.get("spec"), "resourceClaims"):
            if isinstance(new["status"], dict):
                new["status"].pop("resourceClaimStatuses", None)

    def admit(self, operation: str, obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        if operation != "CREATE":
            return
        _admit_group_priority("podgroups", obj, ctx)
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if POD_GROUP_PROTECTION_FINALIZER not in finalizers:
            finalizers.append(POD_GROUP_PROTECTION_FINALIZER)
        # No PodGroupWorkloadExists: Kubernetes 1.37 removed that admission plugin. A PodGroup may
        # name a Workload, template or parent that does not exist (yet); the scheduler copes.

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return _validate_pod_group_spec(obj.get("spec"), None, ctx) + \
            validate_resource_claim_statuses(obj.get("status"), None)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        old_spec = old.get("spec")
        return _validate_pod_group_spec(new.get("spec"), old_spec if isinstance(old_spec, dict) else {}, ctx) + \
            validate_resource_claim_statuses(new.get("status"), old.get("status") or {})

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        status = dict_at(new, "status")
        return validate_conditions(status.get("conditions"), "status.conditions") + \
            claim_statuses_match_spec(new) + validate_resource_claim_statuses(status, old.get("status") or {})

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = obj.get("spec")
        reason = (_condition(obj, POD_GROUP_INITIALLY_SCHEDULED) or {}).get("reason") or ""
        return [obj["metadata"]["name"], policy_name(spec), workload_name(spec), reason, age_cell(obj, ctx)]


# ===================================================================================================
# CompositePodGroup
# ===================================================================================================

def _validate_composite_spec(spec: Any, old_spec: dict | None, ctx: StrategyContext) -> list[FieldError]:
    spec = spec if isinstance(spec, dict) else {}
    updating = old_spec is not None
    old = old_spec or {}
    if updating and spec == old:
        return []
    ref = spec.get("workloadRef")
    if ref is None and not updating:
        errs = [errors.required("spec.workloadRef", "")]
    else:
        errs = set_once(ref, old.get("workloadRef"), updating, "spec.workloadRef", _validate_workload_ref)
    errs += _optional_field(spec, old_spec, "parentCompositePodGroupName", None, "spec", ctx, _validate_parent)
    return errs + _validate_group_fields(spec, old_spec, "spec", ctx, composite=True, frozen_policy=True)


class CompositePodGroupStrategy(Strategy):
    status_is_subresource = True
    columns = [
        NAME_COLUMN,
        Column("Policy", "string", "", "The scheduling policy of the composite pod group: Basic or Gang."),
        Column("Workload", "string", "", "The Workload whose template this composite pod group was created from."),
        AGE_COLUMN,
    ]

    def default(self, obj: Obj, ctx: StrategyContext) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("workloadRef", None)
        spec.setdefault("schedulingPolicy", {})
        if spec.get("disruptionMode") is None:
            spec["disruptionMode"] = {"single": {}}

    def prepare_for_create(self, obj: Obj, ctx: StrategyContext) -> None:
        obj["status"] = {}
        if isinstance(obj.get("spec"), dict):
            _drop_disabled_fields(obj["spec"], None, ctx, null_constraints=False, composite=True)

    def prepare_for_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        new["status"] = old.get("status", {})
        if isinstance(new.get("spec"), dict):
            _drop_disabled_fields(new["spec"], dict_at(old, "spec"), ctx, null_constraints=False, composite=True)

    def prepare_for_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> None:
        super().prepare_for_status_update(new, old, ctx)
        new.setdefault("status", {})

    def admit(self, operation: str, obj: Obj, old: Obj | None, ctx: StrategyContext) -> None:
        if operation == "CREATE":
            _admit_group_priority("compositepodgroups", obj, ctx)

    def validate(self, obj: Obj, ctx: StrategyContext) -> list[FieldError]:
        return _validate_composite_spec(obj.get("spec"), None, ctx)

    def validate_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        old_spec = old.get("spec")
        return _validate_composite_spec(new.get("spec"), old_spec if isinstance(old_spec, dict) else {}, ctx)

    def validate_status_update(self, new: Obj, old: Obj, ctx: StrategyContext) -> list[FieldError]:
        return validate_conditions(dict_at(new, "status").get("conditions"), "status.conditions")

    def row(self, obj: Obj, ctx: StrategyContext) -> list[Any]:
        spec = obj.get("spec")
        return [obj["metadata"]["name"], policy_name(spec), workload_name(spec), age_cell(obj, ctx)]


WORKLOADS = register(ResourceType(
    group=GROUP, version="v1beta1", kind="Workload", plural="workloads", namespaced=True,
    strategy=WorkloadStrategy(), requires_gate=GATE_GENERIC_WORKLOAD, beta=True, releases=RELEASE))
POD_GROUPS = register(ResourceType(
    group=GROUP, version="v1beta1", kind="PodGroup", plural="podgroups", namespaced=True,
    strategy=PodGroupStrategy(), subresources=["status"], requires_gate=GATE_GENERIC_WORKLOAD, beta=True,
    releases=RELEASE))
WORKLOADS_V1ALPHA3 = register(ResourceType(
    group=GROUP, version="v1alpha3", kind="Workload", plural="workloads", namespaced=True,
    strategy=WORKLOADS.strategy, requires_gate=GATE_GENERIC_WORKLOAD, alpha=True, releases=RELEASE,
    storage_version=False))
POD_GROUPS_V1ALPHA3 = register(ResourceType(
    group=GROUP, version="v1alpha3", kind="PodGroup", plural="podgroups", namespaced=True,
    strategy=POD_GROUPS.strategy, subresources=["status"], requires_gate=GATE_GENERIC_WORKLOAD, alpha=True,
    releases=RELEASE, storage_version=False))
COMPOSITE_POD_GROUPS = register(ResourceType(
    group=GROUP, version="v1alpha3", kind="CompositePodGroup", plural="compositepodgroups", namespaced=True,
    strategy=CompositePodGroupStrategy(), subresources=["status"], requires_gate=GATE_COMPOSITE_POD_GROUP,
    alpha=True, releases=RELEASE))
