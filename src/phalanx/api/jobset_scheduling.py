"""JobSet `spec.scheduling`: workload-aware scheduling declared on the JobSet (Kubernetes 1.37).

JobSet's alpha API (gate `JobSetWorkloadAwareSchedulingAPI`, off by default) lets a JobSet ask for
gang scheduling without hand-written Workloads and PodGroups. Exactly one of two models is used:

- top level: `schedulingPolicy`, `schedulingConstraints`, `disruptionMode` cover the whole JobSet
  with one PodGroup whose `gang.minCount` is the sum of `parallelism x replicas` (one PodGroup per
  replicatedJob instead when the JobSet starts in sequence: `dependsOn` or `InOrder`);
- per replicatedJob: `replicatedJobs[]` entries target replicatedJobs by name (several names share
  one PodGroup); an entry with `job:` gives every Job replica its own PodGroup.

This module holds what both the API and the controller need: the CRD schema rules, the mutating
webhook's defaults, the validating webhook's checks (in JobSet's words), the generated names
(`<prefix>-<first 10 hex of sha1(kind/namespace/name)>`) and `plan_items`, the list of
PodGroupTemplates a JobSet compiles into. The controller turns the plan into objects
(`phalanx.controllers.jobset_scheduling`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..machinery.featuregates import JOBSET_WAS_GATE, gate_on
from ..machinery.meta import dict_at as _dict, items_at as _items, list_at as _list
from .scheduling.fields import GROUP_TEMPLATE_NAME_ANNOTATION

GATE = JOBSET_WAS_GATE
GROUP_TEMPLATE_NAME_KEY = GROUP_TEMPLATE_NAME_ANNOTATION  # on child Jobs: their PodGroupTemplate
ROOT = "spec.scheduling"

MAX_SCHEDULING_ENTRIES = 50
MAX_TARGETS = 50
MAX_TARGET_NAME_LENGTH = 256
MAX_RESOURCE_CLAIMS = 4
MAX_TOPOLOGY_CONSTRAINTS = 1
MAX_NAME_LENGTH = 63
NAME_HASH_LENGTH = 10
MAX_INT32 = 2 ** 31 - 1

# What each generated name's hash is taken over (the source object's kind).
JOBSET_SOURCE = "JobSet"
REPLICATED_JOB_SOURCE = "ReplicatedJob"
GROUP_SOURCE = "ReplicatedJobGroup"
JOB_SOURCE = "Job"

GATE_DISABLED = f"cannot be set when {GATE} feature gate is disabled"
NO_REPLICATED_JOBS = "must contain at least one replicatedJob when scheduling is configured"
SCHEDULING_GROUP_SET = ("cannot be set directly when spec.scheduling is configured; the JobSet controller manages "
                        "this field")
BOTH_MODELS = ("cannot set schedulingPolicy, schedulingConstraints, or disruptionMode together with replicatedJobs; "
               "use exactly one of the top-level scheduling API or the per-ReplicatedJob (replicatedJobs) "
               "scheduling API")
NOT_TARGETED = ("must be targeted by a replicatedJobs entry when spec.scheduling does not set a top-level "
                "schedulingPolicy, schedulingConstraints, or disruptionMode")
SEQUENCED_MIN_COUNT = ("cannot be set when DependsOn or InOrder StartupPolicy is used; use per-ReplicatedJob gang "
                       "policies instead")
UNKNOWN_TARGET = "does not reference a valid replicatedJob name"
TARGETED_TWICE = "is targeted by more than one replicatedJobs entry"
JOB_ONE_TARGET = "must target exactly one replicatedJob when job is set"
JOB_WITH_LEAF_FIELDS = ("cannot be set together with schedulingPolicy, schedulingConstraints, disruptionMode, or "
                        "resourceClaims on the same replicatedJobs entry; job replaces the single shared PodGroup "
                        "those fields configure with one PodGroup per Job")
ALL_WITH_BASIC = "the disruptionMode `all` is not supported with the Basic scheduling policy"
IMMUTABLE = "field is immutable"

Obj = dict[str, Any]




def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def gate_enabled(gates: Any) -> bool:
    """Whether JobSet's gate is on (False in releases that do not have it)."""
    return gate_on(gates, GATE, False)


# -- the models ------------------------------------------------------------------------------------

