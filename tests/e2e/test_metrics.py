"""Metrics as a Kubernetes user reads them, with the real kubectl: `/metrics` (request counters,
the scheduler's PodGroup metrics after a gang schedules) for whom RBAC allows, `kubectl top nodes`
and `kubectl top pods` from the built-in Metrics API, and the named `/readyz` and `/livez` checks."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from .conftest import KUBECTL_137, Cluster
from .test_errors import raw_request
from .test_scheduling import gang


def series(text: str, name: str) -> dict[frozenset, float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                out[frozenset(s.labels.items())] = s.value
    return out


def test_metrics_show_requests_and_a_scheduled_gang(cluster: Cluster, ns: str):
    cluster.kubectl("apply", "-f", "-", input=gang(ns, "g", 2, 2)).check()
    cluster.kubectl("wait", "-n", ns, "--for=condition=PodGroupScheduled", "podgroup/g", "--timeout=60s",
                    timeout=90).check()
    text = cluster.kubectl("get", "--raw", "/metrics").check().out
    requests = series(text, "apiserver_request_total")
    created_pods = [v for labels, v in requests.items()
                    if {("verb", "POST"), ("resource", "pods"), ("code", "201"), ("scope", "namespace")} <= labels]
    assert created_pods and created_pods[0] >= 2
    scheduled = series(text, "scheduler_podgroup_schedule_attempts_total")
    assert scheduled[frozenset({("result", "scheduled"), ("profile", "default-scheduler")})] >= 1
    durations = series(text, "scheduler_podgroup_scheduling_attempt_duration_seconds_count")
    assert durations[frozenset({("result", "scheduled"), ("profile", "default-scheduler")})] >= 1
    assert series(text, "scheduler_podgroup_scheduling_algorithm_duration_seconds_count")[frozenset()] >= 1
    assert sum(series(text, "scheduler_pod_scheduling_sli_duration_seconds_count").values()) >= 2  # the members
    queues = {dict(labels)["queue"] for labels in series(text, "scheduler_pending_pods")}
    assert queues == {"active", "backoff", "unschedulable", "gated"}
    assert series(text, "workqueue_adds_total")[frozenset({("name", "podgroupprotection")})] >= 1
    assert series(text, "apiserver_storage_objects")[frozenset({("resource", "podgroups.scheduling.k8s.io")})] >= 1


def test_metrics_are_refused_without_credentials_or_permission(cluster: Cluster):
    r = cluster.kubectl("--as", "nobody", "get", "--raw", "/metrics")
    assert r.returncode != 0
    assert 'Error from server (Forbidden): forbidden: User "nobody" cannot get path "/metrics"' in r.stderr
    r = cluster.kubectl("--as", "prometheus", "--as-group", "system:monitoring", "get", "--raw", "/metrics")
    assert r.returncode == 0 and "# TYPE apiserver_request_total counter" in r.out
    r = cluster.kubectl("--token", "not-a-token", "get", "--raw", "/metrics")
    assert r.returncode != 0 and "error: You must be logged in to the server (Unauthorized)" in r.stderr
    status, body = raw_request(cluster, "GET", "/metrics", token=None)  # no credentials at all
    assert status == 401 and body["reason"] == "Unauthorized"


def test_kubectl_top_prints_nodes_and_pods(cluster: Cluster, ns: str):
    cluster.kubectl("apply", "-n", ns, "-f", "-", input="""\
apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations: {phalanx.dev/usage-cpu: 250m, phalanx.dev/usage-memory: 300Mi}
spec:
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: api}
spec:
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: 100m, memory: 64Mi}}}
""").check()
    cluster.kubectl("wait", "-n", ns, "--for=condition=Ready", "pod/web", "pod/api", "--timeout=60s", timeout=90).check()
    pods = [line.split() for line in cluster.kubectl("top", "pods", "-n", ns).check().out.splitlines()]
    assert pods[0] == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert sorted(pods[1:]) == [["api", "100m", "64Mi"], ["web", "250m", "300Mi"]]
    nodes = [line.split() for line in cluster.kubectl("top", "nodes").check().out.splitlines()]
    assert nodes[0][:5] == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    listed = {row[0] for row in nodes[1:]}
    assert listed == set(cluster.kubectl("get", "nodes", "-o", "name").check().out.replace("node/", "").split())
    r = cluster.kubectl("top", "pod", "missing", "-n", ns)
    assert f'podmetrics.metrics.k8s.io "{ns}/missing" not found' in r.stderr


def test_readyz_and_livez_name_the_real_checks(cluster: Cluster):
    ready = cluster.kubectl("get", "--raw", "/readyz?verbose").check().out.splitlines()
    assert ready == ["[+]ping ok", "[+]log ok", "[+]storage ok", "[+]shutdown ok", "readyz check passed"]
    live = cluster.kubectl("get", "--raw", "/livez?verbose").check().out.splitlines()
    assert live == ["[+]ping ok", "[+]log ok", "[+]storage ok", "livez check passed"]
    assert cluster.kubectl("get", "--raw", "/livez/storage").check().out == "ok"


def test_a_137_cluster_counts_its_v1beta1_gang_and_answers_kubectl_137_top(cluster137: Cluster):
    def k(*args: str, **kw):
        return cluster137.kubectl(*args, binary=KUBECTL_137, **kw)
    k("create", "namespace", "metrics137").check()
    manifest = gang("metrics137", "duo", 2, 2).replace("scheduling.k8s.io/v1alpha2", "scheduling.k8s.io/v1beta1")
    k("apply", "-f", "-", input=manifest).check()
    k("wait", "-n", "metrics137", "--for=condition=PodGroupInitiallyScheduled", "podgroup/duo", "--timeout=60s",
      timeout=90).check()
    text = k("get", "--raw", "/metrics").check().out
    scheduled = series(text, "scheduler_podgroup_schedule_attempts_total")
    assert scheduled[frozenset({("result", "scheduled"), ("profile", "default-scheduler")})] >= 1
    k("wait", "-n", "metrics137", "--for=condition=Ready", "pod/duo-0", "pod/duo-1", "--timeout=60s", timeout=90).check()
    pods = [line.split() for line in k("top", "pods", "-n", "metrics137").check().out.splitlines()]
    assert sorted(pods[1:]) == [["duo-0", "100m", "0Mi"], ["duo-1", "100m", "0Mi"]]
    k("delete", "namespace", "metrics137", "--wait=false").check()
