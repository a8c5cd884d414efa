"""DaemonSets, CronJobs, Endpoints/EndpointSlices and eviction with PodDisruptionBudgets, driven by
the real kubectl against a cluster of one control-plane node and two workers.

Every assertion reads kubectl's own output (tables, `-o jsonpath`, `rollout status`, `drain`).
The CronJob runs on the wall clock: a `* * * * *` schedule is seen to start its first Job within
the next minute (the history limits are covered in virtual time by the unit tests).
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from .conftest import Cluster, create_cluster

TWO_WORKERS = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
- role: worker
- role: worker
"""
WORKERS = ["workers-worker", "workers-worker2"]
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."


def poll(fn, timeout: float = 60.0, interval: float = 0.3):
    deadline = time.monotonic() + timeout
    while True:
        last = fn()
        if last or time.monotonic() > deadline:
            return last
        time.sleep(interval)


@pytest.fixture(scope="module")
def workers(tmp_path_factory) -> Cluster:
    c = create_cluster(tmp_path_factory.mktemp("workers"), "workers", config=TWO_WORKERS)
    yield c
    c.phalanx("delete", "cluster", "--name", c.name)


@pytest.fixture
def ns(workers: Cluster) -> str:
    name = "t-" + uuid.uuid4().hex[:8]
    workers.kubectl("create", "namespace", name).check()
    yield name
    workers.kubectl("delete", "namespace", name, "--wait=false")


def apply(c: Cluster, ns: str, obj: dict) -> None:
    c.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(obj)).check()


def deployment(name: str, replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx",
                                                           "ports": [{"name": "http", "containerPort": 8080}]}]}}}}


def jsonpath(c: Cluster, ns: str, *args: str) -> str:
    return c.kubectl("get", "-n", ns, *args).check().out.strip()