def has_sequenced_startup(spec: Obj) -> bool:
    """`HasSequencedStartup`: an InOrder startup policy or any replicatedJob with `dependsOn`."""
    if _dict(spec, "startupPolicy").get("startupPolicyOrder") == "InOrder":
        return True
    return any(rj.get("dependsOn") for rj in _items(spec, "replicatedJobs"))


def uses_top_level_fields(scheduling: Obj) -> bool:
    return any(scheduling.get(f) is not None for f in ("schedulingPolicy", "schedulingConstraints", "disruptionMode"))


def use_top_level_gang(scheduling: Obj | None) -> bool:
    """`UseTopLevelGang`: no per-replicatedJob entries and a gang (or no) top-level policy."""
    if not isinstance(scheduling, dict) or _list(scheduling, "replicatedJobs"):
        return False
    policy = scheduling.get("schedulingPolicy")
    return policy is None or (isinstance(policy, dict) and policy.get("gang") is not None)


def single_top_level_pod_group(spec: Obj) -> bool:
    """Whether the whole JobSet is one PodGroup."""
    return use_top_level_gang(spec.get("scheduling")) and not has_sequenced_startup(spec)


def job_parallelism(rj: Obj) -> int:
    """Pods of one Job replica: `parallelism`, 1 when unset."""
    return _int(_dict(_dict(rj, "template"), "spec").get("parallelism"), 1)


def _saturate(n: int) -> int:
    return max(min(n, MAX_INT32), -MAX_INT32 - 1)


def replicated_job_pod_count(rj: Obj) -> int:
    """`parallelism x replicas`, saturated to int32."""
    return _saturate(job_parallelism(rj) * _int(rj.get("replicas"), 1))


def total_pod_count(rjobs: list[Obj]) -> int:
    return _saturate(sum(replicated_job_pod_count(rj) for rj in rjobs))


def _priority_class(rj: Obj) -> str:
    pod_spec = _dict(_dict(_dict(_dict(rj, "template"), "spec"), "template"), "spec")
    value = pod_spec.get("priorityClassName")
    return value if isinstance(value, str) else ""


def _explicit_min_count(policy: Any) -> int | None:
    gang = policy.get("gang") if isinstance(policy, dict) else None
    value = _int(gang.get("minCount")) if isinstance(gang, dict) else 0
    return value if value > 0 else None


# -- names ----------------------------------------------------------------------------------------

def identity_hash(kind: str, namespace: str, name: str) -> str:
    """The first 10 hex characters of SHA-1 over `<kind>/<namespace>/<name>`."""
    return hashlib.sha1(f"{kind}/{namespace}/{name}".encode()).hexdigest()[:NAME_HASH_LENGTH]


def hashed_name(prefix: str, digest: str) -> str:
    """`<prefix>-<hash>`, the prefix cut so the name fits a DNS label."""
    name = f"{prefix}-{digest}"
    if len(name) <= MAX_NAME_LENGTH:
        return name
    return f"{prefix[:MAX_NAME_LENGTH - 1 - len(digest)]}-{digest}"


def _js_name(js: Obj) -> tuple[str, str]:
    md = js.get("metadata") or {}
    return md.get("name", ""), md.get("namespace", "")


def workload_name(js: Obj) -> str:
    """The JobSet's one Workload: `<jobset>-<hash>`."""
    name, ns = _js_name(js)
    return hashed_name(name, identity_hash(JOBSET_SOURCE, ns, name))


def top_level_template_name(js: Obj) -> str:
    return workload_name(js)


def replicated_job_template_name(js: Obj, rjob: str) -> str:
    name, ns = _js_name(js)
    return hashed_name(rjob, identity_hash(REPLICATED_JOB_SOURCE, ns, f"{name}/{rjob}"))


def group_template_name(js: Obj, targets: list[str]) -> str:
    name, ns = _js_name(js)
    group = "-".join(targets)
    return hashed_name(group, identity_hash(GROUP_SOURCE, ns, f"{name}/{group}"))


def job_template_name(js: Obj, rjob: str, job_index: int) -> str:
    name, ns = _js_name(js)
    return hashed_name(f"{rjob}-{job_index}", identity_hash(JOB_SOURCE, ns, f"{name}/{rjob}/{job_index}"))


