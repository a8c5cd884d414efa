"""JobSet `spec.scheduling` on a Kubernetes 1.37 phalanx cluster, driven by kubectl 1.37.

The cluster turns on JobSet's gate `JobSetWorkloadAwareSchedulingAPI` (GenericWorkload is on in
phalanx's 1.37 by default). A JobSet with a top-level gang gets one v1beta1 Workload and one
PodGroup counting every pod, its pods name that PodGroup and the scheduler places the gang; a `job:`
entry gives every Job replica its own gang; the webhook's denials reach kubectl in JobSet's words;
suspend deletes the Workload and PodGroup and resume brings them back.

A second cluster (WorkloadWithJob on, JobSet's gate off) runs JobSet's "Job-Level Scheduling" page:
a pre-created Workload naming the JobSet and the group-template-name annotation on the
replicatedJob's template give the child Job a PodGroup made by the Job controller. A 1.36 cluster
refuses `spec.scheduling`.
"""

from __future__ import annotations

import hashlib
import json
import time

import pytest

from .conftest import Cluster, KUBECTL_137, create_cluster, poll

CONFIG = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
featureGates:
  JobSetWorkloadAwareSchedulingAPI: true
nodes:
- role: control-plane
- role: worker
- role: worker
"""


def gang_training(name: str, scheduling: str = "schedulingPolicy: {gang: {}}") -> str:
    """JobSet's declarative-scheduling example (a driver and two workers of two pods)."""
    def rjob(rname: str, replicas: int, pods: int) -> str:
        return f"""\
  - name: {rname}
    replicas: {replicas}
    template:
      spec:
        parallelism: {pods}
        completions: {pods}
        template:
          metadata:
            annotations: {{phalanx.dev/run-for: "600s"}}
          spec:
            containers:
            - name: c
              image: busybox
              resources: {{requests: {{cpu: 100m}}}}
"""
    return f"""\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: {name}
spec:
  scheduling: {{{scheduling}}}
  replicatedJobs:
{rjob("driver", 1, 1)}{rjob("workers", 2, 2)}"""


def workload_name(ns: str, jobset: str) -> str:
    return f"{jobset}-{hashlib.sha1(f'JobSet/{ns}/{jobset}'.encode()).hexdigest()[:10]}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    c = create_cluster(tmp_path_factory.mktemp("js137"), "js137", config=CONFIG, kubernetes="v1.37.1")
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


@pytest.fixture
def ns(cluster: Cluster):
    name = f"js-{time.monotonic_ns() % 10 ** 8}"
    cluster.kubectl("create", "namespace", name, binary=KUBECTL_137).check()
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", binary=KUBECTL_137)


def kubectl(c: Cluster, ns: str, *args: str, input: str | None = None):
    return c.kubectl("-n", ns, *args, input=input, binary=KUBECTL_137)


def get_json(c: Cluster, ns: str, *args: str):
    return kubectl(c, ns, "get", *args, "-o", "json").check().json()


