"""Workload and PodGroup for a Job on Kubernetes 1.37 (KEP-5547 with `spec.scheduling`, gate
`WorkloadWithJob`): the `scheduling.k8s.io/v1beta1` objects the Job controller makes, discovers and
resizes. 1.36's shape-inferred gang is `workload.py`; the controller picks one by release.

Modes (upstream's `job_scheduling_manager.go`):

- manageBoth: a Job without a controller owner. The controller compiles the Job's `spec.scheduling`
  (Basic when absent; a gang's `minCount` defaults to `parallelism`, at least 1, never written back)
  into a Workload `<job>-<hash>` with one template `<job>-pgt-0`, then creates the PodGroup
  `<workload>-<template>-<hash>`, owned by the Job (controller) and the Workload.
- managePodGroupOnly: a Job with a controller owner and the annotation
  `scheduling.k8s.io/group-template-name`: the owner's Workload (found by `spec.controllerRef`) is
  the parent's; only the PodGroup of the named template is created, owned by the Job alone, under
  the CompositePodGroup the annotation `scheduling.k8s.io/parent-compositepodgroup` names.
- manageNone: a Job whose template already sets `schedulingGroup`, or with an owner but no
  annotation (CronJob too: upstream counts any controller owner).

Objects are created only for a new Job (no pods, no startTime, nothing succeeded or failed, never
Suspended); afterwards they are only discovered, by reference (`spec.controllerRef`,
`spec.workloadRef`) and controller ownership. More than one match falls back to default scheduling.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

from ...api.scheduling.fields import (GROUP_TEMPLATE_NAME_ANNOTATION, PARENT_COMPOSITE_POD_GROUP_ANNOTATION,
                                      V1BETA1, controller_ref as workload_controller_ref, gang_min_count,
                                      template_ref)
from ...client.informer import Informer
from ...client.interface import Client
from ...client.retry import retry_on_conflict
from ...machinery.errors import StatusError
from ...machinery.meta import controller_of, deep_copy
from ..podcontrol import controller_ref
from .conditions import SUSPENDED, find_condition
from .workload import compute_pod_group_name, compute_workload_name

Obj = dict[str, Any]
EventFn = Callable[[Obj, str, str, str], Awaitable[None]]

SCHEDULING_API = V1BETA1
MANAGE_BOTH = "manageBoth"
MANAGE_POD_GROUP_ONLY = "managePodGroupOnly"
MANAGE_NONE = "manageNone"
INDEX_WORKLOAD_BY_JOB = "workloadByJobName"
INDEX_POD_GROUP_BY_WORKLOAD = "podGroupByWorkloadName"
COPIED_TEMPLATE_FIELDS = ("schedulingConstraints", "disruptionMode", "resourceClaims")

log = logging.getLogger(__name__)


# -- what the Job asks for ---------------------------------------------------------------------------
def management_mode(job: Obj) -> str:
    tspec = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
    if tspec.get("schedulingGroup") is not None:
        return MANAGE_NONE
    if controller_of(job) is not None:
        annotations = (job.get("metadata") or {}).get("annotations") or {}
        return MANAGE_POD_GROUP_ONLY if GROUP_TEMPLATE_NAME_ANNOTATION in annotations else MANAGE_NONE
    return MANAGE_BOTH


def is_new_job(job: Obj, has_pods: bool) -> bool:
    """Never started: no pods, no startTime, nothing succeeded or failed, never Suspended."""
    status = job.get("status") or {}
    if has_pods or status.get("startTime") or status.get("succeeded") or status.get("failed"):
        return False
    return find_condition(job, SUSPENDED) is None


def pod_group_template_name(job: Obj) -> str:
    return f"{job['metadata']['name']}-pgt-0"


def resolved_policy(job: Obj) -> dict:
    """`spec.scheduling.schedulingPolicy` with its defaults: Basic when absent, a gang's minCount
    `parallelism` (at least 1) when unset."""
    spec = job.get("spec") or {}
    policy = ((spec.get("scheduling") or {}).get("schedulingPolicy")) or {}
    gang = policy.get("gang")
    if not isinstance(gang, dict):
        return {"basic": {}}
    mc = gang.get("minCount")
    if not isinstance(mc, int):
        parallelism = spec.get("parallelism")
        mc = max(1, parallelism if isinstance(parallelism, int) else 1)
    return {"gang": {"minCount": mc}}


def workload_for_job(job: Obj) -> Obj:
    md = job["metadata"]
    template: Obj = {"name": pod_group_template_name(job), "schedulingPolicy": resolved_policy(job)}
    sched = job["spec"].get("scheduling") or {}
    for f in COPIED_TEMPLATE_FIELDS:
        if sched.get(f) is not None:
            template[f] = deep_copy(sched[f])
    return {"apiVersion": SCHEDULING_API, "kind": "Workload",
            "metadata": {"name": compute_workload_name(job), "namespace": md.get("namespace", ""),
                         "ownerReferences": [controller_ref(job)]},
            "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": md["name"]},
                     "podGroupTemplates": [template]}}


def pod_group_for_job(job: Obj, workload: Obj, template: Obj, *, link_workload: bool) -> Obj:
    """The runtime PodGroup of `template`: the Job its controller, the Workload a second owner for a
    root Job; policy, constraints, disruption mode and claims copied from the template."""
    wmd = workload["metadata"]
    owners: list[Obj] = [dict(controller_ref(job))]
    if link_workload:
        owners.append({"apiVersion": SCHEDULING_API, "kind": "Workload", "name": wmd["name"],
                       "uid": wmd.get("uid", "")})
    spec: Obj = {"workloadRef": {"workloadName": wmd["name"], "templateName": template.get("name", "")},
                 "schedulingPolicy": deep_copy(template.get("schedulingPolicy") or {})}
    for f in COPIED_TEMPLATE_FIELDS:
        if template.get(f) is not None:
            spec[f] = deep_copy(template[f])
    parent = ((job.get("metadata") or {}).get("annotations") or {}).get(PARENT_COMPOSITE_POD_GROUP_ANNOTATION)
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {"apiVersion": SCHEDULING_API, "kind": "PodGroup",
            "metadata": {"name": compute_pod_group_name(wmd["name"], template.get("name", "")),
                         "namespace": job["metadata"].get("namespace", ""), "ownerReferences": owners},
            "spec": spec}


# -- indexes -------------------------------------------------------------------------------------------
def workload_by_job_name(wl: Obj) -> list[str]:
    ref = workload_controller_ref(wl)
    if ref is None or ref[0] != "batch" or ref[1] != "Job":
        return []
    return [f"{(wl.get('metadata') or {}).get('namespace', '')}/{ref[2]}"]


def pod_group_by_workload_name(pg: Obj) -> list[str]:
    ref = template_ref(pg)
    return [f"{(pg.get('metadata') or {}).get('namespace', '')}/{ref[0]}"] if ref else []


def controlled_by(obj: Obj, job: Obj) -> bool:
    ref = controller_of(obj)
    return bool(ref and ref.get("uid") == job["metadata"].get("uid"))


def template_named(workload: Obj, name: str) -> Obj | None:
    for t in (workload.get("spec") or {}).get("podGroupTemplates") or []:
        if isinstance(t, dict) and t.get("name") == name:
            return t
    return None


class Ambiguous(Exception):
    """More than one object matched: the Job falls back to default scheduling."""


class WorkloadScheduling:
    """The 1.37 strategy: `pod_group(job, has_pods)` is the PodGroup name its pods are to carry."""

    def __init__(self, client: Client, workloads: Informer, pod_groups: Informer, event: EventFn):
        self.client = client
        self.workloads = workloads
        self.pod_groups = pod_groups
        self.event = event
        workloads.add_indexer(INDEX_WORKLOAD_BY_JOB, workload_by_job_name)
        pod_groups.add_indexer(INDEX_POD_GROUP_BY_WORKLOAD, pod_group_by_workload_name)

    async def pod_group(self, job: Obj, has_pods: bool) -> str | None:
        mode = management_mode(job)
        if mode == MANAGE_NONE:
            return None
        try:
            if mode == MANAGE_POD_GROUP_ONLY:
                pg = await self._delegated_pod_group(job, is_new_job(job, has_pods))
            else:
                pg = await self._root_pod_group(job, is_new_job(job, has_pods))
        except Ambiguous as e:
            log.warning("%s, falling back to default scheduling", e)
            return None
        return pg["metadata"]["name"] if pg else None

    # -- manageBoth ------------------------------------------------------------------------------
    async def _root_pod_group(self, job: Obj, new: bool) -> Obj | None:
        workload = await self._workload(job, new)
        if workload is None:
            return None
        templates = (workload.get("spec") or {}).get("podGroupTemplates") or []
        if len(templates) != 1:
            await self.event(job, "UnsupportedWorkloadStructure",
                             f"Workload {workload['metadata']['name']} has {len(templates)} PodGroupTemplates "
                             "(expected 1), falling back to default scheduling", "Warning")
            return None
        pg = await self._pod_group_of(job, workload, templates[0], new, link_workload=True)
        await self._sync_min_count(job, workload, pg)
        return pg

    async def _workload(self, job: Obj, new: bool) -> Obj | None:
        md = job["metadata"]
        found = [w for w in self.workloads.by_index(INDEX_WORKLOAD_BY_JOB, f"{md.get('namespace', '')}/{md['name']}")
                 if controlled_by(w, job)]
        if len(found) > 1:
            raise Ambiguous(f"found {len(found)} Workloads referencing Job {md.get('namespace', '')}/{md['name']}")
        if found:
            return found[0]
        if not new:
            return None
        obj = workload_for_job(job)
        try:
            created = await self._create_or_adopt(obj, job)
        except StatusError as e:
            await self.event(job, "FailedWorkloadCreate",
                             f"Failed to create Workload for Job {md['name']}: {e.message}", "Warning")
            raise
        await self.event(job, "WorkloadCreated", f"Created Workload {created['metadata']['name']} for Job "
                                                 f"{md['name']}", "Normal")
        return created

    # -- managePodGroupOnly ----------------------------------------------------------------------
    async def _delegated_pod_group(self, job: Obj, new: bool) -> Obj | None:
        workload = self._parent_workload(job)
        if workload is None:
            log.info("parent Workload of Job %s/%s not found yet", job["metadata"].get("namespace"),
                     job["metadata"]["name"])
            return None
        name = ((job.get("metadata") or {}).get("annotations") or {}).get(GROUP_TEMPLATE_NAME_ANNOTATION, "")
        template = template_named(workload, name)
        if template is None:
            log.info("Workload %s has no PodGroupTemplate %r for Job %s", workload["metadata"]["name"], name,
                     job["metadata"]["name"])
            return None
        return await self._pod_group_of(job, workload, template, new, link_workload=False)

    def _parent_workload(self, job: Obj) -> Obj | None:
        """The Workload whose controllerRef names the Job's controller (apiGroup, kind, name)."""
        owner = controller_of(job) or {}
        group = str(owner.get("apiVersion", "")).rpartition("/")[0]
        for wl in self.workloads.list(job["metadata"].get("namespace", "")):
            if workload_controller_ref(wl) == (group, owner.get("kind"), owner.get("name")):
                return wl
        return None

    # -- PodGroups -------------------------------------------------------------------------------
    async def _pod_group_of(self, job: Obj, workload: Obj, template: Obj, new: bool, *,
                            link_workload: bool) -> Obj | None:
        wmd = workload["metadata"]
        ns = wmd.get("namespace", "")
        found = [pg for pg in self.pod_groups.by_index(INDEX_POD_GROUP_BY_WORKLOAD, f"{ns}/{wmd['name']}")
                 if controlled_by(pg, job)]
        if len(found) > 1:
            raise Ambiguous(f"found {len(found)} PodGroups referencing Workload {ns}/{wmd['name']}")
        if found:
            return found[0]
        if not new:
            return None
        created = await self._create_or_adopt(pod_group_for_job(job, workload, template, link_workload=link_workload),
                                              job)
        await self.event(job, "PodGroupCreated", f"Created PodGroup {created['metadata']['name']} for Job "
                                                 f"{job['metadata']['name']}", "Normal")
        return created

    async def _create_or_adopt(self, obj: Obj, job: Obj) -> Obj:
        """Create `obj`; when it exists already (another sync made it), the stored one if the Job
        controls it."""
        try:
            return await self.client.create(obj)
        except StatusError as e:
            if e.code != 409 or e.reason != "AlreadyExists":
                raise
            md = obj["metadata"]
            stored = await self.client.get(SCHEDULING_API, obj["kind"], md["namespace"], md["name"])
            if not controlled_by(stored, job):
                raise
            return stored

    # -- elastic gangs ---------------------------------------------------------------------------
    async def _sync_min_count(self, job: Obj, workload: Obj, pod_group: Obj | None) -> None:
        """A changed gang minCount (or parallelism, when minCount is unset) reaches the Workload's
        template and the PodGroup; nothing else of theirs changes."""
        want = gang_min_count({"schedulingPolicy": resolved_policy(job)})
        if want is None or not controlled_by(workload, job):
            return
        templates = (workload.get("spec") or {}).get("podGroupTemplates") or []
        if len(templates) == 1 and gang_min_count(templates[0]) not in (None, want):
            await self._set_min_count(workload, want, lambda o: o["spec"]["podGroupTemplates"][0])
        if pod_group is not None and controlled_by(pod_group, job) and gang_min_count(pod_group) not in (None, want):
            await self._set_min_count(pod_group, want, lambda o: o["spec"])

    async def _set_min_count(self, obj: Obj, want: int, holder: Callable[[Obj], Obj]) -> None:
        md = obj["metadata"]

        async def attempt(conflicted: bool) -> None:
            cur = await self.client.get(SCHEDULING_API, obj["kind"], md.get("namespace", ""), md["name"])
            gang = (holder(cur).get("schedulingPolicy") or {}).get("gang")
            if not isinstance(gang, dict) or gang.get("minCount") == want:
                return
            gang["minCount"] = want
            await self.client.update(cur)

        await retry_on_conflict(attempt)
