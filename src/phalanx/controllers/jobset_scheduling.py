"""The JobSet controller's Workload and PodGroups for `spec.scheduling` (Kubernetes 1.37).

With JobSet's gate `JobSetWorkloadAwareSchedulingAPI` on, a JobSet that sets `spec.scheduling` gets,
before its Jobs:

- one `scheduling.k8s.io/v1beta1` Workload `<jobset>-<hash>`, controlled by the JobSet, with
  `spec.controllerRef` naming it and one PodGroupTemplate per item of
  `phalanx.api.jobset_scheduling.plan_items` (gang `minCount` filled in from the pods it counts);
- one PodGroup per template, controlled by the JobSet, with `spec.workloadRef` naming its template
  and the template's policy, constraints, disruption mode, claims and priority class;
- in each child Job: the annotation `scheduling.k8s.io/group-template-name` and, in the pod template,
  `schedulingGroup.podGroupName` (`scheduling_fields_for_job`).

`SchedulingObjects.reconcile` creates what is missing, patches `gang.minCount` in place (the one
mutable field) and deletes everything when another field drifted (the next pass recreates it);
`delete_all` runs while the JobSet is suspended or finished. Objects are read from informers.
"""

from __future__ import annotations

from typing import Any

from ..api import jobset_scheduling as sch
from ..api.jobset import GROUP
from ..client.informer import Informer
from ..client.interface import Client
from ..machinery.errors import StatusError
from ..machinery.meta import controller_of, deep_copy
from .podcontrol import controller_ref

Obj = dict[str, Any]


class NotControlledByJobSet(Exception):
    """A Workload or PodGroup with the name the JobSet wants belongs to someone else."""


def build_workload(js: Obj, api_version: str) -> Obj:
    """The Workload of `js`: its PodGroupTemplates, controlled by and naming the JobSet."""
    md = js["metadata"]
    return {"apiVersion": api_version, "kind": "Workload",
            "metadata": {"name": sch.workload_name(js), "namespace": md.get("namespace", ""),
                         "ownerReferences": [controller_ref(js)]},
            "spec": {"controllerRef": {"apiGroup": GROUP, "kind": "JobSet", "name": md["name"]},
                     "podGroupTemplates": [item.template() for item in sch.plan_items(js)]}}


def build_pod_group(js: Obj, workload: Obj, template: Obj, api_version: str) -> Obj:
    """The PodGroup made from `template` of `workload`, controlled by the JobSet."""
    spec: Obj = {"workloadRef": {"workloadName": workload["metadata"]["name"], "templateName": template["name"]}}
    for f in ("schedulingPolicy", "schedulingConstraints", "resourceClaims", "disruptionMode", "priorityClassName"):
        if template.get(f) is not None:
            spec[f] = deep_copy(template[f])
    return {"apiVersion": api_version, "kind": "PodGroup",
            "metadata": {"name": sch.pod_group_name(js, template["name"]),
                         "namespace": workload["metadata"]["namespace"], "ownerReferences": [controller_ref(js)]},
            "spec": spec}


def scheduling_fields_for_job(job: Obj, js: Obj, rjob: str, job_index: int) -> None:
    """Annotate a child Job with its PodGroupTemplate and point its pods at the PodGroup."""
    template = sch.template_name_for_job(js, rjob, job_index)
    job["metadata"].setdefault("annotations", {})[sch.GROUP_TEMPLATE_NAME_KEY] = template
    pod_spec = job["spec"].setdefault("template", {}).setdefault("spec", {})
    pod_spec["schedulingGroup"] = {"podGroupName": sch.pod_group_name(js, template)}


def _without_min_count(part: Obj) -> Obj:
    out = dict(part)
    policy = out.get("schedulingPolicy")
    if isinstance(policy, dict) and isinstance(policy.get("gang"), dict):
        out["schedulingPolicy"] = {**policy, "gang": {k: v for k, v in policy["gang"].items() if k != "minCount"}}
    return out


def same_but_min_count(existing: Obj, desired: Obj) -> bool:
    """Whether a stored template or PodGroup spec is the desired one, `gang.minCount` aside and
    fields the desired object leaves to the server (priority, default disruption mode) ignored."""
    stored = {k: v for k, v in _without_min_count(existing).items() if k in desired}
    return stored == _without_min_count(desired)