def test_top_level_gang_gets_a_workload_and_pod_group_that_its_pods_join(cluster: Cluster, ns: str):
    out = kubectl(cluster, ns, "apply", "-f", "-", input=gang_training("gang-training")).check().out
    assert out.strip() == "jobset.jobset.x-k8s.io/gang-training created"
    name = workload_name(ns, "gang-training")

    wl = poll(lambda: kubectl(cluster, ns, "get", "workload", name, "-o", "json").returncode == 0
              and get_json(cluster, ns, "workload", name))
    assert wl["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert wl["spec"]["controllerRef"] == {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "gang-training"}
    assert wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "JobSet"

    pg = get_json(cluster, ns, "podgroup", name)
    assert pg["spec"]["workloadRef"] == {"workloadName": name, "templateName": name}
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 5}}

    stored = get_json(cluster, ns, "jobset", "gang-training")
    assert stored["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {"minCount": 0}}}

    jobs = get_json(cluster, ns, "jobs")["items"]
    assert sorted(j["metadata"]["name"] for j in jobs) == \
        ["gang-training-driver-0", "gang-training-workers-0", "gang-training-workers-1"]
    assert {j["metadata"]["annotations"]["scheduling.k8s.io/group-template-name"] for j in jobs} == {name}

    def pods() -> list[dict]:
        return get_json(cluster, ns, "pods")["items"]

    assert poll(lambda: len(pods()) == 5)
    assert all(p["spec"]["schedulingGroup"] == {"podGroupName": name} for p in pods())


def test_the_gang_is_placed(cluster: Cluster, ns: str):
    kubectl(cluster, ns, "apply", "-f", "-", input=gang_training("placed")).check()

    def pods() -> list[dict]:
        return get_json(cluster, ns, "pods")["items"]

    assert poll(lambda: len(pods()) == 5)
    assert poll(lambda: all(p["status"].get("phase") == "Running" for p in pods()), timeout=60)
    assert all(p["spec"].get("nodeName") for p in pods())
    conditions = get_json(cluster, ns, "podgroup", workload_name(ns, "placed"))["status"]["conditions"]
    assert [(c["type"], c["status"]) for c in conditions] == [("PodGroupInitiallyScheduled", "True")]


def test_each_job_replica_gets_its_own_gang(cluster: Cluster, ns: str):
    per_job = ("replicatedJobs: [{targetReplicatedJobs: [driver], schedulingPolicy: {basic: {}}}, "
               "{targetReplicatedJobs: [workers], job: {schedulingPolicy: {gang: {}}}}]")
    kubectl(cluster, ns, "apply", "-f", "-", input=gang_training("per-job", per_job)).check()

    def groups() -> dict[str, dict]:
        return {pg["metadata"]["name"]: pg for pg in get_json(cluster, ns, "podgroups")["items"]}
    assert poll(lambda: len(groups()) == 3)
    policies = sorted(str(pg["spec"]["schedulingPolicy"]) for pg in groups().values())
    assert policies == ["{'basic': {}}", "{'gang': {'minCount': 2}}", "{'gang': {'minCount': 2}}"]
    assert all(name.startswith("per-job-") for name in groups())

    def pods() -> list[dict]:
        return get_json(cluster, ns, "pods")["items"]
    assert poll(lambda: len(pods()) == 5 and all(p["status"].get("phase") == "Running" for p in pods()), timeout=60)
    by_group: dict[str, set[str]] = {}
    for p in pods():
        job = p["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        by_group.setdefault(p["spec"]["schedulingGroup"]["podGroupName"], set()).add(job)
    assert sorted(map(sorted, by_group.values())) == [["per-job-driver-0"], ["per-job-workers-0"],
                                                       ["per-job-workers-1"]]
    assert set(by_group) == set(groups())


def test_webhook_denials_reach_kubectl(cluster: Cluster, ns: str):
    both = "disruptionMode: {all: {}}, replicatedJobs: [{targetReplicatedJobs: [driver, workers]}]"
    r = kubectl(cluster, ns, "apply", "-f", "-", input=gang_training("both", both))
    assert r.returncode != 0
    assert 'admission webhook "vjobset.kb.io" denied the request: spec.scheduling: Forbidden: cannot set ' \
           "schedulingPolicy, schedulingConstraints, or disruptionMode together with replicatedJobs" in r.stderr
    untargeted = "replicatedJobs: [{targetReplicatedJobs: [driver]}]"
    r = kubectl(cluster, ns, "apply", "-f", "-", input=gang_training("untargeted", untargeted))
    assert 'spec.replicatedJobs[1].name: Invalid value: "workers": must be targeted by a replicatedJobs entry' \
        in r.stderr


def test_scheduling_is_immutable(cluster: Cluster, ns: str):
    kubectl(cluster, ns, "apply", "-f", "-", input=gang_training("fixed")).check()
    patch = json.dumps({"spec": {"scheduling": {"disruptionMode": {"all": {}}}}})
    r = kubectl(cluster, ns, "patch", "jobset", "fixed", "--type=merge", "-p", patch)
    assert r.returncode != 0
    assert 'spec.scheduling: Invalid value: "": field is immutable' in r.stderr


def test_suspend_deletes_the_workload_and_resume_recreates_it(cluster: Cluster, ns: str):
    kubectl(cluster, ns, "apply", "-f", "-", input=gang_training("pausable")).check()
    name = workload_name(ns, "pausable")

    def names(kind: str) -> list[str]:
        return [o["metadata"]["name"] for o in get_json(cluster, ns, kind)["items"]]
    assert poll(lambda: names("workloads") == [name] and names("podgroups") == [name])
    kubectl(cluster, ns, "patch", "jobset", "pausable", "--type=merge", "-p", '{"spec":{"suspend":true}}').check()
    assert poll(lambda: names("workloads") == [] and names("podgroups") == [], timeout=90)
    kubectl(cluster, ns, "patch", "jobset", "pausable", "--type=merge", "-p", '{"spec":{"suspend":false}}').check()
    assert poll(lambda: names("workloads") == [name] and names("podgroups") == [name], timeout=90)


# -- delegated job-level PodGroups (JobSet's "Job-Level Scheduling" page) -------------------------------

DELEGATED_CONFIG = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
featureGates:
  WorkloadWithJob: true
nodes:
- role: control-plane
- role: worker
"""

DELEGATED_WORKLOAD = """\
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata:
  name: js-delegated
spec:
  controllerRef: {apiGroup: jobset.x-k8s.io, kind: JobSet, name: js-delegated}
  podGroupTemplates:
  - name: workers
    schedulingPolicy: {gang: {minCount: 2}}
"""

DELEGATED_JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: js-delegated
spec:
  replicatedJobs:
  - name: workers
    replicas: 1
    template:
      metadata:
        annotations: {scheduling.k8s.io/group-template-name: workers}
      spec:
        parallelism: 2
        completions: 2
        template:
          metadata:
            annotations: {phalanx.dev/run-for: "600s"}
          spec:
            containers:
            - name: c
              image: busybox
"""


@pytest.fixture(scope="module")
def delegated(tmp_path_factory) -> Cluster:
    """A 1.37 cluster with the Job controller's WorkloadWithJob and JobSet's own gate left off."""
    c = create_cluster(tmp_path_factory.mktemp("jsdeleg"), "jsdeleg", config=DELEGATED_CONFIG,
                       kubernetes="v1.37.1")
    kubectl(c, "default", "apply", "-f", "-", input=DELEGATED_WORKLOAD).check()
    kubectl(c, "default", "apply", "-f", "-", input=DELEGATED_JOBSET).check()
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


def test_delegated_annotation_reaches_the_child_job_untouched(delegated: Cluster):
    job = poll(lambda: kubectl(delegated, "default", "get", "job", "js-delegated-workers-0").returncode == 0
               and get_json(delegated, "default", "job", "js-delegated-workers-0"))
    assert job["metadata"]["annotations"]["scheduling.k8s.io/group-template-name"] == "workers"
    assert "schedulingGroup" not in job["spec"]["template"]["spec"]
    assert [w["metadata"]["name"] for w in get_json(delegated, "default", "workloads")["items"]] == ["js-delegated"]


def test_the_job_controller_creates_the_delegated_pod_group(delegated: Cluster):
    def delegated_groups() -> list[dict]:
        return [pg for pg in get_json(delegated, "default", "podgroups")["items"]
                if pg["spec"].get("workloadRef") == {"workloadName": "js-delegated", "templateName": "workers"}]
    groups = poll(delegated_groups, timeout=30)
    assert groups and len(groups) == 1
    assert groups[0]["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert groups[0]["metadata"]["ownerReferences"][0]["name"] == "js-delegated-workers-0"
    assert groups[0]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}


def test_kubernetes_1_36_refuses_scheduling(tmp_path_factory):
    """JobSet's types embed 1.37's scheduling shapes: a 1.36 cluster has no gate for them."""
    c = create_cluster(tmp_path_factory.mktemp("js136"), "js136", kubernetes="v1.36.4")
    try:
        r = c.kubectl("-n", "default", "apply", "-f", "-", input=gang_training("too-early"))
        assert r.returncode != 0
        assert ('admission webhook "vjobset.kb.io" denied the request: spec.scheduling: Forbidden: cannot be set '
                "when JobSetWorkloadAwareSchedulingAPI feature gate is disabled") in r.stderr
    finally:
        c.phalanx("delete", "cluster", "--name", c.name)
