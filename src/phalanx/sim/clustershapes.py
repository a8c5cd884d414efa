"""The shapes `phalanx bench --cluster SHAPE` runs on a real cluster, and what each one needs.

    chosen = build_shape(ShapeParams("jobset", pods=4096, gangs=512))
    chosen.manifests        # applied with `kubectl apply`, in order (a Deployment, a Job, a JobSet...)
    chosen.objects          # created through the Python client instead (bare pods, PodGroups)
    chosen.config           # a generated cluster config when the shape needs its own nodes, else None

Shapes (the end-to-end rows of issue 14):

- `deployment`: an N-replica Deployment to Available, then scaled to zero until its pods are gone;
- `indexed-job`: an Indexed Job of N completions (parallelism P) whose pods run for a while
  (`phalanx.dev/run-for`), to Complete;
- `jobset`: the tutorial's JobSet at scale, on the GPU topology config: G gangs of N/G pods, each
  gang a replicatedJob whose pods join their own PodGroup; every PodGroup has one PodGroup-level
  ResourceClaim (one GPU, shared by its pods) and a rack topology constraint; to all Running;
- `basic`: scheduler_perf's SchedulingBasic (5,000 nodes of 4 CPU; N bare pods of 100m / 500Mi),
  the pods created by 8 concurrent HTTP clients, to all Running;
- `gang`: scheduler_perf's GangScheduling (5,000 nodes; N/3 PodGroups of minCount 3), likewise;
- `fanout`: pods churn while W watchers follow every pod event over HTTP (see `clusterfanout`).

Each shape also names the scheduler_perf-style workload that schedules the same pods on the same
nodes with nothing else running (`alone`), so a run can report its pods/s beside the scheduler's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

SHAPES = ("deployment", "indexed-job", "jobset", "basic", "gang", "fanout")
NAMESPACE = "bench"
LABEL = "phalanx.dev/bench"
GPU_TAINT = "example.com/gpu"
CLAIM_TEMPLATE = "gpu-claim"
DEFAULT_PODS = {"deployment": 2000, "indexed-job": 10000, "jobset": 4096, "basic": 10000, "gang": 3000,
                "fanout": 1000}
DEFAULT_PARALLELISM = 5000
DEFAULT_GANGS = 512
GANG_SIZE = 3  # the gang shape's pods per PodGroup, as GangScheduling/5000Nodes_1000Gangs_3000Pods
GENERATED_NODES = 5000

# The scheduler_perf-style workload (benchmarks/workloads/<file>, Case/Workload) that schedules each
# shape's pods with nothing else running: the "scheduler alone" figure beside the end-to-end one.
# Only a run of the workload's size (pods running at once) is compared.
ALONE = {"deployment": ("end-to-end.yaml", "EndToEndDeployment/4160Nodes_2000Pods", 2000),
         "indexed-job": ("end-to-end.yaml", "EndToEndIndexedJob/4160Nodes_5000Pods", 5000),
         "jobset": ("end-to-end.yaml", "EndToEndJobSet/4096Nodes_512Gangs_4096Pods", 4096),
         "basic": ("scheduling-basic.yaml", "SchedulingBasic/5000Nodes_10000Pods", 10000),
         "gang": ("gang-scheduling.yaml", "GangScheduling/5000Nodes_1000Gangs_3000Pods", 3000)}


@dataclass
class ShapeParams:
    """What the user asked for (`phalanx bench --cluster` options); None takes the shape's default."""

    name: str
    pods: Optional[int] = None
    parallelism: Optional[int] = None
    gangs: Optional[int] = None
    run_for: str = "10s"
    topology_key: str = "example.com/rack"
    watchers: int = 200
    nodes: Optional[int] = None  # nodes of a generated cluster config (basic, gang, fanout)


@dataclass
class Shape:
    """What to apply or create, how many pods it makes and how they end."""

    name: str
    pods: int
    manifests: list[dict[str, Any]] = field(default_factory=list)  # kubectl apply, in order
    objects: list[dict[str, Any]] = field(default_factory=list)  # created through the Python client
    finishes: bool = False  # pods end Succeeded (a Job) rather than being deleted by a scale-down
    at_once: int = 0  # pods that run at the same time: the room the cluster needs
    tolerated: tuple[str, ...] = ()  # taint keys the pods tolerate
    config: Optional[dict[str, Any]] = None  # a generated cluster config (no --config given)
    scale_to_zero: bool = False  # a Deployment: scaled to zero once Available, timed until its pods are gone
    gangs: int = 0
    watchers: int = 0


def build_shape(params: ShapeParams) -> Shape:
    """The shape `params.name`, sized by `params`; ValueError for an unknown name or bad sizes."""
    builders = {"deployment": _deployment, "indexed-job": _indexed_job, "jobset": _jobset, "basic": _basic,
                "gang": _gang, "fanout": _fanout}
    builder = builders.get(params.name)
    if builder is None:
        raise ValueError(f"unknown shape {params.name!r}; known: {', '.join(SHAPES)}")
    return builder(params, params.pods or DEFAULT_PODS[params.name])


def _container(cpu: str = "10m", memory: str = "16Mi", **extra: Any) -> dict[str, Any]:
    return {"name": "c", "image": "busybox", "command": ["sleep", "3600"],
            "resources": {"requests": {"cpu": cpu, "memory": memory}}, **extra}


def _template(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {LABEL: name}},
            "spec": {"containers": [_container()], "terminationGracePeriodSeconds": 0, **spec}}


