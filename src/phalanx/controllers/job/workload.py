"""Workload and PodGroup for a Job (KEP-5547, the `WorkloadWithJob` gate): which Jobs get a gang,
the names upstream computes for the objects, and the objects themselves."""

from __future__ import annotations

from typing import Any

from ...machinery.meta import deep_copy
from ..podcontrol import controller_ref, fnv32a, safe_encode_string
from .util import is_indexed

Obj = dict[str, Any]

SCHEDULING_API = "scheduling.k8s.io/v1alpha2"
WORKLOAD_WITH_JOB = "WorkloadWithJob"
DNS1123_SUBDOMAIN_MAX_LENGTH = 253


def gang_scheduling_eligible(job: Obj) -> bool:
    spec = job.get("spec") or {}
    parallelism = spec.get("parallelism")
    if not isinstance(parallelism, int) or parallelism <= 1 or not is_indexed(job):
        return False
    if spec.get("completions") != parallelism:
        return False
    return ((spec.get("template") or {}).get("spec") or {}).get("schedulingGroup") is None


def compute_workload_name(job: Obj) -> str:
    """`<job>-<hash>`: FNV-1a of the Job's UID as hashutil.DeepHashObject prints it, safe-encoded."""
    uid = job["metadata"].get("uid", "")
    h = safe_encode_string(str(fnv32a(f'(types.UID)"{uid}"'.encode())))
    prefix = job["metadata"]["name"][:DNS1123_SUBDOMAIN_MAX_LENGTH - len(h) - 1]
    return f"{prefix}-{h}"


def compute_pod_group_name(workload_name: str, template_name: str) -> str:
    """`<workload>-<template>-<hash>`, each part truncated to fit 253 characters."""
    h = safe_encode_string(str(fnv32a(workload_name.encode() + template_name.encode())))
    room = DNS1123_SUBDOMAIN_MAX_LENGTH - len(h) - 2
    wl, tpl = workload_name, template_name
    if len(wl) + len(tpl) > room:
        half = room // 2
        if len(wl) <= half:
            tpl = tpl[:room - len(wl)]
        elif len(tpl) <= half:
            wl = wl[:room - len(tpl)]
        else:
            wl, tpl = wl[:room - half], tpl[:half]
    return f"{wl}-{tpl}-{h}"


def workload_for_job(job: Obj, name: str) -> Obj:
    md = job["metadata"]
    return {"apiVersion": SCHEDULING_API, "kind": "Workload",
            "metadata": {"name": name, "namespace": md.get("namespace", ""), "ownerReferences": [controller_ref(job)]},
            "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": md["name"]},
                     "podGroupTemplates": [{"name": f"{md['name']}-worker-0",
                                            "schedulingPolicy": {"gang": {"minCount": job["spec"]["parallelism"]}}}]}}


def pod_group_for_workload(job: Obj, workload: Obj, name: str) -> Obj:
    template = workload["spec"]["podGroupTemplates"][0]
    wmd = workload["metadata"]
    return {"apiVersion": SCHEDULING_API, "kind": "PodGroup",
            "metadata": {"name": name, "namespace": job["metadata"].get("namespace", ""),
                         "ownerReferences": [controller_ref(job),
                                             {"apiVersion": SCHEDULING_API, "kind": "Workload",
                                              "name": wmd["name"], "uid": wmd.get("uid", "")}]},
            "spec": {"podGroupTemplateRef": {"workload": {"workloadName": wmd["name"],
                                                          "podGroupTemplateName": template.get("name", "")}},
                     "schedulingPolicy": deep_copy(template.get("schedulingPolicy") or {})}}

