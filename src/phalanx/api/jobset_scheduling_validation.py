"""Validation of JobSet `spec.scheduling`, in the three layers JobSet has upstream.

- `schema_errors`: the CRD schema (`maxItems`, `minItems`, `maxLength`, required fields, the
  `listType=set` of `targetReplicatedJobs`), reported as 422 Invalid with the rest of the schema;
- `webhook_errors`: the validating webhook's `validateScheduling` on create (the gate, exactly one
  model, every replicatedJob targeted at most / exactly once, `job:` rules, priority classes, gang
  `minCount` caps, and the workload builder's checks of each building block), one message a line;
- `update_errors`: `spec.scheduling` is immutable unless the JobSet stays suspended and the
  controller has marked it Suspended.
"""

from __future__ import annotations

from typing import Any

from ..machinery import errors
from ..machinery.errors import FieldError
from ..machinery.names import dns1123_label_errors, dns1123_subdomain_errors, qualified_name_errors
from . import jobset_scheduling as sch
from .jobset_scheduling import Obj, PlanItem, _dict, _int, _items, _list


class _GoValue:
    """A value printed verbatim in a field error (a Go `%#v` rendering)."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text


# -- CRD schema -------------------------------------------------------------------------------------

def schema_errors(spec: Obj) -> list[FieldError]:
    scheduling = spec.get("scheduling")
    if not isinstance(scheduling, dict):
        return []
    errs: list[FieldError] = []
    entries = _list(scheduling, "replicatedJobs")
    if len(entries) > sch.MAX_SCHEDULING_ENTRIES:
        errs.append(errors.too_many(f"{sch.ROOT}.replicatedJobs", len(entries), sch.MAX_SCHEDULING_ENTRIES))
    errs += _blocks_schema_errors(scheduling, sch.ROOT)
    for i, entry in enumerate(_items(scheduling, "replicatedJobs")):
        p = f"{sch.ROOT}.replicatedJobs[{i}]"
        errs += _targets_schema_errors(entry, p)
        errs += _blocks_schema_errors(entry, p)
        if isinstance(entry.get("job"), dict):
            errs += _blocks_schema_errors(entry["job"], f"{p}.job")
    return errs


def _targets_schema_errors(entry: Obj, p: str) -> list[FieldError]:
    if entry.get("targetReplicatedJobs") is None:
        return [errors.required(f"{p}.targetReplicatedJobs", "")]
    targets = _list(entry, "targetReplicatedJobs")
    errs: list[FieldError] = []
    if not targets:
        errs.append(errors.invalid(f"{p}.targetReplicatedJobs", 0,
                                   f"{p}.targetReplicatedJobs in body should have at least 1 items"))
    if len(targets) > sch.MAX_TARGETS:
        errs.append(errors.too_many(f"{p}.targetReplicatedJobs", len(targets), sch.MAX_TARGETS))
    seen: set = set()
    for j, t in enumerate(targets):
        if isinstance(t, str) and len(t) > sch.MAX_TARGET_NAME_LENGTH:
            errs.append(errors.too_long(f"{p}.targetReplicatedJobs[{j}]", sch.MAX_TARGET_NAME_LENGTH))
        if t in seen:
            errs.append(errors.duplicate(f"{p}.targetReplicatedJobs[{j}]", t))
        seen.add(t)
    return errs


def _blocks_schema_errors(holder: Obj, p: str) -> list[FieldError]:
    errs: list[FieldError] = []
    claims = _list(holder, "resourceClaims")
    if len(claims) > sch.MAX_RESOURCE_CLAIMS:
        errs.append(errors.too_many(f"{p}.resourceClaims", len(claims), sch.MAX_RESOURCE_CLAIMS))
    for k, claim in enumerate(_items(holder, "resourceClaims")):
        if claim.get("name") is None:
            errs.append(errors.required(f"{p}.resourceClaims[{k}].name", ""))
    for k, topo in enumerate(_items(_dict(holder, "schedulingConstraints"), "topology")):
        if topo.get("key") is None:
            errs.append(errors.required(f"{p}.schedulingConstraints.topology[{k}].key", ""))
    return errs


# -- the workload builder's checks of each building block ---------------------------------------------

def _union_errors(path: str, value: Any, members: tuple[str, str]) -> list[FieldError]:
    """Declarative validation of a two-member union: exactly one set."""
    if not isinstance(value, dict):
        return []
    set_ = [m for m in members if value.get(m) is not None]
    names = ", ".join(f"`{m}`" for m in members)
    if not set_:
        return [errors.invalid(path, "", f"must specify one of: {names}")]
    if len(set_) > 1:
        return [errors.invalid(path, "", f"exactly one of {names} is required, but multiple fields are set")]
    return []


def _constraints_errors(path: str, value: Any) -> list[FieldError]:
    topology = _items(value, "topology") if isinstance(value, dict) else []
    errs: list[FieldError] = []
    if len(topology) > sch.MAX_TOPOLOGY_CONSTRAINTS:
        errs.append(errors.too_many(f"{path}.topology", len(topology), sch.MAX_TOPOLOGY_CONSTRAINTS))
    for k, t in enumerate(topology):
        key = t.get("key")
        if isinstance(key, str):
            errs += [errors.invalid(f"{path}.topology[{k}].key", key, m) for m in qualified_name_errors(key)]
    return errs


def _claims_errors(path: str, value: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    for k, claim in enumerate(value if isinstance(value, list) else []):
        if not isinstance(claim, dict):
            continue
        p = f"{path}[{k}]"
        name = claim.get("name")
        if isinstance(name, str):
            errs += [errors.invalid(f"{p}.name", name, m) for m in dns1123_label_errors(name)]
        errs += _union_errors(p, claim, ("resourceClaimName", "resourceClaimTemplateName"))
        for ref in ("resourceClaimName", "resourceClaimTemplateName"):
            if isinstance(claim.get(ref), str):
                errs += [errors.invalid(f"{p}.{ref}", claim[ref], m) for m in dns1123_subdomain_errors(claim[ref])]
    return errs


def item_errors(item: PlanItem) -> list[FieldError]:
    """What `Builder.Validate` reports for one template: the blocks' declarative rules, and no
    `all` disruption for a basic policy."""
    errs = _union_errors(item.policy.path, item.policy.value, ("basic", "gang"))
    errs += _constraints_errors(item.constraints.path, item.constraints.value)
    errs += _union_errors(item.disruption.path, item.disruption.value, ("single", "all"))
    errs += _claims_errors(item.claims.path, item.claims.value)
    policy = item.policy.value if isinstance(item.policy.value, dict) else {"gang": {}}
    disruption = item.disruption.value if isinstance(item.disruption.value, dict) else {}
    if policy.get("basic") is not None and disruption.get("all") is not None:
        errs.append(errors.invalid(item.disruption.path, "", sch.ALL_WITH_BASIC))
    return errs


def _builder_errors(js: Obj) -> list[FieldError]:
    try:
        items = sch.plan_items(js)
    except sch.DuplicateTemplateName as e:
        return [errors.invalid(f"{sch.ROOT}.replicatedJobs", e.name, str(e))]
    return [e for item in items for e in item_errors(item)]


# -- the validating webhook --------------------------------------------------------------------------------

def webhook_errors(js: Obj, gates: Any) -> list[str]:
    """`validateScheduling` on create: each entry one line of the webhook's denial."""
    spec = js.get("spec") or {}
    scheduling = spec.get("scheduling")
    if not sch.gate_enabled(gates):
        return [errors.forbidden(sch.ROOT, sch.GATE_DISABLED).message()] if scheduling is not None else []
    if not isinstance(scheduling, dict):
        return []
    rjobs = _items(spec, "replicatedJobs")
    if not rjobs:
        value = _GoValue("[]v1alpha2.ReplicatedJob(nil)" if not spec.get("replicatedJobs")
                         else "[]v1alpha2.ReplicatedJob{}")
        return [errors.invalid("spec.replicatedJobs", value, sch.NO_REPLICATED_JOBS).message()]
    errs = _scheduling_group_errors(rjobs)
    errs += _model_errors(scheduling, rjobs)
    errs += _builder_errors(js)
    errs += _sequenced_errors(spec, scheduling)
    errs += _top_level_priority_errors(spec, rjobs)
    errs += _entry_errors(scheduling, rjobs)
    errs += min_count_errors(spec)
    return [e.message() for e in errs]