def pod_group_name(js: Obj, template: str) -> str:
    """The PodGroup made from `template`: the template's name for the single top-level group, else
    `<jobset>-<template>` (the JobSet name cut and a hash of both appended when that is too long)."""
    if single_top_level_pod_group(js.get("spec") or {}):
        return template
    name = _js_name(js)[0]
    combined = f"{name}-{template}"
    if len(combined) <= MAX_NAME_LENGTH:
        return combined
    digest = hashlib.sha1(f"{name}/{template}".encode()).hexdigest()[:NAME_HASH_LENGTH]
    return f"{name[:MAX_NAME_LENGTH - 1 - NAME_HASH_LENGTH]}-{digest}"


def template_name_for_job(js: Obj, rjob: str, job_index: int) -> str:
    """The PodGroupTemplate whose PodGroup the pods of Job `job_index` of `rjob` join."""
    spec = js.get("spec") or {}
    scheduling = _dict(spec, "scheduling")
    if single_top_level_pod_group(spec):
        return top_level_template_name(js)
    for entry in _items(scheduling, "replicatedJobs"):
        targets = [t for t in _list(entry, "targetReplicatedJobs") if isinstance(t, str)]
        if rjob in targets:
            if entry.get("job") is not None:
                return job_template_name(js, rjob, job_index)
            return group_template_name(js, targets)
    return replicated_job_template_name(js, rjob)


# -- the plan: one item per PodGroupTemplate ---------------------------------------------------------

@dataclass
class Block:
    """One building block as the user wrote it, with the path errors about it are reported at."""

    value: Any = None
    path: str = ""


@dataclass
class PlanItem:
    """One PodGroupTemplate to compile: the user's blocks, JobSet's defaults, and its members."""

    name: str
    policy: Block = field(default_factory=Block)
    constraints: Block = field(default_factory=Block)
    disruption: Block = field(default_factory=Block)
    claims: Block = field(default_factory=Block)
    default_min_count: int = 1
    priority_class_name: str = ""

    def template(self) -> Obj:
        """The v1beta1 PodGroupTemplate: the blocks over a gang default, `minCount` filled in."""
        policy = self.policy.value if isinstance(self.policy.value, dict) else {"gang": {}}
        if policy.get("gang") is not None:
            gang = {"minCount": _explicit_min_count(policy) or self.default_min_count}
            policy = {"gang": gang}
        else:
            policy = {"basic": {}}
        out: Obj = {"name": self.name, "schedulingPolicy": policy, "schedulingConstraints": None}  # no omitempty
        if isinstance(self.constraints.value, dict):
            out["schedulingConstraints"] = {"topology": [dict(t) for t in _items(self.constraints.value, "topology")]}
        if self.claims.value:
            out["resourceClaims"] = [dict(c) for c in self.claims.value if isinstance(c, dict)]
        if isinstance(self.disruption.value, dict):
            out["disruptionMode"] = {k: {} for k in ("single", "all") if self.disruption.value.get(k) is not None}
        if self.priority_class_name:
            out["priorityClassName"] = self.priority_class_name
        return out


class DuplicateTemplateName(ValueError):
    def __init__(self, name: str):
        super().__init__(f"generated scheduling group name {name!r} is not unique: rename the colliding "
                         f"ReplicatedJob or replicatedJobs targetReplicatedJobs grouping so generated "
                         f"PodGroupTemplate names don't collide")
        self.name = name


def _path(*parts: str) -> str:
    return ".".join((ROOT,) + parts)


def _global_blocks(scheduling: Obj, drop_min_count: bool) -> tuple[Block, Block, Block]:
    policy = scheduling.get("schedulingPolicy")
    if drop_min_count and isinstance(policy, dict) and isinstance(policy.get("gang"), dict):
        policy = {**policy, "gang": {k: v for k, v in policy["gang"].items() if k != "minCount"}}
    return (Block(policy, _path("schedulingPolicy")),
            Block(scheduling.get("schedulingConstraints"), _path("schedulingConstraints")),
            Block(scheduling.get("disruptionMode"), _path("disruptionMode")))


def _leaf_item(name: str, source: Obj, prefix: tuple[str, ...], fallback: tuple[Block, Block, Block]) -> PlanItem:
    """An item from a per-replicatedJob entry or its `job:`, falling back to the global blocks."""
    item = PlanItem(name)
    for attr, key, fb in (("policy", "schedulingPolicy", fallback[0]),
                          ("constraints", "schedulingConstraints", fallback[1]),
                          ("disruption", "disruptionMode", fallback[2])):
        value = source.get(key)
        setattr(item, attr, Block(value, _path(*prefix, key)) if value is not None else fb)
    if _list(source, "resourceClaims"):
        item.claims = Block(_list(source, "resourceClaims"), _path(*prefix, "resourceClaims"))
    return item


