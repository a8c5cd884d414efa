"""A `JobArrival` as the API objects a user would apply: a Job (or a JobSet) whose pods form one gang.

    builder = ObjectBuilder(release="1.36", namespace="default", topology_keys={"rack": "example.com/rack"},
                            tolerations=[{"key": "example.com/gpu", "operator": "Exists"}])
    builder.shared_objects(arrival)                # the PriorityClass and claim template it needs (once)
    job = await client.create(builder.job_object(arrival, "train-17"))
    for obj in builder.group_objects(arrival, "train-17", owner=job):   # its Workload and PodGroup
        await client.create(obj)

What a job becomes (written the way examples/dra-integration/ writes the seed tutorial, in the
Workload API of the cluster's release: `v1alpha2` for Kubernetes 1.36, `v1beta1` for 1.37 through
`api.scheduling.fields.to_release`):

- a Workload with one PodGroupTemplate `workers` and a PodGroup made from it, when the job is a gang
  (`pods` > 1), has a topology constraint or shares a claim: `schedulingPolicy.gang.minCount` (the
  arrival's `min_count`, else `pods`; a single pod gets the basic policy),
  `schedulingConstraints.topology[].key` (the node label of the named level), and with
  `shared_claim` the PodGroup-level claim in `resourceClaims`. The Workload's `controllerRef` names
  the Job (JobSet); both objects are owned by it once it exists, so deleting the job deletes them;
- GPUs through DRA: each pod asks for `gpus_per_pod` devices of the class `gpu.example.com` with a
  ResourceClaimTemplate `gpus-<n>` (one claim per pod) or, with `shared_claim`, one PodGroup-level
  claim from the same template that every pod of the gang uses (the tutorial's shared GPU: the pods
  share the group's devices, so a gang on node-local GPUs shares one node's);
- a Job (`batch/v1`) of `pods` completions, all in parallel, Indexed, restartPolicy Never, pods
  that run for `duration` (`phalanx.dev/run-for`; `sleep infinity` when None) and are recreated
  when disrupted (a `podFailurePolicy` that ignores `DisruptionTarget`: preemption and eviction do
  not count against `backoffLimit`), deleted when finished (`ttlSecondsAfterFinished: 0`); or a
  JobSet (`jobset.x-k8s.io/v1alpha2`) with one replicated Job of that shape;
- `priority` as a PriorityClass `sim-priority-<n>` named by the pods and the PodGroup.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from ..api.scheduling.fields import to_release
from ..nodes.podstatus import RUN_FOR
from .jobs import JobArrival

Obj = dict[str, Any]

GPU_CLASS = "gpu.example.com"
CLAIM_NAME = "gpus"
TEMPLATE_NAME = "workers"
JOB_LABEL = "simulate.phalanx.dev/job"  # on the pods and objects of a job: the job's name
PRIORITY_CLASS_PREFIX = "sim-priority-"
MAX_JOB_NAME = 52  # room for the pod names the Job controller derives (`<job>-<index>-<random>`)
FIELD_MANAGER = "phalanx-simulate"
KNOWN_LEVELS = ("region", "zone", "superpod", "block", "rack")  # widest first

_INVALID = re.compile(r"[^a-z0-9-]+")


def job_name(text: str) -> str:
    """A DNS-1123 label of at most MAX_JOB_NAME characters made from `text` (a trace's job id,
    a template's `train-17`)."""
    name = _INVALID.sub("-", text.lower()).strip("-")[:MAX_JOB_NAME].strip("-")
    return name or "job"


def level_key(level: str, label_keys: Iterable[str]) -> str | None:
    """The node label a topology level names: the label itself (`example.com/rack`), or the label
    whose name after the prefix is the level (`rack` -> `example.com/rack`; `topology.kubernetes.io/`
    wins when several match); None when no node has one."""
    keys = sorted(set(label_keys))
    if level in keys:
        return level
    matches = [k for k in keys if k.rpartition("/")[2] == level]
    preferred = [k for k in matches if k.startswith("topology.kubernetes.io/")]
    found = preferred or matches
    return found[0] if found else None


def topology_levels(label_keys: Iterable[str]) -> dict[str, str]:
    """The usual topology levels a cluster's node labels have (zone, block, rack, ...) -> label key,
    for placement spread and fragmentation."""
    keys = list(label_keys)
    out = {}
    for level in KNOWN_LEVELS:
        key = level_key(level, keys)
        if key is not None:
            out[level] = key
    return out


def claim_template_name(gpus: int) -> str:
    return f"gpus-{gpus}"


def priority_class_name(priority: int) -> str:
    return f"{PRIORITY_CLASS_PREFIX}{priority}".replace("--", "-minus-")


def is_grouped(a: JobArrival) -> bool:
    """Whether the job gets a Workload and a PodGroup."""
    return a.pods > 1 or a.topology is not None or (a.shared_claim and a.gpus_per_pod > 0)


class ObjectBuilder:
    """Builds the objects of jobs for one cluster: its release, namespace, topology level keys and
    the tolerations its worker nodes' taints ask for."""

    def __init__(self, *, release: str, namespace: str = "default", topology_keys: dict[str, str] | None = None,
                 tolerations: Iterable[Obj] = ()):
        self.release = release
        self.namespace = namespace
        self.topology_keys = dict(topology_keys or {})
        self.tolerations = [dict(t) for t in tolerations]

    # -- shared objects -----------------------------------------------------------------------------
    def shared_objects(self, a: JobArrival) -> list[Obj]:
        """The cluster-wide objects `a` needs (created once per cluster by the caller)."""
        out: list[Obj] = []
        if a.priority is not None:
            out.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                        "metadata": {"name": priority_class_name(a.priority)}, "value": a.priority,
                        "description": "a priority of phalanx simulate's jobs"})
        if a.gpus_per_pod > 0:
            out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                        "metadata": {"name": claim_template_name(a.gpus_per_pod), "namespace": self.namespace},
                        "spec": {"spec": {"devices": {"requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": GPU_CLASS, "allocationMode": "ExactCount",
                                                        "count": a.gpus_per_pod}}]}}}})
        return out

    # -- a job's objects ---------------------------------------------------------------------------
    def job_object(self, a: JobArrival, name: str) -> Obj:
        """The Job or JobSet."""
        return self.jobset(a, name) if a.kind == "JobSet" else self.job(a, name)

    def group_objects(self, a: JobArrival, name: str, owner: Obj) -> list[Obj]:
        """The Workload and PodGroup of a job that has a group (none otherwise), owned by `owner`,
        the created Job or JobSet."""
        if not is_grouped(a):
            return []
        ref = owner_reference(owner)
        out = [self.workload(a, name), self.pod_group(a, name)]
        for obj in out:
            obj["metadata"]["ownerReferences"] = [dict(ref)]
        return out

    def _meta(self, a: JobArrival, name: str) -> Obj:
        labels = {**a.labels, JOB_LABEL: name}
        return {"name": name, "namespace": self.namespace, "labels": labels}

    def _group_spec(self, a: JobArrival) -> Obj:
        """What the PodGroupTemplate and the PodGroup share: policy, constraint, claim, priority."""
        min_count = a.min_count or a.pods
        spec: Obj = {"schedulingPolicy": {"gang": {"minCount": min_count}} if a.pods > 1 else {"basic": {}}}
        if a.topology is not None:
            spec["schedulingConstraints"] = {"topology": [{"key": self.topology_keys.get(a.topology, a.topology)}]}
        if a.shared_claim and a.gpus_per_pod > 0:
            spec["resourceClaims"] = [{"name": CLAIM_NAME,
                                       "resourceClaimTemplateName": claim_template_name(a.gpus_per_pod)}]
        return spec

    def workload(self, a: JobArrival, name: str) -> Obj:
        api_group, kind = ("jobset.x-k8s.io", "JobSet") if a.kind == "JobSet" else ("batch", "Job")
        obj = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": self._meta(a, name),
               "spec": {"controllerRef": {"apiGroup": api_group, "kind": kind, "name": name},
                        "podGroupTemplates": [{"name": TEMPLATE_NAME, **self._group_spec(a)}]}}
        return to_release(obj, self.release)

    def pod_group(self, a: JobArrival, name: str) -> Obj:
        spec: Obj = {"podGroupTemplateRef": {"workload": {"workloadName": name, "podGroupTemplateName": TEMPLATE_NAME}},
                     **self._group_spec(a)}
        if a.priority is not None:
            spec["priorityClassName"] = priority_class_name(a.priority)
        obj = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": self._meta(a, name),
               "spec": spec}
        return to_release(obj, self.release)

    def pod_template(self, a: JobArrival, name: str) -> Obj:
        container: Obj = {"name": "worker", "image": "busybox",
                          "command": ["/bin/sh", "-c", "sleep infinity"],
                          "resources": {"requests": {"cpu": a.cpu_per_pod, "memory": a.memory_per_pod}}}
        spec: Obj = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "containers": [container]}
        if self.tolerations:
            spec["tolerations"] = [dict(t) for t in self.tolerations]
        if is_grouped(a):
            spec["schedulingGroup"] = {"podGroupName": name}
        if a.gpus_per_pod > 0:
            spec["resourceClaims"] = [{"name": CLAIM_NAME,
                                       "resourceClaimTemplateName": claim_template_name(a.gpus_per_pod)}]
            container["resources"]["claims"] = [{"name": CLAIM_NAME}]
        if a.priority is not None:
            spec["priorityClassName"] = priority_class_name(a.priority)
        metadata: Obj = {"labels": {JOB_LABEL: name}}
        if a.duration is not None:
            metadata["annotations"] = {RUN_FOR: f"{max(a.duration, 0.001):.3f}s"}
        return {"metadata": metadata, "spec": spec}

    def _job_spec(self, a: JobArrival, name: str) -> Obj:
        return {"completions": a.pods, "parallelism": a.pods, "completionMode": "Indexed", "backoffLimit": 6,
                "podFailurePolicy": {"rules": [{"action": "Ignore",
                                                "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                "template": self.pod_template(a, name)}

    def job(self, a: JobArrival, name: str) -> Obj:
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": self._meta(a, name),
                "spec": {**self._job_spec(a, name), "ttlSecondsAfterFinished": 0}}

    def jobset(self, a: JobArrival, name: str) -> Obj:
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": self._meta(a, name),
                "spec": {"ttlSecondsAfterFinished": 0,
                         "replicatedJobs": [{"name": TEMPLATE_NAME, "replicas": 1,
                                             "template": {"spec": self._job_spec(a, name)}}]}}


def owner_reference(owner: Obj) -> Obj:
    """A controller reference to `owner` (a created Job or JobSet) for its Workload and PodGroup."""
    md = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": md["name"], "uid": md["uid"],
            "controller": True, "blockOwnerDeletion": True}