def _scheduling_group_errors(rjobs: list[Obj]) -> list[FieldError]:
    out = []
    for i, rj in enumerate(rjobs):
        pod_spec = _dict(_dict(_dict(_dict(rj, "template"), "spec"), "template"), "spec")
        if pod_spec.get("schedulingGroup") is not None:
            out.append(errors.forbidden(f"spec.replicatedJobs[{i}].template.spec.template.spec.schedulingGroup",
                                        sch.SCHEDULING_GROUP_SET))
    return out


def _model_errors(scheduling: Obj, rjobs: list[Obj]) -> list[FieldError]:
    """Exactly one model; with the per-replicatedJob one, every replicatedJob targeted."""
    top, entries = sch.uses_top_level_fields(scheduling), _items(scheduling, "replicatedJobs")
    if top and entries:
        return [errors.forbidden(sch.ROOT, sch.BOTH_MODELS)]
    if top or not entries:
        return []
    targeted = {t for e in entries for t in _list(e, "targetReplicatedJobs")}
    return [errors.invalid(f"spec.replicatedJobs[{i}].name", rj.get("name", ""), sch.NOT_TARGETED)
            for i, rj in enumerate(rjobs) if rj.get("name") not in targeted]


def _sequenced_errors(spec: Obj, scheduling: Obj) -> list[FieldError]:
    if not sch.has_sequenced_startup(spec) or _list(scheduling, "replicatedJobs"):
        return []
    min_count = _int(_dict(_dict(scheduling, "schedulingPolicy"), "gang").get("minCount"))
    if min_count > 0:
        return [errors.invalid(f"{sch.ROOT}.schedulingPolicy.gang.minCount", min_count, sch.SEQUENCED_MIN_COUNT)]
    return []


