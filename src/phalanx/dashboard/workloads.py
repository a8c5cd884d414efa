"""The workloads the dashboard lists above the PodGroups, as rows (pure functions, no I/O).

- a JobSet: its replicatedJobs, the Jobs it owns, its conditions (`jobset_row`);
- a Job: its counts (`status.active/succeeded/failed`), parallelism and completions, the
  PodGroups its pods join, the nodes they run on and the claims they hold (`job_row`);
- a CompositePodGroup (scheduling.k8s.io/v1alpha3, Kubernetes 1.37): policy, minGroupCount,
  topology constraint and the domain its tree landed in, condition, its children (`composite_row`);
- a Workload: its controllerRef and templates (`workload_row`).

The relation the page draws is JobSet -> Jobs -> PodGroups -> pods, and CompositePodGroup ->
children (CompositePodGroups or PodGroups); `state.ClusterView` keeps the indexes that find them.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from phalanx.api.scheduling import fields

from .model import (chosen_domains, condition, conditions, is_live, name_of, namespace_of, natural_key, node_name_of,
                    pod_claims, pod_group_name, topology_keys)

Obj = dict[str, Any]

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOB_API = "batch/v1"
COMPOSITE_SCHEDULED = "CompositePodGroupInitiallyScheduled"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"


def controller_of(obj: Obj, kind: str) -> str | None:
    """The name of the owner of kind `kind` that controls `obj`, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("kind") == kind and ref.get("controller"):
            return str(ref.get("name", "")) or None
    return None


def _template_pod_group(job: Obj) -> str | None:
    return ((((job.get("spec") or {}).get("template") or {}).get("spec") or {}).get("schedulingGroup")
            or {}).get("podGroupName")


def job_row(job: Obj, pods: list[Obj]) -> Obj:
    """A Job with the PodGroups its pods join (the template's too, before any pod exists)."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    live = [p for p in pods if is_live(p)]
    ns = namespace_of(job)
    groups = {g for p in pods if (g := pod_group_name(p))}
    if (g := _template_pod_group(job)):
        groups.add(g)
    claims: set[str] = set()
    for p in live:
        claims |= pod_claims(p)
    return {
        "namespace": ns, "name": name_of(job),
        "jobSet": controller_of(job, "JobSet"),
        "replicatedJob": ((job.get("metadata") or {}).get("labels") or {}).get(REPLICATED_JOB_LABEL),
        "parallelism": spec.get("parallelism"), "completions": spec.get("completions"),
        "active": status.get("active", 0), "succeeded": status.get("succeeded", 0), "failed": status.get("failed", 0),
        "pods": len(live), "scheduled": sum(1 for p in live if node_name_of(p)),
        "podGroups": sorted((f"{ns}/{g}" for g in groups), key=natural_key),
        "nodes": sorted({n for p in live if (n := node_name_of(p))}),
        "claims": sorted(claims),
        "conditions": [c for c in conditions(job) if c["status"] == "True"],
    }


def jobset_row(jobset: Obj, job_keys: Iterable[str]) -> Obj:
    """A JobSet with its replicatedJobs and the Jobs it owns (keys `namespace/name`)."""
    spec, status = jobset.get("spec") or {}, jobset.get("status") or {}
    return {
        "namespace": namespace_of(jobset), "name": name_of(jobset),
        "replicatedJobs": [{"name": r.get("name", ""), "replicas": r.get("replicas", 1)}
                           for r in spec.get("replicatedJobs") or [] if isinstance(r, dict)],
        "jobs": sorted(job_keys, key=natural_key),
        "terminalState": status.get("terminalState"),
        "conditions": [c for c in conditions(jobset) if c["status"] == "True"],
    }


def composite_row(cpg: Obj, children: Iterable[tuple[str, str]], nodes: Iterable[str],
                  labels_of: Callable[[str], dict[str, str]]) -> Obj:
    """A CompositePodGroup: `children` are (kind, namespace/name); `nodes` those of every PodGroup
    below it, for the domain its tree landed in."""
    spec = cpg.get("spec") or {}
    gang = (spec.get("schedulingPolicy") or {}).get("gang")
    keys = topology_keys(cpg)
    nodes = sorted(set(nodes))
    return {
        "namespace": namespace_of(cpg), "name": name_of(cpg),
        "policy": "Gang" if isinstance(gang, dict) else "Basic",
        "minGroupCount": gang.get("minGroupCount") if isinstance(gang, dict) else None,
        "workload": fields.workload_name(cpg),
        "parent": fields.parent_composite(cpg),
        "condition": condition(cpg, COMPOSITE_SCHEDULED),
        "topology": keys,
        "domains": chosen_domains(keys, nodes, labels_of),
        "children": [{"kind": k, "key": key} for k, key in sorted(children, key=lambda c: (c[0], natural_key(c[1])))],
        "nodes": nodes,
    }


def workload_row(workload: Obj, pod_group_keys: Iterable[str]) -> Obj:
    """A Workload: the controller that owns it, its template names, the PodGroups made from it."""
    spec = workload.get("spec") or {}
    ref = fields.controller_ref(workload)
    templates = [t.get("name", "") for t in spec.get("podGroupTemplates") or [] if isinstance(t, dict)]
    templates += [t.get("name", "") for t in spec.get("compositePodGroupTemplates") or [] if isinstance(t, dict)]
    return {
        "namespace": namespace_of(workload), "name": name_of(workload),
        "controller": f"{ref[1]}/{ref[2]}" if ref else None,
        "templates": templates,
        "podGroups": sorted(pod_group_keys, key=natural_key),
    }