def _min_count(part: Obj) -> Any:
    return ((part.get("schedulingPolicy") or {}).get("gang") or {}).get("minCount")


def _set_min_count(part: Obj, value: Any) -> bool:
    gang = (part.get("schedulingPolicy") or {}).get("gang")
    if not isinstance(gang, dict) or value is None or gang.get("minCount") == value:
        return False
    gang["minCount"] = value
    return True


class SchedulingObjects:
    """Keeps a JobSet's Workload and PodGroups as its `spec.scheduling` asks."""

    def __init__(self, client: Client, workloads: Informer, pod_groups: Informer, api_version: str):
        self.client = client
        self.workloads = workloads
        self.pod_groups = pod_groups
        self.api_version = api_version

    @staticmethod
    def _controlled_by(obj: Obj, js: Obj) -> bool:
        ref = controller_of(obj)
        return ref is not None and ref.get("uid") == js["metadata"].get("uid")

    async def reconcile(self, js: Obj) -> bool:
        """Create or update the Workload, then the PodGroups. True when stale objects were
        deleted instead (the caller stops this pass; the deletions' events bring the next)."""
        desired = build_workload(js, self.api_version)
        if await self._reconcile_workload(js, desired):
            return True
        for template in desired["spec"]["podGroupTemplates"]:
            if await self._reconcile_pod_group(js, build_pod_group(js, desired, template, self.api_version)):
                return True
        return False

    async def _create(self, obj: Obj) -> None:
        try:
            await self.client.create(obj)
        except StatusError as e:
            if not (e.code == 409 and e.reason == "AlreadyExists"):  # a terminating one: retried on its deletion
                raise

    async def _reconcile_workload(self, js: Obj, desired: Obj) -> bool:
        md = desired["metadata"]
        existing = self.workloads.get(f"{md['namespace']}/{md['name']}")
        if existing is None:
            await self._create(desired)
            return False
        if not self._controlled_by(existing, js):
            raise NotControlledByJobSet(f"workload {md['namespace']}/{md['name']} already exists and is not "
                                        f"controlled by JobSet {md['namespace']}/{js['metadata']['name']}")
        have = (existing.get("spec") or {}).get("podGroupTemplates") or []
        want = desired["spec"]["podGroupTemplates"]
        if len(have) != len(want) or not all(h.get("name") == w["name"] and same_but_min_count(h, w)
                                             for h, w in zip(have, want)):
            await self.delete_all(js)
            return True
        patched = deep_copy(existing)
        changed = [_set_min_count(h, _min_count(w)) for h, w in zip(patched["spec"]["podGroupTemplates"], want)]
        if any(changed):
            await self.client.update(patched)
        return False

    async def _reconcile_pod_group(self, js: Obj, desired: Obj) -> bool:
        md = desired["metadata"]
        existing = self.pod_groups.get(f"{md['namespace']}/{md['name']}")
        if existing is None:
            await self._create(desired)
            return False
        if not self._controlled_by(existing, js):
            raise NotControlledByJobSet(f"podgroup {md['namespace']}/{md['name']} already exists and is not "
                                        f"controlled by JobSet {md['namespace']}/{js['metadata']['name']}")
        if not same_but_min_count(existing.get("spec") or {}, desired["spec"]):
            await self.delete_all(js)
            return True
        patched = deep_copy(existing)
        if _set_min_count(patched.setdefault("spec", {}), _min_count(desired["spec"])):
            await self.client.update(patched)
        return False

    async def _delete(self, obj: Obj) -> None:
        md = obj["metadata"]
        if md.get("deletionTimestamp"):
            return
        try:
            await self.client.delete(obj.get("apiVersion") or self.api_version, obj["kind"], md["namespace"],
                                     md["name"])
        except StatusError as e:
            if e.code != 404:
                raise

    async def delete_all(self, js: Obj) -> None:
        """Delete the JobSet's PodGroups and its Workload (only those it controls)."""
        ns = js["metadata"].get("namespace", "")
        for pg in self.pod_groups.list(ns):
            if self._controlled_by(pg, js):
                await self._delete({"kind": "PodGroup", **pg})
        workload = self.workloads.get(f"{ns}/{sch.workload_name(js)}")
        if workload is not None and self._controlled_by(workload, js):
            await self._delete({"kind": "Workload", **workload})