def _entry_items(js: Obj, entry: Obj, members: list[Obj], sequenced: bool) -> list[PlanItem]:
    scheduling = _dict(js.get("spec"), "scheduling")
    targets = [t for t in _list(entry, "targetReplicatedJobs") if isinstance(t, str)]
    if entry.get("job") is not None:
        rj, job = members[0], _dict(entry, "job")
        fallback = _global_blocks(scheduling, True)
        out = []
        for idx in range(_int(rj.get("replicas"), 1)):
            item = _leaf_item(job_template_name(js, rj["name"], idx), job, ("replicatedJobs", rj["name"], "job"),
                              fallback)
            item.default_min_count = job_parallelism(rj)
            item.priority_class_name = _priority_class(rj)
            out.append(item)
        return out
    group = "-".join(targets)
    item = _leaf_item(group_template_name(js, targets), entry, ("replicatedJobs", group),
                      _global_blocks(scheduling, sequenced))
    item.default_min_count = _saturate(sum(replicated_job_pod_count(rj) for rj in members))
    item.priority_class_name = _priority_class(members[0])
    return [item]


def _top_level_item(js: Obj) -> PlanItem:
    spec = js.get("spec") or {}
    scheduling = _dict(spec, "scheduling")
    policy, constraints, disruption = _global_blocks(scheduling, False)
    rjobs = _items(spec, "replicatedJobs")
    return PlanItem(top_level_template_name(js), policy, constraints, disruption,
                    default_min_count=_explicit_min_count(policy.value) or total_pod_count(rjobs),
                    priority_class_name=_priority_class(rjobs[0]) if rjobs else "")


def plan_items(js: Obj) -> list[PlanItem]:
    """`newBuildersForJobSet`: the PodGroupTemplates of `js`, in JobSet's order (entries of
    `scheduling.replicatedJobs`, then the replicatedJobs no entry targets). Raises
    DuplicateTemplateName when two generated names collide."""
    spec = js.get("spec") or {}
    if single_top_level_pod_group(spec):
        return [_top_level_item(js)]
    scheduling = _dict(spec, "scheduling")
    sequenced = has_sequenced_startup(spec)
    by_name = {rj.get("name"): rj for rj in _items(spec, "replicatedJobs")}
    items: list[PlanItem] = []
    grouped: set[str] = set()
    for entry in _items(scheduling, "replicatedJobs"):
        members = [by_name[t] for t in _list(entry, "targetReplicatedJobs") if isinstance(t, str) and t in by_name]
        if members:
            grouped.update(rj["name"] for rj in members)
            items += _entry_items(js, entry, members, sequenced)
    fallback = _global_blocks(scheduling, sequenced)
    for rj in by_name.values():
        if rj.get("name") in grouped or not isinstance(rj.get("name"), str):
            continue
        item = PlanItem(replicated_job_template_name(js, rj["name"]), *fallback,
                        default_min_count=replicated_job_pod_count(rj), priority_class_name=_priority_class(rj))
        items.append(item)
    seen: set[str] = set()
    for item in items:
        if item.name in seen:
            raise DuplicateTemplateName(item.name)
        seen.add(item.name)
    return items


# -- the mutating webhook -------------------------------------------------------------------------------

def _fill_min_count(policy: Any) -> None:
    """The webhook's Go round trip writes `gang.minCount: 0` when it was left out."""
    if isinstance(policy, dict) and isinstance(policy.get("gang"), dict):
        policy["gang"].setdefault("minCount", 0)


def default(spec: Obj, gates: Any) -> None:
    """Defaults of `spec.scheduling`: a gang top-level policy when nothing else is asked for (not
    under sequenced startup, not with per-replicatedJob entries), and `minCount: 0` in every gang."""
    scheduling = spec.get("scheduling")
    if not isinstance(scheduling, dict):
        return
    if gate_enabled(gates) and scheduling.get("schedulingPolicy") is None and \
            not has_sequenced_startup(spec) and not _list(scheduling, "replicatedJobs"):
        scheduling["schedulingPolicy"] = {"gang": {}}
    _fill_min_count(scheduling.get("schedulingPolicy"))
    for entry in _items(scheduling, "replicatedJobs"):
        _fill_min_count(entry.get("schedulingPolicy"))
        _fill_min_count(_dict(entry, "job").get("schedulingPolicy"))