def _top_level_priority_errors(spec: Obj, rjobs: list[Obj]) -> list[FieldError]:
    if not sch.single_top_level_pod_group(spec) or len(rjobs) < 2:
        return []
    expected = sch._priority_class(rjobs[0])
    return [errors.invalid(f"spec.replicatedJobs[{i}].template.spec.template.spec.priorityClassName",
                           sch._priority_class(rj), f'must match "{expected}" when top-level gang scheduling is used')
            for i, rj in enumerate(rjobs) if i > 0 and sch._priority_class(rj) != expected]


def _entry_errors(scheduling: Obj, rjobs: list[Obj]) -> list[FieldError]:
    """Targets that exist and are targeted once; `job:` rules; one priority class per shared group."""
    by_name = {rj.get("name"): rj for rj in rjobs}
    targeted: set = set()
    errs: list[FieldError] = []
    for i, entry in enumerate(_items(scheduling, "replicatedJobs")):
        p = f"{sch.ROOT}.replicatedJobs[{i}]"
        valid: list[str] = []
        for j, name in enumerate(_list(entry, "targetReplicatedJobs")):
            if name not in by_name:
                errs.append(errors.invalid(f"{p}.targetReplicatedJobs[{j}]", name, sch.UNKNOWN_TARGET))
            elif name in targeted:
                errs.append(errors.invalid(f"{p}.targetReplicatedJobs[{j}]", name, sch.TARGETED_TWICE))
            else:
                targeted.add(name)
                valid.append(name)
        if valid:
            errs += _job_entry_errors(entry, p) if entry.get("job") is not None else \
                _shared_priority_errors(by_name, valid, p)
    return errs