def test_daemonset_runs_on_every_worker_and_on_a_new_node(workers, ns):
    apply(workers, ns, {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                                 "template": {"metadata": {"labels": {"app": "agent"}},
                                              "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}}})
    out = workers.kubectl("rollout", "status", "-n", ns, "ds/agent", "--timeout=60s").check().out
    assert 'daemon set "agent" successfully rolled out' in out
    nodes = jsonpath(workers, ns, "pods", "-l", "app=agent", "-o", "jsonpath={.items[*].spec.nodeName}").split()
    assert sorted(nodes) == WORKERS  # the control-plane node's NoSchedule taint keeps it out
    row = workers.kubectl("get", "-n", ns, "ds", "agent", "--no-headers").check().out.split()
    assert row[:6] == ["agent", "2", "2", "2", "2", "2"]
    assert jsonpath(workers, ns, "controllerrevisions", "-o", "jsonpath={.items[*].revision}") == "1"

    workers.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "late", "labels": {"kubernetes.io/hostname": "late"}},
        "spec": {"providerID": "phalanx://late", "podCIDR": "10.244.200.0/24", "podCIDRs": ["10.244.200.0/24"]}})
    ).check()
    status = {"status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                         "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                         "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}
    workers.kubectl("patch", "node", "late", "--subresource=status", "--type=merge", "-p", json.dumps(status)).check()
    try:
        assert poll(lambda: sorted(jsonpath(workers, ns, "pods", "-l", "app=agent", "-o",
                                            "jsonpath={.items[*].spec.nodeName}").split()) == sorted(WORKERS + ["late"]))
        workers.kubectl("rollout", "status", "-n", ns, "ds/agent", "--timeout=60s").check()
        assert jsonpath(workers, ns, "ds", "agent", "-o", "jsonpath={.status.desiredNumberScheduled}") == "3"
    finally:
        workers.kubectl("delete", "node", "late")
    assert poll(lambda: jsonpath(workers, ns, "ds", "agent", "-o", "jsonpath={.status.desiredNumberScheduled}") == "2")


def test_daemonset_rolls_out_a_new_image_and_back(workers, ns):
    apply(workers, ns, {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "roll"},
                        "spec": {"selector": {"matchLabels": {"app": "roll"}},
                                 "template": {"metadata": {"labels": {"app": "roll"}},
                                              "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}}})
    workers.kubectl("rollout", "status", "-n", ns, "ds/roll", "--timeout=60s").check()
    workers.kubectl("set", "image", "-n", ns, "ds/roll", "a=agent:2").check()
    workers.kubectl("rollout", "status", "-n", ns, "ds/roll", "--timeout=60s").check()

    def images():
        return sorted(jsonpath(workers, ns, "pods", "-l", "app=roll", "-o",
                               "jsonpath={.items[*].spec.containers[0].image}").split())
    assert poll(lambda: images() == ["agent:2", "agent:2"])
    history = workers.kubectl("rollout", "history", "-n", ns, "ds/roll").check().out
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    workers.kubectl("rollout", "undo", "-n", ns, "ds/roll").check()
    workers.kubectl("rollout", "status", "-n", ns, "ds/roll", "--timeout=60s").check()
    assert poll(lambda: images() == ["agent:1", "agent:1"])
    # the first revision is rolled forward to 3, not copied
    revisions = jsonpath(workers, ns, "controllerrevisions", "-o", "jsonpath={.items[*].revision}").split()
    assert sorted(revisions) == ["2", "3"]


def test_cronjob_starts_a_job_on_schedule_and_from_kubectl(workers, ns):
    workers.kubectl("create", "cronjob", "tick", "-n", ns, "--image=busybox", "--schedule=* * * * *").check()
    row = workers.kubectl("get", "-n", ns, "cronjob", "tick").check().out
    assert "* * * * *" in row and "<none>" in row  # no time zone, not scheduled yet
    workers.kubectl("create", "job", "by-hand", "-n", ns, "--from=cronjob/tick").check()
    assert jsonpath(workers, ns, "job", "by-hand", "-o",
                    "jsonpath={.metadata.annotations.cronjob\\.kubernetes\\.io/instantiate}") == "manual"

    def scheduled_jobs():
        names = jsonpath(workers, ns, "jobs", "-o", "jsonpath={.items[*].metadata.name}").split()
        return [n for n in names if n.startswith("tick-")]
    jobs = poll(scheduled_jobs, timeout=90, interval=1)
    assert jobs, "no Job was started within 90s of a `* * * * *` schedule"
    minutes = int(jobs[0].rsplit("-", 1)[1])
    stamp = jsonpath(workers, ns, "job", jobs[0], "-o", "jsonpath={.metadata.annotations.batch\\.kubernetes\\.io/"
                     "cronjob-scheduled-timestamp}")
    assert time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(minutes * 60)) == stamp
    assert poll(lambda: jsonpath(workers, ns, "cronjob", "tick", "-o", "jsonpath={.status.lastScheduleTime}") == stamp)


def test_endpoints_and_slices_list_the_ready_pods(workers, ns):
    apply(workers, ns, deployment("web", 2))
    workers.kubectl("expose", "-n", ns, "deployment", "web", "--port=80", "--target-port=http").check()
    workers.kubectl("rollout", "status", "-n", ns, "deploy/web", "--timeout=60s").check()
    ips = sorted(jsonpath(workers, ns, "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.podIP}").split())
    assert len(ips) == 2

    def listed():
        out = workers.kubectl("get", "-n", ns, "endpoints", "web", "--no-headers").out.split()
        return len(out) >= 2 and sorted(out[1].split(",")) == sorted(f"{ip}:8080" for ip in ips)
    assert poll(listed)
    got = workers.kubectl("get", "-n", ns, "endpoints", "web").check()
    assert "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice" in got.stderr
    slices = workers.kubectl("get", "-n", ns, "endpointslices", "-l", "kubernetes.io/service-name=web",
                             "--no-headers").check().out.split()
    assert slices[0].startswith("web-") and slices[1:3] == ["IPv4", "8080"]
    assert sorted(slices[3].split(",")) == ips


def test_drain_is_refused_by_a_full_budget_and_evicts_with_room(workers, ns):
    apply(workers, ns, deployment("guarded", 2))
    workers.kubectl("rollout", "status", "-n", ns, "deploy/guarded", "--timeout=60s").check()
    node = jsonpath(workers, ns, "pods", "-l", "app=guarded", "-o", "jsonpath={.items[0].spec.nodeName}")
    apply(workers, ns, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard"},
                        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}}})
    assert poll(lambda: jsonpath(workers, ns, "pdb", "guard", "-o", "jsonpath={.status.currentHealthy}") == "2")
    row = workers.kubectl("get", "-n", ns, "pdb", "guard", "--no-headers").check().out.split()
    assert row[:4] == ["guard", "2", "N/A", "0"]
    try:
        refused = workers.kubectl("drain", node, "--ignore-daemonsets", "--pod-selector=app=guarded",
                                  "--timeout=8s", timeout=60)
        assert refused.returncode != 0
        assert VIOLATION in refused.stderr + refused.stdout
        assert jsonpath(workers, ns, "pods", "-l", "app=guarded", "-o",
                        "jsonpath={.items[*].metadata.deletionTimestamp}") == ""

        workers.kubectl("patch", "-n", ns, "pdb", "guard", "--type=merge", "-p", '{"spec":{"minAvailable":1}}').check()
        assert poll(lambda: jsonpath(workers, ns, "pdb", "guard", "-o", "jsonpath={.status.disruptionsAllowed}") == "1")
        drained = workers.kubectl("drain", node, "--ignore-daemonsets", "--pod-selector=app=guarded",
                                  "--timeout=60s", timeout=90).check()
        assert "evicting pod" in drained.stdout + drained.stderr and f"node/{node} drained" in drained.stdout
        assert poll(lambda: node not in jsonpath(workers, ns, "pods", "-l", "app=guarded", "-o",
                                                 "jsonpath={.items[*].spec.nodeName}").split())
    finally:
        workers.kubectl("uncordon", node)