def _meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": NAMESPACE, **extra}


def _deployment(params: ShapeParams, pods: int) -> Shape:
    template = _template(params.name)
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta("bench"),
                "spec": {"replicas": pods, "selector": {"matchLabels": template["metadata"]["labels"]},
                         "template": template}}
    return Shape(params.name, pods, [manifest], at_once=pods, scale_to_zero=True)


def _indexed_job(params: ShapeParams, pods: int) -> Shape:
    parallelism = min(params.parallelism or DEFAULT_PARALLELISM, pods)
    template = _template(params.name, restartPolicy="Never")
    template["metadata"]["annotations"] = {"phalanx.dev/run-for": params.run_for}
    manifest = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("bench"),
                "spec": {"completionMode": "Indexed", "completions": pods, "parallelism": parallelism,
                         "backoffLimit": 0, "template": template}}
    return Shape(params.name, pods, [manifest], finishes=True, at_once=parallelism)


def _jobset(params: ShapeParams, pods: int) -> Shape:
    """The tutorial's JobSet (examples/dra-integration/) at scale: a Workload with one gang
    template, G PodGroups made from it (gang of N/G, the rack constraint, one PodGroup-level claim
    from a ResourceClaimTemplate), and a JobSet with one replicatedJob per gang whose pods join
    that gang's PodGroup and share its claim."""
    gangs = params.gangs or DEFAULT_GANGS
    if gangs < 1 or pods % gangs:
        raise ValueError(f"jobset: --pods {pods} is not a multiple of --gangs {gangs}")
    size = pods // gangs
    claims = [{"name": "gpu", "resourceClaimTemplateName": CLAIM_TEMPLATE}]
    constraints = {"topology": [{"key": params.topology_key}]}
    policy = {"gang": {"minCount": size}}
    claim_template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                      "metadata": _meta(CLAIM_TEMPLATE),
                      "spec": {"spec": {"devices": {"requests": [
                          {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}}
    workload = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": _meta("bench"),
                "spec": {"controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "bench"},
                         "podGroupTemplates": [{"name": "gang", "schedulingPolicy": policy,
                                                "schedulingConstraints": constraints, "resourceClaims": claims}]}}
    groups = [{"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": _meta(f"gang-{g}"),
               "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "bench", "podGroupTemplateName": "gang"}},
                        "schedulingPolicy": policy, "schedulingConstraints": constraints, "resourceClaims": claims}}
              for g in range(gangs)]
    toleration = {"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}
    replicated = []
    for g in range(gangs):
        template = _template(params.name, schedulingGroup={"podGroupName": f"gang-{g}"}, resourceClaims=claims,
                             tolerations=[toleration])
        template["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
        replicated.append({"name": f"gang-{g}", "replicas": 1,
                           "template": {"spec": {"completions": size, "parallelism": size, "backoffLimit": 0,
                                                 "template": template}}})
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": _meta("bench"),
              "spec": {"replicatedJobs": replicated}}
    return Shape(params.name, pods, [claim_template, workload, *groups, jobset], at_once=pods, tolerated=(GPU_TAINT,),
                 gangs=gangs)


def generated_config(nodes: int = GENERATED_NODES, name: str = "bench") -> dict[str, Any]:
    """scheduler_perf's nodes as a phalanx cluster config: `nodes` workers of 4 CPU / 32Gi / 110
    pods, no DRA drivers, SQLite."""
    return {"apiVersion": "phalanx.dev/v1alpha1", "kind": "Cluster", "name": name, "storage": "sqlite",
            "featureGates": {"GenericWorkload": True, "GangScheduling": True},
            "runtimeConfig": {"api/alpha": "true"},
            "nodePools": [{"name": "cp", "role": "control-plane"},
                          {"name": "node", "count": nodes, "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}}],
            "draDrivers": []}


def _bare_pod(index: int, shape: str, cpu: str, memory: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{index}", "namespace": NAMESPACE, "labels": {LABEL: shape}},
            "spec": {"containers": [_container(cpu, memory)], "terminationGracePeriodSeconds": 0, **spec}}


def _basic(params: ShapeParams, pods: int) -> Shape:
    objects = [_bare_pod(i, params.name, "100m", "500Mi") for i in range(pods)]
    return Shape(params.name, pods, objects=objects, at_once=pods, config=generated_config(params.nodes or GENERATED_NODES))


def _gang(params: ShapeParams, pods: int) -> Shape:
    size = GANG_SIZE
    if pods % size:
        raise ValueError(f"gang: --pods {pods} is not a multiple of the gang size {size}")
    groups = [{"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": _meta(f"gang-{g}"),
               "spec": {"schedulingPolicy": {"gang": {"minCount": size}}}} for g in range(pods // size)]
    objects = groups + [_bare_pod(i, params.name, "100m", "100Mi", schedulingGroup={"podGroupName": f"gang-{i // size}"})
                        for i in range(pods)]
    return Shape(params.name, pods, objects=objects, at_once=pods, config=generated_config(params.nodes or GENERATED_NODES),
                 gangs=len(groups))


def fanout_pod(name: str) -> dict[str, Any]:
    pod = _bare_pod(0, "fanout", "10m", "16Mi")
    pod["metadata"]["name"] = name
    return pod


def _fanout(params: ShapeParams, pods: int) -> Shape:
    return Shape(params.name, pods, at_once=min(pods, 100), config=generated_config(params.nodes or 20),
                 watchers=params.watchers)