def _job_entry_errors(entry: Obj, p: str) -> list[FieldError]:
    errs: list[FieldError] = []
    targets = _list(entry, "targetReplicatedJobs")
    if len(targets) != 1:
        value = _GoValue("[]string{" + ", ".join(f'"{t}"' for t in targets) + "}")
        errs.append(errors.invalid(f"{p}.targetReplicatedJobs", value, sch.JOB_ONE_TARGET))
    if any(entry.get(f) is not None for f in ("schedulingPolicy", "schedulingConstraints", "disruptionMode")) or \
            _list(entry, "resourceClaims"):
        errs.append(errors.invalid(f"{p}.job", True, sch.JOB_WITH_LEAF_FIELDS))
    return errs


def _shared_priority_errors(by_name: dict, valid: list[str], p: str) -> list[FieldError]:
    expected = sch._priority_class(by_name[valid[0]])
    errs = []
    for j, name in enumerate(valid[1:]):
        actual = sch._priority_class(by_name[name])
        if actual != expected:
            errs.append(errors.invalid(f"{p}.targetReplicatedJobs[{j + 1}]", name,
                                       f'priorityClassName "{actual}" must match "{expected}" of the other '
                                       f"ReplicatedJobs sharing this PodGroup"))
    return errs


def min_count_errors(spec: Obj) -> list[FieldError]:
    """`validateSchedulingGangMinCounts`: an explicit `minCount` may not exceed the pods it counts."""
    scheduling = _dict(spec, "scheduling")
    by_name = {rj.get("name"): rj for rj in _items(spec, "replicatedJobs")}
    errs: list[FieldError] = []
    for i, entry in enumerate(_items(scheduling, "replicatedJobs")):
        p = f"{sch.ROOT}.replicatedJobs[{i}]"
        targets = _list(entry, "targetReplicatedJobs")
        if entry.get("job") is not None:
            min_count = _int(_dict(_dict(_dict(entry, "job"), "schedulingPolicy"), "gang").get("minCount"))
            rj = by_name.get(targets[0]) if len(targets) == 1 else None
            if rj is not None and min_count > sch.job_parallelism(rj):
                errs.append(errors.invalid(
                    f"{p}.job.schedulingPolicy.gang.minCount", min_count,
                    f'cannot exceed the per-Job pod count (parallelism) of replicatedJob "{targets[0]}" '
                    f"({sch.job_parallelism(rj)})"))
            continue
        gang = _dict(entry, "schedulingPolicy").get("gang")
        if not isinstance(gang, dict):
            continue
        most = sum(sch.replicated_job_pod_count(by_name[t]) for t in targets if t in by_name)
        if _int(gang.get("minCount")) > most:
            errs.append(errors.invalid(
                f"{p}.schedulingPolicy.gang.minCount", gang["minCount"],
                f"cannot exceed the number of pods across the targeted ReplicatedJobs [{' '.join(targets)}] ({most})"))
    gang = _dict(scheduling, "schedulingPolicy").get("gang")
    if sch.single_top_level_pod_group(spec) and isinstance(gang, dict):
        most = sch.total_pod_count(_items(spec, "replicatedJobs"))
        if _int(gang.get("minCount")) > most:
            errs.append(errors.invalid(f"{sch.ROOT}.schedulingPolicy.gang.minCount", gang["minCount"],
                                       f"cannot exceed the total number of JobSet pods ({most})"))
    return errs


# -- update --------------------------------------------------------------------------------------------

def _suspended_condition(js: Obj) -> bool:
    return any(c.get("type") == "Suspended" and c.get("status") == "True"
               for c in _items(js.get("status") or {}, "conditions"))


def update_errors(new: Obj, old: Obj) -> list[FieldError]:
    """`spec.scheduling` may change only while the JobSet stays suspended and is marked Suspended."""
    spec, ospec = new.get("spec") or {}, old.get("spec") or {}
    if spec.get("scheduling") == ospec.get("scheduling"):
        return []
    if ospec.get("suspend") is True and spec.get("suspend") is True and _suspended_condition(old):
        return []
    return [errors.invalid(sch.ROOT, "", sch.IMMUTABLE)]
